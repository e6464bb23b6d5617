// One rank's trace file. Space is handed out by an atomic offset (no lock, so a
// signal handler can append the end definition too); event chunks are
// page-aligned and mapped MAP_SHARED, so what a thread stores is in the page
// cache at once and survives the process being killed.
//
// Every range is allocated (fallocate) before anything is written to it: a
// full disk is then a failed call when a chunk opens, never a SIGBUS on a
// mapped page later, and the file never has holes a reader could fault on.
// Allocations run ahead of use (zeros past the last chunk, padding to a
// reader), so most chunks need none; close() cuts the file to what was used.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "prof/trace_format.h"

namespace prof::shim {

class TraceFile {
 public:
  // Creates the file and writes its header. Never opens an existing file or
  // follows a symlink (O_EXCL | O_NOFOLLOW): a trace already there stays
  // untouched. false + *why on failure, the errno in last_error().
  bool create(const std::string& path, const format::FileHeader& header, std::string* why);
  bool is_open() const { return fd_ >= 0; }
  // The file's Live chunk (heartbeat and in-flight slots), mapped at creation
  // for the life of the process; nullptr before create().
  format::LiveHeader* live() const { return live_; }
  format::InFlightSlot* live_slot(uint32_t stream) const {
    return live_ && stream < live_->slot_count
               ? reinterpret_cast<format::InFlightSlot*>(reinterpret_cast<char*>(live_ + 1) +
                                                         size_t{stream} * live_->slot_bytes)
               : nullptr;
  }

  // Writes one sealed Definitions chunk holding `text` (definition lines).
  // Async-signal-safe (fallocate, pwrite and atomics only).
  bool write_definitions(const char* text, size_t len);
  // The same for the end definitions; when the file cannot grow, they go into
  // the small chunk reserved for them at creation, so a full disk still leaves
  // the end reason and the loss count in the trace. Async-signal-safe.
  bool write_end_definitions(const char* text, size_t len);

  // Maps a new unsealed Events chunk of `map_bytes` (header included; a
  // multiple of the page size), numbered `sequence` in its stream (format 8),
  // with `flags` (kChunkHome or 0). nullptr when the file cannot grow; after
  // one such failure the file stops trying (full()).
  format::ChunkHeader* map_event_chunk(size_t map_bytes, uint16_t stream, uint16_t sequence,
                                       uint64_t base_time, uint16_t flags = 0);
  // A full home chunk (format 5) copied out: reserve_copy() finds and
  // allocates room at the file's end for a sealed chunk of `used` payload
  // bytes (*at: its header's offset; false when the file cannot grow, and
  // then full()); write_copy() writes the home's header, sealed, not a home,
  // with the first `used` payload bytes there in one pwritev (false on a
  // failed or short write, and then full(): nothing more is written).
  // Async-signal-safe.
  bool reserve_copy(size_t used, uint64_t* at);
  bool write_copy(const format::ChunkHeader* home, size_t used, uint64_t at);
  // Faults the pages of a mapped range in writable, so that stores to them
  // do not fault (page aligned).
  static void populate(void* from, size_t bytes);
  bool full() const { return full_.load(std::memory_order_relaxed); }
  // errno of the last failed creation, growth or write (0: none).
  int last_error() const { return last_error_.load(std::memory_order_relaxed); }

  // Seals a mapped chunk: used length and CRC; the flag is stored last (a
  // home chunk stays one).
  // Async-signal-safe.
  static void seal(format::ChunkHeader* chunk, size_t used_bytes);
  static void unmap(format::ChunkHeader* chunk, size_t map_bytes);

  // Gives the disk space of a sealed chunk's unused tail back (the chunk keeps
  // its size in the file; its tail reads as zeros). For a chunk a thread
  // leaves for good.
  void release_tail(const format::ChunkHeader* chunk);

  // Cuts the file to what was written and closes it. `open_chunks`: each
  // thread's last chunk, sealed; their unused tails are trimmed (the one that
  // ends the file is cut off, the definitions written after it moved in front
  // of the cut; the others' tails give their disk space back).
  void close(const std::vector<format::ChunkHeader*>& open_chunks = {});

  // In a forked child: drops this process's descriptor and writes nothing,
  // ever (the parent's chunks, shared with the child, stay as they are).
  void abandon();

 private:
  struct Place {
    uint64_t offset;
    uint64_t map_bytes;
  };
  uint64_t reserve(uint64_t bytes, uint64_t align);
  bool allocate(uint64_t at, uint64_t bytes);
  void note_written(uint64_t end);
  bool place_of(const format::ChunkHeader* chunk, Place* out);
  bool move_tail_before_cut(uint64_t chunk_offset, format::ChunkHeader* chunk, uint64_t* end);
  int fd_ = -1;
  format::LiveHeader* live_ = nullptr;
  std::atomic<uint64_t> next_{sizeof(format::FileHeader)};
  std::atomic<uint64_t> written_end_{sizeof(format::FileHeader)};  // end of what was used
  std::atomic<uint64_t> allocated_{0};  // everything below is allocated (kAllocateAhead)
  std::atomic<bool> full_{false};
  std::atomic<int> last_error_{0};
  std::mutex places_mu_;  // cold: one entry per mapped chunk
  std::unordered_map<const format::ChunkHeader*, Place> places_;
};

}  // namespace prof::shim
