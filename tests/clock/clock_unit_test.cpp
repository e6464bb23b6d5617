// Unit tests of the clock maths and the timers. MPI is initialized (as a
// singleton, no mpiexec) only by the tests that use mpi_wtime: MPICH refuses
// MPI_Wtime before MPI_Init.
#include <gtest/gtest.h>
#include <mpi.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "prof/clock.h"

using prof::format::TimerKind;
using prof::clock::exchange_estimate;
using prof::clock::interpolate_offset;
using prof::clock::SyncScheme;
using prof::clock::Timer;

namespace {

constexpr TimerKind kAllKinds[] = {TimerKind::Tsc, TimerKind::Monotonic, TimerKind::Gettimeofday,
                                   TimerKind::MpiWtime};

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

void sleep_ns(long ns) {
  timespec ts{ns / 1000000000, ns % 1000000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void ensure_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
}

// Times a nanosleep of `ns` with `t` (in ns, by its rate) and with
// CLOCK_MONOTONIC around it.
struct Timed {
  double timer_ns;
  double mono_ns;
};
Timed time_sleep(const Timer& t, long ns) {
  const uint64_t m0 = mono_ns(), t0 = t.now();
  sleep_ns(ns);
  const uint64_t t1 = t.now(), m1 = mono_ns();
  return {double(t1 - t0) * t.ns_per_tick(), double(m1 - m0)};
}

// A timer reading and the CLOCK_MONOTONIC time it was taken at, within
// +-width/2: the tightest of several bracketed readings.
struct Pair {
  uint64_t ticks;
  double mono_ns, width_ns;
};
Pair read_pair(const Timer& t) {
  Pair best{0, 0, INFINITY};
  for (int i = 0; i < 32; ++i) {
    const uint64_t a = mono_ns(), ticks = t.now(), b = mono_ns();
    if (double(b - a) < best.width_ns) best = {ticks, (double(a) + double(b)) / 2, double(b - a)};
  }
  return best;
}

// The relative error of `t`'s rate over at least `span_ns` of CLOCK_MONOTONIC,
// and how much of it the reading brackets may explain.
struct RateCheck {
  double error, bracket;
};
RateCheck check_rate(const Timer& t, long span_ns) {
  const Pair a = read_pair(t);
  sleep_ns(span_ns);
  const Pair b = read_pair(t);
  const double mono = b.mono_ns - a.mono_ns;
  const double timer = double(b.ticks - a.ticks) * t.ns_per_tick();
  return {timer / mono - 1.0, (a.width_ns + b.width_ns) / 2 / mono};
}

// Timer::init, with MPI up first for mpi_wtime.
bool init_timer(Timer& t, TimerKind kind, std::string* why = nullptr) {
  if (kind == TimerKind::MpiWtime) ensure_mpi();
  return t.init(kind, why);
}

// Initializes `t` as `kind`, or skips the test where this machine cannot.
#define INIT_OR_SKIP(t, kind)                                                   \
  do {                                                                          \
    std::string why_;                                                           \
    if (!init_timer((t), (kind), &why_)) GTEST_SKIP() << "timer unusable: " << why_; \
  } while (0)

}  // namespace

TEST(ExchangeEstimate, SymmetricExchangeGivesExactOffset) {
  // Client sends at 100, reference reads 1050 halfway (client time 150): offset 900.
  const auto ex = exchange_estimate(100.0, 1050.0, 200.0);
  EXPECT_DOUBLE_EQ(ex.offset_ns, 900.0);
  EXPECT_DOUBLE_EQ(ex.rtt_ns, 100.0);
}

TEST(ExchangeEstimate, NegativeOffsetAndErrorBound) {
  // The reference is 5 ms behind; whatever the split of the round trip between
  // the two directions, the error stays within rtt / 2.
  const double true_offset = -5e6, send = 1e9, rtt = 800.0;
  for (double there : {0.0, 100.0, 400.0, 700.0, 800.0}) {
    const auto ex = exchange_estimate(send, send + there + true_offset, send + rtt);
    EXPECT_DOUBLE_EQ(ex.rtt_ns, rtt);
    EXPECT_LE(std::fabs(ex.offset_ns - true_offset), rtt / 2 + 1e-9) << there;
  }
  EXPECT_DOUBLE_EQ(exchange_estimate(send, send + 400.0 + true_offset, send + rtt).offset_ns, true_offset);
}

TEST(InterpolateOffset, LinearBetweenSyncs) {
  EXPECT_DOUBLE_EQ(interpolate_offset(0.0, 0.0, 10.0, 100.0, 30.0), 10.0);
  EXPECT_DOUBLE_EQ(interpolate_offset(100.0, 0.0, 10.0, 100.0, 30.0), 30.0);
  EXPECT_DOUBLE_EQ(interpolate_offset(25.0, 0.0, 10.0, 100.0, 30.0), 15.0);
  // Beyond the syncs the drift extrapolates linearly.
  EXPECT_DOUBLE_EQ(interpolate_offset(200.0, 0.0, 10.0, 100.0, 30.0), 50.0);
  EXPECT_DOUBLE_EQ(interpolate_offset(-100.0, 0.0, 10.0, 100.0, 30.0), -10.0);
}

TEST(InterpolateOffset, DegenerateIntervalKeepsInitOffset) {
  EXPECT_DOUBLE_EQ(interpolate_offset(5.0, 10.0, 7.0, 10.0, 9.0), 7.0);
  EXPECT_DOUBLE_EQ(interpolate_offset(5.0, 10.0, 7.0, 3.0, 9.0), 7.0);
}

TEST(TimerParse, KnownNames) {
  TimerKind k = TimerKind::Monotonic;
  EXPECT_TRUE(Timer::parse("tsc", &k));
  EXPECT_EQ(k, TimerKind::Tsc);
  EXPECT_TRUE(Timer::parse("monotonic", &k));
  EXPECT_EQ(k, TimerKind::Monotonic);
  EXPECT_TRUE(Timer::parse("gettimeofday", &k));
  EXPECT_EQ(k, TimerKind::Gettimeofday);
  EXPECT_TRUE(Timer::parse("mpi_wtime", &k));
  EXPECT_EQ(k, TimerKind::MpiWtime);
}

TEST(TimerParse, RejectsOthersAndLeavesOutputAlone) {
  TimerKind k = TimerKind::Gettimeofday;
  for (const char* bad : {"", "TSC", "rdtsc", "monotonic ", "wtime", "mpi-wtime", "clock"})
    EXPECT_FALSE(Timer::parse(bad, &k)) << bad;
  EXPECT_EQ(k, TimerKind::Gettimeofday);
}

TEST(SyncScheme, Parse) {
  SyncScheme s = SyncScheme::None;
  EXPECT_TRUE(prof::clock::parse_sync_scheme("linear", &s));
  EXPECT_EQ(s, SyncScheme::Linear);
  EXPECT_TRUE(prof::clock::parse_sync_scheme("ring", &s));
  EXPECT_EQ(s, SyncScheme::Ring);
  EXPECT_TRUE(prof::clock::parse_sync_scheme("none", &s));
  EXPECT_EQ(s, SyncScheme::None);
  for (const char* bad : {"", "Linear", "tree", "rings"})
    EXPECT_FALSE(prof::clock::parse_sync_scheme(bad, &s)) << bad;
  EXPECT_EQ(s, SyncScheme::None);
}

TEST(Timer, MpiWtimeRefusedBeforeMpiInit) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) GTEST_SKIP() << "MPI already initialized by an earlier test";
  Timer t;
  std::string why;
  EXPECT_FALSE(t.init(TimerKind::MpiWtime, &why));
  EXPECT_NE(why.find("MPI"), std::string::npos) << why;
}

