// The analysis engine: one streaming pass over every rank, in parallel, that
// builds the interval tree and the characteristics of docs/metrics.md.
//
// Algorithm
//   Ranks are split among W worker threads in contiguous blocks of about equal
//   event bytes (neighbours talk most). Time is cut into windows of the global
//   clock; in phase P every worker decodes its ranks' events that enter before
//   the window's end, then all meet at a barrier. What needs another worker's
//   data is posted to mailboxes read in phase P+1 (double-buffered by the
//   parity of P: a box is written in one phase and read in the next, never
//   both at once); between ranks of one worker it is handed over at once:
//     - a send gives (channel, send enter) to the destination rank, which
//       queues it on the channel and matches it, in order, with the channel's
//       receives (MPI's non-overtaking rule); a receive whose send has not
//       arrived waits on the channel;
//     - a collective call gives (communicator, sequence number, enter, leave)
//       to the instance's owner worker; once every member that is in the trace
//       has called (or has ended, for a rank cut short), the owner computes each
//       member's PotentSync, CollectiveAll/AllToAll and TimeVariation and gives
//       them back to the member's rank;
//     - a blocking send or an MPI_Isend holds its rank's wait-state
//       watermark at its enter (Rank::send_holds); its match gives the
//       receive's issue back to the sender's worker (LateRecvRec), which adds
//       the late-receiver wait, if any (an Isend's once its completing call is
//       known too), and releases the hold. So information flows back the way
//       a receive's wait flows forth, and memory grows with sends in flight.
//   Every wait is also added, by kind, to the rank's WaitKindSets (the wait
//   states, docs/metrics.md), swept with the same contexts and watermark, and
//   its length to the node's partner figures (waited_for). Only where they
//   are asked for (Options::wait_states, Rank::track_waits): without them
//   no send holds, no late receiver travels back, no wait is added by kind
//   or partner; no characteristic reads them, so those stay the same.
//   With several workers, each begins a phase by taking its mailboxes and
//   completing the instances whose last members arrived in them, and flags
//   when it has posted those results; the others take them after decoding
//   their first rank of the phase, before settling any (by then the first
//   steps are long done, so this rarely waits). So a rank gets an instance's
//   figures one phase after its last member's call, not two: the wait held
//   back the rank's watermark (and kept spans buffered, a third more memory
//   at 4 ranks) a phase longer. The schedule is fixed, so the result still
//   does not depend on timing.
//   Matched figures are added to the interval node that was innermost on the
//   rank at the call; at the end, nodes are rolled up into their parents (an
//   MPI call belongs to every open interval). A rank's executions of a node are
//   summed as they close (T_r); Execution Time is the largest sum, taken at
//   the end. So memory grows with messages, collectives and executions in
//   flight and with the tree, not with events. The window adapts so that a phase decodes
//   about Options::window_events events, and a rank stops early in a phase
//   at that many, so a burst cannot make a window hold the whole trace; with
//   many ranks (the phase sized by Options::window_events_per_rank) a
//   worker's ranks stop once they have decoded their share of the phase.
//
// Invariants
//   - A rank's state (nodes, accumulators, channels) is touched only by its
//     worker; an instance only by its owner; mailboxes only as described.
//   - The root interval of a rank runs from the return of MPI_Init (or its
//     first event) to the call of MPI_Finalize (or its last event): the
//     profiler's clock synchronization runs inside those two calls, so their
//     time is the tool's, not the program's.
//   - An interval execution runs from its begin marker's return to its end
//     marker's call; marker calls are not MPI time.
//   - Nonblocking receives count at the Wait/Test that completes them (its
//     enter, leave, duration); nonblocking collectives at their start call.
//   - The result does not depend on the windows, the number of workers or
//     the number of processes they are spread over (an MPI job:
//     distributed.cpp; tests/analyzer/streaming_test.cpp, mpi_job_test.cpp),
//     to the last bit: every sum of times that reaches a rank from other
//     workers or out of order (the sweeps', the exit spreads', the waits by
//     partner) is a sum of integer Instants (instants.h), exact in any
//     order.
//
// This header declares the engine's state and steps; they are defined by
// concept: analysis.cpp (phases and decoding), p2p_matching.cpp, p2p_steps.h
// (a message's steps), collective_matching.cpp, interval_steps.h (a marker's
// steps; both inline in the decode loop), run_warnings.cpp and distributed.cpp
// (workers spread over processes). Parts that own their state, each in a
// header of its own with its invariants: PhaseMail (the records workers hand
// each other and their mailboxes, phase_mail.h), Owner (a worker's collective instances in flight,
// collective_owner.h), GlobalTree (the tree across ranks and its figures,
// global_tree.h), DelayResults (root causes and the critical path,
// delay_results.h), AnalysisWindow (the window a report covers and how the
// window index serves it, analysis_window.h), ProcessSpread (this process's
// workers of an MPI job and the exchanges, process_spread.h) and
// WorkerStatsReport (PROF_ANALYZE_WORKER_STATS, worker_stats.h). This
// header holds the per-rank state (Rank and what it accumulates), the
// Interpreter's Handler and the Engine, which keeps the phases and wires the
// parts to the ranks; analysis_window.cpp and distributed.cpp also hold the
// Engine's steps that apply a window and gather a job's ranks.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <thread>
#include <tuple>

#include "analysis_window.h"
#include "collective_owner.h"
#include "damage_stop.h"
#include "delay_log.h"
#include "delay_results.h"
#include "engine_constants.h"
#include "global_tree.h"
#include "instants.h"
#include "interpret.h"
#include "intervals.h"
#include "mailbox.h"
#include "phase_barrier.h"
#include "phase_mail.h"
#include "process_spread.h"
#include "prof/analysis/analysis.h"
#include "prof/analysis/exchange.h"
#include "result_queue.h"
#include "wait_rules.h"
#include "warning_sink.h"
#include "wire.h"
#include "window_index.h"
#include "worker_stats.h"

