#include "prof/settings.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>

namespace prof::settings {

namespace {

const std::vector<std::string> kLogLevels = {"trace", "debug", "info", "warn", "error", "critical", "off"};
const std::vector<std::string> kFlag = {"0", "1"};

std::string shortest(double v) {  // the shortest text that reads back as v
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof text, v).ptr);
}

// The names of the timers and synchronization schemes, from the functions that
// print them (their one spelling).
std::vector<std::string> timer_names() {
  std::vector<std::string> names;
  for (uint32_t k = uint32_t(format::TimerKind::Tsc); k <= uint32_t(format::TimerKind::MpiWtime); ++k)
    names.emplace_back(format::timer_name(format::TimerKind(k)));
  return names;
}
std::vector<std::string> sync_names() {
  std::vector<std::string> names;
  for (int s = int(clock::SyncScheme::Hierarchical); s <= int(clock::SyncScheme::None); ++s)
    names.emplace_back(clock::sync_scheme_name(clock::SyncScheme(s)));
  return names;
}
std::vector<std::string> bcast_impl_names() {
  return {bcast::impl_name(bcast::Impl::Native), bcast::impl_name(bcast::Impl::Shm)};
}

// An optional sign and at least one digit, however many.
bool is_decimal(const std::string& text) {
  const size_t digits = text.empty() || (text[0] != '-' && text[0] != '+') ? 0 : 1;
  return text.size() > digits && text.find_first_not_of("0123456789", digits) == std::string::npos;
}

// A decimal integer in [lo, hi], the whole text: digits with an optional sign,
// nothing around them (strtoll alone would take leading spaces, not trailing).
bool parse_integer(const std::string& text, long long lo, long long hi, long long* out) {
  if (!is_decimal(text)) return false;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (errno || end == text.c_str() || *end || n < lo || n > hi) return false;
  *out = n;
  return true;
}

bool parse_hang_warn(Config& c, const std::string& value, std::string*) {
  // A decimal number (strtod alone would take hexadecimal, "inf" and spaces).
  if (value.empty() || value.find_first_not_of("0123456789.eE+-") != std::string::npos) return false;
  char* end = nullptr;
  const double seconds = std::strtod(value.c_str(), &end);
  // Any positive number: past 10^9 s, about 30 years, no call ever reaches it.
  if (end == value.c_str() || *end || std::isnan(seconds) || !(seconds > 0)) return false;
  c.hang_warn_seconds = std::min(seconds, 1e9);
  return true;
}

bool parse_bcast_fragment(Config& c, const std::string& value, std::string* detail) {
  const auto page = static_cast<long long>(bcast::page_bytes());
  long long f = 0;
  if (!parse_integer(value, page, 64ll << 20, &f) || f % page != 0) {
    *detail = "the page size is " + std::to_string(page);
    return false;
  }
  c.bcast.fragment = size_t(f);
  return true;
}

bool parse_bcast_tree(Config& c, const std::string& value, std::string*) {
  return bcast::parse_tree(value, &c.bcast.tree);
}

std::string sets_divide_slots(const Config& c) {
  if (c.bcast.slots % c.bcast.sets == 0) return "";
  return "PROF_BCAST_SLOTS is " + std::to_string(c.bcast.slots) + ", PROF_BCAST_SETS " +
         std::to_string(c.bcast.sets) + " (each set holds slots/sets buffers)";
}

