// Point-to-point matching: a send's enter reaches its destination's worker,
// which matches it in order with the channel's receives (MPI's
// non-overtaking rule); a matched receive's wait and transfer become spans.
// A blocking send holds its sender's watermark until its match tells the
// receive's issue (a late receiver), which goes back to the sender's worker
// like a send goes forth (LateRecvRec; at once on the same worker).
#include "engine.h"

namespace prof::analysis::detail {

// A matched receive: it waited from its issue until its send started (a late
// sender; "Recv issued before Send"; the rules are wait_rules.h's), and the
// call that completed it is its transfer where it is not waiting. (Inline in its two callers below: a
// frame per message cost as much as its two spans' checks.)
//
// A blocking send waited from its enter until the receive's issue when it
// left after that issue (a late receiver); one that left before could
// complete without the receive and did not wait for it.
[[gnu::always_inline]] inline void Engine::account_recv(Rank& r, const PendingRecv& pr, const QueuedSend& s,
                                                        int32_t src, unsigned w, int parity, SpanLane lane) {
  const WaitSpan<double> wait = late_sender_wait(pr.issue, s.enter, pr.leave);
  r.instants.add(wait.from, wait.to, kWaitSpan, lane);
  r.instants.add(pr.enter, pr.leave, kRecvCallSpan, lane);
  if (wait.waits() && r.track_waits) {
    r.waits.add(wait.from, wait.to, kLateSenderSpan, lane);
    credit_partner(r, pr.node, src, wait.from, wait.to);
  }
  ++r.matched;
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

void Engine::apply_late_receiver(const LateRecvRec& lr) {
  Rank& r = *ranks_[static_cast<size_t>(lr.rank)];
  if (lr.to == -kInf) {  // an MPI_Isend's receive issue: its wait once its completion is known too
    uint8_t* state = r.send_holds.state(lr.hold);
    if (!state) return;  // freed unseen: no wait
    IsendWait& w = r.send_holds.payload(lr.hold);
    w.issue = lr.from;
    w.partner = lr.partner;
    if (*state & IsendWait::kWaitKnown) finish_isend(r, lr.hold, w);
    else *state |= IsendWait::kIssueKnown;
    return;
  }
  if (lr.to > lr.from) {
    r.waits.add(lr.from, lr.to, kLateReceiverSpan, kMatchLane);
    credit_partner(r, lr.node, lr.partner, lr.from, lr.to);
  }
  r.send_holds.release(lr.hold);
}

// An MPI_Isend whose completing call entered before its receive was issued
// and left after it waited from that enter to the issue.
void Engine::finish_isend(Rank& r, uint64_t hold, const IsendWait& w) {
  const WaitSpan<double> late = late_receiver_wait(w.wait_enter, w.wait_leave, w.issue);
  if (late.waits()) {
    r.waits.add(late.from, late.to, kLateReceiverSpan, kMatchLane);
    credit_partner(r, w.node, w.partner, late.from, late.to);
  }
  r.send_holds.release(hold);
}

void Handler::isend_done(uint64_t hold, double enter, double leave, const Event& e, bool unmatched) {
  uint8_t* state = r.send_holds.state(hold);
  if (!state) return;  // kNone
  if (unmatched) {
    r.send_holds.release(hold);
    return;
  }
  IsendWait& w = r.send_holds.payload(hold);
  w.wait_enter = enter;
  w.wait_leave = leave;
  w.node = r.node(e.stream);
  if (*state & IsendWait::kIssueKnown) eng.finish_isend(r, hold, w);
  else *state |= IsendWait::kWaitKnown;
}

// A wait on `partner` (world rank) in the node's calls, inside the window:
// uncertain when shorter than the two ranks' clock bounds together.
void Engine::credit_partner(Rank& r, uint32_t node, int32_t partner, double from, double to) {
  from = std::max(from, window_.lo());
  to = std::min(to, window_.hi());
  if (!(to > from)) return;
  const int pi = index_of_world(partner);
  const double bound = clock_error_[r.index] + (pi >= 0 ? clock_error_[static_cast<size_t>(pi)] : 0);
  const double length = to - from;
  const double uncertain = length < bound ? length : 0;
  if (r.defer_partner_credits) r.partner_credits.push_back(PartnerCredit{node, partner, length, uncertain});
  else r.acc[node].waited_for.add(partner, length, uncertain);
  if (r.log_delay) r.delay.waits.push_back(DelayLog::Wait{from, to, partner, node});
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
void Handler::send(const ChannelKey& k, double enter, double leave, const Event& e) {
  // A nonblocking send: an Isend, or the MPI_Start of a persistent one.
  const bool isend = (e.kind == FuncKind::Isend && e.request != format::kNoRequest) || e.kind == FuncKind::RequestOp;
  Rank::SentChannel& sent = r.sent_cache[Rank::sent_slot(k)];
  if (sent.dest < 0 || !(sent.key == k)) [[unlikely]] {
    const int di = eng.index_of_world(k.dst);
    if (di < 0) {
      if (isend) r.last_isend_hold = HoldQueue::kNone;
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
  } else eng.mail_.send_box(parity, w, dw).emplace_with([&](SendRec& s) {
    s.key.gid = k.gid;
    s.key.src = k.src;
    s.key.dst = k.dst;
    s.key.tag = k.tag;
    s.enter = enter;
    s.leave = leave;
    s.hold = hold;
    s.rank = static_cast<int32_t>(r.index);
    s.node = node;
  });
}

void Handler::cancel_send(const ChannelKey& k, double send_enter) {
  const int di = eng.index_of_world(k.dst);
  if (di < 0) return;
  const unsigned dw = eng.worker_of_[static_cast<size_t>(di)];
  const SendRec s{k, send_enter, send_enter, HoldQueue::kNone, static_cast<int32_t>(r.index), 0};
  if (dw == w) eng.ingest_send(s, true, w, parity);
  else eng.mail_.cancel_box(parity, w, dw).push_back(s);
}

void Handler::recv(const ChannelKey& k, double issue, uint64_t hold, double enter, double leave,
                   const Event& e) {
  // (A channel a receive found before has its source in the trace.)
  Rank::CachedChannel& cached = r.channel_cache[Rank::cache_slot(k)];
  uint32_t index = cached.index;
  if (index == 0 || !cached.source_known || !(cached.key == k)) [[unlikely]] {
    if (eng.index_of_world(k.src) < 0) {
      ++r.unmatched_recvs;
      r.warn.add(WarningKind::MessagesFromMissingRanks, [&] {
        return "rank " + std::to_string(r.rank) + " <- rank " + std::to_string(k.src);
      });
      r.holds.release(hold);
      return;
    }
    index = r.channel_index(k);  // (fills this slot with k)
    cached.source_known = true;
  }
  Channel& ch = r.channel_store[index - 1];
  const uint32_t node = r.node(e.stream);
  r.log_sync(leave, k.src);
  if (ch.recvs.empty() && !ch.sends.empty()) {
    const QueuedSend s = ch.sends.pop();
    eng.account_recv(r, PendingRecv{issue, enter, leave, hold, node}, s, k.src, w, parity, kDecodeLane);
    r.holds.release(hold);
  } else {
    // Its wait is known once its send is: hold the rank's watermark at its issue
    // (a blocking call issues now, so holds stay in time order).
    if (hold == HoldQueue::kNone) hold = r.holds.add(issue);
    ch.recvs.push(PendingRecv{issue, enter, leave, hold, node});
  }
}

// Another worker's sends to this worker's ranks, in the order it decoded
// them: a rank's sends repeat a few channels (a halo's neighbours and tags),
// so the last two channels met are kept here, and a send on either is
// delivered without looking up its destination's rank index and channel.
void Engine::ingest_sends(const Mailbox<SendRec>& box, unsigned w, int parity) {
  struct Met {
    ChannelKey key;
    Rank* dest = nullptr;  // null: none yet
    uint32_t channel = 0;  // its index + 1 in dest's channel_store (indices never change)
  };
  Met met[2];
  for (const SendRec& s : box) {
    size_t m = 0;
    if (met[0].dest == nullptr || !(met[0].key == s.key)) {
      if (met[1].dest == nullptr || !(met[1].key == s.key)) {
        met[1] = met[0];
        Rank* d = ranks_[static_cast<size_t>(index_of_world(s.key.dst))].get();
        met[0] = Met{s.key, d, d->channel_index(s.key)};
      } else {
        m = 1;
      }
    }
    Rank& d = *met[m].dest;
    deliver_to(d, d.channel_store[met[m].channel - 1], s.queued(), s.key.src, w, parity);
  }
}

void Engine::ingest_send(const SendRec& s, bool cancel, unsigned w, int parity) {
  Rank& d = *ranks_[static_cast<size_t>(index_of_world(s.key.dst))];
  if (!cancel) {
    deliver_to(d, d.channel(s.key), s.queued(), s.key.src, w, parity);
    return;
  }
  Channel* ch = d.find_channel(s.key);
  if (!ch || !ch->sends.remove_last_if([&](const QueuedSend& q) { return q.enter == s.enter; }))
    d.warn.add(WarningKind::CancelledSendMatched, [&] {
      return "rank " + std::to_string(s.key.src) + " -> rank " + std::to_string(s.key.dst) +
             " tag " + std::to_string(s.key.tag);
    });
}

}  // namespace prof::analysis::detail
