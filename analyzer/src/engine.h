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
//   its length to the node's partner figures (waited_for).
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
//   past 4x that, so a burst cannot make a window hold the whole trace; with
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
//     distributed.cpp; tests/analyzer/streaming_test.cpp, mpi_job_test.cpp).
//
// This header declares the engine's state and steps; they are defined by
// concept: analysis.cpp (phases and decoding), p2p_matching.cpp,
// collective_matching.cpp, interval_steps.h (a marker's steps, inline in the
// decode loop), run_warnings.cpp and distributed.cpp (workers spread over
// processes). Parts that own their state, each declared below with its
// invariants: PhaseMail (the mailboxes, phase_mail.cpp), GlobalTree (the tree
// across ranks and its figures, interval_tree.cpp) and DelayResults (root
// causes and the critical path, delay_analysis.cpp and critical_path.cpp);
// the Engine keeps the phases and wires the parts to the ranks.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <thread>

#include "damage_stop.h"
#include "delay_log.h"
#include "instants.h"
#include "interpret.h"
#include "intervals.h"
#include "mailbox.h"
#include "phase_barrier.h"
#include "prof/analysis/analysis.h"
#include "prof/analysis/exchange.h"
#include "wait_rules.h"
#include "warning_sink.h"
#include "wire.h"
#include "window_index.h"

namespace prof::analysis::detail {
using namespace detail;

inline constexpr uint32_t kRootId = UINT32_MAX;
inline constexpr uint32_t kNoParent = UINT32_MAX;
inline constexpr size_t kExamples = 5;
// Bits of a function-stat key below the function id: the call site index
// (trace::Event::call_site_index, below 64).
inline constexpr unsigned kSiteKeyBits = 6;
static_assert(format::kSiteIndexes < (1u << kSiteKeyBits));
inline constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<std::vector<int>> wait_cycles(const std::vector<RankEnd>& ends);

inline double clamp_to(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }


struct FuncStat {
  uint64_t calls = 0;
  double time = 0;
  uint64_t bytes = 0;
};

// The measures of sets of instants of one context (InstantSets), global ns:
// the nested unions of levels 0-3 and the MPI and Start unions.
struct InstantSums {
  alignas(16) double level[kLevels] = {};

  double potential_sync() const { return level[kWaitSpan]; }
  // (Differences of sums: clamped so rounding never shows as a negative time.)
  double sendrecv() const { return std::max(0.0, level[kRecvCallSpan] - level[kWaitSpan]); }
  double collective() const { return std::max(0.0, level[kCollCallSpan] - level[kRecvCallSpan]); }
  double alltoall() const { return std::max(0.0, level[kAllToAllCallSpan] - level[kCollCallSpan]); }
  double mpi() const { return level[kMpiCallSpan]; }
  double time_of_start() const { return level[kStartCallSpan]; }
  // Ranks with several threads: the union of their exit spreads (one thread's
  // are summed in NodeAcc::time_variation).
  double time_variation() const { return level[kTimeVariationSpan]; }
  void add(const InstantSums& o) {
    for (int l = 0; l < kLevels; ++l) level[l] += o.level[l];
  }
};

// The measures of the wait states' sets (WaitKindSets) of one context,
// global ns: levels 0-5 nested, 6 the late receiver's own.
struct WaitSums {
  alignas(16) double level[kLevels] = {};

  // Each kind's instants: the difference of its nested level and the one
  // before (clamped, so rounding never shows as a negative time).
  double kind(int k) const {
    if (k >= kWaitNestedLevels) return level[k];
    return k == 0 ? level[0] : std::max(0.0, level[k] - level[k - 1]);
  }
  void add(const WaitSums& o) {
    for (int l = 0; l < kLevels; ++l) level[l] += o.level[l];
  }
};

// Waits of one rank in one node on one partner (world rank), ns.
struct PartnerWaitAcc {
  int32_t partner;
  double length, uncertain;
};
// Waits of one rank in one node, by partner, in the order the partners first
// came. A scan finds a partner among the first kScan; past them a binary
// search of (partner, place) pairs sorted by partner does (a rank of a wide
// run may wait on thousands of partners: at 4096 ranks the scan was a fifth
// of the analysis). The pairs take 8 bytes a partner where a hash index took
// 24 or more (at 16384 ranks the index was as large as the lists, 151 MB).
// Each partner's sums add the same values in the same order either way.
class PartnerWaits {
 public:
  static constexpr size_t kScan = 16;
  void add(int32_t partner, double length, double uncertain) {
    PartnerWaitAcc* p = find(partner);
    if (!p) p = &append(partner);
    p->length += length;
    p->uncertain += uncertain;
  }
  const std::vector<PartnerWaitAcc>& list() const { return list_; }
  void assign(std::vector<PartnerWaitAcc> v) {
    list_ = std::move(v);
    sorted_.clear();
    if (list_.size() > kScan) index_all();
  }
  auto begin() const { return list_.begin(); }
  auto end() const { return list_.end(); }

