// Helpers shared by the format tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "prof/trace_format.h"

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

// A chunk of a file: its header's offset and the header.
struct FileChunk {
  size_t off;
  prof::format::ChunkHeader h;
};
// Walks an undamaged file's chunks in file order (zero padding between them
// skipped; it stops at anything else that is not a chunk header).
inline std::vector<FileChunk> file_chunks(const std::vector<unsigned char>& b) {
  std::vector<FileChunk> out;
  size_t off = sizeof(prof::format::FileHeader);
  while (off + sizeof(prof::format::ChunkHeader) <= b.size()) {
    FileChunk c;
    c.off = off;
    std::memcpy(&c.h, b.data() + off, sizeof c.h);
    if (c.h.magic != prof::format::kChunkMagic) {
      uint64_t word;
      std::memcpy(&word, b.data() + off, sizeof word);
      if (word != 0) break;
      off += 8;
      continue;
    }
    out.push_back(c);
    off += sizeof(prof::format::ChunkHeader) + c.h.capacity;
  }
  return out;
}
