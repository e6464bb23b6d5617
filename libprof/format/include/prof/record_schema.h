// The record schema: every event record kind's payload fields, declared once.
// The shim's encoder, TraceWriter, the reader's checks and decode, prof-dump and
// the Chrome export all walk this table, so adding a field to a kind is one edit
// here plus a format version bump (kFormatVersion in trace_format.h).
//
// PROF_RECORD_KINDS(X) calls X(Name, number, "name", Family, context_flags,
// fields...) once per FuncKind:
//   - number: the FuncKind value written in F definition lines (never reused);
//   - "name": the kind's lowercase name (prof-dump, docs);
//   - Family: what the kind is drawn as (KindFamily);
//   - context_flags: which of kSameComm / kPackedRequest its records may set;
//   - fields: the payload in order, from the Field vocabulary below.
// How each field is encoded (trace_format.h, RecordFlag):
//   PeerTag, RecvPeerTag  one word (int16 peer | int16 tag << 16), or two with kWidePeerTag
//   Bytes, RecvBytes      one word, or two (uint64) with kWideBytes
//   Comm                  one word; none with kSameComm (kinds whose context_flags allow it)
//   Request               one word; with kPackedRequest it shares the preceding Bytes' word
//   Root, NewComm, IntervalId, CallSite   one word each
//   Completions           [Bitmap (Request [PeerTag Bytes])*], bit i of Bitmap: entry i has a
//                         status; Bytes' top bit: cancelled. At most kMaxCompletionEntries.
//   Requests              Request* (the rest of the payload)
// Completions and Requests fill the rest of the record; a call with more
// entries than fit continues in records flagged kContinuation.
//
// The generator (libprof/wrappers/generate_wrappers.py) reads the same macro
// text, so keep one X(...) per line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

// clang-format off
#define PROF_RECORD_KINDS(X)                                                                       \
  X(Other,        0, "other",       Other,        0)                                               \
  /* Send, Bsend, Ssend, Rsend */                                                                  \
  X(Send,         1, "send",        PointToPoint, kSameComm, PeerTag, Comm, Bytes)                 \
  /* actual source, tag and bytes from the status */                                               \
  X(Recv,         2, "recv",        PointToPoint, kSameComm, PeerTag, Comm, Bytes)                 \
  /* the send part, then the actual receive part */                                                \
  X(SendRecv,     3, "sendrecv",    PointToPoint, kSameComm, PeerTag, Bytes, RecvPeerTag, RecvBytes, Comm) \
  /* also Send_init & co (persistent) */                                                           \
  X(Isend,        4, "isend",       PointToPoint, kSameComm | kPackedRequest, PeerTag, Comm, Bytes, Request) \
  /* the requested source and tag (may be ANY) */                                                  \
  X(Irecv,        5, "irecv",       PointToPoint, kSameComm | kPackedRequest, PeerTag, Comm, Bytes, Request) \
  /* one entry per completed request */                                                            \
  X(Completion,   6, "completion",  PointToPoint, 0, Completions)                                  \
  /* Start, Startall, Cancel, Request_free */                                                      \
  X(RequestOp,    7, "requestop",   PointToPoint, 0, Requests)                                     \
  X(Collective,   8, "collective",  Collective,   kSameComm, Comm, Root, Bytes)                    \
  /* nonblocking and persistent collectives */                                                     \
  X(ICollective,  9, "icollective", Collective,   kSameComm | kPackedRequest, Comm, Root, Bytes, Request) \
  /* the C definition says who is in the new communicator */                                       \
  X(CommCreate,  10, "commcreate",  Other,        0, Comm, NewComm)                                \
  /* Probe, Iprobe (only when a message was found), Mprobe */                                      \
  X(Probe,       11, "probe",       PointToPoint, kSameComm, PeerTag, Comm, Bytes)                 \
  /* interval begin (kMarkerBegin) or end */                                                       \
  X(Marker,      12, "marker",      Marker,       0, IntervalId, CallSite)                         \
  /* the all-to-all family (Alltoall, -v, -w) */                                                   \
  X(AllToAll,    13, "alltoall",    AllToAll,     kSameComm, Comm, Root, Bytes)                    \
  X(IAllToAll,   14, "ialltoall",   AllToAll,     kSameComm | kPackedRequest, Comm, Root, Bytes, Request)
// clang-format on

