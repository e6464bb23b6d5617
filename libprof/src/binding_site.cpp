#include "binding_site.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace prof::shim {

uint64_t binding_call_keys[format::kRepeatFuncs] = {};

void* resolve_binding(const char* name) {
  void* fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    // Only an application linked with the MPI Fortran library calls these
    // names, so the library is loaded; if it cannot be found, no call can go on.
    const char* why = dlerror();
    std::fprintf(stderr, "libprof: cannot find the MPI library's Fortran binding %s (%s)\n", name,
                 why ? why : "no definition after libprof.so");
    std::abort();
  }
  return fn;
}

}  // namespace prof::shim
