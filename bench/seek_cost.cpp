// Seek by time against decoding from the start (docs/performance.md): on a
// trace directory (prof-gen-trace), for each rank, the time to open it, to
// seek its merged cursor to the middle of its run and read 1000 events there,
// to seek again a tenth of the run later, and to decode every event from the
// start up to the middle.
// Usage: seek_cost TRACE_DIR [REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "prof/trace_reader.h"

using namespace prof::trace;
using Clock = std::chrono::steady_clock;

static double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TRACE_DIR [REPEATS]\n", argv[0]);
    return 2;
  }
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::vector<double> open_ms, seek_ms, again_ms, scan_ms;
  uint64_t scanned = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    auto t0 = Clock::now();
    TraceDir dir = TraceDir::open(argv[1]);
    if (!dir.errors.empty() || dir.ranks.empty()) {
      std::fprintf(stderr, "cannot read %s\n", argv[1]);
      return 1;
    }
    open_ms.push_back(ms_since(t0));
    double seek = 0, again = 0, scan = 0;
    scanned = 0;
    for (const auto& rank : dir.ranks) {
      // The middle of the rank's run: between its first and last chunk's times.
      const size_t n = rank->chunk_count(0);
      if (n == 0) continue;
      const uint64_t first = rank->chunk(0, 0).first_enter;
      const uint64_t last = rank->chunk(0, n - 1).last_leave;
      const uint64_t middle = first + (last - first) / 2;
      t0 = Clock::now();
      auto from = rank->events_from(middle);
      Event e;
      for (int i = 0; i < 1000 && from.next(e); ++i) {
      }
      seek += ms_since(t0);
      // A second seek, a tenth of the run later: the chunks' times read by the
      // first are kept.
      t0 = Clock::now();
      auto later = rank->events_from(middle + (last - first) / 10);
      for (int i = 0; i < 1000 && later.next(e); ++i) {
      }
      again += ms_since(t0);
      t0 = Clock::now();
      auto all = rank->events();
      while (all.next(e) && e.leave < middle) ++scanned;
      scan += ms_since(t0);
    }
    seek_ms.push_back(seek);
    again_ms.push_back(again);
    scan_ms.push_back(scan);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("open %.2f ms, seek to the middle + 1000 events %.2f ms, a second seek %.2f ms, "
              "decode from the start to the middle %.1f ms (%llu events), medians of %d, all ranks\n",
              median(open_ms), median(seek_ms), median(again_ms), median(scan_ms),
              static_cast<unsigned long long>(scanned), repeats);
  return 0;
}
