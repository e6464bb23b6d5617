// The outputs users read: the JSON report's keys and tree order
// (docs/interfaces.md), the Chrome trace (valid JSON, one track per rank,
// nested slices, paired flow arrows), and the text report's files and options.
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "prof/analysis/chrome_trace.h"
#include "prof/analysis/compare.h"
#include "prof/analysis/report.h"
#include "file_bytes.h"
#include "run_command.h"
#include "trace_builder.h"

namespace prof::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

int run_cli(const std::string& args, std::string* out = nullptr) {
  return run_shell(std::string(PROF_ANALYZE_BIN) + " --no-progress " + args, out);
}

// Three ranks, two nested intervals in a loop, a sibling interval, messages
// both blocking and through Irecv/Wait, and an Allreduce.
void build(TraceBuilder& b) {
  for (int r = 0; r < 3; ++r) {
    b.init(r, 0, 1 * kMs);
    uint64_t t = 2 * kMs;
    for (int k = 0; k < 2; ++k) {
      b.begin(r, t, 1, 1);
      b.begin(r, t + 100 * kUs, 2, 2);
      const uint32_t rq = 0xAC000100u + static_cast<uint32_t>(k);
      b.irecv(r, t + 200 * kUs, t + 210 * kUs, (r + 2) % 3, 4, rq);
      b.send(r, t + 300 * kUs, t + 400 * kUs, (r + 1) % 3, 4, 1024);
      b.wait(r, Wait, t + 500 * kUs, t + 700 * kUs, {TraceBuilder::done(rq, (r + 2) % 3, 4, 1024)});
      b.end(r, t + 800 * kUs, 2, 2);
      b.collective(r, Allreduce, t + 900 * kUs + r * 50 * kUs, t + 1200 * kUs);
      b.end(r, t + 1300 * kUs, 1, 1);
      t += 2 * kMs;
    }
    b.begin(r, t, 5, 4);  // unresolved call site: reported by address
    b.end(r, t + 500 * kUs, 5, 4);
    b.finalize(r, 20 * kMs, 21 * kMs);
  }
  b.close();
}

TEST(Outputs, JsonReportHasTheSpecKeysInTreeOrder) {
  TraceBuilder b(3);
  build(b);
  const std::string path = b.dir() + "/report.json";
  ASSERT_EQ(run_cli(b.dir() + " -o " + b.dir() + "/report.txt --json " + path), 0);
  const json j = json::parse(file_bytes(path));
  EXPECT_EQ(j.at("processors"), 3);
  const auto& list = j.at("intervals");
  ASSERT_EQ(list.size(), 4u);  // root, 1, 2 (in 1), 5
  const char* main_keys[] = {"efficiency", "execution_time", "processors", "total_time",
                             "productive_time", "lost_time", "mpi_time", "idle_time",
                             "comm_time", "sendrecv_time", "collective_time", "alltoall_time",
                             "potential_sync", "time_variation", "time_of_start"};
  const char* comp_keys[] = {"lost_time", "idle_time", "comm_time", "mpi_time",
                             "potential_sync", "time_variation", "time_of_start"};
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& n = list[i];
    for (const char* k : {"id", "level", "exe_count", "parent", "source_file", "line", "main",
                          "comparative", "per_rank", "calls"})
      EXPECT_TRUE(n.contains(k)) << "interval " << i << " lacks " << k;
    for (const char* k : main_keys) EXPECT_TRUE(n.at("main").contains(k)) << k;
    for (const char* k : comp_keys) {
      const auto& c = n.at("comparative").at(k);
      for (const char* f : {"min", "min_rank", "max", "max_rank", "mean"}) EXPECT_TRUE(c.contains(f));
    }
    for (const auto& pr : n.at("per_rank"))
      for (const char* k : {"rank", "lost_time", "mpi_time"}) EXPECT_TRUE(pr.contains(k));
    if (i == 0) {
      EXPECT_TRUE(n.at("parent").is_null());
      EXPECT_TRUE(n.at("id").is_null());
      EXPECT_EQ(n.at("level"), 0);
    } else {
      // Pre-order: the parent comes earlier and is one level up.
      const int p = n.at("parent").get<int>();
      ASSERT_GE(p, 0);
      ASSERT_LT(static_cast<size_t>(p), i);
      EXPECT_EQ(list[static_cast<size_t>(p)].at("level").get<int>() + 1, n.at("level").get<int>());
    }
  }
  EXPECT_EQ(list[1].at("id"), 1);
  EXPECT_EQ(list[1].at("source_file"), "app.c");
  EXPECT_EQ(list[1].at("line"), 100);
  EXPECT_EQ(list[1].at("exe_count"), 2);
  EXPECT_EQ(list[2].at("id"), 2);
  EXPECT_EQ(list[2].at("parent"), 1);
  EXPECT_EQ(list[3].at("id"), 5);
  EXPECT_EQ(list[3].at("parent"), 0);
  EXPECT_EQ(list[3].at("source_file"), "0x404abc");
  // calls: over ranks and executions, nested intervals included, markers out.
  EXPECT_EQ(list[1].at("calls").at("MPI_Allreduce"), 6);
  EXPECT_EQ(list[1].at("calls").at("MPI_Send"), 6);
  EXPECT_EQ(list[2].at("calls").at("MPI_Wait"), 6);
  EXPECT_FALSE(list[2].at("calls").contains("MPI_Allreduce"));
  EXPECT_EQ(list[0].at("calls").at("MPI_Irecv"), 6);
  EXPECT_FALSE(list[0].at("calls").contains("MPI_Init"));
  bool saw_send = false;
  for (const auto& f : list[1].at("functions")) {
    if (f.at("name") == "MPI_Send") {
      saw_send = true;
      EXPECT_EQ(f.at("bytes"), 6 * 1024);
    }
  }
  EXPECT_TRUE(saw_send);
  // The text report went to the -o file, interval by interval.
  const std::string text = file_bytes(b.dir() + "/report.txt");
  EXPECT_NE(text.find("Interval (LineNumber = 100 SourceFile = app.c) Level=1 EXE_Count=2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Interval (LineNumber = 0 SourceFile = 0x404abc) Level=1 EXE_Count=1"),
            std::string::npos);
  EXPECT_NE(text.find("Interval (LineNumber = 0 SourceFile = app) Level=0 EXE_Count=1"),
            std::string::npos);
}

TEST(Outputs, FunctionsSectionOnRequest) {
  TraceBuilder b(3);
  build(b);
  std::string plain, with;
  ASSERT_EQ(run_cli(b.dir(), &plain), 0);
  ASSERT_EQ(run_cli(b.dir() + " --functions", &with), 0);
  EXPECT_EQ(plain.find("---MPI Functions---"), std::string::npos);
  EXPECT_NE(with.find("---MPI Functions---"), std::string::npos);
  EXPECT_NE(with.find("MPI_Send 6 "), std::string::npos) << with;
}

// The function profile is computed only where an output prints it
// (report.h's table): without it every other figure is the same, the
// profile is empty and said to be unknown, and the writers that print it
// refuse such a result rather than print an empty profile as "no calls".
TEST(Outputs, FunctionProfileOnlyWhereAnOutputPrintsIt) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    b.begin(r, 2 * kMs, 1, 1);
    b.send(r, 2100 * kUs, 2200 * kUs, 1 - r, 4, 1024);
    b.recv(r, 2300 * kUs, 2400 * kUs + r * 50 * kUs, 1 - r, 4, 1024);
    // (At a recorded call site: the call-site profile has a line.)
    b.collective(r, Allreduce, 2500 * kUs + r * 100 * kUs, 2700 * kUs, kWorld, 8, format::kNoRequest, 0, 1);
    b.end(r, 3 * kMs, 1, 1);
    b.finalize(r, 4 * kMs, 5 * kMs);
  }
  b.close();
  const analysis::Analysis with = analyze_checked(b.dir());
  analysis::Options off;
  off.function_profile = false;
  const analysis::Analysis without = analyze_checked(b.dir(), off);
  ASSERT_TRUE(with.usable() && without.usable());
  EXPECT_TRUE(with.functions_known);
  EXPECT_FALSE(without.functions_known);
  EXPECT_FALSE(with.intervals[0].functions.empty());
  EXPECT_FALSE(with.intervals[0].callsites.empty());
  ASSERT_EQ(with.intervals.size(), without.intervals.size());
  for (size_t i = 0; i < without.intervals.size(); ++i) {
    EXPECT_TRUE(without.intervals[i].functions.empty()) << i;
    EXPECT_TRUE(without.intervals[i].callsites.empty()) << i;
    ASSERT_EQ(without.intervals[i].per_rank.size(), with.intervals[i].per_rank.size()) << i;
    for (size_t k = 0; k < with.intervals[i].per_rank.size(); ++k)
      EXPECT_EQ(without.intervals[i].per_rank[k].calls, with.intervals[i].per_rank[k].calls) << i;
  }
  std::ostringstream text_with, text_without;
  analysis::write_text_report(with, text_with);
  analysis::write_text_report(without, text_without);
  EXPECT_EQ(text_without.str(), text_with.str());
  for (const bool callsites : {false, true}) {
    analysis::TextOptions o;
    o.functions = !callsites;
    o.callsites = callsites;
    std::ostringstream sink;
    EXPECT_THROW(analysis::write_text_report(without, sink, o), std::logic_error) << callsites;
  }
  std::ostringstream json_sink;
  EXPECT_THROW(analysis::write_json_report(without, json_sink), std::logic_error);
  // A comparison prints the profiles with --functions and in its JSON.
  const analysis::Comparison c = analysis::compare(without, with);
  EXPECT_FALSE(c.functions_known);
  std::ostringstream compare_text;
  EXPECT_NO_THROW(analysis::write_compare_text(c, "A", "B", compare_text));
  analysis::CompareTextOptions compare_functions;
  compare_functions.functions = true;
  EXPECT_THROW(analysis::write_compare_text(c, "A", "B", compare_text, compare_functions), std::logic_error);
  EXPECT_THROW(analysis::write_compare_json(c, without, with, "A", "B", compare_text), std::logic_error);
}

