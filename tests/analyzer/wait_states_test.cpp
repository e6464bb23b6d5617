// Wait states by kind (docs/metrics.md, "Wait states by kind"): traces that
// plant each kind with a known amount and partner. Times are integer
// nanoseconds, so the tolerance of an exact figure is one nanosecond (kTol);
// analyze_usable checks the invariants (the kinds of Potential Sync. sum to
// it) on every trace.
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "prof/analysis/compare.h"

#include "prof/analysis/report.h"
#include "trace_builder.h"

namespace prof::test {
namespace {

using analysis::WaitKind;

double wait_of(const analysis::IntervalNode& n, int rank, WaitKind k) {
  const auto* f = rank_of(n, rank);
  return f ? f->waits[static_cast<size_t>(k)] : -1;
}

// Every kind but `k` is zero on every rank of `n`.
void expect_only(const analysis::IntervalNode& n, WaitKind k) {
  for (const auto& f : n.per_rank)
    for (int other = 0; other < analysis::kWaitKindCount; ++other) {
      if (other == k) continue;
      EXPECT_NEAR(f.waits[static_cast<size_t>(other)], 0, kTol) << "rank " << f.rank << " " << analysis::kWaitKindKeys[other];
    }
}

analysis::Analysis analyze_with(const TraceBuilder& b, unsigned threads) {
  analysis::Options o;
  o.threads = threads;
  analysis::Analysis a = analyze_checked(b.dir(), o);
  EXPECT_TRUE(a.usable());
  return a;
}

TEST(WaitStates, LateSenderNamesTheSender) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.recv(0, 2 * kMs, 7100 * kUs, 1, 5);  // posted 5 ms before the send
  b.send(1, 7 * kMs, 7200 * kUs, 0, 5);  // left after the receive's issue: no late receiver
  for (int r = 0; r < 2; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto& root = a.intervals[0];
  EXPECT_NEAR(wait_of(root, 0, analysis::kLateSender), ms(5), kTol);
  EXPECT_NEAR(root.waits[analysis::kLateSender], ms(5), kTol);
  expect_only(root, analysis::kLateSender);
  ASSERT_EQ(root.waited_for.size(), 1u);
  EXPECT_EQ(root.waited_for[0].rank, 1);
  EXPECT_NEAR(root.waited_for[0].seconds, ms(5), kTol);
  EXPECT_NEAR(root.waited_for[0].uncertain_seconds, 0, kTol);  // no clock bound known
}

// A synchronous send entered 50 ms before its receive was issued: the sender
// waits 50 ms (apart from Potential Sync.), on the receiver; an eager send
// that left before its receive was issued did not wait. With one worker and
// with two (the receive's issue then goes back to the other worker).
TEST(WaitStates, LateReceiverOfASynchronousSend) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.begin(0, 1 * kMs, 3);
  b.p2p(0, Ssend, FuncKind::Send, 2 * kMs, 52100 * kUs, 1, 5);
  b.send(0, 53 * kMs, 53010 * kUs, 1, 6);  // eager: left at once
  b.end(0, 54 * kMs, 3);
  b.recv(1, 52 * kMs, 52090 * kUs, 0, 5);
  b.recv(1, 60 * kMs, 60010 * kUs, 0, 6);  // issued long after its send left
  for (int r = 0; r < 2; ++r) b.finalize(r, 70 * kMs, 71 * kMs);
  b.close();
  for (unsigned threads : {1u, 2u}) {
    const auto a = analyze_with(b, threads);
    const auto* in3 = find_interval(a, 3);
    ASSERT_TRUE(in3);
    EXPECT_NEAR(wait_of(*in3, 0, analysis::kLateReceiver), ms(50), kTol) << threads;
    EXPECT_NEAR(rank_of(*in3, 0)->potential_sync, 0, kTol);
    expect_only(*in3, analysis::kLateReceiver);
    ASSERT_EQ(in3->waited_for.size(), 1u);
    EXPECT_EQ(in3->waited_for[0].rank, 1);
    EXPECT_NEAR(in3->waited_for[0].seconds, ms(50), kTol);
    // The root holds it too; the late eager message makes rank 1 no late sender.
    EXPECT_NEAR(a.intervals[0].waits[analysis::kLateReceiver], ms(50), kTol);
    EXPECT_NEAR(a.intervals[0].waits[analysis::kLateSender], 0, kTol);
  }
}

// The MPI_Wait of an MPI_Isend entered 50 ms before the receive was issued:
// a late receiver from the Wait's enter; another Isend, sharing its handle,
// whose Wait left before its receive was issued did not wait.
TEST(WaitStates, LateReceiverInTheWaitOfAnIsend) {
  TraceBuilder b(2);
  const uint32_t sq = 0xAC000021u;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.isend(0, 2 * kMs, 2010 * kUs, 1, 5, sq);
  b.wait(0, Wait, 3 * kMs, 53100 * kUs, {TraceBuilder::done(sq)});
  b.isend(0, 54 * kMs, 54010 * kUs, 1, 6, sq);
  b.wait(0, Wait, 55 * kMs, 55010 * kUs, {TraceBuilder::done(sq)});
  b.recv(1, 53 * kMs, 53090 * kUs, 0, 5);
  b.recv(1, 60 * kMs, 60010 * kUs, 0, 6);
  for (int r = 0; r < 2; ++r) b.finalize(r, 70 * kMs, 71 * kMs);
  b.close();
  for (unsigned threads : {1u, 2u}) {
    const auto a = analyze_with(b, threads);
    const auto& root = a.intervals[0];
    EXPECT_NEAR(wait_of(root, 0, analysis::kLateReceiver), ms(50), kTol) << threads;
    expect_only(root, analysis::kLateReceiver);
    ASSERT_EQ(root.waited_for.size(), 1u);
    EXPECT_EQ(root.waited_for[0].rank, 1);
    EXPECT_NEAR(root.waited_for[0].seconds, ms(50), kTol);
  }
}

// A persistent send is an Isend started by each MPI_Start: the MPI_Wait of
// its first start entered 50 ms before the receive was issued (a late
// receiver from the Wait's enter); the Wait of its second start left before
// its receive was issued and did not wait.
TEST(WaitStates, LateReceiverInTheWaitOfAPersistentSend) {
  TraceBuilder b(2);
  const uint32_t p = 0xAC000031u;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.p2p(0, SendInit, FuncKind::Isend, 1500 * kUs, 1510 * kUs, 1, 5, 8, kWorld, p);
  b.request_op(0, Start, 2 * kMs, 2010 * kUs, {p});
  b.wait(0, Wait, 3 * kMs, 53100 * kUs, {TraceBuilder::done(p)});
  b.request_op(0, Start, 54 * kMs, 54010 * kUs, {p});
  b.wait(0, Wait, 55 * kMs, 55010 * kUs, {TraceBuilder::done(p)});
  b.request_op(0, RequestFree, 56 * kMs, 56001 * kUs, {p});
  b.recv(1, 53 * kMs, 53090 * kUs, 0, 5);
  b.recv(1, 60 * kMs, 60010 * kUs, 0, 5);
  for (int r = 0; r < 2; ++r) b.finalize(r, 70 * kMs, 71 * kMs);
  b.close();
  for (unsigned threads : {1u, 2u}) {
    const auto a = analyze_with(b, threads);
    const auto& root = a.intervals[0];
    EXPECT_NEAR(wait_of(root, 0, analysis::kLateReceiver), ms(50), kTol) << threads;
    expect_only(root, analysis::kLateReceiver);
    ASSERT_EQ(root.waited_for.size(), 1u);
    EXPECT_EQ(root.waited_for[0].rank, 1);
    EXPECT_NEAR(root.waited_for[0].seconds, ms(50), kTol);
  }
}

// An instant goes to the first kind that covers it, Late Sender before Late
// Receiver: rank 0's MPI_Waitall completes a receive whose send enters at
// 40 ms (a late sender from its issue at 2.1 ms) and an Isend whose receive
// is issued at 50 ms (a late receiver from the Waitall's enter at 3 ms). Of
// the late receiver's 47 ms only the 10 ms after the send entered are its
// own; each partner still gets its whole wait.
TEST(WaitStates, LateReceiverTakesOnlyWhatNoLateSenderCovers) {
  TraceBuilder b(2);
  const uint32_t sq = 0xAC000041u, rq = 0xAC000042u;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.isend(0, 2 * kMs, 2010 * kUs, 1, 5, sq);
  b.irecv(0, 2100 * kUs, 2110 * kUs, 1, 6, rq);
  b.wait(0, Waitall, 3 * kMs, 50100 * kUs, {TraceBuilder::done(sq), TraceBuilder::done(rq, 1, 6, 8)});
  b.send(1, 40 * kMs, 40010 * kUs, 0, 6);
  b.recv(1, 50 * kMs, 50090 * kUs, 0, 5);
  for (int r = 0; r < 2; ++r) b.finalize(r, 70 * kMs, 71 * kMs);
  b.close();
  for (unsigned threads : {1u, 2u}) {
    const auto a = analyze_with(b, threads);
    const auto& root = a.intervals[0];
    EXPECT_NEAR(wait_of(root, 0, analysis::kLateSender), ms(37.9), kTol) << threads;
    EXPECT_NEAR(wait_of(root, 0, analysis::kLateReceiver), ms(10), kTol) << threads;
    EXPECT_NEAR(rank_of(root, 0)->potential_sync, ms(37.9), kTol) << threads;
    ASSERT_EQ(root.waited_for.size(), 1u);  // rank 0 waited on rank 1 twice
    EXPECT_EQ(root.waited_for[0].rank, 1);
    EXPECT_NEAR(root.waited_for[0].seconds, ms(37.9) + ms(47), kTol);
  }
}

// Rank 3 enters 5 ms late: every other rank waits 5 ms on it, of the kind
// its call gives.
void late_member(Fn f, WaitKind kind) {
  TraceBuilder b(4);
  for (int r = 0; r < 4; ++r) b.init(r, 0, 1 * kMs);
  for (int r = 0; r < 4; ++r) b.collective(r, f, r == 3 ? 7 * kMs : 2 * kMs, 7100 * kUs + r * 10 * kUs);
  for (int r = 0; r < 4; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto& root = a.intervals[0];
  for (int r = 0; r < 3; ++r) EXPECT_NEAR(wait_of(root, r, kind), ms(5), kTol) << r;
  EXPECT_NEAR(wait_of(root, 3, kind), 0, kTol);
  EXPECT_NEAR(root.waits[kind], ms(15), kTol);
  expect_only(root, kind);
  ASSERT_EQ(root.waited_for.size(), 1u);
  EXPECT_EQ(root.waited_for[0].rank, 3);
  EXPECT_NEAR(root.waited_for[0].seconds, ms(15), kTol);
}

TEST(WaitStates, WaitAtBarrier) { late_member(Barrier, analysis::kWaitAtBarrier); }
TEST(WaitStates, WaitAtNxNAllreduce) { late_member(Allreduce, analysis::kWaitAtNxN); }
TEST(WaitStates, WaitAtNxNAllgatherv) { late_member(Allgatherv, analysis::kWaitAtNxN); }
TEST(WaitStates, WaitAtNxNAlltoall) { late_member(Alltoall, analysis::kWaitAtNxN); }

// Many ranks (past 64 a rank's waits by partner are added when the rank
// settles, not at the match): in interval 3 each odd rank waits 4 ms + k us
// for a message from the even rank 2k before it; then every rank but the
// last waits 5 ms on the last at an Allreduce. Every partner's sum, in the
// interval and rolled up into the root, with one worker and with two.
TEST(WaitStates, WaitsByPartnerOfManyRanks) {
  constexpr int kRanks = 100;
  TraceBuilder b(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    b.init(r, 0, 1 * kMs);
    b.begin(r, 1 * kMs, 3);
  }
  for (int k = 0; k < kRanks / 2; ++k) {
    const uint64_t send = 6 * kMs + static_cast<uint64_t>(k) * kUs;
    b.send(2 * k, send, send + 10 * kUs, 2 * k + 1, 5);
    b.recv(2 * k + 1, 2 * kMs, send + 20 * kUs, 2 * k, 5);
  }
  for (int r = 0; r < kRanks; ++r) {
    b.end(r, 8 * kMs, 3);
    b.collective(r, Allreduce, r == kRanks - 1 ? 14 * kMs : 9 * kMs, 14100 * kUs + static_cast<uint64_t>(r) * kUs);
    b.finalize(r, 20 * kMs, 21 * kMs);
  }
  b.close();
  for (unsigned threads : {1u, 2u}) {
    const auto a = analyze_with(b, threads);
    const auto* in3 = find_interval(a, 3);
    ASSERT_TRUE(in3);
    std::map<int, double> in_interval, in_root;
    for (const auto& p : in3->waited_for) in_interval[p.rank] += p.seconds;
    for (const auto& p : a.intervals[0].waited_for) in_root[p.rank] += p.seconds;
    ASSERT_EQ(in_interval.size(), static_cast<size_t>(kRanks / 2)) << threads;
    ASSERT_EQ(in_root.size(), static_cast<size_t>(kRanks / 2 + 1)) << threads;
    for (int k = 0; k < kRanks / 2; ++k) {
      const double late = ms(4) + k * 1e-6;
      EXPECT_NEAR(in_interval[2 * k], late, kTol) << threads << " rank " << 2 * k;
      EXPECT_NEAR(in_root[2 * k], late, kTol) << threads << " rank " << 2 * k;
      EXPECT_NEAR(wait_of(*in3, 2 * k + 1, analysis::kLateSender), late, kTol) << threads;
    }
    EXPECT_NEAR(in_root[kRanks - 1], (kRanks - 1) * ms(5), kTol) << threads;
  }
}

// Ranks' waits on one partner add up past what one rank's can reach: three
// ranks each wait 40 days for a message from rank 0 (a rank's sum is exact,
// in 2^-10 ns, within +-52 days; the ranks' together, 120 days, are not).
TEST(WaitStates, WaitsOfSeveralRanksOnOnePartnerAddUpPastOneRanksRange) {
  constexpr uint64_t kDay = 86400ull * 1000 * kMs;
  TraceBuilder b(4);
  for (int r = 0; r < 4; ++r) b.init(r, 0, 1 * kMs);
  for (int r = 1; r < 4; ++r) {
    b.send(0, 40 * kDay + static_cast<uint64_t>(r) * kMs, 40 * kDay + static_cast<uint64_t>(r) * kMs + 10 * kUs, r, 5);
    b.recv(r, 2 * kMs, 40 * kDay + 5 * kMs, 0, 5);
  }
  for (int r = 0; r < 4; ++r) b.finalize(r, 40 * kDay + 10 * kMs, 40 * kDay + 11 * kMs);
  b.close();
  for (unsigned threads : {1u, 2u}) {
    const auto a = analyze_with(b, threads);
    const auto& root = a.intervals[0];
    ASSERT_EQ(root.waited_for.size(), 1u) << threads;
    EXPECT_EQ(root.waited_for[0].rank, 0);
    double want = 0;
    for (int r = 1; r < 4; ++r) want += (40.0 * 86400 * 1e9 + r * 1e6 - 2e6) * 1e-9;  // 120 days
    EXPECT_NEAR(root.waited_for[0].seconds, want, 1e-6) << threads;
    EXPECT_NEAR(root.waits[analysis::kLateSender], want, 1e-6) << threads;
  }
}

// One rank's waits on one partner overlap where it posts several receives
// before their sends: rank 1 posts three, and rank 0 sends each 40 days
// later. Each wait counts whole in the waits by partner (120 days), so the
// rank's sum stops at the range's end, 2^52 ns, while its Late Sender time,
// a set of instants, is the 40 days once.
TEST(WaitStates, OverlappingWaitsOnOnePartnerStopAtTheRangesEnd) {
  constexpr uint64_t kDay = 86400ull * 1000 * kMs;
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  std::vector<Completion> done;
  for (uint32_t k = 0; k < 3; ++k) {
    const uint32_t request = 0xAC000200u + k;
    b.irecv(1, 2 * kMs + k * 100 * kUs, 2 * kMs + k * 100 * kUs + 10 * kUs, 0, static_cast<int>(k), request);
    done.push_back(TraceBuilder::done(request, 0, static_cast<int>(k), 8));
    b.send(0, 40 * kDay + k * kMs, 40 * kDay + k * kMs + 10 * kUs, 1, static_cast<int>(k));
  }
  b.wait(1, Waitall, 3 * kMs, 40 * kDay + 3 * kMs, done);
  for (int r = 0; r < 2; ++r) b.finalize(r, 40 * kDay + 10 * kMs, 40 * kDay + 11 * kMs);
  b.close();
  const double end_s = std::ldexp(1.0, 52) * 1e-9;  // (2^62 - 2^10 units of 2^-10 ns)
  for (unsigned threads : {1u, 2u}) {
    const auto a = analyze_with(b, threads);
    const auto& root = a.intervals[0];
    ASSERT_EQ(root.waited_for.size(), 1u) << threads;
    EXPECT_EQ(root.waited_for[0].rank, 0);
    EXPECT_NEAR(root.waited_for[0].seconds, end_s, 1e-6) << threads;
    EXPECT_NEAR(wait_of(root, 1, analysis::kLateSender), 40.0 * 86400, 1e-6) << threads;  // 2 ms .. 40 days + 2 ms
  }
}

// A Bcast rooted at rank 0 entering at 5 ms; rank 1 enters at 2 ms, rank 2
// last at 7 ms. Rank 1 is late-root for 3 ms, then waits 2 ms on rank 2
// (other); the root waits 2 ms on rank 2 (other).
TEST(WaitStates, LateRootThenTheLastMember) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) b.init(r, 0, 1 * kMs);
  const uint64_t enter[3] = {5 * kMs, 2 * kMs, 7 * kMs};
  for (int r = 0; r < 3; ++r) b.collective(r, Bcast, enter[r], 8 * kMs);
  for (int r = 0; r < 3; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto& root = a.intervals[0];
  EXPECT_NEAR(wait_of(root, 1, analysis::kLateRoot), ms(3), kTol);
  EXPECT_NEAR(wait_of(root, 1, analysis::kWaitAtCollectiveOther), ms(2), kTol);
  EXPECT_NEAR(wait_of(root, 0, analysis::kLateRoot), 0, kTol);
  EXPECT_NEAR(wait_of(root, 0, analysis::kWaitAtCollectiveOther), ms(2), kTol);
  EXPECT_NEAR(root.waits[analysis::kWaitAtCollectiveOther], ms(4), kTol);
  ASSERT_EQ(root.waited_for.size(), 1u);
  EXPECT_EQ(root.waited_for[0].rank, 2);
  EXPECT_NEAR(root.waited_for[0].seconds, ms(7), kTol);
}

// A Reduce rooted at rank 1 (entering first, at 2 ms); ranks 0 and 2 enter at
// 4 and 6 ms. The root is early for 4 ms; rank 0's 2 ms are other.
TEST(WaitStates, EarlyRootOfAReduce) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) b.init(r, 0, 1 * kMs);
  const uint64_t enter[3] = {4 * kMs, 2 * kMs, 6 * kMs};
  for (int r = 0; r < 3; ++r) b.collective(r, Reduce, enter[r], 7 * kMs, kWorld, 8, format::kNoRequest, 1);
  for (int r = 0; r < 3; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto& root = a.intervals[0];
  EXPECT_NEAR(wait_of(root, 1, analysis::kEarlyRoot), ms(4), kTol);
  EXPECT_NEAR(wait_of(root, 0, analysis::kEarlyRoot), 0, kTol);
  EXPECT_NEAR(wait_of(root, 0, analysis::kWaitAtCollectiveOther), ms(2), kTol);
  EXPECT_NEAR(root.waits[analysis::kEarlyRoot], ms(4), kTol);
}

