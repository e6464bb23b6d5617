// The record encoders of the trace format (trace_layout.h): RecordEncoder,
// the general one, used by the shim's rare records and by the writer of
// synthetic traces; encode_narrow, the hot path's one-pass form of the common
// kinds; encode_fixed, the fixed-layout records of the call-free fast
// wrappers; and the snapshot record that starts each events chunk. Each
// schema-driven encoder walks the kind's fields in record_schema.h's order,
// as decode_fixed, kept beside them, reads them back, so that writer and
// reader cannot drift apart.
//
// Invariant: a record's first word is stored last (commit), and is never
// zero, so a chunk read after SIGKILL holds whole records up to a zero word.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "prof/trace_layout.h"

namespace prof::format {

// Appends records to a caller-owned word buffer. Used by the shim's hot path and
// by the writer that builds synthetic traces, so both encode identically.
// Order: flags, then time() (it decides the header's size), then the payload;
// `commit()` stores the first header word last.
class RecordEncoder {
 public:
  explicit RecordEncoder(uint32_t* at) : base_(at), p_(at + 3) {}
  void time(uint64_t dt_enter, uint64_t duration) {
    if (dt_enter < kShortTimeLimit && duration < kShortTimeLimit) {
      base_[1] = static_cast<uint32_t>(dt_enter) | (static_cast<uint32_t>(duration) << 16);
      p_ = base_ + 2;
      short_ = 1;
    } else if (dt_enter > UINT32_MAX || duration > UINT32_MAX) {
      flags_ |= kLongTime;
      base_[1] = 0;
      base_[2] = 0;
      p_ = base_ + 3;
      put64(dt_enter);
      put64(duration);
    } else {
      base_[1] = static_cast<uint32_t>(dt_enter);
      base_[2] = static_cast<uint32_t>(duration);
      p_ = base_ + 3;
    }
  }
  void flag(uint8_t f) { flags_ |= f; }
  void word(uint32_t w) { *p_++ = w; }
  void put64(uint64_t v) {
    std::memcpy(p_, &v, 8);
    p_ += 2;
  }
  // PeerTag and Bytes must agree with the record's wide flags, decided up front.
  void peer_tag(int32_t peer, int32_t tag) {
    if (flags_ & kWidePeerTag) {
      word(static_cast<uint32_t>(peer));
      word(static_cast<uint32_t>(tag));
    } else {
      word(pack_peer_tag(peer, tag));
    }
  }
  void bytes(uint64_t n) {
    if (flags_ & kWideBytes) put64(n);
    else word(static_cast<uint32_t>(n));
  }
  // Comm: left out (kSameComm) when it repeats the chunk's last one.
  void comm(uint32_t c, ChunkContext& cx) {
    if (cx.comm == c) {
      flags_ |= kSameComm;
      return;
    }
    word(c);
    cx.comm = c;
  }
  // Bytes then Request: one word (kPackedRequest) when the bytes fit 16 bits
  // (and kWideBytes is not set) and the request's high half repeats the chunk's.
  void bytes_request(uint64_t n, uint32_t request, ChunkContext& cx) {
    if (!(flags_ & kWideBytes) && n < 65536 && cx.request_high == request >> 16) {
      flags_ |= kPackedRequest;
      word(static_cast<uint32_t>(n) | (request << 16));
      return;
    }
    bytes(n);
    word(request);
    cx.request_high = request >> 16;
  }
  uint8_t flags() const { return flags_; }
  // Where the payload starts (after the header and any long-time words);
  // call after time().
  uint32_t* payload() const { return base_ + 3 - short_ + ((flags_ & kLongTime) ? 4 : 0); }
  // Format 6: drops the payload when it repeats one of the last full records of
  // `func` in the chunk (RepeatTable); then commit(func). Not for
  // kContinuation records of Completion / RequestOp.
  size_t commit_repeating(uint16_t func, RepeatTable& repeats) {
    if (!(flags_ & kLongTime)) {
      uint32_t* const payload = base_ + 3 - short_;
      const int k = repeats.repeat(func, payload, static_cast<uint32_t>(p_ - payload), flags_);
      if (k >= 0) {
        p_ = payload;
        flags_ = static_cast<uint8_t>(repeat_flags(flags_, k));
      }
    } else if (field_func(func) < kRepeatFuncs) {
      const uint32_t* const payload = base_ + 3 + 4;  // after the long time
      if (p_ > payload) repeats.note(field_func(func), payload, static_cast<uint32_t>(p_ - payload), flags_);
    }
    return commit(func);
  }
  // Stores the first word; returns the record's size in words.
  size_t commit(uint16_t func) {
    const size_t words = static_cast<size_t>(p_ - base_);
    const uint32_t w0 = uint32_t{func} | (uint32_t{flags_} << 16) |
                        (static_cast<uint32_t>(words - 3 + short_) << 24) | (short_ << 31);
    // The header's first word goes last: a reader of a killed process's chunk
    // sees either the whole record or a zero word.
    __atomic_store_n(base_, w0, __ATOMIC_RELEASE);
    return words;
  }

