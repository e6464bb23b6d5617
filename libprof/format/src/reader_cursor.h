// One stream's decoder (RankTrace::Cursor::Impl), shared by the stream
// cursor (reader_cursor.cpp) and the merge (reader_merge.cpp), which inline
// its per-event steps.
//
// Semantics beyond trace_reader.h:
//   - kContinuation records (a Completion/RequestOp call with more entries than
//     one record holds, split by the writer) are merged into the Event of the
//     record before them, so one MPI call is one Event; a continuation without
//     its first part (lost to damage) is delivered alone, flagged kContinuation.
//   - crc_mismatches of events chunks (and their warnings) are counted when a
//     cursor first enters the chunk, once per chunk whichever cursor or thread
//     gets there; event_bytes() includes chunks whose CRC has not been checked.
//   - stats().events counts every event any cursor decoded; bad_records,
//     backwards_timestamps and their warnings are counted once per stream, by
//     the first cursor to reach the stream's end (a second pass adds nothing).
//   - Cursors of one RankTrace may run on different threads; a cursor must not
//     outlive its RankTrace.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>

#include "reader_internal.h"

namespace prof::trace {

using reader::at_offset;
using reader::ChunkBuffer;
using reader::ChunkRef;
using reader::FuncInfo;
using reader::kCompletionMax;
using reader::kWarnCap;
using reader::load32;
using reader::load64;

// The Event members a decoded event may leave away from their defaults, in
// groups of neighbouring members. A cursor that fills Events it owns
// (MergedCursor::next_batch) keeps per Event the groups its last event set and
// resets only those before the next, instead of the whole Event.
enum EventGroup : uint8_t {
  kGroupCall = 1,      // peer, tag, comm, bytes, root, request
  kGroupReceive = 2,   // recv_peer, recv_tag, recv_bytes, new_comm
  kGroupMarker = 4,    // interval_id, callsite, marker_begin
  kGroupCompletions = 8,
  kGroupRequests = 16,
  kGroupInFlight = 32, // in_flight, site
  kAllGroups = 63,
};

// The groups a record of kind K sets (record_schema.h's fields).
template <FuncKind K>
inline constexpr uint8_t kKindGroups = [] {
  constexpr format::KindSchema s = format::schema_of(K);
  uint8_t g = K == FuncKind::Marker ? kGroupMarker : 0;
  for (size_t i = 0; i < s.field_count; ++i) switch (s.fields[i]) {
      case format::Field::PeerTag:
      case format::Field::Comm:
      case format::Field::Bytes:
      case format::Field::Request:
      case format::Field::Root: g |= kGroupCall; break;
      case format::Field::RecvPeerTag:
      case format::Field::RecvBytes:
      case format::Field::NewComm: g |= kGroupReceive; break;
      case format::Field::IntervalId:
      case format::Field::CallSite: g |= kGroupMarker; break;
      case format::Field::Completions: g |= kGroupCompletions; break;
      case format::Field::Requests: g |= kGroupRequests; break;
    }
  return g;
}();

// The groups a record of kind K writes whole (every member): an Event whose
// last event set only these needs no reset before one of kind K.
template <FuncKind K>
inline constexpr uint8_t kKindWholeGroups =
    kKindGroups<K> & (kGroupMarker | kGroupCompletions | kGroupRequests);

// A repeat (format::record_repeats) with the short header
// (format::record_short_time): 8 bytes in all. One test for the common record
// of a loop, where the batch run tries its repeat templates.
inline constexpr bool record_short_repeat(uint32_t w0) {
  using format::kRepeatPayload;
  constexpr uint32_t kMask = 0xFFu << 24 | uint32_t{kRepeatPayload} << 16;
  return (w0 & kMask) == (uint32_t{format::kShortTime} << 24 | uint32_t{kRepeatPayload} << 16);
}
static_assert(record_short_repeat(0x80u << 24 | uint32_t{format::kRepeatPayload} << 16 | 7) &&
              format::record_words(0x80u << 24 | uint32_t{format::kRepeatPayload} << 16) == 2 &&
              format::record_repeats(0x80u << 24 | uint32_t{format::kRepeatPayload} << 16));

// Every member of an Event at its default.
inline constexpr Event kDefaultEvent{};

// What a plain record's Event is copied from before the members its record
// gives (Cursor::Impl::copy_plain): the default Event as a marker's end, a
// marker's begin (a short marker's only flag), and a call of kind Other.
enum PlainTemplate { kMarkerEndTemplate, kMarkerBeginTemplate, kBareTemplate, kPlainTemplateCount };
inline constexpr Event plain_template(PlainTemplate which) {
  Event t{};
  if (which == kBareTemplate) return t;
  const bool begin = which == kMarkerBeginTemplate;
  t.func = format::kMarkerFuncId;
  t.kind = FuncKind::Marker;
  t.flags = static_cast<uint8_t>((begin ? format::kMarkerBegin : 0) & ~format::schema_of(FuncKind::Marker).context_flags);
  t.marker_begin = begin;
  // (A marker's func field is above every site's: set_call_site() would
  // give it the default's none.)
  static_assert(format::kMarkerFuncId >= format::kReservedFuncIds && kDefaultEvent.call_site_index == 0 &&
                kDefaultEvent.call_site == 0);
  return t;
}
inline constexpr Event kPlainTemplates[kPlainTemplateCount] = {
    plain_template(kMarkerEndTemplate), plain_template(kMarkerBeginTemplate), plain_template(kBareTemplate)};

// Puts the members of `groups` back to their defaults.
[[gnu::always_inline]] inline void reset_groups(Event& e, uint32_t groups) {
  if (groups & kGroupCall) {
    e.peer = kDefaultEvent.peer;
    e.tag = kDefaultEvent.tag;
    e.comm = kDefaultEvent.comm;
    e.bytes = kDefaultEvent.bytes;
    e.root = kDefaultEvent.root;
    e.request = kDefaultEvent.request;
  }
  if (groups & kGroupReceive) {
    e.recv_peer = kDefaultEvent.recv_peer;
    e.recv_tag = kDefaultEvent.recv_tag;
    e.recv_bytes = kDefaultEvent.recv_bytes;
    e.new_comm = kDefaultEvent.new_comm;
  }
  if (groups & kGroupMarker) {
    e.interval_id = kDefaultEvent.interval_id;
    e.callsite = kDefaultEvent.callsite;
    e.marker_begin = kDefaultEvent.marker_begin;
  }
  if (groups & kGroupCompletions) e.completions = kDefaultEvent.completions;
  if (groups & kGroupRequests) e.requests = kDefaultEvent.requests;
  if (groups & kGroupInFlight) {
    e.in_flight = kDefaultEvent.in_flight;
    e.site = kDefaultEvent.site;
  }
}

// Two steps per event: prepare() walks to the next record that will decode
// (crossing chunk ends, counting and skipping bad records, chaining their
// times) and computes its enter time; decode() fills the Event from it. The
// merged cursor compares prepared enter times and decodes straight into the
// caller's Event; prepare() never touches the entry buffers an Event points to.
// fill() writes a caller's Event whole; fill<true>() writes an Event the cursor
// owns (a batch) whose set groups it tracks, and appends Completion and
// RequestOp entries after those of the batch's earlier events
// (completion_used, request_used), so every event of a batch keeps its own.

struct RankTrace::Cursor::Impl {
  const RankTrace::Impl* trace = nullptr;
  size_t stream_index = 0;
  const ChunkRef* chunk = nullptr;      // next chunk to enter
  const ChunkRef* current = nullptr;    // chunk being decoded
  const ChunkRef* chunks_end = nullptr;
  const uint8_t* data = nullptr;        // current chunk's payload (buffer or mapping)
  bool copied = false;                  // data is in `buffer` (else: in the mapping)
  ChunkBuffer buffer;                   // chunks read with pread, reused
  unsigned chunks_entered = 0;          // the first kMappedChunks may be decoded in the mapping
  MergedCursor::BetweenVisits between_visits = MergedCursor::BetweenVisits::kAsAlone;
  const uint8_t* p = nullptr;           // next record
  const uint8_t* end = nullptr;         // end of the current chunk's records
  uint64_t chain = 0;                   // previous enter in the chunk (base_time first)
  // The chunk's context (format::ChunkContext): the last full Comm and Request
  // high half decoded, and which of kSameComm / kPackedRequest may refer to them.
  uint32_t context_comm = 0, context_request_high = 0;
  uint8_t context_avail = 0;
  // Format 6 (format::kRepeatPayload): per function whose full records the
  // cursor has met, where the payloads of its last format::kRepeatDepth full
  // records in the chunk are, latest first (offset from `data`; words 0:
  // none), at (row - 1) * kRepeatDepth, its row from repeat_row_of (0: none
  // yet). Rows come as functions are first met, not one for every id a file
  // defines: 20 KB a cursor for the 620 ids of libprof's traces. Before
  // format 6 no record repeats (repeat_limit 0).
  struct RepeatRef {
    uint32_t offset = 0;
    uint16_t words = 0;
    uint8_t flags = 0;
    uint8_t unused = 0;  // (every byte defined: bits() compares the three at once)
    uint64_t bits() const {
      uint64_t v;
      std::memcpy(&v, this, sizeof v);
      return v;
    }
  };
  static_assert(sizeof(RepeatRef) == sizeof(uint64_t));
  std::vector<RepeatRef> repeats;
  std::vector<uint16_t> repeat_row_of;  // function id (below repeat_limit) -> row + 1
  uint32_t repeat_limit = 0;            // min(ids the file defines, format::kRepeatFuncs)
  // The first full record of `func` a cursor notes: its row (+ 1), the
  // references of which are appended (rows never move: templates keep
  // their index).
  [[gnu::noinline]] uint16_t new_repeat_row(uint32_t func) {
    repeats.resize(repeats.size() + format::kRepeatDepth, RepeatRef{});
    return repeat_row_of[func] = static_cast<uint16_t>(repeats.size() / format::kRepeatDepth);
  }
  // Where func's references start (func below repeat_limit), or null where
  // none of its full records was met.
  const RepeatRef* repeat_refs(uint32_t func) const {
    const uint16_t row = repeat_row_of[func];
    return row == 0 ? nullptr : repeats.data() + size_t{row - 1u} * format::kRepeatDepth;
  }
  // A repeat decodes the same payload as the last one of its header and
  // reference, unless the chunk context it reads changed: the batch run
  // (run_fixed) keeps, per (function field, repeat index) in a two-way set
  // (find_template), the Event such a repeat decoded, the context before and after, and its completion entries
  // (up to kTemplateCompletions), and copies it instead of decoding again.
  // Invariants: a template is valid only within the chunk it was decoded in
  // (cleared when a chunk is entered: offsets are from `data`, and a reference
  // names the payload only there); it matches a record only if the header word
  // (function, site, flags), the reference (offset, words, flags) and the
  // context words (Comm, Request high half) are all the same, so the copy is
  // the Event the decode would give, byte for byte; the checks that passed at
  // its decode pass again (the context's availability only grows within a
  // chunk). 16 entries (5 KB), allocated at a format-6 cursor's first batch
  // once it has decoded kTemplatesAfterEvents events (a rank of a few events
  // gains nothing from them) and freed with its pages
  // (MergedCursor::release_pages).
  static constexpr size_t kTemplates = 16;
  static constexpr uint64_t kTemplatesAfterEvents = 64;
  static constexpr size_t kTemplateCompletions = 4;
  static_assert(kTemplateCompletions <= kCompletionMax);
  struct RepeatTemplate {
    uint32_t w0 = 0;  // 0: none (a record header is never 0)
    uint32_t ref_index = 0;  // its RepeatRef in `repeats` (a function of w0)
    uint64_t ref = 0;  // that RepeatRef when it was decoded (RepeatRef::bits)
    uint8_t groups = 0;
    uint8_t avail_after = 0;
    uint8_t completion_count = 0;
    bool completion = false;
    uint32_t tag = 0;  // this filling's slot tag (slot_tags, take_template_tag)
    // The chunk context (Comm, Request high half) before and after, as
    // pack_context() makes one word of it: one compare a hit.
    uint64_t context_before = 0, context_after = 0;
    Event event;
    Completion entries[kTemplateCompletions];
    // The template that the last hit after this one's hit found: in a loop,
    // the next record's, so the hit loop looks it up without hashing. Any
    // of `templates` (a guess that the header test confirms), never null.
    RepeatTemplate* next = nullptr;
  };
  std::vector<RepeatTemplate> templates;
  // A template's Event is of a kind run_fixed decodes (a fixed-size one or a
  // Completion), from a record, never a call in flight: its requests,
  // in_flight and site are the defaults, and a repeat gets its own enter and
  // leave. So a copy takes the members between (func to completions, with
  // in_flight among them: 88 of the Event's 128 bytes), once the batch slot's
  // requests group is back to its defaults.
  static constexpr size_t kTemplateFrom = offsetof(Event, func), kTemplateTo = offsetof(Event, requests);
  static_assert(offsetof(Event, leave) + sizeof(Event::leave) <= kTemplateFrom &&
                offsetof(Event, completions) + sizeof(Event::completions) <= kTemplateTo &&
                offsetof(Event, in_flight) >= kTemplateFrom && offsetof(Event, in_flight) < kTemplateTo &&
                offsetof(Event, site) >= kTemplateTo);
  [[gnu::always_inline]] static void copy_template_members(Event& to, const Event& from) {
    std::memcpy(reinterpret_cast<char*>(&to) + kTemplateFrom, reinterpret_cast<const char*>(&from) + kTemplateFrom,
                kTemplateTo - kTemplateFrom);
  }
  // A marker (its interval id and call site: two words) or a call of kind
  // Other with no payload and no flags, with the short header and no repeat:
  // decoded into e at template speed (a copy of its kPlainTemplates entry,
  // then its stream and the members the record gives), as fill_fixed()
  // decodes it. Returns
  // its size in bytes, 0 when the record at `at` is none of these or does
  // not fit before `stop` (left to the full decode). Neither reads or
  // changes the chunk context, nor notes a payload for repeats.
  static constexpr uint32_t kShortMarker =
      uint32_t{format::kShortTime | 2u} << 24 | format::kMarkerFuncId;
  static constexpr uint32_t kShortBare = uint32_t{format::kShortTime} << 24;
  static_assert(format::record_short_time(kShortMarker) && format::record_words(kShortMarker) == 4 &&
                format::fixed_payload_words(format::schema_of(FuncKind::Marker), false, false, false, false) == 2 &&
                format::record_words(kShortBare) == 2);
  [[gnu::always_inline]] size_t copy_plain(Event& e, uint8_t& group, uint32_t& tag, uint32_t& copies,
                                           const uint8_t* at, const uint8_t* stop, uint32_t w0,
                                           uint64_t& time) const {
    // (Copied unless the slot holds the template already, and with it the
    // template's groups and the stream, the cursor's: slot_tags.)
    const auto copy_from = [&](PlainTemplate which, uint8_t groups) __attribute__((always_inline)) {
      if (tag == plain_tag(which)) return;
      copy_template_members(e, kPlainTemplates[which]);
      e.stream = stream_id;
      group = groups;
      tag = plain_tag(which);
      ++copies;
    };
    size_t size;
    if ((w0 & ~(uint32_t{format::kMarkerBegin} << 16)) == kShortMarker) {
      if (stop - at < 16) return 0;
      // (The header's flags are the short marker's: begin or end.)
      static_assert(static_cast<uint8_t>(kShortMarker >> 16) == 0);
      copy_from((w0 >> 16 & format::kMarkerBegin) != 0 ? kMarkerBeginTemplate : kMarkerEndTemplate,
                kKindGroups<FuncKind::Marker>);
      // The interval id and the call site, side by side in both.
      static_assert(offsetof(Event, callsite) == offsetof(Event, interval_id) + 4);
      std::memcpy(&e.interval_id, at + 8, 8);
      size = 16;
    } else if ((w0 & 0xFFFF0000u) == kShortBare) {
      const uint16_t func = func_of(w0);
      if (func >= nkinds || kinds[func].kind != static_cast<uint16_t>(FuncKind::Other)) return 0;
      copy_from(kBareTemplate, kKindGroups<FuncKind::Other>);
      e.func = func;
      set_call_site(e, w0);
      size = 8;
    } else {
      return 0;
    }
    const uint32_t w1 = load32(at + 4);
    time += w1 & 0xFFFFu;
    e.enter = time;
    e.leave = time + (w1 >> 16);
    return size;
  }
  // copy_plain() over the records from `at` while they are plain, within
  // `room` records and the chunk: how many it decoded, where and at what time
  // it stopped, the room left, and whether a short repeat is next (within it).
  struct PlainRun {
    size_t events;
    const uint8_t* at;
    uint64_t time;
    size_t room;
    bool repeat_follows;
  };
  [[gnu::always_inline]] PlainRun copy_plain_run(Event* e, uint8_t* g, uint32_t* tags, uint32_t& copies,
                                                 const uint8_t* at, const uint8_t* stop, uint64_t time,
                                                 size_t room) const {
    size_t events = 0;
    bool repeat_follows = false;
    for (;;) {
      const size_t size = copy_plain(e[events], g[events], tags[events], copies, at, stop, load32(at), time);
      if (size == 0) break;
      at += size;
      if (++events == room || stop - at < 8) break;
      if (record_short_repeat(load32(at))) {
        repeat_follows = true;
        break;
      }
    }
    // (The caller's room: records of 8 bytes at least, in the batch and the chunk.)
    return PlainRun{events, at, time, std::min(room - events, static_cast<size_t>(stop - at) / 8), repeat_follows};
  }
  static uint64_t pack_context(uint32_t comm, uint32_t request_high) {
    return uint64_t{request_high} << 32 | comm;
  }
  // Two ways a set, the set by a hash of the record's function field
  // (function and site) and repeat index: a loop's few headers, which
  // one way a hash (16 sets) put in the same set for about half of all
  // loops of five, evicted each other at every turn.
  static constexpr size_t kTemplateWays = 2;
  static size_t template_set(uint32_t w0) {
    return (((w0 & (0xFFFFu | uint32_t{format::kRepeatIndexMask} << 16)) * 0x9E3779B1u) >> 29) * kTemplateWays;
  }
  static_assert(kTemplates == 8 * kTemplateWays, "template_set keeps 3 bits");
  // The template of header w0, if kept.
  [[gnu::always_inline]] static RepeatTemplate* find_template(RepeatTemplate* kept, uint32_t w0) {
    RepeatTemplate* const set = kept + template_set(w0);
    if (set[0].w0 == w0) return &set[0];
    if (set[1].w0 == w0) return &set[1];
    return nullptr;
  }
  // Where a template of header w0 (kept in neither way) goes: an empty way,
  // else the second (of three headers in a loop, one set's first way keeps
  // one of them).
  static RepeatTemplate* place_template(RepeatTemplate* kept, uint32_t w0) {
    RepeatTemplate* const set = kept + template_set(w0);
    return set[0].w0 == 0 ? &set[0] : &set[1];
  }
  uint64_t last_enter = 0;              // previous event's enter in the stream (0 before the first)
  bool finished = false;
  const FuncInfo* kinds = nullptr;
  size_t nkinds = 0;
  FuncInfo marker_info = reader::func_info(FuncKind::Marker);
  FuncInfo undefined_info = reader::undefined_func_info();
  uint32_t stream_id = 0;
  // Format 3: every chunk starts with an interval snapshot, which is no event.
  bool chunks_start_with_snapshot = false;
  // Format 7: func fields below this carry a site index (format::kSiteShift);
  // 0 for older files, whose func fields are the function id alone.
  uint32_t split_below = 0;
  const uint32_t* site_ids = nullptr;  // RankTrace::Impl::call_site_ids
  size_t site_ids_size = 0;
  uint16_t func_of(uint32_t w0) const {
    const uint32_t raw = w0 & 0xFFFFu;
    return static_cast<uint16_t>(raw < split_below ? raw & format::kFuncIdMask : raw);
  }
  // A record's call site: its index (Event::call_site_index) and its
  // CallSiteDef id (Event::call_site), 0 when it has none.
  void set_call_site(Event& e, uint32_t w0) const {
    const uint32_t raw = w0 & 0xFFFFu;
    e.call_site_index = static_cast<uint8_t>(raw < split_below ? raw >> format::kSiteShift : 0);
    // The table is indexed by the func field itself and holds 0 where a field
    // has no site (index 0) and past kReservedFuncIds: one bound check.
    e.call_site = raw < site_ids_size ? site_ids[raw] : 0;
  }
  const uint8_t* snapshot = nullptr;  // the current chunk's snapshot record, if any
  // A cursor that does not walk its stream from the start (a seek, the chunk
  // index) leaves decode damage to the cursors that do (counted once).
  bool partial = false;
  // The public cursors end their stream with its call in flight, if any
  // (RankTrace::in_flight); the chunk index and the marker scans do not.
  bool with_in_flight = false;
  bool in_flight_done = false;
  const InFlightCall* in_flight_call = nullptr;
  // stream_from(): the intervals open just before the first event.
  std::vector<format::OpenInterval> open;
  bool open_from_snapshot = false;

