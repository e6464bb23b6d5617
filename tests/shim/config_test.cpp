// The shim's settings parser: a bad value gets one message naming the variable
// and its value; values at the edges of their range are taken as documented.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "config.h"

namespace prof::shim {
namespace {

// Reads the settings with `name` set to `value` (and every other one unset).
struct Parsed {
  Config cfg;
  std::vector<std::string> errors;
};
Parsed read_with(const char* name, const char* value) {
  ::setenv(name, value, 1);
  Parsed p;
  read_config(&p.cfg, &p.errors);
  ::unsetenv(name);
  return p;
}

TEST(ShimConfig, HangWarnTakesAnyPositiveNumberOfSeconds) {
  EXPECT_EQ(read_with("PROF_HANG_WARN", "0.5").cfg.hang_warn_seconds, 0.5);
  // Beyond any run's length: taken, never reached (and no overflow in ticks).
  const Parsed huge = read_with("PROF_HANG_WARN", "1e300");
  EXPECT_TRUE(huge.errors.empty()) << huge.errors[0];
  EXPECT_EQ(huge.cfg.hang_warn_seconds, 1e9);
  for (const char* bad : {"0", "-1", "abc", "1s", "nan"}) {
    const Parsed p = read_with("PROF_HANG_WARN", bad);
    ASSERT_EQ(p.errors.size(), 1u) << bad;
    EXPECT_EQ(p.errors[0], std::string("PROF_HANG_WARN='") + bad + "' is not a number of seconds above 0");
  }
}

TEST(ShimConfig, ClockShiftIsBoundedSoTicksCannotOverflow) {
  const Parsed ok = read_with("PROF_TEST_CLOCK_SHIFT_NS", "1:-1000000000000000");
  EXPECT_TRUE(ok.errors.empty());
  ASSERT_EQ(ok.cfg.test_shifts.size(), 1u);
  EXPECT_EQ(ok.cfg.test_shifts[0].rank, 1);
  EXPECT_EQ(ok.cfg.test_shifts[0].ns, -1000000000000000LL);
  for (const char* bad : {"0:9223372036854775807", "0:99999999999999999999", "0:1000000000000001"}) {
    const Parsed p = read_with("PROF_TEST_CLOCK_SHIFT_NS", bad);
    ASSERT_EQ(p.errors.size(), 1u) << bad;
    EXPECT_NE(p.errors[0].find("not within -10^15..10^15"), std::string::npos) << p.errors[0];
  }
  EXPECT_EQ(read_with("PROF_TEST_CLOCK_SHIFT_NS", "x").errors.size(), 1u);
}

// One shift per rank, or per pretend node: a list plants a different clock on
// each node of a pretend cluster.
TEST(ShimConfig, ClockShiftsAreAListOfDistinctRanksOrNodes) {
  const Parsed two = read_with("PROF_TEST_CLOCK_SHIFT_NS", "1:3000000000,2:-2000000000");
  ASSERT_TRUE(two.errors.empty()) << two.errors[0];
  ASSERT_EQ(two.cfg.test_shifts.size(), 2u);
  EXPECT_EQ(two.cfg.test_shifts[1].rank, 2);
  EXPECT_EQ(two.cfg.test_shifts[1].ns, -2000000000LL);
  for (const char* bad : {"1:5,", ",1:5", "1:5,,2:6", ":5", "-1:5", "1:5;2:6", "1:5,x"}) {
    const Parsed p = read_with("PROF_TEST_CLOCK_SHIFT_NS", bad);
    ASSERT_EQ(p.errors.size(), 1u) << bad;
    EXPECT_NE(p.errors[0].find(std::string("PROF_TEST_CLOCK_SHIFT_NS='") + bad + "' is not RANK:NS"),
              std::string::npos) << p.errors[0];
    EXPECT_TRUE(p.cfg.test_shifts.empty()) << bad;
  }
  const Parsed same = read_with("PROF_TEST_CLOCK_SHIFT_NS", "1:5,1:6");
  ASSERT_EQ(same.errors.size(), 1u);
  EXPECT_NE(same.errors[0].find("ranks 1 and 1 are the same rank"), std::string::npos) << same.errors[0];
  ::setenv("PROF_TEST_NODES", "2", 1);
  const Parsed node = read_with("PROF_TEST_CLOCK_SHIFT_NS", "1:5,3:6");
  ::unsetenv("PROF_TEST_NODES");
  ASSERT_EQ(node.errors.size(), 1u);
  EXPECT_NE(node.errors[0].find("ranks 1 and 3 are on the same pretend node"), std::string::npos)
      << node.errors[0];
}

}  // namespace
}  // namespace prof::shim