TEST(Timer, InitSetsKindAndRate) {
  for (TimerKind kind : kAllKinds) {
    Timer t;
    std::string why;
    if (!init_timer(t, kind, &why)) {
      EXPECT_EQ(kind, TimerKind::Tsc) << "only the TSC may be unusable: " << why;
      EXPECT_FALSE(why.empty());
      continue;
    }
    EXPECT_EQ(t.kind(), kind);
    EXPECT_GT(t.ns_per_tick(), 0.0);
    EXPECT_EQ(t.initial_ns_per_tick(), t.ns_per_tick());
    if (kind != TimerKind::Tsc) {
      EXPECT_EQ(t.ns_per_tick(), 1.0);
    }
    EXPECT_GT(t.resolution_ns(), 0.0);
    // A fresh reading is just after the epoch.
    const double since_epoch = t.to_ns(t.now());
    EXPECT_GE(since_epoch, 0.0);
    EXPECT_LT(since_epoch, 1e9);
  }
}

TEST(Timer, GettimeofdayTicksAreWholeMicroseconds) {
  Timer t;
  INIT_OR_SKIP(t, TimerKind::Gettimeofday);
  EXPECT_EQ(t.resolution_ns(), 1000.0);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(t.now() % 1000, 0u);
}

TEST(Timer, TscRateMatchesMonotonic) {
  Timer t;
  INIT_OR_SKIP(t, TimerKind::Tsc);
  // The shim first asks for the rate after PMPI_Init: tens of ms after init().
  sleep_ns(20'000'000);
  // Plausible rate: a 0.1-10 GHz counter.
  EXPECT_GT(t.ns_per_tick(), 0.1);
  EXPECT_LT(t.ns_per_tick(), 10.0);
  // Over 50 ms of CLOCK_MONOTONIC, the TSC in ns by that rate agrees within 1%
  // (the rate is good to ~1e-6; 1% leaves room for any preemption between the
  // readings, and still catches a unit or wrong-span error).
  const RateCheck c = check_rate(t, 50'000'000);
  EXPECT_LE(std::fabs(c.error), 0.01 + c.bracket) << "bracket " << c.bracket;
  // A sleep is never shorter than asked, by the TSC too.
  const Timed x = time_sleep(t, 50'000'000);
  EXPECT_GE(x.timer_ns, 50'000'000 * 0.99);
}

