// What a run ran under, as definition lines each rank writes once at
// MPI_Init (docs/trace-format.md, "What the run ran under"), so that two runs
// can be told apart: the MPI library's version string (MPI_Get_library_version,
// through PMPI), the transport's name and version when the library already
// loaded one, the environment variables users tune the library and transport
// with (format::kRunEnvironmentPrefixes), and every PROF_* setting as resolved
// (prof/settings.h's table).
//
// Cheap and loads nothing: one MPI call, one walk of the environment, and a
// dlopen(RTLD_NOLOAD) per known transport, which answers only for an object
// the process has loaded already (a transport the program did not load is
// neither loaded nor looked into).
#pragma once

#include <string>

#include "prof/settings.h"

namespace prof::shim {

// `resolved`: the settings as the shim runs with them (the timer it fell
// back to, for instance). All but PROF_OUTPUT, which is known only once rank
// 0 has chosen the directory (output_setting_definition).
std::string run_facts_definitions(const settings::Config& resolved);

// PROF_OUTPUT as resolved: the directory the trace went to (a default name,
// or PROF_OUTPUT-N when PROF_OUTPUT already held a trace).
std::string output_setting_definition(const std::string& dir);

}  // namespace prof::shim
