// The timeline's state, shared by its build (timeline.cpp; its blocks:
// timeline_blocks.cpp) and its queries (timeline_query.cpp).
#pragma once

#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "damage_stop.h"
#include "interpret.h"
#include "mapped_array.h"
#include "prof/analysis/timeline.h"
#include "prof/trace_reader.h"
#include "timeline_store.h"

namespace prof::analysis::timeline_detail {

TimelineKind kind_of(format::FuncKind k);

struct BlockInfo {
  int64_t first_enter = 0;
  int64_t max_leave = 0;  // the largest leave of this block and every one before it
  uint32_t count = 0;
  uint32_t packed_bytes = 0;         // its records packed (packing::write_packed)
  const uint8_t* memory = nullptr;  // where they are in memory (a stage's buffer); null: in the spill file
  uint64_t file_offset = 0;
};

struct Row;

// Where a build thread packs its blocks: a buffer of kStageBytes. When it is
// full, and when the thread is done, the stage is kept in memory while
// TimelineOptions::memory_bytes allows (the buffer becomes the timeline's,
// and the thread maps a new one), else written to the spill file in one go
// and reused: one write and one lock per 400 blocks instead of one each, the
// file's room taken under the lock and the writing outside it, so build
// threads write at the same time. A block is read where BlockInfo::memory
// says (its stage's buffer) until its stage is written; the write points it
// at the file under its row's lock before the buffer is reused. The file is
// written through the page cache: a query reads spilled blocks from there,
// not from the disk.
struct BlockStage {
  static constexpr size_t kStageBytes = size_t{4} << 20;
  BlockStage() = default;
  BlockStage(const BlockStage&) = delete;
  BlockStage& operator=(const BlockStage&) = delete;
  // Impl::retire must have placed its blocks first, or they would point at
  // freed memory: a buffer that still holds blocks (a retire that failed) is
  // left mapped.
  ~BlockStage();
  uint8_t* buffer = nullptr;  // kStageBytes, mapped on first use
  size_t used = 0;
  std::vector<std::pair<Row*, size_t>> blocks;  // in the buffer: row, block index
};

// Times in ns from the trace's start. 20 bytes: packed to 4-byte
// alignment (x86 loads unaligned doubles at no cost), as a 10^8-event trace
// holds 2 * 10^7 of them and every byte held is a byte the kernel zeroes.
#pragma pack(push, 4)
struct Execution {
  double start, end;
  uint32_t node;
};
#pragma pack(pop)
static_assert(sizeof(Execution) == 20);

// A message as seen from its sending row (first: the send's index) and from
// its receiving row (first: the receive's index): 12 bytes each.
struct SentMessage {
  uint32_t first, recv_row, recv_index;
};
// A receive: the call that completed it (`first`), its send, and the call
// that issued it (Recv, Sendrecv, Irecv, Start), where its waiting starts.
struct ReceivedMessage {
  uint32_t first, send_row, send_index;
  uint32_t issue_row, issue_index;
};
struct CollectiveRef {
  uint32_t first, instance;  // the call's index, its instance
};
struct EventRefPublic {
  uint32_t row, index;
};
struct CollectiveInstance {
  uint64_t gid, seq;
  uint32_t first_member, count;  // into Impl::members
};

struct Row {
  TimelineRow id;
  mutable std::shared_mutex mutex;
  // Published (under `mutex`).
  std::vector<BlockInfo> blocks;
  uint64_t count = 0;
  Pyramid pyramid;
  int64_t published_leave = 0;  // the last published call's leave (user time runs from it)
  bool has_published_leave = false;
  std::unordered_map<uint64_t, uint64_t> big_durations, big_bytes;
  detail::MappedArray<Execution> executions;       // sorted by start
  detail::MappedArray<int32_t> execution_parent;   // the innermost one enclosing each (-1: none)
  // Per pyramid leaf and one past the last: the first execution starting in
  // that leaf or later (made with the waits, once the build is complete;
  // empty before). A summarized row's query finds where each bucket's
  // executions start from it and a search inside one leaf's executions, not
  // a search of the whole list (4 bytes a leaf).
  std::vector<uint32_t> execution_by_leaf;
  detail::MappedArray<SentMessage> sent;           // by send index
  detail::MappedArray<ReceivedMessage> received;   // by receive index
  detail::MappedArray<CollectiveRef> collectives;  // by call index
  // The builder's alone.
  std::unique_ptr<CallColumns> pending;  // the block being made (allocated at the row's first call)
  std::vector<std::pair<uint64_t, uint64_t>> pending_durations, pending_bytes;

