// Global time for prof-bench: libprof's timer plus the offset to rank 0 that
// libprof's synchronization (minimum-RTT exchanges, linear or ring) measured,
// and the waits built on it.
#pragma once

#include <mpi.h>

#include <cmath>

#include "prof/clock.h"

namespace prof::bench {

class GlobalClock {
 public:
  prof::clock::Timer timer;
  double offset_ns = 0;  // rank 0's clock minus ours (0 on rank 0)
  // Ranks on this node outnumber its cores: waits must yield to each other.
  bool ranks_share_cores = false;

  // Global time (rank 0's clock), in ns since rank 0's timer epoch.
  double now_ns() const { return timer.to_ns(timer.now()) + offset_ns; }
};

// One synchronization's result on this rank.
struct SyncSample {
  double offset_ns = 0;
  double rtt_ns = 0;  // |offset error| <= rtt_ns / 2 (0 on rank 0)
};

// Collective over `comm`: synchronizes and sets clock->offset_ns.
SyncSample synchronize(GlobalClock* clock, MPI_Comm comm, prof::clock::SyncScheme scheme);

// Bound on the offset error over the span between two syncs, assuming the
// true offset moves linearly between them: max(rtt0, rtt1) / 2 + |o1 - o0|.
inline double sync_error_bound_ns(const SyncSample& start, const SyncSample& end) {
  return std::fmax(start.rtt_ns, end.rtt_ns) / 2.0 + std::fabs(end.offset_ns - start.offset_ns);
}

// Waits for a request without hogging a core (MPICH busy-polls in blocking
// calls; ranks may outnumber cores): a short spin, then sched_yield, then
// short sleeps (prof/polite_wait.h).
void polite_wait(MPI_Request* request);

// Waits until global time `target_ns` and returns how late it returned, in ns
// (at once, when that time has already passed). Sleeps until kWakeAheadNs
// before the target, then spins: with sched_yield when ranks share cores (so
// they never starve each other), else with a pause instruction, because a
// yield to another program's busy process costs a whole time slice and the
// run would start late. A rank that loses its core near the target returns
// late, and the caller sees it.
inline constexpr double kWakeAheadNs = 500'000;
double wait_until(const GlobalClock& clock, double target_ns);

// Whether the ranks on this node outnumber the CPUs this process may use
// (collective over `comm`; true on every rank if so on any node).
bool ranks_outnumber_cores(MPI_Comm comm);

// Direct check of the synchronization on one node with an invariant TSC: every
// rank reads (TSC, global time) at about the same moment; since all cores share
// the TSC, rank r's global time at rank 0's TSC reading is extrapolated over
// the few microseconds between the readings, and its difference from rank 0's
// is the residual skew. Collective over `comm`; returns max |skew| in ns over
// ranks (on every rank), or NaN when the check does not apply (several nodes,
// no invariant TSC).
double tsc_residual_skew_ns(const GlobalClock& clock, MPI_Comm comm);

// Whether every rank of `comm` runs on this node (collective).
bool single_node(MPI_Comm comm);

}  // namespace prof::bench
