// prof-bench: collective timings by Kurnosov's MPIPerf method
// (docs/references.md; see schedule.h). mpiexec -n P prof-bench [OPTIONS]; rank 0
// prints a table and writes CSV / JSON (docs/interfaces.md, "prof-bench").
#include <mpi.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "collective.h"
#include "global_clock.h"
#include "options.h"
#include "schedule.h"
#include "stats.h"

using namespace prof::bench;

namespace {

struct Row {
  std::string op, impl;
  int procs = 0;
  std::size_t bytes = 0;
  std::size_t runs_total = 0, runs_valid = 0, runs_kept = 0;
  double mean_s = 0, stderr_s = 0, min_s = 0, max_s = 0, ci_low_s = 0, ci_high_s = 0, rel_err = 0;
  double sync_error_s = 0;
  Measurement detail;
  double rse = 0;
};

constexpr const char* kCsvHeader =
    "op,impl,procs,bytes,runs_total,runs_valid,runs_kept,mean_s,stderr_s,min_s,max_s,ci_low_s,"
    "ci_high_s,rel_err,sync_error_s";

Row make_row(Op op, const std::string& impl, int procs, std::size_t bytes, Measurement m, double confidence) {
  Row row;
  row.op = op_name(op);
  row.impl = impl;
  row.procs = procs;
  row.bytes = bytes;
  row.runs_total = m.runs_total;
  row.runs_valid = m.valid_s.size();
  const Summary s = summarize(m.valid_s, confidence);
  row.runs_kept = s.kept;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const bool any = s.kept > 0;
  row.mean_s = any ? s.mean : nan;
  row.stderr_s = any ? s.stderr_ : nan;
  row.min_s = any ? s.min : nan;
  row.max_s = any ? s.max : nan;
  row.ci_low_s = any ? s.ci_low : nan;
  row.ci_high_s = any ? s.ci_high : nan;
  row.rel_err = any ? s.rel_err : nan;
  row.rse = any ? s.rse : nan;
  row.sync_error_s = m.sync_error_s;
  row.detail = std::move(m);
  return row;
}

std::string csv_line(const Row& r) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s,%s,%d,%zu,%zu,%zu,%zu,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g",
                r.op.c_str(), r.impl.c_str(), r.procs, r.bytes, r.runs_total, r.runs_valid, r.runs_kept,
                r.mean_s, r.stderr_s, r.min_s, r.max_s, r.ci_low_s, r.ci_high_s, r.rel_err, r.sync_error_s);
  return buf;
}

nlohmann::json json_row(const Row& r) {
  // NaN and infinity become null.
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  const Measurement& m = r.detail;
  return {{"op", r.op},
          {"impl", r.impl},
          {"procs", r.procs},
          {"bytes", r.bytes},
          {"runs_total", r.runs_total},
          {"runs_valid", r.runs_valid},
          {"runs_kept", r.runs_kept},
          {"mean_s", number(r.mean_s)},
          {"stderr_s", number(r.stderr_s)},
          {"min_s", number(r.min_s)},
          {"max_s", number(r.max_s)},
          {"ci_low_s", number(r.ci_low_s)},
          {"ci_high_s", number(r.ci_high_s)},
          {"rel_err", number(r.rel_err)},
          {"sync_error_s", number(r.sync_error_s)},
          {"rse", number(r.rse)},
          {"runs_late", m.runs_late},
          {"runs_overrun", m.runs_overrun},
          {"late_runs", m.late_runs},
          {"overrun_runs", m.overrun_runs},
          {"first_slot_s", number(m.first_slot_s)},
          {"slot_s", number(m.slot_s)},
          {"margin_s", number(m.margin_s)},
          {"drift_s", number(m.drift_s)},
          {"tsc_skew_start_s", number(m.tsc_skew_start_s)},
          {"tsc_skew_end_s", number(m.tsc_skew_end_s)}};
}

void print_table_header() {
  std::printf("%-9s %-6s %9s %5s %5s %5s %11s %10s %11s %11s %11s %11s %7s %9s %9s\n", "op", "impl",
              "bytes", "total", "valid", "kept", "mean_us", "stderr_us", "min_us", "max_us", "ci_low_us",
              "ci_high_us", "rel_err", "sync_us", "tsc_us");
}

