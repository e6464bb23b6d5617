// The timeline layer: "what happened on these rows between t0 and t1", for a
// viewer that draws a trace of 10^8 events at interactive speed (no Qt here).
//
// A Timeline is opened on a trace directory and built in one pass over every
// rank (Timeline::build, on threads of its own); queries may run on another
// thread at any time and see what is built so far.
//
// Rows: one per rank and thread (stream) of the trace, in rank order.
// Times: nanoseconds from the trace's start (its earliest event, as for
// `prof-analyze --window`), on the synchronized global clock.
//
// A query names rows, a range [from, to) and a width in buckets. For each row
// it answers with the calls themselves when at most `max_events` overlap the
// range, else with per-bucket summaries. Summaries come from a level-of-detail
// pyramid per row (leaves of a fixed power-of-two width in ns, each level above
// merging two cells), so a summary query reads O(buckets) cells; the buckets
// are then that level's cells (aligned to its width, between W and 2W of them
// over the range), exact for the definitions below. A range narrower than one
// leaf per bucket is summarized from the calls themselves.
//
// Summary of a bucket [b0, b1) of a row:
//   count        calls (and markers) that enter in [b0, b1)
//   time[kind]   time of calls of that kind inside [b0, b1) (clipped); User is
//                the time between consecutive calls of the row (user code)
//   dominant     the kind with the most time (ties: the lower kind)
//   longest      the longest call overlapping the bucket (ties: the earliest)
//   wait         time inside [b0, b1) at which the row waits: the union of
//                its messages' and collective calls' waits (TimelineMessage,
//                TimelineCollective), the analysis's PotentSync instants;
//                0 until the build is complete (waits need the pairs)
//
// Memory (bytes per event, see docs/design/timeline.md): a call record is 32
// bytes unpacked and about 10 packed in blocks of 1024, kept in memory up to
// TimelineOptions::memory_bytes, the rest in an unlinked temporary file read
// back with pread; 24 per interval execution, 32 per matched message, 8 per
// collective member and 32 per instance; the pyramid is bounded per row (at most
// TimelineOptions::leaves_per_row leaves of 64 bytes and 8 of waits, plus as
// many above) and in all (2^21 leaves shared by the rows, at least 512 each:
// 288 MiB up to 4,096 rows).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prof::analysis {

namespace timeline_detail {
struct Impl;
}

// What a call is, for drawing. User is time between calls (never a call).
enum class TimelineKind : uint8_t {
  User = 0,
  PointToPoint,  // sends, receives, their starts and completions, probes
  Collective,
  AllToAll,
  Marker,        // interval begin/end markers
  OtherMpi,      // every other MPI call
};
inline constexpr int kTimelineKinds = 6;
const char* timeline_kind_name(TimelineKind kind);

struct TimelineRow {
  int rank = -1;        // MPI_COMM_WORLD rank
  uint32_t stream = 0;  // thread stream of the rank (0: the main thread)
};

// One MPI call (or marker) of a row.
struct TimelineCall {
  size_t row = 0;
  uint64_t index = 0;      // position in the row (enter order)
  int64_t enter = 0;       // ns from the trace's start
  uint64_t duration = 0;   // ns
  std::string_view function;  // "MPI_Send", ...; valid while the Timeline lives
  TimelineKind kind = TimelineKind::OtherMpi;
  int32_t peer = -1;       // world rank of the point-to-point peer (-1: none); Recv: source
  int32_t tag = -1;
  uint64_t bytes = 0;
  uint64_t comm = 0;       // communicator's global id (the same on every rank)
  bool has_comm = false;
  // Markers: the interval id, begin or end, and the call site (Timeline::site).
  uint32_t interval_id = 0;
  bool marker_begin = false;
  uint32_t site = 0;
  // MPI calls: the function's index among the run's (function() gives its
  // name) and its site index among the function's call sites on the rank
  // (0: none recorded); Timeline::call_site resolves the two.
  uint32_t function_index = 0;
  uint8_t call_site_index = 0;
  int64_t leave() const { return enter + static_cast<int64_t>(duration); }
};

