// Root causes of waits and the critical path (docs/metrics.md, "Root causes",
// "Critical path"): synthetic traces with planted delays whose causes and
// path follow by hand from the definitions. Times are integer nanoseconds,
// so an exact figure's tolerance is one nanosecond (kTol); expect_invariants
// checks on every trace that causes sum to at most the waits and that the
// root's time on the critical path is the run's span.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <map>
#include <memory>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "delay_log.h"
#include "made_in_order.h"
#include "trace_builder.h"

namespace prof::test {
namespace {

int index_of(const analysis::Analysis& a, const analysis::IntervalNode* n) {
  return n ? static_cast<int>(n - a.intervals.data()) : -1;
}

analysis::Analysis analyze_with(const TraceBuilder& b, unsigned threads) {
  analysis::Options o;
  o.threads = threads;
  analysis::Analysis a = analyze_checked(b.dir(), o);
  EXPECT_TRUE(a.usable());
  EXPECT_TRUE(a.delay_known);
  return a;
}

// Two ranks, from their start at 1 ms. Before a first Allreduce rank 1
// spends 30 ms in interval 4 and 2 ms in the root, rank 0 10 ms and 2 ms:
// rank 0 waits 20 ms (13..33 ms), in the root. Rank 1's excess is
// 32 - 12 = 20 ms, charged in proportion to its time: 20 * 30/32 ms to
// interval 4, 20 * 2/32 ms to the root.
// Then, in loop interval 1, both spend 10 ms in a nested interval 4, and
// rank 1 40 ms against rank 0's 10 ms in interval 3 before an Allreduce in
// interval 1: rank 0 waits 30 ms (58..88 ms). Since the two last synchronized
// (the first Allreduce's leave, 34 ms) rank 1 spent 54 ms: 40 in interval 3,
// 10 in the inner interval 4, 3 in interval 1 itself, 1 in the root; rank 0
// 24 ms. Its excess, 30 ms, is charged as 30 * 40/54, 30 * 10/54, 30 * 3/54
// and 30 * 1/54 ms. (Measured from the run's start, rank 1's earlier 30 ms
// in the outer interval 4 would take a share.)
TEST(Delay, CausedByTheIntervalThePartnerSpentLongerIn) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    b.begin(r, 2 * kMs, 4);
    b.end(r, (r == 1 ? 32 : 12) * kMs, 4);
    b.collective(r, Allreduce, (r == 1 ? 33 : 13) * kMs, 34 * kMs);
    b.begin(r, 35 * kMs, 1);
    b.begin(r, 36 * kMs, 4, 2);
    b.end(r, 46 * kMs, 4, 2);
    b.begin(r, 47 * kMs, 3);
    b.end(r, (r == 1 ? 87 : 57) * kMs, 3);
    b.collective(r, Allreduce, (r == 1 ? 88 : 58) * kMs, 89 * kMs);
    b.end(r, 90 * kMs, 1);
    b.finalize(r, 100 * kMs, 101 * kMs);
  }
  b.close();
  for (unsigned threads : {1u, 2u}) {
    const auto a = analyze_with(b, threads);
    const auto* in1 = find_interval(a, 1);
    const auto* in3 = find_interval(a, 3);
    const auto* outer4 = find_interval(a, 4, -1, 0);  // the one before the loop
    const auto* inner4 = find_interval(a, 4, -1, 1);
    ASSERT_TRUE(in1 && in3 && outer4 && inner4);
    const auto share = [&](const analysis::IntervalNode& of, const analysis::IntervalNode* cause) {
      for (const auto& c : of.caused_by)
        if (c.interval == index_of(a, cause) && c.rank == 1) return c.seconds;
      return -1.0;
    };
    const auto& root = a.intervals[0];
    ASSERT_EQ(in1->caused_by.size(), 4u) << threads;
    EXPECT_EQ(in1->caused_by[0].interval, index_of(a, in3));  // largest first
    EXPECT_NEAR(share(*in1, in3), ms(30.0 * 40 / 54), kTol);
    EXPECT_NEAR(share(*in1, inner4), ms(30.0 * 10 / 54), kTol);
    EXPECT_NEAR(share(*in1, in1), ms(30.0 * 3 / 54), kTol);
    EXPECT_NEAR(share(*in1, &root), ms(30.0 * 1 / 54), kTol);
    EXPECT_TRUE(in3->caused_by.empty());  // the wait is in interval 1's own call
    // The root holds its nested intervals' causes and the first wait's.
    ASSERT_EQ(root.caused_by.size(), 5u);
    EXPECT_NEAR(share(root, in3), ms(30.0 * 40 / 54), kTol);
    EXPECT_NEAR(share(root, outer4), ms(20.0 * 30 / 32), kTol);
    EXPECT_NEAR(share(root, inner4), ms(30.0 * 10 / 54), kTol);
    EXPECT_NEAR(share(root, in1), ms(30.0 * 3 / 54), kTol);
    EXPECT_NEAR(share(root, &root), ms(20.0 * 2 / 32 + 30.0 * 1 / 54), kTol);
    // Critical path: back from rank 0's end (both end at 100 ms; the lowest
    // rank) to its wait's end at 88 ms, then rank 1 from 88 ms to its start.
    EXPECT_NEAR(a.run_span_s, ms(99), kTol);
    EXPECT_NEAR(root.critical_path_s, ms(99), kTol);
    EXPECT_NEAR(in3->critical_path_s, ms(40), kTol);
    EXPECT_NEAR(inner4->critical_path_s, ms(10), kTol);
    EXPECT_NEAR(outer4->critical_path_s, ms(30), kTol);
    EXPECT_NEAR(in1->critical_path_s, ms(3 + 10 + 40 + 2), kTol);
  }
}