  // A cursor over stream `index` of `t`, from its first chunk.
  void attach(const RankTrace::Impl* t, size_t index) {
    trace = t;
    stream_index = index;
    kinds = t->function_kinds().data();
    nkinds = t->function_kinds().size();
    buffer = t->take_buffer();
    chunks_start_with_snapshot = t->header.version >= format::kFirstSnapshotVersion;
    if (t->header.version >= format::kFirstSiteVersion) {
      split_below = format::kReservedFuncIds;
      site_ids = t->call_site_ids.data();
      site_ids_size = t->call_site_ids.size();
    }
    if (t->header.version >= format::kFirstRepeatVersion) {
      repeat_limit = static_cast<uint32_t>(std::min<size_t>(nkinds, format::kRepeatFuncs));
      repeat_row_of.assign(repeat_limit, 0);
    }
    if (index < t->streams.size()) {
      const auto& s = t->streams[index];
      chunk = s.chunks.data();
      chunks_end = s.chunks.data() + s.chunks.size();
      stream_id = s.id;
    }
  }

  // A record that will decode: found by scan(), decoded by fill().
  struct Prepared {
    const uint8_t* rec;  // its header
    const uint8_t* pay;  // its payload after the long-time words
    uint32_t avail;      // payload words at `pay`
    uint16_t kind;
    uint8_t flags;          // the record's flags (a repeat's: its own and its payload's encoding)
    uint8_t context_flags;  // flag bits that are encoding, not meaning, for this kind
    uint64_t enter, dur;
  };
  bool ready = false;  // `prepared` holds the next record (merged cursor)
  Prepared prepared{};

