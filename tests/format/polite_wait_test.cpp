// prof::wait_politely (prof/polite_wait.h), every wait of the project's own
// on another process: it returns at the first test that finds the wait over,
// whether spinning or yielding, and past its yields sleeps between tests,
// the naps doubling, so a long wait tests (and takes the core) at most once
// a nap.
#include "prof/polite_wait.h"

#include <gtest/gtest.h>

#include <chrono>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(PoliteWait, ReturnsAtTheFirstTestThatFindsTheWaitOver) {
  int tests = 0;
  prof::wait_politely([&] { return ++tests == 50; }, prof::PoliteWait{100, 1s, 1ms, 1ms});
  EXPECT_EQ(tests, 50);  // within the spins
  tests = 0;
  prof::wait_politely([&] { return ++tests == 500; }, prof::PoliteWait{100, 1s, 1ms, 1ms});
  EXPECT_EQ(tests, 500);  // within the yields
  tests = 0;
  prof::wait_politely([&] { return ++tests == 500; }, prof::PoliteWait{10, std::chrono::nanoseconds::max(), {}, {}});
  EXPECT_EQ(tests, 500);  // a wait that never sleeps
}

// How many times a wait of `span` with `how` tests before it ends.
int tests_over(std::chrono::milliseconds span, const prof::PoliteWait& how) {
  int tests = 0;
  const auto end = Clock::now() + span;
  prof::wait_politely(
      [&] {
        ++tests;
        return Clock::now() >= end;
      },
      how);
  EXPECT_GE(Clock::now(), end);
  return tests;
}

// Past the yields every test but the first follows a sleep of at least
// `first_nap` (nanosleep never returns early without a signal): a wait of
// 30 ms with naps of 1 ms tests at most 31 times; yielding or spinning it
// would test thousands of times.
TEST(PoliteWait, SleepsBetweenTestsPastItsYields) {
  const int tests = tests_over(30ms, prof::PoliteWait{0, 0ns, 1ms, 1ms});
  EXPECT_LE(tests, 31);
  EXPECT_GE(tests, 2);
}

// The naps double from the first to the longest: over 60 ms, naps of 1, 2,
// 4, then 8 ms at most test at most 11 times (1+2+4+8·7 > 60).
TEST(PoliteWait, NapsGrowToTheLongest) {
  EXPECT_LE(tests_over(60ms, prof::PoliteWait{0, 0ns, 1ms, 8ms}), 11);
}

}  // namespace
