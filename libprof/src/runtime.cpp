// Runtime of libprof: set-up at MPI_Init, thread streams, chunk rotation,
// definitions, markers, communicators, and the ways a process can end.
//
// Lifecycle: inert until MPI_Init returns (processes that never call it, such
// as mpiexec and the hydra proxy, get no file and no output). Init reads the
// settings, creates the trace directory on rank 0 and the rank files
// everywhere, agrees with every rank whether to record (one bad rank disables
// all, since clock sync is collective), synchronizes clocks, then turns
// recording on.
// Finalize, MPI_Abort, a fatal signal and exit() without Finalize each seal the
// chunks and write an end definition; SIGKILL leaves unsealed chunks, which the
// reader salvages.
#include "runtime.h"

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

#include "bcast_segment.h"
#include "bcast_shm.h"
#include "config.h"
#include "prof/definition_lines.h"
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

namespace {

struct Runtime {
  Config cfg;
  TraceFile file;
  int rank = 0;
  int size = 1;
  std::string dir;
  std::mutex threads_mu;            // guards threads (attach, seal-all)
  std::vector<ThreadState*> threads;
  std::atomic<uint32_t> next_stream{0};
  std::mutex defs_mu;               // guards the maps below (cold paths)
  std::unordered_map<uintptr_t, uint32_t> callsite_by_address;
  std::unordered_map<std::string, uint32_t> callsite_by_file_line;
  uint32_t next_callsite = 1;
  // MPI calls' sites (resolve_call_site): the slot's site key -> its func-field
  // bits, and how many sites each function has (format::kSiteIndexes at most).
  std::unordered_map<uint64_t, uint16_t> call_site_bits;
  uint8_t sites_of_function[format::kRepeatFuncs] = {};
  uint32_t next_comm_seq = format::kFirstCreatedCommCounter;  // for the comm ids it leads
  std::unordered_map<uint32_t, uint64_t> comm_gid;  // handle -> global id of its latest definition
  std::unordered_map<uint64_t, uint64_t> idups_of;  // parent global id -> MPI_Comm_idup calls on it
  std::atomic<bool> ended{false};
  // What could not be stored (full disk, failed write): written at the end.
  std::atomic<uint64_t> records_lost{0};
  std::atomic<uint64_t> definitions_lost{0};
  std::atomic<bool> loss_told{false};  // one message per rank
  bool forked_child = false;           // this process is a fork of the rank: writes nothing
  // Address ranges of the MPI libraries and of ourselves: call sites are the
  // first frame outside them.
  std::vector<std::pair<uintptr_t, uintptr_t>> mpi_ranges;
  // The clock syncs' private communicator, made by the first and freed after
  // the last: one duplication a run, not one a sync.
  MPI_Comm sync_comm = MPI_COMM_NULL;
  struct sigaction old_actions[32];
};
Runtime* rt = nullptr;  // created at MPI_Init when recording; never freed

// Messages: PROF_LOG_LEVEL (0 trace .. 6 off), set at MPI_Init before
// anything is said. Each is one line, "libprof: <text>", written to stderr by
// one write so that the ranks' lines do not interleave.
enum Level { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };
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

std::string read_file(const char* path) {
  std::string s;
  FILE* f = std::fopen(path, "rb");
  if (!f) return s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

std::string exe_path() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

std::string command_line() {
  std::string raw = read_file("/proc/self/cmdline");
  for (char& c : raw)
    if (c == '\0') c = ' ';
  while (!raw.empty() && raw.back() == ' ') raw.pop_back();
  for (char& c : raw)
    if (c == '\t' || c == '\n') c = ' ';
  return raw;
}

// The GNU build id of a loaded object, hex ("" when it has none), read from
// its note segment in memory: the analysis compares it with the file it
// resolves call sites in, so a binary rebuilt after the run is noticed.
std::string loaded_build_id(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* at = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = at + ph.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, at, sizeof note);
      const unsigned char* name = at + sizeof note;
      const unsigned char* desc = name + ((note.n_namesz + 3) & ~3u);
      const unsigned char* next = desc + ((note.n_descsz + 3) & ~3u);
      if (next > end) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static const char digits[] = "0123456789abcdef";
        std::string hex;
        for (unsigned k = 0; k < note.n_descsz; ++k) {
          hex += digits[desc[k] >> 4];
          hex += digits[desc[k] & 15];
        }
        return hex;
      }
      at = next;
    }
  }
  return {};
}

int collect_load_map(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
  std::string path = info->dlpi_name ? info->dlpi_name : "";
  if (path.empty()) path = exe_path();  // the main program
  *out += format::definition_line::load_object(info->dlpi_addr, path);
  if (const std::string id = loaded_build_id(info); !id.empty())
    *out += format::definition_line::build_id(info->dlpi_addr, id);
  const bool mpi = path.find("libmpi") != std::string::npos ||
                   path.find("libprof.so") != std::string::npos ||
                   path.find("libmpich") != std::string::npos;
  if (mpi && rt) {
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const auto& ph = info->dlpi_phdr[i];
      if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
        rt->mpi_ranges.emplace_back(info->dlpi_addr + ph.p_vaddr,
                                    info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
    }
  }
  return 0;
}

bool in_mpi_libraries(uintptr_t a) {
  for (const auto& [lo, hi] : rt->mpi_ranges)
    if (a >= lo && a < hi) return true;
  return false;
}

// The application's frame for a call that reached us: the return address when
// the application called directly, else (Fortran and other bindings call
// through the MPI libraries) the first frame on the stack outside them.
uintptr_t first_frame_outside_mpi(uintptr_t return_address) {
  if (!in_mpi_libraries(return_address)) return return_address;
  void* frames[32];
  const int n = backtrace(frames, 32);
  for (int i = 0; i < n; ++i) {
    const auto a = reinterpret_cast<uintptr_t>(frames[i]);
    if (!in_mpi_libraries(a)) return a;
  }
  return return_address;
}

// ---------------------------------------------------------------------------
// Threads and chunks.
void seal_thread(ThreadState* ts) {
  if (!ts->chunk) return;
  const size_t used = size_t(reinterpret_cast<char*>(ts->cur) -
                             reinterpret_cast<char*>(ts->chunk + 1));
  TraceFile::seal(ts->chunk, used);
}

// Where records go when the trace cannot grow (disk full): discarded, so the
// application never notices, and counted each time the buffer fills.
constexpr size_t kDiscardWords = format::kMaxRecordWords * 8;
__thread uint32_t discard_buffer[kDiscardWords];

// Counts the records a thread stored in its discard buffer since the last
// count and empties it. Async-signal-safe.
void count_discarded(ThreadState* ts) {
  if (ts->chunk || !ts->end || !ts->cur) return;
  uint32_t* const begin = ts->end - kDiscardWords;
  uint64_t n = 0;
  for (const uint32_t* p = begin; p < ts->cur && *p != 0; p += format::record_words(*p)) ++n;
  if (n) rt->records_lost.fetch_add(n);
  ts->cur = begin;
}

