// The window index: what `prof-analyze --window` needs to start decoding a
// rank at a chunk instead of at its start (docs/trace-format.md, "The window
// index").
//
// Algorithm and invariants
//   - One pass per rank (ranks in parallel) runs the Interpreter and the
//     IntervalTracker with a handler that only counts, exactly as the engine
//     would, and saves at the start of every chunk with events, and every
//     kCheckpointEvents events inside a chunk and before every
//     kCollectiveStride-th collective call on a communicator (with the
//     cursor's position there, so decoding starts at that record), a
//     checkpoint:
//     the interpreter's state (requests in flight, collective counts per
//     communicator), the tracker's (root, open executions with their tree
//     node), the executions each tree node has closed, and the ordinal of the
//     next send and receive on every channel. Per rank it also keeps the tree
//     nodes of the whole run in creation order, so a window's tree is the
//     whole run's.
//   - Matching is by ordinals: the k-th receive on a channel matches its k-th
//     send (MPI's non-overtaking rule), the k-th collective call on a
//     communicator is its k-th instance. A set of start checkpoints, one per
//     rank, needs from before them only the sends its receivers have not yet
//     received at their starts (ordinals [received, sent) of the channel: their
//     enters are collected by replaying the sender from the latest checkpoint
//     before them, collect_sends), provided every member of a communicator has
//     made as many collective calls (WindowIndex::plan moves starts back until
//     that holds). Sends the receiver consumed before its start are skipped at
//     the receiver.
//   - The index is checked against the trace (run id, each rank file's size,
//     a checksum of its own bytes) before it is trusted; anything else is
//     rebuilt. It is written beside the trace, or in the user's cache where
//     the trace directory cannot be written (IndexPlaces); a whole analysis
//     writes it too (WindowIndexJob), so the first window finds it. A trace
//     it cannot serve (several threads on a rank, damaged or salvaged chunks,
//     a rank that did not finalize, cancelled sends) is marked so, and the
//     analysis decodes everything, saying why.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "interpret.h"
#include "intervals.h"

namespace prof::analysis::detail {

struct ChannelLess {
  bool operator()(const ChannelKey& a, const ChannelKey& b) const {
    if (a.gid != b.gid) return a.gid < b.gid;
    if (a.src != b.src) return a.src < b.src;
    if (a.dst != b.dst) return a.dst < b.dst;
    return a.tag < b.tag;
  }
};

// Sorted (key, count) pairs; absent keys count 0.
template <class K, class Less>
uint64_t count_of(const std::vector<std::pair<K, uint64_t>>& v, const K& k, Less less) {
  auto it = std::lower_bound(v.begin(), v.end(), k,
                             [&](const std::pair<K, uint64_t>& p, const K& key) { return less(p.first, key); });
  return it != v.end() && !less(k, it->first) ? it->second : 0;
}

struct WindowCheckpoint {
  uint32_t chunk = 0;                      // in the rank's stream 0
  // Where its first event's record is, inside the chunk; not valid: the
  // chunk's start.
  RankTrace::MergedCursor::Position at;
  uint64_t ordinal = 0;  // events of the rank before it
  // The chunk does not start with records continuing the previous chunk's
  // last call (a cursor started there would read them as a call of their own).
  bool clean = true;
  double first_enter = 0, last_leave = 0;  // global ns over the chunk's events
  Interpreter::Saved interp;
  IntervalTracker::Saved tracker;
  std::vector<uint64_t> executions;  // per tree node created so far
  std::vector<std::pair<ChannelKey, uint64_t>> sends, recvs;  // sorted by ChannelLess

