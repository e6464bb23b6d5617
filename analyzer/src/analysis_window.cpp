// The window of the run a report covers (AnalysisWindow, analysis_window.h),
// and the Engine's steps that apply a window served by the window index to
// the ranks and the owners of collective instances (window_index.h).
#include <map>
#include <thread>

#include "interval_steps.h"

namespace prof::analysis::detail {

// Chooses each rank's start from the index; false (and index_note_ says why)
// when the whole trace must be decoded.
bool AnalysisWindow::plan_window(const trace::TraceDir& dir, const Registry& reg, const WorldIndex& w2i,
                                 const Options& opt, const std::vector<const RankTrace*>& traces) {
  if (!opt.use_window_index) {
    index_note_ = "not used: disabled";
    return false;
  }
  const unsigned hw = opt.worker_threads();
  index_ = load_or_build_window_index(dir, reg, w2i, hw,
                                      IndexWriting{opt.write_window_index, opt.window_index_in_cache}, &index_note_);
  if (!index_.unusable.empty()) {
    index_note_ = "not used: " + index_.unusable + " (" + index_note_ + ")";
    return false;
  }
  index_first_ = kInf;
  for (const RankWindowIndex& r : index_.ranks)
    if (!r.checkpoints.empty()) index_first_ = std::min(index_first_, r.checkpoints.first_enter(0));
  for (const RankWindowIndex& r : index_.ranks)
    if (r.checkpoints.empty()) {
      index_note_ = "not used: a rank has no events (" + index_note_ + ")";
      return false;
    }
  if (!(index_first_ < kInf)) return false;
  index_start_ = index_.plan(index_first_ + opt.window_from_s * 1e9);
  // Sends made before the sender's start and not received before the
  // receiver's: their enters, from the sender's earlier chunks. (Before the
  // ranks' cursors exist: an event a cursor returned stays valid only while
  // no other cursor of its rank runs.)
  for (size_t s = 0; s < traces.size(); ++s) {
    const WindowCheckpoint& cp = index_.ranks[s].checkpoints[index_start_[s]];
    std::vector<WantedSends> wanted;
    for (const auto& [key, sent] : cp.sends) {
      const int d = w2i(key.dst);
      if (d < 0) continue;
      const auto di = static_cast<size_t>(d);
      const uint64_t received = index_.ranks[di].checkpoints[index_start_[di]].recvs_on(key);
      if (sent > received) wanted.push_back(WantedSends{key, received, sent, {}});
    }
    chunks_decoded_ += collect_sends(*traces[s], reg, s, w2i, index_.ranks[s], index_start_[s], wanted);
    for (WantedSends& w : wanted) fetched_.push_back(std::move(w));
  }
  if (index_.malformed()) {
    index_note_ = "not used: a checkpoint does not parse (" + index_note_ + ")";
    chunks_decoded_ = 0;
    fetched_.clear();
    return false;
  }
  return true;
}

// Whether the window's ranks hold fewer than `limit` events from their start
// checkpoints to the window's end, counted in checkpoints (one every
// kCheckpointEvents events or fewer), so the count stops at the limit.
bool AnalysisWindow::events_below(uint64_t limit) const {
  uint64_t events = 0;
  for (size_t i = 0; i < index_.ranks.size(); ++i) {
    const WindowCheckpoints& cps = index_.ranks[i].checkpoints;
    for (size_t k = index_start_[i]; k < cps.size() && cps.first_enter(k) <= hi_; ++k) {
      events += WindowIndex::kCheckpointEvents;
      if (events >= limit) return false;
    }
  }
  return true;
}

// Each rank's state at its start chunk, as the pass from the trace's start
// would have it there.
void Engine::restore_window_state() {
  for (auto& rp : ranks_) {
    Rank& r = *rp;
    const RankWindowIndex& ri = window_.rank_index(r.index);
    const WindowCheckpoint& cp = window_.start(r.index);
    Handler h{*this, r, r.worker, 0};
    r.interp.restore(cp.interp, h);
    r.intervals.restore(cp.tracker);
    for (size_t i = 1; i < ri.nodes.size(); ++i) {
      const WindowNode& n = ri.nodes[i];
      r.nodes.push_back(LocalNode{n.parent, n.id, n.site});
      r.acc.emplace_back();
      r.node_index[NodeKey{n.parent, n.id, n.site}] = static_cast<uint32_t>(i);
    }
    for (size_t i = 0; i < ri.nodes.size(); ++i) {
      r.acc[i].first_enter = ri.nodes[i].first_enter;
      r.acc[i].executed_in_run = ri.nodes[i].executed;
      if (i < cp.executions.size()) r.acc[i].closed = cp.executions[i];
    }
    if (r.intervals.in_root()) r.set_context(-kInf, r.context());
  }
  // Sends made before the sender's start and not received before the
  // receiver's (collected by plan_window): queued first.
  for (const WantedSends& w : window_.fetched()) {
    Channel& ch = ranks_[static_cast<size_t>(index_of_world(w.key.dst))]->channel(w.key);
    for (double enter : w.enters) ch.sends.push(QueuedSend{enter, enter, HoldQueue::kNone, -1, 0});
  }
  // Sends whose receives came before the receiver's start are skipped there.
  for (auto& rp : ranks_) {
    Rank& d = *rp;
    const WindowCheckpoint& cp = window_.start(d.index);
    for (const auto& [key, received] : cp.recvs) {
      const int s = index_of_world(key.src);
      if (s < 0) continue;
      const auto si = static_cast<size_t>(s);
      const uint64_t sent = window_.start(si).sends_on(key);
      if (received > sent) d.channel(key).skip = received - sent;
    }
  }
  // Collective instances before the starts (every member has made the same
  // number of calls there) never come: their owners start past them.
  std::map<uint64_t, uint64_t> before;
  for (const auto& rp : ranks_)
    for (const auto& [gid, n] : window_.start(rp->index).interp.collective_counts)
      before[gid] = std::max(before[gid], n);
  for (const auto& [gid, n] : before) {
    if (n == 0) continue;
    for (unsigned w = 0; w < workers_; ++w) owners_[w].queue(gid).base = n / workers_;
    for (uint64_t seq = n / workers_ * workers_; seq < n; ++seq)
      if (Instance* in = owners_[owner_of(gid, seq)].queue(gid).get(seq / workers_)) in->done = true;
    for (unsigned w = 0; w < workers_; ++w) owners_[w].queue(gid).pop_done();
  }
}

// Past the window, nothing can change it any more once every rank's next
// event starts after it and nothing that started inside it waits for a
// partner (every hold, at a receive's issue or a collective call's enter, is
// after it; what is still in a mailbox belongs to such a hold or to nothing
// inside the window).
bool AnalysisWindow::done(const Ranks& ranks) const {
  for (const auto& r : ranks) {
    if (r->has_ev && !(r->ev_enter > hi_)) return false;
    if (!(r->holds.oldest() > hi_)) return false;
  }
  return true;
}

// Closes what is open at the window's end and drops what waits after it
// (outside the window: it changes nothing inside).
void Engine::cut_at_window_end() {
  for (auto& rp : ranks_) {
    Rank& r = *rp;
    if (r.exhausted_phase < 0) {
      Handler h{*this, r, r.worker, phase_ & 1};
      r.intervals.cut(window_.hi(), h);
      r.exhausted_phase = phase_;
    }
    for (Channel& ch : r.channel_store) {
      while (!ch.recvs.empty()) r.holds.release(ch.recvs.pop().hold);
      while (!ch.sends.empty()) ch.sends.pop();
    }
  }
  for (Owner& own : owners_)
    for (CommQueue& q : own.queues) {
      for (size_t i = 0; i < q.count; ++i) {
        Instance& in = q.at(i);
        own.release_members(in);
        in.done = true;
      }
      q.pop_done();
    }
}

// The window's bounds, from the trace's first event.
void AnalysisWindow::bound(double t_first, const Options& opt, const Ranks& ranks) {
  windowed_ = true;
  lo_ = t_first + opt.window_from_s * 1e9;
  hi_ = t_first + opt.window_to_s * 1e9;
  for (auto& r : ranks) {
    if (!r) continue;  // (another process's rank)
    r->instants.set_window(lo_, hi_);
    r->waits.set_window(lo_, hi_);
  }
}

void AnalysisWindow::cut(const Ranks& ranks) {
  // Chunks decoded: from each rank's start to the one holding its next event.
  for (const auto& r : ranks) {
    const size_t at = r->cursor.current_chunk();
    chunks_decoded_ += at == SIZE_MAX ? r->rank_trace->chunk_count(0) - r->first_chunk : at - r->first_chunk + 1;
  }
  cut_ = true;
}

void AnalysisWindow::read_stats(MatchStats& stats, const Ranks& ranks, const Options& opt) const {
  stats.chunks_total = chunks_total_;
  if (!from_index_) {
    stats.chunks_decoded = chunks_total_;
  } else {
    // (Past the window's end, cut() counted the chunks read.)
    stats.chunks_decoded = chunks_decoded_;
    if (!cut_)
      for (const auto& r : ranks) stats.chunks_decoded += r->rank_trace->chunk_count(0) - r->first_chunk;
  }
  if (opt.windowed()) stats.window_index = index_note_;
}

}  // namespace prof::analysis::detail
