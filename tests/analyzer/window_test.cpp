// --window FROM:TO (docs/metrics.md, "A window of time"): the characteristics
// of that stretch only. A window over the whole run is the whole run; known
// waits straddling its edges count with their part inside; and the additive
// figures of two windows that split the run add up to the whole run's.
#include <map>
#include <sstream>

#include "prof/analysis/report.h"
#include "trace_builder.h"
#include "window_traces.h"

namespace prof::test {
namespace {

analysis::Options window(double from_s, double to_s) { return window_options(from_s, to_s); }

std::string text_of(const analysis::Analysis& a) { return text_with_functions(a); }

// A window from the trace's start to the last leave (MPI_Finalize's return
// at 21 ms) or past it is the whole run: the same report, JSON and root
// causes included, and no Window line. One that stops short of it, or starts
// after the first event, is a window.
TEST(Window, OverTheWholeRunIsTheWholeRun) {
  TraceBuilder b(2);
  build_known_waits_trace(b);
  auto json_of = [](const analysis::Analysis& a) {
    std::ostringstream out;
    analysis::write_json_report(a, out);
    return out.str();
  };
  const auto whole = analyze_checked(b.dir());
  for (double to : {100.0, ms(21)}) {
    const auto windowed = analyze_checked(b.dir(), window(0, to));
    EXPECT_FALSE(windowed.window.has_value()) << to;
    EXPECT_EQ(text_of(windowed), text_of(whole)) << to;
    EXPECT_EQ(json_of(windowed), json_of(whole)) << to;
  }
  EXPECT_TRUE(analyze_checked(b.dir(), window(0, ms(20.999))).window.has_value());
  EXPECT_TRUE(analyze_checked(b.dir(), window(1e-9, 100)).window.has_value());
  // A caller that has asked (prof-analyze) is not asked again: its answer
  // stands, even where it is not the library's.
  auto decided = window(0, 100);
  decided.window_falls_short = true;
  EXPECT_TRUE(analyze_checked(b.dir(), decided).window.has_value());
}

TEST(Window, WaitsStraddlingTheEdgesCountTheirPartInside) {
  TraceBuilder b(2);
  build_known_waits_trace(b);
  const auto a = analyze_checked(b.dir(), window(ms(5), ms(14)));
  const auto& root = a.intervals[0];
  const auto* r0 = rank_of(root, 0);
  const auto* r1 = rank_of(root, 1);
  ASSERT_TRUE(r0 && r1);
  EXPECT_NEAR(r0->time, ms(9), kTol);
  EXPECT_NEAR(r0->potential_sync, ms(3) + ms(3), kTol);  // 5 .. 8 and 10 .. 13
  EXPECT_NEAR(r0->sendrecv, ms(0.1), kTol);              // 8 .. 8.1
  EXPECT_NEAR(r0->collective, ms(1), kTol);              // 13 .. 14
  EXPECT_NEAR(r0->mpi, ms(3.1) + ms(4), kTol);
  EXPECT_NEAR(r1->mpi, ms(0.2) + ms(1), kTol);
  EXPECT_NEAR(r1->collective, ms(1), kTol);
  EXPECT_NEAR(r1->potential_sync, 0, kTol);
  const auto* i1 = find_interval(a, 1);
  ASSERT_TRUE(i1);
  EXPECT_EQ(i1->exe_count, 2u);                                    // both overlap it
  EXPECT_NEAR(i1->main.execution_time, ms(4) + ms(4.5), kTol);     // 5 .. 9, 9.5 .. 14
  EXPECT_EQ(root.functions.size(), 3u);  // Recv, Send, Allreduce: calls overlapping it

  // A window that only the second execution overlaps.
  const auto late = analyze_checked(b.dir(), window(ms(12), ms(30)));
  const auto* l1 = find_interval(late, 1);
  ASSERT_TRUE(l1);
  EXPECT_EQ(l1->exe_count, 1u);
  EXPECT_NEAR(rank_of(*l1, 0)->potential_sync, ms(1), kTol);  // 12 .. 13
  EXPECT_NEAR(rank_of(*l1, 0)->time, ms(4), kTol);            // 12 .. 16
}

// Per rank and interval, what adds up over time must add up over windows.
TEST(Window, TwoWindowsSplittingTheRunAddUpToIt) {
  TraceBuilder b(2);
  build_known_waits_trace(b);
  for (double cut : {ms(3), ms(8.05), ms(9.2), ms(12), ms(14.99), ms(15.2)}) {
    const auto whole = analyze_checked(b.dir());
    const auto first = analyze_checked(b.dir(), window(0, cut));
    const auto second = analyze_checked(b.dir(), window(cut, 1));
    ASSERT_EQ(first.intervals.size(), whole.intervals.size());
    ASSERT_EQ(second.intervals.size(), whole.intervals.size());
    for (size_t i = 0; i < whole.intervals.size(); ++i) {
      for (const auto& w : whole.intervals[i].per_rank) {
        analysis::RankFigures sum;
        for (const auto* part : {&first, &second})
          if (const auto* f = rank_of(part->intervals[i], w.rank)) {
            sum.time += f->time;
            sum.mpi += f->mpi;
            sum.potential_sync += f->potential_sync;
            sum.sendrecv += f->sendrecv;
            sum.collective += f->collective;
            sum.time_of_start += f->time_of_start;
            sum.time_variation += f->time_variation;
          }
        const std::string where = "cut " + std::to_string(cut) + " interval #" + std::to_string(i) +
                                  " rank " + std::to_string(w.rank);
        EXPECT_NEAR(sum.time, w.time, kTol) << where;
        EXPECT_NEAR(sum.mpi, w.mpi, kTol) << where;
        EXPECT_NEAR(sum.potential_sync, w.potential_sync, kTol) << where;
        EXPECT_NEAR(sum.sendrecv, w.sendrecv, kTol) << where;
        EXPECT_NEAR(sum.collective, w.collective, kTol) << where;
        EXPECT_NEAR(sum.time_of_start, w.time_of_start, kTol) << where;
        EXPECT_NEAR(sum.time_variation, w.time_variation, kTol) << where;
      }
    }
  }
}

}  // namespace
}  // namespace prof::test