  uint64_t sends_on(const ChannelKey& k) const { return count_of(sends, k, ChannelLess{}); }
  uint64_t recvs_on(const ChannelKey& k) const { return count_of(recvs, k, ChannelLess{}); }
  uint64_t collectives_on(uint64_t gid) const {
    for (const auto& [g, n] : interp.collective_counts)
      if (g == gid) return n;
    return 0;
  }
};

struct WindowNode {
  uint32_t parent = 0, id = 0, site = 0;
  double first_enter = 0;  // its first begin (global ns)
  bool executed = false;   // closed at least once in the run
};

// The bytes of an index file, read-only: mapped (a window parses a few of its
// thousands of records, and the checksum pass maps the page cache's pages in
// without copying them into fresh memory), or read into memory where the file
// cannot be mapped.
class IndexFileBytes {
 public:
  // Null, and *why set, when the file is absent or cannot be read.
  static std::shared_ptr<const IndexFileBytes> open(const std::string& path, std::string* why);
  IndexFileBytes() = default;
  IndexFileBytes(const IndexFileBytes&) = delete;
  IndexFileBytes& operator=(const IndexFileBytes&) = delete;
  ~IndexFileBytes();
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // munmap'ed at the end; null: the bytes are in copy_
  std::string copy_;
};

// A rank's checkpoints, in order: all in memory when the index was just
// built; read from the file, each parsed when first asked for (a window needs
// a few of thousands, so only their slots are allocated), its times known
// without parsing. Not thread-safe (the analysis plans its window on one
// thread). A record that does not parse reads as an empty checkpoint and sets
// malformed().
class WindowCheckpoints {
 public:
  size_t size() const { return spans_.size(); }
  bool empty() const { return spans_.empty(); }
  const WindowCheckpoint& operator[](size_t i) const;
  double first_enter(size_t i) const { return spans_[i].first_enter; }
  double last_leave(size_t i) const { return spans_[i].last_leave; }
  bool malformed() const { return malformed_; }

  void assign(std::vector<WindowCheckpoint> all);
  // Records [offset, offset + size) of `file` each, already checked to lie in it.
  struct Span {
    double first_enter = 0, last_leave = 0;
    uint64_t offset = 0, size = 0;
  };
  void assign(std::shared_ptr<const IndexFileBytes> file, std::vector<Span> spans, size_t nodes);
  const std::vector<Span>& spans() const { return spans_; }

 private:
  std::vector<Span> spans_;
  std::shared_ptr<const IndexFileBytes> file_;
  size_t nodes_ = 0;  // the rank's tree nodes: what a record may refer to
  mutable std::vector<std::unique_ptr<WindowCheckpoint>> parsed_;  // null: not parsed yet
  mutable bool malformed_ = false;
};

struct RankWindowIndex {
  std::vector<WindowNode> nodes;  // the whole run's, in creation order
  WindowCheckpoints checkpoints;
  std::vector<uint64_t> collective_comms;     // gids it made collective calls on
  uint64_t chunks = 0;
  // Its last leave in the run (global ns): the report's run end, which a
  // window that stops decoding early does not reach.
  double last_leave = 0;
};

struct WindowIndex {
  static constexpr uint32_t kVersion = 2;
  // A chunk of 1 MiB holds about 58,000 events: a start at most this many
  // events before the window, not a chunk's worth.
  static constexpr uint64_t kCheckpointEvents = 4096;
  // And before every kCollectiveStride-th collective call on a communicator.
  static constexpr uint64_t kCollectiveStride = 1024;
  std::string unusable;  // empty: it serves windows; else why not
  size_t unusable_at = SIZE_MAX;  // built here: the first rank (index) it cannot serve
  std::vector<RankWindowIndex> ranks;
  // A checkpoint record read so far did not parse (the index is not to be
  // used: its checksum held, so it was written wrong).
  bool malformed() const;

