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
#include "engine.h"

namespace prof::analysis::detail {

void Engine::critical_path() {
  critical_ns_.assign(global_nodes_.size(), 0);
  run_span_ns_ = 0;
  // Each rank's start and end: its first context, and the instant its root ended.
  const size_t R = ranks_.size();
  std::vector<double> start(R, kInf), end(R, -kInf);
  double run_start = kInf;
  size_t last = R;
  for (size_t i = 0; i < R; ++i) {
    const auto& c = ranks_[i]->delay.contexts;
    if (c.empty()) continue;
    start[i] = c.front().t;
    end[i] = c.back().t;
    run_start = std::min(run_start, start[i]);
    if (last == R || end[i] > end[last]) last = i;
  }
  if (last == R) return;

  // Rank r's stretch [a, b) on the path, by interval; what its contexts do
  // not cover (before its start, after its end) counts for the root.
  auto walk = [this](size_t r, double a, double b) {
    if (!(b > a)) return;
    const Rank& rk = *ranks_[r];
    const auto& c = rk.delay.contexts;
    double covered = 0;
    auto it = std::upper_bound(c.begin(), c.end(), a, [](double v, const DelayLog::Context& e) { return v < e.t; });
    size_t k = it == c.begin() ? 0 : static_cast<size_t>(it - c.begin()) - 1;
    for (; k < c.size() && c[k].t < b; ++k) {
      const double lo = std::max(a, c[k].t);
      const double hi = k + 1 < c.size() ? std::min(b, c[k + 1].t) : b;
      if (hi > lo && c[k].context != kNoContext) {
        critical_ns_[logged_node(rk, c[k].context)] += hi - lo;
        covered += hi - lo;
      }
    }
    critical_ns_[0] += (b - a) - covered;
  };

  size_t cur = last;
  double t = end[last];
  for (;;) {
    const auto& waits = ranks_[cur]->delay.waits;  // by `to`
    auto it = std::lower_bound(waits.begin(), waits.end(), t,
                               [](const DelayLog::Wait& e, double v) { return e.to < v; });
    size_t next = R;
    double to = 0;
    while (it != waits.begin()) {
      --it;
      const int pi = index_of_world(it->partner);
      if (pi >= 0 && !ranks_[static_cast<size_t>(pi)]->delay.contexts.empty()) {
        next = static_cast<size_t>(pi);
        to = it->to;
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
