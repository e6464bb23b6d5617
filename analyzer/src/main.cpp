// prof-analyze: the offline analyzer's command line (docs/interfaces.md).
//
// Exit status: 0 report written (warnings, such as a trace cut short by a
// crash, do not change it); 1 usage error or an output file that cannot be
// written; 2 nothing usable in the input (each problem named with its file and
// offset); 3 the input is damaged (bad CRC, bad records, a missing or foreign
// rank file): the report of what could be salvaged is still written.
//
// Under mpiexec (`mpiexec -n K prof-analyze TRACE ...`) the K processes share
// the analysis (mpi_exchange.h): process 0 prints and writes every output
// (the Chrome trace and the OTF2 archive from what each process reads of its
// block's ranks), the others stay silent, and every process exits with
// process 0's status.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <new>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>

#include "prof/analysis/analysis.h"
#include "mpi_exchange.h"
#include "prof/analysis/chrome_trace.h"
#include "prof/analysis/compare.h"
#include "prof/analysis/exchange.h"
#include "prof/analysis/otf2_export.h"
#include "prof/analysis/report.h"
#include "prof/safe_file.h"

namespace {

constexpr int kExitUsage = 1;
constexpr int kExitUnusable = 2;
constexpr int kExitDamaged = 3;

// A one-line bar on stderr, redrawn at most ten times a second.
class ProgressBar {
 public:
  void update(double f, uint64_t events) {
    const auto now = std::chrono::steady_clock::now();
    if (f < 1.0 && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const int width = 30;
    const int filled = static_cast<int>(f * width + 0.5);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(width, '.');
    std::fprintf(stderr, "\r[%s] %3d%%  %.1fM events", bar.c_str(), static_cast<int>(f * 100),
                 static_cast<double>(events) / 1e6);
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  std::chrono::steady_clock::time_point last_{};
  bool shown_ = false;
};

// Writes one output to `path`, whole or not at all (an earlier file of that
// name stays as it was when this one fails), or to stdout when the path is
// "-" (so that `--json - | jq` works); a failure names the file and the
// system's reason. `fill` returns false where it failed and said why.
bool write_file(const std::string& path, const std::function<bool(std::ostream&)>& fill) {
  if (path == "-") {
    const bool filled = fill(std::cout);
    std::cout.flush();
    if (std::cout) return filled;
    std::fprintf(stderr, "prof-analyze: error: cannot write the report to stdout\n");
    return false;
  }
  std::string why;
  const prof::trace::OutputResult result = prof::trace::write_whole_output(path, fill, &why);
  if (result == prof::trace::OutputResult::kNotWritten)
    std::fprintf(stderr, "prof-analyze: error: cannot write %s: %s\n", path.c_str(), why.c_str());
  return result == prof::trace::OutputResult::kWritten;
}

// Lists a result's warnings on stderr, each with its first examples.
void print_warnings(const prof::analysis::Analysis& a, const std::string& prefix) {
  for (const auto& w : a.warnings) {
    std::fprintf(stderr, "prof-analyze: warning: %s%s: %llu\n", prefix.c_str(), w.category.c_str(),
                 static_cast<unsigned long long>(w.count));
    for (const auto& ex : w.examples) std::fprintf(stderr, "  %s\n", ex.c_str());
  }
}

// The --ranks ranges that name no rank of the report: its per-rank tables
// would leave them out without a word (a rank past the trace's, a typo).
void warn_unlisted_ranks(const prof::analysis::Analysis& a, const std::vector<std::pair<int, int>>& ranges) {
  std::string have;
  for (const std::string& asked : prof::analysis::ranges_naming_no_rank(a, ranges, &have))
    std::fprintf(stderr, "prof-analyze: warning: --ranks %s: no such rank in the report (it has %zu: %s)\n",
                 asked.c_str(), a.intervals[0].per_rank.size(), have.c_str());
}

// A --window that holds none of the run (past its end, or before any rank's
// MPI_Init returned, where the run starts): its report is all zeros, which a
// window given in the wrong unit (milliseconds for seconds) would otherwise
// pass without a word.
// (`prefix`: which run of a --compare.)
void warn_empty_window(const prof::analysis::Analysis& a, const std::string& window, const char* prefix = "") {
  if (a.window && !a.intervals.empty() && a.intervals[0].exe_count == 0)
    std::fprintf(stderr,
                 "prof-analyze: warning: %s--window %s holds none of the run (FROM:TO are seconds from the "
                 "trace's start): every figure of the report is zero\n",
                 prefix, window.c_str());
}

// The files an output may not be written to, said once before any analysis:
// a rank file of a trace analyzed or its window index (each is mapped while
// read: writing one destroys what was recorded, and its reader with it), and
// the file another output writes (the later would replace the earlier).
// Outputs that do not exist yet cannot be inputs, but the window index the
// analysis may write is one; paths compare by where they lead (links, hard
// links and relative paths resolved). "": none of these.
std::string output_conflict(const std::vector<std::pair<const char*, std::string>>& outputs,
                            const std::vector<std::string>& trace_dirs) {
  using prof::format::kWindowIndexFileName;
  using prof::trace::resolved_path;
  for (const auto& [option, path] : outputs) {
    std::error_code ec;
    const std::filesystem::path real = resolved_path(path);
    if (!std::filesystem::exists(path, ec) && real.filename() != kWindowIndexFileName) continue;
    // `name`: the trace's file the output would overwrite.
    const auto conflict = [&](const std::string& dir, const std::string& name) {
      return std::string(option) + " " + path + ": that is " +
             (name == kWindowIndexFileName ? "the window index" : "a rank file") + " of the trace " + dir +
             ", which the analysis reads; name another file";
    };
    if (const std::string name = real.filename().string(); prof::format::is_trace_file_name(name))
      for (const std::string& dir : trace_dirs)
        if (real.parent_path() == resolved_path(dir)) return conflict(dir, name);
    // A second name (a hard link) of one of the trace's files: looked for only
    // where the output has several names, so no directory is listed otherwise.
    struct stat out_stat {};
    if (::stat(path.c_str(), &out_stat) != 0 || !S_ISREG(out_stat.st_mode) || out_stat.st_nlink < 2) continue;
    for (const std::string& dir : trace_dirs)
      for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        struct stat entry_stat {};
        if (prof::format::is_trace_file_name(name) && ::stat(entry.path().c_str(), &entry_stat) == 0 &&
            entry_stat.st_dev == out_stat.st_dev && entry_stat.st_ino == out_stat.st_ino)
          return conflict(dir, name);
      }
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = i + 1; j < outputs.size(); ++j)
      if (prof::trace::same_output_file(outputs[i].second, outputs[j].second))
        return std::string(outputs[i].first) + " and " + outputs[j].first + " both name " + outputs[j].second +
               ": each output needs a file of its own";
  return "";
}

// Why new files cannot be made in `dir` ("" when they can): it is missing,
// not a directory, or not writable.
std::string unwritable_directory(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "not a directory";
  return ::access(dir.c_str(), W_OK | X_OK) == 0 ? "" : std::strerror(errno);
}

// Why an output cannot be written at `path`, asked before the analysis so
// that a long one is not lost to a typo in a directory's name; "" when it
// can (as far as can be told without creating or truncating anything: the
// file, where it exists, or else its directory, must take writing).
std::string cannot_write(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return "is a directory";
    return ::access(path.c_str(), W_OK) == 0 ? "" : std::strerror(errno);
  }
  if (errno != ENOENT) return std::strerror(errno);
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const std::string why = unwritable_directory(dir);
  return why.empty() ? "" : "its directory " + dir + ": " + why;
}

// The first output of `outputs` that cannot be written, said on stderr; false then.
bool outputs_writable(const std::vector<std::pair<const char*, std::string>>& outputs) {
  for (const auto& [option, path] : outputs)
    if (const std::string why = cannot_write(path); !why.empty()) {
      std::fprintf(stderr, "prof-analyze: error: %s %s: cannot write the file: %s\n", option, path.c_str(), why.c_str());
      return false;
    }
  return true;
}

// `--compare A B`: both traces analyzed in turn, then the comparison written
// (text to `text_path` unless empty, JSON to `json_path` unless empty). Exit
// status as for one trace: 2 when either is unusable, 3 when either is damaged.
int compare_runs(const std::string& a_dir, const std::string& b_dir, const prof::analysis::Options& opt,
                 const std::string& window, const std::string& text_path, const std::string& json_path,
                 bool quiet, const prof::analysis::CompareTextOptions& text_opt) {
  prof::analysis::Analysis runs[2];
  const std::string dirs[2] = {a_dir, b_dir};
  bool damaged = false;
  for (int i = 0; i < 2; ++i) {
    const char* which = i == 0 ? "A" : "B";
    struct stat st {};
    const bool found = ::stat(dirs[i].c_str(), &st) == 0;
    if (!found || !S_ISDIR(st.st_mode)) {
      std::fprintf(stderr, "prof-analyze: error: --compare %s: %s: %s\n", which, dirs[i].c_str(),
                   found ? "not a directory" : std::strerror(errno));
      return kExitUnusable;
    }
    const prof::trace::TraceDir td = prof::trace::TraceDir::open(dirs[i]);
    if (!td.errors.empty() || td.ranks.empty()) {
      for (const auto& e : td.errors) std::fprintf(stderr, "prof-analyze: error: --compare %s: %s\n", which, e.c_str());
      for (const auto& w : td.warnings) std::fprintf(stderr, "prof-analyze: error: --compare %s: %s\n", which, w.c_str());
      if (td.errors.empty() && td.warnings.empty())
        std::fprintf(stderr, "prof-analyze: error: --compare %s: %s: no rank file\n", which, dirs[i].c_str());
      return kExitUnusable;
    }
    runs[i] = prof::analysis::analyze(td, opt);
    if (!runs[i].usable()) {
      for (const auto& e : runs[i].errors) std::fprintf(stderr, "prof-analyze: error: --compare %s: %s\n", which, e.c_str());
      if (runs[i].errors.empty())
        std::fprintf(stderr, "prof-analyze: error: --compare %s: %s: no events to analyze\n", which, dirs[i].c_str());
      return kExitUnusable;
    }
    if (!quiet) print_warnings(runs[i], std::string(which) + ": ");
    if (!quiet) warn_empty_window(runs[i], window, i == 0 ? "A: " : "B: ");
    damaged = damaged || runs[i].damaged;
  }
  const prof::analysis::Comparison c = prof::analysis::compare(runs[0], runs[1]);
  bool ok = true;
  if (!text_path.empty())
    ok = write_file(text_path, [&](std::ostream& o) {
           prof::analysis::write_compare_text(c, a_dir, b_dir, o, text_opt);
           return true;
         }) && ok;
  if (!json_path.empty())
    ok = write_file(json_path, [&](std::ostream& o) {
           prof::analysis::write_compare_json(c, runs[0], runs[1], a_dir, b_dir, o);
           return true;
         }) && ok;
  if (!ok) return kExitUsage;
  if (damaged) {
    std::fprintf(stderr, "prof-analyze: a trace is damaged; the comparison covers what could be salvaged\n");
    return kExitDamaged;
  }
  return 0;
}

// The command; `mpi`: one process of an MPI job.
int run_command(int argc, char** argv, prof::analysis::Exchange* mpi) {
  CLI::App app{"prof-analyze: interval characteristics of a prof trace (docs/metrics.md)"};
  std::string dir, out_path, json_path, chrome_path, chrome_window, window, otf2_dir;
  bool callsites = false;
  bool functions = false, wait_states = false, no_per_rank = false, no_progress = false, quiet = false, no_index = false;
  unsigned threads = 0;
  app.add_option("TRACE_DIR", dir, "trace directory (rank-*.prof files)");
  std::vector<std::string> compare_dirs;
  app.add_option("--compare", compare_dirs,
                 "A B (instead of TRACE_DIR): compare two runs' traces, interval by interval, and "
                 "what they ran under")
      ->expected(2);
  app.add_option("-o,--output", out_path, "write the text report to FILE instead of stdout");
  app.add_option("--json", json_path, "write the JSON report to FILE ('-': stdout)");
  app.add_option("--chrome-trace", chrome_path,
                 "write Chrome trace-event JSON (Perfetto, chrome://tracing) to FILE ('-': stdout)");
  app.add_option("--otf2", otf2_dir,
                 "write an OTF2 archive (Vampir, Scalasca) into DIR (DIR/traces.otf2); DIR must be new "
                 "or empty");
  app.add_option("--window", window,
                 "analyze only FROM:TO, seconds from the trace's start, in every output");
  app.add_option("--chrome-trace-window", chrome_window,
                 "FROM:TO in seconds from the trace's start: only what overlaps goes into the "
                 "Chrome trace (big traces stay loadable)");
  app.add_flag("--functions", functions, "add each interval's MPI function profile to the text");
  app.add_flag("--callsites", callsites,
               "add each interval's top MPI call sites by time (function, file:line) to the text");
  app.add_flag("--wait-states", wait_states,
               "add each interval's wait states by kind and the ranks waited for to the text");
  app.add_flag("--no-per-rank", no_per_rank, "leave out the per-rank tables");
  std::string rank_list;
  app.add_option("--ranks", rank_list,
                 "LIST (e.g. 0-3,100): only these ranks' lines in the text report's per-rank tables "
                 "(the comparative min/max/mean and JSON still cover every rank)");
  app.add_option("-j,--threads", threads, "worker threads (default: one per core; one for a --window of fewer than about 10^6 events)");
  bool finish_index = false;
  app.add_flag("--index", finish_index,
               "also build and write the window index: on cores the analysis leaves free while it "
               "runs, then after the report (without it, the first --window builds it)");
  app.add_flag("--no-index", no_index,
               "do not write the window index (TRACE/window-index.bin, or the user's cache where TRACE "
               "is not writable) that a --window builds, or a whole analysis with --index");
  app.add_flag("--no-progress", no_progress, "no progress bar on stderr");
  app.add_flag("-q,--quiet", quiet, "do not list warnings on stderr");
  app.footer(
      "As an MPI job, `mpiexec -n K prof-analyze TRACE_DIR [options]` (on a cluster\n"
      "`mpiexec -n NODES -ppn 1 ...`) spreads the ranks over K processes, -j threads\n"
      "each, and writes the same outputs; process 0 writes them.\n\n"
      "Exit status: 0 report written; 1 usage or output error; 2 input unusable;\n"
      "3 input damaged (the salvaged report is still written).");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    // (In the same form as every other error, which scripts may look for.)
    std::fprintf(stderr, "prof-analyze: error: %s\nRun with --help for more information.\n", e.what());
    return kExitUsage;
  }
  // An option given an empty value ("$OUT" unset in a script) is a mistake,
  // not the option left out (an empty --ranks LIST is documented: every
  // rank's lines).
  for (const char* option : {"--output", "--json", "--chrome-trace", "--otf2", "--window", "--chrome-trace-window",
                             "TRACE_DIR"}) {
    const CLI::Option* o = app.get_option(option);
    if (o->count() == 0) continue;
    for (const std::string& v : o->results())
      if (v.empty()) {
        std::fprintf(stderr, "prof-analyze: error: %s: empty value\n", o->get_name(false, true).c_str());
        return kExitUsage;
      }
  }
  if (app.count("--threads") > 0 && threads == 0) {
    std::fprintf(stderr, "prof-analyze: error: -j: expected a number of worker threads, 1 or more\n");
    return kExitUsage;
  }
  if (finish_index && no_index) {
    std::fprintf(stderr, "prof-analyze: error: --index writes the window index, --no-index does not: give one\n");
    return kExitUsage;
  }
  if (dir.empty() == compare_dirs.empty()) {
    std::fprintf(stderr, "prof-analyze: error: %s\n%s",
                 dir.empty() ? "give a TRACE_DIR, or --compare A B" : "give either a TRACE_DIR or --compare A B, not both",
                 app.help().c_str());
    return kExitUsage;
  }
  // Settings read from this process's own environment, which in a job may
  // be its own (hydra's per-executable -env, a TMPDIR per node): a bad one is
  // said before the analysis. In a job the processes first agree (with the
  // output checks below), so that one process leaving alone does not leave
  // the others waiting for it.
  const bool in_a_job = mpi && mpi->size() > 1 && compare_dirs.empty();
  std::string environment_problem;
  // The reader's budget of file mappings (prof::trace::set_mapping_budget),
  // to try a trace of more ranks than the default budget on a small one.
  if (const char* budget = std::getenv("PROF_ANALYZE_MAX_MAPPINGS"); budget && *budget) {
    char* end = nullptr;
    const long n = std::strtol(budget, &end, 10);
    if (*end != '\0' || n < 1 || n > (1L << 30))
      environment_problem = std::string("PROF_ANALYZE_MAX_MAPPINGS '") + budget +
                            "': expected a number of mappings, 1 or more";
    else
      prof::trace::set_mapping_budget(static_cast<int>(n));
  }
  // A diagnostic, 1 or 0: "no" or "false" would otherwise turn it on.
  if (const char* stats = std::getenv("PROF_ANALYZE_WORKER_STATS");
      environment_problem.empty() && stats && *stats && std::strcmp(stats, "0") != 0 && std::strcmp(stats, "1") != 0)
    environment_problem = std::string("PROF_ANALYZE_WORKER_STATS '") + stats + "': expected 1 (on) or 0 (off)";
  // As an output file: said before the analysis. (Not in a job, whose
  // processes write FILE.P each, maybe on nodes of their own: one leaving
  // alone here would leave the others waiting for it.)
  if (const char* log = std::getenv("PROF_ANALYZE_PHASE_LOG"); log && *log && !(mpi && mpi->size() > 1)) {
    if (const std::string why = cannot_write(log); !why.empty()) {
      std::fprintf(stderr, "prof-analyze: error: PROF_ANALYZE_PHASE_LOG %s: cannot write the file: %s\n", log,
                   why.c_str());
      return kExitUsage;
    }
  }
  // The root causes' temporary file goes to TMPDIR: a directory that is not
  // there is the setting's mistake, said before the analysis, not its failure.
  if (const char* tmpdir = std::getenv("TMPDIR"); environment_problem.empty() && tmpdir && *tmpdir) {
    if (const std::string why = unwritable_directory(tmpdir); !why.empty())
      environment_problem = std::string("TMPDIR '") + tmpdir + "': " + why +
                            "; it names where temporary files go: a writable directory, or unset for /tmp";
  }
  if (!environment_problem.empty() && !in_a_job) {
    std::fprintf(stderr, "prof-analyze: error: %s\n", environment_problem.c_str());
    return kExitUsage;
  }
  std::vector<std::pair<int, int>> shown_ranks;
  if (!rank_list.empty()) {
    if (no_per_rank) {
      std::fprintf(stderr, "prof-analyze: error: --ranks %s: --no-per-rank prints no per-rank lines to choose from\n",
                   rank_list.c_str());
      return kExitUsage;
    }
    std::string error;
    if (!prof::analysis::parse_rank_list(rank_list, &shown_ranks, &error)) {
      std::fprintf(stderr, "prof-analyze: error: --ranks %s\n", error.c_str());
      return kExitUsage;
    }
  }

