// Definitions: the text lines of Definitions chunks (functions,
// communicators, call sites, the load map, clock sync, metadata), what they
// imply (the decoder's function table, implicit MPI_COMM_WORLD and
// MPI_COMM_SELF, the time conversion), and RankTrace::open and its accessors.
//
// MPI_COMM_WORLD / MPI_COMM_SELF, when not defined, get the global ids the shim
// gives them (definition_lines.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "prof/definition_lines.h"
#include "reader_internal.h"

namespace prof::trace {

namespace reader {

namespace {
// Implicit MPI_COMM_WORLD ranks are materialized only up to this size.
constexpr int32_t kMaxImplicitWorld = 1 << 22;
constexpr uint8_t kNeverEnough = 0xFF;  // more than a record holds: a bad record

// Least payload words per kind (then a row for a newer writer's kind, nothing
// required, and one for undefined functions, never enough) and flags byte:
// only kWidePeerTag, kWideBytes, kSameComm and kPackedRequest change it;
// packed bytes are 16 bits, never wide.
struct NeedTable {
  uint8_t rows[format::kKindCount + 2][256] = {};  // last: undefined functions
  constexpr NeedTable() {
    for (unsigned flags = 0; flags < 256; ++flags) rows[format::kKindCount + 1][flags] = kNeverEnough;
    for (size_t k = 0; k < format::kKindCount; ++k) {
      const format::KindSchema& schema = format::kKindSchemas[k];
      for (unsigned flags = 0; flags < 256; ++flags) {
        const bool wide_bytes = flags & format::kWideBytes, packed = flags & format::kPackedRequest;
        const bool packs = packed && (schema.context_flags & format::kPackedRequest);
        rows[k][flags] = packs && wide_bytes
                             ? kNeverEnough
                             : static_cast<uint8_t>(format::fixed_payload_words(
                                   schema, flags & format::kWidePeerTag, wide_bytes,
                                   flags & format::kSameComm, packed));
      }
    }
  }
};
constexpr NeedTable kNeed{};

}  // namespace

FuncInfo func_info(FuncKind kind) {
  FuncInfo f;
  f.kind = static_cast<uint16_t>(kind);
  const format::KindSchema* schema = format::find_schema(kind);
  f.need = kNeed.rows[schema ? static_cast<size_t>(kind) : format::kKindCount];
  if (schema) f.context_flags = schema->context_flags;
  f.repeats = format::kind_repeats(kind);
  return f;
}

FuncInfo undefined_func_info() {
  FuncInfo f;
  f.need = kNeed.rows[format::kKindCount + 1];
  return f;
}

}  // namespace reader

using namespace reader;

void RankTrace::Impl::parse_definitions(std::string_view text, uint64_t off,
                                        bool complete_lines_only) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      if (complete_lines_only) break;
      nl = text.size();
    }
    std::string_view line = text.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) parse_line(line, off + pos);
    pos = nl + 1;
  }
}

