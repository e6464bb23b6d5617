// The records too large or too rare for the inline hot path (runtime.h):
// completions of many requests, request arrays, communicator creation, the
// general (wide) finish of the fast send and receive wrappers, and the
// facts an MPI_Message carries from its probe to its receive.
//
// Invariant: as on the hot path, a record is stored whole or not at all
// (Rec::commit stores its first word last).
#include "runtime_internal.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "prof/bcast/segment.h"
#include "prof/bcast/shm.h"
#include "prof/definition_lines.h"
#include "prof/settings.h"
#include "run_facts.h"
#include "trace_file.h"

namespace prof::shim {

void record_plain_general(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok) {
  Rec r(ts, t0, t1, ok, 0, 8);
  r.commit(func, false);  // no payload
}

#ifndef PROF_NO_IN_FLIGHT
// The fast wrappers' returns that their fixed record does not serve: the
// records the general wrappers write, from the facts the entry left in the
// slot.
namespace {
// What a fast finisher may have stored after the write pointer (runtime.h).
void clear_fixed_words(ThreadState* ts) {
  constexpr size_t words = format::fixed_record_words<format::FuncKind::Send>;
  if (ts->cur + words <= ts->end) std::memset(ts->cur, 0, words * 4);
}
}  // namespace

int finish_send_general(uint16_t func, int rc, uint64_t t1) {
  ThreadState* const ts = tls_state;
  clear_fixed_words(ts);
  // fast_finish_send may have made this call's comm the chunk's context
  // before any record carried it.
  ts->cx.comm = format::ChunkContext::kNoComm;
  const format::InFlightSlot* const slot = ts->slot;
  record_p2p(ts, func, slot->enter, t1, rc == MPI_SUCCESS, format::FuncKind::Send, slot->peer,
             slot->tag, static_cast<MPI_Comm>(slot->comm), fast_bytes(ts->send_count, ts->send_type),
             0);
  call_done(ts);
  call_end(ts);
  return rc;
}

int finish_recv_failed(uint16_t func, int rc, const MPI_Status* st) {
  return finish_recv_general(func, rc, fast_now(), st);
}

int finish_recv_general(uint16_t func, int rc, uint64_t t1, const MPI_Status* st) {
  ThreadState* const ts = tls_state;
  clear_fixed_words(ts);
  // fast_recv_enter made this call's comm the chunk's context before any
  // record carried it.
  ts->cx.comm = format::ChunkContext::kNoComm;
  const format::InFlightSlot* const slot = ts->slot;
  record_recv(ts, func, slot->enter, t1, rc == MPI_SUCCESS, slot->peer, slot->tag,
              static_cast<MPI_Comm>(slot->comm), st, static_cast<uint8_t>(slot->extra >> 16));
  call_done(ts);
  call_end(ts);
  return rc;
}

template <format::FuncKind K>
int finish_start_general(uint16_t func, int rc, uint64_t t1, const MPI_Request* request) {
  ThreadState* const ts = tls_state;
  const format::InFlightSlot* const slot = ts->slot;
  const uint32_t flags = K == format::FuncKind::Irecv ? recv_flags(slot->peer, slot->tag) : 0u;
  record_p2p_start(ts, func, slot->enter, t1, rc == MPI_SUCCESS, K, slot->peer, slot->tag,
                   static_cast<MPI_Comm>(slot->comm), slot->extra, static_cast<uint8_t>(flags),
                   *request);
  call_done(ts);
  call_end(ts);
  return rc;
}
template int finish_start_general<format::FuncKind::Isend>(uint16_t, int, uint64_t,
                                                           const MPI_Request*);
template int finish_start_general<format::FuncKind::Irecv>(uint16_t, int, uint64_t,
                                                           const MPI_Request*);

int finish_plain_general(uint16_t func, int rc, uint64_t t1) {
  ThreadState* const ts = tls_state;
  record_plain(ts, func, ts->slot->enter, t1, rc == MPI_SUCCESS);
  call_done(ts);
  call_end(ts);
  return rc;
}
#endif

namespace {
// Bytes a narrow Completion entry can hold: its top bit is the cancel flag.
constexpr uint64_t kNarrowEntryBytes = format::kCancelledBit32 - 1;

// The common completion in one pass: at most 32 entries whose statuses all fit
// the narrow form (16-bit peer and tag, under 2 GiB), so one record. Builds the
// payload on the stack, since an entry found wide sends the call to the general
// path, which sizes every entry first. Returns false then, having written nothing.
// entry(i) gives the i-th of n entries (no more than kMaxCompletionEntries).
template <class EntryAt>
__attribute__((always_inline)) inline bool record_narrow_completions(
    ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok, size_t n, EntryAt entry) {
  uint32_t payload[1 + 3 * format::kMaxCompletionEntries];
  size_t words = 1;  // payload[0]: the bitmap of entries with a status
  uint32_t bitmap = 0;
  for (size_t i = 0; i < n; ++i) {
    const CompletionEntry e = entry(i);
    payload[words++] = uint32_t(e.request);
    if (!ok) continue;  // a failed call's statuses are undefined: none recorded
    const MPI_Status* st = e.status;
    const uint64_t bytes = status_bytes(st);
    const bool cancelled = status_cancelled(st);
    // Left as clear_statuses made it (a send's completion): no status.
    if (st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && bytes == 0 && !cancelled)
      continue;
    if (!format::fits_packed_peer_tag(st->MPI_SOURCE, st->MPI_TAG) || bytes > kNarrowEntryBytes)
      return false;
    bitmap |= 1u << i;
    payload[words++] = format::pack_peer_tag(st->MPI_SOURCE, st->MPI_TAG);
    payload[words++] = uint32_t(bytes) | (cancelled ? uint32_t(format::kCancelledBit32) : 0u);
  }
  payload[0] = bitmap;
  Rec r(ts, t0, t1, ok, 0, 3 + 4 + words);
  format::RecordEncoder& enc = r.enc();
  // Nothing completed: no payload at all. A payload that repeats the
  // function's last (format::kRepeatPayload) is compared here, before it is
  // copied into the chunk, and then not copied.
  if (n > 0 && func < format::kRepeatFuncs) {
    const int k = (enc.flags() & format::kLongTime)
                      ? -1
                      : ts->repeats.find(func, payload, uint32_t(words), 0);
    if (k >= 0) {
      enc.flag(uint8_t(format::repeat_flags(0, k)));
    } else {
      uint32_t* const at = enc.payload();
      for (size_t w = 0; w < words; ++w) enc.word(payload[w]);
      ts->repeats.note(func, at, uint32_t(words), enc.flags());
    }
  } else if (n > 0) {
    for (size_t k = 0; k < words; ++k) enc.word(payload[k]);
  }
  r.commit(func, false);  // repeats decided above
  return true;
}
}  // namespace

void record_completions(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                        const CompletionEntry* entries, size_t n) {
  if (n <= format::kMaxCompletionEntries &&
      record_narrow_completions(ts, func, t0, t1, ok, n, [entries](size_t i) { return entries[i]; }))
    return;
  uint8_t wide = 0;
  std::vector<uint64_t> bytes_scratch;  // only for very large calls
  uint64_t small[16];
  uint64_t* bytes = small;
  if (n > 16) {
    bytes_scratch.resize(n);
    bytes = bytes_scratch.data();
  }
  // bytes[i]: count (cancelled in the top bit), or kNoStatus when the status is
  // as clear_statuses left it (send completions, failed calls): no PeerTag/Bytes.
  constexpr uint64_t kNoStatus = ~uint64_t{0};
  for (size_t i = 0; i < n; ++i) {
    const MPI_Status* st = entries[i].status;
    if (!ok) {
      bytes[i] = kNoStatus;
      continue;
    }
    bytes[i] = status_bytes(st);
    if (status_cancelled(st)) bytes[i] |= format::kCancelledBit64;
    if (st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && bytes[i] == 0) {
      bytes[i] = kNoStatus;
      continue;
    }
    if (!format::fits_packed_peer_tag(st->MPI_SOURCE, st->MPI_TAG)) wide |= format::kWidePeerTag;
    if ((bytes[i] & ~format::kCancelledBit64) > kNarrowEntryBytes) wide |= format::kWideBytes;
  }
  // The cancelled bit moves to bit 31 in narrow form.
  const size_t status_words = ((wide & format::kWidePeerTag) ? 2 : 1) +
                              ((wide & format::kWideBytes) ? 2 : 1);
  size_t i = 0;
  bool first = true;
  do {
    // Entries that fit: 32 at most; room kept for the bitmap and long time words.
    size_t take = 0, words = 1;
    while (i + take < n && take < format::kMaxCompletionEntries) {
      const size_t ew = 1 + (bytes[i + take] == kNoStatus ? 0 : status_words);
      if (words + ew > format::kMaxPayloadWords - 4) break;
      words += ew;
      ++take;
    }
    Rec r(ts, first ? t0 : ts->last_enter, first ? t1 : ts->last_enter + (t1 - t0), ok,
          uint8_t(wide | (first ? 0 : format::kContinuation)), 3 + 4 + words);
    if (take > 0) {
      uint32_t bitmap = 0;
      for (size_t k = 0; k < take; ++k)
        if (bytes[i + k] != kNoStatus) bitmap |= 1u << k;
      r.enc().word(bitmap);
    }
    for (size_t k = i; k < i + take; ++k) {
      r.enc().word(uint32_t(entries[k].request));
      if (bytes[k] == kNoStatus) continue;
      const MPI_Status* st = entries[k].status;
      r.enc().peer_tag(st->MPI_SOURCE, st->MPI_TAG);
      const bool cancelled = bytes[k] & format::kCancelledBit64;
      const uint64_t b = bytes[k] & ~format::kCancelledBit64;
      if (wide & format::kWideBytes) r.enc().put64(b | (cancelled ? format::kCancelledBit64 : 0));
      else r.enc().word(uint32_t(b) | (cancelled ? uint32_t(format::kCancelledBit32) : 0u));
    }
    r.commit(func, first);
    i += take;
    first = false;
  } while (i < n);
}

namespace {
// Completed-request entries: on the stack up to 16, on the heap beyond (only
// calls completing many requests at once pay an allocation).
class EntryBuffer {
 public:
  explicit EntryBuffer(int n) {
    if (n > 16) big_.resize(size_t(n));
  }
  CompletionEntry* data() { return big_.empty() ? small_ : big_.data(); }