  uint64_t events = 0, bad_records = 0, backwards = 0;
  // Places where this stream's data was lost before the chunk being read (a
  // chunk skipped for its CRC, a cut one left, a skipped stretch of the file).
  uint64_t gaps = 0;
  int bad_warnings = 0;
  std::vector<std::string> warnings;

  // Entry buffers for Completion / RequestOp events: empty until the stream's
  // first such record (2 KB a cursor that a rank without them never uses),
  // then a record's worth, grown only by calls merged from continuation
  // records or a batch cut for room, so steady state allocates nothing.
  std::vector<Completion> completion_buffer;
  std::vector<uint32_t> request_buffer;
  size_t completion_used = 0, request_used = 0;  // by the current batch's events

  // Which template each slot of the batch (MergedCursor::next_batch) last
  // had its members copied from (copy_template_members: func to
  // completions), so that a copy of the same filling of the same template
  // into the same slot is skipped: the slot holds those bytes already, but
  // for the members the copy's record writes after it (its times, stream,
  // completions, a marker's id and site, a bare call's function and site),
  // which every copy of that template writes again. Tags: kNoSlotTag for a
  // slot decoded in full (or not known), 1 + PlainTemplate for the plain
  // templates, and above them one per filling of a repeat template (a
  // template filled again holds another Event). A loop's records land in
  // the same slots batch after batch where the batch's length is a multiple
  // of the loop's (MergedCursor::next_batch keeps it so), and then none is
  // copied. The tags are the MergedCursor's (set before each batch).
  static constexpr uint32_t kNoSlotTag = 0;
  static constexpr uint32_t plain_tag(PlainTemplate which) { return 1u + which; }
  uint32_t* slot_tags = nullptr;
  size_t slot_tag_count = 0;
  uint32_t next_template_tag = 1u + kPlainTemplateCount;
  uint32_t slot_copies = 0;  // template copies made by the current batch
  // A tag for a template's new filling. (Where they run out, after 2^32
  // fillings, every slot and template forgets its tag and the count starts
  // again: the templates are dropped, so no old tag remains anywhere.)
  uint32_t take_template_tag() {
    if (next_template_tag == UINT32_MAX) [[unlikely]] {
      std::fill_n(slot_tags, slot_tag_count, kNoSlotTag);
      for (RepeatTemplate& t : templates) t.w0 = 0;
      next_template_tag = 1u + kPlainTemplateCount;
    }
    return next_template_tag++;
  }