namespace prof::format {

// What a record kind's records carry; the payload layout is PROF_RECORD_KINDS'.
enum class FuncKind : uint16_t {
#define PROF_KIND_ENUM(name, number, ...) name = number,
  PROF_RECORD_KINDS(PROF_KIND_ENUM)
#undef PROF_KIND_ENUM
};

// The payload field vocabulary (encodings above). The names say which Event
// member a field fills: PeerTag -> peer, tag; RecvPeerTag -> recv_peer,
// recv_tag; Bytes -> bytes; ... Completions -> completions; Requests -> requests.
enum class Field : uint8_t {
  PeerTag, Comm, Bytes, Request, Root, NewComm, IntervalId, CallSite, RecvPeerTag, RecvBytes,
  Completions, Requests,
};

// How a kind is drawn and summarized (timelines, charts).
enum class KindFamily : uint8_t { Other, PointToPoint, Collective, AllToAll, Marker };

// RecordFlag bits the table names (trace_format.h defines them all, equal values).
namespace schema_flags {
inline constexpr uint8_t kSameComm = 1 << 5;
inline constexpr uint8_t kPackedRequest = 1 << 7;
}  // namespace schema_flags

inline constexpr size_t kMaxKindFields = 6;

struct KindSchema {
  FuncKind kind;
  const char* name;
  KindFamily family;
  uint8_t context_flags;  // kSameComm / kPackedRequest where the kind may set them
  uint8_t field_count;
  Field fields[kMaxKindFields];

