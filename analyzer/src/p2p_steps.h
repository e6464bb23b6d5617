// Point-to-point matching's per-message steps (engine.h, p2p_matching.cpp): a
// send delivered to its channel, a receive matched with its send. Inline, so
// that the decode loop (Engine::decode) holds them without a frame per
// message; the late receivers, the waits by partner and the mailed sends are
// in p2p_matching.cpp.
#pragma once

#include "engine.h"

namespace prof::analysis::detail {

// A matched receive: it waited from its issue until its send started (a late
// sender; "Recv issued before Send"; the rules are wait_rules.h's), and the
// call that completed it is its transfer where it is not waiting. (Inline in its
// two callers, deliver_to and Handler::recv: a frame per message cost as much
// as its two spans' checks.)
//
// A blocking send waited from its enter until the receive's issue when it
// left after that issue (a late receiver); one that left before could
// complete without the receive and did not wait for it.
[[gnu::always_inline]] inline void Engine::account_recv(Rank& r, const PendingRecv& pr, const QueuedSend& s,
                                                        int32_t src, unsigned w, int parity, SpanLane lane) {
  const WaitSpan<double> wait = late_sender_wait(pr.issue, s.enter, pr.leave);
  if (pr.whole) [[likely]] {
    r.instants.credit_alone(r.acc[pr.node].in.level, wait.from, wait.to, pr.enter, pr.leave, kRecvCallSpan);
  } else {
    r.instants.add(wait.from, wait.to, kWaitSpan, lane);
    r.instants.add(pr.enter, pr.leave, kRecvCallSpan, lane);
  }
  if (wait.waits() && r.track_waits) {
    r.waits.add(wait.from, wait.to, kLateSenderSpan, lane);
    credit_partner(r, pr.node, src, wait.from, wait.to);
  }
  // (In a window, the receives issued up to its end: all of them are matched
  // before decoding stops, whatever the workers; later ones may be or not.)
  r.matched += pr.issue <= window_.hi();
  if (s.hold != HoldQueue::kNone) {
    // An MPI_Isend's (leave -inf): the receive's issue; its wait once its
    // completion is known too.
    const WaitSpan<double> late = late_receiver_wait(s.enter, s.leave, pr.issue);
    const bool isend = s.leave == -kInf;
    const double from = isend ? pr.issue : late.from, to = isend ? -kInf : late.to;
    const unsigned sw = worker_of_[static_cast<size_t>(s.rank)];
    if (sw == w) apply_late_receiver(LateRecvRec{s.rank, s.node, r.rank, from, to, s.hold});
    else mail_.late_box(parity, w, sw).emplace_with([&](LateRecvRec& lr) {
      lr.rank = s.rank;
      lr.node = s.node;
      lr.partner = r.rank;
      lr.from = from;
      lr.to = to;
      lr.hold = s.hold;
    });
  }
}

// A send reaches its channel in its destination rank: matched with the
// channel's oldest waiting receive, or queued. (Inline in Handler::send,
// where the destination is on the sender's worker, and where mailed sends
// are taken.)
[[gnu::always_inline]] inline void Engine::deliver_to(Rank& d, Channel& ch, const QueuedSend& q, int32_t src,
                                                      unsigned w, int parity) {
  if (ch.skip > 0) [[unlikely]] {  // its receive came before the window index's start
    --ch.skip;
    if (q.hold != HoldQueue::kNone) {
      const LateRecvRec none = q.leave == -kInf ? LateRecvRec{q.rank, q.node, d.rank, -kInf, -kInf, q.hold}
                                                : LateRecvRec{q.rank, q.node, d.rank, q.enter, q.enter, q.hold};
      if (worker_of_[static_cast<size_t>(q.rank)] == w) apply_late_receiver(none);
      else mail_.late_box(parity, w, worker_of_[static_cast<size_t>(q.rank)]).push_back(none);
    }
    return;
  }
  if (!ch.recvs.empty()) {
    const PendingRecv pr = ch.recvs.pop();
    account_recv(d, pr, q, src, w, parity, kMatchLane);
    d.holds.release(pr.hold);
  } else {
    ch.sends.push(q);
  }
}

// A rank sends on a few channels over and over: the one it sent on last in
// the slot (Rank::sent_cache) gives the destination, and on this worker its
// channel, without looking either up.
[[gnu::always_inline]] inline void Handler::send(const ChannelKey& k, double enter, double leave, const Event& e) {
  // A nonblocking send: an Isend, or the MPI_Start of a persistent one.
  const bool isend = (e.kind == FuncKind::Isend && e.request != format::kNoRequest) || e.kind == FuncKind::RequestOp;
  Rank::SentChannel& sent = r.sent_cache[Rank::sent_slot(k)];
  if (sent.dest < 0 || !(sent.key == k)) [[unlikely]] {
    const int di = eng.index_of_world(k.dst);
    if (di < 0) {
      if (isend) r.last_isend_hold = HoldQueue::kNone;
      // (In a window, the sends entered up to its end, as Engine::account_recv
      // counts the receives matched: decoding past it depends on the workers.)
      if (enter > eng.window_.hi()) return;
      ++r.unmatched_sends;
      r.warn.add(WarningKind::MessagesToMissingRanks, [&] {
        return "rank " + std::to_string(r.rank) + " -> rank " + std::to_string(k.dst);
      });
      return;
    }
    sent.key = k;
    sent.dest = di;
    sent.channel = 0;
  }
  const size_t di = static_cast<size_t>(sent.dest);
  // A blocking send's wait for its receive is known once the receive is:
  // hold the watermark at its enter.
  // A nonblocking one's, once both its receive and the call that completes it are.
  r.log_sync(leave, k.dst);
  const bool blocking = e.kind == FuncKind::Send && !e.in_flight;
  // (Only the wait states read a late receiver: without them, no hold.)
  const uint64_t hold = r.track_waits && (blocking || isend) ? r.send_holds.add(enter) : HoldQueue::kNone;
  if (isend) {
    r.last_isend_hold = hold;
    leave = -kInf;
  }
  const uint32_t node = r.node(e.stream);
  // The destination's worker queues it; when that is us, at once.
  const unsigned dw = eng.worker_of_[di];
  if (dw == w) {
    Rank& d = *eng.ranks_[di];
    if (sent.channel == 0) sent.channel = d.channel_index(k);
    eng.deliver_to(d, d.channel_store[sent.channel - 1],
                   QueuedSend{enter, leave, hold, static_cast<int32_t>(r.index), node}, k.src, w, parity);
    return;
  }
  // What either record carries: its channel and enter.
  const auto channel_and_enter = [&](auto& s) {
    s.key.gid = k.gid;
    s.key.src = k.src;
    s.key.dst = k.dst;
    s.key.tag = k.tag;
    s.enter = enter;
  };
  if (!r.track_waits) {
    bare_sends_out[dw].emplace_with(channel_and_enter);
    return;
  }
  sends_out[dw].emplace_with([&](SendRec& s) {
    channel_and_enter(s);
    s.leave = leave;
    s.hold = hold;
    s.rank = static_cast<int32_t>(r.index);
    s.node = node;
  });
}

[[gnu::always_inline]] inline void Handler::recv(const ChannelKey& k, double issue, uint64_t hold, double enter,
                                                 double leave, const Event& e) {
  // (A channel a receive found before has its source in the trace.)
  Rank::CachedChannel& cached = r.channel_cache[Rank::cache_slot(k)];
  uint32_t index = cached.index;
  if (index == 0 || !cached.source_known || !(cached.key == k)) [[unlikely]] {
    if (eng.index_of_world(k.src) < 0) {
      r.holds.release(hold);
      if (issue > eng.window_.hi()) return;  // (as a send's, above)
      ++r.unmatched_recvs;
      r.warn.add(WarningKind::MessagesFromMissingRanks, [&] {
        return "rank " + std::to_string(r.rank) + " <- rank " + std::to_string(k.src);
      });
      return;
    }
    index = r.channel_index(k);  // (fills this slot with k)
    cached.source_known = true;
  }
  Channel& ch = r.channel_store[index - 1];
  const uint32_t node = r.node(e.stream);
  r.log_sync(leave, k.src);
  // Its spans (its wait from its issue, its call) overlap no other span of
  // the rank, so they are summed in its node, where the rank has one thread,
  // is inside the root and: a blocking receive (issued at its call's enter)
  // has no receive in flight; a nonblocking one was alone in flight from
  // its issue, with no other receive, collective call or change of context
  // meanwhile (Interpreter::lone_receive). Either is then an overlap for
  // the receive in flight, if any.
  const bool whole = !r.threaded && r.intervals.in_root() &&
                     (hold == HoldQueue::kNone ? issue == enter && r.interp.receives_in_flight() == 0
                                               : r.interp.lone_receive());
  r.interp.note_overlap();
  if (ch.recvs.empty() && !ch.sends.empty()) {
    const QueuedSend s = ch.sends.pop();
    eng.account_recv(r, PendingRecv{issue, enter, leave, hold, node, whole}, s, k.src, w, parity, kDecodeLane);
    r.holds.release(hold);
  } else {
    // Its wait is known once its send is: hold the rank's watermark at its issue
    // (a blocking call issues now, so holds stay in time order).
    if (hold == HoldQueue::kNone) hold = r.holds.add(issue);
    ch.recvs.push(PendingRecv{issue, enter, leave, hold, node, whole});
  }
}

}  // namespace prof::analysis::detail
