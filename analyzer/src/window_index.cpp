// The window index: its building pass, its file, and the choice of start
// chunks for a window (the algorithm is in window_index.h).
#include "window_index.h"

#include "prof/safe_file.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace prof::analysis::detail {

namespace {

constexpr uint32_t kNoParentNode = UINT32_MAX;
constexpr uint32_t kRootIntervalId = UINT32_MAX;

// A handler that mirrors the engine's bookkeeping of what carries across
// chunks, and counts (analysis.cpp's Handler decides the same way).
struct Builder {
  const Registry& reg;
  const WorldIndex& world_to_index;
  size_t index;
  IntervalTracker tracker;
  RankWindowIndex out;
  std::vector<WindowCheckpoint> checkpoints;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> node_of;
  std::vector<uint64_t> executions{0};
  std::map<ChannelKey, uint64_t, ChannelLess> sends, recvs;
  bool cancelled_sends = false;

  Builder(const Registry& r, const WorldIndex& w, size_t i, int world_rank)
      : reg(r), world_to_index(w), index(i), tracker(world_rank) {
    out.nodes.push_back(WindowNode{kNoParentNode, kRootIntervalId, 0, std::numeric_limits<double>::infinity(), false});
  }

  bool call(const Event&, const FuncInfo& fi, double enter, double leave) {
    return tracker.call(fi, enter, leave, *this);
  }
  bool continuation() const { return tracker.in_root(); }
  void marker(const Event& e, double enter, double leave) { tracker.marker(e, enter, leave, *this); }
  void send(const ChannelKey& k, double, double, const Event&) {
    if (world_to_index(k.dst) >= 0) ++sends[k];
  }
  void recv(const ChannelKey& k, double, uint64_t, double, double, const Event&) {
    if (world_to_index(k.src) >= 0) ++recvs[k];
  }
  uint64_t hold(double) { return 0; }
  void release(uint64_t) {}
  void cancel_send(const ChannelKey&, double) { cancelled_sends = true; }
  void collective(const CommInfo& c, bool, double, double, const Event&) { ++*c.seq; }
  template <class F>
  void problem(WarningKind, F&&, uint64_t = 1) {}
  void root_started(double t) { out.nodes[0].first_enter = t; }
  uint32_t interval_begun(uint32_t, const Event& e, double t, uint32_t parent) {
    const uint32_t site = reg.site(index, e.callsite);
    auto [it, fresh] = node_of.emplace(std::make_tuple(parent, e.interval_id, site),
                                       static_cast<uint32_t>(out.nodes.size()));
    if (fresh) {
      out.nodes.push_back(WindowNode{parent, e.interval_id, site, t, false});
      executions.push_back(0);
    }
    WindowNode& n = out.nodes[it->second];
    n.first_enter = std::min(n.first_enter, t);
    return it->second;
  }
  void interval_ended(uint32_t, const OpenInterval& o, double) {
    ++executions[o.payload];
    out.nodes[o.payload].executed = true;
  }
  void root_ended(double) {
    ++executions[0];
    out.nodes[0].executed = true;
  }
};

template <class M>
std::vector<std::pair<ChannelKey, uint64_t>> sorted(const M& m) {
  return {m.begin(), m.end()};
}

// Where the next record is after `events` events of the rank, read by
// decoding them again from `from` (a position `from_events` events into the
// rank, valid, or the rank's start).
RankTrace::MergedCursor::Position position_after(const RankTrace& t, const RankTrace::MergedCursor::Position& from,
                                                 uint64_t from_events, uint64_t events) {
  RankTrace::MergedCursor c = from.valid ? t.events_from_position(from) : t.events();
  Event ev;
  for (uint64_t n = from.valid ? from_events : 0; n < events && c.next(ev); ++n) {
  }
  return c.position();
}

// Why a rank cannot be served, seen before its events are read ("" when it
// may be).
std::string cannot_serve(const RankTrace& t) {
  const std::string who = "rank " + std::to_string(t.rank());
  if (t.stream_count() > 1) return who + " has several threads";
  if (t.end_reason() != "finalize" || !t.in_flight().empty()) return who + " did not end by MPI_Finalize";
  return "";
}

// One rank's pass, which can stop between events and go on later, on any
// thread (a thread of idle priority hands its rank over this way).
//
// A checkpoint inside a chunk needs the cursor's position before its first
// event. The cursor gives it between its batches, or after each event read
// one by one (costlier: the batches decode runs of repeats from templates), so
// events are read one by one only where the next may start a checkpoint: from
// kBatchEvents before kCheckpointEvents have passed since the last one, and
// while some communicator's next collective call is an aligned one (its
// count a multiple of kCollectiveStride). An aligned call not foreseen when
// its batch began (a communicator's first, or one whose previous call on it
// came in the same batch: 8-17% of them on the synthetic and exchange traces)
// has its position found by decoding again from the last one read, with a
// cursor made afresh, which enters its chunk again and walks its records from
// the chunk's start for the repeats' state (done at every aligned call, that
// made the pass 2.9 times as long on 10^8 synthetic events: docs/performance.md,
// "prof-analyze --window"). The checkpoints are those of a pass reading one by
// one.
class RankBuild {
 public:
  // `t` is one that cannot_serve() passes.
  RankBuild(const RankTrace& t, const Registry& reg, size_t index, const WorldIndex& world_to_index)
      : t_(t), interp_(t, reg, index, world_to_index), b_(reg, world_to_index, index, t.rank()),
        cursor_(t.events()) {}

  // Decodes on to the rank's end (true), or until `pause`, asked every
  // kPauseEvents events, says to stop (false).
  static constexpr uint64_t kPauseEvents = 4096;
  bool run(const std::function<bool()>& pause) {
    Event ev;
    for (;;) {
      const uint64_t before = ordinal_;
      // (A batch of up to kBatchEvents ends before the event that may start
      // a checkpoint for kCheckpointEvents having passed.)
      if (since_ + kBatchEvents >= WindowIndex::kCheckpointEvents || aligned_next_ > 0) {
        if (!cursor_.next(ev)) return true;
        step(ev, true);
      } else {
        const std::span<const Event> batch = cursor_.next_batch();
        if (batch.empty()) return true;
        for (size_t i = 0; i < batch.size(); ++i) step(batch[i], false, i + 1 == batch.size());
      }
      if (ordinal_ / kPauseEvents != before / kPauseEvents && pause && pause()) return false;
    }
  }

