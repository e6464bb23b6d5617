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

namespace {

// The application's call site of a slot: the language binding's return
// address when one called the C function (the C wrapper's then lies inside
// the binding's library), as the shim keys its sites (resolve_call_site).
uint64_t slot_site(const format::LiveSlot& live_slot) {
  return live_slot.binding_site != 0 ? live_slot.binding_site & format::kSiteMask
                                     : live_slot.slot.site_func & format::kSiteMask;
}

}  // namespace

RankTrace::Impl::SiteOfCall RankTrace::Impl::site_of_call(uint16_t func, uint64_t address) const {
  SiteOfCall found;
  if (address == 0 || func >= format::kRepeatFuncs) return found;
  for (uint32_t i = 1; i <= format::kSiteIndexes; ++i) {
    const size_t at = size_t{i} << format::kSiteShift | func;
    const uint32_t id = at < call_site_ids.size() ? call_site_ids[at] : 0;
    if (id == 0) continue;
    found.last_index = i;
    const auto def = callsite_index.find(id);
    if (def != callsite_index.end() && callsites[def->second].address == address) {
      found.index = static_cast<uint8_t>(i);
      found.id = id;
      break;
    }
  }
  return found;
}

// A call in flight has no record, so its site may have no index yet: the
// shim gives a site its index (A definition) when a record first carries it,
// and a blocking call from a new site that never returned has none. Such a
// site gets the function's next index and a new CallSiteDef id here, before
// any cursor reads the tables, so the call-site profile counts the call where
// the function profile does (the site of a hang is often the one line it is
// not made from twice). As the shim: nothing for a run with PROF_CALLSITES=0,
// an unknown address, or a function with kSiteIndexes sites already.
void RankTrace::Impl::define_live_sites() {
  if (live_slots.empty() || header.version < format::kFirstSiteVersion) return;
  const auto setting = settings.find("PROF_CALLSITES");
  if (setting != settings.end() && setting->second.value == "0") return;
  live_sites = true;
  for (const auto& by_stream : live_slots) {
    const format::LiveSlot& live_slot = by_stream.second;
    const uint16_t func = static_cast<uint16_t>(live_slot.slot.site_func >> 48);
    const uint64_t address = slot_site(live_slot);
    const SiteOfCall site = site_of_call(func, address);
    if (address == 0 || func >= format::kRepeatFuncs || site.index != 0 || site.last_index >= format::kSiteIndexes)
      continue;
    uint32_t id = 0;
    for (const auto& [defined, _] : callsite_index) id = std::max(id, defined);
    ++id;
    CallSiteDef def;
    def.id = id;
    def.address = address;
    callsite_index.emplace(id, callsites.size());
    callsites.push_back(std::move(def));
    const size_t at = size_t{site.last_index + 1} << format::kSiteShift | func;
    if (at >= call_site_ids.size()) call_site_ids.resize(at + 1, 0);
    call_site_ids[at] = id;
  }
}

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
      call.site = slot_site(live_slot);
      if (live_sites) {  // (define_live_sites gave it one where it could)
        const SiteOfCall site = site_of_call(call.func, call.site);
        call.call_site_index = site.index;
        call.call_site = site.id;
      }
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
