// The window of the run a report covers (AnalysisWindow, analysis_window.h),
// and the Engine's steps that apply a window served by the window index to
// the ranks and the owners of collective instances (window_index.h).
#include <cmath>
#include <map>
#include <thread>

#include "interval_steps.h"
#include "wire.h"

namespace prof::analysis::detail {

namespace {

// A channel's sends or receives made before a rank's start (window_index.h).
struct ChannelCount {
  ChannelKey key;
  uint64_t count;
};

uint64_t count_in(const std::map<ChannelKey, uint64_t, ChannelLess>& m, const ChannelKey& k) {
  const auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

}  // namespace

// Chooses each rank's start from the index; false (and index_note_ says why)
// when the whole trace must be decoded. In an MPI job (`job`) each process
// plans its own ranks from its own part of the index, and what the plan
// reads of other ranks (their collective calls, their sends and receives
// before their starts, the first event, whether the index serves them)
// comes from their processes, so every process takes the decisions one
// process takes.
bool AnalysisWindow::plan_window(const trace::TraceDir& dir, const Registry& reg, const WorldIndex& w2i,
                                 const Options& opt, const std::vector<const RankTrace*>& traces,
                                 ProcessSpread* job) {
  if (!opt.use_window_index) {
    index_note_ = "not used: disabled";
    return false;
  }
  const size_t R = traces.size();
  auto local = [&](size_t i) { return !job || dir.holder[i] == job->proc(); };
  auto holder = [&](size_t i) { return job ? static_cast<size_t>(dir.holder[i]) : 0; };
  const unsigned hw = opt.worker_threads();
  const IndexWriting how{opt.write_window_index, opt.window_index_in_cache};
  std::vector<size_t> block;
  bool built = false;  // (in a job: this process's part, to be written)
  std::string why = "absent";
  if (!job) index_ = load_or_build_window_index(dir, reg, w2i, hw, how, &index_note_);
  else {
    // The trace's one index file, when it fits every process's ranks (each
    // checks its own), else each process's part built from its block.
    for (size_t i = 0; i < R; ++i)
      if (local(i)) block.push_back(i);
    const IndexPlaces places = window_index_places(dir);
    const std::string* paths[2] = {&places.beside, &places.cache};
    WindowIndex found[2];
    uint8_t fits[2] = {1, 1};  // (a process holding no rank file objects to none)
    for (int k = 0; k < 2 && !block.empty(); ++k) {
      const std::string w = paths[k]->empty() ? "absent" : read_index_part(*paths[k], dir, reg, block, &found[k]);
      fits[k] = w.empty();
      if (!w.empty() && why == "absent") why = w;
    }
    WireOut mine;
    mine.put(fits[0]);
    mine.put(fits[1]);
    mine.put_str(why);
    why = "absent";  // (the first process's that found something wrong)
    for (const std::string& b : job->share(mine.buf)) {
      WireIn in(b);
      fits[0] = in.get<uint8_t>() && fits[0];
      fits[1] = in.get<uint8_t>() && fits[1];
      std::string its = in.get_str();
      if (why == "absent") why = std::move(its);
    }
    if (fits[0] || fits[1]) {
      const int k = fits[0] ? 0 : 1;
      index_ = std::move(found[k]);
      index_.ranks.resize(R);  // (a process holding no rank file read none)
      index_note_ = "used " + *paths[k];
    } else {
      if (block.empty()) index_.ranks.resize(R);  // (no rank file here: nothing to build)
      else index_ = build_window_index_part(dir, reg, w2i, hw, block);
      built = true;
    }
  }

  // What every process agrees on first: the first rank, in rank order, that
  // the index cannot serve, the trace's first event, a rank without events.
  std::string unusable = index_.unusable;
  size_t unusable_at = unusable.empty() ? SIZE_MAX : index_.unusable_at;
  index_first_ = kInf;
  bool no_events = false;
  for (size_t i = 0; unusable.empty() && i < R; ++i) {
    if (!local(i)) continue;
    const WindowCheckpoints& cps = index_.ranks[i].checkpoints;
    if (cps.empty()) no_events = true;
    else index_first_ = std::min(index_first_, cps.first_enter(0));
  }
  if (job) {
    WireOut mine;
    mine.put<uint64_t>(unusable_at);
    mine.put_str(unusable);
    mine.put(index_first_);
    mine.put<uint8_t>(no_events);
    for (const std::string& b : job->share(mine.buf)) {
      WireIn in(b);
      const auto at = in.get<uint64_t>();
      std::string why = in.get_str();
      if (at < unusable_at) {
        unusable_at = at;
        unusable = std::move(why);
      }
      index_first_ = std::min(index_first_, in.get<double>());
      no_events = in.get<uint8_t>() || no_events;
    }
    // A part built: process 0 writes the file from every process's part.
    if (built && how.write) {
      std::vector<std::string> out(static_cast<size_t>(job->procs()));
      if (job->proc() != 0) out[0] = index_part(dir, index_, block);
      std::vector<std::string> parts = job->all_to_all(out);
      if (job->proc() == 0) {
        parts[0] = index_part(dir, index_, block);
        index_note_ = write_index_parts(dir, parts, unusable, how, why);
      }
    } else if (built) {
      index_note_ = note_built(why, "in memory (writing it is turned off)");
    }
  }
  if (!unusable.empty()) {
    index_note_ = "not used: " + unusable + " (" + index_note_ + ")";
    return false;
  }
  if (no_events) {
    index_note_ = "not used: a rank has no events (" + index_note_ + ")";
    return false;
  }
  if (!(index_first_ < kInf)) return false;
  const double lo = index_first_ + opt.window_from_s * 1e9;
  index_start_ = job ? plan_job(lo, local, *job) : index_.plan(lo);

  // Sends made before the sender's start and not received before the
  // receiver's: their enters, from the sender's earlier chunks, for the
  // receiver's process. (Before the ranks' cursors exist: an event a cursor
  // returned stays valid only while no other cursor of its rank runs.)
  // Each side learns the other's count on the channel at its start.
  std::map<ChannelKey, uint64_t, ChannelLess> sent_before, received_before;
  std::vector<std::vector<ChannelCount>> sends_to(job ? static_cast<size_t>(job->procs()) : 0),
      recvs_to(sends_to.size());
  for (size_t i = 0; i < R; ++i) {
    if (!local(i)) continue;
    const WindowCheckpoint& cp = start(i);
    for (const auto& [key, n] : cp.sends)
      if (const int d = w2i(key.dst); d >= 0) {
        if (local(static_cast<size_t>(d))) sent_before[key] = n;
        else sends_to[holder(static_cast<size_t>(d))].push_back(ChannelCount{key, n});
      }
    for (const auto& [key, n] : cp.recvs)
      if (const int src = w2i(key.src); src >= 0) {
        if (local(static_cast<size_t>(src))) received_before[key] = n;
        else recvs_to[holder(static_cast<size_t>(src))].push_back(ChannelCount{key, n});
      }
  }
  if (job) {
    job->exchange_with_others(
        [&](int p, WireOut& o) {
          o.put_vec(sends_to[static_cast<size_t>(p)]);
          o.put_vec(recvs_to[static_cast<size_t>(p)]);
        },
        [&](int, WireIn& r) {
          for (const ChannelCount& c : r.get_vec<ChannelCount>()) sent_before[c.key] = c.count;
          for (const ChannelCount& c : r.get_vec<ChannelCount>()) received_before[c.key] = c.count;
        });
  }
  std::vector<WireOut> fetched_to(sends_to.size());
  for (size_t s = 0; s < R; ++s) {
    if (!local(s)) continue;
    std::vector<WantedSends> wanted;
    for (const auto& [key, sent] : start(s).sends) {
      if (w2i(key.dst) < 0) continue;
      const uint64_t received = count_in(received_before, key);
      if (sent > received) wanted.push_back(WantedSends{key, received, sent, {}});
    }
    chunks_decoded_ += collect_sends(*traces[s], reg, s, w2i, index_.ranks[s], index_start_[s], wanted);
    for (WantedSends& w : wanted) {
      const auto d = static_cast<size_t>(w2i(w.key.dst));
      if (local(d)) {
        fetched_.push_back(std::move(w));
      } else {
        fetched_to[holder(d)].put(w.key);
        fetched_to[holder(d)].put_vec(w.enters);
      }
    }
  }
  // Sends whose receives came before the receiver's start are skipped there.
  for (size_t d = 0; d < R; ++d) {
    if (!local(d)) continue;
    for (const auto& [key, received] : start(d).recvs) {
      if (w2i(key.src) < 0) continue;
      const uint64_t sent = count_in(sent_before, key);
      if (received > sent) skips_.push_back(Skip{d, key, received - sent});
    }
  }
  // The collective calls made on each communicator before the starts.
  for (size_t i = 0; i < R; ++i)
    if (local(i))
      for (const auto& [gid, n] : start(i).interp.collective_counts) before_[gid] = std::max(before_[gid], n);
  bool malformed = index_.malformed();
  if (job) {
    // The fetched sends to their receivers' processes; the others' counts
    // of collective calls and whether a checkpoint did not parse, to all.
    WireOut common;
    common.put<uint8_t>(malformed);
    common.put<uint64_t>(before_.size());
    for (const auto& [gid, n] : before_) {
      common.put(gid);
      common.put(n);
    }
    job->exchange_with_others(
        [&](int p, WireOut& o) {
          o.buf = common.buf;
          o.buf += fetched_to[static_cast<size_t>(p)].buf;
        },
        [&](int, WireIn& r) {
          malformed = r.get<uint8_t>() || malformed;
          for (auto n = r.get<uint64_t>(); n-- > 0;) {
            const auto gid = r.get<uint64_t>();
            const auto count = r.get<uint64_t>();
            before_[gid] = std::max(before_[gid], count);
          }
          while (!r.done()) {
            WantedSends w;
            w.key = r.get<ChannelKey>();
            w.enters = r.get_vec<double>();
            fetched_.push_back(std::move(w));
          }
        });
  }
  if (malformed) {
    index_note_ = "not used: a checkpoint does not parse (" + index_note_ + ")";
    chunks_decoded_ = 0;
    fetched_.clear();
    skips_.clear();
    before_.clear();
    return false;
  }
  return true;
}

// WindowIndex::plan over the processes of a job: each moves its own ranks'
// starts back, from every process's least count of collective calls per
// communicator at its members' starts, until no process moves one. (Moving
// all at once, not one communicator after another as one process does,
// reaches the same starts: the latest that agree, which each step keeps.)
std::vector<size_t> AnalysisWindow::plan_job(double lo, const std::function<bool(size_t)>& local,
                                             ProcessSpread& job) const {
  const size_t R = index_.ranks.size();
  std::vector<size_t> start(R, 0);
  std::map<uint64_t, std::vector<size_t>> members;
  for (size_t i = 0; i < R; ++i) {
    if (!local(i)) continue;
    start[i] = index_.first_start(i, lo);
    for (uint64_t g : index_.ranks[i].collective_comms) members[g].push_back(i);
  }
  bool moved = true;
  for (int round = 0;; ++round) {
    WireOut mine;
    mine.put<uint8_t>(moved);
    mine.put<uint64_t>(members.size());
    for (const auto& [gid, ms] : members) {
      uint64_t least = UINT64_MAX;
      for (size_t i : ms) least = std::min(least, index_.ranks[i].checkpoints[start[i]].collectives_on(gid));
      mine.put(gid);
      mine.put(least);
    }
    bool any_moved = false;
    std::map<uint64_t, uint64_t> least;
    for (const std::string& b : job.share(mine.buf)) {
      WireIn in(b);
      any_moved = in.get<uint8_t>() || any_moved;
      for (auto n = in.get<uint64_t>(); n-- > 0;) {
        const auto gid = in.get<uint64_t>();
        const auto count = in.get<uint64_t>();
        auto [it, fresh] = least.emplace(gid, count);
        if (!fresh) it->second = std::min(it->second, count);
      }
    }
    if (round > 0 && !any_moved) return start;
    moved = false;
    for (const auto& [gid, ms] : members)
      for (size_t i : ms) moved = index_.move_back(i, gid, least[gid], start) || moved;
  }
}

// Whether the window's ranks hold fewer than `limit` events from their start
// checkpoints to the window's end, counted in checkpoints (one every
// kCheckpointEvents events or fewer), so the count stops at the limit. (In
// a job, over every process's ranks.)
bool AnalysisWindow::events_below(uint64_t limit, ProcessSpread* job) const {
  uint64_t events = 0;
  for (size_t i = 0; i < index_.ranks.size() && events < limit; ++i) {
    const WindowCheckpoints& cps = index_.ranks[i].checkpoints;
    if (index_start_[i] >= cps.size()) continue;  // (another process's rank)
    for (size_t k = index_start_[i]; k < cps.size() && cps.first_enter(k) <= hi_ && events < limit; ++k)
      events += WindowIndex::kCheckpointEvents;
  }
  events = std::min(events, limit);
  if (job) events += job->sum_of_others(events);
  return events < limit;
}

// Each rank's state at its start chunk, as the pass from the trace's start
// would have it there.
void Engine::restore_window_state() {
  for (auto& rp : ranks_) {
    if (!rp) continue;  // (another process's rank)
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
  for (const AnalysisWindow::Skip& s : window_.skips()) ranks_[s.rank]->channel(s.key).skip = s.count;
  // Collective instances before the starts (every member has made the same
  // number of calls there) never come: their owners start past them.
  for (const auto& [gid, n] : window_.collectives_before()) {
    if (n == 0) continue;
    for (unsigned w = 0; w < workers_; ++w) owners_[w].queue(gid).base = n / workers_;
    for (uint64_t seq = n / workers_ * workers_; seq < n; ++seq)
      if (Instance* in = owners_[owner_of(gid, seq)].queue(gid).get(seq / workers_)) in->done = true;
    for (unsigned w = 0; w < workers_; ++w) owners_[w].queue(gid).pop_done();
  }
}

// Past the window, nothing can change it any more once every rank's next
// event starts after it and nothing that started inside it waits for a
// partner (every hold, at a receive's issue, a collective call's enter or a
// send's enter, is after it; what is still in a mailbox belongs to such a hold or to nothing
// inside the window).
bool AnalysisWindow::done(const Ranks& ranks) const {
  for (const auto& r : ranks) {
    if (!r) continue;  // (another process's rank: its process asks)
    if (r->has_ev && !(r->ev_enter > hi_)) return false;
    if (!(r->holds.oldest() > hi_)) return false;
    // (A send's wait for a late receiver comes back from the receiver's worker.)
    if (!(r->send_holds.oldest() > hi_)) return false;
  }
  return true;
}

// Closes what is open at the window's end and drops what waits after it
// (outside the window: it changes nothing inside).
void Engine::cut_at_window_end() {
  for (auto& rp : ranks_) {
    if (!rp) continue;  // (another process's rank)
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
  hi_stop_ = std::nextafter(hi_, kInf);
  for (auto& r : ranks) {
    if (!r) continue;  // (another process's rank)
    r->instants.set_window(lo_, hi_);
    r->waits.set_window(lo_, hi_);
  }
}

bool AnalysisWindow::reach(double min_next, const Ranks& ranks) {
  if (!from_index_ || reached_ || min_next < hi_stop_) return false;
  reached_ = true;
  events_to_end_.assign(ranks.size(), 0);
  // Chunks decoded: from each rank's start to the one holding its next event.
  for (const auto& r : ranks) {
    if (!r) continue;  // (another process's rank)
    events_to_end_[r->index] = r->events;
    const size_t at = r->has_ev ? r->cursor.current_chunk() : SIZE_MAX;
    chunks_decoded_ += at == SIZE_MAX ? r->rank_trace->chunk_count(0) - r->first_chunk : at - r->first_chunk + 1;
  }
  return true;
}

void AnalysisWindow::read_stats(MatchStats& stats, const Options& opt) const {
  stats.chunks_total = chunks_total_;
  stats.chunks_decoded = from_index_ ? chunks_decoded_ : chunks_total_;
  if (opt.windowed()) stats.window_index = index_note_;
}

}  // namespace prof::analysis::detail
