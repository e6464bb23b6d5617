// One stream's records, decoded in order (RankTrace::Cursor): the cold paths
// of the decoder (damage, chunk ends) and the public cursor.
#include "reader_cursor.h"

#include <algorithm>

namespace prof::trace {

void RankTrace::Cursor::Impl::bad_record(const uint8_t* at, int why, uint32_t detail) {
  switch (why) {
    case 0: bad(at, "trailing bytes shorter than a record header"); break;
    case 1: bad(at, "zero record header inside a sealed chunk"); break;
    case 2:
      bad(at, "record of " + std::to_string(detail) + " bytes overruns its chunk");
      break;
    case 3: bad(at, "long-time record without its time words"); break;
    case 4: bad(at, "unknown function id " + std::to_string(detail)); break;
    case 6:
      bad(at, "function " + std::to_string(detail) +
                  " refers to a communicator or request not given earlier in its chunk");
      break;
    default:
      bad(at, "payload too short for function " + std::to_string(detail));
      break;
  }
}

// The current chunk has fewer than 8 bytes left: reports a partial record,
// enters the next chunk; false (and the stream's accounting) at the end.
bool RankTrace::Cursor::Impl::chunk_end() {
  if (p != end) {
    bad_record(p, 0, 0);
    p = end;
  }
  if (next_chunk()) return true;
  if (!finished) {
    finished = true;
    flush();
  }
  return false;
}

bool RankTrace::Cursor::Impl::in_flight_tail(Prepared& out) {
  if (!with_in_flight || in_flight_done) return false;
  in_flight_done = true;
  in_flight_call = trace->in_flight_of(stream_index);
  if (!in_flight_call) return false;
  const uint64_t alive = std::max(trace->last_alive, in_flight_call->enter);
  out = Prepared{};
  out.rec = nullptr;
  out.kind = static_cast<uint16_t>(in_flight_call->kind);
  out.enter = in_flight_call->enter;
  out.dur = alive - in_flight_call->enter;
  return true;
}

void RankTrace::Cursor::Impl::fill_in_flight(Event& e, const Prepared& r) const {
  const InFlightCall& c = *in_flight_call;
  e = Event{};
  e.enter = r.enter;
  e.leave = r.enter + r.dur;
  e.func = c.func;
  e.kind = c.kind;
  e.stream = stream_id;
  e.in_flight = true;
  e.site = c.site;
  e.call_site = c.call_site;
  e.call_site_index = c.call_site_index;
  switch (c.kind) {
    case FuncKind::Send:
    case FuncKind::Recv:
    case FuncKind::Probe:
    case FuncKind::Isend:
    case FuncKind::Irecv:
      e.peer = c.peer;
      e.tag = c.tag;
      e.comm = c.comm;
      if (c.kind != FuncKind::Send && c.kind != FuncKind::Isend) {
        if (c.peer == format::kAnySourceRank) e.flags |= format::kAnySource;
        if (c.tag == format::kAnyTagValue) e.flags |= format::kAnyTag;
      }
      break;
    case FuncKind::SendRecv:
      e.peer = c.peer;
      e.recv_peer = c.tag;
      e.recv_tag = static_cast<int32_t>(c.extra);
      e.comm = c.comm;
      if (c.tag == format::kAnySourceRank) e.flags |= format::kAnySource;
      break;
    case FuncKind::Collective:
    case FuncKind::AllToAll:
    case FuncKind::ICollective:
    case FuncKind::IAllToAll:
      e.comm = c.comm;
      e.root = c.peer;
      break;
    case FuncKind::CommCreate:
      e.comm = c.comm;
      break;
    case FuncKind::Completion:
      e.request = c.extra;
      e.bytes = c.tag > 0 ? static_cast<uint64_t>(c.tag) : 0;
      break;
    default:
      break;
  }
}

RankTrace::Cursor::Cursor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RankTrace::Cursor::Cursor(Cursor&&) noexcept = default;
RankTrace::Cursor::~Cursor() = default;

RankTrace::Cursor RankTrace::stream(size_t index) const {
  auto c = std::make_unique<Cursor::Impl>();
  c->attach(impl_.get(), index);
  c->with_in_flight = true;
  return Cursor(std::move(c));
}

bool RankTrace::Cursor::next(Event& e) {
  if (!impl_) [[unlikely]] return false;
  Impl& c = *impl_;
  if (c.ready) [[unlikely]] {  // never, unless shared with a merge
    c.decode(e);
    return true;
  }
  Impl::Prepared r;
  if (!c.scan(r)) return false;
  c.fill(e, r);
  return true;
}

}  // namespace prof::trace
