// prof-bench's command line (see options.h).
#include "options.h"

#include <algorithm>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "prof/safe_file.h"
#include "prof/settings.h"

namespace prof::bench {

namespace {

struct BadOption {
  std::string text;
};

[[noreturn]] void fail(const std::string& option, const std::string& value, const std::string& expected) {
  throw BadOption{option + " '" + value + "': expected " + expected};
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.push_back("");
  return parts;
}

bool to_unsigned(const std::string& text, unsigned long long* out) {
  if (text.empty() || text[0] == '-' || text[0] == '+') return false;
  errno = 0;
  char* end = nullptr;
  *out = std::strtoull(text.c_str(), &end, 10);
  return errno == 0 && end && *end == '\0';
}

bool to_double(const std::string& text, double* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return errno == 0 && end && *end == '\0' && std::isfinite(*out);
}

// "RANK:SECONDS" with a rank >= 0 and 0 <= seconds <= 10.
void parse_rank_seconds(const std::string& option, const std::string& text, int* rank, double* seconds) {
  const auto parts = split(text, ':');
  unsigned long long r = 0;
  double s = 0;
  if (parts.size() != 2 || !to_unsigned(parts[0], &r) || r > 1u << 20 || !to_double(parts[1], &s) ||
      s < 0 || s > 10)
    fail(option, text, "RANK:SECONDS (seconds from 0 to 10)");
  *rank = int(r);
  *seconds = s;
}

}  // namespace

int parse_options(int argc, char** argv, Options* out, std::string* message) {
  CLI::App app{
      "prof-bench: collective timings by the MPIPerf method. Clocks are synchronized, every run\n"
      "starts at a common slot of global time, a run's time is the maximum over ranks of its end\n"
      "minus the slot's start, and runs that start late or overrun their slot are discarded.\n"
      "Run it under mpiexec: mpiexec -n P prof-bench [OPTIONS]",
      "prof-bench"};
  std::vector<std::string> ops;
  std::string sizes = "8,1024,65536,1048576", root = "0", confidence = "0.95", rse = "0.05",
              runs = "10:200", bcast = "native", timer = "monotonic", sync = "linear";
  std::string delay, late;
  app.add_option("--op", ops,
                 "operation to measure, repeatable: bcast, allreduce, reduce, gather, alltoall, barrier "
                 "(default: all)")->type_name("NAME");
  app.add_option("--sizes", sizes, "message sizes in bytes, comma-separated (barrier ignores them)")
      ->capture_default_str()->type_name("LIST");
  app.add_option("--root", root, "root rank of bcast, reduce and gather, or 'rotate'")->capture_default_str()->type_name("N|rotate");
  app.add_option("--confidence", confidence, "confidence of the interval: 0.9, 0.95 or 0.99")
      ->capture_default_str()->type_name("P");
  app.add_option("--rse", rse, "stop once the relative standard error is below this")->capture_default_str()->type_name("X");
  app.add_option("--runs", runs, "MIN:MAX: at least MIN valid runs, at most MAX runs in all")
      ->capture_default_str()->type_name("MIN:MAX");
  app.add_option("--csv", out->csv, "write the results as CSV to FILE")->type_name("FILE");
  app.add_option("--json", out->json, "write the results as JSON to FILE")->type_name("FILE");
  auto* bcast_option = app.add_option("--bcast", bcast,
                     "broadcast implementations to measure: native (MPICH's MPI_Bcast), shm (the shim's "
                     "shared-memory one, PROF_BCAST_* parameters), or native,shm; PROF_BCAST=shm means native,shm")
      ->capture_default_str()->type_name("LIST");
  app.add_option("--timer", timer, "clock: monotonic or tsc")->capture_default_str()->type_name("NAME");
  app.add_option("--sync", sync, "clock synchronization: hierarchical, linear or ring")->capture_default_str()->type_name("NAME");
  app.add_flag("--quiet", out->quiet, "no table on the terminal");
  // Test hooks: known delays that the method must see (or discard).
  app.add_option("--inject-delay", delay)->group("");
  app.add_option("--inject-late", late)->group("");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    *message = app.help();
    return 1;
  } catch (const CLI::ParseError& e) {
    *message = e.what();
    return 2;
  }