void print_table_row(const Row& r) {
  const double tsc = std::fmax(r.detail.tsc_skew_start_s, r.detail.tsc_skew_end_s);
  std::printf("%-9s %-6s %9zu %5zu %5zu %5zu %11.3f %10.3f %11.3f %11.3f %11.3f %11.3f %7.4f %9.3f %9.3f\n",
              r.op.c_str(), r.impl.c_str(), r.bytes, r.runs_total, r.runs_valid, r.runs_kept, r.mean_s * 1e6,
              r.stderr_s * 1e6, r.min_s * 1e6, r.max_s * 1e6, r.ci_low_s * 1e6, r.ci_high_s * 1e6, r.rel_err,
              r.sync_error_s * 1e6, tsc * 1e6);
  std::fflush(stdout);
}

// Progress on stderr, only on a terminal and only once a measurement has
// lasted a second.
struct Progress {
  bool enabled = false;
  bool shown = false;
  std::string label;
  std::chrono::steady_clock::time_point start;
};

void show_progress(std::size_t total, std::size_t valid, std::size_t max_total, void* context) {
  auto* p = static_cast<Progress*>(context);
  if (!p->enabled || std::chrono::steady_clock::now() - p->start < std::chrono::seconds(1)) return;
  const int width = 30;
  const int filled = int(double(width) * double(total) / double(max_total));
  std::fprintf(stderr, "\r%s [%s%s] %zu/%zu runs, %zu valid ", p->label.c_str(),
               std::string(std::size_t(filled), '#').c_str(), std::string(std::size_t(width - filled), '.').c_str(),
               total, max_total, valid);
  p->shown = true;
}

