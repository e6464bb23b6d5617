// The schedule's verdict on one stage of runs (seed 000, MPIPerf 3.2-3.3):
// which runs are valid, which started late or overran their slot, and the next
// slot length. No MPI here, so it is unit-tested.
#pragma once

#include <vector>

namespace prof::bench {

// Share of invalid runs in a stage above which the slot grows (MPIPerf's g).
inline constexpr double kMaxInvalidShare = 0.25;

struct StageVerdict {
  std::vector<double> valid_ns;       // times of the valid runs, in order
  std::vector<long> late_runs;        // run numbers: some rank started late
  std::vector<long> overrun_runs;     // run numbers: ended after the slot
  double longest_on_time_ns = 0;      // longest run that started on time
  double next_slot_ns = 0;
};

// `late[i]` is nonzero when some rank started run i late, `end_ns[i]` the
// maximum over ranks of its end minus its slot's start; runs are numbered from
// `first_run`. A run is valid when it started on time and ended within
// `slot_ns`. When more than kMaxInvalidShare of the runs are invalid, the slot
// doubles, or stretches at once to 1.1 x the stage's actual length per run
// (MPIPerf's rule, for a warm-up that underestimated), but not beyond four
// times the longest run that started on time plus 100 us: a longer wait would
// not help.
StageVerdict judge_stage(const std::vector<double>& late, const std::vector<double>& end_ns,
                         double slot_ns, long first_run);

}  // namespace prof::bench
