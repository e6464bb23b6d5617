// One rank's trace file. Space is handed out by an atomic offset (no lock, so a
// signal handler can append the end definition too); event chunks are
// page-aligned and mapped MAP_SHARED, so what a thread stores is in the page
// cache at once and survives the process being killed.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "prof/trace_format.h"

namespace prof::shim {

class TraceFile {
 public:
  // Creates (truncates) the file and writes its header. false + *why on failure.
  bool create(const std::string& path, const format::FileHeader& header, std::string* why);
  bool is_open() const { return fd_ >= 0; }

  // Writes one sealed Definitions chunk holding `text` (definition lines).
  // Async-signal-safe (pwrite + atomics only).
  bool write_definitions(const char* text, size_t len);

  // Maps a new unsealed Events chunk of `map_bytes` (header included; a
  // multiple of the page size). nullptr when the file cannot grow.
  format::ChunkHeader* map_event_chunk(size_t map_bytes, uint32_t stream, uint64_t base_time);

  // Seals a mapped chunk: used length and CRC; the flag is stored last.
  // Async-signal-safe.
  static void seal(format::ChunkHeader* chunk, size_t used_bytes);
  static void unmap(format::ChunkHeader* chunk, size_t map_bytes);

  // Cuts the file to what was handed out and closes it.
  void close();

 private:
  uint64_t reserve(uint64_t bytes, uint64_t align);
  int fd_ = -1;
  std::atomic<uint64_t> next_{sizeof(format::FileHeader)};
};

}  // namespace prof::shim