// A pipeline through two messages: rank 0 computes 10 ms in interval 5 and
// sends to rank 1, which waits for it (11 ms, from 2 ms), computes 20 ms in
// interval 6 and sends to rank 2, which waits (35 ms), computes 5 ms in
// interval 7 and ends last. The critical path runs back through both
// messages: 10, 20 and 5 ms in intervals 5, 6 and 7, the rest in the root.
// Neither waiting rank had synchronized with its partner before, so the
// stretches start at the ranks' start (1 ms). Rank 1's wait (2..13 ms) on
// rank 0: rank 0 spent 12 ms (10 in interval 5, 2 in the root), rank 1 1 ms;
// the excess, 11 ms, is charged 11 * 10/12 and 11 * 2/12 ms. Rank 2's wait
// (2..37 ms) on rank 1: rank 1 spent 36 ms (20 in interval 6, 16 in the
// root, where it waited itself: a partner's own wait is named as such, not
// traced further), rank 2 1 ms; 35 ms charged, 35 * 20/36 and 35 * 16/36.
TEST(Delay, PipelineThroughTwoMessages) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) b.init(r, 0, 1 * kMs);
  b.begin(0, 2 * kMs, 5);
  b.end(0, 12 * kMs, 5);
  b.send(0, 13 * kMs, 14 * kMs, 1, 1);
  b.recv(1, 2 * kMs, 15 * kMs, 0, 1);
  b.begin(1, 16 * kMs, 6);
  b.end(1, 36 * kMs, 6);
  b.send(1, 37 * kMs, 38 * kMs, 2, 1);
  b.recv(2, 2 * kMs, 39 * kMs, 1, 1);
  b.begin(2, 40 * kMs, 7);
  b.end(2, 45 * kMs, 7);
  b.finalize(0, 20 * kMs, 51 * kMs);
  b.finalize(1, 40 * kMs, 51 * kMs);
  b.finalize(2, 50 * kMs, 51 * kMs);
  b.close();
  for (unsigned threads : {1u, 3u}) {
    const auto a = analyze_with(b, threads);
    const auto* in5 = find_interval(a, 5);
    const auto* in6 = find_interval(a, 6);
    const auto* in7 = find_interval(a, 7);
    ASSERT_TRUE(in5 && in6 && in7);
    const auto& root = a.intervals[0];
    EXPECT_NEAR(a.run_span_s, ms(49), kTol) << threads;
    EXPECT_NEAR(root.critical_path_s, ms(49), kTol);
    EXPECT_NEAR(in5->critical_path_s, ms(10), kTol);
    EXPECT_NEAR(in6->critical_path_s, ms(20), kTol);
    EXPECT_NEAR(in7->critical_path_s, ms(5), kTol);
    ASSERT_EQ(root.caused_by.size(), 4u);
    auto share = [&](int interval, int rank) {
      for (const auto& c : root.caused_by)
        if (c.interval == interval && c.rank == rank) return c.seconds;
      return -1.0;
    };
    EXPECT_NEAR(share(index_of(a, in6), 1), ms(35.0 * 20 / 36), kTol);
    EXPECT_NEAR(share(0, 1), ms(35.0 * 16 / 36), kTol);
    EXPECT_NEAR(share(index_of(a, in5), 0), ms(11.0 * 10 / 12), kTol);
    EXPECT_NEAR(share(0, 0), ms(11.0 * 2 / 12), kTol);
    EXPECT_EQ(root.caused_by[0].interval, index_of(a, in6));  // largest first
  }
}

// The partner's time in an interval counts even where the waiting rank spent
// as much: after a Barrier (both leave at 3 ms) both ranks spend 10 ms in
// interval 3, then rank 1 20 ms more in interval 5; rank 0 waits 21 ms at an
// Allreduce (15..36 ms). Rank 1 spent 33 ms since the Barrier (10 in
// interval 3, 20 in interval 5, 3 in the root), rank 0 12 ms: the excess,
// 21 ms, is charged 21 * 10/33 ms to interval 3, 21 * 20/33 to interval 5
// and 21 * 3/33 to the root. (Apportioned by the per-interval excesses
// instead, interval 3 would get nothing and interval 5 20 of the 21 ms.)
TEST(Delay, ExcessChargedInProportionToThePartnersTime) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    b.collective(r, Barrier, 2 * kMs, 3 * kMs);
    b.begin(r, 4 * kMs, 3);
    b.end(r, 14 * kMs, 3);
  }
  b.begin(1, 15 * kMs, 5);
  b.end(1, 35 * kMs, 5);
  b.collective(0, Allreduce, 15 * kMs, 37 * kMs);
  b.collective(1, Allreduce, 36 * kMs, 37 * kMs);
  for (int r = 0; r < 2; ++r) b.finalize(r, 40 * kMs, 41 * kMs);
  b.close();
  for (unsigned threads : {1u, 2u}) {
    const auto a = analyze_with(b, threads);
    const auto* in3 = find_interval(a, 3);
    const auto* in5 = find_interval(a, 5);
    ASSERT_TRUE(in3 && in5);
    const auto& root = a.intervals[0];
    ASSERT_EQ(root.caused_by.size(), 3u) << threads;
    EXPECT_EQ(root.caused_by[0].interval, index_of(a, in5));
    EXPECT_EQ(root.caused_by[0].rank, 1);
    EXPECT_NEAR(root.caused_by[0].seconds, ms(21.0 * 20 / 33), kTol);
    EXPECT_EQ(root.caused_by[1].interval, index_of(a, in3));
    EXPECT_EQ(root.caused_by[1].rank, 1);
    EXPECT_NEAR(root.caused_by[1].seconds, ms(21.0 * 10 / 33), kTol);
    EXPECT_EQ(root.caused_by[2].interval, 0);
    EXPECT_EQ(root.caused_by[2].rank, 1);
    EXPECT_NEAR(root.caused_by[2].seconds, ms(21.0 * 3 / 33), kTol);
  }
}

// The excess, not the wait, is charged, and never more than the wait. Rank 1
// sends to rank 0 (2..3 ms), whose receive (2..10 ms) leaves late; rank 0
// then spends 20 ms in interval 5 and sends back (32..34 ms) to rank 1,
// which waited since 4 ms: a 28 ms wait. Since their last synchronizing
// calls rank 0 spent 22 ms (10..32 ms: 20 in interval 5, 2 in the root),
// rank 1 1 ms (3..4 ms): 21 ms are charged, 21 * 20/22 to interval 5 and
// 21 * 2/22 to the root. Then rank 0 waits for rank 1 at a Barrier
// (35..45 ms, 10 ms): rank 1 spent 12 ms since its receive left (33..45 ms,
// 10 in interval 6), rank 0 1 ms since its send left (34 ms): the excess,
// 11 ms, is capped at the wait, 10 ms, charged 10 * 10/12 and 10 * 2/12.
TEST(Delay, ChargesTheExcessAtMostTheWait) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.send(1, 2 * kMs, 3 * kMs, 0, 1);
  b.recv(0, 2 * kMs, 10 * kMs, 1, 1);
  b.begin(0, 11 * kMs, 5);
  b.end(0, 31 * kMs, 5);
  b.send(0, 32 * kMs, 34 * kMs, 1, 2);
  b.recv(1, 4 * kMs, 33 * kMs, 0, 2);
  b.begin(1, 34 * kMs, 6);
  b.end(1, 44 * kMs, 6);
  b.collective(0, Barrier, 35 * kMs, 46 * kMs);
  b.collective(1, Barrier, 45 * kMs, 46 * kMs);
  for (int r = 0; r < 2; ++r) b.finalize(r, 50 * kMs, 51 * kMs);
  b.close();
  for (unsigned threads : {1u, 2u}) {
    const auto a = analyze_with(b, threads);
    const auto* in5 = find_interval(a, 5);
    const auto* in6 = find_interval(a, 6);
    ASSERT_TRUE(in5 && in6);
    const auto& root = a.intervals[0];
    auto share = [&](int interval, int rank) {
      for (const auto& c : root.caused_by)
        if (c.interval == interval && c.rank == rank) return c.seconds;
      return -1.0;
    };
    ASSERT_EQ(root.caused_by.size(), 4u) << threads;
    EXPECT_NEAR(share(index_of(a, in5), 0), ms(21.0 * 20 / 22), kTol);
    EXPECT_NEAR(share(0, 0), ms(21.0 * 2 / 22), kTol);
    EXPECT_NEAR(share(index_of(a, in6), 1), ms(10.0 * 10 / 12), kTol);
    EXPECT_NEAR(share(0, 1), ms(10.0 * 2 / 12), kTol);
  }
}