// RANK:NS[,RANK:NS...], each rank (each pretend node, with PROF_TEST_NODES, read
// before it) named once, |NS| bounded so that the shift in timer ticks cannot
// overflow (10^15 ns: 11 days).
bool parse_clock_shifts(Config& c, const std::string& value, std::string* detail) {
  constexpr long long kMaxShiftNs = 1000000000000000LL;
  std::vector<Config::TestShift> shifts;
  for (size_t start = 0; start <= value.size();) {
    size_t stop = value.find(',', start);
    if (stop == std::string::npos) stop = value.size();
    const std::string entry = value.substr(start, stop - start);
    start = stop + 1;
    const size_t colon = entry.find(':');
    long long rank = 0, ns = 0;
    if (colon == std::string::npos || !parse_integer(entry.substr(0, colon), 0, INT32_MAX, &rank) ||
        !is_decimal(entry.substr(colon + 1))) {
      *detail = "'" + entry + "'";
      return false;
    }
    if (!parse_integer(entry.substr(colon + 1), -kMaxShiftNs, kMaxShiftNs, &ns)) {
      *detail = "NS is not within -10^15..10^15 ('" + entry + "')";
      return false;
    }
    for (const Config::TestShift& s : shifts) {
      const bool same = c.test_nodes > 0 ? s.rank % c.test_nodes == rank % c.test_nodes : s.rank == rank;
      if (same) {
        *detail = "ranks " + std::to_string(s.rank) + " and " + std::to_string(rank) +
                  (c.test_nodes > 0 ? " are on the same pretend node" : " are the same rank");
        return false;
      }
    }
    shifts.push_back({int(rank), ns});
  }
  c.test_shifts = std::move(shifts);
  return true;
}

std::string join(const std::vector<std::string>& items, const char* between) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : between) + s;
  return out;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

// Levenshtein's distance between two names, stopping at `most` + 1.
size_t edits_between(const std::string& a, const std::string& b, size_t most) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > most) return most + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

