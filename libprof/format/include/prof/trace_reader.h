// Reading and writing trace files (see trace_format.h for the layout).
//
// Reading is split as in Perfetto's trace processor: RankTrace::open indexes a
// rank file (chunk offsets per stream, definitions parsed, nothing decoded);
// cursors then decode events lazily, one chunk at a time, so memory does not
// grow with the number of events. Damaged data never throws or asserts: it is
// counted in ReadStats and described in `warnings` (file and offset), and the
// reader goes on with what it can trust. Only a file that is not a trace at all
// (bad magic, wrong version, too short for a header) fails to open.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "prof/trace_format.h"

namespace prof::trace {

using format::FuncKind;
using format::OpenInterval;

struct Completion {
  uint32_t request = format::kNoRequest;
  int32_t source = -1;   // from the status: actual source (comm rank) of a receive
  int32_t tag = -1;      // actual tag of a receive
  uint64_t bytes = 0;    // bytes received (from the status)
  bool cancelled = false;
  bool operator==(const Completion&) const = default;
};

// One decoded record: one MPI call (a call split over kContinuation records is
// merged back). Fields not used by the record's kind keep their defaults.
struct Event {
  uint64_t enter = 0, leave = 0;  // raw timer ticks
  uint16_t func = 0;               // function id (FunctionDef), format::kMarkerFuncId for markers
  FuncKind kind = FuncKind::Other;
  uint8_t flags = 0;               // format::RecordFlag bits
  // The call's site index among its function's (format 7: 1 to
  // format::kSiteIndexes; 0 none): with func, a rank-local key of call_site.
  uint8_t call_site_index = 0;
  bool marker_begin = false;       // Marker
  // A call entered and never completed (format 4's Live chunk): the last event
  // of its stream, leaving at the rank's last moment alive
  // (RankTrace::last_alive). Send/Recv/Probe/Isend/Irecv: peer and tag as asked;
  // SendRecv: peer = destination, recv_peer/recv_tag the source and tag asked;
  // collectives: comm and root; Completion: `request` the first request waited
  // on, `bytes` how many. No bytes, no completions. Its site: `site`, and
  // call_site_index and call_site as a recorded call's (InFlightCall).
  bool in_flight = false;
  uint32_t stream = 0;             // thread stream index
  int32_t peer = -1, tag = -1;     // comm-local peer / tag (Recv, Probe: actual; Irecv: requested)
  uint32_t comm = format::kNoComm; // communicator handle as recorded
  uint64_t bytes = 0;
  int32_t root = -1;               // collectives
  uint32_t request = format::kNoRequest;
  int32_t recv_peer = -1, recv_tag = -1;  // SendRecv: actual receive half
  uint64_t recv_bytes = 0;
  uint32_t new_comm = format::kNoComm;    // CommCreate
  uint32_t interval_id = 0;               // Marker
  uint32_t callsite = 0;                  // Marker: CallSiteDef id
  uint32_t call_site = 0;                 // the call's site: CallSiteDef id (format 7), 0 none
  // Completion: completed requests; RequestOp: requests operated on.
  // Owned by the cursor, valid until its next call.
  std::span<const Completion> completions;
  std::span<const uint32_t> requests;
  uint64_t site = 0;  // in flight: the return address of the call (resolve with the load map)
};
// Two cache lines: the flags fill the padding before `stream`. Readers of
// many ranks hold a batch of these a rank, which the reader fills and the
// analysis reads back event by event.
static_assert(sizeof(Event) == 128);

// A call a thread was inside when its process ended (RankTrace::in_flight).
struct InFlightCall {
  uint32_t stream = 0;          // stream id
  uint16_t func = 0;
  FuncKind kind = FuncKind::Other;
  uint64_t enter = 0;           // raw ticks
  uint64_t site = 0;            // return address of the call in the application (a language
                                // binding's, when one made it: format::LiveSlot)
  int32_t peer = -1, tag = -1;  // as format::InFlightSlot says for the kind
  uint32_t comm = 0;
  uint32_t extra = 0;
  // The site as a recorded call's (Event::call_site_index, Event::call_site):
  // the rank's index of `site` for `func`, given one by the reader when no
  // record made a call there (0: none, as for a recorded call past the
  // function's kSiteIndexes-th site or with PROF_CALLSITES=0).
  uint32_t call_site = 0;
  uint8_t call_site_index = 0;
};

struct FunctionDef {
  uint16_t id = 0;
  FuncKind kind = FuncKind::Other;
  std::string name;
};

// The world ranks of a communicator's group: immutable, shared by copies.
// Every rank file of a run defines MPI_COMM_WORLD; a list of its own in each
// made a trace's definitions grow with the square of its ranks (16 KB a rank
// at 4096 ranks, 64 KB at 16384), so the list 0..n-1 is one per process and
// size n, whichever file gave it.
class RankList {
 public:
  RankList() = default;
  RankList(std::vector<int32_t> ranks);  // NOLINT: a list converts implicitly
  RankList(std::initializer_list<int32_t> ranks) : RankList(std::vector<int32_t>(ranks)) {}
  // 0, 1, ..., n - 1.
  static RankList identity(size_t n);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int32_t operator[](size_t i) const { return data_[i]; }
  const int32_t* begin() const { return data_; }
  const int32_t* end() const { return data_ + size_; }
  // Whether it is 0..size()-1 (MPI_COMM_WORLD's group).
  bool is_identity() const { return identity_; }
  const std::vector<int32_t>& vector() const;
  operator const std::vector<int32_t>&() const { return vector(); }  // NOLINT

