// The timeline's storage: compact call records in blocks (in memory or in a
// spill file), the level-of-detail pyramid of a row, and the accumulation of
// calls into a grid of cells, shared by the pyramid's leaves and by summaries
// computed from the calls themselves (so both follow the same definitions).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "prof/analysis/timeline.h"

namespace prof::analysis::timeline_detail {

inline constexpr uint32_t kBlockRecords = 1024;

enum RecordFlag : uint8_t {
  kDurationOverflow = 1,  // the duration is in the row's overflow table
  kBytesOverflow = 2,
  kMarkerBeginFlag = 4,
  kHasComm = 8,
};

// One call: 32 bytes. Markers keep their interval id in `peer` and their call
// site in `tag`.
struct Record {
  int64_t enter;      // ns from the trace's start
  uint32_t duration;  // ns; UINT32_MAX with kDurationOverflow: see the row's table
  uint16_t name;      // Registry::functions index
  uint8_t kind;       // TimelineKind
  uint8_t flags;      // RecordFlag
  int32_t peer;
  int32_t tag;
  uint32_t bytes;     // UINT32_MAX with kBytesOverflow: see the row's table
  uint32_t comm;      // index into the timeline's communicator ids
};
static_assert(sizeof(Record) == 32);

// A pyramid cell or a summary bucket: 64 bytes.
struct Cell {
  double time[kTimelineKinds] = {};
  uint32_t count = 0;
  uint32_t longest_duration = 0;  // saturated ns
  uint32_t longest_index = 0;
  uint32_t has_longest = 0;

  void merge(const Cell& c) {
    count += c.count;
    for (int k = 0; k < kTimelineKinds; ++k) time[k] += c.time[k];
    if (c.has_longest && (!has_longest || c.longest_duration > longest_duration ||
                          (c.longest_duration == longest_duration && c.longest_index < longest_index))) {
      has_longest = 1;
      longest_duration = c.longest_duration;
      longest_index = c.longest_index;
    }
  }
};
static_assert(sizeof(Cell) == 64);

// Cells [origin + i*width, origin + (i+1)*width), i < n.
struct Grid {
  Cell* cells;
  size_t n;
  double origin, width;

  int64_t cell_of(double t) const { return static_cast<int64_t>(std::floor((t - origin) / width)); }
  void add_time(double a, double b, int kind) {
    if (!(b > a)) return;
    const int64_t first = std::max<int64_t>(0, cell_of(a));
    const int64_t last = std::min<int64_t>(static_cast<int64_t>(n) - 1, cell_of(b));
    for (int64_t i = first; i <= last; ++i) {
      const double lo = origin + static_cast<double>(i) * width, hi = lo + width;
      const double part = std::min(b, hi) - std::max(a, lo);
      if (part > 0) cells[i].time[kind] += part;
    }
  }
  // A call of the row: its count, its time, the user time since the previous
  // call's leave (when there is one), and the longest call of each cell it
  // overlaps.
  void add_call(const Record& r, uint64_t duration, uint32_t index, bool has_previous,
                int64_t previous_leave) {
    const double enter = static_cast<double>(r.enter);
    const double leave = enter + static_cast<double>(duration);
    const int64_t c = cell_of(enter);
    if (c >= 0 && c < static_cast<int64_t>(n)) ++cells[c].count;
    add_time(enter, leave, r.kind);
    if (has_previous) add_time(static_cast<double>(previous_leave), enter, 0);
    // Cells the call overlaps: [enter, leave), or the enter's cell when empty.
    int64_t last = c;
    if (leave > enter) {
      last = cell_of(leave);
      if (origin + static_cast<double>(last) * width >= leave) --last;
    }
    const uint32_t saturated = static_cast<uint32_t>(std::min<uint64_t>(duration, UINT32_MAX));
    for (int64_t i = std::max<int64_t>(0, c); i <= last && i < static_cast<int64_t>(n); ++i) {
      Cell& cell = cells[i];
      if (!cell.has_longest || saturated > cell.longest_duration) {
        cell.has_longest = 1;
        cell.longest_duration = saturated;
        cell.longest_index = index;
      }
    }
  }
};

// A row's level-of-detail pyramid: levels[0] are leaves of `leaf` ns from the
// trace's start; each cell of level k+1 merges two of level k. Leaves grow
// with the row; past `cap` of them the finest level is dropped (the leaf
// doubles), so memory stays bounded whatever the trace's length.
struct Pyramid {
  double leaf = 1024;
  size_t cap = 1u << 17;
  std::vector<std::vector<Cell>> levels{1};
  size_t dirty_lo = SIZE_MAX, dirty_hi = 0;

  // Makes the leaf holding time t (ns) exist, coarsening as needed.
  void cover(double t) {
    if (t < 0) t = 0;
    while (static_cast<size_t>(t / leaf) >= cap) coarsen();
    const size_t i = static_cast<size_t>(t / leaf);
    if (i >= levels[0].size()) levels[0].resize(i + 1);
  }
  Grid leaves() { return Grid{levels[0].data(), levels[0].size(), 0.0, leaf}; }
  void mark(double a, double b) {
    const size_t lo = static_cast<size_t>(std::max(0.0, a) / leaf);
    const size_t hi = std::min(levels[0].size() - 1, static_cast<size_t>(std::max(0.0, b) / leaf));
    dirty_lo = std::min(dirty_lo, lo);
    dirty_hi = std::max(dirty_hi, hi);
  }
  // Recomputes the cells above the dirty leaves.
  void propagate() {
    if (dirty_lo == SIZE_MAX) return;
    size_t lo = dirty_lo, hi = dirty_hi;
    for (size_t k = 0; levels[k].size() > 1; ++k) {
      const size_t above = (levels[k].size() + 1) / 2;
      if (levels.size() == k + 1) levels.emplace_back();
      if (levels[k + 1].size() < above) levels[k + 1].resize(above);
      lo /= 2;
      hi = std::min(hi / 2, above - 1);
      for (size_t i = lo; i <= hi; ++i) {
        Cell c = levels[k][2 * i];
        if (2 * i + 1 < levels[k].size()) c.merge(levels[k][2 * i + 1]);
        levels[k + 1][i] = c;
      }
    }
    dirty_lo = SIZE_MAX;
    dirty_hi = 0;
  }
  void coarsen() {
    propagate();
    if (levels.size() > 1) levels.erase(levels.begin());
    leaf *= 2;
  }
  uint64_t bytes() const {
    uint64_t b = 0;
    for (const auto& l : levels) b += l.capacity() * sizeof(Cell);
    return b;
  }
};

}  // namespace prof::analysis::timeline_detail
