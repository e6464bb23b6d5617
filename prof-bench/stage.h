// The schedule's verdict on one stage of runs (Kurnosov's MPIPerf method, steps
// 3.2-3.3; docs/references.md): which runs are valid, which started late or
// overran their slot, and the next slot length. No MPI here, so it is
// unit-tested.
#pragma once

#include <vector>

namespace prof::bench {

// Share of invalid runs in a stage above which the slot grows (MPIPerf's g).
inline constexpr double kMaxInvalidShare = 0.25;

struct StageVerdict {
  std::vector<double> valid_ns;       // times of the valid runs, in order
  std::vector<long> late_runs;        // run numbers: some rank started late
  std::vector<long> overrun_runs;     // run numbers: ended after the slot
  double longest_call_ns = 0;         // longest call, from each rank's own start
  double next_slot_ns = 0;
};

// `late[i]` is nonzero when some rank started run i late, `end_ns[i]` the
// maximum over ranks of its end minus its slot's start, `call_ns[i]` the
// maximum over ranks of its end minus that rank's own start (the call's
// length, lateness excluded); runs are numbered from `first_run`. A run is
// valid when it started on time and ended within `slot_ns`. When more than
// kMaxInvalidShare of the runs are invalid, the slot doubles, or stretches at
// once to 1.1 x the stage's actual length per run (MPIPerf's rule, for a
// warm-up that underestimated), but not beyond four times the longest call
// plus 100 us: a slot too short for the calls must grow even when every run
// started late, while a rank that was late by a long time (descheduled) must
// not stretch the slot to that time.
StageVerdict judge_stage(const std::vector<double>& late, const std::vector<double>& end_ns,
                         const std::vector<double>& call_ns, double slot_ns, long first_run);

}  // namespace prof::bench
