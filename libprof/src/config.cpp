#include "config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace prof::shim {

namespace {
const char* const kLogLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
std::string shortest(double v) {  // the shortest text that reads back as v
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof text, v).ptr);
}
}  // namespace

const std::vector<ConfigVariable>& config_variables() {
  static const std::vector<ConfigVariable> vars = {
      {"PROF_OUTPUT", "path", "(new directory prof-EXE-DATE-TIME-PID in the working directory)",
       "Trace directory to create (parents too); one file rank-NNNNN.prof per rank. When it "
       "already holds a trace, the run writes beside it, in PROF_OUTPUT-2 (-3, ...), and says so "
       "in one line on stderr.",
       [](const Config& c) { return c.output_dir; }},
      {"PROF_TIMER", "tsc|monotonic|gettimeofday|mpi_wtime", "tsc (monotonic without invariant TSC)",
       "Clock for timestamps. tsc: rdtsc, calibrated against CLOCK_MONOTONIC.",
       [](const Config& c) { return std::string(format::timer_name(c.timer)); }},
      {"PROF_SYNC", "hierarchical|linear|ring|none", "hierarchical",
       "Clock synchronization against rank 0 after MPI_Init and before MPI_Finalize "
       "(minimum round trip of ping-pong exchanges). hierarchical: ranks that read their "
       "node leader's clock (checked) take its offset at no cost, node leaders measure in a "
       "binomial tree, O(log nodes) rounds; linear: rank 0 against each rank in turn; ring: "
       "each rank against the one before it.",
       [](const Config& c) { return std::string(sync_scheme_name(c.sync)); }},
      {"PROF_BUFFER_MB", "integer 1..1024", "1",
       "Largest event chunk a thread maps from the trace file (chunks start at 64 KiB and "
       "double); memory stays bounded by threads x this. The chunk that reaches this size "
       "stays mapped as the thread's home: each time it is full its records are copied to the "
       "end of the file and it is reused (docs/trace-format.md, \"Home chunks\"). The space a "
       "thread's last chunk did not use is given back when the rank ends.",
       [](const Config& c) { return std::to_string(c.buffer_bytes >> 20); }},
      {"PROF_STRICT", "0|1", "0",
       "1: a bad setting or an unwritable output aborts the run instead of running unprofiled.",
       [](const Config& c) { return std::string(c.strict ? "1" : "0"); }},
      {"PROF_HANG_WARN", "seconds (> 0; above 10^9 never reached)", "(off)",
       "A thread inside one MPI call for longer than this prints one line on stderr naming "
       "the call, where it was called from (file:line when binutils' addr2line is installed "
       "and the program has debug info, else binary+offset) and its peer or communicator, "
       "while the job still runs (checked by the heartbeat thread, every 0.1 s; once per call).",
       [](const Config& c) { return c.hang_warn_seconds > 0 ? shortest(c.hang_warn_seconds) : std::string(); }},
      {"PROF_LOG_LEVEL", "trace|debug|info|warn|error|critical|off", "warn",
       "Verbosity of the profiler's own messages on stderr.",
       [](const Config& c) { return std::string(kLogLevels[c.log_level]); }},
      {"PROF_BCAST", "native|shm", "native",
       "MPI_Bcast implementation: MPICH's own, or Kurnosov and Tokmasheva's NUMA shared-memory broadcast "
       "(per communicator, at its first broadcast, a shared-memory segment with a queue per process, "
       "which never has a name in /dev/shm, so none is left behind however the job ends; "
       "messages of up to 56 bytes travel inside the notification's cache line; communicators spanning "
       "nodes: node leaders through MPICH, shared memory inside each node). Traced like any "
       "MPI_Bcast; the trace and the JSON report (`bcast_impl`) say which ran. Where the "
       "segment cannot be had (it would take more than half the node's available memory, "
       "or the memory is refused), that communicator uses MPICH's, with one warning.",
       [](const Config& c) { return std::string(c.bcast.impl == bcast::Impl::Shm ? "shm" : "native"); }},
      {"PROF_BCAST_FRAGMENT", "bytes, a multiple of the page size, up to 67108864",
       "8192 (the model's optimum f* = sqrt(b t_w / t) for b = 1 MiB, t_w = 50 t, rounded up to pages)",
       "PROF_BCAST=shm: fragment size f, the bytes of one queue buffer.",
       [](const Config& c) { return std::to_string(c.bcast.fragment); }},
      {"PROF_BCAST_SLOTS", "integer 1..65536", "128 (s* = b / f*)",
       "PROF_BCAST=shm: buffers s in each process's circular queue; a multiple of "
       "PROF_BCAST_SETS. The segment holds processes x s x f bytes of buffers.",
       [](const Config& c) { return std::to_string(c.bcast.slots); }},
      {"PROF_BCAST_SETS", "integer 1..65536, dividing PROF_BCAST_SLOTS", "2",
       "PROF_BCAST=shm: sets q the queue is split into: one use of the queue takes at most s/q "
       "slots, so the root fills one set while the others still read the previous ones.",
       [](const Config& c) { return std::to_string(c.bcast.sets); }},
      {"PROF_BCAST_TREE", "flat|chain|kary:K|knomial:K", "kary:2",
       "PROF_BCAST=shm: the notification tree (K-ary with K in 1..1024, K-nomial with K in "
       "2..1024), precomputed for every root.",
       [](const Config& c) { return bcast::tree_name(c.bcast.tree); }},
      {"PROF_TEST_BCAST_FAIL_SHM", "0|1", "0",
       "Test only: the shared-memory broadcast takes the node to have no memory to spare, "
       "so every segment is refused as one too big for the node is, and the fallback to "
       "MPICH's MPI_Bcast is exercised.",
       [](const Config& c) { return std::string(c.bcast.test_fail_shm ? "1" : "0"); }},
      {"PROF_TEST_NODES", "integer 1..1024", "(unset: the real nodes)",
       "Test only: world rank r is taken to be on node r mod N, by the shared-memory broadcast "
       "(node leaders through MPI, then shared memory inside each node) and by the hierarchical "
       "clock synchronization, so that their paths across nodes run on one host.",
       [](const Config& c) { return c.test_nodes > 0 ? std::to_string(c.test_nodes) : std::string(); }},
      {"PROF_TEST_CLOCK_SHIFT_NS", "RANK:NS[,RANK:NS...], |NS| <= 10^15", "(unset)",
       "Test only: shifts RANK's clock by NS nanoseconds (with PROF_TEST_NODES, the clock of "
       "every rank on RANK's node), to check that synchronization recovers it; each entry "
       "names another rank (another node).",
       [](const Config& c) {
         std::string s;
         for (const Config::TestShift& t : c.test_shifts)
           s += (s.empty() ? "" : ",") + std::to_string(t.rank) + ':' + std::to_string(t.ns);
         return s;
       }},
  };
  return vars;
}