  // Once run() returned true: why the rank cannot be served, or "" and its
  // index in *out.
  std::string finish(RankWindowIndex* out) {
    Builder& b = b_;
    if (t_.heartbeat() != 0) b.tracker.note_alive([this] { return interp_.global(t_.last_alive()); });
    b.tracker.finish(b);
    // The cursor looks into the next chunk after every Completion or RequestOp
    // call that ends a chunk, for continuation records: a chunk it looked into
    // is unclean only when one is there (a cursor started at it delivers that
    // record alone, flagged).
    for (WindowCheckpoint& cp : b.checkpoints) {
      if (cp.clean) continue;
      RankTrace::MergedCursor from = t_.events_from_chunks({cp.chunk});
      Event first;
      cp.clean = from.next(first) && from.current_chunk() == cp.chunk && !(first.flags & format::kContinuation);
    }
    const std::string who = "rank " + std::to_string(t_.rank());
    const trace::ReadStats& s = t_.stats();
    if (s.crc_mismatches || s.unsealed_chunks || s.truncated_chunks || s.missing_chunks ||
        s.bad_chunk_headers || s.bad_records)
      return who + " has damaged or salvaged chunks";
    if (b.cancelled_sends) return who + " cancelled sends";
    Interpreter::Saved last;
    interp_.save(last);
    for (const auto& [gid, n] : last.collective_counts)
      if (n > 0) b.out.collective_comms.push_back(gid);
    b.out.chunks = t_.chunk_count(0);
    b.out.last_leave = b.tracker.last_leave();
    b.out.checkpoints.assign(std::move(b.checkpoints));
    *out = std::move(b.out);
    return "";
  }

 private:
  static constexpr uint64_t kAnchorEvents = 64;
  static constexpr uint64_t kBatchEvents = RankTrace::MergedCursor::kBatchEvents;

  // One event, read one by one (`exact`: the position after it is the
  // cursor's), or of a batch (the position known only after its last).
  void step(const Event& ev, bool exact, bool last_of_batch = false) {
    Builder& b = b_;
    const double enter = interp_.global(ev.enter);
    const size_t now = cursor_.current_chunk();
    // Every member of a communicator puts one before the same collective
    // calls on it, so WindowIndex::plan finds starts where all have made as
    // many within kCollectiveStride calls (ranks whose other checkpoints fall
    // at other calls would otherwise move back far).
    bool aligned = false;
    if (ev.kind == FuncKind::Collective || ev.kind == FuncKind::ICollective || ev.kind == FuncKind::AllToAll ||
        ev.kind == FuncKind::IAllToAll) {
      const auto [it, first] = collective_calls_.try_emplace(ev.comm, 0);
      aligned = it->second % WindowIndex::kCollectiveStride == 0;
      if (aligned && !first) --aligned_next_;
      if (++it->second % WindowIndex::kCollectiveStride == 0) ++aligned_next_;
    }
    if (aligned && !next_known_) {
      next_at_ = position_after(t_, anchor_, anchor_events_, ordinal_);
      next_known_ = true;
    }
    const bool inside = (since_ >= WindowIndex::kCheckpointEvents || aligned) && next_known_ && next_at_.valid &&
                        next_at_.chunk == now;
    if (now != chunk_ || inside) {
      WindowCheckpoint cp;
      cp.chunk = static_cast<uint32_t>(now);
      if (now == chunk_) cp.at = next_at_;
      cp.ordinal = ordinal_;
      chunk_ = now;
      since_ = 0;
      cp.clean = cp.at.valid || !continued_;
      cp.first_enter = enter;
      cp.last_leave = enter;
      interp_.save(cp.interp);
      b.tracker.save(cp.tracker);
      cp.executions = b.executions;
      cp.sends = sorted(b.sends);
      cp.recvs = sorted(b.recvs);
      b.checkpoints.push_back(std::move(cp));
    }
    // Only a Completion or RequestOp call reads on into the next chunk (for
    // its continuation records).
    continued_ = (ev.kind == FuncKind::Completion || ev.kind == FuncKind::RequestOp) && cursor_.reading_chunk() != now;
    interp_.process(ev, enter, b);
    WindowCheckpoint& cp = b.checkpoints.back();
    cp.last_leave = std::max(cp.last_leave, interp_.global(ev.leave));
    ++ordinal_;
    ++since_;
    const bool read = exact ? since_ >= WindowIndex::kCheckpointEvents || aligned_next_ > 0 ||
                                  ordinal_ % kAnchorEvents == 0
                            : last_of_batch;
    next_known_ = false;
    if (read) {
      next_at_ = cursor_.position();
      // (After a batch that ended before a list call it keeps prepared, the
      // cursor gives no position where one read one by one would: it is then
      // found again from the anchor, as inside a batch.)
      next_known_ = exact || next_at_.valid;
      if (next_at_.valid) {
        anchor_ = next_at_;
        anchor_events_ = ordinal_;
      }
    }
  }