 private:
  struct Place {
    int32_t partner;
    uint32_t at;  // in list_
  };
  PartnerWaitAcc* find(int32_t partner) {
    if (list_.size() > kScan) {
      const auto it = lower_bound(partner);
      return it != sorted_.end() && it->partner == partner ? &list_[it->at] : nullptr;
    }
    for (PartnerWaitAcc& p : list_)
      if (p.partner == partner) return &p;
    return nullptr;
  }
  std::vector<Place>::iterator lower_bound(int32_t partner) {
    return std::lower_bound(sorted_.begin(), sorted_.end(), partner,
                            [](const Place& p, int32_t q) { return p.partner < q; });
  }
  void index_all() {
    sorted_.resize(list_.size());
    for (size_t i = 0; i < list_.size(); ++i) sorted_[i] = Place{list_[i].partner, static_cast<uint32_t>(i)};
    std::sort(sorted_.begin(), sorted_.end(), [](const Place& a, const Place& b) { return a.partner < b.partner; });
  }
  [[gnu::noinline]] PartnerWaitAcc& append(int32_t partner) {
    list_.push_back(PartnerWaitAcc{partner, 0, 0});
    if (list_.size() == kScan + 1) index_all();
    else if (list_.size() > kScan + 1)
      sorted_.insert(lower_bound(partner), Place{partner, static_cast<uint32_t>(list_.size() - 1)});
    return list_.back();
  }
  std::vector<PartnerWaitAcc> list_;
  std::vector<Place> sorted_;  // once longer than kScan: every partner's place, by partner
};

// One rank's sums in one interval node (exclusive of nested nodes until the
// final roll-up), times in global ns.
struct NodeAcc {
  InstantSums in;
  WaitSums waits;
  PartnerWaits waited_for;  // the waits of the node's own calls, by partner
  double time_variation = 0;
  uint64_t calls = 0;
  uint64_t inside = 0;  // executions that overlap the window (all of them without one)
  uint64_t closed = 0;  // executions closed (a window index's start counts those before it)
  double t_sum = 0;     // T_r: the sum of the rank's executions (their parts inside the window)
  std::vector<FuncStat> funcs;  // by rank-local function slot
  double first_enter = kInf;
  bool executed_in_run = false;  // a window index says the run executes it

