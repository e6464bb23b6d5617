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
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "prof/analysis/timeline.h"
#include "prof/trace_layout.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace prof::analysis::timeline_detail {

inline constexpr uint32_t kBlockRecords = 1024;

// std::llround (halves away from zero) without the library call. Times from
// the trace's start and durations are almost never negative, and below 2^51
// trunc(x + 0.5) is llround(x) for x >= 0.5: 0.5 is a multiple of x's ulp,
// so x + 0.5 is exact or, past a power of two, rounds by half an ulp without
// reaching the next integer. Below 0.5 the answer is 0 (x + 0.5 would round
// 0.5 - 2^-54 up to 1). One addition and one conversion: a shorter chain
// than taking the fraction apart, and the build rounds twice per call.
inline int64_t round_ns(double x) {
  if (x >= 0 && x < 0x1p51) return x < 0.5 ? 0 : static_cast<int64_t>(x + 0.5);
  if (!(std::fabs(x) < 0x1p52)) return std::llround(x);
  // Exact below 2^52: the fraction x - trunc(x).
  const int64_t whole = static_cast<int64_t>(x);
  const double fraction = x - static_cast<double>(whole);
  return whole + static_cast<int64_t>(fraction >= 0.5) - static_cast<int64_t>(fraction <= -0.5);
}

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
  uint16_t name;      // Registry::functions index and the call's site index: see record_name
  uint8_t kind;       // TimelineKind
  uint8_t flags;      // RecordFlag
  int32_t peer;
  int32_t tag;
  uint32_t bytes;     // UINT32_MAX with kBytesOverflow: see the row's table
  uint32_t comm;      // index into the timeline's communicator ids
};
static_assert(sizeof(Record) == 32);

// A call's name field holds its function (the Registry::functions index) in
// the low bits and its site index (format 7's, 1..kSiteIndexes, 0 none) in
// the top 6, as the trace's own func field does: the site costs no field of
// its own, and a packed name column grows by at most one byte a call (blocks
// whose calls come from several site indexes; a marker's field repeats its
// row's last call's index, so markers alone never widen it). Only when the run names more functions
// than the low bits hold does the field keep the function alone (sites 0):
// Impl::names_hold_sites.
inline constexpr unsigned kNameSiteShift = format::kSiteShift;
inline constexpr uint16_t kNameFunctionMask = format::kFuncIdMask;
inline uint16_t record_name(uint32_t function, uint8_t site_index, bool names_hold_sites) {
  if (!names_hold_sites) return static_cast<uint16_t>(std::min<uint32_t>(function, UINT16_MAX));
  return static_cast<uint16_t>(function | uint32_t{site_index} << kNameSiteShift);
}
inline uint32_t record_function(uint16_t name, bool names_hold_sites) {
  return names_hold_sites ? name & kNameFunctionMask : name;
}
inline uint8_t record_site_index(uint16_t name, bool names_hold_sites) {
  return names_hold_sites ? static_cast<uint8_t>(name >> kNameSiteShift) : 0;
}

// A block's calls as the build makes them, one array per packed field (see
// packing): a call is written straight into them, and packing reads each
// field as one contiguous run, with no 32-byte record made and read back in
// between. About 31 KiB, one per row being built.
struct CallColumns {
  uint32_t size = 0;
  int64_t max_leave = 0;  // the largest enter + duration of its calls (the pyramid covers it first)
  int64_t enter[kBlockRecords];
  uint32_t duration[kBlockRecords];  // UINT32_MAX with kDurationOverflow
  uint16_t name[kBlockRecords];
  uint8_t kind_flags[kBlockRecords];  // kind | flags << 3 (kind < 8, flags < 16)
  int32_t peer[kBlockRecords];
  int32_t tag[kBlockRecords];
  uint32_t bytes[kBlockRecords];  // UINT32_MAX with kBytesOverflow
  uint32_t comm[kBlockRecords];

  static uint8_t kind_and_flags(uint8_t kind, uint8_t flags) { return static_cast<uint8_t>(kind | flags << 3); }
  int kind(uint32_t i) const { return kind_flags[i] & 7; }
  uint8_t flags(uint32_t i) const { return static_cast<uint8_t>(kind_flags[i] >> 3); }
  void push_back(const Record& r) {
    const uint32_t i = size++;
    max_leave = std::max(max_leave, r.enter + static_cast<int64_t>(r.duration));
    enter[i] = r.enter;
    duration[i] = r.duration;
    name[i] = r.name;
    kind_flags[i] = kind_and_flags(r.kind, r.flags);
    peer[i] = r.peer;
    tag[i] = r.tag;
    bytes[i] = r.bytes;
    comm[i] = r.comm;
  }
};