TEST(Timer, TscFirstRateUseWaitsForTheMinimalSpan) {
  Timer t;
  const uint64_t before = mono_ns();
  INIT_OR_SKIP(t, TimerKind::Tsc);
  // Asked at once, the rate is measured over at least kMinRateSpanNs since init().
  EXPECT_GT(t.ns_per_tick(), 0.0);
  EXPECT_GE(mono_ns() - before, Timer::kMinRateSpanNs);
  EXPECT_EQ(t.initial_ns_per_tick(), t.ns_per_tick());
  EXPECT_EQ(t.resolution_ns(), t.ns_per_tick());
  // A rate from 1 ms is already good to 1%.
  const RateCheck c = check_rate(t, 50'000'000);
  EXPECT_LE(std::fabs(c.error), 0.01 + c.bracket) << "bracket " << c.bracket;
}

TEST(Timer, FinishCalibrationRefinesTheRateSlightly) {
  Timer t;
  INIT_OR_SKIP(t, TimerKind::Tsc);
  sleep_ns(5'000'000);
  const double before = t.ns_per_tick();
  sleep_ns(50'000'000);
  t.finish_calibration();
  EXPECT_EQ(t.initial_ns_per_tick(), before);
  // Two measurements over 5 ms and 55 ms from the same first pair: their
  // readings are brackets of ~1 us at worst, so they agree to 1e-3.
  EXPECT_NEAR(t.ns_per_tick() / before, 1.0, 1e-3);
  // The refined rate converts a fresh interval as well as the first one did.
  const RateCheck c = check_rate(t, 50'000'000);
  EXPECT_LE(std::fabs(c.error), 0.01 + c.bracket) << "bracket " << c.bracket;
}

TEST(Timer, FinishCalibrationLeavesFixedRateTimersAlone) {
  for (TimerKind kind : {TimerKind::Monotonic, TimerKind::Gettimeofday, TimerKind::MpiWtime}) {
    Timer t;
    ASSERT_TRUE(init_timer(t, kind));
    t.finish_calibration();
    EXPECT_EQ(t.ns_per_tick(), 1.0);
  }
}