  uint64_t duration(const Record& r, uint64_t index) const {
    return r.flags & kDurationOverflow ? big_duration(r, index) : r.duration;
  }
  uint64_t bytes_of(const Record& r, uint64_t index) const {
    return r.flags & kBytesOverflow ? big_byte_count(r, index) : r.bytes;
  }
  uint64_t big_duration(const Record& r, uint64_t index) const;
  uint64_t big_byte_count(const Record& r, uint64_t index) const;
};

struct Impl {
  TimelineOptions options;
  trace::TraceDir dir;
  detail::Registry registry;
  std::unique_ptr<detail::WorldIndex> world_index;
  double t_first = 0;  // global ns of the trace's start
  uint64_t events_estimate = 0;

  std::vector<std::unique_ptr<Row>> rows;
  std::vector<TimelineRow> row_list;
  std::vector<uint32_t> first_row;  // per rank index, and one past the last
  std::vector<std::string> site_labels;
  // Records' name fields hold site indexes (timeline_store.h record_name):
  // the run names at most kNameFunctionMask + 1 functions.
  bool names_hold_sites = true;

  // Names discovered while building (under names_mutex).
  mutable std::mutex names_mutex;
  std::vector<TimelineNode> node_list;
  std::unordered_multimap<uint64_t, uint32_t> node_index;
  std::vector<uint64_t> comm_ids;
  std::unordered_map<uint64_t, uint32_t> comm_index;
  // An MPI call's own site, for a viewer's hover (Timeline::call_site): (rank
  // index, function, site index) -> Registry site, each entered once by its
  // rank's builder. A few entries per function and rank, not per call.
  std::unordered_map<uint64_t, uint32_t> call_sites;
  static uint64_t call_site_key(size_t rank_index, uint32_t function, uint8_t site_index) {
    return uint64_t{rank_index} << 32 | uint64_t{function} << 8 | site_index;
  }

  mutable std::mutex warnings_mutex;
  std::vector<std::string> warning_list;
  std::optional<detail::RunSpan> span;  // the run's (damage_stop.h), once the timeline is opened
  std::map<std::string, uint64_t> problem_counts;
  bool spill_failed = false;

  mutable std::mutex spill_mutex;
  int spill_fd = -1;
  uint64_t spill_end = 0;
  uint64_t spill_reserved = 0;  // the file's blocks reserved so far (UINT64_MAX: cannot)
  static constexpr uint64_t kSpillReserve = uint64_t{64} << 20;
  static constexpr size_t kSpillPiece = size_t{64} << 10;
  std::atomic<uint64_t> memory_used{0};  // packed records kept in memory
  // Stage buffers kept in memory (address, bytes), unmapped with the timeline.
  std::mutex kept_mutex;
  std::vector<std::pair<uint8_t*, size_t>> kept_stages;
  ~Impl();

  std::atomic<bool> cancel_flag{false};
  // A build thread caught an exception: every thread stops. The first one is
  // kept as it was thrown (storing it allocates nothing, which matters when it
  // is a std::bad_alloc); build() describes it.
  std::atomic<bool> failed{false};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  bool stopping() const { return cancel_flag.load(std::memory_order_relaxed) || failed.load(std::memory_order_relaxed); }
  void fail(std::exception_ptr e) {
    std::lock_guard lock(failure_mutex);
    if (!failure) failure = std::move(e);
    failed.store(true);
  }
  std::atomic<bool> finished{false};
  std::atomic<uint64_t> events_built{0};
  std::atomic<size_t> ranks_built{0};
  std::atomic<int64_t> last_leave{-1};
  std::mutex progress_mutex;

  // Pairs (published once, when `finished`).
  mutable std::shared_mutex pairs_mutex;
  detail::MappedArray<CollectiveInstance> instances;
  detail::MappedArray<EventRefPublic> members;
  // Per instance: its last member's enter (ns), where every member's wait ends.
  detail::MappedArray<int64_t> instance_last_enter;
  // The most the waits step held beyond the timeline on a thread (bytes).
  std::atomic<uint64_t> waits_scratch_peak{0};