  // Whether a record of a batch's Completion / RequestOp event may be decoded
  // without growing the entry buffers (which would move the earlier events'
  // entries): it fits what is left and no continuation may follow.
  bool lists_fit(const Prepared& r) {
    if (may_continue()) return false;
    const bool fits = r.kind == static_cast<uint16_t>(FuncKind::Completion)
                          ? completion_used + kCompletionMax <= completion_buffer.size()
                          : request_used + r.avail <= request_buffer.size();
    lists_short |= !fits;
    return fits;
  }
  bool lists_short = false;  // a batch was cut for want of room in the entry buffers
  // A batch's Event holds requests or a call in flight (kGroupRequests,
  // kGroupInFlight: fill<true> of a RequestOp or of the call in flight).
  // MergedCursor::next_batch puts them back to their defaults before the
  // next batch (clear_batch_tails), so that a template copy, which writes
  // no requests and in_flight only as false, needs no test of its slot.
  bool batch_tails_set = false;
  static constexpr uint8_t kTailGroups = kGroupRequests | kGroupInFlight;
  void clear_batch_tails(Event* out, uint8_t* groups, size_t n) {
    batch_tails_set = false;
    for (size_t i = 0; i < n; ++i)
      if (const uint8_t tail = groups[i] & kTailGroups) {
        reset_groups(out[i], tail);
        groups[i] &= static_cast<uint8_t>(~tail);
      }
  }

  ~Impl() {
    leave_chunk();
    flush();
    if (trace) trace->give_buffer(std::move(buffer));
  }

  void leave_chunk() {
    if (current && !copied && !set_aside) {
      // Where no chunk of the stream follows, the pages it shares with its
      // neighbours go too (a reader of thousands of ranks that end together
      // held two pages a rank past their ends), or the whole mapping.
      if (chunk == chunks_end && between_visits != MergedCursor::BetweenVisits::kKeepFilesMapped) {
        trace->leave_stream_end(*current);
      } else if (chunk == chunks_end) {
        trace->unpin_map();
      } else {
        trace->release(*current);
        trace->unpin_map();
      }
    }
    current = nullptr;
    set_aside = false;
  }

  // Between a reader's visits (MergedCursor::release_file): a cursor decoding
  // in the file's mapping unpins it, so the file can be unmapped, keeping its
  // places in the chunk as offsets; take_back() pins the mapping (mapped
  // again, perhaps elsewhere) and turns them into pointers again.
  bool set_aside = false;
  struct AsideOffsets {
    size_t p = 0, end = 0, snapshot = 0, rec = 0, pay = 0;
  } aside;
  void put_aside() {
    if (!current || copied || set_aside) return;
    keep_places_as_offsets();
    trace->unpin_map();
  }
  // Between visits (MergedCursor::release_pages) of a cursor that lends its
  // buffer: a chunk read into it keeps its places as offsets, as put_aside(),
  // and the buffer goes back to the thread; take_back() reads the chunk again.
  bool lends_buffer() const { return between_visits == MergedCursor::BetweenVisits::kLendChunkBuffers; }
  void lend_aside() {
    if (!lends_buffer() || set_aside) return;
    // (A larger chunk read into the buffer keeps it: each visit would copy it whole.)
    if (current && copied && current->len > reader::kLentChunkMax) return;
    if (current && copied) keep_places_as_offsets();
    if (!current || copied) RankTrace::Impl::give_thread_buffer(std::move(buffer));
  }
  // The cursor's places in the chunk as offsets from `data`, plus one (0:
  // none), and the cursor set aside until take_back().
  void keep_places_as_offsets() {
    const auto off = [this](const uint8_t* q) { return q ? static_cast<size_t>(q - data) + 1 : 0; };
    aside.p = off(p);
    aside.end = off(end);
    aside.snapshot = off(snapshot);
    aside.rec = ready ? off(prepared.rec) : 0;
    aside.pay = ready ? off(prepared.pay) : 0;
    data = p = end = snapshot = nullptr;
    set_aside = true;
  }
  void take_back() {
    if (!set_aside) return;
    set_aside = false;
    if (copied) {
      // (Its CRC held when it was entered.)
      if (!buffer.data()) buffer = RankTrace::Impl::take_thread_buffer();
      data = trace->chunk_payload(*current, buffer, false, &copied, true);  // (or pinned in the mapping)
    } else {
      data = trace->pin_map() + current->payload_off;
    }
    const auto at = [this](size_t o) -> const uint8_t* { return o ? data + (o - 1) : nullptr; };
    p = at(aside.p);
    end = at(aside.end);
    snapshot = at(aside.snapshot);
    if (ready) {
      prepared.rec = at(aside.rec);
      prepared.pay = at(aside.pay);
    }
  }
  // Enters the next chunk whose CRC holds (a sealed chunk is checked before
  // any of its records is decoded; a bad one is skipped).
  bool next_chunk() {
    if (current && current->cut) ++gaps;
    leave_chunk();
    while (chunk != chunks_end) {
      const ChunkRef* c = chunk++;
      // (The first chunk's loss before it is before this cursor's start when
      // it starts inside the stream, and counts from the stream's start.)
      if (c->lost_before && (chunks_entered > 0 || c == trace->streams[stream_index].chunks.data()))
        ++gaps;
      const bool lend = lends_buffer() && c->len <= reader::kLentChunkMax;
      if (lend && !buffer.data()) buffer = RankTrace::Impl::take_thread_buffer();
      data = trace->chunk_payload(*c, buffer, !lend && chunks_entered < reader::kMappedChunks, &copied, lend);
      ++chunks_entered;
      if (!trace->verify(*c, data)) {
        ++gaps;
        if (!copied) {
          trace->release(*c);
          trace->unpin_map();
        }
        continue;
      }
      current = c;
      p = data;
      end = p + c->len;
      chain = c->base_time;
      context_avail = 0;
      std::fill(repeats.begin(), repeats.end(), RepeatRef{});
      for (RepeatTemplate& t : templates) t.w0 = 0;
      snapshot = nullptr;
      if (chunks_start_with_snapshot && c->len >= 8) {
        const uint32_t w0 = load32(p);
        const size_t bytes = size_t{format::record_words(w0)} * 4;
        if ((w0 & 0xFFFFu) == format::kSnapshotFuncId && bytes <= c->len) {
          snapshot = p;  // its times are 0: the chain is unchanged
          p += bytes;
        }
      }
      return true;
    }
    p = end;
    return false;
  }

