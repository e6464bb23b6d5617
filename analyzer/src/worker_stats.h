// Where the analysis engine's workers spend their time, for
// PROF_ANALYZE_WORKER_STATS=1 (a diagnostic, off by default; printed to
// stderr after the pass). Out-of-line code: worker_stats.cpp; the engine:
// engine.h.
#pragma once

#include <cstdint>
#include <ctime>
#include <vector>

#include "process_spread.h"

namespace prof::analysis::detail {

inline uint64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
inline uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }
inline uint64_t thread_cpu_ns() { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

// Where one worker's time goes (PROF_ANALYZE_WORKER_STATS=1 prints it to
// stderr): on its own cache line, so counting never shares one with another
// worker's.
struct alignas(64) WorkerStats {
  uint64_t total_ns = 0, total_cpu_ns = 0;  // its whole loop (wall, the thread's CPU)
  uint64_t wait_ns = 0;      // at the phase-end barrier, for the others
  uint64_t handover_ns = 0;  // for the others' first steps (take_early_results)
  uint64_t end_ns = 0;       // running the phase's end (the last to arrive does)
  uint64_t wait_cpu_ns = 0;  // the thread's CPU time while waiting (spinning)
  uint64_t last = 0;         // phases it arrived last at
  uint64_t events = 0;       // events its ranks decoded
  uint64_t waits[4] = {};    // waits under 10 us, 100 us, 1 ms, and longer
};


// The workers' statistics of one analysis: each worker adds to its own
// WorkerStats as it runs (its loop, its waits at the barriers, the early
// results it waited for), and print() sums each one's busy time as its whole
// loop less its waits.
//
// Invariants: the setting is read once, before the pass; when off, nothing is
// timed (each place tests on()); a worker writes only its own WorkerStats.
class WorkerStatsReport {
 public:
  // PROF_ANALYZE_WORKER_STATS: on unless unset, empty or "0".
  void read_setting();
  bool on() const { return on_; }
  void start(unsigned workers) { stats_.assign(workers, WorkerStats{}); }
  WorkerStats& of(unsigned w) { return stats_[w]; }
  // Waits at a barrier, counting where the time went when on.
  template <class Barrier>
  void wait_at(Barrier& barrier, WorkerStats& stats) {
    if (!on_) {
      barrier.arrive_and_wait();
      return;
    }
    const uint64_t t1 = monotonic_ns(), c1 = thread_cpu_ns();
    const bool last = barrier.arrive_and_wait();
    const uint64_t t2 = monotonic_ns(), c2 = thread_cpu_ns();
    if (last) {
      ++stats.last;
      stats.end_ns += t2 - t1;
    } else {
      stats.wait_ns += t2 - t1;
      stats.wait_cpu_ns += c2 - c1;
      ++stats.waits[t2 - t1 < 10000 ? 0 : t2 - t1 < 100000 ? 1 : t2 - t1 < 1000000 ? 2 : 3];
    }
  }
  // To stderr: `phases` in all, each worker's ranks, and the process's
  // exchanges when spread over several.
  void print(unsigned workers, uint64_t phases, const std::vector<std::vector<size_t>>& worker_ranks,
             const ProcessSpread& spread) const;

  uint64_t setup_ns = 0, finish_ns = 0;  // the engine's setup and its figures after the pass, wall

 private:
  bool on_ = false;
  std::vector<WorkerStats> stats_;
};

}  // namespace prof::analysis::detail
