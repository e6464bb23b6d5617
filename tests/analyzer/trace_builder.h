// Builds small traces for the analyzer's tests with the format's TraceWriter:
// one writer per rank in a fresh temporary directory, a fixed table of MPI
// functions, call sites app.c:100/200/300, times in nanoseconds of a 1 ns/tick
// monotonic timer (so every figure is exact integer arithmetic), or of a
// fractional rate where a test asks for one (TickRate: as a real TSC's, whose
// figures are sums of fractional times, and so depend on the sums' order).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "prof/analysis/analysis.h"
#include "prof/trace_reader.h"

namespace prof::test {

using format::FuncKind;
using trace::Completion;
using trace::Event;

constexpr uint32_t kWorld = 0x44000000u;
constexpr uint32_t kSelf = 0x44000001u;
constexpr uint64_t kUs = 1000;    // ns per microsecond
constexpr uint64_t kMs = 1000000; // ns per millisecond

enum Fn : uint16_t {
  Init = 1, Finalize, Send, Recv, Isend, Irecv, Wait, Waitall, Allreduce, Barrier, Alltoall,
  Sendrecv, Bcast, CommRank, Ibcast, SendInit, Start, RequestFree, RecvInit, Ialltoall, Compute,
  Waitsome, Testsome, GrequestStart, GrequestComplete, Ssend, Reduce, Gather, Scatter, Allgatherv
};

// Communicator creations: a trace defines them where it makes them
// (TraceBuilder::define_comm_creations), the standard table leaves them out.
enum CreationFn : uint16_t { CommSplit = 200, CommDup, CommCreateGroup, IntercommMerge };

// MPICH's handle for every send that completed at once (a builtin request).
constexpr uint32_t kBuiltinDoneSend = 0x6c000001u;

// An in-flight slot of the Live chunk (format 4), as the shim leaves it.
inline format::InFlightSlot in_flight_slot(uint16_t func, uint64_t enter, int32_t peer, int32_t tag,
                                           uint32_t comm, uint32_t extra = 0) {
  format::InFlightSlot s{};
  s.enter = enter;
  s.site_func = 0x401000u | (uint64_t{func} << 48);
  s.peer = peer;
  s.tag = tag;
  s.comm = comm;
  s.extra = extra;
  return s;
}

// The timer's ns per tick, as the trace's ns_per_tick says it ("1": times
// are the ns the events are written with).
struct TickRate {
  const char* ns_per_tick = "1";
};
// A real trace's rate (a TSC of 2.6 GHz): an event written at t "ns" is at
// 0.385... t ns, between whole ns.
inline constexpr TickRate kTscRate{"0.385187261371"};

class TraceBuilder {
 public:
  // chunk_bytes: the writers' event chunk size (at least 1 KiB; small ones make many chunks).
  // version: the files' format version (an older one writes as its writers did).
  explicit TraceBuilder(int ranks, uint64_t run_id = 42, bool standard_defs = true,
                        uint32_t chunk_bytes = 1u << 20,
                        uint32_t version = format::kFormatVersion, TickRate rate = {})
      : ranks_(ranks), rate_(rate) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "prof-analyzer-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    for (int r = 0; r < ranks; ++r) {
      w_.push_back(std::make_unique<trace::TraceWriter>(path(r), r, ranks, run_id,
                                                        format::TimerKind::Monotonic, chunk_bytes,
                                                        version));
      stream_.push_back(0);
      if (standard_defs) define(r);
    }
  }
  ~TraceBuilder() {
    w_.clear();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& dir() const { return dir_; }
  std::string path(int r) const {
    char b[32];
    std::snprintf(b, sizeof b, format::kRankFilePattern, r);
    return (std::filesystem::path(dir_) / b).string();
  }
  trace::TraceWriter& w(int r) { return *w_[static_cast<size_t>(r)]; }
  // Events of rank r written from here on belong to thread stream s.
  void thread(int r, uint32_t s) { stream_[static_cast<size_t>(r)] = s; }
  void put(int r, Event& e) {
    e.stream = stream_[static_cast<size_t>(r)];
    w(r).event(e);
  }

  static void define(trace::TraceWriter& t, TickRate rate = {}) {
    t.meta("ns_per_tick", rate.ns_per_tick);
    t.meta("exe", "/home/user/app");
    const std::pair<Fn, std::pair<FuncKind, const char*>> fns[] = {
        {Init, {FuncKind::Other, "MPI_Init"}},
        {Finalize, {FuncKind::Other, "MPI_Finalize"}},
        {Send, {FuncKind::Send, "MPI_Send"}},
        {Recv, {FuncKind::Recv, "MPI_Recv"}},
        {Isend, {FuncKind::Isend, "MPI_Isend"}},
        {Irecv, {FuncKind::Irecv, "MPI_Irecv"}},
        {Wait, {FuncKind::Completion, "MPI_Wait"}},
        {Waitall, {FuncKind::Completion, "MPI_Waitall"}},
        {Allreduce, {FuncKind::Collective, "MPI_Allreduce"}},
        {Barrier, {FuncKind::Collective, "MPI_Barrier"}},
        {Alltoall, {FuncKind::AllToAll, "MPI_Alltoall"}},
        {Sendrecv, {FuncKind::SendRecv, "MPI_Sendrecv"}},
        {Bcast, {FuncKind::Collective, "MPI_Bcast"}},
        {CommRank, {FuncKind::Other, "MPI_Comm_rank"}},
        {Ibcast, {FuncKind::ICollective, "MPI_Ibcast"}},
        {SendInit, {FuncKind::Isend, "MPI_Send_init"}},
        {Start, {FuncKind::RequestOp, "MPI_Start"}},
        {RequestFree, {FuncKind::RequestOp, "MPI_Request_free"}},
        {RecvInit, {FuncKind::Irecv, "MPI_Recv_init"}},
        {Ialltoall, {FuncKind::IAllToAll, "MPI_Ialltoall"}},
        {Compute, {FuncKind::Other, "MPI_Comm_size"}},
        {Waitsome, {FuncKind::Completion, "MPI_Waitsome"}},
        {Testsome, {FuncKind::Completion, "MPI_Testsome"}},
        {GrequestStart, {FuncKind::Other, "MPI_Grequest_start"}},
        {GrequestComplete, {FuncKind::Other, "MPI_GrequestComplete"}},
        {Ssend, {FuncKind::Send, "MPI_Ssend"}},
        {Reduce, {FuncKind::Collective, "MPI_Reduce"}},
        {Gather, {FuncKind::Collective, "MPI_Gather"}},
        {Scatter, {FuncKind::Collective, "MPI_Scatter"}},
        {Allgatherv, {FuncKind::Collective, "MPI_Allgatherv"}},
    };
    for (const auto& [id, kn] : fns) t.function(id, kn.first, kn.second);
    t.callsite({1, 0x401000, "app.c", 100});
    t.callsite({2, 0x402000, "app.c", 200});
    t.callsite({3, 0x403000, "app.c", 300});
    t.callsite({4, 0x404abc, "", 0});  // unresolved: reported by address
    // MPI_Allreduce's call sites 1 and 2 (format 7): app.c:200 and app.c:300.
    t.call_site_index(Allreduce, 1, 2);
    t.call_site_index(Allreduce, 2, 3);
  }
  void define(int r) { define(w(r), rate_); }
  void define_comm_creations(int r) {
    w(r).function(CommSplit, FuncKind::CommCreate, "MPI_Comm_split");
    w(r).function(CommDup, FuncKind::CommCreate, "MPI_Comm_dup");
    w(r).function(CommCreateGroup, FuncKind::CommCreate, "MPI_Comm_create_group");
    w(r).function(IntercommMerge, FuncKind::CommCreate, "MPI_Intercomm_merge");
  }

  // --- events (ns) ---
  void other(int r, Fn f, uint64_t enter, uint64_t leave) {
    Event e;
    e.func = f;
    e.kind = FuncKind::Other;
    e.enter = enter;
    e.leave = leave;
    put(r, e);
  }
  void init(int r, uint64_t enter, uint64_t leave) { other(r, Init, enter, leave); }
  void finalize(int r, uint64_t enter, uint64_t leave) { other(r, Finalize, enter, leave); }
  void p2p(int r, Fn f, FuncKind k, uint64_t enter, uint64_t leave, int peer, int tag,
           uint64_t bytes = 8, uint32_t comm = kWorld, uint32_t request = format::kNoRequest,
           uint8_t flags = 0) {
    Event e;
    e.func = f;
    e.kind = k;
    e.enter = enter;
    e.leave = leave;
    e.peer = peer;
    e.tag = tag;
    e.bytes = bytes;
    e.comm = comm;
    e.request = request;
    e.flags = flags;
    put(r, e);
  }
  void send(int r, uint64_t enter, uint64_t leave, int peer, int tag, uint64_t bytes = 8) {
    p2p(r, Send, FuncKind::Send, enter, leave, peer, tag, bytes);
  }
  void recv(int r, uint64_t enter, uint64_t leave, int source, int tag, uint64_t bytes = 8) {
    p2p(r, Recv, FuncKind::Recv, enter, leave, source, tag, bytes);
  }
  void isend(int r, uint64_t enter, uint64_t leave, int peer, int tag, uint32_t request,
             uint64_t bytes = 8) {
    p2p(r, Isend, FuncKind::Isend, enter, leave, peer, tag, bytes, kWorld, request);
  }
  void irecv(int r, uint64_t enter, uint64_t leave, int source, int tag, uint32_t request,
             uint8_t flags = 0, uint64_t bytes = 8) {
    p2p(r, Irecv, FuncKind::Irecv, enter, leave, source, tag, bytes, kWorld, request, flags);
  }
  void wait(int r, Fn f, uint64_t enter, uint64_t leave, std::vector<Completion> done) {
    Event e;
    e.func = f;
    e.kind = FuncKind::Completion;
    e.enter = enter;
    e.leave = leave;
    e.completions = std::span<const Completion>(done.data(), done.size());
    put(r, e);
  }
  static Completion done(uint32_t request, int source = -1, int tag = -1, uint64_t bytes = 0) {
    Completion c;
    c.request = request;
    c.source = source;
    c.tag = tag;
    c.bytes = bytes;
    return c;
  }
  void request_op(int r, Fn f, uint64_t enter, uint64_t leave, std::vector<uint32_t> reqs) {
    Event e;
    e.func = f;
    e.kind = FuncKind::RequestOp;
    e.enter = enter;
    e.leave = leave;
    e.requests = std::span<const uint32_t>(reqs.data(), reqs.size());
    put(r, e);
  }
  void collective(int r, Fn f, uint64_t enter, uint64_t leave, uint32_t comm = kWorld,
                  uint64_t bytes = 8, uint32_t request = format::kNoRequest, int root = 0,
                  uint8_t call_site_index = 0) {
    Event e;
    e.func = f;
    e.call_site_index = call_site_index;
    e.kind = f == Alltoall ? FuncKind::AllToAll
             : f == Ibcast ? FuncKind::ICollective
             : f == Ialltoall ? FuncKind::IAllToAll
                              : FuncKind::Collective;
    e.enter = enter;
    e.leave = leave;
    e.comm = comm;
    e.root = root;
    e.bytes = bytes;
    e.request = request;
    put(r, e);
  }
  // A communicator `new_comm` created over `parent` (its definition is the
  // test's to write where it needs one).
  void comm_create(int r, uint16_t f, uint64_t enter, uint64_t leave, uint32_t parent, uint32_t new_comm) {
    Event e;
    e.func = f;
    e.kind = FuncKind::CommCreate;
    e.enter = enter;
    e.leave = leave;
    e.comm = parent;
    e.new_comm = new_comm;
    put(r, e);
  }
  void marker(int r, uint64_t enter, uint32_t id, bool begin, uint32_t callsite = 1,
              uint64_t duration = 0) {
    Event e;
    e.func = format::kMarkerFuncId;
    e.kind = FuncKind::Marker;
    e.enter = enter;
    e.leave = enter + duration;
    e.interval_id = id;
    e.callsite = callsite;
    e.marker_begin = begin;
    put(r, e);
  }
  void begin(int r, uint64_t t, uint32_t id, uint32_t site = 1) { marker(r, t, id, true, site); }
  void end(int r, uint64_t t, uint32_t id, uint32_t site = 1) { marker(r, t, id, false, site); }

  // Seals every rank ("finalize" as the end reason unless told otherwise).
  void close(const std::string& reason = "finalize") {
    for (int r = 0; r < ranks_; ++r) close(r, reason);
  }
  void close(int r, const std::string& reason = "finalize") {
    if (!reason.empty()) w(r).end(reason);
    w(r).close();
  }

 private:
  int ranks_;
  TickRate rate_;
  std::string dir_;
  std::vector<std::unique_ptr<trace::TraceWriter>> w_;
  std::vector<uint32_t> stream_;
};