  void bad(const uint8_t* at, const std::string& what) {
    ++bad_records;
    if (++bad_warnings <= kWarnCap)
      warnings.push_back(at_offset(trace->path, current->payload_off + static_cast<uint64_t>(at - data),
                                 "bad record (stream " + std::to_string(stream_id) + "): " + what));
  }

  // Adds this cursor's counts to the trace's statistics: events always, decode
  // damage once per stream (the first cursor to reach the stream's end).
  void flush() {
    if (!trace) return;
    std::lock_guard<std::mutex> lock(trace->mu);
    trace->stats.events += events;
    events = 0;
    if (finished && !partial && stream_index < trace->reported.size() &&
        !trace->reported[stream_index]) {
      trace->reported[stream_index] = true;
      trace->stats.bad_records += bad_records;
      trace->stats.backwards_timestamps += backwards;
      for (auto& w : warnings) trace->warnings.push_back(std::move(w));
      if (bad_warnings > kWarnCap)
        trace->warnings.push_back(trace->path + ": stream " + std::to_string(stream_id) + ": " +
                               std::to_string(bad_warnings - kWarnCap) +
                               " more bad-record warnings not shown");
    }
    bad_records = backwards = 0;
    warnings.clear();
    bad_warnings = 0;
  }

  // kWithinChunk: stops (false) at the current chunk's end instead of entering
  // the next chunk (and, at the stream's end, accounting for it).
  template <bool kWithinChunk = false>
  [[gnu::always_inline]] inline bool scan(Prepared& r);
  template <bool kOwned = false>
  [[gnu::always_inline]] inline void fill(Event& e, const Prepared& r, uint8_t* groups = nullptr);
  // The chunk context as a payload's decode reads and updates it.
  struct ChunkContextRefs {
    uint32_t& comm;
    uint32_t& request_high;
    uint8_t& avail;
  };
  struct PayloadReader;
  // The members of a record of a fixed-size kind (any but Completion and
  // RequestOp) at payload q; kOwned: resets the Event's stale groups.
  template <bool kOwned>
  [[gnu::always_inline]] inline void fill_fixed(Event& e, uint16_t kind, uint8_t flags, const uint8_t* q,
                                                ChunkContextRefs context, uint8_t* groups);
  // A batch's run: decodes records into out[n..max) (Events the cursor owns)
  // while they are whole short-time records of fixed-size kinds, or
  // Completions that no continuation may follow, within the current chunk;
  // returns the new n. It stops before any other record (a list that may
  // continue, a RequestOp, a long time, damage, the chunk's end), which
  // scan() and fill() take.
  // [least, most] takes in the leave times of the run's events (bounds, not
  // necessarily reached: MergedCursor::batch_leave_bounds).
  [[gnu::always_inline]] inline size_t run_fixed(Event* out, uint8_t* groups, size_t n, size_t max,
                                                 uint64_t& least, uint64_t& most);
  // The run's state that a copied repeat reads and moves on (run_fixed's
  // locals).
  struct RunState {
    const uint8_t*& at;
    uint64_t& time;
    uint32_t& comm;
    uint32_t& request_high;
    uint8_t& avail;
  };
  // Within a run: copies the repeats that hit their templates into
  // out[n..max), from the one at s.at, whose header `slot` holds; returns the
  // new n (n itself when that one misses), s moved past them. A loop of its
  // own within run_fixed's, whose few locals stay in registers (a copy in the
  // outer loop, among the full decode's many, went through the stack).
  [[gnu::always_inline]] inline size_t copy_repeats(Event* out, uint8_t* groups, size_t n, size_t max,
                                                    RepeatTemplate* slot, RunState s);
  [[gnu::noinline, gnu::cold]] void bad_record(const uint8_t* at, int why, uint32_t detail);
  [[gnu::noinline, gnu::cold]] bool chunk_end();
  // At the stream's end: prepares its call in flight (Prepared::rec null),
  // once. False when there is none.
  [[gnu::noinline, gnu::cold]] bool in_flight_tail(Prepared& out);
  [[gnu::noinline, gnu::cold]] void fill_in_flight(Event& e, const Prepared& r) const;

  bool prepare() {
    if (!ready) ready = scan(prepared);
    return ready;
  }
  void decode(Event& e) {
    ready = false;
    fill(e, prepared);
  }

  // Decodes the completion entries of a payload of `words` words at q (a
  // bitmap word, then per entry Request and, when its bit is set, PeerTag
  // Bytes) into completion_buffer[at...]; returns how many. A cut entry ends the list.
  size_t completions(const uint8_t* q, size_t words, uint8_t flags, size_t at) {
    if (words == 0) return 0;
    if (completion_buffer.size() < at + kCompletionMax)
      completion_buffer.resize(std::max(at + kCompletionMax, completion_buffer.size() * 2));
    // Each form of the status words with its sizes fixed at compile time.
    switch (flags & (format::kWidePeerTag | format::kWideBytes)) {
      case 0: return completions_as<false, false>(q, words, at);
      case format::kWidePeerTag: return completions_as<true, false>(q, words, at);
      case format::kWideBytes: return completions_as<false, true>(q, words, at);
      default: return completions_as<true, true>(q, words, at);
    }
  }
  template <bool kWidePeerTag, bool kWideBytes>
  size_t completions_as(const uint8_t* q, size_t words, size_t at) {
    constexpr size_t kStatusWords = (kWidePeerTag ? 2 : 1) + (kWideBytes ? 2 : 1);
    const uint32_t bitmap = load32(q);
    q += 4;
    size_t left = words - 1, i = 0;
    Completion* k = completion_buffer.data() + at;
    for (; i < kCompletionMax && left > 0; ++i, ++k) {
      const bool has = (bitmap >> i) & 1u;
      const size_t entry_words = has ? 1 + kStatusWords : 1;
      if (left < entry_words) break;
      left -= entry_words;
      k->request = load32(q);
      q += 4;
      if (!has) {  // no status: what an untouched MPI status says
        k->source = format::kAnySourceRank;
        k->tag = format::kAnyTagValue;
        k->bytes = 0;
        k->cancelled = false;
        continue;
      }
      if constexpr (kWidePeerTag) {
        k->source = static_cast<int32_t>(load32(q));
        k->tag = static_cast<int32_t>(load32(q + 4));
        q += 8;
      } else {
        const uint32_t w = load32(q);
        k->source = format::packed_peer(w);
        k->tag = format::packed_tag(w);
        q += 4;
      }
      if constexpr (kWideBytes) {
        const uint64_t b = load64(q);
        q += 8;
        k->cancelled = (b & format::kCancelledBit64) != 0;
        k->bytes = b & ~format::kCancelledBit64;
      } else {
        const uint32_t b = load32(q);
        q += 4;
        k->cancelled = (b & format::kCancelledBit32) != 0;
        k->bytes = b & ~uint32_t(format::kCancelledBit32);
      }
    }
    return i;
  }

