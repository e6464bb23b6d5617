// The schedule's verdict on a stage: a rank that starts a run late gets that
// run discarded and counted, an overrun likewise, and the slot grows only when
// more than a quarter of the stage's runs were invalid.
#include <gtest/gtest.h>

#include <vector>

#include "stage.h"

using prof::bench::judge_stage;

TEST(Stage, AllOnTimeRunsAreValidAndTheSlotStays) {
  const std::vector<double> late(8, 0.0);
  const std::vector<double> ends{900, 950, 1000, 920, 980, 940, 960, 1000};
  const auto v = judge_stage(late, ends, ends, 1000, 16);
  EXPECT_EQ(v.valid_ns, ends);  // a run ending exactly at the slot's end is valid
  EXPECT_TRUE(v.late_runs.empty());
  EXPECT_TRUE(v.overrun_runs.empty());
  EXPECT_DOUBLE_EQ(v.next_slot_ns, 1000);
}

TEST(Stage, ALateRunIsDiscardedAndCountedWithItsNumber) {
  std::vector<double> late(8, 0.0);
  std::vector<double> ends(8, 900.0);
  late[2] = 1;
  ends[2] = 20e6;  // rank 1 started 20 ms late: its time must not count
  const std::vector<double> calls(8, 900.0);  // its call itself was as long as the others
  const auto v = judge_stage(late, ends, calls, 1000, 40);
  EXPECT_EQ(v.late_runs, std::vector<long>{42});
  EXPECT_TRUE(v.overrun_runs.empty());
  EXPECT_EQ(v.valid_ns, std::vector<double>(7, 900.0));
  EXPECT_DOUBLE_EQ(v.longest_call_ns, 900);
  EXPECT_DOUBLE_EQ(v.next_slot_ns, 1000);  // 1 of 8 invalid: no change
}

TEST(Stage, AnOverrunIsDiscardedAndCounted) {
  std::vector<double> late(8, 0.0);
  std::vector<double> ends(8, 500.0);
  ends[5] = 1001;
  const auto v = judge_stage(late, ends, ends, 1000, 0);
  EXPECT_EQ(v.overrun_runs, std::vector<long>{5});
  EXPECT_EQ(v.valid_ns.size(), 7u);
}

TEST(Stage, AQuarterInvalidKeepsTheSlotMoreDoublesIt) {
  std::vector<double> late(8, 0.0);
  std::vector<double> ends(8, 800.0);
  late[0] = late[1] = 1;  // 2 of 8: exactly 25%, MPIPerf's threshold
  EXPECT_DOUBLE_EQ(judge_stage(late, ends, ends, 1000, 0).next_slot_ns, 1000);
  late[2] = 1;  // 3 of 8
  EXPECT_DOUBLE_EQ(judge_stage(late, ends, ends, 1000, 0).next_slot_ns, 2000);
}

TEST(Stage, AnUnderestimatedSlotStretchesToTheStagesLength) {
  // Warm-up gave 1 us slots but runs take 10 us: every run overran, the last
  // ending 10 us after its slot began. 1.1 x (7 x 1 + 10) / 8 us beats doubling.
  const std::vector<double> late(8, 0.0);
  const std::vector<double> ends(8, 10'000.0);
  const auto v = judge_stage(late, ends, ends, 1000, 0);
  EXPECT_EQ(v.overrun_runs.size(), 8u);
  EXPECT_NEAR(v.next_slot_ns, 1.1 * (7 * 1000 + 10'000) / 8, 1e-9);
}

TEST(Stage, ASlotTooShortGrowsEvenWhenEveryRunStartedLate) {
  // Calls of 4.05 ms in 4 ms slots: each run ends after the next slot began,
  // so every rank starts every run late and no run counts as an overrun.
  const std::vector<double> late(8, 1.0);
  std::vector<double> ends, calls(8, 4.05e6);
  for (int i = 0; i < 8; ++i) ends.push_back(4.05e6 + 0.05e6 * i);
  const auto v = judge_stage(late, ends, calls, 4e6, 0);
  EXPECT_EQ(v.late_runs.size(), 8u);
  EXPECT_TRUE(v.valid_ns.empty());
  EXPECT_DOUBLE_EQ(v.next_slot_ns, 8e6);
}

TEST(Stage, ALongLatenessDoesNotStretchTheSlotBeyondTheCalls) {
  // Every rank late by 5 ms (descheduled), calls of 20 us: the slot grows to
  // at most 4 x 20 us + 100 us, not towards 5 ms.
  const std::vector<double> late(8, 1.0);
  const std::vector<double> ends(8, 5e6), calls(8, 20'000);
  EXPECT_DOUBLE_EQ(judge_stage(late, ends, calls, 10'000, 0).next_slot_ns, 180'000);
  EXPECT_DOUBLE_EQ(judge_stage(late, ends, calls, 100'000, 0).next_slot_ns, 180'000);
  EXPECT_DOUBLE_EQ(judge_stage(late, ends, calls, 200'000, 0).next_slot_ns, 200'000);  // never shrinks
}
