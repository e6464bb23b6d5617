// Measures of sets of instants, per rank (docs/metrics.md): PotentSync,
// SendRecv, CollectiveAll and AllToAll always, and on ranks with several
// threads MPI time and Time of Start too, are the lengths of unions of time
// spans, each instant counted once, and each instant counts in the interval
// executions open on the rank at that instant.
//
// Algorithm
//   Spans arrive out of order (a receive's wait is known once its send is
//   matched, a collective call's once every member has called), so a rank
//   buffers them and sweeps them up to a watermark before which nothing can
//   arrive any more: the decoding frontier of every rank and the oldest hold
//   (a receive issued and not yet matched, a collective call whose instance
//   is not complete; see HoldQueue). Each instant goes to the first kind that
//   covers it: waiting (PotentSync), then a receive's transfer (SendRecv), then
//   collective, then all-to-all; MPI and Start time on their own. So the sweep
//   measures nested unions (waits; waits and transfers; ...) in one pass over
//   the spans in order of start, each union with a running "covered up to"
//   mark, and the differences between levels are the figures. Every new piece
//   of a union is split where the rank's context (the interval executions open
//   on it) changes, and credited to the context in force. The lanes are merged
//   by their heads; a span that no union of its levels reaches yet (the
//   common case) is one piece for all of them.
//
// Invariants
//   - Contexts are appended in time order (a later append at an earlier time is
//     clamped to the last one: markers of different threads are decoded by
//     enter, their effect starts at leave, a few ns apart at most).
//   - Everything before the watermark has been credited exactly once; spans and
//     contexts after it are kept. Memory holds what lies after the oldest hold:
//     a receive that is never matched holds the watermark back to the end.
//   - The sums are exact: times are integers of 2^-10 ns (Instant) inside the
//     sets, so a length cut in two pieces sums to the whole, and sums do not
//     depend on their order or grouping. Sweeps that stop at other watermarks
//     (other windows, workers or processes) give the same figures to the last
//     bit (reports print every bit; sums of fractional doubles would not).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "mirrored_ring.h"

