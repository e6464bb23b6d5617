// The shim's runtime: per-thread event streams written straight into the trace
// file, and the record helpers the generated wrappers call.
//
// Hot path (every MPI call): call_begin() checks that recording is on and that
// this thread is not already inside a wrapper (MPI calling MPI, Fortran calling
// C, our own PMPI traffic), two timer reads, then one record encoded into the
// thread's mapped chunk: no locks, no allocation, no formatting. Past the
// chunk's populated part, more of it is populated; a chunk that cannot hold
// the record is sealed and a new one mapped (thread_chunks.cpp).
//
// Invariants: only the owning thread writes its chunk; a record's first word is
// stored last (RecordEncoder::commit), so a chunk read after SIGKILL holds whole
// records, then a zero first word (after which the words of a record not yet
// committed may stand: a fast receive's begin before MPI's call).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "mpich_status.h"
#include "prof/clock.h"
#include "prof/trace_format.h"

// The hot path must inline into each wrapper (no calls beyond PMPI's own).
#define PROF_HOT inline __attribute__((always_inline))
// Entry points the application links against; everything else is hidden.
#define PROF_EXPORT __attribute__((visibility("default")))

namespace prof::shim {

struct FunctionInfo {
  uint16_t id;
  format::FuncKind kind;
  const char* name;
};
extern const FunctionInfo kFunctions[];
extern const size_t kFunctionCount;
extern const uint16_t kId_MPI_Init, kId_MPI_Init_thread, kId_MPI_Finalize, kId_MPI_Abort,
    kId_MPI_Pcontrol;

// A thread's recording state. The fields every wrapper touches (the guard,
// the write pointer and its end, the slot pointer, the enter base, the chunk
// context) share its first cache line; the object is line-aligned.
struct alignas(64) ThreadState {
  uint32_t* cur = nullptr;     // next free word in the mapped chunk
  uint32_t* end = nullptr;     // end of the chunk's populated part (thread_chunks.cpp)
  // The thread's in-flight slot in the Live chunk (a private one for threads
  // beyond the chunk's slots): never null once attached.
  format::InFlightSlot* slot = nullptr;
  uint64_t last_enter = 0;     // enter time of the previous record (dt base)
  format::ChunkContext cx;     // comm and request high half later records of the chunk reuse
  bool in_call = false;
  // A fast send's datatype and count, stored on entry for its return
  // (fast_finish_send), which sizes the message after MPI's call.
  MPI_Datatype send_type = MPI_DATATYPE_NULL;
  // The first word (site_first_word) of the fast receive, Isend or Irecv in
  // flight, as its entry found it in the site cache (fast_keep_site),
  // for its return; in the first cache line's spare word.
  uint32_t call_first = 0;
  uint64_t send_count = 0;
  uint32_t stream = 0;
  bool attached = false;
  format::ChunkHeader* chunk = nullptr;
  size_t chunk_map_bytes = 0;  // size of the current mapping
  size_t next_chunk_bytes = 0; // doubles from 64 KiB up to PROF_BUFFER_MB: a thread
                               // that makes few calls costs little file and memory
  // Chunks the thread's stream has opened: the next one's sequence number
  // (format 8, format::ChunkHeader::sequence), and its Live slot's count.
  uint32_t chunks_opened = 0;
  // The slot's home_copy word (format::LiveSlot); null for a thread without
  // a Live slot, whose chunks are never homes (a home, format::kChunkHome in
  // its header, is copied out and reused when full, not replaced:
  // thread_chunks.cpp, copy_out_home).
  uint64_t* home_copy = nullptr;
  // The thread's open intervals (its markers so far), snapshot at each chunk's start.
  std::vector<format::OpenInterval> open_intervals;
  // Scratch for completion calls (requests are nulled by MPI; statuses for
  // MPI_STATUSES_IGNORE). Grown rarely, never shrunk.
  std::vector<MPI_Request> requests;
  std::vector<MPI_Status> statuses;
  // What a fast receive under MPI_STATUS_IGNORE hands MPI instead: not in
  // the wrapper's frame, which would keep its rare paths from being tail
  // calls.
  MPI_Status ignored_status;
  // Where each function's last full record of the chunk is: a record whose
  // payload repeats it is written as its header (format::kRepeatPayload).
  // Reset with the chunk context.
  format::RepeatTable repeats;
  // The call sites this thread has met: a direct-mapped cache of the rank's
  // table (site_cache_hit), by the slot's site and function word, indexed
  // by its low byte (one zero-extending move); 0 is no key (no site is 0).
  // Each holds the site's first word (site_first_word), the record's first
  // word itself for the fast Send and Recv records.
  // A return address inside a Fortran binding is held only while a Fortran
  // wrapper lends its entry to the binding's call (binding_site.h): else
  // such a call misses, and the miss looks it up by its binding site in the
  // second cache (resolve_call_site). Never invalidated otherwise: a site
  // keeps its index for the whole run.
  static constexpr size_t kSiteCacheSize = 256;
  uint64_t site_keys[kSiteCacheSize] = {};
  uint32_t site_words[kSiteCacheSize] = {};
  uint64_t binding_keys[kSiteCacheSize] = {};
  uint32_t binding_words[kSiteCacheSize] = {};