 private:
  std::shared_ptr<const std::vector<int32_t>> list_;
  const int32_t* data_ = nullptr;
  size_t size_ = 0;
  bool identity_ = false;
};

struct CommDef {
  uint32_t handle = 0;
  uint64_t global_id = 0;      // same on every member of the communicator
  uint64_t time = 0;           // raw ticks from which `handle` denotes this communicator
  bool inter = false;
  RankList ranks;          // world rank of each comm rank (local group)
  RankList remote_ranks;   // intercommunicators: world ranks of the remote group
};

struct CallSiteDef {
  uint32_t id = 0;
  uint64_t address = 0;  // return address in the application (0 if unknown)
  std::string file;      // empty until resolved (markers.h passes it directly)
  int line = 0;
};

struct LoadObject {
  uint64_t bias = 0;
  std::string path;
  std::string build_id;  // GNU build id, hex, as loaded in the run; empty when not recorded
};

// A PROF_* setting as the shim resolved it (a P definition).
struct ProfSetting {
  std::string value;
  bool from_environment = false;  // set in the environment; false: the default
};

struct ClockSyncDef {
  std::string phase;        // "init" or "final"
  uint64_t local_ticks = 0;
  double offset_ns = 0;     // rank 0's clock minus ours, at local_ticks
  double rtt_ns = 0;        // round trip of the exchange that gave it: the error bound
};

// One events chunk of a stream (RankTrace::chunks): where it is and the times
// of the events that start in it.
struct ChunkInfo {
  uint64_t file_offset = 0;    // of the chunk header
  uint32_t payload_bytes = 0;  // bytes decoded: `used`, or what salvage kept
  bool sealed = false;         // false: salvaged (unsealed or truncated)
  bool damaged = false;        // CRC mismatch: its events are skipped (events == 0)
  bool has_snapshot = false;   // starts with an interval snapshot (format 3)
  uint64_t base_time = 0;      // the header's: raw time the first dt_enter counts from
  uint64_t events = 0;         // events that start in it (a split call counts once)
  // Raw ticks; all 0 when events == 0. last_leave is the latest leave.
  uint64_t first_enter = 0, last_enter = 0, last_leave = 0;
  // The same on rank 0's clock (RankTrace::to_global_ns).
  double first_enter_ns = 0, last_leave_ns = 0;
};

// Damage is counted, never fatal (named statistics).
struct ReadStats {
  uint64_t chunks = 0;
  uint64_t event_chunks = 0;
  uint64_t unsealed_chunks = 0;      // process died before sealing: salvaged by scanning
  uint64_t crc_mismatches = 0;       // sealed chunk whose payload fails its CRC: skipped
  uint64_t bad_chunk_headers = 0;    // garbage where a chunk header should be: resynced
  uint64_t truncated_chunks = 0;     // chunk claims more bytes than the file has
  uint64_t missing_chunks = 0;       // events chunks numbered but not in the file (format 8)
  uint64_t bad_records = 0;          // record overruns its chunk or has an unknown function
  uint64_t bad_definitions = 0;      // unparsable definition lines
  uint64_t unknown_chunk_types = 0;  // skipped by length
  uint64_t backwards_timestamps = 0; // a record that enters before its predecessor
  uint64_t events = 0;               // decoded so far by cursors
  // What of the file is damaged: data lost or not trusted (not a chunk
  // salvaged unsealed, not a timestamp running backwards). f(count, name) for
  // each such count, the name singular ("CRC mismatch").
  template <class F>
  void for_each_damage(F&& f) const {
    f(crc_mismatches, "CRC mismatch");
    f(bad_chunk_headers, "bad chunk header");
    f(truncated_chunks, "truncated chunk");
    f(missing_chunks, "missing chunk");
    f(bad_records, "bad record");
    f(bad_definitions, "bad definition");
  }
  uint64_t damage() const {
    uint64_t n = 0;
    for_each_damage([&n](uint64_t count, const char*) { n += count; });
    return n;
  }
  bool operator==(const ReadStats&) const = default;
};

// A rank's function definitions, shared by the files and stand-ins that have
// the same (reader_internal.h).
struct FunctionTable;
// What stand-ins made from one set of descriptions share: each distinct
// function table, by its bytes in the descriptions.
struct StandInShare {
  std::map<std::string, std::shared_ptr<const FunctionTable>> functions;
};

class RankTrace {
 public:
  // Opens and indexes a rank file. Returns nullptr and sets *error (naming the
  // file, and the offset where it applies) when it is not a readable trace.
  static std::unique_ptr<RankTrace> open(const std::string& path, std::string* error);
  ~RankTrace();
  RankTrace(const RankTrace&) = delete;
  RankTrace& operator=(const RankTrace&) = delete;

