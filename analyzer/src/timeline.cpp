// The timeline layer (timeline.h): building.
//
// Algorithm
//   Build threads take ranks one at a time and stream each through the same
//   Interpreter and IntervalTracker as the analysis. Every call is written,
//   field by field, into its row's block in the making (CallColumns: a
//   column per field); every kBlockRecords calls the row publishes the
//   block (timeline_blocks.cpp): packed into the build thread's stage, it
//   joins the row's block list under the row's lock, and its calls are
//   added to the pyramid's leaves, whose ancestors are then recomputed. So
//   a query, holding a row's lock shared, always sees whole blocks and a
//   consistent pyramid. Once every rank has passed (calls_complete), the
//   calls and the pyramid are final.
//   Interval executions are published when their rank is done. Message ends
//   (each with its channel and its ordinal on it) and collective calls (each
//   with its communicator and sequence number) wait in their rows' lists
//   until every rank is done, then are paired as the analysis pairs them: the
//   n-th send on a channel with its n-th receive, the k-th collective call on
//   a communicator of each member into one instance.
//
// Invariants
//   - A row's records are sorted by enter (a damaged, backwards timestamp is
//     raised to its predecessor's) and a row's calls do not overlap (a thread
//     makes one call at a time), so a range's calls are found by binary search.
//   - Every block but a row's last holds exactly kBlockRecords records.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "damage_stop.h"
#include "interpret.h"
#include "intervals.h"
#include "prof/analysis/timeline.h"
#include "timeline_impl.h"

namespace prof::analysis {

using namespace detail;
using namespace timeline_detail;

const char* timeline_kind_name(TimelineKind kind) {
  switch (kind) {
    case TimelineKind::User: return "user code";
    case TimelineKind::PointToPoint: return "point-to-point";
    case TimelineKind::Collective: return "collective";
    case TimelineKind::AllToAll: return "all-to-all";
    case TimelineKind::Marker: return "marker";
    case TimelineKind::OtherMpi: return "other MPI";
  }
  return "?";
}

namespace timeline_detail {

// The record schema's family of the kind (record_schema.h).
TimelineKind kind_of(FuncKind k) {
  const format::KindSchema* schema = format::find_schema(k);
  switch (schema ? schema->family : format::KindFamily::Other) {
    case format::KindFamily::PointToPoint: return TimelineKind::PointToPoint;
    case format::KindFamily::Collective: return TimelineKind::Collective;
    case format::KindFamily::AllToAll: return TimelineKind::AllToAll;
    case format::KindFamily::Marker: return TimelineKind::Marker;
    case format::KindFamily::Other: break;
  }
  return TimelineKind::OtherMpi;
}

namespace {

// One rank's pass: the Interpreter's and IntervalTracker's handler.
struct RankBuilder {
  RankBuilder(Impl& timeline, size_t rank_index, BlockStage& thread_stage)
      : tl(timeline), index(rank_index), rank_trace(*timeline.dir.ranks[rank_index]),
        interp(rank_trace, timeline.registry, rank_index, *timeline.world_index), intervals(rank_trace.rank()),
        first_row(timeline.first_row[rank_index]), streams(timeline.first_row[rank_index + 1] - first_row),
        slots(streams), sent(streams), received(streams), coll_refs(streams), coll_seqs(streams), executions(streams),
        stage(thread_stage) {
    for (size_t s = 0; s < streams; ++s) {
      slots[s].row = timeline.rows[first_row + s].get();
      slots[s].number = first_row + static_cast<uint32_t>(s);
    }
  }

  Impl& tl;
  size_t index;
  const RankTrace& rank_trace;
  Interpreter interp;
  IntervalTracker intervals;
  uint32_t first_row;  // the rank's rows: first_row + stream slot
  size_t streams;
  // What the build keeps per row of the rank (by stream slot), so that a
  // call touches only the builder's memory and its block's.
  struct RowSlot {
    Row* row = nullptr;
    CallColumns* calls = nullptr;  // row->pending, once it has a call
    uint32_t number = 0;           // the row's number in the timeline
    uint32_t next = 0;             // the index its next call takes
    int64_t last_enter = 0;        // its last call's enter (0 before the first)
    uint8_t last_site_index = 0;   // its last MPI call's (a marker's name field repeats it)
  };
  std::vector<RowSlot> slots;
  size_t slot_of(uint32_t stream) const { return stream < streams ? stream : 0; }  // (a damaged stream: the main thread's)
  uint32_t row = 0;  // the current call's row and record index
  uint32_t record = 0;
  bool has_record = false;
  struct NodeCacheKey {
    uint32_t parent = 0, id = 0, callsite = 0;
    bool operator==(const NodeCacheKey& o) const { return parent == o.parent && id == o.id && callsite == o.callsite; }
  };
  struct NodeCacheHash {
    uint64_t operator()(const NodeCacheKey& k) const { return mix64((uint64_t{k.parent} << 32 | k.id) ^ mix64(k.callsite + 1)); }
  };
  FlatMap<NodeCacheKey, uint32_t, NodeCacheHash> node_cache;  // (parent, raw call site, id) -> node + 1
  FlatMap<uint64_t, uint32_t> comm_cache;             // gid -> index into Impl::comm_ids
  // Channels of the rank's sends (receives): key -> channel number + 1, and
  // per channel number its key and how many ends it has so far.
  FlatMap<ChannelKey, uint32_t, ChannelHash> send_list, recv_list;
  std::vector<ChannelKey> send_keys, recv_keys;
  std::vector<uint32_t> send_counts, recv_counts;
  // Per row of the rank (by stream slot), in index order: message ends,
  // collective calls, and executions in order of start (a slot taken at the
  // begin, its end set at the end). Until pairing, a message end holds its
  // channel number and its ordinal on the channel where its partner will go,
  // and a collective call the index of its communicator's global id where
  // its instance will go, with its sequence number in `coll_seqs`: no list
  // beside them waits for pairing.
  std::vector<MappedArray<SentMessage>> sent;
  std::vector<MappedArray<ReceivedMessage>> received;
  std::vector<MappedArray<CollectiveRef>> coll_refs;
  std::vector<MappedArray<uint32_t>> coll_seqs;
  std::vector<MappedArray<Execution>> executions;
  // Executions open per stream, keyed as the tracker keys its stacks (by the
  // stream number as recorded, a damaged one included).
  std::vector<std::vector<uint32_t>> open_slots;
  std::map<uint32_t, std::vector<uint32_t>> open_damaged;
  std::vector<uint32_t>& open_of(uint32_t stream) {
    if (stream >= streams) return open_damaged[stream];
    if (open_slots.size() < streams) open_slots.resize(streams);
    return open_slots[stream];
  }
  // (The lists are made per stream slot with the builder.)
  template <class List>
  List& of_row(std::vector<List>& v, uint32_t r) {
    return v[r - first_row];
  }