TEST(Timer, NeverGoesBackwards) {
  for (TimerKind kind : kAllKinds) {
    Timer t;
    if (!init_timer(t, kind)) continue;
    uint64_t prev = t.now();
    int backwards = 0;
    for (int i = 0; i < 200000; ++i) {
      const uint64_t cur = t.now();
      backwards += cur < prev;
      prev = cur;
    }
    // gettimeofday and mpi_wtime follow CLOCK_REALTIME, which NTP may step;
    // none should here, during a fraction of a second.
    EXPECT_EQ(backwards, 0) << prof::format::timer_name(kind);
  }
}

TEST(Timer, MonotonicAdvancesWithRealTime) {
  Timer t;
  ASSERT_TRUE(t.init(TimerKind::Monotonic, nullptr));
  const uint64_t t0 = t.now();
  sleep_ns(5'000'000);
  EXPECT_GE(t.now() - t0, 5'000'000u);
}

TEST(Timer, TestShiftIsApplied) {
  for (TimerKind kind : kAllKinds) {
    for (int64_t shift : {int64_t{5'000'000}, int64_t{-3'000'000'000LL}}) {
      Timer t;
      if (!init_timer(t, kind)) continue;
      t.ns_per_tick();  // the TSC's rate first (its measurement may wait 1 ms)
      const uint64_t a = t.now();
      const double a_ns = t.to_ns(a);
      t.set_test_shift_ns(shift);
      const uint64_t b = t.now();
      // The jump between two consecutive readings is the shift, in ticks (plus
      // the few hundred ns between the readings).
      const double jump_ns = double(int64_t(b - a)) * t.ns_per_tick();
      const double slack = 200'000 + 2 * t.resolution_ns();
      EXPECT_GE(jump_ns, double(shift) - 2 * t.resolution_ns()) << prof::format::timer_name(kind);
      EXPECT_LE(jump_ns, double(shift) + slack) << prof::format::timer_name(kind);
      // to_ns() shows it too (the epoch is an unshifted reading).
      EXPECT_NEAR(t.to_ns(b) - a_ns, double(shift), slack) << prof::format::timer_name(kind);
      // Removing it restores the unshifted clock.
      t.set_test_shift_ns(0);
      const uint64_t c = t.now();
      EXPECT_GE(c, a);
      EXPECT_LT(double(c - a) * t.ns_per_tick(), slack);
    }
  }
}

TEST(Timer, ShiftSetBeforeInitStillShowsInToNs) {
  Timer ref, t;
  ASSERT_TRUE(ref.init(TimerKind::Monotonic, nullptr));
  t.set_test_shift_ns(-3'000'000'000LL);
  ASSERT_TRUE(t.init(TimerKind::Monotonic, nullptr));
  // Same raw clock, same epoch up to the microseconds between the two inits.
  const uint64_t r = ref.now(), s = t.now();
  EXPECT_NEAR(double(int64_t(s - r)), -3e9, 1e6);
  EXPECT_NEAR(t.to_ns(s) - ref.to_ns(r), -3e9, 1e6);
}

// The TSC's bare inline read serves only an unshifted TSC: a shift set
// before init still shows in its readings, and a timer re-initialized as
// another kind reads that kind.
TEST(Timer, TscShiftSetBeforeInitShowsInReadings) {
  Timer ref, t;
  INIT_OR_SKIP(ref, TimerKind::Tsc);
  t.set_test_shift_ns(-3'000'000'000LL);
  INIT_OR_SKIP(t, TimerKind::Tsc);
  const uint64_t r = ref.now(), s = t.now();
  EXPECT_NEAR(double(int64_t(s - r)) * t.ns_per_tick(), -3e9, 1e6);
}

TEST(Timer, ReinitFromTscReadsTheNewKind) {
  Timer t;
  INIT_OR_SKIP(t, TimerKind::Tsc);
  ASSERT_TRUE(t.init(TimerKind::Monotonic, nullptr));
  const uint64_t a = mono_ns(), ticks = t.now(), b = mono_ns();
  EXPECT_GE(ticks, a);
  EXPECT_LE(ticks, b);
}

TEST(Timer, UnusableKindLeavesTimerUnchanged) {
  Timer t;
  ASSERT_TRUE(t.init(TimerKind::Gettimeofday, nullptr));
  std::string why;
  EXPECT_FALSE(t.init(static_cast<TimerKind>(99), &why));
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(t.kind(), TimerKind::Gettimeofday);
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
  return rc;
}
