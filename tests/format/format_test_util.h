// Helpers shared by the format tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// Bytes of the snapshot record that opens every events chunk of a version-3
// file when no interval is open (8-byte header, the depth word).
inline constexpr size_t kEmptySnapshotBytes = 12;

// A fresh directory named after the running test (and the process, so
// parallel ctest runs never share one).
inline std::string temp_dir() {
  namespace fs = std::filesystem;
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  fs::path p = fs::temp_directory_path() /
               ("prof_format_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
                std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

// A whole file's bytes, and a file replaced by bytes (to damage a trace).
inline std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), {});
}
inline void write_file(const std::string& path, const std::vector<unsigned char>& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
