// All streams of a rank merged by enter time (RankTrace::MergedCursor).
#include "reader_cursor.h"

namespace prof::trace {

// MergedCursor: k-way merge by enter time (ties: lower stream index first).
// Every live stream has its next record prepared (enter time known, nothing
// decoded); the earliest is decoded straight into the caller's Event and its
// stream prepared again. Up to kLinearMax live streams (the usual case: a few
// threads) the earliest is found by a branch-free scan over a compact key
// array; beyond that, by a binary heap of (key, stream).

namespace {
constexpr size_t kLinearMax = 16;
constexpr size_t kFirstBatchEvents = 8;
}

struct RankTrace::MergedCursor::Impl {
  std::vector<std::unique_ptr<Cursor::Impl>> cursors;
  // Live streams in increasing stream index, and their prepared enter times.
  std::vector<uint32_t> live;
  std::vector<uint64_t> keys;
  struct Node {
    uint64_t key;
    uint32_t index;
  };
  std::vector<Node> heap;  // when more than kLinearMax streams
  bool use_heap = false;
  bool started = false;
  // next_batch(): the Events it fills and, per Event, the groups its last
  // event set (EventGroup).
  // They start at kFirstBatchEvents and double each time a batch comes out
  // full, up to batch_limit: a rank of a few events never holds a batch of
  // kBatchEvents (16 KB), one of many reaches it in a few batches.
  std::vector<Event> batch;
  std::vector<uint8_t> batch_groups;
  // Per Event, the template its members were copied from (Cursor::Impl::slot_tags).
  std::vector<uint32_t> batch_tags;
  size_t batch_limit = kBatchEvents;  // limit_batch()
  // Where a batch of one stream stops (0: at its size): a multiple of the
  // period of the last batch's templates, so that a loop's records fill the
  // same slots from one batch to the next and their templates' copies are
  // skipped (Cursor::Impl::slot_tags). Found again when a batch made many
  // copies: a loop whose records changed, or a batch that ended early.
  size_t aligned_limit = 0;
  // batch_leave_bounds() of the last batch.
  uint64_t batch_least = 0, batch_most = UINT64_MAX;
  bool last_batch_full = true;
  const reader::ChunkRef* chunk_of_last = nullptr;  // one stream: where the last event started
  bool set_aside = false;  // release_file() put its cursors aside: take them back first

  void take_back() {
    set_aside = false;
    for (const auto& c : cursors) c->take_back();
  }

  // The least period p of the tags of slots [1, n): tags[i] == tags[i + p]
  // for each, a slot decoded in full (kNoSlotTag: the batch's first, a
  // record the run decodes, as at its start) matching any, over at least
  // kPeriodCompared slots; 0 where none. Only the places of the first tag
  // are tried (each period starts again with it): a few, each one's compare
  // mostly stopping early.
  static constexpr size_t kPeriodCompared = 16;
  static size_t tag_period(const uint32_t* tags, size_t n) {
    constexpr uint32_t kAny = Cursor::Impl::kNoSlotTag;
    size_t first = 1;
    while (first < n && tags[first] == kAny) ++first;
    for (size_t p = 1; 1 + p + kPeriodCompared <= n && first + p < n; ++p) {
      if (tags[first + p] != tags[first]) continue;
      size_t i = 1;
      while (i + p < n && (tags[i] == tags[i + p] || tags[i] == kAny || tags[i + p] == kAny)) ++i;
      if (i + p == n) return p;
    }
    return 0;
  }
  // Batches to go before the period is looked for again (aligned_limit).
  static constexpr uint32_t kBatchesBetweenPeriods = 8;
  uint32_t period_wait = 0;