const std::vector<ConfigVariable>& config_variables() {
  // Order matters where a setting's parse or check reads another: the one it
  // reads comes first (PROF_TEST_NODES before PROF_TEST_CLOCK_SHIFT_NS).
  static const std::vector<ConfigVariable> vars = [] {
    std::vector<ConfigVariable> v;
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_OUTPUT";
      s.kind = SettingKind::Text;
      s.type = "path";
      s.default_value = "(new directory prof-EXE-DATE-TIME-PID in the working directory)";
      s.description =
          "Trace directory to create (parents too); one file rank-NNNNN.prof per rank. When it "
          "already holds a trace, the run writes beside it, in PROF_OUTPUT-2 (-3, ...), and says so "
          "in one line on stderr.";
      s.parse = [](Config& c, const std::string& value, std::string*) { return c.output_dir = value, true; };
      s.resolved = [](const Config& c) { return c.output_dir; };
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_TIMER";
      s.kind = SettingKind::Choice;
      s.choices = timer_names();
      s.default_value = "tsc (monotonic without invariant TSC)";
      s.description = "Clock for timestamps. tsc: rdtsc, calibrated against CLOCK_MONOTONIC.";
      s.set_choice = [](Config& c, size_t i) {
        c.timer = format::TimerKind(uint32_t(format::TimerKind::Tsc) + i);
        c.timer_given = true;
      };
      s.resolved = [](const Config& c) { return std::string(format::timer_name(c.timer)); };
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_SYNC";
      s.same_on_every_rank = true;
      s.kind = SettingKind::Choice;
      s.choices = sync_names();
      s.default_value = "hierarchical";
      s.description =
          "Clock synchronization against rank 0 after MPI_Init and before MPI_Finalize "
          "(minimum round trip of ping-pong exchanges). hierarchical: ranks that read their "
          "node leader's clock (checked) take its offset at no cost, node leaders measure in a "
          "binomial tree, O(log nodes) rounds; linear: rank 0 against each rank in turn; ring: "
          "each rank against the one before it.";
      s.set_choice = [](Config& c, size_t i) { c.sync = clock::SyncScheme(i); };
      s.resolved = [](const Config& c) { return std::string(clock::sync_scheme_name(c.sync)); };
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_BUFFER_MB";
      s.kind = SettingKind::Integer;
      s.lo = 1, s.hi = 1024;
      s.default_value = "1";
      s.description =
          "Largest event chunk a thread maps from the trace file (chunks start at 64 KiB and "
          "double); memory stays bounded by threads x this. The chunk that reaches this size "
          "stays mapped as the thread's home: each time it is full its records are copied to the "
          "end of the file and it is reused (docs/trace-format.md, \"Home chunks\"). The space a "
          "thread's last chunk did not use is given back when the rank ends.";
      s.set_integer = [](Config& c, long mb) { c.buffer_bytes = uint64_t(mb) << 20; };
      s.resolved = [](const Config& c) { return std::to_string(c.buffer_bytes >> 20); };
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_STRICT";
      s.kind = SettingKind::Choice;
      s.choices = kFlag;
      s.default_value = "0";
      s.description =
          "1: a bad setting or an unwritable output aborts the run instead of running unprofiled. Set on any "
          "rank, it aborts every rank.";
      s.set_choice = [](Config& c, size_t i) { c.strict = i == 1; };
      s.resolved = [](const Config& c) { return std::string(c.strict ? "1" : "0"); };
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_CALLSITES";
      s.kind = SettingKind::Choice;
      s.choices = kFlag;
      s.default_value = "1";
      s.description =
          "1: each MPI call's record carries its call site (the source line it was called from, "
          "or binary+offset without debug info), found once per distinct site and per thread "
          "cached; prof-analyze --callsites, the Chrome export and prof-gui's tooltips show it. "
          "0: no call's site is looked up or written; calls are profiled per function only "
          "(--callsites lists none). Markers' call sites are recorded either way (they identify "
          "intervals).";
      s.set_choice = [](Config& c, size_t i) { c.callsites = i == 1; };
      s.resolved = [](const Config& c) { return std::string(c.callsites ? "1" : "0"); };
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_HANG_WARN";
      s.kind = SettingKind::Parsed;
      s.type = "seconds (> 0; above 10^9 never reached)";
      s.accepted = "a number of seconds above 0";
      s.bad_example = "0";
      s.default_value = "(off)";
      s.description =
          "A thread inside one MPI call for longer than this prints one line on stderr naming "
          "the call, where it was called from (file:line when binutils' addr2line is installed "
          "and the program has debug info, else binary+offset) and its peer or communicator "
          "(a peer on another communicator than MPI_COMM_WORLD as its rank there, then its "
          "world rank), while the job still runs (checked by the heartbeat thread, every 0.1 s; once per call).";
      s.parse = parse_hang_warn;
      s.resolved = [](const Config& c) {
        return c.hang_warn_seconds > 0 ? shortest(c.hang_warn_seconds) : std::string();
      };
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_LOG_LEVEL";
      s.kind = SettingKind::Choice;
      s.choices = kLogLevels;
      s.default_value = "warn";
      // (spdlog's names: it prints `warning` and `error`, and reads `warn` and `err` too.)
      s.aliases = {{"warning", "warn"}, {"err", "error"}};
      s.description =
          "Verbosity of the profiler's own messages on stderr (spdlog's levels; `warning` and `err` are taken "
          "for `warn` and `error`). `critical` and `off` silence a bad setting's "
          "message too, except where PROF_STRICT=1 aborts the run: an abort always says why. The hang warnings "
          "that PROF_HANG_WARN asks for are printed at every level.";
      s.set_choice = [](Config& c, size_t i) { c.log_level = int(i); };
      s.resolved = [](const Config& c) { return kLogLevels[size_t(c.log_level)]; };
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_BCAST";
      s.same_on_every_rank = true;
      s.kind = SettingKind::Choice;
      s.choices = bcast_impl_names();
      s.default_value = "native";
      s.description =
          "MPI_Bcast implementation: MPICH's own, or Kurnosov and Tokmasheva's NUMA shared-memory broadcast "
          "(per communicator, at its first broadcast, a shared-memory segment with a queue per process, "
          "which never has a name in /dev/shm, so none is left behind however the job ends; "
          "messages of up to 56 bytes travel inside the notification's cache line; communicators spanning "
          "nodes: node leaders through MPICH, shared memory inside each node). Traced like any "
          "MPI_Bcast; the trace and the JSON report (`bcast_impl`) say which ran. Where the "
          "segment cannot be had (it would take more than half the node's available memory, "
          "or the memory is refused), that communicator uses MPICH's, with one warning.";
      s.set_choice = [](Config& c, size_t i) { c.bcast.impl = i == 1 ? bcast::Impl::Shm : bcast::Impl::Native; };
      s.resolved = [](const Config& c) { return std::string(bcast::impl_name(c.bcast.impl)); };
      s.read_by_prof_bench = true;
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_BCAST_FRAGMENT";
      s.same_on_every_rank = true;
      s.kind = SettingKind::Parsed;
      s.type = "bytes, a multiple of the page size, up to 67108864";
      s.accepted = "a multiple of the page size from one page to 67108864 bytes";
      s.bad_example = "1000";
      s.default_value =
          "8192 (the model's optimum f* = sqrt(b t_w / t) for b = 1 MiB, t_w = 50 t, rounded up to pages)";
      s.description = "PROF_BCAST=shm: fragment size f, the bytes of one queue buffer.";
      s.parse = parse_bcast_fragment;
      s.resolved = [](const Config& c) { return std::to_string(c.bcast.fragment); };
      s.read_by_prof_bench = true;
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_BCAST_SLOTS";
      s.same_on_every_rank = true;
      s.kind = SettingKind::Integer;
      s.lo = 1, s.hi = 65536;
      s.default_value = "128 (s* = b / f*)";
      s.description =
          "PROF_BCAST=shm: buffers s in each process's circular queue; a multiple of "
          "PROF_BCAST_SETS. The segment holds processes x s x f bytes of buffers.";
      s.type = "that PROF_BCAST_SETS divides";
      s.set_integer = [](Config& c, long n) { c.bcast.slots = int(n); };
      s.check = sets_divide_slots;
      s.resolved = [](const Config& c) { return std::to_string(c.bcast.slots); };
      s.read_by_prof_bench = true;
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_BCAST_SETS";
      s.same_on_every_rank = true;
      s.kind = SettingKind::Integer;
      s.lo = 1, s.hi = 65536;
      s.type = "dividing PROF_BCAST_SLOTS";
      s.default_value = "2";
      s.description =
          "PROF_BCAST=shm: sets q the queue is split into: one use of the queue takes at most s/q "
          "slots, so the root fills one set while the others still read the previous ones.";
      s.set_integer = [](Config& c, long n) { c.bcast.sets = int(n); };
      s.check = sets_divide_slots;
      s.resolved = [](const Config& c) { return std::to_string(c.bcast.sets); };
      s.read_by_prof_bench = true;
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_BCAST_TREE";
      s.same_on_every_rank = true;
      s.kind = SettingKind::Parsed;
      s.type = "flat|chain|kary:K|knomial:K";
      s.accepted = "one of flat, chain, kary:K (K in 1..1024), knomial:K (K in 2..1024)";
      s.bad_example = "knomial:1";
      s.default_value = "kary:2";
      s.description =
          "PROF_BCAST=shm: the notification tree (K-ary with K in 1..1024, K-nomial with K in "
          "2..1024), precomputed for every root.";
      s.parse = parse_bcast_tree;
      s.resolved = [](const Config& c) { return bcast::tree_name(c.bcast.tree); };
      s.read_by_prof_bench = true;
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_TEST_BCAST_FAIL_SHM";
      s.same_on_every_rank = true;
      s.kind = SettingKind::Choice;
      s.choices = kFlag;
      s.default_value = "0";
      s.description =
          "Test only: the shared-memory broadcast takes the node to have no memory to spare, "
          "so every segment is refused as one too big for the node is, and the fallback to "
          "MPICH's MPI_Bcast is exercised.";
      s.set_choice = [](Config& c, size_t i) { c.bcast.test_fail_shm = i == 1; };
      s.resolved = [](const Config& c) { return std::string(c.bcast.test_fail_shm ? "1" : "0"); };
      s.read_by_prof_bench = true;
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_TEST_NODES";
      s.same_on_every_rank = true;
      s.kind = SettingKind::Integer;
      s.lo = 1, s.hi = 1024;
      s.default_value = "(unset: the real nodes)";
      s.description =
          "Test only: world rank r is taken to be on node r mod N, by the shared-memory broadcast "
          "(node leaders through MPI, then shared memory inside each node) and by the hierarchical "
          "clock synchronization, so that their paths across nodes run on one host.";
      s.set_integer = [](Config& c, long n) { c.test_nodes = int(n); };
      s.resolved = [](const Config& c) { return c.test_nodes > 0 ? std::to_string(c.test_nodes) : std::string(); };
    }
    {
      ConfigVariable& s = v.emplace_back();
      s.name = "PROF_TEST_CLOCK_SHIFT_NS";
      s.kind = SettingKind::Parsed;
      s.type = "RANK:NS[,RANK:NS...], |NS| <= 10^15";
      s.accepted = "RANK:NS[,RANK:NS...] with |NS| <= 10^15, each RANK (each pretend node) once";
      s.bad_example = "1:5,";
      s.default_value = "(unset)";
      s.description =
          "Test only: shifts RANK's clock by NS nanoseconds (with PROF_TEST_NODES, the clock of "
          "every rank on RANK's node), to check that synchronization recovers it; each entry "
          "names another rank (another node).";
      s.parse = parse_clock_shifts;
      s.resolved = [](const Config& c) {
        std::string text;
        for (const Config::TestShift& t : c.test_shifts)
          text += (text.empty() ? "" : ",") + std::to_string(t.rank) + ':' + std::to_string(t.ns);
        return text;
      };
    }
    return v;
  }();
  return vars;
}