// Three ranks; the path visits rank 0 twice and jumps back past many waits
// on ranks 0 and 2 that end after the instant it arrives at (their searches
// start where the rank's last visit ended and go back over them). Rank 0 ends
// last (200 ms) and waited for rank 2's send (159 ms): [159, 200] on rank 0,
// 40 ms in interval 5. Rank 2 waited for rank 0's send (120 ms), and ten later
// waits of rank 2 on rank 1 end after 159: [120, 159] on rank 2, 39 ms in
// interval 6. Back on rank 0 at 120, its ten waits on rank 1 all end after
// 120 and none before: [1, 120] on rank 0, 118 ms in interval 7, 1 ms in the
// root (and 1 ms after interval 5).
TEST(Delay, CriticalPathSkipsWaitsThatEndAfterItsInstant) {
  TraceBuilder b(3);
  constexpr uint64_t kHalf = kMs / 2, kQuarter = kMs / 4;
  for (int r = 0; r < 3; ++r) b.init(r, 0, 1 * kMs);
  b.begin(0, 2 * kMs, 7);
  b.send(0, 120 * kMs, 121 * kMs, 2, 1);
  b.end(0, 121 * kMs, 7);
  for (uint64_t k = 0; k < 10; ++k) b.recv(0, (122 + 2 * k) * kMs, (123 + 2 * k) * kMs, 1, 1);
  b.begin(0, 149 * kMs, 5);
  b.recv(0, 150 * kMs, 160 * kMs, 2, 1);
  b.end(0, 199 * kMs, 5);
  b.finalize(0, 200 * kMs, 201 * kMs);
  for (uint64_t k = 0; k < 10; ++k)
    b.send(1, (122 + 2 * k) * kMs + kHalf, (122 + 2 * k) * kMs + kHalf + kQuarter, 0, 1);
  for (uint64_t k = 0; k < 10; ++k) b.send(1, (162 + 3 * k) * kMs, (162 + 3 * k) * kMs + kQuarter, 2, 1);
  b.finalize(1, 195 * kMs, 196 * kMs);
  b.begin(2, 95 * kMs, 6);
  b.recv(2, 100 * kMs, 130 * kMs, 0, 1);
  b.send(2, 159 * kMs, 160 * kMs, 0, 1);
  for (uint64_t k = 0; k < 10; ++k) b.recv(2, (161 + 3 * k) * kMs, (163 + 3 * k) * kMs, 1, 1);
  b.end(2, 191 * kMs, 6);
  b.finalize(2, 195 * kMs, 196 * kMs);
  b.close();
  for (unsigned threads : {1u, 3u}) {
    const auto a = analyze_with(b, threads);
    const auto* in5 = find_interval(a, 5);
    const auto* in6 = find_interval(a, 6);
    const auto* in7 = find_interval(a, 7);
    ASSERT_TRUE(in5 && in6 && in7);
    EXPECT_NEAR(a.run_span_s, ms(199), kTol) << threads;
    EXPECT_NEAR(a.intervals[0].critical_path_s, ms(199), kTol);
    EXPECT_NEAR(in5->critical_path_s, ms(40), kTol);
    EXPECT_NEAR(in6->critical_path_s, ms(39), kTol);
    EXPECT_NEAR(in7->critical_path_s, ms(118), kTol);
  }
}

// A window of time: neither is computed (they look back to the run's start
// and end); the JSON says null.
TEST(Delay, NotComputedInAWindow) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  for (int r = 0; r < 2; ++r) b.collective(r, Barrier, r == 1 ? 7 * kMs : 2 * kMs, 8 * kMs);
  for (int r = 0; r < 2; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  analysis::Options o;
  o.window_from_s = 0.001;
  o.window_to_s = 0.009;
  const auto a = analyze_checked(b.dir(), o);
  ASSERT_TRUE(a.usable());
  EXPECT_FALSE(a.delay_known);
  EXPECT_TRUE(a.intervals[0].caused_by.empty());
  const auto whole = analyze_usable(b);
  EXPECT_TRUE(whole.delay_known);
  ASSERT_EQ(whole.intervals[0].caused_by.size(), 1u);
  EXPECT_NEAR(whole.intervals[0].caused_by[0].seconds, ms(5), kTol);
}

// A log's full pages wait in a temporary file during the pass and are read
// back through its mapping (log_spill.h): 300 rounds fill many pages of each
// log. Each round both ranks enter interval 4 10 ms apart; rank 1 stays 3 ms,
// rank 0 1 ms, and rank 0 waits 2 ms for rank 1 in the Allreduce after. Since
// the last Allreduce's leave (6 ms before) rank 1 spent 9 ms (3 in interval
// 4, 6 in the root), rank 0 7 ms: the 2 ms are charged 2 * 3/9 ms to
// interval 4 and 2 * 6/9 ms to the root, on rank 1, each round.
TEST(Delay, LogsReadBackFromTheirTemporaryFile) {
  constexpr int kRounds = 300;
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    b.collective(r, Allreduce, 3 * kMs, 4 * kMs);
    for (int i = 0; i < kRounds; ++i) {
      const uint64_t t = (10 + 10 * static_cast<uint64_t>(i)) * kMs;
      b.begin(r, t, 4);
      b.end(r, t + (r == 1 ? 3 : 1) * kMs, 4);
      b.collective(r, Allreduce, t + (r == 1 ? 3 : 1) * kMs, t + 4 * kMs);
    }
    b.finalize(r, (20 + 10 * kRounds) * kMs, (21 + 10 * kRounds) * kMs);
  }
  b.close();
  for (unsigned threads : {1u, 2u}) {
    const auto a = analyze_with(b, threads);
    const auto* in4 = find_interval(a, 4);
    ASSERT_TRUE(in4);
    const auto& root = a.intervals[0];
    ASSERT_EQ(root.caused_by.size(), 2u) << threads;
    EXPECT_EQ(root.caused_by[0].interval, 0);
    EXPECT_EQ(root.caused_by[0].rank, 1);
    EXPECT_NEAR(root.caused_by[0].seconds, ms(kRounds * 2.0 * 6 / 9), kRounds * kTol);
    EXPECT_EQ(root.caused_by[1].interval, index_of(a, in4));
    EXPECT_EQ(root.caused_by[1].rank, 1);
    EXPECT_NEAR(root.caused_by[1].seconds, ms(kRounds * 2.0 * 3 / 9), kRounds * kTol);
    // Back from rank 0's end to its last wait's end, then rank 1 to the
    // wait before, and so on: interval 4 on the path 3 ms a round.
    EXPECT_NEAR(in4->critical_path_s, ms(kRounds * 3.0), kRounds * kTol);
  }
}

