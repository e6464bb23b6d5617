// The heartbeat thread and the hang watch (PROF_HANG_WARN): see the comment
// on Heartbeat below.
//
// Invariant: the heartbeat thread never calls MPI, takes no signal, and reads
// only what is never freed (the Heartbeat, the Live chunk).
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

namespace {

// ---------------------------------------------------------------------------
// The heartbeat: a helper thread that wakes every kHeartbeatMs and stores the
// time into the Live chunk, so a reader knows when a killed rank was last
// alive. It sleeps between beats (a timed wait, so a stop is prompt), never
// calls MPI, takes no signal (all blocked: the application's threads get
// them as before) and touches nothing the hot path uses. With PROF_HANG_WARN
// it also reads the in-flight slots and says once per call on stderr when a
// thread has been inside one call longer than that.
struct Heartbeat {
  std::mutex mu;
  std::condition_variable wake;
  bool stop = false;
  bool running = false;
  pthread_t thread{};
  uint64_t warn_ticks = 0;              // PROF_HANG_WARN in ticks; 0: off
  uint64_t warned[format::kLiveSlots] = {};  // per slot: the enter last warned about
};
Heartbeat* heartbeat = nullptr;  // created at MPI_Init, never freed (a fork's child keeps it)

const FunctionInfo* function_info(uint16_t id) {
  return id >= 1 && id <= kFunctionCount ? &kFunctions[id - 1] : nullptr;
}

// The file:line of virtual address `vaddr` in `object`, by binutils'
// addr2line in a child process ("" when it is not installed, the object has
// no debug info, or it takes over 2 s). Only PROF_HANG_WARN's rare lines pay
// for it, on the heartbeat thread; the shim links no DWARF reader. The child
// runs without LD_PRELOAD, so the profiler is not loaded into it.
uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

std::string addr2line(const std::string& object, uint64_t vaddr) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> env_kept;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env_kept.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_kept) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string exe = object, where = format::hex(vaddr);
  char tool[] = "addr2line", flag[] = "-e";
  char* argv[] = {tool, flag, exe.data(), where.data(), nullptr};
  pid_t child = -1;
  const int rc = posix_spawnp(&child, "addr2line", &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  std::string text;
  if (rc == 0) {
    const uint64_t deadline = monotonic_ns() + 2'000'000'000u;
    for (;;) {
      pollfd p{out[0], POLLIN, 0};
      const uint64_t now_ns = monotonic_ns();
      if (now_ns >= deadline || ::poll(&p, 1, int((deadline - now_ns) / 1'000'000) + 1) <= 0) break;
      char buf[512];
      const ssize_t n = ::read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      text.append(buf, size_t(n));
    }
    ::kill(child, SIGKILL);  // (gone already, unless it ran past the deadline)
    ::waitpid(child, nullptr, 0);
  }
  ::close(out[0]);
  text = text.substr(0, text.find('\n'));
  text = text.substr(0, text.find(" (discriminator"));
  if (text.empty() || text.rfind("??", 0) == 0 || text.size() < 3 || text.compare(text.size() - 2, 2, ":0") == 0 ||
      text.back() == '?')
    return {};
  return text;
}

// Where a return address lies: "file.c:42 (/path/app+0x1189)" when the
// object's debug info says (the call's line: the address less one), else
// "/path/app+0x1189", with the function's name when the dynamic symbol
// table has it.
std::string describe_address(uint64_t address) {
  Dl_info info{};
  link_map* map = nullptr;
  if (address == 0 ||
      !dladdr1(reinterpret_cast<void*>(address), &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) ||
      !info.dli_fname)
    return format::hex(address);
  const std::string object = info.dli_fname[0] ? std::string(info.dli_fname) : exe_path();
  const std::string where =
      object + "+" + format::hex(address - reinterpret_cast<uintptr_t>(info.dli_fbase));
  if (map) {
    const std::string line = addr2line(object, address - 1 - map->l_addr);
    if (!line.empty()) return line + " (" + where + ")";
  }
  return info.dli_sname ? std::string(info.dli_sname) + " (" + where + ")" : where;
}