  uint64_t executions() const { return closed; }
};

struct NodeKey {
  uint32_t parent = 0, id = 0, site = 0;
  bool operator==(const NodeKey& o) const {
    return parent == o.parent && id == o.id && site == o.site;
  }
};
struct NodeKeyHash {
  uint64_t operator()(const NodeKey& k) const {
    return mix64((uint64_t{k.parent} << 32 | k.id) ^ mix64(k.site + 0x51ull));
  }
};


struct PendingRecv {
  double issue, enter, leave;
  uint64_t hold;
  uint32_t node;  // innermost at the call that completes it (its waits' partner figures)
};
// A send known at its destination: its enter, and for a blocking send its
// leave and the sender's hold until the receive's issue is known (a late
// receiver: SendRec).
struct QueuedSend {
  double enter, leave;
  uint64_t hold;
  int32_t rank;   // sender's rank index
  uint32_t node;  // sender's innermost node at the call
};
struct Channel {
  Fifo<QueuedSend> sends;    // sends not yet received
  Fifo<PendingRecv> recvs;   // receives whose send has not arrived
  uint64_t skip = 0;         // sends received before decoding started (window index)
};

struct SendRec {
  ChannelKey key;
  double enter;
  // A blocking send: its leave, the sender's hold (HoldQueue::kNone for
  // other sends), rank index and innermost node; an MPI_Isend: leave -inf
  // (the call that completes it tells) and its hold.
  double leave;
  uint64_t hold;
  int32_t rank;
  uint32_t node;
  QueuedSend queued() const { return QueuedSend{enter, leave, hold, rank, node}; }
};
static_assert(sizeof(SendRec) == 56);
// A blocking send's late receiver, from the receiver's worker back to the
// sender's: the wait [from, to) (empty when none) on world rank `partner`;
// for an MPI_Isend or a persistent send's Start (to = -inf) `from` is the
// receive's issue (-inf: not known).
struct LateRecvRec {
  int32_t rank;  // sender's rank index
  uint32_t node;
  int32_t partner;
  double from, to;
  uint64_t hold;
};
// An MPI_Isend's (or a persistent send's) late receiver, known once both the call that completed it
// (on the sender) and its receive's issue (from the receiver's worker) are.
struct IsendWait {
  double wait_enter = 0, wait_leave = 0, issue = 0;
  uint32_t node = 0;
  int32_t partner = -1;
  bool have_wait = false, have_issue = false;
};
// A collective call's wait kind (prof/function_roles.h's wait bits), from the call and
// whether the member is the root.
enum CollWaitClass : uint8_t {
  kCollWaitOther = 0,
  kCollWaitBarrier,
  kCollWaitNxN,
  kCollWaitOneToAllNonRoot,
  kCollWaitAllToOneRoot,
};
struct CollRec {
  uint64_t gid, seq;
  const CommDef* def;
  uint32_t expected;
  int32_t rank;  // rank index
  uint32_t node;
  bool a2a;
  uint8_t wait_class;  // CollWaitClass
  bool is_root;        // the root of a rooted collective
  double enter, leave;
  uint64_t hold;
};
// A member's part of a completed instance: it waited in [enter, wait_end)
// for the last member, then worked until leave; time_variation after it.
// Its wait's kind follows from wait_class and the root's enter; `partner`
// is the last member to enter (world rank).
struct ResultRec {
  int32_t rank;
  uint32_t node;
  bool a2a;
  uint8_t wait_class;
  int32_t partner;
  double enter, wait_end, leave, time_variation;
  double root_enter;
  uint64_t hold;
};

struct Instance {
  uint32_t expected = 0, got = 0;
  double max_enter = -kInf, max_leave = -kInf;
  double root_enter = -kInf;   // the root's enter (rooted collectives; -inf: not known)
  int32_t last_rank = -1;      // the member that entered last, the lowest of a tie (rank index)
  uint32_t head = UINT32_MAX;  // member list in the owner's arena
  const CommDef* def = nullptr;
  bool done = false;
};
// (Largest fields first: 40 bytes, not 48. A phase of members waits in the
// owner's arena, more than the cache keeps, so each byte is a miss.)
struct Member {
  double enter, leave;
  uint64_t hold;
  int32_t rank;
  uint32_t node;
  uint32_t next;
  bool a2a;
  uint8_t wait_class;
};
static_assert(sizeof(Member) == 40);

// One communicator's pending instances at their owner. The owner of
// instance seq is (hash(gid) + seq) % W, so an owner holds every W-th one and
// keeps them in a ring indexed by seq / W; instances complete roughly in
// order, so the ring holds only those in flight.
struct CommQueue {
  uint64_t gid = 0;
  uint64_t base = 0;  // seq / W of the first instance held
  // A ring of instances base, base + 1, ... (power-of-two capacity).
  std::vector<Instance> buf;
  size_t head = 0, count = 0;

  Instance& at(size_t i) { return buf[(head + i) & (buf.size() - 1)]; }
  void grow_to(size_t n) {
    if (n <= buf.size()) return;
    size_t cap = buf.empty() ? 8 : buf.size();
    while (cap < n) cap *= 2;
    std::vector<Instance> next(cap);
    for (size_t i = 0; i < count; ++i) next[i] = at(i);
    buf.swap(next);
    head = 0;
  }
  // Makes instance `idx` (seq / W) present; false if it is already gone.
  Instance* get(uint64_t idx) {
    if (idx < base) return nullptr;
    const uint64_t off = idx - base;
    if (off >= count) {
      grow_to(static_cast<size_t>(off) + 1);
      for (size_t i = count; i <= off; ++i) at(i) = Instance{};
      count = static_cast<size_t>(off) + 1;
    }
    return &at(static_cast<size_t>(off));
  }
  void pop_done() {
    while (count > 0 && at(0).done) {
      head = (head + 1) & (buf.size() - 1);
      --count;
      ++base;
    }
  }
};

struct alignas(64) Owner {
  FlatMap<uint64_t, uint32_t> queue_of;  // gid -> index + 1 into queues
  std::vector<CommQueue> queues;
  uint64_t last_gid = 0;                 // the communicator asked for last
  uint32_t last_queue = 0;               // (index + 1)
  std::vector<Member> arena;
  std::vector<uint32_t> free_list;
  FlatMap<uint64_t, std::pair<uint32_t, uint32_t>> gone_members;  // def -> (epoch, count)
  uint64_t instances = 0, incomplete = 0;
  WarningSink warn;

