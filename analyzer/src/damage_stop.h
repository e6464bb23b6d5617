// Where a rank's usable record ends (docs/metrics.md, "Damaged traces"),
// shared by the analysis and the timeline so both stop a damaged rank at the
// same event.
//
// A rank is read up to its first lost data (the cursor crossed a gap: a chunk
// skipped for its CRC, a chunk the file ends in, a skipped stretch of the
// file), because calls after it cannot be numbered with those before it, or up
// to its first event that ends outside the run's span, which only damage
// makes. The check is per batch of events (a gap is crossed only between
// batches; a batch's extreme leave times bound all of its events), so it costs
// two clock conversions per batch: on the reader's bounds of its leave times
// (MergedCursor::batch_leave_bounds), and only where those fail on the least
// and most leave, a comparison per event.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "interpret.h"

namespace prof::analysis::detail {

// The run's span, global ns, with its tolerance: from the earliest start of
// recording (the timer's epoch, just before PMPI_Init; else the first clock
// synchronization, inside MPI_Init) to the last synchronization (inside
// MPI_Finalize) or the last moment a rank was known alive (its heartbeat, its
// last leave: RankTrace::last_alive), widened by 0.2 s (two heartbeats) plus
// 1% of it. Unbounded on a side that some rank cannot tell.
//
// A rank's last leave takes a walk over its last chunk, which is all of a
// small rank: over every rank, a pass on one thread before the workers start
// (a sixth of the wall at 4096 ranks). So the span is known in two steps. The inner span takes each
// rank's heartbeat for its last moment alive; the last leave is at or after
// it, and the tolerance grows with the span, so the inner span lies within
// the run's. The run's span is computed, once (on whichever thread asks
// first), only when a time falls outside the inner one: contains() is exact,
// and in a trace without damage nothing walks the chunks.
class RunSpan {
 public:
  RunSpan() = default;  // unbounded: contains every time
  explicit RunSpan(std::vector<const trace::RankTrace*> traces);

  bool contains(double t) const {
    if (t >= inner_.first && t <= inner_.second) [[likely]]
      return true;
    const std::pair<double, double> s = exact();
    return t >= s.first && t <= s.second;
  }
  // Within it, a time is within the run's span.
  const std::pair<double, double>& inner() const { return inner_; }
  // The run's span (walks every rank's last chunk the first time).
  std::pair<double, double> exact() const;

 private:
  std::vector<const trace::RankTrace*> traces_;
  std::pair<double, double> inner_{-std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::infinity()};
  mutable std::once_flag exact_once_;
  mutable std::pair<double, double> exact_;  // (set by exact(); no trace: unbounded, as inner_)
};

// Time zero of the exports (Chrome, OTF2): the earliest first event of a rank
// that lies inside `span` and follows no lost data, global ns; 0 if none.
double first_event_in_span(const std::vector<const trace::RankTrace*>& traces, const RunSpan& span);
// The same over some of the ranks, +infinity if none: the minimum over
// several processes' blocks is the whole trace's (time_zero_of_earliest).
double earliest_event_in_span(const std::vector<const trace::RankTrace*>& traces, const RunSpan& span);
inline double time_zero_of_earliest(double earliest) { return std::isfinite(earliest) ? earliest : 0; }

struct DamageStop {
  const RunSpan* span = &kUnbounded;  // (outlives the reading)
  bool stopped = false;
  bool by_time = false;       // (else by lost data)
  double excluded_time = 0;   // global ns: the first excluded event's enter (its leave if by time)
  uint64_t events_not_read = 0;

  bool within(const Interpreter& interp, const Event& e) const {
    return span->contains(interp.global(e.leave));
  }
  // Whether a fresh batch can be used whole.
  bool admits(const trace::RankTrace::MergedCursor& cursor, std::span<const Event> batch,
              const Interpreter& interp) const {
    if (cursor.gaps() != 0) return false;
    // The reader's bounds on the batch's leaves first: inside the span, so
    // are the leaves, where the conversion keeps the order (a line of
    // positive slope over raw times below 2^63, which it converts signed).
    const auto [lower, upper] = cursor.batch_leave_bounds();
    const Interpreter::Clock clock = interp.clock();
    const auto [inner_first, inner_last] = span->inner();
    if (clock.linear && clock.slope > 0 && upper <= uint64_t{INT64_MAX} && clock.global(lower) >= inner_first &&
        clock.global(upper) <= inner_last) [[likely]]
      return true;
    uint64_t least = UINT64_MAX, most = 0;
    for (const Event& e : batch) {
      least = std::min(least, e.leave);
      most = std::max(most, e.leave);
    }
    const double earliest = interp.global(least), latest = interp.global(most);
    if (earliest >= inner_first && latest <= inner_last) return true;
    const auto [first, last] = span->exact();
    return earliest >= first && latest <= last;
  }
  // A batch not admitted: the events before the damage (none after lost
  // data); stopped from then on.
  std::span<const Event> cut(const trace::RankTrace::MergedCursor& cursor, std::span<const Event> batch,
                             const Interpreter& interp) {
    stopped = true;
    size_t keep = 0;
    if (cursor.gaps() == 0) {
      by_time = true;
      while (keep < batch.size() && within(interp, batch[keep])) ++keep;
      excluded_time = interp.global(batch[keep].leave);
    } else {
      excluded_time = interp.global(batch[0].enter);
    }
    events_not_read += batch.size() - keep;
    return batch.first(keep);
  }
  // Reads a rank as the analysis does: `cursor` batch by batch, each cut
  // where the damage starts, to `use` (which returns false to stop early, as
  // a cancelled timeline build does). The exports and the timeline read this
  // way. False when `use` stopped it; whether the damage did is `stopped`.
  template <class Use>
  bool read(trace::RankTrace::MergedCursor& cursor, const Interpreter& interp, Use&& use) {
    while (!stopped) {
      std::span<const Event> batch = cursor.next_batch();
      if (batch.empty()) break;
      if (!admits(cursor, batch, interp)) [[unlikely]]
        batch = cut(cursor, batch, interp);
      if (!use(batch)) return false;
    }
    return true;
  }
  // Counts the rank's remaining events (once stopped, before the cursor ends).
  void drain(trace::RankTrace::MergedCursor& cursor) {
    for (auto rest = cursor.next_batch(); !rest.empty(); rest = cursor.next_batch())
      events_not_read += rest.size();
  }
  // "FILE: N events not analyzed, from ..." for the warning.
  std::string describe(const std::string& path, double t_first) const;

 private:
  static const RunSpan kUnbounded;
};

}  // namespace prof::analysis::detail
