#include "run_facts.h"

#include <dlfcn.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "prof/definition_lines.h"

extern char** environ;

namespace prof::shim {
namespace {

// Transports an MPI library may have loaded, by the soname it loads them
// under, and how each says its version.
struct Transport {
  const char* name;
  const char* soname;
  const char* version_symbol;
  std::string (*version)(void* symbol);
};
const Transport kTransports[] = {
    {"ucx", "libucp.so.0", "ucp_get_version_string",
     [](void* f) {
       const char* v = reinterpret_cast<const char* (*)()>(f)();
       return std::string(v ? v : "");
     }},
    {"ofi", "libfabric.so.1", "fi_version",
     [](void* f) {
       const uint32_t v = reinterpret_cast<uint32_t (*)()>(f)();
       return std::to_string(v >> 16) + '.' + std::to_string(v & 0xFFFF);
     }},
};

bool recorded_variable(const char* entry) {
  for (const char* prefix : format::kRunEnvironmentPrefixes)
    if (std::strncmp(entry, prefix, std::strlen(prefix)) == 0) return true;
  return false;
}

}  // namespace

std::string run_facts_definitions(const settings::Config& resolved) {
  using namespace format::definition_line;
  std::string defs;
  static char library[MPI_MAX_LIBRARY_VERSION_STRING];  // (8 KiB: not on the application's stack)
  int length = 0;
  if (PMPI_Get_library_version(library, &length) == MPI_SUCCESS && length > 0) {
    std::string_view text(library, std::strlen(library));
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    defs += meta("mpi_library", format::escaped_text(text));
  }
  for (const Transport& t : kTransports) {
    void* handle = ::dlopen(t.soname, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) continue;
    defs += meta("transport", t.name);
    if (void* f = ::dlsym(handle, t.version_symbol)) defs += meta("transport_version", t.version(f));
    ::dlclose(handle);
    break;
  }
  for (char** e = environ; e && *e; ++e) {
    if (!recorded_variable(*e)) continue;
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    defs += environment(std::string_view(*e, size_t(eq - *e)), eq + 1);
  }
  for (const settings::ConfigVariable& v : settings::config_variables()) {
    if (std::strcmp(v.name, "PROF_OUTPUT") == 0) continue;  // (output_setting_definition, once it is chosen)
    const char* given = std::getenv(v.name);
    defs += setting(v.name, v.resolved(resolved), given && *given);
  }
  return defs;
}

std::string output_setting_definition(const std::string& dir) {
  const char* given = std::getenv("PROF_OUTPUT");
  return format::definition_line::setting("PROF_OUTPUT", dir, given && *given);
}

}  // namespace prof::shim