// The warning's ranks: the ranges that name none of the report's, and the
// report's own as ranges, the middle ones elided past kRankRangesShown.
TEST(Outputs, RanksWarningNamesTheReportsRanksAsRanges) {
  analysis::Analysis a;
  std::string have;
  EXPECT_TRUE(analysis::ranges_naming_no_rank(a, {{0, 3}}, &have).empty());  // no per-rank figures
  EXPECT_EQ(have, "");
  a.intervals.emplace_back();
  for (int r : {0, 1, 2, 5, 7, 8})
    a.intervals[0].per_rank.push_back(analysis::RankFigures{.rank = r});
  EXPECT_EQ(analysis::ranges_naming_no_rank(a, {{0, 0}, {3, 4}, {6, 6}, {4, 5}, {9, 100}}, &have),
            (std::vector<std::string>{"3-4", "6", "9-100"}));
  EXPECT_EQ(have, "0-2,5,7-8");
  a.intervals[0].per_rank.clear();
  for (int r = 0; r < 40; r += 2) a.intervals[0].per_rank.push_back(analysis::RankFigures{.rank = r});
  EXPECT_EQ(analysis::ranges_naming_no_rank(a, {{1, 1}}, &have), std::vector<std::string>{"1"});
  ASSERT_EQ(analysis::kRankRangesShown, 6u);
  EXPECT_EQ(have, "0,2,4,...,34,36,38");
}

// --ranks keeps only those ranks' lines in the per-rank tables; everything
// else (the main and comparative blocks, every other line) is unchanged, a
// range with no rank of the trace is a warning, an empty list keeps every
// line, and a list that is not one is a usage error naming it.
TEST(Outputs, RanksOptionLimitsThePerRankLinesOnly) {
  TraceBuilder b(3);
  build(b);
  std::string all, some;
  ASSERT_EQ(run_cli(b.dir() + " -q", &all), 0);
  ASSERT_EQ(run_cli(b.dir() + " -q --ranks 0,2-2", &some), 0);
  // Drop rank 1's lines from the full report's per-rank tables: what is left
  // is exactly the limited report.
  std::istringstream lines(all);
  std::string line, expected;
  bool in_table = false;
  while (std::getline(lines, line)) {
    if (line.rfind("---", 0) == 0 || line.rfind("Interval", 0) == 0 || line.empty())
      in_table = line == "---Characteristics per Processor---";
    else if (in_table && line.rfind("1 ", 0) == 0)
      continue;
    expected += line + "\n";
  }
  EXPECT_NE(expected, all);
  EXPECT_EQ(some, expected);
  // Ranges that name no rank of the trace are said so on stderr (unless -q),
  // and the report is the same.
  std::string warned;
  ASSERT_EQ(run_cli(b.dir() + " --ranks 0,7,2-2,5-9 -o /dev/null", &warned), 0);
  EXPECT_NE(warned.find("warning: --ranks 7: no such rank in the report (it has 3: 0-2)"), std::string::npos) << warned;
  EXPECT_NE(warned.find("warning: --ranks 5-9: no such rank"), std::string::npos) << warned;
  EXPECT_EQ(warned.find("--ranks 0:"), std::string::npos) << warned;
  EXPECT_EQ(warned.find("--ranks 2:"), std::string::npos) << warned;
  std::string with_unknown;
  ASSERT_EQ(run_cli(b.dir() + " -q --ranks 0,7,2-2,5-9", &with_unknown), 0);
  EXPECT_EQ(with_unknown, some);
  // An empty list (a script's unset variable) prints every rank's lines.
  std::string empty_list;
  ASSERT_EQ(run_cli(b.dir() + " -q --ranks ''", &empty_list), 0);
  EXPECT_EQ(empty_list, all);
  for (const char* bad : {"1-0", "a", "1,", "-3", "2..4"}) {
    std::string out;
    EXPECT_EQ(run_cli(b.dir() + " --ranks " + bad, &out), 1) << bad;
    EXPECT_NE(out.find("is not a rank list"), std::string::npos) << out;
  }
  // With the per-rank tables left out there is nothing to choose from: a
  // mistake said, not a list silently without effect.
  std::string out;
  EXPECT_EQ(run_cli(b.dir() + " --ranks 1 --no-per-rank", &out), 1);
  EXPECT_EQ(out.rfind("prof-analyze: error: --ranks 1: --no-per-rank", 0), 0u) << out;
}

TEST(Outputs, ChromeTraceIsValidWithOneTrackPerRank) {
  TraceBuilder b(3);
  build(b);
  const std::string path = b.dir() + "/trace.json";
  ASSERT_EQ(run_cli(b.dir() + " --chrome-trace " + path), 0);
  const json j = json::parse(file_bytes(path));
  const auto& ev = j.at("traceEvents");
  std::map<int, std::string> names;
  std::map<int, std::vector<std::pair<double, double>>> slices;
  std::map<long long, int> starts, finishes;
  int mpi_slices = 0, interval_slices = 0;
  for (const auto& e : ev) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "thread_name") {
      EXPECT_EQ(names.count(e.at("tid")), 0u) << "track named twice";
      names[e.at("tid")] = e.at("args").at("name");
    } else if (ph == "X") {
      slices[e.at("tid")].emplace_back(e.at("ts").get<double>(), e.at("dur").get<double>());
      if (e.at("cat") == "mpi") {
        ++mpi_slices;
        if (e.at("name") == "MPI_Send") {
          EXPECT_EQ(e.at("args").at("bytes"), 1024);
        }
      } else if (e.at("cat") == "interval") {
        ++interval_slices;
      }
    } else if (ph == "s") {
      ++starts[e.at("id").get<long long>()];
    } else if (ph == "f") {
      ++finishes[e.at("id").get<long long>()];
      EXPECT_EQ(e.at("bp"), "e");
    }
  }
  ASSERT_EQ(names.size(), 3u);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(names[r], "rank " + std::to_string(r));
  EXPECT_EQ(mpi_slices, 3 * (2 + 2 * 4));   // Init, Finalize, 2 x (Irecv, Send, Wait, Allreduce)
  EXPECT_EQ(interval_slices, 3 * (1 + 2 * 2 + 1));  // run + loop + nested + sibling
  // Every message: one start, one finish, same id.
  EXPECT_EQ(starts.size(), 6u);
  EXPECT_EQ(starts, finishes);
  // Slices on a track nest: sorted by start, each lies inside or after the previous ones.
  for (auto& [tid, v] : slices) {
    std::sort(v.begin(), v.end(), [](auto& x, auto& y) {
      return x.first != y.first ? x.first < y.first : x.second > y.second;
    });
    std::vector<double> ends;
    for (auto [ts, dur] : v) {
      while (!ends.empty() && ends.back() <= ts + 1e-9) ends.pop_back();
      if (!ends.empty()) {
        EXPECT_LE(ts + dur, ends.back() + 1e-9) << "overlap on track " << tid;
      }
      ends.push_back(ts + dur);
    }
  }
}

// A message's arrow runs forward in time from the send's start to a point
// inside the call that received it, also for a late sender (the receive
// entered first): the viewers drop an arrow whose end precedes its start.
TEST(Outputs, ChromeTraceArrowsRunForwardIntoTheReceivingCall) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.recv(0, 2 * kMs, 6 * kMs, 1, 7);  // late sender: the send enters at 5 ms
  b.send(1, 5 * kMs, 5 * kMs + 10 * kUs, 0, 7);
  b.send(0, 7 * kMs, 7 * kMs + 10 * kUs, 1, 8);  // late receiver: the receive enters at 8 ms
  b.recv(1, 8 * kMs, 8 * kMs + 20 * kUs, 0, 8);
  for (int r = 0; r < 2; ++r) b.finalize(r, 9 * kMs, 10 * kMs);
  b.close();
  const std::string path = b.dir() + "/trace.json";
  std::string out;
  ASSERT_EQ(run_cli(b.dir() + " -q -o /dev/null --chrome-trace " + path, &out), 0) << out;
  const json j = json::parse(file_bytes(path));
  std::map<long long, double> start_ts, finish_ts;
  std::map<long long, int> finish_tid;
  std::vector<json> receives;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "s") start_ts[e.at("id").get<long long>()] = e.at("ts").get<double>();
    if (e.at("ph") == "f") {
      finish_ts[e.at("id").get<long long>()] = e.at("ts").get<double>();
      finish_tid[e.at("id").get<long long>()] = e.at("tid").get<int>();
    }
    if (e.at("ph") == "X" && e.at("name") == "MPI_Recv") receives.push_back(e);
  }
  ASSERT_EQ(start_ts.size(), 2u);
  ASSERT_EQ(finish_ts.size(), 2u);
  for (const auto& [id, ts] : finish_ts) {
    EXPECT_GE(ts, start_ts.at(id)) << "arrow " << id << " points back in time";
    int inside = 0;
    for (const json& r : receives)
      if (r.at("tid") == finish_tid.at(id) && ts > r.at("ts").get<double>() &&
          ts < r.at("ts").get<double>() + r.at("dur").get<double>())
        ++inside;
    EXPECT_EQ(inside, 1) << "arrow " << id << " ends outside its receive";
  }
}