  const std::string& path() const;
  const format::FileHeader& header() const;
  int rank() const { return header().rank; }

  const std::map<std::string, std::string>& meta() const;
  // What the run ran under (empty for traces written before they were
  // recorded): the MPI library's and transport's environment variables
  // (V definitions) and the profiler's settings (P definitions), by name.
  const std::map<std::string, std::string>& environment() const;
  const std::map<std::string, ProfSetting>& settings() const;
  // nullptr for an unknown id.
  const FunctionDef* function(uint16_t id) const;
  const std::vector<FunctionDef>& functions() const;
  const std::vector<CommDef>& comms() const;
  const std::vector<CallSiteDef>& callsites() const;
  const CallSiteDef* callsite(uint32_t id) const;
  const std::vector<LoadObject>& load_objects() const;
  const std::vector<ClockSyncDef>& clock_syncs() const;
  // "finalize", "abort", "signal:11", "exit", or "" when the process was killed
  // before it could say (SIGKILL).
  const std::string& end_reason() const;

  // Format 4 (the Live chunk): the calls threads were inside when the process
  // ended (entered, no record: killed, crashed or hung in them), by stream;
  // the last heartbeat (raw ticks, 0: none); and the last moment the rank is
  // known to have been alive: the latest of the heartbeat, every leave and
  // every in-flight entry (raw ticks; the last leave for older formats).
  const std::vector<InFlightCall>& in_flight() const;
  uint64_t heartbeat() const;
  uint64_t last_alive() const;

