// What an event means for matching: one rank's records turned into sends,
// receives, collective calls, markers and plain MPI calls. Shared by the
// analysis engine and the Chrome trace writer so both read a trace the same way.
//
// Algorithm and invariants
//   - Every timestamp goes through RankTrace::to_global_ns (offset and drift).
//   - A point-to-point message travels on a channel (global communicator id,
//     source world rank, destination world rank, tag). Comm ranks become world
//     ranks through the communicator definition in force at the call's raw time
//     (for an intercommunicator, the peer is in the remote group).
//   - Receives: a blocking Recv (and the receive half of Sendrecv) carries the
//     actual source and tag. An Irecv carries what was asked (maybe ANY); the
//     actual source/tag arrive in the Completion entry of the Wait/Test that
//     completes it, and that Wait/Test is the receive's call (its enter, leave
//     and duration). Its wait runs from its issue (the Irecv's enter, or the
//     Start's for a persistent receive). Requests are linked to completions by
//     handle value, oldest first: MPI reuses a handle only after the request
//     completed or was freed, except MPICH's builtin handles for operations
//     that completed at once, which it hands out to many requests at a time
//     (those are complete, so which of them a completion names does not
//     matter). Persistent requests (Send_init, Recv_init, collective *_init)
//     stay until MPI_Request_free; each Start/Startall starts one operation (a
//     send's enter is the Start's), and completing one that was not started
//     does nothing. A completion of an unknown request while generalized
//     requests (MPI_Grequest_start) are outstanding is one of them.
//   - A receive in flight holds the handler's watermark (h.hold at its issue,
//     h.release when it is settled), so its wait can still be credited.
//   - Records flagged kContinuation carry more entries of the previous call
//     (same enter/leave): their entries count, their time does not.
//   - Collective calls (blocking, nonblocking starts, and Starts of persistent
//     collectives) are reported with the communicator's definition so the
//     caller can number instances per communicator.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flat_map.h"
#include "instants.h"
#include "prof/definition_lines.h"
#include "prof/function_roles.h"
#include "prof/trace_reader.h"
#include "warning_kinds.h"

namespace prof::analysis::detail {

using format::FuncKind;
using trace::CommDef;
using trace::Event;
using trace::RankTrace;

// Function roles (kRoleInit, ...) come from the facts table (prof/function_roles.h).
using format::kRoleAllToOne;
using format::kRoleBarrier;
using format::kRoleFinalize;
using format::kRoleFree;
using format::kRoleGrequestStart;
using format::kRoleInit;
using format::kRoleNxN;
using format::kRoleOneToAll;
using format::kRolePersistentInit;
using format::kRolePreInit;
using format::kRoleStart;
using format::kRoleStartsOp;

using format::hex;  // handles and addresses as the trace writes them

// The analysis's own bit above the format's roles: the function's calls count
// their bytes in the function profile (SendRecv both halves), set where the
// function table is built: a kind whose records carry bytes (record_schema.h)
// but a probe's, which moved none.
inline constexpr uint16_t kRoleCountsBytes = uint16_t{1} << 15;
static_assert(kRoleCountsBytes > kRoleAllToOne, "a bit no format role uses");
constexpr bool kind_counts_bytes(FuncKind k) {
  return format::known_kind(k) && format::schema_of(k).has(format::Field::Bytes) && k != FuncKind::Probe;
}
static_assert(kind_counts_bytes(FuncKind::SendRecv) && kind_counts_bytes(FuncKind::IAllToAll) &&
              !kind_counts_bytes(FuncKind::Probe) && !kind_counts_bytes(FuncKind::Completion) &&
              !kind_counts_bytes(FuncKind::Marker));

struct FuncInfo {
  FuncKind kind = FuncKind::Other;
  uint16_t role = 0;
  uint32_t name = 0;  // index into Registry::functions
};

struct SiteInfo {
  std::string file;  // empty: unresolved
  int line = 0;
  uint64_t address = 0;
  std::string label;  // unresolved: "object+0xoffset" (or the address) for the report
  // Unresolved because the object's file was rebuilt after the run (its build
  // id differs): that file's path.
  std::string rebuilt_object;
};

// A code address of rank `rank_trace` (a call in flight's return address) as a call
// site: file:line with the load map and debug info, else object+offset.
SiteInfo resolve_code_address(const RankTrace& rank_trace, uint64_t address);

// Names shared by all ranks: function names and call sites. Call-site ids are
// per rank, so sites compare by file:line: what a marker macro passed, else the
// return address resolved offline with the rank's load map and debug info
// (prof_symbols, libdw). An address that does not resolve compares by its
// object and offset in it: with ASLR each process loads the program at another
// address, but the offset from the load bias is the same on every rank. One
// resolution serves every rank with the same (object, offset).
struct Registry {
  std::vector<std::string> functions;  // [0] = "(unknown)"
  std::vector<SiteInfo> sites;         // [0] = unknown site
  // Per rank index: function id -> FuncInfo (one table for the ranks whose
  // files share their definitions: libprof's define 620 ids each), call-site
  // id -> site index.
  std::vector<std::shared_ptr<const std::vector<FuncInfo>>> funcs;
  std::vector<FlatMap<uint32_t, uint32_t>> site_of;
  // Objects whose file has another build id than in the run: their call
  // sites stay object+offset (the analysis warns).
  std::vector<std::string> rebuilt_objects;

