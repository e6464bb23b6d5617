// The engine's workers spread over the processes of an MPI job
// (Options::exchange; out-of-line code in distributed.cpp, the engine in
// engine.h, the design in docs/design/analysis-engine.md, "Several
// processes").
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine_constants.h"
#include "phase_mail.h"
#include "prof/analysis/exchange.h"

namespace prof::analysis::detail {

struct Rank;
struct Registry;

// What the processes add up at a phase's end (a process's own ranks, then,
// exchanged, every process's), so that all take the same decisions.
struct PhaseSums {
  uint64_t events = 0, phase_events = 0;
  double min_next = kInf;
  bool boxes_empty = true;
  // A window served by the index: nothing past its end can change it any
  // more (AnalysisWindow::done), on every process.
  bool window_done = false;
  // The pass failed: in, on this process; out, on any (the first one's message).
  bool failed = false;
  std::string failure;
  bool failure_outside_the_input = false;  // the machine's (a full TMPDIR), not the trace's
};

// Which of the engine's workers this process runs, and what crosses between
// processes. One process (the default) runs every worker; a job of K
// processes is one engine of K * per_proc workers, process p running
// [p * per_proc, (p + 1) * per_proc), so the blocks of ranks, the owners of
// collective instances and the phases are those of one process with that
// many workers. A mailbox between workers of two processes travels in one
// Exchange::all_to_all where the phases' barriers are (exchange_phase,
// exchange_early, exchange_final_results), with the sums and the ranks that
// ran out of events, so every process knows what one process would.
//
// Invariants
//   - Every process calls all_to_all at the same points, the same number of
//     times (the phases are decided from the same exchanged sums everywhere).
//   - A box is read only by its destination worker's process; the sender's
//     copy is cleared when it is packed.
//   - A rank's exhausted phase is sent once, by its own process, at the end
//     of the phase in which the rank ran out of events.
class ProcessSpread {
 public:
  using Ranks = std::vector<std::unique_ptr<Rank>>;
  using Traces = std::vector<std::unique_ptr<RankTrace>>;

  // Process ex->rank() of ex->size() (one of several).
  void join(Exchange* ex) {
    ex_ = ex;
    dist_ = true;
    proc_ = ex_->rank();
    procs_ = ex_->size();
  }
  // Several processes.
  bool spread() const { return dist_; }
  int proc() const { return proc_; }
  int procs() const { return procs_; }
  // `workers` in all, `per_proc` to a process (every one when not spread).
  void assign_workers(unsigned workers, unsigned per_proc) {
    workers_ = workers;
    per_proc_ = per_proc;
    // (A process may have none when there are fewer ranks than workers.)
    local_lo_ = first_worker(proc_);
    local_hi_ = first_worker(proc_ + 1);
  }
  // This process runs workers [local_lo(), local_hi()).
  unsigned local_lo() const { return local_lo_; }
  unsigned local_hi() const { return local_hi_; }
  bool local_worker(unsigned w) const { return w >= local_lo_ && w < local_hi_; }
  unsigned first_worker(int proc) const {
    return std::min<unsigned>(workers_, static_cast<unsigned>(proc) * per_proc_);
  }

  // Each rank's exhausted phase (-1: not yet) as this process knows it:
  // its own ranks' as it notes them, the others' as their processes
  // reported them at a phase's end.
  void track_ranks(size_t ranks) {
    exhausted_all_.assign(ranks, -1);
    exhausted_sent_.assign(ranks, 0);
  }
  void note_exhausted(size_t rank, int phase) { exhausted_all_[rank] = phase; }
  int exhausted(size_t rank) const { return exhausted_all_[rank]; }

  // Several processes: the end's sweep posts every result, none applied at
  // once, so each rank takes them in owner order (exchange_final_results).
  bool final_sweep() const { return final_sweep_; }
  void set_final_sweep(bool on) { final_sweep_ = on; }

