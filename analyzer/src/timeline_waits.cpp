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
// The build's step reads each row's blocks in order twice, enters and
// durations alone (a row's message ends and collective calls are listed in
// call order): first (wait_ends) each send's enter goes to its receive's
// slot and each collective call's enter to its instance's last enter (an
// atomic maximum: rows run on several threads); then (pyramid_waits) each
// receive's and collective call's wait is made from its own calls and those
// ends. The spans come in two runs already sorted by start (receives in the
// order they complete, mostly issued in that order too; collective calls in
// call order), so they are merged, not sorted, before their union is taken.
// Queries (row_wait_spans) read the few calls they need through a
// RecordReader instead.
#include <algorithm>
#include <atomic>
#include <climits>
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
  const Record* records = added ? tl_.block_records(row, b, it->second) : it->second.data();
  const Record& r = records[index - uint64_t{b} * kBlockRecords];
  return {r.enter, row.duration(r, index)};
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

// The same as add_wait_spans on a pyramid's leaves (2^shift ns from 0), in
// integers: spans are whole ns, so every part is the same exact value.
void add_wait_spans_to_leaves(WaitSpans& spans, int shift, double* leaves, size_t n) {
  if (n == 0) return;
  const int64_t last = static_cast<int64_t>(n) - 1;
  for_each_union_span(spans, [&](int64_t begin, int64_t end) {
    if (end <= begin) return;
    const int64_t lo = std::max<int64_t>(0, begin >> shift), hi = std::min(last, (end - 1) >> shift);
    for (int64_t i = lo; i <= hi; ++i) {
      const int64_t c0 = i << shift, c1 = c0 + (int64_t{1} << shift);
      leaves[i] += static_cast<double>(std::min(end, c1) - std::max(begin, c0));
    }
  });
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
// in its completing call's block or the one before). The caller holds the
// row's lock (shared).
class RowCursor {
 public:
  RowCursor(const Impl& tl, const Row& row) : tl_(tl), row_(row) {}
  std::pair<int64_t, uint64_t> enter_duration(uint64_t index) {
    const size_t b = static_cast<size_t>(index / kBlockRecords);
    if (b != kept_[now_].block) {
      now_ ^= 1;
      if (b != kept_[now_].block) {
        tl_.block_times(row_, b, kept_[now_].enter, kept_[now_].duration);
        kept_[now_].block = b;
      }
    }
    const Kept& k = kept_[now_];
    const size_t i = static_cast<size_t>(index - uint64_t{b} * kBlockRecords);
    if (k.duration[i] != UINT32_MAX) return {k.enter[i], k.duration[i]};
    // In the row's overflow table.
    const auto it = row_.big_durations.find(index);
    return {k.enter[i], it != row_.big_durations.end() ? it->second : uint64_t{UINT32_MAX}};
  }

 private:
  struct Kept {
    size_t block = SIZE_MAX;
    int64_t enter[kBlockRecords];
    uint32_t duration[kBlockRecords];
  };
  const Impl& tl_;
  const Row& row_;
  std::unique_ptr<Kept[]> kept_ = std::make_unique<Kept[]>(2);
  int now_ = 0;
};

// Finds a receiving row's first receive completed at or after a call index.
// A row's sends to a row pair with receives completed in about ascending
// order there (in order on each channel), so the search gallops forward
// from where it ended last on that row (the last few rows are kept, a rank
// sending to a few neighbours); else it bisects the whole list.
class ReceiveFinder {
 public:
  size_t first(uint32_t row, const detail::MappedArray<ReceivedMessage>& received, uint32_t index) {
    size_t lo = 0, hi = received.size();
    size_t& at = hint(row);
    if (at < received.size() && received[at].first < index) {
      lo = at + 1;
      for (size_t step = 1; lo < hi; step *= 2) {
        const size_t probe = std::min(hi, at + step);
        if (probe == hi || received[probe].first >= index) {
          hi = probe;
          break;
        }
        lo = probe + 1;
      }
    } else if (at <= received.size() && (at == 0 || received[at - 1].first < index)) {
      lo = hi = at;  // (the same place again)
    }
    at = static_cast<size_t>(std::partition_point(received.begin() + static_cast<ptrdiff_t>(lo),
                                                  received.begin() + static_cast<ptrdiff_t>(hi),
                                                  [&](const ReceivedMessage& r) { return r.first < index; }) -
                             received.begin());
    return at;
  }

 private:
  static constexpr size_t kRows = 4;
  size_t& hint(uint32_t row) {
    for (size_t i = 0; i < kRows; ++i)
      if (rows_[i] == row) return at_[i];
    const size_t i = next_;
    next_ = (next_ + 1) % kRows;
    rows_[i] = row;
    at_[i] = SIZE_MAX;  // (no hint: the whole list)
    return at_[i];
  }
  uint32_t rows_[kRows] = {UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
  size_t at_[kRows] = {};
  size_t next_ = 0;
};

}  // namespace

void wait_ends(Impl& tl, size_t ri, WaitEnds& ends) {
  const Row& row = *tl.rows[ri];
  std::shared_lock lock(row.mutex);
  RowCursor cursor(tl, row);
  ReceiveFinder receives;
  // Sends and collective calls in call order, together: the row's blocks are
  // read in order, once.
  const auto& sent = row.sent;
  const auto& collectives = row.collectives;
  for (size_t s = 0, c = 0; s < sent.size() || c < collectives.size();) {
    if (c == collectives.size() || (s < sent.size() && sent[s].first < collectives[c].first)) {
      const SentMessage& m = sent[s++];
      const int64_t enter = cursor.enter_duration(m.first).first;
      // The receive among its completing call's receives (a Waitall
      // completes several): the one this send pairs with.
      const auto& received = tl.rows[m.recv_row]->received;
      for (size_t k = receives.first(m.recv_row, received, m.recv_index);
           k < received.size() && received[k].first == m.recv_index; ++k)
        if (received[k].send_row == ri && received[k].send_index == m.first) {
          ends.send_enter[m.recv_row][k] = enter;
          break;
        }
    } else {
      const CollectiveRef& ref = collectives[c++];
      if (ref.instance >= ends.last_enter.size()) continue;
      const int64_t enter = cursor.enter_duration(ref.first).first;
      std::atomic_ref<int64_t> last(ends.last_enter[ref.instance]);
      for (int64_t seen = last.load(std::memory_order_relaxed);
           enter > seen && !last.compare_exchange_weak(seen, enter, std::memory_order_relaxed);) {
      }
    }
  }
}

void pyramid_waits(Impl& tl, size_t ri, const std::vector<int64_t>& send_enter) {
  Row& row = *tl.rows[ri];
  WaitSpans spans, collective_spans;
  std::vector<std::vector<double>> waits;
  {
    std::shared_lock lock(row.mutex);
    RowCursor cursor(tl, row);
    RecordReader others(tl, &row);  // (a receive issued on another thread's row)
    // Receives and collective calls in call order, together: the row's
    // blocks are read in order, once.
    const auto& received = row.received;
    const auto& collectives = row.collectives;
    spans.reserve(received.size());
    collective_spans.reserve(collectives.size());
    std::shared_lock pairs(tl.pairs_mutex);
    for (size_t k = 0, c = 0; k < received.size() || c < collectives.size();) {
      if (c == collectives.size() || (k < received.size() && received[k].first < collectives[c].first)) {
        const ReceivedMessage& m = received[k];
        const auto [recv_enter, recv_duration] = cursor.enter_duration(m.first);
        const int64_t issue_enter = m.issue_row != ri         ? others.enter_duration(m.issue_row, m.issue_index).first
                                    : m.issue_index == m.first ? recv_enter
                                                               : cursor.enter_duration(m.issue_index).first;
        const int64_t end = std::min(send_enter[k++], recv_enter + static_cast<int64_t>(recv_duration));
        if (end > issue_enter) spans.emplace_back(issue_enter, end);
      } else {
        const CollectiveRef& ref = collectives[c++];
        if (ref.instance >= tl.instance_last_enter.size()) continue;
        const auto [enter, duration] = cursor.enter_duration(ref.first);
        const int64_t end = std::min(tl.instance_last_enter[ref.instance], enter + static_cast<int64_t>(duration));
        if (end > enter) collective_spans.emplace_back(enter, end);
      }
    }
    pairs.unlock();
    // Receives complete in order and mostly were issued in order; a row's
    // collective calls are in order: two sorted runs, merged (a run out of
    // order, receives completed out of their issue order, is sorted first).
    if (!std::is_sorted(spans.begin(), spans.end())) std::sort(spans.begin(), spans.end());
    const size_t receives = spans.size();
    spans.insert(spans.end(), collective_spans.begin(), collective_spans.end());
    std::inplace_merge(spans.begin(), spans.begin() + static_cast<ptrdiff_t>(receives), spans.end());
    const Pyramid& p = row.pyramid;
    waits.resize(p.levels.size());
    for (size_t k = 0; k < p.levels.size(); ++k) waits[k].assign(p.levels[k].size(), 0.0);
    add_wait_spans_to_leaves(spans, p.shift, waits[0].data(), waits[0].size());
    for (size_t k = 0; k + 1 < waits.size(); ++k) {
      const std::vector<double>& below = waits[k];
      std::vector<double>& above = waits[k + 1];
      const size_t pairs_below = std::min(above.size(), below.size() / 2);
      for (size_t i = 0; i < pairs_below; ++i) above[i] = below[2 * i] + below[2 * i + 1];
      if (pairs_below < above.size() && 2 * pairs_below < below.size()) above[pairs_below] = below[2 * pairs_below];
    }
  }
  std::unique_lock lock(row.mutex);
  row.pyramid.waits = std::move(waits);
}

}  // namespace prof::analysis::timeline_detail