  void build(const std::vector<const RankTrace*>& ranks);
  const FuncInfo& func(size_t rank_index, uint16_t id) const {
    static const FuncInfo unknown{};
    const auto& v = *funcs[rank_index];
    return id < v.size() ? v[id] : unknown;
  }
  uint32_t site(size_t rank_index, uint32_t callsite) const {
    const uint32_t* s = site_of[rank_index].find(callsite);
    return s ? *s : 0;
  }
};

struct ChannelKey {
  uint64_t gid = 0;
  int32_t src = 0, dst = 0, tag = 0;
  bool operator==(const ChannelKey& o) const {
    return gid == o.gid && src == o.src && dst == o.dst && tag == o.tag;
  }
};
struct ChannelHash {
  uint64_t operator()(const ChannelKey& k) const {
    return mix64(k.gid * 0x9E3779B97F4A7C15ull ^ (uint64_t(uint32_t(k.src)) << 40) ^
                 (uint64_t(uint32_t(k.dst)) << 20) ^ uint32_t(k.tag));
  }
};

// World rank -> index of its rank file in the trace (-1: not in the trace).
// Dense when the ranks are (a world of 2^31 claimed by a header must not cost
// 8 GiB), a hash map otherwise.
class WorldIndex {
 public:
  explicit WorldIndex(const std::vector<const RankTrace*>& ranks) {
    int32_t max_rank = -1;
    for (const RankTrace* t : ranks) max_rank = std::max(max_rank, t->rank());
    const size_t n = static_cast<size_t>(max_rank) + 1;
    dense_ = n <= std::max<size_t>(4096, 8 * ranks.size());
    if (dense_) dense_index_.assign(n, -1);
    for (size_t i = 0; i < ranks.size(); ++i) {
      const int32_t w = ranks[i]->rank();
      if (w < 0) continue;
      if (dense_) dense_index_[static_cast<size_t>(w)] = static_cast<int>(i);
      else sparse_[w] = static_cast<int>(i) + 1;
      sorted_.push_back(w);
    }
    std::sort(sorted_.begin(), sorted_.end());
    sorted_.erase(std::unique(sorted_.begin(), sorted_.end()), sorted_.end());
  }
  // How many of the world ranks 0..n-1 have their rank file in the trace.
  uint32_t present_below(size_t n) const {
    const auto below = [](int32_t w, size_t bound) { return static_cast<size_t>(w) < bound; };
    return static_cast<uint32_t>(std::lower_bound(sorted_.begin(), sorted_.end(), n, below) - sorted_.begin());
  }
  // How many members of group g have their rank file in the trace (O(1) a
  // group 0..n-1, as MPI_COMM_WORLD's: each rank's copy cost O(n), O(n^2) in all).
  uint32_t present(const trace::RankList& g) const {
    if (g.is_identity()) return present_below(g.size());
    uint32_t n = 0;
    for (int32_t w : g)
      if ((*this)(w) >= 0) ++n;
    return n;
  }
  int operator()(int32_t w) const {
    if (w < 0) return -1;
    if (dense_) return static_cast<size_t>(w) < dense_index_.size() ? dense_index_[static_cast<size_t>(w)] : -1;
    const int* i = sparse_.find(w);
    return i ? *i - 1 : -1;
  }

 private:
  bool dense_ = true;
  std::vector<int> dense_index_;
  FlatMap<int32_t, int> sparse_;
  std::vector<int32_t> sorted_;  // the world ranks in the trace, ascending
};

// A communicator definition with what the analysis needs of it.
struct CommInfo {
  const CommDef* def = nullptr;
  uint64_t gid = 0;
  uint32_t present = 0;     // members whose rank file is in the trace
  // The world ranks a point-to-point peer names (the remote group of an
  // intercommunicator): def's list, at hand for every message's peer.
  uint32_t peer_count = 0;
  const int32_t* peer_world_ranks = nullptr;
  uint64_t* seq = nullptr;  // this rank's collectives on the communicator so far
                            // (one counter per global id, shared by its definitions)
};

// One rank's calls on a communicator so far that all its members make in
// the same order: its collectives (their count numbers the instances) and the
// communicators created over it (kRoleCreatesOverParent), which only the hang
// report reads (docs/interfaces.md, `run_end.in_flight`).
struct CommCallCounts {
  uint64_t collectives = 0;
  uint64_t creations = 0;
};

// Cached communicator lookups of one rank: the definition a handle denotes at
// a raw time (same rule as RankTrace::comm_at: the latest definition not after
// t, the earliest when t precedes them all), with the validity interval of the
// answer so consecutive calls on one communicator cost a comparison.
class CommCache {
 public:
  CommCache(const RankTrace& rank_trace, const WorldIndex& world_to_index);
  [[gnu::always_inline]] const CommInfo* at(uint32_t handle, uint64_t t) {
    // (The last answer in a member of its own: its fields at fixed offsets,
    // where an entry of cache_ is found through an index first.)
    if (last_.handle == handle && t >= last_.lo && t < last_.hi) return last_.info;
    return lookup(handle, t);
  }
  // This rank's collective calls on communicator `gid` so far.
  uint64_t collectives_on(uint64_t gid) const {
    CommCallCounts* const* p = counts_of_.find(gid);
    return p ? (*p)->collectives : 0;
  }
  // The communicators this rank created over `gid` so far.
  uint64_t creations_on(uint64_t gid) const {
    CommCallCounts* const* p = counts_of_.find(gid);
    return p ? (*p)->creations : 0;
  }
  void note_creation(uint64_t gid) { ++counts_for(gid)->creations; }
  // Every communicator's counts so far: f(gid, const CommCallCounts&).
  template <class F>
  void for_each_count(F&& f) const {
    counts_of_.for_each([&](const uint64_t& gid, CommCallCounts* const& counts) { f(gid, *counts); });
  }
  void set_count(uint64_t gid, uint64_t collectives) { counts_for(gid)->collectives = collectives; }
  // After the pass (an MPI job's rank whose figures are taken): the tables
  // go; no lookup follows (the counts are empty after it).
  void release() {
    by_handle_ = {};
    infos_ = {};
    extra_ = {};
    counts_ = {};
    counts_of_ = {};
    for (Entry& e : cache_) e = Entry{};
    last_ = Entry{};
  }
  // The communicator a handle denoted at raw time t (nullptr: unknown).
  const CommInfo* find(uint32_t handle, uint64_t t) { return at(handle, t); }
  // World rank of a point-to-point peer (comm-local rank; remote group for an
  // intercommunicator); -1 when it cannot be mapped, negative specials as is.
  [[gnu::always_inline]] static int32_t peer_world(const CommInfo& c, int32_t peer) {
    if (peer < 0) return peer;
    return static_cast<uint32_t>(peer) < c.peer_count ? c.peer_world_ranks[peer] : -1;
  }