  uint32_t row_of(size_t rank_index, uint32_t stream) const {
    return first_row[rank_index] + static_cast<uint32_t>(stream_slot(rank_index, stream));
  }
  // A stream's slot among its rank's rows (a damaged stream number: the main thread's).
  size_t stream_slot(size_t rank_index, uint32_t stream) const {
    const size_t streams = first_row[rank_index + 1] - first_row[rank_index];
    return stream < streams ? stream : 0;
  }
  uint32_t node(uint32_t parent, uint32_t id, uint32_t site);
  const std::string& site_label(uint32_t index) const {
    static const std::string none;
    return index < site_labels.size() ? site_labels[index] : none;
  }
  template <class F>
  void note_problem(detail::WarningKind kind, F&&) {
    std::lock_guard lock(warnings_mutex);
    ++problem_counts[std::string(detail::category_of(kind))];
  }
  // Appends `size` bytes to the spill file; false when it cannot be written.
  bool spill(const uint8_t* bytes, size_t size, uint64_t* offset);
  void publish(Row& row, BlockStage& stage);
  // Keeps the stage's blocks in memory, or writes them to the spill file and
  // points them there; the stage is then empty.
  void retire(BlockStage& stage);
  void report_progress();
  double built_fraction() const;
  // A block's records, unpacked into `buffer` (caller holds the row's lock).
  const Record* block_records(const Row& row, size_t block, std::vector<Record>& buffer) const;
  // Its enters and durations alone, into arrays of kBlockRecords (the same).
  void block_times(const Row& row, size_t block, int64_t* enter, uint32_t* duration) const;
  // Where its packed records are: in memory, or read from the spill file
  // into `scratch`; null when they cannot be read.
  const uint8_t* packed_block(const Row& row, size_t block, std::vector<uint8_t>& scratch) const;
};

// Waits (timeline_waits.cpp): the analysis's PotentSync instants of a row, as
// the union of its messages' and collective calls' waits.

// Enter and duration of any row's call, the blocks it read kept unpacked
// (bounded, as a query's). Rows are locked (shared) while read, but `held`:
// its caller holds that one's lock already.
class RecordReader {
 public:
  explicit RecordReader(const Impl& tl, const Row* held = nullptr) : tl_(tl), held_(held) {}
  std::pair<int64_t, uint64_t> enter_duration(uint32_t row, uint64_t index);

 private:
  static constexpr size_t kKept = 64;
  const Impl& tl_;
  const Row* held_;
  // Enters and durations alone (12 bytes a call, not a whole record's 32).
  struct Times {
    std::vector<int64_t> enter;
    std::vector<uint32_t> duration;
  };
  std::map<std::pair<const Row*, size_t>, Times> blocks_;
};

using WaitSpans = std::vector<std::pair<int64_t, int64_t>>;  // [begin, end) ns
// A receive issued among a row's calls and completed after them is found
// among the next this many receives of the row.
inline constexpr size_t kWaitLookahead = 64;
// Appends the waits of row `ri` whose waiting call (a receive's completing
// call, a collective call) has an index in [first, last), and, with
// `lookahead`, receives issued there and completed within kWaitLookahead
// receives after. The caller holds the row's lock (shared); once the build is
// complete.
void row_wait_spans(const Impl& tl, RecordReader& reader, size_t ri, uint64_t first, uint64_t last,
                    bool lookahead, WaitSpans& spans);
// Adds the union of `spans` (sorted and merged here) to cells
// [origin + i*width, origin + (i+1)*width), i < n: the time of each inside it.
void add_wait_spans(WaitSpans& spans, double origin, double width, double* cells, size_t n);
// The build's last step, on its threads: first, per row, its collective
// calls' enters into their instances' last enter (INT64_MIN before);
// then per row the union of its waits on its pyramid (pyramid_waits). Both
// read a row's blocks in order, once.
void collective_last_enters(Impl& tl, size_t ri, detail::MappedArray<int64_t>& last_enter);
void pyramid_waits(Impl& tl, size_t ri);

}  // namespace prof::analysis::timeline_detail
