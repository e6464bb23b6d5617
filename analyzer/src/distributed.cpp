// The engine spread over several processes (Options::exchange; the design is
// in docs/design/analysis-engine.md, "Several processes").
//
// Algorithm
//   Process p runs workers [p * per_proc_, (p + 1) * per_proc_) of one engine
//   of procs_ * per_proc_ workers, with the same blocks of ranks, owners of
//   collective instances and phases as one process of that many workers
//   would have. A mailbox between workers of two processes is carried by
//   Exchange::all_to_all where the phases' barriers are:
//     - at a phase's end (exchange_phase): the boxes written in the phase,
//       with each process's sums (events, the earliest next event, whether
//       its boxes are empty, a failure) and the ranks that ran out of
//       events, so every process takes the same decisions for the next phase;
//     - after a phase's first step (exchange_early): the results of the
//       instances completed there, which the single process hands over within
//       the phase (take_early_results);
//     - at the end: the results of the last sweep, applied in owner order
//       (exchange_final_results), then each rank's accumulators, warnings and
//       statistics go to process 0 (gather_at_root), which merges the tree in
//       the order one process merges it and computes every figure as one
//       process does.
//   Each record and each sum therefore meets the same values in the same
//   order as in one process: the report is the same, byte for byte.
//
// Invariants
//   - Every process calls all_to_all at the same points (the phases are
//     decided from the same exchanged sums everywhere).
//   - A box is read only by its destination worker's process; the sender's
//     copy is cleared when it is packed.
// The process's part of the job is ProcessSpread (process_spread.h);
// gather_at_root() and GlobalTree::rebuild() are the engine's and the tree's.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "engine.h"