void RankTrace::Impl::parse_line(std::string_view line, uint64_t off) {
  // Fields: up to 8 split on TAB; the last keeps any further TABs.
  std::array<std::string_view, 8> f{};
  size_t nf = 0, pos = 0;
  while (nf < f.size()) {
    size_t tab = line.find('\t', pos);
    if (tab == std::string_view::npos || nf == f.size() - 1) {
      f[nf++] = line.substr(pos);
      break;
    }
    f[nf++] = line.substr(pos, tab - pos);
    pos = tab + 1;
  }
  bool ok = false;
  const std::string_view tag = f[0];
  // The rest of the line after field k (values may contain TABs).
  auto rest_after = [&](size_t k) {
    size_t p = 0;
    for (size_t i = 0; i < k; ++i) p = line.find('\t', p) + 1;
    return line.substr(p);
  };
  if (tag.size() != 1) {
    return;  // unknown (future) tag: skipped
  }
  switch (tag[0]) {
    case 'M':
      if (nf >= 3 && !f[1].empty()) {
        meta[std::string(f[1])] = std::string(rest_after(2));
        ok = true;
      }
      break;
    case 'F': {
      uint32_t id, kind;
      if (nf >= 4 && parse_u32(f[1], &id) && id >= 1 && id <= 0xFFFF &&
          id != format::kSnapshotFuncId && parse_u32(f[2], &kind) && kind < 0xFFFF) {
        FunctionDef def{static_cast<uint16_t>(id), static_cast<FuncKind>(kind),
                        std::string(rest_after(3))};
        if (id == format::kMarkerFuncId) def.kind = FuncKind::Marker;
        if (id >= function_index.size()) {
          function_index.resize(id + 1, -1);
          kinds.resize(id + 1, undefined_func_info());
        }
        if (function_index[id] >= 0) {
          functions[function_index[id]] = def;
        } else {
          function_index[id] = static_cast<int32_t>(functions.size());
          functions.push_back(def);
        }
        kinds[id] = func_info(def.kind);
        ok = true;
      }
      break;
    }
    case 'C': {
      CommDef c;
      uint32_t size;
      std::vector<int32_t> ranks, remote;
      if (nf >= 7 && parse_u32(f[1], &c.handle) && parse_u64(f[2], &c.global_id) &&
          parse_u64(f[3], &c.time) && parse_u32(f[4], &size) && (f[5] == "0" || f[5] == "1") &&
          parse_rank_list(f[6], &ranks) && ranks.size() == size &&
          (nf < 8 || parse_rank_list(f[7], &remote))) {
        c.ranks = std::move(ranks);
        c.remote_ranks = std::move(remote);
        c.inter = f[5] == "1";
        comms.push_back(std::move(c));
        ok = true;
      }
      break;
    }
    case 'S': {
      CallSiteDef s;
      if (nf >= 3 && parse_u32(f[1], &s.id) && parse_hex_u64(f[2], &s.address)) {
        ok = true;
        if (nf >= 4) s.file = std::string(f[3]);
        if (nf >= 5 && !f[4].empty()) {
          int32_t l = 0;
          ok = parse_i32(f[4], &l);
          s.line = l;
        }
        if (ok) {
          auto it = callsite_index.find(s.id);
          if (it != callsite_index.end()) {
            callsites[it->second] = std::move(s);
          } else {
            callsite_index.emplace(s.id, callsites.size());
            callsites.push_back(std::move(s));
          }
        }
      }
      break;
    }
    case 'A': {
      uint32_t func, index, site;
      if (nf >= 4 && parse_u32(f[1], &func) && func < format::kRepeatFuncs &&
          parse_u32(f[2], &index) && index >= 1 && index <= format::kSiteIndexes &&
          parse_u32(f[3], &site)) {
        const size_t at = size_t{index} << format::kSiteShift | func;  // the record's func field
        if (at >= call_site_ids.size()) call_site_ids.resize(at + 1, 0);
        call_site_ids[at] = site;
        ok = true;
      }
      break;
    }
    case 'L': {
      LoadObject o;
      if (nf >= 3 && parse_hex_u64(f[1], &o.bias)) {
        o.path = std::string(rest_after(2));
        load_objects.push_back(std::move(o));
        ok = true;
      }
      break;
    }
    case 'B': {
      uint64_t bias = 0;
      if (nf >= 3 && parse_hex_u64(f[1], &bias)) {
        // Its object's L line comes first (the same bias).
        for (auto it = load_objects.rbegin(); it != load_objects.rend(); ++it)
          if (it->bias == bias) {
            it->build_id = std::string(f[2]);
            ok = true;
            break;
          }
      }
      break;
    }
    case 'K': {
      ClockSyncDef k;
      if (nf >= 4 && !f[1].empty() && parse_u64(f[2], &k.local_ticks) &&
          parse_double(f[3], &k.offset_ns) && std::isfinite(k.offset_ns) &&
          (nf < 5 || f[4].empty() || (parse_double(f[4], &k.rtt_ns) && std::isfinite(k.rtt_ns)))) {
        k.phase = std::string(f[1]);
        clock_syncs.push_back(std::move(k));
        ok = true;
      }
      break;
    }
    case 'V':
      if (nf >= 3 && !f[1].empty()) {
        environment[std::string(f[1])] = std::string(rest_after(2));
        ok = true;
      }
      break;
    case 'P':
      if (nf >= 4 && !f[1].empty() && (f[3] == "env" || f[3] == "default")) {
        settings[std::string(f[1])] = ProfSetting{std::string(f[2]), f[3] == "env"};
        ok = true;
      }
      break;
    case 'E':
      if (nf >= 2) {
        end_reason = std::string(rest_after(1));
        ok = true;
      }
      break;
    default:
      return;  // unknown tag: skipped
  }
  if (!ok) {
    ++stats.bad_definitions;
    std::string shown(line.substr(0, 100));
    for (char& ch : shown)
      if (ch == '\t') ch = ' ';
      else if (static_cast<unsigned char>(ch) < 32) ch = '?';
    warn("definition", at_offset(path, off, "malformed definition line: " + shown));
  }
}

