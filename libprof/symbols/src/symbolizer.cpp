#include "prof/symbols/symbolizer.h"

#include <elfutils/libdwfl.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <string_view>

namespace prof::symbols {

// Objects are reported to libdw only when an address may lie in them: a
// process maps dozens (an MPI library pulls in its transports), and reporting
// one opens, maps and parses its file, while the call sites of a report
// usually lie in one or two.
struct Symbolizer::Impl {
  Dwfl_Callbacks callbacks{};
  char* debuginfo_path = nullptr;
  Dwfl* dwfl = nullptr;
  std::vector<trace::LoadObject> unreported;  // by ascending bias
  std::map<uint64_t, std::optional<SourceLocation>> cache;
  // Modules whose file is not the object the run loaded (its build id
  // differs): their line tables would give wrong lines, so nothing in them is
  // resolved.
  std::vector<Dwfl_Module*> stale;
  std::vector<std::string> rebuilt;

  // The reported module holding pc. An object's addresses start at its bias
  // or above, and loaded objects do not overlap, so the one holding pc is the
  // object of greatest bias at or below it: such objects are reported in
  // descending bias until one holds pc (all of them when none does, as if
  // every object had been reported at once).
  static std::string build_id_hex(Dwfl_Module* mod) {
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    const int n = dwfl_module_build_id(mod, &bits, &vaddr);
    static const char digits[] = "0123456789abcdef";
    std::string hex;
    for (int k = 0; k < n; ++k) {
      hex += digits[bits[k] >> 4];
      hex += digits[bits[k] & 15];
    }
    return hex;
  }

  Dwfl_Module* module_of(Dwarf_Addr pc) {
    for (;;) {
      if (Dwfl_Module* mod = dwfl_addrmodule(dwfl, pc)) return mod;
      auto above = std::upper_bound(unreported.begin(), unreported.end(), pc,
                                    [](Dwarf_Addr a, const trace::LoadObject& o) { return a < o.bias; });
      if (above == unreported.begin()) return nullptr;
      const auto candidate = std::prev(above);
      dwfl_report_begin_add(dwfl);
      // A missing file just leaves its addresses unresolved.
      Dwfl_Module* mod =
          dwfl_report_elf(dwfl, candidate->path.c_str(), candidate->path.c_str(), -1, candidate->bias, false);
      dwfl_report_end(dwfl, nullptr, nullptr);
      if (mod && !candidate->build_id.empty() && build_id_hex(mod) != candidate->build_id) {
        stale.push_back(mod);
        rebuilt.push_back(candidate->path);
      }
      unreported.erase(candidate);
    }
  }
};

namespace {
// A source file named as its compiler was given it, as users know it from
// their build command (`mpicc exch.c` gives "exch.c"): libdw joins a line
// table's name with its directory, so a name under the compilation unit's
// directory is given back relative to it; a relative name (`cc ../../src/x.c`
// from elsewhere) stays as it is, and an absolute one given as such (a CMake
// build) stays absolute.
std::string source_as_given(const char* file, const char* comp_dir) {
  const std::string_view name(file);
  if (!comp_dir || comp_dir[0] != '/' || name.empty() || name[0] != '/') return file;
  std::string_view dir(comp_dir);
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  if (name.size() > dir.size() + 1 && name.substr(0, dir.size()) == dir && name[dir.size()] == '/')
    return std::string(name.substr(dir.size() + 1));
  return file;
}
}  // namespace

Symbolizer::Symbolizer(const std::vector<trace::LoadObject>& objects)
    : impl_(std::make_unique<Impl>()) {
  impl_->callbacks.find_elf = dwfl_build_id_find_elf;
  impl_->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
  impl_->callbacks.section_address = dwfl_offline_section_address;
  impl_->callbacks.debuginfo_path = &impl_->debuginfo_path;
  impl_->dwfl = dwfl_begin(&impl_->callbacks);
  if (!impl_->dwfl) return;
  for (const auto& obj : objects)
    if (!obj.path.empty() && obj.path[0] == '/') impl_->unreported.push_back(obj);  // not linux-vdso.so.1 and the like
  std::stable_sort(impl_->unreported.begin(), impl_->unreported.end(),
                   [](const trace::LoadObject& a, const trace::LoadObject& b) { return a.bias < b.bias; });
}

Symbolizer::~Symbolizer() {
  if (impl_->dwfl) dwfl_end(impl_->dwfl);
}

std::optional<SourceLocation> Symbolizer::resolve_return_address(uint64_t address) {
  if (!impl_->dwfl || address == 0) return std::nullopt;
  auto it = impl_->cache.find(address);
  if (it != impl_->cache.end()) return it->second;
  std::optional<SourceLocation> result;
  const Dwarf_Addr pc = address - 1;
  Dwfl_Module* mod = impl_->module_of(pc);
  if (mod && std::find(impl_->stale.begin(), impl_->stale.end(), mod) != impl_->stale.end()) mod = nullptr;
  if (mod) {
    SourceLocation loc;
    if (const char* fn = dwfl_module_addrname(mod, pc)) loc.function = fn;
    if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc)) {
      int lineno = 0;
      if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
        loc.file = source_as_given(file, dwfl_line_comp_dir(line));
        loc.line = lineno;
        result = loc;
      }
    }
  }
  impl_->cache.emplace(address, result);
  return result;
}

const std::vector<std::string>& Symbolizer::rebuilt_objects() const { return impl_->rebuilt; }

SourceLocation callsite_location(const trace::RankTrace& rank, uint32_t callsite_id,
                                 Symbolizer* symbolizer) {
  const trace::CallSiteDef* def = rank.callsite(callsite_id);
  if (!def) return {};
  if (!def->file.empty()) return {def->file, def->line, {}};
  if (symbolizer)
    if (auto loc = symbolizer->resolve_return_address(def->address)) return *loc;
  return {};
}

}  // namespace prof::symbols