namespace prof::analysis::detail {

enum SpanKind : uint8_t {
  kWaitSpan = 0,      // PotentSync: a receive issued before its send, a late collective member
  kRecvCallSpan,      // inside a call that completes a receive
  kCollCallSpan,      // inside a collective call (not all-to-all)
  kAllToAllCallSpan,  // inside an all-to-all call
  kMpiCallSpan,       // inside any MPI call (ranks with several threads)
  kStartCallSpan,     // inside a call that starts an operation (ranks with several threads)
  kTimeVariationSpan, // from a collective call's leave to its instance's last leave (ranks with several threads)
  kSpanKinds,
};

// The kinds of waiting (docs/metrics.md, "Wait states by kind"), measured by
// a set of their own beside the characteristics' (WaitKindSets), every level
// nested: each instant goes to the first kind that covers it, in this order.
// On a rank of one thread a late receiver (inside a send or the call
// completing one) never overlaps a collective's wait (inside a collective
// call), so the kinds but the late receiver sum to PotentSync there.
enum WaitSpanKind : uint8_t {
  kLateSenderSpan = 0,   // a receive issued before its send entered
  kLateReceiverSpan,     // a blocking send before its receive was issued (apart from PotentSync)
  kBarrierWaitSpan,      // a barrier before its last member entered
  kNxNWaitSpan,          // an all-to-all-style collective before its last member entered
  kLateRootSpan,         // a non-root of a one-to-all collective before its root entered
  kEarlyRootSpan,        // the root of an all-to-one collective before its last member entered
  kOtherCollWaitSpan,    // any other collective wait (a non-root after its root, ...)
  kWaitSpanKinds,
};
inline constexpr int kWaitNestedLevels = kWaitSpanKinds;

// The measure of a union, per context. Levels 0-3 are nested: level j is the
// union of the spans of kinds 0..j, so PotentSync = level 0, SendRecv =
// level 1 - level 0, CollectiveAll = level 2 - level 1, AllToAll = level 3 -
// level 2 (each instant goes to the first kind that covers it). Levels 4 and 5
// are the MPI and Start unions.
inline constexpr int kLevels = (kSpanKinds + 1) / 2 * 2;  // even: two levels to a vector

inline constexpr uint32_t kNoContext = UINT32_MAX;

// Instants inside the sets: global ns as integers of 2^-10 ns (about a ps).
// Every length the sweeps cut and every sum they make is then exact, so the
// figures do not depend on where the sweeps stop (the phases, the workers,
// the processes), on the order the spans arrive in, nor on which of them
// add() merges. Times are kept within +-(2^62 - 2^10) units (+-52 days), so
// that no difference of two overflows, whatever a damaged trace holds (and
// each end is a double exactly, for the conversion's clamp).
using Instant = int64_t;
inline constexpr double kInstantsPerNs = 1024.0;
inline constexpr Instant kInstantMax = (Instant{1} << 62) - 1024;
inline constexpr Instant kInstantMin = -kInstantMax;
// Units within the range, to the nearest integer (ties to even).
[[gnu::always_inline]] inline Instant round_units(double units) {
#if defined(__x86_64__)
  return _mm_cvtsd_si64(_mm_set_sd(units));  // (the current rounding: to nearest)
#else
  return static_cast<Instant>(std::llrint(units));
#endif
}
// ns to units cut to [lo_units, hi_units] (integers, each a double
// exactly), the cut made on the double before the conversion; NaN to the
// low end. Rounding keeps order and leaves the ends as they are, so with
// the ends of a window that to_instant() made (it makes its integers from
// doubles) it is the integer that to_instant() and a cut of the integers
// give, for two comparisons fewer.
[[gnu::always_inline]] inline Instant to_instant_within(double ns, double lo_units, double hi_units) {
  double units = ns * kInstantsPerNs;
  units = units > lo_units ? units : lo_units;  // (NaN fails the test: the low end)
  units = units < hi_units ? units : hi_units;
  return round_units(units);
}
// To the nearest unit (ties to even); times beyond the range and +-inf to
// its ends, NaN to its low end. (Five instructions: it runs for each span's
// ends.)
[[gnu::always_inline]] inline Instant to_instant(double ns) {
  constexpr double kEnd = static_cast<double>(kInstantMax);
  static_assert(static_cast<Instant>(kEnd) == kInstantMax);
  return to_instant_within(ns, -kEnd, kEnd);
}
// A length, or a sum of lengths, in ns.
inline double instant_ns(Instant units) { return static_cast<double>(units) / kInstantsPerNs; }
// A sum of non-negative lengths that stops at kInstantMax: min(kInstantMax,
// the exact sum) whatever the order of the terms, and no overflow whatever
// two non-negative terms it is given. Unions of instants stay within the run,
// but a rank's exit spreads (Time Variation) and its waits on one partner
// may overlap in time, each up to the run's length.
[[gnu::always_inline]] inline Instant add_lengths(Instant sum, Instant length) {
  return length < kInstantMax - sum ? sum + length : kInstantMax;
}

// Where spans come from. Each source adds them as a few runs in order of
// start (see sort_lane), but sources lag one another (a collective's spans
// arrive once its last member has called, a phase later), so each keeps its
// own list and the sweep merges them.
enum SpanLane : uint8_t {
  kDecodeLane = 0,  // found while decoding the rank's own events
  kMatchLane,       // receives whose send arrived later
  kCollectiveLane,  // collective calls, when their instance completes
  kLanes,
};

// Holds on a rank's watermark, created in time order and released in any
// order. Tokens are sequence numbers; the ring keeps those from the oldest
// unreleased one on. A hold's time and its state byte live in two rings:
// a release writes one byte among 64 to a line (a phase of holds is in
// flight, more than the cache keeps), and only the oldest's time is read.
// A hold may carry a Payload (void: none) and mark bits of its owner's in
// its state byte while in force, in a third ring under the same slot: what
// lives exactly as long as the hold needs no table of its own.
template <class Payload = void>
class BasicHoldQueue {
 public:
  static constexpr uint64_t kNone = UINT64_MAX;
  // The state bit a release sets; the owner's mark bits are the others.
  static constexpr uint8_t kReleased = 1;