  // FROM:TO in seconds from the trace's start, 0 <= FROM < TO; false: bad.
  auto parse_window = [](const std::string& text, const char* option, double* from, double* to) {
    const size_t colon = text.find(':');
    char* end1 = nullptr;
    char* end2 = nullptr;
    const std::string a = text.substr(0, colon);
    const std::string b = colon == std::string::npos ? "" : text.substr(colon + 1);
    *from = std::strtod(a.c_str(), &end1);
    *to = std::strtod(b.c_str(), &end2);
    // Decimal numbers only: strtod also reads hexadecimal ("0x1": a typo
    // taken as 1), "inf" and leading spaces.
    const auto decimal = [](const std::string& number) {
      return !number.empty() && number.find_first_not_of("0123456789.eE+-") == std::string::npos;
    };
    if (colon == std::string::npos || !decimal(a) || !decimal(b) || *end1 != '\0' || *end2 != '\0' ||
        !std::isfinite(*from) || !std::isfinite(*to) || *from < 0 || *from >= *to) {
      std::fprintf(stderr,
                   "prof-analyze: error: %s '%s': expected FROM:TO, seconds "
                   "from the start of the trace with 0 <= FROM < TO (e.g. 1.5:2)\n",
                   option, text.c_str());
      return false;
    }
    return true;
  };
  // "-" sends an output to stdout. Only one output can go there; when the
  // JSON or the Chrome trace does, the text report goes only where -o says.
  const int to_stdout = (out_path == "-") + (json_path == "-") + (chrome_path == "-");
  if (to_stdout > 1) {
    std::fprintf(stderr,
                 "prof-analyze: error: only one of -o, --json and --chrome-trace can be '-' "
                 "(stdout)\n");
    return kExitUsage;
  }
  const bool text_wanted = !(out_path.empty() && to_stdout == 1);
  if (out_path.empty() && text_wanted) out_path = "-";
  std::vector<std::pair<const char*, std::string>> files;  // the outputs to files
  {
    if (out_path != "-") files.emplace_back("-o", out_path);
    if (!json_path.empty() && json_path != "-") files.emplace_back("--json", json_path);
    if (!chrome_path.empty() && chrome_path != "-") files.emplace_back("--chrome-trace", chrome_path);
    const std::string conflict =
        output_conflict(files, compare_dirs.empty() ? std::vector<std::string>{dir} : compare_dirs);
    if (!conflict.empty()) {
      std::fprintf(stderr, "prof-analyze: error: %s\n", conflict.c_str());
      return kExitUsage;
    }
  }
  prof::analysis::ChromeTraceOptions chrome_opt;
  prof::analysis::Options analysis_opt;
  {
    // Only what the outputs written print (report.h, kFiguresNeeded): the
    // wait states cost about a sixth of the analysis, the root causes and the
    // critical path a log per rank and a pass of their own, the function
    // profile about a tenth.
    using prof::analysis::Output;
    const bool comparing = !compare_dirs.empty();
    std::vector<Output> outputs;
    if (text_wanted) {
      outputs.push_back(comparing ? (wait_states ? Output::CompareTextWaitStates : Output::CompareText)
                                  : (wait_states ? Output::TextWaitStates : Output::Text));
      if (functions || callsites) outputs.push_back(Output::TextFunctions);  // (--compare refuses --callsites)
    }
    if (!json_path.empty()) outputs.push_back(comparing ? Output::CompareJson : Output::Json);
    if (!chrome_path.empty()) outputs.push_back(Output::ChromeTrace);
    if (!otf2_dir.empty()) outputs.push_back(Output::Otf2);
    const prof::analysis::FiguresNeeded need = prof::analysis::figures_needed(outputs);
    analysis_opt.wait_states = need.wait_states;
    analysis_opt.delay_analysis = need.delay_analysis;
    analysis_opt.function_profile = need.function_profile;
  }
  if (!window.empty()) {
    if (!parse_window(window, "--window", &analysis_opt.window_from_s, &analysis_opt.window_to_s))
      return kExitUsage;
    chrome_opt.from_s = analysis_opt.window_from_s;
    chrome_opt.to_s = analysis_opt.window_to_s;
  }
  prof::analysis::Otf2Options otf2_opt;
  otf2_opt.from_s = analysis_opt.window_from_s;
  otf2_opt.to_s = analysis_opt.window_to_s;
  if (!chrome_window.empty()) {
    if (!parse_window(chrome_window, "--chrome-trace-window", &chrome_opt.from_s, &chrome_opt.to_s))
      return kExitUsage;
    if (chrome_path.empty()) {
      std::fprintf(stderr, "prof-analyze: error: --chrome-trace-window needs --chrome-trace FILE\n");
      return kExitUsage;
    }
  }

