// Runtime of libprof: the globals the wrappers read (runtime.h), the
// profiler's messages, definition writes, and reaching the MPI library. The
// rest of the runtime is in the files runtime_internal.h lists.
//
// Lifecycle: inert until MPI_Init returns (processes that never call it, such
// as mpiexec and the hydra proxy, get no file and no output). Init reads the
// settings, creates the trace directory on rank 0 and the rank files
// everywhere, agrees with every rank whether to record (one bad rank disables
// all, since clock sync is collective), synchronizes clocks, then turns
// recording on (start.cpp).
// Finalize, MPI_Abort, a fatal signal and exit() without Finalize each seal the
// chunks and write an end definition (entry_points.cpp, process_end.cpp);
// SIGKILL leaves unsealed chunks, which the reader salvages.
#include "runtime.h"
#include "runtime_internal.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "prof/bcast/segment.h"
#include "prof/bcast/shm.h"
#include "prof/definition_lines.h"
#include "prof/settings.h"
#include "run_facts.h"
#include "trace_file.h"

namespace prof::shim {

Globals g;
ThreadState unattached_thread = [] {
  ThreadState ts;
  ts.in_call = true;
  return ts;
}();
__thread ThreadState* tls_state __attribute__((tls_model("initial-exec"))) = &unattached_thread;

Runtime* rt = nullptr;  // created at MPI_Init when recording; never freed

// Messages: PROF_LOG_LEVEL (0 trace .. 6 off), set at MPI_Init before
// anything is said. Each is one line, "libprof: <text>", written to stderr by
// one write so that the ranks' lines do not interleave.
int log_level = kWarn;

void say(int level, const std::string& text) {
  if (level < log_level) return;
  const std::string line = "libprof: " + text + "\n";
  std::fflush(stderr);  // what the application wrote there comes first
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += size_t(n);
  }
}

// "No space left on device (ENOSPC)": the reason and the name to search for.
std::string error_text(int error) {
  std::string s = std::strerror(error);
  if (const char* name = strerrorname_np(error)) s += std::string(" (") + name + ")";
  return s;
}

// The first loss of a rank is said once; every one is counted in the trace.
void tell_loss(const char* what) {
  if (rt->loss_told.exchange(true)) return;
  say(kError, "rank " + std::to_string(rt->rank) + ": cannot " + what + " the trace file in " +
                   rt->dir + ": " + error_text(rt->file.last_error()) +
                   "; the application goes on, what is not stored is counted in the trace (records_lost)");
}

// ---------------------------------------------------------------------------
// Definitions (cold path): formatted into a string, written as one chunk.
void define(const std::string& text) {
  if (!rt || text.empty() || rt->forked_child || !rt->file.is_open()) return;
  if (!rt->file.write_definitions(text.data(), text.size())) {
    rt->definitions_lost.fetch_add(1);
    tell_loss("write");
  }
}

// ---------------------------------------------------------------------------
void reach_mpi_library() {
  // RTLD_DEFAULT searches the global scope, as the lazy binding of libprof's calls does.
  if (dlsym(RTLD_DEFAULT, "PMPI_Init")) {
    g.mpi_reached = true;
    return;
  }
  // Loaded, but local to what opened it: find the object that defines
  // PMPI_Init among those loaded and make it (with what it needs) global.
  std::vector<std::string> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name && info->dlpi_name[0])
          static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
        return 0;
      },
      &objects);
  std::string library;
  for (const std::string& name : objects) {
    void* handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) continue;
    Dl_info info;
    void* init = dlsym(handle, "PMPI_Init");
    if (init && dladdr(init, &info) && info.dli_fname) library = info.dli_fname;
    dlclose(handle);
    if (!library.empty()) break;
  }
  const char* problem = nullptr;
  if (library.empty())
    problem = "no MPI library is loaded (no PMPI_Init): libprof.so must be preloaded into an MPI program";
  else if (!dlopen(library.c_str(), RTLD_LAZY | RTLD_NOLOAD | RTLD_GLOBAL))
    problem = "cannot make the MPI library global";
  else if (const char* now = std::getenv("LD_BIND_NOW"); now && now[0])
    // Every PMPI_ call was bound at start-up, before the library was there.
    problem = "the MPI library was opened after start-up and LD_BIND_NOW is set: libprof's calls "
              "into it were bound to nothing; run without LD_BIND_NOW";
  if (problem) {
    std::fprintf(stderr, "libprof: %s%s%s\n", problem, library.empty() ? "" : ": ", library.c_str());
    std::abort();
  }
  g.mpi_reached = true;
}

uint64_t derived_type_size(MPI_Datatype t) {
  MPI_Count size = 0;
  if (t == MPI_DATATYPE_NULL || PMPI_Type_size_c(t, &size) != MPI_SUCCESS || size < 0) return 0;
  return static_cast<uint64_t>(size);
}

}  // namespace prof::shim
