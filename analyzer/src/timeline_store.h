// The timeline's storage: compact call records in blocks (in memory or in a
// spill file), the level-of-detail pyramid of a row, and the accumulation of
// calls into a grid of cells, shared by the pyramid's leaves and by summaries
// computed from the calls themselves (so both follow the same definitions).
#pragma once

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
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

// One call: 32 bytes unpacked (blocks are kept packed: see packing). Markers keep their interval id in `peer` and their call
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

// A block's records packed column by column ("frame of reference"): per field
// its smallest value over the block and the fewest bytes (0, 1, 2, 4 or 8)
// that hold every value less it; enters as differences from the previous
// one (a row is sorted, so never negative). Typical blocks pack to 10-16
// bytes a record, and unpacking is one loop of fixed-width loads per field,
// a few microseconds a block: blocks are kept and spilled packed, and every
// read unpacks them.
namespace packing {

inline constexpr int kFields = 8;
inline constexpr size_t kHeaderBytes = 8 + kFields * 9;  // first enter; per field minimum, width

inline uint32_t width_of(uint64_t span) {
  return span == 0 ? 0 : span <= 0xFF ? 1 : span <= 0xFFFF ? 2 : span <= 0xFFFFFFFFull ? 4 : 8;
}

// Column f of records [0, n) as integers into `column` (the enter: its
// difference from the previous one), with its smallest and largest value.
template <class Field>
inline void column_from(uint32_t n, int64_t* column, int64_t& lo, int64_t& hi, Field&& field) {
  int64_t low = INT64_MAX, high = INT64_MIN;
  for (uint32_t i = 0; i < n; ++i) {
    const int64_t v = field(i);
    column[i] = v;
    low = v < low ? v : low;
    high = v > high ? v : high;
  }
  lo = low;
  hi = high;
}

// Writes values less `lo` in W bytes each (a constant width: no call per value).
template <uint32_t W>
inline uint8_t* put_column(uint8_t* p, const int64_t* values, uint32_t n, int64_t lo) {
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t u = static_cast<uint64_t>(values[i]) - static_cast<uint64_t>(lo);
    std::memcpy(p + size_t{i} * W, &u, W);
  }
  return p + size_t{n} * W;
}

// Appends the packed form of records [0, n) to `out`.
inline void pack(const Record* records, uint32_t n, std::vector<uint8_t>& out) {
  static_assert(std::endian::native == std::endian::little, "packed columns are little-endian words");
  thread_local std::vector<int64_t> columns;
  columns.resize(static_cast<size_t>(kFields) * n);
  int64_t lo[kFields], hi[kFields];
  int64_t* c = columns.data();
  const Record* r = records;
  column_from(n, c, lo[0], hi[0], [&](uint32_t i) { return i ? r[i].enter - r[i - 1].enter : int64_t{0}; });
  column_from(n, c + n, lo[1], hi[1], [&](uint32_t i) { return int64_t{r[i].duration}; });
  column_from(n, c + 2 * n, lo[2], hi[2], [&](uint32_t i) { return int64_t{r[i].name}; });
  column_from(n, c + 3 * n, lo[3], hi[3], [&](uint32_t i) { return int64_t{r[i].kind} | int64_t{r[i].flags} << 3; });
  column_from(n, c + 4 * n, lo[4], hi[4], [&](uint32_t i) { return int64_t{r[i].peer}; });
  column_from(n, c + 5 * n, lo[5], hi[5], [&](uint32_t i) { return int64_t{r[i].tag}; });
  column_from(n, c + 6 * n, lo[6], hi[6], [&](uint32_t i) { return int64_t{r[i].bytes}; });
  column_from(n, c + 7 * n, lo[7], hi[7], [&](uint32_t i) { return int64_t{r[i].comm}; });
  const size_t start = out.size();
  out.resize(start + kHeaderBytes);
  uint8_t* header = out.data() + start;
  const int64_t first = n ? records[0].enter : 0;
  std::memcpy(header, &first, 8);
  uint32_t widths[kFields];
  size_t body = 0;
  for (int f = 0; f < kFields; ++f) {
    if (!n) lo[f] = hi[f] = 0;
    widths[f] = width_of(static_cast<uint64_t>(hi[f]) - static_cast<uint64_t>(lo[f]));
    std::memcpy(header + 8 + f * 9, &lo[f], 8);
    header[8 + f * 9 + 8] = static_cast<uint8_t>(widths[f]);
    body += size_t{widths[f]} * n;
  }
  out.resize(start + kHeaderBytes + body);
  uint8_t* p = out.data() + start + kHeaderBytes;
  for (int f = 0; f < kFields; ++f) {
    const int64_t* values = columns.data() + static_cast<size_t>(f) * n;
    switch (widths[f]) {
      case 0: break;
      case 1: p = put_column<1>(p, values, n, lo[f]); break;
      case 2: p = put_column<2>(p, values, n, lo[f]); break;
      case 4: p = put_column<4>(p, values, n, lo[f]); break;
      default: p = put_column<8>(p, values, n, lo[f]); break;
    }
  }
}

