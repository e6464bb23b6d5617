// The buffers of MirroredRing (mirrored_ring.h): one memfd mapped twice back
// to back, or N bytes of heap where that cannot be made.
#include "mirrored_ring.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <new>

namespace prof::analysis::detail {
namespace {

// A power of two: whole pages for the two views of a memfd, at least a cache
// line on the heap.
size_t round_up_bytes(size_t min_bytes, bool whole_pages) {
  const long page_size = whole_pages ? sysconf(_SC_PAGESIZE) : 64;
  size_t bytes = page_size > 0 ? static_cast<size_t>(page_size) : 4096;
  while (bytes < min_bytes) bytes *= 2;
  return bytes;
}

// Both views of one memfd, or nullptr (the caller falls back to the heap).
std::byte* map_mirrored(size_t bytes) {
  const int fd = memfd_create("prof-analyze-ring", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  std::byte* base = nullptr;
  if (ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
    // Reserve 2N of address space, then put the two views over it.
    void* area = mmap(nullptr, 2 * bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area != MAP_FAILED) {
      // Populated: each page would otherwise fault once in each view.
      auto* first = static_cast<std::byte*>(area);
      const int flags = MAP_SHARED | MAP_FIXED | MAP_POPULATE;
      const bool ok = mmap(first, bytes, PROT_READ | PROT_WRITE, flags, fd, 0) == first &&
                      mmap(first + bytes, bytes, PROT_READ | PROT_WRITE, flags, fd, 0) == first + bytes;
      if (ok) base = first;
      else munmap(area, 2 * bytes);
    }
  }
  close(fd);  // the mappings keep the memory
  return base;
}

}  // namespace

RingMemory RingMemory::make(size_t min_bytes, bool allow_mirror) {
  RingMemory m;
  m.bytes = round_up_bytes(min_bytes, allow_mirror);
  if (allow_mirror) {
    m.base = map_mirrored(m.bytes);
    m.mirrored = m.base != nullptr;
  }
  if (!m.base) {
    if (allow_mirror) m.bytes = round_up_bytes(min_bytes, false);
    m.base = static_cast<std::byte*>(std::aligned_alloc(64, m.bytes));
    if (!m.base) throw std::bad_alloc();
  }
  return m;
}

void RingMemory::release() {
  if (!base) return;
  if (mirrored) munmap(base, 2 * bytes);
  else std::free(base);
  base = nullptr;
}

}  // namespace prof::analysis::detail
