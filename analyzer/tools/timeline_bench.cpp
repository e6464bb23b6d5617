// prof-timeline-bench: builds a trace's timeline and times what a viewer asks
// of it (bench/run_timeline.sh; docs/performance.md, "Timeline layer"): the
// build, a full-range query at 2,000 buckets, and 1 ms queries spread over
// the run; peak RSS.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>
#include <thread>
#include <vector>

#include "prof/analysis/timeline.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"prof-timeline-bench: timeline build and query times"};
  std::string dir;
  unsigned threads = 0;
  int repeats = 50;
  uint32_t buckets = 2000;
  uint64_t memory_mb = prof::analysis::TimelineOptions{}.memory_bytes >> 20;
  app.add_option("TRACE_DIR", dir, "trace directory")->required();
  app.add_option("-j,--threads", threads, "build threads (0: one per core)");
  app.add_option("--repeats", repeats, "queries of each kind");
  app.add_option("--buckets", buckets, "buckets per query");
  app.add_option("--memory-mb", memory_mb, "call records kept in memory (MiB)");
  bool print_waits = false;
  app.add_flag("--print-waits", print_waits,
               "print every bucket's wait of summaries of the whole run and of 20 1-ms ranges at 7 to 30,000 buckets (hex floats: two builds compared bit for bit)");
  CLI11_PARSE(app, argc, argv);

  prof::analysis::TimelineOptions options;
  options.threads = threads;
  options.memory_bytes = memory_mb << 20;
  std::string error;
  const auto t_open = Clock::now();
  auto timeline = prof::analysis::Timeline::open(dir, &error, options);
  if (!timeline) {
    std::fprintf(stderr, "prof-timeline-bench: %s\n", error.c_str());
    return 2;
  }
  // Built on a thread of its own while this one notes when every rank has
  // passed (the calls and the pyramid final, pairing still to come).
  std::atomic<bool> built{false};
  std::thread builder([&] {
    timeline->build();
    built = true;
  });
  double calls_ms = -1;
  while (!built) {
    if (calls_ms < 0 && timeline->calls_complete()) calls_ms = ms_since(t_open);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  builder.join();
  const double build_ms = ms_since(t_open);
  struct rusage built_usage {};
  getrusage(RUSAGE_SELF, &built_usage);
  if (calls_ms < 0) calls_ms = build_ms;
  const double end = timeline->end();

  if (print_waits)
    for (const uint32_t n : {7u, 300u, 2000u, 30000u}) {
      prof::analysis::TimelineQuery q;
      q.from = 0;
      q.to = end;
      q.buckets = n;
      q.max_events = 1;  // summaries
      for (const auto& r : timeline->query(q).rows)
        for (size_t i = 0; i < r.buckets.size(); ++i) std::printf("%u %zu %zu %a\n", n, r.row, i, r.buckets[i].wait);
      // 1 ms ranges: buckets narrower than the leaves, from the calls.
      for (int k = 0; k < 20; ++k) {
        q.from = (end - 1e6) * (k + 0.5) / 20;
        q.to = q.from + 1e6;
        for (const auto& r : timeline->query(q).rows)
          for (size_t i = 0; i < r.buckets.size(); ++i) std::printf("%u %zu %zu %a\n", n, r.row, i, r.buckets[i].wait);
      }
    }
  std::vector<double> full, narrow;
  size_t full_buckets = 0, narrow_calls = 0, narrow_rows_listed = 0;
  for (int i = 0; i < repeats; ++i) {
    prof::analysis::TimelineQuery q;
    q.from = 0;
    q.to = end;
    q.buckets = buckets;
    auto t = Clock::now();
    auto a = timeline->query(q);
    full.push_back(ms_since(t));
    full_buckets = 0;
    for (const auto& r : a.rows) full_buckets += r.summarized ? r.buckets.size() : r.calls.size();
  }
  for (int i = 0; i < repeats; ++i) {
    // 1 ms ranges spread over the run.
    prof::analysis::TimelineQuery q;
    q.from = (end - 1e6) * (i + 0.5) / repeats;
    q.to = q.from + 1e6;
    q.buckets = buckets;
    auto t = Clock::now();
    auto a = timeline->query(q);
    narrow.push_back(ms_since(t));
    for (const auto& r : a.rows)
      if (!r.summarized) {
        narrow_calls += r.calls.size();
        ++narrow_rows_listed;
      }
  }
  // The communication matrix of the whole run (every message read once).
  auto matrix_start = Clock::now();
  const auto matrix = timeline->message_matrix(0, std::numeric_limits<double>::infinity());
  const double matrix_ms = ms_since(matrix_start);
  uint64_t matrix_messages = 0;
  for (const auto& c : matrix.cells) matrix_messages += c.messages;
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("events %llu rows %zu span %.3f s\n", static_cast<unsigned long long>(timeline->events()),
              timeline->rows().size(), end * 1e-9);
  std::printf("build %.0f ms (open + build + pairing); calls and pyramid final at %.0f ms\n", build_ms, calls_ms);
  std::printf("full-range query, %u buckets: median %.3f ms, max %.3f ms (%zu buckets or calls)\n",
              buckets, median(full), *std::max_element(full.begin(), full.end()), full_buckets);
  std::printf("1 ms query: median %.3f ms, max %.3f ms (%.0f calls per query, %zu of %zu rows listed)\n",
              median(narrow), *std::max_element(narrow.begin(), narrow.end()),
              static_cast<double>(narrow_calls) / repeats, narrow_rows_listed,
              timeline->rows().size() * static_cast<size_t>(repeats));
  std::printf("message matrix, whole run: %.3f ms (%llu messages, %zu pairs)\n", matrix_ms,
              static_cast<unsigned long long>(matrix_messages), matrix.cells.size());
  std::printf("timeline memory %.1f MB, peak RSS %.1f MB (%.1f MB when built), waits step %.2f MB a thread\n",
              timeline->memory_bytes() / 1e6, usage.ru_maxrss / 1024.0, built_usage.ru_maxrss / 1024.0,
              timeline->memory().waits_step_peak / 1e6);
  // Bytes per event of each part (records: packed, in memory and spilled).
  const auto m = timeline->memory();
  const double events = std::max<double>(1, static_cast<double>(timeline->events()));
  std::printf("bytes per event: records %.2f (%.1f MB in memory, %.1f MB spilled), pyramid %.2f, "
              "executions %.2f, messages %.2f, collectives %.2f\n",
              static_cast<double>(m.records + m.records_spilled) / events, m.records / 1e6, m.records_spilled / 1e6,
              m.pyramid / events, m.executions / events, m.messages / events, m.collectives / events);
  return 0;
}