void check_hangs(uint64_t t) {
  const uint32_t streams = std::min<uint32_t>(rt->next_stream.load(), format::kLiveSlots);
  for (uint32_t i = 0; i < streams; ++i) {
    const format::InFlightSlot* slot = rt->file.live_slot(i);
    if (!slot) return;
    const uint64_t enter = __atomic_load_n(&slot->enter, __ATOMIC_ACQUIRE);
    if (enter == 0 || enter >= t || t - enter < heartbeat->warn_ticks ||
        heartbeat->warned[i] == enter)
      continue;
    const format::InFlightSlot copy = *slot;
    // A Fortran binding's call site, stored before the C call's enter
    // (binding_site.h): the application's line rather than the binding's.
    const uint64_t binding_site = __atomic_load_n(
        &reinterpret_cast<const format::LiveSlot*>(slot)->binding_site, __ATOMIC_RELAXED);
    if (__atomic_load_n(&slot->enter, __ATOMIC_ACQUIRE) != enter) continue;  // it returned
    heartbeat->warned[i] = enter;
    const FunctionInfo* f = function_info(uint16_t(copy.site_func >> 48));
    std::string whom;
    const format::FuncKind kind = f ? f->kind : format::FuncKind::Other;
    // The communicator as prof-analyze names it (MPI_COMM_WORLD, or its
    // global id), and each peer as a rank of it, with its world rank where
    // the two differ (an intercommunicator's peers are in its remote group).
    const bool world = copy.comm == uint32_t(MPI_COMM_WORLD);
    std::string comm = "MPI_COMM_WORLD";
    const Runtime::CommMembers* members = nullptr;
    // Held while `members` is read: another thread may define a communicator.
    std::unique_lock<std::mutex> lock(rt->defs_mu, std::defer_lock);
    if (!world) {
      lock.lock();
      const auto it = rt->comm_gid.find(copy.comm);
      comm = it != rt->comm_gid.end() ? "communicator " + std::to_string(it->second)
                                      : "communicator handle " + format::hex(copy.comm);
      const auto found = rt->comm_members.find(copy.comm);
      if (found != rt->comm_members.end()) members = &found->second;
    }
    const auto peer_text = [&](int32_t peer) {
      if (peer == MPI_ANY_SOURCE) return std::string("MPI_ANY_SOURCE");
      if (peer == MPI_PROC_NULL) return std::string("MPI_PROC_NULL");
      std::string text = std::to_string(peer);
      if (world) return text;
      if (members) {
        const std::vector<int32_t>& group = members->remote.empty() ? members->local : members->remote;
        if (peer >= 0 && size_t(peer) < group.size()) {
          if (group[size_t(peer)] != peer) text += " (world rank " + std::to_string(group[size_t(peer)]) + ")";
          return text;
        }
      }
      return text + " (a rank of that communicator)";
    };
    switch (kind) {
      case format::FuncKind::Send:
      case format::FuncKind::Recv:
      case format::FuncKind::Probe:
        whom = "peer " + peer_text(copy.peer) + ", tag " + std::to_string(copy.tag) + ", " + comm;
        break;
      case format::FuncKind::SendRecv:
        whom = "to " + peer_text(copy.peer) + ", from " + peer_text(copy.tag) + ", " + comm;
        break;
      case format::FuncKind::Collective:
      case format::FuncKind::AllToAll:
        whom = comm;
        break;
      case format::FuncKind::Completion:
        whom = std::to_string(copy.tag) + " request(s)";
        break;
      default:
        break;
    }
    if (lock.owns_lock()) lock.unlock();
    const double seconds = double(t - enter) * g.timer.ns_per_tick() * 1e-9;
    std::fprintf(stderr, "libprof: rank %d thread %u has been inside %s for %.1f s (PROF_HANG_WARN): "
                 "called from %s%s%s\n",
                 rt->rank, i, f ? f->name : "an MPI call", seconds,
                 describe_address(binding_site ? binding_site : copy.site_func & format::kSiteMask).c_str(),
                 whom.empty() ? "" : "; ", whom.c_str());
    std::fflush(stderr);
  }
}

void* heartbeat_main(void*) {
  format::LiveHeader* live = rt->file.live();
  std::unique_lock<std::mutex> lock(heartbeat->mu);
  while (!heartbeat->stop) {
    const uint64_t t = now();
    __atomic_store_n(&live->heartbeat, t, __ATOMIC_RELEASE);
    if (heartbeat->warn_ticks) check_hangs(t);
    heartbeat->wake.wait_for(lock, std::chrono::milliseconds(format::kHeartbeatMs));
  }
  return nullptr;
}

}  // namespace

void start_heartbeat() {
  format::LiveHeader* live = rt->file.live();
  if (!live) return;
  // The first beat here, not on the new thread: a rank killed before that
  // thread first runs (a loaded node) is still known alive after MPI_Init.
  __atomic_store_n(&live->heartbeat, now(), __ATOMIC_RELEASE);
  heartbeat = new Heartbeat();
  if (rt->cfg.hang_warn_seconds > 0)
    heartbeat->warn_ticks = std::max<uint64_t>(
        1, uint64_t(rt->cfg.hang_warn_seconds * 1e9 / g.timer.ns_per_tick()));
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits the full mask
  heartbeat->running = pthread_create(&heartbeat->thread, nullptr, heartbeat_main, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// At finalize, MPI_Abort or exit: not from a signal handler. Not waited for:
// the thread leaves its loop when it next wakes, touching only what is never
// freed (the heartbeat, the Live chunk); a join would cost the caller a
// context switch, a time slice on a busy machine.
void stop_heartbeat() {
  if (!heartbeat || !heartbeat->running) return;
  {
    std::lock_guard<std::mutex> lock(heartbeat->mu);
    heartbeat->stop = true;
  }
  heartbeat->wake.notify_all();
  pthread_detach(heartbeat->thread);
  heartbeat->running = false;
}

void forget_heartbeat() {
  if (heartbeat) heartbeat->running = false;
}

}  // namespace prof::shim
