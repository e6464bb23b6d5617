// Set-up at MPI_Init: the trace directory (rank 0 makes it, never over
// another run's trace), the rank files, the start definitions (functions,
// load map, settings, run facts), the agreement of all ranks whether to
// record, the clock synchronization, and the thread bookkeeping; then
// recording starts.
//
// Invariant: either every rank records or none does (clock synchronization is
// collective): one bad rank's message is printed once and all run unprofiled
// (or, with PROF_STRICT=1, abort).
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
#include <cmath>
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
    struct stat in_the_way{};  // (a file named like a later candidate is passed over, as a trace is)
    if (n > 1 && ::stat(candidate.c_str(), &in_the_way) == 0 && !S_ISDIR(in_the_way.st_mode)) continue;
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
  // {lowest failing rank, 0 when any rank has PROF_STRICT=1}: every rank
  // then takes the same way, even where the ranks' settings differ.
  int mine[2] = {ok ? INT32_MAX : rank, cfg.strict ? 0 : 1}, lowest[2] = {0, 0};
  MPI_Request request;
  PMPI_Iallreduce(mine, lowest, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &request);
  polite_wait(&request);
  if (lowest[0] == INT32_MAX) return true;
  const bool strict = lowest[1] == 0;
  if (lowest[0] == rank) {
    // (An abort is always explained, whatever PROF_LOG_LEVEL says.)
    say(strict ? kOff : kError, problem + "; " +
                    (strict ? "aborting (PROF_STRICT=1)"
                            : "running unprofiled (PROF_STRICT=1 to abort instead)"));
  }
  if (strict) {
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
  {
    // The wall-clock time of the epoch, so that tools can date the run (an
    // OTF2 archive's realtime stamp): CLOCK_REALTIME read beside the timer,
    // less the time since the epoch.
    timespec wall{};
    clock_gettime(CLOCK_REALTIME, &wall);
    const double since_epoch_ns = g.timer.to_ns(g.timer.now());
    const int64_t wall_ns = int64_t(wall.tv_sec) * 1000000000 + wall.tv_nsec;
    defs += meta("epoch_realtime_ns", std::to_string(wall_ns - std::llround(since_epoch_ns)));
  }
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

}  // namespace

void start_recording(const Config& cfg, std::vector<std::string> errors, uint16_t init_id,
                     uint64_t entered, int provided, void* init_return_address) {
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
    entered += g.timer.now() - before;
  }
  std::string problem;  // this rank's reason not to record, if any
  for (const auto& e : errors) problem += (problem.empty() ? "" : "; ") + e;
  // (Every rank has the same environment in practice: rank 0 speaks for all.)
  if (rank == 0)
    for (const settings::UnknownSetting& unknown : settings::unknown_settings(environ))
      say(kWarn, settings::unknown_setting_warning(unknown));

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
  // Rank 0's settings that every rank must share go with them: a rank whose
  // own differ does not record (agree()), as for a bad setting.
  struct {
    uint64_t run_id;
    int32_t claimed;  // rank 0 created its file in `dir`
    char dir[4096];
    char shared_settings[1024];
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
    std::snprintf(chosen.shared_settings, sizeof chosen.shared_settings, "%s",
                  settings::shared_settings(cfg).c_str());
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
  if (rank != 0 && problem.empty() && chosen.claimed)
    problem = settings::shared_settings_difference(settings::shared_settings(cfg), chosen.shared_settings, rank);
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

  define(defs + output_setting_definition(rt->dir));
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
  ts->last_enter = entered;
  ts->attached = true;
  map_first_or_next(ts);
  pthread_key_create(&thread_exit_key, on_thread_exit);
  register_thread(ts);
  g.recording = true;
  g.fast = g.timer.plain_tsc();
  // The record ends here, as MPI_Init returns to the program: the run starts
  // there (docs/metrics.md, "The root"), so the clock sync above, which waits
  // for the slowest rank to arrive, is inside the call, not the program's
  // computation.
  record_plain(ts, init_id, entered, now(), true);
  start_heartbeat();
}

}  // namespace prof::shim