// A node of the interval tree, keyed as the analysis keys it: (parent node,
// interval id, call site of the begin marker). Node 0 is the whole run.
struct TimelineNode {
  int parent = -1;
  uint32_t id = 0;      // the marker's interval id (0 for the root)
  uint32_t site = 0;    // Timeline::site index of the begin marker (0: none)
  int level = 0;
};

// One execution of an interval on a row: from its begin marker's return to
// its end marker's call (the root: the rank's run, on the rank's first row).
struct TimelineExecution {
  size_t row = 0;
  uint32_t node = 0;
  double start = 0, end = 0;  // ns from the trace's start
};

// A message: the n-th send on a channel (communicator, source, destination,
// tag) paired with the n-th receive on it, as the analysis pairs them.
struct TimelineMessage {
  size_t send_row = 0;
  uint64_t send_index = 0;  // the call that sent (Send, Isend, Sendrecv, Start)
  size_t recv_row = 0;
  uint64_t recv_index = 0;  // the call that received (Recv, Sendrecv, or the completing Wait/Test)
  // The call that issued the receive (Recv, Sendrecv, Irecv, or the Start of
  // a persistent receive): the receiving call itself when it is blocking.
  size_t issue_row = 0;
  uint64_t issue_index = 0;
  int64_t send_enter = 0, recv_enter = 0, recv_leave = 0, issue_enter = 0;
  // A late sender: from the receive's issue to the send's enter, but no later
  // than the receiving call's leave (the analysis's PotentSync instants,
  // docs/metrics.md), so it may lie partly outside MPI calls. The waiting
  // is [issue_enter, issue_enter + wait).
  uint64_t wait = 0;
};

// One collective instance: the k-th collective call on a communicator of each
// member. wait[i]: member i's time before the last member entered.
struct TimelineCollective {
  uint64_t comm = 0;
  uint64_t sequence = 0;
  struct Member {
    size_t row;
    uint64_t index;
    int64_t enter;
    uint64_t duration;
    uint64_t wait;
  };
  std::vector<Member> members;  // in row order
};

struct TimelineBucket {
  uint32_t count = 0;
  double time[kTimelineKinds] = {};  // ns
  TimelineKind dominant = TimelineKind::User;
  bool has_longest = false;
  uint64_t longest_index = 0;        // the row's call index
  uint64_t longest_duration = 0;     // ns (saturated at 2^32 - 1)
  double wait = 0;                   // ns of PotentSync instants (see above)
};

struct TimelineQuery {
  std::vector<size_t> rows;  // empty: every row
  double from = -std::numeric_limits<double>::infinity();  // ns from the trace's start
  double to = std::numeric_limits<double>::infinity();
  uint32_t buckets = 2000;
  // A row answers with its calls when at most this many overlap the range;
  // 0: two per bucket.
  uint64_t max_events = 0;
};

struct TimelineRowAnswer {
  size_t row = 0;
  bool summarized = false;
  std::vector<TimelineCall> calls;          // !summarized: every call overlapping the range
  double bucket_from = 0, bucket_width = 0; // summarized: bucket i is
  std::vector<TimelineBucket> buckets;      //   [from + i*width, from + (i+1)*width)
  // Executions overlapping the range. Rows answered with calls: every one of
  // them, unless more than max_events (then none and `executions_omitted`).
  // Summarized rows (a viewer's nesting bands): executions of one level that
  // touch are one (the first one's node, from its start to the last one's
  // end), and per bucket at most kTimelineBucketExecutions are read: past
  // them the rest of the bucket is skipped, and what encloses the next
  // bucket's start is listed (so a bucket holding more short executions
  // than that may lack some of its deeper levels). Cost: O(buckets * (that +
  // depth + log executions)).
  std::vector<TimelineExecution> executions;
  bool executions_omitted = false;
};

inline constexpr int kTimelineBucketExecutions = 8;

struct TimelineAnswer {
  std::vector<TimelineRowAnswer> rows;
  // Among the rows answered with calls: messages with an end among those
  // calls, collective instances with a member among them.
  std::vector<TimelineMessage> messages;
  std::vector<TimelineCollective> collectives;
  double built = 0;       // fraction of the trace built when answered (0..1)
  bool complete = false;  // fully built: messages and collectives included
};