  constexpr bool has(Field f) const {
    for (size_t i = 0; i < field_count; ++i)
      if (fields[i] == f) return true;
    return false;
  }
  // Completions / Requests: the rest of the payload, any length.
  constexpr bool variable() const { return has(Field::Completions) || has(Field::Requests); }
};

namespace detail {
template <class... F>
constexpr KindSchema make_kind_schema(FuncKind kind, const char* name, KindFamily family,
                                      uint8_t context_flags, F... fields) {
  static_assert(sizeof...(F) <= kMaxKindFields);
  return KindSchema{kind, name, family, context_flags, uint8_t(sizeof...(F)), {fields...}};
}
}  // namespace detail

// Indexed by FuncKind number.
inline constexpr KindSchema kKindSchemas[] = {
#define PROF_KIND_SCHEMA(name, number, text, family, flags, ...)                               \
  [] {                                                                                         \
    using namespace schema_flags;                                                              \
    using enum Field;                                                                          \
    return detail::make_kind_schema(FuncKind::name, text, KindFamily::family,                  \
                                    uint8_t(flags) __VA_OPT__(, ) __VA_ARGS__);                \
  }(),
    PROF_RECORD_KINDS(PROF_KIND_SCHEMA)
#undef PROF_KIND_SCHEMA
};
inline constexpr size_t kKindCount = sizeof kKindSchemas / sizeof kKindSchemas[0];

// Whether the table has the kind (not a newer writer's number).
inline constexpr bool known_kind(FuncKind k) { return static_cast<size_t>(k) < kKindCount; }
// The kind's schema; nullptr for a number no kind has (a newer writer's kind).
// (The constexpr tests below use known_kind: GCC's -fsanitize=undefined makes
// a test of this pointer for null no constant expression.)
inline constexpr const KindSchema* find_schema(FuncKind k) {
  return known_kind(k) ? &kKindSchemas[static_cast<size_t>(k)] : nullptr;
}
inline constexpr const KindSchema& schema_of(FuncKind k) { return kKindSchemas[size_t(k)]; }

// Whether a kind's records may carry kSameComm / kPackedRequest.
inline constexpr bool kind_has_comm(FuncKind k) {
  return known_kind(k) && (schema_of(k).context_flags & schema_flags::kSameComm);
}
inline constexpr bool kind_has_request(FuncKind k) {
  return known_kind(k) && (schema_of(k).context_flags & schema_flags::kPackedRequest);
}

// Whether a kind's records may leave out a payload that repeats the previous
// record of their function (format 6, kRepeatPayload in trace_format.h).
// Not Send, Recv and Probe: the shim's hot path writes them in a fixed
// layout (encode_fixed) and keeps them whole, so that a blocking hop pays
// nothing for repeats.
inline constexpr bool kind_repeats(FuncKind k) {
  return known_kind(k) && k != FuncKind::Send && k != FuncKind::Recv && k != FuncKind::Probe;
}

// Payload words of a fixed-size kind's record for its wide flags and context
// flags (the decoder's lower bound; the encoder's exact size).
inline constexpr unsigned fixed_payload_words(const KindSchema& s, bool wide_peer_tag,
                                              bool wide_bytes, bool same_comm,
                                              bool packed_request) {
  unsigned n = 0;
  for (size_t i = 0; i < s.field_count; ++i) switch (s.fields[i]) {
      case Field::PeerTag:
      case Field::RecvPeerTag: n += wide_peer_tag ? 2 : 1; break;
      case Field::Bytes:
      case Field::RecvBytes: n += wide_bytes ? 2 : 1; break;
      case Field::Comm: n += (same_comm && (s.context_flags & schema_flags::kSameComm)) ? 0 : 1; break;
      case Field::Request:
        n += (packed_request && (s.context_flags & schema_flags::kPackedRequest)) ? 0 : 1;
        break;
      case Field::Completions:
      case Field::Requests: break;  // variable: nothing required
      default: n += 1; break;
    }
  return n;
}

// The table's invariants, checked where it is declared.
namespace detail {
constexpr bool schema_consistent() {
  for (size_t k = 0; k < kKindCount; ++k) {
    const KindSchema& s = kKindSchemas[k];
    if (static_cast<size_t>(s.kind) != k) return false;  // indexed by number, no gaps
    // kSameComm needs a Comm word to leave out.
    if ((s.context_flags & schema_flags::kSameComm) && !s.has(Field::Comm)) return false;
    // kPackedRequest packs Bytes and the Request right after it.
    if (s.context_flags & schema_flags::kPackedRequest) {
      bool paired = false;
      for (size_t i = 0; i + 1 < s.field_count; ++i)
        paired |= s.fields[i] == Field::Bytes && s.fields[i + 1] == Field::Request;
      if (!paired) return false;
    }
    // A variable list is the whole payload.
    if (s.variable() && s.field_count != 1) return false;
    for (size_t i = 0; i < s.field_count; ++i)  // each field once
      for (size_t j = i + 1; j < s.field_count; ++j)
        if (s.fields[i] == s.fields[j]) return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::schema_consistent(), "PROF_RECORD_KINDS breaks a layout rule");
// The largest fixed payload, all wide, leaves room for the long-time words
// within kMaxPayloadWords (127).
static_assert([] {
  for (const KindSchema& s : kKindSchemas)
    if (fixed_payload_words(s, true, true, false, false) > 127 - 4) return false;
  return true;
}());
// Sizes the format documents (docs/trace-format.md): a narrow Send is 3 words,
// an Isend with a packed request 3, a SendRecv all wide 9.
static_assert(fixed_payload_words(schema_of(FuncKind::Send), false, false, false, false) == 3);
static_assert(fixed_payload_words(schema_of(FuncKind::Isend), false, false, false, true) == 3);
static_assert(fixed_payload_words(schema_of(FuncKind::SendRecv), true, true, false, false) == 9);
static_assert(fixed_payload_words(schema_of(FuncKind::Marker), true, true, true, true) == 2);

// Whether two kinds lay their payload out alike (one encoder serves both).
inline constexpr bool same_layout(FuncKind a, FuncKind b) {
  const KindSchema &x = schema_of(a), &y = schema_of(b);
  if (x.field_count != y.field_count || x.context_flags != y.context_flags) return false;
  for (size_t i = 0; i < x.field_count; ++i)
    if (x.fields[i] != y.fields[i]) return false;
  return true;
}

// A fixed-size record's values by field, with the member names of the reader's
// Event (which encode_fields/decode_fields also take): what the shim fills.
struct RecordValues {
  int32_t peer = -1, tag = -1;  // PeerTag
  uint32_t comm = 0;            // Comm
  uint64_t bytes = 0;           // Bytes
  uint32_t request = 0;         // Request
  int32_t root = -1;            // Root
  int32_t recv_peer = -1, recv_tag = -1;  // RecvPeerTag
  uint64_t recv_bytes = 0;                // RecvBytes
  uint32_t new_comm = 0;                  // NewComm
  uint32_t interval_id = 0;               // IntervalId
  uint32_t callsite = 0;                  // CallSite
};

// Calls fn(std::integral_constant<size_t, I>{}) for each field index of kind K,
// unrolled at compile time, so encoders and decoders built on it compile to the
// same straight-line code as a hand-written layout.
template <FuncKind K, class Fn>
[[gnu::always_inline]] inline void for_each_field_index(Fn&& fn) {
  [&]<size_t... I>(std::index_sequence<I...>) __attribute__((always_inline)) {
    (fn(std::integral_constant<size_t, I>{}), ...);
  }(std::make_index_sequence<schema_of(K).field_count>{});
}

// Calls fn.template operator()<K>() with K the runtime kind as a constant;
// returns false for a number no kind has.
template <class Fn>
[[gnu::always_inline]] inline bool visit_kind(FuncKind k, Fn&& fn) {
  switch (k) {
#define PROF_KIND_CASE(name, ...) \
  case FuncKind::name: fn.template operator()<FuncKind::name>(); return true;
    PROF_RECORD_KINDS(PROF_KIND_CASE)
#undef PROF_KIND_CASE
  }
  return false;
}

}  // namespace prof::format