  uint32_t row_of(uint32_t stream) const { return first_row + static_cast<uint32_t>(slot_of(stream)); }

  uint32_t comm_index(uint64_t gid) {
    // Consecutive calls mostly use one communicator: no hashing then.
    if (has_last_comm && gid == last_comm_gid) return last_comm_index;
    uint32_t found;
    if (const uint32_t* i = comm_cache.find(gid)) {
      found = *i;
    } else {
      std::lock_guard lock(tl.names_mutex);
      auto [it, added] = tl.comm_index.emplace(gid, static_cast<uint32_t>(tl.comm_ids.size()));
      if (added) tl.comm_ids.push_back(gid);
      comm_cache[gid] = it->second;
      found = it->second;
    }
    last_comm_gid = gid;
    last_comm_index = found;
    has_last_comm = true;
    return found;
  }
  uint64_t last_comm_gid = 0;
  uint32_t last_comm_index = 0;
  bool has_last_comm = false;

  // Writes the call into its row's block in the making (CallColumns),
  // which is published when full.
  void append(const Event& e, double enter, double leave, TimelineKind kind, uint32_t name) {
    RowSlot& slot = slots[slot_of(e.stream)];
    if (!slot.calls) {
      slot.row->pending = std::make_unique<CallColumns>();
      slot.calls = slot.row->pending.get();
    }
    Row& r = *slot.row;
    CallColumns& calls = *slot.calls;
    const uint32_t j = calls.size;
    row = slot.number;
    record = slot.next++;
    // Never before the trace's start (0) nor, in a damaged trace, before the
    // row's previous call: a row stays sorted.
    const int64_t t = std::max(round_ns(enter - tl.t_first), slot.last_enter);
    slot.last_enter = t;
    calls.enter[j] = t;
    uint8_t flags = 0;
    const int64_t d = std::max<int64_t>(0, round_ns(leave - enter));
    calls.max_leave = std::max(calls.max_leave, t + d);
    if (d >= UINT32_MAX) {
      calls.duration[j] = UINT32_MAX;
      flags |= kDurationOverflow;
      r.pending_durations.emplace_back(record, static_cast<uint64_t>(d));
    } else {
      calls.duration[j] = static_cast<uint32_t>(d);
    }
    // A marker has no site index of its own: its name field repeats the row's
    // last call's, so a block whose calls share theirs packs its name column
    // as narrow as without sites.
    const bool marker = kind == TimelineKind::Marker;
    const uint8_t site_index = marker ? slot.last_site_index : e.call_site_index;
    calls.name[j] = record_name(name, site_index, tl.names_hold_sites);
    if (!marker) {
      slot.last_site_index = site_index;
      if (site_index != 0 && tl.names_hold_sites) note_call_site(name, site_index, e.call_site);
    }
    int32_t peer = -1, tag = -1;
    uint32_t comm = 0;
    uint64_t bytes = 0;
    if (kind == TimelineKind::Marker) {
      peer = static_cast<int32_t>(e.interval_id);
      tag = static_cast<int32_t>(tl.registry.site(index, e.callsite));
      if (e.marker_begin) flags |= kMarkerBeginFlag;
    } else {
      switch (e.kind) {
        case FuncKind::Send:
        case FuncKind::Recv:
        case FuncKind::Isend:
        case FuncKind::Irecv:
        case FuncKind::Probe:
        case FuncKind::SendRecv:
          bytes = e.bytes + (e.kind == FuncKind::SendRecv ? e.recv_bytes : 0);
          tag = e.tag;
          if (const CommInfo* c = interp.comms().at(e.comm, e.enter)) {
            peer = CommCache::peer_world(*c, e.peer);
            comm = comm_index(c->gid);
            flags |= kHasComm;
          }
          break;
        case FuncKind::Collective:
        case FuncKind::ICollective:
        case FuncKind::AllToAll:
        case FuncKind::IAllToAll:
          bytes = e.bytes;
          peer = e.root;
          if (const CommInfo* c = interp.comms().at(e.comm, e.enter)) {
            comm = comm_index(c->gid);
            flags |= kHasComm;
          }
          break;
        case FuncKind::Completion:
          for (const trace::Completion& done : e.completions) bytes += done.bytes;
          break;
        default:
          break;
      }
      if (bytes >= UINT32_MAX) {
        flags |= kBytesOverflow;
        r.pending_bytes.emplace_back(record, bytes);
        bytes = UINT32_MAX;
      }
    }
    calls.peer[j] = peer;
    calls.tag[j] = tag;
    calls.bytes[j] = static_cast<uint32_t>(bytes);
    calls.comm[j] = comm;
    calls.kind_flags[j] = CallColumns::kind_and_flags(static_cast<uint8_t>(kind), flags);
    calls.size = j + 1;
    has_record = true;
    if (calls.size == kBlockRecords) tl.publish(r, stage);
  }