bool rank_zero_before_init() {
  // mpiexec (hydra) tells each process its rank; print errors once.
  const char* rank = std::getenv("PMI_RANK");
  return rank == nullptr || std::string(rank) == "0";
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::string message;
  const int parsed = parse_options(argc, argv, &options, &message);
  if (parsed == 1) {
    if (rank_zero_before_init()) std::printf("%s", message.c_str());
    return 0;
  }
  if (parsed != 0) {
    if (rank_zero_before_init()) std::fprintf(stderr, "prof-bench: error: %s\n", message.c_str());
    return 2;
  }

  // Sleeps before a slot end within a microsecond, not the default 50 us slack.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  // Errors found after MPI_Init: every rank agrees, rank 0 says why.
  auto agree_or_exit = [&](bool ok, const std::string& why) {
    int all_ok = ok ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_ok) return;
    if (rank == 0) std::fprintf(stderr, "prof-bench: error: %s\n", why.c_str());
    MPI_Finalize();
    std::exit(2);
  };
  agree_or_exit(options.rotate_root || options.root < size,
                "--root '" + std::to_string(options.root) + "': expected a rank below " + std::to_string(size) +
                    " or 'rotate'");
  agree_or_exit(options.delay_rank < size && options.late_rank < size,
                "--inject-delay/--inject-late: rank beyond " + std::to_string(size - 1));
  for (std::size_t bytes : options.sizes)
    agree_or_exit(double(bytes) * size <= double(std::numeric_limits<int>::max()),
                  "--sizes: " + std::to_string(bytes) + " bytes x " + std::to_string(size) +
                      " ranks exceeds an MPI count");

  GlobalClock clock;
  std::string why;
  const bool timer_ok = clock.timer.init(options.timer, &why);
  agree_or_exit(timer_ok, "--timer '" + options.timer_name + "': " + (why.empty() ? "unusable on some rank" : why));
  clock.timer.ns_per_tick();  // the TSC's rate is measured once, before any sync
  clock.ranks_share_cores = ranks_outnumber_cores(MPI_COMM_WORLD);

  std::ofstream csv, json;
  bool files_ok = true;
  std::string file_error;
  if (rank == 0 && !options.csv.empty()) {
    csv.open(options.csv);
    if (!csv) files_ok = false, file_error = "--csv '" + options.csv + "': cannot write the file: " + std::strerror(errno);
  }
  if (rank == 0 && !options.json.empty() && files_ok) {
    json.open(options.json);
    if (!json) files_ok = false, file_error = "--json '" + options.json + "': cannot write the file: " + std::strerror(errno);
  }
  MPI_Bcast(&files_ok, 1, MPI_CXX_BOOL, 0, MPI_COMM_WORLD);
  agree_or_exit(files_ok, file_error);

  MPI_Comm bench_comm, control_comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &bench_comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &control_comm);

  // The synchronization as it stands before the first measurement.
  const SyncSample first = synchronize(&clock, control_comm, options.sync);
  double worst_rtt = first.rtt_ns;
  MPI_Allreduce(MPI_IN_PLACE, &worst_rtt, 1, MPI_DOUBLE, MPI_MAX, control_comm);
  const double skew = tsc_residual_skew_ns(clock, control_comm);
  if (rank == 0 && !options.quiet) {
    std::printf("prof-bench: %d ranks, timer %s, sync %s, root %s, confidence %g, rse < %g, runs %zu:%zu\n",
                size, options.timer_name.c_str(), options.sync_name.c_str(),
                options.rotate_root ? "rotate" : std::to_string(options.root).c_str(), options.confidence,
                options.rse, options.runs_min, options.runs_max);
    std::printf("clock offsets: error bound %.3f us (half the best round trip)", worst_rtt / 2e3);
    if (std::isnan(skew))
      std::printf("; no shared-TSC check (needs one node and an invariant TSC)\n");
    else
      std::printf("; residual skew against the shared TSC %.3f us\n", skew / 1e3);
    std::printf("per row: sync_us = bound on the offsets' error over the measurement (drift included), "
                "tsc_us = residual skew measured against the TSC\n");
    print_table_header();
  }

  ScheduleSettings settings;
  settings.stop = {options.runs_min, options.runs_max, options.rse};
  settings.confidence = options.confidence;
  settings.root = options.root;
  settings.rotate_root = options.rotate_root;
  settings.sync = options.sync;
  settings.delay_rank = options.delay_rank;
  settings.delay_s = options.delay_s;
  settings.late_rank = options.late_rank;
  settings.late_run = options.late_run;
  settings.late_s = options.late_s;
  Progress progress;
  progress.enabled = rank == 0 && isatty(STDERR_FILENO);
  settings.progress = show_progress;
  settings.progress_ctx = &progress;

  std::vector<Row> rows;
  if (rank == 0 && csv.is_open()) csv << kCsvHeader << "\n";
  for (Op op : options.ops) {
    const std::vector<std::size_t> sizes = op == Op::Barrier ? std::vector<std::size_t>{0} : options.sizes;
    const std::vector<std::string> impls =
        op == Op::Bcast ? options.bcast_impls : std::vector<std::string>{"native"};
    for (std::size_t bytes : sizes) {
      for (const std::string& impl : impls) {
        Collective collective(op, bytes, bench_comm, impl == "shm" ? BcastImpl::Shm : BcastImpl::Native);
        progress.label = std::string(op_name(op)) + " " + std::to_string(bytes) + " B";
        progress.start = std::chrono::steady_clock::now();
        progress.shown = false;
        Measurement m = measure(&clock, &collective, control_comm, settings);
        if (progress.shown) std::fprintf(stderr, "\r\033[K");
        if (rank != 0) continue;
        rows.push_back(make_row(op, impl, size, collective.bytes(), std::move(m), options.confidence));
        if (!options.quiet) print_table_row(rows.back());
        // The cap on all runs came first: the row stands on fewer valid runs
        // than asked for, which its figures alone do not show.
        if (const Row& row = rows.back(); row.runs_valid < options.runs_min)
          std::fprintf(stderr,
                       "prof-bench: warning: %s %s %zu B: %zu valid runs of %zu, fewer than --runs MIN (%zu); "
                       "the others started late or overran their slot (raise MAX, or quiet the machine)\n",
                       row.op.c_str(), row.impl.c_str(), row.bytes, row.runs_valid, row.runs_total,
                       options.runs_min);
        if (csv.is_open()) csv << csv_line(rows.back()) << "\n" << std::flush;
      }
    }
  }

  if (rank == 0 && json.is_open()) {
    nlohmann::json doc = {{"tool", "prof-bench"},
                          {"procs", size},
                          {"timer", options.timer_name},
                          {"sync", options.sync_name},
                          {"root", options.rotate_root ? std::string("rotate") : std::to_string(options.root)},
                          {"confidence", options.confidence},
                          {"rse_target", options.rse},
                          {"runs_min", options.runs_min},
                          {"runs_max", options.runs_max},
                          {"results", nlohmann::json::array()}};
    for (const Row& r : rows) doc["results"].push_back(json_row(r));
    json << doc.dump(2) << "\n";
  }
  // Each file closed (its last bytes written) and checked: a full disk shows
  // only here.
  std::string write_errors;
  for (auto [stream, option, path] : {std::tuple{&csv, "--csv", &options.csv}, std::tuple{&json, "--json", &options.json}}) {
    if (!stream->is_open()) continue;
    errno = 0;
    stream->close();
    if (!*stream)
      write_errors += std::string("prof-bench: error: ") + option + " '" + *path + "': writing the file failed" +
                      (errno ? std::string(": ") + std::strerror(errno) : std::string()) + "\n";
  }
  MPI_Comm_free(&bench_comm);
  MPI_Comm_free(&control_comm);
  MPI_Finalize();
  if (!write_errors.empty()) {
    std::fputs(write_errors.c_str(), stderr);
    return 1;
  }
  return 0;
}
