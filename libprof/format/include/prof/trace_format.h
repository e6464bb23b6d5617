// The trace format: the one contract between libprof (which writes it) and the
// analyzer (which reads it). Header-only, no dependencies beyond the C++ standard
// library, so the shim's hot path and every reader share the same definitions.
//
// A trace is a directory with one file per rank, `rank-NNNNN.prof`:
//
//   FileHeader (64 bytes, offset 0)
//   Chunk*     each: ChunkHeader (32 bytes) + `capacity` bytes of payload,
//              8-byte aligned; zero bytes may pad the space between chunks.
//
// Chunks carry their length, so a reader skips the types it does not know
// (OTF2's rule). Two kinds of chunk:
//   - Definitions (text, one TAB-separated line per definition, see DefKind):
//     functions, communicators, call sites, the load map, clock sync, metadata.
//     Written whole and sealed at once.
//   - Events (binary records, RecordHeader + payload words): one stream per
//     thread. Written in place through a file-backed mapping, so every record is
//     in the page cache the moment it is stored and survives SIGKILL. A chunk is
//     sealed (used length + CRC-32) when it fills or the process ends; an
//     unsealed chunk is read up to the first zero word (a record's first word is
//     stored last and is never zero), which is how a killed rank is salvaged.
//
// Timestamps are raw timer ticks; the Meta definitions give ticks->ns and the
// ClockSync definitions the offset to rank 0's clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "prof/record_schema.h"

