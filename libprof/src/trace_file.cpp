#include "trace_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace prof::shim {

using format::ChunkHeader;

#ifdef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;  // Linux 5.14 uapi value
#endif

namespace {
// Room for the end definitions when nothing else fits: the loss counts and
// the end reason (well under 100 bytes).
constexpr uint64_t kEndSlotPayload = 128;
constexpr uint64_t kEndSlotAt = sizeof(format::FileHeader);
// A thread that was inside a call when recording stopped may still store its
// one record past the sealed end: trimming leaves that much room.
constexpr uint64_t kStragglerBytes = format::align8(format::kMaxRecordWords * 4);
constexpr uint64_t kPage = 4096;
constexpr uint64_t kLiveAt = kPage;
// Space is allocated at least this far ahead of what is used: the start-up's
// definitions, the first event chunk and the end's definitions then share
// the allocation made at creation, and later definitions rarely need their
// own. Each allocation is a journaled change of the file's extents, which on
// a busy filesystem waits for the journal. close() cuts what was not used.
constexpr uint64_t kAllocateAhead = 128 * 1024;
static_assert(kEndSlotAt + sizeof(ChunkHeader) + kEndSlotPayload <= kLiveAt);

ChunkHeader empty_definitions_chunk(uint64_t capacity) {
  ChunkHeader h{};
  h.magic = format::kChunkMagic;
  h.type = uint16_t(format::ChunkType::Definitions);
  h.flags = format::kChunkSealed;
  h.capacity = uint32_t(capacity);
  h.used = 0;
  static const char nothing = 0;
  h.crc32 = format::crc32c(&nothing, 0);
  return h;
}

// Calls `grow` (a call that may make the file longer; it returns 0 or an
// errno) so that a file-size limit (ulimit -f, RLIMIT_FSIZE) fails it with
// EFBIG, as a full disk fails it with ENOSPC, instead of ending the
// application: the kernel's SIGXFSZ, sent to the thread that passed the
// limit, is blocked around the call and taken back when the call failed.
template <class Grow>
int without_file_size_signal(Grow grow) {
  sigset_t file_size, before;
  sigemptyset(&file_size);
  sigaddset(&file_size, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &file_size, &before);
  const int rc = grow();
  if (!sigismember(&before, SIGXFSZ)) {  // (blocked already: any pending one is the program's)
    const timespec now{0, 0};
    if (rc == EFBIG) static_cast<void>(sigtimedwait(&file_size, nullptr, &now));
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
  return rc;
}

int allocate_range(int fd, uint64_t from, uint64_t bytes) {
  return without_file_size_signal([&] { return ::posix_fallocate(fd, off_t(from), off_t(bytes)); });
}

// Bytes of a chunk's payload worth keeping: what was sealed, plus room for a
// straggler's record.
uint64_t kept_payload(const ChunkHeader* h) {
  return std::min<uint64_t>(h->capacity, format::align8(h->used) + kStragglerBytes);
}
}  // namespace

bool TraceFile::create(const std::string& path, const format::FileHeader& header,
                       std::string* why) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    last_error_.store(errno);
    *why = "cannot create '" + path + "': " + std::strerror(errno);
    return false;
  }
  // Header, the end slot, zero padding, and the Live chunk on the second page
  // (mapped: it must be page aligned); room ahead when the disk has it.
  const uint64_t bytes = kLiveAt + format::kLiveChunkBytes;
  const ChunkHeader slot = empty_definitions_chunk(kEndSlotPayload);
  uint64_t allocated = bytes + kAllocateAhead;
  int rc = allocate_range(fd_, 0, allocated);
  if (rc != 0) {
    allocated = bytes;
    rc = allocate_range(fd_, 0, allocated);
  }
  if (rc == 0 && (::pwrite(fd_, &header, sizeof header, 0) != ssize_t(sizeof header) ||
                  ::pwrite(fd_, &slot, sizeof slot, off_t(kEndSlotAt)) != ssize_t(sizeof slot)))
    rc = errno;
  void* live = MAP_FAILED;
  if (rc == 0) {
    live = ::mmap(nullptr, format::kLiveChunkBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                  off_t(kLiveAt));
    if (live == MAP_FAILED) rc = errno;
  }
  if (rc != 0) {
    last_error_.store(rc);
    *why = "cannot write '" + path + "': " + std::strerror(rc);
    ::close(fd_);
    ::unlink(path.c_str());  // ours: created just now
    fd_ = -1;
    return false;
  }
  // Never unmapped: a thread still inside a call when the file closes stores
  // into its slot on return.
  auto* h = static_cast<ChunkHeader*>(live);
  h->type = uint16_t(format::ChunkType::Live);
  h->flags = 0;
  h->capacity = format::kLiveChunkBytes - sizeof(ChunkHeader);
  live_ = reinterpret_cast<format::LiveHeader*>(h + 1);
  live_->slot_count = format::kLiveSlots;
  live_->slot_bytes = format::kLiveSlotStride;
  __atomic_store_n(&h->magic, format::kChunkMagic, __ATOMIC_RELEASE);
  next_.store(bytes);
  written_end_.store(bytes);
  allocated_.store(allocated);
  return true;
}