  if (!compare_dirs.empty()) {
    if (!chrome_path.empty()) {
      std::fprintf(stderr, "prof-analyze: error: --chrome-trace takes one trace, not --compare\n");
      return kExitUsage;
    }
    if (!otf2_dir.empty()) {
      std::fprintf(stderr, "prof-analyze: error: --otf2 takes one trace, not --compare\n");
      return kExitUsage;
    }
    if (!rank_list.empty()) {
      std::fprintf(stderr,
                   "prof-analyze: error: --ranks: --compare compares no per-rank values (the runs' "
                   "ranks need not correspond)\n");
      return kExitUsage;
    }
    if (callsites) {
      std::fprintf(stderr,
                   "prof-analyze: error: --callsites lists one trace's call sites, not --compare "
                   "(--functions compares the runs' MPI functions)\n");
      return kExitUsage;
    }
    if (no_per_rank) {
      std::fprintf(stderr, "prof-analyze: error: --no-per-rank: --compare prints no per-rank tables\n");
      return kExitUsage;
    }
    if (finish_index) {
      std::fprintf(stderr, "prof-analyze: error: --index takes one trace, not --compare\n");
      return kExitUsage;
    }
    if (mpi && mpi->rank() != 0) return 0;  // (process 0 compares alone)
    if (!outputs_writable(files)) return kExitUsage;
    prof::analysis::Options opt = analysis_opt;
    opt.threads = threads;
    opt.write_window_index = !no_index;
    opt.build_window_index = false;  // (as `prof-analyze DIR` without --index, which --compare refuses)
    prof::analysis::CompareTextOptions text_opt;
    text_opt.functions = functions;
    text_opt.wait_states = wait_states;
    return compare_runs(compare_dirs[0], compare_dirs[1], opt, window, text_wanted ? out_path : "", json_path, quiet,
                        text_opt);
  }