  // The communicator a handle denoted at raw time t (latest definition not after
  // t); nullptr if none. MPI_COMM_WORLD and MPI_COMM_SELF are always defined.
  const CommDef* comm_at(uint32_t handle, uint64_t t) const;
  // World rank of comm-local `rank` on `handle` at time t (the remote group for
  // intercommunicators); returns `rank` unchanged for negative (special) ranks
  // and -1 when it cannot be mapped.
  int32_t world_rank(uint32_t handle, uint64_t t, int32_t rank) const;

  // Time conversion. Local ns since the first event; global ns on rank 0's
  // clock: (t - epoch_ticks) * ns_per_tick + offset(t), the offset from the init
  // sync and, when a final sync exists, linear drift between the two.
  double ns_per_tick() const;
  double to_local_ns(uint64_t ticks) const;
  double to_global_ns(uint64_t ticks) const;

  size_t stream_count() const;
  uint64_t event_bytes() const;  // payload bytes of all event chunks (for bytes/event)
  // The file's size when it was opened: the bytes this reader indexes.
  uint64_t file_bytes() const;

  // The raw tick of the first global ns at or after `ns` (the inverse of
  // to_global_ns, which is linear in ticks).
  uint64_t ticks_at_global_ns(double ns) const;

  // The chunk index of stream `stream_index` (in stream order). Each chunk's
  // times are read once (a walk over its record headers), when first asked
  // for (here or by a seek), and kept. Thread-safe.
  std::vector<ChunkInfo> chunks(size_t stream_index) const;
  size_t chunk_count(size_t stream_index) const;
  ChunkInfo chunk(size_t stream_index, size_t chunk_index) const;

  // Decodes one stream's records in order.
  class Cursor {
   public:
    bool next(Event& e);
    // For a cursor from stream_from(): the intervals open on the stream just
    // before its first event (outermost first), by format::apply_marker's
    // rules; empty for a cursor from the stream's start. Not updated by next().
    const std::vector<OpenInterval>& open_intervals() const;
    // Whether open_intervals() came from the chunk's snapshot (format 3) rather
    // than a scan from the stream's start (formats 1 and 2, a stack deeper than
    // a snapshot holds, a damaged snapshot).
    bool open_intervals_from_snapshot() const;
    Cursor(Cursor&&) noexcept;
    ~Cursor();

   private:
    friend class RankTrace;
    struct Impl;
    explicit Cursor(std::unique_ptr<Impl>);
    std::unique_ptr<Impl> impl_;
  };
  Cursor stream(size_t index) const;

  // Seek by time: a cursor of stream `index` whose first event is the first
  // event of the stream that leaves at or after `ticks` (raw ticks), so a call
  // in flight at `ticks` is included, and every later event follows. It finds
  // the chunk by binary search over the chunks' latest leave (reading the
  // times of O(log chunks) chunks), decodes that chunk from its start (each
  // chunk decodes on its own: no context from earlier chunks is needed) and
  // takes the open intervals from its snapshot. A stream's calls do not
  // overlap (one thread), so its leave times never decrease: on such a stream
  // the result is exact; on one that breaks this it is a position where the
  // chunk's latest leave is the first at or after `ticks`. Damaged chunks are
  // skipped (and counted) as by a cursor from the start.
  Cursor stream_from(size_t index, uint64_t ticks) const;