 private:
  uint32_t* base_;
  uint32_t* p_;
  uint32_t short_ = 0;
  uint8_t flags_ = 0;
};

// The wide flags a fixed-size kind's record needs for values `v` (any type
// with Event's member names: peer, tag, bytes, recv_peer, ...).
template <FuncKind K, class V>
[[gnu::always_inline]] inline uint8_t wide_flags_for(const V& v) {
  constexpr KindSchema s = schema_of(K);
  uint8_t f = 0;
  for_each_field_index<K>([&](auto i) __attribute__((always_inline)) {
    constexpr Field field = s.fields[i];
    if constexpr (field == Field::PeerTag) {
      if (!fits_packed_peer_tag(v.peer, v.tag)) f |= kWidePeerTag;
    } else if constexpr (field == Field::RecvPeerTag) {
      if (!fits_packed_peer_tag(v.recv_peer, v.recv_tag)) f |= kWidePeerTag;
    } else if constexpr (field == Field::Bytes) {
      if (v.bytes > UINT32_MAX) f |= kWideBytes;
    } else if constexpr (field == Field::RecvBytes) {
      if (v.recv_bytes > UINT32_MAX) f |= kWideBytes;
    }
  });
  return f;
}

// Encodes the payload of a fixed-size kind K from `v`, field by field as the
// schema lists them; the wide flags must be set already (wide_flags_for).
template <FuncKind K, class V>
[[gnu::always_inline]] inline void encode_fields(RecordEncoder& enc, const V& v, ChunkContext& cx) {
  constexpr KindSchema s = schema_of(K);
  static_assert(!s.variable(), "Completion and RequestOp records are encoded entry by entry");
  for_each_field_index<K>([&](auto i) __attribute__((always_inline)) {
    constexpr Field field = s.fields[i];
    constexpr bool packs = (s.context_flags & kPackedRequest) && field == Field::Bytes;
    if constexpr (field == Field::PeerTag) enc.peer_tag(v.peer, v.tag);
    else if constexpr (field == Field::RecvPeerTag) enc.peer_tag(v.recv_peer, v.recv_tag);
    else if constexpr (packs) enc.bytes_request(v.bytes, v.request, cx);  // Request follows
    else if constexpr (field == Field::Bytes) enc.bytes(v.bytes);
    else if constexpr (field == Field::RecvBytes) enc.bytes(v.recv_bytes);
    else if constexpr (field == Field::Comm) {
      if constexpr (s.context_flags & kSameComm) enc.comm(static_cast<uint32_t>(v.comm), cx);
      else enc.word(static_cast<uint32_t>(v.comm));
    } else if constexpr (field == Field::Request) {
      if constexpr (!(s.context_flags & kPackedRequest)) enc.word(static_cast<uint32_t>(v.request));
    } else if constexpr (field == Field::Root) enc.word(static_cast<uint32_t>(v.root));
    else if constexpr (field == Field::NewComm) enc.word(static_cast<uint32_t>(v.new_comm));
    else if constexpr (field == Field::IntervalId) enc.word(v.interval_id);
    else if constexpr (field == Field::CallSite) enc.word(v.callsite);
  });
}

// Whether encode_narrow serves kind K: its fields are among PeerTag,
// Comm, Bytes, Request, Root, and a Comm is never the last field (the word it
// stores when it repeats the chunk's is overwritten by the next field).
template <FuncKind K>
inline constexpr bool narrow_kind = [] {
  constexpr KindSchema s = schema_of(K);
  if (s.variable() || s.field_count == 0) return false;
  for (size_t i = 0; i < s.field_count; ++i) {
    const Field f = s.fields[i];
    if (f != Field::PeerTag && f != Field::Comm && f != Field::Bytes && f != Field::Request &&
        f != Field::Root)
      return false;
    if (f == Field::Comm && i + 1 == s.field_count) return false;
  }
  return true;
}();

// The common record of kind K in one pass, the hot path's encoder: when the
// enter delta and duration fit 32 bits (the short or the normal header, not
// the long form) and every PeerTag and Bytes is narrow, stores the record at `at` exactly as RecordEncoder with
// wide_flags_for and encode_fields would (tests/format: byte for byte), first
// word last, sets `words` to its size and returns true; else stores nothing
// and returns false (the caller encodes it the general way). `flags` are the
// call's own (kAnySource, kAnyTag, kCallFailed). Fewer instructions than the
// general encoder: one test for every size decision, the payload stored at
// fixed offsets, the repeated communicator left out without a branch. With
// `repeats` (format 6), as RecordEncoder::commit_repeating: a payload equal
// to one of the last of `func` in the chunk is left out. `func_field`: where
// the record's func field is when it is not `func` alone (format 7: `func`
// with its call's site bits, kSiteShift; the word's bits above 16 are 0),
// read after the payload's stores, so that no register holds it across
// them; `func` apart from it, a caller's constant, keeps the repeat table's
// lookup at constant offsets.
template <FuncKind K, class V>
[[gnu::always_inline]] inline bool encode_narrow(uint32_t* at, uint16_t func, uint8_t flags,
                                                  uint64_t dt_enter, uint64_t duration, const V& v,
                                                  ChunkContext& cx, size_t& words,
                                                  RepeatTable* repeats = nullptr,
                                                  const uint32_t* func_field = nullptr) {
  static_assert(narrow_kind<K>, "a kind encode_narrow does not serve");
  constexpr KindSchema s = schema_of(K);
  constexpr bool has_peer_tag = s.has(Field::PeerTag);
  constexpr bool has_bytes = s.has(Field::Bytes);
  // Each value biased so that "fits" is one unsigned compare.
  bool fits = (dt_enter | duration) <= UINT32_MAX;
  if constexpr (has_peer_tag)
    fits &= ((static_cast<uint32_t>(v.peer) + 0x8000u) | (static_cast<uint32_t>(v.tag) + 0x8000u)) <
            0x10000u;
  if constexpr (has_bytes) fits &= v.bytes <= UINT32_MAX;
  if (!fits) return false;
  // The first word's size and form bits, less the words the header takes.
  uint32_t* p;
  uint32_t form;
  if ((dt_enter | duration) < kShortTimeLimit) {
    at[1] = static_cast<uint32_t>(dt_enter) | (static_cast<uint32_t>(duration) << 16);
    p = at + 2;
    form = (uint32_t{1} << 31) - (uint32_t{2} << 24);
  } else {
    at[1] = static_cast<uint32_t>(dt_enter);
    at[2] = static_cast<uint32_t>(duration);
    p = at + 3;
    form = uint32_t{0} - (uint32_t{3} << 24);
  }
  uint32_t* const payload = p;
  uint32_t f = flags;
  for_each_field_index<K>([&](auto i) __attribute__((always_inline)) {
    constexpr Field field = s.fields[i];
    constexpr bool packs = (s.context_flags & kPackedRequest) && field == Field::Bytes;
    if constexpr (field == Field::PeerTag) {
      *p++ = pack_peer_tag(v.peer, v.tag);
    } else if constexpr (field == Field::Comm) {
      const uint32_t c = static_cast<uint32_t>(v.comm);
      *p = c;
      if constexpr (s.context_flags & kSameComm) {
        const bool same = cx.comm == c;
        p += !same;
        f |= same ? uint32_t{kSameComm} : 0u;
        cx.comm = c;
      } else {
        ++p;
      }
    } else if constexpr (packs) {
      const uint32_t request = static_cast<uint32_t>(v.request);
      if (v.bytes < 65536 && cx.request_high == request >> 16) {
        *p++ = static_cast<uint32_t>(v.bytes) | (request << 16);
        f |= kPackedRequest;
      } else {
        p[0] = static_cast<uint32_t>(v.bytes);
        p[1] = request;
        p += 2;
        cx.request_high = request >> 16;
      }
    } else if constexpr (field == Field::Bytes) {
      *p++ = static_cast<uint32_t>(v.bytes);
    } else if constexpr (field == Field::Request) {
      if constexpr (!(s.context_flags & kPackedRequest)) *p++ = static_cast<uint32_t>(v.request);
    } else if constexpr (field == Field::Root) {
      *p++ = static_cast<uint32_t>(v.root);
    }
  });
  if (repeats) {
    const int k = repeats->repeat(func, payload, static_cast<uint32_t>(p - payload), f);
    if (k >= 0) {
      p = payload;
      f = repeat_flags(f, k);
    }
  }
  words = static_cast<size_t>(p - at);
  const uint32_t field = func_field != nullptr ? *func_field : func;
  const uint32_t w0 = (form + (static_cast<uint32_t>(words) << 24)) | (f << 16) | field;
  __atomic_store_n(at, w0, __ATOMIC_RELEASE);
  return true;
}

// Fixed-layout records: the hot path's form of the kinds the shim records
// most (Send, Recv, Probe; plain calls by encode_fixed_plain). Words of
// format 4 in one fixed arrangement, so every reader of format 4 decodes
// them unchanged: the normal header (32-bit enter delta and duration: a gap
// of computation between two calls fits, up to about a second), then every
// field of the kind in full, in the schema's order (PeerTag packed in one
// word, Comm always present, Bytes and Request one word each, Root one
// word). Fixed means no per-record decision changes what goes where: one
// test ("the times fit 32 bits, the peer/tag 16 bits each, the bytes 32
// bits") and then unconditional stores at constant offsets, so the encoder
// needs few registers and no branches beyond that test. What it gives up
// against encode_narrow: the short header (4 bytes when both times are
// below 2^16), the communicator repeat (kSameComm, 4 bytes a record on a
// repeated communicator) and the packed request. The record size is the
// schema's narrow, context-free size after the normal header
// (fixed_record_words).
template <FuncKind K>
inline constexpr size_t fixed_record_words = 3 + fixed_payload_words(schema_of(K), false, false,
                                                                     false, false);

// The fixed record of a Send-family call, as a struct: the layout
// encode_fixed<Send> stores (checked below against the schema's size).
struct FixedP2PRecord {
  uint32_t first;     // func | flags << 16 | payload words << 24, stored last
  uint32_t dt_enter;  // ticks since the previous record's enter
  uint32_t duration;  // ticks
  uint32_t peer_tag;  // pack_peer_tag(peer, tag)
  uint32_t comm;      // the communicator, in full
  uint32_t bytes;
};
static_assert(sizeof(FixedP2PRecord) == 24);
static_assert(fixed_record_words<FuncKind::Send> * 4 == sizeof(FixedP2PRecord));

// Whether encode_fixed serves kind K: the fields encode_narrow serves, with
// at most one PeerTag (one pack test).
template <FuncKind K>
inline constexpr bool fixed_kind = narrow_kind<K>;

// The values fit the fixed layout: times below 2^32, peer and tag int16,
// bytes below 2^32. Each value is biased so that "fits" is one OR of high
// bits, and the caller's test is one branch.
template <FuncKind K, class V>
[[gnu::always_inline]] inline uint64_t fixed_misfit(uint64_t dt_enter, uint64_t duration,
                                                   const V& v) {
  constexpr KindSchema s = schema_of(K);
  uint64_t high = (dt_enter | duration) >> 32;
  if constexpr (s.has(Field::PeerTag))
    high |= ((static_cast<uint32_t>(v.peer) + 0x8000u) | (static_cast<uint32_t>(v.tag) + 0x8000u)) >>
            16;
  if constexpr (s.has(Field::Bytes)) high |= v.bytes >> 32;
  return high;
}

// The first word of kind K's fixed record: the normal header's form, the
// payload's size, the flags and the function.
template <FuncKind K>
constexpr uint32_t fixed_first_word(uint16_t func, uint32_t flags) {
  return ((static_cast<uint32_t>(fixed_record_words<K>) - 3) << 24) | (flags << 16) | func;
}

// Stores the fixed record of kind K at `at` (fixed_record_words<K> words of
// room), first word last, when the values fit (fixed_misfit is 0; the caller
// tested it). `flags` are the call's own (kAnySource, kAnyTag, kCallFailed).
// The communicator is written in full, so it becomes the chunk's context
// for later records (as a reader sets it on every full Comm word).
template <FuncKind K, class V>
[[gnu::always_inline]] inline void encode_fixed(uint32_t* at, uint16_t func, uint32_t flags,
                                                uint64_t dt_enter, uint64_t duration, const V& v,
                                                ChunkContext& cx) {
  static_assert(fixed_kind<K>, "a kind encode_fixed does not serve");
  constexpr KindSchema s = schema_of(K);
  at[1] = static_cast<uint32_t>(dt_enter);
  at[2] = static_cast<uint32_t>(duration);
  size_t i = 3;
  for_each_field_index<K>([&](auto f) __attribute__((always_inline)) {
    constexpr Field field = s.fields[f];
    if constexpr (field == Field::PeerTag) at[i++] = pack_peer_tag(v.peer, v.tag);
    else if constexpr (field == Field::Comm) {
      const uint32_t c = static_cast<uint32_t>(v.comm);
      at[i++] = c;
      cx.comm = c;
    } else if constexpr (field == Field::Bytes) at[i++] = static_cast<uint32_t>(v.bytes);
    else if constexpr (field == Field::Request) {
      at[i++] = static_cast<uint32_t>(v.request);
      cx.request_high = static_cast<uint32_t>(v.request) >> 16;
    } else if constexpr (field == Field::Root) at[i++] = static_cast<uint32_t>(v.root);
  });
  __atomic_store_n(at, fixed_first_word<K>(func, flags), __ATOMIC_RELEASE);
}

// A call without payload (FuncKind Other) in its fixed form, the short
// header: 8 bytes when the times fit 16 bits (the caller tested
// (dt_enter | duration) >> 16 == 0). Its first word: the short form, the
// flags and `func`, the record's func field (16 bits).
constexpr uint32_t fixed_plain_first_word(uint32_t func, uint32_t flags) {
  return (uint32_t{kShortTime} << 24) | (flags << 16) | func;
}
// The record with its first word given whole (a caller that holds it, as
// the shim's call-site cache does, stores it with no OR).
[[gnu::always_inline]] inline void encode_fixed_plain_word(uint32_t* at, uint32_t first,
                                                           uint64_t dt_enter, uint64_t duration) {
  at[1] = static_cast<uint32_t>(dt_enter) | (static_cast<uint32_t>(duration) << 16);
  __atomic_store_n(at, first, __ATOMIC_RELEASE);
}
[[gnu::always_inline]] inline void encode_fixed_plain(uint32_t* at, uint32_t func, uint32_t flags,
                                                      uint64_t dt_enter, uint64_t duration) {
  encode_fixed_plain_word(at, fixed_plain_first_word(func, flags), dt_enter, duration);
}

// Decodes the payload of a fixed-size kind K into `v`, field by field. `d`
// reads the words: peer_tag(peer, tag), bytes(), word(), comm() (kSameComm
// aware) and bytes_request(bytes, request) (kPackedRequest aware).
template <FuncKind K, class D, class V>
[[gnu::always_inline]] inline void decode_fields(D& d, V& v) {
  constexpr KindSchema s = schema_of(K);
  static_assert(!s.variable(), "Completion and RequestOp records are decoded entry by entry");
  for_each_field_index<K>([&](auto i) __attribute__((always_inline)) {
    constexpr Field field = s.fields[i];
    constexpr bool packs = (s.context_flags & kPackedRequest) && field == Field::Bytes;
    if constexpr (field == Field::PeerTag) d.peer_tag(v.peer, v.tag);
    else if constexpr (field == Field::RecvPeerTag) d.peer_tag(v.recv_peer, v.recv_tag);
    else if constexpr (packs) d.bytes_request(v.bytes, v.request);
    else if constexpr (field == Field::Bytes) v.bytes = d.bytes();
    else if constexpr (field == Field::RecvBytes) v.recv_bytes = d.bytes();
    else if constexpr (field == Field::Comm) {
      if constexpr (s.context_flags & kSameComm) v.comm = d.comm();
      else v.comm = d.word();
    } else if constexpr (field == Field::Request) {
      if constexpr (!(s.context_flags & kPackedRequest)) v.request = d.word();
    } else if constexpr (field == Field::Root) v.root = static_cast<int32_t>(d.word());
    else if constexpr (field == Field::NewComm) v.new_comm = d.word();
    else if constexpr (field == Field::IntervalId) v.interval_id = d.word();
    else if constexpr (field == Field::CallSite) v.callsite = d.word();
  });
}

// Encodes a snapshot record of `open` at `at` (kMaxSnapshotWords words of
// room); returns its size in words.
inline size_t encode_snapshot(uint32_t* at, const std::vector<OpenInterval>& open) {
  RecordEncoder enc(at);
  enc.time(0, 0);
  enc.word(static_cast<uint32_t>(open.size()));
  if (open.size() <= kMaxSnapshotEntries)
    for (const OpenInterval& o : open) {
      enc.word(o.interval_id);
      enc.word(o.callsite);
      enc.put64(o.enter);
    }
  return enc.commit(kSnapshotFuncId);
}

}  // namespace prof::format
