// The timeline layer (timeline.h): waits per pyramid cell and summary bucket.
//
// A row waits, as the analysis counts PotentSync, in a late sender's receive
// (from the receive's issue to the send's enter, no later than the completing
// call's leave) and in a collective call until its last member enters. Those
// spans may overlap (receives issued together, completed by one Waitall), so
// a cell holds the time of their union inside it, never their sum. The build
// adds every row's union to its pyramid's leaves once messages and
// collectives are paired; levels above sum two cells each, as for the calls.
//
// The build's step reads each row's blocks in order, enters and durations
// alone (a row's message ends and collective calls are listed in call
// order): first (collective_last_enters) each collective call's enter goes
// to its instance's last enter (an atomic maximum: rows run on several
// threads); then (pyramid_waits) each receive's and collective call's wait is
// made from its own calls, its send's enter (read from the sending row, a
// cursor per row: on a channel sends pair with receives in order) and those
// last enters. The spans come about sorted by start (a receive's starts at
// its issue, mostly just before its completion), so a bounded window puts
// them in order as they come and their union goes straight to the leaves:
// what the step holds beyond the timeline is a few blocks' enters and the
// window per thread, whatever the row's messages (Timeline::Memory::
// waits_step_peak), unless a row's spans come further out of order than the
// window holds; that row's spans are then listed and sorted.
// Queries (row_wait_spans) read the few calls they need through a
// RecordReader instead.
#include <algorithm>
#include <atomic>
#include <climits>
#include <functional>
#include <limits>
#include <memory>
#include <cmath>
#include <mutex>
#include <shared_mutex>

#include "timeline_impl.h"

namespace prof::analysis::timeline_detail {

std::pair<int64_t, uint64_t> RecordReader::enter_duration(uint32_t ri, uint64_t index) {
  const Row& row = *tl_.rows[ri];
  std::shared_lock lock(row.mutex, std::defer_lock);
  if (&row != held_) lock.lock();
  if (index >= row.count) return {0, 0};
  const size_t b = static_cast<size_t>(index / kBlockRecords);
  if (blocks_.size() >= kKept) blocks_.clear();
  auto [it, added] = blocks_.try_emplace({&row, b});
  Times& t = it->second;
  if (added) {
    t.enter.resize(kBlockRecords);
    t.duration.resize(kBlockRecords);
    tl_.block_times(row, b, t.enter.data(), t.duration.data());
  }
  const size_t i = static_cast<size_t>(index % kBlockRecords);
  if (t.duration[i] != UINT32_MAX) return {t.enter[i], t.duration[i]};
  // In the row's overflow table.
  const auto big = row.big_durations.find(index);
  return {t.enter[i], big != row.big_durations.end() ? big->second : uint64_t{UINT32_MAX}};
}

void row_wait_spans(const Impl& tl, RecordReader& reader, size_t ri, uint64_t first, uint64_t last,
                    bool lookahead, WaitSpans& spans) {
  const Row& row = *tl.rows[ri];
  const auto& received = row.received;
  auto it = std::partition_point(received.begin(), received.end(),
                                 [&](const ReceivedMessage& m) { return m.first < first; });
  for (size_t after = 0; it != received.end(); ++it) {
    if (it->first >= last) {
      // Completed past the calls: only a receive issued among them, and
      // only so far ahead.
      if (!lookahead || after++ >= kWaitLookahead) break;
      if (it->issue_row != ri || it->issue_index >= last) continue;
    }
    const auto [recv_enter, recv_duration] = reader.enter_duration(static_cast<uint32_t>(ri), it->first);
    const int64_t recv_leave = recv_enter + static_cast<int64_t>(recv_duration);
    const int64_t send_enter = reader.enter_duration(it->send_row, it->send_index).first;
    const int64_t issue_enter =
        it->issue_row == ri && it->issue_index == it->first ? recv_enter
                                                           : reader.enter_duration(it->issue_row, it->issue_index).first;
    const int64_t end = std::min(send_enter, recv_leave);
    if (end > issue_enter) spans.emplace_back(issue_enter, end);
  }
  const auto& refs = row.collectives;
  std::shared_lock pairs(tl.pairs_mutex);
  for (auto c = std::partition_point(refs.begin(), refs.end(), [&](const CollectiveRef& r) { return r.first < first; });
       c != refs.end() && c->first < last; ++c) {
    if (c->instance >= tl.instance_last_enter.size()) continue;
    const auto [enter, duration] = reader.enter_duration(static_cast<uint32_t>(ri), c->first);
    const int64_t end = std::min(tl.instance_last_enter[c->instance], enter + static_cast<int64_t>(duration));
    if (end > enter) spans.emplace_back(enter, end);
  }
}

namespace {

// Calls add(begin, end) for each span of the union of `spans` (sorted here
// when they are not), in order.
template <class Add>
void for_each_union_span(WaitSpans& spans, Add&& add) {
  if (!std::is_sorted(spans.begin(), spans.end())) std::sort(spans.begin(), spans.end());
  int64_t begin = 0, end = 0;
  bool open = false;
  for (const auto& [b, e] : spans) {
    if (open && b <= end) {
      end = std::max(end, e);
      continue;
    }
    if (open) add(begin, end);
    begin = b;
    end = e;
    open = true;
  }
  if (open) add(begin, end);
}

// Adds [begin, end) to a pyramid's leaves (2^shift ns from 0), in
// integers: spans are whole ns, so every part is an exact value, the same
// as add_wait_spans gives, in any order.
void add_span_to_leaves(int64_t begin, int64_t end, int shift, double* leaves, size_t n) {
  if (end <= begin || n == 0) return;
  const int64_t lo = std::max<int64_t>(0, begin >> shift), hi = std::min(static_cast<int64_t>(n) - 1, (end - 1) >> shift);
  for (int64_t i = lo; i <= hi; ++i) {
    const int64_t c0 = i << shift, c1 = c0 + (int64_t{1} << shift);
    leaves[i] += static_cast<double>(std::min(end, c1) - std::max(begin, c0));
  }
}

void add_wait_spans_to_leaves(WaitSpans& spans, int shift, double* leaves, size_t n) {
  for_each_union_span(spans, [&](int64_t begin, int64_t end) { add_span_to_leaves(begin, end, shift, leaves, n); });
}

}  // namespace

void add_wait_spans(WaitSpans& spans, double origin, double width, double* cells, size_t n) {
  for_each_union_span(spans, [&](int64_t begin, int64_t end) {
    const double a = static_cast<double>(begin), b = static_cast<double>(end);
    const int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor((a - origin) / width)));
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(n) - 1, static_cast<int64_t>(std::floor((b - origin) / width)));
    for (int64_t i = lo; i <= hi; ++i) {
      const double c0 = origin + static_cast<double>(i) * width, c1 = c0 + width;
      const double part = std::min(b, c1) - std::max(a, c0);
      if (part > 0) cells[i] += part;
    }
  });
}