RankList::RankList(std::vector<int32_t> ranks) {
  bool zero_to_n = !ranks.empty();
  for (size_t i = 0; zero_to_n && i < ranks.size(); ++i) zero_to_n = ranks[i] == static_cast<int32_t>(i);
  if (zero_to_n) {
    *this = identity(ranks.size());
    return;
  }
  list_ = std::make_shared<const std::vector<int32_t>>(std::move(ranks));
  data_ = list_->data();
  size_ = list_->size();
}

RankList RankList::identity(size_t n) {
  if (n == 0) return RankList();
  // One list per size while any RankList holds it (files open in parallel).
  static std::mutex mu;
  static std::map<size_t, std::weak_ptr<const std::vector<int32_t>>> lists;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<const std::vector<int32_t>> list = lists[n].lock();
  if (!list) {
    std::vector<int32_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(i);
    list = std::make_shared<const std::vector<int32_t>>(std::move(v));
    lists[n] = list;
  }
  RankList r;
  r.list_ = std::move(list);
  r.data_ = r.list_->data();
  r.size_ = n;
  r.identity_ = true;
  return r;
}

const std::vector<int32_t>& RankList::vector() const {
  static const std::vector<int32_t> none;
  return list_ ? *list_ : none;
}

namespace {
// The process's function tables, by a hash of their definitions: a table
// lives while a file holds it (the entries of those gone are dropped as
// their bucket is met again).
struct FunctionTables {
  std::mutex mu;
  std::unordered_map<uint64_t, std::vector<std::weak_ptr<const FunctionTable>>> by_hash;
};
FunctionTables& function_tables() {
  static FunctionTables* tables = new FunctionTables;  // (never destroyed: files may close at exit)
  return *tables;
}
uint64_t hash_functions(const std::vector<FunctionDef>& functions) {
  uint64_t h = functions.size();
  for (const FunctionDef& f : functions) {
    const uint64_t fields = uint64_t{f.id} << 16 | static_cast<uint16_t>(f.kind);
    h = (h ^ fields ^ std::hash<std::string_view>{}(f.name)) * 0x9E3779B97F4A7C15ull;
  }
  return h;
}
bool same_functions(const FunctionTable& table, const std::vector<FunctionDef>& functions,
                    const std::vector<int32_t>& function_index) {
  if (table.functions.size() != functions.size() || table.function_index != function_index) return false;
  for (size_t i = 0; i < functions.size(); ++i) {
    const FunctionDef &a = table.functions[i], &b = functions[i];
    if (a.id != b.id || a.kind != b.kind || a.name != b.name) return false;
  }
  return true;
}
}  // namespace

// (Emptied with their memory: `v = {}` would keep the capacity.)
void RankTrace::Impl::release_own_functions() {
  std::vector<FunctionDef>().swap(functions);
  std::vector<int32_t>().swap(function_index);
  std::vector<reader::FuncInfo>().swap(kinds);
}

// (A file's kinds follow from its functions and their order: equal
// functions and index, equal kinds.)
void RankTrace::Impl::share_functions() {
  if (function_table || functions.empty()) return;
  const uint64_t h = hash_functions(functions);
  FunctionTables& tables = function_tables();
  std::lock_guard lock(tables.mu);
  std::vector<std::weak_ptr<const FunctionTable>>& bucket = tables.by_hash[h];
  for (size_t i = 0; i < bucket.size();) {
    std::shared_ptr<const FunctionTable> table = bucket[i].lock();
    if (!table) {
      bucket[i] = std::move(bucket.back());
      bucket.pop_back();
      continue;
    }
    if (same_functions(*table, functions, function_index)) {
      function_table = std::move(table);
      release_own_functions();
      return;
    }
    ++i;
  }
  auto table = std::make_shared<FunctionTable>();
  table->functions = std::move(functions);
  table->function_index = std::move(function_index);
  table->kinds = std::move(kinds);
  release_own_functions();
  bucket.push_back(table);
  function_table = std::move(table);
}