namespace prof::analysis::detail {

namespace {
struct RankEnded {
  uint32_t rank;
  int32_t phase;
};

void put_strings(WireOut& out, const std::vector<std::string>& v) {
  out.put<uint64_t>(v.size());
  for (const auto& s : v) out.put_str(s);
}
std::vector<std::string> get_strings(WireIn& in) {
  std::vector<std::string> v(in.get<uint64_t>());
  for (auto& s : v) s = in.get_str();
  return v;
}

// A delay log as put_vec writes a vector: its count, then its entries.
template <class T>
void put_log(WireOut& out, const PagedLog<T>& log) {
  out.put<uint64_t>(log.size());
  log.for_each([&out](const T& e) { out.put(e); });
}
template <class T>
void get_log(WireIn& in, PagedLog<T>& log) {
  size_t n;
  const char* at = in.get_array<T>(&n);
  log.release();
  for (size_t i = 0; i < n; ++i) {
    T e;
    std::memcpy(&e, at + i * sizeof(T), sizeof(T));
    log.push_back(e);
  }
}

void put_warnings(WireOut& out, const WarningSink& sink) {
  uint64_t n = 0;
  sink.for_each([&](WarningKind, uint64_t, const auto&, const auto&) { ++n; });
  out.put(n);
  sink.for_each([&](WarningKind kind, uint64_t count, const std::vector<std::string>& examples,
                    const std::vector<WarningSink::Key>& keys) {
    out.put(kind);
    out.put(count);
    put_strings(out, examples);
    out.put_vec(keys);
  });
}
void get_warnings(WireIn& in, WarningSink& sink) {
  sink = WarningSink{};
  for (uint64_t n = in.get<uint64_t>(); n-- > 0;) {
    const auto kind = in.get<WarningKind>();
    const auto count = in.get<uint64_t>();
    auto examples = get_strings(in);
    sink.restore(kind, count, std::move(examples), in.get_vec<WarningSink::Key>());
  }
}

template <class T>
void put_optional(WireOut& out, const std::optional<T>& v) {
  out.put<uint8_t>(v.has_value());
  if (v) out.put(*v);
}
template <class T>
std::optional<T> get_optional(WireIn& in) {
  if (!in.get<uint8_t>()) return std::nullopt;
  return in.get<T>();
}

void put_in_flight(WireOut& out, const std::vector<CallInFlight>& calls) {
  out.put<uint64_t>(calls.size());
  for (const CallInFlight& c : calls) {
    out.put_str(c.function);
    out.put(c.stream);
    out.put(c.entered);
    out.put_str(c.file);
    out.put(c.line);
    out.put_str(c.site_label);
    put_optional(out, c.comm);
    put_optional(out, c.peer);
    put_optional(out, c.tag);
    out.put<uint8_t>(c.any_source);
    out.put<uint8_t>(c.collective);
    out.put_vec(c.waiting_for);
    out.put<uint8_t>(c.waits_for_any);
    out.put(c.instance);
  }
}
std::vector<CallInFlight> get_in_flight(WireIn& in) {
  std::vector<CallInFlight> calls(in.get<uint64_t>());
  for (CallInFlight& c : calls) {
    c.function = in.get_str();
    c.stream = in.get<uint32_t>();
    c.entered = in.get<double>();
    c.file = in.get_str();
    c.line = in.get<int>();
    c.site_label = in.get_str();
    c.comm = get_optional<uint64_t>(in);
    c.peer = get_optional<int>(in);
    c.tag = get_optional<int>(in);
    c.any_source = in.get<uint8_t>();
    c.collective = in.get<uint8_t>();
    c.waiting_for = in.get_vec<int>();
    c.waits_for_any = in.get<uint8_t>();
    c.instance = in.get<uint64_t>();
  }
  return calls;
}
}  // namespace

// A rank's outcome on the wire (gather_at_root), with the waits where they
// were computed (Options::wait_states) and the delay log where it was kept.
void put_outcome(WireOut& out, const RankOutcome& r, bool waits, bool delay) {
  out.put<uint64_t>(r.nodes.size());
  for (size_t li = 0; li < r.nodes.size(); ++li) {
    const LocalNode& n = r.nodes[li];
    out.put(n.parent);
    out.put(n.id);
    out.put(n.site);
    out.put(r.merged_at[li]);
    const NodeAcc& a = r.acc[li];
    out.put(a.in);
    if (waits) {  // (none computed otherwise)
      out.put(a.waits);
      out.put_vec(a.waited_for.list());
    }
    out.put(a.mpi_time);
    out.put(a.start_time);
    out.put(a.calls);
    out.put(a.inside);
    out.put(a.closed);
    out.put(a.t_sum);
    out.put(a.first_enter);
    out.put<uint8_t>(a.executed_in_run);
    out.put_vec(a.funcs);
  }
  out.put<uint64_t>(r.combos.size());
  for (const Combo& c : r.combos) {
    out.put_vec(c.nodes);
    out.put(c.in);
    if (waits) out.put(c.waits);
  }
  out.put_vec(r.slot_name);
  out.put_vec(r.slot_site);
  if (delay) {
    put_log(out, r.delay.contexts);
    put_log(out, r.delay.syncs);
    put_log(out, r.delay.waits);
    out.put<uint64_t>(r.delay.comms.size());
    for (const DelayLog::Comm& c : r.delay.comms) {
      out.put(c.gid);
      // MPI_COMM_WORLD's members by their count alone.
      out.put<uint8_t>(c.members.is_identity());
      if (c.members.is_identity())
        out.put<uint64_t>(c.members.size());
      else
        out.put_vec(c.members.vector());
    }
  }
  for (uint64_t v : {r.events, r.calls, r.matched, r.unmatched_sends, r.unmatched_recvs, r.local_instances})
    out.put(v);
  out.put<uint8_t>(r.damage.stopped);
  out.put<uint8_t>(r.damage.by_time);
  out.put(r.damage.excluded_time);
  out.put(r.damage.events_not_read);
  out.put(r.gathered_unbalanced);
  out.put(r.gathered_last_alive);
  out.put(r.gathered_stats);
  put_strings(out, r.gathered_trace_warnings);
  put_warnings(out, r.warn);
  put_in_flight(out, r.gathered_in_flight);
  put_strings(out, r.gathered_rebuilt);
}

void get_outcome(WireIn& in, RankOutcome& r, bool waits, bool delay) {
  const auto nodes = in.get<uint64_t>();
  r.nodes.assign(nodes, LocalNode{});
  r.acc.assign(nodes, NodeAcc{});
  r.merged_at.assign(nodes, 0);
  for (size_t li = 0; li < nodes; ++li) {
    LocalNode& n = r.nodes[li];
    n.parent = in.get<uint32_t>();
    n.id = in.get<uint32_t>();
    n.site = in.get<uint32_t>();
    r.merged_at[li] = in.get<uint32_t>();
    NodeAcc& a = r.acc[li];
    a.in = in.get<InstantSums>();
    if (waits) {
      a.waits = in.get<WaitSums>();
      a.waited_for.assign(in.get_vec<PartnerWaitAcc>());
    }
    a.mpi_time = in.get<double>();
    a.start_time = in.get<double>();
    a.calls = in.get<uint64_t>();
    a.inside = in.get<uint64_t>();
    a.closed = in.get<uint64_t>();
    a.t_sum = in.get<double>();
    a.first_enter = in.get<double>();
    a.executed_in_run = in.get<uint8_t>();
    a.funcs = in.get_vec<FuncStat>();
  }
  r.combos.assign(in.get<uint64_t>(), Combo{});
  for (Combo& c : r.combos) {
    c.nodes = in.get_vec<uint32_t>();
    c.in = in.get<InstantSums>();
    if (waits) c.waits = in.get<WaitSums>();
  }
  r.slot_name = in.get_vec<uint32_t>();
  r.slot_site = in.get_vec<uint32_t>();
  if (delay) {
    get_log(in, r.delay.contexts);
    get_log(in, r.delay.syncs);
    get_log(in, r.delay.waits);
    r.delay.comms.assign(in.get<uint64_t>(), DelayLog::Comm{});
    for (DelayLog::Comm& c : r.delay.comms) {
      c.gid = in.get<uint64_t>();
      if (in.get<uint8_t>())
        c.members = trace::RankList::identity(in.get<uint64_t>());
      else
        c.members = trace::RankList(in.get_vec<int32_t>());
    }
  }
  for (uint64_t* v : {&r.events, &r.calls, &r.matched, &r.unmatched_sends, &r.unmatched_recvs, &r.local_instances})
    *v = in.get<uint64_t>();
  r.damage.stopped = in.get<uint8_t>();
  r.damage.by_time = in.get<uint8_t>();
  r.damage.excluded_time = in.get<double>();
  r.damage.events_not_read = in.get<uint64_t>();
  r.gathered_unbalanced = in.get<uint64_t>();
  r.gathered_last_alive = in.get<double>();
  r.gathered_stats = in.get<trace::ReadStats>();
  r.gathered_trace_warnings = get_strings(in);
  get_warnings(in, r.warn);
  r.gathered_in_flight = get_in_flight(in);
  r.gathered_rebuilt = get_strings(in);
  r.gathered = true;
}

std::vector<std::string> ProcessSpread::all_to_all(const std::vector<std::string>& out) {
  ++exchanges_;
  for (const std::string& b : out) exchanged_bytes_ += b.size();
  std::vector<std::string> in = ex_->all_to_all(out);
  for (const std::string& b : in) received_bytes_ += b.size();
  return in;
}

std::vector<std::string> ProcessSpread::share(const std::string& mine) {
  std::vector<std::string> out(static_cast<size_t>(procs_), mine);
  out[static_cast<size_t>(proc_)].clear();
  std::vector<std::string> in = all_to_all(out);
  in[static_cast<size_t>(proc_)] = mine;
  return in;
}

uint64_t ProcessSpread::sum_of_others(uint64_t mine) {
  WireOut o;
  o.put(mine);
  uint64_t sum = 0;
  const std::vector<std::string> in = share(o.buf);
  for (int p = 0; p < procs_; ++p)
    if (p != proc_) sum += WireIn(in[static_cast<size_t>(p)]).get<uint64_t>();
  return sum;
}

double ProcessSpread::min_of_all(double mine) {
  WireOut o;
  o.put(mine);
  double least = mine;
  for (const std::string& b : share(o.buf)) least = std::min(least, WireIn(b).get<double>());
  return least;
}

void ProcessSpread::print_stats() const {
  std::fprintf(stderr,
               "  process %d of %d: workers %u-%u, %llu exchanges (%llu gathering the figures), %llu bytes sent, "
               "%llu received\n",
               proc_, procs_, local_lo_, local_hi_ - 1, static_cast<unsigned long long>(exchanges_),
               static_cast<unsigned long long>(gather_rounds_), static_cast<unsigned long long>(exchanged_bytes_),
               static_cast<unsigned long long>(received_bytes_));
  // (Each process's Rank objects: its block's, whatever the trace's size.)
  std::fprintf(stderr, "  rank states during the pass, of %zu ranks:", exhausted_all_.size());
  for (size_t p = 0; p < rank_states_.size(); ++p)
    std::fprintf(stderr, "%s process %zu: %llu", p ? "," : "", p, static_cast<unsigned long long>(rank_states_[p]));
  std::fputc('\n', stderr);
  // (The rank files each process opened: its block's, where it held only them.)
  std::fprintf(stderr, "  rank files opened, of %zu ranks:", exhausted_all_.size());
  for (size_t p = 0; p < files_opened_.size(); ++p)
    std::fprintf(stderr, "%s process %zu: %llu", p ? "," : "", p, static_cast<unsigned long long>(files_opened_[p]));
  std::fputc('\n', stderr);
}

void ProcessSpread::exchange_phase(int parity, PhaseSums& sums, PhaseMail& mail, const Traces& traces,
                                   const std::vector<unsigned>& worker_of) {
  WireOut head;
  head.put(sums.events);
  head.put(sums.phase_events);
  head.put(sums.min_next);
  head.put<uint8_t>(sums.boxes_empty);
  head.put<uint8_t>(sums.window_done);
  const bool failed = sums.failed;
  head.put<uint8_t>(failed ? (sums.failure_outside_the_input ? 2 : 1) : 0);
  head.put_str(failed ? sums.failure : std::string());
  std::vector<RankEnded> ended;
  for (size_t i = 0; i < traces.size(); ++i)
    if (local_worker(worker_of[i]) && exhausted_all_[i] >= 0 && !exhausted_sent_[i]) {
      exhausted_sent_[i] = 1;
      ended.push_back(RankEnded{static_cast<uint32_t>(i), exhausted_all_[i]});
    }
  head.put_vec(ended);
  std::vector<std::string> out(static_cast<size_t>(procs_));
  for (int p = 0; p < procs_; ++p) {
    if (p == proc_) continue;
    WireOut o{head.buf};
    mail.pack(o, parity, local_lo_, local_hi_, first_worker(p), first_worker(p + 1), false, traces);
    out[static_cast<size_t>(p)] = std::move(o.buf);
  }
  std::vector<std::string> in = all_to_all(out);
  std::vector<std::string>().swap(out);  // (sent: a copy of what crossed)
  int first_failed = failed ? proc_ : -1;
  std::string failure = failed ? sums.failure : std::string();
  bool outside = failed && sums.failure_outside_the_input;
  for (int p = 0; p < procs_; ++p) {
    if (p == proc_) continue;
    WireIn r(in[static_cast<size_t>(p)]);
    sums.events += r.get<uint64_t>();
    sums.phase_events += r.get<uint64_t>();
    sums.min_next = std::min(sums.min_next, r.get<double>());
    sums.boxes_empty = r.get<uint8_t>() && sums.boxes_empty;
    sums.window_done = r.get<uint8_t>() && sums.window_done;
    const uint8_t f = r.get<uint8_t>();
    std::string why = r.get_str();
    if (f && (first_failed < 0 || p < first_failed)) {
      first_failed = p;
      failure = std::move(why);
      outside = f == 2;
    }
    for (const RankEnded& e : r.get_vec<RankEnded>()) exhausted_all_[e.rank] = e.phase;
    mail.unpack(r, parity, first_worker(p), first_worker(p + 1), local_lo_, local_hi_, false, traces);
    std::string().swap(in[static_cast<size_t>(p)]);  // (its records are in the boxes now)
  }
  // (The same failure on every process: the first process's that failed.)
  if (first_failed >= 0) {
    sums.failure = failure;
    sums.failed = true;
    sums.failure_outside_the_input = outside;
  }
}

void ProcessSpread::exchange_early(PhaseMail& mail, const Traces& traces) {
  exchange_with_others(
      [&](int p, WireOut& o) {
        mail.pack(o, PhaseMail::kEarlyResults, local_lo_, local_hi_, first_worker(p), first_worker(p + 1), true,
                  traces);
      },
      [&](int p, WireIn& r) {
        mail.unpack(r, PhaseMail::kEarlyResults, first_worker(p), first_worker(p + 1), local_lo_, local_hi_, true,
                    traces);
      });
}

void ProcessSpread::share_registry(Registry& reg, const std::vector<const RankTrace*>& traces,
                                   const std::vector<int>& holder) {
  std::vector<WireOut> to(static_cast<size_t>(procs_));
  if (proc_ == 0) {
    reg.build(traces);
    // The sites' count first: another process keeps their indexes (its ranks'
    // nodes, the window index's) and checks them against it, but only process
    // 0 names them.
    for (size_t p = 1; p < to.size(); ++p) to[p].put<uint64_t>(reg.sites.size());
    std::vector<const std::vector<FuncInfo>*> last_sent(static_cast<size_t>(procs_), nullptr);
    for (size_t i = 0; i < traces.size(); ++i) {
      if (holder[i] == 0) continue;
      WireOut& o = to[static_cast<size_t>(holder[i])];
      o.put<uint32_t>(static_cast<uint32_t>(i));
      // A rank's function table only where it is not the holder's last one
      // (the ranks of one set of definitions share a table: sent once).
      const bool new_table = reg.funcs[i].get() != last_sent[static_cast<size_t>(holder[i])];
      o.put<uint8_t>(new_table);
      if (new_table) {
        last_sent[static_cast<size_t>(holder[i])] = reg.funcs[i].get();
        o.put<uint64_t>(reg.funcs[i]->size());
        for (const FuncInfo& f : *reg.funcs[i]) {
          o.put(f.kind);
          o.put(f.role);
          o.put(f.name);
        }
      }
      o.put<uint64_t>(reg.site_of[i].size());
      reg.site_of[i].for_each([&o](const uint32_t& id, const uint32_t& site) {
        o.put(id);
        o.put(site);
      });
    }
  }
  std::vector<std::string> out(static_cast<size_t>(procs_));
  for (size_t p = 0; p < out.size(); ++p) out[p] = std::move(to[p].buf);
  const std::vector<std::string> in = all_to_all(out);
  if (proc_ == 0) return;
  std::shared_ptr<const std::vector<FuncInfo>> last = std::make_shared<const std::vector<FuncInfo>>();
  reg.funcs.assign(traces.size(), last);
  reg.site_of.assign(traces.size(), {});
  WireIn r(in[0]);
  reg.sites.assign(r.get<uint64_t>(), SiteInfo{});
  while (!r.done()) {
    const auto i = r.get<uint32_t>();
    if (r.get<uint8_t>()) {  // a new table, else the last one again
      auto funcs = std::make_shared<std::vector<FuncInfo>>(r.get<uint64_t>());
      for (FuncInfo& f : *funcs) {
        f.kind = r.get<FuncKind>();
        f.role = r.get<uint16_t>();
        f.name = r.get<uint32_t>();
      }
      last = std::move(funcs);
    }
    reg.funcs.at(i) = last;
    for (auto n = r.get<uint64_t>(); n-- > 0;) {
      const auto id = r.get<uint32_t>();
      reg.site_of[i][id] = r.get<uint32_t>();
    }
  }
}

// A call in flight at a rank's end waits for the members that had made fewer
// collective calls: every process learns every rank's counts (only for a
// trace that has such calls).
void ProcessSpread::exchange_collective_counts(const Ranks& ranks, const Traces& traces,
                                               const std::vector<unsigned>& worker_of) {
  bool any = false;
  for (const auto& t : traces) any = any || !t->in_flight().empty();
  if (!any) return;
  WireOut mine;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!local_worker(worker_of[i])) continue;
    std::vector<RemoteCommCounts> counts;
    ranks[i]->interp.comms().for_each_count(
        [&](uint64_t gid, const CommCallCounts& n) { counts.push_back({gid, n.collectives, n.creations}); });
    mine.put<uint32_t>(static_cast<uint32_t>(i));
    mine.put_vec(counts);
  }
  std::vector<std::string> out(static_cast<size_t>(procs_), mine.buf);
  out[static_cast<size_t>(proc_)].clear();
  const std::vector<std::string> in = all_to_all(out);
  remote_counts_.assign(ranks.size(), {});
  for (int p = 0; p < procs_; ++p) {
    if (p == proc_) continue;
    WireIn r(in[static_cast<size_t>(p)]);
    while (!r.done()) {
      const auto i = r.get<uint32_t>();  // (read first: an assignment's right side is evaluated first)
      remote_counts_.at(i) = r.get_vec<RemoteCommCounts>();
    }
  }
}

