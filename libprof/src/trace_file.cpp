#include "trace_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace prof::shim {

using format::ChunkHeader;

#ifdef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;  // Linux 5.14 uapi value
#endif

bool TraceFile::create(const std::string& path, const format::FileHeader& header,
                       std::string* why) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    *why = "cannot create '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (::pwrite(fd_, &header, sizeof header, 0) != ssize_t(sizeof header)) {
    *why = "cannot write '" + path + "': " + std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  return true;
}

uint64_t TraceFile::reserve(uint64_t bytes, uint64_t align) {
  uint64_t cur = next_.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t at = (cur + align - 1) & ~(align - 1);
    if (next_.compare_exchange_weak(cur, at + bytes, std::memory_order_relaxed)) return at;
  }
}

bool TraceFile::write_definitions(const char* text, size_t len) {
  if (fd_ < 0) return false;
  const uint64_t capacity = format::align8(len);
  const uint64_t at = reserve(sizeof(ChunkHeader) + capacity, 8);
  ChunkHeader h{};
  h.magic = format::kChunkMagic;
  h.type = uint16_t(format::ChunkType::Definitions);
  h.flags = format::kChunkSealed;
  h.capacity = uint32_t(capacity);
  h.used = uint32_t(len);
  h.crc32 = format::crc32c(text, len);
  // Payload first, header last: a reader never sees a sealed header over
  // missing text. Padding bytes stay zero (the file grows with zeros).
  // The padding is written too: the last chunk of a file must not end past
  // end-of-file (nothing else extends it when the process dies after this).
  static const char zeros[8] = {0};
  if (::pwrite(fd_, text, len, off_t(at + sizeof h)) != ssize_t(len)) return false;
  if (capacity > len &&
      ::pwrite(fd_, zeros, capacity - len, off_t(at + sizeof h + len)) != ssize_t(capacity - len))
    return false;
  return ::pwrite(fd_, &h, sizeof h, off_t(at)) == ssize_t(sizeof h);
}

ChunkHeader* TraceFile::map_event_chunk(size_t map_bytes, uint32_t stream, uint64_t base_time) {
  if (fd_ < 0) return nullptr;
  const uint64_t at = reserve(map_bytes, 4096);
  // Grow the file over the chunk (never shrinks it, unlike ftruncate, so
  // concurrent reservations are safe).
  if (::posix_fallocate(fd_, off_t(at), off_t(map_bytes)) != 0) return nullptr;
  void* p = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, off_t(at));
  if (p == MAP_FAILED) return nullptr;
  // A shared file mapping starts write-protected (dirty tracking), so each
  // page's first store would fault on the hot path. Fault the whole chunk in
  // writable now, in one call (Linux >= 5.14); older kernels fall back to the
  // per-page faults.
  if (::madvise(p, map_bytes, kMadvPopulateWrite) != 0) { /* per-page faults instead */ }
  auto* h = static_cast<ChunkHeader*>(p);
  h->type = uint16_t(format::ChunkType::Events);
  h->flags = 0;
  h->capacity = uint32_t(map_bytes - sizeof(ChunkHeader));
  h->used = 0;
  h->crc32 = 0;
  h->stream = stream;
  h->base_time = base_time;
  __atomic_store_n(&h->magic, format::kChunkMagic, __ATOMIC_RELEASE);
  return h;
}

void TraceFile::seal(ChunkHeader* chunk, size_t used_bytes) {
  if (!chunk || (chunk->flags & format::kChunkSealed)) return;
  chunk->used = uint32_t(used_bytes);
  chunk->crc32 = format::crc32c(chunk + 1, used_bytes);
  __atomic_store_n(&chunk->flags, uint16_t(format::kChunkSealed), __ATOMIC_RELEASE);
}

void TraceFile::unmap(ChunkHeader* chunk, size_t map_bytes) {
  if (chunk) ::munmap(chunk, map_bytes);
}

void TraceFile::close() {
  if (fd_ < 0) return;
  // Event chunks are page aligned, so the last one may end in zeros: keep
  // everything handed out, nothing more.
  if (::ftruncate(fd_, off_t(next_.load())) != 0) { /* the zeros past it are harmless */ }
  ::close(fd_);
  fd_ = -1;
}

}  // namespace prof::shim