  // (The members are read into locals before the state byte's store, and
  // written back after it: a byte store may alias any of them, so the
  // compiler would read each again after it.)
  [[gnu::always_inline]] uint64_t add(double t) {
    if (count_ == capacity_) [[unlikely]] grow();
    const size_t count = count_;
    const uint64_t token = base_ + count;
    const size_t slot = (head_ + count) & (capacity_ - 1);
    count_ = count + 1;
    times_[slot] = t;
    state_[slot] = 0;
    return token;
  }
  [[gnu::always_inline]] void release(uint64_t token) {
    // One test for kNone, released and not yet made (unsigned wrap).
    size_t count = count_;
    uint64_t base = base_;
    if (token - base >= count) return;
    size_t head = head_;
    const size_t mask = capacity_ - 1;
    uint8_t* const state = state_.data();
    state[(head + (token - base)) & mask] = kReleased;
    while (count > 0 && state[head] & kReleased) {
      head = (head + 1) & mask;
      --count;
      ++base;
    }
    head_ = head;
    count_ = count;
    base_ = base;
  }
  // The time of the oldest hold still in force (+inf when none).
  double oldest() const {
    return count_ ? times_[head_] : std::numeric_limits<double>::infinity();
  }
  // A hold in force: its state byte (0 when made); nullptr for one released
  // (or kNone).
  uint8_t* state(uint64_t token) {
    if (token - base_ >= count_) return nullptr;
    uint8_t* s = &state_[slot_of(token)];
    return *s & kReleased ? nullptr : s;
  }
  // The payload of a hold whose state() is not null (unset until written).
  template <class P = Payload>
    requires(!std::is_void_v<P>)
  P& payload(uint64_t token) {
    return payload_[slot_of(token)];
  }

 private:
  struct NoPayload {};
  using Stored = std::conditional_t<std::is_void_v<Payload>, NoPayload, Payload>;
  size_t slot_of(uint64_t token) const { return (head_ + (token - base_)) & (capacity_ - 1); }
  // From 8 holds: a rank with few sends in flight (most, at thousands of
  // ranks) keeps 0.4 KB, not 3 KB, of holds and their payloads.
  void grow() {
    const size_t capacity = capacity_ ? capacity_ * 2 : 8;
    std::vector<double> times(capacity);
    std::vector<uint8_t> state(capacity);
    std::vector<Stored> payload(std::is_void_v<Payload> ? 0 : capacity);
    for (size_t i = 0; i < count_; ++i) {
      const size_t from = (head_ + i) & (capacity_ - 1);
      times[i] = times_[from];
      state[i] = state_[from];
      if constexpr (!std::is_void_v<Payload>) payload[i] = payload_[from];
    }
    times_.swap(times);
    state_.swap(state);
    payload_.swap(payload);
    capacity_ = capacity;
    head_ = 0;
  }
  std::vector<double> times_;
  std::vector<uint8_t> state_;
  std::vector<Stored> payload_;  // empty without a Payload
  size_t capacity_ = 0;  // of the rings (a power of two)
  size_t head_ = 0, count_ = 0;
  uint64_t base_ = 0;  // token of the slot at head_
};
using HoldQueue = BasicHoldQueue<>;

// of[level][level_end][l]: all ones for the levels [level, level_end), else
// 0. A piece adds length & weight to every level, so the sums are those of
// adding the piece to its own levels, without a loop of varying length.
struct alignas(16) LevelWeights {
  Instant of[kLevels + 1][kLevels + 1][kLevels];
};
static_assert(kLevels % 2 == 0);
// Two levels at a time (SSE2).
using TwoLevels = Instant __attribute__((vector_size(16)));
constexpr LevelWeights make_level_weights() {
  LevelWeights w{};
  for (int level = 0; level <= kLevels; ++level)
    for (int level_end = 0; level_end <= kLevels; ++level_end)
      for (int l = 0; l < kLevels; ++l) w.of[level][level_end][l] = level <= l && l < level_end ? Instant{-1} : Instant{0};
  return w;
}
inline constexpr LevelWeights kLevelWeights = make_level_weights();
// Levels 0-3, the nested unions: the only ones of a rank without MPI or
// Start spans (one thread: its calls' durations are summed directly).
inline constexpr int kNestedLevels = kAllToAllCallSpan + 1;
static_assert(kNestedLevels % 2 == 0);
static_assert(kWaitSpanKinds <= kLevels);

// The levels [kind, last level of kind] of a span of that kind: all of its
// unions, where nothing of them reaches it yet (the sweep's common case).
// Kinds below `nested` are nested, the others each on its own level.
template <int nested>
struct WholeSpanWeights {
  const Instant* of[kLevels];
  constexpr WholeSpanWeights() : of{} {
    for (int k = 0; k < kLevels; ++k) of[k] = kLevelWeights.of[k][k < nested ? nested : k + 1];
  }
};
template <int nested>
inline constexpr WholeSpanWeights<nested> kWholeSpanWeights{};

// `Kind`: the span kinds, those below `kNested` nested (level j the union of
// kinds 0..j), the others each on its own level.
template <class Kind, int kNested>
class BasicInstantSets {
  // The levels a sweep gathers without own-level spans: the nested ones,
  // rounded up to whole vectors (an odd one's pair stays 0).
  static constexpr int kNestedEven = (kNested + 1) / 2 * 2;
  static_assert(kNestedEven <= kLevels);