namespace {

// A row's calls read in about ascending index order: the last two blocks
// read are kept, their enters and durations alone unpacked, so a walk over
// the row unpacks each block about once (a receive's issuing call is mostly
// in its completing call's block or the one before). Its own row's caller
// holds that row's lock (shared); another row's cursor (`locks`) takes it
// while it unpacks a block, and reads the copies it keeps without it.
class RowCursor {
 public:
  RowCursor(const Impl& tl, const Row* row, bool locks) : tl_(tl), row_(row), locks_(locks) {}
  std::pair<int64_t, uint64_t> enter_duration(uint64_t index) {
    const Kept& k = load(index);
    const size_t i = static_cast<size_t>(index % kBlockRecords);
    if (k.duration[i] != UINT32_MAX) return {k.enter[i], k.duration[i]};
    // In the row's overflow table (read under the caller's lock: own row only).
    const auto it = row_->big_durations.find(index);
    return {k.enter[i], it != row_->big_durations.end() ? it->second : uint64_t{UINT32_MAX}};
  }
  int64_t enter(uint64_t index) { return load(index).enter[index % kBlockRecords]; }
  const Row* row() const { return row_; }
  // Reads another row from now on.
  void reset(const Row* row) {
    row_ = row;
    kept_[0].block = kept_[1].block = SIZE_MAX;
  }
  static constexpr uint64_t kBytes = 2 * (kBlockRecords * (sizeof(int64_t) + sizeof(uint32_t)) + sizeof(size_t));