  CommQueue& queue(uint64_t gid) {
    if (last_queue != 0 && last_gid == gid) return queues[last_queue - 1];
    uint32_t& i = queue_of[gid];
    if (i == 0) {
      queues.emplace_back();
      queues.back().gid = gid;
      i = static_cast<uint32_t>(queues.size());
    }
    last_gid = gid;
    last_queue = i;
    return queues[i - 1];
  }
  // A slot of the arena for the caller to fill in place. (A Member built on
  // the stack and copied in was read back with 16-byte loads across its
  // narrower stores, which the store buffer cannot forward: a stall per
  // collective call.) References into the arena last until the next alloc.
  uint32_t alloc() {
    if (!free_list.empty()) {
      const uint32_t i = free_list.back();
      free_list.pop_back();
      return i;
    }
    arena.emplace_back();
    return static_cast<uint32_t>(arena.size() - 1);
  }
};

struct LocalNode {
  uint32_t parent, id, site;
  // The child entered last (raw call-site id and interval id): a loop's
  // begin markers find their node without a hash lookup.
  uint32_t last_callsite = UINT32_MAX, last_id = UINT32_MAX, last_child = 0;
};

// A node of the tree across ranks, built as ranks create local nodes.
struct GNode {
  uint32_t parent, id, site;
  std::vector<std::pair<uint32_t, uint32_t>> members;  // (rank index, local node)
  std::vector<uint32_t> children;
  double first = kInf;
};

// Executions open on several threads at once: their nodes (none an ancestor
// of another), whose instants count in each of them and their ancestors.
struct Combo {
  std::vector<uint32_t> nodes;
  InstantSums in;
  WaitSums waits;
};
inline constexpr uint32_t kComboBit = 0x80000000u;  // a context that is a Combo's index

struct alignas(64) Rank {
  Rank(const RankTrace& t, const Registry& reg, size_t idx, const WorldIndex& w2i,
       RankTrace::MergedCursor events)
      : rank_trace(&t), rank(t.rank()), index(idx), interp(t, reg, idx, w2i), cursor(std::move(events)),
        intervals(t.rank()), threaded(t.stream_count() > 1) {}

  const RankTrace* rank_trace;
  int rank;
  size_t index;
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
  DamageStop damage;

  IntervalTracker intervals;
  std::vector<LocalNode> nodes;
  std::vector<NodeAcc> acc;
  FlatMap<NodeKey, uint32_t, NodeKeyHash> node_index;
  // Several threads: MPI and Start time are unions too, and markers nest per thread.
  bool threaded;
  InstantSets instants;
  WaitKindSets waits;  // the wait states by kind, in the same contexts
  // For the root causes and the critical path (delay_log.h), when log_delay.
  DelayLog delay;
  bool log_delay = false;
  HoldQueue holds;
  // Sends whose late receiver is not known yet: they hold back the sweep of
  // the wait states only (so the characteristics, and where a window's
  // decoding may stop, never wait for them).
  HoldQueue send_holds;
  // MPI_Isends and started persistent sends in flight: hold -> what is known of its late receiver (the
  // interpreter keeps each one's hold in its request).
  FlatMap<uint64_t, IsendWait, SequenceHash<uint64_t>> isend_waits;  // (holds are sequence numbers)
  uint64_t last_isend_hold = HoldQueue::kNone;  // the hold Handler::send made for the last Isend or Start
  std::vector<Combo> combos;
  std::map<std::vector<uint32_t>, uint32_t> combo_index;
  // (function id << kSiteKeyBits | call site index) -> local slot + 1 (0:
  // none yet): a slot per function and call site, so the function profile
  // (by name) and the call-site profile (by name and site) sum the same slots.
  std::vector<uint32_t> slot_of;
  uint32_t undefined_function = 0;  // the largest function key, shared by ids the trace does not define
  std::vector<uint32_t> slot_name;  // local slot -> Registry function name
  std::vector<uint32_t> slot_site;  // local slot -> the rank's CallSiteDef id (0: none)
  // Channels into this rank: key -> index into channel_store (compact slots).
  FlatMap<ChannelKey, uint32_t, ChannelHash> channels;
  std::vector<Channel> channel_store;
  std::vector<uint32_t> gmap;  // local node -> global node (merged so far)
  std::vector<uint32_t> merged_at;  // local node -> the GlobalTree::merge() call that merged it

  // Several processes: what the rank's process sent process 0 at the end
  // (gathered), which finish() reads instead of the state it has not got.
  bool gathered = false;
  uint64_t gathered_unbalanced = 0;
  double gathered_last_leave = -kInf;
  std::vector<CallInFlight> gathered_in_flight;
  std::vector<std::string> gathered_rebuilt;  // rebuilt objects its calls in flight met
  trace::ReadStats gathered_stats;             // its reader's, from decoding it
  std::vector<std::string> gathered_trace_warnings;