namespace prof::analysis::detail {
using namespace detail;

inline constexpr size_t kExamples = 5;
// Bits of a function-stat key below the function id: the call site index
// (trace::Event::call_site_index, below 64).
inline constexpr unsigned kSiteKeyBits = 6;
static_assert(format::kSiteIndexes < (1u << kSiteKeyBits));

std::vector<std::vector<int>> wait_cycles(const std::vector<RankEnd>& ends);

inline double clamp_to(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Returns the allocator's free pages to the system (glibc keeps what is freed
// between live blocks, and in each worker thread's arena; jemalloc gives
// dirty pages back only after seconds).
void give_back_free_heap();


struct FuncStat {
  uint64_t calls = 0;
  double time = 0;
  uint64_t bytes = 0;
};

// The measures of sets of instants of one context (InstantSets), exact, in
// Instant units (instants.h); the figures in global ns: the nested unions
// of levels 0-3 and the MPI and Start unions.
struct InstantSums {
  alignas(16) Instant level[kLevels] = {};

  double potential_sync() const { return instant_ns(level[kWaitSpan]); }
  // (Exact differences of nested unions: never negative.)
  double sendrecv() const { return instant_ns(level[kRecvCallSpan] - level[kWaitSpan]); }
  double collective() const { return instant_ns(level[kCollCallSpan] - level[kRecvCallSpan]); }
  double alltoall() const { return instant_ns(level[kAllToAllCallSpan] - level[kCollCallSpan]); }
  double mpi() const { return instant_ns(level[kMpiCallSpan]); }
  double time_of_start() const { return instant_ns(level[kStartCallSpan]); }
  // The exit spreads: on ranks with several threads their union, on the
  // others their sum (Engine::add_result adds each to this level).
  double time_variation() const { return instant_ns(level[kTimeVariationSpan]); }
  void add(const InstantSums& o) {
    for (int l = 0; l < kLevels; ++l) level[l] = add_lengths(level[l], o.level[l]);
  }
};

// Each reported kind's level in the wait states' sets: the report keeps its
// keys' order (WaitKind), the sets the order in which a kind takes an
// instant (WaitSpanKind).
inline constexpr std::array<WaitSpanKind, kWaitKindCount> kSpanOfWaitKind = [] {
  std::array<WaitSpanKind, kWaitKindCount> of{};
  of[kLateSender] = kLateSenderSpan;
  of[kLateReceiver] = kLateReceiverSpan;
  of[kWaitAtBarrier] = kBarrierWaitSpan;
  of[kWaitAtNxN] = kNxNWaitSpan;
  of[kLateRoot] = kLateRootSpan;
  of[kEarlyRoot] = kEarlyRootSpan;
  of[kWaitAtCollectiveOther] = kOtherCollWaitSpan;
  return of;
}();
static_assert(int{kWaitKindCount} == int{kWaitSpanKinds});

// The measures of the wait states' sets (WaitKindSets) of one context, in
// Instant units (the figures in global ns), every level nested.
struct WaitSums {
  alignas(16) Instant level[kLevels] = {};

  // A kind's instants: the difference of its nested level and the one
  // before (exact: never negative).
  double kind(WaitKind k) const {
    const int l = kSpanOfWaitKind[k];
    return instant_ns(l == 0 ? level[0] : level[l] - level[l - 1]);
  }
  // (Stopping at the range's end keeps each nested level at least the one
  // before: min(kInstantMax, x) grows with x.)
  void add(const WaitSums& o) {
    for (int l = 0; l < kLevels; ++l) level[l] = add_lengths(level[l], o.level[l]);
  }
};

// Waits of one rank in one node on one partner (world rank), in Instant
// units: exact sums, the same in whatever order the waits come.
struct PartnerWaitAcc {
  int32_t partner;
  Instant length, uncertain;
};
// Waits of one rank in one node, by partner (world rank), in Instant units
// (exact: the sums do not depend on the order of the waits; receives posted
// together wait at once, each counted, so a sum can pass the range and stops
// at its end, add_lengths): the node's own
// calls' waits (the roll-up into ancestors is summed when the figures are
// taken, rolled_partner_waits()). Kept in arrays, 12 bytes a partner (20
// once some wait is uncertain: those sums are allocated at the first nonzero
// one): a prefix sorted by partner, found by binary search, and a tail of at
// most kTail in arrival order, scanned; a full tail is sorted and merged into
// the prefix. (A rank of a wide run waits on thousands of partners: a list
// of (partner, length, uncertain) with a sorted index took 32 bytes a
// partner, and the ancestors' rolled-up copies held the same partners again,
// 150 MB at 4096 ranks.) The order of partners means nothing.
class PartnerWaits {
 public:
  static constexpr size_t kTail = 16;
  // (Inline in every wait's crediting: once the sums of uncertain waits
  // exist, a call to add to them cost as much as finding the partner.)
  [[gnu::always_inline]] void add(int32_t partner, Instant length, Instant uncertain) {
    const size_t i = place(partner);
    length_[i] = add_lengths(length_[i], length);
    if (!uncertain_.empty()) uncertain_[i] = add_lengths(uncertain_[i], uncertain);
    else if (uncertain != 0) first_uncertain(i, uncertain);
  }
  size_t size() const { return partner_.size(); }
  // Every partner's sums: by partner after shrink(), else in no particular order.
  template <class F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < partner_.size(); ++i)
      f(PartnerWaitAcc{partner_[i], length_[i], uncertain_.empty() ? 0 : uncertain_[i]});
  }
  std::vector<PartnerWaitAcc> list() const {
    std::vector<PartnerWaitAcc> v;
    v.reserve(size());
    for_each([&](const PartnerWaitAcc& p) { v.push_back(p); });
    return v;
  }
  // Distinct partners (a list() of another process's rank).
  void assign(const std::vector<PartnerWaitAcc>& v) {
    *this = PartnerWaits{};
    for (const PartnerWaitAcc& p : v) add(p.partner, p.length, p.uncertain);
    shrink();
  }
  // Capacity down to the partners held, in partner order (the pass is over;
  // rolled_partner_waits() reads them sorted).
  void shrink() {
    if (partner_.size() > sorted_) merge_tail();
    partner_.shrink_to_fit();
    length_.shrink_to_fit();
    uncertain_.shrink_to_fit();
  }
  size_t bytes() const {
    return partner_.capacity() * sizeof(int32_t) + (length_.capacity() + uncertain_.capacity()) * sizeof(Instant);
  }