  // A full record of `func` (below repeat_limit, of a kind that repeats) becomes the latest its
  // repeats refer to, unless it has no payload or continues a Completion /
  // RequestOp call (writers never refer to those).
  [[gnu::always_inline]] void note_payload(uint32_t func, uint16_t kind, uint32_t flags,
                                           const uint8_t* q, uint32_t words) {
    if (words == 0) return;
    if ((flags & format::kContinuation) && (kind == static_cast<uint16_t>(FuncKind::Completion) ||
                                            kind == static_cast<uint16_t>(FuncKind::RequestOp)))
      return;
    uint16_t row = repeat_row_of[func];
    if (row == 0) [[unlikely]] row = new_repeat_row(func);
    RepeatRef* const h = &repeats[size_t{row - 1u} * format::kRepeatDepth];
    for (uint32_t k = format::kRepeatDepth - 1; k > 0; --k) h[k] = h[k - 1];
    h[0] = RepeatRef{static_cast<uint32_t>(q - data), static_cast<uint16_t>(words),
                     static_cast<uint8_t>(flags)};
  }
  // The repeat state at `upto` in the current chunk (a cursor started inside
  // a chunk): its records from the start walked, none decoded.
  // The caller then sets the position's own state (p, chain, context).
  void repeats_up_to(const uint8_t* upto) {
    if (repeat_limit == 0) return;
    Prepared r;
    const uint8_t* const stop = end;
    end = upto;
    // What decoding would note of the chunk context (a later record's
    // validity depends on it), as RankTrace::Impl::chunk_times does.
    while (scan<true>(r)) context_avail |= r.context_flags & ~r.flags;
    end = stop;
  }


  // Whether a continuation record may follow (cheap test before absorbing).
  bool may_continue() const {
    return end - p < 8 || (load32(p) & (uint32_t{format::kContinuation} << 16)) != 0;
  }

