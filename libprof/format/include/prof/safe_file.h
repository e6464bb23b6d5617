// Opening and replacing files in a directory that someone else may write to
// (a shared trace directory): every reader and writer of trace files goes
// through these two functions, so none of them can be turned against the user.
//
// Reading: a path that names a FIFO, a device (a link to /dev/zero) or a
// directory is refused at open, which never blocks (O_NONBLOCK); the caller
// then reads at most the size fstat gave, so a file cannot make a read endless.
//
// Writing: the new contents go to a temporary name created exclusively and
// without following a link (O_CREAT | O_EXCL | O_NOFOLLOW), then renamed over
// the final name; rename replaces a link planted there instead of writing
// through it. A planted temporary name makes the write fail, never follow.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace prof::trace {

// An open read-only descriptor on a regular file and its size, or -1 with
// `error` naming the path and what was wrong ("is a FIFO, not a regular file").
struct RegularFile {
  int fd = -1;
  uint64_t size = 0;
  int open_errno = 0;  // when fd < 0: open's errno (ENOENT: no such file), or 0
};
RegularFile open_regular_file(const std::string& path, std::string* error);

// Replaces `path` with `bytes` (mode 0644, less the umask) through a temporary
// file beside it. False, with `error` naming the file and the reason, when it
// cannot; nothing is left behind then.
bool replace_file(const std::string& path, std::string_view bytes, std::string* error);

// What became of an output that `write_whole_output` wrote.
enum class OutputResult {
  kWritten,     // complete at its name
  kNotWritten,  // the system refused (`error` says why); a file already there is as it was
  kFillFailed,  // `fill` returned false (it said why); a file already there is as it was
};

// Writes an output the user named (a report) whole or not at all. Where
// `path` is, or leads through links to, a regular file, or names nothing
// yet, `fill` writes a temporary file beside it, renamed over the file only
// once complete: a full disk or a failed `fill` leaves an earlier report
// whole. The new file keeps an existing file's mode, and links to it stay
// links. A device, a FIFO or a dangling link (/dev/stdout, /dev/null) is
// written as named, as is a writable file in a directory that is not.
OutputResult write_whole_output(const std::string& path, const std::function<bool(std::ostream&)>& fill,
                                std::string* error);

// Where `path` leads: links and `..` resolved as far as the path exists, the
// rest made absolute.
inline std::filesystem::path resolved_path(const std::string& path) {
  std::error_code ec;
  // Absolute first: weakly_canonical leaves a relative path whose first part
  // does not exist relative, so "x" and "./x" would differ.
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec).lexically_normal();
  if (ec) return std::filesystem::path(path).lexically_normal();
  std::filesystem::path p = std::filesystem::weakly_canonical(absolute, ec);
  return ec ? absolute : p;
}

// Whether two outputs would write one regular file (one path through links,
// hard links or `..`, or a file not yet there named twice): the later would
// replace the earlier. A device or pipe (/dev/null) takes any number of writers.
inline bool same_output_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  const bool a_exists = std::filesystem::exists(a, ec);
  if (a_exists && !std::filesystem::is_regular_file(a, ec)) return false;
  if (a_exists && std::filesystem::exists(b, ec))
    return std::filesystem::equivalent(a, b, ec);  // (one file under two names, hard links too)
  return resolved_path(a) == resolved_path(b);
}

}  // namespace prof::trace