// Where the temporary file cannot be made, or written (a full disk), the
// analysis fails with an error that names the directory; it never reports
// root causes from part of the logs.
TEST(Delay, TemporaryFileErrorsNameTheDirectory) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    // (More calls than a page of the logs holds at 2 ranks, 4096 entries:
    // a log of one page stays in memory.)
    for (int i = 0; i < 5000; ++i)
      b.collective(r, Allreduce, (2 + 2 * static_cast<uint64_t>(i)) * kMs + (r == 1 ? kUs : 0),
                   (3 + 2 * static_cast<uint64_t>(i)) * kMs);
    b.finalize(r, 11000 * kMs, 11001 * kMs);
  }
  b.close();
  analysis::Options o;
  o.delay_analysis = true;
  o.write_window_index = false;
  const char* old = std::getenv("TMPDIR");
  const std::string kept = old ? old : "";
  ::setenv("TMPDIR", "/nonexistent-prof-tmp", 1);
  const auto a = analysis::analyze(b.dir(), o);
  ASSERT_FALSE(a.usable());
  ASSERT_EQ(a.errors.size(), 1u);
  EXPECT_NE(a.errors[0].find("temporary file in /nonexistent-prof-tmp (TMPDIR names the directory): No such file or "
                             "directory"),
            std::string::npos)
      << a.errors[0];
  EXPECT_TRUE(a.failed_outside_the_input);  // (the machine's failure, not the trace's)
  if (old) ::setenv("TMPDIR", kept.c_str(), 1);
  else ::unsetenv("TMPDIR");

  // A full disk, as a limit on the size of files this process writes (the
  // logs' first pages alone are 48 KiB and more here).
  ::signal(SIGXFSZ, SIG_IGN);
  rlimit lim{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &lim), 0);
  const rlimit small{16 * 1024, lim.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const auto full = analysis::analyze(b.dir(), o);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  ASSERT_FALSE(full.usable());
  ASSERT_EQ(full.errors.size(), 1u);
  EXPECT_NE(full.errors[0].find("cannot write the root causes' temporary file in "), std::string::npos)
      << full.errors[0];
  EXPECT_NE(full.errors[0].find("File too large"), std::string::npos) << full.errors[0];
  // With room, the same trace: 5000 waits of 1 us.
  const auto with_room = analyze_with(b, 1);
  ASSERT_EQ(with_room.intervals[0].caused_by.size(), 1u);
}

// The searches of the root causes and the critical path start from where
// the last one ended (partition_near): from any hint they find the place a
// binary search of the whole log finds, on logs with runs of equal times,
// the hint a few entries away or far (a gallop of many doublings).
TEST(DelayLog, PartitionNearFindsWhatABinarySearchFinds) {
  std::mt19937_64 rng(2026);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{5}, size_t{64}, size_t{1000}, size_t{200000}}) {
    std::vector<double> log(n);
    for (double& t : log) t = static_cast<double>(rng() % (n / 2 + 1));
    std::sort(log.begin(), log.end());
    for (int q = 0; q < 200; ++q) {
      const double x = static_cast<double>(rng() % (n / 2 + 3)) - 1.0;
      const auto before = [x](double t) { return t <= x; };
      const size_t want = static_cast<size_t>(std::partition_point(log.begin(), log.end(), before) - log.begin());
      const size_t hint = static_cast<size_t>(rng() % (n + 3));  // past the end too
      EXPECT_EQ(analysis::detail::partition_near(log, hint, before), want) << "n " << n << " hint " << hint;
    }
  }
}

// The same searches on a paged log (partition_near_paged): a walk of up to
// kPagedWalk entries within the hint's page and, past it, a gallop from
// where the walk stopped, in either direction. Pages of 16 entries (a log
// in memory) and of 256 (a spilled one: longer than the walk); hints at
// both edges of a page and near the place, for logs of less than a page to
// many pages, with runs of equal times that span pages.
TEST(DelayLog, PartitionNearOnAPagedLogFindsWhatABinarySearchFinds) {
  static_assert(analysis::detail::kPagedWalk < 256);
  std::mt19937_64 rng(2027);
  for (unsigned shift : {0u, 8u}) {  // (0: no spill, pages of 16 entries)
    for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{300}, size_t{1000}, size_t{100000}}) {
      std::unique_ptr<analysis::detail::LogSpill> spill;  // (a spill maps once: one a log)
      if (shift) spill = std::make_unique<analysis::detail::LogSpill>(1, shift);
      std::vector<double> values(n);
      for (double& t : values) t = static_cast<double>(rng() % (n / 4 + 1));
      std::sort(values.begin(), values.end());
      analysis::detail::PagedLog<double> log;
      log.spill_to(spill.get());
      for (double t : values) log.push_back(t);
      if (spill) log.map_back(spill->map());
      const auto view = log.view();
      const size_t page = view.page_entries();
      ASSERT_EQ(page, shift ? size_t{1} << shift : 16u);
      for (int q = 0; q < 500; ++q) {
        const double x = static_cast<double>(rng() % (n / 4 + 3)) - 1.0;
        const auto before = [x](double t) { return t <= x; };
        const size_t want = static_cast<size_t>(std::partition_point(values.begin(), values.end(), before) - values.begin());
        size_t hint;
        switch (q % 5) {
          case 0: hint = static_cast<size_t>(rng() % (n + 3)); break;  // anywhere, past the end too
          case 1: hint = static_cast<size_t>(rng() % (n + 1)) / page * page; break;  // a page's first entry
          case 2: hint = static_cast<size_t>(rng() % (n + 1)) / page * page + page - 1; break;  // a page's last
          case 3: hint = want + static_cast<size_t>(rng() % 40) - std::min<size_t>(want, 20); break;  // near it
          default: hint = want + static_cast<size_t>(rng() % 200) - std::min<size_t>(want, 100); break;  // a walk away
        }
        ASSERT_EQ(analysis::detail::partition_near_paged(view, hint, before), want)
            << "page " << page << " n " << n << " hint " << hint;
      }
      log.release();
    }
  }
}

// Pages of 1024 entries: a spill over a few tens of ranks (whole pages of
// the file), beside kSmallestPageShift's thousands.
constexpr unsigned kTensOfRanksPageShift = 10;

// An entry of the sorts' tests: a time (runs of three equal ones) and its
// place before the sort, which tells a stable sort's order.
struct SortEntry {
  double t;
  uint64_t seq;
};
bool by_time(const SortEntry& x, const SortEntry& y) { return x.t < y.t; }
const auto nearly_by_time = analysis::detail::nearly_by([](const SortEntry& e) { return e.t; });
// sort_log by time, nearly in order by it or in no known order.
void sort_by_time(analysis::detail::PagedLog<SortEntry>& log, bool nearly) {
  if (nearly) analysis::detail::sort_log(log, by_time, nearly_by_time);
  else analysis::detail::sort_log(log, by_time, analysis::detail::NoOrder{});
}