  static bool less(const Node& a, const Node& b) {
    return a.key < b.key || (a.key == b.key && a.index < b.index);
  }
  void sift_down(size_t i) {
    const size_t n = heap.size();
    for (;;) {
      size_t l = 2 * i + 1, m = i;
      if (l < n && less(heap[l], heap[m])) m = l;
      if (l + 1 < n && less(heap[l + 1], heap[m])) m = l + 1;
      if (m == i) return;
      std::swap(heap[i], heap[m]);
      i = m;
    }
  }
  void start() {
    started = true;
    for (uint32_t i = 0; i < cursors.size(); ++i)
      if (cursors[i]->prepare()) {
        live.push_back(i);
        keys.push_back(cursors[i]->prepared.enter);
      }
    use_heap = live.size() > kLinearMax;
    if (use_heap) {
      for (size_t j = 0; j < live.size(); ++j) heap.push_back({keys[j], live[j]});
      for (size_t i = heap.size() / 2; i-- > 0;) sift_down(i);
    }
  }
};

RankTrace::MergedCursor::MergedCursor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RankTrace::MergedCursor::MergedCursor(MergedCursor&&) noexcept = default;
RankTrace::MergedCursor::~MergedCursor() = default;

RankTrace::MergedCursor RankTrace::events() const {
  auto m = std::make_unique<MergedCursor::Impl>();
  const size_t n = impl_->streams.size();
  m->cursors.reserve(n);
  for (size_t i = 0; i < n; ++i) m->cursors.push_back(std::move(stream(i).impl_));
  return MergedCursor(std::move(m));
}

RankTrace::MergedCursor RankTrace::events_from(uint64_t ticks) const {
  auto m = std::make_unique<MergedCursor::Impl>();
  const size_t n = impl_->streams.size();
  m->cursors.reserve(n);
  for (size_t i = 0; i < n; ++i) m->cursors.push_back(std::move(stream_from(i, ticks).impl_));
  return MergedCursor(std::move(m));
}

RankTrace::MergedCursor RankTrace::events_from_chunks(const std::vector<size_t>& first_chunk) const {
  auto m = std::make_unique<MergedCursor::Impl>();
  const size_t n = impl_->streams.size();
  m->cursors.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto c = std::make_unique<Cursor::Impl>();
    c->attach(impl_.get(), i);
    c->partial = true;
    c->with_in_flight = true;
    const size_t first = i < first_chunk.size() ? std::min(first_chunk[i], impl_->indexed_chunks(i)) : 0;
    if (i < impl_->streams.size()) c->chunk = impl_->streams[i].chunks.data() + first;
    m->cursors.push_back(std::move(c));
  }
  return MergedCursor(std::move(m));
}

RankTrace::MergedCursor RankTrace::events_from_position(const MergedCursor::Position& at) const {
  auto m = std::make_unique<MergedCursor::Impl>();
  auto c = std::make_unique<Cursor::Impl>();
  c->attach(impl_.get(), 0);
  c->partial = true;
  c->with_in_flight = true;
  bool entered = false;
  if (at.valid && impl_->streams.size() == 1 && at.chunk < impl_->indexed_chunks(0)) {
    c->chunk = impl_->streams[0].chunks.data() + at.chunk;
    // Entered as a cursor from the chunk's start would enter it (its CRC
    // checked), then moved to the record.
    if (c->next_chunk() && c->current == impl_->streams[0].chunks.data() + at.chunk &&
        at.offset <= c->current->len) {
      entered = true;
      c->repeats_up_to(c->data + at.offset);
      c->p = c->data + at.offset;
      c->chain = at.chain;
      c->context_comm = at.context_comm;
      c->context_request_high = at.context_request_high;
      c->context_avail = at.context_avail;
    }
  }
  if (!entered) {
    c->leave_chunk();
    c->chunk = c->chunks_end;
    c->p = c->end = nullptr;
    c->with_in_flight = false;
  }
  m->cursors.push_back(std::move(c));
  return MergedCursor(std::move(m));
}

RankTrace::MergedCursor::Position RankTrace::MergedCursor::position() const {
  Position at;
  if (!impl_ || impl_->cursors.size() != 1) return at;
  const Cursor::Impl& c = *impl_->cursors[0];
  if (c.set_aside) {  // (its offsets, plus one: see Cursor::Impl::put_aside)
    if (c.ready || !c.current || !c.aside.p || c.aside.end < c.aside.p + 8) return at;
  } else if (c.ready || !c.current || !c.p || c.end - c.p < 8) {
    return at;
  }
  at.valid = true;
  at.chunk = static_cast<uint32_t>(c.current - c.trace->streams[c.stream_index].chunks.data());
  at.offset = static_cast<uint32_t>(c.set_aside ? c.aside.p - 1 : static_cast<size_t>(c.p - c.data));
  at.chain = c.chain;
  at.context_comm = c.context_comm;
  at.context_request_high = c.context_request_high;
  at.context_avail = c.context_avail;
  return at;
}

size_t RankTrace::MergedCursor::current_chunk() const {
  if (!impl_ || impl_->cursors.size() != 1 || !impl_->chunk_of_last) return SIZE_MAX;
  const Cursor::Impl& c = *impl_->cursors[0];
  return static_cast<size_t>(impl_->chunk_of_last - c.trace->streams[c.stream_index].chunks.data());
}

