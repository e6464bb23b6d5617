// Collective matching: the k-th collective call on a communicator is an
// instance; its owner worker collects the members and, once all have called
// (or ended), gives each its wait, its own work and its exit spread. The
// wait's kind follows from the call (CollWaitClass) and the root's enter: a
// non-root of a one-to-all collective is late-root until its root enters and
// waits on the others after that.
#include "engine.h"

namespace prof::analysis::detail {

// A member's figures. With many ranks (Engine::queue_results_) an owner
// handing every member its figures in turn finds each rank's spans, holds,
// sums, waits by partner and root causes' log out of cache (a dozen lines a
// member): the result waits in the rank's queue, one record, until the rank
// settles (take_results), where its state is in cache. Each of its spans'
// lanes and sums gets only these results, in the same order, before the
// same sweep; its waits by partner are exact sums, and its root causes' log
// is sorted before it is read, so the order they come in changes nothing.
// (Inline where the owner completes an instance of its own rank's members;
// apply_all() takes those that came through a mailbox, a box at a time.)
[[gnu::always_inline]] inline void Engine::apply_result(const ResultRec& rr) {
  // (The engine's flags, not the rank's: with many ranks its object is out
  // of cache, and a queued result need not read it.)
  if (queue_results_) {
    queued_results_[static_cast<size_t>(rr.rank)].push(rr, stream_results_);
    return;
  }
  add_result(*ranks_[static_cast<size_t>(rr.rank)], rr);
}

// A member's wait by partner, spans, exit spread and hold's release.
//
// A call whose spans no other span of the rank overlaps (whole_call: see
// Handler::collective) lies in one context, its node: the unions of its
// spans with the rank's others are sums, so its wait and its call go
// straight into its node's levels (InstantSets::credit_alone), as exactly as
// the sweep would credit them, and no sweep carries them.
[[gnu::always_inline]] inline void Engine::add_result(Rank& r, const ResultRec& rr) {
  if (rr.wait_end > rr.enter && waits_on_) credit_partner(r, rr.node, rr.partner, rr.enter, rr.wait_end);
  if (rr.whole_call) [[likely]] {
    r.instants.credit_alone(r.acc[rr.node].in.level, rr.enter, rr.wait_end, rr.enter, rr.leave,
                            rr.a2a ? kAllToAllCallSpan : kCollCallSpan);
  } else {
    r.instants.add(rr.enter, rr.wait_end, kWaitSpan, kCollectiveLane);
    r.instants.add(rr.enter, rr.leave, rr.a2a ? kAllToAllCallSpan : kCollCallSpan, kCollectiveLane);
  }
  if (rr.wait_end > rr.enter && r.track_waits) {
    switch (rr.wait_class) {
      case kCollWaitBarrier: r.waits.add(rr.enter, rr.wait_end, kBarrierWaitSpan, kCollectiveLane); break;
      case kCollWaitNxN: r.waits.add(rr.enter, rr.wait_end, kNxNWaitSpan, kCollectiveLane); break;
      case kCollWaitAllToOneRoot: r.waits.add(rr.enter, rr.wait_end, kEarlyRootSpan, kCollectiveLane); break;
      case kCollWaitOneToAllNonRoot: {
        const double root = late_root_end(WaitSpan<double>{rr.enter, rr.wait_end}, rr.root_enter);
        r.waits.add(rr.enter, root, kLateRootSpan, kCollectiveLane);
        r.waits.add(root, rr.wait_end, kOtherCollWaitSpan, kCollectiveLane);
        break;
      }
      default: r.waits.add(rr.enter, rr.wait_end, kOtherCollWaitSpan, kCollectiveLane); break;
    }
  }
  // Its exit spread: from its leave to the last member's, inside the window.
  // Threads of one rank may spread at the same instants: there each instant
  // counts once, like the rank's other characteristics; a single thread's
  // spreads are summed at the same level, exact in any order of arrival.
  if (r.threaded) [[unlikely]] {
    r.instants.add(rr.leave, rr.leave + rr.time_variation, kTimeVariationSpan, kCollectiveLane);
  } else {
    double spread = rr.time_variation;
    if (window_.windowed()) spread = std::max(0.0, std::min(rr.leave + spread, window_.hi()) - std::max(rr.leave, window_.lo()));
    Instant& sum = r.acc[rr.node].in.level[kTimeVariationSpan];
    sum = add_lengths(sum, to_instant(spread));
  }
  r.holds.release(rr.hold);
}

void Engine::take_results(Rank& r) {
  if (!queue_results_) return;
  ResultQueue<ResultRec>& queued = queued_results_[r.index];
  for (const ResultRec& rr : queued) add_result(r, rr);
  queued.clear();
}

void Engine::apply_all(const Mailbox<ResultRec>& box) {
  box.for_each([this](const ResultRec& rr) { apply_result(rr); });
}

uint32_t Engine::gone_members(Owner& own, const CommDef* def) {
  // (Keyed by the group's list when there is one group: every rank's
  // definition of MPI_COMM_WORLD shares one, counted once.)
  const void* group = def->inter ? static_cast<const void*>(def) : def->ranks.begin();
  auto& cached = own.gone_members[reinterpret_cast<uint64_t>(group)];
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
  for (const Member& m : in.members) have.push_back(m.rank);
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
[[gnu::always_inline]] inline void Engine::post(unsigned w, const ResultRec& rr, int parity, bool direct) {
  const unsigned mw = worker_of_[static_cast<size_t>(rr.rank)];
  // (At the end of a run over several processes every result goes through a
  // box, so each rank takes them in owner order, as from one process.)
  if ((direct || mw == w) && !spread_.final_sweep()) [[likely]] apply_result(rr);
  else mail_.result_box(parity, w, mw).emplace_with([&](ResultRec& to) {
    to.rank = rr.rank;
    to.node = rr.node;
    to.a2a = rr.a2a;
    to.wait_class = rr.wait_class;
    to.whole_call = rr.whole_call;
    to.partner = rr.partner;
    to.root_enter = rr.root_enter;
    to.enter = rr.enter;
    to.wait_end = rr.wait_end;
    to.leave = rr.leave;
    to.time_variation = rr.time_variation;
    to.hold = rr.hold;
  });
}

void Engine::complete(unsigned w, uint64_t gid, uint64_t seq, Instance& in, int parity,
                      bool direct) {
  Owner& own = owners_[w];
  const int32_t last = in.last_rank >= 0 ? dir_.ranks[static_cast<size_t>(in.last_rank)]->rank() : -1;
  for (const Member& mem : in.members) {
    // Late entry: waiting for the last member to arrive; the rest is the
    // collective's own work. Time variation: how much earlier it left than
    // the last member.
    post(w,
         ResultRec{mem.rank, mem.node, mem.a2a, mem.wait_class, mem.whole_call, last, mem.enter,
                   collective_wait(mem.enter, mem.leave, in.max_enter).to, mem.leave,
                   std::max(0.0, in.max_leave - mem.leave), in.root_enter, mem.hold},
         parity, direct);
  }
  own.release_members(in);
  in.done = true;
  // (In a window, the instances every member entered by its end: all of them
  // complete before decoding stops, whatever the workers; others may or not.)
  if (in.max_enter > window_.hi()) return;
  ++own.instances;
  if (in.got < in.expected) {
    ++own.incomplete;
    // With records lost, a missing member is likely among them, not a rank
    // that ended early.
    own.warn.add_keyed(records_lost_ ? WarningKind::IncompleteCollectivesRecordsLost
                                     : WarningKind::IncompleteCollectives,
                       {gid, seq}, [&] {
      return reported_comm_name(gid) + ", collective #" + std::to_string(seq + 1) +
             ": " + std::to_string(in.got) + " of " + std::to_string(in.expected) + " members";
    });
  }
}

// (Inline in Handler::collective, where the owner is the caller's worker;
// add_members() takes the calls that came through a mailbox.)
[[gnu::always_inline]] inline void Engine::take_member(unsigned w, const CollRec& c, int parity) {
  Owner& own = owners_[w];
  CommQueue& q = own.queue(c.gid);
  Instance* in = q.get(c.seq / workers_);
  if (!in || in->done) {
    // More calls than members (inconsistent communicator definitions):
    // nobody to compare with, so the call is all collective time.
    own.warn.add_keyed(WarningKind::CollectiveCallsBeyondMembers, {c.gid, c.seq}, [&] {
      return reported_comm_name(c.gid) + ", collective #" + std::to_string(c.seq + 1);
    });
    post(w, ResultRec{c.rank, c.node, c.a2a, c.wait_class, c.whole_call, -1, c.enter, c.enter, c.leave, 0, -kInf,
                      c.hold},
         parity, false);
    return;
  }
  if (in->got == 0) {
    in->expected = c.expected;
    in->def = c.def;
    own.members_for(*in, c.expected);
  }
  ++in->got;
  // Of members entering last at the same instant, the lowest rank (indices
  // follow world ranks): members reach the owner in an order that depends on
  // the workers and processes, the partner must not.
  if (in->last_rank < 0 || c.enter > in->max_enter || (c.enter == in->max_enter && c.rank < in->last_rank))
    in->last_rank = c.rank;
  if (c.is_root) in->root_enter = c.enter;
  in->max_enter = std::max(in->max_enter, c.enter);
  in->max_leave = std::max(in->max_leave, c.leave);
  // (Filled in place: a Member built on the stack and copied in was read
  // back with 16-byte loads across its narrower stores, which the store
  // buffer cannot forward: a stall per collective call.)
  Member& m = in->members.emplace_back();
  m.enter = c.enter;
  m.leave = c.leave;
  m.hold = c.hold;
  m.rank = c.rank;
  m.node = c.node;
  m.a2a = c.a2a;
  m.wait_class = c.wait_class;
  m.whole_call = c.whole_call;
  if (in->got >= in->expected || (gone_count_ > 0 && all_missing_gone(own, *in))) {
    complete(w, c.gid, c.seq, *in, parity, false);
    q.pop_done();
  }
}

void Engine::add_members(unsigned w, const Mailbox<CollRec>& box, int parity) {
  box.for_each([&](const CollRec& c) { take_member(w, c, parity); });
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
        uint64_t seq = (q.base + i) * workers_;
        while (owner_of(q.gid, seq) != w) ++seq;
        complete(w, q.gid, seq, in, parity, direct);
      }
    }
    q.pop_done();
  }
}