// --window over the whole run (from 0, past every rank's MPI_Finalize): every
// output is the plain command's, byte for byte, with no Window line and the
// Chrome trace and OTF2 archive whole; a window short of the end is one.
TEST(Outputs, AWindowOverTheWholeRunWritesTheWholeRunsOutputs) {
  TraceBuilder b(3);
  build(b);
  auto outputs = [&](const std::string& name, const std::string& window) {
    const std::string d = b.dir() + "/" + name;
    EXPECT_EQ(run_cli(b.dir() + " -q -o " + d + ".txt --json " + d + ".json --chrome-trace " + d + ".chrome --otf2 " +
                      d + ".otf2 --wait-states --functions " + window),
              0)
        << window;
    std::string all;
    for (const char* part : {".txt", ".json", ".chrome", ".otf2/traces.otf2", ".otf2/traces.def", ".otf2/traces/0.evt"})
      all += std::string(part) + "\n" + file_bytes(d + part);
    return all;
  };
  const std::string whole = outputs("whole", "");
  EXPECT_NE(whole.find("Interval"), std::string::npos);
  EXPECT_EQ(outputs("wide", "--window 0:1000"), whole);
  const std::string short_of_it = outputs("short", "--window 0:0.005");
  EXPECT_NE(short_of_it.find("\nWindow "), std::string::npos);
  EXPECT_NE(short_of_it, whole);
}

// --chrome-trace-window: the second loop iteration (4.0-5.3 ms from the first
// event) alone, with the slices around it at their true extent.
TEST(Outputs, ChromeTraceWindowKeepsWhatOverlapsIt) {
  TraceBuilder b(3);
  build(b);
  const std::string path = b.dir() + "/window.json";
  ASSERT_EQ(run_cli(b.dir() + " --chrome-trace " + path + " --chrome-trace-window 0.0039:0.0054"), 0);
  const json j = json::parse(file_bytes(path));
  int mpi = 0, intervals = 0, named = 0;
  std::map<long long, int> starts, finishes;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M") {
      named += e.at("name") == "thread_name";
    } else if (ph == "X") {
      const double ts = e.at("ts"), dur = e.at("dur");
      EXPECT_GE(ts + dur, 3900.0) << e.dump();
      EXPECT_LE(ts, 5400.0) << e.dump();
      (e.at("cat") == "mpi" ? mpi : intervals)++;
      if (e.at("name") == "run (rank 0)") {
        EXPECT_NEAR(ts, 1000.0, 1e-6);  // from MPI_Init's return
        EXPECT_NEAR(ts + dur, 20000.0, 1e-6);  // to MPI_Finalize's call
      }
    } else if (ph == "s") {
      ++starts[e.at("id").get<long long>()];
    } else if (ph == "f") {
      ++finishes[e.at("id").get<long long>()];
    }
  }
  EXPECT_EQ(named, 3);             // every track is still named
  EXPECT_EQ(mpi, 3 * 4);           // Irecv, Send, Wait, Allreduce of the second iteration
  EXPECT_EQ(intervals, 3 * 3);     // run, loop, nested
  EXPECT_EQ(starts.size(), 3u);    // the second iteration's messages
  EXPECT_EQ(starts, finishes);
  // A window past the run's end: said on stderr (not with -q); a window that
  // holds slices is not.
  std::string out;
  EXPECT_EQ(run_cli(b.dir() + " -o /dev/null --chrome-trace " + path + " --chrome-trace-window 100:200", &out), 0);
  EXPECT_NE(out.find("warning: --chrome-trace-window 100:200 holds none of the run"), std::string::npos) << out;
  EXPECT_EQ(run_cli(b.dir() + " -q -o /dev/null --chrome-trace " + path + " --chrome-trace-window 100:200", &out), 0);
  EXPECT_EQ(out.find("holds none"), std::string::npos) << out;
  EXPECT_EQ(run_cli(b.dir() + " -o /dev/null --chrome-trace " + path + " --chrome-trace-window 0.0039:0.0054", &out), 0);
  EXPECT_EQ(out.find("holds none"), std::string::npos) << out;
}

TEST(Outputs, ChromeTraceWindowMustBeFromBeforeTo) {
  TraceBuilder b(3);
  build(b);
  for (const char* bad : {"2:1", "1", "a:b", "-1:2", "1:"}) {
    std::string out;
    EXPECT_EQ(run_cli(b.dir() + " --chrome-trace " + b.dir() + "/w.json --chrome-trace-window " + bad,
                      &out),
              1)
        << bad;
    EXPECT_NE(out.find("--chrome-trace-window"), std::string::npos) << out;
  }
}

