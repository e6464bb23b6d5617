// OTF2 archive writer (see otf2_export.h and docs/design/otf2-export.md).
//
// Algorithm and invariants
//   - Each rank is streamed once through the same Interpreter, interval rules
//     (IntervalTracker) and damage stop as the analysis and the Chrome export;
//     its events go to one OTF2 event writer per thread (location), in the
//     thread's order, so every location's timestamps never decrease (each one
//     is also raised to its location's last, a guard against clock rounding).
//   - A call is Enter, its transfer records, Leave. The Leave waits until the
//     thread's next event, so a continuation record (more completions of the
//     same Waitall) still lands inside its call.
//   - An interval execution's Enter is written just before the first record
//     written inside it on its thread, or at its end when it overlaps the
//     window and nothing inside it was written, so executions that lie wholly
//     outside the window leave nothing and nesting always holds.
//   - With a window, what overlaps it is written with its times clamped to it;
//     a nonblocking transfer whose request was issued outside the window is
//     left out at its completion too (an MpiIsendComplete or MpiIrecv needs
//     the request's issue in the archive).
//   - Requests are followed by handle as the Interpreter does (the oldest on a
//     handle completes first; persistent ones stay until MPI_Request_free);
//     each issued operation gets a fresh request id on its rank.
//   - Definitions are collected while streaming and written last (the
//     locations' event counts are known only then), as Score-P does.
#include "prof/analysis/otf2_export.h"

#include <otf2/otf2.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string_view>
#include <unordered_map>

#include "damage_stop.h"
#include "flat_map.h"
#include "interpret.h"
#include "intervals.h"
#include "job_export.h"
#include "run_record.h"
#include "prof/analysis/analysis.h"
#include "prof/analysis/exchange.h"
#include "wire.h"