void seal_all_threads() {
  // Called on the way out, possibly from a signal handler: no lock taken if
  // another thread holds it (the chunks stay salvageable unsealed).
  std::unique_lock<std::mutex> lock(rt->threads_mu, std::try_to_lock);
  if (!lock.owns_lock()) return;
  for (ThreadState* ts : rt->threads) {
    seal_thread(ts);
    count_discarded(ts);
  }
}

constexpr size_t kFirstChunkBytes = 64 * 1024;
constexpr size_t kPageBytes = 4096;

// A chunk's pages are faulted in writable ahead of the thread's stores
// (TraceFile::populate), from the chunk's start up to room for `words` more,
// at least doubling what is populated each time: no first-store page fault on
// the hot path, a few calls per chunk, and the unused tail of a chunk stays
// untouched (no dirty pages to write back or to cut from the file at the
// end). false when the chunk cannot hold `words` more.
bool populate_ahead(ThreadState* ts, size_t words) {
  char* const base = reinterpret_cast<char*>(ts->chunk);
  const size_t populated = size_t(reinterpret_cast<char*>(ts->end) - base);
  const size_t needed = size_t(reinterpret_cast<char*>(ts->cur + words) - base);
  if (needed > ts->chunk_map_bytes) return false;
  const size_t to = std::min(ts->chunk_map_bytes,
                             std::max(populated * 2, (needed + kPageBytes - 1) & ~(kPageBytes - 1)));
  TraceFile::populate(base + populated, to - populated);
  ts->end = reinterpret_cast<uint32_t*>(base + to);
  return true;
}

// Where a chunk's records start: after the thread's open intervals (format
// 3), so a reader can start decoding there.
void start_records(ThreadState* ts, format::ChunkHeader* h) {
  ts->cx.reset();  // a chunk decodes on its own
  ts->repeats.reset();
  ts->cur = reinterpret_cast<uint32_t*>(h + 1);
  ts->cur += format::encode_snapshot(ts->cur, ts->open_intervals);
}

void map_first_or_next(ThreadState* ts) {
  const size_t bytes = std::min<size_t>(
      ts->next_chunk_bytes ? ts->next_chunk_bytes : kFirstChunkBytes, rt->cfg.buffer_bytes);
  // At full size a thread with a Live slot keeps this chunk as its home.
  const bool home = bytes == rt->cfg.buffer_bytes && ts->home_copy;
  format::ChunkHeader* h = rt->file.map_event_chunk(bytes, ts->stream, ts->last_enter,
                                                    home ? format::kChunkHome : 0);
  if (!h) {
    ts->cx.reset();
    ts->repeats.reset();
    tell_loss("grow");
    ts->chunk = nullptr;
    ts->cur = discard_buffer;
    ts->end = discard_buffer + kDiscardWords;
    return;
  }
  ts->chunk = h;
  ts->chunk_map_bytes = bytes;
  ts->next_chunk_bytes = std::min<size_t>(bytes * 2, rt->cfg.buffer_bytes);
  ts->end = reinterpret_cast<uint32_t*>(h);  // nothing populated yet
  start_records(ts, h);
  // No room for a record after the snapshot: the next record opens a new chunk.
  if (!populate_ahead(ts, format::kMaxRecordWords)) ts->end = ts->cur;
}

// A thread that ends gives its chunk back (sealed, unmapped): threads that come
// and go do not each hold a mapping until MPI_Finalize.
pthread_key_t thread_exit_key;

void on_thread_exit(void* p) {
  auto* ts = static_cast<ThreadState*>(p);
  if (rt->forked_child) return;  // the parent's chunks: not ours to seal
  std::lock_guard<std::mutex> lock(rt->threads_mu);
  count_discarded(ts);
  if (ts->chunk) {
    seal_thread(ts);
    rt->file.release_tail(ts->chunk);
    TraceFile::unmap(ts->chunk, ts->chunk_map_bytes);
    ts->chunk = nullptr;
  }
  ts->cur = ts->end = nullptr;
  if (tls_state == ts) tls_state = &unattached_thread;
}

// Threads beyond the Live chunk's slots (and every thread when the file has
// none) write their in-flight facts here, unseen: a whole stride, since the
// Fortran wrappers store beside the slot (format::LiveSlot, binding_site.h).
__thread format::LiveSlot private_slot;

void register_thread(ThreadState* ts) {
  ts->slot = rt->file.live_slot(ts->stream);
  if (ts->slot)
    ts->home_copy = &reinterpret_cast<format::LiveSlot*>(ts->slot)->home_copy;
  else
    ts->slot = &private_slot.slot;
  {
    std::lock_guard<std::mutex> lock(rt->threads_mu);
    rt->threads.push_back(ts);
  }
  tls_state = ts;
  pthread_setspecific(thread_exit_key, ts);
}

void write_end(const char* reason) {
  if (!rt || rt->ended.exchange(true)) return;
  // The last moment the rank is known alive: now. (Async-signal-safe.)
  if (format::LiveHeader* live = rt->file.live()) __atomic_store_n(&live->heartbeat, now(), __ATOMIC_RELEASE);
  seal_all_threads();
  // The losses first (zero: not written), then the reason; small enough for
  // the chunk the file keeps for them when the disk is full.
  char lines[128];
  int n = 0;
  const auto lost = static_cast<unsigned long long>(rt->records_lost.load());
  const auto lost_defs = static_cast<unsigned long long>(rt->definitions_lost.load());
  if (lost) n += std::snprintf(lines + n, sizeof lines - size_t(n), "M\trecords_lost\t%llu\n", lost);
  if (lost_defs)
    n += std::snprintf(lines + n, sizeof lines - size_t(n), "M\tdefinitions_lost\t%llu\n",
                       lost_defs);
  n += std::snprintf(lines + n, sizeof lines - size_t(n), "E\t%s\n", reason);
  rt->file.write_end_definitions(lines, size_t(n));
}

// Cuts each thread's last chunk to what it holds and closes the file. Not
// from a signal handler (allocates); chunks another thread is sealing are
// left as they are.
void close_trace() {
  std::vector<format::ChunkHeader*> open_chunks;
  {
    std::unique_lock<std::mutex> lock(rt->threads_mu, std::try_to_lock);
    if (lock.owns_lock())
      for (ThreadState* ts : rt->threads)
        if (ts->chunk) open_chunks.push_back(ts->chunk);
  }
  rt->file.close(open_chunks);
}

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
    const std::string comm = copy.comm == uint32_t(MPI_COMM_WORLD) ? std::string("MPI_COMM_WORLD")
                                                                 : "communicator " + format::hex(copy.comm);
    switch (kind) {
      case format::FuncKind::Send:
      case format::FuncKind::Recv:
      case format::FuncKind::Probe:
        whom = copy.peer == MPI_ANY_SOURCE ? "peer MPI_ANY_SOURCE"
                                           : "peer " + std::to_string(copy.peer);
        whom += ", tag " + std::to_string(copy.tag) + ", " + comm;
        break;
      case format::FuncKind::SendRecv:
        whom = "to " + std::to_string(copy.peer) + ", from " +
               (copy.tag == MPI_ANY_SOURCE ? std::string("MPI_ANY_SOURCE") : std::to_string(copy.tag)) +
               ", " + comm;
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
  if (heartbeat) heartbeat->running = false;  // the thread stayed in the parent
  rt->file.abandon();
}

