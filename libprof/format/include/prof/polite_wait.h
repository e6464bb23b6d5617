// Waiting for another process without taking its core: MPICH's blocking
// calls poll and never yield, so where processes outnumber cores (or share
// them with other work) a process spinning on a wait takes the time slices
// of the one it waits for (a thread spinning on another thread, alike).
// Every wait of the project's own on another process or worker thread goes
// through wait_politely, each with the policy its caller's
// waits call for (declared where it is used, with its reasons):
//   - the shim's own collectives and the clock sync (prof::clock::polite_wait);
//   - the shared-memory broadcast's flags (libprof/bcast);
//   - prof-bench's own requests between its stages (global_clock.cpp);
//   - the exchanges of prof-analyze as an MPI job (mpi_exchange.cpp);
//   - and, within one process, an analysis worker waiting for the others'
//     first step of a phase (Engine::take_early_results).
// (The engine's phase barrier spins, yields, then sleeps on its own atomic
// counter (std::atomic::wait, a futex), which a wait on any `done` test
// cannot: analyzer/src/phase_barrier.h.)
#pragma once

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>

namespace prof {

// Algorithm: `done` tested `spins` times back to back (a pause between: an
// answer from a peer on another core comes within microseconds), then with
// a sched_yield between tests for `yield_for` (on an idle core a yield
// returns at once, so the wait ends about when a spinning one would; on a
// shared core the peer runs), then with a sleep between tests, from
// `first_nap` doubling up to `longest_nap` (a sleep overshoots by a time
// slice's share on a busy machine: only for waits long enough to afford it).
struct PoliteWait {
  int spins;
  std::chrono::nanoseconds yield_for;  // nanoseconds::max(): never sleeps
  std::chrono::nanoseconds first_nap, longest_nap;
};

// `between_yields` runs after each yield (the broadcast moves MPI's messages
// there); the plain form runs nothing.
template <class Done, class BetweenYields>
void wait_politely(Done&& done, const PoliteWait& how, BetweenYields&& between_yields) {
  for (int i = 0; i < how.spins; ++i) {
    if (done()) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  // (A wait that never sleeps reads no clock: the broadcast's flags are
  // waited for inside the application's MPI_Bcast.)
  if (how.yield_for == std::chrono::nanoseconds::max()) {
    while (!done()) {
      sched_yield();
      between_yields();
    }
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  auto nap = how.first_nap;
  while (!done()) {
    if (std::chrono::steady_clock::now() - start < how.yield_for) {
      sched_yield();
      between_yields();
      continue;
    }
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(nap);
    const timespec ts{static_cast<time_t>(seconds.count()), static_cast<long>((nap - seconds).count())};
    nanosleep(&ts, nullptr);
    nap = std::min(2 * nap, how.longest_nap);
  }
}

template <class Done>
void wait_politely(Done&& done, const PoliteWait& how) {
  wait_politely(done, how, [] {});
}

}  // namespace prof
