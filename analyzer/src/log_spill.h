// Where the full pages of the root causes' logs (delay_log.h) wait while the
// pass runs: an unlinked temporary file in $TMPDIR (/tmp when it is not
// set), appended to through a buffer of each writer (a worker of the pass),
// then mapped back for the two analyses after the pass (delay_analysis.cpp,
// critical_path.cpp).
//
// A writer takes room in the file a buffer at a time (an atomic add to the
// file's end), so its appends take no lock and its writes run beside the
// others': with one lock for all, a worker's append waited on the other's
// 256 KiB write, and the waits' futex calls cost more than the writes.
//
// The logs grow with the run's history, not with what is in flight: at 16384
// ranks of 2·10^7 events they were 350 MB of a 1.29 GB peak. In the file they
// cost page cache, which the system can write out, not the process's memory.
// The analyses read them through a shared mapping whose resident pages they
// give back as they go (drop_resident), so the log's share of the process's
// memory after the pass is a budget, not the log (ResidentBudget).
//
// The logs are sorted after the pass (delay_analysis.cpp). A page written
// through a shared mapping would take a write fault of its own, again after
// each drop_resident: so the mapping is read-only, and a sort writes a log
// not in order, in its new order, in one piece at the file's end
// (reserve_copy, write_copy), where map() reserved room for a copy of every
// log. A log in order is read where it lies: most are (contexts and syncs
// are logged in time order; waits are nearly), and copies of every log took
// most of the root causes' time on 10^8 events over 4 ranks, and 40% of it
// on 2·10^7 over 4096. The logs' page size is the spill's (page_shift_for):
// as large as the ranks' last pages, which stay in memory, allow: whole
// pages of the file with few ranks, a few hundred bytes with thousands,
// where a log's pages lie among every other log of its worker (a walk over
// one maps its neighbours' pages too: the resident budget gives them back).
// The originals of the logs copied stay in the file (a hole punched a page
// at a time costs the mapping's TLB flush each), so it holds what was
// appended and the copies of the logs not in order; only once every log has
// a copy do the pages before the copies go (release_originals).
//
// Invariants: append() and reserve_copy() return where the bytes lie in the
// file, which is where they lie in the mapping map() returns; a writer's
// appends come from one thread at a time, and all end before map(); once
// mapped, only copies are written (append() throws a std::logic_error), and
// they fit in the room map() reserved: as many bytes as were appended before
// it. (The rest of a writer's last room in the file stays a hole.)
// A failed write (a full disk) throws a std::runtime_error that names the
// directory: the analysis fails with it, it never goes on with a log that
// lacks pages.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace prof::analysis::detail {

class LogSpill {
 public:
  // Creates the file (a std::runtime_error naming the directory if it
  // cannot), for `writers` writers (numbered from 0), its logs in pages of
  // 2^page_shift entries (PagedLog::spill_to).
  explicit LogSpill(unsigned writers = 1, unsigned page_shift = kSmallestPageShift);
  ~LogSpill();
  LogSpill(const LogSpill&) = delete;
  LogSpill& operator=(const LogSpill&) = delete;

  // A writer's buffer and the room in the file it fills (on a cache line of
  // its own: each is written by its worker alone).
  struct alignas(64) Writer {
    LogSpill* spill = nullptr;
    std::vector<char> buffer;  // allocated at its first append
    uint64_t room = 0;         // where the buffer's bytes go in the file
    size_t used = 0;           // bytes of the buffer not yet written
  };
  Writer& writer(unsigned i) { return *writers_.at(i); }

  // The logs' page size, as log2 of its entries: the largest whose last
  // pages, which stay in memory through the pass (`entry_bytes` a rank: an
  // entry of each of its logs), take at most kLastPagesBytes over `ranks`
  // ranks; from 16 entries (from 2731 ranks on: 768 bytes a rank, 12.6 MB
  // at 16384 ranks) to 4096 (up to 21 ranks).
  static constexpr unsigned kSmallestPageShift = 4, kLargestPageShift = 12;
  static constexpr size_t kLastPagesBytes = size_t{4} << 20;
  static unsigned page_shift_for(size_t ranks, size_t entry_bytes);
  unsigned page_shift() const { return page_shift_; }
  // Appends `bytes` (a multiple of 8, so every page stays aligned for its
  // entries, and at most 256 KiB) through writer `w`; returns their offset.
  // One thread at a time for each writer, before map().
  uint64_t append(Writer& w, const void* data, size_t bytes);
  // Writes what is buffered and maps the file, read-only and shared (the
  // sorts write their copies with write_copy, never through the mapping);
  // the mapping's base (nullptr when nothing was appended). Later calls
  // return the same base.
  char* map();
  // After map(): reserves `bytes` (a multiple of 8) at the end of the file,
  // past what map() found there, for a copy; returns their offset (a
  // std::logic_error beyond the room map() reserved). Any thread.
  uint64_t reserve_copy(size_t bytes);
  // Writes part of a copy at `offset` (in what reserve_copy gave). Any
  // thread, outside the lock.
  void write_copy(const void* data, size_t bytes, uint64_t offset) { write_at(data, bytes, offset); }
  // Once every page appended before map() has its copy: the file's bytes
  // before the copies go (a hole punched; where the file system cannot, they
  // stay in the page cache until the file is closed).
  void release_originals();
  // Gives back the mapping's resident pages: they are read again from the
  // file (the page cache) when next touched.
  void drop_resident();
  // The mapping's base, after map() (nullptr before, or with nothing appended).
  char* mapping() const { return map_; }
  // The directory of the file (for messages).
  const std::string& dir() const { return dir_; }

 private:
  void flush(Writer& w);  // writes the buffer's bytes at its room
  void write_at(const void* data, size_t bytes, uint64_t offset);
  std::mutex mu_;  // map() and the copies' room
  int fd_ = -1;
  unsigned page_shift_;
  std::string dir_;
  std::vector<std::unique_ptr<Writer>> writers_;
  std::atomic<uint64_t> file_end_{0};  // the end of the rooms taken
  std::atomic<uint64_t> appended_{0};  // bytes appended and written
  char* map_ = nullptr;
  std::atomic<bool> mapped_{false};
  uint64_t copies_from_ = 0;  // where the copies start (page-aligned)
  uint64_t copies_end_ = 0;   // where the next copy goes (under mu_)
  uint64_t map_bytes_ = 0;    // the mapping's length: the file and the room for copies
};

// Bounds what the analyses keep resident of a mapped log: they note the log
// bytes they read (an estimate, by ranks' logs or stretches walked) and the
// mapping's resident pages are given back each time the sum passes the budget.
// Any thread may note (the sorts note on theirs); two passing the budget at
// once may both give the pages back, which costs a second read, never a
// wrong one.
class ResidentBudget {
 public:
  // What a read of a page not resident can make resident: the kernel maps
  // with it the pages around it that the page cache holds (fault-around, 64
  // KB by default), as much of a log that lies in one piece. A walk over
  // every rank's log notes this for each.
  static constexpr size_t kTouchBytes = size_t{64} << 10;
  ResidentBudget(LogSpill* spill, size_t budget_bytes) : spill_(spill), budget_(budget_bytes) {}
  void note(size_t bytes) {
    if (!spill_) return;
    if (used_.fetch_add(bytes, std::memory_order_relaxed) + bytes > budget_) {
      used_.store(0, std::memory_order_relaxed);
      spill_->drop_resident();
    }
  }

 private:
  LogSpill* spill_;
  size_t budget_;
  std::atomic<size_t> used_{0};
};

}  // namespace prof::analysis::detail