  // The rank's (function, site index) pairs already in tl.call_sites: the
  // lock is taken once per pair, not per call.
  std::vector<bool> call_site_noted;
  void note_call_site(uint32_t function, uint8_t site_index, uint32_t call_site) {
    static_assert(format::kSiteIndexes < 64);
    const size_t bit = size_t{function} * 64 + site_index;
    if (call_site_noted.size() <= bit) call_site_noted.resize(bit + 1);
    if (call_site_noted[bit]) return;
    call_site_noted[bit] = true;
    std::lock_guard lock(tl.names_mutex);
    tl.call_sites.emplace(Impl::call_site_key(index, function, site_index), tl.registry.site(index, call_site));
  }

  // Interpreter handler.
  bool call(const Event& e, const FuncInfo& fi, double enter, double leave) {
    append(e, enter, leave, kind_of(e.kind), fi.name);
    return intervals.call(fi, enter, leave, *this);
  }
  bool continuation() {
    // Its entries belong to the stream's last call.
    const RowSlot& slot = slots[slot_of(current->stream)];
    has_record = slot.next > 0;
    if (has_record) {
      row = slot.number;
      record = slot.next - 1;
    }
    return intervals.in_root();
  }
  void marker(const Event& e, double enter, double leave) {
    append(e, enter, leave, TimelineKind::Marker, 0);
    intervals.marker(e, enter, leave, *this);
  }
  void send(const ChannelKey& k, double, double, const Event&) {
    if (!has_record) return;
    const uint32_t channel = channel_of(send_list, send_keys, send_counts, last_send, k);
    of_row(sent, row).push_back(SentMessage{record, channel, send_counts[channel]++});
  }
  void recv(const ChannelKey& k, double, uint64_t hold, double, double, const Event&) {
    if (!has_record) return;
    const uint32_t channel = channel_of(recv_list, recv_keys, recv_counts, last_recv, k);
    // A blocking receive issues itself; a nonblocking one was issued by the
    // call whose hold() token this is.
    const uint32_t issue_row = hold == HoldQueue::kNone ? row : static_cast<uint32_t>(hold >> 32);
    const uint32_t issue_index = hold == HoldQueue::kNone ? record : static_cast<uint32_t>(hold);
    of_row(received, row).push_back(ReceivedMessage{record, channel, recv_counts[channel]++, issue_row, issue_index});
  }
  // The channels last looked up in each direction: a rank mostly cycles
  // over a few channels (a halo exchange: a channel per neighbour and tag),
  // and comparing with four keys beats hashing. Replaced round robin.
  struct RecentChannels {
    static constexpr size_t kSize = 4;
    ChannelKey key[kSize];
    uint32_t number[kSize] = {UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
    size_t next = 0;
  };
  RecentChannels last_send, last_recv;
  static uint32_t channel_of(FlatMap<ChannelKey, uint32_t, ChannelHash>& list, std::vector<ChannelKey>& keys,
                             std::vector<uint32_t>& counts, RecentChannels& recent, const ChannelKey& k) {
    for (size_t i = 0; i < RecentChannels::kSize; ++i)
      if (recent.number[i] != UINT32_MAX && recent.key[i] == k) return recent.number[i];
    uint32_t& number = list[k];
    if (number == 0) {
      keys.push_back(k);
      counts.push_back(0);
      number = static_cast<uint32_t>(keys.size());
    }
    const size_t slot = recent.next;
    recent.next = (slot + 1) % RecentChannels::kSize;
    recent.key[slot] = k;
    recent.number[slot] = number - 1;
    return number - 1;
  }
  // A receive in flight: the token names the call that issued it (its row
  // and record), which recv() gets back when the receive completes.
  uint64_t hold(double) { return has_record ? (uint64_t{row} << 32 | record) : HoldQueue::kNone; }
  void release(uint64_t) {}
  void cancel_send(const ChannelKey&, double) {}
  void collective(const CommInfo& c, bool, double, double, const Event&) {
    const uint64_t seq = (*c.seq)++;
    if (!has_record) return;
    of_row(coll_refs, row).push_back(CollectiveRef{record, comm_index(c.gid)});
    of_row(coll_seqs, row).push_back(static_cast<uint32_t>(seq));  // (a row has under 2^32 calls)
  }
  template <class F>
  void problem(WarningKind category, F&& example, uint64_t = 1) {
    tl.note_problem(category, example);
  }