  // All streams of the rank merged by enter time (a k-way merge of Cursors).
  class MergedCursor {
   public:
    bool next(Event& e);
    // The next events, as next() would return them one by one, decoded in
    // one go into Events the cursor owns (cheaper per event:
    // docs/design/analysis-engine.md, the reader); empty at the end. They and
    // their completions and requests stay valid until the cursor's next call
    // of next_batch() or next(). On a rank of one stream a batch holds up to
    // kBatchEvents events that start in one chunk (current_chunk() is that
    // chunk, position() is after the batch) and never reads past that chunk's
    // end, so a reader that stops early has read no more of the trace than
    // next() would have; on a rank of several streams it holds one event.
    static constexpr size_t kBatchEvents = 128;
    std::span<const Event> next_batch();
    // Bounds on the leave times of the last batch's events: each lies in
    // [first, second]. Not necessarily reached (a run of short-time records
    // gives its first enter and its last enter plus the longest short
    // duration), so a check that all leaves lie in a range can pass on them
    // at no cost an event and look at the events only when they fail.
    std::pair<uint64_t, uint64_t> batch_leave_bounds() const;
    // Batches of at most `events` (1 to kBatchEvents; before the first call): a
    // reader of many cursors bounds their decoded events together (128 bytes an
    // event). A cursor's batch grows to the bound as batches come out full.
    void limit_batch(size_t events);
    // Drops the pages of the file mapping that the chunks being decoded in
    // it occupy (they fault back in from the page cache when decoding goes
    // on): a reader holding thousands of cursors between uses holds no
    // chunk's pages for each (at 16384 ranks of one chunk each, the whole
    // trace, 266 MB), and its repeat templates (5 KB). A chunk read into
    // the cursor's buffer is not affected.
    void release_pages();
    // How each cursor holds its chunk between the visits of a reader that
    // visits thousands of cursors in turn (set before the first event).
    enum class BetweenVisits : uint8_t {
      // As a lone reader's: a file is unmapped where its stream ends.
      kAsAlone,
      // Each file stays mapped when its stream ends (it is unmapped when the
      // trace closes, or at release_file() past the budget). For cursors that
      // end together and hold their chunks' pages until then anyway: an
      // munmap on a worker interrupts every other thread of the process (a
      // TLB shootdown) and waits for their page faults (8% of the CPU at 4096
      // ranks).
      kKeepFilesMapped,
      // Chunks up to 64 KiB are read into a buffer that release_pages() gives
      // back to the calling thread (its other cursors take it) and read again
      // at the next event, instead of being decoded in the file's mapping and
      // their pages dropped there. For cursors that hold no chunk between
      // visits: a copy of a small chunk costs less than the system call that
      // drops a mapping's pages (it interrupts every thread of the process)
      // and the faults that map them again.
      kLendChunkBuffers,
    };
    void hold_between_visits(BetweenVisits how);
    // When the process holds more file mappings than mapping_budget(): lets
    // this rank's file be unmapped until the cursor's next next() or
    // next_batch(), which map it again (a reader of more ranks than the
    // budget calls it after each rank's visit; elsewhere it does nothing).
    void release_file();
    // The end of a visit by a reader that visits thousands of cursors in
    // turn: what the cursor lets go of until the next one, by its
    // BetweenVisits mode (release_pages() when it lends its chunk buffer),
    // and its file past the process's budget of mappings (release_file()).
    void end_visit();
    // For a cursor from events_from(): stream_index's open intervals just
    // before its first event (Cursor::open_intervals).
    const std::vector<OpenInterval>& open_intervals(size_t stream_index) const;
    // On a rank of one stream: the chunk (index in RankTrace::chunks) where
    // the last event next() returned starts, and the chunk being read now (a
    // call continued over records reads on into the next one); SIZE_MAX when
    // none or with several streams.
    size_t current_chunk() const;
    size_t reading_chunk() const;
    // Places so far where a stream's data was lost before what is being read
    // (a chunk skipped for its CRC, a chunk the file ends in, a stretch of the
    // file skipped): calls after one cannot be numbered with those before it.
    uint64_t gaps() const;
    // On a rank of one stream: where the next record will be read, when that
    // is inside the chunk being read (else Position::valid is false).
    struct Position {
      bool valid = false;
      uint32_t chunk = 0;   // index in RankTrace::chunks(0)
      uint32_t offset = 0;  // bytes into the chunk's records
      uint64_t chain = 0;   // the enter before it (times are deltas)
      uint32_t context_comm = 0, context_request_high = 0;  // format::ChunkContext
      uint8_t context_avail = 0;
    };
    Position position() const;
    MergedCursor(MergedCursor&&) noexcept;
    ~MergedCursor();

