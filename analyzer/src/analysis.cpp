// The analysis engine's phases: setup, the per-phase decoding of every rank,
// the barrier's bookkeeping, and the public entry points. The algorithm is
// described in engine.h.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>
#ifdef __GLIBC__
#include <dlfcn.h>
#include <malloc.h>
#endif

#include "block_cut.h"
#include "interval_steps.h"
#include "p2p_steps.h"
#include "prof/polite_wait.h"
#include "run_record.h"

namespace prof::analysis {
namespace detail {

// jemalloc's control entry, present where the program links jemalloc
// (prof-analyze does; the GUI does not): weak, so its absence is a null.
extern "C" int mallctl(const char* name, void* old_value, size_t* old_size, void* new_value,
                       size_t new_size) __attribute__((weak));

#ifdef __GLIBC__
// Whether the program's malloc is glibc's. Where another allocator stands in
// front of it (preloaded, or a sanitizer's), glibc's heap has never been
// used: malloc_trim would set it up on the calling thread, and two analyses
// doing so at once on their own threads (the GUI's comparison) race on that
// set-up and crash.
bool glibc_malloc_in_use() {
  static const bool in_use = [] {
    void* libc = ::dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (libc == nullptr) return false;
    const bool same = ::dlsym(libc, "malloc") == ::dlsym(RTLD_DEFAULT, "malloc");
    ::dlclose(libc);
    return same;
  }();
  return in_use;
}
#endif

void give_back_free_heap() {
  if (mallctl) {
    // "arena.4096" is every arena (jemalloc's MALLCTL_ARENAS_ALL).
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
    return;
  }
#ifdef __GLIBC__
  if (glibc_malloc_in_use()) ::malloc_trim(0);
#endif
}

namespace {

// Bad input never throws (it lands in warnings or errors): what does throw
// is mostly the system refusing a file or memory, which is not the input's
// fault.
bool caused_outside_the_input(const std::exception& ex) {
  return dynamic_cast<const std::system_error*>(&ex) != nullptr || dynamic_cast<const std::bad_alloc*>(&ex) != nullptr;
}

// Runs work(w) for workers w in [lo, hi), each on a thread of its own (lo on
// the calling thread), or all on the calling thread where `alone`. Then
// rethrows what the lowest worker that failed threw: the ranks' blocks are
// in rank order, so that is the error a loop over the ranks would have met
// first.
template <class Work>
void on_each_worker(unsigned lo, unsigned hi, bool alone, Work&& work) {
  if (alone || hi - lo <= 1) {
    for (unsigned w = lo; w < hi; ++w) work(w);
    return;
  }
  std::vector<std::exception_ptr> failed(hi - lo);
  auto guarded = [&](unsigned w) {
    try {
      work(w);
    } catch (...) {
      failed[w - lo] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned w = lo + 1; w < hi; ++w) {
    try {
      threads.emplace_back(guarded, w);
    } catch (const std::system_error&) {
      guarded(w);  // (no thread to be had: this one does it)
    }
  }
  guarded(lo);
  for (auto& t : threads) t.join();
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
}

// How well a rank's offset to the global clock is known (docs/metrics.md,
// "Clock offsets"): half the round trip of the exchange that measured it
// (summed along the hierarchy by the shim), the larger of the run's start
// and end, plus how far the offset drifted between the two.
double clock_error_ns(const std::vector<trace::ClockSyncDef>& syncs) {
  double half_rtt = 0;
  const trace::ClockSyncDef* init = nullptr;
  const trace::ClockSyncDef* final = nullptr;
  for (const auto& k : syncs) {
    half_rtt = std::max(half_rtt, k.rtt_ns / 2);
    if (k.phase == "init" && !init) init = &k;
    if (k.phase == "final") final = &k;
  }
  return half_rtt + (init && final ? std::abs(final->offset_ns - init->offset_ns) : 0.0);
}
}  // namespace

// Inlined into the interpreter's call dispatch (its only caller, instantiated
// below in Engine::decode): a call's frame once, not twice. The common call
// (Rank::plain_calls, not MPI_Finalize) tests one flag for the root, the
// window and the threads.
[[gnu::always_inline]] inline bool Handler::call(const Event& e, const FuncInfo& fi, double enter, double leave) {
  if (r.plain_calls && !(fi.role & kRoleFinalize)) [[likely]] {
    r.intervals.plain_call(leave);
    NodeAcc& a = r.acc[r.node(e.stream)];
    const double dur = leave - enter;
    a.mpi_time += dur;
    if (fi.role & kRoleStartsOp) a.start_time += dur;
    count_call(a, e, fi, dur);
    return true;
  }
  return call_not_plain(e, fi, enter, leave);
}

[[gnu::noinline]] bool Handler::call_not_plain(const Event& e, const FuncInfo& fi, double enter, double leave) {
  if (!r.intervals.call(fi, enter, leave, *this)) return false;
  NodeAcc& a = r.acc[r.node(e.stream)];
  // Counted with its part inside the window (all of it without one).
  double from = enter, to = leave;
  if (eng.window_.windowed()) {
    if (leave < eng.window_.lo() || enter > eng.window_.hi()) return true;
    from = std::max(enter, eng.window_.lo());
    to = std::min(leave, eng.window_.hi());
  }
  const double dur = to - from;
  const bool starts = fi.role & kRoleStartsOp;
  if (r.threaded) {
    // Calls of several threads may overlap: the union counts.
    r.instants.add(enter, leave, kMpiCallSpan, kDecodeLane);
    if (starts) r.instants.add(enter, leave, kStartCallSpan, kDecodeLane);
  } else {
    // One thread: calls never overlap, and each lies in one context.
    a.mpi_time += dur;
    if (starts) a.start_time += dur;
  }
  count_call(a, e, fi, dur);
  return true;
}

// A call's counts in its node and the function profile.
[[gnu::always_inline]] inline void Handler::count_call(NodeAcc& a, const Event& e, const FuncInfo& fi, double dur) {
  ++a.calls;
  ++r.calls;
  if (!r.profile_functions) return;
  FuncStat& fs = r.function_stat(a, e, fi);
  ++fs.calls;
  fs.time += dur;
  // (A record of another kind leaves recv_bytes at 0.)
  if (fi.role & kRoleCountsBytes) fs.bytes += e.bytes + e.recv_bytes;
}

void Engine::decode(Rank& r, unsigned w, int parity, int phase, uint64_t cap) {
  if (r.interp.clock().linear) decode_events<true>(r, w, parity, phase, cap);
  else decode_events<false>(r, w, parity, phase, cap);
}

template <bool kLinear>
void Engine::decode_events(Rank& r, unsigned w, int parity, int phase, uint64_t cap) {
  Handler h{*this, r, w, parity};
  r.plain_calls = r.intervals.in_root() && !window_.windowed() && !r.threaded;
  uint64_t n = 0;
  // (In locals: the handler's stores cannot alias them.)
  const double end = win_end_;
  const Interpreter::FixedClock<kLinear> clock{r.interp.clock()};
  bool has_ev = r.has_ev;
  double ev_enter = r.ev_enter;
  // The batch walked by pointer (Rank::advance() at its end only).
  const Event* ev = r.ev;
  const Event* batch_end = r.batch.data() + r.batch.size();
  while (has_ev && ev_enter < end && n < cap) {
    // The events up to the batch's end or the cap, whichever comes first:
    // one pointer compare and the window's end per event.
    const Event* const first = ev;
    const Event* const stop =
        static_cast<uint64_t>(batch_end - ev) > cap - n ? ev + (cap - n) : batch_end;
    do {
      r.interp.process_inline(*ev, ev_enter, clock.global(ev->leave), h);
      if (++ev == stop) break;
      ev_enter = clock.global(ev->enter);
    } while (ev_enter < end);
    n += static_cast<uint64_t>(ev - first);
    if (ev != stop) break;  // the next event enters after the window
    if (ev == batch_end) {
      r.batch_next = r.batch.size();
      has_ev = r.advance();
      ev = r.ev;
      batch_end = r.batch.data() + r.batch.size();
    }
    if (has_ev) ev_enter = clock.global(ev->enter);
  }
  if (has_ev) {
    r.ev = ev;
    r.batch_next = static_cast<size_t>(ev - r.batch.data()) + 1;
  }
  r.has_ev = has_ev;
  r.ev_enter = ev_enter;
  r.events += n;
  r.phase_events = n;
  if (!r.has_ev && r.exhausted_phase < 0) {
    // Open intervals of a rank that did not finalize close at its last moment
    // alive; of one stopped by damage, at its last analyzed event.
    if (r.rank_trace->heartbeat() != 0 && !r.damage.stopped)
      r.intervals.note_alive([&r] { return r.interp.global(r.rank_trace->last_alive()); });
    r.intervals.finish(h);
    r.exhausted_phase = phase;
  }
}

// ---------------------------------------------------------------------------
// Phases

// The first step of a phase: what the other workers posted in the last one.
void Engine::phase_collectives(unsigned w) {
  const int q = (phase_ & 1) ^ 1;
  // A box from another process's worker is freed once read (unpacked from the
  // phase's exchange, it is filled again in one go at the next): its memory
  // would otherwise wait through the phase, when the process holds the most.
  const auto done = [this](auto& box, unsigned src) {
    if (spread_.local_worker(src)) box.clear();
    else box.release();
  };
  // (This phase's writes of its parity start afresh; the boxes of the last
  // phase come from the sources that wrote to w, in their order.)
  mail_.start_phase(q ^ 1, w);
  std::vector<unsigned>& sources = mail_sources_[w];
  mail_.take_sources(q, w, sources);
  for (unsigned o : sources) {
    auto& box = mail_.result_box(q, o, w);
    apply_all(box);
    done(box, o);
  }
  for (unsigned s : sources) {
    auto& box = mail_.send_box(q, s, w);
    ingest_sends(box, w, q ^ 1);
    done(box, s);
    auto& bare = mail_.bare_send_box(q, s, w);
    ingest_sends(bare, w, q ^ 1);
    done(bare, s);
    auto& cancels = mail_.cancel_box(q, s, w);
    cancels.for_each([&](const SendRec& send) { ingest_send(send, true, w, q ^ 1); });
    done(cancels, s);
    auto& lates = mail_.late_box(q, s, w);
    lates.for_each([this](const LateRecvRec& lr) { apply_late_receiver(lr); });
    done(lates, s);
  }
  // Instances completed here give their other workers' members their
  // figures in this phase (PhaseMail::kEarlyResults), before those ranks settle.
  for (unsigned s : sources) {
    auto& box = mail_.coll_box(q, s, w);
    add_members(w, box, PhaseMail::kEarlyResults);
    done(box, s);
  }
  if (sweep_) sweep(w, PhaseMail::kEarlyResults, false);
}

// Then the phase's window of events.
void Engine::phase_decode(unsigned w) {
  const int p = phase_ & 1;
  bool early_taken = workers_ == 1;
  // A rank stops early at the phase's events (at least 1024), so that a
  // burst cannot make a window hold the whole trace: a real trace's density
  // jumps, and a window grown through a quiet stretch took a whole burst.
  // One rank alone at that bound brings the phase to its target, so the
  // window shrinks and no sparse rank runs ahead. Where the phase is sized by the
  // ranks (Options::window_events_per_rank), the window's end, a guess from
  // the last phase's density, overshoots past a sparse stretch (MPI_Init) on
  // every rank at once, by 2x or more, and the spans and contexts waiting for
  // the next sweep (and the buffers grown to hold them) with it. So there a
  // worker decodes at most its ranks' part of the phase: first up to
  // window_events_per_rank a rank (all progress alike, so no rank holds the
  // frontier back), then what some left unused goes, in rank order, to those
  // that stopped at it (a trace whose events are on a few ranks).
  const bool by_ranks = opt_.window_events_per_rank != 0 &&
                        opt_.window_events <= opt_.window_events_per_rank * ranks_.size();
  const uint64_t rank_cap = std::max<uint64_t>(opt_.window_events, 1024);
  const uint64_t share = by_ranks ? opt_.window_events_per_rank : rank_cap;
  uint64_t left = share * worker_ranks_[w].size();
  std::vector<size_t>& stopped = stopped_at_share_[w];  // (places in worker_ranks_[w])
  stopped.clear();
  const std::vector<size_t>& mine = worker_ranks_[w];
  // (PROF_ANALYZE_WORKER_STATS: the stages' wall, a clock read or two a rank's visit.)
  const bool timed = worker_stats_.on();
  WorkerStats* stats = timed ? &worker_stats_.of(w) : nullptr;
  if (timed) stats->rank_decode_ns.resize(mine.size());
  const auto decode_at = [&](size_t k, uint64_t budget) {
    const uint64_t t0 = timed ? monotonic_ns() : 0;
    decode(*ranks_[mine[k]], w, p, phase_, budget);
    if (timed) {
      const uint64_t ns = monotonic_ns() - t0;
      stats->decode_ns += ns;
      stats->rank_decode_ns[k] += ns;
    }
  };
  const auto settle = [&](Rank& r) {
    const uint64_t t0 = timed ? monotonic_ns() : 0;
    take_results(r);
    r.settle_instants(std::min(frontier_, r.holds.oldest()));
    r.cursor.end_visit();
    if (timed) stats->settle_ns += monotonic_ns() - t0;
  };
  for (size_t k = 0; k < mine.size(); ++k) {
    Rank& r = *ranks_[mine[k]];
    decode_at(k, share);
    left -= r.phase_events;
    if (!early_taken) {
      take_early_results(w);
      early_taken = true;
    }
    settle(r);
    if (by_ranks && r.phase_events == share && r.has_ev && r.ev_enter < win_end_) stopped.push_back(k);
  }
  for (size_t k : stopped) {
    if (left == 0) break;
    Rank& r = *ranks_[mine[k]];
    const uint64_t before = r.phase_events;
    decode_at(k, left);
    left -= r.phase_events;
    r.phase_events += before;
    settle(r);
  }
}

void Engine::publish_early(unsigned w) {
  mail_.publish_early(w);
  step_done_[w].phase.store(phase_, std::memory_order_release);
}

// The results the other workers' first steps posted to w's ranks (their own
// ranks' they applied at once).
void Engine::take_early_results(unsigned w) {
  // (Timed: the wait alone. Applying the results is the worker's work.)
  const uint64_t t0 = worker_stats_.timed() ? monotonic_ns() : 0;
  // (Another process's workers' boxes were filled before this phase's
  // decoding: only this process's workers are waited for.)
  // (A few pauses, then a yield a test, never a sleep: the other worker's
  // first step is a fraction of a phase.)
  constexpr PoliteWait kStepWait{64, std::chrono::nanoseconds::max(), {}, {}};
  for (unsigned o = spread_.local_lo(); o < spread_.local_hi(); ++o) {
    if (o == w) continue;
    wait_politely([&] { return step_done_[o].phase.load(std::memory_order_acquire) == phase_; }, kStepWait);
  }
  if (worker_stats_.timed()) worker_stats_.of(w).handover_ns += monotonic_ns() - t0;
  // (In the sources' order, as each came.)
  std::vector<unsigned>& sources = mail_sources_[w];
  mail_.take_sources(PhaseMail::kEarlyResults, w, sources);
  for (unsigned o : sources) {
    auto& box = mail_.result_box(PhaseMail::kEarlyResults, o, w);
    apply_all(box);
    box.clear();
  }
}

// What worker w wrote this phase becomes readable after the barrier.
void Engine::publish(unsigned w) { mail_.publish(phase_ & 1, w); }

void Engine::on_phase_end() {
  const int parity = phase_ & 1;
  ++phase_;
  ++windows_;
  PhaseSums sums;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (!local_rank(i)) continue;
    const Rank& r = *ranks_[i];
    sums.events += r.events;
    sums.phase_events += r.phase_events;
    if (r.has_ev) sums.min_next = std::min(sums.min_next, r.ev_enter);
    spread_.note_exhausted(i, r.exhausted_phase);
  }
  sums.boxes_empty = mail_.empty(parity);
  // (Its ranks' states do not change in the exchange: the mail it brings is
  // read in the next phase.)
  sums.window_done = window_.from_index() && window_.done(ranks_);
  if (opt_.cancelled && !failed_.load() && opt_.cancelled()) {
    failed_ = true;
    failure_ = kCancelled;
  }
  // Other processes' sums, ranks ended, failures and records for this one.
  if (spread_.spread()) {
    sums.failed = failed_.load();
    if (sums.failed) sums.failure = failure_, sums.failure_outside_the_input = failure_outside_the_input_;
    spread_.exchange_phase(parity, sums, mail_, dir_.ranks, worker_of_);
    if (sums.failed) {
      failure_ = sums.failure;
      failure_outside_the_input_ = sums.failure_outside_the_input;
      failed_ = true;
    }
  }
  const uint64_t events = sums.events, phase_events = sums.phase_events;
  const double min_next = sums.min_next;
  bool all_exhausted = true;
  bool changed = false;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (spread_.exhausted(i) < 0) all_exhausted = false;
    if (!gone_[i] && spread_.exhausted(i) >= 0 && spread_.exhausted(i) <= phase_ - 2) {
      gone_[i] = 1;
      ++gone_count_;
      changed = true;
    }
  }
  sweep_ = changed;
  tree_.merge(ranks_);
  if (failed_.load()) {
    done_ = true;
    return;
  }
  // (A window counts what was decoded up to its end once every rank is past it.)
  if (window_.reach(min_next, ranks_) && spread_.spread())
    window_.add_chunks(spread_.sum_of_others(window_.chunks_decoded()));
  if (all_exhausted && gone_count_ == ranks_.size() && !changed && sums.boxes_empty) {
    done_ = true;
  } else if (sums.window_done) {
    cut_at_window_end();
    tree_.merge(ranks_);
    done_ = true;
  }
  // Aim for about window_events events per phase.
  const double target = static_cast<double>(std::max<uint64_t>(opt_.window_events, 1));
  if (phase_events == 0) delta_ *= 4;
  else delta_ *= clamp_to(target / static_cast<double>(phase_events), 0.5, 2.0);
  delta_ = clamp_to(delta_, 1e3, 1e15);
  if (min_next < kInf) {
    const double end = window_.phase_end(min_next + delta_, min_next);
    win_end_ = std::max(win_end_, end);
  }
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

void Engine::fail_at_barrier(const std::exception& ex) noexcept {
  if (spread_.spread()) opt_.exchange->abort_job(std::string("analysis failed: ") + ex.what());
  if (!failed_.exchange(true)) {
    failure_ = ex.what();
    failure_outside_the_input_ = caused_outside_the_input(ex);
  }
  done_ = true;
}

// A rank's state as every rank's starts (its cursor: where decoding starts).
std::unique_ptr<Rank> Engine::new_rank(size_t i, RankTrace::MergedCursor events) const {
  auto r = std::make_unique<Rank>(*dir_.ranks[i], reg_, i, *world_to_index_, std::move(events));
  r->nodes.push_back(LocalNode{kNoParent, kRootId, 0});
  r->acc.emplace_back();
  r->undefined_function = static_cast<uint32_t>(reg_.funcs[i]->size());
  r->worker = worker_of_[i];
  r->track_waits = waits_on_;
  r->profile_functions = opt_.function_profile;
  if (log_spill_) r->delay.spill_to(log_spill_.get(), r->worker);  // (only its worker writes its logs)
  return r;
}

void Engine::map_logs_back() {
  if (!log_spill_ || logs_mapped_) return;
  char* base = log_spill_->map();
  for (auto& r : ranks_)
    if (r) r->delay.map_back(base);
  for (auto& r : gathered_ranks_)
    if (r) r->delay.map_back(base);
  logs_mapped_ = true;
}

const RankOutcomes& Engine::outcomes() {
  outcomes_.assign(ranks_.size(), nullptr);
  for (size_t i = 0; i < ranks_.size(); ++i)
    outcomes_[i] = ranks_[i] ? static_cast<RankOutcome*>(ranks_[i].get()) : gathered_ranks_.at(i).get();
  return outcomes_;
}

void Engine::setup() {
  std::vector<const RankTrace*> traces;
  for (const auto& t : dir_.ranks) traces.push_back(t.get());
  world_to_index_ = std::make_unique<WorldIndex>(traces);
  if (prebuilt_) reg_ = std::move(*prebuilt_);
  else if (spread_.spread() && !dir_.holder.empty()) spread_.share_registry(reg_, traces, dir_.holder);
  else reg_.build(traces);
  t_first_ = kInf;
  t_last_est_ = -kInf;
  bool all_final = true;
  uint64_t bytes = 0;
  const bool held = spread_.spread() && !dir_.holder.empty();
  window_.plan(dir_, reg_, *world_to_index_, opt_, traces, held ? &spread_ : nullptr);
  delay_on_ = opt_.delay_analysis && !opt_.windowed();
  // (The root causes' log takes each wait with its partner.)
  waits_on_ = opt_.wait_states || delay_on_;
  unsigned per_proc = opt_.worker_threads();
  // A short window served by the index: one worker (a process) unless asked
  // for more. Its few phases would cost a second worker more in thread start
  // and barriers than it could share (the report does not depend on the count).
  if (!opt_.threads && window_.from_index() &&
      window_.events_below(kOneWorkerWindowEvents, held ? &spread_ : nullptr))
    per_proc = 1;
  // (No process runs more workers than the trace has ranks: `-j 1000` on a
  // job would start a thousand workers, with their mailboxes, a process.)
  per_proc = static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(per_proc, traces.size())));
  unsigned hw = per_proc;
  if (spread_.spread()) hw *= static_cast<unsigned>(spread_.procs());  // each process runs `per_proc` of them
  // An MPI job whose processes hold their blocks' files alone (TraceDir::holder):
  // process p's workers p * per_proc ... cut its block; one of them may get
  // no rank (a block smaller than per_proc).
  workers_ = held ? hw : static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(hw, traces.size())));
  workers_mask_ = (workers_ & (workers_ - 1)) == 0 ? workers_ - 1 : 0;
  spread_.assign_workers(workers_, spread_.spread() ? per_proc : workers_);
  // (A writer a worker; the pages' size by the whole trace's ranks, which
  // process 0 of an MPI job gathers.)
  if (delay_on_)
    log_spill_ = std::make_unique<LogSpill>(workers_, LogSpill::page_shift_for(traces.size(), DelayLog::kEntryBytes));
  // Contiguous blocks of ranks of about equal event bytes per worker:
  // neighbours talk most in typical codes, and a message between ranks of
  // one worker needs no mailbox.
  worker_ranks_.assign(workers_, {});
  stopped_at_share_.assign(workers_, {});
  mail_sources_.assign(workers_, {});
  const size_t R = traces.size();
  worker_of_.assign(R, 0);
  for (int p = 0; p < (held ? spread_.procs() : 1); ++p) {
    std::vector<size_t> block;
    std::vector<uint64_t> weights;
    for (size_t i = 0; i < R; ++i)
      if (!held || dir_.holder[i] == p) {
        block.push_back(i);
        weights.push_back(traces[i]->event_bytes() + 1);
      }
    const unsigned first = held ? spread_.first_worker(p) : 0;
    const std::vector<unsigned> part = cut_blocks(weights, held ? spread_.first_worker(p + 1) - first : workers_);
    for (size_t k = 0; k < block.size(); ++k) {
      worker_of_[block[k]] = first + part[k];
      worker_ranks_[first + part[k]].push_back(block[k]);
    }
  }
  for (auto& v : worker_ranks_) std::sort(v.begin(), v.end());
  run_span_.emplace(traces);
  local_ranks_ = 0;
  for (size_t i = 0; i < traces.size(); ++i) local_ranks_ += local_rank(i) ? 1 : 0;
  const size_t batch_events = std::clamp<size_t>(kBatchBudgetEvents / std::max<size_t>(local_ranks_, 1),
                                                 kMinBatchEvents, RankTrace::MergedCursor::kBatchEvents);
  // With many ranks, the chunks' pages are not held between phases either;
  // decided by the trace's ranks, so that each process of a job gives back
  // what the plain command would and holds its block's share of it.
  const auto between_visits = traces.size() >= kReleasePagesRanks
                                  ? RankTrace::MergedCursor::BetweenVisits::kLendChunkBuffers
                                  : RankTrace::MergedCursor::BetweenVisits::kKeepFilesMapped;
  // (Another process's rank has no state here, not even its cursor: a
  // process's memory grows with its own block. Process 0 makes the others'
  // at the end, from what their processes send it: gather_at_root.)
  ranks_.resize(traces.size());
  defer_partner_credits_ = traces.size() > kDeferCreditsRanks;
  queue_results_ = defer_partner_credits_ && !opt_.windowed();
  if (queue_results_) queued_results_.resize(traces.size());
  stream_results_ = queue_results_ && opt_.stream_results_ranks != 0 && traces.size() >= opt_.stream_results_ranks;
  // Each worker's ranks are made on a thread of their own (their first
  // batches decoded, their files' first pages faulted in): a tenth of the
  // CPU of an analysis of 4096 ranks was here, on one core.
  on_each_worker(spread_.local_lo(), spread_.local_hi(), local_ranks_ <= kRanksOnCallingThread, [&](unsigned w) {
    for (size_t i : worker_ranks_[w]) {
      const WindowCheckpoint* cp = window_.from_index() ? &window_.start(i) : nullptr;
      const size_t first = cp ? cp->chunk : 0;
      auto r = new_rank(i, !cp            ? traces[i]->events()
                           : cp->at.valid ? traces[i]->events_from_position(cp->at)
                                          : traces[i]->events_from_chunks({first}));
      r->first_chunk = first;
      r->cursor.limit_batch(batch_events);
      // (Below kReleasePagesRanks a rank holds its chunk's pages from visit
      // to visit anyway: an ended file stays mapped until the trace closes,
      // not unmapped on a worker, which interrupts the others.)
      r->cursor.hold_between_visits(between_visits);
      r->slot_memo.assign(Rank::kSlotMemoEntries, Rank::SlotMemo{});
      r->log_delay = delay_on_;
      r->damage.span = &*run_span_;
      r->has_ev = r->advance();
      // As after a visit: its first chunk was read whole, to check its CRC,
      // and would stay resident until the rank's first visit where the
      // cursor lends its buffer; so would its file past the budget.
      r->cursor.end_visit();
      if (r->has_ev) r->ev_enter = r->interp.global(r->ev->enter);
      ranks_[i] = std::move(r);
    }
  });
  for (size_t i = 0; i < traces.size(); ++i) {
    if (ranks_[i] && ranks_[i]->has_ev && !window_.from_index()) t_first_ = std::min(t_first_, ranks_[i]->ev_enter);
    window_.count_chunks(*traces[i]);
    bool final_sync = false;
    for (const auto& k : traces[i]->clock_syncs())
      if (k.phase == "final") {
        final_sync = true;
        t_last_est_ = std::max(t_last_est_, traces[i]->to_global_ns(k.local_ticks));
      }
    all_final = all_final && final_sync;
    if (auto it = traces[i]->meta().find("records_lost");
        it != traces[i]->meta().end() && std::strtoull(it->second.c_str(), nullptr, 10) > 0)
      records_lost_ = true;
    bytes += traces[i]->event_bytes();
  }
  if (!all_final) t_last_est_ = -kInf;
  if (spread_.spread()) {  // the trace's first event, over every process's ranks
    WireOut mine;
    mine.put(t_first_);
    const std::vector<std::string> in =
        spread_.all_to_all(std::vector<std::string>(static_cast<size_t>(spread_.procs()), mine.buf));
    for (const std::string& b : in) t_first_ = std::min(t_first_, WireIn(b).get<double>());
  }
  if (window_.from_index()) t_first_ = window_.first_event();  // (the cursors start near the window)
  if (opt_.windowed() && t_first_ < kInf) window_.bound(t_first_, opt_, ranks_);
  events_est_ = bytes / 20;  // about 20 bytes per record (the shim aims at 16 to 24)
  gone_.assign(ranks_.size(), 0);
  spread_.track_ranks(ranks_.size());
  // Each rank's clock bound (as the report's `clock` states it): a wait
  // shorter than its two ranks' bounds together is uncertain.
  clock_error_.assign(ranks_.size(), 0);
  for (size_t i = 0; i < ranks_.size(); ++i)
    clock_error_[i] = clock_error_ns(traces[i]->clock_syncs());

  mail_.resize(workers_, spread_.local_lo(), spread_.local_hi());
  owners_.resize(workers_);
  step_done_.reset(new StepDone[workers_]);
  if (t_first_ < kInf) win_end_ = t_first_ + delta_;
  if (window_.from_index()) {
    restore_window_state();
    double first_next = kInf;
    for (const auto& r : ranks_)
      if (r && r->has_ev) first_next = std::min(first_next, r->ev_enter);
    if (spread_.spread()) first_next = spread_.min_of_all(first_next);
    if (first_next < kInf) win_end_ = window_.first_end(first_next + delta_, first_next);
  }
  tree_.start();
  tree_.merge(ranks_);
}

