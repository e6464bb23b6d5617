// The whole content of a file, for the tests that compare what a run wrote
// (empty when it cannot be read: the comparison then fails and shows it).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace prof::test {

inline std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace prof::test
