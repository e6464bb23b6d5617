// The window of the run that a report covers (Options::window_from_s,
// window_to_s) and, where the window index serves it, where each rank's
// decoding starts and when it may stop (out-of-line code and the Engine's
// steps that apply it to the ranks: analysis_window.cpp; the engine: engine.h;
// the design: docs/design/window-index.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine_constants.h"
#include "interpret.h"
#include "prof/analysis/analysis.h"
#include "window_index.h"

namespace prof::analysis::detail {

struct Rank;
class ProcessSpread;

// Without a window every bound is infinite and the rest unused. With one,
// [lo, hi] in global ns is measured from the trace's first event; each figure
// counts only what lies inside it. Served by the window index, each rank
// starts at the last checkpoint before the window (plan()), with the sends
// still unreceived there fetched from the senders' earlier chunks; past hi
// the phases grow geometrically from a short step (phase_end()), since only
// what completes a wait begun inside the window is still needed, and decoding
// stops once nothing can change the window any more (done()).
//
// Invariants
//   - lo, hi and from_index are set before the pass (plan(), bound()) and
//     only read during it.
//   - Served by the index, the report is the one a pass from the trace's
//     start gives for the window (tests/analyzer/window_index_test.cpp).
//   - chunks_decoded counts the chunks a served window read: those of the
//     fetched sends, and from each rank's start to the chunk of its first
//     event past the window (reach()), or to its end; events_to_end the
//     events each rank decoded up to there. Neither depends on the workers.
class AnalysisWindow {
 public:
  using Ranks = std::vector<std::unique_ptr<Rank>>;

  // Whether the window index serves the window (Options::windowed()), and
  // from where each rank starts; note() says why not. `job`: the process's
  // part of an MPI job, whose ranks are those `dir.holder` gives it (every
  // process calls plan, and the answer is the same on all).
  void plan(const trace::TraceDir& dir, const Registry& reg, const WorldIndex& w2i, const Options& opt,
            const std::vector<const RankTrace*>& traces, ProcessSpread* job) {
    from_index_ = opt.windowed() && plan_window(dir, reg, w2i, opt, traces, job);
  }
  bool from_index() const { return from_index_; }
  // Served by the index: where rank `i` starts, and its part of the index.
  const WindowCheckpoint& start(size_t i) const { return index_.ranks[i].checkpoints[index_start_[i]]; }
  const RankWindowIndex& rank_index(size_t i) const { return index_.ranks[i]; }
  // Sends made before the senders' starts and not received before the
  // receivers' (to this process's receivers).
  const std::vector<WantedSends>& fetched() const { return fetched_; }
  // Sends a receiver (of this process) received before its start and its
  // sender had not made before the sender's: skipped on the channel.
  struct Skip {
    size_t rank;
    ChannelKey key;
    uint64_t count;
  };
  const std::vector<Skip>& skips() const { return skips_; }
  // Per communicator, the collective calls made before the starts (the
  // most of any member: every member's start has as many).
  const std::map<uint64_t, uint64_t>& collectives_before() const { return before_; }
  // The trace's first event, from the index.
  double first_event() const { return index_first_; }
  // Whether the window's ranks hold fewer than `limit` events from their
  // starts to the window's end (every process calls it in a job).
  bool events_below(uint64_t limit, ProcessSpread* job) const;

  // The window's bounds, from the trace's first event (every rank's sets of
  // instants cut at them).
  void bound(double t_first, const Options& opt, const Ranks& ranks);
  bool windowed() const { return windowed_; }
  double lo() const { return lo_; }
  double hi() const { return hi_; }

  // The end of the next phase, given the one aimed at and the earliest next event.
  double phase_end(double end, double min_next) {
    if (from_index_ && end > hi_) {
      // No rank decodes past the window's end before every rank has reached
      // it, so what each rank decoded up to it is known (reach()).
      if (min_next < hi_stop_) return hi_stop_;
      // Past the window's end only what completes a wait begun inside it is
      // needed: short phases, growing geometrically (a late partner is still
      // reached in a few phases), not a full phase of events.
      end = std::min(end, std::max(hi_, min_next) + tail_step_);
      tail_step_ *= 2;
    }
    return end;
  }
  // The first phase's end (setup), held at the window's end as phase_end holds it.
  double first_end(double end, double min_next) const {
    return from_index_ && end > hi_ && min_next < hi_stop_ ? hi_stop_ : end;
  }
  // Served by the index, at each phase's end with the earliest next event of
  // every rank (of every process): once it is past the window's end, each
  // rank has decoded exactly its events that enter inside or before the
  // window (phase_end held the phases there), so the events and chunks
  // decoded are counted then, the same for every number of workers and
  // processes, whatever more decoding the end needs (done()). The chunks of
  // `ranks` present here (this process's) are added; true when it counted.
  bool reach(double min_next, const Ranks& ranks);
  bool reached() const { return reached_; }
  // A rank's events decoded up to the window's end (reach()).
  uint64_t events_to_end(size_t i) const { return events_to_end_[i]; }
  // Served by the index: nothing past hi can change the window any more.
  bool done(const Ranks& ranks) const;
  // The chunks decoded by other processes (an MPI job: summed at reach()).
  void add_chunks(uint64_t n) { chunks_decoded_ += n; }
  uint64_t chunks_decoded() const { return chunks_decoded_; }

  // The chunks of a rank's trace, counted as its rank is set up.
  void count_chunks(const RankTrace& t) {
    for (size_t s = 0; s < t.stream_count(); ++s) chunks_total_ += t.chunk_count(s);
  }
  // The chunks in the trace and those decoded, and what became of the index.
  void read_stats(MatchStats& stats, const Options& opt) const;

 private:
  bool plan_window(const trace::TraceDir& dir, const Registry& reg, const WorldIndex& w2i, const Options& opt,
                   const std::vector<const RankTrace*>& traces, ProcessSpread* job);
  std::vector<size_t> plan_job(double lo, const std::function<bool(size_t)>& local, ProcessSpread& job) const;

  // The window in global ns (Options::window_*; the whole run without one).
  bool windowed_ = false;
  double lo_ = -kInf, hi_ = kInf;
  double hi_stop_ = kInf;  // the least time after hi_ (a phase ending there decodes every event up to hi_)
  // A window served by the window index: decoding starts at index_start_ and
  // stops once nothing after hi_ can change what lies inside the window.
  bool from_index_ = false;
  double tail_step_ = 1e4;  // ns past hi_ the next phase may decode (doubles)
  WindowIndex index_;
  std::vector<size_t> index_start_;
  std::vector<WantedSends> fetched_;  // sends from before the senders' starts
  std::vector<Skip> skips_;
  std::map<uint64_t, uint64_t> before_;
  std::string index_note_;
  double index_first_ = kInf;  // the trace's first event, from the index
  uint64_t chunks_total_ = 0, chunks_decoded_ = 0;
  bool reached_ = false;                 // reach() counted
  std::vector<uint64_t> events_to_end_;  // by rank index (this process's ranks)
};

}  // namespace prof::analysis::detail