  const MPI_Request* save_requests(const MPI_Request* reqs, int n) {
    if (n <= 0) return reqs;
    if (requests.size() < size_t(n)) requests.resize(size_t(n));
    for (int i = 0; i < n; ++i) requests[size_t(i)] = reqs[i];
    return requests.data();
  }
  MPI_Status* scratch_statuses(int n) {
    if (statuses.size() < size_t(n > 0 ? n : 1)) statuses.resize(size_t(n > 0 ? n : 1));
    return statuses.data();
  }
};

static_assert(offsetof(ThreadState, send_count) + sizeof(uint64_t) <= 64,
              "the fields every wrapper touches share the state's first cache line");

// Global state read on the hot path.
struct Globals {
  bool recording = false;  // set after init succeeded, cleared at finalize
  // Recording with the bare-rdtsc timer: the fast wrappers may run
  // (runtime.h, "Call-free fast wrappers"). Set with recording, cleared with it.
  bool fast = false;
  // The MPI library's PMPI_ functions are within reach of libprof's calls
  // (reach_mpi_library).
  bool mpi_reached = false;
  clock::Timer timer;
};
// Hidden here, not only where defined: the wrappers then address g directly
// (rip-relative) instead of loading its address from the GOT into a register
// they must keep (a push and pop more per call).
extern Globals g __attribute__((visibility("hidden")));
extern __thread ThreadState* tls_state __attribute__((tls_model("initial-exec")));
// What tls_state points to in a thread not attached (never null): a state
// that is always inside a call, so the fast wrappers' one test (in_call)
// also sends such a thread to the general wrapper, which attaches it. Never
// written.
extern ThreadState unattached_thread __attribute__((visibility("hidden")));
PROF_HOT bool attached(const ThreadState* ts) { return ts != &unattached_thread; }

// The rare paths are `cold`: the wrappers then keep their arguments in
// argument registers, spilling them only on those paths, instead of moving
// them into callee-saved registers (a push, pop and two moves each) on
// every call.
[[gnu::cold]] ThreadState* attach_thread();  // first call of a thread
// Room for `words` more: more of the chunk populated, or the chunk sealed
// and a new one mapped.
[[gnu::cold]] void next_chunk(ThreadState* ts, size_t words);

PROF_HOT uint64_t now() { return g.timer.now(); }
// Recording stops (finalize, a fatal signal, an exit, a fork's child).
inline void stop_recording() {
  g.recording = false;
  g.fast = false;
}

// libprof.so does not load the MPI library (docs/design/shim-hot-path.md,
// "Start-up"): its PMPI_ calls bind lazily, in the global scope, to the one
// the application loaded. One the application opened at run time without
// RTLD_GLOBAL (an interpreter's MPI module) is made global here, before the
// first PMPI_ call: every call before MPI_Init finds recording off.
[[gnu::cold]] void reach_mpi_library();

PROF_HOT ThreadState* call_begin() {
  if (__builtin_expect(!g.recording, 0)) {
    if (__builtin_expect(!g.mpi_reached, 0)) reach_mpi_library();
    return nullptr;
  }
  ThreadState* ts = tls_state;
  // One test in the common case: unattached_thread is in_call too.
  if (__builtin_expect(ts->in_call, 0)) {
    if (attached(ts)) return nullptr;  // a nested call
    ts = attach_thread();
    if (ts == nullptr || ts->in_call) return nullptr;
  }
  ts->in_call = true;
  return ts;
}
PROF_HOT void call_end(ThreadState* ts) { ts->in_call = false; }

// The slot's site and function word. x86-64 user-space code lies below 2^47
// (higher addresses come only from explicit mmap hints, never from loading
// code), so the return address needs no mask there.
PROF_HOT uint64_t site_func(uint16_t func, void* return_address) {
  const uint64_t site = reinterpret_cast<uint64_t>(return_address);
#if defined(__x86_64__)
  return site | (uint64_t{func} << 48);
#else
  return (site & format::kSiteMask) | (uint64_t{func} << 48);
#endif
}

// The call in flight, in the thread's Live slot (trace_format.h): its facts
// before the timer read, its enter after; cleared once its record is
// committed. Up to three 64-bit stores on entry, one on return; the heartbeat
// thread and a salvaging reader see what the thread is inside.
// call_enter returns the slot for call_entered (kept in a register, not
// reloaded from ts after the stores).
//
// PROF_NO_IN_FLIGHT (CMake PROF_BENCH_NO_IN_FLIGHT, off by default, for
// bench/ only) compiles these stores out, to measure what making calls
// visible in flight costs; such a shim leaves no call in flight in a killed
// rank's trace.
#ifndef PROF_NO_IN_FLIGHT
// (`site_key`: site_func's word, which a fast wrapper has already built.)
PROF_HOT format::InFlightSlot* call_enter_keyed(ThreadState* ts, uint64_t site_key, int32_t peer,
                                                int32_t tag, uint32_t comm, uint32_t extra) {
  format::InFlightSlot* s = ts->slot;
  s->site_func = site_key;
  const uint64_t peer_tag = uint64_t{static_cast<uint32_t>(peer)} |
                            (uint64_t{static_cast<uint32_t>(tag)} << 32);
  const uint64_t comm_extra = uint64_t{comm} | (uint64_t{extra} << 32);
  std::memcpy(&s->peer, &peer_tag, 8);
  std::memcpy(&s->comm, &comm_extra, 8);
  return s;
}
PROF_HOT format::InFlightSlot* call_enter(ThreadState* ts, uint16_t func, void* return_address,
                                          int32_t peer, int32_t tag, uint32_t comm,
                                          uint32_t extra) {
  return call_enter_keyed(ts, site_func(func, return_address), peer, tag, comm, extra);
}
// Calls whose kind has no peer, communicator or request (readers look at the
// other fields by kind): the site and function alone, one store less each way.
PROF_HOT format::InFlightSlot* call_enter_plain(ThreadState* ts, uint16_t func,
                                                void* return_address) {
  format::InFlightSlot* s = ts->slot;
  s->site_func = site_func(func, return_address);
  return s;
}
// Call sites (format 7, trace_format.h kSiteShift): each record's func field
// carries its call's site index, which the rank's first sight of the site
// (return address, or the Fortran binding's, and function) assigns and
// defines (S and A lines, markers.cpp resolve_call_site). The wrapper stored
// the site in the slot on entry; the record takes its index from the
// thread's cache: one compare and a branch to the rare path on a miss, one
// load on a hit. The cache holds each site's first word (site_first_word):
// the func field (function id and site index) with, for Send and Recv
// kinds, their fixed record's size bits, so that a fast Send or Recv stores
// the loaded word as its record's first word (no OR of the function's
// constant), and for plain calls (kind Other) their 8-byte record's form,
// so that a fast plain call stores it whole too; Isend and Irecv, whose
// first word the narrow encoder decides, hold the func field alone, and the
// general paths take the word's low 16 bits, the func field. A fast
// receive, Isend or Irecv looks its site up on entry, before MPI's call,
// and keeps its first word for the return (fast_keep_site): the hop's
// critical path, a receive's return, then pays one load for it.
// What cached_site_word returns for a site the cache does not hold: a flag
// bit, which no first word of a fast record has.
inline constexpr uint32_t kSiteMiss = 0x10000;
// The first word of a call of `func` with site bits `site_bits` (index <<
// kSiteShift) as far as the function decides it: for Send and Recv kinds
// their fixed record's (format::fixed_first_word, flags 0), for plain calls
// theirs (format::fixed_plain_first_word, flags 0), for the rest their func
// field.
constexpr uint32_t site_first_word(format::FuncKind kind, uint16_t func, uint32_t site_bits) {
  static_assert(format::same_layout(format::FuncKind::Send, format::FuncKind::Recv));
  const uint16_t field = static_cast<uint16_t>(func | site_bits);
  switch (kind) {
    case format::FuncKind::Send:
    case format::FuncKind::Recv:
      return format::fixed_first_word<format::FuncKind::Send>(field, 0);
    case format::FuncKind::Other:
      return format::fixed_plain_first_word(field, 0);
    default:
      return field;
  }
}
static_assert((site_first_word(format::FuncKind::Send, format::kFuncIdMask, format::kReservedFuncIds - 1) &
               kSiteMiss) == 0);
static_assert((site_first_word(format::FuncKind::Other, format::kFuncIdMask, format::kReservedFuncIds - 1) &
               kSiteMiss) == 0);
// The cache slot of a key: the address's low byte (call sites lie bytes
// apart; a collision costs a trip to the rank's table, not a wrong site).
PROF_HOT size_t site_cache_index(uint64_t key) { return key & (ThreadState::kSiteCacheSize - 1); }
// Whether the cache holds the site and function word `key` (the slot's
// site_func): by the return address alone, so a C call pays one load and
// one compare; the Fortran binding site (slot's binding_site) is looked at
// only on a miss, or by the Fortran wrapper, which lends the entry.
PROF_HOT bool site_cache_hit(const ThreadState* ts, uint64_t key) {
  return ts->site_keys[site_cache_index(key)] == key;
}
// The first word (site_first_word) of a key site_cache_hit found.
PROF_HOT uint32_t site_cache_word(const ThreadState* ts, uint64_t key) {
  return ts->site_words[site_cache_index(key)];
}
// The first word of the call in the slot, or kSiteMiss.
PROF_HOT uint32_t cached_site_word(const ThreadState* ts) {
#ifndef PROF_NO_IN_FLIGHT
  const uint64_t key = ts->slot->site_func;
  return site_cache_hit(ts, key) ? site_cache_word(ts, key) : kSiteMiss;
#else
  (void)ts;
  return 0;  // no slot, no site
#endif
}
// A miss: the rank's table (a new site defined), and the cache filled; the
// site's first word.
[[gnu::noinline, gnu::cold]] uint32_t resolve_call_site(ThreadState* ts);
// `func` with its call's site index: the func field of its record (the
// first word's low 16 bits).
PROF_HOT uint16_t sited(ThreadState* ts, uint16_t func) {
  uint32_t word = cached_site_word(ts);
  if (__builtin_expect(word == kSiteMiss, 0)) word = resolve_call_site(ts);
  return static_cast<uint16_t>(func | word);
}

// The enter time goes last: a reader seeing it sees the facts too. (Raw
// times are counters since boot or the epoch, never 0, which means "none".)
PROF_HOT void call_entered(format::InFlightSlot* slot, uint64_t t0) {
  __atomic_store_n(&slot->enter, t0, __ATOMIC_RELEASE);
}
#else
PROF_HOT format::InFlightSlot* call_enter(ThreadState*, uint16_t, void*, int32_t, int32_t,
                                          uint32_t, uint32_t) {
  return nullptr;
}
PROF_HOT format::InFlightSlot* call_enter_plain(ThreadState*, uint16_t, void*) { return nullptr; }
PROF_HOT void call_entered(format::InFlightSlot*, uint64_t) {}
#endif
// The facts call_enter stored and the enter time, read back after the call
// (the wrapper keeps them in the slot, not in registers across MPI's call).
// Only this thread writes its slot, so these are the values it stored.
// `entered` holds the same values: what the wrapper uses when the slot
// stores are compiled out (then they stay live across the call).
struct EnteredCall {
  uint64_t t0;
  int32_t peer;
  int32_t tag;
  uint32_t comm;
};
#ifndef PROF_NO_IN_FLIGHT
PROF_HOT EnteredCall entered_call(const ThreadState* ts, const EnteredCall&) {
  const format::InFlightSlot* s = ts->slot;
  return {__atomic_load_n(&s->enter, __ATOMIC_RELAXED), s->peer, s->tag, s->comm};
}
PROF_HOT uint64_t entered_time(const ThreadState* ts, uint64_t) {
  return __atomic_load_n(&ts->slot->enter, __ATOMIC_RELAXED);
}
PROF_HOT void call_done(ThreadState* ts) { __atomic_store_n(&ts->slot->enter, 0, __ATOMIC_RELEASE); }
#else
PROF_HOT uint64_t entered_time(const ThreadState*, uint64_t t0) { return t0; }
PROF_HOT EnteredCall entered_call(const ThreadState*, const EnteredCall& entered) { return entered; }
PROF_HOT void call_done(ThreadState*) {}
#endif

// Markers.
PROF_HOT bool is_marker_tag(int tag) { return (static_cast<uint32_t>(tag) >> 24) == 0xAAu &&
                                            format::decode_marker_tag(tag).is_marker; }
void on_raw_marker(int tag, void* return_address);

// Byte counts. MPICH builtin datatypes carry their size in the handle
// (mpich_status.h); derived ones ask MPI (rare on hot paths that matter).
// Out of line and cold, so that the wrappers keep their arguments in
// argument registers across it (see attach_thread).
[[gnu::noinline, gnu::cold]] uint64_t derived_type_size(MPI_Datatype t);
PROF_HOT uint64_t type_size(MPI_Datatype t) {
  if (__builtin_expect(not_builtin_type(t) == 0, 1)) return builtin_type_size(t);
  return derived_type_size(t);
}
PROF_HOT uint64_t type_bytes(uint64_t count, MPI_Datatype t) { return count * type_size(t); }
template <class Count>
uint64_t sum_bytes(const Count* counts, MPI_Datatype t, MPI_Comm comm) {
  int n = 0;
  if (!counts || PMPI_Comm_size(comm, &n) != MPI_SUCCESS) return 0;
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += static_cast<uint64_t>(counts[i]);
  return total * type_size(t);
}
template <class Count>
uint64_t sumw_bytes(const Count* counts, const MPI_Datatype* types, MPI_Comm comm) {
  int n = 0;
  if (!counts || !types || PMPI_Comm_size(comm, &n) != MPI_SUCCESS) return 0;
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += static_cast<uint64_t>(counts[i]) * type_size(types[i]);
  return total;
}

// An empty status (MPI's definition: any source, any tag, no data), so what MPI
// leaves unfilled reads the same every time.
// The four fields are MPICH's first 16 bytes (MPI_ERROR, after them, is
// left alone): one 16-byte copy a status, as the generated wrappers are
// compiled without the SLP vectorizer that would otherwise merge the stores.
PROF_HOT void clear_statuses(MPI_Status* st, int n) {
  static_assert(offsetof(MPI_Status, count_lo) < 16 && offsetof(MPI_Status, count_hi_and_cancelled) < 16 &&
                offsetof(MPI_Status, MPI_SOURCE) < 16 && offsetof(MPI_Status, MPI_TAG) < 16 &&
                offsetof(MPI_Status, MPI_ERROR) >= 16);
  MPI_Status empty{};
  empty.MPI_SOURCE = MPI_ANY_SOURCE;
  empty.MPI_TAG = MPI_ANY_TAG;
  for (int i = 0; i < n; ++i) std::memcpy(&st[i], &empty, 16);
}

// Matched probes: Mprobe/Improbe return an MPI_Message that a later Mrecv or
// Imrecv receives; only the probe knows its communicator, source and tag.
struct MessageInfo {
  MPI_Comm comm = MPI_COMM_NULL;
  int source = MPI_PROC_NULL;
  int tag = MPI_ANY_TAG;
};
void remember_message(MPI_Message message, MPI_Comm comm, const MPI_Status* st);
MessageInfo take_message(MPI_Message message);  // forgets it

// One record under construction in the thread's chunk.
class Rec {
 public:
  __attribute__((always_inline)) Rec(ThreadState* ts, uint64_t t0, uint64_t t1, bool ok,
                                     uint8_t flags, size_t max_words)
      : ts_(ts), enc_(reserve(ts, max_words)) {
    enc_.flag(flags);
    if (!ok) enc_.flag(format::kCallFailed);
    const uint64_t dt = t0 - ts->last_enter;  // wraps when time goes back: long form
    enc_.time(dt, t1 - t0);
    ts->last_enter = t0;
  }
  format::RecordEncoder& enc() { return enc_; }
  // `may_repeat`: the kind repeats (format::kind_repeats) and the record
  // continues no call; its payload is then left out when it repeats. A
  // call's record (function id below kRepeatFuncs: not a marker) carries
  // the call's site index.
  __attribute__((always_inline)) void commit(uint16_t func, bool may_repeat) {
    const uint16_t field = func < format::kRepeatFuncs ? sited(ts_, func) : func;
    ts_->cur += may_repeat ? enc_.commit_repeating(field, ts_->repeats) : enc_.commit(field);
  }
  // Room for `words` more in the thread's chunk; where the record goes.
  __attribute__((always_inline)) static uint32_t* reserve(ThreadState* ts, size_t words) {
    if (__builtin_expect(size_t(ts->end - ts->cur) < words, 0)) next_chunk(ts, words);
    return ts->cur;
  }