// Rank r's definition (r < 4) of the intercommunicator kInterWorldHalves of
// a trace of 4 ranks: {0, 1} and {2, 3}, global id 500, from time 0.
constexpr uint32_t kInterWorldHalves = 0x84000010u;
inline void define_world_halves(TraceBuilder& b, int r) {
  trace::CommDef d;
  d.handle = kInterWorldHalves;
  d.global_id = 500;
  d.inter = true;
  d.ranks = r < 2 ? std::vector<int32_t>{0, 1} : std::vector<int32_t>{2, 3};
  d.remote_ranks = r < 2 ? std::vector<int32_t>{2, 3} : std::vector<int32_t>{0, 1};
  b.w(r).comm(d);
}

// Rank r of a trace of 4 ranks: the communicator creations and
// kInterWorldHalves defined, MPI_Init made.
inline void start_world_halves(TraceBuilder& b, int r) {
  b.define_comm_creations(r);
  define_world_halves(b, r);
  b.init(r, 0, 1 * kMs);
}

// A job of 4 ranks killed in a hang through a communicator's creation: rank
// 1 had made its MPI_Comm_split of MPI_COMM_WORLD and waits in a receive
// from rank 0; rank 0 is inside that split, which ranks 2 and 3 never
// entered: rank 2 waits in a receive from rank 0, rank 3 in one from rank 2.
// The split waits for ranks 2 and 3 (not 1): ranks 0 and 2 wait for each
// other, and so do 0, 3 and 2 in turn.
inline void build_hang_in_comm_split(TraceBuilder& b) {
  for (int r = 0; r < 4; ++r) start_world_halves(b, r);
  b.comm_create(1, CommSplit, 2 * kMs, 3 * kMs, kWorld, 0x84000020u);
  b.w(0).live(20 * kMs, {in_flight_slot(CommSplit, 5 * kMs, -1, -1, kWorld)});
  b.w(1).live(20 * kMs, {in_flight_slot(Recv, 4 * kMs, 0, 9, kWorld)});
  b.w(2).live(20 * kMs, {in_flight_slot(Recv, 4 * kMs, 0, 9, kWorld)});
  b.w(3).live(20 * kMs, {in_flight_slot(Recv, 4 * kMs, 2, 9, kWorld)});
  b.close("signal:15");
}

