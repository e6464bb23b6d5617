// Threads and chunks: each thread's event stream is a run of chunks mapped
// from the trace file (64 KiB first, doubling up to PROF_BUFFER_MB); a full
// chunk is sealed and unmapped, or, at full size, kept as the thread's home
// and copied out (docs/design/shim-hot-path.md, "Home chunks"). A chunk's pages
// are populated ahead of the stores. When the file cannot grow, records go to
// a per-thread discard buffer and are counted.
//
// Invariants: only the owning thread writes its chunk; sealing from another
// thread (the end of the run) happens under threads_mu, taken with try_lock
// on the way out so a signal handler never blocks; everything here that the
// end paths call is async-signal-safe.
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

// ---------------------------------------------------------------------------
// Threads and chunks.
void seal_thread(ThreadState* ts) {
  if (!ts->chunk) return;
  const size_t used = size_t(reinterpret_cast<char*>(ts->cur) -
                             reinterpret_cast<char*>(ts->chunk + 1));
  TraceFile::seal(ts->chunk, used);
}

// Where records go when the trace cannot grow (disk full): discarded, so the
// application never notices, and counted each time the buffer fills.
constexpr size_t kDiscardWords = format::kMaxRecordWords * 8;
__thread uint32_t discard_buffer[kDiscardWords];

// Counts the records a thread stored in its discard buffer since the last
// count and empties it. Async-signal-safe.
void count_discarded(ThreadState* ts) {
  if (ts->chunk || !ts->end || !ts->cur) return;
  uint32_t* const begin = ts->end - kDiscardWords;
  uint64_t n = 0;
  for (const uint32_t* p = begin; p < ts->cur && *p != 0; p += format::record_words(*p)) ++n;
  if (n) rt->records_lost.fetch_add(n);
  ts->cur = begin;
}

void seal_all_threads() {
  // Called on the way out, possibly from a signal handler: no lock taken if
  // another thread holds it (the chunks stay salvageable unsealed).
  std::unique_lock<std::mutex> lock(rt->threads_mu, std::try_to_lock);
  if (!lock.owns_lock()) return;
  for (ThreadState* ts : rt->threads) {
    seal_thread(ts);
    count_discarded(ts);
  }
}

constexpr size_t kFirstChunkBytes = 64 * 1024;
constexpr size_t kPageBytes = 4096;

// A chunk's pages are faulted in writable ahead of the thread's stores
// (TraceFile::populate), from the chunk's start up to room for `words` more,
// at least doubling what is populated each time: no first-store page fault on
// the hot path, a few calls per chunk, and the unused tail of a chunk stays
// untouched (no dirty pages to write back or to cut from the file at the
// end). false when the chunk cannot hold `words` more.
bool populate_ahead(ThreadState* ts, size_t words) {
  char* const base = reinterpret_cast<char*>(ts->chunk);
  const size_t populated = size_t(reinterpret_cast<char*>(ts->end) - base);
  const size_t needed = size_t(reinterpret_cast<char*>(ts->cur + words) - base);
  if (needed > ts->chunk_map_bytes) return false;
  const size_t to = std::min(ts->chunk_map_bytes,
                             std::max(populated * 2, (needed + kPageBytes - 1) & ~(kPageBytes - 1)));
  TraceFile::populate(base + populated, to - populated);
  ts->end = reinterpret_cast<uint32_t*>(base + to);
  return true;
}

// Where a chunk's records start: after the thread's open intervals (format
// 3), so a reader can start decoding there.
void start_records(ThreadState* ts, format::ChunkHeader* h) {
  ts->cx.reset();  // a chunk decodes on its own
  ts->repeats.reset();
  ts->cur = reinterpret_cast<uint32_t*>(h + 1);
  ts->cur += format::encode_snapshot(ts->cur, ts->open_intervals);
}

// The thread's Live slot counts the chunks its stream opened (format 8), so
// that a reader tells a file that lost its last ones; stored after the chunk's
// header, once per chunk. Threads without a Live slot store into their
// private one, which no reader sees. Async-signal-safe.
void count_chunk_opened(ThreadState* ts) {
  ++ts->chunks_opened;
  if (ts->slot)
    __atomic_store_n(&reinterpret_cast<format::LiveSlot*>(ts->slot)->chunks, ts->chunks_opened,
                     __ATOMIC_RELEASE);
}