 private:
  size_t place(int32_t partner) {
    const size_t n = partner_.size();
    for (size_t i = sorted_; i < n; ++i)
      if (partner_[i] == partner) return i;
    const auto end = partner_.begin() + static_cast<ptrdiff_t>(sorted_);
    const auto it = std::lower_bound(partner_.begin(), end, partner);
    if (it != end && *it == partner) return static_cast<size_t>(it - partner_.begin());
    return append(partner);
  }
  [[gnu::noinline]] size_t append(int32_t partner) {
    if (partner_.size() - sorted_ == kTail) merge_tail();
    partner_.push_back(partner);
    length_.push_back(0);
    if (!uncertain_.empty()) uncertain_.push_back(0);
    return partner_.size() - 1;
  }
  [[gnu::noinline]] void first_uncertain(size_t i, Instant uncertain) {
    uncertain_.assign(partner_.size(), 0);
    uncertain_[i] += uncertain;
  }
  // The tail, sorted, merged into the prefix from the back (in place).
  void merge_tail() {
    const size_t n = partner_.size();
    PartnerWaitAcc tail[kTail];
    size_t t = 0;
    for (size_t i = sorted_; i < n; ++i)
      tail[t++] = PartnerWaitAcc{partner_[i], length_[i], uncertain_.empty() ? 0 : uncertain_[i]};
    std::sort(tail, tail + t, [](const PartnerWaitAcc& a, const PartnerWaitAcc& b) { return a.partner < b.partner; });
    const bool unc = !uncertain_.empty();
    size_t i = sorted_, k = n;
    while (t > 0) {
      --k;
      if (i > 0 && partner_[i - 1] > tail[t - 1].partner) {
        --i;
        partner_[k] = partner_[i];
        length_[k] = length_[i];
        if (unc) uncertain_[k] = uncertain_[i];
      } else {
        --t;
        partner_[k] = tail[t].partner;
        length_[k] = tail[t].length;
        if (unc) uncertain_[k] = tail[t].uncertain;
      }
    }
    sorted_ = n;
  }
  std::vector<int32_t> partner_;
  std::vector<Instant> length_;
  std::vector<Instant> uncertain_;  // empty while every uncertain sum is 0
  size_t sorted_ = 0;              // partner_[0, sorted_) ascending; the rest in arrival order
};

// One rank's sums in one interval node (exclusive of nested nodes until the
// final roll-up), times in global ns.
struct NodeAcc {
  InstantSums in;
  WaitSums waits;
  PartnerWaits waited_for;  // the waits of the node's own calls, by partner
  // A single-threaded rank's MPI and Start time: its calls' durations, summed
  // in the order it made them (a rank with several threads measures unions
  // in `in` instead).
  double mpi_time = 0, start_time = 0;
  uint64_t calls = 0;
  uint64_t inside = 0;  // executions that overlap the window (all of them without one)
  uint64_t closed = 0;  // executions closed (a window index's start counts those before it)
  double t_sum = 0;     // T_r: the sum of the rank's executions (their parts inside the window)
  std::vector<FuncStat> funcs;  // by rank-local function slot
  double first_enter = kInf;
  bool executed_in_run = false;  // a window index says the run executes it

  uint64_t executions() const { return closed; }
};

// A wait on a partner not yet added to its node's PartnerWaits (Rank::partner_credits).
struct PartnerCredit {
  uint32_t node;
  int32_t partner;
  Instant length, uncertain;
};

struct PendingRecv {
  double issue, enter, leave;
  uint64_t hold;
  uint32_t node;  // innermost at the call that completes it (its waits' partner figures)
  // No other span of the rank overlaps its spans (Handler::recv): they are
  // summed in `node` (Engine::account_recv).
  bool whole;
};
static_assert(sizeof(PendingRecv) == 40);
struct Channel {
  Fifo<QueuedSend> sends;    // sends not yet received
  Fifo<PendingRecv> recvs;   // receives whose send has not arrived
  uint64_t skip = 0;         // sends received before decoding started (window index)
};

// An MPI_Isend's (or a started persistent send's) late receiver, known once
// both the call that completed it (on the sender) and its receive's issue
// (from the receiver's worker) are: whichever comes first waits for the
// other here, the payload of the send's hold (Rank::send_holds), with a mark
// bit in the hold's state saying which.
struct IsendWait {
  static constexpr uint8_t kWaitKnown = 2, kIssueKnown = 4;
  double wait_enter, wait_leave;  // the completing call (kWaitKnown)
  double issue;                   // the receive's issue (kIssueKnown)
  uint32_t node;                  // innermost at the completing call (kWaitKnown)
  int32_t partner;                // the receiver, world rank (kIssueKnown)
};
static_assert(((IsendWait::kWaitKnown | IsendWait::kIssueKnown) & BasicHoldQueue<IsendWait>::kReleased) == 0);


struct LocalNode {
  uint32_t parent, id, site;
  // The child entered last (raw call-site id and interval id): a loop's
  // begin markers find their node without a hash lookup.
  uint32_t last_callsite = UINT32_MAX, last_id = UINT32_MAX, last_child = 0;
};


// Executions open on several threads at once: their nodes (none an ancestor
// of another), whose instants count in each of them and their ancestors.
struct Combo {
  std::vector<uint32_t> nodes;
  InstantSums in;
  WaitSums waits;
};
inline constexpr uint32_t kComboBit = 0x80000000u;  // a context that is a Combo's index

// What the outputs read of a rank once its pass is over (Engine::finish):
// its interval nodes and their sums, its function slots' names, its delay
// log, its counts and warnings. A Rank is one during its pass; process 0 of
// an MPI job holds the other processes' ranks in this form alone, as their
// figures arrive (Engine::gather_at_root), so its memory grows with its own
// block's decoders and every rank's figures, not with a decoder a rank.
//
// Invariant: `gathered` says the members named gathered_ hold what finish()
// reads of a rank's decoder otherwise (every rank on process 0 of a job);
// a RankOutcome that is not a Rank is always gathered.
struct RankOutcome {
  RankOutcome(const RankTrace& t, size_t idx) : rank_trace(&t), rank(t.rank()), index(idx) {}

  const RankTrace* rank_trace;
  int rank;
  size_t index;

  std::vector<LocalNode> nodes;
  std::vector<NodeAcc> acc;
  std::vector<Combo> combos;
  std::vector<uint32_t> slot_name;  // local slot -> Registry function name
  std::vector<uint32_t> slot_site;  // local slot -> the rank's CallSiteDef id (0: none)
  // After roll_up(): each local node's children, by decreasing index (the
  // order roll_up adds them in): child_list[child_start[n], child_start[n + 1]).
  std::vector<uint32_t> child_start, child_list;
  std::vector<uint32_t> gmap;  // local node -> global node (merged so far)
  std::vector<uint32_t> merged_at;  // local node -> the GlobalTree::merge() call that merged it
  // For the root causes and the critical path (delay_log.h), when Rank::log_delay.
  DelayLog delay;
  DamageStop damage;