  // Exchange::all_to_all, counted (print_stats).
  std::vector<std::string> all_to_all(const std::vector<std::string>& out);
  // `mine` sent to every other process (one all_to_all): what each sent, by
  // process (this process's own entry is `mine`).
  std::vector<std::string> share(const std::string& mine);
  // The other processes' values added up, and the least value of all (one
  // all_to_all each).
  uint64_t sum_of_others(uint64_t mine);
  double min_of_all(double mine);
  // At a phase's end: the boxes of `parity` written here for other
  // processes' workers, `sums` and the ranks that ran out of events; `sums`
  // becomes every process's.
  void exchange_phase(int parity, PhaseSums& sums, PhaseMail& mail, const Traces& traces,
                      const std::vector<unsigned>& worker_of);
  // One all_to_all with every other process: pack(p, out) writes what
  // process p is sent, then unpack(p, in) reads what p sent this one.
  template <class Pack, class Unpack>
  void exchange_with_others(Pack&& pack, Unpack&& unpack);
  // After a phase's first step: the early results (PhaseMail::kEarlyResults).
  void exchange_early(PhaseMail& mail, const Traces& traces);
  // After the last sweep: every result, each box handed to `apply` in owner order.
  template <class Apply>
  void exchange_final_results(PhaseMail& mail, const Traces& traces, Apply&& apply);
  // The registry (interpret.h) as process 0 builds it from every rank's
  // definitions (the others' descriptions hold none: RankTrace::
  // DescriptionFor::kPass). Every process's numbers must be process 0's
  // (the figures gathered at the end carry them), so process 0 sends each
  // process the tables of the ranks it decodes (holder: by rank index);
  // the names, which only the report reads, stay on process 0, and no other
  // process resolves a call site for the analysis.
  void share_registry(Registry& reg, const std::vector<const RankTrace*>& traces, const std::vector<int>& holder);
  // A call in flight at a rank's end waits for the members that had made
  // fewer collective calls (or communicator creations) on its communicator:
  // every process learns every rank's counts (its own ranks' from their
  // state, the others' kept here).
  void exchange_collective_counts(const Ranks& ranks, const Traces& traces, const std::vector<unsigned>& worker_of);
  // Another process's rank index i's counts on communicator gid at its end,
  // as exchange_collective_counts heard them.
  uint64_t remote_collectives_on(size_t i, uint64_t gid) const;
  uint64_t remote_creations_on(size_t i, uint64_t gid) const;
  // The end's gather of the figures to process 0: the rank states each
  // process held during the pass (its block's), the rank files it had
  // opened (trace::RankTrace::files_opened) and the rounds it took.
  void set_rank_states(size_t proc, uint64_t states, uint64_t files_opened) {
    if (rank_states_.size() != static_cast<size_t>(procs_)) {
      rank_states_.assign(static_cast<size_t>(procs_), 0);
      files_opened_.assign(static_cast<size_t>(procs_), 0);
    }
    rank_states_[proc] = states;
    files_opened_[proc] = files_opened;
  }
  void count_gather_round() { ++gather_rounds_; }
  // PROF_ANALYZE_WORKER_STATS: this process's workers and exchanges, to stderr.
  void print_stats() const;

 private:
  Exchange* ex_ = nullptr;
  bool dist_ = false;  // spread over several processes
  int proc_ = 0, procs_ = 1;
  unsigned workers_ = 1, per_proc_ = 1, local_lo_ = 0, local_hi_ = 1;
  // Each rank's exhausted_phase as this process knows it (other processes'
  // ranks: as their processes reported it at a phase's end).
  std::vector<int> exhausted_all_;
  std::vector<uint8_t> exhausted_sent_;
  bool final_sweep_ = false;  // several processes: the end's sweep posts every result
  // This process's all_to_all calls, the bytes it sent and received.
  uint64_t exchanges_ = 0, exchanged_bytes_ = 0, received_bytes_ = 0;
  // Other processes' ranks' counts at their ends, by rank index (only for a
  // trace with calls in flight).
  struct RemoteCommCounts {
    uint64_t gid, collectives, creations;
  };
  std::vector<std::vector<RemoteCommCounts>> remote_counts_;
  const RemoteCommCounts* remote_counts(size_t i, uint64_t gid) const;
  // Rank states each process held during the pass (process 0 learns the
  // others' at the gather), and of the exchanges, the gather's rounds.
  std::vector<uint64_t> rank_states_, files_opened_;
  uint64_t gather_rounds_ = 0;
};

template <class Pack, class Unpack>
void ProcessSpread::exchange_with_others(Pack&& pack, Unpack&& unpack) {
  std::vector<std::string> out(static_cast<size_t>(procs_));
  for (int p = 0; p < procs_; ++p) {
    if (p == proc_) continue;
    WireOut o;
    pack(p, o);
    out[static_cast<size_t>(p)] = std::move(o.buf);
  }
  const std::vector<std::string> in = all_to_all(out);
  for (int p = 0; p < procs_; ++p) {
    if (p == proc_) continue;
    WireIn r(in[static_cast<size_t>(p)]);
    unpack(p, r);
  }
}

// The last sweep posted every result (final_sweep_): each rank takes them in
// owner order, as one process applies them sweeping owner after owner.
template <class Apply>
void ProcessSpread::exchange_final_results(PhaseMail& mail, const Traces& traces, Apply&& apply) {
  for (unsigned w = local_lo_; w < local_hi_; ++w) mail.publish(0, w);
  std::vector<std::string> out(static_cast<size_t>(procs_));
  for (int p = 0; p < procs_; ++p) {
    if (p == proc_) continue;
    WireOut o;
    mail.pack(o, 0, local_lo_, local_hi_, first_worker(p), first_worker(p + 1), true, traces);
    out[static_cast<size_t>(p)] = std::move(o.buf);
  }
  const std::vector<std::string> in = all_to_all(out);
  for (int p = 0; p < procs_; ++p) {
    if (p == proc_) continue;
    WireIn r(in[static_cast<size_t>(p)]);
    mail.unpack(r, 0, first_worker(p), first_worker(p + 1), local_lo_, local_hi_, true, traces);
  }
  for (unsigned d = local_lo_; d < local_hi_; ++d)
    for (unsigned o = 0; o < workers_; ++o) {
      auto& box = mail.result_box(0, o, d);
      apply(box);
      box.clear();
    }
}

}  // namespace prof::analysis::detail
