// Where the full pages of the root causes' logs (delay_log.h) wait while the
// pass runs: an unlinked temporary file in $TMPDIR (/tmp when it is not
// set), appended to through a buffer, then mapped back for the two analyses
// after the pass (delay_analysis.cpp, critical_path.cpp).
//
// The logs grow with the run's history, not with what is in flight: at 16384
// ranks of 2·10^7 events they were 350 MB of a 1.29 GB peak. In the file they
// cost page cache, which the system can write out, not the process's memory.
// The analyses read them through a shared mapping whose resident pages they
// give back as they go (drop_resident), so the log's share of the process's
// memory after the pass is a budget, not the log (ResidentBudget).
//
// Invariants: append() returns where the bytes lie in the file, which is
// where they lie in the mapping map() returns; once mapped, nothing more is
// appended (a std::logic_error). A failed write (a full disk) throws a
// std::runtime_error that names the directory: the analysis fails with it,
// it never goes on with a log that lacks pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace prof::analysis::detail {

class LogSpill {
 public:
  // Creates the file (a std::runtime_error naming the directory if it cannot).
  LogSpill();
  ~LogSpill();
  LogSpill(const LogSpill&) = delete;
  LogSpill& operator=(const LogSpill&) = delete;

  // Appends `bytes` (a multiple of 8, so every page stays aligned for its
  // entries); returns their offset. Any thread.
  uint64_t append(const void* data, size_t bytes);
  // Writes what is buffered and maps the file, read-write and shared (the
  // logs are sorted in place, through the mapping, into the file); the
  // mapping's base (nullptr when nothing was appended). Later calls return
  // the same base.
  char* map();
  // Gives back the mapping's resident pages: they are read again from the
  // file (the page cache) when next touched, with what was written through
  // the mapping.
  void drop_resident();
  // The file's bytes (what was appended).
  uint64_t bytes() const { return written_ + used_; }
  // The directory of the file (for messages).
  const std::string& dir() const { return dir_; }

 private:
  void write_buffer();  // under mu_
  std::mutex mu_;
  int fd_ = -1;
  std::string dir_;
  std::vector<char> buf_;
  size_t used_ = 0;       // bytes of buf_ not yet written
  uint64_t written_ = 0;  // bytes in the file
  char* map_ = nullptr;
  bool mapped_ = false;
};

// Bounds what the analyses keep resident of a mapped log: they note the log
// bytes they read (an estimate, by ranks' logs or stretches walked) and the
// mapping's resident pages are given back each time the sum passes the budget.
class ResidentBudget {
 public:
  ResidentBudget(LogSpill* spill, size_t budget_bytes) : spill_(spill), budget_(budget_bytes) {}
  void note(size_t bytes) {
    if (!spill_) return;
    used_ += bytes;
    if (used_ > budget_) {
      spill_->drop_resident();
      used_ = 0;
    }
  }

 private:
  LogSpill* spill_;
  size_t budget_;
  size_t used_ = 0;
};

}  // namespace prof::analysis::detail