 private:
  struct Entry {
    uint32_t handle = 0;
    // Valid for lo <= t < hi; empty (no t is in [max, 0)) until filled: no
    // flag to test on every call.
    uint64_t lo = UINT64_MAX, hi = 0;
    const CommInfo* info = nullptr;  // nullptr: the handle is unknown
  };
  const CommInfo* lookup(uint32_t handle, uint64_t t);

  const RankTrace& rank_trace_;
  const WorldIndex& world_to_index_;
  // handle -> definitions sorted by time (definition order breaks ties).
  FlatMap<uint32_t, std::vector<std::pair<uint64_t, uint32_t>>> by_handle_;
  std::vector<CommInfo> infos_;  // parallel to rank_trace.comms(), plus fallbacks
  std::deque<CommInfo> extra_;  // fallbacks (a deque: pointers stay valid)
  std::deque<CommCallCounts> counts_;  // (a deque: pointers stay valid)
  FlatMap<uint64_t, CommCallCounts*> counts_of_;
  // Definition d's CommInfo (`present` counts both groups of an
  // intercommunicator: a collective on it has them all as members).
  CommInfo info_of(const CommDef& d) {
    CommInfo ci;
    ci.def = &d;
    ci.gid = d.global_id;
    ci.present = world_to_index_.present(d.ranks) + (d.inter ? world_to_index_.present(d.remote_ranks) : 0);
    ci.seq = &counts_for(d.global_id)->collectives;
    const trace::RankList& peers = d.inter ? d.remote_ranks : d.ranks;
    ci.peer_count = static_cast<uint32_t>(peers.size());
    ci.peer_world_ranks = peers.begin();
    return ci;
  }
  CommCallCounts* counts_for(uint64_t gid) {
    CommCallCounts*& p = counts_of_[gid];
    if (!p) p = &counts_.emplace_back();
    return p;
  }
  Entry last_;  // the answer given last (a copy of one of cache_)
  Entry cache_[4];
  unsigned next_ = 0;
};

struct Request {
  enum Type : uint8_t { Send, Recv, PSend, PRecv, Coll, PColl };
  Type type = Send;
  bool active = false;
  bool started = false;  // persistent: a Start's operation is in flight
  bool a2a = false;
  const CommInfo* comm = nullptr;
  int32_t peer = -1;  // Send: destination (comm rank); Recv: requested source
  int32_t tag = -1;
  ChannelKey key;     // Send/PSend: the channel
  double send_enter = 0;  // Send: the Isend's (or last Start's) enter
  double issue = 0;       // Recv/PRecv: the Irecv's (or last Start's) enter
  uint64_t hold = UINT64_MAX;  // Recv/PRecv: the handler's hold while in flight
  uint64_t instance = 0;  // Coll/PColl: the rank's n-th collective on comm (when issued/started)
  uint32_t next = 0;      // the next request sharing this handle (index + 1 into the spill)
  uint32_t comm_handle = 0;  // `comm` is CommCache::at(comm_handle, comm_time) (window index)
  uint64_t comm_time = 0;
  // (One bit test, not three compares: asked on every completion.)
  bool persistent() const { return (1u << type) & (1u << PSend | 1u << PRecv | 1u << PColl); }
};
// A call that makes a request sets each member but `next` once
// (Interpreter::new_request): resetting it first cost a second store of
// most of them on every Isend and Irecv.
static_assert(sizeof(Request) == 96, "a member added to Request must be set where dispatch_call makes one");

// The handler gets (all times global ns):
//   bool call(const Event&, const FuncInfo&, double enter, double leave)
//       every MPI call that is not a continuation; false: ignore its meaning
//   bool continuation()      a continuation record; false: ignore it
//   void marker(const Event&, double enter, double leave)
//   void send(const ChannelKey&, double enter, double leave, const Event&)
//   void recv(const ChannelKey&, double issue, uint64_t hold, double enter, double leave,
//             const Event&)   hold: the receive's hold, or UINT64_MAX (a blocking call)
//   uint64_t hold(double t)  /  void release(uint64_t hold)
//   void cancel_send(const ChannelKey&, double send_enter)
//   void collective(const CommInfo&, bool a2a, double enter, double leave, const Event&)
//   void problem(WarningKind kind, F example)   example() -> std::string,
//       called only when the handler keeps the example (counting is cheap)
// and, optionally (the analysis's late receivers), a nonblocking send's hold:
//   uint64_t isend_hold()    the hold the last send() took for an Isend or a Start
//   void isend_done(uint64_t hold, double enter, double leave, const Event&, bool unmatched)
//       called where that hold is not HoldQueue::kNone
// InterpreterHandler states this for the compiler.
template <class H>
concept InterpreterHandler = requires(H& h, const Event& e, const FuncInfo& fi, const ChannelKey& key,
                                      const CommInfo& comm, double t, uint64_t hold, WarningKind kind,
                                      std::string (*example)()) {
  { h.call(e, fi, t, t) } -> std::convertible_to<bool>;
  { h.continuation() } -> std::convertible_to<bool>;
  h.marker(e, t, t);
  h.send(key, t, t, e);
  h.recv(key, t, hold, t, t, e);
  { h.hold(t) } -> std::convertible_to<uint64_t>;
  h.release(hold);
  h.cancel_send(key, t);
  h.collective(comm, true, t, t, e);
  h.problem(kind, example);
};

class Interpreter {
 public:
  Interpreter(const RankTrace& rank_trace, const Registry& reg, size_t rank_index,
              const WorldIndex& world_to_index)
      : rank_trace_(rank_trace), reg_(reg), index_(rank_index), me_(rank_trace.rank()), comms_(rank_trace, world_to_index),
        funcs_(reg.funcs[rank_index]->data()), nfuncs_(reg.funcs[rank_index]->size()) {
    fit_clock();
  }