// Calls set(i, value) for a column of n values of width W over `lo`.
template <uint32_t W, class Set>
inline const uint8_t* column_of(const uint8_t* p, uint32_t n, int64_t lo, Set&& set) {
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t u = 0;
    std::memcpy(&u, p + size_t{i} * W, W);
    set(i, static_cast<int64_t>(static_cast<uint64_t>(lo) + u));
  }
  return p + size_t{n} * W;
}
template <class Set>
inline const uint8_t* column(const uint8_t* p, uint32_t w, uint32_t n, int64_t lo, Set&& set) {
  switch (w) {
    case 0:
      for (uint32_t i = 0; i < n; ++i) set(i, lo);
      return p;
    case 1: return column_of<1>(p, n, lo, set);
    case 2: return column_of<2>(p, n, lo, set);
    case 4: return column_of<4>(p, n, lo, set);
    default: return column_of<8>(p, n, lo, set);
  }
}

// Unpacks n records packed by pack() at `p` into `out`.
inline void unpack(const uint8_t* p, uint32_t n, Record* out) {
  int64_t first;
  std::memcpy(&first, p, 8);
  int64_t lo[kFields];
  uint32_t widths[kFields];
  for (int f = 0; f < kFields; ++f) {
    std::memcpy(&lo[f], p + 8 + f * 9, 8);
    widths[f] = p[8 + f * 9 + 8];
  }
  const uint8_t* q = p + kHeaderBytes;
  q = column(q, widths[0], n, lo[0], [&](uint32_t i, int64_t v) { out[i].enter = v; });
  int64_t enter = first;
  for (uint32_t i = 0; i < n; ++i) {
    if (i) enter += out[i].enter;
    out[i].enter = enter;
  }
  q = column(q, widths[1], n, lo[1], [&](uint32_t i, int64_t v) { out[i].duration = static_cast<uint32_t>(v); });
  q = column(q, widths[2], n, lo[2], [&](uint32_t i, int64_t v) { out[i].name = static_cast<uint16_t>(v); });
  q = column(q, widths[3], n, lo[3], [&](uint32_t i, int64_t v) {
    out[i].kind = static_cast<uint8_t>(v & 7);
    out[i].flags = static_cast<uint8_t>(v >> 3);
  });
  q = column(q, widths[4], n, lo[4], [&](uint32_t i, int64_t v) { out[i].peer = static_cast<int32_t>(v); });
  q = column(q, widths[5], n, lo[5], [&](uint32_t i, int64_t v) { out[i].tag = static_cast<int32_t>(v); });
  q = column(q, widths[6], n, lo[6], [&](uint32_t i, int64_t v) { out[i].bytes = static_cast<uint32_t>(v); });
  column(q, widths[7], n, lo[7], [&](uint32_t i, int64_t v) { out[i].comm = static_cast<uint32_t>(v); });
}

}  // namespace packing

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
  // 1 / width when width is a power of two (the pyramid's leaves): then
  // multiplying is exact, the same as dividing, and several times cheaper.
  double inverse = 0;

  int64_t cell_of(double t) const {
    return static_cast<int64_t>(std::floor(inverse != 0 ? (t - origin) * inverse : (t - origin) / width));
  }
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
  double leaf = 1024;                // a power of two
  double inverse_leaf = 1.0 / 1024;  // exact
  size_t cap = 1u << 17;
  std::vector<std::vector<Cell>> levels{1};
  size_t dirty_lo = SIZE_MAX, dirty_hi = 0;

  // Makes the leaf holding time t (ns) exist, coarsening as needed.
  void cover(double t) {
    if (t < 0) t = 0;
    while (static_cast<size_t>(t * inverse_leaf) >= cap) coarsen();
    const size_t i = static_cast<size_t>(t * inverse_leaf);
    if (i >= levels[0].size()) levels[0].resize(i + 1);
  }
  Grid leaves() { return Grid{levels[0].data(), levels[0].size(), 0.0, leaf, inverse_leaf}; }
  void mark(double a, double b) {
    const size_t lo = static_cast<size_t>(std::max(0.0, a) * inverse_leaf);
    const size_t hi = std::min(levels[0].size() - 1, static_cast<size_t>(std::max(0.0, b) * inverse_leaf));
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
    inverse_leaf /= 2;
  }
  uint64_t bytes() const {
    uint64_t b = 0;
    for (const auto& l : levels) b += l.capacity() * sizeof(Cell);
    return b;
  }
};

}  // namespace prof::analysis::timeline_detail
