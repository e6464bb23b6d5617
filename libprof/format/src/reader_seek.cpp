// Seek by time: the chunk index's times and cursors that start at a time.
//
// A chunk's times (first and last enter, latest leave, events) are read by
// walking its records (headers and times, no payload decoded) with a decoder
// confined to that chunk, once, when first asked for. A seek binary-searches
// the chunks of a stream by their latest leave, so it reads the times of O(log chunks) chunks, then decodes the chunk
// it lands on from its start (a chunk decodes on its own: the kSameComm /
// kPackedRequest context is set within it) up to the first event that leaves at
// or after the time. The intervals open there are the chunk's snapshot
// (format 3) with the markers decoded before that event applied; without a
// usable snapshot, every earlier chunk of the stream is decoded for its markers
// (formats 1 and 2: correct, slower). A damaged chunk skipped on the way loses
// its markers to a scan but not to a snapshot, which the shim took from its
// own stack.
#include <algorithm>
#include <cmath>
#include <limits>

#include "reader_cursor.h"

namespace prof::trace {

namespace {

// A snapshot record's entries into `open`; false when the record does not hold
// them (a stack deeper than a snapshot records, or a malformed record).
bool read_snapshot(const uint8_t* record, std::vector<format::OpenInterval>* open) {
  const uint32_t w0 = load32(record);
  if (!format::record_short_time(w0)) return false;
  const uint32_t words = format::record_payload_words(w0);
  if (words < 1) return false;
  const uint8_t* q = record + 4 * format::record_header_words(w0);
  const uint32_t depth = load32(q);
  if (depth > format::kMaxSnapshotEntries || words != 1 + 4 * depth) return false;
  open->clear();
  for (uint32_t i = 0; i < depth; ++i) {
    const uint8_t* entry = q + 4 + 16 * i;
    open->push_back({load32(entry), load32(entry + 4), load64(entry + 8)});
  }
  return true;
}

// Decodes cursor `c` (a Cursor::Impl) to its end, applying its markers to `open`.
template <class StreamDecoder>
void apply_markers_to_end(StreamDecoder& c, std::vector<format::OpenInterval>& open) {
  Event e;
  typename StreamDecoder::Prepared r;
  while (c.scan(r)) {
    c.fill(e, r);
    if (e.kind == FuncKind::Marker)
      format::apply_marker(open, e.marker_begin, e.interval_id, e.callsite, e.enter);
  }
}

// Whether a prepared record continues the call of the record before it.
template <class PreparedRecord>
bool is_continuation(const PreparedRecord& r) {
  const auto kind = static_cast<FuncKind>(r.kind);
  return (kind == FuncKind::Completion || kind == FuncKind::RequestOp) &&
         (r.flags & format::kContinuation);
}

}  // namespace

RankTrace::Impl::ChunkTimes RankTrace::Impl::chunk_times(size_t stream_index,
                                                         size_t chunk_index) const {
  {
    std::lock_guard<std::mutex> lock(times_mu);
    const ChunkTimes& known = times[stream_index][chunk_index];
    if (known.known) return known;
  }
  ChunkTimes t;
  t.known = true;
  {
    Cursor::Impl c;
    c.attach(this, stream_index);
    c.partial = true;
    c.chunk = streams[stream_index].chunks.data() + chunk_index;
    c.chunks_end = c.chunk + 1;
    if (!c.next_chunk()) {
      t.damaged = true;  // its CRC failed (counted by verify)
    } else {
      t.has_snapshot = c.snapshot != nullptr;
      Cursor::Impl::Prepared r;
      // Records are walked, not decoded; what decoding would note of the chunk
      // context is noted here, since a later record's validity depends on it.
      while (c.scan(r)) {
        const uint32_t flags = r.flags & r.context_flags;
        c.context_avail |= r.context_flags & ~flags;
        const uint64_t leave = r.enter + r.dur;
        if (is_continuation(r)) {
          t.last_leave = std::max(t.last_leave, leave);
          continue;
        }
        if (t.events == 0) t.first_enter = r.enter;
        t.last_enter = r.enter;
        t.last_leave = t.events == 0 ? leave : std::max(t.last_leave, leave);
        ++t.events;
      }
    }
  }
  std::lock_guard<std::mutex> lock(times_mu);
  times[stream_index][chunk_index] = t;
  return t;
}

size_t RankTrace::chunk_count(size_t stream_index) const {
  if (impl_->stand_in) return stream_index < impl_->stand_in_chunks.size() ? impl_->stand_in_chunks[stream_index] : 0;
  return impl_->indexed_chunks(stream_index);
}

ChunkInfo RankTrace::chunk(size_t stream_index, size_t chunk_index) const {
  ChunkInfo info;
  if (chunk_index >= impl_->indexed_chunks(stream_index)) return info;
  const reader::ChunkRef& ref = impl_->streams[stream_index].chunks[chunk_index];
  const Impl::ChunkTimes t = impl_->chunk_times(stream_index, chunk_index);
  info.file_offset = ref.header_off;
  info.payload_bytes = ref.len;
  info.sealed = ref.sealed;
  info.damaged = t.damaged;
  info.has_snapshot = t.has_snapshot;
  info.base_time = ref.base_time;
  info.events = t.events;
  info.first_enter = t.first_enter;
  info.last_enter = t.last_enter;
  info.last_leave = t.last_leave;
  if (t.events > 0) {
    info.first_enter_ns = to_global_ns(t.first_enter);
    info.last_leave_ns = to_global_ns(t.last_leave);
  }
  return info;
}

std::vector<ChunkInfo> RankTrace::chunks(size_t stream_index) const {
  std::vector<ChunkInfo> out;
  const size_t n = impl_->indexed_chunks(stream_index);
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(chunk(stream_index, i));
  return out;
}

uint64_t RankTrace::ticks_at_global_ns(double ns) const {
  // to_global_ns(t) = a * t + b: (t - epoch) * ns_per_tick plus an offset that
  // is constant or linear between the two clock syncs.
  const Impl& trace = *impl_;
  double slope = trace.ns_per_tick;
  if (trace.have_init && trace.have_final && trace.final_t > trace.init_t)
    slope += (trace.final_off - trace.init_off) / (trace.final_t - trace.init_t);
  if (!(slope > 0) || !std::isfinite(ns)) return ns > 0 ? std::numeric_limits<uint64_t>::max() : 0;
  const double at_epoch = to_global_ns(trace.epoch);
  const double estimate = static_cast<double>(trace.epoch) + (ns - at_epoch) / slope;
  if (estimate <= 0) return 0;
  if (estimate >= 1.8e19) return std::numeric_limits<uint64_t>::max();
  uint64_t t = static_cast<uint64_t>(std::ceil(estimate));
  // The estimate is within a few ticks of the answer (rounding): step to it.
  for (int i = 0; i < 64 && t > 0 && to_global_ns(t - 1) >= ns; ++i) --t;
  for (int i = 0; i < 64 && to_global_ns(t) < ns && t < std::numeric_limits<uint64_t>::max(); ++i)
    ++t;
  return t;
}

RankTrace::Cursor RankTrace::stream_from(size_t index, uint64_t ticks) const {
  auto cursor = std::make_unique<Cursor::Impl>();
  Cursor::Impl& c = *cursor;
  c.attach(impl_.get(), index);
  c.partial = true;
  c.with_in_flight = true;
  const size_t n = impl_->indexed_chunks(index);
  if (n == 0) return Cursor(std::move(cursor));

  // The first chunk whose latest leave is at or after `ticks`; chunks without
  // events (damaged, or only bad records) take the answer of the next one.
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    size_t with_events = mid;
    Impl::ChunkTimes t;
    for (; with_events < hi; ++with_events) {
      t = impl_->chunk_times(index, with_events);
      if (t.events > 0) break;
    }
    if (with_events == hi || t.last_leave >= ticks) hi = mid;
    else lo = with_events + 1;
  }
  // Past the last event: decode the last chunk, for the intervals open at the end.
  const size_t start = std::min(lo, n - 1);