 private:
  ThreadState* ts_;
  format::RecordEncoder enc_;
};

[[gnu::noinline, gnu::cold]] void record_plain_general(ThreadState* ts, uint16_t func, uint64_t t0,
                                                       uint64_t t1, bool ok);
// A call without payload: its fixed form (format::encode_fixed_plain, 8
// bytes) after one test, else the general encoder out of line.
PROF_HOT void record_plain(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok) {
  uint32_t* const at = ts->cur;
  const uint64_t dt = t0 - ts->last_enter;
  const uint64_t duration = t1 - t0;
  const bool room = at + 2 <= ts->end;
  if (__builtin_expect((((dt | duration) >> 16) == 0) & room, 1)) {
    format::encode_fixed_plain(at, sited(ts, func), ok ? 0u : uint32_t{format::kCallFailed}, dt,
                               duration);
    ts->last_enter = t0;
    ts->cur = at + 2;
    return;
  }
  record_plain_general(ts, func, t0, t1, ok);
}

// The fixed-size kinds' records: the values go in as record_schema.h lists
// each kind's fields (format::encode_fields). The words reserved per record
// are the shim's own, at least the table's worst case.
template <format::FuncKind K>
constexpr bool reserve_fits(size_t words) {
  return words >= 3 + 4 + format::fixed_payload_words(format::schema_of(K), true, true, false, false);
}

// A fixed-size record of kind K: the common case (times below 2^32, narrow
// values) by format::encode_narrow, straight-line and inlined; the
// rest by the general encoder, out of line (record_fixed_general).
template <format::FuncKind K>
[[gnu::noinline, gnu::cold]] void record_fixed_general(ThreadState* ts, uint16_t func, uint64_t t0,
                                                       uint64_t t1, bool ok, uint8_t flags,
                                                       format::RecordValues v) {
  Rec r(ts, t0, t1, ok, flags | format::wide_flags_for<K>(v), 16);
  format::encode_fields<K>(r.enc(), v, ts->cx);
  r.commit(func, format::kind_repeats(K));
}
template <format::FuncKind K>
PROF_HOT void record_narrow(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                            uint8_t flags, const format::RecordValues& v) {
  static_assert(reserve_fits<K>(16));
  uint32_t* const at = Rec::reserve(ts, 16);
  size_t words;
  static_assert(format::kind_repeats(K));
  const uint32_t field = sited(ts, func);
  if (__builtin_expect(format::encode_narrow<K>(at, func, uint8_t(flags | (ok ? 0 : format::kCallFailed)),
                                                t0 - ts->last_enter, t1 - t0, v, ts->cx, words,
                                                &ts->repeats, &field),
                       1)) {
    ts->last_enter = t0;
    ts->cur = at + words;
    return;
  }
  record_fixed_general<K>(ts, func, t0, t1, ok, flags, v);
}

// A record of kind K in its fixed layout (format::encode_fixed): one test
// (room in the chunk, the values fit the fixed fields), then unconditional
// stores; anything else by the general encoder, out of line.
template <format::FuncKind K>
PROF_HOT void record_fixed(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                           uint8_t flags, const format::RecordValues& v) {
  constexpr size_t words = format::fixed_record_words<K>;
  uint32_t* const at = ts->cur;
  const uint64_t dt = t0 - ts->last_enter;  // wraps when time goes back: general form
  const uint64_t duration = t1 - t0;
  const bool room = at + words <= ts->end;
  if (__builtin_expect((format::fixed_misfit<K>(dt, duration, v) == 0) & room, 1)) {
    format::encode_fixed<K>(at, sited(ts, func), flags | (ok ? 0u : uint32_t{format::kCallFailed}),
                            dt, duration, v, ts->cx);
    ts->last_enter = t0;
    ts->cur = at + words;
    return;
  }
  record_fixed_general<K>(ts, func, t0, t1, ok, flags, v);
}

// Send, Recv, Probe (one layout).
PROF_HOT void record_p2p(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                       format::FuncKind, int peer, int tag, MPI_Comm comm, uint64_t bytes,
                       uint8_t flags) {
  using format::FuncKind;
  static_assert(format::same_layout(FuncKind::Send, FuncKind::Recv) &&
                format::same_layout(FuncKind::Send, FuncKind::Probe));
  record_fixed<FuncKind::Send>(
      ts, func, t0, t1, ok, flags,
      format::RecordValues{.peer = peer, .tag = tag, .comm = uint32_t(comm), .bytes = bytes});
}

// Isend, Irecv (one layout).
PROF_HOT void record_p2p_start(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                             format::FuncKind, int peer, int tag, MPI_Comm comm, uint64_t bytes,
                             uint8_t flags, MPI_Request request) {
  using format::FuncKind;
  static_assert(format::same_layout(FuncKind::Isend, FuncKind::Irecv));
  record_narrow<FuncKind::Isend>(ts, func, t0, t1, ok, flags,
                                 format::RecordValues{.peer = peer,
                                                      .tag = tag,
                                                      .comm = uint32_t(comm),
                                                      .bytes = bytes,
                                                      .request = uint32_t(request)});
}

// Receive: the actual source and tag from the status (the requested ones when
// the call failed, since the status is then undefined).
PROF_HOT void record_recv(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                        int peer, int tag, MPI_Comm comm, const MPI_Status* st, uint8_t flags) {
  const int src = ok ? st->MPI_SOURCE : peer;
  const int rtag = ok ? st->MPI_TAG : tag;
  const uint64_t bytes = ok ? status_bytes(st) : 0;
  record_p2p(ts, func, t0, t1, ok, format::FuncKind::Recv, src, rtag, comm, bytes, flags);
}

PROF_HOT void record_probe(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                         int peer, int tag, MPI_Comm comm, const MPI_Status* st, int found,
                         uint8_t flags) {
  const bool got = ok && found;
  record_p2p(ts, func, t0, t1, ok, format::FuncKind::Probe, got ? st->MPI_SOURCE : peer,
             got ? st->MPI_TAG : tag, comm, got ? status_bytes(st) : 0, flags);
}

PROF_HOT void record_sendrecv(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                            int dest, int sendtag, uint64_t send_bytes, int source, int recvtag,
                            MPI_Comm comm, const MPI_Status* st) {
  using format::FuncKind;
  static_assert(reserve_fits<FuncKind::SendRecv>(20));
  const format::RecordValues v{.peer = dest,
                               .tag = sendtag,
                               .comm = uint32_t(comm),
                               .bytes = send_bytes,
                               .recv_peer = ok ? st->MPI_SOURCE : source,
                               .recv_tag = ok ? st->MPI_TAG : recvtag,
                               .recv_bytes = ok ? status_bytes(st) : 0};
  uint8_t flags = format::wide_flags_for<FuncKind::SendRecv>(v);
  if (source == MPI_ANY_SOURCE) flags |= format::kAnySource;
  if (recvtag == MPI_ANY_TAG) flags |= format::kAnyTag;
  Rec r(ts, t0, t1, ok, flags, 20);
  format::encode_fields<FuncKind::SendRecv>(r.enc(), v, ts->cx);
  r.commit(func, format::kind_repeats(FuncKind::SendRecv));
}

// Collective, AllToAll (one layout) and ICollective, IAllToAll (one layout).
PROF_HOT void record_collective(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                              format::FuncKind kind, MPI_Comm comm, int root, uint64_t bytes,
                              MPI_Request request) {
  using format::FuncKind;
  static_assert(format::same_layout(FuncKind::Collective, FuncKind::AllToAll) &&
                format::same_layout(FuncKind::ICollective, FuncKind::IAllToAll));
  const format::RecordValues v{
      .comm = uint32_t(comm), .bytes = bytes, .request = uint32_t(request), .root = root};
  if (format::kind_has_request(kind)) record_narrow<FuncKind::ICollective>(ts, func, t0, t1, ok, 0, v);
  else record_narrow<FuncKind::Collective>(ts, func, t0, t1, ok, 0, v);
}

// Completions and request operations can carry many entries: written in as
// many records as needed, the later ones flagged kContinuation.
struct CompletionEntry {
  MPI_Request request;
  const MPI_Status* status;
};
void record_completions(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                        const CompletionEntry* entries, size_t n);

inline void record_completion_one(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1,
                                  bool ok, MPI_Request req, const MPI_Status* st, int found) {
  const CompletionEntry e{req, st};
  const bool done = found && req != MPI_REQUEST_NULL;
  record_completions(ts, func, t0, t1, ok, &e, done ? 1 : 0);
}
void record_completion_all(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                           const MPI_Request* reqs, int count, const MPI_Status* statuses,
                           int found);
inline void record_completion_any(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1,
                                  bool ok, const MPI_Request* reqs, int count, int index,
                                  const MPI_Status* st, int found) {
  const bool done = found && index != MPI_UNDEFINED && index >= 0 && index < count;
  const CompletionEntry e{done ? reqs[index] : MPI_REQUEST_NULL, st};
  record_completions(ts, func, t0, t1, ok, &e, done ? 1 : 0);
}
void record_completion_some(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                            const MPI_Request* reqs, int outcount, const int* indices,
                            const MPI_Status* statuses);
void record_requests(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                     const MPI_Request* reqs, int count);

// Records the creation, then defines the new communicator (membership and a
// global id agreed by its members: collective over it, done through PMPI).
void record_comm_create(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                        MPI_Comm parent, MPI_Comm newcomm);
// MPI_Comm_idup(_with_info): a nonblocking collective on the parent, and the
// new communicator's definition (see define_idup).
void record_comm_idup(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                      MPI_Comm parent, MPI_Comm newcomm, MPI_Request request);

// ---------------------------------------------------------------------------
// Call-free fast wrappers (generate_wrappers.py, gen_fast_pair): the exported
// MPI_Send and kin, MPI_Recv, MPI_Isend and kin, MPI_Irecv, and the plain
// calls returning int.
//
// The fast wrapper's only real call is PMPI's; every rare case leaves it by
// a tail call, so its straight path keeps its values in scratch registers
// instead of saving callee-saved ones for them:
//  - on entry, anything but "recording with the bare-rdtsc timer, the thread
//    attached and not inside a wrapper, peer and tag within 16 bits (so no
//    marker tag), a builtin datatype" (for Isend and Irecv also "count and
//    bytes below 2^32"; for MPI_Recv also "room for its record") jumps to
//    the general wrapper (the full generated one, prof_general_<name>) with
//    the call's own arguments: its return address is still the
//    application's call site;
//  - after the PMPI call the thread state is read again from TLS and the
//    call's facts from the in-flight slot (stored there on entry anyway);
//    a failed call (tested before the second timer read, so the return
//    code is not live across it), times beyond the fixed record's, values
//    that do not fit it (a blocking send's count and bytes are tested
//    here), or a full chunk jump to a cold finisher (finish_*_general) that
//    writes the general record.
// In a ping-pong the hop's latency runs through a receive's return and the
// reply's entry: MPI_Send does before its call only what picks the path
// (fast_send_entry_misfit, fast_send_enter); MPI_Recv begins its record on
// entry (fast_recv_enter, fast_recv_timed) so that its return stores little.
// Invariants: the trace holds the same record the general wrapper writes
// for the call (format::encode_fixed, encode_fixed_plain); the slot
// describes the call from before the first timer read until its record is
// committed. The slot's `extra`, which readers ignore for these kinds,
// carries what the finisher needs from the entry: an Isend's or Irecv's
// byte count, a blocking receive's kAnySource/kAnyTag flags and the reasons
// its return leaves the straight path (a blocking send's count and datatype,
// and a blocking receive's first word, are in ThreadState).
// PROF_NO_IN_FLIGHT builds have no slot to carry the facts: there the
// general wrappers are the exported ones.
#ifndef PROF_NO_IN_FLIGHT
// The thread's state when the fast path may run, else null.
PROF_HOT ThreadState* fast_begin() {
  if (__builtin_expect(!g.fast, 0)) return nullptr;
  ThreadState* const ts = tls_state;  // unattached_thread is in_call
  if (__builtin_expect(ts->in_call, 0)) return nullptr;
  return ts;
}
// g.fast: the timer is a bare rdtsc.
PROF_HOT uint64_t fast_now() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return g.timer.now();
#endif
}
// The bytes of `count` elements of a builtin MPICH datatype (its size is in
// the handle); meaningless otherwise, and then fast_send_misfit is not 0.
PROF_HOT uint64_t fast_bytes(uint64_t count, MPI_Datatype t) {
  return count * builtin_type_size(t);
}
// Not 0 unless peer and tag are within int16 (a marker tag never is: its
// top byte is 0xAA, so a fast send is never a marker).
PROF_HOT uint32_t fast_peer_tag_misfit(int peer, int tag) {
  return ((static_cast<uint32_t>(peer) + 0x8000u) | (static_cast<uint32_t>(tag) + 0x8000u)) >> 16;
}
// Not 0 unless an Isend's values fit the fast path: peer and tag within
// int16, a builtin datatype (MPI_DATATYPE_NULL is not one), count and bytes
// below 2^32.
PROF_HOT uint64_t fast_send_misfit(int peer, int tag, uint64_t count, MPI_Datatype t,
                                   uint64_t bytes) {
  return fast_peer_tag_misfit(peer, tag) | not_builtin_type(t) | ((count | bytes) >> 32);
}
// Not 0 unless a blocking send may take the fast path: peer and tag within
// int16, a builtin datatype. A derived datatype is sized by asking MPI, which
// is done before the call (general wrapper): another thread may free the
// type while the send is in MPI.
PROF_HOT uint32_t fast_send_entry_misfit(int peer, int tag, MPI_Datatype t) {
  return fast_peer_tag_misfit(peer, tag) | not_builtin_type(t);
}
// A blocking send keeps its count and datatype for its return, which sizes
// the message (fast_finish_send): two stores before the call instead of the
// size's arithmetic and its fit test, which the return does off the hop's
// critical path.
PROF_HOT void fast_send_enter(ThreadState* ts, uint64_t count, MPI_Datatype t) {
  ts->send_count = count;
  ts->send_type = t;
}
// A blocking send's or receive's facts in its slot: its site and function
// word (site_func, which a receive also looks up), then peer, tag and comm as
// three 32-bit stores (fewer instructions than packing them into two 64-bit
// ones); a receive's `extra` is stored by fast_recv_enter, a send leaves it.
PROF_HOT void fast_call_facts(format::InFlightSlot* s, int32_t peer, int32_t tag, uint32_t comm) {
  s->peer = peer;
  s->tag = tag;
  s->comm = comm;
}
PROF_HOT format::InFlightSlot* fast_call_enter(ThreadState* ts, uint64_t site_key, int32_t peer,
                                               int32_t tag, uint32_t comm) {
  format::InFlightSlot* s = ts->slot;
  s->site_func = site_key;
  fast_call_facts(s, peer, tag, comm);
  return s;
}
// The site of a fast receive, Isend or Irecv, which its entry found in the
// thread's cache (a miss leaves for the general wrapper, which resolves the
// site; tested before anything else is loaded, the probe's values need no
// callee-saved register): its record's first word kept for the return in
// ThreadState::call_first. The hop's critical path, a receive's return, then
// pays one load for the site; the narrow encoder of an Isend or Irecv reads
// it after the payload's stores (format::encode_narrow's func_field): probed
// in their return, the site's word took a register across the encoder,
// which needs them all (a spill and a reload). A call that then leaves for
// the general wrapper leaves the word behind, unused.
PROF_HOT void fast_keep_site(ThreadState* ts, uint64_t site_key) {
  ts->call_first = site_cache_word(ts, site_key);
}
// A fast receive's site (fast_keep_site) and its key in the slot, the slot's
// `extra` cleared (the entry sets it only for a wildcard). A call that then
// leaves for the general wrapper leaves these stores behind, which that
// wrapper's own replace (the slot's enter is still 0: no reader takes them
// for a call).
PROF_HOT format::InFlightSlot* fast_recv_site(ThreadState* ts, uint64_t site_key) {
  format::InFlightSlot* s = ts->slot;
  s->site_func = site_key;
  s->extra = 0;
  fast_keep_site(ts, site_key);
  return s;
}
// Not 0 unless a receive's requested tag is within int16 (no marker tag).
PROF_HOT uint32_t fast_tag_misfit(int tag) { return (static_cast<uint32_t>(tag) + 0x8000u) >> 16; }
// Whether the chunk has room for a blocking receive's fixed record, which
// fast_recv_enter begins before the call (a separate branch from the tag's
// test: folded into one value, the two took a callee-saved register).
PROF_HOT bool fast_recv_room(const ThreadState* ts) {
  constexpr size_t words = format::fixed_record_words<format::FuncKind::Recv>;
  return ts->cur + words <= ts->end;
}
// A receive's kAnySource and kAnyTag. MPI's wildcards are negative (MPICH:
// -2, -1), so a receive naming its peer and tag pays one test.
PROF_HOT uint32_t recv_flags(int peer, int tag) {
  static_assert(MPI_ANY_SOURCE < 0 && MPI_ANY_TAG < 0);
  if (__builtin_expect((peer | tag) >= 0, 1)) return 0;
  return (peer == MPI_ANY_SOURCE ? uint32_t{format::kAnySource} : 0u) |
         (tag == MPI_ANY_TAG ? uint32_t{format::kAnyTag} : 0u);
}
// The call is entered: nested calls take the general path from here on.
PROF_HOT void fast_enter(ThreadState* ts) { ts->in_call = true; }