// A block's records packed column by column ("frame of reference"): per field
// its smallest value over the block and the fewest bytes (0, 1, 2, 4 or 8)
// that hold every value less it; enters as differences from the previous
// one (a row is sorted, so never negative). Typical blocks pack to 10-16
// bytes a record, and unpacking is one loop of fixed-width loads per field,
// a few microseconds a block: blocks are kept and spilled packed, and every
// read unpacks them. Fields, in order: enter, duration, name, kind | flags
// << 3, peer, tag, bytes, communicator.
namespace packing {

inline constexpr int kFields = 8;
inline constexpr size_t kHeaderBytes = 8 + kFields * 9;  // first enter; per field minimum, width

inline uint32_t width_of(uint64_t span) {
  return span == 0 ? 0 : span <= 0xFF ? 1 : span <= 0xFFFF ? 2 : span <= 0xFFFFFFFFull ? 4 : 8;
}

// The smallest and largest of values [0, n), n > 0. Branch-free selects in
// two independent chains, so the loop runs at the loads' pace.
template <class T>
inline void range_of(const T* v, uint32_t n, int64_t* lo, int64_t* hi) {
  T low0 = v[0], high0 = v[0], low1 = v[0], high1 = v[0];
  uint32_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const T a = v[i], b = v[i + 1];
    low0 = a < low0 ? a : low0;
    high0 = a > high0 ? a : high0;
    low1 = b < low1 ? b : low1;
    high1 = b > high1 ? b : high1;
  }
  if (i < n) {
    low0 = v[i] < low0 ? v[i] : low0;
    high0 = v[i] > high0 ? v[i] : high0;
  }
  *lo = static_cast<int64_t>(low0 < low1 ? low0 : low1);
  *hi = static_cast<int64_t>(high0 > high1 ? high0 : high1);
}

#if defined(__SSE2__)
// The same for 32-bit values, four lanes at a time. SSE2 compares signed
// words only, so unsigned values are compared with their top bit flipped,
// which orders them as unsigned.
template <class T>
inline void range_of_words(const T* v, uint32_t n, int64_t* lo, int64_t* hi) {
  static_assert(sizeof(T) == 4);
  if (n < 8) return range_of(v, n, lo, hi);
  const __m128i flip = _mm_set1_epi32(std::is_signed_v<T> ? 0 : INT32_MIN);
  __m128i low = _mm_set1_epi32(INT32_MAX), high = _mm_set1_epi32(INT32_MIN);
  auto take = [&](__m128i x) {
    x = _mm_xor_si128(x, flip);
    const __m128i above = _mm_cmpgt_epi32(x, high), below = _mm_cmpgt_epi32(low, x);
    high = _mm_or_si128(_mm_and_si128(above, x), _mm_andnot_si128(above, high));
    low = _mm_or_si128(_mm_and_si128(below, x), _mm_andnot_si128(below, low));
  };
  uint32_t i = 0;
  for (; i + 4 <= n; i += 4) take(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)));
  if (i < n) take(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + n - 4)));  // overlaps: no harm to a range
  int32_t l[4], h[4];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(l), _mm_xor_si128(low, flip));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm_xor_si128(high, flip));
  T lowest = static_cast<T>(l[0]), highest = static_cast<T>(h[0]);
  for (int k = 1; k < 4; ++k) {
    lowest = std::min(lowest, static_cast<T>(l[k]));
    highest = std::max(highest, static_cast<T>(h[k]));
  }
  *lo = static_cast<int64_t>(lowest);
  *hi = static_cast<int64_t>(highest);
}
// The same for bytes (16 at a time) and unsigned 16-bit values (8 at a
// time, their top bit flipped for the signed compares).
inline void range_of_small(const uint8_t* v, uint32_t n, int64_t* lo, int64_t* hi) {
  if (n < 16) return range_of(v, n, lo, hi);
  __m128i low = _mm_set1_epi8(-1), high = _mm_setzero_si128();
  for (uint32_t i = 0;; i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + (i + 16 <= n ? i : n - 16)));
    low = _mm_min_epu8(low, x);
    high = _mm_max_epu8(high, x);
    if (i + 16 >= n) break;
  }
  uint8_t l[16], h[16];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(l), low);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), high);
  range_of(l, 16, lo, hi);
  int64_t unused;
  range_of(h, 16, &unused, hi);
}
inline void range_of_small(const uint16_t* v, uint32_t n, int64_t* lo, int64_t* hi) {
  if (n < 8) return range_of(v, n, lo, hi);
  const __m128i flip = _mm_set1_epi16(static_cast<int16_t>(0x8000));
  __m128i low = _mm_set1_epi16(INT16_MAX), high = _mm_set1_epi16(INT16_MIN);
  for (uint32_t i = 0;; i += 8) {
    const __m128i x =
        _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + (i + 8 <= n ? i : n - 8))), flip);
    low = _mm_min_epi16(low, x);
    high = _mm_max_epi16(high, x);
    if (i + 8 >= n) break;
  }
  uint16_t l[8], h[8];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(l), _mm_xor_si128(low, flip));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm_xor_si128(high, flip));
  range_of(l, 8, lo, hi);
  int64_t unused;
  range_of(h, 8, &unused, hi);
}
#else
template <class T>
inline void range_of_words(const T* v, uint32_t n, int64_t* lo, int64_t* hi) {
  range_of(v, n, lo, hi);
}
template <class T>
inline void range_of_small(const T* v, uint32_t n, int64_t* lo, int64_t* hi) {
  range_of(v, n, lo, hi);
}
#endif

