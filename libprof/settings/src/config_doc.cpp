// Prints the PROF_* settings table (settings.cpp) as the markdown of docs/configuration.md.
#include <cstdio>
#include <string>

#include "prof/settings.h"

namespace {

// A table cell's text: an unescaped `|` would end the cell (values such as
// `0|1` list alternatives).
std::string cell(const char* text) {
  std::string out;
  for (const char* c = text; *c; ++c) {
    if (*c == '|') out += '\\';
    out += *c;
  }
  return out;
}

}  // namespace

int main() {
  std::printf("# libprof settings\n\n");
  std::printf("Environment variables read by libprof.so at MPI_Init (`prof-run --help-config` "
              "prints this page). A bad value gets one message naming the variable, the value and "
              "what is accepted, `NAME='VALUE' is not ACCEPTED`, followed by `: DETAIL` where "
              "more is worth saying; the application then runs unprofiled unless PROF_STRICT=1. "
              "A variable set to the empty string is taken as unset (its default). A `PROF_*` "
              "variable that is none of these (a misspelling) is ignored, and rank 0 says so in one "
              "warning on stderr, naming the setting it is closest to (`PROF_TIMR is not a libprof "
              "setting (did you mean PROF_TIMER?)`); prof-analyze's `PROF_ANALYZE_*` are not "
              "judged.\n\n");
  std::printf("| variable | type | default | description |\n| --- | --- | --- | --- |\n");
  for (const auto& v : prof::settings::config_variables())
    std::printf("| `%s` | %s | %s | %s%s |\n", cell(v.name).c_str(), cell(prof::settings::setting_type(v).c_str()).c_str(),
                cell(v.default_value).c_str(), cell(v.description).c_str(),
                v.same_on_every_rank ? " The same on every rank: where a rank's value differs from rank 0's, the "
                                       "run is unprofiled (aborted with PROF_STRICT=1), with one message naming it."
                                     : "");
  std::printf(
      "\n## What the trace survives\n\n"
      "- **A reused PROF_OUTPUT.** A trace is never overwritten or mixed with another run: when "
      "the directory already holds rank files, rank 0 picks the first of PROF_OUTPUT-2, -3, ... "
      "that is a directory holding none (a file of that name is passed over) and prints one line "
      "naming it. Rank files are created exclusively and "
      "never through a symbolic link (a job started by MPI_Comm_spawn thus writes its own "
      "directory too).\n"
      "- **A full disk, a failed write.** The application goes on unchanged. Each rank prints "
      "one message naming the error (e.g. `No space left on device (ENOSPC)`); the events it "
      "could not store are discarded and counted, and the count is written into the trace "
      "(`M records_lost`, `M definitions_lost`; see trace-format.md), in space reserved for it "
      "when the file is created. Chunk space is allocated before it is used, so the files hold "
      "only what was written, never sparse ranges.\n"
      "- **fork().** A child forked by a rank records nothing and never writes into its "
      "parent's trace, whether it goes on, calls exec or exits.\n"
      "- **Unused chunk space.** When a rank ends (MPI_Finalize, exit, MPI_Abort), the unused "
      "tail of each thread's last chunk is given back: cut off when that chunk ends the file, "
      "otherwise freed on disk (a hole: the file's size still counts it, at most "
      "PROF_BUFFER_MB a thread).\n");
  return 0;
}