std::string setting_type(const ConfigVariable& v) {
  switch (v.kind) {
    case SettingKind::Integer:
      return "integer " + std::to_string(v.lo) + ".." + std::to_string(v.hi) + (v.type ? std::string(", ") + v.type : "");
    case SettingKind::Choice: return join(v.choices, "|");
    case SettingKind::Text:
    case SettingKind::Parsed: return v.type;
  }
  return "";
}

std::string setting_accepted(const ConfigVariable& v) {
  switch (v.kind) {
    case SettingKind::Integer:
      return "an integer in " + std::to_string(v.lo) + ".." + std::to_string(v.hi) +
             (v.type ? std::string(" ") + v.type : "");
    case SettingKind::Choice: return "one of " + join(v.choices, ", ");
    case SettingKind::Text: return "a non-empty text";
    case SettingKind::Parsed: return v.accepted ? v.accepted : v.type;
  }
  return "";
}

std::string setting_error(const ConfigVariable& v, const std::string& value, const std::string& detail) {
  return std::string(v.name) + "='" + value + "' is not " + setting_accepted(v) +
         (detail.empty() ? "" : ": " + detail);
}

std::vector<UnknownSetting> unknown_settings(const char* const* environment) {
  static const char* const kOtherTools[] = {"PROF_ANALYZE_", "PROF_GUI_", "PROF_FUZZ_"};
  std::vector<UnknownSetting> unknown;
  for (const char* const* entry = environment; entry && *entry; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    if (name.rfind("PROF_", 0) != 0) continue;
    if (std::any_of(std::begin(kOtherTools), std::end(kOtherTools),
                    [&](const char* prefix) { return name.rfind(prefix, 0) == 0; }))
      continue;
    const auto& table = config_variables();
    if (std::any_of(table.begin(), table.end(), [&](const ConfigVariable& v) { return name == v.name; })) continue;
    UnknownSetting found{name, ""};
    size_t fewest = 3;
    for (const ConfigVariable& v : table)
      if (const size_t edits = edits_between(name, v.name, 2); edits < fewest) {
        fewest = edits;
        found.nearest = v.name;
      }
    unknown.push_back(found);
  }
  return unknown;
}