// The unsigned word of W bytes.
template <uint32_t W>
using Word = std::conditional_t<W == 1, uint8_t, std::conditional_t<W == 2, uint16_t, std::conditional_t<W == 4, uint32_t, uint64_t>>>;

// Writes values [0, n) less `lo` in W bytes each (a constant width: no call
// per value). The low W bytes of a difference are the difference of the low
// W bytes, so it is taken in W-byte words.
template <uint32_t W, class T>
inline uint8_t* put_column(uint8_t* p, const T* v, uint32_t n, int64_t lo) {
  const Word<W> base = static_cast<Word<W>>(lo);
  uint32_t i = 0;
#if defined(__SSE2__)
  // 32-bit values into 1 or 2 bytes, 16 at a time (the compiler cannot: the
  // byte stores might alias the values). A value less `lo` fits the width
  // (plan_packing chose it), so the saturating packs keep it exactly: 1 byte
  // is 0..255, and 2 bytes, moved down by 32768, fit a signed 16-bit lane.
  if constexpr (sizeof(T) == 4 && (W == 1 || W == 2)) {
    const __m128i shift = _mm_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(lo) + (W == 2 ? 32768u : 0u)));
    auto word = [&](uint32_t at) {
      return _mm_sub_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + at)), shift);
    };
    for (; i + 16 <= n; i += 16) {
      const __m128i low = _mm_packs_epi32(word(i), word(i + 4)), high = _mm_packs_epi32(word(i + 8), word(i + 12));
      if constexpr (W == 1) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p + i), _mm_packus_epi16(low, high));
      } else {
        const __m128i back = _mm_set1_epi16(static_cast<int16_t>(0x8000));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p + size_t{i} * 2), _mm_xor_si128(low, back));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p + size_t{i} * 2 + 16), _mm_xor_si128(high, back));
      }
    }
  }