const char* const Engine::kCancelled = "analysis cancelled";

// Each worker's ranks are freed on a thread of their own (from the heap their
// worker's thread allocated most of them in): freeing 4096 ranks' states was
// a fiftieth of that analysis's CPU, on one core.
Engine::~Engine() {
  if (spill_closing_.joinable()) spill_closing_.join();
  if (worker_ranks_.size() < spread_.local_hi()) return;  // (setup did not get as far as the blocks)
  on_each_worker(spread_.local_lo(), spread_.local_hi(), local_ranks_ <= kRanksOnCallingThread, [&](unsigned w) {
    for (size_t i : worker_ranks_[w])
      if (i < ranks_.size()) ranks_[i].reset();
  });
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
  // (A window spreads where each process holds its block's rank files: its
  // part of the window index is theirs.)
  if (opt_.exchange && opt_.exchange->size() > 1 && (!opt_.windowed() || !dir_.holder.empty())) {
    spread_.join(opt_.exchange);
  }
  worker_stats_.read_setting();
  const uint64_t t_start = worker_stats_.on() ? monotonic_ns() : 0;
  setup();
  if (opt_.window_events == 0) opt_.window_events = spread_.spread() ? kJobPhaseEvents : kWorkerPhaseEvents * workers_;
  // A phase ends with a collective exchange: each process decodes about as
  // many events a phase as one process alone does, so the phases (and
  // exchanges) are fewer as processes are added (the report does not
  // depend on the phases).
  if (spread_.spread()) opt_.window_events *= static_cast<uint64_t>(spread_.procs());
  // Where the floor sizes the phase, visits twice as long while such a
  // phase stays within kLongVisitPhaseEvents (engine.h says why).
  const uint64_t floor_events = opt_.window_events_per_rank * dir_.ranks.size();
  if (opt_.window_events <= floor_events && 2 * floor_events <= kLongVisitPhaseEvents)
    opt_.window_events_per_rank *= 2;
  opt_.window_events = std::max<uint64_t>(opt_.window_events, opt_.window_events_per_rank * dir_.ranks.size());
  worker_stats_.start(workers_);
  if (worker_stats_.on()) worker_stats_.setup_ns = monotonic_ns() - t_start;

  // This process's threads: one per worker it runs, and one that only keeps
  // step with the others' phases where it runs none.
  const unsigned threads_here = std::max(1u, spread_.local_hi() - spread_.local_lo());
  PhaseBarrier<PhaseEnd> bar(threads_here, PhaseEnd{this});
  PhaseBarrier<EarlyEnd> early_bar(threads_here, EarlyEnd{this});
  auto guarded = [&](auto&& step) {
    if (failed_.load()) return;
    try {
      step();
    } catch (const std::exception& ex) {
      if (!failed_.exchange(true)) {
        failure_ = ex.what();
        failure_outside_the_input_ = caused_outside_the_input(ex);
      }
    }
  };
  WorkerStats idle_stats;
  auto loop = [&](unsigned w) {
    const bool works = spread_.local_worker(w);
    WorkerStats& stats = works ? worker_stats_.of(w) : idle_stats;
    const uint64_t t0 = worker_stats_.on() ? monotonic_ns() : 0, c0 = worker_stats_.on() ? thread_cpu_ns() : 0;
    const bool logs_phases = works && worker_stats_.logs_phases();
    while (!done_) {
      const uint64_t phase_t0 = logs_phases ? monotonic_ns() : 0, phase_c0 = logs_phases ? thread_cpu_ns() : 0;
      const uint64_t handover_before = stats.handover_ns;
      if (works) {
        const uint64_t first_t0 = worker_stats_.on() ? monotonic_ns() : 0;
        guarded([&] { phase_collectives(w); });
        if (worker_stats_.on()) stats.first_steps_ns += monotonic_ns() - first_t0;
      }
      // (Also after a failure: the others wait for it.)
      if (works && workers_ > 1) publish_early(w);
      if (spread_.spread()) early_bar.arrive_and_wait();
      if (works) {
        guarded([&] { phase_decode(w); });
        publish(w);
      }
      if (works && worker_stats_.timed()) {
        uint64_t events = 0;
        for (size_t i : worker_ranks_[w]) events += ranks_[i]->phase_events;
        stats.events += events;
        if (logs_phases)
          stats.phases.push_back(
              {monotonic_ns() - phase_t0, thread_cpu_ns() - phase_c0, events, stats.handover_ns - handover_before});
      }
      worker_stats_.wait_at(bar, stats);
    }
    if (stream_results_) streamed_fence();  // (before the join)
    if (worker_stats_.on()) {
      stats.total_ns = monotonic_ns() - t0;
      stats.total_cpu_ns = thread_cpu_ns() - c0;
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < threads_here; ++t) threads.emplace_back(loop, spread_.local_lo() + t);
  loop(spread_.local_lo());
  for (auto& t : threads) t.join();
  if (worker_stats_.logs_phases())
    worker_stats_.write_phase_log(spread_.local_lo(), spread_.local_hi(), spread_.spread() ? spread_.proc() : -1);
  if (failed_) {
    a.errors.push_back(failure_ == kCancelled ? failure_ : "analysis failed: " + failure_);
    a.failed_outside_the_input = failure_outside_the_input_;
    return a;
  }
  const uint64_t t_finish = worker_stats_.on() ? monotonic_ns() : 0;
  // Anything still waiting can no longer complete: settle it now.
  if (spread_.spread()) {
    spread_.set_final_sweep(true);
    for (unsigned w = spread_.local_lo(); w < spread_.local_hi(); ++w) sweep(w, 0, true);
    spread_.set_final_sweep(false);
    spread_.exchange_final_results(mail_, dir_.ranks, [this](const Mailbox<ResultRec>& box) { apply_all(box); });
  } else {
    for (unsigned w = 0; w < workers_; ++w) sweep(w, 0, true);
  }
  if (stream_results_) streamed_fence();  // (the final sweep's results, for the workers)
  // Each worker's ranks on a thread of their own, as in the pass.
  on_each_worker(spread_.local_lo(), spread_.local_hi(), local_ranks_ <= kRanksOnCallingThread, [&](unsigned w) {
    for (size_t i : worker_ranks_[w]) {
      // (A window counts the events decoded up to its end: the same for every
      // arrangement of workers, AnalysisWindow::reach.)
      if (window_.reached()) ranks_[i]->events = window_.events_to_end(i);
      take_results(*ranks_[i]);
      ranks_[i]->settle_instants(kInf, true);
      ranks_[i]->release_pass_buffers();
      if (queue_results_) queued_results_[i] = {};
    }
  });
  // The buffers just freed (a quarter of the heap at 16384 ranks) would stay
  // with the allocator, and the logs' mapping comes on top of them.
  if (log_spill_) give_back_free_heap();
  if (spread_.spread()) {
    gather_at_root();
    if (spread_.proc() != 0) return a;  // (process 0 reports)
  }
  finish(a);
  if (worker_stats_.on()) {
    worker_stats_.finish_ns = monotonic_ns() - t_finish;
    worker_stats_.print(workers_, windows_, worker_ranks_, spread_);
    if (spread_.spread()) {
      // (Process 0 of a job: every rank's figures, no rank's decoder.)
      size_t decoders = 0, figures_only = 0;
      for (const auto& r : ranks_) decoders += r != nullptr;
      for (const auto& r : gathered_ranks_) figures_only += r != nullptr;
      std::fprintf(stderr, "  rank states at the report: %zu decoders, %zu figures only\n", decoders,
                   figures_only);
    }
  }
  return a;
}

// ---------------------------------------------------------------------------
// The tree and its figures

// The run's figures, once the pass is over.
void Engine::finish(Analysis& a) {
  tree_.merge(ranks_);  // (the last nodes)
  const RankOutcomes& ranks = outcomes();
  collect_warnings_and_stats(a);
  a.waits_known = waits_on_;
  a.functions_known = opt_.function_profile;
  a.processors = static_cast<int>(ranks.size());
  for (const RankOutcome* r : ranks) a.ranks.push_back(r->rank);
  for (const RankOutcome* r : ranks)
    if (auto it = r->rank_trace->meta().find("exe"); it != r->rank_trace->meta().end() && !it->second.empty()) {
      a.executable = it->second;
      break;
    }
  {
    std::vector<const RankTrace*> traces;
    for (const RankOutcome* r : ranks) traces.push_back(r->rank_trace);
    a.run = run_record(traces);
    a.run.world_size = a.world_size;
  }
  for (const RankOutcome* r : ranks)
    if (auto it = r->rank_trace->meta().find("bcast_impl"); it != r->rank_trace->meta().end() && !it->second.empty()) {
      a.bcast_impl = it->second;
      break;
    }
  for (const RankOutcome* r : ranks)
    if (auto it = r->rank_trace->meta().find("bcast_fallbacks"); it != r->rank_trace->meta().end())
      a.bcast_fallbacks = std::max<uint64_t>(a.bcast_fallbacks, std::strtoull(it->second.c_str(), nullptr, 10));
  for (const RankOutcome* r : ranks) {
    const auto& syncs = r->rank_trace->clock_syncs();
    if (syncs.empty()) continue;
    a.clock.known = true;
    const double error_s = clock_error_ns(syncs) * 1e-9;
    a.clock.per_rank.emplace_back(r->rank, error_s);
    a.clock.max_error_s = std::max(a.clock.max_error_s, error_s);
    if (auto it = r->rank_trace->meta().find("sync"); it != r->rank_trace->meta().end() && a.clock.scheme.empty())
      a.clock.scheme = it->second;
  }
  for (RankOutcome* r : ranks) roll_up(*r);
  tree_.order(ranks);
  if (delay_on_) {
    const uint64_t t0 = worker_stats_.on() ? monotonic_ns() : 0;
    map_logs_back();
    delay_.delay_analysis(ranks, tree_, *world_to_index_, log_spill_.get(), spread_.local_hi() - spread_.local_lo());
    const uint64_t t1 = worker_stats_.on() ? monotonic_ns() : 0;
    delay_.critical_path(ranks, tree_, *world_to_index_, log_spill_.get());
    if (worker_stats_.on()) {
      worker_stats_.root_causes_ns = t1 - t0;
      worker_stats_.critical_path_ns = monotonic_ns() - t1;
    }
    // The logs go before the report's figures are built (delay_log.h), and
    // their file with them: on a thread of its own (joined by ~Engine),
    // beside the figures, as freeing the file's page cache at its close took
    // 50 ms at 4096 ranks of 2·10^7 events.
    for (RankOutcome* r : ranks) r->delay = DelayLog{};
    try {
      spill_closing_ = std::thread([spill = std::move(log_spill_)]() mutable { spill.reset(); });
    } catch (const std::system_error&) {
      // (The thread could not start: the lambda, and the file, went here.)
    }
  }
  const SiteInfo root_site = root_call_site(ranks, reg_, a.executable);
  std::vector<int> index_of(tree_.nodes().size(), -1);  // global node -> its place in a.intervals

  // Pre-order walk.
  std::vector<std::pair<uint32_t, int>> pending{{0, -1}};
  while (!pending.empty()) {
    auto [gi, parent] = pending.back();
    pending.pop_back();
    const GNode& gn = tree_.nodes()[gi];
    IntervalNode node = tree_.node_figures(gn, gi == 0 ? root_site : reg_.sites[gn.site], ranks, reg_);
    node.parent = parent;
    node.level = parent < 0 ? 0 : a.intervals[static_cast<size_t>(parent)].level + 1;
    const int index = static_cast<int>(a.intervals.size());
    index_of[gi] = index;
    if (parent >= 0) a.intervals[static_cast<size_t>(parent)].children.push_back(index);
    a.intervals.push_back(std::move(node));
    for (size_t c = gn.children.size(); c-- > 0;) pending.emplace_back(gn.children[c], index);
  }
  if (delay_on_) delay_.delay_figures(a, index_of, tree_);
}

}  // namespace detail