 public:
  BasicInstantSets() { contexts_.push_back(Context{kInstantMin, kNoContext}); }
  BasicInstantSets(BasicInstantSets&&) = default;
  BasicInstantSets& operator=(BasicInstantSets&&) = default;

  // Only instants in [lo, hi] count (a window of time).
  void set_window(double lo, double hi) {
    lo_units_ = static_cast<double>(to_instant(lo));
    hi_units_ = static_cast<double>(to_instant(hi));
  }
  // Credits `level` (a context's sums) as a sweep would for a wait
  // [wait_from_ns, wait_to_ns) of the lowest kind and a call [call_from_ns,
  // call_to_ns) of kind `call` that no other span of the rank overlaps: the
  // nested levels below `call` take the wait, the others its union with the
  // call (each cut to the window, as add() cuts them). For the spans a rank
  // of one thread can tell alone (Engine::add_result, Engine::account_recv).
  [[gnu::always_inline]] void credit_alone(Instant* level, double wait_from_ns, double wait_to_ns,
                                           double call_from_ns, double call_to_ns, Kind call) const {
    const Instant a_from = in_window(wait_from_ns), a_to = in_window(wait_to_ns);
    const Instant b_from = in_window(call_from_ns), b_to = in_window(call_to_ns);
    const Instant a = a_to > a_from ? a_to - a_from : 0, b = b_to > b_from ? b_to - b_from : 0;
    // (Spans that meet or overlap are one piece; apart, or one empty, two.)
    const Instant both = a != 0 && b != 0 && std::max(a_from, b_from) <= std::min(a_to, b_to)
                             ? std::max(a_to, b_to) - std::min(a_from, b_from)
                             : a + b;
#pragma GCC unroll 4
    for (int l = 0; l < kNested; ++l) level[l] += l < call ? a : both;
  }
  [[gnu::always_inline]] void add(double from_ns, double to_ns, Kind kind, SpanLane lane) {
    const Instant from = in_window(from_ns), to = in_window(to_ns);
    if (!(to > from)) return;
    if (kind >= kNested) own_level_spans_ = true;
    MirroredRing<Span>& spans = lanes_[lane].spans;
    // The same call completing many receives, or waits that overlap: extend
    // the last span rather than add one.
    if (!spans.empty()) {
      Span& last = spans.back();
      if (last.kind == kind && from >= last.from && from <= last.to) {
        if (to > last.to) last.to = to;
        return;
      }
      // An ascending run ends here (noted now, while the last span is at hand).
      if (from < last.from) [[unlikely]] lanes_[lane].descents.push_back(spans.size());
    }
    spans.push_back(Span{from, to, kind});
  }
  // From time t on, the rank's open executions are those of `context`.
  // (Inline, its rare paths out of line: it runs at every marker.)
  [[gnu::always_inline]] void set_context(double t_ns, uint32_t context) {
    const Instant t = to_instant(t_ns);
    const Context& last = contexts_.back();
    if (t <= last.from) [[unlikely]] {
      replace_last_context(context);
      return;
    }
    if (last.context == context) return;
    contexts_.push_back(Context{t, context});
  }

