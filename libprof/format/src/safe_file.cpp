#include "prof/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ext/stdio_filebuf.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
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

namespace {

// A file created exclusively beside `path`, never through a link, with
// `mode` (less the umask); its descriptor, or -1 with `error` set and errno kept.
int create_temporary_beside(const std::string& path, mode_t mode, std::string* tmp, std::string* error) {
  // A random suffix: a name another user cannot plant ahead of time by
  // guessing the next process id. O_EXCL refuses one planted anyway.
  std::random_device entropy;
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, ".tmp.%08x%08x", entropy(), entropy());
    *tmp = path + suffix;
    fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    const int err = errno;
    *error = *tmp + ": cannot create: " + std::strerror(err);
    errno = err;
  }
  return fd;
}

}  // namespace

bool replace_file(const std::string& path, std::string_view bytes, std::string* error) {
  std::string tmp;
  const int fd = create_temporary_beside(path, 0644, &tmp, error);
  if (fd < 0) return false;
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

OutputResult write_whole_output(const std::string& path, const std::function<bool(std::ostream&)>& fill,
                                std::string* error) {
  error->clear();
  struct stat st{};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  struct stat link{};
  const bool dangling = !exists && ::lstat(path.c_str(), &link) == 0;
  // The file's own name behind any links, so that the rename replaces the
  // file and keeps the links to it.
  std::string target = path;
  if (exists && S_ISREG(st.st_mode))
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      target = real;
      std::free(real);
    }
  int fd = -1;
  std::string tmp;
  if ((exists && S_ISREG(st.st_mode)) || (!exists && !dangling)) {
    std::string create_error;
    fd = create_temporary_beside(target, exists ? 0600 : 0666, &tmp, &create_error);
    // A writable file in a directory that is not: written in place.
    if (fd < 0 && errno != EACCES && errno != EPERM) {
      *error = std::strerror(errno);
      return OutputResult::kNotWritten;
    }
    if (fd >= 0 && exists) ::fchmod(fd, st.st_mode & 07777);
  }
  if (fd < 0) {  // a device, a FIFO, a dangling link: written as named
    errno = 0;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    bool filled = true;
    if (out) {
      filled = fill(out);
      out.flush();
    }
    if (!out) {
      *error = errno != 0 ? std::strerror(errno) : "output error";
      return OutputResult::kNotWritten;
    }
    return filled ? OutputResult::kWritten : OutputResult::kFillFailed;
  }
  __gnu_cxx::stdio_filebuf<char> buffer(fd, std::ios::out | std::ios::binary);
  std::ostream out(&buffer);
  errno = 0;
  const bool filled = fill(out);
  out.flush();
  int err = out ? 0 : (errno != 0 ? errno : EIO);
  if (buffer.close() == nullptr && err == 0) err = errno != 0 ? errno : EIO;
  if (!filled || err != 0) {
    ::unlink(tmp.c_str());
    if (err != 0) *error = std::strerror(err);
    return err != 0 ? OutputResult::kNotWritten : OutputResult::kFillFailed;
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    *error = std::string("cannot replace it: ") + std::strerror(errno);
    ::unlink(tmp.c_str());
    return OutputResult::kNotWritten;
  }
  return OutputResult::kWritten;
}

}  // namespace prof::trace