  const bool root = !mpi || mpi->rank() == 0;

  // An output file or a directory for the archive that cannot be written
  // is said before the analysis (process 0 writes them; the others leave
  // with it).
  {
    bool refused = root && environment_problem.empty() && !outputs_writable(files);
    std::string err;
    if (!refused && root && environment_problem.empty() && !otf2_dir.empty() && !prof::analysis::prepare_otf2_directory(otf2_dir, &err)) {
      std::fprintf(stderr, "prof-analyze: error: --otf2 %s\n", err.c_str());
      refused = true;
    }
    if (mpi && mpi->size() > 1) {
      // (Each process's bad setting, or "refused" from process 0; process 0
      // names each distinct one.)
      const std::string mine = !environment_problem.empty() ? environment_problem : refused ? "refused" : "";
      const std::vector<std::string> all = mpi->all_to_all(std::vector<std::string>(static_cast<size_t>(mpi->size()), mine));
      refused = false;
      for (size_t p = 0; p < all.size(); ++p) {
        if (all[p].empty()) continue;
        refused = true;
        if (root && all[p] != "refused" && std::find(all.begin(), all.begin() + static_cast<long>(p), all[p]) ==
                                               all.begin() + static_cast<long>(p))
          std::fprintf(stderr, "prof-analyze: error: %s%s\n", p ? ("process " + std::to_string(p) + ": ").c_str() : "",
                       all[p].c_str());
      }
    }
    if (refused) return kExitUsage;
  }