  // Several processes: what the rank's process sent process 0 at the end.
  bool gathered = false;
  uint64_t gathered_unbalanced = 0;
  double gathered_last_alive = -kInf;  // global ns (Engine::last_alive)
  std::vector<CallInFlight> gathered_in_flight;
  std::vector<std::string> gathered_rebuilt;  // rebuilt objects its calls in flight met
  trace::ReadStats gathered_stats;             // its reader's, from decoding it
  std::vector<std::string> gathered_trace_warnings;

  uint64_t events = 0, calls = 0, matched = 0, unmatched_sends = 0, unmatched_recvs = 0;
  uint64_t local_instances = 0;
  WarningSink warn;
};
// Every rank's outcome by rank index, as finish() reads them.
using RankOutcomes = std::vector<RankOutcome*>;
// A rank's outcome on the wire, from its process to process 0 (Engine::
// gather_at_root; distributed.cpp): `waits` with the waits computed
// (Options::wait_states), `delay` with the delay log kept. get_outcome()
// sets `gathered`.
void put_outcome(WireOut& out, const RankOutcome& r, bool waits, bool delay);
void get_outcome(WireIn& in, RankOutcome& r, bool waits, bool delay);

struct alignas(64) Rank : RankOutcome {
  Rank(const RankTrace& t, const Registry& reg, size_t idx, const WorldIndex& w2i,
       RankTrace::MergedCursor events)
      : RankOutcome(t, idx), interp(t, reg, idx, w2i), cursor(std::move(events)), intervals(t.rank()),
        threaded(t.stream_count() > 1) {}

  unsigned worker = 0;
  Interpreter interp;
  RankTrace::MergedCursor cursor;
  // The events decoded ahead (MergedCursor::next_batch) and the next one, ev.
  std::span<const Event> batch;
  size_t batch_next = 0;
  const Event* ev = nullptr;
  bool has_ev = false;
  double ev_enter = 0;
  // Moves ev to the next event; false at the end, which comes early at
  // damage (damage_stop.h).
  bool advance() {
    if (batch_next == batch.size()) {
      if (damage.stopped) [[unlikely]] {
        if (batch.data() != nullptr) damage.drain(cursor);
        batch = {};
        return false;
      }
      batch = cursor.next_batch();
      batch_next = 0;
      if (batch.empty()) return false;
      if (!damage.admits(cursor, batch, interp)) [[unlikely]] {
        batch = damage.cut(cursor, batch, interp);
        if (batch.empty()) {
          damage.drain(cursor);
          batch = {};
          return false;
        }
      }
    }
    ev = &batch[batch_next++];
    return true;
  }

  IntervalTracker intervals;
  FlatMap<NodeKey, uint32_t, NodeKeyHash> node_index;
  // Several threads: MPI and Start time are unions too, and markers nest per thread.
  bool threaded;
  // Calls now count as plain ones (Handler::call's common case, one test):
  // inside the root, on a whole run (no window), of one thread. Set by
  // Engine::decode and as the root starts or ends.
  bool plain_calls = false;
  // Options::function_profile: false counts a call in its node (`calls`)
  // but not by function and site (NodeAcc::funcs stays empty).
  bool profile_functions = true;
  InstantSets instants;
  WaitKindSets waits;  // the wait states by kind, in the same contexts
  // Options::wait_states (or delay_analysis, whose log takes each wait with
  // its partner): false leaves `waits`, the waits by partner and the sends'
  // holds empty (none of the characteristics reads them).
  bool track_waits = true;
  bool log_delay = false;  // (RankOutcome::delay)
  HoldQueue holds;
  // Sends whose late receiver is not known yet: they hold back the sweep of
  // the wait states only (so the characteristics, and where a window's
  // decoding may stop, never wait for them). An MPI_Isend's or a started
  // persistent send's hold carries what is known of its late receiver (the
  // interpreter keeps each one's hold in its request).
  BasicHoldQueue<IsendWait> send_holds;
  uint64_t last_isend_hold = HoldQueue::kNone;  // the hold Handler::send made for the last Isend or Start
  std::map<std::vector<uint32_t>, uint32_t> combo_index;
  // (function id << kSiteKeyBits | call site index) -> local slot + 1 (0:
  // none yet): a slot per function and call site, so the function profile
  // (by name) and the call-site profile (by name and site) sum the same slots.
  // Every key met is in slot_index; the per-call path looks in slot_memo, a
  // direct-mapped cache of kSlotMemoEntries keys, and goes to slot_index only
  // where it misses. A table indexed by every key would cost what the trace
  // defines, not what the rank calls: libprof's traces define all 620 ids
  // the shim wraps, 159 KB a rank of 64 site indexes each.
  struct SlotMemo {
    uint32_t key = UINT32_MAX;  // (no key: ids are below 2^16)
    uint32_t slot = 0;
  };
  static constexpr unsigned kSlotMemoBits = 6;
  static constexpr size_t kSlotMemoEntries = size_t{1} << kSlotMemoBits;
  static size_t slot_memo_index(uint32_t key) { return (key * 0x9E3779B1u) >> (32 - kSlotMemoBits); }
  std::vector<SlotMemo> slot_memo;  // kSlotMemoEntries once the rank decodes
  FlatMap<uint32_t, uint32_t> slot_index;
  uint32_t undefined_function = 0;  // the largest function key, shared by ids the trace does not define
  // Channels into this rank: key -> index into channel_store (compact slots).
  FlatMap<ChannelKey, uint32_t, ChannelHash> channels;
  std::vector<Channel> channel_store;

  uint64_t phase_events = 0;
  int exhausted_phase = -1;
  size_t first_chunk = 0;  // where decoding started (a window served by the index)