// The invariants of docs/metrics.md, per rank and interval: Comm <= MPI <= T,
// PotentSync <= T, TStart <= MPI, a nested interval's T and MPI within its
// parent's and its Execution Time too, and nothing negative (1 ns of slack for
// rounding in sums of doubles). Every analyzer test checks them on every trace
// it analyzes.
inline void expect_invariants(const analysis::Analysis& a) {
  constexpr double kSlack = 1e-9;
  for (size_t i = 0; i < a.intervals.size(); ++i) {
    const auto& n = a.intervals[i];
    for (const auto& f : n.per_rank) {
      const std::string where = "interval #" + std::to_string(i) + " rank " + std::to_string(f.rank);
      EXPECT_LE(f.comm, f.mpi + kSlack) << where;
      EXPECT_LE(f.mpi, f.time + kSlack) << where;
      EXPECT_LE(f.potential_sync, f.time + kSlack) << where;
      EXPECT_LE(f.time_of_start, f.mpi + kSlack) << where;
      EXPECT_NEAR(f.comm, f.sendrecv + f.collective + f.alltoall, kSlack) << where;
      for (double v : {f.time, f.mpi, f.idle, f.comm, f.sendrecv, f.collective, f.alltoall,
                       f.potential_sync, f.time_variation, f.time_of_start})
        EXPECT_GE(v, -kSlack) << where;
      // Wait states: each kind within T_r; the kinds of Potential Sync. sum
      // to it, less what a late receiver took of it (another thread's, in a
      // collective's wait), and with the late receiver to at least it.
      // (Not computed: nothing to check.)
      if (!a.waits_known) continue;
      double kinds = 0;
      for (int k = 0; k < analysis::kWaitKindCount; ++k) {
        const double v = f.waits[static_cast<size_t>(k)];
        EXPECT_GE(v, -kSlack) << where << " " << analysis::kWaitKindKeys[k];
        EXPECT_LE(v, f.time + kSlack) << where << " " << analysis::kWaitKindKeys[k];
        if (k != analysis::kLateReceiver) kinds += v;
      }
      const double late_receiver = f.waits[analysis::kLateReceiver];
      if (late_receiver <= kSlack) {
        EXPECT_NEAR(kinds, f.potential_sync, kSlack) << where;
      }
      EXPECT_LE(kinds, f.potential_sync + kSlack) << where;
      EXPECT_GE(kinds + late_receiver, f.potential_sync - kSlack) << where;
    }
    EXPECT_LE(n.main.lost_time, n.main.total_time + kSlack) << "interval #" << i;
    if (n.parent >= 0) {
      // A nested interval never exceeds its parent, in Execution Time and per rank.
      const auto& parent = a.intervals[static_cast<size_t>(n.parent)];
      EXPECT_LE(n.main.execution_time, parent.main.execution_time + kSlack) << "interval #" << i;
      for (const auto& f : n.per_rank)
        for (const auto& pf : parent.per_rank)
          if (pf.rank == f.rank) {
            EXPECT_LE(f.time, pf.time + kSlack) << "interval #" << i << " rank " << f.rank;
            EXPECT_LE(f.mpi, pf.mpi + kSlack) << "interval #" << i << " rank " << f.rank;
          }
    }
    EXPECT_GE(n.main.efficiency, -kSlack) << "interval #" << i;
    EXPECT_LE(n.main.efficiency, 1 + kSlack) << "interval #" << i;
    // Root causes sum to at most the waits of the interval's calls; the
    // critical path: each interval's time on it within its parent's.
    double waited = 0, caused = 0;
    for (const auto& p : n.waited_for) waited += p.seconds;
    for (const auto& c : n.caused_by) {
      caused += c.seconds;
      EXPECT_GT(c.seconds, 0) << "interval #" << i;
      EXPECT_TRUE(c.interval >= 0 && static_cast<size_t>(c.interval) < a.intervals.size()) << "interval #" << i;
    }
    EXPECT_LE(caused, waited + kSlack) << "interval #" << i;
    EXPECT_GE(n.critical_path_s, -kSlack) << "interval #" << i;
    if (n.parent >= 0) {
      EXPECT_LE(n.critical_path_s, a.intervals[static_cast<size_t>(n.parent)].critical_path_s + kSlack)
          << "interval #" << i;
    }
  }
  // The critical path covers the run's span: from the earliest rank's start
  // to the latest rank's end.
  if (a.delay_known && !a.intervals.empty()) {
    EXPECT_NEAR(a.intervals[0].critical_path_s, a.run_span_s, kSlack);
  }
}
// (With the root causes and the critical path, so their invariants are
// checked on every trace too.)
inline analysis::Analysis analyze_checked(const std::string& dir,
                                          const analysis::Options& options = {}) {
  analysis::Options with_delay = options;
  with_delay.delay_analysis = true;
  analysis::Analysis a = analysis::analyze(dir, with_delay);
  expect_invariants(a);
  return a;
}

