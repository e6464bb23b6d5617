#include "prof/bcast/segment.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <new>
#include <vector>

namespace prof::bcast {

namespace {
std::size_t page_size() {
  const long p = ::sysconf(_SC_PAGESIZE);
  return p > 0 ? std::size_t(p) : 4096;
}
std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

void stderr_log(bool warning, const std::string& line) {
  if (warning) std::fprintf(stderr, "prof: %s\n", line.c_str());
}
std::atomic<LogFn> log_fn{stderr_log};

// What one segment may take: half the memory the node has available (its
// cgroup's limit too, where one applies). Sizing more would stall in
// posix_fallocate and push the application out of memory.
std::size_t node_memory_limit() {
  std::size_t available = 0;
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[128];
    unsigned long long kib = 0;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) available = std::size_t(kib) * 1024;
    std::fclose(f);
  }
  if (FILE* f = std::fopen("/sys/fs/cgroup/memory.max", "r")) {
    unsigned long long max = 0, current = 0;
    if (std::fscanf(f, "%llu", &max) == 1) {
      if (FILE* c = std::fopen("/sys/fs/cgroup/memory.current", "r")) {
        if (std::fscanf(c, "%llu", &current) == 1 && max > current)
          available = std::min<std::size_t>(available, std::size_t(max - current));
        std::fclose(c);
      }
    }
    std::fclose(f);
  }
  return available / 2;
}
}  // namespace

void set_log(LogFn fn) { log_fn.store(fn ? fn : stderr_log); }
void log_line(const std::string& line) { log_fn.load()(true, line); }
void log_info(const std::string& line) { log_fn.load()(false, line); }

Segment::~Segment() {
  if (base_) ::munmap(base_, bytes_);
}

bool Segment::map(int fd, std::string* why) {
  void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    *why = std::string("mmap: ") + std::strerror(errno);
    return false;
  }
  base_ = static_cast<unsigned char*>(p);
  return true;
}

bool Segment::create(MPI_Comm node_comm, const Settings& settings, std::string* why) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(node_comm, &rank);
  PMPI_Comm_size(node_comm, &size);
  const std::size_t page = page_size();
  fragment_ = settings.fragment;
  slots_ = settings.slots;
  control_bytes_ = round_up(sizeof(Finished) + sizeof(Notice) * (std::size_t(slots_) + kInlineEntries), page);
  queue_bytes_ = control_bytes_ + std::size_t(slots_) * fragment_;
  bytes_ = std::size_t(size) * queue_bytes_;

  // The first process makes it and tells the others where to open it: its
  // process id and descriptor, reopened through /proc (memfd_create(2)).
  struct {
    int pid;
    int fd;
    int ok;
  } made{};
  int fd = -1;
  bool ok = true;
  if (rank == 0) {
    const std::size_t limit = settings.test_fail_shm ? 0 : node_memory_limit();
    if (bytes_ > limit) {
      *why = "a segment of " + std::to_string(bytes_) + " bytes (" + std::to_string(size) + " processes x " +
             std::to_string(slots_) + " slots x " + std::to_string(fragment_) +
             " bytes) is more than the node can hold (" + std::to_string(limit) +
             " bytes: half its available memory); lower PROF_BCAST_FRAGMENT or PROF_BCAST_SLOTS";
      ok = false;
    } else if ((fd = static_cast<int>(::memfd_create("prof-bcast", MFD_CLOEXEC))) < 0) {
      *why = std::string("memfd_create: ") + std::strerror(errno);
      ok = false;
    } else if (const int err = ::posix_fallocate(fd, 0, off_t(bytes_)); err != 0) {
      *why = "posix_fallocate of " + std::to_string(bytes_) + " bytes: " + std::strerror(err);
      ok = false;
    } else {
      ok = map(fd, why);
    }
    made.pid = int(::getpid());
    made.fd = fd;
    made.ok = ok;
  }
  PMPI_Bcast(&made, sizeof made, MPI_BYTE, 0, node_comm);
  if (rank != 0 && made.ok) {
    const std::string path = "/proc/" + std::to_string(made.pid) + "/fd/" + std::to_string(made.fd);
    fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || std::size_t(st.st_size) < bytes_) {
      *why = "open " + path + ": " + (fd < 0 ? std::strerror(errno) : "shorter than the segment");
      ok = false;
    } else {
      ok = map(fd, why);
    }
  }
  if (base_) {
    ::madvise(base_, bytes_, MADV_RANDOM);
    first_touch_own_queue(rank);
  }
  // Every process has mapped it (or failed): the first one's descriptor,
  // through which the others opened it, can go.
  int all_ok = ok && made.ok ? 1 : 0;
  PMPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, node_comm);
  if (fd >= 0) ::close(fd);
  if (!all_ok) {
    if (base_) ::munmap(base_, bytes_);
    base_ = nullptr;
    return false;
  }
  ::madvise(base_, bytes_, MADV_NORMAL);
  // Every page now exists on its owner's node: map them all here at once, or
  // the first broadcasts would each take page faults (a few microseconds each
  // under a hypervisor) on the other processes' slots. Where the kernel lacks
  // MADV_POPULATE_WRITE (before 5.14) they are faulted in on first use instead.