void map_first_or_next(ThreadState* ts) {
  const size_t bytes = std::min<size_t>(
      ts->next_chunk_bytes ? ts->next_chunk_bytes : kFirstChunkBytes, rt->cfg.buffer_bytes);
  // At full size a thread with a Live slot keeps this chunk as its home.
  const bool home = bytes == rt->cfg.buffer_bytes && ts->home_copy;
  format::ChunkHeader* h = rt->file.map_event_chunk(
      bytes, static_cast<uint16_t>(ts->stream), static_cast<uint16_t>(ts->chunks_opened),
      ts->last_enter, home ? format::kChunkHome : 0);
  if (!h) {
    ts->cx.reset();
    ts->repeats.reset();
    tell_loss("grow");
    ts->chunk = nullptr;
    ts->cur = discard_buffer;
    ts->end = discard_buffer + kDiscardWords;
    return;
  }
  count_chunk_opened(ts);
  ts->chunk = h;
  ts->chunk_map_bytes = bytes;
  ts->next_chunk_bytes = std::min<size_t>(bytes * 2, rt->cfg.buffer_bytes);
  ts->end = reinterpret_cast<uint32_t*>(h);  // nothing populated yet
  start_records(ts, h);
  // No room for a record after the snapshot: the next record opens a new chunk.
  if (!populate_ahead(ts, format::kMaxRecordWords)) ts->end = ts->cur;
}

// A thread that ends gives its chunk back (sealed, unmapped): threads that come
// and go do not each hold a mapping until MPI_Finalize.
pthread_key_t thread_exit_key;

void on_thread_exit(void* p) {
  auto* ts = static_cast<ThreadState*>(p);
  if (rt->forked_child) return;  // the parent's chunks: not ours to seal
  std::lock_guard<std::mutex> lock(rt->threads_mu);
  count_discarded(ts);
  if (ts->chunk) {
    seal_thread(ts);
    rt->file.release_tail(ts->chunk);
    TraceFile::unmap(ts->chunk, ts->chunk_map_bytes);
    ts->chunk = nullptr;
  }
  ts->cur = ts->end = nullptr;
  if (tls_state == ts) tls_state = &unattached_thread;
}

// Threads beyond the Live chunk's slots (and every thread when the file has
// none) write their in-flight facts here, unseen: a whole stride, since the
// Fortran wrappers store beside the slot (format::LiveSlot, binding_site.h).
__thread format::LiveSlot private_slot;

void register_thread(ThreadState* ts) {
  ts->slot = rt->file.live_slot(ts->stream);
  if (ts->slot)
    ts->home_copy = &reinterpret_cast<format::LiveSlot*>(ts->slot)->home_copy;
  else
    ts->slot = &private_slot.slot;
  // (The first chunk was opened before the thread had its slot.)
  __atomic_store_n(&reinterpret_cast<format::LiveSlot*>(ts->slot)->chunks, ts->chunks_opened,
                   __ATOMIC_RELEASE);
  {
    std::lock_guard<std::mutex> lock(rt->threads_mu);
    rt->threads.push_back(ts);
  }
  tls_state = ts;
  pthread_setspecific(thread_exit_key, ts);
}

void write_end(const char* reason) {
  if (!rt || rt->ended.exchange(true)) return;
  // The last moment the rank is known alive: now. (Async-signal-safe.)
  if (format::LiveHeader* live = rt->file.live()) __atomic_store_n(&live->heartbeat, now(), __ATOMIC_RELEASE);
  seal_all_threads();
  // The losses first (zero: not written), then the reason; small enough for
  // the chunk the file keeps for them when the disk is full.
  char lines[128];
  int n = 0;
  const auto lost = static_cast<unsigned long long>(rt->records_lost.load());
  const auto lost_defs = static_cast<unsigned long long>(rt->definitions_lost.load());
  if (lost) n += std::snprintf(lines + n, sizeof lines - size_t(n), "M\trecords_lost\t%llu\n", lost);
  if (lost_defs)
    n += std::snprintf(lines + n, sizeof lines - size_t(n), "M\tdefinitions_lost\t%llu\n",
                       lost_defs);
  n += std::snprintf(lines + n, sizeof lines - size_t(n), "E\t%s\n", reason);
  rt->file.write_end_definitions(lines, size_t(n));
}

