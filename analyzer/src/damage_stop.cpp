#include "damage_stop.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace prof::analysis::detail {

namespace {

// The span from every rank's start and end: with `last_leaves`, the end of a
// rank with a heartbeat at the later of it and the rank's last moment alive
// (RankTrace::last_alive, which walks the last chunk), else at the heartbeat.
std::pair<double, double> span_of(const std::vector<const trace::RankTrace*>& traces, bool last_leaves) {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  double first = kInfinity, last = -kInfinity;
  bool first_known = !traces.empty(), last_known = !traces.empty();
  for (const trace::RankTrace* t : traces) {
    bool has_first = false, has_last = false;
    // Recording starts at the timer's epoch, just before PMPI_Init: MPI_Init's
    // record ends before the init sync, by as long as the sync takes.
    if (auto it = t->meta().find("epoch_ticks"); it != t->meta().end()) {
      char* end = nullptr;
      const unsigned long long epoch = std::strtoull(it->second.c_str(), &end, 10);
      if (end != it->second.c_str() && *end == '\0') {
        first = std::min(first, t->to_global_ns(epoch));
        has_first = true;
      }
    }
    for (const auto& k : t->clock_syncs()) {
      const double g = t->to_global_ns(k.local_ticks);
      if (k.phase == "init") {
        first = std::min(first, g);
        has_first = true;
      } else if (k.phase == "final") {
        last = std::max(last, g);
        has_last = true;
      }
    }
    if (t->heartbeat() != 0) {
      // (The heartbeat counts in both: the inner span's end is then at or
      // before the run's whatever the clock's conversion does.)
      last = std::max(last, t->to_global_ns(t->heartbeat()));
      if (last_leaves) last = std::max(last, t->to_global_ns(t->last_alive()));
      has_last = true;
    }
    first_known = first_known && has_first;
    last_known = last_known && has_last;
  }
  if (first_known && last_known && first <= last) {
    const double tolerance = 0.2e9 + 0.01 * (last - first);
    return {first - tolerance, last + tolerance};
  }
  // (One side alone: the fixed part of the tolerance is all there is.)
  return {first_known ? first - 0.2e9 : -kInfinity, last_known ? last + 0.2e9 : kInfinity};
}

}  // namespace

const RunSpan DamageStop::kUnbounded;

RunSpan::RunSpan(std::vector<const trace::RankTrace*> traces)
    : traces_(std::move(traces)), inner_(span_of(traces_, false)) {}

std::pair<double, double> RunSpan::exact() const {
  std::call_once(exact_once_, [this] { exact_ = span_of(traces_, true); });
  return exact_;
}

double first_event_in_span(const std::vector<const trace::RankTrace*>& traces, const RunSpan& span) {
  return time_zero_of_earliest(earliest_event_in_span(traces, span));
}

double earliest_event_in_span(const std::vector<const trace::RankTrace*>& traces, const RunSpan& span) {
  double t0 = std::numeric_limits<double>::infinity();
  for (const trace::RankTrace* t : traces) {
    auto c = t->events();
    trace::Event e;
    if (c.next(e) && c.gaps() == 0) {
      const double enter = t->to_global_ns(e.enter);
      if (span.contains(enter)) t0 = std::min(t0, enter);
    }
  }
  return t0;
}

std::string DamageStop::describe(const std::string& path, double t_first) const {
  char when[64];
  std::snprintf(when, sizeof when, "%.6f s", (excluded_time - t_first) * 1e-9);
  return path + ": " + std::to_string(events_not_read) + " events not analyzed, " +
         (by_time ? std::string("from one that ends at ") + when + ", outside the run's span"
                  : std::string("from ") + when + " on, after lost data");
}

}  // namespace prof::analysis::detail