// n entries in time order but `moves` of them late: each moved back by up
// to 40 places (or to the front); seq numbers their order after the moves.
std::vector<SortEntry> late_entries(size_t n, size_t moves, std::mt19937_64& rng) {
  std::vector<SortEntry> v(n);
  for (size_t i = 0; i < n; ++i) v[i].t = static_cast<double>(i / 3);
  for (size_t k = 0; n > 1 && k < moves; ++k) {
    const size_t from = 1 + rng() % (n - 1), back = 1 + rng() % std::min<size_t>(from, 40);
    std::rotate(v.begin() + static_cast<ptrdiff_t>(from - back), v.begin() + static_cast<ptrdiff_t>(from),
                v.begin() + static_cast<ptrdiff_t>(from + 1));
  }
  for (size_t i = 0; i < n; ++i) v[i].seq = i;
  return v;
}

// A log in memory nearly in order (entries late by a few places or many,
// runs of equal times) sorts as a stable sort of a copy does, with `nearly`
// (the blocks' merges) and without (the copy's sort).
TEST(DelayLog, NearlySortedLogSortsAsAStableSort) {
  using Entry = SortEntry;
  std::mt19937_64 rng(11);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{16}, size_t{17}, size_t{100}, size_t{5000}})
    for (size_t late_every : {size_t{2}, size_t{9}, size_t{1000}})
      for (bool nearly : {true, false}) {
        std::vector<Entry> v = late_entries(n, n / late_every + 1, rng);
        analysis::detail::PagedLog<Entry> log;
        for (const Entry& e : v) log.push_back(e);
        std::stable_sort(v.begin(), v.end(), by_time);
        sort_by_time(log, nearly);
        ASSERT_EQ(log.size(), n);
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(log[i].t, v[i].t) << "n " << n << " at " << i << " nearly " << nearly;
          ASSERT_EQ(log[i].seq, v[i].seq) << "n " << n << " at " << i << " nearly " << nearly;
        }
      }
}

// A rank's waits as its log holds them: runs in time order interleaved in
// blocks (those found while decoding, and those whose figures arrived a
// phase later), the first run a block ahead (so that most entries lie below
// the running maximum), with entries late by a few places among them and
// equal times; and a log in no order at all (the blocks grow with what is
// pending). Each sorts, `nearly`, as a stable sort of a copy does.
TEST(DelayLog, InterleavedRunsSortAsAStableSort) {
  using Entry = SortEntry;
  std::mt19937_64 rng(29);
  for (size_t runs : {size_t{2}, size_t{3}, size_t{6}})
    for (size_t block : {size_t{1}, size_t{7}, size_t{300}})
      for (size_t n : {size_t{1}, size_t{50}, size_t{4000}, size_t{40000}}) {
        // Run r holds times r, r + runs, ... (each in order), its entries
        // taken `block` at a time in turn; run 0 is one block ahead.
        std::vector<Entry> v;
        std::vector<size_t> taken(runs, 0);
        const size_t per_run = n / runs + 1;
        for (size_t turn = 0; v.size() < n; ++turn)
          for (size_t r = 0; r < runs && v.size() < n; ++r) {
            const size_t count = (r == 0 && turn == 0) ? 2 * block : block;
            for (size_t k = 0; k < count && taken[r] < per_run && v.size() < n; ++k)
              v.push_back(Entry{static_cast<double>((taken[r]++ * runs + r) / 2), 0});
          }
        for (size_t k = 0; k < n / 50; ++k) {  // a few late entries
          const size_t from = 1 + rng() % (n - 1), back = 1 + rng() % std::min<size_t>(from, 5);
          std::rotate(v.begin() + static_cast<ptrdiff_t>(from - back), v.begin() + static_cast<ptrdiff_t>(from),
                      v.begin() + static_cast<ptrdiff_t>(from + 1));
        }
        for (size_t i = 0; i < v.size(); ++i) v[i].seq = i;
        for (bool shuffled : {false, true}) {
          std::vector<Entry> in = v;
          if (shuffled) {
            std::shuffle(in.begin(), in.end(), rng);
            for (size_t i = 0; i < in.size(); ++i) in[i].seq = i;
          }
          analysis::detail::PagedLog<Entry> log;
          for (const Entry& e : in) log.push_back(e);
          std::vector<Entry> want = in;
          std::stable_sort(want.begin(), want.end(), by_time);
          analysis::detail::sort_log(log, by_time, nearly_by_time);
          ASSERT_EQ(log.size(), want.size());
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_EQ(log[i].t, want[i].t) << "runs " << runs << " block " << block << " n " << n << " at " << i;
            ASSERT_EQ(log[i].seq, want[i].seq) << "runs " << runs << " block " << block << " n " << n << " at " << i;
          }
        }
      }
}

// Waits logged through DelayLog::log_wait carry the least `to` of each
// granule, which the sort takes for its pass from the end: runs in order a
// few hundred entries long, each reaching back over the one before (as a
// rank's waits come), with equal times, sort as a stable sort does, in
// memory and spilled (both page sizes), and so does a log one of whose
// waits came past log_wait (its bounds unknown: the pass from the end).
TEST(DelayLog, WaitsLoggedWithTheirBoundsSortAsAStableSort) {
  using analysis::detail::DelayLog;
  using analysis::detail::LogSpill;
  const auto by_to = [](const DelayLog::Wait& x, const DelayLog::Wait& y) {
    if (x.to != y.to) return x.to < y.to;
    return x.from < y.from;
  };
  std::mt19937_64 rng(41);
  for (unsigned shift : {0u, LogSpill::kSmallestPageShift, kTensOfRanksPageShift})
    for (size_t n : {size_t{1}, size_t{900}, size_t{5000}, size_t{30000}})
      for (bool past_log_wait : {false, true}) {
        std::unique_ptr<LogSpill> spill;
        DelayLog d;
        if (shift) {
          spill = std::make_unique<LogSpill>(1, shift);
          d.spill_to(spill.get());
        }
        // Runs of 300-500 entries, each reaching back over the one before
        // (two entries a `to`, from of 0-2: ties that a stable sort keeps in
        // the log's order); `partner` numbers the entries.
        std::vector<DelayLog::Wait> want;
        double run_start = 0;
        for (size_t runs = 0; want.size() < n; ++runs) {
          const size_t run = 300 + rng() % 200;
          // (Every tenth run reaches back over granules, as one whose
          // figures came several phases late.)
          const double back = runs % 10 == 9 ? 1500 : 0;
          for (size_t k = 0; k < run && want.size() < n; ++k)
            want.push_back(DelayLog::Wait{static_cast<double>(rng() % 3), std::floor(std::max(0.0, run_start - back) + k / 2.0),
                                          static_cast<int32_t>(want.size()), 0});
          run_start += run / 2.0 - 300;
          run_start = std::max(run_start, 0.0);
          run_start += 200;
        }
        for (size_t i = 0; i < want.size(); ++i) {
          if (past_log_wait && i == want.size() / 2) d.waits.push_back(want[i]);
          else d.log_wait(want[i]);
        }
        EXPECT_EQ(d.waits_least_to() == nullptr, past_log_wait) << n;
        if (spill) d.map_back(spill->map());
        analysis::detail::sort_log(d.waits, by_to, d.wait_sort_order());
        std::stable_sort(want.begin(), want.end(), by_to);
        ASSERT_EQ(d.waits.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(d.waits[i].to, want[i].to) << "n " << n << " shift " << shift << " past " << past_log_wait << " at " << i;
          ASSERT_EQ(d.waits[i].partner, want[i].partner)
              << "n " << n << " shift " << shift << " past " << past_log_wait << " at " << i;
        }
      }
}