uint64_t TraceFile::reserve(uint64_t bytes, uint64_t align) {
  uint64_t cur = next_.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t at = (cur + align - 1) & ~(align - 1);
    if (next_.compare_exchange_weak(cur, at + bytes, std::memory_order_relaxed)) return at;
  }
}

void TraceFile::note_written(uint64_t end) {
  uint64_t cur = written_end_.load(std::memory_order_relaxed);
  while (cur < end && !written_end_.compare_exchange_weak(cur, end, std::memory_order_relaxed)) {
  }
}

// Allocates a reserved range before anything is stored in it: nothing to do
// when it lies below allocated_, else everything from allocated_ up to the
// range's end and kAllocateAhead beyond (just to the end when the disk has
// no more). Threads that race both allocate, which is harmless. On failure
// the range is handed back when nothing was reserved after it; otherwise it
// becomes an empty chunk, so a reader skips it instead of reading a hole.
bool TraceFile::allocate(uint64_t at, uint64_t bytes) {
  const uint64_t end = at + bytes;
  uint64_t have = allocated_.load(std::memory_order_acquire);
  int rc = 0;
  if (end > have) {
    uint64_t to = end + kAllocateAhead;
    rc = allocate_range(fd_, have, to - have);
    if (rc != 0) {
      to = end;
      rc = allocate_range(fd_, have, to - have);
    }
    if (rc == 0)
      while (have < to && !allocated_.compare_exchange_weak(have, to, std::memory_order_acq_rel)) {
      }
  }
  if (rc == 0) {
    note_written(end);
    return true;
  }
  last_error_.store(rc);
  uint64_t expected = at + bytes;
  if (!next_.compare_exchange_strong(expected, at) && bytes >= sizeof(ChunkHeader) &&
      bytes - sizeof(ChunkHeader) <= UINT32_MAX) {
    const ChunkHeader filler = empty_definitions_chunk(bytes - sizeof(ChunkHeader));
    // (Past the allocated end it may make the file longer.)
    if (without_file_size_signal([&] {
          return ::pwrite(fd_, &filler, sizeof filler, off_t(at)) == ssize_t(sizeof filler) ? 0 : errno;
        }) == 0)
      note_written(at + bytes);
  }
  return false;
}

bool TraceFile::write_definitions(const char* text, size_t len) {
  if (fd_ < 0) return false;
  const uint64_t capacity = format::align8(len);
  const uint64_t at = reserve(sizeof(ChunkHeader) + capacity, 8);
  if (!allocate(at, sizeof(ChunkHeader) + capacity)) return false;
  ChunkHeader h{};
  h.magic = format::kChunkMagic;
  h.type = uint16_t(format::ChunkType::Definitions);
  h.flags = format::kChunkSealed;
  h.capacity = uint32_t(capacity);
  h.used = uint32_t(len);
  h.crc32 = format::crc32c(text, len);
  // Payload first, header last: a reader never sees a sealed header over
  // missing text. The range is allocated, so the padding reads as zeros.
  if (::pwrite(fd_, text, len, off_t(at + sizeof h)) != ssize_t(len)) {
    last_error_.store(errno);
    return false;
  }
  if (::pwrite(fd_, &h, sizeof h, off_t(at)) != ssize_t(sizeof h)) {
    last_error_.store(errno);
    return false;
  }
  return true;
}