  const RankTrace& t_;
  Interpreter interp_;
  Builder b_;
  RankTrace::MergedCursor cursor_;
  size_t chunk_ = SIZE_MAX;
  bool continued_ = false;  // the last call read on into the next chunk
  uint64_t ordinal_ = 0, since_ = 0;
  RankTrace::MergedCursor::Position next_at_;  // where the next record is, when next_known_
  bool next_known_ = true;                     // (nothing read yet: none)
  RankTrace::MergedCursor::Position anchor_;   // a valid position read earlier, or none
  uint64_t anchor_events_ = 0;                 // events before it
  std::map<uint32_t, uint64_t> collective_calls_;  // per communicator handle
  uint64_t aligned_next_ = 0;  // communicators called before whose next call is aligned
};

// ---------------------------------------------------------------------------
// The file: a header (magic, version, checksum of the rest, run id, per rank
// file size), then every rank's nodes and checkpoints, little-endian PODs.

constexpr char kMagic[8] = {'P', 'R', 'O', 'F', 'W', 'I', 'D', 'X'};

struct Out {
  std::string b;
  template <class T>
  void put(const T& v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    b += s;
  }
};

struct In {
  const char* p;
  const char* end;
  bool ok = true;
  template <class T>
  T get() {
    T v{};
    if (static_cast<size_t>(end - p) < sizeof v) {
      ok = false;
      return v;
    }
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  // A count about to be read `each` bytes at a time: never more than is left.
  size_t count(size_t each) {
    const uint64_t n = get<uint64_t>();
    if (!ok || n > static_cast<uint64_t>(end - p) / std::max<size_t>(each, 1)) {
      ok = false;
      return 0;
    }
    return static_cast<size_t>(n);
  }
  std::string str() {
    const uint32_t n = get<uint32_t>();
    if (!ok || n > static_cast<size_t>(end - p)) {
      ok = false;
      return {};
    }
    std::string s(p, n);
    p += n;
    return s;
  }
};

// CRC-32C (in hardware where the CPU has it: the index is read on every window).
uint64_t checksum(const char* p, size_t n) { return format::crc32c(p, n); }

// A channel as the struct lies in memory (get<ChannelKey> reads it back),
// field by field with its padding as zeros: equal states give equal bytes.
void put_key(Out& o, const ChannelKey& k) {
  static_assert(sizeof(ChannelKey) == 24);
  o.put(k.gid);
  o.put(k.src);
  o.put(k.dst);
  o.put(k.tag);
  o.put<uint32_t>(0);
}

void put_request(Out& o, uint32_t handle, const Request& r) {
  o.put(handle);
  o.put<uint8_t>(r.type);
  o.put<uint8_t>(static_cast<uint8_t>(r.active | r.started << 1 | r.a2a << 2 | (r.comm != nullptr) << 3 |
                                      (r.hold != HoldQueue::kNone) << 4));
  o.put(r.peer);
  o.put(r.tag);
  put_key(o, r.key);
  o.put(r.send_enter);
  o.put(r.issue);
  o.put(r.comm_handle);
  o.put(r.comm_time);
}

// Marks a restored request as having a communicator: the index stores its
// handle and time, and Interpreter::restore sets the pointer from them.
const CommInfo kCommToLookUp{};

std::pair<uint32_t, Request> get_request(In& in) {
  std::pair<uint32_t, Request> out;
  out.first = in.get<uint32_t>();
  Request& r = out.second;
  r.type = static_cast<Request::Type>(in.get<uint8_t>());
  const uint8_t bits = in.get<uint8_t>();
  r.active = bits & 1;
  r.started = bits & 2;
  r.a2a = bits & 4;
  r.comm = bits & 8 ? &kCommToLookUp : nullptr;
  r.hold = bits & 16 ? 0 : HoldQueue::kNone;
  r.peer = in.get<int32_t>();
  r.tag = in.get<int32_t>();
  r.key = in.get<ChannelKey>();
  r.send_enter = in.get<double>();
  r.issue = in.get<double>();
  r.comm_handle = in.get<uint32_t>();
  r.comm_time = in.get<uint64_t>();
  return out;
}

void put_counts(Out& o, const std::vector<std::pair<ChannelKey, uint64_t>>& v) {
  o.put<uint64_t>(v.size());
  for (const auto& [k, n] : v) {
    put_key(o, k);
    o.put(n);
  }
}

std::vector<std::pair<ChannelKey, uint64_t>> get_counts(In& in) {
  std::vector<std::pair<ChannelKey, uint64_t>> v(in.count(sizeof(ChannelKey) + 8));
  for (auto& [k, n] : v) {
    k = in.get<ChannelKey>();
    n = in.get<uint64_t>();
  }
  return v;
}

void put_checkpoint(Out& o, const WindowCheckpoint& c) {
  o.put(c.chunk);
  o.put<uint8_t>(c.clean);
  o.put<uint8_t>(c.at.valid);
  o.put(c.at.offset);
  o.put(c.at.chain);
  o.put(c.at.context_comm);
  o.put(c.at.context_request_high);
  o.put(c.at.context_avail);
  o.put(c.ordinal);
  o.put<uint64_t>(c.interp.requests.size());
  for (const auto& [h, req] : c.interp.requests) put_request(o, h, req);
  o.put(c.interp.grequests);
  o.put<uint64_t>(c.interp.collective_counts.size());
  for (const auto& [g, n] : c.interp.collective_counts) {
    o.put(g);
    o.put(n);
  }
  const IntervalTracker::Saved& t = c.tracker;
  o.put<uint8_t>(static_cast<uint8_t>(t.root));
  o.put(t.root_start);
  o.put(t.last_leave);
  o.put(t.unbalanced);
  o.put<uint64_t>(t.stream_ids.size());
  for (size_t s = 0; s < t.stream_ids.size(); ++s) {
    o.put(t.stream_ids[s]);
    o.put<uint64_t>(t.stacks[s].size());
    for (const OpenInterval& e : t.stacks[s]) o.put(e);
  }
  o.put<uint64_t>(c.executions.size());
  for (uint64_t n : c.executions) o.put(n);
  put_counts(o, c.sends);
  put_counts(o, c.recvs);
}

// One checkpoint record, all of it; false when it does not parse or refers
// outside the rank's `nodes` tree nodes.
bool get_checkpoint(In& in, size_t nodes, WindowCheckpoint* out) {
  WindowCheckpoint& c = *out;
  c.chunk = in.get<uint32_t>();
  c.clean = in.get<uint8_t>() != 0;
  c.at.valid = in.get<uint8_t>() != 0;
  c.at.chunk = c.chunk;
  c.at.offset = in.get<uint32_t>();
  c.at.chain = in.get<uint64_t>();
  c.at.context_comm = in.get<uint32_t>();
  c.at.context_request_high = in.get<uint32_t>();
  c.at.context_avail = in.get<uint8_t>();
  c.ordinal = in.get<uint64_t>();
  c.interp.requests.resize(in.count(40));
  for (auto& q : c.interp.requests) q = get_request(in);
  c.interp.grequests = in.get<uint64_t>();
  c.interp.collective_counts.resize(in.count(16));
  for (auto& [g, n] : c.interp.collective_counts) {
    g = in.get<uint64_t>();
    n = in.get<uint64_t>();
  }
  IntervalTracker::Saved& t = c.tracker;
  const uint8_t root = in.get<uint8_t>();
  if (root > 2) return false;
  t.root = static_cast<IntervalTracker::Root>(root);
  t.root_start = in.get<double>();
  t.last_leave = in.get<double>();
  t.unbalanced = in.get<uint64_t>();
  const size_t streams = in.count(12);
  for (size_t s = 0; s < streams && in.ok; ++s) {
    t.stream_ids.push_back(in.get<uint32_t>());
    std::vector<OpenInterval> stack(in.count(sizeof(OpenInterval)));
    for (OpenInterval& e : stack) e = in.get<OpenInterval>();
    t.stacks.push_back(std::move(stack));
  }
  c.executions.resize(in.count(8));
  for (uint64_t& n : c.executions) n = in.get<uint64_t>();
  c.sends = get_counts(in);
  c.recvs = get_counts(in);
  if (!in.ok || in.p != in.end) return false;
  // Node references must stay inside the node table.
  for (const auto& stack : t.stacks)
    for (const OpenInterval& e : stack)
      if (e.payload >= nodes) return false;
  return c.executions.size() <= nodes;
}

// Per rank: its figures and nodes, a table of its checkpoints (times, record
// size), then the records, so a reader parses only the records it uses.
void serialize_rank(Out& o, const RankWindowIndex& r) {
  o.put<uint64_t>(r.chunks);
  o.put(r.last_leave);
  o.put<uint64_t>(r.nodes.size());
  for (const WindowNode& n : r.nodes) {
    o.put(n.parent);
    o.put(n.id);
    o.put(n.site);
    o.put(n.first_enter);
    o.put<uint8_t>(n.executed);
  }
  o.put<uint64_t>(r.collective_comms.size());
  for (uint64_t g : r.collective_comms) o.put(g);
  std::vector<Out> records(r.checkpoints.size());
  for (size_t i = 0; i < records.size(); ++i) put_checkpoint(records[i], r.checkpoints[i]);
  o.put<uint64_t>(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    o.put(r.checkpoints.first_enter(i));
    o.put(r.checkpoints.last_leave(i));
    o.put<uint64_t>(records[i].b.size());
  }
  for (const Out& rec : records) o.b += rec.b;
}

std::string serialize(const WindowIndex& ix) {
  Out o;
  o.str(ix.unusable);
  o.put<uint64_t>(ix.ranks.size());
  for (const RankWindowIndex& r : ix.ranks) serialize_rank(o, r);
  return o.b;
}

// `sites`: the registry's count; a node's site is an index into it.
bool deserialize_rank(In& in, const std::shared_ptr<const IndexFileBytes>& file, size_t sites, RankWindowIndex& r) {
  r.chunks = in.get<uint64_t>();
  r.last_leave = in.get<double>();
  r.nodes.resize(in.count(21));
  for (WindowNode& n : r.nodes) {
    n.parent = in.get<uint32_t>();
    n.id = in.get<uint32_t>();
    n.site = in.get<uint32_t>();
    n.first_enter = in.get<double>();
    n.executed = in.get<uint8_t>() != 0;
  }
  r.collective_comms.resize(in.count(8));
  for (uint64_t& g : r.collective_comms) g = in.get<uint64_t>();
  std::vector<WindowCheckpoints::Span> spans(in.count(24));
  for (auto& sp : spans) {
    sp.first_enter = in.get<double>();
    sp.last_leave = in.get<double>();
    sp.size = in.get<uint64_t>();
  }
  if (!in.ok) return false;
  for (auto& sp : spans) {
    if (sp.size > static_cast<uint64_t>(in.end - in.p)) return false;
    sp.offset = static_cast<uint64_t>(in.p - file->data());
    in.p += sp.size;
  }
  for (size_t i = 1; i < r.nodes.size(); ++i)
    if (r.nodes[i].parent >= i || r.nodes[i].site >= sites) return false;
  r.checkpoints.assign(file, std::move(spans), r.nodes.size());
  return true;
}

// `in` reads `file`; the checkpoint records are kept there, unparsed. `keep`,
// when not null: the ranks (by index) whose parts are kept, the others' read
// past and left empty.
bool deserialize(In& in, const std::shared_ptr<const IndexFileBytes>& file, size_t sites, WindowIndex* ix,
                 const std::vector<uint8_t>* keep = nullptr) {
  ix->unusable = in.str();
  ix->ranks.resize(in.count(8));
  for (size_t i = 0; i < ix->ranks.size(); ++i) {
    if (!keep || (i < keep->size() && (*keep)[i])) {
      if (!deserialize_rank(in, file, sites, ix->ranks[i])) return false;
    } else {
      RankWindowIndex other;
      if (!deserialize_rank(in, file, sites, other)) return false;
    }
  }
  return in.ok && in.p == in.end;
}

// What the index must match: the run and every rank file's size, a fixed
// size entry a rank after their count. (The size the reader opened, not a
// stat of each path: at 10^5 ranks those took a fifth of a second on one
// core.)
void put_key_entry(Out& o, const RankTrace& t) {
  o.put<uint64_t>(t.header().run_id);
  o.put<int32_t>(t.rank());
  o.put<uint64_t>(t.file_bytes());
}
constexpr size_t kKeyEntryBytes = 20;

std::string trace_key(const trace::TraceDir& dir) {
  Out o;
  o.put<uint64_t>(dir.ranks.size());
  for (const auto& t : dir.ranks) put_key_entry(o, *t);
  return o.b;
}

// Why the file cannot be trusted ("" when it can), and the index in *ix.
// `fits` says whether the trace's key (read from the file) is the trace's;
// `reg`, the trace's registry, bounds what the index refers to in it.
std::string read_index(const std::string& path, const std::function<bool(const std::string&)>& fits,
                       const Registry& reg, WindowIndex* ix, const std::vector<uint8_t>* keep = nullptr) {
  std::string why;
  const std::shared_ptr<const IndexFileBytes> file = IndexFileBytes::open(path, &why);
  if (!file) return why;
  In in{file->data(), file->data() + file->size()};
  char magic[8];
  for (char& c : magic) c = in.get<char>();
  if (!in.ok || std::memcmp(magic, kMagic, 8) != 0) return "not a window index";
  if (in.get<uint32_t>() != WindowIndex::kVersion) return "another version";
  const uint64_t sum = in.get<uint64_t>();
  if (!in.ok || sum != checksum(in.p, static_cast<size_t>(in.end - in.p))) return "corrupt (checksum)";
  if (!fits(in.str())) return "stale (the trace changed)";
  if (!deserialize(in, file, reg.sites.size(), ix, keep)) return "corrupt (malformed)";
  return "";
}
std::string read_index(const std::string& path, const std::string& key, const Registry& reg, WindowIndex* ix) {
  return read_index(path, [&key](const std::string& k) { return k == key; }, reg, ix);
}

// Replays a rank from a checkpoint, counting its sends per channel as the
// engine would, and keeps the enters of the sends asked for.
struct SendCollector {
  const WorldIndex& world_to_index;
  IntervalTracker tracker;
  std::map<ChannelKey, uint64_t, ChannelLess> sent;
  std::map<ChannelKey, WantedSends*, ChannelLess> wanted;