void on_fatal_signal(int sig, siginfo_t* info, void* ctx) {
  if (g.recording) {
    stop_recording();
    char reason[24];
    std::snprintf(reason, sizeof reason, "signal:%d", sig);
    write_end(reason);
  }
  // Chain: the previous handler (UCX installs its own for SIGSEGV) or the default.
  const struct sigaction& old = rt->old_actions[sig];
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction) {
      old.sa_sigaction(sig, info, ctx);
      return;
    }
  } else if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
    old.sa_handler(sig);
    return;
  }
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  raise(sig);
}

void install_signal_handlers() {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGQUIT}) {
    struct sigaction sa{};
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, &rt->old_actions[sig]);
  }
}

// ---------------------------------------------------------------------------
// Set-up.
std::string unique_dir_name() {
  const std::string exe = exe_path();
  const std::string base = exe.substr(exe.find_last_of('/') + 1);
  char stamp[64];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return "prof-" + (base.empty() ? std::string("app") : base) + "-" + stamp + "-" +
         std::to_string(::getpid());
}

// Creates `path` and its parents; `made` gets each directory this call
// created, parents first (so a failure can take them back). A component that
// is a symbolic link owned by another user (not root) is refused: whoever
// planted it would choose where this run writes.
bool make_dirs(const std::string& path, std::vector<std::string>* made, std::string* why) {
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    cur = path.substr(0, pos);
    if (cur.empty()) continue;
    if (::mkdir(cur.c_str(), 0755) == 0) {
      made->push_back(cur);
      continue;
    }
    if (errno != EEXIST) {
      *why = "cannot create directory '" + cur + "': " + std::strerror(errno);
      return false;
    }
    struct stat link{};
    if (::lstat(cur.c_str(), &link) == 0 && S_ISLNK(link.st_mode) && link.st_uid != ::geteuid() &&
        link.st_uid != 0) {
      *why = "'" + cur + "' is a symbolic link owned by another user (uid " + std::to_string(link.st_uid) +
             "); not writing through it";
      return false;
    }
  }
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *why = "'" + path + "' is not a directory";
    return false;
  }
  return true;
}

// Removes the directories make_dirs created (they hold nothing of ours).
void remove_made_dirs(std::vector<std::string>* made) {
  for (auto it = made->rbegin(); it != made->rend(); ++it) ::rmdir(it->c_str());
  made->clear();
}

// PROF_OUTPUT as the directory it names: repeated and trailing slashes dropped
// ("out///" and "out" are one directory).
std::string normalized_dir(const std::string& asked) {
  std::string dir;
  for (char c : asked)
    if (c != '/' || dir.empty() || dir.back() != '/') dir += c;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// Whether `dir` holds a rank file, of whatever run.
bool holds_trace(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  bool found = false;
  while (const dirent* entry = ::readdir(d)) {
    const std::string n = entry->d_name;
    if (n.size() > 10 && n.compare(0, 5, "rank-") == 0 && n.compare(n.size() - 5, 5, ".prof") == 0) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

// Rank 0: the directory of this run, `asked` or, when that already holds a
// trace, the first of asked-2, asked-3, ... that does not. A directory is
// claimed by creating rank 0's file in it exclusively, so neither a second
// run into the same PROF_OUTPUT nor a spawned job (whose rank 0 collides with
// ours) overwrites or mixes with a trace. *made: the directories created
// (ours to remove if the run ends up unprofiled; removed here on failure).
bool claim_directory(const std::string& base, const format::FileHeader& header, std::string* dir,
                     std::vector<std::string>* made, std::string* why) {
  char name[32];
  std::snprintf(name, sizeof name, format::kRankFilePattern, 0);
  constexpr int kMaxTries = 1000;
  for (int n = 1; n <= kMaxTries; ++n) {
    const std::string candidate = n == 1 ? base : base + "-" + std::to_string(n);
    if (!make_dirs(candidate, made, why)) {
      remove_made_dirs(made);
      return false;
    }
    // A directory made just now holds no trace; a run racing into it after
    // our mkdir is stopped by the exclusive create below.
    const bool fresh = !made->empty() && made->back() == candidate;
    if (!fresh && holds_trace(candidate)) continue;
    if (rt->file.create(candidate + "/" + name, header, why)) {
      *dir = candidate;
      return true;
    }
    if (rt->file.last_error() != EEXIST) {  // EEXIST: another run got there first
      remove_made_dirs(made);  // (a full disk at start leaves no empty directory)
      return false;
    }
  }
  remove_made_dirs(made);
  *why = "'" + base + "' and " + std::to_string(kMaxTries - 1) +
         " directories named after it already hold traces";
  return false;
}

// All ranks agree whether to record: true when every rank's `ok` is (waiting
// politely, as for every collective of the shim's own: a rank still busy
// at start-up may share a core with the one waiting). When not,
// the lowest failing rank prints its message (one message, not one per rank),
// and every rank then runs unprofiled, or with PROF_STRICT=1 aborts, only
// after that message is out (a barrier first, so no rank's abort can kill the
// one still printing).
bool agree(bool ok, const std::string& problem, int rank, const Config& cfg) {
  int mine = ok ? INT32_MAX : rank, lowest = 0;
  MPI_Request request;
  PMPI_Iallreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &request);
  polite_wait(&request);
  if (lowest == INT32_MAX) return true;
  if (lowest == rank) {
    say(kError, problem + "; " +
                    (cfg.strict ? "aborting (PROF_STRICT=1)"
                                : "running unprofiled (PROF_STRICT=1 to abort instead)"));
  }
  if (cfg.strict) {
    PMPI_Barrier(MPI_COMM_WORLD);
    PMPI_Abort(MPI_COMM_WORLD, 1);
  }
  return false;
}

// The F lines of every function the shim records: the same in every run,
// so built once.
const std::string& functions_definitions() {
  static const std::string lines = [] {
    std::string s;
    s.reserve(kFunctionCount * 40);
    for (size_t i = 0; i < kFunctionCount; ++i)
      format::definition_line::append_function(s, kFunctions[i].id, unsigned(kFunctions[i].kind),
                                               kFunctions[i].name);
    return s;
  }();
  return lines;
}

std::vector<int32_t> world_ranks(MPI_Group group) {
  int n = 0;
  PMPI_Group_size(group, &n);
  std::vector<int> in(size_t(n > 0 ? n : 0)), out(size_t(n > 0 ? n : 0));
  for (int i = 0; i < n; ++i) in[size_t(i)] = i;
  MPI_Group world;
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  if (n > 0) PMPI_Group_translate_ranks(group, n, in.data(), world, out.data());
  PMPI_Group_free(&world);
  return std::vector<int32_t>(out.begin(), out.end());
}

// The C line of `handle` (global id `id`, from raw `time` on), with the groups
// of `members` (the communicator itself, or the parent it duplicates).
void write_comm_definition(MPI_Comm handle, MPI_Comm members, uint64_t id, uint64_t time) {
  int inter = 0;
  PMPI_Comm_test_inter(members, &inter);
  MPI_Group local;
  PMPI_Comm_group(members, &local);
  int size = 0;
  PMPI_Group_size(local, &size);
  std::vector<int32_t> remote;
  if (inter) {
    MPI_Group rg;
    PMPI_Comm_remote_group(members, &rg);
    remote = world_ranks(rg);
    PMPI_Group_free(&rg);
  }
  const std::vector<int32_t> ranks = world_ranks(local);
  PMPI_Group_free(&local);
  {
    std::lock_guard<std::mutex> lock(rt->defs_mu);
    rt->comm_gid[uint32_t(handle)] = id;
  }
  define(format::definition_line::comm(uint32_t(handle), id, time, uint64_t(size), inter != 0,
                                       ranks, remote));
}

void define_comm(MPI_Comm comm, uint64_t time) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  // A global id its members agree on: (world rank of the leader, its counter).
  uint64_t id = 0;
  MPI_Comm intra = comm;
  if (inter) PMPI_Intercomm_merge(comm, 0, &intra);
  int r = 0;
  PMPI_Comm_rank(intra, &r);
  if (r == 0) {
    std::lock_guard<std::mutex> lock(rt->defs_mu);
    id = (uint64_t(uint32_t(rt->rank)) << 32) | rt->next_comm_seq++;
  }
  PMPI_Bcast(&id, 1, MPI_UINT64_T, 0, intra);
  if (inter) PMPI_Comm_free(&intra);
  write_comm_definition(comm, comm, id, time);
}

// MPI_Comm_idup: the new communicator may not be used (not even asked for its
// group) until the request completes, and no member may block for the others
// inside a Wait or Test. But MPI orders the collective calls on the parent the
// same on every member, so (parent's global id, how many idups of it came
// before) names the new communicator alike everywhere, with no communication;
// its groups are the parent's. The top bit keeps these ids apart from the
// leader-counter ids (rank << 32 | n) and from MPI_COMM_WORLD's 1.
void define_idup(MPI_Comm parent, MPI_Comm newcomm, uint64_t time) {
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(rt->defs_mu);
    auto it = rt->comm_gid.find(uint32_t(parent));
    if (it == rt->comm_gid.end()) return;  // parent not defined: nothing to name it by
    const uint64_t n = ++rt->idups_of[it->second];
    uint64_t x = it->second * 0x9E3779B97F4A7C15ull + n;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    id = x | (uint64_t{1} << 63);
  }
  write_comm_definition(newcomm, parent, id, time);
}