  // The innermost execution open on a thread (the root when none).
  uint32_t node(uint32_t stream) { return intervals.innermost(stream); }
  bool is_ancestor(uint32_t a, uint32_t n) const {
    while (n != 0) {
      n = nodes[n].parent;
      if (n == a) return true;
    }
    return false;
  }
  // The executions open on the rank now, as a context for InstantSets.
  uint32_t context() {
    if (intervals.stacks().size() == 1) [[likely]] return intervals.innermost_of_one_stack();
    return context_of_threads();
  }
  // Several threads: the innermost executions open on each, less those that
  // are ancestors of another, as one node or a Combo.
  [[gnu::noinline]] uint32_t context_of_threads() {
    const auto& stacks = intervals.stacks();
    std::vector<uint32_t> inner;
    for (const auto& st : stacks)
      if (!st.empty()) inner.push_back(st.back().payload);
    std::sort(inner.begin(), inner.end());
    inner.erase(std::unique(inner.begin(), inner.end()), inner.end());
    std::vector<uint32_t> leaves;
    for (uint32_t n : inner) {
      bool covered = false;
      for (uint32_t m : inner) covered = covered || (m != n && is_ancestor(n, m));
      if (!covered) leaves.push_back(n);
    }
    if (leaves.empty()) return 0;
    if (leaves.size() == 1) return leaves[0];
    auto [it, fresh] = combo_index.emplace(leaves, static_cast<uint32_t>(combos.size()));
    if (fresh) combos.push_back(Combo{leaves, {}, {}});
    return kComboBit | it->second;
  }
  // mpiP-style profile: a rank-local slot per function and call site keeps
  // the table small.
  FuncStat& function_stat(NodeAcc& a, const trace::Event& e, const FuncInfo& fi) {
    const uint32_t key = uint32_t{e.func < undefined_function ? e.func : undefined_function} << kSiteKeyBits |
                         e.call_site_index;
    const SlotMemo& memo = slot_memo[slot_memo_index(key)];
    const uint32_t slot = memo.key == key ? memo.slot : 0;
    // (Slot 0, not in the memo or none yet, wraps to the largest index: one
    // test for both and for a node without the slot yet. In bytes, the test
    // spares size()'s division by sizeof(FuncStat).)
    const size_t offset = size_t{slot - 1} * sizeof(FuncStat);
    const size_t bytes = static_cast<size_t>(reinterpret_cast<const char*>(a.funcs.data() + a.funcs.size()) -
                                             reinterpret_cast<const char*>(a.funcs.data()));
    if (offset >= bytes) [[unlikely]] return new_function_stat(a, key, e, fi);
    return *reinterpret_cast<FuncStat*>(reinterpret_cast<char*>(a.funcs.data()) + offset);
  }
  [[gnu::noinline]] FuncStat& new_function_stat(NodeAcc& a, uint32_t key, const trace::Event& e,
                                                const FuncInfo& fi) {
    uint32_t& slot = slot_index[key];
    if (slot == 0) {
      const bool defined = (key >> kSiteKeyBits) < undefined_function;
      slot_name.push_back(defined ? fi.name : 0);
      slot_site.push_back(defined ? e.call_site : 0);
      slot = static_cast<uint32_t>(slot_name.size());
    }
    slot_memo[slot_memo_index(key)] = SlotMemo{key, slot};
    if (a.funcs.size() < slot) a.funcs.resize(slot);
    return a.funcs[slot - 1];
  }
  // Waits by partner not yet in their nodes' sums (Engine::credit_partner
  // says when they wait here), added when the rank next settles.
  std::vector<PartnerCredit> partner_credits;
  void add_partner_credits() {
    for (const PartnerCredit& c : partner_credits) acc[c.node].waited_for.add(c.partner, c.length, c.uncertain);
    partner_credits.clear();
  }
  InstantSums& sums(uint32_t context) {
    return context & kComboBit ? combos[context & ~kComboBit].in : acc[context].in;
  }
  // Credits what is known of the rank's instants before `upto` (and its
  // waits by partner).
  // `last`: the analysis's end, when sends never matched wait no longer.
  void settle_instants(double upto, bool last = false) {
    add_partner_credits();
    instants.sweep(upto, [this](uint32_t context, const Instant* length, int levels) {
      auto* into = reinterpret_cast<TwoLevels*>(sums(context).level);
      const auto* add = reinterpret_cast<const TwoLevels*>(length);
#pragma GCC unroll 8
      for (int l = 0; l < levels / 2; ++l) into[l] += add[l];
    });
    if (!track_waits) return;
    waits.sweep(last ? upto : std::min(upto, send_holds.oldest()), [this](uint32_t context, const Instant* length, int levels) {
      Instant* into = context & kComboBit ? combos[context & ~kComboBit].waits.level : acc[context].waits.level;
      for (int l = 0; l < levels; ++l) into[l] += length[l];
    });
  }
  // After the last sweep: the buffers only the pass needs (spans, contexts,
  // sends' holds) go, before the figures' own allocations (their
  // capacities stay at what the busiest phase needed otherwise).
  void release_pass_buffers() {
    instants = InstantSets{};
    waits = WaitKindSets{};
    send_holds = {};
    add_partner_credits();
    partner_credits = {};
    for (NodeAcc& a : acc) a.waited_for.shrink();
  }
  // An MPI job's rank once what the report reads of its pass is taken
  // (Engine::gather_at_root: the gathered_ members): what only decoding
  // reads goes too (the cursor's batch and streams, the open requests, the
  // communicators' tables, the function slots' table, the channels, the
  // nodes' index), so a process holds its block's outcomes, not their
  // decoders beside them (about 12 KB a generated rank), until they go to
  // process 0, which keeps them as RankOutcomes alone.
  void release_pass_state() {
    batch = {};
    batch_next = 0;
    ev = nullptr;
    has_ev = false;
    { RankTrace::MergedCursor gone(std::move(cursor)); }
    interp.release_pass_state();
    std::vector<SlotMemo>().swap(slot_memo);
    slot_index = {};
    channels = {};
    channel_store = std::vector<Channel>();  // (move-only: not `= {}`)
    for (CachedChannel& c : channel_cache) c.index = 0;
    for (SentChannel& c : sent_cache) c = SentChannel{};
    node_index = {};
    holds = {};
    combo_index.clear();
  }
  // The rank's executions open from time t on (both sets of instants).
  // (Inline: it runs at every marker, in the decode loop.)
  [[gnu::always_inline]] void set_context(double t, uint32_t context) {
    interp.note_overlap();  // (a receive in flight waits across the change: Interpreter::lone_receive)
    instants.set_context(t, context);
    if (track_waits) waits.set_context(t, context);
    if (log_delay) delay.log_context(t, context);
  }
  // A call that synchronized the rank with world rank `peer` (a matched send
  // or receive), left at `leave`.
  [[gnu::always_inline]] void log_sync(double leave, int32_t peer) {  // (at every match)
    if (log_delay) delay.log_sync(DelayLog::sync_with_peer(leave, peer));
  }
  // A program uses a few channels over and over: a small direct-mapped cache
  // in front of the hash map (channel indices never change).
  struct CachedChannel {
    ChannelKey key;
    uint32_t index = 0;  // + 1; 0: empty
    // The key's source is in the trace (checked by a receive: Handler::recv
    // skips the check on a hit). (In the padding: no larger.)
    bool source_known = false;
  };
  static_assert(sizeof(CachedChannel) == 32);
  CachedChannel channel_cache[16];
  static size_t cache_slot(const ChannelKey& k) {
    return (static_cast<uint32_t>(k.src) * 7u + static_cast<uint32_t>(k.tag) * 13u +
            static_cast<uint32_t>(k.gid)) & 15u;
  }
  Channel& channel(const ChannelKey& k) { return channel_store[channel_index(k) - 1]; }
  // The channel's index + 1 into channel_store (made if new).
  uint32_t channel_index(const ChannelKey& k) {
    CachedChannel& c = channel_cache[cache_slot(k)];
    if (c.index != 0 && c.key == k) [[likely]] return c.index;
    return channel_not_cached(k, c);
  }
  [[gnu::noinline]] uint32_t channel_not_cached(const ChannelKey& k, CachedChannel& c) {
    uint32_t& i = channels[k];
    if (i == 0) {
      channel_store.emplace_back();
      i = static_cast<uint32_t>(channel_store.size());
    }
    c.key = k;
    c.index = i;
    c.source_known = false;
    return i;
  }
  // The channels this rank sent on last, as the sender finds them: a rank
  // sends on a few channels over and over (a halo: one per neighbour and
  // tag), and a send found here is delivered without looking up its
  // destination's rank index and, on the same worker, its channel in the
  // destination's cache (Handler::send). Direct-mapped by destination and
  // tag; a destination's channel indices never change during the pass.
  struct SentChannel {
    ChannelKey key;
    int32_t dest = -1;     // the destination's rank index; -1: empty
    uint32_t channel = 0;  // its index + 1 in the destination's channel_store; 0: not looked up
  };
  SentChannel sent_cache[4];
  static size_t sent_slot(const ChannelKey& k) {
    return (static_cast<uint32_t>(k.dst) ^ static_cast<uint32_t>(k.tag)) & 3u;
  }
  Channel* find_channel(const ChannelKey& k) {
    const uint32_t* i = channels.find(k);
    return i ? &channel_store[*i - 1] : nullptr;
  }
};