  // Credits every instant before `upto`: credit(context, length, levels)
  // with length[level] for levels [0, levels) (0 where none; the levels
  // after them have nothing) for pieces of the levels' unions, contexts
  // other than kNoContext only (`length` is 16-byte aligned, `levels` even).
  // Adding a 0 to a sum leaves it as it was.
  template <class F>
  void sweep(double upto_ns, F&& credit) {
    const Instant upto = to_instant(upto_ns);
    // Without MPI or Start spans, levels 4 and 5 stay 0: they are not
    // gathered. (While a hold keeps the watermark back, the spans after it
    // wait: a sweep with none before `upto` only sorts the lanes, as the
    // next one would, which costs less than noting every span's start.)
    if (own_level_spans_) sweep_spans<kLevels>(upto, credit);
    else sweep_spans<kNestedEven>(upto, credit);
    // Drop contexts that ended before the watermark (keep the one in force):
    // they are in time order, so a binary search finds the first after it
    // (a phase has hundreds of contexts where a loop opens intervals).
    if (contexts_.size() < 2) return;
    const Context* after = std::partition_point(contexts_.begin() + 1, contexts_.end(),
                                                [upto](const Context& c) { return Instant{c.from} <= upto; });
    contexts_.drop_front(static_cast<size_t>(after - contexts_.begin()) - 1);
  }

 private:
  [[gnu::always_inline]] Instant in_window(double ns) const { return to_instant_within(ns, lo_units_, hi_units_); }
  // Packed (17 and 12 bytes, not 24 and 16): spans and contexts are kept
  // for about a phase between decoding and the sweep, more than the L2
  // cache holds, so their bytes are the misses. Their fields are read by
  // value: a reference to one (std::min's arguments) would be misaligned.
  struct [[gnu::packed]] Span {
    Instant from, to;
    Kind kind;
  };
  struct [[gnu::packed]] Context {
    Instant from;  // in force from here to the next one's `from`
    uint32_t context;
  };

  // A lane: its spans not swept yet (written once where they stay until the
  // sweep drops them: see MirroredRing). `descents`: the indices i added
  // since the last sort where spans[i] starts before spans[i - 1], in
  // increasing order (the spans are in order of start without them).
  struct Lane {
    MirroredRing<Span> spans;
    std::vector<size_t> descents;
  };

  // Lengths gathered for one context during a sweep, per level (two to a
  // vector), not yet handed out.
  struct Gathered {
    uint32_t context = kNoContext;
    TwoLevels length[kLevels / 2] = {};
  };

  // A lane's spans arrive as a few runs each in order of start: the
  // collective lane gets one run per owner worker (owners complete instances
  // in turn), the match lane one per sending worker. So the spans since the
  // last sweep are cut into their ascending runs, and neighbouring runs are
  // merged pairwise, round after round, until one is left: linear for a
  // handful of runs, n log n at worst. A merge moves only the part of the
  // left run that lies after the right run's first start, through a buffer.
  // Merging is stable (ties keep their order of
  // arrival), so the order, and with it every sum the sweep makes, is that
  // of a stable sort of the lane.
  void sort_lane(Lane& lane) {
    if (lane.descents.empty()) return;
    MirroredRing<Span>& spans = lane.spans;
    run_starts_.clear();
    run_starts_.push_back(0);
    run_starts_.insert(run_starts_.end(), lane.descents.begin(), lane.descents.end());
    lane.descents.clear();
    run_starts_.push_back(spans.size());
    while (run_starts_.size() > 2) {
      size_t kept = 0;  // run boundaries after this round, rewritten in place
      size_t r = 0;
      for (; r + 2 < run_starts_.size(); r += 2) {
        merge_runs(spans.begin(), run_starts_[r], run_starts_[r + 1], run_starts_[r + 2]);
        run_starts_[kept++] = run_starts_[r];
      }
      if (r + 1 < run_starts_.size()) run_starts_[kept++] = run_starts_[r];  // an odd run out
      run_starts_[kept++] = run_starts_.back();
      run_starts_.resize(kept);
    }
  }
  // Merges the sorted runs spans[a, b) and spans[b, c) in place, stably.
  void merge_runs(Span* spans, size_t a, size_t b, size_t c) {
    // The left run's spans that start no later than the right run's first stay.
    const Instant right_first = spans[b].from;  // (a packed field: by value, never by reference)
    Span* moved_from = std::upper_bound(spans + a, spans + b, right_first,
                                        [](Instant t, const Span& s) { return t < s.from; });
    merge_buffer_.assign(moved_from, spans + b);
    const Span* left = merge_buffer_.data();
    const Span* left_end = left + merge_buffer_.size();
    Span* out = moved_from;
    size_t right = b;
    // `out` stays behind `right` until the left part is used up, so the right
    // run is read before it is overwritten; the rest of it is in place.
    while (left != left_end) {
      if (right < c && spans[right].from < left->from) *out++ = spans[right++];
      else *out++ = *left++;
    }
  }