uint32_t callsite_id_for_address(uintptr_t address, std::string* lines = nullptr);

// Everything known at start, as one definitions chunk's text: each chunk
// costs two writes, and an allocation of file space when it outgrows what
// the file has ahead.
std::string start_definitions(const Config& cfg, int rank, int size, int provided,
                              void* init_return_address) {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  // The load map also tells which code is MPI's, which the call sites need.
  std::string loadmap;
  dl_iterate_phdr(collect_load_map, &loadmap);
  // MPI_Init's call site names the root interval (the whole run) in reports
  // (its S line goes out with the definitions below).
  std::string defs;
  const uint32_t init_site = callsite_id_for_address(
      first_frame_outside_mpi(reinterpret_cast<uintptr_t>(init_return_address)), &defs);

  using format::definition_line::meta;
  defs += meta("format", "prof-trace 1");
  defs += meta("host", host);
  defs += meta("exe", exe_path());
  defs += meta("command", command_line());
  defs += meta("pid", std::to_string(::getpid()));
  defs += meta("rank", std::to_string(rank));
  defs += meta("world_size", std::to_string(size));
  defs += meta("timer", format::timer_name(g.timer.kind()));
  defs += meta("epoch_ticks", std::to_string(g.timer.epoch()));
  char npt[64];
  std::snprintf(npt, sizeof npt, "%.12g", g.timer.ns_per_tick());
  defs += meta("ns_per_tick", npt);
  defs += meta("thread_level", std::to_string(provided));
  defs += meta("sync", sync_scheme_name(cfg.sync));
  defs += meta("bcast_impl", cfg.bcast.impl == bcast::Impl::Shm ? "shm" : "native");
  if (cfg.bcast.impl == bcast::Impl::Shm) {
    defs += meta("bcast_fragment", std::to_string(cfg.bcast.fragment));
    defs += meta("bcast_slots", std::to_string(cfg.bcast.slots));
    defs += meta("bcast_sets", std::to_string(cfg.bcast.sets));
    defs += meta("bcast_tree", bcast::tree_name(cfg.bcast.tree));
  }
  Config resolved = cfg;
  resolved.timer = g.timer.kind();
  defs += run_facts_definitions(resolved);
  defs += functions_definitions();
  defs += loadmap;
  std::vector<int32_t> world(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) world[size_t(i)] = i;
  defs += format::definition_line::comm(format::kMpichCommWorld, format::kWorldCommGlobalId, 0,
                                        uint64_t(size), false, world, {});
  defs += format::definition_line::comm(format::kMpichCommSelf, format::self_comm_global_id(rank),
                                        0, 1, false, {rank}, {});
  defs += meta("init_callsite", std::to_string(init_site));
  return defs;
}