  const reader::ChunkRef* chunks = impl_->streams[index].chunks.data();
  c.chunk = chunks + start;
  if (c.next_chunk()) {
    c.open_from_snapshot = c.snapshot && read_snapshot(c.snapshot, &c.open);
    if (!c.open_from_snapshot) {
      c.open.clear();
      Cursor::Impl earlier;
      earlier.attach(impl_.get(), index);
      earlier.partial = true;
      earlier.chunks_end = c.current;
      apply_markers_to_end(earlier, c.open);
    }
  }
  Event skipped;
  Cursor::Impl::Prepared r;
  while (c.scan(r)) {
    if (r.enter + r.dur >= ticks) {
      c.prepared = r;
      c.ready = true;
      break;
    }
    c.fill(skipped, r);
    if (skipped.kind == FuncKind::Marker)
      format::apply_marker(c.open, skipped.marker_begin, skipped.interval_id, skipped.callsite,
                           skipped.enter);
  }
  return Cursor(std::move(cursor));
}

const std::vector<OpenInterval>& RankTrace::Cursor::open_intervals() const {
  static const std::vector<OpenInterval> kNone;
  return impl_ ? impl_->open : kNone;
}

bool RankTrace::Cursor::open_intervals_from_snapshot() const {
  return impl_ && impl_->open_from_snapshot;
}

}  // namespace prof::trace