// A fast blocking receive's slot `extra` (the shim's own; readers ignore it
// for Recv): 0 on the straight path; else its kAnySource/kAnyTag flags << 16
// and the reasons its return leaves that path:
//  - kRecvReadsStatus: the call used a wildcard or MPI_PROC_NULL (whose
//    status's MPI_ANY_TAG is read), so source and tag come from the status;
//    with named ones they are the call's;
//  - kRecvLongGap: the gap from the previous record's enter does not fit the
//    fixed record (fast_recv_timed).
// (A site the thread's cache does not hold never gets here: the entry hands
// such a call to the general wrapper, fast_keep_site.)
inline constexpr uint32_t kRecvReadsStatus = 1;
inline constexpr uint32_t kRecvLongGap = 2;
PROF_HOT uint32_t recv_reads_status(int peer, int tag) {
  return (recv_flags(peer, tag) << 16) | kRecvReadsStatus;
}
// format::pack_peer_tag's word for peer and tag within int16, stored as its
// two halves: two stores, no register to build the word in.
PROF_HOT void store_peer_tag(format::FixedP2PRecord* r, int32_t peer, int32_t tag) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
  const uint16_t peer16 = static_cast<uint16_t>(peer), tag16 = static_cast<uint16_t>(tag);
  std::memcpy(reinterpret_cast<char*>(&r->peer_tag), &peer16, 2);
  std::memcpy(reinterpret_cast<char*>(&r->peer_tag) + 2, &tag16, 2);
}
// A fast receive's entry, after fast_recv_site and fast_call_facts: the
// words of its fixed record known before the call (comm; peer and tag when
// named) stored in the chunk at the write pointer (fast_recv_room found
// room), where its return completes the record.
// Until the first word is stored, the chunk still ends at the write pointer:
// nothing else writes this thread's chunk while in_call is set, and readers
// stop at a zero first word. The comm becomes
// the chunk's context here (encode_fixed's rule); the cold finisher, whose
// general record must not rely on it, unsets it.
PROF_HOT void fast_recv_enter(ThreadState* ts, format::InFlightSlot* slot, int peer, int tag,
                              uint32_t comm) {
  auto* const r = reinterpret_cast<format::FixedP2PRecord*>(ts->cur);
  r->comm = comm;
  // The chunk's context by its two 32-bit halves: the argument's
  // zero-extension to the context's 64 bits took a register of its own.
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
  const uint32_t high = 0;
  std::memcpy(reinterpret_cast<char*>(&ts->cx.comm), &comm, 4);
  std::memcpy(reinterpret_cast<char*>(&ts->cx.comm) + 4, &high, 4);
  if (__builtin_expect((peer | tag) >= 0, 1))
    store_peer_tag(r, peer, tag);
  else
    slot->extra = recv_reads_status(peer, tag);
}
// After the first timer read, the record's gap from the previous record's
// enter, also known before the call, stored; a gap that does not fit sends
// the return to the rare path. (The enter base moves with the commit.)
PROF_HOT void fast_recv_timed(ThreadState* ts, format::InFlightSlot* slot, uint64_t t0) {
  const uint64_t dt = t0 - ts->last_enter;  // wraps when time goes back: general form
  reinterpret_cast<format::FixedP2PRecord*>(ts->cur)->dt_enter = static_cast<uint32_t>(dt);
  if (__builtin_expect((dt >> 32) != 0, 0)) slot->extra |= kRecvLongGap;
}