   private:
    friend class RankTrace;
    struct Impl;
    explicit MergedCursor(std::unique_ptr<Impl>);
    std::unique_ptr<Impl> impl_;
  };
  MergedCursor events() const;
  // Every stream from stream_from(i, ticks), merged by enter time.
  MergedCursor events_from(uint64_t ticks) const;
  // Every stream i from the first record of its chunk first_chunk[i] (a chunk
  // decodes on its own), merged by enter time: for a reader that restores the
  // state before that chunk itself (the analyzer's window index).
  MergedCursor events_from_chunks(const std::vector<size_t>& first_chunk) const;
  // A rank of one stream from a position another cursor reported (the same
  // reader's state there, without decoding what came before); an invalid
  // position, or one that does not fit its chunk, gives a cursor that
  // returns nothing.
  MergedCursor events_from_position(const MergedCursor::Position& at) const;

  // Statistics and warnings ("FILE: offset N: what"), shared with cursors.
  const ReadStats& stats() const;
  const std::vector<std::string>& warnings() const;

  // Stand-ins: a reader that holds only some of a trace's rank files (a
  // process of an MPI job of prof-analyze, its block) knows the others' ranks
  // from their holders' descriptions: the header, definitions, time base,
  // event bytes, the file's size, streams' chunk counts, the end (heartbeat, calls in flight,
  // last moment alive) and what opening counted and warned. A stand-in
  // answers every question above but has no events (its cursors return
  // none). Bytes of one build on one kind of machine. What it holds:
  //   kReport: all of that, and the run's environment and settings (what
  //     the report reads: the process that writes it);
  //   kPass: what a process that decodes other ranks asks of this one:
  //     the header, meta lines but the MPI library's text and the command
  //     line, communicators, time base and clock syncs, the end, event
  //     bytes, the file's size and chunk counts; not the functions, call sites, load
  //     objects, warnings and statistics (the registry's and the report's:
  //     that process is sent the registry's numbers instead).
  enum class DescriptionFor : uint8_t { kReport, kPass };
  std::string describe(DescriptionFor what) const;
  // nullptr and *error when `description` is not one describe() wrote.
  // Stand-ins made with one `share` hold each distinct function table once
  // (a run's ranks define the same few hundred functions: about 60 KB a
  // rank otherwise).
  static std::unique_ptr<RankTrace> stand_in(const std::string& description, std::string* error,
                                             StandInShare* share = nullptr);
  bool is_stand_in() const;
  // Rank files this process has opened (open() calls that read a header), so
  // far, over every RankTrace.
  static uint64_t files_opened();

 private:
  struct Impl;
  explicit RankTrace(std::unique_ptr<Impl>);
  std::unique_ptr<Impl> impl_;
};

// A trace directory: every rank-*.prof file, checked to belong to one run
// (same run_id, world size, every rank present once). Problems go to `errors`
// (fatal: nothing usable) or `warnings` (a rank missing or foreign: skipped).
struct TraceDir {
  std::vector<std::unique_ptr<RankTrace>> ranks;  // ordered by rank
  int world_size = 0;
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  // Where the readers of one trace are several processes, each holding the
  // files of its block (an MPI job of prof-analyze): the process holding
  // each rank's file (ranks[i] of another process is a stand-in). Empty:
  // this process opened every file.
  std::vector<int> holder;
  static TraceDir open(const std::string& dir);

