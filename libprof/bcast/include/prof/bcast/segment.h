// The shared-memory segment of one node's share of a communicator (Kurnosov
// and Tokmasheva's NUMA MPI_Bcast, section 4.1, Fig. 1; docs/references.md),
// made collectively over that node communicator.
//
// Layout, every part page-aligned: per process its queue: a control area (its
// `finished` word, s slot notices, kInlineEntries inline notices, one cache line
// each), then s buffers of f bytes. Each process first-touches its own queue
// (readahead off with MADV_RANDOM meanwhile), so its pages come from its NUMA
// node, which move_pages then checks; then every process maps all pages at once.
// Every word that is waited on has a single writer (a notice: the process's
// parent in the tree; a `finished` word: its owner), so no line has two writers.
//
// Safety: the segment never has a name. The first process makes it with
// memfd_create and sizes it with posix_fallocate (memory the node cannot give
// fails here, never as SIGBUS later); the others open that process's
// descriptor through /proc/PID/fd. Nothing is ever in /dev/shm, so nothing can
// be left there however the job ends, and a segment larger than half the
// node's available memory is refused before anything is made.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "prof/bcast/params.h"

namespace prof::bcast {

// A notification, written by a process's parent in the tree (release) and
// waited on by the process (acquire): `tag` is 1 + the use number it announces
// (64 bits: never wraps). Messages of at most kInlineBytes travel in `data`, in
// the same cache line, so the reader's one miss brings the message with it.
struct alignas(64) Notice {
  std::atomic<uint64_t> tag{0};
  unsigned char data[56];
};
static_assert(sizeof(Notice) == 64, "a notice is one cache line");
constexpr std::size_t kInlineBytes = sizeof(Notice::data);
// Inline notices per process: a ring this deep lets the root go that many small
// broadcasts between looks at the others' `finished` words.
constexpr int kInlineEntries = 64;

// 1 + the last use this process has completed (as root or reader), written only
// by its owner (release).
struct alignas(64) Finished {
  std::atomic<uint64_t> use{0};
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

  std::atomic<uint64_t>& finished(int rank) const {
    return reinterpret_cast<Finished*>(base_ + queue_offset(rank))->use;
  }
  Notice& slot_notice(int rank, int slot) const { return notices(rank)[slot]; }
  Notice& inline_notice(int rank, int entry) const { return notices(rank)[slots_ + entry]; }
  unsigned char* buffer(int rank, int slot) const {
    return base_ + queue_offset(rank) + control_bytes_ + std::size_t(slot) * fragment_;
  }
  std::size_t bytes() const { return bytes_; }

 private:
  // Maps the segment (bytes_ from fd) at base_; false with the reason in *why.
  bool map(int fd, std::string* why);
  std::size_t queue_offset(int rank) const { return std::size_t(rank) * queue_bytes_; }
  Notice* notices(int rank) const { return reinterpret_cast<Notice*>(base_ + queue_offset(rank) + sizeof(Finished)); }
  void first_touch_own_queue(int rank);
  void check_placement(int rank) const;

  unsigned char* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t queue_bytes_ = 0, control_bytes_ = 0, fragment_ = 0;
  int slots_ = 0;
};

// Where the broadcast's rare messages go (one line each; warnings, and an
// informational line per segment made); stderr (warnings only) by default.
using LogFn = void (*)(bool warning, const std::string& line);
void set_log(LogFn fn);
void log_line(const std::string& line);  // a warning
void log_info(const std::string& line);

}  // namespace prof::bcast