// No output is written over what was recorded: a rank file of the trace or
// its window index (each mapped while read) is refused before the analysis
// starts, and left as it was; nor over another output, nor to an empty path.
TEST(Outputs, NoOutputOverwritesTheTraceOrAnotherOutput) {
  TraceBuilder b(3);
  build(b);
  std::string out;
  // (A window writes the index.)
  ASSERT_EQ(run_cli(b.dir() + " -q --window 0:0.01 -o " + b.dir() + "/report.txt", &out), 0) << out;
  ASSERT_TRUE(fs::exists(b.dir() + "/window-index.bin"));
  const std::string rank1 = file_bytes(b.dir() + "/rank-00001.prof");
  const std::string index = file_bytes(b.dir() + "/window-index.bin");
  const std::string relative = fs::relative(b.dir() + "/rank-00001.prof").string();
  for (const std::string& args :
       {" -o " + b.dir() + "/rank-00001.prof", " --json " + relative,
        " --chrome-trace " + b.dir() + "/./rank-00001.prof", " --json " + b.dir() + "/window-index.bin"}) {
    EXPECT_EQ(run_cli(b.dir() + args, &out), 1) << args;
    EXPECT_NE(out.find("of the trace"), std::string::npos) << args << ": " << out;
  }
  EXPECT_EQ(file_bytes(b.dir() + "/rank-00001.prof"), rank1);
  EXPECT_EQ(file_bytes(b.dir() + "/window-index.bin"), index);
  EXPECT_EQ(run_cli("--compare " + b.dir() + " " + b.dir() + "/.. -o " + b.dir() + "/rank-00001.prof", &out), 1) << out;
  EXPECT_EQ(file_bytes(b.dir() + "/rank-00001.prof"), rank1);
  // The window index before the analysis has written it: the index, too.
  fs::remove(b.dir() + "/window-index.bin");
  EXPECT_EQ(run_cli(b.dir() + " --window 0:0.01 -o " + b.dir() + "/window-index.bin", &out), 1) << out;
  EXPECT_NE(out.find("the window index of the trace"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(b.dir() + "/window-index.bin"));

  const std::string same = b.dir() + "/../" + fs::path(b.dir()).filename().string() + "/r";
  EXPECT_EQ(run_cli(b.dir() + " -o " + b.dir() + "/r --json " + same, &out), 1);
  EXPECT_NE(out.find("-o and --json both name"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(b.dir() + "/r"));
  // A file not there yet, named bare and with ./ from the directory it goes in.
  EXPECT_EQ(run_shell("cd " + b.dir() + " && " + PROF_ANALYZE_BIN + " --no-progress . -o fresh --json ./fresh", &out),
            1);
  EXPECT_NE(out.find("-o and --json both name"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(b.dir() + "/fresh"));
  // Hard links: a second name of a rank file, and two names of one output.
  const std::string other = b.dir() + "/../" + fs::path(b.dir()).filename().string() + "-links";
  fs::create_directories(other);
  fs::create_hard_link(b.dir() + "/rank-00001.prof", other + "/copy.prof");
  EXPECT_EQ(run_cli(b.dir() + " -o " + other + "/copy.prof", &out), 1);
  EXPECT_NE(out.find("a rank file of the trace"), std::string::npos) << out;
  EXPECT_EQ(file_bytes(b.dir() + "/rank-00001.prof"), rank1);
  std::ofstream(other + "/r1") << "old";
  fs::create_hard_link(other + "/r1", other + "/r2");
  EXPECT_EQ(run_cli(b.dir() + " -o " + other + "/r1 --json " + other + "/r2", &out), 1);
  EXPECT_NE(out.find("-o and --json both name"), std::string::npos) << out;
  fs::remove_all(other);
  EXPECT_EQ(run_cli(b.dir() + " -q -o /dev/null --json /dev/null", &out), 0) << out;  // (a device takes both)
  for (const char* empty : {" -o ''", " --json ''", " --chrome-trace ''", " --window ''", " --otf2 ''"}) {
    EXPECT_EQ(run_cli(b.dir() + empty, &out), 1) << empty;
    EXPECT_NE(out.find("empty value"), std::string::npos) << empty << ": " << out;
  }
  // Every usage error in the one form a script can look for, what the
  // command line parser finds included.
  for (const std::string& args :
       std::vector<std::string>{" -j 0", " --index --no-index", " " + b.dir(), " --bogus", " -j abc", " -o a -o b"}) {
    EXPECT_EQ(run_cli(b.dir() + args, &out), 1) << args;
    EXPECT_EQ(out.rfind("prof-analyze: error: ", 0), 0u) << args << ": " << out;
  }
}

// An output that cannot be written is found before the analysis (a long one
// is not lost to a mistyped directory): exit 1, named with the reason, and
// no other output written meanwhile.
TEST(Outputs, AnOutputThatCannotBeWrittenIsSaidBeforeTheAnalysis) {
  TraceBuilder b(3);
  build(b);
  const std::string report = b.dir() + "/report.txt";
  std::string out;
  for (const std::string& bad : {b.dir() + "/no-such-dir/r.json", b.dir()}) {
    EXPECT_EQ(run_cli(b.dir() + " -q -o " + report + " --json " + bad, &out), 1) << bad;
    EXPECT_EQ(out.rfind("prof-analyze: error: --json " + bad + ": cannot write the file: ", 0), 0u) << out;
    EXPECT_FALSE(std::filesystem::exists(report)) << bad;
  }
  EXPECT_NE(out.find("is a directory"), std::string::npos) << out;
  EXPECT_EQ(run_cli("--compare " + b.dir() + " " + b.dir() + " -o " + b.dir() + "/no-such-dir/c.txt", &out), 1);
  EXPECT_NE(out.find("-o " + b.dir() + "/no-such-dir/c.txt: cannot write the file: its directory"), std::string::npos)
      << out;
  ASSERT_EQ(run_cli(b.dir() + " -q -o " + report, &out), 0) << out;
  EXPECT_TRUE(std::filesystem::exists(report));
}

// A report written again replaces the file whole, through a temporary file
// beside it: a link to the report stays a link, the file keeps its mode, no
// temporary file stays behind, and a device is still written as named.
TEST(Outputs, AReportReplacesTheFileItLeadsToKeepingLinksAndMode) {
  TraceBuilder b(3);
  build(b);
  const std::string dir = b.dir() + "/reports";
  fs::create_directory(dir);
  const std::string report = dir + "/report.txt";
  { std::ofstream(report) << "an earlier report\n"; }
  fs::permissions(report, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::create_symlink("report.txt", dir + "/latest.txt");
  std::string out;
  ASSERT_EQ(run_cli(b.dir() + " -q -o " + dir + "/latest.txt --json /dev/null", &out), 0) << out;
  EXPECT_TRUE(fs::is_symlink(dir + "/latest.txt"));
  std::ifstream in(report);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("an earlier report"), std::string::npos);
  EXPECT_NE(text.find("Parallelization Efficiency"), std::string::npos) << text;
  EXPECT_EQ(fs::status(report).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"latest.txt", "report.txt"}));
}

// TMPDIR names where the root causes' temporary file goes: one that is no
// directory is the setting's mistake (exit 1, named), found before the analysis.
TEST(Outputs, TmpdirThatIsNoDirectoryIsAUsageError) {
  TraceBuilder b(3);
  build(b);
  std::string out;
  for (const std::string& tmpdir : {b.dir() + "/none", b.dir() + "/rank-00000.prof"}) {
    const std::string command =
        "TMPDIR=" + tmpdir + " " + PROF_ANALYZE_BIN + " --no-progress -q " + b.dir() + " --json /dev/null";
    EXPECT_EQ(run_shell(command, &out), 1) << tmpdir;
    EXPECT_NE(out.find("TMPDIR '" + tmpdir + "'"), std::string::npos) << out;
  }
  const std::string writable =
      "TMPDIR=" + b.dir() + " " + PROF_ANALYZE_BIN + " --no-progress -q " + b.dir() + " --json /dev/null";
  EXPECT_EQ(run_shell(writable, &out), 0) << out;
}

// PROF_ANALYZE_WORKER_STATS is 1 or 0; "no" is a mistake said, not "on".
TEST(Outputs, DiagnosticSettingsAreChecked) {
  TraceBuilder b(3);
  build(b);
  std::string out;
  const auto with = [&](const std::string& value) {
    return run_shell("PROF_ANALYZE_WORKER_STATS=" + value + " " + PROF_ANALYZE_BIN + " --no-progress -q -o /dev/null " +
                         b.dir(),
                     &out);
  };
  EXPECT_EQ(with("no"), 1);
  EXPECT_EQ(out.rfind("prof-analyze: error: PROF_ANALYZE_WORKER_STATS 'no'", 0), 0u) << out;
  EXPECT_EQ(with("0"), 0);
  EXPECT_TRUE(out.empty()) << out;
  EXPECT_EQ(with("1"), 0);
  EXPECT_NE(out.find("worker"), std::string::npos) << out;
  // The phase log is an output file: one that cannot be written is said first.
  EXPECT_EQ(run_shell("PROF_ANALYZE_PHASE_LOG=" + b.dir() + "/no-such-dir/log " + PROF_ANALYZE_BIN +
                          " --no-progress -q -o /dev/null " + b.dir(),
                      &out),
            1);
  EXPECT_EQ(out.rfind("prof-analyze: error: PROF_ANALYZE_PHASE_LOG " + b.dir() + "/no-such-dir/log: cannot write", 0),
            0u)
      << out;
}

TEST(Outputs, LibraryWritersAgreeWithTheBinary) {
  TraceBuilder b(3);
  build(b);
  const auto a = analyze_checked(b.dir());
  std::ostringstream lib;
  analysis::write_text_report(a, lib);
  std::string cli;
  ASSERT_EQ(run_cli(b.dir(), &cli), 0);
  EXPECT_EQ(lib.str(), cli);
  // And the Chrome writer through the library.
  trace::TraceDir td = trace::TraceDir::open(b.dir());
  std::ostringstream chrome;
  std::string err;
  analysis::ChromeTraceStats st;
  ASSERT_TRUE(analysis::write_chrome_trace(td, chrome, &err, &st)) << err;
  EXPECT_EQ(st.flows, 6u);
  json parsed;
  EXPECT_NO_THROW(parsed = json::parse(chrome.str()));
  EXPECT_TRUE(parsed.contains("traceEvents"));
}

// "-" as an output's FILE is stdout, so a report can be piped (`--json - |
// jq`): that output alone goes there, two of them cannot share it, and a
// file that cannot be written is named with the reason.
TEST(Outputs, DashWritesThatOutputAloneToStdout) {
  TraceBuilder b(3);
  build(b);
  std::string json_out;
  ASSERT_EQ(run_cli(b.dir() + " -q --json -", &json_out), 0);
  json parsed;
  ASSERT_NO_THROW(parsed = json::parse(json_out)) << json_out.substr(0, 200);
  EXPECT_EQ(parsed.at("processors"), 3);

  std::string chrome_out;
  ASSERT_EQ(run_cli(b.dir() + " -q --chrome-trace -", &chrome_out), 0);
  ASSERT_NO_THROW(parsed = json::parse(chrome_out)) << chrome_out.substr(0, 200);
  EXPECT_TRUE(parsed.contains("traceEvents"));

  // -o - is the text report on stdout, as without -o; the JSON then goes to its file.
  std::string plain, dashed;
  ASSERT_EQ(run_cli(b.dir() + " -q", &plain), 0);
  ASSERT_EQ(run_cli(b.dir() + " -q -o - --json " + b.dir() + "/r.json", &dashed), 0);
  EXPECT_EQ(dashed, plain);
  EXPECT_NO_THROW(parsed = json::parse(file_bytes(b.dir() + "/r.json")));

  std::string msg;
  EXPECT_EQ(run_cli(b.dir() + " --json - --chrome-trace -", &msg), 1);
  EXPECT_NE(msg.find("only one of"), std::string::npos) << msg;
  EXPECT_EQ(run_cli(b.dir() + " -q --json " + b.dir() + "/no-such-dir/r.json", &msg), 1);
  EXPECT_NE(msg.find("no-such-dir/r.json: cannot write the file: its directory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("Level"), std::string::npos) << msg;  // (no text report on stdout before it)
}

// --window reaches every output: the text names it, the JSON has it, and the
// Chrome trace keeps only what overlaps it; a bad one is refused by name, and
// one that holds none of the run is warned of.
TEST(Outputs, WindowInEveryOutput) {
  TraceBuilder b(3);
  build(b);
  const std::string json_path = b.dir() + "/w.json", chrome_path = b.dir() + "/w-chrome.json";
  std::string out;
  ASSERT_EQ(run_cli(b.dir() + " --window 0.0039:0.0054 --json " + json_path + " --chrome-trace " +
                        chrome_path,
                    &out),
            0)
      << out;
  EXPECT_NE(out.find("Window 0.003900 .. 0.005400"), std::string::npos) << out;
  const json j = json::parse(file_bytes(json_path));
  EXPECT_DOUBLE_EQ(j["window"]["from"].get<double>(), 0.0039);
  EXPECT_DOUBLE_EQ(j["window"]["to"].get<double>(), 0.0054);
  EXPECT_LE(j["intervals"][0]["main"]["execution_time"].get<double>(), 0.0015 + 1e-9);
  const json c = json::parse(file_bytes(chrome_path));
  for (const auto& ev : c["traceEvents"])
    if (ev.value("ph", "") == "X") {
      EXPECT_LE(ev["ts"].get<double>(), 5400.0 + 1e-3);
      EXPECT_GE(ev["ts"].get<double>() + ev["dur"].get<double>(), 3900.0 - 1e-3);
    }
  // (Hexadecimal and infinities, which strtod reads, are no seconds either.)
  for (const char* bad : {"2:1", "1", "a:b", "-1:2", "1:", "0x1:2", "0:0x1p-3", "' 0:1'", "0:inf"}) {
    std::string msg;
    EXPECT_EQ(run_cli(b.dir() + " --window " + bad, &msg), 1) << bad;
    EXPECT_NE(msg.find("--window"), std::string::npos) << msg;
  }
  // A window that holds none of the run (which starts at 1 ms, as MPI_Init
  // returns, and ends at 20 ms, its ranks' MPI_Finalize) is said so on
  // stderr, unless -q; one that overlaps the run, even past its end, is not.
  const std::string empty = "holds none of the run";
  EXPECT_EQ(out.find(empty), std::string::npos) << out;
  std::string warned;
  ASSERT_EQ(run_cli(b.dir() + " --window 5:6 -o /dev/null", &warned), 0) << warned;
  EXPECT_NE(warned.find("warning: --window 5:6 holds none of the run"), std::string::npos) << warned;
  ASSERT_EQ(run_cli(b.dir() + " --window 0:0.0005 -o /dev/null", &warned), 0) << warned;
  EXPECT_NE(warned.find("warning: --window 0:0.0005 holds none of the run"), std::string::npos) << warned;
  ASSERT_EQ(run_cli(b.dir() + " --window 0.0195:6 -o /dev/null", &warned), 0) << warned;
  EXPECT_EQ(warned.find(empty), std::string::npos) << warned;
  ASSERT_EQ(run_cli(b.dir() + " --window 5:6 -q -o /dev/null", &warned), 0) << warned;
  EXPECT_EQ(warned.find(empty), std::string::npos) << warned;
}

// A whole analysis writes the window index beside the trace when asked to
// (--index), which the next --window uses; --no-index writes none, and by
// default none is written either, with or without cores to spare (the report
// is the same each time).
TEST(Outputs, AWholeAnalysisWritesTheWindowIndexUnlessNoIndex) {
  TraceBuilder b(3);
  build(b);
  const std::string index = b.dir() + "/window-index.bin";
  std::string without, with, out;
  ASSERT_EQ(run_cli(b.dir() + " --no-index", &without), 0) << without;
  EXPECT_FALSE(std::filesystem::exists(index));
  ASSERT_EQ(run_cli(b.dir() + " --window 0.0039:0.0054 --no-index", &out), 0) << out;
  EXPECT_NE(out.find("index built in memory"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(index));
  ASSERT_EQ(run_cli(b.dir() + " -j 1", &with), 0) << with;
  EXPECT_EQ(with, without);
  EXPECT_FALSE(std::filesystem::exists(index));
  // Nor with threads to spare (3 ranks): without --index no pass is made.
  ASSERT_EQ(run_cli(b.dir() + " -j 8", &with), 0) << with;
  EXPECT_EQ(with, without);
  EXPECT_FALSE(std::filesystem::exists(index));
  // Nor does a comparison, which analyzes each trace as `prof-analyze DIR` does.
  ASSERT_EQ(run_cli("--compare " + b.dir() + " " + b.dir() + " -j 8", &out), 0) << out;
  EXPECT_FALSE(std::filesystem::exists(index));
  ASSERT_EQ(run_cli(b.dir() + " --index", &with), 0) << with;
  EXPECT_EQ(with, without);
  EXPECT_TRUE(std::filesystem::exists(index));
  ASSERT_EQ(run_cli(b.dir() + " --window 0.0039:0.0054", &out), 0) << out;
  EXPECT_NE(out.find("index used " + index), std::string::npos) << out;
}

// How each rank ended, in the JSON (`run_end`, always there) and, for a run
// that did not end cleanly, in a text section after Level 0.
TEST(Outputs, RunEndSaysHowEachRankEnded) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) b.init(r, 0, 1 * kMs);
  b.collective(0, Barrier, 2 * kMs, 3 * kMs);
  b.collective(1, Barrier, 2 * kMs, 3 * kMs);
  b.collective(2, Barrier, 2 * kMs, 3 * kMs);
  b.finalize(0, 5 * kMs, 6 * kMs);
  b.other(1, CommRank, 7 * kMs, 8 * kMs);
  b.other(2, CommRank, 4 * kMs, 4500 * kUs);
  b.close(0);
  b.close(1, "signal:15");
  b.close(2, "");  // no word: killed
  const std::string json_path = b.dir() + "/end.json";
  std::string out;
  run_cli(b.dir() + " --json " + json_path, &out);
  const json j = json::parse(file_bytes(json_path));
  ASSERT_TRUE(j.contains("run_end")) << out;
  EXPECT_FALSE(j["run_end"]["complete"].get<bool>());
  ASSERT_EQ(j["run_end"]["ranks"].size(), 3u);
  EXPECT_EQ(j["run_end"]["ranks"][0]["ended_by"], "finalize");
  EXPECT_EQ(j["run_end"]["ranks"][1]["ended_by"], "signal SIGTERM");
  EXPECT_EQ(j["run_end"]["ranks"][2]["ended_by"], "killed");
  EXPECT_NEAR(j["run_end"]["ranks"][1]["last_alive"].get<double>(), 0.008, 1e-9);
  EXPECT_NEAR(j["run_end"]["ranks"][2]["last_alive"].get<double>(), 0.0045, 1e-9);
  EXPECT_EQ(j["run_end"]["ranks"][0]["records_lost"], 0);
  EXPECT_TRUE(j["run_end"]["wait_cycles"].is_array());
  EXPECT_NE(out.find("---Where each rank was when the run ended---"), std::string::npos) << out;
  EXPECT_NE(out.find("1 signal SIGTERM 0.008000 0"), std::string::npos) << out;

  // A clean run says so, and has no such section.
  TraceBuilder clean(3);
  build(clean);
  std::string clean_out;
  ASSERT_EQ(run_cli(clean.dir() + " --json " + clean.dir() + "/c.json", &clean_out), 0);
  EXPECT_TRUE(json::parse(file_bytes(clean.dir() + "/c.json"))["run_end"]["complete"].get<bool>());
  EXPECT_EQ(clean_out.find("Where each rank was"), std::string::npos);
}

// Killed while rank 0 waits in an MPI_ANY_SOURCE receive nobody satisfies and
// ranks 1 and 2 in a barrier rank 0 never enters, all inside interval 1: each
// call in flight counts as a call and as MPI time up to the rank's last
// heartbeat, the interval closes there, and the receive (waiting for every
// other member) and each barrier (waiting for rank 0) make two cycles.
TEST(Outputs, CallsInFlightAnySourceAndBarrier) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) {
    b.init(r, 0, 1 * kMs);
    b.marker(r, 2 * kMs, 1, true);
  }
  b.w(0).live(10 * kMs, {in_flight_slot(Recv, 3 * kMs, format::kAnySourceRank, 5, kWorld)});
  b.w(1).live(10 * kMs, {in_flight_slot(Barrier, 4 * kMs, -1, -1, kWorld)});
  b.w(2).live(9 * kMs, {in_flight_slot(Barrier, 4 * kMs, -1, -1, kWorld)});
  for (int r = 0; r < 3; ++r) b.close(r, "");
  const std::string json_path = b.dir() + "/end.json";
  std::string out;
  run_cli(b.dir() + " --json " + json_path + " --chrome-trace " + b.dir() + "/c.json", &out);
  const json j = json::parse(file_bytes(json_path));
  const json& ranks = j["run_end"]["ranks"];
  ASSERT_EQ(ranks.size(), 3u) << out;
  EXPECT_NEAR(ranks[0]["last_alive"].get<double>(), 0.010, 1e-9);
  EXPECT_NEAR(ranks[2]["last_alive"].get<double>(), 0.009, 1e-9);
  const json& recv = ranks[0]["in_flight"];
  ASSERT_TRUE(recv.is_object()) << ranks[0];
  EXPECT_EQ(recv["function"], "MPI_Recv");
  EXPECT_NEAR(recv["entered"].get<double>(), 0.003, 1e-9);
  EXPECT_EQ(recv["peer"], "MPI_ANY_SOURCE");
  EXPECT_EQ(recv["tag"], 5);
  EXPECT_EQ(recv["waiting_for"], json({1, 2}));
  for (int r : {1, 2}) {
    EXPECT_EQ(ranks[r]["in_flight"]["function"], "MPI_Barrier");
    EXPECT_EQ(ranks[r]["in_flight"]["waiting_for"], json({0})) << ranks[r];
    // Every key of docs/interfaces.md's in_flight, null where a barrier has none.
    for (const char* key : {"function", "entered", "file", "line", "comm", "peer", "tag", "waiting_for"})
      EXPECT_TRUE(ranks[r]["in_flight"].contains(key)) << key << ' ' << ranks[r];
    EXPECT_EQ(ranks[r]["in_flight"]["comm"], 0) << ranks[r];
    EXPECT_TRUE(ranks[r]["in_flight"]["peer"].is_null()) << ranks[r];
    EXPECT_TRUE(ranks[r]["in_flight"]["tag"].is_null()) << ranks[r];
  }
  EXPECT_EQ(j["run_end"]["wait_cycles"], json({{0, 1}, {0, 2}}));
  // The warnings name the world as the report does.
  EXPECT_NE(out.find("  MPI_COMM_WORLD, collective #1: 2 of 3 members"), std::string::npos) << out;
  const json* node = nullptr;
  for (const json& i : j["intervals"])
    if (i["id"] == 1) node = &i;
  ASSERT_NE(node, nullptr);
  EXPECT_EQ((*node)["calls"]["MPI_Recv"], 1);
  EXPECT_EQ((*node)["calls"]["MPI_Barrier"], 2);
  const json& per = (*node)["per_rank"];
  EXPECT_NEAR(per[0]["mpi_time"].get<double>(), 0.007, 1e-9);  // 3 ms .. 10 ms
  EXPECT_NEAR(per[0]["time"].get<double>(), 0.008, 1e-9);      // 2 ms .. 10 ms
  EXPECT_NEAR(per[2]["mpi_time"].get<double>(), 0.005, 1e-9);  // 4 ms .. 9 ms
  // (No load map in this trace: the call site is its address.)
  EXPECT_NE(out.find("Rank 0 inside MPI_Recv since 0.003000 s at 0x401000, peer MPI_ANY_SOURCE"),
            std::string::npos) << out;
  EXPECT_NE(out.find("Deadlock: ranks 0 and 1 wait for each other in MPI_Recv (0x401000), "
                     "MPI_Barrier (0x401000)"),
            std::string::npos) << out;
  EXPECT_EQ(file_bytes(b.dir() + "/c.json").find("\"in_flight\":true") == std::string::npos, false);
}