using namespace detail;

// ---------------------------------------------------------------------------

std::string IntervalNode::source_label() const {
  if (!source_file.empty()) return source_file;
  if (!unresolved.empty()) return unresolved;
  return hex(address);
}

unsigned Options::worker_threads() const {
  if (threads) return threads;
  return cores ? cores : std::max(1u, std::thread::hardware_concurrency());
}

bool window_holds_the_run(const trace::TraceDir& dir, const Options& options) {
  if (!options.windowed() || options.window_from_s > 0) return false;
  // First what every process holds of every rank (its file, or what its
  // holder sent), so all answer alike that far: the trace's first event lies
  // before any rank's start synchronization (MPI_Init's record ends before
  // it) and the run's end after every rank's end synchronization (inside
  // MPI_Finalize) and heartbeat where it did not finalize; a window that
  // cannot reach one from the other is told without decoding.
  double first_bound = detail::kInf, last_bound = -detail::kInf;
  for (const auto& t : dir.ranks) {
    if (!t) return false;
    if (t->end_reason() != "finalize" && t->heartbeat() != 0)
      last_bound = std::max(last_bound, t->to_global_ns(t->heartbeat()));
    for (const auto& k : t->clock_syncs()) {
      if (k.phase == "init") first_bound = std::min(first_bound, t->to_global_ns(k.local_ticks));
      if (k.phase == "final") last_bound = std::max(last_bound, t->to_global_ns(k.local_ticks));
    }
  }
  const double reach = options.window_to_s * 1e9;
  if (first_bound < detail::kInf && first_bound + reach < last_bound) return false;
  // Then the trace's first event (the exports' time zero) and the run's end:
  // each rank's last leave (MPI_Finalize's return) or, where it did not
  // finalize, its last moment alive (as the report's run_end has it), each
  // process over its block, met over the job.
  const int me = options.exchange ? options.exchange->rank() : 0;
  std::vector<const trace::RankTrace*> all, mine;
  for (size_t i = 0; i < dir.ranks.size(); ++i) {
    all.push_back(dir.ranks[i].get());
    if (dir.holder.empty() || dir.holder[i] == me) mine.push_back(dir.ranks[i].get());  // (not another process's)
  }
  double first = detail::earliest_event_in_span(mine, detail::RunSpan(all)), last = -detail::kInf;
  for (const trace::RankTrace* rank : mine) {
    const trace::RankTrace& t = *rank;
    if (t.end_reason() != "finalize" && t.heartbeat() != 0) last = std::max(last, t.to_global_ns(t.last_alive()));
    for (size_t s = 0; s < t.stream_count(); ++s)
      for (size_t c = t.chunk_count(s); c-- > 0;)
        if (const trace::ChunkInfo chunk = t.chunk(s, c); chunk.events != 0) {
          last = std::max(last, chunk.last_leave_ns);
          break;
        }
  }
  if (options.exchange && options.exchange->size() > 1) {
    const double mine_values[2] = {first, last};
    const std::string sent(reinterpret_cast<const char*>(mine_values), sizeof mine_values);
    for (const std::string& theirs :
         options.exchange->all_to_all(std::vector<std::string>(static_cast<size_t>(options.exchange->size()), sent))) {
      double values[2] = {detail::kInf, -detail::kInf};
      if (theirs.size() == sizeof values) std::memcpy(values, theirs.data(), sizeof values);
      first = std::min(first, values[0]);
      last = std::max(last, values[1]);
    }
  }
  return first < detail::kInf && first + reach >= last;
}