  // IntervalTracker handler.
  void root_started(double t) {
    // The run's slot comes first on the rank's first row: it starts before anything.
    of_row(executions, tl.first_row[index]).push_back(Execution{t - tl.t_first, t - tl.t_first, 0});
  }
  uint32_t interval_begun(uint32_t stream, const Event& e, double t, uint32_t parent) {
    auto& list = of_row(executions, row_of(stream));
    open_of(stream).push_back(static_cast<uint32_t>(list.size()));
    list.push_back(Execution{t - tl.t_first, t - tl.t_first, 0});
    const uint32_t node = node_of(parent, e);
    list.back().node = node;
    return node;
  }
  uint32_t node_of(uint32_t parent, const Event& e) {
    uint32_t& node = node_cache[NodeCacheKey{parent, e.interval_id, e.callsite}];
    if (node == 0) node = tl.node(parent, e.interval_id, tl.registry.site(index, e.callsite)) + 1;
    return node - 1;
  }
  // The tracker closes a thread's executions innermost first: the top slot.
  void interval_ended(uint32_t stream, const OpenInterval&, double t) {
    auto& open = open_of(stream);
    if (open.empty()) return;  // (the tracker never closes what it did not open)
    of_row(executions, row_of(stream))[open.back()].end = t - tl.t_first;
    open.pop_back();
  }
  void root_ended(double t) { of_row(executions, tl.first_row[index])[0].end = t - tl.t_first; }

  // The event being processed, in the cursor's batch (continuation() takes
  // its stream); null outside run()'s loop.
  const Event* current = nullptr;
  BlockStage& stage;  // the build thread's