namespace prof::analysis {
namespace {

// OTF2 draws the archive's trace identifier at random when it opens one, and
// has no call to set it; it lies in the anchor file as 8 bytes in host order.
// Replaces the one place they occur with `id`. False where the file cannot
// be read or written; the identifier left as drawn where the bytes are not
// found exactly once (a later library's layout).
bool replace_trace_id(const std::string& anchor, uint64_t drawn, uint64_t id) {
  FILE* f = std::fopen(anchor.c_str(), "r+b");
  if (!f) return false;
  std::string bytes;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) bytes.append(buffer, n);
  const std::string_view from(reinterpret_cast<const char*>(&drawn), sizeof drawn);
  const size_t at = bytes.find(from);
  bool ok = !std::ferror(f);
  if (ok && at != std::string::npos && bytes.find(from, at + 1) == std::string::npos)
    ok = std::fseek(f, static_cast<long>(at), SEEK_SET) == 0 && std::fwrite(&id, sizeof id, 1, f) == 1;
  return std::fclose(f) == 0 && ok;
}

using namespace detail;

constexpr OTF2_RegionRef kNoRegion = OTF2_UNDEFINED_REGION;

// The MPI standard's base name of a call ("MPI_Iallreduce" -> "MPI_Allreduce").
std::string blocking_name(std::string_view n) {
  std::string base(n);
  if (base.size() > 5 && base.compare(0, 5, "MPI_I") == 0 && base[5] >= 'a' && base[5] <= 'z')
    base = "MPI_" + std::string(1, static_cast<char>(base[5] - 'a' + 'A')) + base.substr(6);
  return base;
}

OTF2_CollectiveOp collective_op(std::string_view name) {
  static const std::unordered_map<std::string_view, OTF2_CollectiveOp> ops = {
      {"MPI_Barrier", OTF2_COLLECTIVE_OP_BARRIER},
      {"MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST},
      {"MPI_Gather", OTF2_COLLECTIVE_OP_GATHER},
      {"MPI_Gatherv", OTF2_COLLECTIVE_OP_GATHERV},
      {"MPI_Scatter", OTF2_COLLECTIVE_OP_SCATTER},
      {"MPI_Scatterv", OTF2_COLLECTIVE_OP_SCATTERV},
      {"MPI_Allgather", OTF2_COLLECTIVE_OP_ALLGATHER},
      {"MPI_Allgatherv", OTF2_COLLECTIVE_OP_ALLGATHERV},
      {"MPI_Alltoall", OTF2_COLLECTIVE_OP_ALLTOALL},
      {"MPI_Alltoallv", OTF2_COLLECTIVE_OP_ALLTOALLV},
      {"MPI_Alltoallw", OTF2_COLLECTIVE_OP_ALLTOALLW},
      {"MPI_Allreduce", OTF2_COLLECTIVE_OP_ALLREDUCE},
      {"MPI_Reduce", OTF2_COLLECTIVE_OP_REDUCE},
      {"MPI_Reduce_scatter", OTF2_COLLECTIVE_OP_REDUCE_SCATTER},
      {"MPI_Reduce_scatter_block", OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK},
      {"MPI_Scan", OTF2_COLLECTIVE_OP_SCAN},
      {"MPI_Exscan", OTF2_COLLECTIVE_OP_EXSCAN}};
  const auto it = ops.find(name);
  return it != ops.end() ? it->second : static_cast<OTF2_CollectiveOp>(OTF2_COLLECTIVE_OP_BARRIER);
}

// A function's region role as Score-P assigns them (Scalasca tells the
// wait-state patterns apart by them).
OTF2_RegionRole region_role(const FuncInfo& fi, std::string_view name) {
  if (fi.role & kRoleBarrier) return OTF2_REGION_ROLE_BARRIER;
  if (fi.role & kRoleOneToAll) return OTF2_REGION_ROLE_COLL_ONE2ALL;
  if (fi.role & kRoleAllToOne) return OTF2_REGION_ROLE_COLL_ALL2ONE;
  const std::string base = blocking_name(name);
  if (base == "MPI_Scan" || base == "MPI_Exscan") return OTF2_REGION_ROLE_COLL_OTHER;
  if (fi.role & kRoleNxN) return OTF2_REGION_ROLE_COLL_ALL2ALL;
  switch (fi.kind) {
    case FuncKind::Collective:
    case FuncKind::ICollective:
    case FuncKind::AllToAll:
    case FuncKind::IAllToAll:
      return OTF2_REGION_ROLE_COLL_OTHER;
    case FuncKind::Send:
    case FuncKind::Recv:
    case FuncKind::SendRecv:
    case FuncKind::Isend:
    case FuncKind::Irecv:
    case FuncKind::Completion:
    case FuncKind::RequestOp:
    case FuncKind::Probe:
      return OTF2_REGION_ROLE_POINT2POINT;
    default:
      return OTF2_REGION_ROLE_FUNCTION;
  }
}

class StringTable {
 public:
  OTF2_StringRef operator()(const std::string& s) {
    auto [it, fresh] = ids_.try_emplace(s, static_cast<OTF2_StringRef>(list_.size()));
    if (fresh) list_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& list() const { return list_; }

 private:
  std::vector<std::string> list_;
  std::unordered_map<std::string, OTF2_StringRef> ids_;
};

// What the global definitions will say, collected while streaming.
struct Definitions {
  StringTable strings;
  struct Region {
    OTF2_StringRef name;
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
    OTF2_StringRef file;
    uint32_t line;
  };
  std::vector<Region> regions;
  std::vector<OTF2_RegionRef> function_region;                 // Registry function -> region
  std::unordered_map<uint64_t, OTF2_RegionRef> interval_region;  // (id << 32 | site) -> region
  // Every rank's MPI_COMM_SELF is one communicator, as Score-P defines it
  // (a COMM_SELF group: each location is rank 0 of its own copy); it is
  // keyed by rank 0's global id for it.
  static constexpr uint64_t kSelfKey = format::self_comm_global_id(0);
  struct Comm {
    uint64_t gid;
    const CommDef* def;
    bool self;
    OTF2_CommRef parent = OTF2_UNDEFINED_COMM;  // from the records of its creation
  };
  std::vector<Comm> comms;
  std::unordered_map<uint64_t, OTF2_CommRef> comm_of;  // global id (kSelfKey for every self) -> ref
  struct Location {
    OTF2_LocationRef id;
    int rank;
    uint32_t stream;
    uint64_t events;
  };
  std::vector<Location> locations;

  static bool is_self(uint64_t gid) { return (gid & 0xffffffffu) == kSelfKey; }
  OTF2_CommRef comm(const CommInfo& c) {
    const bool self = is_self(c.gid);
    auto [it, fresh] = comm_of.try_emplace(self ? kSelfKey : c.gid, static_cast<OTF2_CommRef>(comms.size()));
    if (fresh) comms.push_back(Comm{self ? kSelfKey : c.gid, c.def, self});
    return it->second;
  }
};

// Score-P's location ids: the thread above the rank.
OTF2_LocationRef location_id(int rank, uint32_t stream) {
  return (static_cast<uint64_t>(stream) << 32) | static_cast<uint32_t>(rank);
}

OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) { return OTF2_FLUSH; }
const OTF2_FlushCallbacks kFlushCallbacks = {pre_flush, nullptr};

// Each writer's buffer gets at most kChunksPerBuffer chunks; asked for one
// more, the allocator says no and libotf2 flushes the buffer to its file and
// frees its chunks. (With malloc alone a buffer grows until its writer is
// closed: a rank's whole event file in memory.)
constexpr size_t kChunksPerBuffer = 4;
void* allocate_chunk(void*, OTF2_FileType, OTF2_LocationRef, void** per_buffer, uint64_t chunk_size) {
  auto* chunks = static_cast<std::vector<void*>*>(*per_buffer);
  if (!chunks) *per_buffer = chunks = new std::vector<void*>;
  if (chunks->size() >= kChunksPerBuffer) return nullptr;
  void* chunk = std::malloc(chunk_size);
  if (chunk) chunks->push_back(chunk);
  return chunk;
}
void free_chunks(void*, OTF2_FileType, OTF2_LocationRef, void** per_buffer, bool final) {
  auto* chunks = static_cast<std::vector<void*>*>(*per_buffer);
  if (!chunks) return;
  for (void* chunk : *chunks) std::free(chunk);
  chunks->clear();
  if (final) {
    delete chunks;
    *per_buffer = nullptr;
  }
}
const OTF2_MemoryCallbacks kMemoryCallbacks = {allocate_chunk, free_chunks};

struct Otf2Handler {
  struct Open {
    OTF2_RegionRef region;
    double start;
    bool entered;
  };
  struct Thread {
    uint32_t stream;
    OTF2_EvtWriter* w;
    std::vector<Open> intervals;  // executions open on the thread, outermost first
    OTF2_RegionRef pending_region = kNoRegion;  // the call whose Leave waits
    OTF2_TimeStamp pending_leave = 0;
    OTF2_TimeStamp last = 0;
  };
  struct Req {
    enum Type : uint8_t { Send, Recv, PSend, PRecv, Coll, Other } type;
    bool written = false;  // its issue is in the archive
    bool started = false;  // persistent: an operation in flight
    OTF2_CommRef comm = 0;
    int32_t peer = -1, tag = -1;
    uint64_t bytes = 0;
    uint64_t id = 0;
    OTF2_CollectiveOp op = 0;  // Coll
    uint32_t root = OTF2_UNDEFINED_UINT32;
  };

  Otf2Handler(OTF2_Archive* archive, Definitions& definitions, const Registry& registry,
              Interpreter& interpreter, size_t rank_index, int world_rank, double time_zero,
              OTF2_TimeStamp base, const Otf2Options& options, OTF2_AttributeRef in_flight_attribute,
              Otf2Stats& statistics)
      : ar(archive), defs(definitions), reg(registry), interp(interpreter), index(rank_index),
        rank(world_rank), t0(time_zero), ts_base(base), from_ns(time_zero + options.from_s * 1e9),
        to_ns(time_zero + options.to_s * 1e9), in_flight_attr(in_flight_attribute),
        stats(statistics), intervals(world_rank) {}

  OTF2_Archive* ar;
  Definitions& defs;
  const Registry& reg;
  Interpreter& interp;
  size_t index;
  int rank;
  double t0;
  OTF2_TimeStamp ts_base;
  double from_ns, to_ns;  // the window, global ns
  OTF2_AttributeRef in_flight_attr;
  Otf2Stats& stats;
  IntervalTracker intervals;
  std::deque<Thread> threads;  // (a deque: a Thread& stays valid when another thread appears)
  size_t last_thread = 0;
  std::unordered_map<uint32_t, std::vector<Req>> requests;  // by handle, oldest first
  uint64_t next_request = 0;
  bool failed = false;

  Thread& thread(uint32_t stream) {
    if (last_thread < threads.size() && threads[last_thread].stream == stream) return threads[last_thread];
    for (size_t i = 0; i < threads.size(); ++i)
      if (threads[i].stream == stream) {
        last_thread = i;
        return threads[i];
      }
    const OTF2_LocationRef loc = location_id(rank, stream);
    threads.push_back(Thread{stream, OTF2_Archive_GetEvtWriter(ar, loc), {}});
    if (!threads.back().w) failed = true;
    last_thread = threads.size() - 1;
    return threads.back();
  }
  bool overlaps(double enter, double leave) const { return leave >= from_ns && enter <= to_ns; }
  OTF2_TimeStamp ts(Thread& t, double ns) {
    ns = std::clamp(ns, from_ns, to_ns);
    // (Rounded by hand: a call of libm's round per timestamp was 2% of the export.)
    const double d = std::max(0.0, ns - t0) + 0.5;
    OTF2_TimeStamp v = ts_base + static_cast<OTF2_TimeStamp>(d);
    if (v < t.last) v = t.last;
    t.last = v;
    return v;
  }
  void check(OTF2_ErrorCode rc) {
    if (rc != OTF2_SUCCESS) failed = true;
  }
  void flush_leave(Thread& t) {
    if (t.pending_region == kNoRegion) return;
    check(OTF2_EvtWriter_Leave(t.w, nullptr, t.pending_leave, t.pending_region));
    ++stats.leaves;
    t.pending_region = kNoRegion;
  }
  // Enters every execution open on the thread not entered yet (something
  // inside them is about to be written).
  void enter_intervals(Thread& t) {
    flush_leave(t);
    for (Open& o : t.intervals)
      if (!o.entered) {
        check(OTF2_EvtWriter_Enter(t.w, nullptr, ts(t, o.start), o.region));
        ++stats.enters;
        o.entered = true;
      }
  }

  OTF2_RegionRef function_region(const Event& e, const FuncInfo& fi) {
    if (defs.function_region.size() < reg.functions.size())
      defs.function_region.resize(reg.functions.size(), kNoRegion);
    OTF2_RegionRef& r = defs.function_region[fi.name];
    if (r == kNoRegion) {
      const std::string name = fi.name != 0 ? reg.functions[fi.name] : "MPI function " + std::to_string(e.func);
      r = static_cast<OTF2_RegionRef>(defs.regions.size());
      defs.regions.push_back(Definitions::Region{defs.strings(name), region_role(fi, name), OTF2_PARADIGM_MPI,
                                                 defs.strings("MPI"), 0});
    }
    return r;
  }
  const CommInfo* comm(const Event& e) { return interp.comms().at(e.comm, e.enter); }
  Req* active(uint32_t handle) {
    auto it = requests.find(handle);
    return it == requests.end() || it->second.empty() ? nullptr : &it->second.front();
  }
  void retire(uint32_t handle) {
    auto it = requests.find(handle);
    if (it != requests.end() && !it->second.empty()) it->second.erase(it->second.begin());
  }
  Req& new_request(uint32_t handle, Req::Type type) {
    std::vector<Req>& v = requests[handle];
    v.push_back(Req{type});
    return v.back();
  }

  // Interpreter handler interface: every call is written here, its meaning
  // included (the Interpreter's own request following is not needed).
  bool call(const Event& e, const FuncInfo& fi, double enter, double leave) {
    intervals.call(fi, enter, leave, *this);
    Thread& t = thread(e.stream);
    flush_leave(t);
    const bool written = overlaps(enter, leave);
    if (written) enter_intervals(t);  // (before the call's own time is taken: they begin earlier)
    const OTF2_TimeStamp t_enter = ts(t, enter);
    if (written) {
      OTF2_AttributeList* attrs = nullptr;
      if (e.in_flight) {
        // Entered, never returned: its Leave is the rank's last moment alive.
        attrs = OTF2_AttributeList_New();
        OTF2_AttributeList_AddUint8(attrs, in_flight_attr, 1);
      }
      const OTF2_RegionRef region = function_region(e, fi);
      check(OTF2_EvtWriter_Enter(t.w, attrs, t_enter, region));
      if (attrs) OTF2_AttributeList_Delete(attrs);
      ++stats.enters;
      t.pending_region = region;
    }
    const OTF2_TimeStamp t_leave = ts(t, leave);
    t.pending_leave = t_leave;
    if (e.in_flight) return false;  // nothing was sent, received or completed
    transfers(t, e, fi, written, t_enter, t_leave);
    return false;
  }
  // A continuation record: more completions of the thread's previous call.
  void continuation_record(const Event& e, double enter, double leave) {
    Thread& t = thread(e.stream);
    const bool written = t.pending_region != kNoRegion;
    const OTF2_TimeStamp t_leave = ts(t, leave);
    transfers(t, e, interp.func(e.func), written, t_leave, t_leave);
    (void)enter;
  }

  void transfers(Thread& t, const Event& e, const FuncInfo& fi, bool written, OTF2_TimeStamp t_enter,
                 OTF2_TimeStamp t_leave) {
    switch (e.kind) {
      case FuncKind::Send:
        if (e.peer != format::kProcNull && written)
          if (const CommInfo* c = comm(e)) {
            check(OTF2_EvtWriter_MpiSend(t.w, nullptr, t_enter, static_cast<uint32_t>(e.peer), defs.comm(*c),
                                         static_cast<uint32_t>(e.tag), e.bytes));
            ++stats.sends;
          }
        break;
      case FuncKind::Recv:
        if (e.peer >= 0 && written)
          if (const CommInfo* c = comm(e)) {
            check(OTF2_EvtWriter_MpiRecv(t.w, nullptr, t_leave, static_cast<uint32_t>(e.peer), defs.comm(*c),
                                         static_cast<uint32_t>(e.tag), e.bytes));
            ++stats.receives;
          }
        break;
      case FuncKind::SendRecv:
        if (!written) break;
        if (const CommInfo* c = comm(e)) {
          if (e.peer != format::kProcNull) {
            check(OTF2_EvtWriter_MpiSend(t.w, nullptr, t_enter, static_cast<uint32_t>(e.peer), defs.comm(*c),
                                         static_cast<uint32_t>(e.tag), e.bytes));
            ++stats.sends;
          }
          if (e.recv_peer >= 0) {
            check(OTF2_EvtWriter_MpiRecv(t.w, nullptr, t_leave, static_cast<uint32_t>(e.recv_peer),
                                         defs.comm(*c), static_cast<uint32_t>(e.recv_tag), e.recv_bytes));
            ++stats.receives;
          }
        }
        break;
      case FuncKind::Isend:
      case FuncKind::Irecv: {
        if (e.request == format::kNoRequest) break;
        const bool send = e.kind == FuncKind::Isend;
        const bool persistent = fi.role & kRolePersistentInit;
        const CommInfo* c = comm(e);
        Req& r = new_request(e.request, persistent ? (send ? Req::PSend : Req::PRecv) : (send ? Req::Send : Req::Recv));
        r.comm = c ? defs.comm(*c) : 0;
        r.peer = c ? e.peer : format::kProcNull;  // unknown communicator: no transfer
        r.tag = e.tag;
        r.bytes = e.bytes;
        if (!persistent) issue(t, r, written, t_enter);
        break;
      }
      case FuncKind::Completion:
        for (const trace::Completion& done : e.completions) complete(t, done, t_leave);
        break;
      case FuncKind::RequestOp:
        if (fi.role & kRoleStart) {
          for (uint32_t handle : e.requests)
            if (Req* r = active(handle); r && (r->type == Req::PSend || r->type == Req::PRecv)) {
              r->started = true;
              issue(t, *r, written, t_enter);
            }
        } else if (fi.role & kRoleFree) {
          for (uint32_t handle : e.requests) retire(handle);
        }
        break;
      case FuncKind::Collective:
      case FuncKind::AllToAll:
        if (written)
          if (const CommInfo* c = comm(e)) {
            check(OTF2_EvtWriter_MpiCollectiveBegin(t.w, nullptr, t_enter));
            check(OTF2_EvtWriter_MpiCollectiveEnd(t.w, nullptr, t_leave,
                                                  collective_op(reg.functions[fi.name]), defs.comm(*c),
                                                  collective_root(e, fi), e.bytes, 0));
            ++stats.collectives;
          }
        break;
      case FuncKind::CommCreate:
        // The parent, whatever the window: definitions are the whole run's.
        if (e.new_comm != format::kNoComm)
          if (const CommInfo* parent = comm(e))
            if (const CommInfo* child = interp.comms().at(e.new_comm, e.enter)) {
              const OTF2_CommRef parent_ref = defs.comm(*parent), child_ref = defs.comm(*child);
              if (child_ref != parent_ref) defs.comms[child_ref].parent = parent_ref;
            }
        break;
      case FuncKind::ICollective:
      case FuncKind::IAllToAll: {
        if (e.request == format::kNoRequest) break;
        // A persistent one (MPI_Allreduce_init & co) is followed only so that
        // its completions are not taken for another request's.
        const CommInfo* c = comm(e);
        if ((fi.role & kRolePersistentInit) || !c) {
          new_request(e.request, Req::Other);
          break;
        }
        Req& r = new_request(e.request, Req::Coll);
        r.comm = defs.comm(*c);
        r.bytes = e.bytes;
        r.op = collective_op(blocking_name(reg.functions[fi.name]));
        r.root = collective_root(e, fi);
        r.written = written;
        if (written) {
          r.id = next_request++;
          check(OTF2_EvtWriter_NonBlockingCollectiveRequest(t.w, nullptr, t_enter, r.id));
        }
        break;
      }
      default:
        break;
    }
  }
  // Only the rooted collectives (Bcast, Scatter, Reduce, Gather) have one.
  static uint32_t collective_root(const Event& e, const FuncInfo& fi) {
    const bool rooted = fi.role & (kRoleOneToAll | kRoleAllToOne);
    return rooted && e.root >= 0 ? static_cast<uint32_t>(e.root) : OTF2_UNDEFINED_UINT32;
  }
  // A nonblocking operation issued (an Isend/Irecv, or a persistent one's Start).
  void issue(Thread& t, Req& r, bool written, OTF2_TimeStamp when) {
    r.written = written && r.peer != format::kProcNull;
    if (!r.written) return;
    r.id = next_request++;
    const bool send = r.type == Req::Send || r.type == Req::PSend;
    if (send) {
      check(OTF2_EvtWriter_MpiIsend(t.w, nullptr, when, static_cast<uint32_t>(r.peer), r.comm,
                                    static_cast<uint32_t>(r.tag), r.bytes, r.id));
      ++stats.sends;
    } else {
      check(OTF2_EvtWriter_MpiIrecvRequest(t.w, nullptr, when, r.id));
    }
  }
  void complete(Thread& t, const trace::Completion& done, OTF2_TimeStamp when) {
    if (done.request == format::kNoRequest) return;
    Req* r = active(done.request);
    if (!r) return;  // unknown (a generalized request, or issued before a damaged stretch)
    const bool persistent = r->type == Req::PSend || r->type == Req::PRecv;
    const bool ran = !persistent || r->started;
    if (ran && r->written) {
      if (done.cancelled) {
        check(OTF2_EvtWriter_MpiRequestCancelled(t.w, nullptr, when, r->id));
      } else if (r->type == Req::Send || r->type == Req::PSend) {
        check(OTF2_EvtWriter_MpiIsendComplete(t.w, nullptr, when, r->id));
      } else if (r->type == Req::Coll) {
        check(OTF2_EvtWriter_NonBlockingCollectiveComplete(t.w, nullptr, when, r->op, r->comm, r->root, r->bytes, 0,
                                                           r->id));
        ++stats.collectives;
      } else if (r->type == Req::Recv || r->type == Req::PRecv) {
        // The status tells the actual source and tag (else what was asked).
        const int32_t src = done.source >= 0 ? done.source : r->peer;
        const int32_t tag = done.tag >= 0 || r->tag < 0 ? done.tag : r->tag;
        check(OTF2_EvtWriter_MpiIrecv(t.w, nullptr, when, static_cast<uint32_t>(src), r->comm,
                                      static_cast<uint32_t>(tag), done.bytes, r->id));
        ++stats.receives;
      }
    }
    r->written = false;
    if (persistent) r->started = false;  // it stays until MPI_Request_free
    else retire(done.request);
  }

  bool continuation() const { return true; }
  void marker(const Event& e, double enter, double leave) { intervals.marker(e, enter, leave, *this); }

  // IntervalTracker handler interface.
  void root_started(double) {}
  uint32_t interval_begun(uint32_t stream, const Event& e, double t, uint32_t) {
    const uint32_t site = reg.site(index, e.callsite);
    const uint64_t key = uint64_t{e.interval_id} << 32 | site;
    auto [it, fresh] = defs.interval_region.try_emplace(key, static_cast<OTF2_RegionRef>(defs.regions.size()));
    if (fresh) {
      const SiteInfo& s = reg.sites[site];
      const std::string where = s.file.empty() ? s.label : s.file + ":" + std::to_string(s.line);
      const std::string name = "interval " + std::to_string(e.interval_id) + " (" + where + ")";
      defs.regions.push_back(Definitions::Region{defs.strings(name), OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER,
                                                 defs.strings(s.file.empty() ? s.label : s.file),
                                                 static_cast<uint32_t>(std::max(0, s.line))});
    }
    thread(stream).intervals.push_back(Open{it->second, t, false});
    return it->second;
  }
  void interval_ended(uint32_t stream, const OpenInterval& o, double t) {
    Thread& th = thread(stream);
    if (th.intervals.empty()) return;
    const Open open = th.intervals.back();
    if (!open.entered && overlaps(o.start, t)) enter_intervals(th);
    if (th.intervals.back().entered) {
      flush_leave(th);
      check(OTF2_EvtWriter_Leave(th.w, nullptr, ts(th, t), open.region));
      ++stats.leaves;
    }
    th.intervals.pop_back();
  }
  void root_ended(double) {}
  void send(const ChannelKey&, double, double, const Event&) {}
  void recv(const ChannelKey&, double, uint64_t, double, double, const Event&) {}
  uint64_t hold(double) { return HoldQueue::kNone; }
  void release(uint64_t) {}
  void cancel_send(const ChannelKey&, double) {}
  void collective(const CommInfo&, bool, double, double, const Event&) {}
  template <class F>
  void problem(WarningKind, F&&, uint64_t = 1) {}
};

std::string otf2_error(OTF2_ErrorCode rc) {
  return std::string(OTF2_Error_GetName(rc)) + ": " + OTF2_Error_GetDescription(rc);
}

// libotf2 prints every error on stderr as it meets it, in its own format (a
// dozen raw lines for one full disk). While an archive is written they are
// kept instead, and the first, the cause, goes into the one error message.
class Otf2Messages {
 public:
  Otf2Messages() : previous_(OTF2_Error_RegisterCallback(&keep, this)) {}
  ~Otf2Messages() { OTF2_Error_RegisterCallback(previous_, nullptr); }
  Otf2Messages(const Otf2Messages&) = delete;
  Otf2Messages& operator=(const Otf2Messages&) = delete;
  // " (libotf2: MESSAGE)", or "" when it said nothing.
  std::string cause() const { return first_.empty() ? "" : " (libotf2: " + first_ + ")"; }

 private:
  static OTF2_ErrorCode keep(void* self, const char*, uint64_t, const char*, OTF2_ErrorCode code, const char* format,
                             va_list va) {
    auto* messages = static_cast<Otf2Messages*>(self);
    if (messages->first_.empty()) {
      char text[512] = "";
      if (format) std::vsnprintf(text, sizeof text, format, va);
      messages->first_ = std::string(OTF2_Error_GetDescription(code)) + (text[0] ? std::string(": ") + text : "");
    }
    return code;
  }
  OTF2_ErrorCallback previous_;
  std::string first_;
};

}  // namespace

bool prepare_otf2_directory(const std::string& dir, std::string* error) {
  struct stat st{};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      *error = dir + ": exists and is not a directory";
      return false;
    }
    DIR* d = ::opendir(dir.c_str());
    if (!d) {
      *error = dir + ": " + std::strerror(errno);
      return false;
    }
    bool empty = true;
    while (const dirent* ent = ::readdir(d))
      if (std::strcmp(ent->d_name, ".") != 0 && std::strcmp(ent->d_name, "..") != 0) empty = false;
    ::closedir(d);
    if (!empty) {
      *error = dir + ": the directory is not empty (an OTF2 archive is written into a new or empty one)";
      return false;
    }
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      *error = dir + ": " + std::strerror(errno);
      return false;
    }
    return true;
  }
  if (errno != ENOENT || ::mkdir(dir.c_str(), 0777) != 0) {
    *error = "cannot create " + dir + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

namespace {

// The wall-clock time (ns since 1970 UTC) of global time `global_ns`: the
// lowest rank's `M epoch_realtime_ns` (the wall-clock time of its timer's
// epoch) plus the global time since that epoch; undefined for traces that do
// not record it.
OTF2_TimeStamp realtime_of(const std::vector<const RankTrace*>& traces, double global_ns) {
  for (const RankTrace* t : traces) {
    const auto wall = t->meta().find("epoch_realtime_ns");
    const auto epoch = t->meta().find("epoch_ticks");
    if (wall == t->meta().end() || epoch == t->meta().end()) continue;
    char* end = nullptr;
    const long long wall_ns = std::strtoll(wall->second.c_str(), &end, 10);
    if (end == wall->second.c_str() || *end != '\0' || wall_ns <= 0) continue;
    const uint64_t epoch_ticks = std::strtoull(epoch->second.c_str(), nullptr, 10);
    // (The sum in integers: a double near 1.7e18 ns is exact only to 256 ns.)
    const long long at = wall_ns + std::llround(global_ns - t->to_global_ns(epoch_ticks));
    if (at > 0) return static_cast<OTF2_TimeStamp>(at);
  }
  return OTF2_UNDEFINED_TIMESTAMP;
}

// A rank's events as the analysis reads them (up to its damage stop,
// damage_stop.h), batch by batch to `use`; whether the damage stopped it.
template <class Use>
bool read_admitted(const RankTrace& t, const Interpreter& interp, const RunSpan& span, Use&& use) {
  auto cursor = t.events();
  DamageStop damage;
  damage.span = &span;
  damage.read(cursor, interp, [&](std::span<const Event> batch) {
    use(batch);
    return true;
  });
  return damage.stopped;
}

// An MPI job's archive (write_otf2 with a job whose processes hold their
// blocks' rank files alone, TraceDir::holder).
//
// Algorithm
//   Process 0 writes the archive alone, rank after rank, as one process
//   does: its definitions are numbered in the order the ranks first use
//   them, so a rank's records depend on the ranks before it. A rank of
//   another process p is read there (its cursor and damage stop,
//   read_admitted) and its decoded events reach process 0 in rounds
//   (job_export.h), each led by a byte that says, in the last, whether the
//   damage stopped the rank. Process 0 hands each round's events to the
//   rank's handler as one batch.
// Invariant: a round holds at most kRoundBytes of events and one batch more.
class HeldEvents {
 public:
  // On the holder of rank t (a process other than 0): reads it, sends it.
  static void send(Exchange& job, const RankTrace& t, const Interpreter& interp, const RunSpan& span) {
    WireOut o = fresh();
    const bool stopped = read_admitted(t, interp, span, [&](std::span<const Event> batch) {
      for (const Event& e : batch) {
        o.put(e);
        o.put_array(e.completions.data(), e.completions.size());
        o.put_array(e.requests.data(), e.requests.size());
      }
      if (o.buf.size() >= kRoundBytes) {
        send_round(job, o.buf, false);
        o = fresh();
      }
    });
    o.buf[0] = static_cast<char>(stopped);
    send_round(job, o.buf, true);
  }

  // On process 0 (`use` the handler's) or a bystander (`use` never called):
  // the rank's events from `holder`; whether the damage stopped it.
  template <class Use>
  static bool take(Exchange& job, int holder, Use&& use) {
    bool stopped = false;
    std::vector<Event> events;
    std::vector<trace::Completion> completions;
    std::vector<uint32_t> requests;
    struct Spans {
      size_t completion, completions, request, requests;
    };
    std::vector<Spans> spans;
    take_rounds(job, holder, "OTF2 export", [&](std::string_view m, bool last) {
      if (m.empty()) throw std::runtime_error("OTF2 export: process " + std::to_string(holder) + " sent no events");
      stopped = last && m[0] != 0;
      WireIn r(m);
      r.p += 1;
      events.clear();
      completions.clear();
      requests.clear();
      spans.clear();
      while (!r.done()) {
        events.push_back(r.get<Event>());
        Spans at{completions.size(), 0, requests.size(), 0};
        const char* c = r.get_array<trace::Completion>(&at.completions);
        for (size_t k = 0; k < at.completions; ++k, c += sizeof(trace::Completion)) {
          completions.emplace_back();
          std::memcpy(&completions.back(), c, sizeof(trace::Completion));
        }
        const char* q = r.get_array<uint32_t>(&at.requests);
        for (size_t k = 0; k < at.requests; ++k, q += sizeof(uint32_t)) {
          requests.emplace_back();
          std::memcpy(&requests.back(), q, sizeof(uint32_t));
        }
        spans.push_back(at);
      }
      // (The vectors are whole now: the spans point into them.)
      for (size_t k = 0; k < events.size(); ++k) {
        events[k].completions = {completions.data() + spans[k].completion, spans[k].completions};
        events[k].requests = {requests.data() + spans[k].request, spans[k].requests};
      }
      if (!events.empty()) use(std::span<const Event>(events));
    });
    return stopped;
  }

 private:
  static WireOut fresh() {
    WireOut o;
    o.put<uint8_t>(0);  // (the last round: whether the damage stopped the rank)
    return o;
  }
};

}  // namespace

bool write_otf2(const trace::TraceDir& dir, const std::string& out_dir, const Analysis* analysis,
                std::string* error, Otf2Stats* stats_out, const Otf2Options& options, Exchange* job) {
  const ExportScope scope(dir, job);
  // The other processes send their ranks' events if process 0 could open
  // the archive (its answer, 1 or 0, is the all-to-all after time zero).
  if (scope.held && scope.me != 0) {
    if (job->all_to_all(std::vector<std::string>(static_cast<size_t>(job->size())))[0] != "1") return false;
    for (size_t i = 0; i < scope.traces.size(); ++i) {
      if (dir.holder[i] == 0) continue;
      if (dir.holder[i] == scope.me) {
        const Interpreter interp(*scope.traces[i], scope.registry, i, scope.world_to_index);
        HeldEvents::send(*job, *scope.traces[i], interp, scope.span);
      } else {
        HeldEvents::take(*job, dir.holder[i], [](std::span<const Event>) {});
      }
    }
    return true;
  }
  // (Process 0: whether the others are to send their ranks, once.)
  bool told = !scope.held;
  auto tell = [&](bool go) {
    if (told) return;
    told = true;
    job->all_to_all(std::vector<std::string>(static_cast<size_t>(job->size()), go ? "1" : "0"));
  };
  // Timestamps keep the global clock's own origin where it is positive.
  const OTF2_TimeStamp base =
      scope.t0 > 0 && scope.t0 < 9e18 ? static_cast<OTF2_TimeStamp>(std::llround(scope.t0)) : 0;

  const Otf2Messages messages;
  auto fail = [&](const std::string& what) {
    tell(false);
    if (error) *error = what + messages.cause();
    return false;
  };
  OTF2_Archive* ar = OTF2_Archive_Open(out_dir.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024,
                                       4 * 1024 * 1024, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (!ar) return fail("libotf2 cannot create the archive traces.otf2");
  struct Closer {
    OTF2_Archive* ar;
    ~Closer() {
      if (ar) OTF2_Archive_Close(ar);
    }
  } closer{ar};
  OTF2_Archive_SetFlushCallbacks(ar, &kFlushCallbacks, nullptr);
  OTF2_Archive_SetMemoryCallbacks(ar, &kMemoryCallbacks, nullptr);
  OTF2_Archive_SetSerialCollectiveCallbacks(ar);
  OTF2_Archive_SetCreator(ar, "prof-analyze");
  if (const OTF2_ErrorCode rc = OTF2_Archive_OpenEvtFiles(ar); rc != OTF2_SUCCESS)
    return fail("cannot open the events files: " + otf2_error(rc));
  tell(true);

  Definitions defs;
  Otf2Stats stats;
  const OTF2_AttributeRef in_flight_attr = 0;
  bool failed = false;
  OTF2_TimeStamp last_time = base;
  for (size_t i = 0; i < scope.traces.size(); ++i) {
    // (In a job every rank of another process is taken, written or not.)
    if (failed && !scope.held) break;
    if (failed && dir.holder[i] == 0) continue;
    const RankTrace& rank_trace = *scope.traces[i];
    Interpreter interp(rank_trace, scope.registry, i, scope.world_to_index);
    Otf2Handler h(ar, defs, scope.registry, interp, i, rank_trace.rank(), scope.t0, base, options, in_flight_attr,
                  stats);
    h.thread(0);  // every rank has its master thread's location
    auto write = [&](std::span<const Event> batch) {
      if (failed) return;
      for (const Event& e : batch) {
        const double enter = interp.global(e.enter);
        if (e.kind != FuncKind::Marker && (e.flags & format::kContinuation)) [[unlikely]]
          h.continuation_record(e, enter, interp.global(e.leave));
        else
          interp.process(e, enter, h);
      }
    };
    // A damaged rank ends where the analysis ends it (damage_stop.h), on the
    // process that holds it.
    const bool stopped = scope.held && dir.holder[i] != 0 ? HeldEvents::take(*job, dir.holder[i], write)
                                                          : read_admitted(rank_trace, interp, scope.span, write);
    if (failed) continue;
    if (rank_trace.heartbeat() != 0 && !stopped)
      h.intervals.note_alive([&] { return interp.global(rank_trace.last_alive()); });
    h.intervals.finish(h);
    for (auto& t : h.threads) {
      h.flush_leave(t);
      // Still open (a thread's executions when the root never started).
      while (!t.intervals.empty()) {
        if (t.intervals.back().entered) {
          if (OTF2_EvtWriter_Leave(t.w, nullptr, t.last, t.intervals.back().region) != OTF2_SUCCESS) h.failed = true;
          ++stats.leaves;
        }
        t.intervals.pop_back();
      }
      last_time = std::max(last_time, t.last);
      uint64_t n = 0;
      if (t.w) OTF2_EvtWriter_GetNumberOfEvents(t.w, &n);
      defs.locations.push_back(Definitions::Location{location_id(h.rank, t.stream), h.rank, t.stream, n});
      stats.events += n;
      if (t.w && OTF2_Archive_CloseEvtWriter(ar, t.w) != OTF2_SUCCESS) h.failed = true;
    }
    failed = h.failed;
  }
  if (failed) return fail("libotf2 could not write the events (see its message above)");
  if (const OTF2_ErrorCode rc = OTF2_Archive_CloseEvtFiles(ar); rc != OTF2_SUCCESS)
    return fail("cannot close the events files: " + otf2_error(rc));

  // Every rank of MPI_COMM_WORLD has a location group and a master thread,
  // also a rank whose file is not in the trace (its location has no events):
  // communicator groups name world ranks by their place in the world's group.
  int world = dir.world_size;
  for (const RankTrace* t : scope.traces) world = std::max(world, t->rank() + 1);
  {
    std::vector<bool> has(static_cast<size_t>(world), false);
    for (const auto& l : defs.locations)
      if (l.stream == 0 && l.rank >= 0 && l.rank < world) has[static_cast<size_t>(l.rank)] = true;
    for (int r = 0; r < world; ++r)
      if (!has[static_cast<size_t>(r)]) defs.locations.push_back(Definitions::Location{location_id(r, 0), r, 0, 0});
  }
  stats.locations = defs.locations.size();

  // Local definitions files (empty: the events use global ids).
  if (const OTF2_ErrorCode rc = OTF2_Archive_OpenDefFiles(ar); rc != OTF2_SUCCESS)
    return fail("cannot open the definitions files: " + otf2_error(rc));
  for (const auto& l : defs.locations) {
    OTF2_DefWriter* w = OTF2_Archive_GetDefWriter(ar, l.id);
    if (!w || OTF2_Archive_CloseDefWriter(ar, w) != OTF2_SUCCESS)
      return fail("cannot write the definitions of location " + std::to_string(l.id));
  }
  if (const OTF2_ErrorCode rc = OTF2_Archive_CloseDefFiles(ar); rc != OTF2_SUCCESS)
    return fail("cannot close the definitions files: " + otf2_error(rc));

  // Every string first (the records below refer to them).
  StringTable& str = defs.strings;
  const OTF2_StringRef s_empty = str(""), s_mpi = str("MPI"), s_user = str("User"), s_machine = str("machine");
  // Score-P's names for communicators and windows that have none.
  const OTF2_StringRef s_comm_template = str("MPI_COMM_${id}"), s_win_template = str("MPI_WIN_${id}");
  const OTF2_StringRef s_in_flight = str("in_flight");
  const OTF2_StringRef s_in_flight_doc =
      str("1: the call was entered and never returned (the run ended inside it); its Leave is the rank's "
          "last moment known alive");
  std::vector<OTF2_StringRef> group_name(static_cast<size_t>(world)), thread_name;
  for (int r = 0; r < world; ++r) group_name[static_cast<size_t>(r)] = str("MPI Rank " + std::to_string(r));
  for (const auto& l : defs.locations)
    thread_name.push_back(str(l.stream == 0 ? "Master thread" : "Thread " + std::to_string(l.stream)));
  const OTF2_StringRef s_world_locations = str("MPI_COMM_WORLD locations");
  // MPI_COMM_WORLD and MPI_COMM_SELF are defined whether or not a call used them.
  {
    CommInfo world_comm, self_comm;
    world_comm.gid = format::kWorldCommGlobalId;
    self_comm.gid = Definitions::kSelfKey;
    defs.comm(world_comm);
    defs.comm(self_comm);
  }
  std::vector<OTF2_StringRef> comm_name;
  for (const auto& c : defs.comms)
    comm_name.push_back(str(c.self ? std::string("MPI_COMM_SELF") : reported_comm_name(c.gid)));
  // The system tree as Score-P builds it: a machine, a node per host, each
  // rank's location group under its host's node (under the machine when the
  // trace does not say its host).
  const RunRecord run = run_record(scope.traces);
  const OTF2_StringRef s_node = str("node");
  std::vector<OTF2_StringRef> host_name;
  std::vector<OTF2_SystemTreeNodeRef> node_of_rank(static_cast<size_t>(world), 0);
  for (size_t h = 0; h < run.hosts.size(); ++h) {
    host_name.push_back(str(run.hosts[h].name));
    for (int r : run.hosts[h].ranks)
      if (r >= 0 && r < world) node_of_rank[static_cast<size_t>(r)] = static_cast<OTF2_SystemTreeNodeRef>(h + 1);
  }
  const OTF2_StringRef s_run_end = str("PROF_RUN_END"), s_last_alive = str("PROF_LAST_ALIVE_S"),
                       s_clock_error = str("PROF_CLOCK_ERROR_S");
  std::unordered_map<int, OTF2_StringRef> ended_by;
  if (analysis)
    for (const auto& e : analysis->run_end) ended_by[e.rank] = str(e.ended_by);

  OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(ar);
  if (!g) return fail("cannot open the global definitions");
  OTF2_ErrorCode rc = OTF2_SUCCESS;
  auto put = [&](OTF2_ErrorCode r) {
    if (rc == OTF2_SUCCESS) rc = r;
  };
  // Nanoseconds on the synchronized clock (offsets and drift already
  // applied: no ClockOffset records), from the run's first event, whose
  // wall-clock time is the realtime stamp.
  put(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, base, last_time - base + 1,
                                                realtime_of(scope.traces, scope.t0)));
  for (size_t i = 0; i < str.list().size(); ++i)
    put(OTF2_GlobalDefWriter_WriteString(g, static_cast<OTF2_StringRef>(i), str.list()[i].c_str()));
  put(OTF2_GlobalDefWriter_WriteParadigm(g, OTF2_PARADIGM_MPI, s_mpi, OTF2_PARADIGM_CLASS_PROCESS));
  OTF2_AttributeValue name_template;
  name_template.stringRef = s_comm_template;
  put(OTF2_GlobalDefWriter_WriteParadigmProperty(g, OTF2_PARADIGM_MPI, OTF2_PARADIGM_PROPERTY_COMM_NAME_TEMPLATE,
                                                 OTF2_TYPE_STRING, name_template));
  name_template.stringRef = s_win_template;
  put(OTF2_GlobalDefWriter_WriteParadigmProperty(g, OTF2_PARADIGM_MPI, OTF2_PARADIGM_PROPERTY_RMA_WIN_NAME_TEMPLATE,
                                                 OTF2_TYPE_STRING, name_template));
  put(OTF2_GlobalDefWriter_WriteParadigm(g, OTF2_PARADIGM_USER, s_user, OTF2_PARADIGM_CLASS_PROCESS));
  put(OTF2_GlobalDefWriter_WriteAttribute(g, in_flight_attr, s_in_flight, s_in_flight_doc, OTF2_TYPE_UINT8));
  put(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, s_machine, s_machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE));
  for (size_t h = 0; h < host_name.size(); ++h)
    put(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, static_cast<OTF2_SystemTreeNodeRef>(h + 1), host_name[h], s_node,
                                                 0));
  for (int r = 0; r < world; ++r)
    put(OTF2_GlobalDefWriter_WriteLocationGroup(g, static_cast<OTF2_LocationGroupRef>(r),
                                                group_name[static_cast<size_t>(r)],
                                                OTF2_LOCATION_GROUP_TYPE_PROCESS, node_of_rank[static_cast<size_t>(r)],
                                                OTF2_UNDEFINED_LOCATION_GROUP));
  for (size_t i = 0; i < defs.locations.size(); ++i) {
    const auto& l = defs.locations[i];
    put(OTF2_GlobalDefWriter_WriteLocation(g, l.id, thread_name[i], OTF2_LOCATION_TYPE_CPU_THREAD, l.events,
                                           static_cast<OTF2_LocationGroupRef>(l.rank)));
  }
  for (size_t i = 0; i < defs.regions.size(); ++i) {
    const auto& r = defs.regions[i];
    put(OTF2_GlobalDefWriter_WriteRegion(g, static_cast<OTF2_RegionRef>(i), r.name, r.name, s_empty, r.role,
                                         r.paradigm, OTF2_REGION_FLAG_NONE, r.file, r.line, r.line));
  }
  // The MPI groups as Score-P writes them: the world's locations (master
  // threads, in world rank order), then each communicator's members as
  // positions in it, one group per distinct member list.
  std::vector<uint64_t> members;
  for (int r = 0; r < world; ++r) members.push_back(location_id(r, 0));
  put(OTF2_GlobalDefWriter_WriteGroup(g, 0, s_world_locations, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                      OTF2_GROUP_FLAG_NONE, static_cast<uint32_t>(members.size()),
                                      members.data()));
  // (Definitions of a kind are numbered in the order they are written:
  // OTF2's readers require it.)
  OTF2_GroupRef next_group = 1;
  std::map<std::vector<uint64_t>, OTF2_GroupRef> groups;
  auto group = [&](const std::vector<int32_t>& ranks) {
    std::vector<uint64_t> m;
    for (int32_t w : ranks)
      if (w >= 0 && w < world) m.push_back(static_cast<uint64_t>(w));
    auto [it, fresh] = groups.try_emplace(m, next_group);
    if (fresh) ++next_group;
    if (fresh)
      put(OTF2_GlobalDefWriter_WriteGroup(g, it->second, s_empty, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                          OTF2_GROUP_FLAG_NONE, static_cast<uint32_t>(m.size()), m.data()));
    return it->second;
  };
  // MPI_COMM_SELF's group, as Score-P's: type COMM_SELF, no members.
  const OTF2_GroupRef self_group = next_group++;
  put(OTF2_GlobalDefWriter_WriteGroup(g, self_group, s_empty, OTF2_GROUP_TYPE_COMM_SELF, OTF2_PARADIGM_MPI,
                                      OTF2_GROUP_FLAG_NONE, 0, nullptr));
  std::vector<int32_t> all_ranks;
  for (int r = 0; r < world; ++r) all_ranks.push_back(r);
  // Communicators in id order, each after its parent: a parent is numbered
  // before the communicators created from it (its creation record names it
  // first), and one that is not (its creation unseen where it was first
  // used) is left without parent rather than referred to ahead.
  for (size_t i = 0; i < defs.comms.size(); ++i) {
    const auto& c = defs.comms[i];
    const OTF2_CommRef self = static_cast<OTF2_CommRef>(i);
    const OTF2_CommRef parent = c.parent < self ? c.parent : OTF2_UNDEFINED_COMM;
    if (c.self)
      put(OTF2_GlobalDefWriter_WriteComm(g, self, comm_name[i], self_group, parent, OTF2_COMM_FLAG_NONE));
    else if (!c.def)  // MPI_COMM_WORLD when no rank file defines it
      put(OTF2_GlobalDefWriter_WriteComm(g, self, comm_name[i], group(all_ranks), parent, OTF2_COMM_FLAG_NONE));
    else if (c.def->inter)
      // (OTF2's third communicator of an InterComm is the peer communicator
      // of MPI_Intercomm_create, which the trace does not record.)
      put(OTF2_GlobalDefWriter_WriteInterComm(g, self, comm_name[i], group(c.def->ranks), group(c.def->remote_ranks),
                                              OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE));
    else
      put(OTF2_GlobalDefWriter_WriteComm(g, self, comm_name[i], group(c.def->ranks), parent, OTF2_COMM_FLAG_NONE));
  }
  // How each rank ended and how well its clock is known: properties of its
  // master thread's location.
  for (int r = 0; r < world; ++r) {
    const OTF2_LocationRef loc = location_id(r, 0);
    if (auto it = ended_by.find(r); it != ended_by.end()) {
      OTF2_AttributeValue v;
      v.stringRef = it->second;
      put(OTF2_GlobalDefWriter_WriteLocationProperty(g, loc, s_run_end, OTF2_TYPE_STRING, v));
    }
  }
  if (analysis) {
    for (const auto& e : analysis->run_end) {
      OTF2_AttributeValue v;
      v.float64 = e.last_alive;
      put(OTF2_GlobalDefWriter_WriteLocationProperty(g, location_id(e.rank, 0), s_last_alive, OTF2_TYPE_DOUBLE, v));
    }
    for (const auto& [r, error_s] : analysis->clock.per_rank) {
      if (!analysis->clock.measured()) break;  // (PROF_SYNC=none: no bound known)
      OTF2_AttributeValue v;
      v.float64 = error_s;
      put(OTF2_GlobalDefWriter_WriteLocationProperty(g, location_id(r, 0), s_clock_error, OTF2_TYPE_DOUBLE, v));
    }
  }
  if (rc != OTF2_SUCCESS) return fail("cannot write the global definitions: " + otf2_error(rc));
  put(OTF2_Archive_CloseGlobalDefWriter(ar, g));

  // The run as a whole, as archive properties (otf2-print -A lists them).
  put(OTF2_Archive_SetBoolProperty(ar, "PROF::CLOCK_OFFSETS_APPLIED", true, true));
  if (analysis) {
    if (!analysis->clock.scheme.empty())
      put(OTF2_Archive_SetProperty(ar, "PROF::CLOCK_SCHEME", analysis->clock.scheme.c_str(), true));
    if (analysis->clock.measured())
      put(OTF2_Archive_SetProperty(ar, "PROF::CLOCK_MAX_ERROR_S", std::to_string(analysis->clock.max_error_s).c_str(), true));
    put(OTF2_Archive_SetBoolProperty(ar, "PROF::RUN_COMPLETE", analysis->complete, true));
    put(OTF2_Archive_SetBoolProperty(ar, "PROF::RUN_CUT_SHORT", analysis->cut_short, true));
  }
  if (options.from_s > -std::numeric_limits<double>::infinity() ||
      options.to_s < std::numeric_limits<double>::infinity()) {
    const std::string w = std::to_string(options.from_s) + ":" + std::to_string(options.to_s);
    put(OTF2_Archive_SetProperty(ar, "PROF::WINDOW_S", w.c_str(), true));
  }
  if (rc != OTF2_SUCCESS) return fail("cannot write the archive's properties: " + otf2_error(rc));
  closer.ar = nullptr;
  if (const OTF2_ErrorCode close_rc = OTF2_Archive_Close(ar); close_rc != OTF2_SUCCESS)
    return fail("cannot close the archive: " + otf2_error(close_rc));
  // The same trace and window give the same archive, byte for byte, however
  // often and by however many processes it is written. (The identifier it
  // drew can be asked only of a reader.)
  const std::string anchor = out_dir + "/traces.otf2";
  uint64_t random_id = 0;
  bool id_known = false;
  if (OTF2_Reader* reader = OTF2_Reader_Open(anchor.c_str())) {
    id_known = OTF2_Reader_GetTraceId(reader, &random_id) == OTF2_SUCCESS;
    OTF2_Reader_Close(reader);
  }
  if (id_known) {
    uint64_t id = mix64(scope.traces.empty() ? 0 : scope.traces.front()->header().run_id);
    for (double bound : {options.from_s, options.to_s}) {
      uint64_t bits = 0;
      std::memcpy(&bits, &bound, sizeof bits);
      id = mix64(id ^ bits);
    }
    if (!replace_trace_id(anchor, random_id, id))
      return fail("cannot write the trace identifier into traces.otf2");
  }
  if (stats_out) *stats_out = stats;
  return true;
}

}  // namespace prof::analysis