  // One pass over the spans in order of start. For each level, `covered` is
  // where its union is known to reach: a span adds what lies beyond it, in
  // increasing time, so each level walks the contexts with its own cursor.
  //
  // `covered` of the nested levels is kept lazily: level l reaches the
  // largest mark of levels 0..l, and the highest nested level holds that of
  // all (unions of more kinds reach at least as far). So a span that no union
  // of its levels reaches yet sets two marks (its kind's and the highest),
  // not one per level; the rare span that overlaps one first makes the marks
  // explicit (settle_nested_marks).
  template <int kUsedLevels, class F>
  void sweep_spans(Instant upto, F& credit) {
    // A local, so that its lengths stay in registers while the credits'
    // stores (through other pointers) go on.
    Gathered gathered;
    Instant covered[kLevels];
    for (int l = 0; l < kLevels; ++l) covered[l] = kInstantMin;
    // The context in force at the current span's start, and where it ends.
    // A last context that starts at the range's end (kInstantMax), for the
    // sweep only, ends the walk.
    contexts_.push_back(Context{kInstantMax, kNoContext});
    ContextCursor at = cursor_at(contexts_.begin());
    // Each lane is sorted by start, and ends, for the sweep only, with a span
    // at the range's end: its spans before `upto` are a prefix, merged across lanes by
    // their heads, and every test of where a run stops is one comparison of
    // a start. A span that runs past `upto` leaves its remainder (which
    // starts at `upto`, so the lane stays sorted) in the last slots of the
    // prefix just swept, right before the untouched rest: the prefix less
    // those slots is dropped.
    for (int k = 0; k < kLanes; ++k) {
      sort_lane(lanes_[k]);
      remainders_[k].clear();
      lanes_[k].spans.push_back(Span{kInstantMax, kInstantMax, Kind{}});
    }
    const Span* pos[kLanes];
    Instant head[kLanes], head_up[kLanes];  // each lane's first start, and the next unit
    for (int k = 0; k < kLanes; ++k) {
      pos[k] = lanes_[k].spans.begin();
      head[k] = pos[k]->from;
      head_up[k] = next_up(head[k]);
    }
    static_assert(kLanes == 3);
    for (;;) {
      // The lane with the earliest head (ties: the lower lane) is drained
      // while it stays first, so most spans cost one comparison, not kLanes:
      // it stays first while its starts are before `upto` and the lower
      // lanes' heads, and not after the higher lanes' heads. (Runs are short
      // where a rank's messages and collectives alternate: two to three
      // spans a run on the synthetic trace, so the choice is spelt out.)
      int k;
      Instant stop;  // the run goes on while its starts are below this
      if (head[1] < head[0]) {
        if (head[2] < head[1]) k = 2, stop = std::min(head[0], head[1]);
        else k = 1, stop = std::min(head[0], head_up[2]);
      } else {
        if (head[2] < head[0]) k = 2, stop = std::min(head[0], head[1]);
        else k = 0, stop = std::min(head_up[1], head_up[2]);
      }
      if (!(head[k] < upto)) break;
      stop = std::min(stop, upto);
      const Span* p = pos[k];
      do {
        // (Field by field: a copy of the whole Span went through the stack.)
        const Instant from = p->from;
        Instant to = p->to;
        const Kind kind = p->kind;
        ++p;
        while (at.end <= from) at = cursor_at(at.context + 1);
        if (to > upto) [[unlikely]] {
          remainders_[k].push_back(Span{upto, to, kind});
          to = upto;
        }
        add_to_levels<kUsedLevels>(from, to, kind, covered, at, gathered, credit);
      } while (p->from < stop);
      pos[k] = p;
      head[k] = p->from;
      head_up[k] = next_up(head[k]);
    }
    credit_gathered<kUsedLevels>(gathered, credit);
    contexts_.pop_back();
    for (int k = 0; k < kLanes; ++k) {
      Lane& lane = lanes_[k];
      const size_t swept = static_cast<size_t>(pos[k] - lane.spans.begin());
      lane.spans.pop_back();
      lane.spans.drop_front(swept - remainders_[k].size());
      std::copy(remainders_[k].begin(), remainders_[k].end(), lane.spans.begin());
    }
  }