  bool call(const Event&, const FuncInfo& fi, double enter, double leave) {
    return tracker.call(fi, enter, leave, *this);
  }
  bool continuation() const { return tracker.in_root(); }
  void marker(const Event& e, double enter, double leave) { tracker.marker(e, enter, leave, *this); }
  void send(const ChannelKey& k, double enter, double, const Event&) {
    if (world_to_index(k.dst) < 0) return;
    const uint64_t n = sent[k]++;
    auto it = wanted.find(k);
    if (it != wanted.end() && n >= it->second->from && n < it->second->to) it->second->enters.push_back(enter);
  }
  void recv(const ChannelKey&, double, uint64_t, double, double, const Event&) {}
  uint64_t hold(double) { return 0; }
  void release(uint64_t) {}
  void cancel_send(const ChannelKey&, double) {}
  void collective(const CommInfo& c, bool, double, double, const Event&) { ++*c.seq; }
  template <class F>
  void problem(WarningKind, F&&, uint64_t = 1) {}
  void root_started(double) {}
  uint32_t interval_begun(uint32_t, const Event&, double, uint32_t) { return 0; }
  void interval_ended(uint32_t, const OpenInterval&, double) {}
  void root_ended(double) {}
};

}  // namespace

std::shared_ptr<const IndexFileBytes> IndexFileBytes::open(const std::string& path, std::string* why) {
  std::string error;
  const trace::RegularFile file = trace::open_regular_file(path, &error);
  if (file.fd < 0) {
    *why = file.open_errno == ENOENT ? "absent" : "unreadable";
    return nullptr;
  }
  const int fd = file.fd;
  auto bytes = std::make_shared<IndexFileBytes>();
  bytes->size_ = static_cast<size_t>(file.size);
  if (bytes->size_ > 0) {
    void* m = ::mmap(nullptr, bytes->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      bytes->mapping_ = m;
      bytes->data_ = static_cast<const char*>(m);
    }
  }
  if (!bytes->mapping_) {
    bytes->copy_.resize(bytes->size_);
    size_t got = 0;
    while (got < bytes->size_) {
      const ssize_t n = ::pread(fd, bytes->copy_.data() + got, bytes->size_ - got, static_cast<off_t>(got));
      if (n > 0) got += static_cast<size_t>(n);
      else if (n < 0 && errno == EINTR) continue;
      else break;
    }
    bytes->copy_.resize(got);  // (shorter: the checks below fail on it)
    bytes->size_ = got;
    bytes->data_ = bytes->copy_.data();
  }
  ::close(fd);  // the mapping keeps the file's pages
  return bytes;
}

IndexFileBytes::~IndexFileBytes() {
  if (mapping_) ::munmap(mapping_, size_);
}

void WindowCheckpoints::assign(std::vector<WindowCheckpoint> all) {
  spans_.clear();
  parsed_.clear();
  for (WindowCheckpoint& c : all) {
    spans_.push_back(Span{c.first_enter, c.last_leave, 0, 0});
    parsed_.push_back(std::make_unique<WindowCheckpoint>(std::move(c)));
  }
  file_.reset();
}

void WindowCheckpoints::assign(std::shared_ptr<const IndexFileBytes> file, std::vector<Span> spans, size_t nodes) {
  spans_ = std::move(spans);
  file_ = std::move(file);
  nodes_ = nodes;
  parsed_.clear();
  parsed_.resize(spans_.size());
}

const WindowCheckpoint& WindowCheckpoints::operator[](size_t i) const {
  if (!parsed_[i]) {
    const Span& sp = spans_[i];
    In in{file_->data() + sp.offset, file_->data() + sp.offset + sp.size};
    auto c = std::make_unique<WindowCheckpoint>();
    if (get_checkpoint(in, nodes_, c.get())) {
      c->first_enter = sp.first_enter;
      c->last_leave = sp.last_leave;
    } else {
      c = std::make_unique<WindowCheckpoint>();  // (what get_checkpoint filled in is dropped)
      malformed_ = true;
    }
    parsed_[i] = std::move(c);
  }
  return *parsed_[i];
}

bool WindowIndex::malformed() const {
  for (const RankWindowIndex& r : ranks)
    if (r.checkpoints.malformed()) return true;
  return false;
}

uint64_t collect_sends(const RankTrace& t, const Registry& reg, size_t index,
                       const WorldIndex& world_to_index, const RankWindowIndex& ri, size_t start,
                       std::vector<WantedSends>& wanted) {
  if (wanted.empty() || start >= ri.checkpoints.size()) return 0;
  // The latest checkpoint before every send asked for.
  size_t from = start;
  for (const WantedSends& w : wanted)
    while (from > 0 && (ri.checkpoints[from].sends_on(w.key) > w.from || !ri.checkpoints[from].clean)) --from;
  const WindowCheckpoint& cp = ri.checkpoints[from];
  Interpreter interp(t, reg, index, world_to_index);
  SendCollector c{world_to_index, IntervalTracker(t.rank()), {}, {}};
  interp.restore(cp.interp, c);
  c.tracker.restore(cp.tracker);
  for (const auto& [k, n] : cp.sends) c.sent[k] = n;
  for (WantedSends& w : wanted) c.wanted[w.key] = &w;
  RankTrace::MergedCursor cursor = cp.at.valid ? t.events_from_position(cp.at) : t.events_from_chunks({cp.chunk});
  Event ev;
  for (uint64_t left = ri.checkpoints[start].ordinal - cp.ordinal; left > 0 && cursor.next(ev); --left)
    interp.process(ev, interp.global(ev.enter), c);
  return ri.checkpoints[start].chunk - cp.chunk;
}

// ---------------------------------------------------------------------------
// Where the file lives, and its building by a pool of threads

namespace {

// The user's cache directory: $XDG_CACHE_HOME when it is an absolute path
// (the XDG rule), else ~/.cache; empty when there is no home.
std::string cache_base() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return xdg;
  std::string home;
  if (const char* h = std::getenv("HOME"); h && h[0] == '/') home = h;
  else if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_dir && pw->pw_dir[0] == '/') home = pw->pw_dir;
  return home.empty() ? home : home + "/.cache";
}