// A rank's own object, whatever its events (3,712 bytes with the sender's
// cache of channels, 128 of them, the delay log's spill, a pointer a log,
// which takes the log's full pages out of memory, and the function slots'
// map, 64 with its alignment, which spares a table of every function the trace defines): at
// 10^5 ranks a process each byte is 100 KB. Its heap besides is bounded by
// tests/analyzer/rank_memory_test.cpp.
static_assert(sizeof(Rank) <= 3712, "the Rank object grew: make the new member lazy, or raise the bound knowingly");

class Engine;

// The Interpreter's handler for one rank within one phase.
struct Handler {
  Engine& eng;
  Rank& r;
  unsigned w;
  int parity;
  PhaseMail::Row<SendRec> sends_out;  // this worker's send boxes of the phase
  PhaseMail::Row<BareSendRec> bare_sends_out;  // the same without the wait states

  Handler(Engine& engine, Rank& rank, unsigned worker, int phase_parity);

  bool call(const Event& e, const FuncInfo& fi, double enter, double leave);
  bool call_not_plain(const Event& e, const FuncInfo& fi, double enter, double leave);
  void count_call(NodeAcc& a, const Event& e, const FuncInfo& fi, double dur);
  bool continuation() const { return r.intervals.in_root(); }
  void marker(const Event& e, double enter, double leave);
  void send(const ChannelKey& k, double enter, double leave, const Event& e);
  void recv(const ChannelKey& k, double issue, uint64_t hold, double enter, double leave,
            const Event& e);
  uint64_t hold(double t) { return r.holds.add(t); }
  void release(uint64_t token) { r.holds.release(token); }
  void cancel_send(const ChannelKey& k, double send_enter);
  // The call that completed an MPI_Isend (enter, leave), or its free or
  // cancel (`unmatched`: no receive will tell its issue).
  void isend_done(uint64_t hold, double enter, double leave, const Event& e, bool unmatched);
  uint64_t isend_hold() const { return r.last_isend_hold; }
  void collective(const CommInfo& c, bool a2a, double enter, double leave, const Event& e);
  template <class F>
  void problem(WarningKind kind, F&& example, uint64_t count = 1) {
    r.warn.add(kind, example, count);
  }
  // Where the warnings' times count from: the trace's start (global ns).
  double time_origin() const;
  // IntervalTracker handler interface.
  void root_started(double t);
  uint32_t interval_begun(uint32_t stream, const Event& begin, double t, uint32_t parent);
  [[gnu::noinline]] uint32_t child_node(const Event& begin, uint32_t parent);
  void interval_ended(uint32_t stream, const OpenInterval& o, double t);
  void root_ended(double t);
};
static_assert(InterpreterHandler<Handler> && IntervalHandler<Handler>);

class Engine {
 public:
  // `registry`: built from `dir` already (else setup() builds it).
  Engine(const trace::TraceDir& dir, const Options& opt, Registry* registry = nullptr)
      : dir_(dir), opt_(opt), prebuilt_(registry) {}
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  Analysis run();

 private:
  friend struct Handler;
  // (A barrier's step cannot throw: what it throws becomes the analysis's
  // failure, Engine::fail_at_barrier.)
  struct PhaseEnd {
    Engine* e;
    void operator()() noexcept {
      try {
        e->on_phase_end();
      } catch (const std::exception& ex) {
        e->fail_at_barrier(ex);
      }
    }
  };
  struct EarlyEnd {
    Engine* e;
    void operator()() noexcept {
      try {
        e->spread_.exchange_early(e->mail_, e->dir_.ranks);
      } catch (const std::exception& ex) {
        e->fail_at_barrier(ex);
      }
    }
  };

  int index_of_world(int32_t w) const {
    return (*world_to_index_)(w);
  }
  // Once per collective call: where the worker count is a power of two (1,
  // 2, 4...; most machines), a mask gives the same owner as the division,
  // without its latency.
  unsigned owner_of(uint64_t gid, uint64_t seq) const {
    const uint64_t h = mix64(gid) + seq;
    return static_cast<unsigned>(workers_mask_ != 0 || workers_ == 1 ? h & workers_mask_ : h % workers_);
  }