namespace prof::format {

inline constexpr char kFileMagic[8] = {'P', 'R', 'O', 'F', 'T', 'R', 'C', '1'};
// Version 2 added kSameComm and kPackedRequest; a version-1 file is a valid
// version-2 file that never sets them. Version 3 starts every events chunk with
// an interval snapshot (kSnapshotFuncId). Version 4 adds the Live chunk (the
// calls in flight and a heartbeat). Version 5 adds home chunks (kChunkHome):
// a stream's newest chunk may lie before its older ones in the file, and the
// Live chunk's slots say which copy of a chunk being copied out is whole
// (LiveSlot::home_copy). Version 6 adds payload repeats (kRepeatPayload): a
// record whose payload is the previous one of its function in the chunk
// carries none. Version 7 adds call sites: a record's func field carries the
// call's site index beside the function id (kSiteShift), which A definitions
// resolve. Readers take versions 1 to 7.
inline constexpr uint32_t kFormatVersion = 7;
inline constexpr uint32_t kOldestFormatVersion = 1;
inline constexpr uint32_t kFirstSnapshotVersion = 3;
inline constexpr uint32_t kFirstLiveVersion = 4;
inline constexpr uint32_t kFirstHomeVersion = 5;
inline constexpr uint32_t kFirstRepeatVersion = 6;
inline constexpr uint32_t kFirstSiteVersion = 7;
inline constexpr uint32_t kChunkMagic = 0x4B4E4843u;  // "CHNK" little-endian

// Timers a trace may be recorded with (Meta key "timer" names it too).
enum class TimerKind : uint32_t { Tsc = 1, Monotonic = 2, Gettimeofday = 3, MpiWtime = 4 };

struct FileHeader {
  char magic[8];            // kFileMagic
  uint32_t version;         // kFormatVersion
  uint32_t header_size;     // sizeof(FileHeader); chunks start here
  uint64_t run_id;          // equal in every rank file of one run (chosen by rank 0)
  int32_t rank;             // MPI_COMM_WORLD rank
  int32_t world_size;       // MPI_COMM_WORLD size
  uint32_t timer;           // TimerKind
  uint32_t reserved0;
  uint64_t reserved[3];
};
static_assert(sizeof(FileHeader) == 64);

enum class ChunkType : uint16_t { Definitions = 1, Events = 2, Live = 3 };
// kChunkHome (format 5, events chunks): the chunk lies in its thread's home,
// the one region of the file the thread writes its records into for good
// once its chunks reach full size. Each full chunk there is copied to the
// file's end as an ordinary sealed chunk and the home emptied for the next,
// so its pages stay writable (no write fault per new page). A stream's home
// chunk is its newest: readers take it after the stream's other chunks,
// which lie in file order.
enum ChunkFlag : uint16_t { kChunkSealed = 1, kChunkHome = 2 };

struct ChunkHeader {
  uint32_t magic;      // kChunkMagic
  uint16_t type;       // ChunkType
  uint16_t flags;      // ChunkFlag bits
  uint32_t capacity;   // payload bytes reserved after this header (multiple of 8)
  uint32_t used;       // payload bytes written; valid when sealed
  uint32_t crc32;      // CRC-32C of the `used` payload bytes; valid when sealed
  uint32_t stream;     // Events: the thread's stream index (0 = the thread that called MPI_Init)
  uint64_t base_time;  // Events: raw time the first record's dt_enter counts from
};
static_assert(sizeof(ChunkHeader) == 32);

inline constexpr uint64_t align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

// ---------------------------------------------------------------------------
// The Live chunk (format 4): one per file, never sealed, mapped by the shim for
// the whole run and rewritten in place, so a killed process leaves in it what
// it was doing. Its payload is a LiveHeader and `slot_count` InFlightSlots,
// `slot_bytes` apart, one per thread stream (stream i uses slot i; streams
// beyond have none).
//   - heartbeat: raw ticks, stored by a helper thread every kHeartbeatMs and
//     once more when recording ends (finalize, a fatal signal, exit): the rank
//     was alive then. 0: no beat yet.
//   - a slot describes the MPI call its thread is inside: the wrapper stores
//     the call's facts, then `enter` (non-zero) on entry, and `enter` = 0 once
//     the call's record is committed. A slot whose enter is at or before the
//     stream's last recorded enter is a call whose record made it (the process
//     died between the two stores): not in flight.
struct LiveHeader {
  uint64_t heartbeat;      // raw ticks of the last beat
  uint32_t slot_count;     // InFlightSlots that follow
  uint32_t slot_bytes;     // from one slot to the next (>= sizeof(InFlightSlot); the shim: 64)
  uint64_t reserved[2];
};
static_assert(sizeof(LiveHeader) == 32);

struct InFlightSlot {
  uint64_t enter;          // raw ticks of the call's entry; 0: not inside a call
  uint64_t site_func;      // return address of the call (low 48 bits) | function id << 48
  int32_t peer;            // by the function's kind: Send/Recv/Probe/Isend/Irecv: peer
                           // (comm rank as passed); SendRecv: destination; collectives: root
  int32_t tag;             // Send/Recv/...: tag; SendRecv: source; Completion: request count
  uint32_t comm;           // communicator handle (kinds with one), else 0
  uint32_t extra;          // SendRecv: receive tag; Completion: the first request handle
};
static_assert(sizeof(InFlightSlot) == 32);
inline constexpr uint64_t kSiteMask = (uint64_t{1} << 48) - 1;
inline constexpr uint32_t kLiveChunkBytes = 4096;  // header included: one page
// The shim spaces slots a cache line apart (slot_bytes 64): threads never
// share a line on the hot path.
inline constexpr uint32_t kLiveSlotStride = 64;

// One slot's whole stride as the shim lays it out. binding_site: the return
// address into the application of a language binding (Fortran: mpi_recv_ and
// its aliases) whose C MPI function the slot describes; 0 when the
// application called the C function itself. The Fortran wrappers store it
// before calling the binding and clear it after, so the C wrappers' hot path
// never touches it; a reader prefers it to site_func's address, which then
// lies inside the binding library. Added within format 4: files written
// before it hold 0 there (or have slot_bytes below its end: TraceWriter's 32),
// and readers that do not know it skip it with the stride.
//
// home_copy (format 5): while the thread copies its full home chunk out, the
// file offset of the copy's header (8-aligned) | a state in the low bits;
// 0 otherwise. kHomeCopying: the copy may be partial and the home holds the
// records (readers drop the chunk at that offset); kHomeCopied: the copy is
// whole and the home is being emptied (readers drop the home chunk). So a
// process killed at any point of the copy leaves each record once.
struct LiveSlot {
  InFlightSlot slot;
  uint64_t home_copy;
  uint8_t reserved[kLiveSlotStride - sizeof(InFlightSlot) - 16];
  uint64_t binding_site;
};
static_assert(sizeof(LiveSlot) == kLiveSlotStride);
inline constexpr uint32_t kBindingSiteOffset = offsetof(LiveSlot, binding_site);
inline constexpr uint32_t kHomeCopyOffset = offsetof(LiveSlot, home_copy);
inline constexpr uint64_t kHomeCopying = 1, kHomeCopied = 2, kHomeCopyStateMask = 7;
inline constexpr uint32_t kLiveSlots =
    (kLiveChunkBytes - 32 - sizeof(LiveHeader)) / kLiveSlotStride;
inline constexpr uint32_t kHeartbeatMs = 100;

// ---------------------------------------------------------------------------
// Definitions: text lines "<tag>\t<field>\t<field>...\n". Tags:
//   M key value                       metadata (host, exe, pid, timer, ns_per_tick, ...)
//   F id kind name                    function id -> FuncKind number and MPI name
//   C handle global_id time size inter ranks remote_ranks
//                                     communicator: the handle as recorded in
//                                     events denotes `global_id` (same on every
//                                     member) from raw `time` on; ranks are the
//                                     world ranks of comm ranks 0..size-1, comma
//                                     separated; remote_ranks for intercomms
//   S id address file line            call site (file/line empty when resolved offline)
//   L bias path                       load map: a loaded object and its load bias (hex)
//   B bias build_id                   the GNU build id (hex) of the object at that bias
//   K phase local_ticks offset_ns rtt_ns
//                                     clock sync at `init` or `final`: rank 0's clock
//                                     minus ours, in ns, at our raw time local_ticks
//   E reason                          end of recording: finalize, abort, signal:N, exit
//   V name value                      an environment variable of the MPI library or
//                                     its transport (kRunEnvironmentPrefixes), at init
//   P name value origin               a PROF_* setting as the shim resolved it;
//                                     origin `env` (set) or `default`
// Unknown tags are skipped by readers.
enum class DefKind : char {
  Meta = 'M', Function = 'F', Comm = 'C', CallSite = 'S', LoadObject = 'L', BuildId = 'B', ClockSync = 'K', End = 'E',
  Environment = 'V', Setting = 'P'
};

// The environment variables a run's V definitions record: how users tune the
// MPI library and its transport (MPICH's control variables, UCX's and
// libfabric's settings, Open MPI's MCA parameters).
inline constexpr const char* kRunEnvironmentPrefixes[] = {"MPIR_CVAR_", "MPICH_", "UCX_", "FI_",
                                                          "OMPI_MCA_"};

// FuncKind (what a function's records carry) and each kind's payload fields
// are declared once, in record_schema.h's PROF_RECORD_KINDS.

// Function id reserved for interval markers, whatever MPI call carried them.
inline constexpr uint16_t kMarkerFuncId = 0xFFFE;
// Function id reserved for the interval snapshot that opens every events chunk
// (format 3); never defined by an F line, never an event.
inline constexpr uint16_t kSnapshotFuncId = 0xFFFD;

// Raw marker tag: 0xAA <id:16> 0xAA (begin) or 0xAA <id:16> 0xBB (end).
struct MarkerTag {
  bool is_marker;
  bool begin;
  uint16_t id;
};
inline constexpr MarkerTag decode_marker_tag(int tag) {
  const uint32_t t = static_cast<uint32_t>(tag);
  if ((t >> 24) != 0xAAu) return {false, false, 0};
  const uint32_t last = t & 0xFFu;
  if (last != 0xAAu && last != 0xBBu) return {false, false, 0};
  return {true, last == 0xAAu, static_cast<uint16_t>((t >> 8) & 0xFFFFu)};
}
inline constexpr int encode_marker_tag(uint16_t id, bool begin) {
  return static_cast<int>(0xAA000000u | (uint32_t{id} << 8) | (begin ? 0xAAu : 0xBBu));
}

// ---------------------------------------------------------------------------
// Event records. A record is a header and `payload_words` 32-bit words. The
// header's first word is func(16) | flags(8) | payload_words(7) | kShortTime(1);
// with kShortTime the header is 8 bytes (word 1: dt_enter(16) | duration(16) <<
// 16), else 12 (RecordHeader: 32-bit dt_enter and duration, or zeros with
// kLongTime).
enum RecordFlag : uint8_t {
  kLongTime = 1 << 0,     // payload starts with int64 dt_enter, uint64 duration (header fields 0)
  kWidePeerTag = 1 << 1,  // every PeerTag is two words (int32 peer, int32 tag), else one packed word
  kWideBytes = 1 << 2,    // every Bytes is two words (uint64), else one
  kAnySource = 1 << 3,    // the call asked for MPI_ANY_SOURCE
  kAnyTag = 1 << 4,       // the call asked for MPI_ANY_TAG
  kMarkerBegin = 1 << 5,  // Marker: begin (else end)
  kCallFailed = 1 << 6,   // the MPI call returned an error code
  kContinuation = 1 << 7, // Completion/RequestOp: more entries of the previous record's call
                          // (same enter/leave; a call with more entries than fit in one record)
  // Two bits mean something else in kinds where the meaning above cannot occur:
  kSameComm = 1 << 5,      // kinds with a Comm word (not Marker): the word is left out; the
                           // communicator is the last Comm written in this chunk
  kPackedRequest = 1 << 7, // kinds ending in Bytes Request (Isend, Irecv, ICollective,
                           // IAllToAll): one word, bytes (< 2^16) | request's low 16 bits << 16;
                           // the request's high 16 bits are those of the last full Request
                           // written in this chunk
};

static_assert(kSameComm == schema_flags::kSameComm && kPackedRequest == schema_flags::kPackedRequest);

// Payload repeats (format 6). kLongTime on a record with no payload words
// (which a long time, four words, cannot be): the record's payload is that
// of one of the last kRepeatDepth full records of the same function in this
// chunk, its words and its encoding flags (kRepeatEncoding: kWidePeerTag,
// kWideBytes and the kind's kSameComm / kPackedRequest), decoded here as if
// they stood here (kSameComm then means this record's chunk context, which
// the writer checked is the same). Which one: the repeat's flag bits 1-2
// (where kWidePeerTag and kWideBytes would be, which a repeat takes from the
// record it repeats), 0 the function's latest full record, 1 the one before,
// and so on: a loop that calls a function from a few sites with their own
// arguments (two receives from two neighbours) repeats each. The times are
// the header's own (short or normal); the record's other flags are its own.
// Writers leave the first record of a chunk with each function in full, and
// neither write nor refer to a repeat in a kContinuation record of a
// Completion / RequestOp, in a kind that does not repeat (kind_repeats) or of
// a function id from kRepeatFuncs up (markers, snapshots). In a loop that
// calls the same functions with the same arguments and MPI reuses the same
// request handles, every record is its header alone (8 bytes when the times
// fit 16 bits).
inline constexpr uint8_t kRepeatPayload = kLongTime;
inline constexpr uint8_t kRepeatEncoding = kWidePeerTag | kWideBytes | kSameComm | kPackedRequest;
inline constexpr uint32_t kRepeatFuncs = 1024;

// Call sites (format 7). Function ids of calls are below kRepeatFuncs (10
// bits), so a record's 16-bit func field holds in its top 6 bits the call's
// site index: which of its function's call sites on this rank made the call
// (1 to kSiteIndexes, in the order the rank first saw them), resolved by the
// rank's A definitions (function, index -> S call site); 0: not recorded (a
// function called from more than kSiteIndexes sites, a writer that records
// none). Index 63 would make ids from 0xFC00 up, which stay the reserved
// ones (kMarkerFuncId, kSnapshotFuncId), never split. Every event keeps its
// size: the site costs no word. Files before version 7 carry no index.
inline constexpr uint32_t kSiteShift = 10;
inline constexpr uint16_t kFuncIdMask = (1u << kSiteShift) - 1;
inline constexpr uint32_t kSiteIndexes = 62;
inline constexpr uint16_t kReservedFuncIds = 0xFC00;
static_assert(kRepeatFuncs == 1u << kSiteShift && (kSiteIndexes + 1) << kSiteShift == kReservedFuncIds);
// The function id and the site index of a version-7 record's func field.
inline constexpr uint16_t field_func(uint32_t field) {
  field &= 0xFFFFu;
  return static_cast<uint16_t>(field < kReservedFuncIds ? field & kFuncIdMask : field);
}
inline constexpr uint32_t field_site_index(uint32_t field) {
  field &= 0xFFFFu;
  return field < kReservedFuncIds ? field >> kSiteShift : 0;
}
inline constexpr uint32_t kRepeatDepth = 4;
inline constexpr uint32_t kRepeatIndexShift = 1;
inline constexpr uint8_t kRepeatIndexMask = kWidePeerTag | kWideBytes;
static_assert(kRepeatIndexMask >> kRepeatIndexShift == kRepeatDepth - 1);
inline constexpr bool record_repeats(uint32_t w0) {
  return (w0 & (uint32_t{kRepeatPayload} << 16)) != 0 && ((w0 >> 24) & 0x7Fu) == 0;
}
// Which of its function's last full records a repeat's flags name (0: the latest).
inline constexpr uint32_t repeat_index(uint32_t flags) {
  return (flags & kRepeatIndexMask) >> kRepeatIndexShift;
}

// A writer's repeat state: per function id below kRepeatFuncs, where the
// payloads of its last kRepeatDepth full records in the current chunk are,
// latest first (null: none). Reset at every chunk start, as a reader's is;
// a full record shifts the others down, a repeat changes nothing.
struct RepeatRef {
  const uint32_t* payload = nullptr;
  uint32_t words = 0;
  uint32_t flags = 0;
};
struct RepeatTable {
  RepeatRef last[kRepeatFuncs][kRepeatDepth];
  // The functions noted since the last reset, so that a reset (every chunk
  // start) clears their entries, not the whole table.
  uint16_t noted[kRepeatFuncs];
  uint32_t noted_count = kRepeatFuncs + 1;  // more than noted holds: all of it
  void reset() {
    if (noted_count > kRepeatFuncs) {
      std::memset(static_cast<void*>(last), 0, sizeof last);
    } else {
      for (uint32_t i = 0; i < noted_count; ++i)
        std::memset(static_cast<void*>(last[noted[i]]), 0, sizeof last[0]);
    }
    noted_count = 0;
  }
  // A record just encoded with `words` payload words at `payload` and flags
  // `flags`: the index (repeat_index) of the full record of `func` whose
  // words and encoding flags it repeats, or -1 when none does, and then it
  // stays whole and is noted as the function's latest. Continuation records
  // must not come here (the caller tests; those of Completion / RequestOp
  // use bit 7 for kContinuation).
  // `func` may carry a site index (kSiteShift): the table is by function.
  [[gnu::always_inline]] int repeat(uint16_t func, const uint32_t* payload, uint32_t words,
                                    uint32_t flags) {
    func = field_func(func);
    if (func >= kRepeatFuncs || words == 0) return -1;
    const int k = find(func, payload, words, flags);
    if (k < 0) note(func, payload, words, flags);
    return k;
  }
  // The index of the full record of `func` (below kRepeatFuncs; words > 0)
  // that `words` words at `payload` with `flags` repeat, or -1; notes nothing.
  [[gnu::always_inline]] int find(uint16_t func, const uint32_t* payload, uint32_t words,
                                  uint32_t flags) const {
    for (uint32_t k = 0; k < kRepeatDepth; ++k)
      if (same(last[func][k], payload, words, flags)) return static_cast<int>(k);
    return -1;
  }
  // A full record of `func` becomes its latest.
  [[gnu::always_inline]] void note(uint16_t func, const uint32_t* payload, uint32_t words,
                                   uint32_t flags) {
    RepeatRef* h = last[func];
    if (h[0].payload == nullptr && noted_count < kRepeatFuncs) noted[noted_count++] = func;
    for (uint32_t k = kRepeatDepth - 1; k > 0; --k) h[k] = h[k - 1];
    h[0] = RepeatRef{payload, words, flags};
  }
  [[gnu::always_inline]] static bool same(const RepeatRef& r, const uint32_t* payload,
                                          uint32_t words, uint32_t flags) {
    if (r.words != words || ((r.flags ^ flags) & kRepeatEncoding) != 0) return false;
    uint64_t diff = 0;
    uint32_t i = 0;
    for (; i + 2 <= words; i += 2) {
      uint64_t a, b;
      std::memcpy(&a, r.payload + i, 8);
      std::memcpy(&b, payload + i, 8);
      diff |= a ^ b;
    }
    if (i < words) diff |= r.payload[i] ^ payload[i];
    return diff == 0;
  }
};
// A repeat's flags from the record's own (kRepeatIndexMask bits replaced).
inline constexpr uint32_t repeat_flags(uint32_t flags, int index) {
  return (flags & ~uint32_t{kRepeatIndexMask}) | kRepeatPayload |
         (static_cast<uint32_t>(index) << kRepeatIndexShift);
}

// What later records of a chunk may refer to (kSameComm, kPackedRequest). A
// chunk decodes on its own, so writers reset this at every chunk start and the
// first record of a chunk that needs a value carries it in full.
struct ChunkContext {
  uint32_t comm = 0;
  uint32_t request_high = 0;
  bool has_comm = false;
  bool has_request = false;
  void reset() { has_comm = has_request = false; }
};

struct RecordHeader {
  uint16_t func;           // function id (>= 1); a zero first word marks free space
  uint8_t flags;           // RecordFlag bits
  uint8_t payload_words;   // low 7 bits: 32-bit words following the header; top bit kShortTime
  uint32_t dt_enter;       // ticks since the previous record's enter (chunk base_time for the first)
  uint32_t duration;       // leave - enter, ticks
};
static_assert(sizeof(RecordHeader) == 12);
inline constexpr uint8_t kShortTime = 0x80;  // in payload_words: 8-byte header, 16-bit times
inline constexpr size_t kMaxPayloadWords = 127;
inline constexpr uint64_t kShortTimeLimit = 65536;  // dt_enter and duration below it: short

// From a record's first word: header and payload sizes in words.
inline constexpr uint32_t record_payload_words(uint32_t w0) { return (w0 >> 24) & 0x7Fu; }
inline constexpr bool record_short_time(uint32_t w0) { return (w0 >> 31) != 0; }
inline constexpr uint32_t record_header_words(uint32_t w0) { return 3u - (w0 >> 31); }
inline constexpr uint32_t record_words(uint32_t w0) {
  return record_header_words(w0) + record_payload_words(w0);
}

// Completion records: at most this many entries each (one bitmap word).
inline constexpr size_t kMaxCompletionEntries = 32;

// Packed PeerTag: peer in the low 16 bits, tag in the high 16 bits, both signed.
inline constexpr bool fits_packed_peer_tag(int32_t peer, int32_t tag) {
  return peer >= INT16_MIN && peer <= INT16_MAX && tag >= INT16_MIN && tag <= INT16_MAX;
}
inline constexpr uint32_t pack_peer_tag(int32_t peer, int32_t tag) {
  return (static_cast<uint32_t>(static_cast<uint16_t>(peer))) |
         (static_cast<uint32_t>(static_cast<uint16_t>(tag)) << 16);
}
inline constexpr int32_t packed_peer(uint32_t w) { return static_cast<int16_t>(w & 0xFFFFu); }
inline constexpr int32_t packed_tag(uint32_t w) { return static_cast<int16_t>(w >> 16); }

// Completion entry Bytes: the top bit says the request was cancelled.
inline constexpr uint64_t kCancelledBit32 = 1u << 31;
inline constexpr uint64_t kCancelledBit64 = uint64_t{1} << 63;

// MPICH's special ranks as recorded (the format keeps MPI's own values).
inline constexpr int32_t kProcNull = -1;
inline constexpr int32_t kAnySourceRank = -2;
inline constexpr int32_t kRootRank = -3;
inline constexpr int32_t kAnyTagValue = -1;
inline constexpr uint32_t kNoRequest = 0x2c000000u;  // MPICH's MPI_REQUEST_NULL
inline constexpr uint32_t kNoComm = 0x04000000u;     // MPICH's MPI_COMM_NULL

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
    if (cx.has_comm && cx.comm == c) {
      flags_ |= kSameComm;
      return;
    }
    word(c);
    cx.comm = c;
    cx.has_comm = true;
  }
  // Bytes then Request: one word (kPackedRequest) when the bytes fit 16 bits
  // (and kWideBytes is not set) and the request's high half repeats the chunk's.
  void bytes_request(uint64_t n, uint32_t request, ChunkContext& cx) {
    if (!(flags_ & kWideBytes) && n < 65536 && cx.has_request &&
        cx.request_high == request >> 16) {
      flags_ |= kPackedRequest;
      word(static_cast<uint32_t>(n) | (request << 16));
      return;
    }
    bytes(n);
    word(request);
    cx.request_high = request >> 16;
    cx.has_request = true;
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
// to one of the last of `func` in the chunk is left out.
template <FuncKind K, class V>
[[gnu::always_inline]] inline bool encode_narrow(uint32_t* at, uint16_t func, uint8_t flags,
                                                  uint64_t dt_enter, uint64_t duration, const V& v,
                                                  ChunkContext& cx, size_t& words,
                                                  RepeatTable* repeats = nullptr) {
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
        const bool same = cx.has_comm && cx.comm == c;
        p += !same;
        f |= same ? uint32_t{kSameComm} : 0u;
        cx.comm = c;
        cx.has_comm = true;
      } else {
        ++p;
      }
    } else if constexpr (packs) {
      const uint32_t request = static_cast<uint32_t>(v.request);
      if (v.bytes < 65536 && cx.has_request && cx.request_high == request >> 16) {
        *p++ = static_cast<uint32_t>(v.bytes) | (request << 16);
        f |= kPackedRequest;
      } else {
        p[0] = static_cast<uint32_t>(v.bytes);
        p[1] = request;
        p += 2;
        cx.request_high = request >> 16;
        cx.has_request = true;
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
  const uint32_t w0 = (form + (static_cast<uint32_t>(words) << 24)) | (f << 16) | func;
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
      cx.has_comm = true;
    } else if constexpr (field == Field::Bytes) at[i++] = static_cast<uint32_t>(v.bytes);
    else if constexpr (field == Field::Request) {
      at[i++] = static_cast<uint32_t>(v.request);
      cx.request_high = static_cast<uint32_t>(v.request) >> 16;
      cx.has_request = true;
    } else if constexpr (field == Field::Root) at[i++] = static_cast<uint32_t>(v.root);
  });
  __atomic_store_n(at, fixed_first_word<K>(func, flags), __ATOMIC_RELEASE);
}

