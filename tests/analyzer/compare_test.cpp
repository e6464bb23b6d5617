// Two runs compared (`prof-analyze --compare`), on synthetic traces whose
// figures are exact: a planted slowdown of known size in one interval, a
// smaller change of the other sign in another, an interval in one run only,
// and runs of different rank counts; bad input named, exit status 2; a
// window that holds none of a run warned of.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <vector>

#include "prof/analysis/compare.h"
#include "prof/analysis/report.h"
#include "run_command.h"
#include "run_facts_traces.h"

namespace prof::test {
namespace {

using nlohmann::json;

int run_cli(const std::string& args, std::string* out = nullptr) {
  return run_shell(std::string(PROF_ANALYZE_BIN) + " --no-progress " + args, out);
}

TEST(Compare, APlantedSlowdownComesFirstWithItsSignAndSize) {
  TraceBuilder ba(2), bb(2);
  Plan pa, pb;
  pb.slow = 300 * kMs;
  pb.wait1 = 10 * kMs;  // interval 1 loses 10 ms less in B
  pb.extra = true;
  pb.bcast = "shm";
  const analysis::Analysis a = analyzed(pa, ba), b = analyzed(pb, bb);
  ASSERT_TRUE(a.usable() && b.usable());
  const analysis::Comparison c = analysis::compare(a, b);
  ASSERT_EQ(c.matched.size(), 3u);
  // By the size of the change in lost time, the whole run among them: the
  // slowdown (+0.300 s) before the whole run (+0.290 s and interval 3's),
  // before interval 1 (-0.010 s).
  ASSERT_TRUE(c.matched[0].id);
  EXPECT_EQ(*c.matched[0].id, 2);
  EXPECT_EQ(c.matched[0].source_file, "app.c");
  EXPECT_EQ(c.matched[0].line, 200);
  EXPECT_NEAR(c.matched[0].b->main.lost_time - c.matched[0].a->main.lost_time, 0.300, 1e-9);
  EXPECT_FALSE(c.matched[1].id);
  const double whole_run_change = c.matched[1].b->main.lost_time - c.matched[1].a->main.lost_time;
  EXPECT_GT(whole_run_change, 0.010);
  EXPECT_LT(whole_run_change, 0.300);
  ASSERT_TRUE(c.matched[2].id);
  EXPECT_EQ(*c.matched[2].id, 1);
  EXPECT_NEAR(c.matched[2].b->main.lost_time - c.matched[2].a->main.lost_time, -0.010, 1e-9);
  EXPECT_TRUE(c.only_a.empty());
  ASSERT_EQ(c.only_b.size(), 1u);
  EXPECT_EQ(*c.only_b[0].id, 3);
  EXPECT_EQ(c.only_b[0].a, nullptr);

  // What the runs ran under: PROF_BCAST and UCX_TLS differ, PROF_OUTPUT
  // (always another directory) is not listed, nor what agrees.
  ASSERT_EQ(c.differences.size(), 2u);
  EXPECT_EQ(c.differences[0].what, "PROF_BCAST");
  EXPECT_EQ(c.differences[0].a, "native");
  EXPECT_EQ(c.differences[0].b, "shm");
  EXPECT_EQ(c.differences[1].what, "UCX_TLS");

  std::ostringstream text;
  analysis::write_compare_text(c, "A", "B", text);
  const std::string t = text.str();
  EXPECT_NE(t.find("PROF_BCAST: native -> shm\n"), std::string::npos) << t;
  EXPECT_NE(t.find("Interval 2 (app.c:200) Level=1 EXE_Count=1 -> 1\n"), std::string::npos) << t;
  EXPECT_LT(t.find("Interval 2 (app.c:200)"), t.find("Whole run (")) << t;
  EXPECT_LT(t.find("Whole run ("), t.find("Interval 1 (app.c:100)")) << t;
  EXPECT_NE(t.find("Lost Time 0.001200 0.301200 0.300000 251.000\n"), std::string::npos) << t;
  EXPECT_NE(t.find("---Only in B---\nInterval 3 (app.c:300) Level=1"), std::string::npos) << t;

  std::ostringstream js;
  analysis::write_compare_json(c, a, b, "A", "B", js);
  const json j = json::parse(js.str());
  ASSERT_EQ(j["compare"].size(), 4u);
  EXPECT_EQ(j["compare"][0]["id"], 2);
  EXPECT_TRUE(j["compare"][1]["id"].is_null());
  EXPECT_NEAR(j["compare"][0]["diff"]["lost_time"].get<double>(), 0.3, 1e-9);
  EXPECT_NEAR(j["compare"][0]["ratio"]["lost_time"].get<double>(), 0.3012 / 0.0012, 1e-6);
  EXPECT_NEAR(j["compare"][0]["a"]["lost_time"].get<double>(), 0.0012, 1e-9);
  EXPECT_EQ(j["compare"][3]["id"], 3);
  EXPECT_TRUE(j["compare"][3]["a"].is_null());
  EXPECT_FALSE(j["compare"][3]["b"].is_null());
  EXPECT_FALSE(j["compare"][1].contains("mean_a"));  // same rank count
  EXPECT_EQ(j["run_differences"][0], (json{{"what", "PROF_BCAST"}, {"a", "native"}, {"b", "shm"}}));
  EXPECT_EQ(j["a"]["run"]["library"], "MPICH");
}

TEST(Compare, DifferentRankCountsCompareTotalsAndMeans) {
  TraceBuilder ba(2), bb(4);
  Plan pa, pb;
  pb.ranks = 4;
  const analysis::Analysis a = analyzed(pa, ba), b = analyzed(pb, bb);
  const analysis::Comparison c = analysis::compare(a, b);
  EXPECT_FALSE(c.same_ranks());
  ASSERT_EQ(c.differences.size(), 2u);  // ranks per node agree: 2
  EXPECT_EQ(c.differences[0].what, "ranks");
  EXPECT_EQ(c.differences[0].a, "2");
  EXPECT_EQ(c.differences[0].b, "4");
  EXPECT_EQ(c.differences[1].what, "hosts");  // n0 and n1
  std::ostringstream text;
  analysis::write_compare_text(c, "A", "B", text);
  EXPECT_NE(text.str().find("per-rank values are not"), std::string::npos);
  // Interval 2's lost time: 1.1 ms per waiting rank + 0.1 ms, in total and per rank.
  EXPECT_NE(text.str().find("Lost Time (mean per rank) 0.000600 0.000850 0.000250 1.417\n"), std::string::npos)
      << text.str();
  std::ostringstream js;
  analysis::write_compare_json(c, a, b, "A", "B", js);
  const json j = json::parse(js.str());
  const json* second = nullptr;
  for (const json& e : j["compare"])
    if (e["id"] == 2) second = &e;
  ASSERT_NE(second, nullptr);
  EXPECT_NEAR((*second)["mean_b"]["lost_time"].get<double>(), 0.00085, 1e-9);
  EXPECT_NEAR((*second)["b"]["lost_time"].get<double>(), 0.0034, 1e-9);
  EXPECT_FALSE((*second)["mean_b"].contains("efficiency"));  // not a sum over ranks
}

// Interval 1's Allreduce: rank 1 enters 100 us after the interval's start and
// waits for rank 0, which enters `wait1` after it (20 ms in A, 10 ms in B):
// Wait at NxN is wait1 - 100 us, and the Allreduce's time over both ranks is
// wait1 (rank 1) + 100 us (rank 0). Interval 2's Barrier waits 300 ms longer
// in B.
TEST(Compare, FunctionsAndWaitStatesOfAnIntervalAreComparedToo) {
  TraceBuilder ba(2), bb(2);
  Plan pa, pb;
  pb.slow = 300 * kMs;
  pb.wait1 = 10 * kMs;
  build(ba, pa);
  build(bb, pb);
  const analysis::Analysis a = analysis::analyze(ba.dir()), b = analysis::analyze(bb.dir());
  const analysis::Comparison c = analysis::compare(a, b);
  const analysis::ComparedInterval* first = nullptr;
  const analysis::ComparedInterval* second = nullptr;
  for (const analysis::ComparedInterval& e : c.matched) {
    if (e.id && *e.id == 1) first = &e;
    if (e.id && *e.id == 2) second = &e;
  }
  ASSERT_TRUE(first && second);
  const std::vector<analysis::ComparedFunction> f1 = analysis::compare_functions(*first->a, *first->b);
  ASSERT_EQ(f1.size(), 1u);
  EXPECT_EQ(f1[0].name, "MPI_Allreduce");
  EXPECT_EQ(f1[0].calls_a, 2u);
  EXPECT_EQ(f1[0].calls_b, 2u);
  EXPECT_NEAR(f1[0].time_a, 0.0201, 1e-9);
  EXPECT_NEAR(f1[0].time_b, 0.0101, 1e-9);

  std::string out;
  ASSERT_EQ(run_cli("--compare " + ba.dir() + " " + bb.dir() + " --functions --wait-states", &out), 0) << out;
  EXPECT_NE(out.find("---Wait States---\nKind A B B-A B/A\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Wait at NxN 0.019900 0.009900 -0.010000 0.497\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Wait at Barrier 0.001000 0.301000 0.300000 301.000\n"), std::string::npos) << out;
  EXPECT_NE(out.find("---MPI Functions---\nFunction Calls_A Calls_B Time_A Time_B B-A B/A Bytes_A Bytes_B\n"
                     "MPI_Allreduce 2 2 0.020100 0.010100 -0.010000 0.502 "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("MPI_Barrier 2 2 0.001200 0.301200 0.300000 251.000 "), std::string::npos) << out;
  // Without the options the text has neither section; the JSON has both.
  ASSERT_EQ(run_cli("--compare " + ba.dir() + " " + bb.dir() + " -o /dev/null --json -", &out), 0) << out;
  const json j = json::parse(out);
  const json* entry = nullptr;
  for (const json& e : j["compare"])
    if (e["id"] == 2) entry = &e;
  ASSERT_NE(entry, nullptr);
  EXPECT_NEAR((*entry)["wait_states"]["wait_at_barrier"]["diff"].get<double>(), 0.300, 1e-9);
  ASSERT_EQ((*entry)["functions"].size(), 1u);
  EXPECT_EQ((*entry)["functions"][0]["name"], "MPI_Barrier");
  EXPECT_NEAR((*entry)["functions"][0]["diff"].get<double>(), 0.300, 1e-9);
  ASSERT_EQ(run_cli("--compare " + ba.dir() + " " + bb.dir(), &out), 0) << out;
  EXPECT_EQ(out.find("---Wait States---"), std::string::npos);
  EXPECT_EQ(out.find("---MPI Functions---"), std::string::npos);
  // Per-rank lines and one-trace outputs are refused, not ignored.
  EXPECT_EQ(run_cli("--compare " + ba.dir() + " " + bb.dir() + " --ranks 0", &out), 1);
  EXPECT_NE(out.find("--ranks: --compare compares no per-rank values"), std::string::npos) << out;
  EXPECT_EQ(run_cli("--compare " + ba.dir() + " " + bb.dir() + " --otf2 /tmp/never-written", &out), 1);
  EXPECT_NE(out.find("--otf2 takes one trace"), std::string::npos) << out;
  EXPECT_EQ(run_cli("--compare " + ba.dir() + " " + bb.dir() + " --callsites", &out), 1);
  EXPECT_NE(out.find("--callsites lists one trace's call sites, not --compare"), std::string::npos) << out;
}

// Interval 5 nested in interval 1 (20 ms) and in interval 2 (2 ms), the two
// parents run in the other order in B: each 5 matches the 5 under the same
// parent, not the k-th 5 in tree order. A 5 under a parent only A has is A's
// alone.
TEST(Compare, NestedIntervalsMatchUnderTheSameParent) {
  auto tree = [](const std::vector<std::tuple<int, uint16_t, double>>& nodes) {
    analysis::Analysis r;  // nodes in tree order: (parent index, id, execution time)
    r.intervals.emplace_back();
    r.intervals[0].source_file = "app";
    for (const auto& [parent, id, seconds] : nodes) {
      analysis::IntervalNode n;
      n.parent = parent;
      n.id = id;
      n.level = r.intervals[size_t(parent)].level + 1;
      n.source_file = "app.c";
      n.line = 10 * id;
      n.main.execution_time = seconds;
      r.intervals[size_t(parent)].children.push_back(int(r.intervals.size()));
      r.intervals.push_back(n);
    }
    return r;
  };
  const analysis::Analysis a = tree({{0, 1, 0.1}, {1, 5, 0.020}, {0, 2, 0.1}, {3, 5, 0.002}, {0, 3, 0.1}, {5, 5, 0.5}});
  const analysis::Analysis b = tree({{0, 2, 0.1}, {1, 5, 0.003}, {0, 1, 0.1}, {3, 5, 0.021}, {0, 4, 0.1}, {5, 5, 0.6}});
  const analysis::Comparison c = analysis::compare(a, b);
  int fives = 0;
  for (const analysis::ComparedInterval& e : c.matched) {
    if (!e.id || *e.id != 5) continue;
    ++fives;
    EXPECT_EQ(*a.intervals[size_t(e.a->parent)].id, *b.intervals[size_t(e.b->parent)].id);
    EXPECT_NEAR(e.b->main.execution_time - e.a->main.execution_time, 0.001, 1e-12)
        << "parent " << *a.intervals[size_t(e.a->parent)].id;
  }
  EXPECT_EQ(fives, 2);
  ASSERT_EQ(c.only_a.size(), 2u);  // interval 3 and its 5
  EXPECT_EQ(*c.only_a[1].id, 5);
  ASSERT_EQ(c.only_b.size(), 2u);  // interval 4 and its 5
  EXPECT_EQ(*c.only_b[1].id, 5);
}

TEST(Compare, BadInputIsNamedWithExitStatus2) {
  TraceBuilder ba(2);
  build(ba, Plan{});
  std::string out;
  EXPECT_EQ(run_cli("--compare " + ba.dir() + " " + ba.dir() + "-missing", &out), 2);
  EXPECT_NE(out.find("--compare B: " + ba.dir() + "-missing: No such file or directory"), std::string::npos) << out;
  EXPECT_EQ(run_cli("--compare /nonexistent-a " + ba.dir(), &out), 2);
  EXPECT_NE(out.find("--compare A: /nonexistent-a"), std::string::npos) << out;
  EXPECT_EQ(run_cli(ba.dir() + " --compare " + ba.dir() + " " + ba.dir(), &out), 1);
  EXPECT_EQ(run_cli("--compare " + ba.dir() + " " + ba.dir() + " --json -", &out), 0);
  EXPECT_EQ(json::parse(out)["run_differences"], json::array());
  // A window that holds none of a run is a warning naming the run (its
  // figures all zero), not an error.
  EXPECT_EQ(run_cli("--compare " + ba.dir() + " " + ba.dir() + " --window 100:200 -o /dev/null", &out), 0);
  EXPECT_NE(out.find("warning: A: --window 100:200 holds none of the run"), std::string::npos) << out;
  EXPECT_NE(out.find("warning: B: --window 100:200 holds none of the run"), std::string::npos) << out;
}

}  // namespace
}  // namespace prof::test
