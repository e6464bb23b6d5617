// The Live chunk read back (format 4): which calls were in flight when the
// process ended, where the application made them, and when the rank was last
// alive.
//
// A slot with a non-zero enter is a call its thread entered. Its record is
// committed before the slot is cleared, so a process killed between the two
// leaves both: the slot is a call in flight only when it entered after the
// stream's last recorded enter. The chunk times give that without decoding
// more than each stream's last chunks.
#include <algorithm>

#include "reader_internal.h"

namespace prof::trace {

void RankTrace::Impl::compute_live() const {
  std::call_once(live_once, [this] {
    uint64_t alive = heartbeat;
    // Per stream: the last recorded enter and leave (leaves of one thread
    // never decrease, so the last chunk with events has the latest).
    std::vector<uint64_t> last_enter(streams.size(), 0);
    std::vector<bool> any(streams.size(), false);
    for (size_t s = 0; s < streams.size(); ++s)
      for (size_t c = streams[s].chunks.size(); c-- > 0;) {
        const ChunkTimes t = chunk_times(s, c);
        if (t.events == 0) continue;
        last_enter[s] = t.last_enter;
        any[s] = true;
        alive = std::max(alive, t.last_leave);
        break;
      }
    for (const auto& [stream_id, live_slot] : live_slots) {
      const format::InFlightSlot& slot = live_slot.slot;
      size_t s = 0;
      while (s < streams.size() && streams[s].id != stream_id) ++s;
      if (s < streams.size() && any[s] && slot.enter <= last_enter[s]) continue;  // recorded
      InFlightCall call;
      call.stream = stream_id;
      call.func = static_cast<uint16_t>(slot.site_func >> 48);
      // The application's call site: the language binding's return address
      // when one called the C function (the C wrapper's then lies inside the
      // binding's library).
      call.site = live_slot.binding_site != 0 ? live_slot.binding_site & format::kSiteMask
                                              : slot.site_func & format::kSiteMask;
      call.enter = slot.enter;
      call.peer = slot.peer;
      call.tag = slot.tag;
      call.comm = slot.comm;
      call.extra = slot.extra;
      const std::vector<int32_t>& ids = function_ids();
      const int32_t fi = call.func < ids.size() ? ids[call.func] : -1;
      call.kind = fi >= 0 ? function_defs()[static_cast<size_t>(fi)].kind : FuncKind::Other;
      alive = std::max(alive, call.enter);
      in_flight.push_back(call);
    }
    last_alive = alive;
  });
}

const InFlightCall* RankTrace::Impl::in_flight_of(size_t stream_index) const {
  if (live_slots.empty() || stream_index >= streams.size()) return nullptr;
  compute_live();
  for (const InFlightCall& c : in_flight)
    if (c.stream == streams[stream_index].id) return &c;
  return nullptr;
}

const std::vector<InFlightCall>& RankTrace::in_flight() const {
  // No live slot, no call in flight: the walk over the last chunks (for
  // last_alive) is not needed to say so.
  if (impl_->live_slots.empty()) return impl_->in_flight;
  impl_->compute_live();
  return impl_->in_flight;
}

uint64_t RankTrace::heartbeat() const { return impl_->heartbeat; }

uint64_t RankTrace::last_alive() const {
  impl_->compute_live();
  return impl_->last_alive;
}

}  // namespace prof::trace
