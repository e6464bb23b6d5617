// Runs a command line in a shell for the CLI tests: its exit status, stdout
// and stderr together in *out.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace prof::test {

inline int run_shell(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf;
  std::string text;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) text.append(buf.data(), n);
  const int st = ::pclose(p);
  if (out) *out = text;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace prof::test