// Cuts each thread's last chunk to what it holds and closes the file. Not
// from a signal handler (allocates); chunks another thread is sealing are
// left as they are.
void close_trace() {
  std::vector<format::ChunkHeader*> open_chunks;
  {
    std::unique_lock<std::mutex> lock(rt->threads_mu, std::try_to_lock);
    if (lock.owns_lock())
      for (ThreadState* ts : rt->threads)
        if (ts->chunk) open_chunks.push_back(ts->chunk);
  }
  rt->file.close(open_chunks);
}

ThreadState* attach_thread() {
  if (!rt || !g.recording) return nullptr;
  // A chunk header numbers at most kMaxStreams streams: a thread beyond is
  // not recorded (its calls run as they would unprofiled), and is told once.
  if (rt->next_stream.load(std::memory_order_relaxed) >= format::kMaxStreams) return nullptr;
  const uint32_t stream = rt->next_stream++;
  if (stream >= format::kMaxStreams) {
    if (stream == format::kMaxStreams)
      say(kWarn, "more than " + std::to_string(format::kMaxStreams) +
                     " threads made MPI calls: the later ones are not recorded");
    return nullptr;
  }
  ThreadState* ts = new ThreadState();
  ts->stream = stream;
  ts->last_enter = now();
  ts->attached = true;
  map_first_or_next(ts);
  register_thread(ts);
  return ts;
}

// A full home chunk (format 5): its records copied to the file's end as an
// ordinary sealed chunk, then the home emptied and opened again as the
// stream's next chunk, its pages still writable, so the thread's stores take
// no write fault per new page (docs/design/shim-hot-path.md, "Home
// chunks"). Through each step the slot's home_copy word tells a reader of a
// killed process which of the two to take (trace_format.h, LiveSlot).
// false when the copy could not be made (the disk is full, a write failed):
// the home keeps its records, and the caller seals it where it is.
// Async-signal-safe, like the rest of the chunk handling.
bool copy_out_home(ThreadState* ts) {
  format::ChunkHeader* const h = ts->chunk;
  char* const payload = reinterpret_cast<char*>(h + 1);
  const size_t used = size_t(reinterpret_cast<char*>(ts->cur) - payload);
  uint64_t at;
  if (!rt->file.reserve_copy(used, &at)) return false;
  __atomic_store_n(ts->home_copy, at | format::kHomeCopying, __ATOMIC_RELEASE);
  if (!rt->file.write_copy(h, used, at)) return false;  // the copy stays dropped
  __atomic_store_n(ts->home_copy, at | format::kHomeCopied, __ATOMIC_RELEASE);
  // Emptied: the records, and the words a fast receive may have stored past
  // the write pointer (runtime.h), so the next chunk reads up to its first
  // zero word when the process is killed.
  const size_t dirty = std::min(size_t(reinterpret_cast<char*>(ts->end) - payload),
                                used + format::kMaxRecordWords * 4);
  std::memset(payload, 0, dirty);
  h->base_time = ts->last_enter;
  h->sequence = static_cast<uint16_t>(ts->chunks_opened);
  start_records(ts, h);
  // Sealed meanwhile (recording ended in another thread: a signal, an exit):
  // the copy holds the records and the home is left dropped, uncounted.
  if (!(__atomic_load_n(&h->flags, __ATOMIC_ACQUIRE) & format::kChunkSealed)) {
    __atomic_store_n(ts->home_copy, uint64_t{0}, __ATOMIC_RELEASE);
    count_chunk_opened(ts);
  }
  return true;
}

void next_chunk(ThreadState* ts, size_t words) {
  if (ts->chunk && populate_ahead(ts, words)) return;
  if (ts->chunk && (ts->chunk->flags & format::kChunkHome) && copy_out_home(ts)) return;
  if (ts->chunk) {
    seal_thread(ts);
    TraceFile::unmap(ts->chunk, ts->chunk_map_bytes);
    ts->chunk = nullptr;
  } else {
    count_discarded(ts);
  }
  map_first_or_next(ts);
}

}  // namespace prof::shim