  uint64_t events = 0, calls = 0, matched = 0, unmatched_sends = 0, unmatched_recvs = 0;
  uint64_t local_instances = 0, phase_events = 0;
  int exhausted_phase = -1;
  size_t first_chunk = 0;  // where decoding started (a window served by the index)
  WarningSink warn;

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
    const auto& stacks = intervals.stacks();
    if (stacks.size() == 1) [[likely]] return stacks[0].empty() ? 0 : stacks[0].back().payload;
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
    const size_t key = size_t{e.func < undefined_function ? e.func : undefined_function} << kSiteKeyBits |
                       e.call_site_index;
    // (Slot 0, none yet, wraps to the largest index: one test for both.)
    const uint32_t index = slot_of[key] - 1;
    if (index >= a.funcs.size()) [[unlikely]] return new_function_stat(a, key, e, fi);
    return a.funcs[index];
  }
  [[gnu::noinline]] FuncStat& new_function_stat(NodeAcc& a, size_t key, const trace::Event& e,
                                                const FuncInfo& fi) {
    uint32_t& slot = slot_of[key];
    if (slot == 0) {
      const bool defined = (key >> kSiteKeyBits) < undefined_function;
      slot_name.push_back(defined ? fi.name : 0);
      slot_site.push_back(defined ? e.call_site : 0);
      slot = static_cast<uint32_t>(slot_name.size());
    }
    if (a.funcs.size() < slot) a.funcs.resize(slot);
    return a.funcs[slot - 1];
  }
  InstantSums& sums(uint32_t context) {
    return context & kComboBit ? combos[context & ~kComboBit].in : acc[context].in;
  }
  // Credits what is known of the rank's instants before `upto`.
  // `last`: the analysis's end, when sends never matched wait no longer.
  void settle_instants(double upto, bool last = false) {
    instants.sweep(upto, [this](uint32_t context, const double* length, int levels) {
      auto* into = reinterpret_cast<TwoLevels*>(sums(context).level);
      const auto* add = reinterpret_cast<const TwoLevels*>(length);
#pragma GCC unroll 8
      for (int l = 0; l < levels / 2; ++l) into[l] += add[l];
    });
    waits.sweep(last ? upto : std::min(upto, send_holds.oldest()), [this](uint32_t context, const double* length, int levels) {
      double* into = context & kComboBit ? combos[context & ~kComboBit].waits.level : acc[context].waits.level;
      for (int l = 0; l < levels; ++l) into[l] += length[l];
    });
  }
  // After the last sweep: the buffers only the pass needs (spans, contexts,
  // MPI_Isends in flight) go, before the figures' own allocations (their
  // capacities stay at what the busiest phase needed otherwise).
  void release_pass_buffers() {
    instants = InstantSets{};
    waits = WaitKindSets{};
    isend_waits = {};
  }
  // The rank's executions open from time t on (both sets of instants).
  void set_context(double t, uint32_t context) {
    instants.set_context(t, context);
    waits.set_context(t, context);
    if (log_delay) delay.contexts.push_back(DelayLog::Context{t, context});
  }
  // A call that synchronized the rank with world rank `peer` (a matched send
  // or receive), left at `leave`.
  void log_sync(double leave, int32_t peer) {
    if (log_delay) delay.syncs.push_back(DelayLog::Sync{leave, peer, 0});
  }
  // A program uses a few channels over and over: a small direct-mapped cache
  // in front of the hash map (channel indices never change).
  struct CachedChannel {
    ChannelKey key;
    uint32_t index = 0;  // + 1; 0: empty
  };
  CachedChannel channel_cache[16];
  static size_t cache_slot(const ChannelKey& k) {
    return (static_cast<uint32_t>(k.src) * 7u + static_cast<uint32_t>(k.tag) * 13u +
            static_cast<uint32_t>(k.gid)) & 15u;
  }
  Channel& channel(const ChannelKey& k) {
    CachedChannel& c = channel_cache[cache_slot(k)];
    if (c.index != 0 && c.key == k) [[likely]] return channel_store[c.index - 1];
    return channel_not_cached(k, c);
  }
  [[gnu::noinline]] Channel& channel_not_cached(const ChannelKey& k, CachedChannel& c) {
    uint32_t& i = channels[k];
    if (i == 0) {
      channel_store.emplace_back();
      i = static_cast<uint32_t>(channel_store.size());
    }
    c.key = k;
    c.index = i;
    return channel_store[i - 1];
  }
  Channel* find_channel(const ChannelKey& k) {
    const uint32_t* i = channels.find(k);
    return i ? &channel_store[*i - 1] : nullptr;
  }
};