size_t RankTrace::MergedCursor::reading_chunk() const {
  if (!impl_ || impl_->cursors.size() != 1) return SIZE_MAX;
  const Cursor::Impl& c = *impl_->cursors[0];
  if (!c.current) return SIZE_MAX;
  return static_cast<size_t>(c.current - c.trace->streams[c.stream_index].chunks.data());
}

uint64_t RankTrace::MergedCursor::gaps() const {
  if (!impl_) return 0;
  uint64_t n = 0;
  for (const auto& c : impl_->cursors) n += c->gaps;
  return n;
}

const std::vector<OpenInterval>& RankTrace::MergedCursor::open_intervals(
    size_t stream_index) const {
  static const std::vector<OpenInterval> kNone;
  if (!impl_ || stream_index >= impl_->cursors.size()) return kNone;
  return impl_->cursors[stream_index]->open;
}

bool RankTrace::MergedCursor::next(Event& e) {
  if (!impl_) return false;
  Impl& m = *impl_;
  if (m.set_aside) [[unlikely]] m.take_back();
  if (m.cursors.size() == 1) {
    Cursor::Impl& c = *m.cursors[0];
    if (c.ready) [[unlikely]] {  // the event a seek stopped at
      c.decode(e);
      return true;
    }
    Cursor::Impl::Prepared r;
    if (!c.scan(r)) return false;
    m.chunk_of_last = c.current;  // (fill may read on into the next chunk: continuations)
    c.fill(e, r);
    return true;
  }
  if (!m.started) m.start();

  if (m.use_heap) {
    if (m.heap.empty()) return false;
    Impl::Node& top = m.heap[0];
    Cursor::Impl& c = *m.cursors[top.index];
    c.decode(e);
    if (c.prepare()) {
      top.key = c.prepared.enter;
    } else {
      m.heap[0] = m.heap.back();
      m.heap.pop_back();
    }
    if (!m.heap.empty()) m.sift_down(0);
    return true;
  }

  const size_t n = m.keys.size();
  if (n == 0) return false;
  const uint64_t* k = m.keys.data();
  size_t best = 0;
  uint64_t best_key = k[0];
  for (size_t j = 1; j < n; ++j) {
    const bool lt = k[j] < best_key;  // strict: the lower stream index wins ties
    best = lt ? j : best;
    best_key = lt ? k[j] : best_key;
  }
  Cursor::Impl& c = *m.cursors[m.live[best]];
  c.decode(e);
  if (c.prepare()) {
    m.keys[best] = c.prepared.enter;
  } else {  // keep `live` in stream order
    m.live.erase(m.live.begin() + static_cast<ptrdiff_t>(best));
    m.keys.erase(m.keys.begin() + static_cast<ptrdiff_t>(best));
  }
  return true;
}

std::pair<uint64_t, uint64_t> RankTrace::MergedCursor::batch_leave_bounds() const {
  if (!impl_) return {0, UINT64_MAX};
  return {impl_->batch_least, impl_->batch_most};
}

void RankTrace::MergedCursor::limit_batch(size_t events) {
  if (impl_ && impl_->batch.empty()) impl_->batch_limit = std::clamp<size_t>(events, 1, kBatchEvents);
}

void RankTrace::MergedCursor::release_pages() {
  if (!impl_) return;
  for (const auto& c : impl_->cursors) {
    if (c->current && !c->copied && !c->set_aside) c->trace->release(*c->current, true);
    c->lend_aside();
    if (c->set_aside) impl_->set_aside = true;
    // The repeat templates go too (5 KB a cursor, 84 MB at 16384 ranks): a
    // missing template only means the next repeat is decoded in full.
    std::vector<Cursor::Impl::RepeatTemplate>().swap(c->templates);
  }
}

void RankTrace::MergedCursor::hold_between_visits(BetweenVisits how) {
  if (!impl_) return;
  for (const auto& c : impl_->cursors) c->between_visits = how;
}

void RankTrace::MergedCursor::end_visit() {
  if (!impl_) return;
  // (Every cursor holds the mode hold_between_visits() gave them all.)
  if (!impl_->cursors.empty() && impl_->cursors.front()->lends_buffer()) release_pages();
  release_file();
}

void RankTrace::MergedCursor::release_file() {
  if (!impl_ || reader::mappings_held.load(std::memory_order_relaxed) <= reader::mapping_budget_now()) return;
  for (const auto& c : impl_->cursors) c->put_aside();
  impl_->set_aside = true;
}