  const std::size_t bcast_given = bcast_option->count();
  try {
    // An empty FILE (an unset variable in a script) is a mistake, not the
    // option left out; two outputs in one file would keep only the later.
    for (const char* option : {"--csv", "--json"})
      if (app.count(option) > 0 && app[option]->as<std::string>().empty()) fail(option, "", "a file name");
    if (!out->csv.empty() && !out->json.empty() && prof::trace::same_output_file(out->csv, out->json))
      fail("--json", out->json, "another file than --csv's");
    out->ops.clear();
    if (ops.empty()) ops = {"bcast", "allreduce", "reduce", "gather", "alltoall", "barrier"};
    for (const auto& name : ops) {
      Op op;
      if (!parse_op(name, &op)) fail("--op", name, "bcast, allreduce, reduce, gather, alltoall or barrier");
      // (One row per op, implementation and size: an op or size given twice is measured once.)
      if (std::find(out->ops.begin(), out->ops.end(), op) == out->ops.end()) out->ops.push_back(op);
    }

    out->sizes.clear();
    for (const auto& part : split(sizes, ',')) {
      unsigned long long bytes = 0;
      // Counts are ints in MPI; alltoall and gather also need bytes x ranks.
      if (!to_unsigned(part, &bytes) || bytes > (1ull << 28))
        fail("--sizes", sizes, "a comma-separated list of byte counts from 0 to 268435456");
      if (std::find(out->sizes.begin(), out->sizes.end(), std::size_t(bytes)) == out->sizes.end())
        out->sizes.push_back(std::size_t(bytes));
    }
    if (out->sizes.empty()) fail("--sizes", sizes, "at least one size");

    if (root == "rotate") {
      out->rotate_root = true;
    } else {
      unsigned long long r = 0;
      if (!to_unsigned(root, &r) || r > 1u << 20) fail("--root", root, "a rank number or 'rotate'");
      out->root = int(r);
    }

    if (confidence == "0.9") out->confidence = 0.9;
    else if (confidence == "0.95") out->confidence = 0.95;
    else if (confidence == "0.99") out->confidence = 0.99;
    else fail("--confidence", confidence, "0.9, 0.95 or 0.99");

    if (!to_double(rse, &out->rse) || out->rse <= 0 || out->rse >= 1)
      fail("--rse", rse, "a number between 0 and 1");

    const auto bounds = split(runs, ':');
    unsigned long long lo = 0, hi = 0;
    if (bounds.size() != 2 || !to_unsigned(bounds[0], &lo) || !to_unsigned(bounds[1], &hi) || lo < 2 ||
        hi < lo || hi > 1000000)
      fail("--runs", runs, "MIN:MAX with 2 <= MIN <= MAX <= 1000000");
    out->runs_min = lo;
    out->runs_max = hi;

    out->bcast_impls.clear();
    for (const auto& impl : split(bcast, ',')) {
      if (impl != "native" && impl != "shm") fail("--bcast", bcast, "a comma-separated list of: native, shm");
      if (std::find(out->bcast_impls.begin(), out->bcast_impls.end(), impl) == out->bcast_impls.end())
        out->bcast_impls.push_back(impl);
    }
    if (out->bcast_impls.empty()) fail("--bcast", bcast, "native, shm or native,shm");
    // PROF_BCAST=shm: the shim's broadcast beside MPICH's; its parameters from
    // PROF_BCAST_FRAGMENT, _SLOTS, _SETS, _TREE, read by the shim's parser.
    std::vector<std::string> errors;
    prof::settings::Config settings;
    const bool settings_ok = prof::settings::read_config(
        &settings, &errors, [](const prof::settings::ConfigVariable& v) { return v.read_by_prof_bench; });
    out->bcast_settings = settings.bcast;
    if (!settings_ok) {
      std::string text;
      for (const auto& e : errors) text += (text.empty() ? "" : "; ") + e;
      throw BadOption{text};
    }
    if (out->bcast_settings.impl == prof::bcast::Impl::Shm && bcast_given == 0) out->bcast_impls = {"native", "shm"};

    if (timer == "monotonic") out->timer = prof::format::TimerKind::Monotonic;
    else if (timer == "tsc") out->timer = prof::format::TimerKind::Tsc;
    else fail("--timer", timer, "monotonic or tsc");
    out->timer_name = timer;
    if (sync == "hierarchical") out->sync = prof::clock::SyncScheme::Hierarchical;
    else if (sync == "linear") out->sync = prof::clock::SyncScheme::Linear;
    else if (sync == "ring") out->sync = prof::clock::SyncScheme::Ring;
    else fail("--sync", sync, "hierarchical, linear or ring");
    out->sync_name = sync;

    if (!delay.empty()) parse_rank_seconds("--inject-delay", delay, &out->delay_rank, &out->delay_s);
    if (!late.empty()) {
      const auto parts = split(late, ':');
      unsigned long long run = 0;
      if (parts.size() != 3 || !to_unsigned(parts[1], &run))
        fail("--inject-late", late, "RANK:RUN:SECONDS");
      parse_rank_seconds("--inject-late", parts[0] + ":" + parts[2], &out->late_rank, &out->late_s);
      out->late_run = long(run);
    }
  } catch (const BadOption& bad) {
    *message = bad.text;
    return 2;
  }
  return 0;
}

}  // namespace prof::bench
