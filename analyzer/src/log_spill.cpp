// The root causes' log pages in a temporary file (log_spill.h).
#include "log_spill.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace prof::analysis::detail {

namespace {
// Writes of 256 KiB: about 1,300 for the 350 MB of logs of 2·10^7 events
// over 16384 ranks.
constexpr size_t kBufferBytes = size_t{1} << 18;

std::string temp_dir() {
  const char* d = std::getenv("TMPDIR");
  return d && *d ? d : "/tmp";
}
}  // namespace

unsigned LogSpill::page_shift_for(size_t ranks, size_t entry_bytes) {
  const size_t entries = kLastPagesBytes / std::max<size_t>(1, ranks * entry_bytes);
  unsigned shift = kSmallestPageShift;
  while (shift < kLargestPageShift && (size_t{2} << shift) <= entries) ++shift;
  return shift;
}

LogSpill::LogSpill(unsigned writers, unsigned page_shift) : page_shift_(page_shift), dir_(temp_dir()) {
  std::string path = dir_ + "/prof-analyze-log-XXXXXX";
  fd_ = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd_ < 0)
    throw std::system_error(errno, std::generic_category(),
                            "cannot create the root causes' temporary file in " + dir_ + " (TMPDIR names the directory)");
  ::unlink(path.c_str());  // (gone with the process, however it ends)
  for (unsigned w = 0; w < std::max(writers, 1u); ++w) {
    writers_.push_back(std::make_unique<Writer>());
    writers_.back()->spill = this;
  }
}

LogSpill::~LogSpill() {
  if (map_) ::munmap(map_, map_bytes_);
  if (fd_ >= 0) ::close(fd_);
}

void LogSpill::write_at(const void* data, size_t bytes, uint64_t offset) {
  const char* from = static_cast<const char*>(data);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pwrite(fd_, from + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw std::system_error(n < 0 ? errno : ENOSPC, std::generic_category(),
                              "cannot write the root causes' temporary file in " + dir_ + " (TMPDIR names the directory)");
    done += static_cast<size_t>(n);
  }
}

void LogSpill::flush(Writer& w) {
  if (w.used == 0) return;
  write_at(w.buffer.data(), w.used, w.room);
  appended_.fetch_add(w.used, std::memory_order_relaxed);
  w.used = 0;
}

uint64_t LogSpill::append(Writer& w, const void* data, size_t bytes) {
  if (mapped_.load(std::memory_order_relaxed)) throw std::logic_error("LogSpill::append after map");
  if (bytes > kBufferBytes) throw std::logic_error("LogSpill::append of more than a buffer");
  if (w.used + bytes > w.buffer.size()) {
    if (w.buffer.empty()) w.buffer.resize(kBufferBytes);
    flush(w);
    w.room = file_end_.fetch_add(kBufferBytes, std::memory_order_relaxed);
  }
  const uint64_t at = w.room + w.used;
  std::memcpy(w.buffer.data() + w.used, data, bytes);
  w.used += bytes;
  return at;
}

char* LogSpill::map() {
  std::lock_guard<std::mutex> lock(mu_);
  if (mapped_.load(std::memory_order_relaxed)) return map_;
  for (auto& w : writers_) {
    flush(*w);
    w->buffer = {};
  }
  mapped_.store(true, std::memory_order_relaxed);
  const uint64_t appended = appended_.load(std::memory_order_relaxed);
  if (appended == 0) return nullptr;
  // (Mapped past the file's end: the copies written there later are in the
  // mapping as soon as they are in the file.)
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  copies_from_ = copies_end_ = (file_end_.load(std::memory_order_relaxed) + page - 1) / page * page;
  map_bytes_ = copies_from_ + appended;
  void* m = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_SHARED, fd_, 0);
  if (m == MAP_FAILED)
    throw std::system_error(errno, std::generic_category(),
                            "cannot map the root causes' temporary file in " + dir_);
  map_ = static_cast<char*>(m);
  return map_;
}

uint64_t LogSpill::reserve_copy(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!map_ || copies_end_ + bytes > map_bytes_) throw std::logic_error("LogSpill::reserve_copy beyond its room");
  const uint64_t at = copies_end_;
  copies_end_ += bytes;
  return at;
}

void LogSpill::release_originals() {
  std::lock_guard<std::mutex> lock(mu_);
  // (Only once the copies hold every byte appended before map(): a page
  // without its copy would read back as zeros.)
  if (map_ && copies_end_ - copies_from_ == appended_.load(std::memory_order_relaxed))
    ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(copies_from_));
}

void LogSpill::drop_resident() {
  if (map_) ::madvise(map_, map_bytes_, MADV_DONTNEED);
}

}  // namespace prof::analysis::detail