// Summaries of groups of rows on one grid of buckets: an overview of many
// ranks, where a viewer's pixel row stands for several of them. A group's
// bucket adds up, over the group's rows, what a row's bucket holds (count and
// time per kind, by the definitions above); its dominant kind is the one with
// the most of that time (ties: the lower kind). Every group shares the grid
// [bucket_from + i*bucket_width, ...): the widest power-of-two multiple of
// every row's pyramid leaf not above (to - from) / buckets, so between W and
// 2W buckets, or coarser (leaves) where the leaves are wider than a bucket.
// When those leaves would be wider than a bucket and the range holds few
// calls (at most `max_calls`, over at most kTimelineGroupCallRows rows) the
// buckets are exactly (to - from) / buckets wide, summed from the calls.
struct TimelineGroupQuery {
  std::vector<std::vector<size_t>> groups;  // the rows of each group
  double from = 0, to = std::numeric_limits<double>::infinity();
  uint32_t buckets = 2000;
  uint64_t max_calls = 20000;
};
inline constexpr size_t kTimelineGroupCallRows = 512;

struct TimelineGroupBucket {
  uint32_t count = 0;
  double time[kTimelineKinds] = {};  // ns, summed over the group's rows
  TimelineKind dominant = TimelineKind::User;
  double wait = 0;  // ns of PotentSync instants, summed over the group's rows
  // Time in MPI calls (every kind but User and Marker), ns.
  double mpi() const {
    double t = 0;
    for (int k = 0; k < kTimelineKinds; ++k)
      if (k != static_cast<int>(TimelineKind::User) && k != static_cast<int>(TimelineKind::Marker)) t += time[k];
    return t;
  }
};

struct TimelineGroupAnswer {
  double bucket_from = 0, bucket_width = 0;
  // Per group (as asked), per bucket. A group of n rows has n * bucket_width
  // of row time in a bucket: time[k] / (n * bucket_width) is kind k's share.
  std::vector<std::vector<TimelineGroupBucket>> groups;
  bool from_calls = false;  // the exact grid, summed from the calls
};

// Point-to-point traffic between ranks, sender x receiver: a Vampir-style
// communication matrix. A message counts when its receiving call (the Recv,
// or the Wait/Test that completed the receive) enters inside the range, and,
// for an interval, inside one of that interval's executions on the receiving
// row. Bytes are what the send moved; time is the receiving call's duration.
struct TimelineMatrixCell {
  int sender = 0, receiver = 0;  // world ranks
  uint64_t messages = 0;
  uint64_t bytes = 0;
  double time = 0;  // ns
  // The message whose receive entered first.
  TimelineMessage first;
};

// Sparse: only the pairs that exchanged messages (a run of thousands of ranks
// talks to few neighbours each).
struct TimelineMessageMatrix {
  int ranks = 0;                         // world size
  std::vector<TimelineMatrixCell> cells; // by (sender, receiver)
  bool complete = false;                 // messages are paired once the build is complete
  // The pair's cell; none when they exchanged nothing.
  const TimelineMatrixCell* find(int sender, int receiver) const;
};

struct TimelineOptions {
  unsigned threads = 0;  // build threads; 0: one per core (never more than ranks)
  // Packed call records kept in memory (about 10 bytes a call: 256 MiB holds
  // some 2.6*10^7 calls), taken 4 MiB at a time; the rest go to an unlinked
  // file in `spill_dir` (default: $TMPDIR, else /tmp).
  uint64_t memory_bytes = uint64_t{256} << 20;
  std::string spill_dir;
  // Pyramid leaves per row, at most (64 bytes each, plus as many again above).
  uint32_t leaves_per_row = 1u << 17;
  // Called now and then from build threads (one at a time): fraction built.
  std::function<void(double fraction)> progress;
};

class Timeline {
 public:
  // Opens a trace directory; nullptr and *error when it is unusable.
  static std::unique_ptr<Timeline> open(const std::string& trace_dir, std::string* error,
                                        TimelineOptions options = {});
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Builds everything; returns when done, cancelled or failed. Call once,
  // from any thread; queries may run meanwhile on others. False and *error
  // when the build failed (out of memory, say): it stops, and what was built
  // before still answers queries.
  bool build(std::string* error = nullptr);
  void cancel();  // the build stops soon (safe from any thread)
  bool cancelled() const;
  bool failed() const;  // the build stopped on an error (build() says which)
  bool complete() const;
  // Every rank passed: the calls, the pyramid's summaries and the executions
  // are final; messages and collective instances come when complete().
  bool calls_complete() const;
  double built() const;  // fraction built (0..1)