#endif
  for (; i < n; ++i) {
    const Word<W> u = static_cast<Word<W>>(static_cast<Word<W>>(v[i]) - base);
    std::memcpy(p + size_t{i} * W, &u, W);
  }
  return p + size_t{n} * W;
}
// Calls put(std::integral_constant<uint32_t, W>) for a column's width W
// (1, 2, 4 or 8 bytes); a width of 0 (every value equal) writes nothing.
template <class Put>
inline uint8_t* put_by_width(uint8_t* p, uint32_t width, Put put) {
  switch (width) {
    case 0: return p;
    case 1: return put(std::integral_constant<uint32_t, 1>{});
    case 2: return put(std::integral_constant<uint32_t, 2>{});
    case 4: return put(std::integral_constant<uint32_t, 4>{});
    default: return put(std::integral_constant<uint32_t, 8>{});
  }
}
template <class T>
inline uint8_t* put_column(uint8_t* p, uint32_t width, const T* v, uint32_t n, int64_t lo) {
  return put_by_width(p, width, [&](auto w) { return put_column<decltype(w)::value>(p, v, n, lo); });
}
// The enters' column: each enter's difference from the one before (the
// first's: 0) less `lo`.
template <uint32_t W>
inline uint8_t* put_enter_differences(uint8_t* p, const int64_t* enter, uint32_t n, int64_t lo) {
  if (n == 0) return p;
  const Word<W> base = static_cast<Word<W>>(lo);
  const Word<W> first = static_cast<Word<W>>(Word<W>{0} - base);
  std::memcpy(p, &first, W);
  for (uint32_t i = 1; i < n; ++i) {
    const Word<W> u = static_cast<Word<W>>(static_cast<Word<W>>(enter[i]) - static_cast<Word<W>>(enter[i - 1]) - base);
    std::memcpy(p + size_t{i} * W, &u, W);
  }
  return p + size_t{n} * W;
}
inline uint8_t* put_enter_differences(uint8_t* p, uint32_t width, const int64_t* enter, uint32_t n, int64_t lo) {
  return put_by_width(p, width,
                      [&](auto w) { return put_enter_differences<decltype(w)::value>(p, enter, n, lo); });
}

// How a block's calls pack: per field its smallest value and width, and the
// packed size (header and columns), so the caller can write them straight
// where they are kept (write_packed).
struct PackPlan {
  int64_t lo[kFields];
  uint32_t widths[kFields];
  size_t bytes;
};

// One pass over each field's column for its range.
inline PackPlan plan_packing(const CallColumns& calls) {
  static_assert(std::endian::native == std::endian::little, "packed columns are little-endian words");
  PackPlan plan;
  int64_t* lo = plan.lo;
  int64_t hi[kFields] = {};
  const uint32_t n = calls.size;
  for (int f = 0; f < kFields; ++f) lo[f] = 0;
  if (n) {
    // The first enter's difference counts as 0.
    int64_t low = 0, high = 0;
    for (uint32_t i = 1; i < n; ++i) {
      const int64_t d = calls.enter[i] - calls.enter[i - 1];
      low = d < low ? d : low;
      high = d > high ? d : high;
    }
    lo[0] = low;
    hi[0] = high;
    range_of_words(calls.duration, n, &lo[1], &hi[1]);
    range_of_small(calls.name, n, &lo[2], &hi[2]);
    range_of_small(calls.kind_flags, n, &lo[3], &hi[3]);
    range_of_words(calls.peer, n, &lo[4], &hi[4]);
    range_of_words(calls.tag, n, &lo[5], &hi[5]);
    range_of_words(calls.bytes, n, &lo[6], &hi[6]);
    range_of_words(calls.comm, n, &lo[7], &hi[7]);
  }
  plan.bytes = kHeaderBytes;
  for (int f = 0; f < kFields; ++f) {
    plan.widths[f] = width_of(static_cast<uint64_t>(hi[f]) - static_cast<uint64_t>(lo[f]));
    plan.bytes += size_t{plan.widths[f]} * n;
  }
  return plan;
}

// Writes the packed form of the calls (plan.bytes of it) at `out`: the
// header, then each field's column.
inline void write_packed(const CallColumns& calls, const PackPlan& plan, uint8_t* out) {
  const uint32_t n = calls.size;
  const int64_t first = n ? calls.enter[0] : 0;
  std::memcpy(out, &first, 8);
  for (int f = 0; f < kFields; ++f) {
    std::memcpy(out + 8 + f * 9, &plan.lo[f], 8);
    out[8 + f * 9 + 8] = static_cast<uint8_t>(plan.widths[f]);
  }
  const uint32_t* widths = plan.widths;
  const int64_t* lo = plan.lo;
  uint8_t* p = out + kHeaderBytes;
  p = put_enter_differences(p, widths[0], calls.enter, n, lo[0]);
  p = put_column(p, widths[1], calls.duration, n, lo[1]);
  p = put_column(p, widths[2], calls.name, n, lo[2]);
  p = put_column(p, widths[3], calls.kind_flags, n, lo[3]);
  p = put_column(p, widths[4], calls.peer, n, lo[4]);
  p = put_column(p, widths[5], calls.tag, n, lo[5]);
  p = put_column(p, widths[6], calls.bytes, n, lo[6]);
  put_column(p, widths[7], calls.comm, n, lo[7]);
}