// The mailboxes between workers: for each parity of the phase (and, for the
// results, kEarlyResults) and each pair of workers (source, destination), a
// box of sends, of cancelled sends, of late receivers, of collective calls
// and of collective results.
//
// Invariants: a box of parity P is written only by its source worker in a
// phase of parity P, published before the phase's barrier and read and
// cleared only by its destination worker in the next phase (the early
// results: published by publish_early(), read after the source's flag,
// Engine::take_early_results). Between processes, pack() empties a box that
// unpack() fills and publishes on the destination's process.
class PhaseMail {
 public:
  // Results of instances completed in a phase's first step, taken in the same
  // phase (Engine::take_early_results): a third parity of the result boxes.
  static constexpr int kEarlyResults = 2;

  void resize(unsigned workers);
  Mailbox<SendRec>& send_box(int parity, unsigned src, unsigned dst) { return send_[at(parity, src, dst)].v; }
  Mailbox<SendRec>& cancel_box(int parity, unsigned src, unsigned dst) { return cancel_[at(parity, src, dst)].v; }
  Mailbox<LateRecvRec>& late_box(int parity, unsigned src, unsigned dst) { return late_[at(parity, src, dst)].v; }
  Mailbox<CollRec>& coll_box(int parity, unsigned src, unsigned dst) { return coll_[at(parity, src, dst)].v; }
  // parity 0 or 1, or kEarlyResults.
  Mailbox<ResultRec>& result_box(int parity, unsigned src, unsigned dst) { return result_[at(parity, src, dst)].v; }
  bool empty() const;
  // What worker w wrote in a phase of this parity becomes readable after the barrier.
  void publish(int parity, unsigned w);
  // Several processes: the boxes from workers [src_lo, src_hi) to [dst_lo,
  // dst_hi) to a byte stream and back (only the results' with results_only).
  // A collective call's communicator travels as its index among its rank's
  // definitions: the definition's address is the process's own.
  // (`traces`: every rank's file, by rank index: another process's rank has
  // no Rank here.)
  void pack(WireOut& out, int parity, unsigned src_lo, unsigned src_hi, unsigned dst_lo, unsigned dst_hi,
            bool results_only, const std::vector<std::unique_ptr<RankTrace>>& traces);
  void unpack(WireIn& in, int parity, unsigned src_lo, unsigned src_hi, unsigned dst_lo, unsigned dst_hi,
              bool results_only, const std::vector<std::unique_ptr<RankTrace>>& traces);

 private:
  size_t at(int parity, unsigned src, unsigned dst) const {
    return (static_cast<size_t>(parity) * workers_ + src) * workers_ + dst;
  }
  // Each box on its own cache line: two workers write neighbouring boxes in
  // the same phase (false sharing on every push otherwise).
  template <class T>
  struct alignas(64) Box {
    Mailbox<T> v;
  };
  unsigned workers_ = 1;
  std::vector<Box<SendRec>> send_;
  std::vector<Box<SendRec>> cancel_;  // cancelled sends (rare)
  std::vector<Box<LateRecvRec>> late_;  // receives' issues back to blocking senders
  std::vector<Box<CollRec>> coll_;
  std::vector<Box<ResultRec>> result_;  // parities 0, 1 and kEarlyResults
};

// The tree of interval nodes across ranks: a node per (parent, interval id,
// call site) path, built during the pass as ranks create local nodes (merge()
// at each phase's end), each listing its members (rank index, local node) in
// the order they joined.
//
// Invariants
//   - Node 0 is the root; a node's parent was created before it (children
//     have larger indices).
//   - A rank's gmap maps its local nodes merged so far, in order, and
//     merged_at says at which merge each joined: process 0 of an MPI job
//     rebuilds the same tree, members in the same order (rebuild()), so every
//     sum over members adds the same values in the same order.
class GlobalTree {
 public:
  using Ranks = std::vector<std::unique_ptr<Rank>>;
  // The root alone.
  void start();
  // Local nodes created since the last merge join the tree.
  void merge(const Ranks& ranks);
  // The tree as one process merges it, from every rank's nodes and merged_at
  // (distributed.cpp).
  void rebuild(const Ranks& ranks);
  // After the pass: the last nodes merged, children ordered by first entry.
  void order(const Ranks& ranks);
  const std::vector<GNode>& nodes() const { return nodes_; }
  // One node's figures across ranks (docs/metrics.md), in seconds.
  IntervalNode node_figures(const GNode& gn, const SiteInfo& site, const Ranks& ranks, const Registry& reg) const;

 private:
  void join(Rank& r, size_t li);
  std::vector<GNode> nodes_;
  FlatMap<NodeKey, uint32_t, NodeKeyHash> index_;
  uint32_t merges_ = 0;  // merge() calls so far
};
// Nested nodes' sums roll up into their parents', after the pass.
void roll_up(Rank& r);
// The root's source: MPI_Init's call site when the trace names it, else the program.
SiteInfo root_call_site(const GlobalTree::Ranks& ranks, const Registry& reg, const std::string& executable);