bool TraceFile::write_end_definitions(const char* text, size_t len) {
  if (fd_ < 0) return false;
  if (write_definitions(text, len)) return true;
  if (len > kEndSlotPayload) return false;
  // The reserved chunk, allocated at creation: text first, then its header.
  ChunkHeader h = empty_definitions_chunk(kEndSlotPayload);
  h.used = uint32_t(len);
  h.crc32 = format::crc32c(text, len);
  return ::pwrite(fd_, text, len, off_t(kEndSlotAt + sizeof h)) == ssize_t(len) &&
         ::pwrite(fd_, &h, sizeof h, off_t(kEndSlotAt)) == ssize_t(sizeof h);
}

ChunkHeader* TraceFile::map_event_chunk(size_t map_bytes, uint16_t stream, uint16_t sequence,
                                        uint64_t base_time, uint16_t flags) {
  if (fd_ < 0 || full()) return nullptr;
  const uint64_t at = reserve(map_bytes, kPage);
  if (!allocate(at, map_bytes)) {
    full_.store(true);
    return nullptr;
  }
  void* p = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, off_t(at));
  if (p == MAP_FAILED) {
    last_error_.store(errno);
    full_.store(true);  // the allocated range stays zeros: padding to a reader
    return nullptr;
  }
  auto* h = static_cast<ChunkHeader*>(p);
  h->type = uint16_t(format::ChunkType::Events);
  h->flags = flags;
  h->capacity = uint32_t(map_bytes - sizeof(ChunkHeader));
  h->used = 0;
  h->crc32 = 0;
  h->stream = stream;
  h->sequence = sequence;
  h->base_time = base_time;
  __atomic_store_n(&h->magic, format::kChunkMagic, __ATOMIC_RELEASE);
  {
    std::lock_guard<std::mutex> lock(places_mu_);
    places_[h] = Place{at, map_bytes};  // a reused address replaces its old entry
  }
  return h;
}

bool TraceFile::reserve_copy(size_t used, uint64_t* at) {
  if (fd_ < 0 || full()) return false;
  const uint64_t bytes = sizeof(ChunkHeader) + format::align8(used);
  // 8-aligned: a copy is written, never mapped.
  *at = reserve(bytes, 8);
  if (!allocate(*at, bytes)) {
    full_.store(true);
    return false;
  }
  return true;
}

bool TraceFile::write_copy(const ChunkHeader* home, size_t used, uint64_t at) {
  ChunkHeader h = *home;
  h.flags = format::kChunkSealed;
  h.capacity = uint32_t(format::align8(used));
  h.used = uint32_t(used);
  h.crc32 = format::crc32c(home + 1, used);
  iovec parts[2] = {{&h, sizeof h}, {const_cast<ChunkHeader*>(home + 1), used}};
  // The range is allocated: the alignment padding reads as zeros.
  const ssize_t wrote = ::pwritev(fd_, parts, 2, off_t(at));
  if (wrote == ssize_t(sizeof h + used)) return true;
  last_error_.store(wrote < 0 ? errno : ENOSPC);
  full_.store(true);
  return false;
}

// A shared file mapping starts write-protected (dirty tracking), so each
// page's first store would fault on the hot path: faulted in writable here,
// in one call (Linux >= 5.14); older kernels fall back to the per-page faults.
void TraceFile::populate(void* from, size_t bytes) {
  if (bytes && ::madvise(from, bytes, kMadvPopulateWrite) != 0) { /* per-page faults instead */ }
}

void TraceFile::seal(ChunkHeader* chunk, size_t used_bytes) {
  if (!chunk || (chunk->flags & format::kChunkSealed)) return;
  chunk->used = uint32_t(used_bytes);
  chunk->crc32 = format::crc32c(chunk + 1, used_bytes);
  __atomic_store_n(&chunk->flags, uint16_t(chunk->flags | format::kChunkSealed), __ATOMIC_RELEASE);
}

void TraceFile::unmap(ChunkHeader* chunk, size_t map_bytes) {
  if (chunk) ::munmap(chunk, map_bytes);
}