  // Streams the rank; false when the build stops (cancelled or failed).
  bool run() {
    // Events come a batch at a time (MergedCursor::next_batch: cheaper to
    // decode than one by one); a batch's events and their completions live
    // until the next batch, which is all `current` and the handlers need.
    auto cursor = rank_trace.events();
    uint64_t n = 0;
    DamageStop damage;
    damage.span = &*tl.span;
    const bool read = damage.read(cursor, interp, [&](std::span<const Event> batch) {
      for (const Event& e : batch) {
        current = &e;
        has_record = false;
        interp.process(e, interp.global(e.enter), *this);
      }
      const uint64_t before = n;
      n += batch.size();
      if ((n >> 12) != (before >> 12)) {  // every 4096 events or so
        if (tl.stopping()) return false;
        tl.report_progress();
      }
      return true;
    });
    if (!read) return false;
    current = nullptr;
    if (damage.stopped) {
      damage.drain(cursor);
      std::lock_guard lock(tl.warnings_mutex);
      tl.warning_list.push_back(damage.describe(rank_trace.path(), tl.t_first));
    }
    intervals.finish(*this);
    for (RowSlot& slot : slots) {
      tl.publish(*slot.row, stage);
      slot.row->pending.reset();  // (the builder's memory: a block per row being built)
      slot.calls = nullptr;
    }
    // What waits for pairing, without the slack of growth (other ranks are
    // still being built: this is the build's peak).
    for (auto& l : sent) l.shrink_to_fit();
    for (auto& l : received) l.shrink_to_fit();
    for (auto& l : coll_refs) l.shrink_to_fit();
    for (auto& l : coll_seqs) l.shrink_to_fit();
    for (size_t slot = 0; slot < executions.size(); ++slot) {
      auto& list = executions[slot];
      auto by_start = [](const Execution& a, const Execution& b) { return a.start < b.start; };
      if (!std::is_sorted(list.begin(), list.end(), by_start))  // only a damaged trace
        std::stable_sort(list.begin(), list.end(), by_start);
      // Each execution's innermost enclosing one on the row (-1: none):
      // executions of a thread nest, so a stack over them in order of start.
      MappedArray<int32_t> parent;
      parent.resize_for_overwrite(list.size());
      std::fill(parent.begin(), parent.end(), -1);
      std::vector<int32_t> enclosing;
      for (size_t i = 0; i < list.size(); ++i) {
        while (!enclosing.empty() && list[static_cast<size_t>(enclosing.back())].end <= list[i].start)
          enclosing.pop_back();
        if (!enclosing.empty()) parent[i] = enclosing.back();
        enclosing.push_back(static_cast<int32_t>(i));
      }
      Row& r = *tl.rows[tl.first_row[index] + slot];
      std::unique_lock lock(r.mutex);
      list.shrink_to_fit();
      parent.shrink_to_fit();
      r.executions = std::move(list);
      r.execution_parent = std::move(parent);
    }
    return true;
  }
};

}  // namespace

uint32_t Impl::node(uint32_t parent, uint32_t id, uint32_t site) {
  std::lock_guard lock(names_mutex);
  const uint64_t key = (uint64_t{parent} << 32 | id) * 0x9E3779B97F4A7C15ull ^ (uint64_t{site} << 7);
  auto range = node_index.equal_range(key);
  for (auto it = range.first; it != range.second; ++it) {
    const TimelineNode& n = node_list[it->second];
    if (n.parent == static_cast<int>(parent) && n.id == id && n.site == site) return it->second;
  }
  TimelineNode n;
  n.parent = static_cast<int>(parent);
  n.id = id;
  n.site = site;
  n.level = node_list[parent].level + 1;
  node_list.push_back(n);
  node_index.emplace(key, static_cast<uint32_t>(node_list.size() - 1));
  return static_cast<uint32_t>(node_list.size() - 1);
}

void Impl::report_progress() {
  if (!options.progress) return;
  std::unique_lock lock(progress_mutex, std::try_to_lock);
  if (lock.owns_lock()) options.progress(built_fraction());
}

double Impl::built_fraction() const {
  if (finished.load(std::memory_order_acquire)) return 1.0;
  const double est = std::max<double>(1.0, static_cast<double>(events_estimate));
  // Building takes most of the time; pairing the last few percent.
  return std::min(0.97, 0.97 * static_cast<double>(events_built.load(std::memory_order_relaxed)) / est);
}

uint64_t Row::big_duration(const Record& r, uint64_t index) const {
  auto it = big_durations.find(index);
  return it != big_durations.end() ? it->second : r.duration;
}
uint64_t Row::big_byte_count(const Record& r, uint64_t index) const {
  auto it = big_bytes.find(index);
  return it != big_bytes.end() ? it->second : r.bytes;
}

}  // namespace timeline_detail

using timeline_detail::Impl;

Timeline::Timeline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Timeline::~Timeline() {
  if (impl_ && impl_->spill_fd >= 0) close(impl_->spill_fd);
}

std::unique_ptr<Timeline> Timeline::open(const std::string& trace_dir, std::string* error,
                                         TimelineOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->dir = trace::TraceDir::open(trace_dir);
  if (!impl->dir.errors.empty() || impl->dir.ranks.empty()) {
    if (error) *error = impl->dir.errors.empty() ? trace_dir + ": no rank files" : impl->dir.errors.front();
    return nullptr;
  }
  impl->warning_list = impl->dir.warnings;
  std::vector<const RankTrace*> traces;
  for (const auto& t : impl->dir.ranks) traces.push_back(t.get());
  impl->world_index = std::make_unique<WorldIndex>(traces);
  impl->registry.build(traces);
  impl->names_hold_sites = impl->registry.functions.size() <= size_t{kNameFunctionMask} + 1;
  impl->comm_ids.push_back(0);  // index 0: no communicator
  impl->comm_index.emplace(0, 0);
  impl->node_list.push_back(TimelineNode{});  // the root

  // Time zero: the earliest event of the run (as the analysis's window).
  double t_first = std::numeric_limits<double>::infinity();
  uint64_t bytes = 0;
  impl->span.emplace(traces);
  impl->first_row.push_back(0);
  for (size_t i = 0; i < traces.size(); ++i) {
    const RankTrace& rank_trace = *traces[i];
    Interpreter interp(rank_trace, impl->registry, i, *impl->world_index);
    auto cursor = rank_trace.events();
    Event e;
    if (cursor.next(e) && cursor.gaps() == 0) {
      const double enter = interp.global(e.enter);
      if (impl->span->contains(enter)) t_first = std::min(t_first, enter);
    }
    bytes += rank_trace.event_bytes();
    const size_t streams = std::max<size_t>(1, rank_trace.stream_count());
    for (size_t s = 0; s < streams; ++s) {
      auto row = std::make_unique<timeline_detail::Row>();
      row->id = TimelineRow{rank_trace.rank(), static_cast<uint32_t>(s)};
      row->pyramid.cap = impl->options.leaves_per_row;
      impl->rows.push_back(std::move(row));
      impl->row_list.push_back(impl->rows.back()->id);
    }
    impl->first_row.push_back(static_cast<uint32_t>(impl->rows.size()));
  }
  for (const SiteInfo& s : impl->registry.sites)
    impl->site_labels.push_back(s.file.empty() ? s.label : s.file + ":" + std::to_string(s.line));
  if (!impl->site_labels.empty()) impl->site_labels[0].clear();
  // Rows share a budget of 2^21 leaves (64 bytes each, as much again in the
  // levels above: 256 MiB up to 4,096 rows), so a trace of many ranks gets coarser
  // leaves, not gigabytes of pyramid; every row keeps at least 512 leaves (a
  // viewer showing that many rows at once aggregates them, a pixel row for
  // several, and draws a screen's width from a few hundred leaves each).
  const size_t cap = std::max<size_t>(512, (size_t{1} << 21) / std::max<size_t>(1, impl->rows.size()));
  for (auto& row : impl->rows) row->pyramid.cap = std::min<size_t>(row->pyramid.cap, cap);
  impl->t_first = std::isfinite(t_first) ? t_first : 0;
  impl->events_estimate = bytes / 20;  // about 20 bytes per record
  return std::make_unique<Timeline>(std::move(impl));
}

namespace {

// Runs work() on `threads` threads (this one among them) and joins them.
// An exception leaving a std::thread calls std::terminate (the viewer would
// abort on a std::bad_alloc): each thread catches what work() throws and
// stops the build with it (Impl::fail). Threads that cannot be started leave
// their share to the others.
template <class Work>
void run_on_threads(Impl& tl, size_t threads, Work&& work) {
  auto guarded = [&] {
    try {
      work();
    } catch (...) {
      tl.fail(std::current_exception());
    }
  };
  std::vector<std::thread> pool;
  try {
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(guarded);
  } catch (...) {
    // (fewer threads: the work is shared among those started)
  }
  guarded();
  for (auto& t : pool) t.join();
}

// Runs each(i) for i in [0, n) on `threads` threads (this one among them),
// an index at a time. Work per index must be independent. False when the
// build failed meanwhile: some indices were not done.
template <class Each>
bool for_each_index(Impl& tl, size_t n, unsigned threads, Each&& each) {
  std::atomic<size_t> next{0};
  run_on_threads(tl, std::min<size_t>(threads, n), [&] {
    for (size_t i; !tl.failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < n;) each(i);
  });
  return !tl.failed.load();
}

// What build() reports of the exception that stopped it.
std::string failure_message(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::bad_alloc& e) {
    return std::string("out of memory while building the timeline: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("error while building the timeline: ") + e.what();
  } catch (...) {
    return "error while building the timeline";
  }
}

using Builders = std::vector<std::unique_ptr<RankBuilder>>;

// Messages: the n-th send on a channel with its n-th receive. Each rank's
// sends are indexed by (channel, ordinal) with a counting sort (4 bytes a
// send, the only memory pairing adds), then every receive finds its send.
// Both steps run on the build's threads, a rank at a time: a rank's index
// is its own, and a send has one receive at most (the receiver's channel
// names the sender's), so no two ranks write one end.
void pair_messages(Impl& tl, Builders& builders, unsigned threads) {
  const size_t ranks = builders.size();
  struct SendIndex {
    std::vector<uint64_t> channel_start;  // per channel number: its first entry
    MappedArray<uint32_t> position;       // the send's place in the rank's rows, concatenated
    std::vector<uint32_t> row_start;      // per stream slot: its first place
  };
  std::vector<SendIndex> send_index(ranks);
  const bool indexed = for_each_index(tl, ranks, threads, [&](size_t s) {
    RankBuilder& src = *builders[s];
    SendIndex& at = send_index[s];
    at.channel_start.resize(src.send_counts.size() + 1, 0);
    for (size_t c = 0; c < src.send_counts.size(); ++c)
      at.channel_start[c + 1] = at.channel_start[c] + src.send_counts[c];
    at.position.resize_for_overwrite(at.channel_start.back());  // (every place is written below)
    uint32_t place = 0;
    for (auto& row_ends : src.sent) {
      at.row_start.push_back(place);
      for (SentMessage& end : row_ends) {
        at.position[at.channel_start[end.recv_row] + end.recv_index] = place++;
        end.recv_row = end.recv_index = UINT32_MAX;  // no partner yet
      }
    }
  });
  if (!indexed) return;
  for_each_index(tl, ranks, threads, [&](size_t d) {
    if (tl.stopping()) return;
    RankBuilder& dst = *builders[d];
    // Per receive channel: the sending rank and its channel number (none: -1).
    std::vector<std::pair<int, uint32_t>> source(dst.recv_keys.size(), {-1, 0});
    for (size_t c = 0; c < dst.recv_keys.size(); ++c) {
      const int si = (*tl.world_index)(dst.recv_keys[c].src);
      if (si < 0) continue;
      if (const uint32_t* s = builders[static_cast<size_t>(si)]->send_list.find(dst.recv_keys[c]))
        source[c] = {si, *s - 1};
    }
    for (size_t slot = 0; slot < dst.received.size(); ++slot)
      for (ReceivedMessage& in : dst.received[slot]) {
        const auto [si, channel] = source[in.send_row];
        const uint32_t ordinal = in.send_index;
        in.send_row = in.send_index = UINT32_MAX;  // no partner unless found below
        if (si < 0) continue;
        RankBuilder& src = *builders[static_cast<size_t>(si)];
        const SendIndex& at = send_index[static_cast<size_t>(si)];
        if (ordinal >= src.send_counts[channel]) continue;
        const uint32_t place = at.position[at.channel_start[channel] + ordinal];
        const size_t src_slot =
            static_cast<size_t>(std::upper_bound(at.row_start.begin(), at.row_start.end(), place) - at.row_start.begin()) - 1;
        SentMessage& out = src.sent[src_slot][place - at.row_start[src_slot]];
        out.recv_row = tl.first_row[d] + static_cast<uint32_t>(slot);
        out.recv_index = in.first;
        in.send_row = tl.first_row[static_cast<size_t>(si)] + static_cast<uint32_t>(src_slot);
        in.send_index = out.first;
      }
  });
}

// Collectives: one instance per (communicator, sequence number), published
// with their members (Impl::instances, Impl::members). A rank numbers its
// calls on a communicator 0, 1, 2, ..., so the instances are laid out per
// communicator (in order of first appearance) by sequence number, without a
// hash table; slots no member reached are dropped. Members are grouped by a
// count and a fill.
void pair_collectives(Impl& tl, Builders& builders, unsigned threads) {
  const size_t ranks = builders.size();
  std::vector<uint64_t> comm_base(tl.comm_ids.size() + 1, 0);  // per communicator: its first slot
  for (auto& b : builders)
    for (size_t slot = 0; slot < b->coll_refs.size(); ++slot)
      for (size_t i = 0; i < b->coll_refs[slot].size(); ++i) {
        uint64_t& slots = comm_base[b->coll_refs[slot][i].instance + 1];
        slots = std::max<uint64_t>(slots, uint64_t{b->coll_seqs[slot][i]} + 1);
      }
  for (size_t c = 0; c + 1 < comm_base.size(); ++c) comm_base[c + 1] += comm_base[c];
  MappedArray<uint32_t> slot_count;  // members per slot, then the slot's instance
  slot_count.resize(comm_base.back());
  for (auto& b : builders)
    for (size_t slot = 0; slot < b->coll_refs.size(); ++slot)
      for (size_t i = 0; i < b->coll_refs[slot].size(); ++i)
        ++slot_count[comm_base[b->coll_refs[slot][i].instance] + b->coll_seqs[slot][i]];
  size_t used = 0;
  for (const uint32_t n : slot_count) used += n > 0;
  MappedArray<CollectiveInstance> instances;
  instances.resize_for_overwrite(used);
  uint32_t total = 0, made = 0;
  for (size_t c = 0; c + 1 < comm_base.size(); ++c)
    for (uint64_t k = comm_base[c]; k < comm_base[c + 1]; ++k) {
      if (slot_count[k] == 0) continue;
      instances[made] = CollectiveInstance{tl.comm_ids[c], k - comm_base[c], total, 0};
      total += slot_count[k];
      slot_count[k] = made++;
    }
  // Each call's instance, a rank at a time on the build's threads.
  const bool numbered = for_each_index(tl, ranks, threads, [&](size_t i) {
    RankBuilder& b = *builders[i];
    for (size_t slot = 0; slot < b.coll_refs.size(); ++slot) {
      CollectiveRef* refs = b.coll_refs[slot].data();
      const uint32_t* seqs = b.coll_seqs[slot].data();
      for (size_t k = 0; k < b.coll_refs[slot].size(); ++k)
        refs[k].instance = slot_count[comm_base[refs[k].instance] + seqs[k]];
    }
    b.coll_seqs.clear();
  });
  if (!numbered) return;
  // The members, grouped by instance: each thread fills those of a range of
  // instances (about as many members each), reading every call in rank
  // order, so an instance lists its members in row order however the
  // threads run, and the members' pages are first written, and faulted in,
  // by the threads in parallel.
  MappedArray<EventRefPublic> members;
  members.resize_for_overwrite(total);
  const size_t parts = std::min<size_t>(threads, std::max<size_t>(1, instances.size()));
  std::vector<uint32_t> part_first(parts + 1, static_cast<uint32_t>(instances.size()));
  for (size_t p = 0; p < parts; ++p) {
    const uint64_t from = uint64_t{total} * p / parts;
    part_first[p] = static_cast<uint32_t>(
        std::lower_bound(instances.begin(), instances.end(), from,
                         [](const CollectiveInstance& in, uint64_t m) { return in.first_member < m; }) -
        instances.begin());
  }
  const bool grouped = for_each_index(tl, parts, threads, [&](size_t p) {
    const uint32_t lo = part_first[p], width = part_first[p + 1] - lo;
    for (auto& b : builders)
      for (size_t slot = 0; slot < b->coll_refs.size(); ++slot) {
        const uint32_t row = tl.first_row[b->index] + static_cast<uint32_t>(slot);
        for (const CollectiveRef& ref : b->coll_refs[slot]) {
          if (ref.instance - lo >= width) continue;
          CollectiveInstance& in = instances[ref.instance];
          members[in.first_member + in.count++] = EventRefPublic{row, ref.first};
        }
      }
  });
  if (!grouped) return;
  instances.shrink_to_fit();  // (growth rounds room up: the untouched rest goes)
  members.shrink_to_fit();
  std::unique_lock lock(tl.pairs_mutex);
  tl.instances = std::move(instances);
  tl.members = std::move(members);
}

// Publishes each row's message ends, less those that found no partner,
// and its collective calls (a rank at a time, on the build's threads: a
// rank's rows are its own).
void publish_row_ends(Impl& tl, Builders& builders, unsigned threads) {
  const size_t ranks = builders.size();
  for_each_index(tl, ranks, threads, [&](size_t i) {
    RankBuilder* b = builders[i].get();
    for (uint32_t r = tl.first_row[b->index]; r < tl.first_row[b->index + 1]; ++r) {
      auto& sent = b->of_row(b->sent, r);
      auto& received = b->of_row(b->received, r);
      sent.erase(std::remove_if(sent.begin(), sent.end(), [](const SentMessage& m) { return m.recv_row == UINT32_MAX; }),
                 sent.end());
      received.erase(std::remove_if(received.begin(), received.end(),
                                    [](const ReceivedMessage& m) { return m.send_row == UINT32_MAX; }),
                     received.end());
      sent.shrink_to_fit();
      received.shrink_to_fit();
      b->of_row(b->coll_refs, r).shrink_to_fit();
      Row& row = *tl.rows[r];
      std::unique_lock lock(row.mutex);
      row.sent = std::move(sent);
      row.received = std::move(received);
      row.collectives = std::move(b->of_row(b->coll_refs, r));
    }
  });
}

// Waits per pyramid cell (timeline_waits.cpp): each instance's last
// enter, then each row's waits, on the build's threads.
void sum_waits(Impl& tl, unsigned threads) {
  detail::MappedArray<int64_t> last_enter;
  last_enter.resize_for_overwrite(tl.instances.size());
  std::fill(last_enter.begin(), last_enter.end(), std::numeric_limits<int64_t>::min());
  if (!for_each_index(tl, tl.rows.size(), threads, [&](size_t r) { collective_last_enters(tl, r, last_enter); }))
    return;
  {
    std::unique_lock lock(tl.pairs_mutex);
    tl.instance_last_enter = std::move(last_enter);
  }
  for_each_index(tl, tl.rows.size(), threads, [&](size_t r) { pyramid_waits(tl, r); });
}

// The whole build (Timeline::build); returns early when it stops.
void build_timeline(Impl& tl) {
  const size_t ranks = tl.dir.ranks.size();
  unsigned threads = tl.options.threads ? tl.options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(threads, ranks)));
  std::atomic<size_t> next{0};
  Builders builders(ranks);
  run_on_threads(tl, threads, [&] {
    BlockStage stage;  // the thread's, from rank to rank
    try {
      for (;;) {
        const size_t i = next.fetch_add(1);
        if (i >= ranks || tl.stopping()) break;
        auto b = std::make_unique<RankBuilder>(tl, i, stage);
        if (!b->run()) break;
        // Only what pairing needs is kept.
        b->node_cache = {};
        builders[i] = std::move(b);
        tl.ranks_built.fetch_add(1, std::memory_order_release);
        tl.report_progress();
      }
    } catch (...) {
      tl.fail(std::current_exception());
    }
    tl.retire(stage);  // (stopped too: queries may still read what was published)
  });
  if (tl.stopping()) return;