// The returns the fast path does not serve. The fast entries and finishers
// may have stored a record's words after its first (never the first) before
// finding that it does not fit: these clear them before writing the general
// record, so that no stale word follows it.
[[gnu::noinline, gnu::cold]] int finish_send_general(uint16_t func, int rc, uint64_t t1);
// A failed fast receive: its leave time read there, a few instructions
// later than the wrapper would, so that the return code need not leave
// %eax for the timer read on the straight path.
[[gnu::noinline, gnu::cold]] int finish_recv_failed(uint16_t func, int rc, const MPI_Status* st);
[[gnu::noinline, gnu::cold]] int finish_recv_general(uint16_t func, int rc, uint64_t t1,
                                                     const MPI_Status* st);
[[gnu::noinline, gnu::cold]] int finish_plain_general(uint16_t func, int rc, uint64_t t1);
// Isend and Irecv (K): the byte count from the slot's `extra`, the request
// from the application's handle.
template <format::FuncKind K>
[[gnu::noinline, gnu::cold]] int finish_start_general(uint16_t func, int rc, uint64_t t1,
                                                      const MPI_Request* request);

// The record committed, the slot cleared, the guard off.
PROF_HOT void fast_commit(ThreadState* ts, format::InFlightSlot* slot, uint32_t* at,
                          uint32_t first, size_t words, uint64_t t0) {
  __atomic_store_n(at, first, __ATOMIC_RELEASE);
  ts->last_enter = t0;
  ts->cur = at + words;
  __atomic_store_n(&slot->enter, 0, __ATOMIC_RELEASE);
  ts->in_call = false;
}