bool TraceFile::place_of(const ChunkHeader* chunk, Place* out) {
  std::lock_guard<std::mutex> lock(places_mu_);
  auto it = places_.find(chunk);
  if (it == places_.end()) return false;
  *out = it->second;
  return true;
}

void TraceFile::release_tail(const ChunkHeader* chunk) {
  Place place;
  if (fd_ < 0 || !chunk || !(chunk->flags & format::kChunkSealed) || !place_of(chunk, &place))
    return;
  const uint64_t keep_end = place.offset + sizeof(ChunkHeader) + kept_payload(chunk);
  const uint64_t from = (keep_end + kPage - 1) & ~(kPage - 1);
  const uint64_t to = place.offset + place.map_bytes;
  // Inside a sealed chunk's payload past its used bytes: never read.
  if (to > from &&
      ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(from), off_t(to - from)) !=
          0) { /* the zeros stay on disk */ }
}

// The chunk at `offset` ends where only definitions chunks follow: copies of
// them go into its unused payload (where no reader looks), then an empty
// chunk spanning from the copies over the originals, then one store of the
// chunk's shorter capacity makes the copies the ones read. A reader sees each
// definition exactly once at every step; *end becomes the cut.
bool TraceFile::move_tail_before_cut(uint64_t offset, ChunkHeader* chunk, uint64_t* end) {
  const uint64_t payload = offset + sizeof(ChunkHeader);
  const uint64_t old_end = payload + chunk->capacity;
  const uint64_t keep = kept_payload(chunk);
  const uint64_t copy_at = payload + keep;
  if (old_end > *end) return false;
  const uint64_t tail = *end - old_end;
  if (tail + sizeof(ChunkHeader) > old_end - copy_at) return false;
  std::vector<unsigned char> bytes(tail);
  if (tail && ::pread(fd_, bytes.data(), tail, off_t(old_end)) != ssize_t(tail)) return false;
  for (uint64_t o = 0; o < tail;) {
    uint64_t word;
    if (tail - o >= 8 && (std::memcpy(&word, &bytes[o], 8), word == 0)) {  // padding
      o += 8;
      continue;
    }
    if (tail - o < sizeof(ChunkHeader)) return false;
    ChunkHeader h;
    std::memcpy(&h, &bytes[o], sizeof h);
    if (h.magic != format::kChunkMagic || h.type != uint16_t(format::ChunkType::Definitions) ||
        !(h.flags & format::kChunkSealed) || h.capacity % 8 != 0 ||
        h.capacity > tail - o - sizeof h)
      return false;  // an event chunk may still be mapped: leave it where it is
    o += sizeof h + h.capacity;
  }
  const uint64_t filler_at = copy_at + tail;
  const uint64_t filler_capacity = *end - filler_at - sizeof(ChunkHeader);
  if (filler_capacity > UINT32_MAX) return false;
  const ChunkHeader filler = empty_definitions_chunk(filler_capacity);
  if (tail && ::pwrite(fd_, bytes.data(), tail, off_t(copy_at)) != ssize_t(tail)) return false;
  if (::pwrite(fd_, &filler, sizeof filler, off_t(filler_at)) != ssize_t(sizeof filler))
    return false;
  __atomic_store_n(&chunk->capacity, uint32_t(keep), __ATOMIC_RELEASE);
  *end = filler_at;
  return true;
}

void TraceFile::close(const std::vector<ChunkHeader*>& open_chunks) {
  if (fd_ < 0) return;
  full_.store(true);  // no chunk opens while the file is cut
  uint64_t end = written_end_.load();
  ChunkHeader* last = nullptr;
  uint64_t last_offset = 0;
  for (ChunkHeader* h : open_chunks) {
    Place place;
    if (h && (h->flags & format::kChunkSealed) && place_of(h, &place) &&
        (!last || place.offset > last_offset)) {
      last = h;
      last_offset = place.offset;
    }
  }
  const bool cut = last && move_tail_before_cut(last_offset, last, &end);
  for (ChunkHeader* h : open_chunks)
    if (!(cut && h == last)) release_tail(h);
  if (::ftruncate(fd_, off_t(end)) != 0) { /* the file keeps its allocated zeros */ }
  ::close(fd_);
  fd_ = -1;
}

void TraceFile::abandon() {
  full_.store(true);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace prof::shim