// The root causes of waits and the critical path (delay_log.h,
// docs/metrics.md), computed after the pass over a whole run from the ranks'
// logs: per node of the tree across ranks, the causes of its waits
// (delay_analysis.cpp) and its time on the critical path (critical_path.cpp).
//
// Invariants: both are exclusive of nested nodes until delay_figures() rolls
// them up; they depend only on the logs (sorted by delay_analysis()), not on
// how workers or processes shared the ranks.
class DelayResults {
 public:
  // Sorts the ranks' logs and charges each wait to its causes.
  void delay_analysis(std::vector<std::unique_ptr<Rank>>& ranks, const GlobalTree& tree,
                      const WorldIndex& index_of_world);
  // After delay_analysis() (the logs sorted).
  void critical_path(const std::vector<std::unique_ptr<Rank>>& ranks, const GlobalTree& tree,
                     const WorldIndex& index_of_world);
  // Both, rolled up, into the report's intervals (`index_of`: global node -> index).
  void delay_figures(Analysis& a, const std::vector<int>& index_of, const GlobalTree& tree) const;

 private:
  struct CauseAcc {
    uint32_t node;  // global node that caused
    int32_t rank;   // world rank on which it did
    double ns;
  };
  static uint32_t logged_node(const Rank& r, uint32_t context);
  std::vector<std::vector<CauseAcc>> caused_by_;
  std::vector<double> critical_ns_;
  double run_span_ns_ = 0;
};

class Engine;

// Where one worker's time goes (PROF_ANALYZE_WORKER_STATS=1 prints it to
// stderr): on its own cache line, so counting never shares one with another
// worker's.
struct alignas(64) WorkerStats {
  uint64_t total_ns = 0, total_cpu_ns = 0;  // its whole loop (wall, the thread's CPU)
  uint64_t wait_ns = 0;      // at the phase-end barrier, for the others
  uint64_t handover_ns = 0;  // for the others' first steps (take_early_results)
  uint64_t end_ns = 0;       // running the phase's end (the last to arrive does)
  uint64_t wait_cpu_ns = 0;  // the thread's CPU time while waiting (spinning)
  uint64_t last = 0;         // phases it arrived last at
  uint64_t events = 0;       // events its ranks decoded
  uint64_t waits[4] = {};    // waits under 10 us, 100 us, 1 ms, and longer
};

// The Interpreter's handler for one rank within one phase.
struct Handler {
  Engine& eng;
  Rank& r;
  unsigned w;
  int parity;

  bool call(const Event& e, const FuncInfo& fi, double enter, double leave);
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
  Analysis run();

 private:
  friend struct Handler;
  struct PhaseEnd {
    Engine* e;
    void operator()() noexcept { e->on_phase_end(); }
  };
  struct EarlyEnd {
    Engine* e;
    void operator()() noexcept { e->exchange_early(); }
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
  std::unique_ptr<Rank> new_rank(size_t i, RankTrace::MergedCursor events) const;
  // Several processes (Options::exchange): a process runs workers
  // [local_lo_, local_hi_) of workers_, per_proc_ to a process.
  bool local_worker(unsigned w) const { return w >= local_lo_ && w < local_hi_; }
  bool local_rank(size_t i) const { return local_worker(worker_of_[i]); }
  unsigned first_worker(int proc) const {
    return std::min<unsigned>(workers_, static_cast<unsigned>(proc) * per_proc_);
  }
  struct PhaseSums {
    uint64_t events = 0, phase_events = 0;
    double min_next = kInf;
    bool boxes_empty = true;
  };
  std::vector<std::string> all_to_all(const std::vector<std::string>& out);
  void exchange_phase(int parity, PhaseSums& sums);
  void exchange_early();
  void exchange_final_results();
  void exchange_collective_counts();
  // Collective calls rank index i had made on communicator gid at its end
  // (another process's rank: as exchange_collective_counts heard).
  uint64_t collectives_on(size_t i, uint64_t gid);
  void gather_at_root();
  // The figures go to process 0 in rounds of about this many bytes a process.
  static constexpr size_t kGatherRoundBytes = size_t{1} << 18;
  void settle_channels(Rank& r);
  bool plan_window(const std::vector<const RankTrace*>& traces);
  // A window under this many events runs on one worker (setup()): about
  // sixteen phases of the default size (Options::window_events).
  static constexpr uint64_t kOneWorkerWindowEvents = uint64_t{1} << 20;
  bool window_events_below(uint64_t limit) const;
  void restore_window_state();
  bool window_done() const;
  void cut_at_window_end();
  void phase_collectives(unsigned w);
  void phase_decode(unsigned w);
  void on_phase_end();
  void publish(unsigned w);
  void publish_early(unsigned w);
  void take_early_results(unsigned w);
  // At most `cap` events.
  void decode(Rank& r, unsigned w, int parity, int phase, uint64_t cap);
  void close_exec(Rank& r, uint32_t node, double start, double t);
  void account_recv(Rank& r, const PendingRecv& pr, const QueuedSend& s, int32_t src, unsigned w,
                    int parity, SpanLane lane);
  void ingest_send(const SendRec& s, bool cancel, unsigned w, int parity);
  void deliver_send(const SendRec& s, unsigned w, int parity);
  void apply_late_receiver(const LateRecvRec& lr);
  void finish_isend(Rank& r, uint64_t hold, const IsendWait& w);
  void credit_partner(Rank& r, uint32_t node, int32_t partner, double from, double to);
  void apply(const ResultRec& rr);
  void apply_result(const ResultRec& rr);
  void add_member(unsigned w, const CollRec& c, int parity);
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
  DelayResults delay_;
  bool delay_on_ = false;  // Options::delay_analysis on a whole run

