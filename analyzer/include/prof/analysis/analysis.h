// The analyzer's model of a trace: the interval tree across ranks and the
// characteristics of every interval (docs/metrics.md), as plain data.
//
// Nothing here prints: the text report, the JSON report and the Chrome trace
// are separate functions (report.h, chrome_trace.h), so the GUI can link the
// same library and show the same numbers.
//
// Units: every time is in seconds on the synchronized global clock (rank 0's),
// every size in bytes.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "prof/definition_lines.h"
#include "prof/trace_reader.h"

namespace prof::analysis {

// The characteristics compared across ranks (the text report's "Comparative
// Characteristics" table, in its order: docs/metrics.md); their labels, keys
// and values are in characteristics.h.
enum class Comparative : int {
  Lost = 0,
  Idle,
  Comm,
  Mpi,
  PotentialSync,
  TimeVariation,
  TimeOfStart,
};
inline constexpr int kComparativeCount = 7;

// One rank's figures in one interval, summed over the rank's executions of it.
// Wait states by kind (docs/metrics.md, "Wait states by kind"), in the order
// of the JSON keys. The kinds before kLateReceiver partition Potential Sync.;
// a late receiver stands apart from it.
enum WaitKind : int {
  kLateSender = 0,
  kWaitAtBarrier,
  kWaitAtNxN,
  kLateRoot,
  kEarlyRoot,
  kWaitAtCollectiveOther,
  kLateReceiver,
  kWaitKindCount,
};
inline constexpr const char* kWaitKindKeys[kWaitKindCount] = {
    "late_sender", "wait_at_barrier", "wait_at_nxn", "late_root", "early_root",
    "wait_at_collective_other", "late_receiver"};
inline constexpr const char* kWaitKindLabels[kWaitKindCount] = {
    "Late Sender", "Wait at Barrier", "Wait at NxN", "Late Root", "Early Root",
    "Other Collective Wait", "Late Receiver"};

// Waits of an interval on one partner rank (the late sender, the late
// receiver, or a collective's last member to enter), summed over ranks.
struct PartnerWait {
  int rank = -1;           // the partner, MPI_COMM_WORLD rank
  double seconds = 0;      // time spent waiting for it
  // The part of `seconds` in waits each shorter than the two ranks' clock
  // offset bounds together: the order of the two events is not certain.
  double uncertain_seconds = 0;
};

// How many partners reports list per interval (the largest waits).
inline constexpr size_t kTopPartners = 10;

// A share of an interval's waits charged to the interval and rank that
// delayed the partner (docs/metrics.md, "Root causes").
struct CauseShare {
  int interval = -1;    // index in Analysis::intervals
  int rank = -1;        // MPI_COMM_WORLD rank on which it spent the time
  double seconds = 0;
};
// How many causes reports list per interval (the largest).
inline constexpr size_t kTopCauses = 10;

struct RankFigures {
  int rank = -1;               // MPI_COMM_WORLD rank
  uint64_t executions = 0;     // 0: the rank never executed the interval
  double time = 0;             // sum of T_r
  double cpu = 0;              // time - mpi
  double mpi = 0;
  double idle = 0;
  double lost = 0;             // mpi + idle
  double comm = 0;             // sendrecv + collective + alltoall
  double sendrecv = 0;
  double collective = 0;       // CollectiveAll
  double alltoall = 0;
  double potential_sync = 0;
  double time_variation = 0;
  double time_of_start = 0;
  uint64_t calls = 0;          // MPI calls (markers excluded)
  std::array<double, kWaitKindCount> waits{};  // by WaitKind
};

struct MainFigures {
  double efficiency = 0;       // productive / total (0 when total is 0)
  double execution_time = 0;   // max over ranks of T_r, each the sum of the rank's executions
  int processors = 0;
  double total_time = 0;       // execution_time * processors
  double productive_time = 0;  // total - lost
  double lost_time = 0;
  double mpi_time = 0;
  double idle_time = 0;
  double comm_time = 0;
  double sendrecv_time = 0;
  double collective_time = 0;
  double alltoall_time = 0;
  double potential_sync = 0;
  double time_variation = 0;
  double time_of_start = 0;
};

struct ComparativeFigures {
  double min = 0;
  int min_rank = 0;
  double max = 0;
  int max_rank = 0;
  double mean = 0;  // exact mean over the executing ranks
};

// An mpiP-style profile line: one MPI function inside one interval, over all
// ranks and executions (inclusive of nested intervals).
struct FunctionFigures {
  std::string name;
  uint64_t calls = 0;
  double time = 0;
  uint64_t bytes = 0;  // bytes the calls move (sent, received, or the collective's count)
};

// The call-site profile (mpiP's): one MPI function called from one source
// line inside one interval, over all ranks and executions. Sites compare by
// file:line, or by object and offset where debug info does not resolve them.
struct CallSiteFigures {
  std::string function;
  std::string file;         // empty when not resolved (then `unresolved`)
  int line = 0;
  std::string unresolved;   // "object+0xoffset" (or the address in hex)
  uint64_t calls = 0;
  double time = 0;
  uint64_t bytes = 0;
  // "file:line", or the unresolved label.
  std::string site_label() const {
    return file.empty() ? unresolved : file + ":" + std::to_string(line);
  }
};

// One node of the interval tree across ranks: (parent node, interval id, call
// site of the begin marker). The root is the whole run: on each rank from the
// return of MPI_Init (or its first event) to the call of MPI_Finalize (or its
// last event). An execution of a user interval runs from its begin marker's
// return to its end marker's call.
struct IntervalNode {
  int parent = -1;                 // index in Analysis::intervals, -1 for the root
  std::vector<int> children;       // indices, in tree (report) order
  std::optional<uint16_t> id;      // the marker's interval id; none for the root
  int level = 0;                   // root 0, user intervals from 1
  uint64_t exe_count = 0;          // matched executions (max over ranks)
  // Call site of the begin marker: what a marker macro passed, else its return
  // address resolved with the binary's debug info. When that fails,
  // `source_file` is empty and `unresolved` / `address` tell where. The root's is MPI_Init's
  // call site when the trace names one (metadata "init_callsite" = the id of a
  // call-site definition), else the executable's name with line 0.
  std::string source_file;
  int line = 0;
  uint64_t address = 0;
  std::string unresolved;          // then: "object+0xoffset", the same on every rank
  double first_enter = 0;          // earliest entry over ranks (global seconds)
  MainFigures main;
  std::array<ComparativeFigures, kComparativeCount> comparative{};
  std::vector<RankFigures> per_rank;       // executing ranks only, by rank
  std::vector<FunctionFigures> functions;  // by time, largest first
  // By time, largest first; calls whose site the trace does not record
  // (older formats, sites past the recorder's limit) are in `functions` only.
  std::vector<CallSiteFigures> callsites;
  std::array<double, kWaitKindCount> waits{};  // by WaitKind, over ranks
  std::vector<PartnerWait> waited_for;         // by seconds, largest first
  // Root causes of the waits of its calls (and its nested intervals'), by
  // seconds, largest first; and its time on the run's critical path
  // (docs/metrics.md). Both only for a whole run with
  // Options::delay_analysis (Analysis::delay_known).
  std::vector<CauseShare> caused_by;
  double critical_path_s = 0;

