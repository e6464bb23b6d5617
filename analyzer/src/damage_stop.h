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
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "interpret.h"

namespace prof::analysis::detail {

// The run's span, global ns, with its tolerance: from the earliest start of
// recording (the timer's epoch, just before PMPI_Init; else the first clock
// synchronization, inside MPI_Init) to the last synchronization (inside
// MPI_Finalize) or the last moment a rank was known alive, widened by 0.2 s
// (two heartbeats) plus 1% of it. Unbounded on a side that some rank cannot tell.
std::pair<double, double> run_span(const std::vector<const trace::RankTrace*>& traces);

// Time zero of the exports (Chrome, OTF2): the earliest first event of a rank
// that lies inside `span` and follows no lost data, global ns; 0 if none.
double first_event_in_span(const std::vector<const trace::RankTrace*>& traces, std::pair<double, double> span);
// The same over some of the ranks, +infinity if none: the minimum over
// several processes' blocks is the whole trace's (time_zero_of_earliest).
double earliest_event_in_span(const std::vector<const trace::RankTrace*>& traces, std::pair<double, double> span);
inline double time_zero_of_earliest(double earliest) { return std::isfinite(earliest) ? earliest : 0; }

struct DamageStop {
  double span_first = -std::numeric_limits<double>::infinity();
  double span_last = std::numeric_limits<double>::infinity();
  bool stopped = false;
  bool by_time = false;       // (else by lost data)
  double excluded_time = 0;   // global ns: the first excluded event's enter (its leave if by time)
  uint64_t events_not_read = 0;

  bool within(const Interpreter& interp, const Event& e) const {
    const double t = interp.global(e.leave);
    return t >= span_first && t <= span_last;
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
    if (clock.linear && clock.slope > 0 && upper <= uint64_t{INT64_MAX} && clock.global(lower) >= span_first &&
        clock.global(upper) <= span_last) [[likely]]
      return true;
    uint64_t least = UINT64_MAX, most = 0;
    for (const Event& e : batch) {
      least = std::min(least, e.leave);
      most = std::max(most, e.leave);
    }
    return interp.global(least) >= span_first && interp.global(most) <= span_last;
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
};

}  // namespace prof::analysis::detail