  // In a job each process opens its block's rank files only; a process that
  // cannot read the directory (a node may lack its file system) ends the
  // job, named by process 0 (open_trace_block).
  prof::trace::TraceDir td;
  if (mpi && mpi->size() > 1) {
    try {
      td = prof::analysis::open_trace_block(dir, *mpi);
    } catch (const std::bad_alloc&) {
      throw;  // (out of step with the others: run_command_within_memory ends the job)
    } catch (const std::exception& e) {
      td.errors.push_back(e.what());
    }
    // The processes agree on the trace's checks (the same inputs); should one
    // fail alone, process 0 names it and the job ends, instead of the others
    // waiting for it in the analysis's exchanges.
    std::string mine;
    if (!td.errors.empty() || td.ranks.empty()) {
      for (const auto& e : td.errors) mine += e + "\n";
      for (const auto& w : td.warnings) mine += w + "\n";
      if (mine.empty()) mine = dir + ": no usable rank file\n";
    }
    const std::vector<std::string> all =
        mpi->all_to_all(std::vector<std::string>(static_cast<size_t>(mpi->size()), mine));
    if (mine.empty())
      for (size_t p = 0; p < all.size(); ++p) {
        if (all[p].empty()) continue;
        if (root) {
          std::istringstream lines(all[p]);
          for (std::string line; std::getline(lines, line);)
            std::fprintf(stderr, "prof-analyze: error: process %zu: %s\n", p, line.c_str());
        }
        return kExitUnusable;
      }
  } else {
    td = prof::trace::TraceDir::open(dir);
  }
  if (!td.errors.empty() || td.ranks.empty()) {
    for (const auto& e : td.errors) std::fprintf(stderr, "prof-analyze: error: %s\n", e.c_str());
    for (const auto& w : td.warnings) std::fprintf(stderr, "prof-analyze: error: %s\n", w.c_str());
    return kExitUnusable;
  }