  // The file name the text report prints: the file, or where the address is
  // ("object+0xoffset", else the address in hex) when it was not resolved.
  std::string source_label() const;
};

// A kind of problem, counted; `examples` holds the first few occurrences.
struct Warning {
  std::string category;
  uint64_t count = 0;
  std::vector<std::string> examples;
};

// Named statistics of the run (what was matched, what was not).
struct MatchStats {
  uint64_t events = 0;               // records decoded
  // Decoded but not analyzed: after lost data, or outside the run's span (damage).
  uint64_t events_not_analyzed = 0;
  uint64_t mpi_calls = 0;            // inside the root intervals
  uint64_t messages_matched = 0;
  uint64_t unmatched_sends = 0;      // never received (or to a rank not in the trace)
  uint64_t unmatched_receives = 0;   // no send found
  uint64_t collective_instances = 0;
  uint64_t incomplete_collectives = 0;  // some member never took part (cut short or missing)
  uint64_t unknown_requests = 0;     // a completion/start of a request never started
  uint64_t unbalanced_markers = 0;
  uint64_t windows = 0;              // time windows the streaming pass used
  // Event chunks decoded (over every rank and stream) and how many the trace
  // has: a window served by the window index decodes only those near it.
  uint64_t chunks_decoded = 0;
  uint64_t chunks_total = 0;
  // With a window: how the window index served it ("used PATH", "built PATH",
  // "rebuilt (stale ...) PATH") or why the whole trace was decoded instead
  // ("not used: ..."); empty without a window.
  std::string window_index;
};

// An MPI call a rank was inside when its recording ended (entered, never
// completed: docs/metrics.md, "A run that did not end cleanly").
// How reports number a communicator: MPI_COMM_WORLD is 0 (as in
// docs/interfaces.md's run_end), any other its global id, which is never 0.
inline uint64_t reported_comm_id(uint64_t global_id) {
  return global_id == format::kWorldCommGlobalId ? 0 : global_id;
}
// "MPI_COMM_WORLD", or "communicator N" with N its reported id.
inline std::string reported_comm_name(uint64_t global_id) {
  return global_id == format::kWorldCommGlobalId
             ? std::string("MPI_COMM_WORLD")
             : "communicator " + std::to_string(reported_comm_id(global_id));
}

struct CallInFlight {
  std::string function;
  uint32_t stream = 0;        // the thread's stream
  double entered = 0;         // seconds from the trace's start
  std::string file;           // call site; empty when not resolved (then `site_label`)
  int line = 0;
  std::string site_label;     // "file:line", or "object+0xoffset" / the address in hex
  std::optional<uint64_t> comm;  // communicator (reported_comm_id), for calls on one
  std::optional<int> peer;    // world rank of the peer (point-to-point, collective root)
  std::optional<int> tag;
  bool any_source = false;    // a receive from MPI_ANY_SOURCE
  bool collective = false;
  // The world ranks it waits for: the peer; every other member for
  // MPI_ANY_SOURCE; for a collective the members that had not entered that
  // instance; for a Wait the peers of the requests it waits on; for
  // MPI_Finalize the ranks that had not reached it.
  std::vector<int> waiting_for;
  // Any one rank of `waiting_for` can release it (MPI_ANY_SOURCE, Waitany,
  // Waitsome); otherwise it waits for all of them.
  bool waits_for_any = false;
  // A blocking collective: which of the communicator's collectives it is
  // (1 = its first), to find members inside another function at the same one.
  // A communicator's creation over `comm` (collective, its every member
  // calling): which of the creations over it.
  uint64_t instance = 0;
};

// How one rank's recording ended (docs/interfaces.md, `run_end`).
struct RankEnd {
  int rank = -1;
  // "finalize", "signal SIGTERM", "abort", "exit without finalize", or "killed"
  // when the trace does not say (the process died without a word: SIGKILL).
  std::string ended_by;
  double last_alive = 0;      // its last recorded moment, seconds from the trace's start
  uint64_t records_lost = 0;  // records the shim could not store
  std::vector<CallInFlight> in_flight;  // one per thread inside a call; stream order
};

// What the run ran under (docs/interfaces.md, `run`), from the trace's
// definitions: empty where the trace does not say (traces written before
// these were recorded). The library, transport and variables are those of the
// lowest rank analyzed that recorded them; hosts and the command come from
// every rank.
struct RunRecord {
  std::string mpi_library;                  // MPI_Get_library_version's text, whole
  std::string library, library_version;     // read from it: "MPICH", "4.0.2"
  std::string transport, transport_version; // "ucx", "1.13.1"
  std::map<std::string, std::string> environment;  // UCX_*, MPIR_CVAR_*, ... (trace V lines)
  struct Host {
    std::string name;
    std::vector<int> ranks;  // world ranks, ascending
  };
  std::vector<Host> hosts;  // in the order of their lowest rank
  std::string command;      // the lowest rank's command line
  std::map<std::string, trace::ProfSetting> prof_settings;  // every PROF_* setting
  int world_size = 0;
  // The most ranks on one host (0 when no host is known).
  int ranks_per_node() const;
};

// "MPICH Version: 4.0.2\n..." -> ("MPICH", "4.0.2"); "Open MPI v4.1.4, package:
// ..." -> ("Open MPI", "4.1.4"): the first line, up to its first word that is
// a version number (a leading "v" dropped), and that number. Empty when the
// line has none (the library is then the whole line).
std::pair<std::string, std::string> library_and_version(const std::string& mpi_library);

struct Analysis {
  int world_size = 0;
  int processors = 0;             // ranks analyzed (rank files read)
  std::vector<int> ranks;         // their world ranks
  std::string executable;         // from the trace's metadata
  RunRecord run;                  // what the run ran under
  // The MPI_Bcast implementation the run used (PROF_BCAST; trace meta
  // `bcast_impl`): "native" or "shm"; "native" for traces that do not say.
  std::string bcast_impl = "native";
  // Communicators whose shared-memory segment could not be had (their
  // broadcasts used MPICH's), the most any rank saw (meta `bcast_fallbacks`).
  uint64_t bcast_fallbacks = 0;
  // How well the ranks' clocks were synchronized: each rank's offset to the
  // global clock is known within error_s (half the round trip of the exchange
  // that measured it, the larger of the run's start and end; 0 on the
  // reference rank). `known` is false for traces without clock syncs.
  struct Clock {
    bool known = false;
    std::string scheme;  // PROF_SYNC of the run (meta `sync`)
    double max_error_s = 0;
    std::vector<std::pair<int, double>> per_rank;  // (rank, error_s)
    // PROF_SYNC=none keeps each rank's own clock: nothing measured the
    // offsets, so no error bound is known (the reports print none).
    bool measured() const { return known && scheme != "none"; }
  } clock;
  std::vector<IntervalNode> intervals;  // tree order (pre-order); [0] is the root
  std::vector<Warning> warnings;  // listed once per category
  std::vector<std::string> errors;  // fatal: nothing usable
  // The errors came from this machine, not from the input: a temporary file
  // that could not be written, memory that could not be had (prof-analyze
  // then exits 1, as for an output it cannot write, not 2).
  bool failed_outside_the_input = false;
  bool damaged = false;           // input damaged (CRC, bad chunks or records, missing
                                  // or foreign ranks): the report is a salvage
  bool cut_short = false;         // some rank ended without MPI_Finalize or unsealed
  MatchStats stats;
  std::vector<RankEnd> run_end;   // per rank, by rank order of `ranks`
  bool complete = true;           // every rank ended by MPI_Finalize
  // Each cycle of the wait-for graph of the calls in flight once (world ranks,
  // smallest first): ranks that wait for each other, a deadlock.
  std::vector<std::vector<int>> wait_cycles;
  // The window analyzed (Options::window_*), seconds from the trace's start;
  // absent for the whole run.
  std::optional<std::pair<double, double>> window;
  // caused_by and critical_path_s were computed (a whole run with
  // Options::delay_analysis); run_span_s: from the earliest rank's start to
  // the latest rank's end, the length the critical path covers.
  bool delay_known = false;
  double run_span_s = 0;
  // The wait states were computed (Options::wait_states): each interval's and
  // rank's `waits` by kind and `waited_for`. False: they are zero and empty
  // because they were not computed, not because nothing waited; the writers
  // that print them refuse such a result (std::logic_error). Potential Sync.
  // and the other characteristics never depend on them.
  bool waits_known = true;
  // The function profile was computed (Options::function_profile): each
  // interval's `functions` and `callsites`. False: they are empty because
  // they were not computed; the writers that print them refuse such a result
  // (std::logic_error).
  bool functions_known = true;

