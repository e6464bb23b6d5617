// The hand-written MPI entry points: MPI_Init and MPI_Init_thread (the timer
// starts before PMPI_Init so the record covers it), MPI_Finalize (the final
// clock synchronization, then the end of the trace), MPI_Abort and
// MPI_Pcontrol. Every other wrapper is generated.
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

// MPI_Init and MPI_Init_thread: the timer starts before PMPI_Init so the
// record of MPI_Init covers it (MPI_Wtime, usable only once MPI is up, starts
// after), then the rest of the set-up, to the call's return.
template <class InitCall>
int init_common(uint16_t id, InitCall&& call, int* provided_out, void* return_address) {
  if (!g.mpi_reached) reach_mpi_library();
  Config cfg;
  std::vector<std::string> errors;
  read_config(&cfg, &errors);
  std::string why;
  bool timer_ready = false;
  if (cfg.timer != format::TimerKind::MpiWtime) {
    timer_ready = g.timer.init(cfg.timer, &why);
    if (!timer_ready && cfg.timer == format::TimerKind::Tsc && !cfg.timer_given)
      timer_ready = g.timer.init(format::TimerKind::Monotonic, &why);  // default falls back
  }
  const uint64_t t0 = timer_ready ? g.timer.now() : 0;
  const int rc = call();
  if (rc != MPI_SUCCESS) return rc;
  if (cfg.timer == format::TimerKind::MpiWtime) timer_ready = g.timer.init(cfg.timer, &why);
  if (!timer_ready) errors.push_back("PROF_TIMER=" + std::string(format::timer_name(cfg.timer)) +
                                     ": " + why);
  const uint64_t entered = t0 ? t0 : timer_ready ? g.timer.now() : 0;
  start_recording(cfg, std::move(errors), id, entered, provided_out ? *provided_out : -1, return_address);
  return rc;
}

}  // namespace prof::shim

using namespace prof::shim;

// ---------------------------------------------------------------------------
// Hand-written entry points.
extern "C" {

PROF_EXPORT int MPI_Init(int* argc, char*** argv) {
  return init_common(kId_MPI_Init, [&] { return PMPI_Init(argc, argv); }, nullptr,
                     __builtin_return_address(0));
}

PROF_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  return init_common(
      kId_MPI_Init_thread, [&] { return PMPI_Init_thread(argc, argv, required, provided); },
      provided, __builtin_return_address(0));
}

PROF_EXPORT int MPI_Finalize(void) {
  ThreadState* ts = call_begin();
  if (!ts) return PMPI_Finalize();
  g.timer.finish_calibration();
  // In flight from here: the closing clock sync waits for every rank, and a
  // rank that never comes leaves this one inside MPI_Finalize. The record
  // starts here, at the call: the run ends where the program called it
  // (docs/metrics.md, "The root"), and a rank's wait in the sync for the
  // slower ranks is inside the call, not counted as its computation.
  prof::format::InFlightSlot* const slot =
      call_enter(ts, kId_MPI_Finalize, __builtin_return_address(0), -1, -1, 0, 0);
  const uint64_t called = now();
  call_entered(slot, called);
  const SyncResult sync = synchronize_clocks(g.timer, MPI_COMM_WORLD, rt->cfg.sync, &rt->sync_comm);
  if (rt->sync_comm != MPI_COMM_NULL) PMPI_Comm_free(&rt->sync_comm);
  char npt[64];
  std::snprintf(npt, sizeof npt, "%.12g", g.timer.ns_per_tick());
  define(prof::format::definition_line::meta("ns_per_tick", npt) +
         prof::format::definition_line::clock_sync("final", sync.local_ticks, sync.offset_ns, sync.rtt_ns));
  const int rc = PMPI_Finalize();
  record_plain(ts, kId_MPI_Finalize, called, now(), rc == MPI_SUCCESS);
  call_done(ts);
  call_end(ts);
  stop_heartbeat();
  stop_recording();
  write_end("finalize");
  close_trace();
  return rc;
}

PROF_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode) {
  ThreadState* ts = call_begin();
  if (ts) {
    call_enter_plain(ts, kId_MPI_Abort, __builtin_return_address(0));
    const uint64_t t = now();
    record_plain(ts, kId_MPI_Abort, t, t, true);
    call_end(ts);
    stop_heartbeat();
    stop_recording();
    write_end("abort");
    close_trace();
  }
  return PMPI_Abort(comm, errorcode);
}

PROF_EXPORT int MPI_Pcontrol(const int level, ...) {
  ThreadState* ts = call_begin();
  if (!ts) return PMPI_Pcontrol(level);
  call_enter_plain(ts, kId_MPI_Pcontrol, __builtin_return_address(0));
  const uint64_t t0 = now();
  const int rc = PMPI_Pcontrol(level);
  record_plain(ts, kId_MPI_Pcontrol, t0, now(), rc == MPI_SUCCESS);
  call_end(ts);
  return rc;
}

}  // extern "C"