// FNV-1a, 64 bits: it makes a name; the key inside the file decides whether
// an index fits the trace.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::filesystem::path trace_directory(const trace::TraceDir& dir) {
  const std::filesystem::path p = std::filesystem::path(dir.ranks[0]->path()).parent_path();
  return p.empty() ? std::filesystem::path(".") : p;
}

// Makes the cache directory `path` (and the base above it, as the XDG rule
// asks) with mode 0700 where missing, and checks that it is a directory of the
// user's that no one else can write to, not a link someone planted.
bool make_cache_directory(const std::string& path, std::string* error) {
  for (const std::string& d : {std::filesystem::path(path).parent_path().string(), path})
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) {
      *error = d + ": " + std::strerror(errno);
      return false;
    }
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    *error = path + ": not a directory of the user's own that only the user can write to";
    return false;
  }
  return true;
}

// The index that fits the trace (key and rank count) at `places`, beside
// first: its path, or "" and in *why what was wrong with the first file found
// ("absent" when there is none).
std::string find_index(const IndexPlaces& places, const std::string& key, size_t ranks, const Registry& reg,
                       WindowIndex* ix, std::string* why) {
  *why = "absent";
  for (const std::string* path : {&places.beside, &places.cache}) {
    if (path->empty()) continue;
    WindowIndex got;
    const std::string w = read_index(*path, key, reg, &got);
    if (w.empty() && got.ranks.size() == ranks) {
      *ix = std::move(got);
      return *path;
    }
    if (*why == "absent") *why = w.empty() ? "another number of ranks" : w;
  }
  return "";
}

