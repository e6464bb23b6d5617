// Problems of the run: unmatched messages, trace damage, ranks cut short,
// and the statistics that go with them.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "engine.h"
#include "prof/function_roles.h"

namespace prof::analysis::detail {

// The trace's end reason as the report says it: "signal:15" is "signal
// SIGTERM"; no reason at all means the process died without a word (SIGKILL).
std::string ended_by(const std::string& reason) {
  if (reason.empty()) return "killed";
  if (reason == "exit") return "exit without finalize";
  if (reason.rfind("signal:", 0) == 0) {
    const int sig = std::atoi(reason.c_str() + 7);
    const char* name = sig > 0 ? sigabbrev_np(sig) : nullptr;
    return name ? std::string("signal SIG") + name : "signal " + reason.substr(7);
  }
  return reason;
}

// Ranks (or places) in ascending order, each once.
template <class T>
void sort_unique(std::vector<T>& ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
}

// The calls rank `r` was inside when it ended, with what each waits for
// (docs/interfaces.md, `run_end.in_flight`).
std::vector<CallInFlight> Engine::calls_in_flight(Rank& r) {
  std::vector<CallInFlight> out;
  const RankTrace& rank_trace = *r.rank_trace;
  for (const trace::InFlightCall& c : rank_trace.in_flight()) {
    CallInFlight f;
    const trace::FunctionDef* def = rank_trace.function(c.func);
    f.function = def ? def->name : "MPI function " + std::to_string(c.func);
    f.stream = c.stream;
    f.entered = (r.interp.global(c.enter) - t_first_) * 1e-9;
    const SiteInfo site = resolve_code_address(rank_trace, c.site);
    f.file = site.file;
    f.line = site.line;
    f.site_label = site.label;
    if (!site.rebuilt_object.empty() &&
        std::find(rebuilt_in_flight_.begin(), rebuilt_in_flight_.end(), site.rebuilt_object) ==
            rebuilt_in_flight_.end())
      rebuilt_in_flight_.push_back(site.rebuilt_object);
    std::vector<int> waits;
    // Every member of a communicator but this rank (MPI_ANY_SOURCE).
    auto all_members = [&](const CommInfo& ci) {
      for (int32_t w : ci.def->inter ? ci.def->remote_ranks : ci.def->ranks)
        if (w != r.rank) waits.push_back(w);
    };
    // A point-to-point peer: its world rank, or every member for ANY_SOURCE.
    auto p2p_peer = [&](const CommInfo* ci, int32_t peer) {
      if (!ci) return;
      if (peer == format::kAnySourceRank) {
        f.any_source = true;
        all_members(*ci);
        return;
      }
      const int32_t w = CommCache::peer_world(*ci, peer);
      if (w >= 0) waits.push_back(w);
    };
    // The members of `comm` (both groups of an intercommunicator) that had
    // made fewer than n collectives on it (or creations over it): they had
    // not entered this rank's n-th.
    auto absent_members = [&](const CommInfo& comm, uint64_t n, bool creations = false) {
      auto [at, found_now] = absent_members_.try_emplace({comm.gid, creations, n});
      std::vector<int32_t>& absent = at->second;
      if (found_now) {
        auto add = [&](const trace::RankList& group) {
          for (int32_t w : group) {
            const int idx = index_of_world(w);
            if (idx < 0) continue;  // not in the trace: unknown
            const size_t i = static_cast<size_t>(idx);
            if ((creations ? creations_on(i, comm.gid) : collectives_on(i, comm.gid)) < n) absent.push_back(w);
          }
        };
        add(comm.def->ranks);
        if (comm.def->inter) add(comm.def->remote_ranks);
      }
      for (int32_t w : absent)
        if (w != r.rank) waits.push_back(w);
    };
    const CommInfo* ci = nullptr;
    bool subset_unknown = false;
    switch (c.kind) {
      case FuncKind::Send:
      case FuncKind::Recv:
      case FuncKind::Probe: {
        ci = r.interp.comms().find(c.comm, c.enter);
        if (ci) f.comm = reported_comm_id(ci->gid);
        f.tag = c.tag;
        if (ci && c.peer >= 0) f.peer = CommCache::peer_world(*ci, c.peer);
        p2p_peer(ci, c.peer);
        break;
      }
      case FuncKind::SendRecv: {
        ci = r.interp.comms().find(c.comm, c.enter);
        if (ci) f.comm = reported_comm_id(ci->gid);
        if (ci && c.peer >= 0) f.peer = CommCache::peer_world(*ci, c.peer);
        p2p_peer(ci, c.peer);
        p2p_peer(ci, c.tag);  // the source it receives from
        break;
      }
      case FuncKind::Collective:
      case FuncKind::AllToAll: {
        f.collective = true;
        ci = r.interp.comms().find(c.comm, c.enter);
        if (!ci) break;
        f.comm = reported_comm_id(ci->gid);
        if (c.peer >= 0) f.peer = CommCache::peer_world(*ci, c.peer);
        // This instance is the rank's n-th collective on the communicator
        // (counted, the one in flight included); a member that made fewer
        // had not entered it.
        f.instance = r.interp.comms().collectives_on(ci->gid);
        absent_members(*ci, f.instance);
        break;
      }
      case FuncKind::CommCreate: {
        // Collective over the parent (MPI_Comm_split, _dup, ...): it waits for
        // the members that had not entered this creation. (MPI_Comm_create_group
        // waits for members of a group the trace does not record.)
        if (!def || !(format::function_role(def->name) & format::kRoleCreatesOverParent)) break;
        ci = r.interp.comms().find(c.comm, c.enter);
        if (!ci) break;
        f.collective = true;
        f.comm = reported_comm_id(ci->gid);
        f.instance = r.interp.comms().creations_on(ci->gid);
        absent_members(*ci, f.instance, true);
        break;
      }
      case FuncKind::Completion: {
        // A Wait on one request waits for its peer; a Waitall (any, some) for
        // the peers of every request still active on the rank. A nonblocking
        // collective's request waits for the members that had not entered its
        // instance (a persistent one only once started).
        const bool one = c.tag == 1;
        size_t active = 0;
        r.interp.for_each_active_request([&](uint32_t handle, const Request& q) {
          if (one && handle != c.extra) return;
          ++active;
          if (!q.comm) return;
          switch (q.type) {
            case Request::Recv: case Request::PRecv:
            case Request::Send: case Request::PSend:
              p2p_peer(q.comm, q.peer);
              break;
            case Request::Coll:
              absent_members(*q.comm, q.instance);
              break;
            case Request::PColl:
              if (q.started) absent_members(*q.comm, q.instance);
              break;
          }
        });
        // Given fewer requests than the rank has active, it waits for some of
        // them, which the trace does not name (the slot holds the first
        // handle only): as far as the deadlock search goes, for any one, so
        // that no rank is said deadlocked that a partner of one of them
        // could have released.
        subset_unknown = !one && c.tag >= 0 && active > static_cast<size_t>(c.tag);
        break;
      }
      default:
        break;
    }
    sort_unique(waits);
    f.waiting_for = std::move(waits);
    f.waits_for_any = f.any_source || subset_unknown ||
                      (c.kind == FuncKind::Completion && def &&
                       (format::function_role(def->name) & format::kRoleCompletesAny));
    out.push_back(std::move(f));
  }
  return out;
}

// A rank inside MPI_Finalize (the shim's closing clock sync, MPICH's own
// finalization) waits for every rank of the run that had not reached it:
// those that ended otherwise, and those still inside other calls.
void finalize_waits(std::vector<RankEnd>& ends) {
  auto in_finalize = [](const CallInFlight& c) { return format::function_role(c.function) & format::kRoleFinalize; };
  std::vector<int> not_there;
  for (const RankEnd& e : ends)
    if (e.ended_by != "finalize" && std::none_of(e.in_flight.begin(), e.in_flight.end(), in_finalize))
      not_there.push_back(e.rank);
  for (RankEnd& e : ends)
    for (CallInFlight& c : e.in_flight)
      if (in_finalize(c)) {
        c.waiting_for.clear();
        for (int w : not_there)
          if (w != e.rank) c.waiting_for.push_back(w);
      }
}

// Members of one collective instance inside different functions (rank 0 in
// MPI_Barrier, rank 1 in MPI_Allreduce, each its communicator's n-th; or
// MPI_Comm_dup and MPI_Comm_split, each its n-th creation over it): an
// erroneous program, where each waits for the others, which the counts
// alone take as present. (Grouped by instance: in a hung job of many ranks
// most are inside one, and only a group of several functions costs more
// than its size.)
void mismatched_collective_waits(std::vector<RankEnd>& ends) {
  struct Member {
    int rank;
    CallInFlight* call;
  };
  // (comm, a creation's count or the collectives', instance)
  std::map<std::tuple<uint64_t, bool, uint64_t>, std::vector<Member>> instances;
  for (RankEnd& e : ends)
    for (CallInFlight& c : e.in_flight)
      if (c.collective && c.comm && c.instance != 0) {
        const bool creation = format::function_role(c.function) & format::kRoleCreatesOverParent;
        instances[{*c.comm, creation, c.instance}].push_back({e.rank, &c});
      }
  for (auto& [instance, members] : instances) {
    const std::string& first = members.front().call->function;
    if (std::all_of(members.begin(), members.end(), [&](const Member& m) { return m.call->function == first; }))
      continue;
    for (Member& m : members) {
      std::vector<int>& waits = m.call->waiting_for;
      for (const Member& o : members)
        if (o.rank != m.rank && o.call->function != m.call->function) waits.push_back(o.rank);
      sort_unique(waits);
    }
  }
}

// The ranks that no rank of the run could ever release: those inside calls
// whose waits cannot end. A rank that could have gone on and released
// others: one outside MPI when it was stopped from outside (computing, then
// killed, as a hung job is), one inside a call that waits for nobody the
// trace names (as far as the trace tells), one the trace does not hold. A
// rank that finished (MPI_Finalize, exit, MPI_Abort) or died of its own
// fault releases nobody. The others are released, in turn, once all the
// ranks they wait for are (any one, for MPI_ANY_SOURCE, Waitany and
// Waitsome); what stays unreleased is deadlocked (an AND-OR wait-for graph).
// Released ranks go through a work list, each call counting the ranks it
// still needs: time linear in the waits, however long the chains of release.
std::set<int> deadlocked_ranks(const std::vector<RankEnd>& ends) {
  std::map<int, size_t> index_of;  // world rank -> place in `ends`
  for (size_t i = 0; i < ends.size(); ++i) index_of[ends[i].rank] = i;
  std::vector<char> waiting(ends.size()), released(ends.size());
  std::vector<size_t> work;  // places released, their dependents not yet told
  // Each call of a blocked rank: its rank's place and how many more of its
  // ranks must be released before it is.
  struct Need {
    size_t end;
    size_t left;
  };
  std::vector<Need> needs;
  std::vector<std::vector<size_t>> needed_by(ends.size());  // place -> needs that wait for it
  const auto release = [&](size_t i) {
    if (released[i]) return;
    released[i] = 1;
    work.push_back(i);
  };
  for (size_t i = 0; i < ends.size(); ++i) {
    const RankEnd& e = ends[i];
    const bool blocked = !e.in_flight.empty() &&
                         std::all_of(e.in_flight.begin(), e.in_flight.end(),
                                     [](const CallInFlight& c) { return !c.waiting_for.empty(); });
    // (Ended from outside, as a hung job is: killed, or a signal that is no
    // fault of its own; a fault or SIGABRT ends the rank itself.)
    const bool stopped_from_outside = e.ended_by == "killed" || e.ended_by == "signal SIGTERM" ||
                                      e.ended_by == "signal SIGINT" || e.ended_by == "signal SIGQUIT";
    const bool finished = e.in_flight.empty() && !stopped_from_outside;
    if (!blocked) {
      if (!finished) release(i);
      continue;
    }
    waiting[i] = 1;
    for (const CallInFlight& c : e.in_flight) {
      std::vector<int> ranks = c.waiting_for;
      sort_unique(ranks);
      size_t left = c.waits_for_any ? 1 : ranks.size();
      const size_t need = needs.size();
      for (int w : ranks) {
        const auto it = index_of.find(w);
        if (it == index_of.end()) left -= left > 0;  // (not in the trace: it might have gone on)
        else needed_by[it->second].push_back(need);
      }
      needs.push_back({i, left});
      if (left == 0) release(i);  // (threads: the rank goes on when any of its calls does)
    }
  }
  while (!work.empty()) {
    const size_t w = work.back();
    work.pop_back();
    for (size_t need : needed_by[w]) {
      Need& n = needs[need];
      if (n.left > 0 && --n.left == 0) release(n.end);
    }
  }
  std::set<int> stuck;
  for (size_t i = 0; i < ends.size(); ++i)
    if (waiting[i] && !released[i]) stuck.insert(ends[i].rank);
  return stuck;
}

// Each elementary cycle of the wait-for graph among the deadlocked ranks
// once, from its smallest rank (a depth-first search from each rank over
// larger ranks only). Capped twice: at kMaxCycles cycles, since MPI_ANY_SOURCE
// waits make them many, and at kMaxSteps edges followed, since a graph of
// many paths that lead to no cycle (ranks waiting, layer after layer, for
// several of the next) takes a search exponential in its depth. Each step
// costs O(1) (the path's ranks are flagged), so a ring of 16384 ranks takes
// milliseconds.
std::vector<std::vector<int>> wait_cycles(const std::vector<RankEnd>& ends) {
  constexpr size_t kMaxCycles = 64;
  constexpr uint64_t kMaxSteps = uint64_t{1} << 22;
  const std::set<int> stuck = deadlocked_ranks(ends);
  // The deadlocked ranks, ascending, as places 0..n-1 (so "a larger rank" is
  // "a later place"), and each one's edges as places.
  const std::vector<int> ranks(stuck.begin(), stuck.end());
  auto place_of = [&](int rank) {
    return static_cast<size_t>(std::lower_bound(ranks.begin(), ranks.end(), rank) - ranks.begin());
  };
  std::vector<std::vector<size_t>> edges(ranks.size());
  for (const RankEnd& e : ends)
    if (stuck.count(e.rank))
      for (const CallInFlight& c : e.in_flight)
        for (int w : c.waiting_for)
          if (stuck.count(w)) edges[place_of(e.rank)].push_back(place_of(w));
  for (std::vector<size_t>& to : edges) sort_unique(to);
  std::vector<std::vector<int>> cycles;
  // The search's path: each place on it with the next of its edges to follow
  // (a stack, not recursion: a path may hold every rank).
  std::vector<std::pair<size_t, size_t>> path;
  std::vector<char> on_path(ranks.size());
  uint64_t steps = 0;
  for (size_t start = 0; start < ranks.size(); ++start) {
    path.assign(1, {start, 0});
    on_path[start] = 1;
    while (!path.empty() && cycles.size() < kMaxCycles && steps < kMaxSteps) {
      auto& [at, edge] = path.back();
      if (edge == edges[at].size()) {
        on_path[at] = 0;
        path.pop_back();
        continue;
      }
      const size_t next = edges[at][edge++];
      ++steps;
      if (next == start) {
        std::vector<int>& cycle = cycles.emplace_back();
        for (const auto& step : path) cycle.push_back(ranks[step.first]);
      } else if (next > start && !on_path[next]) {
        on_path[next] = 1;
        path.emplace_back(next, 0);
      }
    }
    if (cycles.size() >= kMaxCycles || steps >= kMaxSteps) break;
  }
  return cycles;
}

void Engine::read_warnings(Analysis& a, std::map<std::string, Warning>& warns) {
  auto add = [&](WarningKind kind, uint64_t n, const std::string& example) {
    const std::string cat(category_of(kind));
    Warning& w = warns[cat];
    w.category = cat;
    w.count += n;
    if (w.examples.size() < 10 && !example.empty()) w.examples.push_back(example);
  };
  for (const auto& w : dir_.warnings) {
    add(WarningKind::RankFilesSkipped, 1, w);
    a.damaged = true;
  }
  // (Not damage: the trace is whole, but those call sites are shown as
  // object+offset rather than with another build's lines.)
  std::vector<std::string> rebuilt = reg_.rebuilt_objects;
  for (const std::string& path : rebuilt_in_flight_)
    if (std::find(rebuilt.begin(), rebuilt.end(), path) == rebuilt.end()) rebuilt.push_back(path);
  for (const std::string& path : rebuilt)
    add(WarningKind::BinariesRebuilt, 1, path);
  for (const RankOutcome* r : outcomes_) {
    const RankTrace& rank_trace = *r->rank_trace;
    // (Decoded by another process: what its reader counted there.)
    const trace::ReadStats& s = r->gathered ? r->gathered_stats : rank_trace.stats();
    if (s.damage()) a.damaged = true;
    for (const auto& w : r->gathered ? r->gathered_trace_warnings : rank_trace.warnings()) add(WarningKind::TraceFileProblems, 1, w);
    if (s.unsealed_chunks) a.cut_short = true;
    const std::string& end = rank_trace.end_reason();
    if (end != "finalize") {
      a.cut_short = true;
      add(WarningKind::TracesCutShort, 1,
          rank_trace.path() + ": recording ended " +
              (end.empty() ? std::string("without a word (killed, e.g. SIGKILL)") : "by " + end));
    }
    // What the shim could not store (a full disk, a failed write) is missing
    // from the trace: the figures undercount, so the input is damaged.
    for (const char* key : {"records_lost", "definitions_lost"})
      if (auto it = rank_trace.meta().find(key); it != rank_trace.meta().end()) {
        const uint64_t n = std::strtoull(it->second.c_str(), nullptr, 10);
        if (n == 0) continue;
        a.damaged = true;
        const bool records = key[0] == 'r';
        add(records ? WarningKind::RecordsLost : WarningKind::DefinitionsLost, n, rank_trace.path() + ": " + it->second + (records ? " records" : " definitions"));
      }
    if (r->damage.stopped) {
      // Calls after lost data cannot be matched with those before it (the
      // k-th collective, the k-th message of a channel), and a time outside
      // the run is no figure: the rank ends at its last good event.
      a.damaged = true;
      add(WarningKind::EventsNotAnalyzed, r->damage.events_not_read,
          r->damage.describe(rank_trace.path(), t_first_));
    }
    if (s.backwards_timestamps)
      add(WarningKind::TimestampsBackwards, s.backwards_timestamps,
          rank_trace.path() + ": " + std::to_string(s.backwards_timestamps) + " records");
  }
}

// Messages never matched become warnings; per-rank and per-owner counts
// become the run's statistics.
// A rank's messages never matched: its warnings and counts.
void Engine::settle_channels(Rank& r) {
    r.channels.for_each([&](const ChannelKey& k, uint32_t& idx) {
      const Channel& ch = r.channel_store[idx - 1];
      if (!ch.sends.empty()) {
        r.unmatched_sends += ch.sends.size();
        r.warn.add(
            WarningKind::SendsNeverReceived,
            [&] {
              return std::to_string(ch.sends.size()) + " on rank " + std::to_string(k.src) +
                     " -> rank " + std::to_string(k.dst) + ", tag " + std::to_string(k.tag) +
                     ", " + reported_comm_name(k.gid);
            },
            ch.sends.size());
      }
      if (!ch.recvs.empty()) {
        r.unmatched_recvs += ch.recvs.size();
        r.warn.add(
            WarningKind::ReceivesWithoutSend,
            [&] {
              return std::to_string(ch.recvs.size()) + " on rank " + std::to_string(k.dst) +
                     " <- rank " + std::to_string(k.src) + ", tag " + std::to_string(k.tag) +
                     ", " + reported_comm_name(k.gid);
            },
            ch.recvs.size());
      }
    });
    r.channels.clear();
    r.channel_store.clear();
    for (auto& c : r.channel_cache) c.index = 0;
}

double Engine::last_alive(Rank& r) const {
  // (A window from the index stops decoding early: the index knows the end.)
  double last = window_.from_index() ? window_.rank_index(r.index).last_leave : r.intervals.last_leave();
  // A rank that did not finalize was alive until its last heartbeat (format 4).
  if (r.rank_trace->end_reason() != "finalize" && r.rank_trace->heartbeat() != 0)
    last = std::max(last, r.interp.global(r.rank_trace->last_alive()));
  return last;
}

void Engine::collect_warnings_and_stats(Analysis& a) {
  std::map<std::string, Warning> warns;
  for (RankOutcome* rp : outcomes_) {
    RankOutcome& r = *rp;
    if (!r.gathered) settle_channels(*ranks_[r.index]);
    a.stats.events += r.events;
    a.stats.events_not_analyzed += r.damage.events_not_read;
    a.stats.mpi_calls += r.calls;
    a.stats.messages_matched += r.matched;
    a.stats.unmatched_sends += r.unmatched_sends;
    a.stats.unmatched_receives += r.unmatched_recvs;
    a.stats.unbalanced_markers += r.gathered ? r.gathered_unbalanced : ranks_[r.index]->intervals.unbalanced();
    a.stats.collective_instances += r.local_instances;
    r.warn.merge_into(warns);
  }
  // (The owners' examples by instance, whichever worker owned each.)
  WarningSink owned;
  for (auto& own : owners_) {
    a.stats.collective_instances += own.instances;
    a.stats.incomplete_collectives += own.incomplete;
    owned.absorb(own.warn);
  }
  owned.merge_into(warns);
  for (const RankOutcome* rp : outcomes_)
    a.stats.unknown_requests +=
        rp->warn.count(WarningKind::UnknownRequestCompletion) + rp->warn.count(WarningKind::UnknownRequestStart);
  a.stats.windows = windows_;
  window_.read_stats(a.stats, opt_);
  for (RankOutcome* rp : outcomes_) {
    RankEnd end;
    end.rank = rp->rank;
    end.ended_by = ended_by(rp->rank_trace->end_reason());
    const double last = rp->gathered ? rp->gathered_last_alive : last_alive(*ranks_[rp->index]);
    end.last_alive = last > -kInf ? (last - t_first_) * 1e-9 : 0;
    if (auto it = rp->rank_trace->meta().find("records_lost"); it != rp->rank_trace->meta().end())
      end.records_lost = std::strtoull(it->second.c_str(), nullptr, 10);
    if (end.ended_by != "finalize") a.complete = false;
    end.in_flight = rp->gathered ? std::move(rp->gathered_in_flight) : calls_in_flight(*ranks_[rp->index]);
    a.run_end.push_back(end);
  }
  finalize_waits(a.run_end);
  mismatched_collective_waits(a.run_end);
  a.wait_cycles = wait_cycles(a.run_end);
  if (opt_.windowed()) a.window = std::make_pair(opt_.window_from_s, opt_.window_to_s);
  read_warnings(a, warns);
  for (auto& [k, w] : warns) a.warnings.push_back(std::move(w));

}

}  // namespace prof::analysis::detail