  const trace::TraceDir& dir_;
  Options opt_;
  Exchange* ex_ = nullptr;
  bool dist_ = false;  // spread over several processes
  int proc_ = 0, procs_ = 1;
  unsigned per_proc_ = 1, local_lo_ = 0, local_hi_ = 1;
  // Each rank's exhausted_phase as this process knows it (other processes'
  // ranks: as their processes reported it at a phase's end).
  std::vector<int> exhausted_all_;
  std::vector<uint8_t> exhausted_sent_;
  bool final_sweep_ = false;  // several processes: the end's sweep posts every result
  // Several processes: other processes' ranks' collective counts at their
  // ends, (gid, count) by rank index (only for a trace with calls in flight).
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> remote_collectives_;
  // Rank states each process held during the pass (its block's; process 0
  // learns the others' at the end), for the worker statistics.
  std::vector<uint64_t> rank_states_;
  // This process's all_to_all calls, the bytes it sent and received.
  uint64_t exchanges_ = 0, exchanged_bytes_ = 0, received_bytes_ = 0;
  uint64_t gather_rounds_ = 0;  // of those, the end's rounds to process 0
  Registry reg_;
  std::vector<std::string> rebuilt_in_flight_;  // rebuilt objects met resolving calls in flight
  Registry* prebuilt_;  // moved into reg_ by setup()
  std::unique_ptr<WorldIndex> world_to_index_;
  // By rank index; null for a rank another process decodes (until process 0
  // receives its figures at the end: gather_at_root).
  std::vector<std::unique_ptr<Rank>> ranks_;
  unsigned workers_ = 1;
  uint64_t workers_mask_ = 0;  // workers_ - 1 when workers_ is a power of two, else 0
  std::vector<std::vector<size_t>> worker_ranks_;
  // Per worker: its ranks that stopped at their share of a phase (phase_decode).
  std::vector<std::vector<size_t>> stopped_at_share_;
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
  // The window in global ns (Options::window_*; the whole run without one).
  bool windowed_ = false;
  bool records_lost_ = false;  // some rank lost records when recording
  double lo_ = -kInf, hi_ = kInf;
  // A window served by the window index: decoding starts at index_start_ and
  // stops once nothing after hi_ can change what lies inside the window.
  bool from_index_ = false;
  double tail_step_ = 1e4;  // ns past hi_ the next phase may decode (doubles)
  WindowIndex index_;
  std::vector<size_t> index_start_;
  std::vector<WantedSends> fetched_;  // sends from before the senders' starts
  std::string index_note_;
  double index_first_ = kInf;  // the trace's first event, from the index
  uint64_t chunks_total_ = 0, chunks_decoded_ = 0;
  bool cut_ = false;  // stopped past the window's end (chunks_decoded_ counted)
  // Per rank index: the bound on its clock offset's error, ns (0 unknown).
  std::vector<double> clock_error_;
  std::vector<uint8_t> gone_;  // rank ended two phases ago: its records are all in
  uint32_t gone_count_ = 0;
  double t_first_ = 0, t_last_est_ = 0;
  uint64_t events_est_ = 0;
  std::atomic<bool> failed_{false};
  static const char* const kCancelled;  // failure_ when Options::cancelled said so
  std::string failure_;
  uint64_t windows_ = 0;
  // Diagnostics (PROF_ANALYZE_WORKER_STATS): read once, off by default.
  bool worker_stats_on_ = false;
  std::vector<WorkerStats> worker_stats_;
  uint64_t setup_ns_ = 0, finish_ns_ = 0;
  void print_worker_stats() const;
};

}  // namespace prof::analysis::detail