  void setup();
  // A rank's state as every rank's starts (its cursor: where decoding starts).
  std::unique_ptr<Rank> new_rank(size_t i, RankTrace::MergedCursor events) const;
  // Collective calls rank index i had made on communicator gid at its end,
  // and communicators it had created over gid (another process's rank: as
  // exchange_collective_counts heard).
  uint64_t collectives_on(size_t i, uint64_t gid);
  uint64_t creations_on(size_t i, uint64_t gid);
  // A rank this process decodes (ProcessSpread).
  bool local_rank(size_t i) const { return spread_.local_worker(worker_of_[i]); }
  void gather_at_root();
  // The figures go to process 0 in rounds of about this many bytes a process.
  static constexpr size_t kGatherRoundBytes = size_t{1} << 18;
  void settle_channels(Rank& r);
  // A window under this many events runs on one worker (setup()): 64
  // phases of two workers.
  static constexpr uint64_t kOneWorkerWindowEvents = uint64_t{1} << 20;
  // The phase's events where Options::window_events is 0 (the default):
  // kWorkerPhaseEvents a worker. What a phase writes (spans, contexts, sends
  // queued or mailed, pending receives, holds) is read when the worker's
  // other ranks, the next phase's mail and the sweep come to it; at 2^13
  // events a worker that stays in its core's L2 (about 1 MB), at 2^16 it did
  // not: one worker had 4x the simulated L2 misses and 16-19% more CPU on
  // the synthetic traces, two workers held 50 MB on the exchange trace
  // (29 MB at 2^13 a worker), every page of it a first-touch fault
  // (docs/performance.md). The barriers that more phases bring cost less
  // than that, even with the machine loaded.
  static constexpr uint64_t kWorkerPhaseEvents = uint64_t{1} << 13;
  // An MPI job's phase, a process: each phase ends with a collective
  // exchange between processes, which costs more than a barrier.
  static constexpr uint64_t kJobPhaseEvents = uint64_t{1} << 16;
  // Where Options::window_events_per_rank sizes the phase (many ranks), each
  // visit decodes twice that while a phase of it holds at most this many
  // events: a visit finds its rank's state out of cache, about 10 us of
  // misses, and at 4096 ranks doubling its events took 6-13% of the CPU off;
  // what the pass buffers grows with the phase's events (about 80 bytes an
  // event: 443 to 521 MB there), so from 8192 ranks the floor stays
  // (16384 ranks at twice it peaked at 1.06 GB; docs/performance.md).
  static constexpr uint64_t kLongVisitPhaseEvents = uint64_t{1} << 21;
  // Every rank of a process holds a decoded batch (128 bytes an event)
  // from phase to phase: their batches hold about this many events together
  // (16 MB; 64 a rank took 151 MB at 16384 ranks), at least kMinBatchEvents
  // a rank (a batch's fixed cost is paid per batch).
  static constexpr size_t kBatchBudgetEvents = size_t{1} << 17;
  static constexpr size_t kMinBatchEvents = 8;
  // From kReleasePagesRanks ranks in the trace (every process of a job
  // alike), a rank holds no chunk between visits: its cursor lends its chunk
  // buffer back to the worker after each visit (and after its first batch,
  // at the start) and reads the chunk again at the next, or gives back the
  // pages of a larger chunk it decodes in the mapping, and drops its repeat
  // templates; else the whole trace stayed resident (266 MB at 16384 ranks).
  // Not below: each visit reading its chunk again cost 1.09x the wall at
  // 4096 ranks (for 539 -> 290 MB) and 1.10x at 8192 (for 661 -> 392 MB);
  // there a rank keeps its chunk's pages and its file mapped until the trace
  // closes.
  static constexpr size_t kReleasePagesRanks = 16384;
  // Above this many ranks, waits by partner wait in Rank::partner_credits
  // until their rank settles, and collective results in queued_results_
  // on a whole run (below it every rank's state stays in cache and the
  // buffer would only add work; a window's end is found from every rank's
  // holds at each phase's end, AnalysisWindow::done).
  static constexpr size_t kDeferCreditsRanks = 64;
  // Waits by partner are added to their nodes' sums at once or, past
  // kDeferCreditsRanks ranks, kept in Rank::partner_credits until the rank
  // next settles: a collective's owner hands its results to every member in
  // turn, and at thousands of ranks each wait would find its member's node
  // and partner arrays out of cache. (The sums are exact, so when they are
  // added changes nothing.)
  bool defer_partner_credits_ = false;
  // Up to this many of the process's ranks (local_ranks_), the work on each
  // rank's state before and after the pass (made; settled and freed) runs on
  // the calling thread: a thread a worker costs more than so little.
  static constexpr size_t kRanksOnCallingThread = 64;
  size_t local_ranks_ = 0;  // the ranks this process's workers analyze
  // With many ranks on a whole run, each rank's collective results but their
  // waits by partner, by rank index, in the order they came, until the rank
  // settles (apply_result, take_results): none is on its spans, sums or
  // holds before then. Here and not in the Rank: an owner hands results to
  // every member in turn, and each result then read two lines of a Rank out
  // of cache (its flags and the queue's); these queues lie side by side.
  bool queue_results_ = false;
  // The queued results written with streaming stores (ResultQueue says why):
  // from Options::stream_results_ranks ranks on. Each thread that pushed
  // fences before another reads them: a worker at the pass's end, the calling
  // thread after the final sweep.
  bool stream_results_ = false;
  std::vector<ResultQueue<ResultRec>> queued_results_;
  // A window served by the index (analysis_window.cpp): each rank's state at
  // its start, and what is open or waiting where decoding stops.
  void restore_window_state();
  void cut_at_window_end();
  void phase_collectives(unsigned w);
  void phase_decode(unsigned w);
  // A failure in a barrier's step (memory running out in the phase's
  // exchange or merge) ends the analysis as a worker's does; in a job the
  // process is then out of step with the others, and ends the job.
  void fail_at_barrier(const std::exception& ex) noexcept;
  void on_phase_end();
  void publish(unsigned w);
  void publish_early(unsigned w);
  void take_early_results(unsigned w);
  // At most `cap` events.
  void decode(Rank& r, unsigned w, int parity, int phase, uint64_t cap);
  // decode()'s loop for a rank whose clock is (kLinear) or is not its fitted
  // line: the test stays out of the two conversions an event. On a 64-byte
  // boundary: started 16 or 48 bytes past one, the same loop ran up to 9%
  // slower (docs/performance.md, "The decode loop starts on a cache line").
  template <bool kLinear>
  [[gnu::aligned(64)]] void decode_events(Rank& r, unsigned w, int parity, int phase, uint64_t cap);
  void close_exec(Rank& r, uint32_t node, double start, double t);
  void account_recv(Rank& r, const PendingRecv& pr, const QueuedSend& s, int32_t src, unsigned w,
                    int parity, SpanLane lane);
  void ingest_send(const SendRec& s, bool cancel, unsigned w, int parity);
  // Rec: SendRec or BareSendRec.
  template <class Rec>
  void ingest_sends(const Mailbox<Rec>& box, unsigned w, int parity);
  // A send from world rank `src` reaches channel `ch` of its destination `d`.
  void deliver_to(Rank& d, Channel& ch, const QueuedSend& q, int32_t src, unsigned w, int parity);
  void apply_late_receiver(const LateRecvRec& lr);
  void finish_isend(Rank& r, uint64_t hold, const IsendWait& w);
  void credit_partner(Rank& r, uint32_t node, int32_t partner, double from, double to);
  void apply_all(const Mailbox<ResultRec>& box);
  void apply_result(const ResultRec& rr);
  void add_result(Rank& r, const ResultRec& rr);
  // The rank's queued results (queue_results_), before it settles.
  void take_results(Rank& r);
  void add_members(unsigned w, const Mailbox<CollRec>& box, int parity);
  void take_member(unsigned w, const CollRec& c, int parity);
  bool all_missing_gone(Owner& own, const Instance& in);
  uint32_t gone_members(Owner& own, const CommDef* def);
  void complete(unsigned w, uint64_t gid, uint64_t seq, Instance& in, int parity, bool direct);
  void post(unsigned w, const ResultRec& rr, int parity, bool direct);
  void sweep(unsigned w, int parity, bool direct);
  void finish(Analysis& a);
  void collect_warnings_and_stats(Analysis& a);
  void read_warnings(Analysis& a, std::map<std::string, Warning>& warns);
  std::vector<CallInFlight> calls_in_flight(Rank& r);
  // The end of the rank's record, global ns (-kInf: none): its last leave,
  // or its last heartbeat where it did not finalize.
  double last_alive(Rank& r) const;
  // The ranks' logs mapped back from the spill (LogSpill::map), once: before
  // process 0 analyzes them, or before another process sends them to it.
  void map_logs_back();
  DelayResults delay_;
  bool delay_on_ = false;  // Options::delay_analysis on a whole run
  // Where the ranks' full log pages wait during the pass (with delay_on_).
  std::unique_ptr<LogSpill> log_spill_;
  std::thread spill_closing_;  // closing the spill's file, once the analyses are done with it
  bool logs_mapped_ = false;
  bool waits_on_ = true;   // Options::wait_states, or delay_on_ (Rank::track_waits)

