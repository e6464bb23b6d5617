// The run's critical path (docs/metrics.md, "Critical path"), after the
// pass, from the ranks' logs (delay_log.h; delay_analysis() sorted them).
//
// Algorithm
//   Backward from the end of the rank that ended last (its root's end: the
//   call of MPI_Finalize; the lowest rank on a tie): on the current rank,
//   back to its latest wait that ended before the current instant; there the
//   path jumps to the wait's partner at the instant that ended it (the
//   partner's arrival) and goes on backward on that rank. With no wait left,
//   it runs back to the rank's start, and from there to the run's start (the
//   earliest rank's). Each stretch of a rank's timeline on the path counts
//   for the interval innermost on it then; time outside its root execution
//   counts for the root only.
//
// Invariants
//   - Every jump goes strictly back in time, so the walk ends, after at most
//     as many jumps as there are waits.
//   - The stretches tile [run's start, run's end]: the root's time on the
//     path is the run's span (up to rounding).
//   - The instant the walk is at only decreases, so each rank's searches (its
//     latest wait before it, its context in force) start from where the last
//     visit of that rank found them and look back from there (partition_near):
//     the same places a binary search of the whole log finds, at a cost that
//     grows with the distance moved, not with the log.
#include "engine.h"

namespace prof::analysis::detail {

void DelayResults::critical_path(const std::vector<RankOutcome*>& ranks, const GlobalTree& tree,
                                 const WorldIndex& index_of_world, LogSpill* spill) {
  if (spill) spill->drop_resident();  // (what the root causes left)
  ResidentBudget resident(spill, resident_log_bytes(ranks.size()));
  critical_ns_.assign(tree.nodes().size(), 0);
  run_span_ns_ = 0;
  // Each rank's start and end: its first context, and the instant its root ended.
  const size_t R = ranks.size();
  std::vector<double> start(R, kInf), end(R, -kInf);
  double run_start = kInf;
  size_t last = R;
  for (size_t i = 0; i < R; ++i) {
    const auto& c = ranks[i]->delay.contexts;
    if (c.empty()) continue;
    start[i] = c.front().t;
    end[i] = c.back().t;
    resident.note(ResidentBudget::kTouchBytes);
    run_start = std::min(run_start, start[i]);
    if (last == R || end[i] > end[last]) last = i;
  }
  if (last == R) return;

  // Rank r's stretch [a, b) on the path, by interval; what its contexts do
  // not cover (before its start, after its end) counts for the root.
  // Per rank, where the last visit's searches ended (see partition_near).
  std::vector<size_t> context_hi(R), wait_hi(R);
  for (size_t i = 0; i < R; ++i) {
    context_hi[i] = ranks[i]->delay.contexts.size();
    wait_hi[i] = ranks[i]->delay.waits.size();
  }
  auto walk = [&](size_t r, double a, double b) {
    if (!(b > a)) return;
    const RankOutcome& rk = *ranks[r];
    const auto c = rk.delay.contexts.view();
    double covered = 0;
    // The first context after a (its predecessor is in force at a).
    context_hi[r] = partition_near_paged(c, context_hi[r], [a](const DelayLog::Context& e) { return e.t <= a; });
    const size_t after = context_hi[r];
    const size_t k = DelayLog::for_each_in_force(c, after == 0 ? 0 : after - 1, a, b,
                                                 [&](uint32_t ctx, double lo, double hi) {
                                                   if (ctx == kNoContext) return;
                                                   critical_ns_[logged_node(rk, ctx)] += hi - lo;
                                                   covered += hi - lo;
                                                 });
    critical_ns_[0] += (b - a) - covered;
    // (The contexts walked, and the entries around each search's start.)
    constexpr size_t kSearchEntries = 16;
    resident.note((k - after + 1 + 2 * kSearchEntries) * sizeof(DelayLog::Context));
  };

  size_t cur = last;
  double t = end[last];
  for (;;) {
    const auto waits = ranks[cur]->delay.waits.view();  // by `to`
    wait_hi[cur] = partition_near_paged(waits, wait_hi[cur], [t](const DelayLog::Wait& e) { return e.to < t; });
    size_t next = R;
    double to = 0;
    for (size_t k = wait_hi[cur]; k-- > 0;) {
      const int pi = index_of_world(waits[k].partner);
      if (pi >= 0 && !ranks[static_cast<size_t>(pi)]->delay.contexts.empty()) {
        next = static_cast<size_t>(pi);
        to = waits[k].to;
        break;
      }
    }
    if (next == R) {
      const double s = std::min(start[cur], t);
      walk(cur, s, t);
      critical_ns_[0] += s - run_start;
      break;
    }
    walk(cur, to, t);
    cur = next;
    t = to;
  }
  run_span_ns_ = end[last] - run_start;
}

}  // namespace prof::analysis::detail