// Figures are in seconds and the builders' times integer nanoseconds: a
// nanosecond is the tolerance of an exact figure.
constexpr double kTol = 1e-9;
constexpr double ms(double v) { return v * 1e-3; }

// Analyzes a built trace (invariants checked) and expects it usable.
inline analysis::Analysis analyze_usable(const TraceBuilder& b) {
  analysis::Analysis a = analyze_checked(b.dir());
  EXPECT_TRUE(a.usable()) << (a.errors.empty() ? "" : a.errors[0]);
  return a;
}

// Helpers over an Analysis.
inline const analysis::IntervalNode* find_interval(const analysis::Analysis& a, int id,
                                                   int line = -1, int nth = 0) {
  for (const auto& n : a.intervals)
    if (n.id && *n.id == id && (line < 0 || n.line == line) && nth-- == 0) return &n;
  return nullptr;
}
inline const analysis::RankFigures* rank_of(const analysis::IntervalNode& n, int rank) {
  for (const auto& f : n.per_rank)
    if (f.rank == rank) return &f;
  return nullptr;
}
inline bool has_warning(const analysis::Analysis& a, const std::string& needle) {
  for (const auto& w : a.warnings)
    if (w.category.find(needle) != std::string::npos) return true;
  return false;
}
inline std::string warnings_text(const analysis::Analysis& a) {
  std::string s;
  for (const auto& w : a.warnings) {
    s += w.category + ": " + std::to_string(w.count) + "\n";
    for (const auto& e : w.examples) s += "  " + e + "\n";
  }
  return s;
}

}  // namespace prof::test