std::string shared_settings(const Config& cfg) {
  std::string lines;
  for (const ConfigVariable& v : config_variables())
    if (v.same_on_every_rank) lines += std::string(v.name) + "=" + v.resolved(cfg) + "\n";
  return lines;
}

std::string shared_settings_difference(const std::string& mine, const std::string& rank0s, int rank) {
  if (mine == rank0s) return "";
  auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    for (size_t at = 0; at < text.size();) {
      const size_t end = text.find('\n', at);
      out.push_back(text.substr(at, end - at));
      at = end == std::string::npos ? text.size() : end + 1;
    }
    return out;
  };
  const std::vector<std::string> a = lines(mine), b = lines(rank0s);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string here = i < a.size() ? a[i] : "", there = i < b.size() ? b[i] : "";
    if (here == there) continue;
    const size_t eq = here.find('=');
    const std::string name = here.substr(0, eq), value = eq == std::string::npos ? "" : here.substr(eq + 1);
    const size_t their_eq = there.find('=');
    const std::string theirs = their_eq == std::string::npos ? "" : there.substr(their_eq + 1);
    return name + " is '" + value + "' on rank " + std::to_string(rank) + " but '" + theirs +
           "' on rank 0: the shim's own collectives need it the same on every rank";
  }
  return "";
}

