// TraceWriter: writes rank files without MPI (tests, synthetic benchmarks, the
// analyzer's golden example), encoding records with format::RecordEncoder as the
// shim does.
//
// Layout produced: FileHeader; then, in call order, one sealed Definitions chunk
// per definition call (capacity = align8(used)) and sealed Events chunks as each
// stream's buffer fills. Each events chunk starts with the stream's interval
// snapshot (format 3; not in a version-2 file), as the shim writes it. A
// stream's chunk is sealed when the next record might not fit (fewer than
// kMaxRecordWords words left), and written with its capacity
// shrunk to align8(used). close_without_sealing() writes the last chunk of each
// stream with flags 0, used 0, crc 0 and its full capacity (zeros after the last
// record), as a killed process leaves it.
//
// Definition text: fields are separated by TAB, so TABs and newlines inside
// strings are replaced by spaces. Handles, addresses and biases are written as
// 0x-prefixed hexadecimal, other numbers in decimal, doubles in their shortest
// round-trip form.
//
// Events too large for one record (a Completion with more than 32 entries or
// more than 127 payload words, a RequestOp with more than 123 requests) are
// split as the shim splits them: several
// records of the same function, the later ones flagged kContinuation, with
// dt_enter 0 and the same duration. The reader merges them back into one Event.
//
// From format 6 a record whose payload repeats the previous full record of
// its function in the chunk is written as its header alone
// (RecordEncoder::commit_repeating), as the shim writes it; an older
// `version` writes every payload in full. From format 8 each stream's events
// chunks are numbered 0, 1, 2, ... (ChunkHeader::sequence); a Live chunk's
// chunk counts are what the caller's slots hold, except the one
// close_counting_chunks() writes last, which counts them as the shim does.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "prof/definition_lines.h"
#include "prof/trace_reader.h"

namespace prof::trace {

namespace {
using namespace format;
}  // namespace

struct TraceWriter::Impl {
  std::string path;
  FILE* f = nullptr;
  bool ok = false;
  bool closed = false;
  uint32_t cap_words = 0;
  bool snapshots = true;  // format 3
  bool repeats = true;    // format 6
  bool sites = true;      // format 7: call site indexes in the func field
  bool sequences = true;  // format 8: events chunks numbered in their stream

  struct Stream {
    uint32_t id = 0;
    std::vector<uint32_t> buf;
    size_t used = 0;  // words
    uint64_t base_time = 0;
    uint64_t prev = 0;  // previous record's enter in this chunk
    ChunkContext cx;    // what kSameComm / kPackedRequest records of this chunk refer to
    std::unique_ptr<RepeatTable> repeat = std::make_unique<RepeatTable>();  // kRepeatPayload
    std::vector<OpenInterval> open;  // the intervals open on the stream (snapshots)
    uint32_t chunks = 0;             // written so far: the next one's sequence number (format 8)
  };
  std::map<uint32_t, Stream> streams;
  Stream* last = nullptr;

  void write(const void* p, size_t n) {
    if (!f || n == 0) return;
    if (std::fwrite(p, 1, n, f) != n) ok = false;
  }
  // A Live chunk of `count` slots `stride` bytes apart, copied from `slots`.
  void live(uint64_t heartbeat, const void* slots, size_t count, uint32_t stride) {
    if (closed) return;
    format::LiveHeader h{};
    h.heartbeat = heartbeat;
    h.slot_count = static_cast<uint32_t>(count);
    h.slot_bytes = stride;
    std::vector<uint8_t> payload(sizeof h + count * stride);
    std::memcpy(payload.data(), &h, sizeof h);
    if (count) std::memcpy(payload.data() + sizeof h, slots, count * stride);
    const uint32_t n = static_cast<uint32_t>(payload.size());
    chunk(ChunkType::Live, 0, n, 0, 0, 0, 0, 0, payload.data(), n);
  }