// A call without payload (FuncKind Other) in its fixed form, the short
// header: 8 bytes when the times fit 16 bits (the caller tested
// (dt_enter | duration) >> 16 == 0). `func`: the record's func field (16 bits).
[[gnu::always_inline]] inline void encode_fixed_plain(uint32_t* at, uint32_t func, uint32_t flags,
                                                      uint64_t dt_enter, uint64_t duration) {
  at[1] = static_cast<uint32_t>(dt_enter) | (static_cast<uint32_t>(duration) << 16);
  __atomic_store_n(at, (uint32_t{kShortTime} << 24) | (flags << 16) | func, __ATOMIC_RELEASE);
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

// Worst-case record size: header, long time, and the largest payload we emit.
inline constexpr size_t kMaxRecordWords = 3 + kMaxPayloadWords;

// ---------------------------------------------------------------------------
// Interval snapshots (format 3). A stream's open intervals at a point are the
// begin markers before it not yet ended, by these rules (the analyzer's too):
// a begin opens an interval unless kMaxOpenIntervals are open already (then it
// is ignored); an end closes the innermost open interval with its id and every
// interval opened inside it; an end with no open interval of its id changes
// nothing. Each events chunk starts with a snapshot record of its stream's
// open intervals just before the chunk's first event, so decoding can start at
// any chunk (seek by time) knowing which intervals enclose it. The record:
// func kSnapshotFuncId, flags 0, short times 0 and 0 (the chunk's time chain
// is unchanged), payload: the depth (number of open intervals), then, when the
// depth is at most kMaxSnapshotEntries, one entry per open interval, outermost
// first: IntervalId, CallSite, enter (uint64, raw ticks of its begin marker).
// A deeper stack is recorded by its depth alone: readers rebuild it by a scan.
struct OpenInterval {
  uint32_t interval_id = 0;
  uint32_t callsite = 0;  // CallSiteDef id of the begin marker
  uint64_t enter = 0;     // raw ticks of the begin marker
  bool operator==(const OpenInterval&) const = default;
};
inline constexpr size_t kMaxOpenIntervals = 4096;
inline constexpr size_t kMaxSnapshotEntries = 30;  // 1 + 30 * 4 payload words
inline constexpr size_t kMaxSnapshotWords = 2 + 1 + 4 * kMaxSnapshotEntries;

// Applies one marker to a stream's open intervals (the rules above).
inline void apply_marker(std::vector<OpenInterval>& open, bool begin, uint32_t interval_id,
                         uint32_t callsite, uint64_t enter) {
  if (begin) {
    if (open.size() < kMaxOpenIntervals) open.push_back({interval_id, callsite, enter});
    return;
  }
  for (size_t i = open.size(); i-- > 0;)
    if (open[i].interval_id == interval_id) {
      open.resize(i);
      return;
    }
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

// CRC-32C (Castagnoli, reflected): SSE4.2 hardware when the CPU has it (sealing
// a chunk must cost little per event), a compile-time table otherwise.
namespace detail {
struct Crc32cTable {
  uint32_t t[256];
  constexpr Crc32cTable() : t{} {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (0x82F63B78u ^ (c >> 1)) : (c >> 1);
      t[i] = c;
    }
  }
};
inline constexpr Crc32cTable kCrcTable{};

inline uint32_t crc32c_sw(const unsigned char* p, size_t n, uint32_t c) {
  for (size_t i = 0; i < n; ++i) c = kCrcTable.t[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return c;
}
// Lane length of the hardware CRC's three-lane blocks (see crc32c_hw).
inline constexpr size_t kCrcLane = 2048;
#if defined(__x86_64__)
// One dependent chain of crc32 instructions runs at a third of their
// throughput (latency 3, one per cycle). So blocks of 3 x kCrcLane bytes are
// checksummed as three independent lanes and joined: the raw CRC register is
// linear, so crc(A B C) = shift(shift(crc(A)) ^ crc0(B)) ^ crc0(C), where crc0
// starts from 0 and shift() advances a register over kCrcLane zero bytes. That
// shift is a fixed linear map of 32 bits, applied as four byte tables built
// once from the images of the 32 unit vectors.

__attribute__((target("sse4.2"))) inline uint32_t crc32c_hw_1(const unsigned char* p, size_t n,
                                                                 uint32_t c) {
  uint64_t c64 = c;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = __builtin_ia32_crc32di(c64, v);
  }
  c = static_cast<uint32_t>(c64);
  for (; n > 0; --n, ++p) c = __builtin_ia32_crc32qi(c, *p);
  return c;
}

struct CrcLaneShift {
  uint32_t t[4][256];
  __attribute__((target("sse4.2"))) CrcLaneShift() {
    static const unsigned char zeros[kCrcLane] = {};
    uint32_t unit[32];
    for (int i = 0; i < 32; ++i) unit[i] = crc32c_hw_1(zeros, kCrcLane, 1u << i);
    for (int k = 0; k < 4; ++k)
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t v = 0;
        for (int j = 0; j < 8; ++j)
          if (b >> j & 1) v ^= unit[8 * k + j];
        t[k][b] = v;
      }
  }
  uint32_t operator()(uint32_t c) const {
    return t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF] ^ t[3][c >> 24];
  }
};