  const std::vector<TimelineRow>& rows() const;
  int world_size() const;
  // Ns from the trace's start to its last leave built so far.
  double end() const;
  std::string_view function(uint32_t name) const;
  // A call site as "file:line" (or where its address is); "" for index 0.
  const std::string& site(uint32_t index) const;
  // Indices site() names: 1 .. site_count() - 1 (a viewer's list of sites).
  uint32_t site_count() const;
  // The site (site()'s index) a call was made from: a marker's, or an MPI
  // call's own (0 when the trace has none: PROF_CALLSITES=0, a format before
  // 7, past a function's 62nd site). Looked up on demand, as for a viewer's
  // hover: the timeline keeps 6 bits of it per call, in the record's name.
  uint32_t call_site(const TimelineCall& call) const;
  std::vector<TimelineNode> nodes() const;  // those known so far
  std::vector<std::string> warnings() const;
  uint64_t events() const;  // calls built so far
  // Bytes held: records in memory, pyramid, messages, collectives, executions
  // (the sum of memory()'s parts but the spilled records).
  uint64_t memory_bytes() const;
  struct Memory {
    uint64_t records = 0;          // packed call records in memory (and their block list)
    uint64_t records_spilled = 0;  // packed call records in the spill file (not memory)
    uint64_t pyramid = 0;
    uint64_t executions = 0;       // with each one's enclosing execution
    uint64_t messages = 0;         // both ends
    uint64_t collectives = 0;      // calls, instances, members
    // Not held: the most the build's waits step held at once on a thread
    // beyond the above (a few blocks' enters and a bounded heap of spans:
    // under 1 MiB whatever the messages, unless a row's waits come far out
    // of order, docs/design/timeline.md).
    uint64_t waits_step_peak = 0;
  };
  Memory memory() const;

  TimelineAnswer query(const TimelineQuery& q) const;
  // Per-bucket summaries of groups of rows (TimelineGroupQuery). Cost: the
  // pyramid cells of every row on the grid (O(rows * buckets)), or the calls.
  TimelineGroupAnswer summarize_groups(const TimelineGroupQuery& q) const;
  // Every call of a row overlapping [from, to), however many.
  std::vector<TimelineCall> calls(size_t row, double from, double to) const;
  // The width (ns) of a row's pyramid leaves: a query whose buckets are
  // narrower summarizes that row from its calls (cost: the calls in range).
  double leaf_ns(size_t row) const;
  // The call at a row's index (a bucket's `longest_index`); none past the end.
  std::optional<TimelineCall> call(size_t row, uint64_t index) const;
  // The next call of an MPI function on a row (a viewer's find): forward, the
  // first entering at or after t; backward, the last entering before t. Walks
  // the row's records from t (cost: the calls passed over); none when the
  // function is not in the trace or has no call there. Markers never match,
  // but an empty `function` matches every call and marker (the row's
  // neighbours of a time).
  std::optional<TimelineCall> find_call(size_t row, std::string_view function, double t, bool forward) const;
  // Every execution of a row (sorted by start), every message, every
  // collective instance (these two list every call on the way: for tests and
  // small traces; a viewer asks query() for a range).
  std::vector<TimelineExecution> executions(size_t row) const;
  std::vector<TimelineMessage> messages() const;
  std::vector<TimelineCollective> collectives() const;
  // Messages between ranks (TimelineMessageMatrix) received in [from, to),
  // inside executions of `node` when given. Cost: the messages received
  // there, each read once (no bound: every message counts, however many).
  // Empty (complete false) until the build is complete.
  TimelineMessageMatrix message_matrix(double from, double to, std::optional<uint32_t> node = std::nullopt) const;

  explicit Timeline(std::unique_ptr<timeline_detail::Impl> impl);

 private:
  std::unique_ptr<timeline_detail::Impl> impl_;
};

}  // namespace prof::analysis