  // The least instant above t (t itself at the end): s <= t is s < next_up(t).
  static Instant next_up(Instant t) { return t == kInstantMax ? t : t + 1; }

  // A change at or before the last one's start replaces it.
  [[gnu::noinline]] void replace_last_context(uint32_t context) {
    if (contexts_.size() > 1 && contexts_[contexts_.size() - 2].context == context) {
      contexts_.pop_back();  // back to what it was: no zero-length context
    } else {
      contexts_.back().context = context;
    }
  }

  // A context and the start of the next one (during a sweep every context
  // has a next one: the one at the range's end).
  struct ContextCursor {
    const Context* context;
    Instant end;
  };
  static ContextCursor cursor_at(const Context* c) { return ContextCursor{c, c[1].from}; }

  // What a span adds to each union it belongs to (levels kind..3, nested, or
  // its own level for MPI and Start): the part beyond where that union
  // reaches. Those marks grow with the level, so the new pieces of the
  // levels share their end and start no earlier from level to level; levels
  // whose pieces start together are credited in one walk of the contexts.
  template <int kUsedLevels, class F>
  [[gnu::always_inline]] void add_to_levels(Instant span_from, Instant to, Kind kind, Instant* covered,
                                            ContextCursor at, Gathered& gathered, F& credit) {
    const int last_level = kind < kNested ? kNested - 1 : kind;
    // The common case: no union of the span's levels reaches its start (the
    // highest reaches furthest), so it is new on all of them, as one piece;
    // most often in one context, the one gathering.
    if (covered[last_level] <= span_from) [[likely]] {
      covered[kind] = to;
      covered[last_level] = to;
      const Instant* weights = kWholeSpanWeights<kNested>.of[kind];
      if (to <= at.end) [[likely]] {  // in one context
        const uint32_t context = at.context->context;
        if (context != gathered.context) {
          if (context == kNoContext) return;
          credit_gathered<kUsedLevels>(gathered, credit);
          gathered.context = context;
        }
        add_piece<kUsedLevels>(weights, to - span_from, gathered);
        return;
      }
      credit_piece<kUsedLevels>(weights, span_from, to, at, gathered, credit);
      return;
    }
    // Most often every level of the span is covered to the same mark (a
    // call after its own wait, a collective's or a blocking receive's): what
    // lies beyond it is one piece for all of them.
    const Instant reach = kind < kNested ? nested_mark(covered, kind) : covered[kind];
    if (reach == covered[last_level]) [[likely]] {
      if (to <= reach) return;
      covered[kind] = to;
      covered[last_level] = to;
      credit_piece<kUsedLevels>(kLevelWeights.of[kind][last_level + 1], reach, to, at, gathered, credit);
      return;
    }
    settle_nested_marks(covered);
    int l = kind;
    while (l <= last_level) {
      const Instant from = std::max(span_from, covered[l]);
      if (to <= from) {
        ++l;
        continue;
      }
      int group_end = l + 1;
      while (group_end <= last_level && std::max(span_from, covered[group_end]) == from) ++group_end;
      for (int g = l; g < group_end; ++g) covered[g] = to;
      credit_piece<kUsedLevels>(kLevelWeights.of[l][group_end], from, to, at, gathered, credit);
      l = group_end;
    }
  }

