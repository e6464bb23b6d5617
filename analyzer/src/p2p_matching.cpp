// Point-to-point matching: a send's enter reaches its destination's worker,
// which matches it in order with the channel's receives (MPI's
// non-overtaking rule); a matched receive's wait and transfer become spans.
#include "engine.h"

namespace prof::analysis::detail {

// A matched receive: it waited from its issue until its send started (a late
// sender; "Recv issued before Send"), and the call that completed it is its
// transfer where it is not waiting. (Inline in its two callers below: a
// frame per message cost as much as its two spans' checks.)
[[gnu::always_inline]] inline void Engine::account_recv(Rank& r, double issue, double enter, double leave,
                                                        double send_enter, SpanLane lane) {
  r.instants.add(issue, std::min(send_enter, leave), kWaitSpan, lane);
  r.instants.add(enter, leave, kRecvCallSpan, lane);
  ++r.matched;
}

// A send reaches its destination rank: matched with the channel's oldest
// waiting receive, or queued. (Inline in Handler::send, where the
// destination is on the sender's worker.)
[[gnu::always_inline]] inline void Engine::deliver_send(const SendRec& s) {
  Rank& d = *ranks_[static_cast<size_t>(index_of_world(s.key.dst))];
  Channel& ch = d.channel(s.key);
  if (ch.skip > 0) [[unlikely]] {  // its receive came before the window index's start
    --ch.skip;
    return;
  }
  if (!ch.recvs.empty()) {
    const PendingRecv pr = ch.recvs.pop();
    account_recv(d, pr.issue, pr.enter, pr.leave, s.enter, kMatchLane);
    d.holds.release(pr.hold);
  } else {
    ch.sends.push(s.enter);
  }
}

void Handler::send(const ChannelKey& k, double enter, double, const Event&) {
  const int di = eng.index_of_world(k.dst);
  if (di < 0) {
    ++r.unmatched_sends;
    r.warn.add(WarningKind::MessagesToMissingRanks, [&] {
      return "rank " + std::to_string(r.rank) + " -> rank " + std::to_string(k.dst);
    });
    return;
  }
  // The destination's worker queues it; when that is us, at once.
  const unsigned dw = eng.worker_of_[static_cast<size_t>(di)];
  if (dw == w) eng.deliver_send(SendRec{k, enter});
  else eng.send_box(parity, w, dw).emplace_with([&](SendRec& s) {
    s.key.gid = k.gid;
    s.key.src = k.src;
    s.key.dst = k.dst;
    s.key.tag = k.tag;
    s.enter = enter;
  });
}

void Handler::cancel_send(const ChannelKey& k, double send_enter) {
  const int di = eng.index_of_world(k.dst);
  if (di < 0) return;
  const unsigned dw = eng.worker_of_[static_cast<size_t>(di)];
  if (dw == w) eng.ingest_send(SendRec{k, send_enter}, true);
  else eng.cancel_box(parity, w, dw).push_back(SendRec{k, send_enter});
}

void Handler::recv(const ChannelKey& k, double issue, uint64_t hold, double enter, double leave,
                   const Event&) {
  if (eng.index_of_world(k.src) < 0) {
    ++r.unmatched_recvs;
    r.warn.add(WarningKind::MessagesFromMissingRanks, [&] {
      return "rank " + std::to_string(r.rank) + " <- rank " + std::to_string(k.src);
    });
    r.holds.release(hold);
    return;
  }
  Channel& ch = r.channel(k);
  if (ch.recvs.empty() && !ch.sends.empty()) {
    const double s = ch.sends.pop();
    eng.account_recv(r, issue, enter, leave, s, kDecodeLane);
    r.holds.release(hold);
  } else {
    // Its wait is known once its send is: hold the rank's watermark at its issue
    // (a blocking call issues now, so holds stay in time order).
    if (hold == HoldQueue::kNone) hold = r.holds.add(issue);
    ch.recvs.push(PendingRecv{issue, enter, leave, hold});
  }
}

void Engine::ingest_send(const SendRec& s, bool cancel) {
  if (!cancel) {
    deliver_send(s);
    return;
  }
  Rank& d = *ranks_[static_cast<size_t>(index_of_world(s.key.dst))];
  Channel* ch = d.find_channel(s.key);
  if (!ch || !ch->sends.remove_last_if([&](double t) { return t == s.enter; }))
    d.warn.add(WarningKind::CancelledSendMatched, [&] {
      return "rank " + std::to_string(s.key.src) + " -> rank " + std::to_string(s.key.dst) +
             " tag " + std::to_string(s.key.tag);
    });
}

}  // namespace prof::analysis::detail