 private:
  CompletionEntry small_[16];
  std::vector<CompletionEntry> big_;
};
}  // namespace

void record_completion_all(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                           const MPI_Request* reqs, int count, const MPI_Status* statuses,
                           int found) {
  // Every request completed (MPI_Waitall, a successful MPI_Testall) and none
  // was null: the entries are the arrays themselves, no list built.
  if (found && count > 0 && size_t(count) <= format::kMaxCompletionEntries) {
    bool any_null = false;
    for (int i = 0; i < count; ++i) any_null |= reqs[i] == MPI_REQUEST_NULL;
    if (!any_null && record_narrow_completions(ts, func, t0, t1, ok, size_t(count), [&](size_t i) {
          return CompletionEntry{reqs[i], &statuses[i]};
        }))
      return;
  }
  EntryBuffer buffer(count);
  CompletionEntry* e = buffer.data();
  size_t n = 0;
  if (found)
    for (int i = 0; i < count; ++i)
      if (reqs[i] != MPI_REQUEST_NULL) e[n++] = {reqs[i], &statuses[i]};
  record_completions(ts, func, t0, t1, ok, e, n);
}

void record_completion_some(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                            const MPI_Request* reqs, int outcount, const int* indices,
                            const MPI_Status* statuses) {
  EntryBuffer buffer(outcount);
  CompletionEntry* e = buffer.data();
  size_t n = 0;
  if (outcount != MPI_UNDEFINED)
    for (int j = 0; j < outcount; ++j) e[n++] = {reqs[indices[j]], &statuses[j]};
  record_completions(ts, func, t0, t1, ok, e, n);
}

void record_requests(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                     const MPI_Request* reqs, int count) {
  const size_t per_record = format::kMaxPayloadWords - 4;
  size_t i = 0, n = count > 0 ? size_t(count) : 0;
  bool first = true;
  do {
    const size_t take = std::min(n - i, per_record);
    Rec r(ts, first ? t0 : ts->last_enter, first ? t1 : ts->last_enter + (t1 - t0), ok,
          first ? 0 : format::kContinuation, 3 + 4 + take);
    for (size_t k = i; k < i + take; ++k) r.enc().word(uint32_t(reqs[k]));
    r.commit(func, first);
    i += take;
    first = false;
  } while (i < n);
}

void record_comm_create(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                        MPI_Comm parent, MPI_Comm newcomm) {
  {
    static_assert(reserve_fits<format::FuncKind::CommCreate>(12));
    const format::RecordValues v{.comm = uint32_t(parent),
                                 .new_comm = uint32_t(ok ? newcomm : MPI_COMM_NULL)};
    Rec r(ts, t0, t1, ok, 0, 12);
    format::encode_fields<format::FuncKind::CommCreate>(r.enc(), v, ts->cx);
    r.commit(func, format::kind_repeats(format::FuncKind::CommCreate));
  }
  if (ok && newcomm != MPI_COMM_NULL) define_comm(newcomm, t0);
}

void record_comm_idup(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                      MPI_Comm parent, MPI_Comm newcomm, MPI_Request request) {
  record_collective(ts, func, t0, t1, ok, format::FuncKind::ICollective, parent, -1, 0, request);
  if (ok && newcomm != MPI_COMM_NULL) define_idup(parent, newcomm, t0);
}

namespace {
std::mutex messages_mu;
std::unordered_map<uint32_t, MessageInfo> messages;  // MPI_Message handle -> its probe's facts
}  // namespace

void remember_message(MPI_Message message, MPI_Comm comm, const MPI_Status* st) {
  if (message == MPI_MESSAGE_NULL || message == MPI_MESSAGE_NO_PROC) return;
  std::lock_guard<std::mutex> lock(messages_mu);
  messages[uint32_t(message)] = MessageInfo{comm, st->MPI_SOURCE, st->MPI_TAG};
}

MessageInfo take_message(MPI_Message message) {
  // A receive from MPI_PROC_NULL. The message names no communicator; record it
  // on MPI_COMM_SELF, which every rank defines, so readers can resolve it.
  if (message == MPI_MESSAGE_NO_PROC) return MessageInfo{MPI_COMM_SELF, MPI_PROC_NULL, MPI_ANY_TAG};
  std::lock_guard<std::mutex> lock(messages_mu);
  auto it = messages.find(uint32_t(message));
  if (it == messages.end()) return MessageInfo{};
  const MessageInfo info = it->second;
  messages.erase(it);
  return info;
}

}  // namespace prof::shim
