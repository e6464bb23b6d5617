// Registry (names shared across ranks) and CommCache (communicator lookups).
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "interpret.h"
#include "prof/definition_lines.h"

#include <filesystem>
#include <optional>
#include <tuple>

#ifndef PROF_ANALYSIS_NO_SYMBOLS
#include "prof/symbols/symbolizer.h"
#endif

namespace prof::analysis::detail {
namespace {

struct Resolved {
  std::string file;
  int line = 0;
};

// Resolves unresolved call sites, once per (object, offset) over all ranks.
class SiteResolver {
 public:
  std::optional<Resolved> resolve(size_t rank_index, const RankTrace& rank_trace, const std::string& object,
                                  uint64_t offset, uint64_t address) {
    const auto key = std::make_pair(object, offset);
    auto it = done_.find(key);
    if (it != done_.end()) return it->second;
    std::optional<Resolved> r;
#ifndef PROF_ANALYSIS_NO_SYMBOLS
    if (!sym_ || sym_rank_ != rank_index) {
      sym_ = std::make_unique<symbols::Symbolizer>(rank_trace.load_objects());
      sym_rank_ = rank_index;
    }
    if (auto loc = sym_->resolve_return_address(address)) r = Resolved{loc->file, loc->line};
    for (const std::string& path : sym_->rebuilt_objects())
      if (std::find(rebuilt_.begin(), rebuilt_.end(), path) == rebuilt_.end()) rebuilt_.push_back(path);
#else
    (void)rank_index;
    (void)rank_trace;
    (void)address;
#endif
    done_.emplace(key, r);
    return r;
  }
  const std::vector<std::string>& rebuilt() const { return rebuilt_; }

 private:
  std::vector<std::string> rebuilt_;
  std::map<std::pair<std::string, uint64_t>, std::optional<Resolved>> done_;
#ifndef PROF_ANALYSIS_NO_SYMBOLS
  std::unique_ptr<symbols::Symbolizer> sym_;
  size_t sym_rank_ = SIZE_MAX;
#endif
};

}  // namespace

SiteInfo resolve_code_address(const RankTrace& rank_trace, uint64_t address) {
  SiteInfo info;
  info.address = address;
  const trace::LoadObject* obj = nullptr;
  for (const auto& o : rank_trace.load_objects())
    if (o.bias <= address && (!obj || o.bias > obj->bias)) obj = &o;
#ifndef PROF_ANALYSIS_NO_SYMBOLS
  if (obj && address != 0) {
    symbols::Symbolizer sym(rank_trace.load_objects());
    if (auto loc = sym.resolve_return_address(address)) {
      info.file = loc->file;
      info.line = loc->line;
      info.label = loc->file + ":" + std::to_string(loc->line);
      return info;
    }
    if (!sym.rebuilt_objects().empty()) info.rebuilt_object = sym.rebuilt_objects().front();
  }
#endif
  info.label = obj ? std::filesystem::path(obj->path).filename().string() + "+" +
                         format::hex(address - obj->bias)
                   : format::hex(address);
  return info;
}

void Registry::build(const std::vector<const RankTrace*>& ranks) {
  functions.assign(1, "(unknown)");
  sites.assign(1, SiteInfo{});
  sites[0].label = "0x0";
  funcs.assign(ranks.size(), {});
  site_of.assign(ranks.size(), {});
  std::unordered_map<std::string, uint32_t> fname;
  // (file, line) when resolved; ("", 0, object, offset) when not.
  std::map<std::tuple<std::string, int, std::string, uint64_t>, uint32_t> sname;
  SiteResolver resolver;
  // The reader shares a set of definitions among the files that have it:
  // the ranks of one such set share the table made for the first of them
  // (each rank's own was 5 KB and 620 name look-ups for libprof's traces).
  const std::vector<trace::FunctionDef>* last_defs = nullptr;
  std::shared_ptr<const std::vector<FuncInfo>> last_table;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankTrace& rank_trace = *ranks[i];
    const std::vector<trace::FunctionDef>& defs = rank_trace.functions();
    if (&defs != last_defs) {
      uint32_t max_id = 0;
      for (const auto& f : defs) max_id = std::max<uint32_t>(max_id, f.id);
      auto table = std::make_shared<std::vector<FuncInfo>>(defs.empty() ? 0 : max_id + 1, FuncInfo{});
      for (const auto& f : defs) {
        auto [it, fresh] = fname.try_emplace(f.name, static_cast<uint32_t>(functions.size()));
        if (fresh) functions.push_back(f.name);
        const uint16_t role = format::function_role(f.name) | (kind_counts_bytes(f.kind) ? kRoleCountsBytes : 0);
        (*table)[f.id] = FuncInfo{f.kind, role, it->second};
      }
      last_defs = &defs;
      last_table = std::move(table);
    }
    funcs[i] = last_table;
    for (const auto& s : rank_trace.callsites()) {
      SiteInfo info;
      std::tuple<std::string, int, std::string, uint64_t> key;
      if (!s.file.empty()) {
        info.file = s.file;
        info.line = s.line;
        key = {s.file, s.line, std::string(), 0};
      } else {
        // The loaded object holding the address: the greatest bias below it.
        const trace::LoadObject* obj = nullptr;
        for (const auto& o : rank_trace.load_objects())
          if (o.bias <= s.address && (!obj || o.bias > obj->bias)) obj = &o;
        const std::string object = obj ? obj->path : std::string();
        const uint64_t offset = obj ? s.address - obj->bias : s.address;
        std::optional<Resolved> r;
        if (obj && s.address != 0) r = resolver.resolve(i, rank_trace, object, offset, s.address);
        if (r) {
          info.file = r->file;
          info.line = r->line;
          key = {r->file, r->line, std::string(), 0};
        } else {
          info.address = s.address;
          info.label = obj ? std::filesystem::path(object).filename().string() + "+" + format::hex(offset)
                           : format::hex(s.address);
          key = {std::string(), 0, object, offset};
        }
      }
      auto [it, fresh] = sname.try_emplace(key, static_cast<uint32_t>(sites.size()));
      if (fresh) sites.push_back(std::move(info));
      site_of[i][s.id] = it->second;
    }
  }
  rebuilt_objects = resolver.rebuilt();
}

