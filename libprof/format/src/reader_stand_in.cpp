// Stand-ins (RankTrace::describe, RankTrace::stand_in): a rank file known
// from the description its holder wrote, not opened.
//
// A description holds what RankTrace answers without decoding events, as
// the holder's reader computed it: the definitions after
// finish_definitions() (implicit communicators added, the time base
// parsed), so a stand-in converts times and maps communicators exactly as
// the file's own reader does. The calls in flight and the last moment alive
// need the last chunks' times: the holder computes them only where the file
// has a heartbeat or live slots, as its own reader would before using them.
//
// What only decoding needs (the functions' payload kinds, the call sites
// of records' function fields) is not described, and a description for the
// pass (DescriptionFor::kPass) leaves out the functions, call sites, load
// objects, warnings and statistics too (process 0 of an MPI job numbers
// the registry and writes the report; the others ask none of them of
// another's rank). A stand-in's function
// table is one a StandInShare may hold for several: it is the same bytes
// in every rank's description of a run, and the largest part of one (619
// functions, about 60 KB of a stand-in's 96 KB, for the shim's traces).
//
// Invariant: a stand-in has no streams indexed (stand_in_chunks gives
// stream_count() and chunk_count()), so every cursor of it is empty and no
// path reads a file it does not have.
#include <algorithm>
#include <mutex>
#include <type_traits>

#include "prof/byte_wire.h"
#include "reader_internal.h"