void RankTrace::Impl::finish_definitions() {
  // Implicit MPI_COMM_WORLD / MPI_COMM_SELF.
  bool have_world = false, have_self = false;
  for (const auto& c : comms) {
    have_world = have_world || c.handle == format::kMpichCommWorld;
    have_self = have_self || c.handle == format::kMpichCommSelf;
  }
  if (!have_world) {
    CommDef w;
    w.handle = format::kMpichCommWorld;
    w.global_id = format::kWorldCommGlobalId;
    if (header.world_size > 0 && header.world_size <= kMaxImplicitWorld) {
      w.ranks = RankList::identity(static_cast<size_t>(header.world_size));
    } else {
      warn("header", at_offset(path, 28, "implausible world_size " +
                                           std::to_string(header.world_size)));
    }
    comms.push_back(std::move(w));
  }
  if (!have_self) {
    CommDef s;
    s.handle = format::kMpichCommSelf;
    s.global_id = format::self_comm_global_id(header.rank);
    s.ranks = {header.rank};
    comms.push_back(std::move(s));
  }
  comm_keys.clear();
  for (uint32_t i = 0; i < comms.size(); ++i)
    comm_keys.push_back({comms[i].handle, comms[i].time, i, i});
  std::sort(comm_keys.begin(), comm_keys.end(), [](const CommKey& a, const CommKey& b) {
    if (a.handle != b.handle) return a.handle < b.handle;
    if (a.time != b.time) return a.time < b.time;
    return a.order < b.order;
  });

  // ns_per_tick.
  if (auto it = meta.find("ns_per_tick"); it != meta.end()) {
    double v;
    if (parse_double(it->second, &v) && std::isfinite(v) && v > 0) {
      ns_per_tick = v;
    } else {
      ++stats.bad_definitions;
      warn("definition", path + ": bad ns_per_tick '" + it->second.substr(0, 40) +
                             "': using 1.0");
    }
  }
  // The timer's epoch: ns are (ticks - epoch) * ns_per_tick, as the shim's
  // clock sync measured them (a refined rate then moves times by (t - epoch) *
  // error, not by t * error on raw TSC values of ~1e14).
  if (auto it = meta.find("epoch_ticks"); it != meta.end()) {
    uint64_t v;
    if (parse_u64(it->second, &v)) {
      epoch = v;
    } else {
      ++stats.bad_definitions;
      warn("definition", path + ": bad epoch_ticks '" + it->second.substr(0, 40) + "': using 0");
    }
  }
  // Clock sync: the last init and the last final.
  for (const auto& k : clock_syncs) {
    if (k.phase == "init") {
      have_init = true;
      init_t = static_cast<double>(k.local_ticks);
      init_off = k.offset_ns;
    } else if (k.phase == "final") {
      have_final = true;
      final_t = static_cast<double>(k.local_ticks);
      final_off = k.offset_ns;
    }
  }
}

const CommDef* RankTrace::Impl::comm_at(uint32_t handle, uint64_t t) const {
  auto lo = std::lower_bound(comm_keys.begin(), comm_keys.end(), handle,
                             [](const CommKey& k, uint32_t h) { return k.handle < h; });
  if (lo == comm_keys.end() || lo->handle != handle) return nullptr;
  auto hi = std::upper_bound(lo, comm_keys.end(), handle,
                             [](uint32_t h, const CommKey& k) { return h < k.handle; });
  // Last entry with time <= t (entries sorted by time, then definition order).
  auto it = std::upper_bound(lo, hi, t, [](uint64_t tt, const CommKey& k) { return tt < k.time; });
  if (it == lo) return &comms[lo->index];  // t precedes every definition: the earliest
  return &comms[(it - 1)->index];
}

double RankTrace::Impl::offset_ns(uint64_t t) const {
  if (have_init && have_final) {
    // As prof::clock::interpolate_offset (prof/clock.h).
    const double tt = static_cast<double>(t);
    if (final_t <= init_t) return init_off;
    return init_off + (final_off - init_off) * (tt - init_t) / (final_t - init_t);
  }
  if (have_init) return init_off;
  if (have_final) return final_off;
  return 0.0;
}

// ===========================================================================
// RankTrace public API