// A send's or a receive's return, into its fixed record (trace_format.h,
// FixedP2PRecord): the room tested first, then each word stored as soon as
// it is known and its fit folded into one test at the end, so that few
// values are live at once (they fit the scratch registers).
PROF_HOT int fast_finish_send(uint16_t func, int rc) {
  if (__builtin_expect(rc != MPI_SUCCESS, 0)) return finish_send_general(func, rc, fast_now());
  const uint64_t t1 = fast_now();
  using format::FuncKind;
  constexpr size_t words = format::fixed_record_words<FuncKind::Send>;
  ThreadState* const ts = tls_state;
  uint32_t* const at = ts->cur;
  if (__builtin_expect(at + words > ts->end, 0)) return finish_send_general(func, rc, t1);
  format::InFlightSlot* const slot = ts->slot;
  auto* const r = reinterpret_cast<format::FixedP2PRecord*>(at);
  const uint64_t t0 = __atomic_load_n(&slot->enter, __ATOMIC_RELAXED);
  const uint64_t dt = t0 - ts->last_enter;  // wraps when time goes back: general form
  const uint64_t duration = t1 - t0;
  r->dt_enter = static_cast<uint32_t>(dt);
  r->duration = static_cast<uint32_t>(duration);
  const uint64_t time_misfit = dt | duration;
  // Peer and tag were tested on entry (fast_peer_tag_misfit).
  store_peer_tag(r, slot->peer, slot->tag);
  // The comm becomes the chunk's context at once, so that no register
  // holds it to the end (the finisher unsets it); read zero-extended, the
  // context's width.
  const uint64_t comm = slot->comm;
  r->comm = static_cast<uint32_t>(comm);
  ts->cx.comm = comm;
  // The count needs no test of its own: a call that succeeded sent
  // count * size bytes, which cannot wrap 64 bits.
  const uint64_t bytes = fast_bytes(ts->send_count, ts->send_type);
  r->bytes = static_cast<uint32_t>(bytes);
  if (__builtin_expect(((time_misfit | bytes) >> 32) != 0, 0))
    return finish_send_general(func, rc, t1);
  // The site last, by its own branch: the values above are dead by then.
  const uint64_t key = slot->site_func;
  if (__builtin_expect(!site_cache_hit(ts, key), 0))
    return finish_send_general(func, rc, t1);  // a missed site resolved there
  const uint32_t first = site_cache_word(ts, key);  // fixed_first_word<Send>(func | site bits, 0)
  fast_commit(ts, slot, at, first, words, t0);
  return 0;
}