  // Global ns of a raw time: RankTrace::to_global_ns, which is linear in the
  // raw time (offset plus linear drift). Its line is fitted once and checked
  // against the reader at points across the timer's range; when the check
  // fails the reader is called for every timestamp.
  double global(uint64_t ticks) const { return clock().global(ticks); }
  // The same conversion as a value, which a caller's loop keeps in registers
  // (stores of the handler's doubles could alias the members).
  struct Clock {
    const RankTrace* rank_trace;
    bool linear;
    double slope, intercept;
    double global(uint64_t ticks) const { return linear ? on_line(ticks) : rank_trace->to_global_ns(ticks); }
    // The fitted line at a raw time. (Signed conversion, as the reader's:
    // much cheaper than unsigned on x86-64.)
    double on_line(uint64_t ticks) const { return slope * static_cast<double>(static_cast<int64_t>(ticks)) + intercept; }
  };
  Clock clock() const { return Clock{&rank_trace_, linear_, slope_, intercept_}; }
  // A Clock whose kind is known where it is used (Engine::decode_events).
  template <bool kLinear>
  struct FixedClock {
    Clock clock;
    double global(uint64_t ticks) const {
      if constexpr (kLinear) return clock.on_line(ticks);
      else return clock.rank_trace->to_global_ns(ticks);
    }
  };
  const FuncInfo& func(uint16_t id) const {
    static const FuncInfo unknown{};
    return id < nfuncs_ ? funcs_[id] : unknown;
  }
  CommCache& comms() { return comms_; }
  size_t open_requests() const { return requests_.size(); }
  // Receives issued whose completion is not decoded yet and whose wait may
  // still be measured (those holding the handler's hold): a late sender's
  // wait runs from its receive's issue, across the calls made before the
  // call that completes it.
  size_t receives_in_flight() const { return receives_in_flight_; }
  // The one receive in flight has been alone since its issue: none was in
  // flight when it was issued (each issue sets lone_receive_, so one issued
  // since makes two in flight), and the handler noted nothing since
  // (note_overlap: its other spans, its contexts' changes). Asked by the
  // handler's recv() while the receive completes (it is still counted).
  bool lone_receive() const { return receives_in_flight_ == 1 && lone_receive_; }
  void note_overlap() { lone_receive_ = false; }
  // After the pass, once what the report reads of the requests and
  // communicators is taken (an MPI job's rank, Rank::release_pass_state):
  // they go; the clock stays (global() still answers).
  void release_pass_state() {
    requests_ = {};
    receives_in_flight_ = 0;
    lone_receive_ = false;
    request_memo_.clear();
    spill_ = {};
    spill_free_ = {};
    comms_.release();
  }

  template <InterpreterHandler H>
  void process(const Event& e, double enter, H& h);
  // The same, with the call dispatch inlined into the caller's loop (the
  // analysis's decode): no frame of its own per call. `leave` is e.leave in
  // global ns (the caller converts it with its Clock).
  template <InterpreterHandler H>
  [[gnu::always_inline]] inline void process_inline(const Event& e, double enter, double leave, H& h);