  void chunk(ChunkType type, uint16_t flags, uint32_t capacity, uint32_t used, uint32_t crc,
             uint16_t stream, uint16_t sequence, uint64_t base_time, const void* payload,
             size_t payload_bytes) {
    ChunkHeader h{};
    h.magic = kChunkMagic;
    h.type = static_cast<uint16_t>(type);
    h.flags = flags;
    h.capacity = capacity;
    h.used = used;
    h.crc32 = crc;
    h.stream = stream;
    h.sequence = sequence;
    h.base_time = base_time;
    write(&h, sizeof h);
    write(payload, payload_bytes);
    static const char zeros[8] = {};
    if (capacity > payload_bytes) write(zeros, capacity - payload_bytes);  // < 8 here
  }
  // One definition line, as definition_lines.h makes it (newline included).
  void definition(const std::string& text) {
    if (closed) return;
    const uint32_t used = static_cast<uint32_t>(text.size());
    chunk(ChunkType::Definitions, kChunkSealed, static_cast<uint32_t>(align8(used)), used,
          format::crc32c(text.data(), used), 0, 0, 0, text.data(), used);
  }
  void seal(Stream& s) {
    if (s.used == 0) return;
    const uint32_t used = static_cast<uint32_t>(s.used * 4);
    chunk(ChunkType::Events, kChunkSealed, static_cast<uint32_t>(align8(used)), used,
          format::crc32c(s.buf.data(), used), static_cast<uint16_t>(s.id), next_sequence(s),
          s.base_time, s.buf.data(), used);
    std::fill(s.buf.begin(), s.buf.begin() + static_cast<ptrdiff_t>(s.used), 0u);
    s.used = 0;
  }
  // A stream's next chunk's number (0 before format 8, which had none).
  uint16_t next_sequence(Stream& s) { return sequences ? static_cast<uint16_t>(s.chunks++) : 0; }
  Stream& stream(uint32_t id) {
    if (last && last->id == id) return *last;
    if (id >= kMaxStreams) ok = false;  // a chunk header cannot say it
    auto [it, fresh] = streams.try_emplace(id);
    if (fresh) {
      it->second.id = id;
      it->second.buf.assign(cap_words, 0u);
    }
    last = &it->second;
    return *last;
  }
  // One record: `payload` pushes the payload words (at most 123: room is kept
  // for the long-time words). `may_repeat`: the kind repeats
  // (format::kind_repeats) and the record continues no call.
  template <class F>
  void record(Stream& s, uint16_t func, uint8_t flags, uint64_t enter, uint64_t dur, F&& payload,
              bool may_repeat = true) {
    if (s.used + kMaxRecordWords > cap_words) seal(s);
    if (s.used == 0) {
      s.base_time = enter;
      s.prev = enter;
      s.cx.reset();
      s.repeat->reset();
      if (snapshots) s.used = encode_snapshot(s.buf.data(), s.open);
    }
    RecordEncoder enc(s.buf.data() + s.used);
    enc.flag(flags);
    enc.time(enter - s.prev, dur);  // backwards: wraps, encoded as a long (signed) dt
    payload(enc);
    s.used += repeats && may_repeat ? enc.commit_repeating(func, *s.repeat) : enc.commit(func);
    s.prev = enter;
  }
  void finish(bool seal_last, bool count_chunks = false, uint64_t heartbeat = 0) {
    if (closed) return;
    for (auto& [id, s] : streams) {
      if (seal_last) {
        seal(s);
      } else if (s.used > 0) {
        const uint32_t cap = cap_words * 4;
        chunk(ChunkType::Events, 0, cap, 0, 0, static_cast<uint16_t>(s.id), next_sequence(s),
              s.base_time, s.buf.data(), cap);
        s.used = 0;
      }
    }
    if (count_chunks && !streams.empty()) {
      std::vector<LiveSlot> slots(std::min<size_t>(streams.rbegin()->first + 1, kLiveSlots));
      for (const auto& [id, s] : streams)
        if (id < slots.size()) slots[id].chunks = s.chunks;
      live(heartbeat, slots.data(), slots.size(), sizeof(LiveSlot));
    }
    closed = true;
    streams.clear();
    last = nullptr;
    if (f) {
      if (std::fflush(f) != 0) ok = false;
      if (std::fclose(f) != 0) ok = false;
      f = nullptr;
    }
  }
};

TraceWriter::TraceWriter(const std::string& path, int rank, int world_size, uint64_t run_id,
                         format::TimerKind timer, uint32_t chunk_bytes, uint32_t version)
    : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  w.path = path;
  w.snapshots = version >= kFirstSnapshotVersion;
  w.repeats = version >= kFirstRepeatVersion;
  w.sites = version >= kFirstSiteVersion;
  w.sequences = version >= kFirstSequenceVersion;
  // Room for a snapshot and the largest record.
  uint64_t cap = std::max<uint64_t>(chunk_bytes, (kMaxSnapshotWords + kMaxRecordWords) * 4);
  cap = std::min<uint64_t>(align8(cap), uint64_t{1} << 30);
  w.cap_words = static_cast<uint32_t>(cap / 4);
  w.f = std::fopen(path.c_str(), "wb");
  w.ok = w.f != nullptr;
  if (!w.f) {
    w.closed = true;
    return;
  }
  FileHeader h{};
  std::memcpy(h.magic, kFileMagic, sizeof h.magic);
  h.version = version;
  h.header_size = sizeof(FileHeader);
  h.run_id = run_id;
  h.rank = rank;
  h.world_size = world_size;
  h.timer = static_cast<uint32_t>(timer);
  w.write(&h, sizeof h);
}