__attribute__((target("sse4.2"))) inline uint32_t crc32c_hw(const unsigned char* p, size_t n,
                                                               uint32_t c) {
  if (n >= 3 * kCrcLane) {
    static const CrcLaneShift shift;
    do {
      uint64_t a = c, b = 0, d = 0;
      for (size_t i = 0; i < kCrcLane; i += 8) {
        uint64_t va, vb, vd;
        std::memcpy(&va, p + i, 8);
        std::memcpy(&vb, p + kCrcLane + i, 8);
        std::memcpy(&vd, p + 2 * kCrcLane + i, 8);
        a = __builtin_ia32_crc32di(a, va);
        b = __builtin_ia32_crc32di(b, vb);
        d = __builtin_ia32_crc32di(d, vd);
      }
      c = shift(shift(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b)) ^
          static_cast<uint32_t>(d);
      p += 3 * kCrcLane;
      n -= 3 * kCrcLane;
    } while (n >= 3 * kCrcLane);
  }
  return crc32c_hw_1(p, n, c);
}
#endif
}  // namespace detail

inline uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2")) return ~detail::crc32c_hw(p, n, c);
#endif
  return ~detail::crc32c_sw(p, n, c);
}

inline std::string_view timer_name(TimerKind k) {
  switch (k) {
    case TimerKind::Tsc: return "tsc";
    case TimerKind::Monotonic: return "monotonic";
    case TimerKind::Gettimeofday: return "gettimeofday";
    case TimerKind::MpiWtime: return "mpi_wtime";
  }
  return "unknown";
}

inline constexpr const char* kRankFilePattern = "rank-%05d.prof";

}  // namespace prof::format