  // The state carried from one event to the next (requests, generalized
  // requests, collective counts), saved at a chunk's start by the window index
  // and restored to start decoding there. Restoring takes a hold for each
  // receive in flight, oldest issue first.
  struct Saved {
    std::vector<std::pair<uint32_t, Request>> requests;  // active, per handle oldest first
    uint64_t grequests = 0;
    // (gid, count). The communicators created over each are not kept: only
    // the hang report reads them, and the index serves only ranks that
    // ended in MPI_Finalize with no call in flight.
    std::vector<std::pair<uint64_t, uint64_t>> collective_counts;
  };
  void save(Saved& out) const {
    out.requests.clear();
    out.collective_counts.clear();
    requests_.for_each([&](const uint32_t& handle, const Request& first) {
      for (const Request* r = &first; r; r = r->next ? &spill_[r->next - 1] : nullptr)
        if (r->active) {
          Request copy = *r;
          copy.next = 0;
          out.requests.emplace_back(handle, copy);
        }
    });
    out.grequests = grequests_;
    comms_.for_each_count(
        [&](uint64_t gid, const CommCallCounts& n) { out.collective_counts.emplace_back(gid, n.collectives); });
  }
  template <class H>
  void restore(const Saved& in, H& h) {
    // (MPI_REQUEST_NULL's handle is no request's, and the memo's empty slot
    // holds it: a saved request on it, which only a forged index could hold,
    // is left out.)
    std::vector<std::pair<uint32_t, Request>> reqs;
    for (const auto& saved : in.requests)
      if (saved.first != format::kNoRequest) reqs.push_back(saved);
    std::vector<size_t> holding;
    for (size_t i = 0; i < reqs.size(); ++i) {
      Request& r = reqs[i].second;
      if (r.comm) r.comm = comms_.at(r.comm_handle, r.comm_time);
      // (An Isend's or a started Send_init's hold is the analysis's own.)
      if (r.type == Request::Send || r.type == Request::PSend) r.hold = HoldQueue::kNone;
      if (r.hold != HoldQueue::kNone) holding.push_back(i);
    }
    std::stable_sort(holding.begin(), holding.end(),
                     [&](size_t a, size_t b) { return reqs[a].second.issue < reqs[b].second.issue; });
    for (size_t i : holding) reqs[i].second.hold = h.hold(reqs[i].second.issue);
    receives_in_flight_ = holding.size();  // (only receives hold: the sends' were dropped above)
    lone_receive_ = false;                  // (what they overlapped before is not known)
    for (const auto& [handle, r] : reqs) new_request(handle) = r;  // (saved with next = 0)
    grequests_ = in.grequests;
    for (const auto& [gid, n] : in.collective_counts) comms_.set_count(gid, n);
  }

  // Every request still active (started and not completed): f(handle, Request).
  template <class F>
  void for_each_active_request(F&& f) {
    requests_.for_each([&](const uint32_t& handle, Request& first) {
      for (const Request* r = &first; r; r = r->next ? &spill_[r->next - 1] : nullptr)
        if (r->active && (!r->persistent() || r->started)) f(handle, *r);
    });
  }

 private:
  Request* active(uint32_t handle) {
    Request* r = find_request(handle);
    return r && r->active ? r : nullptr;
  }
  // The first request on `handle`, if any: the memo's entry, or the map's
  // (noted in the memo).
  [[gnu::always_inline]] Request* find_request(uint32_t handle) {
    const size_t slot = RequestMemo::slot(handle);
    if (request_memo_.handles[slot] == handle) [[likely]] return request_memo_.firsts[slot];
    Request* r = requests_.find(handle);
    if (r) {
      request_memo_.handles[slot] = handle;
      request_memo_.firsts[slot] = r;
    }
    return r;
  }
  // A new request on `handle`, for the caller to fill in place: each member
  // but `next` (0 here), whatever it holds. The oldest request on a handle
  // stays first (in the map), the others follow in the spill in issue order.
  // (Filled in place, not built on the stack and copied: the copy's wide
  // loads of fields just stored narrow cannot be forwarded from the store
  // buffer and stall on every Isend and Irecv.) The reference lasts until
  // the next request is added. (The common case inline in the decode loop:
  // a handle used again, without a call that spills the caller's registers.)
  [[gnu::always_inline]] Request& new_request(uint32_t handle) {
    Request* first = find_request(handle);
    if (first && !first->active) [[likely]]  // a handle used again (an inactive one has no followers)
      return *first;
    return new_request_on_new_or_busy_handle(handle, first);
  }
  [[gnu::noinline]] Request& new_request_on_new_or_busy_handle(uint32_t handle, Request* first) {
    if (!first) {
      request_memo_.clear();  // the insertion may move every request
      return requests_[handle];  // (operator[] value-initializes)
    }
    return new_sharing_request(handle);
  }
  [[gnu::noinline]] Request& new_sharing_request(uint32_t handle) {
    uint32_t slot;
    if (!spill_free_.empty()) {
      slot = spill_free_.back();
      spill_free_.pop_back();
      spill_[slot] = Request{};
    } else {
      slot = static_cast<uint32_t>(spill_.size());
      spill_.emplace_back();  // (may move spill_: walk the chain after it)
    }
    Request* last = find_request(handle);
    while (last->next) last = &spill_[last->next - 1];
    last->next = slot + 1;
    return spill_[slot];
  }
  // The first request on a handle is done: the next one sharing the handle
  // moves up into its place. (Inline: it runs at every completion in the
  // decode loop, and GCC's limit on a file's growth by inlining otherwise
  // decides by the size of the file that holds the loop.)
  [[gnu::always_inline]] void retire(Request* first) {
    if (!first->next) {
      first->active = false;
      return;
    }
    const uint32_t slot = first->next - 1;
    *first = spill_[slot];
    spill_free_.push_back(slot);
  }
  template <class H>
  [[gnu::always_inline]] const CommInfo* comm(uint32_t handle, uint64_t t, H& h) {
    const CommInfo* c = comms_.at(handle, t);
    if (!c)
      h.problem(WarningKind::UnknownCommunicator, [&] {
        return "rank " + std::to_string(me_) + ": communicator handle " + hex(handle);
      });
    return c;
  }
  // (Inline in the call dispatch, the report of a peer out of line.)
  template <class H>
  [[gnu::always_inline]] bool channel(const CommInfo& c, int32_t peer, int32_t tag, bool sending, ChannelKey* k,
                                      H& h) {
    const int32_t w = CommCache::peer_world(c, peer);
    if (w < 0) [[unlikely]] {
      if (peer >= 0) unmappable_peer(c, peer, h);
      return false;
    }
    k->gid = c.gid;
    k->src = sending ? me_ : w;
    k->dst = sending ? w : me_;
    k->tag = tag;
    return true;
  }