 private:
  struct Kept {
    size_t block = SIZE_MAX;
    int64_t enter[kBlockRecords];
    uint32_t duration[kBlockRecords];
  };
  const Kept& load(uint64_t index) {
    const size_t b = static_cast<size_t>(index / kBlockRecords);
    if (b != kept_[now_].block) {
      now_ ^= 1;
      if (b != kept_[now_].block) {
        std::shared_lock lock(row_->mutex, std::defer_lock);
        if (locks_) lock.lock();
        tl_.block_times(*row_, b, kept_[now_].enter, kept_[now_].duration);
        kept_[now_].block = b;
      }
    }
    return kept_[now_];
  }
  const Impl& tl_;
  const Row* row_;
  bool locks_;
  std::unique_ptr<Kept[]> kept_ = std::make_unique<Kept[]>(2);
  int now_ = 0;
};

// Enters of other rows' calls (a receive's send, a receive issued on
// another thread's row), a cursor per row for the last kRows rows read: a
// rank receives from a few neighbours, and on each channel in the order
// they sent, so each sending row's blocks are read about in order.
class OtherRows {
 public:
  OtherRows(const Impl& tl, size_t own, RowCursor& own_cursor) : tl_(tl), own_(own), own_cursor_(own_cursor) {}
  int64_t enter(uint32_t row, uint64_t index) {
    if (row == own_) return own_cursor_.enter(index);
    const Row* r = tl_.rows[row].get();
    for (auto& c : cursors_)
      if (c.row() == r) return c.enter(index);
    if (cursors_.size() < kRows) {
      cursors_.emplace_back(tl_, r, true);
      return cursors_.back().enter(index);
    }
    RowCursor& c = cursors_[next_];
    next_ = (next_ + 1) % kRows;
    c.reset(r);
    return c.enter(index);
  }
  uint64_t bytes() const { return cursors_.capacity() * (sizeof(RowCursor) + RowCursor::kBytes); }

 private:
  static constexpr size_t kRows = 8;
  const Impl& tl_;
  size_t own_;
  RowCursor& own_cursor_;
  std::vector<RowCursor> cursors_;
  size_t next_ = 0;
};

// A row's waits, each receive's (from its issue to its send's enter, no
// later than its completing call's leave) and each collective call's (to
// its instance's last enter), in the order of their waiting calls, as
// each(begin, end); stops when each returns false (then false). The caller
// holds the row's lock and the pairs' (shared).
template <class Each>
bool for_each_wait(const Impl& tl, size_t ri, RowCursor& cursor, OtherRows& others, Each&& each) {
  const Row& row = *tl.rows[ri];
  const auto& received = row.received;
  const auto& collectives = row.collectives;
  for (size_t k = 0, c = 0; k < received.size() || c < collectives.size();) {
    if (c == collectives.size() || (k < received.size() && received[k].first < collectives[c].first)) {
      const ReceivedMessage& m = received[k++];
      const auto [recv_enter, recv_duration] = cursor.enter_duration(m.first);
      const int64_t issue_enter = m.issue_row != ri         ? others.enter(m.issue_row, m.issue_index)
                                  : m.issue_index == m.first ? recv_enter
                                                             : cursor.enter(m.issue_index);
      const int64_t end = std::min(others.enter(m.send_row, m.send_index), recv_enter + static_cast<int64_t>(recv_duration));
      if (end > issue_enter && !each(issue_enter, end)) return false;
    } else {
      const CollectiveRef& ref = collectives[c++];
      if (ref.instance >= tl.instance_last_enter.size()) continue;
      const auto [enter, duration] = cursor.enter_duration(ref.first);
      const int64_t end = std::min(tl.instance_last_enter[ref.instance], enter + static_cast<int64_t>(duration));
      if (end > enter && !each(enter, end)) return false;
    }
  }
  return true;
}

// The union of a row's waits added to its leaves as they come, without
// holding them all: spans wait in a window of at most kReorder kept sorted
// by start (one that comes in order is appended, the rest inserted), and
// leave it from its front, so spans that come up to that many places out of
// start order (a receive's wait starts at its issue, before the calls
// between it and its completion) are joined exactly as sorting them all
// would join them. One that comes later still (starting before one already
// taken out) makes add() return false: the caller then sorts them all.
class StreamedUnion {
 public:
  static constexpr size_t kReorder = 4096;
  StreamedUnion(int shift, double* leaves, size_t n) : shift_(shift), leaves_(leaves), n_(n) {
    window_.reserve(2 * kReorder + 1);
  }
  bool add(int64_t begin, int64_t end) {
    if (begin < taken_) return false;
    const std::pair<int64_t, int64_t> span{begin, end};
    if (window_.size() == front_ || !(span < window_.back()))
      window_.push_back(span);
    else
      window_.insert(std::upper_bound(window_.begin() + static_cast<ptrdiff_t>(front_), window_.end(), span), span);
    if (window_.size() - front_ > kReorder) take();
    return true;
  }
  void finish() {
    while (front_ < window_.size()) take();
    if (open_) add_span_to_leaves(begin_, end_, shift_, leaves_, n_);
    open_ = false;
  }
  uint64_t bytes() const { return window_.capacity() * sizeof(window_[0]); }