// One stream: the first event may enter the next chunk (or end the stream);
// the others are read within the chunk it starts in. A Completion or RequestOp
// record that could grow the entry buffers (a continuation may follow, or the
// buffers are full) is decoded only as a batch's first event, and ends it: it
// is kept prepared (Cursor::Impl::ready) for the next batch.
std::span<const Event> RankTrace::MergedCursor::next_batch() {
  if (!impl_) return {};
  Impl& m = *impl_;
  if (m.set_aside) [[unlikely]] m.take_back();
  if (m.last_batch_full && m.batch.size() < m.batch_limit) [[unlikely]] {
    // (The last batch's events are the caller's no longer: they may move.)
    const size_t size = std::min(m.batch_limit, std::max(kFirstBatchEvents, 2 * m.batch.size()));
    m.batch.resize(size);
    m.batch_groups.resize(size, 0);
    m.batch_tags.resize(size, Cursor::Impl::kNoSlotTag);
  }
  const size_t limit = m.aligned_limit != 0 ? std::min(m.aligned_limit, m.batch.size()) : m.batch.size();
  Event* out = m.batch.data();
  uint8_t* groups = m.batch_groups.data();
  uint32_t* tags = m.batch_tags.data();
  if (m.cursors.size() != 1) {
    m.last_batch_full = false;
    if (!next(out[0])) return {};
    groups[0] = kAllGroups;
    tags[0] = Cursor::Impl::kNoSlotTag;
    m.batch_least = m.batch_most = out[0].leave;
    return {out, 1};
  }
  Cursor::Impl& c = *m.cursors[0];
  c.completion_used = c.request_used = 0;
  c.slot_tags = tags;
  c.slot_tag_count = m.batch_tags.size();
  c.slot_copies = 0;
  // (Over every slot, not the batch's limit: a slot past a limit cut to the
  // period keeps its tails until a longer batch copies a template into it.)
  if (c.batch_tails_set) [[unlikely]] c.clear_batch_tails(out, groups, m.batch.size());
  if (c.lists_short) {  // the last batch was cut for room: make more (kept from then on)
    c.lists_short = false;
    c.completion_buffer.resize(std::max(kCompletionMax, c.completion_buffer.size() * 2));
    c.request_buffer.resize(std::max(format::kMaxPayloadWords, c.request_buffer.size() * 2));
  }
  // The first record may come from a seek, the next chunk or the stream's end
  // (a call in flight); the others are read within its chunk.
  Cursor::Impl::Prepared first;
  if (c.ready) {
    c.ready = false;
    first = c.prepared;
  } else if (!c.scan(first)) {
    return {};
  }
  m.chunk_of_last = c.current;
  const bool first_counts = first.rec != nullptr;  // a call in flight is no record
  constexpr uint16_t kCompletion = static_cast<uint16_t>(FuncKind::Completion);
  constexpr uint16_t kRequestOp = static_cast<uint16_t>(FuncKind::RequestOp);
  size_t n = 1;
  const bool lists = first.kind == kCompletion || first.kind == kRequestOp;
  const bool continued = lists && first.rec && c.may_continue();
  c.fill<true>(out[0], first, &groups[0]);
  tags[0] = Cursor::Impl::kNoSlotTag;
  uint64_t least = out[0].leave, most = out[0].leave;
  if (!continued) {
    while (n < limit) {
      // The common records in a run; the one it stops at the general way.
      n = c.run_fixed(out, groups, n, limit, least, most);
      if (n == limit) break;
      Cursor::Impl::Prepared r;  // one per record, so that it can stay in registers
      if (!c.scan<true>(r)) break;
      if (r.kind == kCompletion || r.kind == kRequestOp) [[unlikely]] {
        if (!c.lists_fit(r)) {
          c.prepared = r;
          c.ready = true;
          break;
        }
      }
      c.fill<true>(out[n], r, &groups[n]);
      tags[n] = Cursor::Impl::kNoSlotTag;
      least = std::min(least, out[n].leave);
      most = std::max(most, out[n].leave);
      ++n;
    }
  }
  c.events += n - (first_counts ? 0 : 1);
  m.last_batch_full = n == limit;
  // The period is looked for after a full batch that copied a quarter of its
  // events or more (its loop fell out of step with the slots, or has none),
  // and then not for kBatchesBetweenPeriods batches: a loop that stays out
  // of step, or has no period within a batch, would pay the search each time.
  if (m.period_wait != 0) {
    --m.period_wait;
  } else if (m.last_batch_full && c.slot_copies * 4 >= n) {
    const size_t period = Impl::tag_period(tags, n);
    m.aligned_limit = period != 0 ? m.batch_limit / period * period : 0;
    m.period_wait = Impl::kBatchesBetweenPeriods;
  }
  m.batch_least = least;
  m.batch_most = most;
  return {out, n};
}

}  // namespace prof::trace
