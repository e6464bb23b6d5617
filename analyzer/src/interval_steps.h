// The interval tree's per-event steps (engine.h): a marker, the tree node of
// a begin, an execution closed at an end. Inline, so that the decode loop
// (Engine::decode) holds them without a frame per marker; the tree's fold and
// figures are in interval_tree.cpp.
#pragma once

#include "engine.h"

namespace prof::analysis::detail {

[[gnu::always_inline]] inline void Handler::marker(const Event& e, double enter, double leave) {
  r.intervals.marker(e, enter, leave, *this);
  // The rank's open executions changed: from the begin's return, the end's call.
  if (r.intervals.in_root()) r.set_context(e.marker_begin ? leave : enter, r.context());
}

[[gnu::always_inline]] inline uint32_t Handler::interval_begun(uint32_t, const Event& e, double t,
                                                               uint32_t parent) {
  // A loop enters the same child again: remember the last one per parent.
  const LocalNode& p = r.nodes[parent];
  const uint32_t node = p.last_callsite == e.callsite && p.last_id == e.interval_id
                            ? p.last_child
                            : child_node(e, parent);
  double& first_enter = r.acc[node].first_enter;
  if (t < first_enter) first_enter = t;
  return node;
}

[[gnu::always_inline]] inline void Handler::interval_ended(uint32_t, const OpenInterval& o, double t) {
  eng.close_exec(r, o.payload, o.start, t);
}

[[gnu::always_inline]] inline void Engine::close_exec(Rank& r, uint32_t node, double start, double t) {
  NodeAcc& a = r.acc[node];
  // An execution outside the window counts as closed, with nothing in it.
  const bool inside = !window_.windowed() || (t >= window_.lo() && start <= window_.hi());
  if (window_.windowed()) {
    start = std::max(start, window_.lo());
    t = std::min(t, window_.hi());
  }
  const double T = inside ? std::max(0.0, t - start) : 0.0;
  if (inside) ++a.inside;
  ++a.closed;
  a.t_sum += T;
}

}  // namespace prof::analysis::detail