namespace {
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

// An integer setting in [lo, hi]: true with *out when set and valid; a bad
// value adds one message naming the variable.
bool integer_setting(const char* name, long lo, long hi, long* out, std::vector<std::string>* errors) {
  const char* v = env(name);
  if (!v) return false;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (errno || *end || n < lo || n > hi) {
    errors->push_back(std::string(name) + "='" + v + "' is not an integer in " + std::to_string(lo) + ".." +
                      std::to_string(hi));
    return false;
  }
  *out = n;
  return true;
}
}  // namespace

bool read_config(Config* cfg, std::vector<std::string>* errors) {
  if (const char* v = env("PROF_OUTPUT")) cfg->output_dir = v;
  if (const char* v = env("PROF_TIMER")) {
    if (!Timer::parse(v, &cfg->timer))
      errors->push_back(std::string("PROF_TIMER='") + v +
                        "' is not one of tsc, monotonic, gettimeofday, mpi_wtime");
    else
      cfg->timer_given = true;
  }
  if (const char* v = env("PROF_SYNC")) {
    if (!parse_sync_scheme(v, &cfg->sync))
      errors->push_back(std::string("PROF_SYNC='") + v + "' is not one of hierarchical, linear, ring, none");
  }
  long mb = 0;
  if (integer_setting("PROF_BUFFER_MB", 1, 1024, &mb, errors)) cfg->buffer_bytes = uint64_t(mb) << 20;
  if (const char* v = env("PROF_STRICT")) {
    if (std::strcmp(v, "0") == 0) cfg->strict = false;
    else if (std::strcmp(v, "1") == 0) cfg->strict = true;
    else errors->push_back(std::string("PROF_STRICT='") + v + "' is not 0 or 1");
  }
  if (const char* v = env("PROF_HANG_WARN")) {
    char* end = nullptr;
    errno = 0;
    const double seconds = std::strtod(v, &end);
    // (Any positive number: past 10^9 s, about 30 years, no call ever reaches it.)
    if (end == v || *end || std::isnan(seconds) || !(seconds > 0))
      errors->push_back(std::string("PROF_HANG_WARN='") + v +
                        "' is not a number of seconds above 0");
    else
      cfg->hang_warn_seconds = std::min(seconds, 1e9);
  }
  if (const char* v = env("PROF_LOG_LEVEL")) {
    int found = -1;
    for (int i = 0; i < 7; ++i)
      if (std::strcmp(v, kLogLevels[i]) == 0) found = i;
    if (found < 0)
      errors->push_back(std::string("PROF_LOG_LEVEL='") + v +
                        "' is not one of trace, debug, info, warn, error, critical, off");
    else
      cfg->log_level = found;
  }
  long nodes = 0;
  if (integer_setting("PROF_TEST_NODES", 1, 1024, &nodes, errors)) cfg->test_nodes = int(nodes);
  if (const char* v = env("PROF_TEST_CLOCK_SHIFT_NS")) {
    const std::string value = v;
    const std::string named = "PROF_TEST_CLOCK_SHIFT_NS='" + value + "'";
    // Bounded so that the shift in timer ticks cannot overflow (10^15 ns: 11 days).
    constexpr long long kMaxShiftNs = 1000000000000000LL;
    std::string problem;
    for (size_t start = 0; problem.empty() && start <= value.size();) {
      size_t stop = value.find(',', start);
      if (stop == std::string::npos) stop = value.size();
      const std::string entry = value.substr(start, stop - start);
      start = stop + 1;
      const size_t colon = entry.find(':');
      char* end = nullptr;
      errno = 0;
      const long rank = colon == std::string::npos ? -1 : std::strtol(entry.c_str(), &end, 10);
      if (colon == 0 || colon == std::string::npos || end != entry.c_str() + colon || rank < 0 ||
          errno == ERANGE || rank > INT32_MAX) {
        problem = named + " is not RANK:NS[,RANK:NS...] ('" + entry + "')";
        break;
      }
      const char* ns_text = entry.c_str() + colon + 1;
      char* ns_end = nullptr;
      errno = 0;
      const long long ns = std::strtoll(ns_text, &ns_end, 10);
      if (*ns_end || ns_end == ns_text) {
        problem = named + " is not RANK:NS[,RANK:NS...] ('" + entry + "')";
      } else if (errno == ERANGE || ns > kMaxShiftNs || ns < -kMaxShiftNs) {
        problem = named + ": NS is not within -10^15..10^15 ('" + entry + "')";
      } else {
        for (const Config::TestShift& s : cfg->test_shifts) {
          const bool same = cfg->test_nodes > 0 ? s.rank % cfg->test_nodes == rank % cfg->test_nodes
                                                : s.rank == rank;
          if (same)
            problem = named + ": ranks " + std::to_string(s.rank) + " and " + std::to_string(rank) +
                      (cfg->test_nodes > 0 ? " are on the same pretend node" : " are the same rank");
        }
        cfg->test_shifts.push_back({int(rank), ns});
      }
    }
    if (!problem.empty()) {
      errors->push_back(problem);
      cfg->test_shifts.clear();
    }
  }
  bcast::read_settings(&cfg->bcast, errors);
  cfg->bcast.test_nodes = cfg->test_nodes;
  return errors->empty();
}

}  // namespace prof::shim