  // Per rank, the checkpoint to start from for the window [lo, hi] (global
  // ns): the first chunk that has a call leaving at or after lo, moved back
  // until matching needs nothing before the starts (see above).
  std::vector<size_t> plan(double lo) const;
  // Its steps: rank i's first start for lo (before any moves back), and
  // rank i's start moved back to the latest clean checkpoint with at most
  // `least` collective calls on gid, when it has more (true: moved).
  size_t first_start(size_t i, double lo) const;
  bool move_back(size_t i, uint64_t gid, uint64_t least, std::vector<size_t>& start) const;
};

// Sends on `key` with ordinals [from, to) (made before the sender's start,
// not yet received at the receiver's): their enters, in order.
struct WantedSends {
  ChannelKey key;
  uint64_t from = 0, to = 0;
  std::vector<double> enters;
};
// Fills `wanted` by replaying rank `index` (its RankTrace `t`) from the
// latest checkpoint before them up to checkpoint `start`. Returns the chunks
// it decoded.
uint64_t collect_sends(const RankTrace& t, const Registry& reg, size_t index,
                       const WorldIndex& world_to_index, const RankWindowIndex& ri, size_t start,
                       std::vector<WantedSends>& wanted);

// Where a trace's index is looked for, in this order, and written: beside the
// trace, or where the trace directory cannot be written (or `cache_only`), in
// the user's cache directory ($XDG_CACHE_HOME/prof, else ~/.cache/prof, made
// with mode 0700) under a name hashed from the trace directory's absolute path
// and run id. `cache` is empty when the user has no cache directory.
struct IndexPlaces {
  std::string beside;  // <dir>/window-index.bin
  std::string cache;
};
IndexPlaces window_index_places(const trace::TraceDir& dir);

// Whether and where a built index is written (analysis::Options).
struct IndexWriting {
  bool write = true;        // false: kept in memory only
  bool cache_only = false;  // to the cache even where the trace directory is writable
};

// The index of the trace when one matches it (IndexPlaces' order); otherwise
// built (one pass over every rank, `threads` at a time) and written as `how`
// says. `note` says which ("used PATH", "built PATH", "rebuilt (<why>) PATH",
// and whether it could be written).
WindowIndex load_or_build_window_index(const trace::TraceDir& dir, const Registry& reg,
                                       const WorldIndex& world_to_index, unsigned threads,
                                       const IndexWriting& how, std::string* note);

// A process of an MPI job holds the rank files of its block (`block`: rank
// indices, in order) and reads, builds and sends only their part of the
// index; the file is the one index of the whole trace, as one process
// writes it:
//   - read_index_part: why the file at `path` does not fit those ranks ("" when
//     it does: its checksum, the trace's rank count and their entries in its
//     key), and their part in *ix (the others' entries empty). The other
//     processes check the others' entries.
//   - build_window_index_part: their part, built (`threads` at a time).
//   - index_part: their part's bytes, for process 0.
//   - write_index_parts (process 0): the file from every process's part, with
//     the index's `unusable` reason (the first rank's in rank order), written
//     as `how` says; returns the note (as load_or_build's, `why`: what was
//     wrong with the file found, "absent" when none).
std::string read_index_part(const std::string& path, const trace::TraceDir& dir, const Registry& reg,
                            const std::vector<size_t>& block, WindowIndex* ix);
WindowIndex build_window_index_part(const trace::TraceDir& dir, const Registry& reg, const WorldIndex& world_to_index,
                                    unsigned threads, const std::vector<size_t>& block);
std::string index_part(const trace::TraceDir& dir, const WindowIndex& ix, const std::vector<size_t>& block);
std::string write_index_parts(const trace::TraceDir& dir, const std::vector<std::string>& parts,
                              const std::string& unusable, const IndexWriting& how, const std::string& why);
// The note of an index built and not written ("built <where>", or "rebuilt (<why>) <where>").
std::string note_built(const std::string& why, const std::string& where);

// The index a whole analysis writes as it goes: started when the trace has no
// usable index, it builds on threads of its own while the analysis runs, from
// readers of its own (the analysis's cursors, statistics and warnings are not
// shared with it), and is finished (more threads, then written) once the
// analysis's result is known. The threads started with the analysis are of
// idle priority (they take only CPU no one else wants) and, at finish(), hand
// the rank they hold to the threads of normal priority.
class WindowIndexJob {
 public:
  // Null when an index matching the trace exists, or nothing can be written.
  // `reg` is the analysis's (the same rank files: it is copied, not rebuilt).
  // `threads` start now, of idle priority (0: none before finish()).
  static std::unique_ptr<WindowIndexJob> start(const trace::TraceDir& dir, const Registry& reg,
                                               const IndexWriting& how, unsigned threads);
  // Builds what is left, `threads` at a time in all (the calling thread one of
  // them), and writes the index; returns the note (as load_or_build's).
  // `cancelled`, when set, is asked now and then, one thread at a time: true
  // abandons the build, and nothing is written.
  std::string finish(unsigned threads, const std::function<bool()>& cancelled);
  // Abandons a build not finished (each thread at its next 2^16 events) and
  // joins its threads.
  ~WindowIndexJob();

  struct State;

 private:
  explicit WindowIndexJob(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace prof::analysis::detail