  // After a Completion/RequestOp record holding n entries: absorbs the
  // kContinuation records of the same function that follow (the rest of one
  // call too large for a record), possibly in the next chunk. Returns the total.
  size_t absorb_continuations(uint16_t func, bool is_completion, size_t n) {
    for (;;) {
      size_t left = static_cast<size_t>(end - p);
      if (left == 0) {
        if (!next_chunk()) return n;
        continue;
      }
      if (left < 8) return n;  // prepare() reports it
      const uint32_t w0 = load32(p);
      const uint32_t pw = format::record_payload_words(w0);
      const uint8_t flags = static_cast<uint8_t>(w0 >> 16);
      const size_t nbytes = size_t{format::record_words(w0)} * 4;
      if (w0 == 0 || nbytes > left || func_of(w0) != func ||
          !(flags & format::kContinuation))
        return n;
      const uint8_t* q = p + 4 * format::record_header_words(w0);
      size_t words = pw;
      uint64_t dt;
      if (format::record_short_time(w0)) {
        dt = load32(p + 4) & 0xFFFFu;
      } else if (flags & format::kLongTime) {
        if (pw < 4) return n;  // bad: prepare() reports it
        dt = load64(q);
        q += 16;
        words -= 4;
      } else {
        dt = load32(p + 4);
      }
      chain += dt;
      p += nbytes;
      if (is_completion) {
        n += completions(q, words, flags, n);
      } else {
        if (request_buffer.size() < n + words) request_buffer.resize(std::max(n + words, request_buffer.size() * 2));
        if (words != 0) std::memcpy(request_buffer.data() + n, q, words * 4);
        n += words;
      }
    }
  }
};

template <bool kWithinChunk>
inline bool RankTrace::Cursor::Impl::scan(Prepared& out) {
  using namespace format;
  for (;;) {
    const uint8_t* r = p;
    const size_t left = static_cast<size_t>(end - r);
    if (left < 8) [[unlikely]] {
      if constexpr (kWithinChunk) return false;
      if (!chunk_end()) return in_flight_tail(out);
      continue;
    }
    const uint32_t w0 = load32(r);
    const size_t nbytes = size_t{record_words(w0)} * 4;
    if (w0 == 0 || nbytes > left) [[unlikely]] {
      bad_record(r, w0 == 0 ? 1 : 2, static_cast<uint32_t>(nbytes));
      p = end;
      continue;
    }
    p = r + nbytes;
    const uint32_t func = func_of(w0);
    const uint32_t flags = (w0 >> 16) & 0xFFu;
    const uint8_t* q = r + 4 * record_header_words(w0);
    uint32_t words = record_payload_words(w0);
    // A repeat (format 6) has a short or normal header.
    const bool repeat = repeat_limit != 0 && record_repeats(w0);
    uint64_t dt, d;
    if (record_short_time(w0)) [[likely]] {
      const uint32_t w1 = load32(r + 4);
      dt = w1 & 0xFFFFu;
      d = w1 >> 16;
    } else if ((flags & kLongTime) && !repeat) [[unlikely]] {
      if (words < 4) {
        bad_record(r, 3, 0);
        continue;
      }
      dt = load64(q);
      d = load64(q + 8);
      q += 16;
      words -= 4;
    } else {
      dt = load32(r + 4);
      d = load32(r + 8);
    }
    chain += dt;  // a signed (backwards) dt wraps correctly
    // A pointer into the table, not a copy: a copy went through the stack in
    // pieces and the indexed byte load of `need` stalled on store forwarding.
    const FuncInfo& info = func < nkinds ? kinds[func]
                         : func == kMarkerFuncId ? marker_info
                                                 : undefined_info;
    uint32_t decode_flags = flags;
    if (repeat) [[unlikely]] {  // the payload of the function's last full record
      const RepeatRef* const refs = func < repeat_limit ? repeat_refs(func) : nullptr;
      if (refs == nullptr || refs[repeat_index(flags)].words == 0 || !info.repeats) {
        bad_record(r, 7, func);
        continue;
      }
      const RepeatRef& ref = refs[repeat_index(flags)];
      q = data + ref.offset;
      words = ref.words;
      const uint32_t encoding = kWidePeerTag | kWideBytes | info.context_flags;
      decode_flags = (flags & ~(kRepeatPayload | encoding)) | (ref.flags & encoding);
    }
    // An undefined function needs more words than a record has: one test.
    if (words < info.need[decode_flags]) [[unlikely]] {
      bad_record(r, info.kind == reader::kNoKind ? 4 : 5, func);
      continue;
    }
    if (decode_flags & info.context_flags & ~context_avail) [[unlikely]] {
      bad_record(r, 6, func);
      continue;
    }
    if (!repeat && func < repeat_limit && info.repeats) note_payload(func, info.kind, decode_flags, q, words);
    out.rec = r;
    out.pay = q;
    out.avail = words;
    out.kind = info.kind;
    out.flags = static_cast<uint8_t>(decode_flags);
    out.context_flags = info.context_flags;
    out.enter = chain;
    out.dur = d;
    return true;
  }
}

// Reads the payload words as decode_fields asks for them; the chunk context
// (the last full Comm and Request high half) through references, so that a
// batch's run (run_fixed) keeps it in locals.
struct RankTrace::Cursor::Impl::PayloadReader {
  const uint8_t* q;
  const uint8_t flags;
  ChunkContextRefs context;
  [[gnu::always_inline]] uint32_t word() {
    const uint32_t v = load32(q);
    q += 4;
    return v;
  }
  [[gnu::always_inline]] void peer_tag(int32_t& peer, int32_t& tag) {
    const uint32_t w = load32(q);
    if (flags & format::kWidePeerTag) {
      peer = static_cast<int32_t>(w);
      tag = static_cast<int32_t>(load32(q + 4));
      q += 8;
    } else {
      peer = format::packed_peer(w);
      tag = format::packed_tag(w);
      q += 4;
    }
  }
  [[gnu::always_inline]] uint64_t bytes() {
    if (flags & format::kWideBytes) {
      const uint64_t v = load64(q);
      q += 8;
      return v;
    }
    return word();
  }
  [[gnu::always_inline]] uint32_t comm() {
    if (flags & format::kSameComm) return context.comm;
    context.comm = word();
    context.avail |= format::kSameComm;
    return context.comm;
  }
  [[gnu::always_inline]] void bytes_request(uint64_t& n, uint32_t& request) {
    if (flags & format::kPackedRequest) {
      const uint32_t w = word();
      n = w & 0xFFFFu;
      request = (context.request_high << 16) | (w >> 16);
      return;
    }
    n = bytes();
    request = word();
    context.request_high = request >> 16;
    context.avail |= format::kPackedRequest;
  }
};

template <bool kOwned>
inline void RankTrace::Cursor::Impl::fill_fixed(Event& e, uint16_t kind, uint8_t flags, const uint8_t* q,
                                                ChunkContextRefs context, uint8_t* groups) {
  using namespace format;
  PayloadReader payload{q, flags, context};
  // Every kind's fields as record_schema.h lists them.
  const bool known = visit_kind(static_cast<FuncKind>(kind), [&]<FuncKind K>() __attribute__((always_inline)) {
    if constexpr (K != FuncKind::Completion && K != FuncKind::RequestOp) {
      if constexpr (kOwned) {
        if (const uint8_t stale = *groups & ~kKindWholeGroups<K>) reset_groups(e, stale);
        *groups = kKindGroups<K>;
      }
      decode_fields<K>(payload, e);
      if constexpr (K == FuncKind::Marker) e.marker_begin = (flags & kMarkerBegin) != 0;
    }
  });
  if (!known) {  // a newer writer's kind: payload skipped
    if constexpr (kOwned) {
      if (*groups) reset_groups(e, *groups);
      *groups = 0;
    }
  }
}

template <bool kOwned>
inline void RankTrace::Cursor::Impl::fill(Event& e, const Prepared& r, uint8_t* groups) {
  using namespace format;
  if (!r.rec) [[unlikely]] {
    fill_in_flight(e, r);  // its site: an address (Event::site), and the rank's index of it
    if constexpr (kOwned) {
      *groups = kAllGroups;
      batch_tails_set = true;
    }
    return;
  }
  const uint32_t w0 = load32(r.rec);
  const uint16_t func = func_of(w0);
  const uint8_t flags = r.flags;
  const uint8_t* q = r.pay;
  const uint64_t enter = r.enter;

  if constexpr (!kOwned) e = Event{};
  e.enter = enter;
  e.leave = enter + r.dur;
  e.func = func;
  set_call_site(e, w0);
  e.kind = static_cast<FuncKind>(r.kind);
  e.flags = flags & ~r.context_flags;  // kSameComm / kPackedRequest say nothing of the call
  e.stream = stream_id;

  // Completion and RequestOp lists may continue in the next records.
  if (r.kind == static_cast<uint16_t>(FuncKind::Completion) ||
      r.kind == static_cast<uint16_t>(FuncKind::RequestOp)) {
    const FuncKind kind = static_cast<FuncKind>(r.kind);
    if constexpr (kOwned) {
      const bool completion = kind == FuncKind::Completion;
      const uint8_t whole = completion ? kKindWholeGroups<FuncKind::Completion> : kKindWholeGroups<FuncKind::RequestOp>;
      if (const uint8_t stale = *groups & ~whole) reset_groups(e, stale);
      *groups = completion ? kKindGroups<FuncKind::Completion> : kKindGroups<FuncKind::RequestOp>;
      batch_tails_set |= !completion;
    }
    if (kind == FuncKind::Completion) {
      const size_t start = kOwned ? completion_used : 0;
      const size_t n = start + completions(q, r.avail, flags, start);
      const size_t stop = (flags & kContinuation) || !may_continue()
                              ? n
                              : absorb_continuations(func, true, n);
      e.completions = std::span<const Completion>(completion_buffer.data() + start, stop - start);
      if constexpr (kOwned) completion_used = stop;
    } else {
      const size_t start = kOwned ? request_used : 0;
      if (request_buffer.size() < start + std::max<size_t>(r.avail, 1))  // (never memcpy to null)
        request_buffer.resize(std::max({start + r.avail, request_buffer.size() * 2, format::kMaxPayloadWords}));
      std::memcpy(request_buffer.data() + start, q, size_t{r.avail} * 4);
      const size_t stop = (flags & kContinuation) || !may_continue()
                              ? start + r.avail
                              : absorb_continuations(func, false, start + r.avail);
      e.requests = std::span<const uint32_t>(request_buffer.data() + start, stop - start);
      if constexpr (kOwned) request_used = stop;
    }
  } else {
    fill_fixed<kOwned>(e, r.kind, flags, q, ChunkContextRefs{context_comm, context_request_high, context_avail},
                       groups);
  }
  backwards += enter < last_enter;
  last_enter = enter;
  if constexpr (!kOwned) ++events;  // a batch counts its events at once
}

inline size_t RankTrace::Cursor::Impl::copy_repeats(Event* out, uint8_t* groups, size_t n, size_t max,
                                                    RepeatTemplate* slot, RunState s) {
  using namespace format;
  const uint8_t* at = s.at;
  const uint8_t* const stop = end;
  uint64_t time = s.time;
  uint64_t context = pack_context(s.comm, s.request_high);
  uint8_t avail = s.avail;
  const RepeatRef* const refs = repeats.data();
  RepeatTemplate* const kept = templates.data();
  Event* e = out + n;
  uint8_t* g = groups + n;
  uint32_t* tag = slot_tags + n;
  uint32_t copies = 0;
  // Records that may follow within the batch and the chunk, 8 bytes each
  // (the caller has found room for the first).
  size_t room = std::min(max - n, static_cast<size_t>(stop - at) / 8);
  // The completion entries in locals (the stores into the Events could
  // alias the members): a Completion is copied while kCompletionMax
  // entries fit after the last, as run_fixed asks.
  Completion* const entries = completion_buffer.data();
  size_t used = completion_used;
  const ptrdiff_t used_most = static_cast<ptrdiff_t>(completion_buffer.size()) - static_cast<ptrdiff_t>(kCompletionMax);
  for (;;) {
    // (The same header: the same function and repeat index, so the
    // template's ref_index is this record's reference.)
    const RepeatTemplate& t = *slot;
    if (t.ref != refs[t.ref_index].bits() || t.context_before != context) break;
    // (Unless the slot holds this filling already, and with it its groups: slot_tags.)
    if (*tag != t.tag) {
      copy_template_members(*e, t.event);  // (the slot's tail groups are clear: clear_batch_tails)
      *g = t.groups;  // (so the slot stays as its groups say when a Completion stops here)
      *tag = t.tag;
      ++copies;
    }
    if (t.completion) {
      // As run_fixed: no continuation may follow, and room for the entries.
      if (stop - at < 16 || (load32(at + 8) & (uint32_t{kContinuation} << 16)) ||
          static_cast<ptrdiff_t>(used) > used_most)
        break;
      // (Half or all of kTemplateCompletions entries: copies of fixed size,
      // within the room just tested; those past the count are not the
      // Event's. Entry by entry, unrolled: std::copy_n of the 128 bytes was
      // a call to memmove, about 21 instructions a repeated Waitall.)
      Completion* to = entries + used;
      constexpr size_t kHalf = kTemplateCompletions / 2;
#pragma GCC unroll 2
      for (size_t i = 0; i < kHalf; ++i) to[i] = t.entries[i];
      if (t.completion_count > kHalf) {
#pragma GCC unroll 2
        for (size_t i = kHalf; i < kTemplateCompletions; ++i) to[i] = t.entries[i];
      }
      e->completions = std::span<const Completion>(to, t.completion_count);
      used += t.completion_count;
    }
    const uint32_t w1 = load32(at + 4);
    time += w1 & 0xFFFFu;
    e->enter = time;
    e->leave = time + (w1 >> 16);
    context = t.context_after;
    avail |= t.avail_after;
    at += 8;
    ++e;
    ++g;
    ++tag;
    if (--room == 0) break;
    uint32_t w0 = load32(at);
    if (!record_short_repeat(w0)) [[unlikely]] {
      // Markers and bare calls between the repeats (in a loop of intervals,
      // half its records); the run goes on at the short repeat after them.
      // (Inline: a call here, with its result through memory, cost about 30
      // instructions a run of them, two or three runs an iteration of such a
      // loop; inline, the repeats' own steps take about 2 more an event.)
      const PlainRun run = copy_plain_run(e, g, tag, copies, at, stop, time, room);
      if (run.events == 0) break;
      e += run.events;
      g += run.events;
      tag += run.events;
      at = run.at;
      time = run.time;
      room = run.room;
      if (!run.repeat_follows) break;
      w0 = load32(at);
    }
    // The next record, a short repeat, if its template has its header:
    // first the one that followed this template's last time (a loop's).
    RepeatTemplate* following = slot->next;
    if (following->w0 != w0) [[unlikely]] {
      following = find_template(kept, w0);
      if (following == nullptr) break;
      slot->next = following;
    }
    slot = following;
  }
  completion_used = used;
  slot_copies += copies;
  s.at = at;
  s.time = time;
  s.comm = static_cast<uint32_t>(context);
  s.request_high = static_cast<uint32_t>(context >> 32);
  s.avail = avail;
  return static_cast<size_t>(e - out);
}

// The common records decoded with the per-record state in locals: stores
// into the Events (bytes among them) could alias the cursor's members, so
// with members each record reloaded and stored them again.
inline size_t RankTrace::Cursor::Impl::run_fixed(Event* out, uint8_t* groups, size_t n, size_t max,
                                                 uint64_t& least, uint64_t& most) {
  using namespace format;
  const uint8_t* at = p;
  const uint8_t* const stop = end;
  // Short times only add to the chain: of the run's records only the first
  // can enter before the one before it, or the one where a damaged chain's
  // sum wraps (once at most: a run adds less than 2^32); counted at its end.
  static_assert(MergedCursor::kBatchEvents * format::kShortTimeLimit < (uint64_t{1} << 32));
  uint64_t time = chain;
  const size_t first = n;
  uint32_t comm = context_comm, request_high = context_request_high;
  uint8_t avail = context_avail;
  const FuncInfo* const table = kinds;
  const size_t table_size = nkinds;
  // (Not repeats.data() in a local: a function's first full record appends its row.)
  const size_t repeat_funcs = repeat_limit;
  const uint32_t stream = stream_id;
  if (repeat_funcs != 0 && templates.empty() && events >= kTemplatesAfterEvents) [[unlikely]] {
    templates.resize(kTemplates);
    for (RepeatTemplate& t : templates) t.next = templates.data();
  }
  RepeatTemplate* const kept = templates.data();  // (null: repeats are decoded in full)
  while (n < max) {
    const size_t left = static_cast<size_t>(stop - at);
    if (left < 8) break;
    const uint32_t w0 = load32(at);
    RepeatTemplate* slot = nullptr;  // where a repeat decoded here is kept
    // (A repeat that may use a template is 8 bytes: within `left`.)
    if (kept != nullptr && record_short_repeat(w0)) {
      slot = find_template(kept, w0);
      if (slot != nullptr) {
        const size_t copied = copy_repeats(out, groups, n, max, slot, RunState{at, time, comm, request_high, avail});
        if (copied != n) {
          n = copied;
          continue;
        }
      } else {
        slot = place_template(kept, w0);
      }
    }
    // A zero header has no short-time bit either: scan() reports it.
    if (!record_short_time(w0)) break;
    const size_t nbytes = size_t{record_words(w0)} * 4;
    if (nbytes > left) break;
    const uint32_t func = func_of(w0);
    uint8_t flags = static_cast<uint8_t>(w0 >> 16);
    if (func >= repeat_funcs) slot = nullptr;  // (no reference to keep it by)
    const FuncInfo& info = func < table_size ? table[func]
                         : func == kMarkerFuncId ? marker_info
                                                 : undefined_info;
    const uint8_t* q = at + 8;
    uint32_t words = record_payload_words(w0);
    const bool repeat = repeat_funcs != 0 && record_repeats(w0);
    if (repeat) {  // as scan() reads it; a bad one is left to scan()
      if (func >= repeat_funcs || !info.repeats) break;
      const RepeatRef* const refs = repeat_refs(func);
      if (refs == nullptr) break;
      const RepeatRef& ref = refs[repeat_index(flags)];
      if (ref.words == 0) break;
      q = data + ref.offset;
      words = ref.words;
      const uint32_t encoding = kWidePeerTag | kWideBytes | info.context_flags;
      flags = static_cast<uint8_t>((flags & ~(kRepeatPayload | encoding)) | (ref.flags & encoding));
    }
    if (words < info.need[flags]) break;
    if (flags & info.context_flags & ~avail) break;
    const bool completion = info.kind == static_cast<uint16_t>(FuncKind::Completion);
    if (completion || info.kind == static_cast<uint16_t>(FuncKind::RequestOp)) [[unlikely]] {
      // A Completion whose list is this record's alone (no continuation may
      // follow within the chunk) and fits the entry buffer; others as fill() does.
      if (!completion || (flags & kContinuation) || stop - (at + nbytes) < 8 ||
          (load32(at + nbytes) & (uint32_t{kContinuation} << 16)) ||
          completion_used + kCompletionMax > completion_buffer.size())
        break;
    }
    // Noted once the record is decoded here (scan() notes those left to it).
    if (!repeat && func < repeat_funcs && info.repeats) note_payload(func, info.kind, flags, q, words);
    const uint32_t w1 = load32(at + 4);
    time += w1 & 0xFFFFu;
    Event& e = out[n];
    slot_tags[n] = kNoSlotTag;
    e.enter = time;
    e.leave = time + (w1 >> 16);
    e.func = static_cast<uint16_t>(func);
    set_call_site(e, w0);
    e.kind = static_cast<FuncKind>(info.kind);
    e.flags = flags & ~info.context_flags;
    e.stream = stream;
    const uint32_t comm_before = comm, request_high_before = request_high;
    const uint8_t avail_before = avail;
    size_t got = 0;
    if (completion) [[unlikely]] {
      constexpr FuncKind K = FuncKind::Completion;
      if (const uint8_t stale = groups[n] & ~kKindWholeGroups<K>) reset_groups(e, stale);
      groups[n] = kKindGroups<K>;
      got = completions(q, words, flags, completion_used);
      e.completions = std::span<const Completion>(completion_buffer.data() + completion_used, got);
    } else {
      fill_fixed<true>(e, info.kind, flags, q, ChunkContextRefs{comm, request_high, avail}, &groups[n]);
    }
    if (slot != nullptr) {  // (a repeat that passed the tests above, with templates kept)
      RepeatTemplate& t = *slot;
      t.w0 = 0;
      if (got <= kTemplateCompletions) {
        t.tag = take_template_tag();  // (before w0: running out drops every template)
        t.ref_index = static_cast<uint32_t>(size_t{repeat_row_of[func] - 1u} * kRepeatDepth + repeat_index(w0 >> 16));
        t.w0 = w0;
        t.ref = repeats[t.ref_index].bits();
        t.groups = groups[n];
        t.avail_after = avail & ~avail_before;
        t.completion = completion;
        t.completion_count = static_cast<uint8_t>(got);
        t.context_before = pack_context(comm_before, request_high_before);
        t.context_after = pack_context(comm, request_high);
        t.event = e;
        if (completion) std::copy_n(completion_buffer.data() + completion_used, kTemplateCompletions, t.entries);
      }
    }
    completion_used += got;
    at += nbytes;
    ++n;
  }
  p = at;
  chain = time;
  if (n > first) {
    const uint64_t first_enter = out[first].enter;
    backwards += (first_enter < last_enter) + (time < first_enter);
    last_enter = time;
    // Every leave is an enter in [first_enter, time] plus a short duration:
    // bounds without a test an event, unless the chain wrapped.
    constexpr uint64_t kLongestShort = format::kShortTimeLimit - 1;
    static_assert(kLongestShort == 0xFFFFu, "a short duration is w1's high half");
    if (time >= first_enter && time <= UINT64_MAX - kLongestShort) [[likely]] {
      least = std::min(least, first_enter);
      most = std::max(most, time + kLongestShort);
    } else {
      least = 0;
      most = UINT64_MAX;
    }
  }
  context_comm = comm;
  context_request_high = request_high;
  context_avail = avail;
  return n;
}

}  // namespace prof::trace
