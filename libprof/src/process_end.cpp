// The ways a rank ends without MPI_Finalize: exit() (an atexit handler), a
// fatal signal (the handlers chain to the previous ones), and fork() (the
// child records and writes nothing).
//
// Invariant: the trace gets at most one end definition (write_end's
// Runtime::ended), whichever way comes first.
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

// ---------------------------------------------------------------------------
// Ends.
void on_exit_without_finalize() {
  if (g.recording) {
    stop_heartbeat();
    stop_recording();
    write_end("exit");
    close_trace();
  }
}

// A fork of a recording rank shares its mapped chunks and its file: the
// child records nothing and writes nothing, not even at its exit (no end
// definition, no sealing), whether it goes on, calls exec or exits.
void on_fork_child() {
  if (!rt) return;
  stop_recording();
  rt->forked_child = true;
  rt->ended.store(true);
  forget_heartbeat();  // the thread stayed in the parent
  rt->file.abandon();
}

namespace {

// A fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL) ends the rank: the trace is
// ended first, then the previous handler runs (UCX installs its own for
// SIGSEGV, which ends the process) or the default action. SIGTERM, SIGINT
// and SIGQUIT end it only by their default action: a handler of the
// program's runs first and decides (it may go on, call exit(), which ends
// the trace as `exit`, or _exit, which leaves it unsealed, as SIGKILL does).
// SIGABRT alike, except that a handler of the program's that returns ends
// the trace (abort() then ends the process with the default action); one
// that leaves by siglongjmp goes on recorded. A signal the program ignores
// gets no handler.
bool ends_before_programs_handler(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
}

bool is_programs_handler(const struct sigaction& action) {
  if (action.sa_flags & SA_SIGINFO) return action.sa_sigaction != nullptr;
  return action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN;
}

void end_recording(int sig) {
  if (!g.recording) return;
  stop_recording();
  char reason[24];
  std::snprintf(reason, sizeof reason, "signal:%d", sig);
  write_end(reason);
}

void on_fatal_signal(int sig, siginfo_t* info, void* ctx) {
  struct sigaction& old = rt->old_actions[sig];
  if (!is_programs_handler(old) || ends_before_programs_handler(sig)) end_recording(sig);
  if (is_programs_handler(old)) {
    const struct sigaction handler = old;
    // A one-shot handler's signal finds the default action next time (the
    // kernel's reset would take this handler away instead).
    if (handler.sa_flags & SA_RESETHAND) {
      old.sa_handler = SIG_DFL;
      old.sa_flags = 0;
    }
    if (handler.sa_flags & SA_SIGINFO)
      handler.sa_sigaction(sig, info, ctx);
    else
      handler.sa_handler(sig);
    if (sig == SIGABRT) end_recording(sig);
    return;
  }
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  raise(sig);
}

}  // namespace

void install_signal_handlers() {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGQUIT}) {
    struct sigaction current{};
    sigaction(sig, nullptr, &current);
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) continue;  // (ignored: not fatal)
    // In front of a handler of the program's, the signal is delivered as to
    // that handler: its mask, and its flags that change the delivery
    // (SA_RESTART: an interrupted read() resumes; SA_NODEFER; SA_ONSTACK).
    // SA_RESETHAND is kept in on_fatal_signal, so that the signal's next
    // delivery still ends the trace.
    constexpr int kDeliveryFlags = SA_RESTART | SA_NODEFER | SA_ONSTACK;
    struct sigaction sa{};
    sa.sa_sigaction = on_fatal_signal;
    if (is_programs_handler(current)) {
      sa.sa_flags = SA_SIGINFO | (current.sa_flags & kDeliveryFlags);
      sa.sa_mask = current.sa_mask;
    } else {
      sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
      sigemptyset(&sa.sa_mask);
    }
    sigaction(sig, &sa, &rt->old_actions[sig]);
  }
}

}  // namespace prof::shim