  pair_messages(tl, builders, threads);
  if (tl.stopping()) return;
  pair_collectives(tl, builders, threads);
  if (tl.failed.load()) return;
  publish_row_ends(tl, builders, threads);
  if (tl.failed.load()) return;
  builders.clear();
  sum_waits(tl, threads);
  if (tl.failed.load()) return;
  tl.finished.store(true, std::memory_order_release);
  if (tl.options.progress) {
    std::lock_guard lock(tl.progress_mutex);
    tl.options.progress(1.0);
  }
}

}  // namespace

bool Timeline::build(std::string* error) {
  Impl& tl = *impl_;
  try {
    build_timeline(tl);
  } catch (...) {  // (from this thread's steps between the threaded ones)
    tl.fail(std::current_exception());
  }
  if (!tl.failed.load()) return true;
  if (error) {
    try {
      std::lock_guard lock(tl.failure_mutex);
      *error = failure_message(tl.failure);
    } catch (...) {
      // (no memory even for the message: the false return says it failed)
    }
  }
  return false;
}

void Timeline::cancel() { impl_->cancel_flag.store(true); }
bool Timeline::cancelled() const { return impl_->cancel_flag.load(); }
bool Timeline::failed() const { return impl_->failed.load(); }
bool Timeline::complete() const { return impl_->finished.load(std::memory_order_acquire); }
bool Timeline::calls_complete() const {
  return impl_->ranks_built.load(std::memory_order_acquire) == impl_->dir.ranks.size();
}
double Timeline::built() const { return impl_->built_fraction(); }
const std::vector<TimelineRow>& Timeline::rows() const { return impl_->row_list; }
int Timeline::world_size() const { return impl_->dir.world_size; }
double Timeline::end() const {
  const int64_t e = impl_->last_leave.load(std::memory_order_relaxed);
  return e < 0 ? 0.0 : static_cast<double>(e);
}
std::string_view Timeline::function(uint32_t name) const {
  return name < impl_->registry.functions.size() ? std::string_view(impl_->registry.functions[name])
                                                 : std::string_view("(unknown)");
}
const std::string& Timeline::site(uint32_t index) const { return impl_->site_label(index); }
uint32_t Timeline::site_count() const { return static_cast<uint32_t>(impl_->site_labels.size()); }

uint32_t Timeline::call_site(const TimelineCall& call) const {
  if (call.kind == TimelineKind::Marker) return call.site;
  if (call.call_site_index == 0 || call.row >= impl_->row_list.size()) return 0;
  const auto first = std::upper_bound(impl_->first_row.begin(), impl_->first_row.end(), call.row);
  const size_t rank_index = static_cast<size_t>(first - impl_->first_row.begin()) - 1;
  std::lock_guard lock(impl_->names_mutex);
  const auto it = impl_->call_sites.find(Impl::call_site_key(rank_index, call.function_index, call.call_site_index));
  return it == impl_->call_sites.end() ? 0 : it->second;
}
std::vector<TimelineNode> Timeline::nodes() const {
  std::lock_guard lock(impl_->names_mutex);
  return impl_->node_list;
}
std::vector<std::string> Timeline::warnings() const {
  std::lock_guard lock(impl_->warnings_mutex);
  std::vector<std::string> out = impl_->warning_list;
  for (const auto& [category, count] : impl_->problem_counts)
    out.push_back(category + " (" + std::to_string(count) + ")");
  return out;
}
uint64_t Timeline::events() const { return impl_->events_built.load(std::memory_order_relaxed); }

}  // namespace prof::analysis