// Ranks 0 and 1 killed in a mutual MPI_Recv, rank 0's made through a Fortran
// binding: its slot's site lies in the binding's library, the binding's site
// (format::LiveSlot) in the application, and every output names the latter.
// Rank 1's Live chunk has the older 32-byte stride (no binding site): its
// slot's own site.
TEST(Outputs, CallInFlightThroughABindingAtTheApplicationsSite) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  format::LiveSlot through_binding{};
  through_binding.slot = in_flight_slot(Recv, 3 * kMs, 1, 7, kWorld);
  through_binding.slot.site_func = 0x7f0000055dcfu | (uint64_t{Recv} << 48);  // in the binding
  through_binding.binding_site = 0x402000;
  b.w(0).live(10 * kMs, std::vector<format::LiveSlot>{through_binding});
  b.w(1).live(10 * kMs, {in_flight_slot(Recv, 3 * kMs, 0, 7, kWorld)});
  b.close("");
  const std::string json_path = b.dir() + "/end.json", chrome_path = b.dir() + "/c.json";
  std::string out;
  run_cli(b.dir() + " --json " + json_path + " --chrome-trace " + chrome_path, &out);
  const json ranks = json::parse(file_bytes(json_path))["run_end"]["ranks"];
  ASSERT_EQ(ranks.size(), 2u) << out;
  // (No load map in this trace: a call site is its address.)
  EXPECT_EQ(ranks[0]["in_flight"]["file"], "0x402000") << ranks[0];
  EXPECT_EQ(ranks[1]["in_flight"]["file"], "0x401000") << ranks[1];
  EXPECT_NE(out.find("Rank 0 inside MPI_Recv since 0.003000 s at 0x402000, peer 1"),
            std::string::npos) << out;
  EXPECT_NE(out.find("Deadlock: ranks 0 and 1 wait for each other in MPI_Recv (0x402000), "
                     "MPI_Recv (0x401000)"),
            std::string::npos) << out;
  const json chrome = json::parse(file_bytes(chrome_path));
  const json& events = chrome.is_object() ? chrome["traceEvents"] : chrome;
  std::map<long long, std::string> site_of_track;
  for (const json& e : events)
    if (e.contains("args") && e["args"].value("in_flight", false))
      site_of_track[e["tid"].get<long long>()] = e["args"].value("site", "");
  EXPECT_EQ(site_of_track, (std::map<long long, std::string>{{0, "0x402000"}, {1, "0x401000"}}));
}

