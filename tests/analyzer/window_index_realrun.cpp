// A window served by the window index gives the report of the same window
// decoded from the trace's start, on a trace the profiler recorded (a real
// halo exchange, analyzer.realrun_halo): windows of several widths spread over
// the whole run, every text report compared. The synthetic traces of
// window_index_test.cpp cannot stand for everything the shim writes
// (definitions during the run, continuation records, chunk sizes).
// Usage: window_index_realrun TRACE_DIR
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "prof/analysis/analysis.h"
#include "prof/analysis/report.h"
#include "prof/trace_reader.h"

using namespace prof;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: window_index_realrun TRACE_DIR\n");
    return 2;
  }
  std::filesystem::remove(std::filesystem::path(argv[1]) / "window-index.bin");
  const trace::TraceDir dir = trace::TraceDir::open(argv[1]);
  const analysis::Analysis whole = analysis::analyze(dir);
  double end_s = 0;
  for (const analysis::RankEnd& e : whole.run_end) end_s = std::max(end_s, e.last_alive);
  if (end_s <= 0 || whole.stats.mpi_calls == 0) {
    std::fprintf(stderr, "FAIL: %s: no run to cut into windows\n", argv[1]);
    return 1;
  }
  int differ = 0, partial = 0;
  constexpr int kWindows = 12;
  for (int k = 0; k < kWindows; ++k) {
    analysis::Options served;
    served.window_from_s = end_s * k / kWindows;
    served.window_to_s = served.window_from_s + end_s * (k % 3 + 1) / 40.0;
    analysis::Options decoded = served;
    decoded.use_window_index = false;
    const analysis::Analysis a = analysis::analyze(dir, served);
    const analysis::Analysis b = analysis::analyze(dir, decoded);
    std::ostringstream text_a, text_b;
    analysis::write_text_report(a, text_a);
    analysis::write_text_report(b, text_b);
    const bool same = text_a.str() == text_b.str();
    std::printf("window %.6f:%.6f: %llu of %llu chunks decoded (index %s): %s\n", served.window_from_s,
                served.window_to_s, static_cast<unsigned long long>(a.stats.chunks_decoded),
                static_cast<unsigned long long>(a.stats.chunks_total), a.stats.window_index.c_str(),
                same ? "same report" : "REPORTS DIFFER");
    if (!same) {
      ++differ;
      std::printf("--- served by the index:\n%s--- decoded from the start:\n%s", text_a.str().c_str(),
                  text_b.str().c_str());
    }
    if (a.stats.chunks_decoded < a.stats.chunks_total) ++partial;
  }
  if (partial == 0) {
    std::printf("FAIL: no window decoded fewer chunks than the whole trace (the index was not used)\n");
    return 1;
  }
  if (differ) std::printf("FAIL: %d of %d windows differ\n", differ, kWindows);
  return differ ? 1 : 0;
}