// Logs whose pages went to the temporary file (two logs at once, their
// pages interleaved there, as the ranks' are) sort as a stable sort does,
// into copies at the file's end, nearly in order or in no order; once both
// are sorted the file's first part goes and each still reads its entries.
// While one log has no copy, that part stays: the other reads its entries.
// Pages of 16 and of 1024 entries (thousands of ranks, tens).
TEST(DelayLog, SpilledLogsSortIntoCopiesThatOutliveTheOriginals) {
  using Entry = SortEntry;
  std::mt19937_64 rng(5);
  for (unsigned shift : {analysis::detail::LogSpill::kSmallestPageShift, kTensOfRanksPageShift})
    for (size_t n : {size_t{17}, size_t{100}, size_t{5000}, size_t{40000}})
      for (bool nearly : {true, false})
        for (bool sort_both : {true, false}) {
          if (n <= (size_t{1} << shift)) continue;  // (a log of one page keeps it in memory)
          std::vector<Entry> want[2];
          analysis::detail::LogSpill spill(1, shift);
          analysis::detail::PagedLog<Entry> logs[2];
          for (auto& log : logs) log.spill_to(&spill);
          for (size_t which = 0; which < 2; ++which) {
            const size_t size = n + which * 7;
            want[which] = late_entries(size, size / 5, rng);
            if (n == 40000) {  // the longest logs in no order at all
              std::vector<Entry>& v = want[which];
              std::shuffle(v.begin(), v.end(), rng);
              for (size_t i = 0; i < v.size(); ++i) v[i].seq = i;
            }
          }
          for (size_t i = 0; i < want[1].size(); ++i)
            for (size_t which = 0; which < 2; ++which)
              if (i < want[which].size()) logs[which].push_back(want[which][i]);
          char* base = spill.map();
          ASSERT_NE(base, nullptr);
          for (auto& log : logs) log.map_back(base);
          for (auto& v : want) std::stable_sort(v.begin(), v.end(), by_time);
          sort_by_time(logs[0], nearly);
          if (sort_both) sort_by_time(logs[1], nearly);
          else std::sort(want[1].begin(), want[1].end(), [](const Entry& x, const Entry& y) { return x.seq < y.seq; });
          spill.release_originals();
          spill.drop_resident();  // (read back from the file)
          for (size_t which = 0; which < 2; ++which) {
            ASSERT_EQ(logs[which].size(), want[which].size());
            for (size_t i = 0; i < want[which].size(); ++i) {
              ASSERT_EQ(logs[which][i].t, want[which][i].t)
                  << "n " << n << " log " << which << " at " << i << " nearly " << nearly << " both " << sort_both;
              ASSERT_EQ(logs[which][i].seq, want[which][i].seq)
                  << "n " << n << " log " << which << " at " << i << " nearly " << nearly << " both " << sort_both
                  << " shift " << shift;
            }
          }
        }
}

// A spilled log in order is read where it lies at every page size (no
// copy: its first entry stays at its address), one out of order is copied;
// after the sorts and with the mapping's pages given back, both read their
// entries in order.
TEST(DelayLog, ALogInOrderIsReadWhereItLies) {
  using Entry = SortEntry;
  using analysis::detail::LogSpill;
  for (unsigned shift : {LogSpill::kSmallestPageShift, kTensOfRanksPageShift, LogSpill::kLargestPageShift}) {
    LogSpill spill(1, shift);
    analysis::detail::PagedLog<Entry> in_order, out_of_order;
    in_order.spill_to(&spill);
    out_of_order.spill_to(&spill);
    const size_t n = 3 * (size_t{1} << shift) + 5;
    for (size_t i = 0; i < n; ++i) {  // (their pages interleaved in the file)
      in_order.push_back(Entry{static_cast<double>(i), i});
      out_of_order.push_back(Entry{static_cast<double>(n - i), i});
    }
    char* base = spill.map();
    ASSERT_NE(base, nullptr);
    in_order.map_back(base);
    out_of_order.map_back(base);
    const Entry* first_in_order = &in_order[0];
    const Entry* first_out_of_order = &out_of_order[0];
    analysis::detail::sort_log(in_order, by_time, nearly_by_time);
    analysis::detail::sort_log(out_of_order, by_time, nearly_by_time);
    EXPECT_EQ(&in_order[0], first_in_order) << "shift " << shift;
    EXPECT_NE(&out_of_order[0], first_out_of_order) << "shift " << shift;
    spill.release_originals();
    spill.drop_resident();  // (read back from the file)
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(in_order[i].seq, i) << "shift " << shift << " at " << i;
      ASSERT_EQ(out_of_order[i].seq, n - 1 - i) << "shift " << shift << " at " << i;
    }
  }
}

// The pass logs contexts and syncs through DelayLog, which knows whether
// each log came in time order (ties are in order): the sorts then skip
// reading it. One entry late, or one appended past DelayLog (as a log
// received from another process is), leaves the order unknown; a log
// known in order sorts to itself.
TEST(DelayLog, KnowsALogLoggedInOrderWithoutReadingIt) {
  using analysis::detail::DelayLog;
  DelayLog d;
  EXPECT_TRUE(d.contexts_known_in_order());
  EXPECT_TRUE(d.syncs_known_in_order());
  for (int i = 0; i < 100; ++i) {
    d.log_context(i / 2, static_cast<uint32_t>(i));
    d.log_sync(DelayLog::sync_with_peer(i / 3, i % 4));
  }
  EXPECT_TRUE(d.contexts_known_in_order());
  EXPECT_TRUE(d.syncs_known_in_order());
  analysis::detail::sort_log(d.contexts, [](const DelayLog::Context& x, const DelayLog::Context& y) { return x.t < y.t; },
                             analysis::detail::NoOrder{}, d.contexts_known_in_order());
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(d.contexts[i].context, i);
  d.log_context(10.0, 100);  // (before 49.5)
  EXPECT_FALSE(d.contexts_known_in_order());
  d.log_context(1000.0, 101);  // (in order again: the log is not)
  EXPECT_FALSE(d.contexts_known_in_order());
  d.syncs.push_back(DelayLog::sync_with_peer(1000.0, 1));  // (past DelayLog)
  EXPECT_FALSE(d.syncs_known_in_order());
}

