// The launch schedule (Kurnosov's MPIPerf method, section 3; docs/references.md):
// every run starts at a common slot of global time; a run's time is the maximum
// over ranks of its end minus the slot's start; runs that start late or overrun
// their slot are discarded and counted.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "collective.h"
#include "global_clock.h"
#include "stage.h"
#include "stats.h"

namespace prof::bench {

// Runs per stage (MPIPerf's k) and warm-up runs (k'), which are not counted.
inline constexpr int kRunsPerStage = 8;
inline constexpr int kWarmupRuns = 8;
// A rank that leaves its wait this long after the slot's start started late:
// the final spin reads the clock every few tens of ns, so anything beyond
// this is a rank that arrived late or lost its core while waiting.
inline constexpr double kLateToleranceNs = 500;

struct ScheduleSettings {
  StopRule stop;
  double confidence = 0.95;
  int root = 0;          // ignored when rotate_root
  bool rotate_root = false;
  prof::clock::SyncScheme sync = prof::clock::SyncScheme::Linear;
  // Test hooks: a rank that spends `delay_s` inside the timed region of every
  // run, and a rank that starts measured run `late_run` `late_s` after its slot.
  int delay_rank = -1;
  double delay_s = 0;
  int late_rank = -1;
  long late_run = -1;
  double late_s = 0;
  // Called on rank 0 after every stage (progress display).
  void (*progress)(std::size_t total, std::size_t valid, std::size_t max_total, void* ctx) = nullptr;
  void* progress_ctx = nullptr;
};

// What one (op, size) measurement found; complete on rank 0 only.
struct Measurement {
  std::vector<double> valid_s;  // times of the valid runs
  std::size_t runs_total = 0;   // measured runs (warm-up excluded)
  std::size_t runs_late = 0;    // some rank started after the slot began
  std::size_t runs_overrun = 0; // ended after the slot's end
  std::vector<long> late_runs, overrun_runs;  // their numbers (0 = first measured run)
  double first_slot_s = 0;      // slot length from the warm-up
  double slot_s = 0;            // slot length at the end
  double margin_s = 0;          // first start after the stage's start message
  double sync_error_s = 0;      // bound on the offsets' error over the measurement
  double drift_s = 0;           // max over ranks of |offset at end - offset at start|
  double tsc_skew_start_s = 0;  // residual skew against the shared TSC (NaN: not checked)
  double tsc_skew_end_s = 0;
};

// Collective over `comm` (the operation's communicator); `control` is a
// separate communicator of the same group for the schedule's own messages.
Measurement measure(GlobalClock* clock, Collective* collective, MPI_Comm control,
                    const ScheduleSettings& settings);

}  // namespace prof::bench
