// Every PROF_* environment variable in one table (name, type, default,
// description, and how to print the value the shim resolved), Caliper-style;
// docs/configuration.md is printed from it (`prof-run --help-config`) and a
// test checks the two agree. The trace records every setting's resolved value
// (`P` definitions) from the same table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bcast_params.h"
#include "clock.h"
#include "prof/trace_format.h"

namespace prof::shim {

struct Config;
struct ConfigVariable {
  const char* name;
  const char* type;
  const char* default_value;
  const char* description;
  // The setting as the shim resolved it (a default filled in, a fallback
  // taken), in the variable's own syntax; "" when unset and without a value.
  std::string (*resolved)(const Config&);
};
const std::vector<ConfigVariable>& config_variables();

struct Config {
  std::string output_dir;                 // empty: make a unique one in the working directory
  format::TimerKind timer = format::TimerKind::Tsc;
  bool timer_given = false;
  SyncScheme sync = SyncScheme::Hierarchical;
  uint64_t buffer_bytes = 1u << 20;       // per-thread mapped chunk
  bool strict = false;
  double hang_warn_seconds = 0;           // PROF_HANG_WARN; 0: off
  int log_level = 3;                      // 0 trace, 1 debug, 2 info, 3 warn, 4 error, 5 critical, 6 off
  // PROF_TEST_CLOCK_SHIFT_NS=RANK:NS[,RANK:NS...]: each names a distinct rank
  // (with PROF_TEST_NODES, a distinct pretend node).
  struct TestShift {
    int rank;
    int64_t ns;
  };
  std::vector<TestShift> test_shifts;
  int test_nodes = 0;                     // PROF_TEST_NODES; 0: the real nodes
  bcast::Settings bcast = bcast::default_settings();  // PROF_BCAST*
};

// Reads the environment. Returns false with one message per bad variable, each
// naming the variable, the value and what is accepted.
bool read_config(Config* cfg, std::vector<std::string>* errors);

}  // namespace prof::shim