 private:
  void take() {
    const auto [b, e] = window_[front_++];
    // (The taken ones moved out once per kReorder taken: a copy a span.)
    if (front_ == kReorder) {
      window_.erase(window_.begin(), window_.begin() + static_cast<ptrdiff_t>(front_));
      front_ = 0;
    }
    taken_ = b;
    if (open_ && b <= end_) {
      end_ = std::max(end_, e);
      return;
    }
    if (open_) add_span_to_leaves(begin_, end_, shift_, leaves_, n_);
    begin_ = b;
    end_ = e;
    open_ = true;
  }
  int shift_;
  double* leaves_;
  size_t n_;
  WaitSpans window_;  // [front_, size): waiting, sorted
  size_t front_ = 0;
  int64_t taken_ = std::numeric_limits<int64_t>::min();
  int64_t begin_ = 0, end_ = 0;
  bool open_ = false;
};

}  // namespace

void collective_last_enters(Impl& tl, size_t ri, detail::MappedArray<int64_t>& last_enter) {
  const Row& row = *tl.rows[ri];
  if (row.collectives.empty()) return;
  std::shared_lock lock(row.mutex);
  RowCursor cursor(tl, &row, false);
  for (const CollectiveRef& ref : row.collectives) {
    if (ref.instance >= last_enter.size()) continue;
    const int64_t enter = cursor.enter(ref.first);
    std::atomic_ref<int64_t> last(last_enter[ref.instance]);
    for (int64_t seen = last.load(std::memory_order_relaxed);
         enter > seen && !last.compare_exchange_weak(seen, enter, std::memory_order_relaxed);) {
    }
  }
}

void pyramid_waits(Impl& tl, size_t ri) {
  Row& row = *tl.rows[ri];
  std::vector<std::vector<double>> waits;
  std::vector<uint32_t> by_leaf;
  {
    std::shared_lock lock(row.mutex);
    const Pyramid& p = row.pyramid;
    if (!row.executions.empty() && row.executions.size() < UINT32_MAX) {
      by_leaf.resize(p.levels[0].size() + 1);
      size_t e = 0;
      for (size_t leaf = 0; leaf < by_leaf.size(); ++leaf) {
        const double start = static_cast<double>(int64_t{static_cast<int64_t>(leaf)} << p.shift);
        while (e < row.executions.size() && row.executions[e].start < start) ++e;
        by_leaf[leaf] = static_cast<uint32_t>(e);
      }
    }
    std::vector<double> leaves(p.levels[0].size(), 0.0);
    RowCursor cursor(tl, &row, false);
    OtherRows others(tl, ri, cursor);
    bool any = false;
    std::shared_lock pairs(tl.pairs_mutex);
    StreamedUnion joined(p.shift, leaves.data(), leaves.size());
    uint64_t scratch = joined.bytes() + 2 * sizeof(RowCursor) + RowCursor::kBytes;
    if (for_each_wait(tl, ri, cursor, others, [&](int64_t b, int64_t e) { return any = true, joined.add(b, e); })) {
      joined.finish();
    } else {
      // Out of order past the window: every span, sorted.
      WaitSpans spans;
      for_each_wait(tl, ri, cursor, others, [&](int64_t b, int64_t e) { return spans.emplace_back(b, e), true; });
      std::fill(leaves.begin(), leaves.end(), 0.0);
      add_wait_spans_to_leaves(spans, p.shift, leaves.data(), leaves.size());
      scratch += spans.capacity() * sizeof(spans[0]);
    }
    pairs.unlock();
    scratch += others.bytes();
    for (uint64_t seen = tl.waits_scratch_peak.load(std::memory_order_relaxed);
         scratch > seen && !tl.waits_scratch_peak.compare_exchange_weak(seen, scratch, std::memory_order_relaxed);) {
    }
    // A row that never waits keeps no waits (read as 0, as before the build is complete).
    if (any) {
      waits.resize(p.levels.size());
      waits[0] = std::move(leaves);
      for (size_t k = 0; k + 1 < waits.size(); ++k) {
        const std::vector<double>& below = waits[k];
        std::vector<double>& above = waits[k + 1];
        above.assign(p.levels[k + 1].size(), 0.0);
        const size_t pairs_below = std::min(above.size(), below.size() / 2);
        for (size_t i = 0; i < pairs_below; ++i) above[i] = below[2 * i] + below[2 * i + 1];
        if (pairs_below < above.size() && 2 * pairs_below < below.size()) above[pairs_below] = below[2 * pairs_below];
      }
    }
  }
  std::unique_lock lock(row.mutex);
  row.pyramid.waits = std::move(waits);
  row.execution_by_leaf = std::move(by_leaf);
}

}  // namespace prof::analysis::timeline_detail
