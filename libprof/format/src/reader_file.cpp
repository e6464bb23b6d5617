// The file under a RankTrace: mapped read-only (definitions and salvage read
// it there), and events chunks read with pread() into a cursor's own buffer,
// reused chunk after chunk: mapped pages of a file in the page cache cost a
// fault each, and under a hypervisor that was 3x the CRC and copy together.
// Chunks above kReadChunkMax, the first
// chunks of each stream the index reads, and a cursor's first kMappedChunks
// chunks while it has no buffer they fit in are decoded from the mapping
// instead, whose pages are dropped from the process when the cursor leaves
// them. Either way the memory held is one chunk per cursor (flat RSS).
// Past the process's budget of mappings (vm.max_map_count bounds them), a
// file no cursor decodes in is unmapped and mapped again when one needs it
// (pin_map, unpin_map). A small file is read whole at open instead and
// indexed in that copy (kReadWholeAtOpen); its first pin_map maps it. A
// cursor that lends its buffer between visits (kLentChunkMax) reads its small
// chunks with pread at each visit, through a descriptor opened for the read
// where none is kept, and never maps the file.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "prof/safe_file.h"
#include "reader_internal.h"

namespace prof::trace {

namespace reader {

#ifdef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;  // Linux 5.14 uapi value
#endif

// Descriptors kept open for pread, over every RankTrace of the process: at
// most half the descriptor limit (ulimit -n), so that a trace of thousands of
// ranks leaves room for the outputs and everything else. Files past that are
// read through their mapping (or opened for each lent read).
std::atomic<int> descriptors_kept{0};
std::atomic<uint64_t> files_opened{0};

namespace {
int descriptor_budget() {
  static const int budget = [] {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 4096;
    return static_cast<int>(std::min<rlim_t>(limit.rlim_cur / 2, 1 << 20));
  }();
  return budget;
}
}  // namespace

bool keep_descriptor() {
  if (descriptors_kept.fetch_add(1) < descriptor_budget()) return true;
  descriptors_kept.fetch_sub(1);
  return false;
}

void reserve_descriptors(size_t files) {
  const int room = descriptor_budget() - descriptors_kept.load();
  const size_t kept = std::min<size_t>(files, static_cast<size_t>(std::max(room, 0)));
  if (kept < 64) return;  // the table's first size holds them
  // The lowest free descriptor, then one `kept` above it: the table grows to
  // that at once. (F_DUPFD takes the lowest free one at or above its
  // argument and closes nothing; past the limit it fails and nothing grows.)
  const int lowest = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (lowest < 0) return;
  const int top = ::fcntl(lowest, F_DUPFD_CLOEXEC, lowest + static_cast<int>(kept));
  if (top >= 0) ::close(top);
  ::close(lowest);
}

std::atomic<int> mappings_held{0};
std::atomic<int> mapping_budget_set{0};  // 0: the default

namespace {
// Half of vm.max_map_count, as descriptors take half of `ulimit -n`: the
// rest is the process's own (libraries, heap, rings, chunk buffers).
int default_mapping_budget() {
  static const int budget = [] {
    long limit = 65530;  // Linux's default
    if (FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
      if (std::fscanf(f, "%ld", &limit) != 1 || limit < 2) limit = 65530;
      std::fclose(f);
    }
    return static_cast<int>(std::min<long>(limit / 2, 1 << 30));
  }();
  return budget;
}
}  // namespace

int mapping_budget_now() {
  const int set = mapping_budget_set.load(std::memory_order_relaxed);
  return set > 0 ? set : default_mapping_budget();
}

Mapping::~Mapping() {
  if (map) {
    ::munmap(map, size);
    mappings_held.fetch_sub(1, std::memory_order_relaxed);
  }
  if (fd >= 0) {
    ::close(fd);
    descriptors_kept.fetch_sub(1);
  }
}

void ChunkBuffer::reserve(size_t n) {
  if (n <= size_) return;
  reset();
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t bytes = (n + page - 1) / page * page;
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m != MAP_FAILED) {
    (void)::madvise(m, bytes, kMadvPopulateWrite);  // older kernels: faulted as used
    data_ = static_cast<uint8_t*>(m);
    size_ = bytes;
    mapped_ = true;
  } else {
    data_ = new uint8_t[n];
    size_ = n;
    mapped_ = false;
  }
}

void ChunkBuffer::reset() {
  if (data_) {
    if (mapped_) ::munmap(data_, size_);
    else delete[] data_;
  }
  data_ = nullptr;
  size_ = 0;
}

namespace {
uint64_t page_size() {
  static const uint64_t p = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return p;
}
}  // namespace

}  // namespace reader

