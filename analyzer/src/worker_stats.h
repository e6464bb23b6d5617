// Where the analysis engine's workers spend their time, for
// PROF_ANALYZE_WORKER_STATS=1 (a diagnostic, off by default; printed to
// stderr after the pass). Out-of-line code: worker_stats.cpp; the engine:
// engine.h.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
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

// One phase of one worker (PROF_ANALYZE_PHASE_LOG): from the phase's start
// to its arrival at the phase-end barrier, in wall and thread CPU time, the
// events its ranks decoded, and of busy_ns the wall it waited for the other
// workers' first steps (take_early_results; 0 with one worker): the rest is
// its work.
struct PhaseSample {
  uint64_t busy_ns = 0, cpu_ns = 0, events = 0, handover_ns = 0;
};

// Where one worker's time goes (PROF_ANALYZE_WORKER_STATS=1 prints it to
// stderr): on its own cache line, so counting never shares one with another
// worker's.
struct alignas(64) WorkerStats {
  uint64_t total_ns = 0, total_cpu_ns = 0;  // its whole loop (wall, the thread's CPU)
  uint64_t wait_ns = 0;      // at the phase-end barrier, for the others
  uint64_t handover_ns = 0;  // for the others' first steps (take_early_results), the wait alone
  uint64_t end_ns = 0;       // running the phase's end (the last to arrive does)
  uint64_t wait_cpu_ns = 0;  // the thread's CPU time while waiting (spinning)
  uint64_t last = 0;         // phases it arrived last at
  uint64_t events = 0;       // events its ranks decoded
  uint64_t waits[4] = {};    // waits under 10 us, 100 us, 1 ms, and longer
  // Of its busy time, wall: the phases' first steps (the other workers'
  // mail: results, sends, collective calls), decoding its ranks, and
  // settling them (their queued results and sweeps).
  uint64_t first_steps_ns = 0, decode_ns = 0, settle_ns = 0;
  std::vector<uint64_t> rank_decode_ns;  // decoding, by its ranks in the order it visits them
  std::vector<PhaseSample> phases;  // PROF_ANALYZE_PHASE_LOG: one a phase
};


// The workers' statistics of one analysis: each worker adds to its own
// WorkerStats as it runs (its loop, its waits at the barriers, the early
// results it waited for), and print() sums each one's busy time as its whole
// loop less its waits.
//
// PROF_ANALYZE_PHASE_LOG=FILE writes each worker's phases, one line each,
// to FILE after the pass (FILE.P from process P of an MPI job): the uneven
// phases that make the workers wait at the barriers, phase by phase
// (bench/phase_balance.py sums them up).
//
// Invariants: the settings are read once, before the pass; when off, nothing
// is timed (each place tests on() or logs_phases()); a worker writes only its
// own WorkerStats.
class WorkerStatsReport {
 public:
  // PROF_ANALYZE_WORKER_STATS: on unless unset, empty or "0";
  // PROF_ANALYZE_PHASE_LOG: the file, where set and not empty.
  void read_setting();
  bool on() const { return on_; }
  bool logs_phases() const { return !phase_log_path_.empty(); }
  // Either: the workers' stages and waits are timed.
  bool timed() const { return on_ || logs_phases(); }
  // The phase log of workers [lo, hi) (this process's), as
  // "phase worker busy_ns cpu_ns events handover_ns" lines; `process` -1: a
  // plain command's. A file that cannot be written is said on stderr.
  void write_phase_log(unsigned lo, unsigned hi, int process) const;
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
  // Of finish_ns, with the root causes (a JSON report): their logs' sorts
  // and charges, and the critical path.
  uint64_t root_causes_ns = 0, critical_path_ns = 0;

 private:
  bool on_ = false;
  std::string phase_log_path_;
  std::vector<WorkerStats> stats_;
};

}  // namespace prof::analysis::detail
