// Prints the PROF_* settings table (config.cpp) as the markdown of docs/configuration.md.
#include <cstdio>

#include "config.h"

int main() {
  std::printf("# libprof settings\n\n");
  std::printf("Environment variables read by libprof.so at MPI_Init (`prof-run --help-config` "
              "prints this page). A bad value gets one message naming the variable and the "
              "accepted values; the application then runs unprofiled unless PROF_STRICT=1.\n\n");
  std::printf("| variable | type | default | description |\n| --- | --- | --- | --- |\n");
  for (const auto& v : prof::shim::config_variables())
    std::printf("| `%s` | %s | %s | %s |\n", v.name, v.type, v.default_value, v.description);
  return 0;
}