void start_recording(const Config& cfg, std::vector<std::string> errors, uint16_t init_id,
                     uint64_t t0, uint64_t t1, int provided, void* init_return_address) {
  log_level = cfg.log_level;

  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);

  std::string why;
  set_test_nodes(cfg.test_nodes);
  int64_t shift_ns = 0;
  for (const Config::TestShift& shift : cfg.test_shifts)
    if (cfg.test_nodes > 0 ? rank % cfg.test_nodes == shift.rank % cfg.test_nodes : shift.rank == rank)
      shift_ns = shift.ns;
  if (shift_ns != 0) {
    // Test only: this rank's clock (its pretend node's) runs shifted;
    // MPI_Init's times move with it.
    const uint64_t before = g.timer.now();
    g.timer.set_test_shift_ns(shift_ns);
    const uint64_t delta = g.timer.now() - before;
    t0 += delta;
    t1 += delta;
  }
  std::string problem;  // this rank's reason not to record, if any
  for (const auto& e : errors) problem += (problem.empty() ? "" : "; ") + e;

  rt = new Runtime();
  rt->cfg = cfg;
  rt->rank = rank;
  rt->size = size;

  format::FileHeader header{};
  std::memcpy(header.magic, format::kFileMagic, sizeof header.magic);
  header.version = format::kFormatVersion;
  header.header_size = sizeof header;
  header.rank = rank;
  header.world_size = size;
  header.timer = uint32_t(g.timer.kind());
  // Two collectives decide: rank 0 picks the run id and the directory and
  // creates its file there first (that claims it), unless its own settings
  // are bad; one broadcast tells the others both and whether it succeeded;
  // they create theirs; then every rank agrees (agree()). Settings are the
  // same on every rank in practice, so a bad one stops rank 0 before it
  // creates anything; a rank whose settings alone are bad makes the others
  // remove what they created.
  struct {
    uint64_t run_id;
    int32_t claimed;  // rank 0 created its file in `dir`
    char dir[4096];
  } chosen{};
  // The ranks that wait for rank 0's directory format their definitions
  // meanwhile; rank 0 formats its own while they create their files.
  std::string defs;
  if (rank != 0 && problem.empty())
    defs = start_definitions(cfg, rank, size, provided, init_return_address);
  std::string asked;
  bool created = false;
  std::vector<std::string> made_dirs;  // rank 0: the directories it created
  if (rank == 0 && problem.empty()) {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    chosen.run_id = (uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec)) ^
                    (uint64_t(::getpid()) << 40);
    header.run_id = chosen.run_id;
    asked = normalized_dir(cfg.output_dir.empty() ? unique_dir_name() : cfg.output_dir);
    std::string dir;
    created = claim_directory(asked, header, &dir, &made_dirs, &why);
    if (!created) problem = "PROF_OUTPUT: " + why;
    chosen.claimed = created;
    std::snprintf(chosen.dir, sizeof chosen.dir, "%s", dir.c_str());
  }
  MPI_Request request;
  PMPI_Ibcast(&chosen, sizeof chosen, MPI_BYTE, 0, MPI_COMM_WORLD, &request);
  polite_wait(&request);
  header.run_id = chosen.run_id;
  rt->dir = chosen.dir;
  if (rank == 0 && problem.empty())
    defs = start_definitions(cfg, rank, size, provided, init_return_address);
  char name[32];
  std::snprintf(name, sizeof name, format::kRankFilePattern, rank);
  const std::string path = rt->dir + "/" + name;
  if (rank != 0 && problem.empty() && chosen.claimed) {
    created = rt->file.create(path, header, &why);
    if (!created) problem = "PROF_OUTPUT: " + why;
  }
  if (!agree(problem.empty(), problem, rank, cfg)) {
    if (created) {
      rt->file.close();
      ::unlink(path.c_str());
    }
    remove_made_dirs(&made_dirs);  // (rmdir fails, as it should, if anything else is in one)
    return;
  }
  // Every rank has the same settings now (or none did and MPICH's broadcast stays).
  bcast::set_log([](bool warning, const std::string& line) {
    say(warning ? kWarn : kInfo, line);
  });
  bcast::set_fallback_hook(
      [](uint64_t communicators) { define(prof::format::definition_line::meta("bcast_fallbacks", std::to_string(communicators))); });
  bcast::configure(cfg.bcast);
  if (rank == 0 && rt->dir != asked)
    say(kWarn, "'" + asked + "' already holds a trace; this run's trace goes to '" + rt->dir + "'");

  define(defs);
  {
    std::lock_guard<std::mutex> lock(rt->defs_mu);
    rt->comm_gid[uint32_t(MPI_COMM_WORLD)] = format::kWorldCommGlobalId;
    rt->comm_gid[uint32_t(MPI_COMM_SELF)] = format::self_comm_global_id(rank);
  }

  const SyncResult sync = synchronize_clocks(g.timer, MPI_COMM_WORLD, cfg.sync, &rt->sync_comm);
  define(format::definition_line::clock_sync("init", sync.local_ticks, sync.offset_ns, sync.rtt_ns));
  // (Hierarchical: this rank does not read its node leader's clock, so it
  // measured against the leader instead of taking the leader's offset.)
  if (sync.own_clock) define(format::definition_line::meta("sync_own_clock", "1"));

  std::atexit(on_exit_without_finalize);
  pthread_atfork(nullptr, nullptr, on_fork_child);
  install_signal_handlers();

  // The thread that called MPI_Init is stream 0, and its first record is MPI_Init.
  ThreadState* ts = new ThreadState();
  ts->stream = rt->next_stream++;
  ts->last_enter = t0;
  ts->attached = true;
  map_first_or_next(ts);
  pthread_key_create(&thread_exit_key, on_thread_exit);
  register_thread(ts);
  g.recording = true;
  g.fast = g.timer.plain_tsc();
  record_plain(ts, init_id, t0, t1, true);
  start_heartbeat();
}

// MPI_Init and MPI_Init_thread: the timer starts before PMPI_Init so the
// record of MPI_Init covers it (MPI_Wtime, usable only once MPI is up, starts
// after), then the rest of the set-up.
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
  const uint64_t t1 = timer_ready ? g.timer.now() : 0;
  start_recording(cfg, std::move(errors), id, t0 ? t0 : t1, t1,
                  provided_out ? *provided_out : -1, return_address);
  return rc;
}

}  // namespace

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

ThreadState* attach_thread() {
  if (!rt || !g.recording) return nullptr;
  ThreadState* ts = new ThreadState();
  ts->stream = rt->next_stream++;
  ts->last_enter = now();
  ts->attached = true;
  map_first_or_next(ts);
  register_thread(ts);
  return ts;
}

// A full home chunk (format 5): its records copied to the file's end as an
// ordinary sealed chunk, then the home emptied and opened again as the
// stream's next chunk, its pages still writable, so the thread's stores take
// no write fault per new page (docs/design/shim-hot-path.md, "Home
// chunks"). Through each step the slot's home_copy word tells a reader of a
// killed process which of the two to take (trace_format.h, LiveSlot).
// false when the copy could not be made (the disk is full, a write failed):
// the home keeps its records, and the caller seals it where it is.
// Async-signal-safe, like the rest of the chunk handling.
bool copy_out_home(ThreadState* ts) {
  format::ChunkHeader* const h = ts->chunk;
  char* const payload = reinterpret_cast<char*>(h + 1);
  const size_t used = size_t(reinterpret_cast<char*>(ts->cur) - payload);
  uint64_t at;
  if (!rt->file.reserve_copy(used, &at)) return false;
  __atomic_store_n(ts->home_copy, at | format::kHomeCopying, __ATOMIC_RELEASE);
  if (!rt->file.write_copy(h, used, at)) return false;  // the copy stays dropped
  __atomic_store_n(ts->home_copy, at | format::kHomeCopied, __ATOMIC_RELEASE);
  // Emptied: the records, and the words a fast receive may have stored past
  // the write pointer (runtime.h), so the next chunk reads up to its first
  // zero word when the process is killed.
  const size_t dirty = std::min(size_t(reinterpret_cast<char*>(ts->end) - payload),
                                used + format::kMaxRecordWords * 4);
  std::memset(payload, 0, dirty);
  h->base_time = ts->last_enter;
  start_records(ts, h);
  // Sealed meanwhile (recording ended in another thread: a signal, an exit):
  // the copy holds the records and the home is left dropped.
  if (!(__atomic_load_n(&h->flags, __ATOMIC_ACQUIRE) & format::kChunkSealed))
    __atomic_store_n(ts->home_copy, uint64_t{0}, __ATOMIC_RELEASE);
  return true;
}