CommCache::CommCache(const RankTrace& rank_trace, const WorldIndex& world_to_index)
    : rank_trace_(rank_trace), world_to_index_(world_to_index) {
  const auto& comms = rank_trace.comms();
  infos_.resize(comms.size());
  for (uint32_t i = 0; i < comms.size(); ++i) {
    const CommDef& d = comms[i];
    infos_[i] = info_of(d);
    by_handle_[d.handle].emplace_back(d.time, i);
  }
  by_handle_.for_each([](const uint32_t&, std::vector<std::pair<uint64_t, uint32_t>>& v) {
    std::stable_sort(v.begin(), v.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  });
}

const CommInfo* CommCache::lookup(uint32_t handle, uint64_t t) {
  for (unsigned i = 0; i < 4; ++i) {
    const Entry& e = cache_[i];
    if (e.handle == handle && t >= e.lo && t < e.hi) {
      last_ = e;
      return e.info;
    }
  }
  Entry fresh;
  fresh.handle = handle;
  fresh.lo = 0;
  fresh.hi = UINT64_MAX;
  const auto* defs = by_handle_.find(handle);
  if (defs && !defs->empty()) {
    // Last definition with time <= t; the earliest when t precedes them all.
    size_t k = 0;
    while (k + 1 < defs->size() && (*defs)[k + 1].first <= t) ++k;
    // (Equal times: the later definition wins, the order being stable.)
    fresh.info = &infos_[(*defs)[k].second];
    fresh.lo = k == 0 ? 0 : (*defs)[k].first;
    fresh.hi = k + 1 < defs->size() ? (*defs)[k + 1].first : UINT64_MAX;
  } else {
    // Not among the definitions: ask the reader (it may know implicit ones).
    const CommDef* d = rank_trace_.comm_at(handle, t);
    if (!d || extra_.size() >= 4096) {  // unknown (the answer is cached too)
      last_ = fresh;
      cache_[next_] = fresh;
      next_ = (next_ + 1) % 4;
      return nullptr;
    }
    extra_.push_back(info_of(*d));
    fresh.info = &extra_.back();
  }
  last_ = fresh;
  cache_[next_] = fresh;
  next_ = (next_ + 1) % 4;
  return fresh.info;
}

void Interpreter::fit_clock() {
  const double g0 = rank_trace_.to_global_ns(0);
  const double span = 1125899906842624.0;  // 2^50 ticks
  slope_ = (rank_trace_.to_global_ns(uint64_t{1} << 50) - g0) / span;
  intercept_ = g0;
  linear_ = std::isfinite(slope_) && std::isfinite(intercept_);
  // Check the line where timers live: ns since boot, TSC ticks, epoch ns.
  for (uint64_t t : {uint64_t{1} << 20, uint64_t{1} << 30, uint64_t{1} << 40, uint64_t{1} << 45,
                     uint64_t{1} << 52, uint64_t{3} << 51}) {
    if (!linear_) break;
    const double want = rank_trace_.to_global_ns(t);
    const double got = clock().on_line(t);
    if (!(std::fabs(want - got) <= 1e-13 * std::fabs(want) + 1e-3)) linear_ = false;
  }
}

}  // namespace prof::analysis::detail
