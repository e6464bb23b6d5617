#include "prof/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace prof::trace {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

RegularFile open_regular_file(const std::string& path, std::string* error) {
  RegularFile file;
  // O_NONBLOCK: opening a FIFO with no writer would wait for one forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    file.open_errno = errno;
    *error = path + ": cannot open: " + std::strerror(file.open_errno);
    return file;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    *error = path + ": cannot stat: " + std::strerror(errno);
    ::close(fd);
    return file;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": is " + kind_of(st.st_mode) + ", not a regular file";
    ::close(fd);
    return file;
  }
  // O_NONBLOCK stays: Linux ignores it for a regular file's reads and
  // mappings (open(2)), and clearing it cost two fcntl calls a rank file.
  file.fd = fd;
  file.size = static_cast<uint64_t>(st.st_size);
  return file;
}

bool replace_file(const std::string& path, std::string_view bytes, std::string* error) {
  // A random suffix: a name another user cannot plant ahead of time by
  // guessing the next process id. O_EXCL refuses one planted anyway.
  std::random_device entropy;
  int fd = -1;
  std::string tmp;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, ".tmp.%08x%08x", entropy(), entropy());
    tmp = path + suffix;
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    *error = tmp + ": cannot create: " + std::strerror(errno);
    return false;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = tmp + ": cannot write: " + std::strerror(n < 0 ? errno : ENOSPC);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    *error = tmp + ": cannot write: " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": cannot replace: " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace prof::trace
