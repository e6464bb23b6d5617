// The shared-memory segment of one node's share of a communicator (seed 001,
// section 4.1, Fig. 1), made collectively over that node communicator.
//
// Layout, every part page-aligned: a header page; the q set counters (op,
// readers), each on its own cache line; then per process its queue: s control
// words (one cache line each), then s buffers of f bytes. Each process
// first-touches its own queue (readahead off with MADV_RANDOM meanwhile), so its
// pages come from its NUMA node, which move_pages then checks.
//
// Safety: the name is unique per creating process and segment, created with
// O_CREAT|O_EXCL and mode 0600, sized with posix_fallocate (a full /dev/shm fails
// here, never as SIGBUS later), and unlinked as soon as every process has mapped
// it, so nothing remains in /dev/shm however the job ends afterwards.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "bcast_params.h"

namespace prof::bcast {

// The counters of one set of slots. `op` is 1 + the set-use number the root
// has opened the set for; `readers` counts the processes that have not yet
// finished copying out of the set's current use.
struct alignas(64) SetSync {
  std::atomic<uint64_t> op{0};
  alignas(64) std::atomic<int64_t> readers{0};
};

// Written by a process's parent in the notification tree: the low 32 bits the
// fragment length, the high 32 bits (1 + the set-use number) modulo 2^32.
struct alignas(64) SlotControl {
  std::atomic<uint64_t> stamp{0};
};

class Segment {
 public:
  Segment() = default;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  // Collective over node_comm (every process of one node). True on every
  // process when all mapped the segment; false on every process otherwise, with
  // `why` set on those that failed.
  bool create(MPI_Comm node_comm, const Settings& settings, std::string* why);

  SetSync& set(int k) const { return sets_[k]; }
  SlotControl& control(int rank, int slot) const {
    return reinterpret_cast<SlotControl*>(base_ + queue_offset(rank))[slot];
  }
  unsigned char* buffer(int rank, int slot) const {
    return base_ + queue_offset(rank) + control_bytes_ + std::size_t(slot) * fragment_;
  }
  std::size_t bytes() const { return bytes_; }

  // The name a segment of this process gets next (exposed for the tests).
  static std::string next_name();

 private:
  // Maps the segment (bytes_ from fd) at base_; false with the reason in *why.
  bool map(int fd, std::string* why);
  std::size_t queue_offset(int rank) const { return queues_offset_ + std::size_t(rank) * queue_bytes_; }
  void first_touch_own_queue(int rank);
  void check_placement(int rank) const;

  unsigned char* base_ = nullptr;
  std::size_t bytes_ = 0;
  SetSync* sets_ = nullptr;
  std::size_t queues_offset_ = 0, queue_bytes_ = 0, control_bytes_ = 0, fragment_ = 0;
  int slots_ = 0;
};

// Where the broadcast's rare messages go (one line each; warnings, and an
// informational line per segment made); stderr (warnings only) by default.
using LogFn = void (*)(bool warning, const std::string& line);
void set_log(LogFn fn);
void log_line(const std::string& line);  // a warning
void log_info(const std::string& line);

}  // namespace prof::bcast
