// What the fuzz drivers share: a temporary trace directory removed at exit,
// and a stream that discards what a report writes.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <streambuf>
#include <string>

namespace prof::fuzz {

// The directory made by make_trace_dir (empty before).
inline std::string& trace_dir() {
  static std::string dir;
  return dir;
}

// A fresh directory under the system's temporary one, named from `prefix`,
// removed at exit (libFuzzer ends with exit() on success and on
// -max_total_time).
inline void make_trace_dir(const char* prefix) {
  // (mkdtemp's template: it replaces the six X with a unique name.)
  std::string name = (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
  if (!mkdtemp(name.data())) std::abort();
  trace_dir() = name;
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(trace_dir(), ec);
  });
}

struct NullBuf : std::streambuf {
  int overflow(int c) override { return c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

}  // namespace prof::fuzz
