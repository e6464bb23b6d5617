// The analysis engine: one streaming pass over every rank, in parallel, that
// builds the interval tree and the characteristics of spec/metrics.md.
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
//       them back to the member's rank.
//   Matched figures are added to the interval node that was innermost on the
//   rank at the call; at the end, nodes are rolled up into their parents (an
//   MPI call belongs to every open interval). Per execution only T_r is kept,
//   because Idle needs the k-th execution's maximum over ranks, and at each
//   phase end executions done on every rank are folded away (Engine::fold).
//   So memory grows with messages, collectives and executions in flight and
//   with the tree, not with events. The window adapts so that a phase decodes
//   about Options::window_events events, and a rank stops early in a phase
//   past 4x that, so a burst cannot make a window hold the whole trace.
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
//   - The result does not depend on the windows or the number of workers
//     (tests/analyzer/streaming_test.cpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>

#include "interpret.h"
#include "intervals.h"
#include "mailbox.h"
#include "prof/analysis/analysis.h"

namespace prof::analysis {
namespace {

using namespace detail;

constexpr uint32_t kRootId = UINT32_MAX;
constexpr uint32_t kNoParent = UINT32_MAX;
constexpr size_t kExamples = 5;
constexpr double kInf = std::numeric_limits<double>::infinity();

double clamp_to(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// Problems of one kind, counted; the first few described.
class WarningSink {
 public:
  template <class F>
  void add(std::string_view category, F&& example, uint64_t n = 1) {
    auto it = cats_.find(category);
    if (it == cats_.end()) it = cats_.emplace(std::string(category), Cat{}).first;
    it->second.count += n;
    if (it->second.examples.size() < kExamples) {
      std::string e = example();
      auto& ex = it->second.examples;
      if (std::find(ex.begin(), ex.end(), e) == ex.end()) ex.push_back(std::move(e));
    }
  }
  void merge_into(std::map<std::string, Warning>& out) const {
    for (const auto& [name, c] : cats_) {
      Warning& w = out[name];
      w.category = name;
      w.count += c.count;
      for (const auto& e : c.examples)
        if (w.examples.size() < kExamples &&
            std::find(w.examples.begin(), w.examples.end(), e) == w.examples.end())
          w.examples.push_back(e);
    }
  }

 private:
  struct Cat {
    uint64_t count = 0;
    std::vector<std::string> examples;
  };
  std::map<std::string, Cat, std::less<>> cats_;
};

struct FuncStat {
  uint64_t calls = 0;
  double time = 0;
  uint64_t bytes = 0;
};

// The measures of sets of instants of one context (InstantSets), global ns:
// the nested unions of levels 0-3 and the MPI and Start unions.
struct InstantSums {
  double level[kLevels] = {};

  double potential_sync() const { return level[kWaitSpan]; }
  // (Differences of sums: clamped so rounding never shows as a negative time.)
  double sendrecv() const { return std::max(0.0, level[kRecvCallSpan] - level[kWaitSpan]); }
  double collective() const { return std::max(0.0, level[kCollCallSpan] - level[kRecvCallSpan]); }
  double alltoall() const { return std::max(0.0, level[kAllToAllCallSpan] - level[kCollCallSpan]); }
  double mpi() const { return level[kMpiCallSpan]; }
  double time_of_start() const { return level[kStartCallSpan]; }
  void add(const InstantSums& o) {
    for (int l = 0; l < kLevels; ++l) level[l] += o.level[l];
  }
};

// One rank's sums in one interval node (exclusive of nested nodes until the
// final roll-up), times in global ns.
struct NodeAcc {
  InstantSums in;
  double time_variation = 0;
  uint64_t calls = 0;
  uint64_t inside = 0;  // executions that overlap the window (all of them without one)
  // T_r of executions t_base.. not yet folded (see Engine::fold).
  std::vector<double> T;
  uint64_t t_base = 0;
  double t_sum = 0;     // sum of T_r over every execution
  uint64_t snap_n = 0;  // prefix of Exec_k over the first snap_n executions:
  double snap_p = 0;    // recorded when the fold passes this rank's count
  std::vector<FuncStat> funcs;  // by rank-local function slot
  double first_enter = kInf;
  bool touched = false;  // closed an execution since the last fold

  uint64_t executions() const { return t_base + T.size(); }
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
};
struct Channel {
  Fifo<double> sends;        // send enters not yet received
  Fifo<PendingRecv> recvs;   // receives whose send has not arrived
};

struct SendRec {
  ChannelKey key;
  double enter;
};
static_assert(sizeof(SendRec) == 32);
struct CollRec {
  uint64_t gid, seq;
  const CommDef* def;
  uint32_t expected;
  int32_t rank;  // rank index
  uint32_t node;
  bool a2a;
  double enter, leave;
  uint64_t hold;
};
// A member's part of a completed instance: it waited in [enter, wait_end)
// for the last member, then worked until leave; time_variation after it.
struct ResultRec {
  int32_t rank;
  uint32_t node;
  bool a2a;
  double enter, wait_end, leave, time_variation;
  uint64_t hold;
};

struct Instance {
  uint32_t expected = 0, got = 0;
  double max_enter = -kInf, max_leave = -kInf;
  uint32_t head = UINT32_MAX;  // member list in the owner's arena
  const CommDef* def = nullptr;
  bool done = false;
};
struct Member {
  int32_t rank;
  uint32_t node;
  bool a2a;
  double enter, leave;
  uint64_t hold;
  uint32_t next;
};

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
  uint32_t alloc(const Member& m) {
    if (!free_list.empty()) {
      const uint32_t i = free_list.back();
      free_list.pop_back();
      arena[i] = m;
      return i;
    }
    arena.push_back(m);
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
  uint64_t folded = 0;  // executions whose Exec_k is summed into `exec`
  double exec = 0;      // sum of Exec_k for k < folded
  double first = kInf;
  bool dirty = false;   // a member closed an execution since the last fold
};

// Executions open on several threads at once: their nodes (none an ancestor
// of another), whose instants count in each of them and their ancestors.
struct Combo {
  std::vector<uint32_t> nodes;
  InstantSums in;
};
constexpr uint32_t kComboBit = 0x80000000u;  // a context that is a Combo's index

struct alignas(64) Rank {
  Rank(const RankTrace& t, const Registry& reg, size_t idx, const WorldIndex& w2i)
      : rt(&t), rank(t.rank()), index(idx), interp(t, reg, idx, w2i), cursor(t.events()),
        intervals(t.rank()), threaded(t.stream_count() > 1) {}

  const RankTrace* rt;
  int rank;
  size_t index;
  unsigned worker = 0;
  Interpreter interp;
  RankTrace::MergedCursor cursor;
  Event ev;
  bool has_ev = false;
  double ev_enter = 0;

  IntervalTracker intervals;
  std::vector<LocalNode> nodes;
  std::vector<NodeAcc> acc;
  FlatMap<NodeKey, uint32_t, NodeKeyHash> node_index;
  // Several threads: MPI and Start time are unions too, and markers nest per thread.
  bool threaded;
  InstantSets instants;
  HoldQueue holds;
  std::vector<Combo> combos;
  std::map<std::vector<uint32_t>, uint32_t> combo_index;
  std::vector<uint32_t> slot_of;    // function id -> local slot + 1 (0: none yet)
  std::vector<uint32_t> slot_name;  // local slot -> Registry function name
  // Channels into this rank: key -> index into channel_store (compact slots).
  FlatMap<ChannelKey, uint32_t, ChannelHash> channels;
  std::vector<Channel> channel_store;
  std::vector<uint32_t> gmap;  // local node -> global node (merged so far)
  std::vector<uint32_t> touched;  // local nodes that closed an execution this phase

  uint64_t events = 0, calls = 0, matched = 0, unmatched_sends = 0, unmatched_recvs = 0;
  uint64_t local_instances = 0, phase_events = 0;
  int exhausted_phase = -1;
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
    if (stacks.size() == 1) return stacks[0].empty() ? 0 : stacks[0].back().payload;
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
    if (fresh) combos.push_back(Combo{leaves, {}});
    return kComboBit | it->second;
  }
  InstantSums& sums(uint32_t context) {
    return context & kComboBit ? combos[context & ~kComboBit].in : acc[context].in;
  }
  // Credits what is known of the rank's instants before `upto`.
  void settle_instants(double upto) {
    instants.sweep(upto, [this](uint32_t context, int level, double length) {
      sums(context).level[level] += length;
    });
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
    if (c.index != 0 && c.key == k) return channel_store[c.index - 1];
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

class Engine;

// A barrier for the phases: the last to arrive runs `done`, then releases the
// others. Waiters spin briefly, then yield, and only then sleep: a phase takes
// about a millisecond, and std::barrier's sleep and wake-up cost about 4% of
// the analysis of 10^8 events on the 2-core VM. Yielding keeps a waiter from
// starving a worker that shares its core.
template <class F>
class PhaseBarrier {
 public:
  PhaseBarrier(unsigned n, F done) : n_(n), done_(std::move(done)) {}
  void arrive_and_wait() {
    const uint32_t gen = gen_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      done_();
      arrived_.store(0, std::memory_order_relaxed);
      gen_.store(gen + 1, std::memory_order_release);
      gen_.notify_all();
      return;
    }
    for (int i = 0; i < 2000; ++i) {
      if (gen_.load(std::memory_order_acquire) != gen) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    for (int i = 0; i < 200; ++i) {
      if (gen_.load(std::memory_order_acquire) != gen) return;
      std::this_thread::yield();
    }
    while (gen_.load(std::memory_order_acquire) == gen) gen_.wait(gen, std::memory_order_acquire);
  }

 private:
  const unsigned n_;
  F done_;
  alignas(64) std::atomic<uint32_t> arrived_{0};
  alignas(64) std::atomic<uint32_t> gen_{0};
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
  void collective(const CommInfo& c, bool a2a, double enter, double leave, const Event& e);
  template <class F>
  void problem(const char* category, F&& example, uint64_t count = 1) {
    r.warn.add(category, example, count);
  }
  // IntervalTracker handler interface.
  void root_started(double t);
  uint32_t interval_begun(uint32_t stream, const Event& begin, double t, uint32_t parent);
  void interval_ended(uint32_t stream, const OpenInterval& o, double t);
  void root_ended(double t);
};

class Engine {
 public:
  Engine(const trace::TraceDir& dir, const Options& opt) : dir_(dir), opt_(opt) {}
  Analysis run();

 private:
  friend struct Handler;
  struct PhaseEnd {
    Engine* e;
    void operator()() noexcept { e->on_phase_end(); }
  };

  int index_of_world(int32_t w) const {
    return (*world_to_index_)(w);
  }
  Mailbox<SendRec>& send_box(int parity, unsigned src, unsigned dst) {
    return send_boxes_[(static_cast<size_t>(parity) * W_ + src) * W_ + dst].v;
  }
  Mailbox<SendRec>& cancel_box(int parity, unsigned src, unsigned dst) {
    return cancel_boxes_[(static_cast<size_t>(parity) * W_ + src) * W_ + dst].v;
  }
  Mailbox<CollRec>& coll_box(int parity, unsigned src, unsigned dst) {
    return coll_boxes_[(static_cast<size_t>(parity) * W_ + src) * W_ + dst].v;
  }
  Mailbox<ResultRec>& result_box(int parity, unsigned src, unsigned dst) {
    return result_boxes_[(static_cast<size_t>(parity) * W_ + src) * W_ + dst].v;
  }
  unsigned owner_of(uint64_t gid, uint64_t seq) const {
    return static_cast<unsigned>((mix64(gid) + seq) % W_);
  }

  void setup();
  void phase_body(unsigned w);
  void on_phase_end();
  void publish(unsigned w);
  void decode(Rank& r, unsigned w, int parity, int phase);
  void close_exec(Rank& r, uint32_t node, double start, double t);
  void account_recv(Rank& r, double issue, double enter, double leave, double send_enter,
                    SpanLane lane);
  void ingest_send(const SendRec& s, bool cancel);
  void apply(const ResultRec& rr);
  void add_member(unsigned w, const CollRec& c, int parity);
  bool all_missing_gone(Owner& own, const Instance& in);
  uint32_t gone_members(Owner& own, const CommDef* def);
  void complete(unsigned w, uint64_t gid, uint64_t seq, Instance& in, int parity, bool direct);
  void post(unsigned w, const ResultRec& rr, int parity, bool direct);
  void sweep(unsigned w, int parity, bool direct);
  bool boxes_empty() const;
  void merge_nodes();
  void fold(bool final);
  void finish(Analysis& a);
  void collect_warnings_and_stats(Analysis& a);
  void read_warnings(Analysis& a, std::map<std::string, Warning>& warns);
  void roll_up();
  void order_tree();
  SiteInfo root_call_site(const std::string& executable) const;
  IntervalNode node_figures(const GNode& gn, const SiteInfo& site) const;

  const trace::TraceDir& dir_;
  Options opt_;
  Registry reg_;
  std::unique_ptr<WorldIndex> world_to_index_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  unsigned W_ = 1;
  std::vector<std::vector<size_t>> worker_ranks_;
  // Rank index -> its worker (read-only during phases; reading Rank::worker
  // of another worker's rank would share a cache line it writes).
  std::vector<unsigned> worker_of_;
  // Each box on its own cache line: two workers write neighbouring boxes in
  // the same phase (false sharing on every push otherwise).
  template <class T>
  struct alignas(64) Box {
    Mailbox<T> v;
  };
  std::vector<Box<SendRec>> send_boxes_;
  std::vector<Box<SendRec>> cancel_boxes_;  // cancelled sends (rare)
  std::vector<Box<CollRec>> coll_boxes_;
  std::vector<Box<ResultRec>> result_boxes_;
  std::vector<Owner> owners_;
  std::vector<GNode> g_;
  uint32_t alive_at_fold_ = UINT32_MAX;
  FlatMap<NodeKey, uint32_t, NodeKeyHash> gindex_;

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
  double lo_ = -kInf, hi_ = kInf;
  std::vector<uint8_t> gone_;  // rank ended two phases ago: its records are all in
  uint32_t gone_count_ = 0;
  double t_first_ = 0, t_last_est_ = 0;
  uint64_t events_est_ = 0;
  std::atomic<bool> failed_{false};
  std::string failure_;
  uint64_t windows_ = 0;
};

// ---------------------------------------------------------------------------
// Per-event work (a rank's worker)

bool Handler::call(const Event& e, const FuncInfo& fi, double enter, double leave) {
  if (!r.intervals.call(fi, enter, leave, *this)) return false;
  const uint32_t node = r.node(e.stream);
  NodeAcc& a = r.acc[node];
  // Counted with its part inside the window (all of it without one).
  if (eng.windowed_ && (leave < eng.lo_ || enter > eng.hi_)) return true;
  const double dur = eng.windowed_ ? std::min(leave, eng.hi_) - std::max(enter, eng.lo_) : leave - enter;
  const bool starts = fi.role & kRoleStartsOp;
  if (r.threaded) {
    // Calls of several threads may overlap: the union counts.
    r.instants.add(enter, leave, kMpiCallSpan, kDecodeLane);
    if (starts) r.instants.add(enter, leave, kStartCallSpan, kDecodeLane);
  } else {
    // One thread: calls never overlap, and each lies in one context.
    a.in.level[kMpiCallSpan] += dur;
    if (starts) a.in.level[kStartCallSpan] += dur;
  }
  ++a.calls;
  ++r.calls;
  // mpiP-style profile: a rank-local slot per function keeps the table small.
  const size_t fid = e.func < r.slot_of.size() - 1 ? e.func : r.slot_of.size() - 1;
  uint32_t& slot = r.slot_of[fid];
  if (slot == 0) {
    r.slot_name.push_back(fid < r.slot_of.size() - 1 ? fi.name : 0);
    slot = static_cast<uint32_t>(r.slot_name.size());
  }
  if (a.funcs.size() < slot) a.funcs.resize(slot);
  FuncStat& fs = a.funcs[slot - 1];
  ++fs.calls;
  fs.time += dur;
  switch (e.kind) {
    case FuncKind::Send:
    case FuncKind::Recv:
    case FuncKind::Isend:
    case FuncKind::Irecv:
    case FuncKind::Collective:
    case FuncKind::ICollective:
    case FuncKind::AllToAll:
    case FuncKind::IAllToAll:
      fs.bytes += e.bytes;
      break;
    case FuncKind::SendRecv:
      fs.bytes += e.bytes + e.recv_bytes;
      break;
    default:
      break;
  }
  return true;
}

void Handler::marker(const Event& e, double enter, double leave) {
  r.intervals.marker(e, enter, leave, *this);
  // The rank's open executions changed: from the begin's return, the end's call.
  if (r.intervals.in_root()) r.instants.set_context(e.marker_begin ? leave : enter, r.context());
}

void Handler::root_started(double t) {
  r.acc[0].first_enter = t;
  r.instants.set_context(t, r.context());
}

uint32_t Handler::interval_begun(uint32_t, const Event& e, double t, uint32_t parent) {
  // A loop enters the same child again: remember the last one per parent.
  uint32_t node;
  if (r.nodes[parent].last_callsite == e.callsite && r.nodes[parent].last_id == e.interval_id) {
    node = r.nodes[parent].last_child;
  } else {
    const uint32_t site = eng.reg_.site(r.index, e.callsite);
    const NodeKey key{parent, e.interval_id, site};
    if (const uint32_t* found = r.node_index.find(key)) {
      node = *found;
    } else {
      node = static_cast<uint32_t>(r.nodes.size());
      r.nodes.push_back(LocalNode{key.parent, key.id, key.site});
      r.acc.emplace_back();
      r.node_index[key] = node;
    }
    LocalNode& p = r.nodes[parent];
    p.last_callsite = e.callsite;
    p.last_id = e.interval_id;
    p.last_child = node;
  }
  if (t < r.acc[node].first_enter) r.acc[node].first_enter = t;
  return node;
}

void Handler::interval_ended(uint32_t, const OpenInterval& o, double t) {
  eng.close_exec(r, o.payload, o.start, t);
}

void Handler::root_ended(double t) {
  eng.close_exec(r, 0, r.intervals.root_start(), t);
  r.instants.set_context(t, kNoContext);
}

void Handler::send(const ChannelKey& k, double enter, double, const Event&) {
  const int di = eng.index_of_world(k.dst);
  if (di < 0) {
    ++r.unmatched_sends;
    r.warn.add("messages to ranks not in the trace", [&] {
      return "rank " + std::to_string(r.rank) + " -> rank " + std::to_string(k.dst);
    });
    return;
  }
  // The destination's worker queues it; when that is us, at once.
  const unsigned dw = eng.worker_of_[static_cast<size_t>(di)];
  if (dw == w) eng.ingest_send(SendRec{k, enter}, false);
  else eng.send_box(parity, w, dw).push_back(SendRec{k, enter});
}

void Handler::cancel_send(const ChannelKey& k, double send_enter) {
  const int di = eng.index_of_world(k.dst);
  if (di < 0) return;
  const unsigned dw = eng.worker_of_[static_cast<size_t>(di)];
  if (dw == w) eng.ingest_send(SendRec{k, send_enter}, true);
  else eng.cancel_box(parity, w, dw).push_back(SendRec{k, send_enter});
}

void Handler::recv(const ChannelKey& k, double issue, uint64_t hold, double enter, double leave,
                   const Event&) {
  if (eng.index_of_world(k.src) < 0) {
    ++r.unmatched_recvs;
    r.warn.add("messages from ranks not in the trace", [&] {
      return "rank " + std::to_string(r.rank) + " <- rank " + std::to_string(k.src);
    });
    r.holds.release(hold);
    return;
  }
  Channel& ch = r.channel(k);
  if (ch.recvs.empty() && !ch.sends.empty()) {
    const double s = ch.sends.pop();
    eng.account_recv(r, issue, enter, leave, s, kDecodeLane);
    r.holds.release(hold);
  } else {
    // Its wait is known once its send is: hold the rank's watermark at its issue
    // (a blocking call issues now, so holds stay in time order).
    if (hold == HoldQueue::kNone) hold = r.holds.add(issue);
    ch.recvs.push(PendingRecv{issue, enter, leave, hold});
  }
}

void Handler::collective(const CommInfo& c, bool a2a, double enter, double leave, const Event& e) {
  const uint64_t seq = (*c.seq)++;
  const uint32_t node = r.node(e.stream);
  if (c.present <= 1) {
    // Alone in it (MPI_COMM_SELF, or the only member in the trace): no one to
    // wait for, so the whole call is collective time.
    r.instants.add(enter, leave, a2a ? kAllToAllCallSpan : kCollCallSpan, kDecodeLane);
    ++r.local_instances;
    return;
  }
  // Its wait is known once every member has called: hold the watermark.
  const CollRec rec{c.gid,  seq,   c.def, c.present, static_cast<int32_t>(r.index), node, a2a,
                    enter,  leave, r.holds.add(enter)};
  const unsigned o = eng.owner_of(c.gid, seq);
  if (o == w) eng.add_member(w, rec, parity);
  else eng.coll_box(parity, w, o).push_back(rec);
}

void Engine::close_exec(Rank& r, uint32_t node, double start, double t) {
  NodeAcc& a = r.acc[node];
  // An execution outside the window still takes its place in the k-th
  // matching across ranks, with nothing in it.
  const bool inside = !windowed_ || (t >= lo_ && start <= hi_);
  if (windowed_) {
    start = std::max(start, lo_);
    t = std::min(t, hi_);
  }
  const double T = inside ? std::max(0.0, t - start) : 0.0;
  if (inside) ++a.inside;
  if (!a.touched) {
    a.touched = true;
    r.touched.push_back(node);
  }
  a.T.push_back(T);
  a.t_sum += T;
}

// A matched receive: it waited from its issue until its send started (a late
// sender; "Recv issued before Send"), and the call that completed it is its
// transfer where it is not waiting.
void Engine::account_recv(Rank& r, double issue, double enter, double leave, double send_enter,
                          SpanLane lane) {
  r.instants.add(issue, std::min(send_enter, leave), kWaitSpan, lane);
  r.instants.add(enter, leave, kRecvCallSpan, lane);
  ++r.matched;
}

void Engine::decode(Rank& r, unsigned w, int parity, int phase) {
  Handler h{*this, r, w, parity};
  const uint64_t cap = std::max<uint64_t>(opt_.window_events, 1024) * 4;
  uint64_t n = 0;
  while (r.has_ev && r.ev_enter < win_end_ && n < cap) {
    r.interp.process(r.ev, r.ev_enter, h);
    ++n;
    r.has_ev = r.cursor.next(r.ev);
    if (r.has_ev) r.ev_enter = r.interp.global(r.ev.enter);
  }
  r.events += n;
  r.phase_events = n;
  if (!r.has_ev && r.exhausted_phase < 0) {
    r.intervals.finish(h);
    r.exhausted_phase = phase;
  }
}

// ---------------------------------------------------------------------------
// Mailboxes

void Engine::ingest_send(const SendRec& s, bool cancel) {
  Rank& d = *ranks_[static_cast<size_t>(index_of_world(s.key.dst))];
  if (cancel) {
    Channel* ch = d.find_channel(s.key);
    if (!ch || !ch->sends.remove_last_if([&](double t) { return t == s.enter; }))
      d.warn.add("cancelled send already matched to a receive", [&] {
        return "rank " + std::to_string(s.key.src) + " -> rank " + std::to_string(s.key.dst) +
               " tag " + std::to_string(s.key.tag);
      });
    return;
  }
  Channel& ch = d.channel(s.key);
  if (!ch.recvs.empty()) {
    const PendingRecv pr = ch.recvs.pop();
    account_recv(d, pr.issue, pr.enter, pr.leave, s.enter, kMatchLane);
    d.holds.release(pr.hold);
  } else {
    ch.sends.push(s.enter);
  }
}

void Engine::apply(const ResultRec& rr) {
  Rank& r = *ranks_[static_cast<size_t>(rr.rank)];
  r.instants.add(rr.enter, rr.wait_end, kWaitSpan, kCollectiveLane);
  r.instants.add(rr.enter, rr.leave, rr.a2a ? kAllToAllCallSpan : kCollCallSpan, kCollectiveLane);
  // Its exit spread: from its leave to the last member's, inside the window.
  double spread = rr.time_variation;
  if (windowed_) spread = std::max(0.0, std::min(rr.leave + spread, hi_) - std::max(rr.leave, lo_));
  r.acc[rr.node].time_variation += spread;
  r.holds.release(rr.hold);
}

uint32_t Engine::gone_members(Owner& own, const CommDef* def) {
  auto& cached = own.gone_members[reinterpret_cast<uint64_t>(def)];
  if (cached.first == gone_count_ + 1) return cached.second;
  uint32_t n = 0;
  auto count = [&](const std::vector<int32_t>& g) {
    for (int32_t m : g) {
      const int i = index_of_world(m);
      if (i >= 0 && gone_[static_cast<size_t>(i)]) ++n;
    }
  };
  count(def->ranks);
  if (def->inter) count(def->remote_ranks);
  cached = {gone_count_ + 1, n};
  return n;
}

bool Engine::all_missing_gone(Owner& own, const Instance& in) {
  if (gone_count_ == 0 || !in.def) return false;
  if (in.got + gone_members(own, in.def) < in.expected) return false;
  std::vector<int32_t> have;
  for (uint32_t m = in.head; m != UINT32_MAX; m = own.arena[m].next) have.push_back(own.arena[m].rank);
  std::sort(have.begin(), have.end());
  auto check = [&](const std::vector<int32_t>& g) {
    for (int32_t m : g) {
      const int i = index_of_world(m);
      if (i < 0 || std::binary_search(have.begin(), have.end(), i)) continue;
      if (!gone_[static_cast<size_t>(i)]) return false;
    }
    return true;
  };
  return check(in.def->ranks) && (!in.def->inter || check(in.def->remote_ranks));
}

// A member's figures go to its rank's worker (directly when that is us).
void Engine::post(unsigned w, const ResultRec& rr, int parity, bool direct) {
  const unsigned mw = worker_of_[static_cast<size_t>(rr.rank)];
  if (direct || mw == w) apply(rr);
  else result_box(parity, w, mw).push_back(rr);
}

void Engine::complete(unsigned w, uint64_t gid, uint64_t seq, Instance& in, int parity,
                      bool direct) {
  Owner& own = owners_[w];
  for (uint32_t m = in.head; m != UINT32_MAX;) {
    const Member mem = own.arena[m];
    // Late entry: waiting for the last member to arrive; the rest is the
    // collective's own work. Time variation: how much earlier it left than
    // the last member.
    post(w,
         ResultRec{mem.rank, mem.node, mem.a2a, mem.enter, clamp_to(in.max_enter, mem.enter, mem.leave),
                   mem.leave, std::max(0.0, in.max_leave - mem.leave), mem.hold},
         parity, direct);
    own.free_list.push_back(m);
    m = mem.next;
  }
  in.head = UINT32_MAX;
  in.done = true;
  ++own.instances;
  if (in.got < in.expected) {
    ++own.incomplete;
    own.warn.add("collectives some members never called (rank cut short or missing)", [&] {
      return "communicator " + std::to_string(gid) + ", collective #" + std::to_string(seq + 1) +
             ": " + std::to_string(in.got) + " of " + std::to_string(in.expected) + " members";
    });
  }
}

void Engine::add_member(unsigned w, const CollRec& c, int parity) {
  Owner& own = owners_[w];
  CommQueue& q = own.queue(c.gid);
  Instance* in = q.get(c.seq / W_);
  if (!in || in->done) {
    // More calls than members (inconsistent communicator definitions):
    // nobody to compare with, so the call is all collective time.
    own.warn.add("collective calls beyond their instance's members", [&] {
      return "communicator " + std::to_string(c.gid) + ", collective #" + std::to_string(c.seq + 1);
    });
    post(w, ResultRec{c.rank, c.node, c.a2a, c.enter, c.enter, c.leave, 0, c.hold}, parity, false);
    return;
  }
  if (in->got == 0) {
    in->expected = c.expected;
    in->def = c.def;
  }
  ++in->got;
  in->max_enter = std::max(in->max_enter, c.enter);
  in->max_leave = std::max(in->max_leave, c.leave);
  in->head = own.alloc(Member{c.rank, c.node, c.a2a, c.enter, c.leave, c.hold, in->head});
  if (in->got >= in->expected || (gone_count_ > 0 && all_missing_gone(own, *in))) {
    complete(w, c.gid, c.seq, *in, parity, false);
    q.pop_done();
  }
}

void Engine::sweep(unsigned w, int parity, bool direct) {
  Owner& own = owners_[w];
  for (CommQueue& q : own.queues) {
    for (size_t i = 0; i < q.count; ++i) {
      Instance& in = q.at(i);
      if (in.done) continue;
      if (in.got == 0) {
        if (direct) in.done = true;
        continue;
      }
      if (direct || all_missing_gone(own, in)) {
        // Recover the sequence number for the warning: seq / W == base + i.
        uint64_t seq = (q.base + i) * W_;
        while (owner_of(q.gid, seq) != w) ++seq;
        complete(w, q.gid, seq, in, parity, direct);
      }
    }
    q.pop_done();
  }
}

bool Engine::boxes_empty() const {
  for (const auto& b : send_boxes_)
    if (!b.v.empty()) return false;
  for (const auto& b : cancel_boxes_)
    if (!b.v.empty()) return false;
  for (const auto& b : coll_boxes_)
    if (!b.v.empty()) return false;
  for (const auto& b : result_boxes_)
    if (!b.v.empty()) return false;
  return true;
}

// ---------------------------------------------------------------------------
// Phases

void Engine::phase_body(unsigned w) {
  const int p = phase_ & 1, q = p ^ 1;
  for (unsigned o = 0; o < W_; ++o) {
    auto& box = result_box(q, o, w);
    for (const ResultRec& rr : box) apply(rr);
    box.clear();
  }
  for (unsigned s = 0; s < W_; ++s) {
    auto& box = send_box(q, s, w);
    for (const SendRec& sr : box) ingest_send(sr, false);
    box.clear();
    auto& cancels = cancel_box(q, s, w);
    for (const SendRec& sr : cancels) ingest_send(sr, true);
    cancels.clear();
  }
  for (unsigned s = 0; s < W_; ++s) {
    auto& box = coll_box(q, s, w);
    for (const CollRec& c : box) add_member(w, c, p);
    box.clear();
  }
  if (sweep_) sweep(w, p, false);
  for (size_t i : worker_ranks_[w]) {
    Rank& r = *ranks_[i];
    decode(r, w, p, phase_);
    r.settle_instants(std::min(frontier_, r.holds.oldest()));
  }
}

// What worker w wrote this phase becomes readable after the barrier.
void Engine::publish(unsigned w) {
  const int p = phase_ & 1;
  for (unsigned d = 0; d < W_; ++d) {
    send_box(p, w, d).publish();
    cancel_box(p, w, d).publish();
    coll_box(p, w, d).publish();
    result_box(p, w, d).publish();
  }
}

void Engine::on_phase_end() {
  ++phase_;
  ++windows_;
  uint64_t events = 0, phase_events = 0;
  bool all_exhausted = true;
  double min_next = kInf;
  bool changed = false;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    const Rank& r = *ranks_[i];
    events += r.events;
    phase_events += r.phase_events;
    if (r.exhausted_phase < 0) all_exhausted = false;
    if (r.has_ev) min_next = std::min(min_next, r.ev_enter);
    if (!gone_[i] && r.exhausted_phase >= 0 && r.exhausted_phase <= phase_ - 2) {
      gone_[i] = 1;
      ++gone_count_;
      changed = true;
    }
  }
  sweep_ = changed;
  merge_nodes();
  fold(false);
  if (failed_.load()) {
    done_ = true;
    return;
  }
  if (all_exhausted && gone_count_ == ranks_.size() && !changed && boxes_empty()) {
    done_ = true;
  }
  // Aim for about window_events events per phase.
  const double target = static_cast<double>(std::max<uint64_t>(opt_.window_events, 1));
  if (phase_events == 0) delta_ *= 4;
  else delta_ *= clamp_to(target / static_cast<double>(phase_events), 0.5, 2.0);
  delta_ = clamp_to(delta_, 1e3, 1e15);
  if (min_next < kInf) win_end_ = std::max(win_end_, min_next + delta_);
  frontier_ = min_next;
  if (opt_.progress) {
    double f;
    if (t_last_est_ > t_first_) f = (win_end_ - t_first_) / (t_last_est_ - t_first_);
    else f = events_est_ ? static_cast<double>(events) / static_cast<double>(events_est_) : 0;
    if (done_) f = 1.0;
    else f = clamp_to(f, 0.0, 0.99);
    opt_.progress(f, events);
  }
}

// Local nodes created since the last phase join the tree across ranks.
void Engine::merge_nodes() {
  for (auto& rp : ranks_) {
    Rank& r = *rp;
    for (size_t li = r.gmap.size(); li < r.nodes.size(); ++li) {
      uint32_t gi = 0;
      if (li > 0) {
        const NodeKey k{r.gmap[r.nodes[li].parent], r.nodes[li].id, r.nodes[li].site};
        if (const uint32_t* f = gindex_.find(k)) {
          gi = *f;
        } else {
          gi = static_cast<uint32_t>(g_.size());
          g_.push_back(GNode{k.parent, k.id, k.site, {}, {}, 0, 0, kInf, false});
          g_[k.parent].children.push_back(gi);
          gindex_[k] = gi;
        }
      }
      r.gmap.push_back(gi);
      g_[gi].members.emplace_back(static_cast<uint32_t>(r.index), static_cast<uint32_t>(li));
    }
  }
}

// Idle needs Exec_k = max over ranks of the k-th execution's T. Execution k of
// a node is folded (Exec_k added to the node's sum, the T values dropped) once
// every rank has either executed it or ended; a rank that has not executed the
// node at all and has not ended holds the fold back (it may still come). Each
// rank keeps the sum of Exec_k over its own executions (snap), taken when the
// fold passes its count: the count is final then, because while a rank runs
// the fold never passes it. So memory holds only executions not yet matched.
void Engine::fold(bool final) {
  // Only nodes with new executions, unless a rank ended (that may free any).
  uint32_t alive = 0;
  for (const auto& r : ranks_)
    if (!final && r->exhausted_phase < 0) ++alive;
  const bool all = final || alive != alive_at_fold_;
  alive_at_fold_ = alive;
  for (auto& rp : ranks_) {
    for (uint32_t li : rp->touched) {
      g_[rp->gmap[li]].dirty = true;
      rp->acc[li].touched = false;
    }
    rp->touched.clear();
  }
  for (GNode& gn : g_) {
    if (!all && !gn.dirty) continue;
    gn.dirty = false;
    // The fold may pass execution k once every rank still running has done it;
    // a running rank that never executed the node holds it back.
    uint64_t limit = UINT64_MAX, nmax = 0;
    uint32_t alive_members = 0;
    for (auto [ri, li] : gn.members) {
      const uint64_t n = ranks_[ri]->acc[li].executions();
      nmax = std::max(nmax, n);
      if (!final && ranks_[ri]->exhausted_phase < 0) {
        ++alive_members;
        limit = std::min(limit, n);
      }
    }
    if (alive_members < alive) limit = gn.folded;
    limit = std::min(limit, nmax);
    if (limit <= gn.folded) continue;
    for (uint64_t k = gn.folded; k < limit; ++k) {
      double e = 0;
      for (auto [ri, li] : gn.members) {
        const NodeAcc& a = ranks_[ri]->acc[li];
        if (a.executions() > k) e = std::max(e, a.T[k - a.t_base]);
      }
      gn.exec += e;
      for (auto [ri, li] : gn.members) {
        NodeAcc& a = ranks_[ri]->acc[li];
        if (a.executions() == k + 1) {
          a.snap_n = k + 1;
          a.snap_p = gn.exec;
        }
      }
    }
    gn.folded = limit;
    for (auto [ri, li] : gn.members) {
      NodeAcc& a = ranks_[ri]->acc[li];
      const uint64_t drop = std::min(limit, a.executions()) - a.t_base;
      if (drop > 0 && (drop * 2 >= a.T.size() || drop >= 4096)) {
        a.T.erase(a.T.begin(), a.T.begin() + static_cast<std::ptrdiff_t>(drop));
        a.t_base += drop;
      }
    }
  }
}

void Engine::setup() {
  std::vector<const RankTrace*> traces;
  for (const auto& t : dir_.ranks) traces.push_back(t.get());
  world_to_index_ = std::make_unique<WorldIndex>(traces);
  reg_.build(traces);
  t_first_ = kInf;
  t_last_est_ = -kInf;
  bool all_final = true;
  uint64_t bytes = 0;
  for (size_t i = 0; i < traces.size(); ++i) {
    auto r = std::make_unique<Rank>(*traces[i], reg_, i, *world_to_index_);
    r->nodes.push_back(LocalNode{kNoParent, kRootId, 0});
    r->acc.emplace_back();
    r->slot_of.assign(reg_.funcs[i].size() + 1, 0);
    r->has_ev = r->cursor.next(r->ev);
    if (r->has_ev) {
      r->ev_enter = r->interp.global(r->ev.enter);
      t_first_ = std::min(t_first_, r->ev_enter);
    }
    bool final_sync = false;
    for (const auto& k : traces[i]->clock_syncs())
      if (k.phase == "final") {
        final_sync = true;
        t_last_est_ = std::max(t_last_est_, traces[i]->to_global_ns(k.local_ticks));
      }
    all_final = all_final && final_sync;
    bytes += traces[i]->event_bytes();
    ranks_.push_back(std::move(r));
  }
  if (!all_final) t_last_est_ = -kInf;
  if (opt_.windowed() && t_first_ < kInf) {
    windowed_ = true;
    lo_ = t_first_ + opt_.window_from_s * 1e9;
    hi_ = t_first_ + opt_.window_to_s * 1e9;
    for (auto& r : ranks_) r->instants.set_window(lo_, hi_);
  }
  events_est_ = bytes / 20;  // about 20 bytes per record (the shim aims at 16 to 24)
  gone_.assign(ranks_.size(), 0);

  unsigned hw = opt_.threads ? opt_.threads : std::max(1u, std::thread::hardware_concurrency());
  W_ = static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(hw, ranks_.size())));
  // Contiguous blocks of ranks of about equal event bytes per worker:
  // neighbours talk most in typical codes, and a message between ranks of
  // one worker needs no mailbox.
  worker_ranks_.assign(W_, {});
  uint64_t total = 0;
  for (const RankTrace* t : traces) total += t->event_bytes() + 1;
  uint64_t done = 0;
  unsigned prev = 0;
  const size_t R = traces.size();
  for (size_t i = 0; i < R; ++i) {
    const uint64_t mid = done + (traces[i]->event_bytes() + 1) / 2;
    unsigned w = std::min<unsigned>(
        W_ - 1, static_cast<unsigned>(static_cast<double>(mid) / static_cast<double>(total) * W_));
    w = std::max(w, prev);                                   // contiguous
    w = std::min(w, i == 0 ? 0u : prev + 1);                 // no worker skipped
    w = std::max<unsigned>(w, static_cast<unsigned>(W_ - std::min<size_t>(W_, R - i)));  // none left empty
    prev = w;
    worker_ranks_[w].push_back(i);
    ranks_[i]->worker = w;
    worker_of_.push_back(w);
    done += traces[i]->event_bytes() + 1;
  }
  for (auto& v : worker_ranks_) std::sort(v.begin(), v.end());
  send_boxes_ = std::vector<Box<SendRec>>(2 * W_ * W_);
  cancel_boxes_ = std::vector<Box<SendRec>>(2 * W_ * W_);
  coll_boxes_ = std::vector<Box<CollRec>>(2 * W_ * W_);
  result_boxes_ = std::vector<Box<ResultRec>>(2 * W_ * W_);
  owners_.resize(W_);
  if (t_first_ < kInf) win_end_ = t_first_ + delta_;
  g_.push_back(GNode{kNoParent, kRootId, 0, {}, {}, 0, 0, kInf, false});
  merge_nodes();
}

Analysis Engine::run() {
  Analysis a;
  a.world_size = dir_.world_size;
  std::map<std::string, Warning> warns;
  if (!dir_.errors.empty() || dir_.ranks.empty()) {
    a.errors = dir_.errors;
    if (a.errors.empty()) a.errors.push_back("no usable rank file");
    for (const auto& w : dir_.warnings) a.errors.push_back(w);
    return a;
  }
  setup();

  PhaseBarrier<PhaseEnd> bar(W_, PhaseEnd{this});
  auto loop = [&](unsigned w) {
    while (!done_) {
      if (!failed_.load()) {
        try {
          phase_body(w);
        } catch (const std::exception& ex) {
          if (!failed_.exchange(true)) failure_ = ex.what();
        }
      }
      publish(w);
      bar.arrive_and_wait();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned w = 1; w < W_; ++w) threads.emplace_back(loop, w);
  loop(0);
  for (auto& t : threads) t.join();
  if (failed_) {
    a.errors.push_back("analysis failed: " + failure_);
    return a;
  }
  // Anything still waiting can no longer complete: settle it now.
  for (unsigned w = 0; w < W_; ++w) sweep(w, 0, true);
  for (auto& r : ranks_) r->settle_instants(kInf);
  finish(a);
  return a;
}

// ---------------------------------------------------------------------------
// The tree and its figures

void add_into(NodeAcc& to, const NodeAcc& from) {
  to.in.add(from.in);
  to.time_variation += from.time_variation;
  to.calls += from.calls;
  if (to.funcs.size() < from.funcs.size()) to.funcs.resize(from.funcs.size());
  for (size_t i = 0; i < from.funcs.size(); ++i) {
    to.funcs[i].calls += from.funcs[i].calls;
    to.funcs[i].time += from.funcs[i].time;
    to.funcs[i].bytes += from.funcs[i].bytes;
  }
}

void Engine::read_warnings(Analysis& a, std::map<std::string, Warning>& warns) {
  auto add = [&](const std::string& cat, uint64_t n, const std::string& example) {
    Warning& w = warns[cat];
    w.category = cat;
    w.count += n;
    if (w.examples.size() < 10 && !example.empty()) w.examples.push_back(example);
  };
  for (const auto& w : dir_.warnings) {
    add("rank files skipped or missing", 1, w);
    a.damaged = true;
  }
  for (const auto& r : ranks_) {
    const RankTrace& rt = *r->rt;
    const trace::ReadStats& s = rt.stats();
    const uint64_t damage = s.crc_mismatches + s.bad_chunk_headers + s.truncated_chunks +
                            s.bad_records + s.bad_definitions;
    if (damage) a.damaged = true;
    for (const auto& w : rt.warnings()) add("trace file problems (data skipped or salvaged)", 1, w);
    if (s.unsealed_chunks) a.cut_short = true;
    const std::string& end = rt.end_reason();
    if (end != "finalize") {
      a.cut_short = true;
      add("traces cut short (analyzed as far as they go)", 1,
          rt.path() + ": recording ended " +
              (end.empty() ? std::string("without a word (killed, e.g. SIGKILL)") : "by " + end));
    }
    if (s.backwards_timestamps)
      add("timestamps going backwards", s.backwards_timestamps,
          rt.path() + ": " + std::to_string(s.backwards_timestamps) + " records");
  }
}

// The run's figures, once the pass is over.
void Engine::finish(Analysis& a) {
  collect_warnings_and_stats(a);
  a.processors = static_cast<int>(ranks_.size());
  for (const auto& r : ranks_) a.ranks.push_back(r->rank);
  for (const auto& r : ranks_)
    if (auto it = r->rt->meta().find("exe"); it != r->rt->meta().end() && !it->second.empty()) {
      a.executable = it->second;
      break;
    }
  roll_up();
  order_tree();
  const SiteInfo root_site = root_call_site(a.executable);

  // Pre-order walk.
  std::vector<std::pair<uint32_t, int>> pending{{0, -1}};
  while (!pending.empty()) {
    auto [gi, parent] = pending.back();
    pending.pop_back();
    const GNode& gn = g_[gi];
    IntervalNode node = node_figures(gn, gi == 0 ? root_site : reg_.sites[gn.site]);
    node.parent = parent;
    node.level = parent < 0 ? 0 : a.intervals[static_cast<size_t>(parent)].level + 1;
    const int index = static_cast<int>(a.intervals.size());
    if (parent >= 0) a.intervals[static_cast<size_t>(parent)].children.push_back(index);
    a.intervals.push_back(std::move(node));
    for (size_t c = gn.children.size(); c-- > 0;) pending.emplace_back(gn.children[c], index);
  }
}


// Messages never matched become warnings; per-rank and per-owner counts
// become the run's statistics.
void Engine::collect_warnings_and_stats(Analysis& a) {
  std::map<std::string, Warning> warns;
  for (auto& rp : ranks_) {
    Rank& r = *rp;
    r.channels.for_each([&](const ChannelKey& k, uint32_t& idx) {
      const Channel& ch = r.channel_store[idx - 1];
      if (!ch.sends.empty()) {
        r.unmatched_sends += ch.sends.size();
        r.warn.add(
            "sends never received",
            [&] {
              return std::to_string(ch.sends.size()) + " on rank " + std::to_string(k.src) +
                     " -> rank " + std::to_string(k.dst) + ", tag " + std::to_string(k.tag) +
                     ", communicator " + std::to_string(k.gid);
            },
            ch.sends.size());
      }
      if (!ch.recvs.empty()) {
        r.unmatched_recvs += ch.recvs.size();
        r.warn.add(
            "receives without a matching send",
            [&] {
              return std::to_string(ch.recvs.size()) + " on rank " + std::to_string(k.dst) +
                     " <- rank " + std::to_string(k.src) + ", tag " + std::to_string(k.tag) +
                     ", communicator " + std::to_string(k.gid);
            },
            ch.recvs.size());
      }
    });
    r.channels.clear();
    r.channel_store.clear();
    for (auto& c : r.channel_cache) c.index = 0;
    a.stats.events += r.events;
    a.stats.mpi_calls += r.calls;
    a.stats.messages_matched += r.matched;
    a.stats.unmatched_sends += r.unmatched_sends;
    a.stats.unmatched_receives += r.unmatched_recvs;
    a.stats.unbalanced_markers += r.intervals.unbalanced();
    a.stats.collective_instances += r.local_instances;
    r.warn.merge_into(warns);
  }
  for (auto& own : owners_) {
    a.stats.collective_instances += own.instances;
    a.stats.incomplete_collectives += own.incomplete;
    own.warn.merge_into(warns);
  }
  if (auto it = warns.find("completion of an unknown request"); it != warns.end())
    a.stats.unknown_requests += it->second.count;
  if (auto it = warns.find("start of an unknown request"); it != warns.end())
    a.stats.unknown_requests += it->second.count;
  a.stats.windows = windows_;
  if (opt_.windowed()) a.window = std::make_pair(opt_.window_from_s, opt_.window_to_s);
  read_warnings(a, warns);
  for (auto& [k, w] : warns) a.warnings.push_back(std::move(w));

}

// Nested nodes roll up into their parents (children come after parents).
// Instants of executions open on several threads at once count once in each
// node open then and in each of their ancestors.
void Engine::roll_up() {
  for (auto& rp : ranks_) {
    Rank& r = *rp;
    for (size_t i = r.nodes.size(); i-- > 1;) add_into(r.acc[r.nodes[i].parent], r.acc[i]);
    for (const Combo& combo : r.combos) {
      std::vector<uint32_t> open;
      for (uint32_t n : combo.nodes)
        for (uint32_t m = n;; m = r.nodes[m].parent) {
          open.push_back(m);
          if (m == 0) break;
        }
      std::sort(open.begin(), open.end());
      open.erase(std::unique(open.begin(), open.end()), open.end());
      for (uint32_t n : open) r.acc[n].in.add(combo.in);
    }
  }

}

// The tree across ranks (built during the pass): settle the last executions
// and order children by their first entry.
void Engine::order_tree() {
  merge_nodes();
  fold(true);
  std::vector<GNode>& g = g_;
  for (GNode& gn : g)
    for (auto [ri, li] : gn.members)
      if (ranks_[ri]->acc[li].executions() > 0)
        gn.first = std::min(gn.first, ranks_[ri]->acc[li].first_enter);
  for (auto& n : g)
    std::sort(n.children.begin(), n.children.end(), [&](uint32_t x, uint32_t y) {
      if (g[x].first != g[y].first) return g[x].first < g[y].first;
      if (g[x].site != g[y].site) return g[x].site < g[y].site;
      return g[x].id < g[y].id;
    });

}

// The root's source: MPI_Init's call site when the trace names it, else the program.
SiteInfo Engine::root_call_site(const std::string& executable) const {
  SiteInfo root_site;
  bool have_root_site = false;
  for (const auto& rp : ranks_) {
    const auto& meta = rp->rt->meta();
    auto it = meta.find("init_callsite");
    if (it == meta.end()) continue;
    char* end = nullptr;
    const unsigned long long id = std::strtoull(it->second.c_str(), &end, 0);
    if (!end || *end != '\0' || id > UINT32_MAX) continue;
    if (rp->rt->callsite(static_cast<uint32_t>(id))) {
      root_site = reg_.sites[reg_.site(rp->index, static_cast<uint32_t>(id))];
      have_root_site = true;
      break;
    }
  }
  if (!have_root_site) {
    root_site.file = executable.empty()
                         ? std::string("(program)")
                         : std::filesystem::path(executable).filename().string();
    root_site.line = 0;
  }

  return root_site;
}

// One node's figures across ranks (spec/metrics.md), in seconds.
IntervalNode Engine::node_figures(const GNode& gn, const SiteInfo& site) const {
  IntervalNode node;
  if (gn.parent != kNoParent) node.id = static_cast<uint16_t>(gn.id);
  node.source_file = site.file;
  node.line = site.line;
  node.address = site.address;
  node.unresolved = site.label;
  node.first_enter = gn.first < kInf ? gn.first * 1e-9 : 0;

  uint64_t nmax = 0;
  for (auto [ri, li] : gn.members) nmax = std::max(nmax, ranks_[ri]->acc[li].inside);
  node.exe_count = nmax;

  std::vector<std::pair<size_t, RankFigures>> per;
  std::map<uint32_t, FunctionFigures> funcs;
  for (auto [ri, li] : gn.members) {
    const Rank& r = *ranks_[ri];
    const NodeAcc& acc = r.acc[li];
    if (acc.inside == 0) continue;
    RankFigures f;
    f.rank = r.rank;
    f.executions = acc.inside;
    const double t = acc.t_sum;
    f.time = t;
    // Idle_r = sum over r's executions of (Exec_k - T_rk).
    f.idle = acc.snap_n == acc.executions() ? std::max(0.0, acc.snap_p - t) : 0.0;
    f.mpi = acc.in.mpi();
    f.cpu = t - f.mpi;
    f.lost = f.mpi + f.idle;
    f.sendrecv = acc.in.sendrecv();
    f.collective = acc.in.collective();
    f.alltoall = acc.in.alltoall();
    f.comm = f.sendrecv + f.collective + f.alltoall;
    f.potential_sync = acc.in.potential_sync();
    f.time_variation = acc.time_variation;
    f.time_of_start = acc.in.time_of_start();
    f.calls = acc.calls;
    per.emplace_back(ri, f);
    for (size_t s = 0; s < acc.funcs.size(); ++s) {
      const FuncStat& fs = acc.funcs[s];
      if (fs.calls == 0) continue;
      FunctionFigures& ff = funcs[r.slot_name[s]];
      ff.calls += fs.calls;
      ff.time += fs.time;
      ff.bytes += fs.bytes;
    }
  }
  std::sort(per.begin(), per.end(),
            [](const auto& x, const auto& y) { return x.second.rank < y.second.rank; });
  MainFigures& m = node.main;
  m.processors = static_cast<int>(per.size());
  m.execution_time = gn.exec;
  m.total_time = m.execution_time * m.processors;
  for (auto& [ri, f] : per) {
    m.lost_time += f.lost;
    m.mpi_time += f.mpi;
    m.idle_time += f.idle;
    m.comm_time += f.comm;
    m.sendrecv_time += f.sendrecv;
    m.collective_time += f.collective;
    m.alltoall_time += f.alltoall;
    m.potential_sync += f.potential_sync;
    m.time_variation += f.time_variation;
    m.time_of_start += f.time_of_start;
  }
  m.productive_time = m.total_time - m.lost_time;
  m.efficiency = m.total_time > 0 ? m.productive_time / m.total_time : 0;

  // Seconds from here on.
  const double s = 1e-9;
  for (double* v : {&m.execution_time, &m.total_time, &m.productive_time, &m.lost_time,
                    &m.mpi_time, &m.idle_time, &m.comm_time, &m.sendrecv_time,
                    &m.collective_time, &m.alltoall_time, &m.potential_sync,
                    &m.time_variation, &m.time_of_start})
    *v *= s;
  for (auto& [ri, f] : per) {
    for (double* v : {&f.time, &f.cpu, &f.mpi, &f.idle, &f.lost, &f.comm, &f.sendrecv,
                      &f.collective, &f.alltoall, &f.potential_sync, &f.time_variation,
                      &f.time_of_start})
      *v *= s;
    node.per_rank.push_back(f);
  }
  for (int c = 0; c < kComparativeCount; ++c) {
    ComparativeFigures& cf = node.comparative[static_cast<size_t>(c)];
    bool first = true;
    double sum = 0;
    for (const RankFigures& f : node.per_rank) {
      const double v = f.comparative(static_cast<Comparative>(c));
      sum += v;
      if (first || v < cf.min) {
        cf.min = v;
        cf.min_rank = f.rank;
      }
      if (first || v > cf.max) {
        cf.max = v;
        cf.max_rank = f.rank;
      }
      first = false;
    }
    cf.mean = node.per_rank.empty() ? 0 : sum / static_cast<double>(node.per_rank.size());
  }
  for (auto& [name, ff] : funcs) {
    ff.name = reg_.functions[name];
    ff.time *= s;
    node.functions.push_back(ff);
  }
  std::sort(node.functions.begin(), node.functions.end(),
            [](const FunctionFigures& x, const FunctionFigures& y) {
              if (x.time != y.time) return x.time > y.time;
              return x.name < y.name;
            });

  return node;
}

}  // namespace

// ---------------------------------------------------------------------------

double RankFigures::comparative(Comparative c) const {
  switch (c) {
    case Comparative::Lost: return lost;
    case Comparative::Idle: return idle;
    case Comparative::Comm: return comm;
    case Comparative::Mpi: return mpi;
    case Comparative::PotentialSync: return potential_sync;
    case Comparative::TimeVariation: return time_variation;
    case Comparative::TimeOfStart: return time_of_start;
  }
  return 0;
}

std::string IntervalNode::source_label() const {
  if (!source_file.empty()) return source_file;
  if (!unresolved.empty()) return unresolved;
  return hex(address);
}

const char* comparative_label(Comparative c) {
  switch (c) {
    case Comparative::Lost: return "Lost Time";
    case Comparative::Idle: return "Idle Time";
    case Comparative::Comm: return "Comm. Time";
    case Comparative::Mpi: return "MPI Time";
    case Comparative::PotentialSync: return "Potential Sync.";
    case Comparative::TimeVariation: return "Time variation";
    case Comparative::TimeOfStart: return "Time of Start";
  }
  return "";
}

const char* comparative_key(Comparative c) {
  switch (c) {
    case Comparative::Lost: return "lost_time";
    case Comparative::Idle: return "idle_time";
    case Comparative::Comm: return "comm_time";
    case Comparative::Mpi: return "mpi_time";
    case Comparative::PotentialSync: return "potential_sync";
    case Comparative::TimeVariation: return "time_variation";
    case Comparative::TimeOfStart: return "time_of_start";
  }
  return "";
}

Analysis analyze(const trace::TraceDir& dir, const Options& options) {
  try {
    Engine e(dir, options);
    return e.run();
  } catch (const std::exception& ex) {
    Analysis a;
    a.errors.push_back(std::string("analysis failed: ") + ex.what());
    return a;
  }
}

Analysis analyze(const std::string& trace_dir, const Options& options) {
  trace::TraceDir dir = trace::TraceDir::open(trace_dir);
  return analyze(dir, options);
}

}  // namespace prof::analysis