// A receive's return: the record begun by fast_recv_enter and
// fast_recv_timed completed with the duration and the byte count from the
// status (and source and tag from it when the call used a wildcard or
// MPI_PROC_NULL), the fit folded into one test.
// The status is the application's or the thread's ignored_status, never in
// the wrapper's frame: the rare paths stay tail calls.
PROF_HOT int fast_finish_recv(uint16_t func, int rc, const MPI_Status* st) {
  if (__builtin_expect(rc != MPI_SUCCESS, 0)) return finish_recv_failed(func, rc, st);
  const uint64_t t1 = fast_now();
  using format::FuncKind;
  static_assert(format::same_layout(FuncKind::Send, FuncKind::Recv));
  constexpr size_t words = format::fixed_record_words<FuncKind::Recv>;
  ThreadState* const ts = tls_state;
  uint32_t* const at = ts->cur;
  format::InFlightSlot* const slot = ts->slot;
  auto* const r = reinterpret_cast<format::FixedP2PRecord*>(at);
  const uint64_t t0 = __atomic_load_n(&slot->enter, __ATOMIC_RELAXED);
  const uint64_t duration = t1 - t0;
  r->duration = static_cast<uint32_t>(duration);
  // The byte count's bits above 32 (mpich_status.h's count_hi) must be 0.
  uint64_t misfit = (duration >> 32) | (static_cast<uint32_t>(st->count_hi_and_cancelled) >> 1);
  r->bytes = static_cast<uint32_t>(st->count_lo);
  // One test for the common case: the values fit, the gap fit, the site was
  // in the cache and the call named its source and tag (the record's first
  // word is then the one its entry prepared).
  const uint32_t extra = slot->extra;
  if (__builtin_expect((misfit | extra) == 0, 1)) {
    fast_commit(ts, slot, at, ts->call_first, words, t0);
    return 0;
  }
  if (extra & kRecvReadsStatus) {
    const int source = st->MPI_SOURCE;
    const int tag = st->MPI_TAG;
    misfit |= ((static_cast<uint32_t>(source) + 0x8000u) | (static_cast<uint32_t>(tag) + 0x8000u)) >> 16;
    r->peer_tag = format::pack_peer_tag(source, tag);
  }
  if ((misfit | (extra & kRecvLongGap)) != 0) return finish_recv_general(func, rc, t1, st);
  fast_commit(ts, slot, at, ts->call_first | ((extra >> 16) << 16), words, t0);
  return 0;
}

