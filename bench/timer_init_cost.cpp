// What the profiler's timer costs at start-up: Timer::init for each timer kind,
// then the first use of its rate as the shim makes it (after PMPI_Init, here
// after a 30 ms pause), timed with CLOCK_MONOTONIC. Prints the median and the
// range over RUNS (default 21) per kind, in ms (docs/performance.md).
//   bench/timer_init_cost [RUNS]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "prof/clock.h"

namespace {

double mono_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

void pause_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 21;
  using prof::format::TimerKind;
  // mpi_wtime needs MPI_Init and has no start-up work of its own: left out.
  for (TimerKind kind : {TimerKind::Tsc, TimerKind::Monotonic, TimerKind::Gettimeofday}) {
    std::vector<double> init_ms, first_use_ms;
    std::string why;
    for (int i = 0; i < runs; ++i) {
      prof::clock::Timer timer;
      const double t0 = mono_ms();
      if (!timer.init(kind, &why)) break;
      const double t1 = mono_ms();
      pause_ms(30);
      const double t2 = mono_ms();
      const double rate = timer.ns_per_tick();
      const double t3 = mono_ms();
      if (!(rate > 0)) std::abort();
      init_ms.push_back(t1 - t0);
      first_use_ms.push_back(t3 - t2);
    }
    if (init_ms.empty()) {
      std::printf("%-13s unusable here: %s\n", std::string(prof::format::timer_name(kind)).c_str(), why.c_str());
      continue;
    }
    std::printf("%-13s init %.3f ms (%.3f-%.3f), first rate use %.4f ms (%.4f-%.4f), %d runs\n",
                std::string(prof::format::timer_name(kind)).c_str(), median(init_ms),
                *std::min_element(init_ms.begin(), init_ms.end()),
                *std::max_element(init_ms.begin(), init_ms.end()), median(first_use_ms),
                *std::min_element(first_use_ms.begin(), first_use_ms.end()),
                *std::max_element(first_use_ms.begin(), first_use_ms.end()), int(init_ms.size()));
  }
  return 0;
}