TraceWriter::~TraceWriter() {
  if (impl_) impl_->finish(true);
}

bool TraceWriter::ok() const { return impl_->ok; }

void TraceWriter::meta(const std::string& key, const std::string& value) {
  impl_->definition(definition_line::meta(key, value));
}
void TraceWriter::environment(const std::string& name, const std::string& value) {
  impl_->definition(definition_line::environment(name, value));
}
void TraceWriter::setting(const std::string& name, const ProfSetting& setting) {
  impl_->definition(definition_line::setting(name, setting.value, setting.from_environment));
}
void TraceWriter::function(uint16_t id, FuncKind kind, const std::string& name) {
  impl_->definition(definition_line::function(id, static_cast<unsigned>(kind), name));
}
void TraceWriter::comm(const CommDef& d) {
  impl_->definition(definition_line::comm(d.handle, d.global_id, d.time, d.ranks.size(), d.inter,
                                          d.ranks, d.remote_ranks));
}
void TraceWriter::call_site_index(uint16_t func, uint32_t index, uint32_t callsite_id) {
  impl_->definition(definition_line::call_site_index(func, index, callsite_id));
}
void TraceWriter::callsite(const CallSiteDef& d) {
  impl_->definition(definition_line::callsite(d.id, d.address, d.file, d.line));
}
void TraceWriter::load_object(const LoadObject& o) {
  impl_->definition(definition_line::load_object(o.bias, o.path));
  if (!o.build_id.empty()) impl_->definition(definition_line::build_id(o.bias, o.build_id));
}
void TraceWriter::clock_sync(const ClockSyncDef& k) {
  impl_->definition(definition_line::clock_sync(k.phase, k.local_ticks, k.offset_ns, k.rtt_ns));
}
void TraceWriter::end(const std::string& reason) { impl_->definition(definition_line::end(reason)); }

void TraceWriter::live(uint64_t heartbeat, const std::vector<format::InFlightSlot>& slots) {
  impl_->live(heartbeat, slots.data(), slots.size(), sizeof(format::InFlightSlot));
}
void TraceWriter::live(uint64_t heartbeat, const std::vector<format::LiveSlot>& slots) {
  impl_->live(heartbeat, slots.data(), slots.size(), sizeof(format::LiveSlot));
}