// The file's bytes: magic, version, checksum of the rest, the trace's key, the index.
std::string index_file(const std::string& key, const WindowIndex& ix) {
  Out o;
  o.b.append(kMagic, 8);
  o.put<uint32_t>(WindowIndex::kVersion);
  Out body;
  body.str(key);
  body.b += serialize(ix);
  o.put<uint64_t>(checksum(body.b.data(), body.b.size()));
  o.b += body.b;
  return std::move(o.b);
}

// Writes the file beside the trace where its directory can be written (unless
// `how` says the cache), else, or when that fails, in the cache. Returns the
// path written, or "" and the reasons in *error. Each write goes through a
// temporary file of its own (two analyses of one trace may write at once) and
// never through a link someone planted (trace::replace_file).
std::string write_index(const IndexPlaces& places, const std::string& bytes, const IndexWriting& how,
                        std::string* error) {
  std::string errors;
  auto failed = [&](const std::string& e) { errors += (errors.empty() ? "" : "; ") + e; };
  if (!how.cache_only) {
    const std::string dir = std::filesystem::path(places.beside).parent_path().string();
    std::string e;
    if (::faccessat(AT_FDCWD, dir.c_str(), W_OK, AT_EACCESS) != 0)
      failed(dir + ": " + std::strerror(errno));
    else if (trace::replace_file(places.beside, bytes, &e))
      return places.beside;
    else
      failed(e);
  }
  if (places.cache.empty()) {
    failed("no cache directory (no home directory)");
  } else {
    std::string e;
    if (make_cache_directory(std::filesystem::path(places.cache).parent_path().string(), &e) &&
        trace::replace_file(places.cache, bytes, &e))
      return places.cache;
    failed(e);
  }
  *error = errors;
  return "";
}

std::string built_note(const std::string& why, const std::string& where) {
  return (why == "absent" ? "built " : "rebuilt (" + why + ") ") + where;
}

// Every rank's part of the index, ranks taken in turn by the threads that run
// work(); threads may join while others work. A thread of idle priority
// (work(true)) leaves at hand_over(), leaving the rank it holds where another
// thread goes on with it.
struct RankBuilds {
  const trace::TraceDir& dir;
  const Registry& reg;
  const WorldIndex& world_to_index;
  // Asked between events (RankBuild::run): true abandons every rank ("stopped").
  std::function<bool()> stop;
  WindowIndex ix;
  std::vector<std::string> unusable;

  // `block`: the rank indices to build, in order (empty: every rank).
  RankBuilds(const trace::TraceDir& d, const Registry& r, const WorldIndex& w, std::vector<size_t> block = {})
      : dir(d), reg(r), world_to_index(w), unusable(d.ranks.size()), ranks_to_build_(std::move(block)) {
    if (ranks_to_build_.empty())
      for (size_t i = 0; i < d.ranks.size(); ++i) ranks_to_build_.push_back(i);
    ix.ranks.resize(d.ranks.size());
    // A rank that cannot be served makes the index unusable: then no pass is
    // worth making (a run cut short is common where windows are wanted).
    for (size_t i : ranks_to_build_)
      if (!(unusable[i] = cannot_serve(*d.ranks[i])).empty()) next_ = ranks_to_build_.size();
  }

  void hand_over() {
    std::lock_guard lock(mu_);
    handing_over_ = true;
  }

  void work(bool idle = false) {
    for (;;) {
      if (stop && stop()) return;
      size_t i = 0;
      std::unique_ptr<RankBuild> b;
      {
        std::unique_lock lock(mu_);
        // (Ranks an idle thread holds come back here, or are done.)
        changed_.wait(lock, [&] { return idle || !parked_.empty() || next_ < ranks_to_build_.size() || held_idle_ == 0; });
        if (idle && handing_over_) return;
        if (!parked_.empty()) {
          i = parked_.back().first;
          b = std::move(parked_.back().second);
          parked_.pop_back();
        } else if (next_ < ranks_to_build_.size()) {
          i = ranks_to_build_[next_++];
        } else {
          return;
        }
        if (idle) ++held_idle_;
      }
      bool parked = false;
      try {
        if (!b) b = std::make_unique<RankBuild>(*dir.ranks[i], reg, i, world_to_index);
        const bool done = b->run([&] { return (stop && stop()) || (idle && handing_over()); });
        if (done) unusable[i] = b->finish(&ix.ranks[i]);
        else if (stop && stop()) unusable[i] = "stopped";
        else parked = true;
      } catch (const std::exception&) {
        unusable[i] = "stopped";  // (out of memory: nothing is written)
      }
      std::lock_guard lock(mu_);
      if (parked) parked_.emplace_back(i, std::move(b));
      if (idle) --held_idle_;
      changed_.notify_all();
    }
  }

  bool stopped() const { return std::find(unusable.begin(), unusable.end(), "stopped") != unusable.end(); }
  // Once every work() has returned: the index, which says why it cannot
  // serve windows (the first rank's reason, in rank order) and holds no rank's
  // data when one cannot be served.
  WindowIndex take() {
    for (size_t i = 0; i < unusable.size(); ++i)
      if (const std::string& u = unusable[i]; !u.empty()) {
        ix.unusable = u;
        ix.unusable_at = i;
        ix.ranks.clear();
        ix.ranks.resize(dir.ranks.size());
        break;
      }
    return std::move(ix);
  }