std::string unknown_setting_warning(const UnknownSetting& unknown) {
  return unknown.name + " is not a libprof setting" +
         (unknown.nearest.empty() ? "" : " (did you mean " + unknown.nearest + "?)") +
         "; it is ignored (prof-run --help-config lists the settings)";
}

bool read_config(Config* cfg, std::vector<std::string>* errors, bool (*wanted)(const ConfigVariable&)) {
  const size_t before = errors->size();
  for (const ConfigVariable& v : config_variables()) {
    if (wanted && !wanted(v)) continue;
    const char* given = env(v.name);
    if (!given) continue;
    const std::string value = given;
    std::string detail;
    bool ok = false;
    switch (v.kind) {
      case SettingKind::Integer: {
        long long n = 0;
        ok = parse_integer(value, v.lo, v.hi, &n);
        if (ok) v.set_integer(*cfg, long(n));
        break;
      }
      case SettingKind::Choice: {
        std::string choice = value;
        for (const auto& [spelling, of] : v.aliases)
          if (spelling == value) choice = of;
        const auto at = std::find(v.choices.begin(), v.choices.end(), choice);
        ok = at != v.choices.end();
        if (ok) v.set_choice(*cfg, size_t(at - v.choices.begin()));
        break;
      }
      case SettingKind::Text:
      case SettingKind::Parsed: ok = v.parse(*cfg, value, &detail); break;
    }
    if (!ok) errors->push_back(setting_error(v, value, detail));
  }
  // Rules between settings, once every setting they name is read (a bad value
  // already has its message).
  // A rule of several settings is told once, against one the user gave.
  if (errors->size() == before) {
    std::vector<std::string (*)(const Config&)> told;
    for (const ConfigVariable& v : config_variables()) {
      if (!v.check || (wanted && !wanted(v))) continue;
      if (std::find(told.begin(), told.end(), v.check) != told.end()) continue;
      const std::string problem = v.check(*cfg);
      if (problem.empty()) continue;
      told.push_back(v.check);
      const ConfigVariable* blamed = &v;  // (the last of them given, else the first)
      std::string defaults;
      for (const ConfigVariable& other : config_variables()) {
        if (other.check != v.check) continue;
        if (env(other.name))
          blamed = &other;
        else
          defaults += std::string(" (") + other.name + " is unset: its default)";
      }
      const char* given = env(blamed->name);
      errors->push_back(setting_error(*blamed, given ? given : blamed->resolved(*cfg), problem + defaults));
    }
  }
  cfg->bcast.test_nodes = cfg->test_nodes;
  return errors->size() == before;
}

}  // namespace prof::settings