  // The world rank of a peer >= 0 (-1, reported, when it cannot be mapped).
  template <class H>
  [[gnu::always_inline]] int32_t peer_world(const CommInfo& c, int32_t peer, H& h) {
    const int32_t w = CommCache::peer_world(c, peer);
    if (w < 0) [[unlikely]] unmappable_peer(c, peer, h);
    return w;
  }

  template <class H>
  [[gnu::noinline, gnu::cold]] void unmappable_peer(const CommInfo& c, int32_t peer, H& h) {
    h.problem(WarningKind::UnmappablePeer, [&] {
      return "rank " + std::to_string(me_) + ": rank " + std::to_string(peer) + " of communicator " +
             std::to_string(c.gid);
    });
  }

  // Entered, never completed: a call and MPI time up to the rank's last
  // moment alive. A blocking collective took part in its instance; nothing
  // was sent, received or completed.
  template <class H>
  [[gnu::noinline, gnu::cold]] void in_flight_call(const Event& e, double enter, double leave, H& h) {
    if (e.kind == FuncKind::Collective || e.kind == FuncKind::AllToAll)
      if (const CommInfo* c = comm(e.comm, e.enter, h))
        h.collective(*c, e.kind == FuncKind::AllToAll, enter, leave, e);
    if (e.kind == FuncKind::CommCreate) comm_creation(e);
  }
  // A communicator created over a parent that every member calls it on: one
  // more in the parent's count. (An unknown parent is not reported here: the
  // count serves the hang report alone, and a creation's report is its
  // definition's.)
  [[gnu::noinline, gnu::cold]] void comm_creation(const Event& e) {
    if (e.kind != FuncKind::CommCreate || !(func(e.func).role & format::kRoleCreatesOverParent)) return;
    if (const CommInfo* c = comms_.at(e.comm, e.enter)) comms_.note_creation(c->gid);
  }

  template <class H>
  [[gnu::noinline]] void process_call(const Event& e, double enter, double leave, H& h) {
    dispatch_call(e, enter, leave, h);
  }
  template <class H>
  [[gnu::always_inline]] inline void dispatch_call(const Event& e, double enter, double leave, H& h);

  void fit_clock();