 private:
  bool handing_over() {
    std::lock_guard lock(mu_);
    return handing_over_;
  }

  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<size_t> ranks_to_build_;  // by index
  size_t next_ = 0;                     // the next of ranks_to_build_ no thread has taken
  size_t held_idle_ = 0;            // ranks idle threads hold
  bool handing_over_ = false;
  std::vector<std::pair<size_t, std::unique_ptr<RankBuild>>> parked_;
};

}  // namespace

IndexPlaces window_index_places(const trace::TraceDir& dir) {
  IndexPlaces p;
  if (dir.ranks.empty()) return p;
  const std::filesystem::path trace = trace_directory(dir);
  p.beside = (trace / format::kWindowIndexFileName).string();
  const std::string base = cache_base();
  if (base.empty()) return p;
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::canonical(trace, ec);
  if (ec) absolute = std::filesystem::absolute(trace, ec);
  char name[48];
  std::snprintf(name, sizeof name, "window-index-%016llx.bin",
                static_cast<unsigned long long>(
                    fnv1a(absolute.string() + '\n' + std::to_string(dir.ranks[0]->header().run_id))));
  p.cache = base + "/prof/" + name;
  return p;
}

WindowIndex load_or_build_window_index(const trace::TraceDir& dir, const Registry& reg,
                                       const WorldIndex& world_to_index, unsigned threads,
                                       const IndexWriting& how, std::string* note) {
  const IndexPlaces places = window_index_places(dir);
  const std::string key = trace_key(dir);
  WindowIndex ix;
  std::string why;
  if (const std::string at = find_index(places, key, dir.ranks.size(), reg, &ix, &why); !at.empty()) {
    *note = "used " + at;
    return ix;
  }
  RankBuilds builds(dir, reg, world_to_index);
  std::vector<std::thread> pool;
  const size_t n = std::max<size_t>(1, std::min<size_t>(threads, dir.ranks.size()));
  for (size_t t = 1; t < n; ++t) pool.emplace_back([&builds] { builds.work(); });
  builds.work();
  for (auto& t : pool) t.join();
  ix = builds.take();
  if (!how.write) {
    *note = built_note(why, "in memory (writing it is turned off)");
    return ix;
  }
  std::string error;
  const std::string at = write_index(places, index_file(key, ix), how, &error);
  *note = built_note(why, at.empty() ? places.beside + " (could not be written: " + error + "; kept in memory)" : at);
  return ix;
}

std::string read_index_part(const std::string& path, const trace::TraceDir& dir, const Registry& reg,
                            const std::vector<size_t>& block, WindowIndex* ix) {
  const size_t R = dir.ranks.size();
  std::vector<uint8_t> keep(R, 0);
  for (size_t i : block) keep[i] = 1;
  // The key's count, and the entries of the ranks held here (the others'
  // processes check theirs).
  auto fits = [&](const std::string& key) {
    if (key.size() != 8 + kKeyEntryBytes * R) return false;
    Out count;
    count.put<uint64_t>(R);
    if (key.compare(0, 8, count.b) != 0) return false;
    for (size_t i : block) {
      Out e;
      put_key_entry(e, *dir.ranks[i]);
      if (key.compare(8 + kKeyEntryBytes * i, kKeyEntryBytes, e.b) != 0) return false;
    }
    return true;
  };
  const std::string why = read_index(path, fits, reg, ix, &keep);
  if (why.empty() && ix->ranks.size() != R) return "another number of ranks";
  if (why.empty() && !ix->unusable.empty()) ix->unusable_at = 0;  // (the same reason in every part)
  return why;
}

WindowIndex build_window_index_part(const trace::TraceDir& dir, const Registry& reg, const WorldIndex& world_to_index,
                                    unsigned threads, const std::vector<size_t>& block) {
  RankBuilds builds(dir, reg, world_to_index, block);
  std::vector<std::thread> pool;
  const size_t n = std::max<size_t>(1, std::min<size_t>(threads, block.size()));
  for (size_t t = 1; t < n; ++t) pool.emplace_back([&builds] { builds.work(); });
  builds.work();
  for (auto& t : pool) t.join();
  return builds.take();
}

std::string index_part(const trace::TraceDir& dir, const WindowIndex& ix, const std::vector<size_t>& block) {
  Out o;
  for (size_t i : block) {
    o.put<uint32_t>(static_cast<uint32_t>(i));
    put_key_entry(o, *dir.ranks[i]);
    Out section;
    serialize_rank(section, ix.ranks[i]);
    o.put<uint64_t>(section.b.size());
    o.b += section.b;
  }
  return std::move(o.b);
}

std::string write_index_parts(const trace::TraceDir& dir, const std::vector<std::string>& parts,
                              const std::string& unusable, const IndexWriting& how, const std::string& why) {
  const size_t R = dir.ranks.size();
  std::vector<std::string_view> entry(R), section(R);
  for (const std::string& part : parts) {
    In in{part.data(), part.data() + part.size()};
    while (in.ok && in.p != in.end) {
      const auto i = in.get<uint32_t>();
      if (!in.ok || i >= R || static_cast<size_t>(in.end - in.p) < kKeyEntryBytes + 8)
        return "not built: a part is malformed";
      entry[i] = std::string_view(in.p, kKeyEntryBytes);
      in.p += kKeyEntryBytes;
      const auto n = in.get<uint64_t>();
      if (!in.ok || n > static_cast<uint64_t>(in.end - in.p)) return "not built: a part is malformed";
      section[i] = std::string_view(in.p, n);
      in.p += n;
    }
  }
  Out key;
  key.put<uint64_t>(R);
  for (const std::string_view e : entry) {
    if (e.empty()) return "not built: a rank's part is missing";
    key.b += e;
  }
  // The bytes index_file() writes for the whole index.
  Out body;
  body.str(key.b);
  body.str(unusable);
  body.put<uint64_t>(R);
  Out none;
  serialize_rank(none, RankWindowIndex{});
  for (const std::string_view sec : section) body.b += unusable.empty() ? sec : std::string_view(none.b);
  Out file;
  file.b.append(kMagic, 8);
  file.put<uint32_t>(WindowIndex::kVersion);
  file.put<uint64_t>(checksum(body.b.data(), body.b.size()));
  file.b += body.b;
  const IndexPlaces places = window_index_places(dir);
  std::string error;
  const std::string at = write_index(places, file.b, how, &error);
  return built_note(why, at.empty() ? places.beside + " (could not be written: " + error + "; kept in memory)" : at);
}