namespace prof::trace {

namespace {

constexpr char kDescriptionTag[8] = {'p', 'r', 'o', 'f', 'r', 'k', 'd', '1'};

// Meta lines only the report reads, left out of a description for the pass:
// the longest (the MPI library's version text alone is 2.3 KB of a shim
// rank's 3.1 KB description for the pass).
bool report_only_meta(const std::string& key) { return key == "mpi_library" || key == "command"; }

using Out = wire::Out;
using In = wire::In;

void put_ranks(Out& o, const RankList& r) {
  o.put<uint8_t>(r.is_identity());
  if (r.is_identity()) o.put<uint64_t>(r.size());
  else o.put_vec(r.vector());
}

RankList get_ranks(In& in) {
  if (in.get<uint8_t>()) return RankList::identity(in.get<uint64_t>());
  return RankList(in.get_vec<int32_t>());
}

}  // namespace

std::string RankTrace::describe(DescriptionFor what) const {
  const Impl& t = *impl_;
  const bool report = what == DescriptionFor::kReport;
  const bool live = t.heartbeat != 0 || !t.live_slots.empty();
  if (live) t.compute_live();
  Out o;
  o.buf.append(kDescriptionTag, sizeof kDescriptionTag);
  o.put_str(t.path);
  o.put(t.header);
  uint64_t meta_lines = 0;
  for (const auto& kv : t.meta) meta_lines += report || !report_only_meta(kv.first);
  o.put(meta_lines);
  for (const auto& [k, v] : t.meta) {
    if (!report && report_only_meta(k)) continue;
    o.put_str(k);
    o.put_str(v);
  }
  o.put<uint8_t>(report);
  if (report) {
    o.put<uint64_t>(t.environment.size());
    for (const auto& [k, v] : t.environment) {
      o.put_str(k);
      o.put_str(v);
    }
    o.put<uint64_t>(t.settings.size());
    for (const auto& [k, v] : t.settings) {
      o.put_str(k);
      o.put_str(v.value);
      o.put<uint8_t>(v.from_environment);
    }
  }
  o.put<uint64_t>(report ? t.function_defs().size() : 0);
  if (report) {
    for (const FunctionDef& f : t.function_defs()) {
      o.put(f.id);
      o.put(f.kind);
      o.put_str(f.name);
    }
  }
  o.put<uint64_t>(t.comms.size());
  for (const CommDef& c : t.comms) {
    o.put(c.handle);
    o.put(c.global_id);
    o.put(c.time);
    o.put<uint8_t>(c.inter);
    put_ranks(o, c.ranks);
    put_ranks(o, c.remote_ranks);
  }
  o.put<uint64_t>(report ? t.callsites.size() : 0);
  if (report) {
    for (const CallSiteDef& s : t.callsites) {
      o.put(s.id);
      o.put(s.address);
      o.put_str(s.file);
      o.put(s.line);
    }
  }
  o.put<uint64_t>(report ? t.load_objects.size() : 0);
  if (report) {
    for (const LoadObject& l : t.load_objects) {
      o.put(l.bias);
      o.put_str(l.path);
      o.put_str(l.build_id);
    }
  }
  o.put<uint64_t>(t.clock_syncs.size());
  for (const ClockSyncDef& k : t.clock_syncs) {
    o.put_str(k.phase);
    o.put(k.local_ticks);
    o.put(k.offset_ns);
    o.put(k.rtt_ns);
  }
  o.put_str(t.end_reason);
  o.put(t.heartbeat);
  o.put<uint8_t>(live);
  if (live) {
    o.put_vec(t.in_flight);
    o.put(t.last_alive);
  }
  o.put(t.ns_per_tick);
  o.put(t.epoch);
  o.put(t.origin);
  o.put<uint8_t>(t.have_init);
  o.put<uint8_t>(t.have_final);
  for (double v : {t.init_t, t.init_off, t.final_t, t.final_off}) o.put(v);
  o.put(t.event_bytes);
  o.put(file_bytes());
  std::vector<uint32_t> chunks;
  for (size_t s = 0; s < stream_count(); ++s) chunks.push_back(static_cast<uint32_t>(chunk_count(s)));
  o.put_vec(chunks);
  if (report) {
    std::lock_guard<std::mutex> lock(t.mu);
    o.put(t.stats);
    o.put<uint64_t>(t.warnings.size());
    for (const std::string& w : t.warnings) o.put_str(w);
  }
  return std::move(o.buf);
}

std::unique_ptr<RankTrace> RankTrace::stand_in(const std::string& description, std::string* error,
                                               StandInShare* share) {
  auto impl = std::make_unique<Impl>();
  Impl& t = *impl;
  t.stand_in = true;
  In in(description.data(), description.data() + description.size(), "short description");
  try {
    in.need(sizeof kDescriptionTag);
    if (std::memcmp(in.p, kDescriptionTag, sizeof kDescriptionTag) != 0)
      throw std::length_error("not a rank file's description");
    in.p += sizeof kDescriptionTag;
    t.path = in.get_str();
    t.header = in.get<format::FileHeader>();
    for (auto n = in.get<uint64_t>(); n-- > 0;) {
      std::string k = in.get_str();
      t.meta[std::move(k)] = in.get_str();
    }
    const bool report = in.get<uint8_t>();
    if (report) {
      for (auto n = in.get<uint64_t>(); n-- > 0;) {
        std::string k = in.get_str();
        t.environment[std::move(k)] = in.get_str();
      }
      for (auto n = in.get<uint64_t>(); n-- > 0;) {
        std::string k = in.get_str();
        ProfSetting& v = t.settings[std::move(k)];
        v.value = in.get_str();
        v.from_environment = in.get<uint8_t>();
      }
    }
    {
      const char* table_begin = in.p;
      auto table = std::make_shared<FunctionTable>();
      for (auto n = in.get<uint64_t>(); n-- > 0;) {
        FunctionDef f;
        f.id = in.get<uint16_t>();
        f.kind = in.get<FuncKind>();
        f.name = in.get_str();
        if (f.id >= table->function_index.size()) table->function_index.resize(f.id + 1u, -1);
        table->function_index[f.id] = static_cast<int32_t>(table->functions.size());
        table->functions.push_back(std::move(f));
      }
      if (share) {
        t.function_table = share->functions.try_emplace(std::string(table_begin, in.p), table).first->second;
      } else {
        t.function_table = std::move(table);
      }
    }
    for (auto n = in.get<uint64_t>(); n-- > 0;) {
      CommDef c;
      c.handle = in.get<uint32_t>();
      c.global_id = in.get<uint64_t>();
      c.time = in.get<uint64_t>();
      c.inter = in.get<uint8_t>();
      c.ranks = get_ranks(in);
      c.remote_ranks = get_ranks(in);
      t.comms.push_back(std::move(c));
    }
    // (As finish_definitions() orders them: by handle, time, definition.)
    for (uint32_t i = 0; i < t.comms.size(); ++i) t.comm_keys.push_back({t.comms[i].handle, t.comms[i].time, i, i});
    std::sort(t.comm_keys.begin(), t.comm_keys.end(), [](const Impl::CommKey& a, const Impl::CommKey& b) {
      if (a.handle != b.handle) return a.handle < b.handle;
      if (a.time != b.time) return a.time < b.time;
      return a.order < b.order;
    });
    for (auto n = in.get<uint64_t>(); n-- > 0;) {
      CallSiteDef s;
      s.id = in.get<uint32_t>();
      s.address = in.get<uint64_t>();
      s.file = in.get_str();
      s.line = in.get<int>();
      t.callsite_index.emplace(s.id, t.callsites.size());
      t.callsites.push_back(std::move(s));
    }
    for (auto n = in.get<uint64_t>(); n-- > 0;) {
      LoadObject l;
      l.bias = in.get<uint64_t>();
      l.path = in.get_str();
      l.build_id = in.get_str();
      t.load_objects.push_back(std::move(l));
    }
    for (auto n = in.get<uint64_t>(); n-- > 0;) {
      ClockSyncDef k;
      k.phase = in.get_str();
      k.local_ticks = in.get<uint64_t>();
      k.offset_ns = in.get<double>();
      k.rtt_ns = in.get<double>();
      t.clock_syncs.push_back(std::move(k));
    }
    t.end_reason = in.get_str();
    t.heartbeat = in.get<uint64_t>();
    if (in.get<uint8_t>()) {
      t.in_flight = in.get_vec<InFlightCall>();
      t.last_alive = in.get<uint64_t>();
    }  // (else last_alive() stays 0: readers ask it only of a file with a heartbeat)
    std::call_once(t.live_once, [] {});  // (known: no chunk times to read)
    t.ns_per_tick = in.get<double>();
    t.epoch = in.get<uint64_t>();
    t.origin = in.get<uint64_t>();
    t.have_init = in.get<uint8_t>();
    t.have_final = in.get<uint8_t>();
    t.init_t = in.get<double>();
    t.init_off = in.get<double>();
    t.final_t = in.get<double>();
    t.final_off = in.get<double>();
    t.event_bytes = in.get<uint64_t>();
    t.stand_in_file_bytes = in.get<uint64_t>();
    t.stand_in_chunks = in.get_vec<uint32_t>();
    if (report) {
      t.stats = in.get<ReadStats>();
      for (auto n = in.get<uint64_t>(); n-- > 0;) t.warnings.push_back(in.get_str());
    }
    if (in.p != in.end) throw std::length_error("bytes after the description");
  } catch (const std::exception& ex) {
    if (error) *error = std::string("a rank file's description: ") + ex.what();
    return nullptr;
  }
  return std::unique_ptr<RankTrace>(new RankTrace(std::move(impl)));
}

bool RankTrace::is_stand_in() const { return impl_->stand_in; }

uint64_t RankTrace::files_opened() { return reader::files_opened.load(std::memory_order_relaxed); }

}  // namespace prof::trace