void TraceWriter::event(const Event& e) {
  Impl& w = *impl_;
  if (w.closed) return;
  Impl::Stream& s = w.stream(e.stream);
  const uint64_t dur = e.leave - e.enter;
  uint16_t func = e.func;
  // Format 7: the call's site index beside the function id (kSiteShift).
  if (w.sites && func < kRepeatFuncs && e.call_site_index != 0 && e.call_site_index <= kSiteIndexes)
    func = static_cast<uint16_t>(func | uint32_t{e.call_site_index} << kSiteShift);
  uint8_t flags =
      e.flags & ~uint8_t(kLongTime | kWidePeerTag | kWideBytes | kMarkerBegin | kContinuation);
  auto wide_pt = [](int32_t p, int32_t t) { return !fits_packed_peer_tag(p, t); };

  switch (e.kind) {
    case FuncKind::Completion: {
      // An entry without status (as the reader gives it) is written as such.
      auto has_status = [](const Completion& c) {
        return !(c.source == kAnySourceRank && c.tag == kAnyTagValue && c.bytes == 0 &&
                 !c.cancelled);
      };
      for (const Completion& c : e.completions) {
        if (!has_status(c)) continue;
        if (wide_pt(c.source, c.tag)) flags |= kWidePeerTag;
        if (c.bytes > 0x7FFFFFFFu) flags |= kWideBytes;
      }
      const size_t sw = ((flags & kWidePeerTag) ? 2 : 1) + ((flags & kWideBytes) ? 2 : 1);
      size_t i = 0;
      uint8_t cont = 0;
      do {
        // As many entries as fit: 32 at most, the bitmap and long time words kept room for.
        size_t n = 0, words = 1;
        while (i + n < e.completions.size() && n < kMaxCompletionEntries) {
          const size_t ew = 1 + (has_status(e.completions[i + n]) ? sw : 0);
          if (words + ew > kMaxPayloadWords - 4) break;
          words += ew;
          ++n;
        }
        w.record(s, func, flags | cont, e.enter, dur, [&](RecordEncoder& enc) {
          if (n == 0) return;  // no entries: no payload
          uint32_t bitmap = 0;
          for (size_t k = 0; k < n; ++k)
            if (has_status(e.completions[i + k])) bitmap |= 1u << k;
          enc.word(bitmap);
          for (size_t k = i; k < i + n; ++k) {
            const Completion& c = e.completions[k];
            enc.word(c.request);
            if (!has_status(c)) continue;
            enc.peer_tag(c.source, c.tag);
            if (flags & kWideBytes)
              enc.bytes((c.bytes & ~kCancelledBit64) | (c.cancelled ? kCancelledBit64 : 0));
            else
              enc.bytes((c.bytes & ~kCancelledBit32) | (c.cancelled ? kCancelledBit32 : 0));
          }
        }, cont == 0);
        i += n;
        cont = kContinuation;
      } while (i < e.completions.size());
      break;
    }
    case FuncKind::RequestOp: {
      const size_t per = kMaxPayloadWords - 4;
      size_t i = 0;
      uint8_t cont = 0;
      do {
        const size_t n = std::min(per, e.requests.size() - i);
        w.record(s, func, flags | cont, e.enter, dur, [&](RecordEncoder& enc) {
          for (size_t k = i; k < i + n; ++k) enc.word(e.requests[k]);
        }, cont == 0);
        i += n;
        cont = kContinuation;
      } while (i < e.requests.size());
      break;
    }
    case FuncKind::Marker:
      if (func == 0) func = kMarkerFuncId;
      if (e.marker_begin || (e.flags & kMarkerBegin)) flags |= kMarkerBegin;
      w.record(s, func, flags, e.enter, dur,
               [&](RecordEncoder& enc) { encode_fields<FuncKind::Marker>(enc, e, s.cx); },
               kind_repeats(FuncKind::Marker));
      apply_marker(s.open, flags & kMarkerBegin, e.interval_id, e.callsite, e.enter);
      break;
    default: {
      // Fixed-size kinds: their fields as record_schema.h lists them; a kind
      // the table lacks is written with no payload.
      const bool known = visit_kind(e.kind, [&]<FuncKind K>() {
        if constexpr (!schema_of(K).variable()) {
          flags |= wide_flags_for<K>(e);
          w.record(s, func, flags, e.enter, dur,
                   [&](RecordEncoder& enc) { encode_fields<K>(enc, e, s.cx); }, kind_repeats(K));
        }
      });
      if (!known) w.record(s, func, flags, e.enter, dur, [](RecordEncoder&) {}, false);
      break;
    }
  }
}

void TraceWriter::close() { impl_->finish(true); }
void TraceWriter::close_counting_chunks(uint64_t heartbeat) { impl_->finish(true, true, heartbeat); }
void TraceWriter::close_without_sealing() { impl_->finish(false); }

}  // namespace prof::trace