void next_chunk(ThreadState* ts, size_t words) {
  if (ts->chunk && populate_ahead(ts, words)) return;
  if (ts->chunk && (ts->chunk->flags & format::kChunkHome) && copy_out_home(ts)) return;
  if (ts->chunk) {
    seal_thread(ts);
    TraceFile::unmap(ts->chunk, ts->chunk_map_bytes);
    ts->chunk = nullptr;
  } else {
    count_discarded(ts);
  }
  map_first_or_next(ts);
}

void record_plain_general(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok) {
  Rec r(ts, t0, t1, ok, 0, 8);
  r.commit(func, false);  // no payload
}

#ifndef PROF_NO_IN_FLIGHT
// The fast wrappers' returns that their fixed record does not serve: the
// records the general wrappers write, from the facts the entry left in the
// slot.
namespace {
// What a fast finisher may have stored after the write pointer (runtime.h).
void clear_fixed_words(ThreadState* ts) {
  constexpr size_t words = format::fixed_record_words<format::FuncKind::Send>;
  if (ts->cur + words <= ts->end) std::memset(ts->cur, 0, words * 4);
}
}  // namespace

int finish_send_general(uint16_t func, int rc, uint64_t t1) {
  ThreadState* const ts = tls_state;
  clear_fixed_words(ts);
  const format::InFlightSlot* const slot = ts->slot;
  record_p2p(ts, func, slot->enter, t1, rc == MPI_SUCCESS, format::FuncKind::Send, slot->peer,
             slot->tag, static_cast<MPI_Comm>(slot->comm), fast_bytes(ts->send_count, ts->send_type),
             0);
  call_done(ts);
  call_end(ts);
  return rc;
}

int finish_recv_failed(uint16_t func, int rc, const MPI_Status* st) {
  return finish_recv_general(func, rc, fast_now(), st);
}

int finish_recv_general(uint16_t func, int rc, uint64_t t1, const MPI_Status* st) {
  ThreadState* const ts = tls_state;
  clear_fixed_words(ts);
  // fast_recv_enter made this call's comm the chunk's context before any
  // record carried it.
  ts->cx.has_comm = false;
  const format::InFlightSlot* const slot = ts->slot;
  record_recv(ts, func, slot->enter, t1, rc == MPI_SUCCESS, slot->peer, slot->tag,
              static_cast<MPI_Comm>(slot->comm), st, static_cast<uint8_t>(slot->extra >> 16));
  call_done(ts);
  call_end(ts);
  return rc;
}

template <format::FuncKind K>
int finish_start_general(uint16_t func, int rc, uint64_t t1, const MPI_Request* request) {
  ThreadState* const ts = tls_state;
  const format::InFlightSlot* const slot = ts->slot;
  const uint32_t flags = K == format::FuncKind::Irecv ? recv_flags(slot->peer, slot->tag) : 0u;
  record_p2p_start(ts, func, slot->enter, t1, rc == MPI_SUCCESS, K, slot->peer, slot->tag,
                   static_cast<MPI_Comm>(slot->comm), slot->extra, static_cast<uint8_t>(flags),
                   *request);
  call_done(ts);
  call_end(ts);
  return rc;
}
template int finish_start_general<format::FuncKind::Isend>(uint16_t, int, uint64_t,
                                                           const MPI_Request*);
template int finish_start_general<format::FuncKind::Irecv>(uint16_t, int, uint64_t,
                                                           const MPI_Request*);

int finish_plain_general(uint16_t func, int rc, uint64_t t1) {
  ThreadState* const ts = tls_state;
  record_plain(ts, func, ts->slot->enter, t1, rc == MPI_SUCCESS);
  call_done(ts);
  call_end(ts);
  return rc;
}
#endif

namespace {
// Bytes a narrow Completion entry can hold: its top bit is the cancel flag.
constexpr uint64_t kNarrowEntryBytes = format::kCancelledBit32 - 1;

// The common completion in one pass: at most 32 entries whose statuses all fit
// the narrow form (16-bit peer and tag, under 2 GiB), so one record. Builds the
// payload on the stack, since an entry found wide sends the call to the general
// path, which sizes every entry first. Returns false then, having written nothing.
// entry(i) gives the i-th of n entries (no more than kMaxCompletionEntries).
template <class EntryAt>
__attribute__((always_inline)) inline bool record_narrow_completions(
    ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok, size_t n, EntryAt entry) {
  uint32_t payload[1 + 3 * format::kMaxCompletionEntries];
  size_t words = 1;  // payload[0]: the bitmap of entries with a status
  uint32_t bitmap = 0;
  for (size_t i = 0; i < n; ++i) {
    const CompletionEntry e = entry(i);
    payload[words++] = uint32_t(e.request);
    if (!ok) continue;  // a failed call's statuses are undefined: none recorded
    const MPI_Status* st = e.status;
    const uint64_t bytes = status_bytes(st);
    const bool cancelled = status_cancelled(st);
    // Left as clear_statuses made it (a send's completion): no status.
    if (st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && bytes == 0 && !cancelled)
      continue;
    if (!format::fits_packed_peer_tag(st->MPI_SOURCE, st->MPI_TAG) || bytes > kNarrowEntryBytes)
      return false;
    bitmap |= 1u << i;
    payload[words++] = format::pack_peer_tag(st->MPI_SOURCE, st->MPI_TAG);
    payload[words++] = uint32_t(bytes) | (cancelled ? uint32_t(format::kCancelledBit32) : 0u);
  }
  payload[0] = bitmap;
  Rec r(ts, t0, t1, ok, 0, 3 + 4 + words);
  format::RecordEncoder& enc = r.enc();
  // Nothing completed: no payload at all. A payload that repeats the
  // function's last (format::kRepeatPayload) is compared here, before it is
  // copied into the chunk, and then not copied.
  if (n > 0 && func < format::kRepeatFuncs) {
    const int k = (enc.flags() & format::kLongTime)
                      ? -1
                      : ts->repeats.find(func, payload, uint32_t(words), 0);
    if (k >= 0) {
      enc.flag(uint8_t(format::repeat_flags(0, k)));
    } else {
      uint32_t* const at = enc.payload();
      for (size_t w = 0; w < words; ++w) enc.word(payload[w]);
      ts->repeats.note(func, at, uint32_t(words), enc.flags());
    }
  } else if (n > 0) {
    for (size_t k = 0; k < words; ++k) enc.word(payload[k]);
  }
  r.commit(func, false);  // repeats decided above
  return true;
}
}  // namespace