// A whole analysis also writes the window index where the trace has no usable
// one (WindowIndexJob), unless Options::build_window_index is off: while
// it runs, on threads of idle priority beyond its workers (as many as
// Options::threads allows), and once the result is out, on all it allows. So
// the analysis does not wait for it, and a caller that shows the result from
// on_result does not either.
Analysis analyze(const trace::TraceDir& dir, const Options& given) {
  Options options = given;
  if (!options.window_falls_short && window_holds_the_run(dir, options)) {
    options.window_from_s = -std::numeric_limits<double>::infinity();
    options.window_to_s = std::numeric_limits<double>::infinity();
  }
  Analysis a;
  std::unique_ptr<WindowIndexJob> index;
  const unsigned threads = options.worker_threads();
  try {
    Registry reg;
    // (Not in an MPI job whose processes hold only their blocks' files: the
    // index reads every rank's events.)
    const bool whole = !options.windowed() && options.write_window_index && dir.errors.empty() &&
                       !dir.ranks.empty() && dir.holder.empty();
    if (whole) {
      std::vector<const RankTrace*> traces;
      for (const auto& t : dir.ranks) traces.push_back(t.get());
      reg.build(traces);
      const unsigned workers = static_cast<unsigned>(std::min<size_t>(threads, dir.ranks.size()));
      // (Off, none is begun: a rank's pass costs more than its analysis, so
      // one beside it would not be done by the result, and there it slows the
      // analysis: docs/design/window-index.md.)
      if (options.build_window_index)
        index = WindowIndexJob::start(dir, reg, IndexWriting{true, options.window_index_in_cache}, threads - workers);
    }
    Engine e(dir, options, whole ? &reg : nullptr);
    a = e.run();
  } catch (const std::exception& ex) {
    // Memory that ran out outside the phases (whose failures every process
    // learns with their sums) in a job: the others would wait for this
    // process at their next exchange.
    if (options.exchange && options.exchange->size() > 1 && dynamic_cast<const std::bad_alloc*>(&ex))
      options.exchange->abort_job(std::string("analysis failed: ") + ex.what());
    a = Analysis{};
    a.errors.push_back(std::string("analysis failed: ") + ex.what());
    a.failed_outside_the_input = caused_outside_the_input(ex);
  }
  if (options.on_result) options.on_result(a);
  if (index && a.usable()) {
    try {
      index->finish(threads, options.cancelled);
    } catch (const std::exception&) {
      // (Only an optimization is lost: a window builds the index itself.)
    }
  }
  return a;
}

Analysis analyze(const std::string& trace_dir, const Options& options) {
  trace::TraceDir dir = trace::TraceDir::open(trace_dir);
  return analyze(dir, options);
}

}  // namespace prof::analysis