void Handler::collective(const CommInfo& c, bool a2a, double enter, double leave, const Event& e) {
  const uint64_t seq = (*c.seq)++;
  r.interp.note_overlap();  // (its spans, for a receive in flight: Interpreter::lone_receive)
  const uint32_t node = r.node(e.stream);
  if (c.present <= 1) {
    // Alone in it (MPI_COMM_SELF, or the only member in the trace): no one to
    // wait for, so the whole call is collective time.
    r.instants.add(enter, leave, a2a ? kAllToAllCallSpan : kCollCallSpan, kDecodeLane);
    r.local_instances += enter <= eng.window_.hi();
    return;
  }
  if (r.log_delay && c.def) [[unlikely]]
    r.delay.log_sync(DelayLog::sync_on_comm(
        leave, r.delay.comm_index(c.gid, c.def->ranks, c.def->inter ? &c.def->remote_ranks : nullptr)));
  // Its spans are summed in its node (add_result) where no other span of
  // the rank can overlap them: its call is its instance's alone (a
  // persistent collective's Start may start several), on a rank of one
  // thread, inside the root (outside it there is no context, and the sweep
  // credits nothing), with no receive in flight (a late sender's wait runs
  // from its receive's issue, across the calls up to the one completing it).
  const bool own_call = e.kind == FuncKind::Collective || e.kind == FuncKind::AllToAll ||
                        e.kind == FuncKind::ICollective || e.kind == FuncKind::IAllToAll;
  const bool whole_call =
      own_call && !r.threaded && r.intervals.in_root() && r.interp.receives_in_flight() == 0;
  // Its wait is known once every member has called: the watermark is held
  // for what then goes through the sweeps (its spans, its wait states) and
  // for a window's end (AnalysisWindow::done).
  const uint64_t hold =
      whole_call && !r.track_waits && !eng.window_.windowed() ? HoldQueue::kNone : r.holds.add(enter);
  // Its wait's kind (for the wait states only): the call's, and whether this
  // member is the root (world ranks of an intracommunicator; a persistent
  // collective's Start does not name its call: other).
  const bool call = r.track_waits && own_call;
  const uint16_t role = call ? r.interp.func(e.func).role : 0;
  const bool is_root = call && c.def && !c.def->inter && e.root >= 0 &&
                       static_cast<size_t>(e.root) < c.def->ranks.size() &&
                       c.def->ranks[static_cast<size_t>(e.root)] == r.rank;
  uint8_t wait_class = kCollWaitOther;
  if (role & kRoleBarrier) wait_class = kCollWaitBarrier;
  else if (role & kRoleNxN) wait_class = kCollWaitNxN;
  else if ((role & kRoleOneToAll) && !is_root) wait_class = kCollWaitOneToAllNonRoot;
  else if ((role & kRoleAllToOne) && is_root) wait_class = kCollWaitAllToOneRoot;
  auto fill = [&](CollRec& rec) {
    rec.gid = c.gid;
    rec.seq = seq;
    rec.def = c.def;
    rec.expected = c.present;
    rec.rank = static_cast<int32_t>(r.index);
    rec.node = node;
    rec.a2a = a2a;
    rec.wait_class = wait_class;
    rec.is_root = is_root;
    rec.whole_call = whole_call;
    rec.enter = enter;
    rec.leave = leave;
    rec.hold = hold;
  };
  const unsigned o = eng.owner_of(c.gid, seq);
  if (o == w) {
    CollRec rec;
    fill(rec);
    eng.take_member(w, rec, parity);
  } else {
    eng.mail_.coll_box(parity, w, o).emplace_with(fill);
  }
}

}  // namespace prof::analysis::detail