void set_mapping_budget(int mappings) {
  reader::mapping_budget_set.store(std::max(mappings, 0), std::memory_order_relaxed);
}
int mapping_budget() { return reader::mapping_budget_now(); }
int mappings_held() { return reader::mappings_held.load(std::memory_order_relaxed); }

namespace {
// Reads n bytes at offset 0; false if the file is shorter now or unreadable.
bool read_whole(int fd, uint8_t* to, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, to + got, n - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}
}  // namespace

bool RankTrace::Impl::map_file(std::string* error) {
  // A FIFO, a device or a directory is refused at open, and no read goes past
  // the size fstat gave (a link to /dev/zero never ends otherwise).
  const RegularFile file = open_regular_file(path, error);
  if (file.fd < 0) return false;
  const int fd = file.fd;
  if (file.size > 0 && file.size <= reader::kReadWholeAtOpen) {
    // (Kept by the thread for the next file it opens: freed, the arena's
    // trim would hand its pages back and fault them in again for each file.)
    thread_local std::vector<uint8_t> scratch;
    if (scratch.size() < file.size) scratch.resize(static_cast<size_t>(file.size));
    if (read_whole(fd, scratch.data(), static_cast<size_t>(file.size))) {
      map.data = scratch.data();
      map.size = file.size;
      map.opening_copy = true;
      map_users = 1;
      if (reader::keep_descriptor()) map.fd = fd;
      else ::close(fd);  // (pin_map opens it again by its path)
      return true;
    }
    // (Shorter than fstat said: mapped below, as a file that changes is.)
  }
  if (file.size > 0) {
    void* m = ::mmap(nullptr, static_cast<size_t>(file.size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      reader::mappings_held.fetch_add(1, std::memory_order_relaxed);
      map.map = m;
      map.size = file.size;
      map.data = static_cast<const uint8_t*>(m);
      map_users = 1;
      ::madvise(m, map.size, MADV_SEQUENTIAL);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
      if (reader::keep_descriptor()) map.fd = fd;
      else ::close(fd);  // (the mapping keeps the file's pages)
      return true;
    }
  }
  // Fallback (mmap refused): read it, at most the size it had when opened.
  map.contents.resize(static_cast<size_t>(file.size));
  size_t got = 0;
  while (got < map.contents.size()) {
    const ssize_t n = ::pread(fd, map.contents.data() + got, map.contents.size() - got,
                              static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = path + ": cannot read: " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;  // (shorter than it was: the index finds what is missing)
    got += static_cast<size_t>(n);
  }
  map.contents.resize(got);
  ::close(fd);
  map.data = map.contents.data();
  map.size = map.contents.size();
  map_users = 1;
  return true;
}

const uint8_t* RankTrace::Impl::pin_map() const {
  std::lock_guard<std::mutex> lock(map_mu);
  ++map_users;
  if (map.data) return map.data;
  // Given back: mapped again, through the kept descriptor or the path.
  const int fd = map.fd >= 0 ? map.fd : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  if (fd >= 0 && ::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) >= map.size) {
    void* m = ::mmap(nullptr, static_cast<size_t>(map.size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      reader::mappings_held.fetch_add(1, std::memory_order_relaxed);
      // (A small file needs no read-ahead: its faults map 16 pages each.)
      if (map.size > reader::kReadWholeAtOpen) ::madvise(m, map.size, MADV_SEQUENTIAL);
      map.map = m;
      map.data = static_cast<const uint8_t*>(m);
    }
  }
  if (!map.data) {
    // Refused (the file is gone, shorter, or the process is out of
    // mappings): what can be read of it, zeros past that, held in memory.
    map.contents.assign(static_cast<size_t>(map.size), 0);
    size_t got = 0;
    while (fd >= 0 && got < map.contents.size()) {
      const ssize_t n = ::pread(fd, map.contents.data() + got, map.contents.size() - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    map.data = map.contents.data();
  }
  if (fd >= 0 && fd != map.fd) ::close(fd);
  return map.data;
}

void RankTrace::Impl::unpin_map() const {
  std::lock_guard<std::mutex> lock(map_mu);
  if (--map_users > 0) return;
  if (map.opening_copy) {
    map.data = nullptr;
    map.opening_copy = false;
    return;
  }
  if (!map.map ||
      reader::mappings_held.load(std::memory_order_relaxed) <= reader::mapping_budget_now())
    return;
  ::munmap(map.map, map.size);
  reader::mappings_held.fetch_sub(1, std::memory_order_relaxed);
  map.map = nullptr;
  map.data = nullptr;
}

// The whole mapping at once, not the chunk's pages now and the rest when
// the trace closes: one system call a rank file fewer, and the unmapping of
// thousands of ranks is spread over the workers instead of the closing
// thread.
void RankTrace::Impl::leave_stream_end(const ChunkRef& c) const {
  {
    std::lock_guard<std::mutex> lock(map_mu);
    if (map_users == 1 && map.map && !map.opening_copy) {
      map_users = 0;
      ::munmap(map.map, map.size);
      reader::mappings_held.fetch_sub(1, std::memory_order_relaxed);
      map.map = nullptr;
      map.data = nullptr;
      return;
    }
  }
  release(c, true);
  unpin_map();
}

// Chunk headers are read so during the index, not through the mapping: a fault
// there maps its neighbours too, and the RSS of opening grew with the file
// (30 MB for 10^8 events a rank).
void RankTrace::Impl::read_at(uint64_t off, void* to, size_t n) const {
  if (!map.opening_copy && map.fd >= 0 && ::pread(map.fd, to, n, static_cast<off_t>(off)) == static_cast<ssize_t>(n))
    return;
  std::memcpy(to, map.data + off, n);
}

const uint8_t* RankTrace::Impl::chunk_payload(const ChunkRef& c, ChunkBuffer& buf, bool map_unless_fits,
                                              bool* copied, bool open_to_read) const {
  *copied = false;
  if ((map.fd < 0 && !open_to_read) || c.len > reader::kReadChunkMax || (map_unless_fits && buf.size() < c.len))
    return pin_map() + c.payload_off;
  const int fd = map.fd >= 0 ? map.fd : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return pin_map() + c.payload_off;
  if (buf.size() < c.len) buf.reserve(std::max<size_t>(c.len, buf.size() * 2));
  size_t got = 0;
  while (got < c.len) {
    const ssize_t n = ::pread(fd, buf.data() + got, c.len - got, static_cast<off_t>(c.payload_off + got));
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  if (fd != map.fd) ::close(fd);
  if (got < c.len) return pin_map() + c.payload_off;  // the mapping still has it
  *copied = true;
  return buf.data();
}

reader::ChunkBuffer RankTrace::Impl::take_buffer() const {
  std::lock_guard<std::mutex> lock(pool_mu);
  if (pool.empty()) return {};
  ChunkBuffer b = std::move(pool.back());
  pool.pop_back();
  return b;
}

void RankTrace::Impl::give_buffer(ChunkBuffer&& b) const {
  if (!b.data()) return;
  std::lock_guard<std::mutex> lock(pool_mu);
  if (pool.size() < 4) pool.push_back(std::move(b));
}

namespace {
thread_local std::vector<reader::ChunkBuffer> thread_buffers;
}  // namespace

reader::ChunkBuffer RankTrace::Impl::take_thread_buffer() {
  if (thread_buffers.empty()) return {};
  ChunkBuffer b = std::move(thread_buffers.back());
  thread_buffers.pop_back();
  return b;
}

void RankTrace::Impl::give_thread_buffer(ChunkBuffer&& b) {
  ChunkBuffer given(std::move(b));  // (the caller's is empty either way)
  if (given.data() && thread_buffers.size() < 4) thread_buffers.push_back(std::move(given));
}

void RankTrace::Impl::release(const ChunkRef& c, bool with_edges) const {
  if (!map.map) return;
  const uint64_t page = reader::page_size();
  const uint64_t lo = with_edges ? c.header_off & ~(page - 1) : (c.header_off + page - 1) & ~(page - 1);
  const uint64_t end = std::min(c.end_off, map.size);
  const uint64_t hi = with_edges ? std::min((end + page - 1) & ~(page - 1), (map.size + page - 1) & ~(page - 1))
                                 : end & ~(page - 1);
  if (hi > lo) ::madvise(const_cast<uint8_t*>(map.data) + lo, hi - lo, MADV_DONTNEED);
}

}  // namespace prof::trace
