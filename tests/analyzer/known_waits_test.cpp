// Traces with known waits: each characteristic against the value the scenario
// was built to have. Times are integer nanoseconds, so the stated tolerance is
// one nanosecond (kTol, in seconds).
#include "trace_builder.h"

namespace prof::test {
namespace {

TEST(KnownWaits, LateSenderBlockingRecv) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.recv(0, 2 * kMs, 7100 * kUs, 1, 5);  // posted 5 ms before the send
  b.send(1, 7 * kMs, 7200 * kUs, 0, 5);
  for (int r = 0; r < 2; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  ASSERT_EQ(a.intervals.size(), 1u);
  const auto& root = a.intervals[0];
  const auto* r0 = rank_of(root, 0);
  const auto* r1 = rank_of(root, 1);
  ASSERT_TRUE(r0 && r1);
  EXPECT_NEAR(r0->potential_sync, ms(5), kTol);  // late sender
  EXPECT_NEAR(r0->sendrecv, ms(0.1), kTol);      // transfer after the send entered
  EXPECT_NEAR(r0->mpi, ms(5.1), kTol);
  EXPECT_NEAR(r0->comm, ms(0.1), kTol);
  EXPECT_NEAR(r1->potential_sync, 0, kTol);
  EXPECT_NEAR(r1->sendrecv, 0, kTol);  // a send is MPI time, not transfer
  EXPECT_NEAR(r1->mpi, ms(0.2), kTol);
  EXPECT_NEAR(root.main.execution_time, ms(9), kTol);  // MPI_Init's return to Finalize's call
  EXPECT_NEAR(root.main.idle_time, 0, kTol);
  EXPECT_NEAR(root.main.lost_time, ms(5.3), kTol);
  EXPECT_NEAR(root.main.efficiency, (18 - 5.3) / 18, 1e-12);
  // The mpiP-style profile: calls, time and bytes per function, markers and
  // MPI_Init/MPI_Finalize (outside the run) excluded.
  ASSERT_EQ(root.functions.size(), 2u);
  EXPECT_EQ(root.functions[0].name, "MPI_Recv");
  EXPECT_EQ(root.functions[0].calls, 1u);
  EXPECT_NEAR(root.functions[0].time, ms(5.1), kTol);
  EXPECT_EQ(root.functions[0].bytes, 8u);
  EXPECT_EQ(root.functions[1].name, "MPI_Send");
}

TEST(KnownWaits, LateSenderThroughIrecvAndWait) {
  TraceBuilder b(2);
  const uint32_t rq = 0xAC000010u, sq = 0xAC000011u;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.irecv(0, 2 * kMs, 2010 * kUs, 1, 5, rq);
  b.wait(0, Wait, 3 * kMs, 8100 * kUs, {TraceBuilder::done(rq, 1, 5, 8)});  // waits 5 ms
  b.isend(1, 8 * kMs, 8020 * kUs, 0, 5, sq);
  b.wait(1, Wait, 8500 * kUs, 8600 * kUs, {TraceBuilder::done(sq)});
  for (int r = 0; r < 2; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto& root = a.intervals[0];
  const auto* r0 = rank_of(root, 0);
  const auto* r1 = rank_of(root, 1);
  ASSERT_TRUE(r0 && r1);
  // Rank 0 waits from the Irecv's issue (2 ms) to the send (8 ms), 1 ms of it
  // computing before the Wait: potential sync outside MPI calls.
  EXPECT_NEAR(r0->potential_sync, ms(6), kTol);
  EXPECT_NEAR(r0->sendrecv, ms(0.1), kTol);
  EXPECT_NEAR(r0->time_of_start, ms(0.01), kTol);  // inside MPI_Irecv
  EXPECT_NEAR(r0->mpi, ms(5.11), kTol);
  EXPECT_NEAR(r1->time_of_start, ms(0.02), kTol);  // inside MPI_Isend
  EXPECT_NEAR(r1->potential_sync, 0, kTol);
  EXPECT_EQ(a.stats.messages_matched, 1u);
}

TEST(KnownWaits, LateEntryIntoCollective) {
  TraceBuilder b(4);
  for (int r = 0; r < 4; ++r) b.init(r, 0, 1 * kMs);
  for (int r = 0; r < 4; ++r) {
    const uint64_t enter = r == 3 ? 7 * kMs : 2 * kMs;  // rank 3 is 5 ms late
    b.collective(r, Barrier, enter, 7100 * kUs + r * 10 * kUs);
  }
  for (int r = 0; r < 4; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto& root = a.intervals[0];
  for (int r = 0; r < 4; ++r) {
    const auto* f = rank_of(root, r);
    ASSERT_TRUE(f);
    EXPECT_NEAR(f->potential_sync, r == 3 ? 0 : ms(5), kTol) << r;
    EXPECT_NEAR(f->collective, ms(0.1 + 0.01 * r), kTol) << r;  // after the last entry
    EXPECT_NEAR(f->time_variation, ms(0.01 * (3 - r)), kTol) << r;  // left before rank 3
    EXPECT_NEAR(f->alltoall, 0, kTol);
  }
  const auto& ps = root.comparative[static_cast<int>(analysis::Comparative::PotentialSync)];
  EXPECT_EQ(ps.max_rank, 0);  // ties go to the lowest rank
  EXPECT_EQ(ps.min_rank, 3);
  EXPECT_NEAR(ps.mean, ms(15) / 4, kTol);
  EXPECT_EQ(a.stats.collective_instances, 1u);
}

// Each of the four ways a rank's spans may be summed: with and without the
// wait states (which hold the watermark for a collective's wait states), on
// one and two workers.
template <class F>
void for_each_setting(const TraceBuilder& b, F&& check) {
  for (const bool wait_states : {false, true})
    for (unsigned workers : {1u, 2u}) {
      analysis::Options opt;
      opt.threads = workers;
      opt.wait_states = wait_states;
      const analysis::Analysis a = analysis::analyze(b.dir(), opt);
      SCOPED_TRACE(testing::Message() << "workers " << workers << ", wait states " << wait_states);
      expect_invariants(a);
      ASSERT_TRUE(a.usable());
      check(a);
    }
}

// Rank 0's Irecv (2 ms) waits for rank 1's Isend (8 ms) and completes in
// a Wait from `wait_enter` to 8.1 ms; `between` adds rank 0's calls between
// the two, `after` those after the Wait.
template <class Between, class After>
void late_sender_around(TraceBuilder& b, uint64_t wait_enter, Between&& between, After&& after) {
  const uint32_t rq = 0xAC000010u, sq = 0xAC000011u;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.irecv(0, 2 * kMs, 2010 * kUs, 1, 5, rq);
  between();
  b.wait(0, Wait, wait_enter, 8100 * kUs, {TraceBuilder::done(rq, 1, 5, 8)});
  after();
  b.isend(1, 8 * kMs, 8020 * kUs, 0, 5, sq);
  b.wait(1, Wait, 8500 * kUs, 8600 * kUs, {TraceBuilder::done(sq)});
  for (int r = 0; r < 2; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
}

// A late sender's wait runs from its Irecv's issue, across the calls made
// before the Wait that completes it: a collective among them lies inside
// that wait, and each instant counts once, for the first kind covering it.
TEST(KnownWaits, ACollectiveInsideALateSendersWaitCountsOnce) {
  TraceBuilder b(2);
  late_sender_around(
      b, 6 * kMs,
      [&] {
        b.collective(0, Allreduce, 3 * kMs, 5 * kMs);  // waits 1 ms for rank 1
        b.collective(1, Allreduce, 4 * kMs, 5 * kMs);
      },
      [] {});
  for_each_setting(b, [](const analysis::Analysis& a) {
    const auto* r0 = rank_of(a.intervals[0], 0);
    const auto* r1 = rank_of(a.intervals[0], 1);
    ASSERT_TRUE(r0 && r1);
    // [2 ms, 8 ms) waits on the send, the Allreduce's wait within it.
    EXPECT_NEAR(r0->potential_sync, ms(6), kTol);
    EXPECT_NEAR(r0->sendrecv, ms(0.1), kTol);
    EXPECT_NEAR(r0->collective, 0, kTol);
    EXPECT_NEAR(r1->potential_sync, 0, kTol);
    EXPECT_NEAR(r1->collective, ms(1), kTol);
  });
}

// A blocking receive made while an Irecv is in flight waits within the
// Irecv's wait: the instants count once.
TEST(KnownWaits, ABlockingReceiveInsideALateSendersWaitCountsOnce) {
  TraceBuilder b(2);
  late_sender_around(
      b, 6 * kMs,
      [&] {
        b.recv(0, 3 * kMs, 5100 * kUs, 1, 6);  // its send enters at 5 ms
        b.send(1, 5 * kMs, 5200 * kUs, 0, 6);
      },
      [] {});
  for_each_setting(b, [](const analysis::Analysis& a) {
    const auto* r0 = rank_of(a.intervals[0], 0);
    ASSERT_TRUE(r0);
    EXPECT_NEAR(r0->potential_sync, ms(6), kTol);  // [2 ms, 8 ms)
    EXPECT_NEAR(r0->sendrecv, ms(0.1), kTol);      // [8 ms, 8.1 ms): the Recv's transfer lies in the wait
    EXPECT_EQ(a.stats.messages_matched, 2u);
  });
}

// An interval that begins while a receive is in flight takes the part of
// its wait after the begin; the part before stays with the enclosing one.
TEST(KnownWaits, AWaitAcrossAMarkerIsSplitBetweenTheIntervals) {
  TraceBuilder b(2);
  late_sender_around(b, 4 * kMs, [&] { b.begin(0, 3 * kMs, 1); }, [&] { b.end(0, 9 * kMs, 1); });
  for_each_setting(b, [](const analysis::Analysis& a) {
    const auto* interval = find_interval(a, 1);
    ASSERT_TRUE(interval);
    const auto* inside = rank_of(*interval, 0);
    const auto* whole = rank_of(a.intervals[0], 0);
    ASSERT_TRUE(inside && whole);
    EXPECT_NEAR(inside->potential_sync, ms(5), kTol);  // [3 ms, 8 ms)
    EXPECT_NEAR(inside->sendrecv, ms(0.1), kTol);
    EXPECT_NEAR(whole->potential_sync, ms(6), kTol);   // the root's: its own part and the interval's
  });
}

TEST(KnownWaits, AllToAllCountsApartFromCollectives) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.collective(0, Alltoall, 1 * kMs, 3500 * kUs);
  b.collective(1, Alltoall, 3 * kMs, 3500 * kUs);
  for (int r = 0; r < 2; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto* r0 = rank_of(a.intervals[0], 0);
  const auto* r1 = rank_of(a.intervals[0], 1);
  EXPECT_NEAR(r0->alltoall, ms(0.5), kTol);
  EXPECT_NEAR(r0->potential_sync, ms(2), kTol);
  EXPECT_NEAR(r1->alltoall, ms(0.5), kTol);
  EXPECT_NEAR(r0->collective + r1->collective, 0, kTol);
  EXPECT_NEAR(a.intervals[0].main.alltoall_time, ms(1), kTol);
}

TEST(KnownWaits, PureImbalanceWithoutMpiIsIdle) {
  TraceBuilder b(4);
  for (int r = 0; r < 4; ++r) {
    b.init(r, 0, 1 * kMs);
    b.begin(r, 2 * kMs, 1);
    b.end(r, (3 + r) * kMs, 1);  // rank r computes r+1 ms
    b.finalize(r, 10 * kMs, 11 * kMs);
  }
  b.close();
  const auto a = analyze_usable(b);
  const auto* in = find_interval(a, 1);
  ASSERT_TRUE(in);
  EXPECT_EQ(in->main.processors, 4);
  EXPECT_NEAR(in->main.execution_time, ms(4), kTol);
  EXPECT_NEAR(in->main.total_time, ms(16), kTol);
  EXPECT_NEAR(in->main.mpi_time, 0, kTol);
  EXPECT_NEAR(in->main.idle_time, ms(6), kTol);  // 3 + 2 + 1 + 0
  EXPECT_NEAR(in->main.lost_time, ms(6), kTol);
  EXPECT_NEAR(in->main.productive_time, ms(10), kTol);
  EXPECT_NEAR(in->main.efficiency, 10.0 / 16.0, 1e-12);
  for (int r = 0; r < 4; ++r) EXPECT_NEAR(rank_of(*in, r)->idle, ms(3 - r), kTol) << r;
  const auto& idle = in->comparative[static_cast<int>(analysis::Comparative::Idle)];
  EXPECT_EQ(idle.min_rank, 3);
  EXPECT_EQ(idle.max_rank, 0);
}

TEST(KnownWaits, NestedAndRepeatedIntervals) {
  TraceBuilder b(2);
  // Interval 1 (app.c:100) three times; inside, interval 2 (app.c:200) twice,
  // each with 0.1 ms of MPI. Rank 1 is slow in the first execution, rank 0 in
  // the second: each rank's executions are summed (6 ms each) before ranks
  // are compared, so neither waited for the other.
  const double exec1[2][3] = {{1, 2, 3}, {2, 1, 3}};  // ms
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    uint64_t t = 2 * kMs;
    for (int k = 0; k < 3; ++k) {
      b.begin(r, t, 1, 1);
      const uint64_t end = t + static_cast<uint64_t>(exec1[r][k] * kMs);
      for (int j = 0; j < 2; ++j) {
        const uint64_t s = t + 100 * kUs + j * 300 * kUs;
        b.begin(r, s, 2, 2);
        b.other(r, CommRank, s + 50 * kUs, s + 150 * kUs);
        b.end(r, s + 200 * kUs, 2, 2);
      }
      b.end(r, end, 1, 1);
      t = end + 1 * kMs;
    }
    // The same id at another call site is another interval.
    b.begin(r, 20 * kMs, 2, 3);
    b.end(r, 21 * kMs, 2, 3);
    b.finalize(r, 30 * kMs, 31 * kMs);
  }
  b.close();
  const auto a = analyze_usable(b);
  ASSERT_EQ(a.intervals.size(), 4u);
  // Tree order: root, 1@100, 2@200 (inside 1), 2@300.
  EXPECT_FALSE(a.intervals[0].id.has_value());
  EXPECT_EQ(a.intervals[0].level, 0);
  EXPECT_EQ(a.intervals[1].line, 100);
  EXPECT_EQ(a.intervals[1].level, 1);
  EXPECT_EQ(a.intervals[1].parent, 0);
  EXPECT_EQ(a.intervals[1].exe_count, 3u);
  EXPECT_EQ(a.intervals[2].line, 200);
  EXPECT_EQ(a.intervals[2].level, 2);
  EXPECT_EQ(a.intervals[2].parent, 1);
  EXPECT_EQ(a.intervals[2].exe_count, 6u);
  EXPECT_EQ(a.intervals[3].line, 300);
  EXPECT_EQ(a.intervals[3].level, 1);
  EXPECT_EQ(a.intervals[3].parent, 0);
  EXPECT_EQ(a.intervals[3].exe_count, 1u);

  const auto& i1 = a.intervals[1];
  EXPECT_NEAR(i1.main.execution_time, ms(6), kTol);
  EXPECT_NEAR(rank_of(i1, 0)->idle, 0, kTol);
  EXPECT_NEAR(rank_of(i1, 1)->idle, 0, kTol);
  // MPI inside the nested interval counts in it and in every enclosing one.
  EXPECT_NEAR(a.intervals[2].main.mpi_time, ms(1.2), kTol);
  EXPECT_NEAR(i1.main.mpi_time, ms(1.2), kTol);
  EXPECT_NEAR(a.intervals[0].main.mpi_time, ms(1.2), kTol);
  EXPECT_NEAR(a.intervals[3].main.mpi_time, 0, kTol);
  ASSERT_EQ(i1.functions.size(), 1u);
  EXPECT_EQ(i1.functions[0].name, "MPI_Comm_rank");
  EXPECT_EQ(i1.functions[0].calls, 12u);
  EXPECT_EQ(a.stats.unbalanced_markers, 0u);
}

TEST(KnownWaits, UnequalExecutionCountsCompareSums) {
  // Rank 0 runs interval 1 three times (1, 2, 4 ms: 7), rank 1 twice (3, 1
  // ms: 4); interval 2 only on rank 0. Execution Time is the larger sum, and
  // Idle_r how much less rank r spent.
  TraceBuilder b(2);
  const double t1[2][3] = {{1, 2, 4}, {3, 1, 0}};
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    uint64_t t = 2 * kMs;
    for (int k = 0; k < (r == 0 ? 3 : 2); ++k) {
      b.begin(r, t, 1);
      t += static_cast<uint64_t>(t1[r][k] * kMs);
      b.end(r, t, 1);
      t += 1 * kMs;
    }
    if (r == 0)
      for (int k = 0; k < 5; ++k) {
        b.begin(r, t, 2, 2);
        b.end(r, t + 100 * kUs, 2, 2);
        t += 200 * kUs;
      }
    b.finalize(r, 30 * kMs, 31 * kMs);
  }
  b.close();
  const auto a = analyze_usable(b);
  const auto* i1 = find_interval(a, 1);
  const auto* i2 = find_interval(a, 2);
  ASSERT_TRUE(i1 && i2);
  EXPECT_EQ(i1->exe_count, 3u);
  EXPECT_EQ(i1->main.processors, 2);
  EXPECT_NEAR(i1->main.execution_time, ms(7), kTol);
  EXPECT_NEAR(rank_of(*i1, 0)->idle, 0, kTol);
  EXPECT_NEAR(rank_of(*i1, 1)->idle, ms(3), kTol);
  EXPECT_EQ(rank_of(*i1, 1)->executions, 2u);
  EXPECT_EQ(i2->main.processors, 1);
  EXPECT_EQ(i2->exe_count, 5u);
  EXPECT_NEAR(i2->main.execution_time, ms(0.5), kTol);
  EXPECT_NEAR(i2->main.idle_time, 0, kTol);
  EXPECT_EQ(rank_of(*i2, 1), nullptr);
}

TEST(KnownWaits, ShiftedExecutionsNeverExceedTheirParent) {
  // A pipeline: both ranks spend 12 ms in interval 1, and inside it run
  // interval 2 twice, back to back: rank 0 10 ms then 1 ms, rank 1 1 ms then
  // 10 ms. Taking the slowest rank per execution would give interval 2 20 ms,
  // longer than interval 1; summed per rank first it is 11 ms, and nobody idles.
  TraceBuilder b(2);
  const uint64_t inner[2][2] = {{10, 1}, {1, 10}};
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    b.begin(r, 2 * kMs, 1, 1);
    uint64_t t = 2 * kMs;
    for (int k = 0; k < 2; ++k) {
      b.begin(r, t, 2, 2);
      t += inner[r][k] * kMs;
      b.end(r, t, 2, 2);
    }
    b.end(r, 14 * kMs, 1, 1);
    b.finalize(r, 15 * kMs, 16 * kMs);
  }
  b.close();
  const auto a = analyze_usable(b);
  const auto* outer = find_interval(a, 1);
  const auto* nested = find_interval(a, 2);
  ASSERT_TRUE(outer && nested);
  EXPECT_NEAR(outer->main.execution_time, ms(12), kTol);
  EXPECT_NEAR(nested->main.execution_time, ms(11), kTol);
  EXPECT_NEAR(nested->main.idle_time, 0, kTol);
  EXPECT_EQ(nested->exe_count, 2u);
}

TEST(KnownWaits, AnySourceReceiveMatchedByRecordedSource) {
  TraceBuilder b(3);
  const uint32_t rq = 0xAC000020u;
  for (int r = 0; r < 3; ++r) b.init(r, 0, 1 * kMs);
  // Rank 0 asks for ANY_SOURCE; the status says rank 2 sent it, 6 ms late.
  b.irecv(0, 2 * kMs, 2 * kMs, format::kAnySourceRank, 5, rq, format::kAnySource);
  b.wait(0, Wait, 3 * kMs, 9100 * kUs, {TraceBuilder::done(rq, 2, 5, 8)});
  // Then a blocking ANY_SOURCE receive, recorded with its actual source 1.
  b.recv(0, 10 * kMs, 10500 * kUs, 1, 5);
  b.send(1, 1500 * kUs, 1600 * kUs, 0, 5);  // early: it is the second message
  b.send(2, 9 * kMs, 9050 * kUs, 0, 5);
  for (int r = 0; r < 3; ++r) b.finalize(r, 12 * kMs, 13 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto* r0 = rank_of(a.intervals[0], 0);
  ASSERT_TRUE(r0);
  EXPECT_NEAR(r0->potential_sync, ms(7), kTol);        // from the Irecv to rank 2's send
  EXPECT_NEAR(r0->sendrecv, ms(0.1) + ms(0.5), kTol);  // + the whole blocking Recv
  EXPECT_EQ(a.stats.messages_matched, 2u);
  EXPECT_EQ(a.stats.unmatched_receives + a.stats.unmatched_sends, 0u);
}

TEST(KnownWaits, PersistentSendStartsAtMpiStart) {
  TraceBuilder b(2);
  const uint32_t p = 0xAC000030u;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.recv(0, 2 * kMs, 6200 * kUs, 1, 3);
  b.p2p(1, SendInit, FuncKind::Isend, 1500 * kUs, 1510 * kUs, 0, 3, 8, kWorld, p);
  b.request_op(1, Start, 6 * kMs, 6010 * kUs, {p});  // the send really starts here
  b.wait(1, Wait, 6500 * kUs, 6600 * kUs, {TraceBuilder::done(p)});
  b.request_op(1, RequestFree, 7 * kMs, 7001 * kUs, {p});
  for (int r = 0; r < 2; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto* r0 = rank_of(a.intervals[0], 0);
  const auto* r1 = rank_of(a.intervals[0], 1);
  EXPECT_NEAR(r0->potential_sync, ms(4), kTol);
  EXPECT_NEAR(r0->sendrecv, ms(0.2), kTol);
  EXPECT_NEAR(r1->time_of_start, ms(0.01), kTol);  // MPI_Start, not MPI_Send_init
  EXPECT_EQ(a.stats.unknown_requests, 0u);
}

TEST(KnownWaits, ClockOffsetOfARankIsApplied) {
  // Rank 1's clock reads 1 s less than rank 0's: without the offset its send
  // would look 1 s early and the wait would be transfer, not a late sender.
  TraceBuilder b(2);
  const uint64_t base = 5000 * kMs;
  const uint64_t lag = 1000 * kMs;
  b.w(1).clock_sync({"init", 0, static_cast<double>(lag), 500});
  b.init(0, base, base + 1 * kMs);
  b.init(1, base - lag, base - lag + 1 * kMs);
  b.recv(0, base + 2 * kMs, base + 7100 * kUs, 1, 5);
  b.send(1, base - lag + 7 * kMs, base - lag + 7200 * kUs, 0, 5);
  b.finalize(0, base + 10 * kMs, base + 11 * kMs);
  b.finalize(1, base - lag + 10 * kMs, base - lag + 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto* r0 = rank_of(a.intervals[0], 0);
  EXPECT_NEAR(r0->potential_sync, ms(5), kTol);
  EXPECT_NEAR(r0->sendrecv, ms(0.1), kTol);
  EXPECT_NEAR(a.intervals[0].main.idle_time, 0, kTol);
}

TEST(KnownWaits, SubCommunicatorCollectivesAreMatchedByTheirMembers) {
  // Ranks 1 and 2 reduce on their own communicator; rank 0 is not in it.
  TraceBuilder b(3);
  const uint32_t sub = 0x84000002u;
  for (int r = 1; r < 3; ++r) {
    trace::CommDef d;
    d.handle = sub;
    d.global_id = 77;
    d.time = 1500 * kUs;
    d.ranks = {1, 2};
    b.w(r).comm(d);
  }
  for (int r = 0; r < 3; ++r) b.init(r, 0, 1 * kMs);
  b.collective(1, Allreduce, 2 * kMs, 4100 * kUs, sub);
  b.collective(2, Allreduce, 4 * kMs, 4100 * kUs, sub);
  for (int r = 0; r < 3; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  EXPECT_NEAR(rank_of(a.intervals[0], 1)->potential_sync, ms(2), kTol);
  EXPECT_NEAR(rank_of(a.intervals[0], 2)->potential_sync, 0, kTol);
  EXPECT_NEAR(rank_of(a.intervals[0], 1)->collective, ms(0.1), kTol);
  EXPECT_EQ(a.stats.incomplete_collectives, 0u);
}

TEST(KnownWaits, CommunicatorHandleZeroIsKnown) {
  // An MPI whose communicator handles are small indices may name one 0. The
  // interpreter's cache of communicator lookups starts with empty entries;
  // an empty entry must match no handle, 0 included, at any time.
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    trace::CommDef d;
    d.handle = 0;
    d.global_id = 88;
    d.time = 0;
    d.ranks = {0, 1};
    b.w(r).comm(d);
    b.init(r, 0, 1 * kMs);
  }
  b.collective(0, Allreduce, 2 * kMs, 4100 * kUs, 0);
  b.collective(1, Allreduce, 4 * kMs, 4100 * kUs, 0);
  for (int r = 0; r < 2; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  EXPECT_NEAR(rank_of(a.intervals[0], 0)->potential_sync, ms(2), kTol);
  EXPECT_NEAR(rank_of(a.intervals[0], 1)->potential_sync, 0, kTol);
  EXPECT_NEAR(rank_of(a.intervals[0], 0)->collective, ms(0.1), kTol);
  EXPECT_EQ(a.stats.incomplete_collectives, 0u);
}

TEST(KnownWaits, WaitallOverManyRequestsIsOneCall) {
  // 200 receives completed by one MPI_Waitall: more entries than one record
  // holds, so the writer splits the call; it is still one call of 1 ms.
  TraceBuilder b(2);
  constexpr int kN = 200;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  std::vector<Completion> done;
  for (int i = 0; i < kN; ++i) {
    const uint32_t rq = 0xAC001000u + static_cast<uint32_t>(i);
    b.irecv(0, 2 * kMs + i * kUs, 2 * kMs + i * kUs, 1, i, rq);
    done.push_back(TraceBuilder::done(rq, 1, i, 8));
  }
  b.wait(0, Waitall, 5 * kMs, 6 * kMs, done);
  for (int i = 0; i < kN; ++i) b.send(1, 3 * kMs + i * kUs, 3 * kMs + i * kUs + 500, 0, i);
  for (int r = 0; r < 2; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto* r0 = rank_of(a.intervals[0], 0);
  ASSERT_TRUE(r0);
  EXPECT_EQ(r0->calls, static_cast<uint64_t>(kN + 1));
  EXPECT_NEAR(r0->mpi, ms(1), kTol);  // the Wait's time once (Irecvs take none)
  EXPECT_EQ(a.stats.messages_matched, static_cast<uint64_t>(kN));
  // Every send entered before the Wait, so its whole 1 ms is transfer, counted
  // once however many receives it completes. Before it, receive i waited from
  // its issue (2 ms + i us) to its send (3 ms + i us): the union of those waits
  // is potential sync from 2 ms to 3.199 ms.
  EXPECT_NEAR(r0->sendrecv, ms(1), kTol);
  EXPECT_NEAR(r0->potential_sync, ms(1.199), kTol);
}

TEST(KnownWaits, IntercommunicatorPeersAreInTheRemoteGroup) {
  // Ranks {0,1} and {2,3} joined by an intercommunicator; rank 0 sends to
  // remote rank 1 (world 3), which receives from remote rank 0 (world 0).
  TraceBuilder b(4);
  const uint32_t ic = kInterWorldHalves;
  for (int r = 0; r < 4; ++r) {
    define_world_halves(b, r);
    b.init(r, 0, 1 * kMs);
  }
  b.p2p(3, Recv, FuncKind::Recv, 2 * kMs, 4100 * kUs, 0, 8, 8, ic);
  b.p2p(0, Send, FuncKind::Send, 4 * kMs, 4200 * kUs, 1, 8, 8, ic);
  for (int r = 0; r < 4; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  EXPECT_EQ(a.stats.messages_matched, 1u);
  EXPECT_NEAR(rank_of(a.intervals[0], 3)->potential_sync, ms(2), kTol);
  EXPECT_NEAR(rank_of(a.intervals[0], 3)->sendrecv, ms(0.1), kTol);
}

}  // namespace
}  // namespace prof::test
