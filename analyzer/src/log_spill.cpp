// The root causes' log pages in a temporary file (log_spill.h).
#include "log_spill.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

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

LogSpill::LogSpill() : dir_(temp_dir()) {
  std::string path = dir_ + "/prof-analyze-log-XXXXXX";
  fd_ = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd_ < 0)
    throw std::runtime_error("cannot create the root causes' temporary file in " + dir_ + ": " +
                             std::strerror(errno) + " (TMPDIR names the directory)");
  ::unlink(path.c_str());  // (gone with the process, however it ends)
  buf_.resize(kBufferBytes);
}

LogSpill::~LogSpill() {
  if (map_) ::munmap(map_, written_);
  if (fd_ >= 0) ::close(fd_);
}

void LogSpill::write_buffer() {
  size_t done = 0;
  while (done < used_) {
    const ssize_t n = ::pwrite(fd_, buf_.data() + done, used_ - done, static_cast<off_t>(written_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw std::runtime_error("cannot write the root causes' temporary file in " + dir_ + ": " +
                               std::strerror(n < 0 ? errno : ENOSPC) + " (TMPDIR names the directory)");
    done += static_cast<size_t>(n);
  }
  written_ += used_;
  used_ = 0;
}

uint64_t LogSpill::append(const void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (mapped_) throw std::logic_error("LogSpill::append after map");
  if (used_ + bytes > buf_.size()) write_buffer();
  const uint64_t at = written_ + used_;
  std::memcpy(buf_.data() + used_, data, bytes);
  used_ += bytes;
  return at;
}

char* LogSpill::map() {
  std::lock_guard<std::mutex> lock(mu_);
  if (mapped_) return map_;
  write_buffer();
  buf_ = {};
  mapped_ = true;
  if (written_ == 0) return nullptr;
  void* m = ::mmap(nullptr, written_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (m == MAP_FAILED)
    throw std::runtime_error("cannot map the root causes' temporary file in " + dir_ + ": " + std::strerror(errno));
  map_ = static_cast<char*>(m);
  return map_;
}

void LogSpill::drop_resident() {
  if (map_) ::madvise(map_, written_, MADV_DONTNEED);
}

}  // namespace prof::analysis::detail