// Appends the packed form of records [0, n), n <= kBlockRecords, to `out`
// (as the build packs them).
inline void pack(const Record* records, uint32_t n, std::vector<uint8_t>& out) {
  auto calls = std::make_unique<CallColumns>();
  for (uint32_t i = 0; i < n; ++i) calls->push_back(records[i]);
  const PackPlan plan = plan_packing(*calls);
  const size_t start = out.size();
  out.resize(start + plan.bytes);
  write_packed(*calls, plan, out.data() + start);
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

// Unpacks only the enters and durations of n records packed by pack() at
// `p` (the first two columns: what waits read of a call).
inline void unpack_times(const uint8_t* p, uint32_t n, int64_t* enter, uint32_t* duration) {
  int64_t first, lo[2];
  std::memcpy(&first, p, 8);
  std::memcpy(&lo[0], p + 8, 8);
  std::memcpy(&lo[1], p + 8 + 9, 8);
  const uint8_t* q = p + kHeaderBytes;
  // The first call's difference unpacks to 0: every enter is the sum so far.
  int64_t t = first;
  q = column(q, p[8 + 8], n, lo[0], [&](uint32_t i, int64_t v) { enter[i] = t += v; });
  column(q, p[8 + 9 + 8], n, lo[1], [&](uint32_t i, int64_t v) { duration[i] = static_cast<uint32_t>(v); });
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

// A row's level-of-detail pyramid: levels[0] are leaves of `leaf` = 2^shift
// ns from the trace's start; each cell of level k+1 merges two of level k.
// Leaves grow with the row; past `cap` of them the finest level is dropped
// (the leaf doubles), so memory stays bounded whatever the trace's length.
//
// Calls come in a block at a time (add_calls): the leaves are made to cover
// the block's last leave first, then each call is added in integer
// arithmetic. Times are whole ns and a leaf's edges are multiples of 2^shift,
// so every clipped part is an integer and the cells get exactly the values
// Grid::add_call gives them (the summaries computed from the calls
// themselves use Grid, and the two must agree). Adding at the coarser leaf
// a block may force is the same as adding finer and merging: counts and times
// add up, and the longest call of a cell is the first of the longest either
// way (calls come in index order).
//
// Waits (PotentSync instants, ns per cell) come once the build is complete,
// in `waits`, shaped as `levels` (empty before): they need the messages and
// collectives paired, long after the cells were made (timeline_waits.cpp).
struct Pyramid {
  double leaf = 1024;                // 2^shift
  int shift = 10;
  size_t cap = 1u << 17;
  std::vector<std::vector<Cell>> levels{1};
  std::vector<std::vector<double>> waits;
  size_t dirty_lo = SIZE_MAX, dirty_hi = 0;

  // Makes the leaf holding time t (ns, >= 0) exist, coarsening as needed.
  void cover(int64_t t) {
    if (t < 0) t = 0;
    while (static_cast<uint64_t>(t >> shift) >= cap) coarsen();
    const size_t i = static_cast<size_t>(t >> shift);
    if (i >= levels[0].size()) levels[0].resize(i + 1);
  }
  // Adds a block's calls: their enters (sorted, >= 0), durations (whole
  // ns: duration_of(j) for the block's j-th), kinds and row indices from
  // `first_index`, after the leave of the call before them when there is
  // one (user time runs from it), which becomes the last one's; then
  // recomputes the cells above. Returns the largest leave of the calls.
  template <class Duration>
  int64_t add_calls(const CallColumns& calls, uint64_t first_index, Duration&& duration_of,
                    bool& has_previous, int64_t& previous_leave) {
    const size_t n = calls.size;
    if (n == 0) return 0;
    const int64_t max_leave = calls.max_leave;
    cover(max_leave);
    Cell* cells = levels[0].data();
    const int s = shift;
    const int64_t width = int64_t{1} << s;
    // Time [a, b) of a kind, clipped to the leaves it spans (b <= the leaves' end).
    auto add_time = [&](int64_t a, int64_t b, int kind) {
      if (b <= a) return;
      const int64_t first = a >> s, last = (b - 1) >> s;
      if (first == last) {
        cells[first].time[kind] += static_cast<double>(b - a);
        return;
      }
      cells[first].time[kind] += static_cast<double>(((first + 1) << s) - a);
      for (int64_t i = first + 1; i < last; ++i) cells[i].time[kind] += static_cast<double>(width);
      cells[last].time[kind] += static_cast<double>(b - (last << s));
    };
    const int64_t dirty_from = has_previous ? std::min(previous_leave, calls.enter[0]) : calls.enter[0];
    // Most calls lie, with the user time before them, inside one leaf, and
    // most leaves hold many calls in a row (190 at 10^8): such a run of calls
    // is summed in registers and added to its leaf once, instead of a chain
    // of additions through the same cell's memory. Every part is a whole
    // number of ns (below 2^53), so the sums are exact in any order and the
    // leaf ends with the very values adding one call at a time gives.
    int64_t run_cell = -1;
    uint32_t run_count = 0;
    int64_t run_user = 0;
    int64_t run_time[kTimelineKinds] = {};
    uint32_t run_has_longest = 0, run_longest_duration = 0, run_longest_index = 0;
    auto end_run = [&] {
      if (run_cell < 0) return;
      Cell& cell = cells[run_cell];
      cell.count += run_count;
      cell.time[0] += static_cast<double>(run_user);
      for (int k = 0; k < kTimelineKinds; ++k) cell.time[k] += static_cast<double>(run_time[k]);
      cell.has_longest = run_has_longest;
      cell.longest_duration = run_longest_duration;
      cell.longest_index = run_longest_index;
      run_cell = -1;
    };
    for (uint32_t j = 0; j < n; ++j) {
      const uint64_t duration = duration_of(j);
      const int kind = calls.kind(j);
      const int64_t enter = calls.enter[j], leave = enter + static_cast<int64_t>(duration);
      const int64_t c = enter >> s;
      const uint32_t saturated = static_cast<uint32_t>(std::min<uint64_t>(duration, UINT32_MAX));
      const uint32_t index = static_cast<uint32_t>(first_index + j);
      const bool user_here = !has_previous || previous_leave >= enter || (previous_leave >> s) == c;
      if (user_here && (leave - 1) >> s <= c) {  // the call, and the user time before it, in leaf c
        if (c != run_cell) {
          end_run();
          run_cell = c;
          run_count = 0;
          run_user = 0;
          std::fill(run_time, run_time + kTimelineKinds, 0);
          run_has_longest = cells[c].has_longest;
          run_longest_duration = cells[c].longest_duration;
          run_longest_index = cells[c].longest_index;
        }
        ++run_count;
        run_time[kind] += leave - enter;
        if (has_previous && enter > previous_leave) run_user += enter - previous_leave;
        if (!run_has_longest || saturated > run_longest_duration) {
          run_has_longest = 1;
          run_longest_duration = saturated;
          run_longest_index = index;
        }
        has_previous = true;
        previous_leave = leave;
        continue;
      }
      end_run();
      ++cells[c].count;
      add_time(enter, leave, kind);
      if (has_previous) add_time(previous_leave, enter, 0);
      // Cells the call overlaps: [enter, leave), or the enter's cell when empty.
      const int64_t last = leave > enter ? (leave - 1) >> s : c;
      for (int64_t i = c; i <= last; ++i) {
        Cell& cell = cells[i];
        if (!cell.has_longest || saturated > cell.longest_duration) {
          cell.has_longest = 1;
          cell.longest_duration = saturated;
          cell.longest_index = index;
        }
      }
      has_previous = true;
      previous_leave = leave;
    }
    end_run();
    mark(std::max<int64_t>(0, dirty_from), max_leave);
    propagate();
    return max_leave;
  }
  void mark(int64_t a, int64_t b) {
    const size_t lo = static_cast<size_t>(a >> shift);
    const size_t hi = std::min(levels[0].size() - 1, static_cast<size_t>(b >> shift));
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
  // Doubles the leaf: level 1 becomes the leaves (copied into level 0's
  // room, which keeps its capacity instead of growing again from half).
  void coarsen() {
    propagate();
    if (levels.size() > 1) {  // (else one leaf at most: it stays the first)
      levels[0].assign(levels[1].begin(), levels[1].end());
      levels.erase(levels.begin() + 1);
    }
    leaf *= 2;
    ++shift;
  }
  uint64_t bytes() const {
    uint64_t b = 0;
    for (const auto& l : levels) b += l.capacity() * sizeof(Cell);
    for (const auto& l : waits) b += l.capacity() * sizeof(double);
    return b;
  }
};

}  // namespace prof::analysis::timeline_detail