  // open() in its steps, for a reader that opens some of the files and
  // learns the others from their holders: list(), open_files() for a range
  // of the names, stand-ins (RankTrace::stand_in) and open errors for the
  // rest, then assemble(), which checks that they belong to one run.
  struct Files {
    std::vector<std::string> names;  // rank-*.prof, sorted
    // By name: the file (or its stand-in), or nullptr and why not.
    std::vector<std::unique_ptr<RankTrace>> traces;
    std::vector<std::string> open_errors;
    std::vector<int> holder;  // by name: the process holding it (empty: this one)
  };
  // False and `errors` when `dir` is not a directory with rank files.
  static bool list(const std::string& dir, Files* files, std::vector<std::string>* errors);
  // Opens names [lo, hi) into traces / open_errors (several threads). With
  // `with_ends`, the thread that opens a file also finds its calls in flight
  // and last moment alive (RankTrace::in_flight, last_alive: a walk over the
  // file's last chunk), as RankTrace::describe needs them.
  static void open_files(const std::string& dir, Files& files, size_t lo, size_t hi, bool with_ends = false);
  static TraceDir assemble(const std::string& dir, Files&& files);
};

// Writes trace files without MPI: for tests, synthetic benchmarks and the
// analyzer's golden example. Encodes with format::RecordEncoder exactly as the
// shim does, and starts each events chunk with the stream's interval snapshot
// as the shim does (format 3).
class TraceWriter {
 public:
  // `version` 2 writes a version-2 file (no snapshots), for tests of readers of
  // older traces; chunk_bytes is at least 1 KiB.
  TraceWriter(const std::string& path, int rank, int world_size, uint64_t run_id,
              format::TimerKind timer = format::TimerKind::Monotonic,
              uint32_t chunk_bytes = 1u << 20, uint32_t version = format::kFormatVersion);
  ~TraceWriter();  // closes (seals) if still open
  bool ok() const;

  // Definitions (each call writes one sealed Definitions chunk).
  void meta(const std::string& key, const std::string& value);
  void environment(const std::string& name, const std::string& value);
  void setting(const std::string& name, const ProfSetting& setting);
  void function(uint16_t id, FuncKind kind, const std::string& name);
  void comm(const CommDef& def);
  void callsite(const CallSiteDef& def);
  // Format 7: `func`'s call site index `index` (1 to format::kSiteIndexes)
  // is CallSiteDef `callsite_id`; events carry it in Event::call_site_index.
  void call_site_index(uint16_t func, uint32_t index, uint32_t callsite_id);
  void load_object(const LoadObject& obj);
  void clock_sync(const ClockSyncDef& def);
  void end(const std::string& reason);
  // The Live chunk (format 4): a heartbeat and the in-flight slots, slot i for
  // stream i (InFlightSlot::enter 0: none), as a killed shim leaves them.
  void live(uint64_t heartbeat, const std::vector<format::InFlightSlot>& slots);
  // The same with the shim's whole stride per slot (slot_bytes 64), binding
  // sites included.
  void live(uint64_t heartbeat, const std::vector<format::LiveSlot>& slots);

  // Appends an event to its stream (e.stream); events of a stream must come in
  // enter order. Fields used follow e.kind, as the reader decodes them.
  void event(const Event& e);
  void close();
  // close(), then a Live chunk whose slot i counts stream i's events chunks
  // (format 8; no call in flight), as the shim's Live slots count them: a
  // reader then tells a file cut before a stream's last chunks. `heartbeat`
  // (raw ticks, 0: none) is the last beat, as the shim's helper thread leaves it.
  void close_counting_chunks(uint64_t heartbeat = 0);

  // For damage tests: leave the last chunk of each stream unsealed, as a killed
  // process does.
  void close_without_sealing();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// File mappings. Each open RankTrace maps its file; Linux refuses a process
// more than vm.max_map_count mappings (65,530 by default). Past
// mapping_budget() mappings in the process, a file no cursor is decoding in
// is unmapped (at the end of its open, at a cursor's release_file() or when
// a cursor leaves it) and mapped again when a cursor needs it. The default is
// half of vm.max_map_count; set_mapping_budget(n) sets n (n <= 0: the
// default), for readers of many files and for tests.
void set_mapping_budget(int mappings);
int mapping_budget();
// Mappings of rank files this process holds now.
int mappings_held();

}  // namespace prof::trace
