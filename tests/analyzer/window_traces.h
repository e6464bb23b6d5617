// Synthetic traces and helpers shared by the window tests (window_test.cpp,
// window_index_test.cpp).
#pragma once

#include <sstream>
#include <string>

#include "prof/analysis/report.h"
#include "trace_builder.h"

namespace prof::test {

// Two ranks; times from the trace's start (rank 0's MPI_Init enters at 0):
//   rank 0: MPI_Recv 2 .. 8.1 ms, its sender enters at 8 ms (waits 2 .. 8)
//           MPI_Allreduce 10 .. 15 ms, rank 1 enters at 13 ms (waits 10 .. 13)
//   interval 1 twice on both ranks: 1.5 .. 9 ms and 9.5 .. 16 ms
inline void build_known_waits_trace(TraceBuilder& b) {
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  for (int r = 0; r < 2; ++r) b.begin(r, 1500 * kUs, 1);
  b.recv(0, 2 * kMs, 8100 * kUs, 1, 4);
  b.send(1, 8 * kMs, 8200 * kUs, 0, 4);
  for (int r = 0; r < 2; ++r) b.end(r, 9 * kMs, 1);
  for (int r = 0; r < 2; ++r) b.begin(r, 9500 * kUs, 1);
  b.collective(0, Allreduce, 10 * kMs, 15 * kMs);
  b.collective(1, Allreduce, 13 * kMs, 15500 * kUs);  // rank 0 left 0.5 ms earlier
  for (int r = 0; r < 2; ++r) b.end(r, 16 * kMs, 1);
  for (int r = 0; r < 2; ++r) b.finalize(r, 20 * kMs, 21 * kMs);
  b.close();
}

// Analysis options for the window [from_s, to_s], seconds from the trace's start.
inline analysis::Options window_options(double from_s, double to_s) {
  analysis::Options o;
  o.window_from_s = from_s;
  o.window_to_s = to_s;
  return o;
}

// The text report with the per-function profile, as `prof-analyze --functions` prints it.
inline std::string text_with_functions(const analysis::Analysis& a) {
  std::ostringstream out;
  analysis::TextOptions o;
  o.functions = true;
  analysis::write_text_report(a, out, o);
  return out.str();
}

}  // namespace prof::test
