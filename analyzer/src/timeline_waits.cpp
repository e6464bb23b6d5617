// The timeline layer (timeline.h): waits per pyramid cell and summary bucket.
//
// A row waits, as the analysis counts PotentSync, in a late sender's receive
// (from the receive's issue to the send's enter, no later than the completing
// call's leave) and in a collective call until its last member enters. Those
// spans may overlap (receives issued together, completed by one Waitall), so
// a cell holds the time of their union inside it, never their sum. The build
// adds every row's union to its pyramid's leaves once messages and
// collectives are paired; levels above sum two cells each, as for the calls.
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

void add_wait_spans(WaitSpans& spans, double origin, double width, double* cells, size_t n) {
  if (!std::is_sorted(spans.begin(), spans.end())) std::sort(spans.begin(), spans.end());
  auto add = [&](int64_t begin, int64_t end) {
    const double a = static_cast<double>(begin), b = static_cast<double>(end);
    const int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor((a - origin) / width)));
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(n) - 1, static_cast<int64_t>(std::floor((b - origin) / width)));
    for (int64_t i = lo; i <= hi; ++i) {
      const double c0 = origin + static_cast<double>(i) * width, c1 = c0 + width;
      const double part = std::min(b, c1) - std::max(a, c0);
      if (part > 0) cells[i] += part;
    }
  };
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

}  // namespace

void wait_ends(Impl& tl, size_t ri, WaitEnds& ends) {
  const Row& row = *tl.rows[ri];
  std::shared_lock lock(row.mutex);
  RowCursor cursor(tl, row);
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
      auto it = std::partition_point(received.begin(), received.end(),
                                     [&](const ReceivedMessage& r) { return r.first < m.recv_index; });
      for (; it != received.end() && it->first == m.recv_index; ++it)
        if (it->send_row == ri && it->send_index == m.first) {
          ends.send_enter[m.recv_row][static_cast<size_t>(it - received.begin())] = enter;
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
    // Leaves are 2^shift ns from 0 and spans whole ns: every part is exact.
    add_wait_spans(spans, 0, p.leaf, waits[0].data(), waits[0].size());
    for (size_t k = 0; k + 1 < waits.size(); ++k)
      for (size_t i = 0; i < waits[k + 1].size(); ++i)
        waits[k + 1][i] = waits[k][2 * i] + (2 * i + 1 < waits[k].size() ? waits[k][2 * i + 1] : 0.0);
  }
  std::unique_lock lock(row.mutex);
  row.pyramid.waits = std::move(waits);
}

}  // namespace prof::analysis::timeline_detail