// The logs' pages are as large as the ranks' last pages (in memory through
// the pass) allow within LogSpill::kLastPagesBytes: 4096 entries for a few
// ranks, 16 for thousands; never larger as the ranks grow.
TEST(DelayLog, PageSizeShrinksWithTheRanksWithinItsMemory) {
  using analysis::detail::DelayLog;
  using analysis::detail::LogSpill;
  EXPECT_EQ(LogSpill::page_shift_for(1, DelayLog::kEntryBytes), LogSpill::kLargestPageShift);
  EXPECT_EQ(LogSpill::page_shift_for(4, DelayLog::kEntryBytes), LogSpill::kLargestPageShift);
  EXPECT_EQ(LogSpill::page_shift_for(16384, DelayLog::kEntryBytes), LogSpill::kSmallestPageShift);
  EXPECT_EQ(LogSpill::page_shift_for(100000, DelayLog::kEntryBytes), LogSpill::kSmallestPageShift);
  unsigned last = LogSpill::kLargestPageShift;
  for (size_t ranks = 1; ranks <= 20000; ranks += ranks / 8 + 1) {
    const unsigned shift = LogSpill::page_shift_for(ranks, DelayLog::kEntryBytes);
    EXPECT_LE(shift, last) << ranks << " ranks";
    if (shift > LogSpill::kSmallestPageShift) {
      EXPECT_LE(ranks * DelayLog::kEntryBytes << shift, LogSpill::kLastPagesBytes) << ranks << " ranks";
    }
    if (shift < LogSpill::kLargestPageShift) {  // (the largest that fits)
      EXPECT_GT(ranks * DelayLog::kEntryBytes << (shift + 1), LogSpill::kLastPagesBytes) << ranks << " ranks";
    }
    last = shift;
  }
}

// Logs written on several threads at once, each through its thread's writer
// of one spill (as the pass's workers write their ranks' logs), read back
// whole after the map, in each log's order; sorted into copies, the file's
// first part (the writers' buffers, their last ones part full) goes and each
// log still reads its entries.
TEST(DelayLog, WritersOnSeveralThreadsShareOneSpill) {
  using Entry = SortEntry;
  for (unsigned shift : {analysis::detail::LogSpill::kSmallestPageShift, kTensOfRanksPageShift})
    for (unsigned writers : {1u, 2u, 3u})
      for (size_t n : {size_t{5}, size_t{3000}, size_t{70000}}) {
        analysis::detail::LogSpill spill(writers, shift);
        constexpr size_t kLogsAWriter = 3;
        std::vector<analysis::detail::PagedLog<Entry>> logs(writers * kLogsAWriter);
        std::vector<std::vector<Entry>> want(logs.size());
        std::vector<std::thread> threads;
        for (unsigned w = 0; w < writers; ++w)
          threads.emplace_back([&, w] {
            std::mt19937_64 rng(w + 1);
            for (size_t k = 0; k < kLogsAWriter; ++k) logs[w * kLogsAWriter + k].spill_to(&spill, w);
            for (size_t i = 0; i < n * kLogsAWriter; ++i) {
              const size_t which = w * kLogsAWriter + rng() % kLogsAWriter;
              const Entry e{static_cast<double>(rng() % 1000), want[which].size()};
              want[which].push_back(e);
              logs[which].push_back(e);
            }
          });
        for (auto& t : threads) t.join();
        char* base = spill.map();
        if (n > 100) {
          ASSERT_NE(base, nullptr);  // (a log of one page keeps it in memory)
        }
        for (auto& log : logs) log.map_back(base);
        for (size_t which = 0; which < logs.size(); ++which) {
          ASSERT_EQ(logs[which].size(), want[which].size());
          for (size_t i = 0; i < want[which].size(); ++i)
            ASSERT_EQ(logs[which][i].seq, want[which][i].seq) << writers << " writers, log " << which << " at " << i;
        }
        for (size_t which = 0; which < logs.size(); ++which) {
          analysis::detail::sort_log(logs[which], by_time, analysis::detail::NoOrder{});
          std::stable_sort(want[which].begin(), want[which].end(), by_time);
        }
        spill.release_originals();
        spill.drop_resident();  // (read back from the file)
        for (size_t which = 0; which < logs.size(); ++which)
          for (size_t i = 0; i < want[which].size(); ++i) {
            ASSERT_EQ(logs[which][i].t, want[which][i].t) << writers << " writers, sorted log " << which << " at " << i;
            ASSERT_EQ(logs[which][i].seq, want[which][i].seq) << writers << " writers, sorted log " << which << " at " << i;
          }
      }
}

// Items made on several threads are used once each, in their order, on the
// calling thread, with at most `ahead` a thread made and not yet used; each
// thread makes its items with a scratch of its own.
TEST(MadeInOrder, UsesEveryItemOnceInTheirOrder) {
  for (unsigned threads : {1u, 2u, 3u, 4u})
    for (size_t ahead : {size_t{1}, size_t{3}}) {
      constexpr size_t kItems = 2000;
      std::atomic<size_t> started{0}, used{0}, most_pending{0}, scratches{0};
      size_t next = 0;
      analysis::detail::made_in_order<uint64_t>(
          kItems, threads, ahead,
          [&] {
            ++scratches;
            return std::make_unique<size_t>(0);
          },
          [&](size_t& scratch, size_t i, uint64_t& out) {
            ++scratch;  // (a data race here, where two threads shared one, would be TSan's to tell)
            const size_t pending = ++started - used.load();
            size_t most = most_pending.load();
            while (pending > most && !most_pending.compare_exchange_weak(most, pending)) {
            }
            out = i * 2654435761u;
          },
          [&](size_t i, const uint64_t& out) {
            EXPECT_EQ(i, next) << threads << " threads";
            EXPECT_EQ(out, i * 2654435761u);
            ++next;
            ++used;
          });
      EXPECT_EQ(next, kItems) << threads << " threads";
      EXPECT_EQ(started.load(), kItems);
      EXPECT_LE(most_pending.load(), threads == 1 ? 1 : ahead * threads) << threads << " threads, ahead " << ahead;
      EXPECT_LE(scratches.load(), threads);
    }
}

// An exception in the making or the use of an item stops the work and is
// thrown to the caller, the items after it unused.
TEST(MadeInOrder, AFailureStopsTheWorkAndIsThrown) {
  for (unsigned threads : {1u, 2u, 3u}) {
    size_t used = 0;
    try {
      analysis::detail::made_in_order<int>(
          200, threads, 2, [] { return std::make_unique<int>(0); },
          [](int&, size_t i, int& out) {
            if (i == 37) throw std::runtime_error("item 37");
            out = static_cast<int>(i);
          },
          [&](size_t i, const int& out) {
            EXPECT_EQ(out, static_cast<int>(i));
            ++used;
          });
      ADD_FAILURE() << "no exception, " << threads << " threads";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "item 37");
    }
    EXPECT_LE(used, 37u) << threads << " threads";
    used = 0;
    EXPECT_THROW(analysis::detail::made_in_order<int>(
                     200, threads, 2, [] { return std::make_unique<int>(0); }, [](int&, size_t, int& out) { out = 1; },
                     [&](size_t i, const int&) {
                       if (i == 5) throw std::logic_error("use 5");
                       ++used;
                     }),
                 std::logic_error);
    EXPECT_EQ(used, 5u) << threads << " threads";
  }
}

