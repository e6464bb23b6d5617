// prof-bench's command line (docs/interfaces.md, "prof-bench"). Parsed before
// MPI_Init, so a bad option never starts MPI.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "collective.h"
#include "prof/bcast/params.h"
#include "prof/clock.h"

namespace prof::bench {

struct Options {
  std::vector<Op> ops;                 // in the order given; all six by default
  std::vector<std::size_t> sizes;      // bytes
  int root = 0;                        // ignored when rotate_root
  bool rotate_root = false;
  double confidence = 0.95;
  double rse = 0.05;
  std::size_t runs_min = 10, runs_max = 200;
  std::string csv, json;
  std::vector<std::string> bcast_impls{"native"};
  prof::bcast::Settings bcast_settings;  // shm's parameters (PROF_BCAST_*)
  prof::format::TimerKind timer = prof::format::TimerKind::Monotonic;
  std::string timer_name = "monotonic";
  prof::clock::SyncScheme sync = prof::clock::SyncScheme::Linear;
  std::string sync_name = "linear";
  bool quiet = false;
  // Test hooks (hidden options).
  int delay_rank = -1;
  double delay_s = 0;
  int late_rank = -1;
  long late_run = -1;
  double late_s = 0;
};

// Parses argv. On success returns 0 with *out filled. On --help returns 1 with
// the help in *message. On a bad option returns 2 with a one-line error naming
// the option in *message.
int parse_options(int argc, char** argv, Options* out, std::string* message);

}  // namespace prof::bench