void record_completions(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                        const CompletionEntry* entries, size_t n) {
  if (n <= format::kMaxCompletionEntries &&
      record_narrow_completions(ts, func, t0, t1, ok, n, [entries](size_t i) { return entries[i]; }))
    return;
  uint8_t wide = 0;
  std::vector<uint64_t> bytes_scratch;  // only for very large calls
  uint64_t small[16];
  uint64_t* bytes = small;
  if (n > 16) {
    bytes_scratch.resize(n);
    bytes = bytes_scratch.data();
  }
  // bytes[i]: count (cancelled in the top bit), or kNoStatus when the status is
  // as clear_statuses left it (send completions, failed calls): no PeerTag/Bytes.
  constexpr uint64_t kNoStatus = ~uint64_t{0};
  for (size_t i = 0; i < n; ++i) {
    const MPI_Status* st = entries[i].status;
    if (!ok) {
      bytes[i] = kNoStatus;
      continue;
    }
    bytes[i] = status_bytes(st);
    if (status_cancelled(st)) bytes[i] |= format::kCancelledBit64;
    if (st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && bytes[i] == 0) {
      bytes[i] = kNoStatus;
      continue;
    }
    if (!format::fits_packed_peer_tag(st->MPI_SOURCE, st->MPI_TAG)) wide |= format::kWidePeerTag;
    if ((bytes[i] & ~format::kCancelledBit64) > kNarrowEntryBytes) wide |= format::kWideBytes;
  }
  // The cancelled bit moves to bit 31 in narrow form.
  const size_t status_words = ((wide & format::kWidePeerTag) ? 2 : 1) +
                              ((wide & format::kWideBytes) ? 2 : 1);
  size_t i = 0;
  bool first = true;
  do {
    // Entries that fit: 32 at most; room kept for the bitmap and long time words.
    size_t take = 0, words = 1;
    while (i + take < n && take < format::kMaxCompletionEntries) {
      const size_t ew = 1 + (bytes[i + take] == kNoStatus ? 0 : status_words);
      if (words + ew > format::kMaxPayloadWords - 4) break;
      words += ew;
      ++take;
    }
    Rec r(ts, first ? t0 : ts->last_enter, first ? t1 : ts->last_enter + (t1 - t0), ok,
          uint8_t(wide | (first ? 0 : format::kContinuation)), 3 + 4 + words);
    if (take > 0) {
      uint32_t bitmap = 0;
      for (size_t k = 0; k < take; ++k)
        if (bytes[i + k] != kNoStatus) bitmap |= 1u << k;
      r.enc().word(bitmap);
    }
    for (size_t k = i; k < i + take; ++k) {
      r.enc().word(uint32_t(entries[k].request));
      if (bytes[k] == kNoStatus) continue;
      const MPI_Status* st = entries[k].status;
      r.enc().peer_tag(st->MPI_SOURCE, st->MPI_TAG);
      const bool cancelled = bytes[k] & format::kCancelledBit64;
      const uint64_t b = bytes[k] & ~format::kCancelledBit64;
      if (wide & format::kWideBytes) r.enc().put64(b | (cancelled ? format::kCancelledBit64 : 0));
      else r.enc().word(uint32_t(b) | (cancelled ? uint32_t(format::kCancelledBit32) : 0u));
    }
    r.commit(func, first);
    i += take;
    first = false;
  } while (i < n);
}

namespace {
// Completed-request entries: on the stack up to 16, on the heap beyond (only
// calls completing many requests at once pay an allocation).
class EntryBuffer {
 public:
  explicit EntryBuffer(int n) {
    if (n > 16) big_.resize(size_t(n));
  }
  CompletionEntry* data() { return big_.empty() ? small_ : big_.data(); }

 private:
  CompletionEntry small_[16];
  std::vector<CompletionEntry> big_;
};
}  // namespace

void record_completion_all(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                           const MPI_Request* reqs, int count, const MPI_Status* statuses,
                           int found) {
  // Every request completed (MPI_Waitall, a successful MPI_Testall) and none
  // was null: the entries are the arrays themselves, no list built.
  if (found && count > 0 && size_t(count) <= format::kMaxCompletionEntries) {
    bool any_null = false;
    for (int i = 0; i < count; ++i) any_null |= reqs[i] == MPI_REQUEST_NULL;
    if (!any_null && record_narrow_completions(ts, func, t0, t1, ok, size_t(count), [&](size_t i) {
          return CompletionEntry{reqs[i], &statuses[i]};
        }))
      return;
  }
  EntryBuffer buffer(count);
  CompletionEntry* e = buffer.data();
  size_t n = 0;
  if (found)
    for (int i = 0; i < count; ++i)
      if (reqs[i] != MPI_REQUEST_NULL) e[n++] = {reqs[i], &statuses[i]};
  record_completions(ts, func, t0, t1, ok, e, n);
}

void record_completion_some(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                            const MPI_Request* reqs, int outcount, const int* indices,
                            const MPI_Status* statuses) {
  EntryBuffer buffer(outcount);
  CompletionEntry* e = buffer.data();
  size_t n = 0;
  if (outcount != MPI_UNDEFINED)
    for (int j = 0; j < outcount; ++j) e[n++] = {reqs[indices[j]], &statuses[j]};
  record_completions(ts, func, t0, t1, ok, e, n);
}

void record_requests(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                     const MPI_Request* reqs, int count) {
  const size_t per_record = format::kMaxPayloadWords - 4;
  size_t i = 0, n = count > 0 ? size_t(count) : 0;
  bool first = true;
  do {
    const size_t take = std::min(n - i, per_record);
    Rec r(ts, first ? t0 : ts->last_enter, first ? t1 : ts->last_enter + (t1 - t0), ok,
          first ? 0 : format::kContinuation, 3 + 4 + take);
    for (size_t k = i; k < i + take; ++k) r.enc().word(uint32_t(reqs[k]));
    r.commit(func, first);
    i += take;
    first = false;
  } while (i < n);
}

void record_comm_create(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                        MPI_Comm parent, MPI_Comm newcomm) {
  {
    static_assert(reserve_fits<format::FuncKind::CommCreate>(12));
    const format::RecordValues v{.comm = uint32_t(parent),
                                 .new_comm = uint32_t(ok ? newcomm : MPI_COMM_NULL)};
    Rec r(ts, t0, t1, ok, 0, 12);
    format::encode_fields<format::FuncKind::CommCreate>(r.enc(), v, ts->cx);
    r.commit(func, format::kind_repeats(format::FuncKind::CommCreate));
  }
  if (ok && newcomm != MPI_COMM_NULL) define_comm(newcomm, t0);
}

void record_comm_idup(ThreadState* ts, uint16_t func, uint64_t t0, uint64_t t1, bool ok,
                      MPI_Comm parent, MPI_Comm newcomm, MPI_Request request) {
  record_collective(ts, func, t0, t1, ok, format::FuncKind::ICollective, parent, -1, 0, request);
  if (ok && newcomm != MPI_COMM_NULL) define_idup(parent, newcomm, t0);
}

