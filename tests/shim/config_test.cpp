// The shim's settings parser: a bad value gets one message, in the one format,
// naming the variable and its value; values at the edges of their range are
// taken as documented.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "prof/settings.h"

namespace prof::settings {
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

// Walks the whole table, so a setting added to it is covered without a new
// test: each has a value its parser rejects (past its range, outside its list,
// or the example its entry gives), and that value gets exactly one message,
// NAME='VALUE' is not ACCEPTED, with nothing of it kept.
TEST(ShimConfig, EveryBadValueGetsTheOneErrorFormat) {
  size_t checked = 0;
  for (const ConfigVariable& v : config_variables()) {
    std::vector<std::string> bad;
    switch (v.kind) {
      case SettingKind::Integer:
        bad = {std::to_string(v.lo - 1), std::to_string(v.hi + 1), "12x", "x"};
        break;
      case SettingKind::Choice: bad = {"no-such-" + v.choices.front(), v.choices.front() + " "}; break;
      case SettingKind::Parsed:
        ASSERT_NE(v.bad_example, nullptr) << v.name << " needs a bad_example";
        bad = {v.bad_example};
        break;
      case SettingKind::Text: continue;  // any text is a name (PROF_OUTPUT)
    }
    const std::string prefix = std::string(v.name) + "='";
    const std::string accepted = "' is not " + setting_accepted(v);
    for (const std::string& value : bad) {
      const Parsed p = read_with(v.name, value.c_str());
      ASSERT_EQ(p.errors.size(), 1u) << v.name << "=" << value;
      EXPECT_EQ(p.errors[0].rfind(prefix + value + accepted, 0), 0u) << p.errors[0];
      // The Config still holds every default.
      for (const ConfigVariable& other : config_variables())
        EXPECT_EQ(other.resolved(p.cfg), other.resolved(Config{})) << v.name << "=" << value << ": " << other.name;
      ++checked;
    }
  }
  EXPECT_GE(checked, config_variables().size());
}

// Each setting's documented type and default are what the parser takes: the
// resolved default reads back unchanged.
TEST(ShimConfig, EveryResolvedValueReadsBack) {
  Config changed;
  changed.timer = format::TimerKind::Monotonic;
  changed.sync = clock::SyncScheme::Ring;
  changed.buffer_bytes = 7u << 20;
  changed.strict = true;
  changed.callsites = false;
  changed.hang_warn_seconds = 2.5;
  changed.log_level = 1;
  changed.bcast.impl = bcast::Impl::Shm;
  changed.bcast.fragment = 3 * size_t(sysconf(_SC_PAGESIZE));
  changed.bcast.slots = 12;
  changed.bcast.sets = 4;  // (dividing the default slots, read alone)
  changed.bcast.tree = {bcast::TreeKind::Knomial, 4};
  changed.bcast.test_fail_shm = true;
  changed.test_nodes = 5;
  changed.test_shifts = {{1, -7}, {2, 9}};
  for (const ConfigVariable& v : config_variables()) {
    if (v.kind == SettingKind::Text) continue;
    const std::string text = v.resolved(changed);
    ASSERT_FALSE(text.empty()) << v.name;
    EXPECT_NE(text, v.resolved(Config{})) << v.name << ": the test must change it";
    ::setenv("PROF_TEST_NODES", "5", 1);  // the clock shifts' ranks are on distinct pretend nodes
    const Parsed p = read_with(v.name, text.c_str());
    ::unsetenv("PROF_TEST_NODES");
    ASSERT_TRUE(p.errors.empty()) << v.name << "=" << text << ": " << p.errors[0];
    EXPECT_EQ(v.resolved(p.cfg), text) << v.name;
  }
}

TEST(ShimConfig, BroadcastSetsMustDivideSlotsGivenOrNot) {
  ::setenv("PROF_BCAST_SLOTS", "6", 1);
  const Parsed given = read_with("PROF_BCAST_SETS", "4");
  ASSERT_EQ(given.errors.size(), 1u);
  EXPECT_EQ(given.errors[0],
            "PROF_BCAST_SETS='4' is not an integer in 1..65536 dividing PROF_BCAST_SLOTS: "
            "PROF_BCAST_SLOTS is 6, PROF_BCAST_SETS 4 (each set holds slots/sets buffers)");
  // Only PROF_BCAST_SLOTS given: the message is about the setting the user made.
  const Parsed defaulted = read_with("PROF_BCAST_SLOTS", "7");
  ASSERT_EQ(defaulted.errors.size(), 1u);
  EXPECT_EQ(defaulted.errors[0].rfind(
                "PROF_BCAST_SLOTS='7' is not an integer in 1..65536 that PROF_BCAST_SETS divides", 0),
            0u)
      << defaulted.errors[0];
  EXPECT_NE(defaulted.errors[0].find("(PROF_BCAST_SETS is unset: its default)"), std::string::npos);
  ::unsetenv("PROF_BCAST_SLOTS");
  const Parsed sets_only = read_with("PROF_BCAST_SETS", "3");
  ASSERT_EQ(sets_only.errors.size(), 1u);
  EXPECT_EQ(sets_only.errors[0].rfind("PROF_BCAST_SETS='3' is not", 0), 0u) << sets_only.errors[0];
  ::setenv("PROF_BCAST_SLOTS", "6", 1);
  EXPECT_TRUE(read_with("PROF_BCAST_SETS", "3").errors.empty());
  ::unsetenv("PROF_BCAST_SLOTS");
}

// prof-bench reads the broadcast's settings alone, through the same parser.
TEST(ShimConfig, ProfBenchReadsTheBroadcastSettingsAlone) {
  ::setenv("PROF_TIMER", "sundial", 1);
  ::setenv("PROF_BCAST_TREE", "knomial:4", 1);
  Config cfg;
  std::vector<std::string> errors;
  EXPECT_TRUE(read_config(&cfg, &errors, [](const ConfigVariable& v) { return v.read_by_prof_bench; }));
  EXPECT_EQ(bcast::tree_name(cfg.bcast.tree), "knomial:4");
  EXPECT_FALSE(read_config(&cfg, &errors));
  ::unsetenv("PROF_TIMER");
  ::unsetenv("PROF_BCAST_TREE");
}

TEST(ShimConfig, HangWarnTakesAnyPositiveNumberOfSeconds) {
  EXPECT_EQ(read_with("PROF_HANG_WARN", "0.5").cfg.hang_warn_seconds, 0.5);
  // Beyond any run's length: taken, never reached (and no overflow in ticks).
  const Parsed huge = read_with("PROF_HANG_WARN", "1e300");
  EXPECT_TRUE(huge.errors.empty()) << huge.errors[0];
  EXPECT_EQ(huge.cfg.hang_warn_seconds, 1e9);
  for (const char* bad : {"0", "-1", "abc", "1s", "nan", "inf", "0x10", " 5", "5 "}) {
    const Parsed p = read_with("PROF_HANG_WARN", bad);
    ASSERT_EQ(p.errors.size(), 1u) << bad;
    EXPECT_EQ(p.errors[0], std::string("PROF_HANG_WARN='") + bad + "' is not a number of seconds above 0");
  }
}

// PROF_LOG_LEVEL takes spdlog's level names, its other spellings too: a
// value spdlog knows never leaves the run unprofiled.
TEST(ShimConfig, LogLevelTakesSpdlogsSpellings) {
  const std::vector<std::pair<const char*, int>> levels = {
      {"trace", 0}, {"debug", 1}, {"info", 2},     {"warn", 3}, {"warning", 3},
      {"error", 4}, {"err", 4},   {"critical", 5}, {"off", 6}};
  for (const auto& [name, level] : levels) {
    const Parsed p = read_with("PROF_LOG_LEVEL", name);
    EXPECT_TRUE(p.errors.empty()) << name;
    EXPECT_EQ(p.cfg.log_level, level) << name;
  }
  // The resolved setting is the one spelling of its level.
  for (const ConfigVariable& v : config_variables()) {
    if (std::string(v.name) == "PROF_LOG_LEVEL") {
      EXPECT_EQ(v.resolved(read_with(v.name, "err").cfg), "error");
    }
  }
  EXPECT_EQ(read_with("PROF_LOG_LEVEL", "Warning").errors.size(), 1u);
}

// A PROF_* variable that is no setting (a typo) is named, with the setting
// it is closest to, so it is not silently without effect; the other tools'
// variables and the settings themselves are not.
TEST(ShimConfig, UnknownSettingsAreNamedWithTheNearestSetting) {
  const char* const environment[] = {"PROF_TIMR=tsc",         "PROF_TIMER=tsc", "HOME=/root",
                                     "PROF_ANALYZE_WORKER_STATS=1", "PROF_GUI_X=1",  "PROF_FUZZ_TRACE=x",
                                     "PROF_SYNC_SCHEME=ring",  "PROF_BCAST_TRE=flat", "PROF_",
                                     "PROFOUTPUT=x",           nullptr};
  const std::vector<UnknownSetting> unknown = unknown_settings(environment);
  ASSERT_EQ(unknown.size(), 4u);
  EXPECT_EQ(unknown[0].name, "PROF_TIMR");
  EXPECT_EQ(unknown[0].nearest, "PROF_TIMER");
  EXPECT_EQ(unknown[1].name, "PROF_SYNC_SCHEME");
  EXPECT_EQ(unknown[1].nearest, "");  // (more than two edits from PROF_SYNC)
  EXPECT_EQ(unknown[2].name, "PROF_BCAST_TRE");
  EXPECT_EQ(unknown[2].nearest, "PROF_BCAST_TREE");
  EXPECT_EQ(unknown[3].name, "PROF_");
  EXPECT_EQ(unknown_setting_warning(unknown[0]),
            "PROF_TIMR is not a libprof setting (did you mean PROF_TIMER?); it is ignored "
            "(prof-run --help-config lists the settings)");
  for (const ConfigVariable& v : config_variables()) {
    const std::string setting = std::string(v.name) + "=1";
    const char* const alone[] = {setting.c_str(), nullptr};
    EXPECT_TRUE(unknown_settings(alone).empty()) << v.name;
  }
}

// The settings the shim's own collectives follow are compared between ranks:
// a rank whose value differs from rank 0's is told which and both values;
// the others (a buffer size, a log level) may differ.
TEST(ShimConfig, SettingsEveryRankSharesAreComparedWithRankZeros) {
  Config zero, one;
  EXPECT_EQ(shared_settings_difference(shared_settings(one), shared_settings(zero), 1), "");
  one.buffer_bytes *= 2;
  one.log_level = 0;
  EXPECT_EQ(shared_settings_difference(shared_settings(one), shared_settings(zero), 1), "");
  one.bcast.tree = bcast::TreeSpec{bcast::TreeKind::Flat, 0};
  EXPECT_EQ(shared_settings_difference(shared_settings(one), shared_settings(zero), 3),
            "PROF_BCAST_TREE is 'flat' on rank 3 but 'kary:2' on rank 0: the shim's own collectives need it the "
            "same on every rank");
  for (const char* name : {"PROF_SYNC", "PROF_BCAST", "PROF_BCAST_FRAGMENT", "PROF_BCAST_SLOTS", "PROF_BCAST_SETS",
                           "PROF_BCAST_TREE", "PROF_TEST_NODES"})
    EXPECT_NE(shared_settings(zero).find(std::string(name) + "="), std::string::npos) << name;
}

// An integer is digits with an optional sign, nothing around them: a space on
// either side is refused alike (strtoll alone takes one before, not after).
TEST(ShimConfig, IntegersTakeNoSpaces) {
  EXPECT_EQ(read_with("PROF_BUFFER_MB", "+4").cfg.buffer_bytes, uint64_t{4} << 20);
  for (const char* bad : {" 4", "4 ", "\t4", "0x4"}) {
    const Parsed p = read_with("PROF_BUFFER_MB", bad);
    EXPECT_EQ(p.errors.size(), 1u) << "'" << bad << "'";
  }
  EXPECT_EQ(read_with("PROF_BCAST_TREE", "kary: 2").errors.size(), 1u);
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
}  // namespace prof::settings