  // Where nested level `level`'s union reaches (lazy marks: see sweep_spans).
  [[gnu::always_inline]] static Instant nested_mark(const Instant* covered, int level) {
    Instant mark = covered[0];
    for (int l = 1; l <= level; ++l) mark = std::max(mark, covered[l]);
    return mark;
  }
  // The nested levels' marks made explicit: each the largest of its own and
  // those below (the lazy form of sweep_spans, which this also is).
  [[gnu::noinline]] static void settle_nested_marks(Instant* covered) {
    for (int l = 1; l < kNested; ++l) covered[l] = std::max(covered[l], covered[l - 1]);
  }

  // Credits [a, b) of the levels that `weights` (a row of kLevelWeights)
  // selects to the contexts in force, split where they change; `ci` is the
  // one in force at or before a.
  template <int kUsedLevels, class F>
  void credit_piece(const Instant* weights, Instant a, Instant b, ContextCursor ci, Gathered& gathered,
                    F& credit) {
    for (;;) {
      while (ci.end <= a) ci = cursor_at(ci.context + 1);
      const Instant end = std::min(b, ci.end);
      gather<kUsedLevels>(ci.context->context, weights, end - a, gathered, credit);
      if (!(end < b)) return;
      a = end;
    }
  }
  // Lengths gather while the context stays the same (other contexts' pieces
  // in between ending a gathering), and each gathering is credited once,
  // when it ends: one store to the context's sums a run, not one a piece.
  template <int kUsedLevels, class F>
  [[gnu::always_inline]] void gather(uint32_t context, const Instant* weights, Instant length,
                                     Gathered& gathered, F& credit) {
    if (context == kNoContext) return;
    if (gathered.context != context) {
      credit_gathered<kUsedLevels>(gathered, credit);
      gathered.context = context;
    }
    add_piece<kUsedLevels>(weights, length, gathered);
  }
  template <int kUsedLevels>
  [[gnu::always_inline]] static void add_piece(const Instant* weights, Instant length, Gathered& gathered) {
    const TwoLevels piece = {length, length};
    const auto* weight = reinterpret_cast<const TwoLevels*>(weights);
#pragma GCC unroll 8
    for (int l = 0; l < kUsedLevels / 2; ++l) gathered.length[l] += piece & weight[l];
  }
  // Credits the gathering and starts none. (Lengths may gather while none
  // is: sweep_spans adds a piece of the context gathering without asking
  // whether that is kNoContext, so they are cleared here whatever it was.)
  template <int kUsedLevels, class F>
  [[gnu::always_inline]] void credit_gathered(Gathered& gathered, F& credit) {
    if (gathered.context != kNoContext)
      credit(gathered.context, reinterpret_cast<const Instant*>(gathered.length), kUsedLevels);
#pragma GCC unroll 8
    for (int l = 0; l < kUsedLevels / 2; ++l) gathered.length[l] = TwoLevels{};
    gathered.context = kNoContext;
  }

  Lane lanes_[kLanes];
  std::vector<Span> remainders_[kLanes];
  std::vector<size_t> run_starts_;  // sort_lane's scratch
  std::vector<Span> merge_buffer_;
  // The window's ends in units, as doubles (to_instant_within()).
  double lo_units_ = static_cast<double>(kInstantMin), hi_units_ = static_cast<double>(kInstantMax);
  bool own_level_spans_ = false;  // an MPI, Start or Time Variation span was added (levels 4 and up)
  // From the one in force at the last sweep's watermark on.
  MirroredRing<Context> contexts_;
};

// The characteristics' sets (PotentSync, SendRecv, ... ; MPI, Start, Time Variation).
using InstantSets = BasicInstantSets<SpanKind, kNestedLevels>;
// The wait states by kind.
using WaitKindSets = BasicInstantSets<WaitSpanKind, kWaitNestedLevels>;

}  // namespace prof::analysis::detail