std::string note_built(const std::string& why, const std::string& where) { return built_note(why, where); }

// ---------------------------------------------------------------------------
// The whole analysis's index

struct WindowIndexJob::State {
  IndexWriting how;
  IndexPlaces places;
  std::string key;
  std::string why;    // what was wrong with the index found ("absent": none)
  std::string trace;  // the directory, to open again
  size_t ranks = 0;
  Registry reg;
  std::vector<std::thread> threads;
  std::once_flag opened;  // the first thread to work opens the trace again
  bool same = false;      // ... and found the same rank files
  trace::TraceDir dir;
  std::unique_ptr<WorldIndex> world_to_index;
  std::unique_ptr<RankBuilds> builds;
  std::atomic<bool> abandon{false};
  std::atomic<bool> failed{false};
  std::mutex ask;                     // one thread at a time asks `cancelled`
  std::function<bool()> cancelled;    // (under `ask`)

  void open() {
    dir = trace::TraceDir::open(trace);
    if (!dir.errors.empty() || dir.ranks.empty() || trace_key(dir) != key) return;
    std::vector<const RankTrace*> traces;
    for (const auto& t : dir.ranks) traces.push_back(t.get());
    world_to_index = std::make_unique<WorldIndex>(traces);
    builds = std::make_unique<RankBuilds>(dir, reg, *world_to_index);
    builds->stop = [this] { return stop(); };
    same = true;
  }
  bool stop() {
    if (abandon.load(std::memory_order_relaxed)) return true;
    std::unique_lock lock(ask, std::try_to_lock);
    if (lock && cancelled && cancelled()) abandon = true;
    return abandon.load(std::memory_order_relaxed);
  }
  // `idle`: a thread started while the analysis runs, which takes only CPU
  // that would idle otherwise (SCHED_IDLE), and hands its rank over once the
  // analysis is done (its threads may be starved by other work then).
  void work(bool idle) {
    try {
      if (idle) {
        sched_param p{};
        ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &p);
      }
      std::call_once(opened, [this] { open(); });
      if (same) builds->work(idle);
    } catch (const std::exception&) {
      // (On a thread of its own, where nothing may escape: the index is not written.)
      failed = true;
      abandon = true;
    }
  }
  void join() {
    for (auto& t : threads) t.join();
    threads.clear();
  }
};

WindowIndexJob::WindowIndexJob(std::unique_ptr<State> s) : s_(std::move(s)) {}

WindowIndexJob::~WindowIndexJob() {
  if (!s_) return;
  s_->abandon = true;
  s_->join();
}

std::unique_ptr<WindowIndexJob> WindowIndexJob::start(const trace::TraceDir& dir, const Registry& reg,
                                                      const IndexWriting& how, unsigned threads) {
  if (!how.write || dir.ranks.empty()) return nullptr;
  auto s = std::make_unique<State>();
  s->how = how;
  s->places = window_index_places(dir);
  s->key = trace_key(dir);
  WindowIndex found;
  if (!find_index(s->places, s->key, dir.ranks.size(), reg, &found, &s->why).empty()) return nullptr;
  s->trace = trace_directory(dir).string();
  s->ranks = dir.ranks.size();
  s->reg = reg;
  std::unique_ptr<WindowIndexJob> job(new WindowIndexJob(std::move(s)));
  State* st = job->s_.get();
  for (size_t t = 0; t < std::min<size_t>(threads, dir.ranks.size()); ++t) st->threads.emplace_back([st] { st->work(true); });
  return job;
}

std::string WindowIndexJob::finish(unsigned threads, const std::function<bool()>& cancelled) {
  State& s = *s_;
  {
    std::lock_guard lock(s.ask);
    s.cancelled = cancelled;
  }
  try {
    std::call_once(s.opened, [&s] { s.open(); });
  } catch (const std::exception&) {
    s.failed = true;
  }
  if (s.same) s.builds->hand_over();
  for (size_t n = 1; n < std::min<size_t>(std::max(threads, 1u), s.ranks); ++n)
    s.threads.emplace_back([&s] { s.work(false); });
  s.work(false);
  s.join();
  if (s.failed) return "not built: out of memory or the trace could not be read again";
  if (!s.same) return "not built: the trace changed, or could not be opened again";
  if (s.abandon || s.builds->stopped()) return "not built: cancelled";
  const WindowIndex ix = s.builds->take();
  std::string error;
  const std::string at = write_index(s.places, index_file(s.key, ix), s.how, &error);
  return built_note(s.why, at.empty() ? s.places.beside + " (could not be written: " + error + ")" : at);
}

size_t WindowIndex::first_start(size_t i, double lo) const {
  const auto& cps = ranks[i].checkpoints;
  size_t s = 0;
  while (s + 1 < cps.size() && cps.last_leave(s) < lo) ++s;
  while (s > 0 && !cps[s].clean) --s;
  return s;
}

bool WindowIndex::move_back(size_t i, uint64_t gid, uint64_t least, std::vector<size_t>& start) const {
  if (ranks[i].checkpoints.empty() || ranks[i].checkpoints[start[i]].collectives_on(gid) <= least) return false;
  size_t s = start[i];
  while (s > 0 && (ranks[i].checkpoints[s].collectives_on(gid) > least || !ranks[i].checkpoints[s].clean)) --s;
  const bool moved = s != start[i];
  start[i] = s;
  return moved;
}

std::vector<size_t> WindowIndex::plan(double lo) const {
  const size_t R = ranks.size();
  std::vector<size_t> start(R, 0);
  for (size_t i = 0; i < R; ++i) start[i] = first_start(i, lo);
  std::map<uint64_t, std::vector<size_t>> members;
  for (size_t i = 0; i < R; ++i)
    for (uint64_t g : ranks[i].collective_comms) members[g].push_back(i);
  for (bool changed = true; changed;) {
    changed = false;
    // Every member of a communicator at the same instance.
    for (const auto& entry : members) {
      const uint64_t gid = entry.first;
      const std::vector<size_t>& ms = entry.second;
      uint64_t least = UINT64_MAX;
      for (size_t i : ms)
        if (!ranks[i].checkpoints.empty())
          least = std::min(least, ranks[i].checkpoints[start[i]].collectives_on(gid));
      for (size_t i : ms) changed = move_back(i, gid, least, start) || changed;
    }
  }
  return start;
}

}  // namespace prof::analysis::detail