  const trace::TraceDir& dir_;
  Options opt_;
  ProcessSpread spread_;
  Registry reg_;
  std::vector<std::string> rebuilt_in_flight_;  // rebuilt objects met resolving calls in flight
  // The members of a communicator that had made fewer than n collectives on
  // it (or creations over it), by (gid, creations, n), found once per instance
  // (calls_in_flight): in a hung job most ranks are inside the same one, and
  // looking at every member for each would take O(ranks^2).
  std::map<std::tuple<uint64_t, bool, uint64_t>, std::vector<int32_t>> absent_members_;
  Registry* prebuilt_;  // moved into reg_ by setup()
  std::unique_ptr<WorldIndex> world_to_index_;
  // By rank index; null for a rank another process decodes.
  std::vector<std::unique_ptr<Rank>> ranks_;
  // Process 0 of a job, once the pass is over (gather_at_root): every rank's
  // outcome by rank index, its own block's moved out of their Ranks (whose
  // decoders go), the others' as their figures arrive.
  std::vector<std::unique_ptr<RankOutcome>> gathered_ranks_;
  // What finish() reads of every rank: ranks_[i], else gathered_ranks_[i] (outcomes()).
  RankOutcomes outcomes_;
  const RankOutcomes& outcomes();
  unsigned workers_ = 1;
  uint64_t workers_mask_ = 0;  // workers_ - 1 when workers_ is a power of two, else 0
  std::vector<std::vector<size_t>> worker_ranks_;
  // Per worker: its ranks that stopped at their share of a phase, as places in
  // worker_ranks_ (phase_decode).
  std::vector<std::vector<size_t>> stopped_at_share_;
  // Each worker's sources with mail for it in a step (PhaseMail::take_sources).
  std::vector<std::vector<unsigned>> mail_sources_;
  // Rank index -> its worker (read-only during phases; reading Rank::worker
  // of another worker's rank would share a cache line it writes).
  std::vector<unsigned> worker_of_;
  PhaseMail mail_;
  std::vector<Owner> owners_;
  // The phase whose first step each worker has finished and published: its
  // own line each (written by one worker, read by the others).
  struct alignas(64) StepDone {
    std::atomic<int> phase{-1};
  };
  std::unique_ptr<StepDone[]> step_done_;
  GlobalTree tree_;

  // Phase state: written only by on_phase_end (all workers waiting).
  int phase_ = 0;
  bool done_ = false;
  bool sweep_ = false;
  double win_end_ = 0, delta_ = 1e6;
  // Every rank's next event enters at or after this (all sends before it are
  // delivered by the next phase's start): the watermark of InstantSets.
  double frontier_ = -kInf;
  AnalysisWindow window_;
  bool records_lost_ = false;  // some rank lost records when recording
  // Per rank index: the bound on its clock offset's error, ns (0 unknown).
  std::vector<double> clock_error_;
  std::vector<uint8_t> gone_;  // rank ended two phases ago: its records are all in
  uint32_t gone_count_ = 0;
  double t_first_ = 0, t_last_est_ = 0;
  std::optional<RunSpan> run_span_;  // each rank's DamageStop refers to it
  uint64_t events_est_ = 0;
  std::atomic<bool> failed_{false};
  static const char* const kCancelled;  // failure_ when Options::cancelled said so
  std::string failure_;
  bool failure_outside_the_input_ = false;  // (Analysis::failed_outside_the_input)
  uint64_t windows_ = 0;
  WorkerStatsReport worker_stats_;
};

inline Handler::Handler(Engine& engine, Rank& rank, unsigned worker, int phase_parity)
    : eng(engine),
      r(rank),
      w(worker),
      parity(phase_parity),
      sends_out(engine.mail_.send_row(phase_parity, worker)),
      bare_sends_out(engine.mail_.bare_send_row(phase_parity, worker)) {}

}  // namespace prof::analysis::detail