const ProcessSpread::RemoteCommCounts* ProcessSpread::remote_counts(size_t i, uint64_t gid) const {
  if (i < remote_counts_.size())
    for (const RemoteCommCounts& c : remote_counts_[i])
      if (c.gid == gid) return &c;
  return nullptr;
}

uint64_t ProcessSpread::remote_collectives_on(size_t i, uint64_t gid) const {
  const RemoteCommCounts* c = remote_counts(i, gid);
  return c ? c->collectives : 0;
}

uint64_t ProcessSpread::remote_creations_on(size_t i, uint64_t gid) const {
  const RemoteCommCounts* c = remote_counts(i, gid);
  return c ? c->creations : 0;
}

uint64_t Engine::collectives_on(size_t i, uint64_t gid) {
  if (ranks_[i]) return ranks_[i]->interp.comms().collectives_on(gid);
  return spread_.remote_collectives_on(i, gid);
}

uint64_t Engine::creations_on(size_t i, uint64_t gid) {
  if (ranks_[i]) return ranks_[i]->interp.comms().creations_on(gid);
  return spread_.remote_creations_on(i, gid);
}

void Engine::gather_at_root() {
  spread_.exchange_collective_counts(ranks_, dir_.ranks, worker_of_);
  tree_.merge(ranks_);
  uint64_t states = 0;
  for (const auto& r : ranks_) states += r != nullptr;
  // What finish() reads of each rank, taken where the rank was decoded.
  if (spread_.proc() == 0) gathered_ranks_.resize(ranks_.size());
  // (Every local rank's calls in flight before any rank's state goes: a
  // call's absent members are read from the counts of its communicator's
  // members, this process's ones among them.)
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (!local_rank(i)) continue;
    Rank& r = *ranks_[i];
    rebuilt_in_flight_.clear();
    r.gathered_in_flight = calls_in_flight(r);
    r.gathered_rebuilt = std::move(rebuilt_in_flight_);
  }
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (!local_rank(i)) continue;
    Rank& r = *ranks_[i];
    settle_channels(r);
    r.gathered_unbalanced = r.intervals.unbalanced();
    r.gathered_last_alive = last_alive(r);
    r.gathered_stats = r.rank_trace->stats();
    r.gathered_trace_warnings = r.rank_trace->warnings();
    r.gathered = true;
    r.release_pass_state();
    if (spread_.proc() == 0) {  // (its outcome alone from here on, as the others' come)
      gathered_ranks_[i] = std::make_unique<RankOutcome>(std::move(static_cast<RankOutcome&>(r)));
      ranks_[i].reset();
    }
  }
  rebuilt_in_flight_.clear();
  // What the pass and the lines above freed goes back to the system first:
  // part of it, in the workers' arenas, the figures received on this thread
  // would not reuse (12-18 MB of process 0's peak at K = 2 on 16384 ranks
  // of 2·10^6 events).
  give_back_free_heap();

  const uint64_t files_opened = trace::RankTrace::files_opened();
  if (spread_.proc() != 0) map_logs_back();  // (process 0's, with those it receives: finish())
  spread_.set_rank_states(static_cast<size_t>(spread_.proc()), states, files_opened);
  // In rounds of about kGatherRoundBytes a process, until every process has
  // sent all its ranks: one message of the whole block would be as large as
  // the block's figures (hundreds of MB at 4096 ranks), on both sides.
  // A process's message starts with where it stands: 0 more rounds to come,
  // 1 its last (the owners' part follows its ranks), 2 sent all before.
  size_t next = 0;  // the next rank to pack
  bool owners_sent = false;
  for (bool first = true;; first = false) {
    spread_.count_gather_round();
    WireOut mine;
    bool last = true;
    if (spread_.proc() != 0) {
      mine.put<uint8_t>(0);
      if (first) {
        mine.put(states);
        mine.put(files_opened);
      }
      for (; next < ranks_.size() && mine.buf.size() < kGatherRoundBytes; ++next) {
        const size_t i = next;
        if (!local_rank(i)) continue;
        mine.put<uint32_t>(static_cast<uint32_t>(i));
        put_outcome(mine, *ranks_[i], waits_on_, delay_on_);
        // (This process needs the rank no more: its state goes as its message
        // grows, so the two do not add up.)
        ranks_[i].reset();
      }
      mine.put<uint32_t>(UINT32_MAX);
      last = next == ranks_.size();
      mine.buf[0] = static_cast<char>(!last ? 0 : owners_sent ? 2 : 1);
      if (last && !owners_sent)  // the owners' part
        for (unsigned w = spread_.local_lo(); w < spread_.local_hi(); ++w) {
          mine.put(owners_[w].instances);
          mine.put(owners_[w].incomplete);
          put_warnings(mine, owners_[w].warn);
        }
      owners_sent = last;
    }
    // To process 0 the ranks; to the others whether this was the last round.
    std::vector<std::string> out(static_cast<size_t>(spread_.procs()), std::string(last ? "" : "m"));
    out[0] = std::move(mine.buf);
    out[static_cast<size_t>(spread_.proc())].clear();
    std::vector<std::string> in = spread_.all_to_all(out);
    bool all_sent = last;
    for (int p = 1; p < spread_.procs(); ++p) {
      const std::string& from = in[static_cast<size_t>(p)];
      if (p != spread_.proc()) all_sent = all_sent && (spread_.proc() == 0 ? from[0] != 0 : from.empty());
    }
    if (spread_.proc() != 0) {
      if (all_sent) return;
      continue;
    }

    for (int p = 1; p < spread_.procs(); ++p) {
      WireIn m(in[static_cast<size_t>(p)]);
      const bool p_last = m.get<uint8_t>() == 1;
      if (first) {
        const auto held = m.get<uint64_t>();
        spread_.set_rank_states(static_cast<size_t>(p), held, m.get<uint64_t>());
      }
      for (uint32_t i = m.get<uint32_t>(); i != UINT32_MAX; i = m.get<uint32_t>()) {
        // (What finish() reads of it, as its process sent it.)
        auto r = std::make_unique<RankOutcome>(*dir_.ranks[i], i);
        if (log_spill_) r->delay.spill_to(log_spill_.get());
        get_outcome(m, *r, waits_on_, delay_on_);
        gathered_ranks_.at(i) = std::move(r);
      }
      if (p_last)
        for (unsigned w = spread_.first_worker(p); w < spread_.first_worker(p + 1); ++w) {
          owners_[w].instances = m.get<uint64_t>();
          owners_[w].incomplete = m.get<uint64_t>();
          get_warnings(m, owners_[w].warn);
        }
      std::string().swap(in[static_cast<size_t>(p)]);  // (read: its figures are in its ranks now)
    }
    if (all_sent) break;
  }
  // Rebuilt objects in rank order, each once (as calls_in_flight lists them
  // rank after rank in one process).
  for (const RankOutcome* r : outcomes())
    for (const std::string& path : r->gathered_rebuilt)
      if (std::find(rebuilt_in_flight_.begin(), rebuilt_in_flight_.end(), path) == rebuilt_in_flight_.end())
        rebuilt_in_flight_.push_back(path);
  tree_.rebuild(outcomes_);
}

// The tree across ranks as one process merges it: node by node in the order
// of (GlobalTree::merge() call, rank, local node), so each node's members (and the
// sums over them) come in the same order.
void GlobalTree::rebuild(const Outcomes& ranks) {
  struct Item {
    uint32_t at, rank, li;
  };
  std::vector<Item> items;
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankOutcome& r = *ranks[i];
    r.gmap.clear();
    for (size_t li = 0; li < r.nodes.size(); ++li)
      items.push_back(Item{r.merged_at[li], static_cast<uint32_t>(i), static_cast<uint32_t>(li)});
  }
  std::sort(items.begin(), items.end(), [](const Item& x, const Item& y) {
    if (x.at != y.at) return x.at < y.at;
    if (x.rank != y.rank) return x.rank < y.rank;
    return x.li < y.li;
  });
  nodes_.clear();
  index_.clear();
  nodes_.push_back(GNode{kNoParent, kRootId, 0, {}, {}, kInf});
  for (const Item& it : items) {
    join(*ranks[it.rank], it.li);
  }
}

}  // namespace prof::analysis::detail