// A rank computing 30 ms more inside interval 3 before an Allreduce: the
// others' waits are in interval 3 and its parent, on that rank; a wait
// shorter than the two ranks' clock bounds together is uncertain.
TEST(WaitStates, WaitsBelongToTheIntervalAndItsParent) {
  TraceBuilder b(2);
  // Rank 1's clock is known within 1 us (a 2 us round trip), rank 0's within 0.
  b.w(1).clock_sync({"init", 0, 0, 2 * kUs});
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  for (int r = 0; r < 2; ++r) {
    b.begin(r, 2 * kMs, 1);
    b.begin(r, 3 * kMs, 3, 2);
    b.collective(r, Allreduce, r == 1 ? 34 * kMs : 4 * kMs, 35 * kMs);
    b.end(r, 36 * kMs, 3, 2);
    // A 0.5 us wait: within the clock bound.
    b.collective(r, Barrier, r == 1 ? 37 * kMs + 500 : 37 * kMs, 38 * kMs);
    b.end(r, 40 * kMs, 1);
  }
  for (int r = 0; r < 2; ++r) b.finalize(r, 50 * kMs, 51 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto* in3 = find_interval(a, 3);
  const auto* in1 = find_interval(a, 1);
  ASSERT_TRUE(in3 && in1);
  EXPECT_NEAR(wait_of(*in3, 0, analysis::kWaitAtNxN), ms(30), kTol);
  expect_only(*in3, analysis::kWaitAtNxN);
  ASSERT_EQ(in3->waited_for.size(), 1u);
  EXPECT_EQ(in3->waited_for[0].rank, 1);
  EXPECT_NEAR(in3->waited_for[0].uncertain_seconds, 0, kTol);
  EXPECT_NEAR(wait_of(*in1, 0, analysis::kWaitAtNxN), ms(30), kTol);
  EXPECT_NEAR(wait_of(*in1, 0, analysis::kWaitAtBarrier), 500e-9, kTol);
  ASSERT_EQ(in1->waited_for.size(), 1u);
  EXPECT_NEAR(in1->waited_for[0].seconds, ms(30) + 500e-9, kTol);
  EXPECT_NEAR(in1->waited_for[0].uncertain_seconds, 500e-9, kTol);
}

// The text report prints the section only when asked (--wait-states), after
// the comparative table.
TEST(WaitStates, TextSectionOnlyWhenAsked) {
  TraceBuilder b(4);
  for (int r = 0; r < 4; ++r) b.init(r, 0, 1 * kMs);
  for (int r = 0; r < 4; ++r) b.collective(r, Barrier, r == 3 ? 7 * kMs : 2 * kMs, 7100 * kUs);
  for (int r = 0; r < 4; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  std::ostringstream plain, with;
  analysis::write_text_report(a, plain, {});
  analysis::TextOptions opt;
  opt.wait_states = true;
  analysis::write_text_report(a, with, opt);
  EXPECT_EQ(plain.str().find("---Wait States---"), std::string::npos);
  const std::string t = with.str();
  const size_t section = t.find("---Wait States---\n");
  ASSERT_NE(section, std::string::npos);
  EXPECT_LT(t.find("---Comparative Characteristics---"), section);
  EXPECT_LT(section, t.find("---Characteristics per Processor---"));
  EXPECT_NE(t.find("Wait at Barrier 0.015000\nWait at NxN 0.000000\n", section), std::string::npos);
  EXPECT_NE(t.find("Waited for: Nproc Time Uncertain\n3 0.015000 0.000000\n", section), std::string::npos);
}

// Every kind of wait, in nested intervals, between three ranks: late
// senders, a late receiver of a synchronous send and of an Isend's Wait, a
// barrier, an Allreduce, a Bcast whose root is late, a Reduce whose root is
// early (and a non-root waiting on the last member: other); forty
// iterations.
void build_every_kind(TraceBuilder& b) {
  const uint32_t sq = 0xAC000021u;
  for (int r = 0; r < 3; ++r) b.init(r, 0, 1 * kMs);
  for (uint64_t it = 0; it < 40; ++it) {
    const uint64_t t = (2 + 10 * it) * kMs;
    for (int r = 0; r < 3; ++r) b.begin(r, t, 1);
    b.begin(0, t + 10 * kUs, 2);
    b.p2p(0, Ssend, FuncKind::Send, t + 100 * kUs, t + 900 * kUs, 1, 5);  // its receive at 800 us
    b.isend(0, t + 1000 * kUs, t + 1010 * kUs, 2, 6, sq);
    b.wait(0, Wait, t + 1100 * kUs, t + 1700 * kUs, {TraceBuilder::done(sq)});  // receive at 1600 us
    b.end(0, t + 1800 * kUs, 2);
    b.recv(1, t + 800 * kUs, t + 850 * kUs + it * kUs, 0, 5);
    b.recv(2, t + 1600 * kUs, t + 1650 * kUs, 0, 6);
    b.recv(0, t + 1900 * kUs, t + 2500 * kUs, 1, 7);  // its send at 2400 us
    b.send(1, t + 2400 * kUs, t + 2410 * kUs, 0, 7);
    for (int r = 0; r < 3; ++r) {
      const uint64_t late = static_cast<uint64_t>(r) * 100 * kUs;
      b.collective(r, Barrier, t + 3000 * kUs + late, t + 3300 * kUs);
      b.collective(r, Allreduce, t + 4000 * kUs + (2 - r) * 50 * kUs, t + 4200 * kUs);
      b.collective(r, Bcast, t + 5000 * kUs + (r == 0 ? 300 * kUs : late), t + 5400 * kUs);
      b.collective(r, Reduce, t + 6000 * kUs + (r == 1 ? 0 : 200 * kUs + late), t + 6500 * kUs, kWorld, 8,
                   format::kNoRequest, 1);
      b.end(r, t + 7000 * kUs, 1);
    }
  }
  for (int r = 0; r < 3; ++r) b.finalize(r, 500 * kMs, 501 * kMs);
  b.close();
}

// Options::wait_states off: the wait states are not computed, the result
// says so and the writers that print them refuse it; every other figure,
// and so the text report without --wait-states, is the same as with them.
TEST(WaitStates, NotComputedWhenNotAskedAndTheResultSaysSo) {
  TraceBuilder b(3);
  build_every_kind(b);
  for (unsigned threads : {1u, 2u}) {
    analysis::Options on;
    on.threads = threads;
    analysis::Options off = on;
    off.wait_states = false;
    const analysis::Analysis with = analysis::analyze(b.dir(), on);
    const analysis::Analysis without = analysis::analyze(b.dir(), off);
    expect_invariants(without);
    ASSERT_TRUE(with.usable());
    ASSERT_TRUE(without.usable());
    EXPECT_TRUE(with.waits_known);
    EXPECT_FALSE(without.waits_known);
    // The trace has waits of every kind.
    const auto& root = with.intervals[0];
    for (int k = 0; k < analysis::kWaitKindCount; ++k)
      EXPECT_GT(root.waits[static_cast<size_t>(k)], 0) << analysis::kWaitKindKeys[k];
    EXPECT_FALSE(root.waited_for.empty());
    for (const auto& n : without.intervals) {
      EXPECT_TRUE(n.waited_for.empty());
      for (double v : n.waits) EXPECT_EQ(v, 0);
      for (const auto& f : n.per_rank)
        for (double v : f.waits) EXPECT_EQ(v, 0);
    }
    // The text report (every option but --wait-states) is the same.
    analysis::TextOptions all;
    all.functions = true;
    all.callsites = true;
    for (const analysis::TextOptions& opt : {analysis::TextOptions{}, all}) {
      std::ostringstream x, y;
      analysis::write_text_report(with, x, opt);
      analysis::write_text_report(without, y, opt);
      EXPECT_EQ(x.str(), y.str()) << threads;
    }
    // What prints them refuses a result without them.
    std::ostringstream sink;
    analysis::TextOptions waits;
    waits.wait_states = true;
    EXPECT_THROW(analysis::write_text_report(without, sink, waits), std::logic_error);
    EXPECT_THROW(analysis::write_json_report(without, sink), std::logic_error);
    const analysis::Comparison c = analysis::compare(with, without);
    EXPECT_FALSE(c.waits_known);
    analysis::CompareTextOptions compare_waits;
    compare_waits.wait_states = true;
    EXPECT_THROW(analysis::write_compare_text(c, "a", "b", sink, compare_waits), std::logic_error);
    EXPECT_THROW(analysis::write_compare_json(c, with, without, "a", "b", sink), std::logic_error);
    std::ostringstream compared_with, compared_without;
    analysis::write_compare_text(analysis::compare(with, with), "a", "b", compared_with);
    analysis::write_compare_text(c, "a", "b", compared_without);
    EXPECT_EQ(compared_with.str(), compared_without.str());
  }
}

// The root causes take each wait with its partner: asked for, the wait
// states are computed too.
TEST(WaitStates, ComputedForTheRootCauses) {
  TraceBuilder b(3);
  build_every_kind(b);
  analysis::Options o;
  o.wait_states = false;
  o.delay_analysis = true;
  const analysis::Analysis a = analysis::analyze(b.dir(), o);
  ASSERT_TRUE(a.usable());
  EXPECT_TRUE(a.waits_known);
  EXPECT_TRUE(a.delay_known);
  EXPECT_GT(a.intervals[0].waits[analysis::kLateSender], 0);
}

// What each output needs (report.h's table), as prof-analyze asks for it:
// (wait states, root causes, function profile).
TEST(WaitStates, OutputsNeedWhatTheyPrint) {
  using analysis::Output;
  const auto need = [](std::vector<Output> o) {
    const analysis::FiguresNeeded n = analysis::figures_needed(o);
    return std::make_tuple(n.wait_states, n.delay_analysis, n.function_profile);
  };
  EXPECT_EQ(need({Output::Text}), std::make_tuple(false, false, false));
  EXPECT_EQ(need({Output::Text, Output::ChromeTrace, Output::Otf2}), std::make_tuple(false, false, false));
  EXPECT_EQ(need({Output::CompareText}), std::make_tuple(false, false, false));
  EXPECT_EQ(need({Output::TextWaitStates}), std::make_tuple(true, true, false));
  EXPECT_EQ(need({Output::Text, Output::TextFunctions}), std::make_tuple(false, false, true));
  EXPECT_EQ(need({Output::CompareText, Output::TextFunctions}), std::make_tuple(false, false, true));
  EXPECT_EQ(need({Output::Text, Output::Json}), std::make_tuple(true, true, true));
  EXPECT_EQ(need({Output::CompareTextWaitStates}), std::make_tuple(true, false, false));
  EXPECT_EQ(need({Output::CompareText, Output::CompareJson}), std::make_tuple(true, false, true));
}

}  // namespace
}  // namespace prof::test