  const RankTrace& rank_trace_;
  const Registry& reg_;
  size_t index_;
  int32_t me_;
  CommCache comms_;
  const FuncInfo* funcs_;
  size_t nfuncs_;
  // Requests by handle. Completed ones are marked inactive rather than erased:
  // MPI reuses handles, so the map stays as small as the requests in use.
  FlatMap<uint32_t, Request> requests_;
  // Where the first requests of the handles used last are in requests_: MPI
  // hands the same few handles back call after call, and a hit is a compare
  // where a lookup hashes and probes. Pointers into the map, so the memo is
  // emptied whenever a handle is added (the map may grow) and is never copied
  // with the Interpreter.
  struct RequestMemo {
    // An empty entry holds MPI_REQUEST_NULL's handle, which no request has
    // (a call that returns it makes none), so its lookup finds nothing either
    // way, and a hit is one compare: an entry of another handle has its
    // request.
    // (Handles and requests in arrays of their own: an entry's slot is
    // then scaled by the load's addressing, with no multiply first.)
    static constexpr size_t kEntries = 8;
    uint32_t handles[kEntries];
    Request* firsts[kEntries];
    RequestMemo() { clear(); }
    RequestMemo(const RequestMemo&) { clear(); }
    RequestMemo& operator=(const RequestMemo&) {
      clear();
      return *this;
    }
    // (MPICH's requests differ in their low bits: the bits above the index
    // are the same for a direct and an indirect one where a slot would mix
    // them in, 27-29. Open MPI's Fortran indices are small integers.)
    static size_t slot(uint32_t handle) { return handle & (kEntries - 1); }
    void clear() {
      for (size_t i = 0; i < kEntries; ++i) {
        handles[i] = format::kNoRequest;
        firsts[i] = nullptr;
      }
    }
  };
  RequestMemo request_memo_;
  std::vector<Request> spill_;          // further requests sharing a handle
  std::vector<uint32_t> spill_free_;
  uint64_t grequests_ = 0;              // generalized requests outstanding
  size_t receives_in_flight_ = 0;       // (receives_in_flight())
  bool lone_receive_ = false;           // (lone_receive())
  bool linear_ = false;
  double slope_ = 1, intercept_ = 0;
};

template <InterpreterHandler H>
void Interpreter::process(const Event& e, double enter, H& h) {
  const double leave = global(e.leave);
  // Markers (often half the events) skip the calls' larger frame.
  if (e.kind == FuncKind::Marker) h.marker(e, enter, leave);
  else process_call(e, enter, leave, h);
}

template <InterpreterHandler H>
void Interpreter::process_inline(const Event& e, double enter, double leave, H& h) {
  if (e.kind == FuncKind::Marker) h.marker(e, enter, leave);
  else dispatch_call(e, enter, leave, h);
}

template <class H>
void Interpreter::dispatch_call(const Event& e, double enter, double leave, H& h) {
  const FuncInfo& fi = func(e.func);
  if (e.flags & format::kContinuation) {
    if (!h.continuation()) return;
  } else if (!h.call(e, fi, enter, leave)) {
    return;
  }
  if (e.in_flight) [[unlikely]] {
    in_flight_call(e, enter, leave, h);
    return;
  }
  // (Each case that maps a channel has its own key: one zeroed here cost
  // three stores on every call.)
  switch (e.kind) {
    case FuncKind::Send: {
      if (e.peer == format::kProcNull) break;
      ChannelKey key;
      if (const CommInfo* c = comm(e.comm, e.enter, h))
        if (channel(*c, e.peer, e.tag, true, &key, h)) h.send(key, enter, leave, e);
      break;
    }
    case FuncKind::Recv: {
      if (e.peer < 0) break;  // PROC_NULL (or nothing received)
      ChannelKey key;
      if (const CommInfo* c = comm(e.comm, e.enter, h))
        if (channel(*c, e.peer, e.tag, false, &key, h))
          h.recv(key, enter, HoldQueue::kNone, enter, leave, e);
      break;
    }
    case FuncKind::SendRecv: {
      const CommInfo* c = comm(e.comm, e.enter, h);
      if (!c) break;
      ChannelKey key;
      if (e.peer != format::kProcNull && channel(*c, e.peer, e.tag, true, &key, h))
        h.send(key, enter, leave, e);
      if (e.recv_peer >= 0 && channel(*c, e.recv_peer, e.recv_tag, false, &key, h))
        h.recv(key, enter, HoldQueue::kNone, enter, leave, e);
      break;
    }
    case FuncKind::Isend: {
      const CommInfo* c = comm(e.comm, e.enter, h);
      const bool persistent = fi.role & kRolePersistentInit;
      // The channel is written straight into the request (a copy of a key
      // just stored would stall as new_request explains).
      if (e.request == format::kNoRequest) [[unlikely]] {
        ChannelKey key;
        if (!persistent && c && e.peer != format::kProcNull && channel(*c, e.peer, e.tag, true, &key, h))
          h.send(key, enter, leave, e);
        break;
      }
      Request* r = &new_request(e.request);
      const bool mapped = c && e.peer != format::kProcNull && channel(*c, e.peer, e.tag, true, &r->key, h);
      if (!mapped) r->key = ChannelKey{};
      if (!persistent && mapped) h.send(r->key, enter, leave, e);
      uint64_t hold = HoldQueue::kNone;
      // (The analysis: the Isend's hold until its late receiver is known.)
      if constexpr (requires { h.isend_hold(); })
        if (!persistent && mapped) hold = h.isend_hold();
      r->type = persistent ? Request::PSend : Request::Send;
      r->active = true;
      r->started = false;
      r->a2a = false;
      r->comm = mapped ? c : nullptr;  // nothing to send (PROC_NULL) or unmappable: none
      r->peer = e.peer;
      r->tag = e.tag;
      r->send_enter = enter;
      r->issue = 0;
      r->hold = hold;
      r->instance = 0;
      r->comm_handle = e.comm;
      r->comm_time = e.enter;
      break;
    }
    case FuncKind::Irecv: {
      const CommInfo* c = comm(e.comm, e.enter, h);
      if (e.request == format::kNoRequest) break;
      const bool persistent = fi.role & kRolePersistentInit;
      const uint64_t hold =
          !persistent && c && e.peer != format::kProcNull ? h.hold(enter) : HoldQueue::kNone;
      Request& r = new_request(e.request);
      r.type = persistent ? Request::PRecv : Request::Recv;
      r.active = true;
      r.started = false;
      r.a2a = false;
      r.comm = c;
      r.peer = e.peer;
      r.tag = e.tag;
      r.key = ChannelKey{};
      r.send_enter = 0;
      r.issue = enter;
      r.hold = hold;
      if (hold != HoldQueue::kNone) {
        lone_receive_ = receives_in_flight_ == 0;
        ++receives_in_flight_;
      }
      r.instance = 0;
      r.comm_handle = e.comm;
      r.comm_time = e.enter;
      break;
    }
    case FuncKind::Completion: {
      for (const trace::Completion& done : e.completions) {
        if (done.request == format::kNoRequest) continue;
        Request* r = active(done.request);
        if (!r) {
          if (grequests_ > 0) {
            --grequests_;  // a generalized request, completed by the user
            continue;
          }
          h.problem(WarningKind::UnknownRequestCompletion, [&] {
            return "rank " + std::to_string(me_) + ": request " + hex(done.request);
          });
          continue;
        }
        // (Kept: the handler's stores below could alias the request's type.)
        const bool persistent = r->persistent();
        const bool ran = !persistent || r->started;  // a persistent one not started: nothing
        switch (r->type) {
          case Request::Recv:
          case Request::PRecv: {
            // (Counted while h.recv() asks whether it was alone.)
            const bool held = r->hold != HoldQueue::kNone;
            if (ran && !done.cancelled && r->comm && r->peer != format::kProcNull) {
              // The status tells the actual source and tag; fall back to what
              // was asked when the status says nothing more specific.
              const int32_t src = done.source >= 0 ? done.source : r->peer;
              const int32_t tag = done.tag >= 0 || r->tag < 0 ? done.tag : r->tag;
              // (The key built from its values: one zeroed first and then
              // filled, its address passed on, cost three stores more.)
              const int32_t w = src >= 0 ? peer_world(*r->comm, src, h) : -1;
              if (w >= 0) {
                h.recv(ChannelKey{r->comm->gid, w, me_, tag}, r->issue, r->hold, enter, leave, e);
                r->hold = HoldQueue::kNone;  // the receive keeps it
              }
            }
            h.release(r->hold);
            r->hold = HoldQueue::kNone;
            receives_in_flight_ -= held;
            break;
          }
          case Request::Send:
          case Request::PSend:
            if (ran && done.cancelled && r->comm) h.cancel_send(r->key, r->send_enter);
            // (The analysis: the call that completed an MPI_Isend or a started
            // persistent send, for its late receiver.)
            // (Not without a hold, as without the wait states: the call
            // cost 15 instructions a completed Isend to do nothing.)
            if constexpr (requires { h.isend_done(r->hold, enter, leave, e, true); })
              if (ran && r->hold != HoldQueue::kNone) {
                h.isend_done(r->hold, enter, leave, e, done.cancelled);
                r->hold = HoldQueue::kNone;
              }
            break;
          default:
            break;
        }
        if (persistent) r->started = false;  // it stays until MPI_Request_free
        else retire(r);
      }
      break;
    }
    case FuncKind::RequestOp: {
      if (fi.role & kRoleStart) {
        for (uint32_t handle : e.requests) {
          Request* r = active(handle);
          if (!r) {
            h.problem(WarningKind::UnknownRequestStart, [&] {
              return "rank " + std::to_string(me_) + ": request " + hex(handle);
            });
            continue;
          }
          r->started = true;
          if (r->type == Request::PSend && r->comm) {
            r->send_enter = enter;
            h.send(r->key, enter, leave, e);
            // (The analysis: like an Isend's, its hold until its late receiver is known.)
            if constexpr (requires { h.isend_hold(); }) r->hold = h.isend_hold();
          } else if (r->type == Request::PRecv) {
            r->issue = enter;
            receives_in_flight_ -= r->hold != HoldQueue::kNone;
            h.release(r->hold);
            r->hold = r->comm && r->peer != format::kProcNull ? h.hold(enter) : HoldQueue::kNone;
            if (r->hold != HoldQueue::kNone) {
              lone_receive_ = receives_in_flight_ == 0;
              ++receives_in_flight_;
            }
          } else if (r->type == Request::PColl && r->comm) {
            h.collective(*r->comm, r->a2a, enter, leave, e);
            r->instance = *r->comm->seq;
          }
        }
      } else if (fi.role & kRoleFree) {
        // A freed operation still completes, unseen: nothing more to wait for.
        for (uint32_t handle : e.requests)
          if (Request* r = active(handle)) {
            if constexpr (requires { h.isend_done(r->hold, enter, leave, e, true); })
              if ((r->type == Request::Send || r->type == Request::PSend) && r->hold != HoldQueue::kNone) {
                h.isend_done(r->hold, enter, enter, e, false);  // completes unseen: no wait
                r->hold = HoldQueue::kNone;
              }
            if (r->type == Request::Recv || r->type == Request::PRecv)
              receives_in_flight_ -= r->hold != HoldQueue::kNone;
            h.release(r->hold);
            r->hold = HoldQueue::kNone;
            retire(r);
          }
      }
      break;
    }
    case FuncKind::Collective:
    case FuncKind::AllToAll: {
      if (const CommInfo* c = comm(e.comm, e.enter, h))
        h.collective(*c, e.kind == FuncKind::AllToAll, enter, leave, e);
      break;
    }
    case FuncKind::ICollective:
    case FuncKind::IAllToAll: {
      const CommInfo* c = comm(e.comm, e.enter, h);
      const bool a2a = e.kind == FuncKind::IAllToAll;
      const bool persistent = fi.role & kRolePersistentInit;
      uint64_t instance = 0;
      if (!persistent && c) {
        h.collective(*c, a2a, enter, leave, e);
        instance = *c->seq;
      }
      if (e.request == format::kNoRequest) break;
      Request& r = new_request(e.request);
      r.type = persistent ? Request::PColl : Request::Coll;
      r.active = true;
      r.started = false;
      r.a2a = a2a;
      r.comm = c;
      r.peer = r.tag = -1;
      r.key = ChannelKey{};
      r.send_enter = r.issue = 0;
      r.hold = HoldQueue::kNone;
      r.instance = instance;
      r.comm_handle = e.comm;
      r.comm_time = e.enter;
      break;
    }
    default:
      // (One test of the role for every other call; the rare ones pay a
      // second.)
      if (fi.role & (kRoleGrequestStart | format::kRoleCreatesOverParent)) [[unlikely]] {
        if (fi.role & kRoleGrequestStart) ++grequests_;
        else comm_creation(e);
      }
      break;
  }
}

}  // namespace prof::analysis::detail