#ifdef MADV_POPULATE_WRITE
  ::madvise(base_, bytes_, MADV_POPULATE_WRITE);
#endif
  check_placement(rank);
  return true;
}

void Segment::first_touch_own_queue(int rank) {
  unsigned char* queue = base_ + queue_offset(rank);
  new (queue) Finished();
  for (int i = 0; i < slots_ + kInlineEntries; ++i) new (&notices(rank)[i]) Notice();
  const std::size_t page = page_size();
  for (std::size_t off = control_bytes_; off < queue_bytes_; off += page)
    reinterpret_cast<volatile unsigned char*>(queue)[off] = 0;
}

// libnuma, opened by the first check: the shim must not load it into every
// process it is preloaded into (docs/design/shim-hot-path.md, "Start-up").
// Without it the placement goes unchecked.
namespace {
struct Numa {
  decltype(&::numa_available) available = nullptr;
  decltype(&::numa_max_node) max_node = nullptr;
  decltype(&::numa_node_of_cpu) node_of_cpu = nullptr;
  decltype(&::move_pages) move_pages = nullptr;
};
const Numa& numa() {
  static const Numa n = [] {
    Numa f;
    void* lib = ::dlopen("libnuma.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return f;
    f.available = reinterpret_cast<decltype(f.available)>(::dlsym(lib, "numa_available"));
    f.max_node = reinterpret_cast<decltype(f.max_node)>(::dlsym(lib, "numa_max_node"));
    f.node_of_cpu = reinterpret_cast<decltype(f.node_of_cpu)>(::dlsym(lib, "numa_node_of_cpu"));
    f.move_pages = reinterpret_cast<decltype(f.move_pages)>(::dlsym(lib, "move_pages"));
    if (!f.available || !f.max_node || !f.node_of_cpu || !f.move_pages) f = Numa{};
    return f;
  }();
  return n;
}
}  // namespace

// The pages of this process's queue should sit on the NUMA node it runs on.
void Segment::check_placement(int rank) const {
  const Numa& lib = numa();
  if (!lib.available) return;
  if (lib.available() < 0 || lib.max_node() < 1) return;  // one node: nothing to check
  const int cpu = ::sched_getcpu();
  const int here = cpu >= 0 ? lib.node_of_cpu(cpu) : -1;
  if (here < 0) return;
  const std::size_t page = page_size();
  std::vector<void*> pages;
  unsigned char* queue = base_ + queue_offset(rank);
  const std::size_t step = std::max(page, round_up(queue_bytes_ / 64, page));  // sample <= 64 pages
  for (std::size_t off = 0; off < queue_bytes_; off += step) pages.push_back(queue + off);
  std::vector<int> status(pages.size(), -1);
  if (lib.move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0) return;
  std::size_t elsewhere = 0;
  for (int s : status)
    if (s >= 0 && s != here) ++elsewhere;
  if (elsewhere)
    log_line("warning: shared-memory broadcast: " + std::to_string(elsewhere) + " of " +
             std::to_string(pages.size()) + " sampled pages of this process's queue are not on its NUMA node " +
             std::to_string(here) + " (is the process bound to a core?)");
}

}  // namespace prof::bcast
