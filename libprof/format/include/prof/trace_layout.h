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
//
// This header is the layout and its constants; the record encoders are in
// record_encoders.h, the checksum in crc32c.h, and trace_format.h includes
// all three.
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
// resolve. Version 8 numbers each stream's chunks (ChunkHeader::sequence,
// LiveSlot::chunks), so a reader tells a chunk missing from the file.
// Readers take versions 1 to 8.
inline constexpr uint32_t kFormatVersion = 8;
inline constexpr uint32_t kOldestFormatVersion = 1;
inline constexpr uint32_t kFirstSnapshotVersion = 3;
inline constexpr uint32_t kFirstLiveVersion = 4;
inline constexpr uint32_t kFirstHomeVersion = 5;
inline constexpr uint32_t kFirstRepeatVersion = 6;
inline constexpr uint32_t kFirstSiteVersion = 7;
inline constexpr uint32_t kFirstSequenceVersion = 8;
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
  uint16_t stream;     // Events: the thread's stream index (0 = the thread that called MPI_Init)
  uint16_t sequence;   // Events (format 8): the chunk's number in its stream, below
  uint64_t base_time;  // Events: raw time the first record's dt_enter counts from
};
static_assert(sizeof(ChunkHeader) == 32);
// Chunk sequence numbers (format 8). A stream's chunks are numbered 0, 1, 2,
// ... modulo 2^16 in the order they were opened (a home chunk reopened after
// its copy takes the next number; its copy keeps the number it had), so the
// chunks a reader takes in stream order (file order, the home last) count up
// by one: a jump says chunks are missing (a stretch cut out of the file, or a
// chunk's header destroyed). A jump by a multiple of 2^16 goes unseen. The
// file's last chunks are missing when the stream's Live slot (LiveSlot::chunks)
// counts more chunks than the reader found. Before format 8 the two fields
// were one 32-bit stream index whose high half was always 0.
inline constexpr uint32_t kMaxStreams = 1u << 16;

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
//
// chunks (format 8): how many chunks the thread's stream has opened, stored
// by the thread after each new chunk's header (a home reopened: after
// home_copy is back to 0), so a reader that finds fewer chunks of the stream
// knows the file lost its last ones; 0: not recorded.
struct LiveSlot {
  InFlightSlot slot;
  uint64_t home_copy;
  uint32_t chunks;
  uint8_t reserved[kLiveSlotStride - sizeof(InFlightSlot) - 20];
  uint64_t binding_site;
};
static_assert(sizeof(LiveSlot) == kLiveSlotStride);
inline constexpr uint32_t kBindingSiteOffset = offsetof(LiveSlot, binding_site);
inline constexpr uint32_t kHomeCopyOffset = offsetof(LiveSlot, home_copy);
inline constexpr uint32_t kChunkCountOffset = offsetof(LiveSlot, chunks);
static_assert(kChunkCountOffset == 40);
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
// Each value's "none" lies outside what it holds (a comm is 32 bits, a
// request's high half 16), so "the chunk's value is this one" is one
// compare and setting it one store, with no flag beside it. Packed (4-byte
// aligned, 12 bytes) so that it shares the shim's ThreadState's first cache
// line with the other fields every wrapper touches.
struct [[gnu::packed, gnu::aligned(4)]] ChunkContext {
  static constexpr uint64_t kNoComm = uint64_t{1} << 32;
  static constexpr uint32_t kNoRequestHigh = UINT32_MAX;
  uint64_t comm = kNoComm;                  // the last full Comm word, or kNoComm
  uint32_t request_high = kNoRequestHigh;   // the last full Request's high half, or kNoRequestHigh
  void reset() {
    comm = kNoComm;
    request_high = kNoRequestHigh;
  }
};
static_assert(sizeof(ChunkContext) == 12);

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
// What a reader takes for a rank file in a trace directory: "rank-" NAME
// ".prof" (the writer's pattern above, or more digits).
inline constexpr bool is_rank_file_name(std::string_view name) {
  return name.size() > 10 && name.substr(0, 5) == "rank-" && name.substr(name.size() - 5) == ".prof";
}
static_assert(is_rank_file_name("rank-00000.prof") && !is_rank_file_name("rank-.prof") &&
              !is_rank_file_name("rank-00000.json"));
// The analyzer's window index beside the rank files (docs/trace-format.md,
// "The window index").
inline constexpr const char* kWindowIndexFileName = "window-index.bin";
// A file a trace directory holds: a rank file or the window index.
inline constexpr bool is_trace_file_name(std::string_view name) {
  return is_rank_file_name(name) || name == kWindowIndexFileName;
}

}  // namespace prof::format