// The JSON report of a run whose ranks were all killed (no end reason); the
// text report in *out.
json killed_run_report(TraceBuilder& b, std::string* out) {
  b.close("");
  const std::string json_path = b.dir() + "/end.json";
  run_cli(b.dir() + " --json " + json_path, out);
  return json::parse(file_bytes(json_path));
}

// A deadlock is a set of ranks none of which any rank of the run could
// release. Rank 0 receives from MPI_ANY_SOURCE, rank 1 from rank 0: when rank
// 2 was computing as the job was killed (no call in flight), it could still
// have sent to rank 0, so no cycle is a deadlock; when rank 2 had finished
// (MPI_Finalize), ranks 0 and 1 are deadlocked. A rank inside MPI_Finalize
// waits for the ranks that never reached it; members of one collective
// instance inside different collectives wait for each other.
TEST(Outputs, CallsInFlightDeadlockOnlyWhereNoRankCanRelease) {
  for (const bool third_finished : {false, true}) {
    TraceBuilder b(3);
    for (int r = 0; r < 3; ++r) b.init(r, 0, 1 * kMs);
    b.w(0).live(10 * kMs, {in_flight_slot(Recv, 3 * kMs, format::kAnySourceRank, 5, kWorld)});
    b.w(1).live(10 * kMs, {in_flight_slot(Recv, 4 * kMs, 0, 5, kWorld)});
    if (third_finished) b.finalize(2, 5 * kMs, 6 * kMs);
    b.close(0, "signal:15");
    b.close(1, "signal:15");
    b.close(2, third_finished ? "finalize" : "signal:15");
    const std::string json_path = b.dir() + "/end.json";
    std::string out;
    run_cli(b.dir() + " -o " + b.dir() + "/r.txt --json " + json_path, &out);
    const json j = json::parse(file_bytes(json_path));
    EXPECT_EQ(j["run_end"]["ranks"][0]["in_flight"]["waiting_for"], json({1, 2})) << out;
    EXPECT_EQ(j["run_end"]["wait_cycles"], third_finished ? json({{0, 1}}) : json::array()) << third_finished;
    EXPECT_NE(file_bytes(b.dir() + "/r.txt").find("waiting for any of 1, 2"), std::string::npos);
  }
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.w(0).live(10 * kMs, {in_flight_slot(Recv, 3 * kMs, 1, 5, kWorld)});
  b.w(1).live(10 * kMs, {in_flight_slot(Finalize, 4 * kMs, -1, -1, 0)});
  b.close("signal:15");
  const std::string json_path = b.dir() + "/end.json";
  run_cli(b.dir() + " -q --json " + json_path);
  const json j = json::parse(file_bytes(json_path));
  EXPECT_EQ(j["run_end"]["ranks"][1]["in_flight"]["function"], "MPI_Finalize");
  EXPECT_EQ(j["run_end"]["ranks"][1]["in_flight"]["waiting_for"], json({0}));
  EXPECT_EQ(j["run_end"]["wait_cycles"], json({{0, 1}}));
  // Rank 0 in MPI_Barrier, rank 1 in MPI_Allreduce, each the world's first
  // collective: each waits for the other (the counts alone find both there).
  TraceBuilder mismatch(2);
  for (int r = 0; r < 2; ++r) mismatch.init(r, 0, 1 * kMs);
  mismatch.w(0).live(10 * kMs, {in_flight_slot(Barrier, 3 * kMs, -1, -1, kWorld)});
  mismatch.w(1).live(10 * kMs, {in_flight_slot(Allreduce, 4 * kMs, -1, -1, kWorld)});
  mismatch.close("signal:15");
  run_cli(mismatch.dir() + " -q --json " + json_path);
  const json m = json::parse(file_bytes(json_path));
  EXPECT_EQ(m["run_end"]["ranks"][0]["in_flight"]["waiting_for"], json({1}));
  EXPECT_EQ(m["run_end"]["ranks"][1]["in_flight"]["waiting_for"], json({0}));
  EXPECT_EQ(m["run_end"]["wait_cycles"], json({{0, 1}}));
}

// Irecvs from a rank that never sends, then a Waitall in flight on both ranks:
// the Waitall waits for the peers of the requests still active (a cycle). A
// slot whose call was recorded (the process died between the record and
// clearing the slot) is no call in flight; a rank that was computing is alive
// until its heartbeat, where its open interval closes.
TEST(Outputs, CallsInFlightWaitallAndRecordedSlot) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) {
    b.init(r, 0, 1 * kMs);
    b.marker(r, 2 * kMs, 1, true);
  }
  for (int r = 0; r < 2; ++r) {
    b.irecv(r, 3 * kMs, 3 * kMs + 10, 1 - r, 1, 0xA0 + r);
    b.irecv(r, 4 * kMs, 4 * kMs + 10, 1 - r, 2, 0xB0 + r);
    b.w(r).live(20 * kMs, {in_flight_slot(Waitall, 5 * kMs, -1, 2, 0, 0xA0 + r)});
  }
  b.other(2, CommRank, 5 * kMs, 6 * kMs);
  b.w(2).live(30 * kMs, {in_flight_slot(CommRank, 5 * kMs, -1, -1, 0)});
  std::string out;
  const json j = killed_run_report(b, &out);
  const json& ranks = j["run_end"]["ranks"];
  ASSERT_EQ(ranks.size(), 3u) << out;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r]["in_flight"]["function"], "MPI_Waitall") << ranks[r];
    EXPECT_EQ(ranks[r]["in_flight"]["waiting_for"], json({1 - r})) << ranks[r];
  }
  EXPECT_TRUE(ranks[2]["in_flight"].is_null()) << ranks[2];
  EXPECT_NEAR(ranks[2]["last_alive"].get<double>(), 0.030, 1e-9);
  EXPECT_EQ(j["run_end"]["wait_cycles"], json({{0, 1}}));
  for (const json& i : j["intervals"])
    if (i["id"] == 1) {
      EXPECT_NEAR(i["per_rank"][2]["time"].get<double>(), 0.028, 1e-9);  // 2 ms .. 30 ms
      EXPECT_NEAR(i["per_rank"][0]["mpi_time"].get<double>(), 0.015 + 20e-9, 1e-9);
    }
}