  ProgressBar bar;
  prof::analysis::Options opt = analysis_opt;
  opt.threads = threads;
  opt.write_window_index = !no_index;
  // The process ends with the analysis: the index is written when cores the
  // analysis left free built it meanwhile (else the first --window builds it).
  opt.build_window_index = finish_index;
  if (mpi && mpi->size() > 1) {
    opt.exchange = mpi;
    opt.cores = prof::analyze_cli::cores_per_process();
  }
  // A window that holds the whole run is no window, in every output (and
  // analyze() need not ask again).
  if (!prof::analysis::window_holds_the_run(td, opt)) {
    opt.window_falls_short = opt.windowed();
  } else {
    opt.window_from_s = otf2_opt.from_s = -std::numeric_limits<double>::infinity();
    opt.window_to_s = otf2_opt.to_s = std::numeric_limits<double>::infinity();
    if (chrome_window.empty()) {
      chrome_opt.from_s = opt.window_from_s;
      chrome_opt.to_s = opt.window_to_s;
    }
  }
  if (!no_progress && ::isatty(STDERR_FILENO))
    opt.progress = [&bar](double f, uint64_t events) { bar.update(f, events); };
  // In a job the Chrome trace is drawn by every process (its block's ranks):
  // process 0 tells the others whether it writes one (it does not when the
  // result is unusable or the file cannot be made), once, as it starts.
  const bool in_job = mpi && mpi->size() > 1 && !td.holder.empty();
  const bool chrome_in_job = in_job && !chrome_path.empty(), otf2_in_job = in_job && !otf2_dir.empty();
  bool chrome_told = false, otf2_told = false;
  auto tell = [&](bool* told, bool go) {
    *told = true;
    mpi->all_to_all(std::vector<std::string>(static_cast<size_t>(mpi->size()), go ? "1" : "0"));
  };
  auto tell_chrome = [&](bool go) { tell(&chrome_told, go); };
  auto told_to_go = [&] { return mpi->all_to_all(std::vector<std::string>(static_cast<size_t>(mpi->size())))[0] == "1"; };
  // Prints what the result says and writes the outputs; the exit status.
  auto report = [&](const prof::analysis::Analysis& a) {
    if (!a.usable()) {
      for (const auto& e : a.errors) std::fprintf(stderr, "prof-analyze: error: %s\n", e.c_str());
      if (a.errors.empty()) std::fprintf(stderr, "prof-analyze: error: %s: no events to analyze\n", dir.c_str());
      return a.failed_outside_the_input ? kExitUsage : kExitUnusable;
    }
    if (!quiet && !a.stats.window_index.empty())
      std::fprintf(stderr, "prof-analyze: window: %llu of %llu chunks decoded; index %s\n",
                   static_cast<unsigned long long>(a.stats.chunks_decoded),
                   static_cast<unsigned long long>(a.stats.chunks_total), a.stats.window_index.c_str());
    if (!quiet) print_warnings(a, "");

    prof::analysis::TextOptions text;
    text.functions = functions;
    text.callsites = callsites;
    text.wait_states = wait_states;
    text.per_rank = !no_per_rank;
    text.ranks = shown_ranks;
    if (!quiet && text_wanted && text.per_rank) warn_unlisted_ranks(a, shown_ranks);
    if (!quiet) warn_empty_window(a, window);
    bool ok = true;
    if (text_wanted)
      ok = write_file(out_path, [&](std::ostream& o) {
                          prof::analysis::write_text_report(a, o, text);
                          return true;
                        }) && ok;
    if (!json_path.empty())
      ok = write_file(json_path, [&](std::ostream& o) {
                          prof::analysis::write_json_report(a, o);
                          return true;
                        }) && ok;
    // The exports: in a job, each process reads its block's ranks for them.
    if (!chrome_path.empty()) {
      std::string err;
      ok = write_file(chrome_path,
                      [&](std::ostream& o) {
                        if (chrome_in_job) tell_chrome(true);
                        prof::analysis::ChromeTraceStats drawn;
                        // (It fails only where the stream does, which write_file names.)
                        if (!prof::analysis::write_chrome_trace(td, o, &err, &drawn, chrome_opt,
                                                                chrome_in_job ? mpi : nullptr))
                          return false;
                        if (!quiet && !chrome_window.empty() && drawn.slices == 0)
                          std::fprintf(stderr,
                                       "prof-analyze: warning: --chrome-trace-window %s holds none of the run "
                                       "(FROM:TO are seconds from the trace's start): the Chrome trace has no "
                                       "slice\n",
                                       chrome_window.c_str());
                        return true;
                      }) &&
           ok;
      if (chrome_in_job && !chrome_told) tell_chrome(false);
    }
    if (!otf2_dir.empty()) {
      std::string err;
      if (otf2_in_job) tell(&otf2_told, true);
      if (!prof::analysis::write_otf2(td, otf2_dir, &a, &err, nullptr, otf2_opt, otf2_in_job ? mpi : nullptr)) {
        std::fprintf(stderr, "prof-analyze: error: --otf2 %s: %s\n", otf2_dir.c_str(), err.c_str());
        ok = false;
      }
    }
    if (!ok) return kExitUsage;
    if (a.damaged) {
      std::fprintf(stderr,
                   "prof-analyze: the trace is damaged; the report covers what could be salvaged\n");
      return kExitDamaged;
    }
    return 0;
  };
  // The outputs are written as soon as the result is known, while the window
  // index may still be being written (analysis::Options::on_result).
  int status = 0;
  opt.on_result = [&](const prof::analysis::Analysis& a) {
    if (!root) {
      if (chrome_in_job && told_to_go()) {
        std::ostream nowhere(nullptr);  // (process 0 writes the trace)
        prof::analysis::write_chrome_trace(td, nowhere, nullptr, nullptr, chrome_opt, mpi);
      }
      if (otf2_in_job && told_to_go()) prof::analysis::write_otf2(td, otf2_dir, nullptr, nullptr, nullptr, otf2_opt, mpi);
      return;
    }
    bar.clear();
    status = report(a);
    // (An export process 0 did not reach: the others are told, in order.)
    if (chrome_in_job && !chrome_told) tell_chrome(false);
    if (otf2_in_job && !otf2_told) tell(&otf2_told, false);
    std::fflush(stdout);
    // A reader of stdout (`| less`) sees its end now, not when the index is written.
    if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) {
      ::dup2(null, STDOUT_FILENO);
      ::close(null);
    }
  };
  prof::analysis::analyze(td, opt);
  // The outputs are written: the trace is left open for the process's exit,
  // which unmaps and closes every rank file in one pass. Closed here, each
  // file is a system call or two on one core: the time from the analysis's
  // end to the process's was 0.081 s at 4096 ranks, 0.055 s left open
  // (docs/performance.md).
  static_cast<void>(new prof::trace::TraceDir(std::move(td)));
  return status;
}