  bool usable() const { return errors.empty() && !intervals.empty(); }
};

class Exchange;  // exchange.h

struct Options {
  // Worker threads; 0: one per core this process may use (never more than
  // ranks).
  unsigned threads = 0;
  // The cores this process may use where `threads` is 0; 0: every core of
  // the machine. The processes of an MPI job that share a node divide its
  // cores, so that a job on one node is not oversubscribed by default.
  unsigned cores = 0;
  // `threads`, else `cores`, else the machine's cores (at least 1).
  unsigned worker_threads() const;
  // Only this stretch of time (seconds from the trace's start, its earliest
  // event), docs/metrics.md "A window of time": executions, calls, waits and
  // transfers count with their part inside it. The default is the whole run.
  double window_from_s = -std::numeric_limits<double>::infinity();
  double window_to_s = std::numeric_limits<double>::infinity();
  bool windowed() const {
    return window_from_s > -std::numeric_limits<double>::infinity() ||
           window_to_s < std::numeric_limits<double>::infinity();
  }
  // Set by a caller that has asked window_holds_the_run() of this window and
  // got no: analyze() takes the window as it is instead of asking again (a
  // first batch of every rank decoded and, in a job, an exchange).
  bool window_falls_short = false;
  // Events the streaming pass aims to decode per time window, over all ranks;
  // bounds the memory of messages and collectives in flight. 0: 2^13 a
  // worker (what a phase writes stays in its core's cache until it is read);
  // 2^16 a process of an MPI job (fewer exchanges).
  uint64_t window_events = 0;
  // And at least this many per rank of the trace: every phase visits every
  // rank, and a visit's cold state (cursor, batch, spans, interpreter) costs
  // more than a few events' decoding (4096 ranks at 2^16 events a phase got 16
  // events a visit and ran 4x slower an event than 4 ranks). 0: no floor.
  uint64_t window_events_per_rank = 256;
  // A window starts decoding near its start from the window index
  // (docs/trace-format.md, "The window index"; built on first use where none
  // fits the trace); false decodes the whole trace (the reference the index
  // is tested against).
  bool use_window_index = true;
  // The window index file may be written: a whole analysis writes it where the
  // trace has none that fits (building it on cores the analysis leaves free,
  // and finishing it after on_result), and a window writes the one it builds.
  // It goes beside the trace (TRACE/window-index.bin), or where the trace
  // directory cannot be written, to the user's cache directory
  // ($XDG_CACHE_HOME/prof or ~/.cache/prof). false: never written (a window
  // then builds the index in memory where none fits).
  bool write_window_index = true;
  // A whole analysis: true builds the window index beside it and finishes it
  // after on_result (a viewer that stays open); false builds none, so the call
  // returns with the analysis (a command whose process ends with it, unless
  // asked for the index; a first window then builds it).
  bool build_window_index = true;
  // The window index goes to the user's cache directory even where the trace
  // directory can be written (for tests: a read-only mode does not stop root).
  bool window_index_in_cache = false;
  // From this many ranks of the trace on, the collective results that wait
  // for their ranks (a whole run of more than 64 ranks) are written with
  // streaming stores, which do not read the lines they write: past the
  // caches, thousands of ranks' queues cost an owner a line read a member.
  // Below it the lines are still in cache and ordinary stores cost less
  // (docs/performance.md, "Many ranks"). 0: never. The outputs are the same.
  uint32_t stream_results_ranks = 2048;
  // Called once on analyze()'s thread, with what analyze() returns, as soon as
  // it is known: before a whole analysis finishes writing the window index, so
  // a caller can show the result without waiting for it.
  std::function<void(const Analysis&)> on_result;
  // Called now and then from the analysis (any thread, one at a time) with the
  // fraction done (0..1) and the events decoded so far.
  std::function<void(double fraction, uint64_t events)> progress;
  // Asked between time windows (one thread at a time): true stops the
  // analysis soon, and the result has the error "analysis cancelled".
  std::function<bool()> cancelled;
  // Root causes of waits and the critical path (docs/metrics.md), on a whole
  // run. Off unless asked: they keep a log per rank that grows with its
  // markers and its point-to-point and collective calls, and their pass after
  // the analysis costs about two thirds of it again where most calls wait
  // (docs/performance.md).
  bool delay_analysis = false;
  // The wait states by kind and the waits by partner (docs/metrics.md, "Wait
  // states by kind"; IntervalNode::waits and waited_for, RankFigures::waits):
  // on unless cleared. false skips them at their source (their sets of
  // instants, the late receivers' hand-back from the receiving rank, the
  // figures by partner): about a sixth of the analysis's instructions where
  // most calls wait (docs/performance.md); Analysis::waits_known then says
  // they were not computed. The seed's characteristics (Potential Sync.
  // included) are the same either way. delay_analysis turns them on.
  bool wait_states = true;
  // The function profile: each interval's calls, time and bytes by MPI
  // function and by call site (IntervalNode::functions, callsites). On unless
  // cleared; false skips it at each call (about 9% of the instructions of a
  // message-heavy trace), and Analysis::functions_known then says it was not
  // computed. No other figure depends on it (`calls` is counted either way).
  bool function_profile = true;
  // Set: this process is one of an analysis spread over exchange->size()
  // processes (exchange.h). Each decodes its block of ranks; process 0 gets
  // the whole result, the others a result with no intervals. The result is
  // the same as one process's, byte for byte. A window (window_to_s > 0) is
  // not spread: the caller runs it in one process.
  Exchange* exchange = nullptr;
};

// Reads the trace directory and analyzes it. Never throws for bad input:
// problems land in `errors` (nothing usable) or `warnings`.
Analysis analyze(const std::string& trace_dir, const Options& options = {});
// Same, for a directory already opened.
Analysis analyze(const trace::TraceDir& dir, const Options& options = {});

// Whether the options' window holds the whole run: it starts at or before the
// trace's first event and ends at or after every rank's last leave (or last
// moment alive, where the rank did not finalize; docs/metrics.md, "A window
// of time"). analyze() then analyzes the whole run, exactly as without a
// window, and prof-analyze writes every output so. In an MPI job
// (options.exchange) every process calls it and gets the same answer.
bool window_holds_the_run(const trace::TraceDir& dir, const Options& options);

}  // namespace prof::analysis