// A call in flight counts in the call-site profile as in the function
// profile: at a site a record of its function defined (rank 0's Allreduce at
// app.c:300, index 2), and at one no record defined (rank 1's Recv: the
// shim gives a site its index when a record first carries it), reported by
// address as any unresolved site. With PROF_CALLSITES=0 it has no site.
TEST(Outputs, CallsInFlightCountInTheCallSiteProfile) {
  for (const bool sites_off : {false, true}) {
    TraceBuilder b(2);
    for (int r = 0; r < 2; ++r) {
      b.init(r, 0, 1 * kMs);
      if (sites_off) b.w(r).setting("PROF_CALLSITES", {"0", true});
      b.collective(r, Allreduce, 2 * kMs, 3 * kMs, kWorld, 8, format::kNoRequest, 0, sites_off ? 0 : 1);
    }
    format::InFlightSlot allreduce = in_flight_slot(Allreduce, 5 * kMs, -1, -1, kWorld);
    allreduce.site_func = 0x403000u | (uint64_t{Allreduce} << 48);
    b.w(0).live(20 * kMs, {allreduce});
    format::InFlightSlot recv = in_flight_slot(Recv, 4 * kMs, 0, 9, kWorld);
    recv.site_func = 0x405000u | (uint64_t{Recv} << 48);
    b.w(1).live(20 * kMs, {recv});
    std::string out;
    const json j = killed_run_report(b, &out);
    const json& root = j["intervals"][0];
    ASSERT_EQ(root["calls"]["MPI_Recv"], 1) << out;
    ASSERT_EQ(root["calls"]["MPI_Allreduce"], 3) << out;
    std::map<std::string, json> by_site;
    for (const json& c : root["callsites"]) by_site[c["function"].get<std::string>() + " " + c["site"].get<std::string>()] = c;
    if (sites_off) {
      EXPECT_TRUE(by_site.empty()) << root["callsites"];
      continue;
    }
    ASSERT_EQ(by_site.size(), 3u) << root["callsites"];
    const json& recorded = by_site["MPI_Allreduce app.c:200"];
    EXPECT_EQ(recorded["calls"], 2) << recorded;
    EXPECT_NEAR(recorded["time"].get<double>(), 0.002, 1e-9);
    const json& in_flight = by_site["MPI_Allreduce app.c:300"];
    EXPECT_EQ(in_flight["calls"], 1) << root["callsites"];
    EXPECT_NEAR(in_flight["time"].get<double>(), 0.015, 1e-9);
    const json& first_at_its_site = by_site["MPI_Recv 0x405000"];
    EXPECT_EQ(first_at_its_site["calls"], 1) << root["callsites"];
    EXPECT_NEAR(first_at_its_site["time"].get<double>(), 0.016, 1e-9);
    EXPECT_TRUE(first_at_its_site["file"].is_null());
  }
}

// A Waitall given 2 of the rank's 3 active requests (two receives from rank
// 1, one from rank 2): the trace does not say which, so it may wait for rank
// 1 alone, which was computing when the job was killed and could have
// released it; then rank 0 could have sent to rank 2, which waits for it. No
// deadlock. Given all 3, it needs rank 2 too: ranks 0 and 2 are deadlocked.
TEST(Outputs, CallsInFlightWaitallOfSomeActiveRequestsWaitsForAnyOfTheirPeers) {
  for (const int count : {2, 3}) {
    TraceBuilder b(3);
    for (int r = 0; r < 3; ++r) b.init(r, 0, 1 * kMs);
    b.irecv(0, 3 * kMs, 3 * kMs + 10, 1, 1, 0xA0);
    b.irecv(0, 4 * kMs, 4 * kMs + 10, 1, 2, 0xA1);
    b.irecv(0, 5 * kMs, 5 * kMs + 10, 2, 3, 0xA2);
    b.w(0).live(20 * kMs, {in_flight_slot(Waitall, 6 * kMs, -1, count, 0, 0xA0)});
    b.w(2).live(20 * kMs, {in_flight_slot(Recv, 4 * kMs, 0, 9, kWorld)});
    b.close("signal:15");
    const std::string json_path = b.dir() + "/end.json";
    std::string out;
    run_cli(b.dir() + " -o " + b.dir() + "/r.txt --json " + json_path, &out);
    const json j = json::parse(file_bytes(json_path));
    EXPECT_EQ(j["run_end"]["ranks"][0]["in_flight"]["waiting_for"], json({1, 2})) << out;
    EXPECT_EQ(j["run_end"]["wait_cycles"], count == 2 ? json::array() : json({{0, 2}})) << count << " requests";
    EXPECT_EQ(file_bytes(b.dir() + "/r.txt").find("waiting for any of 1, 2") != std::string::npos, count == 2);
  }
}

// Ranks 0 and 1 wait (MPI_Wait) for an MPI_Ibcast that rank 2 never enters,
// since rank 2 waits in a receive from rank 0: a nonblocking collective's
// request waits for the members that had not entered its instance, so 0 and 2
// wait for each other; rank 1 waits for 2 and is in no cycle of its own.
TEST(Outputs, CallsInFlightWaitOnNonblockingCollective) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) b.init(r, 0, 1 * kMs);
  for (int r = 0; r < 2; ++r) {
    b.collective(r, Ibcast, 3 * kMs, 3 * kMs + 10, kWorld, 8, 0xC0 + r);
    b.w(r).live(20 * kMs, {in_flight_slot(Wait, 5 * kMs, -1, 1, 0, 0xC0 + r)});
  }
  b.w(2).live(20 * kMs, {in_flight_slot(Recv, 4 * kMs, 0, 9, kWorld)});
  std::string out;
  const json j = killed_run_report(b, &out);
  const json& ranks = j["run_end"]["ranks"];
  ASSERT_EQ(ranks.size(), 3u) << out;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r]["in_flight"]["function"], "MPI_Wait") << ranks[r];
    EXPECT_EQ(ranks[r]["in_flight"]["waiting_for"], json({2})) << ranks[r];
  }
  EXPECT_EQ(ranks[2]["in_flight"]["waiting_for"], json({0})) << ranks[2];
  EXPECT_EQ(j["run_end"]["wait_cycles"], json({{0, 2}}));
}

// A communicator's creation over a parent that every member calls (MPI_Comm_split,
// _dup, Intercomm_merge, ...) waits, as a collective does, for the members
// that had not entered it: counted apart from the parent's collectives, over
// both groups of an intercommunicator. Members inside different creations at
// the same one wait for each other; MPI_Comm_create_group, called by a group
// the trace does not record, waits for nobody.
TEST(Outputs, CallsInFlightCommunicatorCreationWaitsForTheMembersNotInIt) {
  {
    TraceBuilder b(4);
    build_hang_in_comm_split(b);
    const std::string json_path = b.dir() + "/end.json";
    std::string out;
    run_cli(b.dir() + " -o " + b.dir() + "/r.txt --json " + json_path, &out);
    const json j = json::parse(file_bytes(json_path));
    const json& r0 = j["run_end"]["ranks"][0]["in_flight"];
    EXPECT_EQ(r0["function"], "MPI_Comm_split") << out;
    EXPECT_EQ(r0["comm"], 0) << r0;
    EXPECT_EQ(r0["waiting_for"], json({2, 3})) << r0;
    EXPECT_EQ(j["run_end"]["wait_cycles"], json({{0, 2}, {0, 3, 2}}));
    EXPECT_NE(file_bytes(b.dir() + "/r.txt").find("MPI_Comm_split since 0.005000 s at 0x401000, MPI_COMM_WORLD; "
                                                  "members not entered: 2, 3"),
              std::string::npos)
        << file_bytes(b.dir() + "/r.txt");
  }
  const std::string json_path = std::filesystem::temp_directory_path() / "prof-creation-end.json";
  auto report = [&](TraceBuilder& b) {
    b.close("signal:15");
    run_cli(b.dir() + " -q --json " + json_path);
    const json j = json::parse(file_bytes(json_path));
    std::filesystem::remove(json_path);
    return j["run_end"];
  };
  // Ranks 0, 1 and 2 merge the intercommunicator; rank 3 was computing.
  TraceBuilder merge(4);
  for (int r = 0; r < 4; ++r) start_world_halves(merge, r);
  for (int r = 0; r < 3; ++r)
    merge.w(r).live(20 * kMs, {in_flight_slot(IntercommMerge, 5 * kMs, -1, -1, kInterWorldHalves)});
  const json merged = report(merge);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(merged["ranks"][r]["in_flight"]["waiting_for"], json({3})) << r;
  EXPECT_EQ(merged["wait_cycles"], json::array());
  // MPI_Comm_dup on rank 0, MPI_Comm_split on rank 1: each the first creation.
  TraceBuilder mismatch(2);
  for (int r = 0; r < 2; ++r) {
    mismatch.define_comm_creations(r);
    mismatch.init(r, 0, 1 * kMs);
  }
  mismatch.w(0).live(20 * kMs, {in_flight_slot(CommDup, 5 * kMs, -1, -1, kWorld)});
  mismatch.w(1).live(20 * kMs, {in_flight_slot(CommSplit, 5 * kMs, -1, -1, kWorld)});
  const json mismatched = report(mismatch);
  EXPECT_EQ(mismatched["ranks"][0]["in_flight"]["waiting_for"], json({1}));
  EXPECT_EQ(mismatched["ranks"][1]["in_flight"]["waiting_for"], json({0}));
  EXPECT_EQ(mismatched["wait_cycles"], json({{0, 1}}));
  // MPI_Comm_create_group on rank 0, rank 1 receiving from it.
  TraceBuilder group(2);
  for (int r = 0; r < 2; ++r) {
    group.define_comm_creations(r);
    group.init(r, 0, 1 * kMs);
  }
  group.w(0).live(20 * kMs, {in_flight_slot(CommCreateGroup, 5 * kMs, -1, -1, kWorld)});
  group.w(1).live(20 * kMs, {in_flight_slot(Recv, 5 * kMs, 0, 9, kWorld)});
  const json grouped = report(group);
  EXPECT_EQ(grouped["ranks"][0]["in_flight"]["waiting_for"], json::array());
  EXPECT_EQ(grouped["wait_cycles"], json::array());
}