RankTrace::RankTrace(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RankTrace::~RankTrace() = default;

std::unique_ptr<RankTrace> RankTrace::open(const std::string& path, std::string* error) {
  std::string scratch;
  if (!error) error = &scratch;
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  if (!impl->map_file(error)) return nullptr;
  reader::files_opened.fetch_add(1, std::memory_order_relaxed);
  const uint64_t size = impl->map.size;
  if (size == 0) {
    *error = at_offset(path, 0, "empty file (0 bytes): not a prof trace");
    return nullptr;
  }
  if (size < sizeof(FileHeader)) {
    *error = at_offset(path, 0, "file too short for a header (" + std::to_string(size) +
                                  " bytes): not a prof trace");
    return nullptr;
  }
  std::memcpy(&impl->header, impl->map.data, sizeof(FileHeader));
  if (std::memcmp(impl->header.magic, format::kFileMagic, sizeof format::kFileMagic) != 0) {
    *error = at_offset(path, 0, "not a prof trace (bad magic)");
    return nullptr;
  }
  if (impl->header.version < format::kOldestFormatVersion ||
      impl->header.version > format::kFormatVersion) {
    *error = at_offset(path, 8, "unsupported format version " +
                                  std::to_string(impl->header.version) + " (this reader reads " +
                                  std::to_string(format::kOldestFormatVersion) + " to " +
                                  std::to_string(format::kFormatVersion) + ")");
    return nullptr;
  }
  impl->index();
  impl->finish_definitions();
  impl->share_functions();
  impl->unpin_map();  // indexed: cursors map it again as they need it
  // The heartbeat and the calls in flight are raw ticks: a TSC's without the
  // rank's time base (its start definitions, lost when the file was cut
  // before them) would read as hours since boot, so they are not used. (The
  // other timers count nanoseconds already.)
  if ((impl->heartbeat != 0 || !impl->live_slots.empty()) &&
      impl->header.timer == static_cast<uint32_t>(format::TimerKind::Tsc) && !impl->meta.count("ns_per_tick")) {
    ++impl->stats.bad_definitions;
    impl->warn("live", at_offset(path, 0, "no time base (ns_per_tick) in the file: its heartbeat and calls "
                                          "in flight are not used"));
    impl->heartbeat = 0;
    impl->live_slots.clear();
  }
  impl->define_live_sites();
  impl->finish_warnings();
  return std::unique_ptr<RankTrace>(new RankTrace(std::move(impl)));
}

const std::string& RankTrace::path() const { return impl_->path; }
const format::FileHeader& RankTrace::header() const { return impl_->header; }
const std::map<std::string, std::string>& RankTrace::meta() const { return impl_->meta; }
const std::map<std::string, std::string>& RankTrace::environment() const { return impl_->environment; }
const std::map<std::string, ProfSetting>& RankTrace::settings() const { return impl_->settings; }
const FunctionDef* RankTrace::function(uint16_t id) const {
  const std::vector<int32_t>& index = impl_->function_ids();
  if (id >= index.size() || index[id] < 0) return nullptr;
  return &impl_->function_defs()[static_cast<size_t>(index[id])];
}
const std::vector<FunctionDef>& RankTrace::functions() const { return impl_->function_defs(); }
const std::vector<CommDef>& RankTrace::comms() const { return impl_->comms; }
const std::vector<CallSiteDef>& RankTrace::callsites() const { return impl_->callsites; }
const CallSiteDef* RankTrace::callsite(uint32_t id) const {
  auto it = impl_->callsite_index.find(id);
  return it == impl_->callsite_index.end() ? nullptr : &impl_->callsites[it->second];
}
const std::vector<LoadObject>& RankTrace::load_objects() const { return impl_->load_objects; }
const std::vector<ClockSyncDef>& RankTrace::clock_syncs() const { return impl_->clock_syncs; }
const std::string& RankTrace::end_reason() const { return impl_->end_reason; }

const CommDef* RankTrace::comm_at(uint32_t handle, uint64_t t) const {
  return impl_->comm_at(handle, t);
}

int32_t RankTrace::world_rank(uint32_t handle, uint64_t t, int32_t rank) const {
  if (rank < 0) return rank;
  const CommDef* c = impl_->comm_at(handle, t);
  if (!c) return -1;
  const auto& group = c->inter ? c->remote_ranks : c->ranks;
  if (static_cast<size_t>(rank) >= group.size()) return -1;
  return group[static_cast<size_t>(rank)];
}

double RankTrace::ns_per_tick() const { return impl_->ns_per_tick; }
double RankTrace::to_local_ns(uint64_t ticks) const {
  return static_cast<double>(static_cast<int64_t>(ticks - impl_->origin)) * impl_->ns_per_tick;
}
double RankTrace::to_global_ns(uint64_t ticks) const {
  return static_cast<double>(static_cast<int64_t>(ticks - impl_->epoch)) * impl_->ns_per_tick +
         impl_->offset_ns(ticks);
}

size_t RankTrace::stream_count() const {
  return impl_->stand_in ? impl_->stand_in_chunks.size() : impl_->streams.size();
}
uint64_t RankTrace::event_bytes() const { return impl_->event_bytes; }
uint64_t RankTrace::file_bytes() const { return impl_->stand_in ? impl_->stand_in_file_bytes : impl_->map.size; }

const ReadStats& RankTrace::stats() const { return impl_->stats; }
const std::vector<std::string>& RankTrace::warnings() const { return impl_->warnings; }

}  // namespace prof::trace
