// Point-to-point matching: a send's enter reaches its destination's worker,
// which matches it in order with the channel's receives (MPI's
// non-overtaking rule); a matched receive's wait and transfer become spans.
// A blocking send holds its sender's watermark until its match tells the
// receive's issue (a late receiver), which goes back to the sender's worker
// like a send goes forth (LateRecvRec; at once on the same worker).
#include "p2p_steps.h"

namespace prof::analysis::detail {

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
  const Instant units = to_instant(length);
  const Instant uncertain = length < bound ? units : 0;
  if (defer_partner_credits_) r.partner_credits.push_back(PartnerCredit{node, partner, units, uncertain});
  else r.acc[node].waited_for.add(partner, units, uncertain);
  if (r.log_delay) r.delay.log_wait(DelayLog::Wait{from, to, partner, node});
}

void Handler::cancel_send(const ChannelKey& k, double send_enter) {
  const int di = eng.index_of_world(k.dst);
  if (di < 0) return;
  const unsigned dw = eng.worker_of_[static_cast<size_t>(di)];
  const SendRec s{k, send_enter, send_enter, HoldQueue::kNone, static_cast<int32_t>(r.index), 0};
  if (dw == w) eng.ingest_send(s, true, w, parity);
  else eng.mail_.cancel_box(parity, w, dw).push_back(s);
}

// Another worker's sends to this worker's ranks, in the order it decoded
// them: a rank's sends repeat a few channels (a halo's neighbours and tags),
// so the last two channels met are kept here, and a send on either is
// delivered without looking up its destination's rank index and channel.
template <class Rec>
void Engine::ingest_sends(const Mailbox<Rec>& box, unsigned w, int parity) {
  struct Met {
    ChannelKey key;
    Rank* dest = nullptr;  // null: none yet
    uint32_t channel = 0;  // its index + 1 in dest's channel_store (indices never change)
  };
  Met met[2];
  box.for_each([&](const Rec& s) {
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
  });
}

template void Engine::ingest_sends(const Mailbox<SendRec>& box, unsigned w, int parity);
template void Engine::ingest_sends(const Mailbox<BareSendRec>& box, unsigned w, int parity);

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