// The soft limit on open files raised to the hard one, as far as the kernel
// allows: the reader keeps a descriptor for at most half the soft limit and
// opens every other rank file again at each visit, and many systems give a
// login shell 1024 under a hard limit hundreds of times that. At 16384 ranks,
// 1024 took 1.06x the wall and 1.12x the CPU of 20000 (docs/performance.md).
// Nothing here waits on descriptors with select(), which stops at 1024.
void raise_open_files_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t want = std::min<rlim_t>(limit.rlim_max, rlim_t{1} << 20);
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= want) return;
  limit.rlim_cur = want;
  static_cast<void>(::setrlimit(RLIMIT_NOFILE, &limit));  // (a refusal leaves the limit as it was)
}

// run_command, with memory that runs out outside the analysis (opening the
// trace, writing an output) said as the analysis's own failure is: the
// machine's refusal, exit 1, not a crash.
int run_command_within_memory(int argc, char** argv, prof::analysis::Exchange* mpi) {
  try {
    return run_command(argc, argv, mpi);
  } catch (const std::bad_alloc&) {
    // (In a job the others may be waiting for this process at an exchange.)
    if (mpi && mpi->size() > 1) mpi->abort_job("out of memory");
    std::fprintf(stderr, "prof-analyze: error: out of memory\n");
    return kExitUsage;
  }
}

}  // namespace

int main(int argc, char** argv) {
  raise_open_files_limit();
  if (!prof::analyze_cli::launched_as_mpi_job()) return run_command_within_memory(argc, argv, nullptr);
  std::unique_ptr<prof::analysis::Exchange> mpi;
  try {
    mpi = prof::analyze_cli::start_mpi(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prof-analyze: error: %s\n", e.what());
    return kExitUsage;
  }
  prof::analyze_cli::quiet_unless_first(*mpi);
  const int status = run_command_within_memory(argc, argv, mpi.get());
  return prof::analyze_cli::finish_mpi(*mpi, status);
}
