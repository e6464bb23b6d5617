// Global time and waits for prof-bench (see global_clock.h).
#include "global_clock.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "prof/polite_wait.h"

namespace prof::bench {

namespace {

void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

void sleep_ns(double ns) {
  timespec ts{static_cast<time_t>(ns / 1e9), static_cast<long>(std::fmod(ns, 1e9))};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0) {
  }
}

}  // namespace

SyncSample synchronize(GlobalClock* clock, MPI_Comm comm, prof::clock::SyncScheme scheme) {
  const prof::clock::SyncResult result = prof::clock::synchronize_clocks(clock->timer, comm, scheme);
  clock->offset_ns = result.offset_ns;
  return {result.offset_ns, result.rtt_ns};
}

void polite_wait(MPI_Request* request) {
  // Sleeps stay short: a rank waiting for the next stage's start must wake
  // well within the first slot's margin.
  constexpr prof::PoliteWait kStageWait{64, std::chrono::milliseconds(2), std::chrono::microseconds(50),
                                        std::chrono::microseconds(50)};
  prof::wait_politely(
      [&] {
        int done = 0;
        MPI_Test(request, &done, MPI_STATUS_IGNORE);
        return done != 0;
      },
      kStageWait);
}

double wait_until(const GlobalClock& clock, double target_ns) {
  double now = clock.now_ns();
  for (;;) {
    const double remaining = target_ns - now;
    if (remaining <= 0) return -remaining;
    if (remaining > kWakeAheadNs + 100'000) sleep_ns(remaining - kWakeAheadNs);
    else if (clock.ranks_share_cores && remaining > 2'000) sched_yield();
    else cpu_relax();
    now = clock.now_ns();
  }
}

bool single_node(MPI_Comm comm) {
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0, size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_size(comm, &size);
  MPI_Comm_free(&node);
  int all = node_size == size ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

bool ranks_outnumber_cores(MPI_Comm comm) {
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int usable = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  int crowded = node_size > usable ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &crowded, 1, MPI_INT, MPI_MAX, comm);
  return crowded == 1;
}

double tsc_residual_skew_ns(const GlobalClock& clock, MPI_Comm comm) {
#if defined(__x86_64__)
  // The TSC's rate, for the extrapolation only (over microseconds).
  static prof::clock::Timer tsc;
  static int usable = -1;
  if (usable < 0) {
    std::string why;
    int ok = tsc.init(format::TimerKind::Tsc, &why) && single_node(comm) ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    usable = ok;
    if (usable) tsc.ns_per_tick();  // measure the rate now, not inside the readings
  }
  if (!usable) return std::numeric_limits<double>::quiet_NaN();
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  polite_wait(&request);
  // The tightest of a few (TSC, global) readings.
  double reading[2] = {0, 0};
  uint64_t best = ~uint64_t{0};
  for (int i = 0; i < 8; ++i) {
    const uint64_t before = __rdtsc();
    const double global = clock.now_ns();
    const uint64_t after = __rdtsc();
    if (after >= before && after - before < best) {
      best = after - before;
      reading[0] = double(before + (after - before) / 2);
      reading[1] = global;
    }
  }
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<double> all(2 * size_t(size));
  MPI_Allgather(reading, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, comm);
  const double ns_per_tick = tsc.ns_per_tick();
  double worst = 0;
  for (int r = 1; r < size; ++r) {
    const double at_rank0_tsc = all[2 * r + 1] + (all[0] - all[2 * r]) * ns_per_tick;
    worst = std::max(worst, std::fabs(at_rank0_tsc - all[1]));
  }
  return worst;
#else
  (void)clock;
  (void)comm;
  return std::numeric_limits<double>::quiet_NaN();
#endif
}

}  // namespace prof::bench