// An Isend's or Irecv's return (K): the narrow record (format::encode_narrow:
// the short header and the chunk's communicator and request context, as the
// general wrapper writes it), which stores nothing when it does not fit.
template <format::FuncKind K>
PROF_HOT int fast_finish_start(uint16_t func, int rc, const MPI_Request* request) {
  if (__builtin_expect(rc != MPI_SUCCESS, 0))
    return finish_start_general<K>(func, rc, fast_now(), request);
  const uint64_t t1 = fast_now();
  ThreadState* const ts = tls_state;
  uint32_t* const at = ts->cur;
  if (__builtin_expect(at + 16 > ts->end, 0)) return finish_start_general<K>(func, rc, t1, request);
  static_assert(reserve_fits<K>(16));
  format::InFlightSlot* const slot = ts->slot;
  const uint64_t t0 = __atomic_load_n(&slot->enter, __ATOMIC_RELAXED);
  const int peer = slot->peer;
  const int tag = slot->tag;
  const uint32_t flags = K == format::FuncKind::Irecv ? recv_flags(peer, tag) : 0u;
  size_t words;
  // The func field (func | site bits: fast_keep_site) read by the encoder
  // last; the constant func keys the repeat table.
  if (__builtin_expect(!format::encode_narrow<K>(
                           at, func, static_cast<uint8_t>(flags), t0 - ts->last_enter, t1 - t0,
                           format::RecordValues{.peer = peer, .tag = tag, .comm = slot->comm,
                                                .bytes = slot->extra,
                                                .request = static_cast<uint32_t>(*request)},
                           ts->cx, words, &ts->repeats, &ts->call_first),
                       0))
    return finish_start_general<K>(func, rc, t1, request);
  ts->last_enter = t0;
  ts->cur = at + words;
  __atomic_store_n(&slot->enter, 0, __ATOMIC_RELEASE);
  ts->in_call = false;
  return 0;
}

// A plain call's return: its 8-byte record (format::encode_fixed_plain's).
PROF_HOT int fast_finish_plain(uint16_t func, int rc) {
  if (__builtin_expect(rc != MPI_SUCCESS, 0)) return finish_plain_general(func, rc, fast_now());
  const uint64_t t1 = fast_now();
  ThreadState* const ts = tls_state;
  uint32_t* const at = ts->cur;
  format::InFlightSlot* const slot = ts->slot;
  // The site first, by its own branch: folded into the test below, the
  // hit's flag would take a callee-saved register.
  const uint64_t key = slot->site_func;
  if (__builtin_expect(!site_cache_hit(ts, key), 0))
    return finish_plain_general(func, rc, t1);  // a missed site resolved there
  const uint64_t t0 = __atomic_load_n(&slot->enter, __ATOMIC_RELAXED);
  const uint64_t dt = t0 - ts->last_enter;
  const uint64_t duration = t1 - t0;
  const bool room = at + 2 <= ts->end;
  if (__builtin_expect((((dt | duration) >> 16) == 0) & room, 1)) {
    // The cached word is the record's first (fixed_plain_first_word).
    format::encode_fixed_plain_word(at, site_cache_word(ts, key), dt, duration);
    ts->last_enter = t0;
    ts->cur = at + 2;
    __atomic_store_n(&slot->enter, 0, __ATOMIC_RELEASE);
    ts->in_call = false;
    return 0;
  }
  return finish_plain_general(func, rc, t1);
}
#endif

}  // namespace prof::shim