// Many waits, more than one chunk of charges a rank (delay_analysis.cpp):
// each message's sender computes longer than its receiver, by an irregular
// amount, in one of three intervals, so every wait charges its partner's
// interval figures that are sums of thousands of fractions. The causes and
// the critical path are the same bytes on one thread and on several, which
// hold only if the charges are added in one order.
TEST(Delay, ManyWaitsChargedTheSameOnAnyThreads) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  uint64_t t = 2 * kMs;
  constexpr uint64_t kMessages = 36000;  // 18,000 waits a rank
  for (uint64_t i = 0; i < kMessages; ++i) {
    const int from = static_cast<int>(i % 2), to = 1 - from;
    const uint32_t interval = 3 + static_cast<uint32_t>(i % 3);
    const uint64_t work = 1000 + i * 7919 % 977, other = 300 + i * 104729 % 331;
    b.begin(from, t, interval);
    b.end(from, t + work, interval);
    b.begin(to, t, interval + 3);
    b.end(to, t + other, interval + 3);
    b.send(from, t + work + 10, t + work + 20, to, 1);
    b.recv(to, t + other + 10, t + work + 30, from, 1);
    t += work + 40;
  }
  for (int r = 0; r < 2; ++r) b.finalize(r, t, t + kMs);
  b.close();
  const auto one = analyze_with(b, 1);
  size_t causes = 0;
  for (const auto& n : one.intervals) causes += n.caused_by.size();
  ASSERT_GE(causes, 6u);
  for (unsigned threads : {2u, 3u}) {
    const auto a = analyze_with(b, threads);
    ASSERT_EQ(a.intervals.size(), one.intervals.size());
    for (size_t i = 0; i < a.intervals.size(); ++i) {
      const auto& x = a.intervals[i];
      const auto& y = one.intervals[i];
      EXPECT_EQ(x.critical_path_s, y.critical_path_s) << "interval " << i << ", " << threads << " threads";
      ASSERT_EQ(x.caused_by.size(), y.caused_by.size()) << "interval " << i << ", " << threads << " threads";
      for (size_t k = 0; k < x.caused_by.size(); ++k) {
        EXPECT_EQ(x.caused_by[k].interval, y.caused_by[k].interval);
        EXPECT_EQ(x.caused_by[k].rank, y.caused_by[k].rank);
        EXPECT_EQ(x.caused_by[k].seconds, y.caused_by[k].seconds) << "interval " << i << ", " << threads << " threads";
      }
    }
  }
}

// Four ranks meet at an Allreduce every round, and each round another rank p
// comes last: after the last Allreduce it works `a` ms (in interval 5, or
// split over 5, 9 and 10), sends its neighbour q = p + 1 `m` messages (1 ms
// each, in the root), works `d` ms in interval 6 and enters. q receives each
// message as it is sent (0.5 ms) and enters the Allreduce after the last;
// the two others work `c` ms in interval 8 and enter. So every waiting rank
// waits on p at the same instant, and the root's causes follow by hand:
// - q last synchronized with p at the last message: p's stretch is its `d`
//   ms in interval 6, q's none, so q's wait charges d ms to (6, p);
// - the others last synchronized with p at the last Allreduce: p spent
//   a + m + d ms since, they c, and each wait (a + m + d - c ms) charges the
//   excess a + m + d - c in proportion to p's time per interval.
// With m up to 6 and p's time in up to 5 intervals, a partner's part of a
// wait comes from its logs read for each wait or kept for the next waiter
// (delay_analysis.cpp, PartnerMemo): the figures are the same either way.
TEST(Delay, ManyRanksWaitingOnOnePartnerAtOnce) {
  constexpr int kRanks = 4, kRounds = 24;
  constexpr uint64_t kHalfMs = kMs / 2;
  TraceBuilder b(kRanks);
  std::map<std::pair<uint32_t, int>, double> expected;  // (cause interval id, rank) -> ms
  constexpr uint32_t kRoot = 0;
  for (int r = 0; r < kRanks; ++r) {
    b.init(r, 0, 1 * kMs);
    b.collective(r, Allreduce, 2 * kMs, 3 * kMs);
  }
  uint64_t t = 3 * kMs;  // the last Allreduce's leave
  for (int k = 0; k < kRounds; ++k) {
    const int p = k % kRanks, q = (p + 1) % kRanks;
    const uint64_t a = 8 + static_cast<uint64_t>(k % 5) * 4, m = 1 + static_cast<uint64_t>(k % 6),
                   d = 3 + static_cast<uint64_t>(k % 3), c = 2 + static_cast<uint64_t>(k % 2);
    const bool split = k % 4 == 3;  // p's `a` ms in intervals 5, 9 and 10
    const uint64_t to = t + (a + m + d) * kMs;
    std::vector<std::pair<uint32_t, double>> p_time;  // p's stretch towards the others, ms
    if (split) {
      b.begin(p, t, 5);
      b.end(p, t + a / 2 * kMs, 5);
      b.begin(p, t + a / 2 * kMs, 9);
      b.end(p, t + a * 3 / 4 * kMs, 9);
      b.begin(p, t + a * 3 / 4 * kMs, 10);
      b.end(p, t + a * kMs, 10);
      p_time = {{5, a / 2}, {9, a / 4}, {10, a / 4}};
    } else {
      b.begin(p, t, 5);
      b.end(p, t + a * kMs, 5);
      p_time = {{5, a}};
    }
    p_time.push_back({kRoot, m});
    p_time.push_back({6, d});
    for (uint64_t i = 0; i < m; ++i) {
      const uint64_t at = t + (a + i) * kMs;
      b.send(p, at, at + kMs, q, k);
      b.recv(q, at, at + kHalfMs, p, k);
    }
    b.begin(p, t + (a + m) * kMs, 6);
    b.end(p, to, 6);
    expected[{6, p}] += d;  // q's wait
    const double total = static_cast<double>(a + m + d);
    for (int w = 0; w < kRanks; ++w) {
      if (w == p || w == q) continue;
      b.begin(w, t, 8);
      b.end(w, t + c * kMs, 8);
      b.collective(w, Allreduce, t + c * kMs, to + kMs);
      const double charged = total - static_cast<double>(c);
      for (const auto& [id, ms_in] : p_time) expected[{id, p}] += charged * ms_in / total;
    }
    b.collective(q, Allreduce, t + (a + m - 1) * kMs + kHalfMs, to + kMs);
    b.collective(p, Allreduce, to, to + kMs);
    t = to + kMs;
  }
  for (int r = 0; r < kRanks; ++r) b.finalize(r, t + kMs, t + 2 * kMs);
  b.close();
  for (unsigned threads : {1u, 2u}) {
    const auto an = analyze_with(b, threads);
    expect_invariants(an);
    const auto& root = an.intervals[0];
    ASSERT_EQ(root.caused_by.size(), expected.size()) << threads << " threads";
    for (const auto& [key, ms_charged] : expected) {
      const int index = key.first == kRoot ? 0 : index_of(an, find_interval(an, static_cast<int>(key.first)));
      ASSERT_GE(index, 0) << "interval " << key.first;
      double seconds = -1;
      for (const auto& cause : root.caused_by)
        if (cause.interval == index && cause.rank == key.second) seconds = cause.seconds;
      EXPECT_NEAR(seconds, ms(ms_charged), kTol) << "interval " << key.first << " on rank " << key.second << ", "
                                                 << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace prof::test