namespace {
std::mutex messages_mu;
std::unordered_map<uint32_t, MessageInfo> messages;  // MPI_Message handle -> its probe's facts
}  // namespace

void remember_message(MPI_Message message, MPI_Comm comm, const MPI_Status* st) {
  if (message == MPI_MESSAGE_NULL || message == MPI_MESSAGE_NO_PROC) return;
  std::lock_guard<std::mutex> lock(messages_mu);
  messages[uint32_t(message)] = MessageInfo{comm, st->MPI_SOURCE, st->MPI_TAG};
}

MessageInfo take_message(MPI_Message message) {
  // A receive from MPI_PROC_NULL. The message names no communicator; record it
  // on MPI_COMM_SELF, which every rank defines, so readers can resolve it.
  if (message == MPI_MESSAGE_NO_PROC) return MessageInfo{MPI_COMM_SELF, MPI_PROC_NULL, MPI_ANY_TAG};
  std::lock_guard<std::mutex> lock(messages_mu);
  auto it = messages.find(uint32_t(message));
  if (it == messages.end()) return MessageInfo{};
  const MessageInfo info = it->second;
  messages.erase(it);
  return info;
}

namespace {
// The id of the call site at `address`; a new one's S line is written, or
// appended to *lines when given (to go out with other definitions).
uint32_t callsite_id_for_address(uintptr_t address, std::string* lines) {
  std::lock_guard<std::mutex> lock(rt->defs_mu);
  auto [it, inserted] = rt->callsite_by_address.try_emplace(address, rt->next_callsite);
  if (inserted) {
    ++rt->next_callsite;
    std::string line = format::definition_line::callsite(it->second, address, "", 0);
    if (lines) *lines += line;
    else define(line);
  }
  return it->second;
}

}  // namespace

// The call's site as the rank's table has it; a site seen for the first time
// takes its function's next index and is defined (S line, A line) before
// any record carries it. Sites past a function's kSiteIndexes-th get 0.
// A call through a Fortran binding (the slot's binding_site set) is the
// binding's call site: its return address, inside the binding, is marked in
// the thread's first cache as one to look up here, in the second, by the
// binding site.
uint32_t resolve_call_site(ThreadState* ts) {
  const uint64_t return_key = ts->slot->site_func;
  const uint64_t binding =
      reinterpret_cast<const format::LiveSlot*>(ts->slot)->binding_site & format::kSiteMask;
  const uint64_t key = binding ? (return_key & ~format::kSiteMask) | binding : return_key;
  const size_t i = site_cache_index(key);
  if (binding) {
    const size_t r = site_cache_index(return_key);
    ts->site_keys[r] = return_key;
    ts->site_fields[r] = kSiteMiss;
    if (ts->binding_keys[i] == key) return ts->binding_fields[i];
  }
  const uint16_t func = uint16_t(key >> 48);
  const uintptr_t address = uintptr_t(key & format::kSiteMask);
  uint32_t bits = 0;
  if (rt && address != 0 && func < format::kRepeatFuncs) {
    std::lock_guard<std::mutex> lock(rt->defs_mu);
    auto [it, inserted] = rt->call_site_bits.try_emplace(key, 0);
    if (inserted && rt->sites_of_function[func] < format::kSiteIndexes) {
      const uint32_t index = ++rt->sites_of_function[func];
      auto [site, new_site] = rt->callsite_by_address.try_emplace(address, rt->next_callsite);
      std::string lines;
      if (new_site) {
        ++rt->next_callsite;
        lines = format::definition_line::callsite(site->second, address, "", 0);
      }
      lines += format::definition_line::call_site_index(func, index, site->second);
      define(lines);
      it->second = uint16_t(index << format::kSiteShift);
    }
    bits = it->second;
  }
  if (binding) {
    ts->binding_keys[i] = key;
    ts->binding_fields[i] = bits;
  } else {
    ts->site_keys[i] = key;
    ts->site_fields[i] = bits;
  }
  return bits;
}

namespace {
void record_marker(uint16_t id, bool begin, uint32_t callsite) {
  ThreadState* ts = call_begin();
  if (!ts) return;
  const uint64_t t = now();
  Rec r(ts, t, t, true, begin ? format::kMarkerBegin : 0, 12);
  r.enc().word(id);
  r.enc().word(callsite);
  r.commit(format::kMarkerFuncId, false);  // never below kRepeatFuncs
  format::apply_marker(ts->open_intervals, begin, id, callsite, t);
  call_end(ts);
}
}  // namespace

void on_raw_marker(int tag, void* return_address) {
  if (!g.recording || !rt) return;
  ThreadState* ts = tls_state;
  if (attached(ts) && ts->in_call) return;  // our own traffic or MPI calling MPI
  const format::MarkerTag m = format::decode_marker_tag(tag);
  const uintptr_t site = first_frame_outside_mpi(reinterpret_cast<uintptr_t>(return_address));
  record_marker(m.id, m.begin, callsite_id_for_address(site));
}

}  // namespace prof::shim

using namespace prof::shim;

// ---------------------------------------------------------------------------
// Hand-written entry points.
extern "C" {

// markers.h: explicit file and line, weakly referenced by the application.
PROF_EXPORT void prof_marker_at(int id, int begin, const char* file,
                                                            int line) {
  if (!g.recording || !rt) return;
  uint32_t site;
  {
    std::lock_guard<std::mutex> lock(rt->defs_mu);
    std::string key = std::string(file ? file : "") + ":" + std::to_string(line);
    auto [it, inserted] = rt->callsite_by_file_line.try_emplace(key, rt->next_callsite);
    if (inserted) {
      ++rt->next_callsite;
      define(prof::format::definition_line::callsite(it->second, 0, file ? file : "", uint32_t(line)));
    }
    site = it->second;
  }
  record_marker(uint16_t(id), begin != 0, site);
}

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
  const SyncResult sync = synchronize_clocks(g.timer, MPI_COMM_WORLD, rt->cfg.sync, &rt->sync_comm);
  if (rt->sync_comm != MPI_COMM_NULL) PMPI_Comm_free(&rt->sync_comm);
  char npt[64];
  std::snprintf(npt, sizeof npt, "%.12g", g.timer.ns_per_tick());
  define(prof::format::definition_line::meta("ns_per_tick", npt) +
         prof::format::definition_line::clock_sync("final", sync.local_ticks, sync.offset_ns, sync.rtt_ns));
  prof::format::InFlightSlot* const slot =
      call_enter(ts, kId_MPI_Finalize, __builtin_return_address(0), -1, -1, 0, 0);
  const uint64_t t0 = now();
  call_entered(slot, t0);
  const int rc = PMPI_Finalize();
  const uint64_t t1 = now();
  record_plain(ts, kId_MPI_Finalize, t0, t1, rc == MPI_SUCCESS);
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