// Ranks waiting, layer after layer, for both ranks of the next layer (a
// Waitall of two receives), the last layer for a rank that finished: 2^40
// paths through the layers, none of them a cycle. Rank 0 waits for rank 1
// and the first layer, rank 1 for rank 0. The cycle search lists [0, 1] and
// ends (a search of every path would not).
TEST(Outputs, CallsInFlightWaitCyclesAmongManyPathsAreFoundInBoundedTime) {
  constexpr int kLayers = 40, kRanks = 2 + 2 * kLayers + 1, kFinished = kRanks - 1;
  TraceBuilder b(kRanks);
  for (int r = 0; r < kRanks; ++r) b.init(r, 0, 1 * kMs);
  // Rank r's receives from `peers` (in flight: a Waitall of them all).
  auto waitall = [&](int r, std::vector<int> peers) {
    const uint32_t first = 0xA000u + static_cast<uint32_t>(r) * 16;
    for (size_t k = 0; k < peers.size(); ++k)
      b.irecv(r, 2 * kMs + k * kUs, 2 * kMs + k * kUs + 10, peers[k], 1, first + static_cast<uint32_t>(k));
    b.w(r).live(20 * kMs, {in_flight_slot(Waitall, 3 * kMs, -1, static_cast<int32_t>(peers.size()), 0, first)});
  };
  waitall(0, {1, 2, 3});
  b.w(1).live(20 * kMs, {in_flight_slot(Recv, 3 * kMs, 0, 1, kWorld)});
  for (int layer = 0; layer < kLayers; ++layer)
    for (int r = 2 + 2 * layer; r < 4 + 2 * layer; ++r) {
      if (layer + 1 < kLayers) waitall(r, {4 + 2 * layer, 5 + 2 * layer});
      else b.w(r).live(20 * kMs, {in_flight_slot(Recv, 3 * kMs, kFinished, 1, kWorld)});
    }
  b.finalize(kFinished, 5 * kMs, 6 * kMs);
  for (int r = 0; r < kRanks; ++r) b.close(r, r == kFinished ? "finalize" : "signal:15");
  const std::string json_path = b.dir() + "/end.json";
  std::string out;
  run_cli(b.dir() + " -q --json " + json_path, &out);
  const json j = json::parse(file_bytes(json_path));
  EXPECT_EQ(j["run_end"]["ranks"][2]["in_flight"]["waiting_for"], json({4, 5})) << out;
  EXPECT_EQ(j["run_end"]["wait_cycles"], json({{0, 1}}));
}

// Two threads of a rank inside calls when it was killed: both are in flight,
// in stream order (`in_flight` the first, `in_flight_threads` both); a thread
// beyond the Live chunk's slots is simply not known.
TEST(Outputs, CallsInFlightOnTwoThreads) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.thread(0, 1);
  b.other(0, CommRank, 2 * kMs, 3 * kMs);
  b.thread(0, 0);
  b.w(0).live(12 * kMs, {in_flight_slot(Recv, 4 * kMs, 1, 3, kWorld),
                         in_flight_slot(Send, 5 * kMs, 1, 4, kWorld)});
  b.finalize(1, 6 * kMs, 7 * kMs);
  b.close(0, "");
  b.close(1);
  const std::string json_path = b.dir() + "/end.json";
  std::string out;
  run_cli(b.dir() + " --json " + json_path, &out);
  const json j = json::parse(file_bytes(json_path));
  const json& r0 = j["run_end"]["ranks"][0];
  EXPECT_EQ(r0["in_flight"]["function"], "MPI_Recv") << r0;
  ASSERT_EQ(r0["in_flight_threads"].size(), 2u) << r0;
  EXPECT_EQ(r0["in_flight_threads"][1]["function"], "MPI_Send");
  EXPECT_EQ(r0["in_flight_threads"][1]["stream"], 1);
  EXPECT_EQ(r0["in_flight_threads"][1]["waiting_for"], json({1}));
  EXPECT_TRUE(j["run_end"]["ranks"][1]["in_flight"].is_null());
  EXPECT_TRUE(j["run_end"]["wait_cycles"].empty());  // rank 1 finalized: waits for nobody
  EXPECT_NE(out.find("Rank 0 (thread 1) inside MPI_Send since 0.005000 s"), std::string::npos)
      << out;
}

// One interval semantics: the analysis and the Chrome export see the same
// executions, including the awkward cases (crossing ids, an end without a
// begin, a begin never closed, markers after MPI_Finalize, a second thread's
// own intervals).
TEST(Outputs, EveryConsumerSeesTheSameIntervalExecutions) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    for (int it = 0; it < 3; ++it) {
      const uint64_t t = (2 + 3 * it) * kMs;
      b.begin(r, t, 1);
      b.begin(r, t + 100 * kUs, 2, 2);
      b.collective(r, Barrier, t + 200 * kUs, t + 300 * kUs);
      b.end(r, t + 400 * kUs, 2, 2);
      b.end(r, t + 500 * kUs, 1);
    }
    b.begin(r, 12 * kMs, 5, 3);
    b.begin(r, 12100 * kUs, 6, 3);
    b.end(r, 12200 * kUs, 5, 3);  // crosses 6: closes it too
    b.end(r, 12300 * kUs, 7, 3);  // no begin
    b.begin(r, 13 * kMs, 8, 3);   // never closed
    b.thread(r, 1);
    b.begin(r, 13100 * kUs, 9, 3);
    b.other(r, CommRank, 13200 * kUs, 13300 * kUs);
    b.end(r, 13400 * kUs, 9, 3);
    b.thread(r, 0);
    b.finalize(r, 20 * kMs, 21 * kMs);
    b.begin(r, 22 * kMs, 10, 3);  // after MPI_Finalize
    b.end(r, 23 * kMs, 10, 3);
  }
  b.close();
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  // Executions and their total time per interval id, from the analysis ...
  std::map<int, std::pair<uint64_t, double>> from_analysis, from_chrome;
  for (const auto& n : a.intervals) {
    const int id = n.id ? *n.id : -1;
    for (const auto& f : n.per_rank) {
      from_analysis[id].first += f.executions;
      from_analysis[id].second += f.time;
    }
  }
  // ... and from the Chrome export's interval slices.
  trace::TraceDir td = trace::TraceDir::open(b.dir());
  std::ostringstream chrome;
  std::string err;
  ASSERT_TRUE(analysis::write_chrome_trace(td, chrome, &err)) << err;
  const json parsed = json::parse(chrome.str());
  for (const auto& ev : parsed["traceEvents"]) {
    if (ev.value("cat", "") != "interval") continue;
    const std::string name = ev["name"];
    int id = -1;
    if (name.rfind("interval ", 0) == 0) id = std::stoi(name.substr(9));
    from_chrome[id].first += 1;
    from_chrome[id].second += ev["dur"].get<double>() * 1e-6;
  }
  ASSERT_EQ(from_chrome.size(), from_analysis.size());
  for (const auto& [id, v] : from_analysis) {
    ASSERT_TRUE(from_chrome.count(id)) << "interval " << id;
    EXPECT_EQ(from_chrome[id].first, v.first) << "interval " << id;
    EXPECT_NEAR(from_chrome[id].second, v.second, 1e-8) << "interval " << id;
  }
  EXPECT_EQ(from_analysis.count(10), 0u);  // after MPI_Finalize: ignored by both
  EXPECT_EQ(from_analysis.count(7), 0u);
  EXPECT_EQ(from_analysis[6].first, 2u);   // closed with 5, on both ranks
  EXPECT_EQ(from_analysis[9].first, 2u);   // the second thread's
  EXPECT_EQ(from_analysis[1].first, 6u);
}

}  // namespace
}  // namespace prof::test
