// Waits and transfers as measures of sets of instants (docs/metrics.md): a
// call that completes many receives counts each instant once, a receive waits
// from its issue, threads count as one processor, and requests are told apart
// however MPICH numbers them. Times are integer nanoseconds, so the tolerance
// is a nanosecond; analyze_checked also checks the invariants on every trace.
#include <cmath>

#include "trace_builder.h"

namespace prof::test {
namespace {

// A halo window as real codes post it: 64 Irecv and 64 Isend per rank, one
// Waitall. MPICH gives every send that completed at once the same builtin
// handle, so 64 outstanding requests share one value. Rank 1 posts its sends
// 30 ms late once: rank 0 waits 30 ms, once, not 64 times.
TEST(Instants, HaloWindowWithSharedHandlesCountsEachInstantOnce) {
  constexpr int kN = 64;
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  const uint64_t post[2] = {2 * kMs, 32 * kMs};  // rank 1 is 30 ms late
  for (int r = 0; r < 2; ++r) {
    const int peer = 1 - r;
    uint64_t t = post[r];
    std::vector<Completion> done;
    for (int i = 0; i < kN; ++i, t += kUs) {
      const uint32_t rq = 0xAC000100u + static_cast<uint32_t>(i);
      b.irecv(r, t, t + 100, peer, i, rq);
      done.push_back(TraceBuilder::done(rq, peer, i, 16));
    }
    for (int i = 0; i < kN; ++i, t += kUs) {
      b.isend(r, t, t + 100, peer, i, kBuiltinDoneSend, 16);
      done.push_back(TraceBuilder::done(kBuiltinDoneSend));
    }
    // Rank 0 waits from 2.128 ms until rank 1's last send (32.127 ms), then
    // 0.5 ms of transfer; rank 1's Waitall finds everything there.
    const uint64_t wait_enter = t, wait_leave = r == 0 ? 32 * kMs + 128 * kUs + 500 * kUs : t + 200 * kUs;
    b.wait(r, Waitall, wait_enter, wait_leave, done);
  }
  for (int r = 0; r < 2; ++r) b.finalize(r, 40 * kMs, 41 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  EXPECT_EQ(a.stats.unknown_requests, 0u) << warnings_text(a);
  EXPECT_FALSE(has_warning(a, "unknown request")) << warnings_text(a);
  EXPECT_EQ(a.stats.messages_matched, 2u * kN);
  EXPECT_EQ(a.stats.unmatched_receives + a.stats.unmatched_sends, 0u);
  const auto* r0 = rank_of(a.intervals[0], 0);
  const auto* r1 = rank_of(a.intervals[0], 1);
  ASSERT_TRUE(r0 && r1);
  // Receive i of rank 0 waits from its Irecv (2 ms + i us) to rank 1's send i
  // (32.064 ms + i us): the union runs from 2 ms to 32.127 ms.
  EXPECT_NEAR(r0->potential_sync, ms(30.127), kTol);
  // The Waitall (2.128 .. 32.628 ms) is transfer after the last send entered.
  EXPECT_NEAR(r0->sendrecv, ms(0.501), kTol);
  EXPECT_NEAR(r0->mpi, ms(30.5) + 2 * kN * ms(0.0001), kTol);
  EXPECT_NEAR(r0->time_of_start, 2 * kN * ms(0.0001), kTol);
  EXPECT_NEAR(r1->potential_sync, 0, kTol);  // rank 0's sends were long there
  EXPECT_NEAR(r1->sendrecv, ms(0.2), kTol);
}

// The example of docs/metrics.md: Irecv, 20 ms of work, then MPI_Wait, with
// the sender 50 ms late: 50 ms of PotentSync, 20 of them outside MPI calls.
TEST(Instants, ReceiveWaitsFromItsIssue) {
  TraceBuilder b(2);
  const uint32_t rq = 0xAC000200u, sq = 0xAC000201u;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.irecv(0, 10 * kMs, 10 * kMs, 1, 7, rq);
  b.wait(0, Wait, 30 * kMs, 61 * kMs, {TraceBuilder::done(rq, 1, 7, 8)});
  b.isend(1, 60 * kMs, 60 * kMs, 0, 7, sq);
  b.wait(1, Wait, 60 * kMs, 60 * kMs + 10 * kUs, {TraceBuilder::done(sq)});
  for (int r = 0; r < 2; ++r) b.finalize(r, 70 * kMs, 71 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto* r0 = rank_of(a.intervals[0], 0);
  ASSERT_TRUE(r0);
  EXPECT_NEAR(r0->potential_sync, ms(50), kTol);
  EXPECT_NEAR(r0->sendrecv, ms(1), kTol);
  EXPECT_NEAR(r0->mpi, ms(31), kTol);
  EXPECT_GT(r0->comm + r0->potential_sync, r0->mpi);  // as the thesis's rank 3
}

// A Waitall over receives from early and late senders waits until the latest
// sender; the early ones add nothing.
TEST(Instants, WaitallMixingEarlyAndLateSenders) {
  TraceBuilder b(4);
  for (int r = 0; r < 4; ++r) b.init(r, 0, 1 * kMs);
  std::vector<Completion> done;
  for (int s = 1; s < 4; ++s) {
    const uint32_t rq = 0xAC000300u + static_cast<uint32_t>(s);
    b.irecv(0, 5 * kMs, 5 * kMs, s, 1, rq);
    done.push_back(TraceBuilder::done(rq, s, 1, 8));
  }
  b.wait(0, Waitall, 5 * kMs, 13 * kMs, done);
  b.send(1, 2 * kMs, 3 * kMs, 0, 1);    // early
  b.send(2, 12 * kMs, 12200 * kUs, 0, 1);  // 7 ms late
  b.send(3, 8 * kMs, 9 * kMs, 0, 1);    // 3 ms late
  for (int r = 0; r < 4; ++r) b.finalize(r, 20 * kMs, 21 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto* r0 = rank_of(a.intervals[0], 0);
  ASSERT_TRUE(r0);
  EXPECT_NEAR(r0->potential_sync, ms(7), kTol);
  EXPECT_NEAR(r0->sendrecv, ms(1), kTol);
  EXPECT_EQ(a.stats.messages_matched, 3u);
}

// Waitsome and Testsome loops completing 16 receives a few at a time, some
// Testsome calls finding nothing: each call's time counts once; the waits run
// from the issues to each send.
TEST(Instants, WaitsomeAndTestsomeLoops) {
  constexpr int kN = 16;
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  for (int i = 0; i < kN; ++i)
    b.irecv(0, 2 * kMs, 2 * kMs, 1, i, 0xAC000400u + static_cast<uint32_t>(i));
  // Rank 1 sends message i at 3 ms + i ms.
  for (int i = 0; i < kN; ++i) b.send(1, (3 + i) * kMs, (3 + i) * kMs + 10 * kUs, 0, i);
  // Rank 0: Waitsome completes 0..3 (leaves at 6.5 ms), Testsome finds none,
  // then Testsome completes 4..7 at 11 ms, Waitsome the rest at 19.5 ms.
  auto batch = [&](int from, int to) {
    std::vector<Completion> d;
    for (int i = from; i < to; ++i) d.push_back(TraceBuilder::done(0xAC000400u + static_cast<uint32_t>(i), 1, i, 8));
    return d;
  };
  b.wait(0, Waitsome, 2500 * kUs, 6500 * kUs, batch(0, 4));
  b.wait(0, Testsome, 7 * kMs, 7010 * kUs, {});
  b.wait(0, Testsome, 11 * kMs, 11010 * kUs, batch(4, 8));
  b.wait(0, Waitsome, 12 * kMs, 19500 * kUs, batch(8, kN));
  for (int r = 0; r < 2; ++r) b.finalize(r, 25 * kMs, 26 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  EXPECT_EQ(a.stats.unknown_requests, 0u);
  EXPECT_EQ(a.stats.messages_matched, static_cast<uint64_t>(kN));
  const auto* r0 = rank_of(a.intervals[0], 0);
  ASSERT_TRUE(r0);
  // Waiting: every receive was issued at 2 ms and the last send entered at
  // 18 ms, so until then some receive of rank 0 was waiting for its sender.
  EXPECT_NEAR(r0->potential_sync, ms(16), kTol);
  // Transfer is completing-call time when nothing waits: only the last
  // Waitsome's 18 .. 19.5 ms. The empty Testsome is MPI time only.
  EXPECT_NEAR(r0->sendrecv, ms(1.5), kTol);
  EXPECT_NEAR(r0->mpi, ms(4) + ms(0.01) + ms(0.01) + ms(7.5), kTol);
}

// A persistent receive never started, then MPI_Wait on the inactive request:
// nothing was received, and nothing is wrong with the trace.
TEST(Instants, PersistentReceiveNeverStartedIsNoReceive) {
  TraceBuilder b(2);
  const uint32_t p = 0xAC000500u;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.p2p(0, RecvInit, FuncKind::Irecv, 2 * kMs, 2010 * kUs, 1, 3, 8, kWorld, p);
  b.wait(0, Wait, 3 * kMs, 3010 * kUs, {TraceBuilder::done(p)});
  b.request_op(0, RequestFree, 4 * kMs, 4010 * kUs, {p});
  for (int r = 0; r < 2; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  EXPECT_TRUE(a.warnings.empty()) << warnings_text(a);
  EXPECT_EQ(a.stats.unmatched_receives, 0u);
  EXPECT_NEAR(rank_of(a.intervals[0], 0)->potential_sync, 0, kTol);
}

// A handle freed while its persistent receive was started, then given to a
// new persistent receive that is waited on without a Start: the new request
// is not started (nothing of the last one on its handle carries over), so
// nothing was received.
TEST(Instants, RequestOnReusedHandleStartsAfresh) {
  TraceBuilder b(2);
  const uint32_t p = 0xAC000580u;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.p2p(0, RecvInit, FuncKind::Irecv, 2 * kMs, 2 * kMs, 1, 3, 8, kWorld, p);
  b.request_op(0, Start, 3 * kMs, 3 * kMs, {p});
  b.request_op(0, RequestFree, 4 * kMs, 4 * kMs, {p});  // completes unseen
  b.p2p(0, RecvInit, FuncKind::Irecv, 5 * kMs, 5 * kMs, 1, 3, 8, kWorld, p);
  b.wait(0, Wait, 6 * kMs, 6010 * kUs, {TraceBuilder::done(p)});
  b.request_op(0, RequestFree, 7 * kMs, 7 * kMs, {p});
  for (int r = 0; r < 2; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  EXPECT_TRUE(a.warnings.empty()) << warnings_text(a);
  EXPECT_EQ(a.stats.unmatched_receives, 0u);
  EXPECT_EQ(a.stats.messages_matched, 0u);
  EXPECT_NEAR(rank_of(a.intervals[0], 0)->potential_sync, 0, kTol);
}

// Then started twice: each start is one receive, waiting from its Start.
TEST(Instants, PersistentReceiveWaitsFromEachStart) {
  TraceBuilder b(2);
  const uint32_t p = 0xAC000600u;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.p2p(0, RecvInit, FuncKind::Irecv, 2 * kMs, 2 * kMs, 1, 3, 8, kWorld, p);
  b.request_op(0, Start, 3 * kMs, 3 * kMs, {p});
  b.wait(0, Wait, 4 * kMs, 6 * kMs, {TraceBuilder::done(p, 1, 3, 8)});
  b.request_op(0, Start, 7 * kMs, 7 * kMs, {p});
  b.wait(0, Wait, 7 * kMs, 8 * kMs, {TraceBuilder::done(p, 1, 3, 8)});
  b.request_op(0, RequestFree, 9 * kMs, 9 * kMs, {p});
  b.send(1, 5 * kMs, 5 * kMs, 0, 3);        // 2 ms after the first Start
  b.send(1, 7500 * kUs, 7500 * kUs, 0, 3);  // 0.5 ms after the second
  for (int r = 0; r < 2; ++r) b.finalize(r, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  EXPECT_TRUE(a.warnings.empty()) << warnings_text(a);
  EXPECT_EQ(a.stats.messages_matched, 2u);
  const auto* r0 = rank_of(a.intervals[0], 0);
  EXPECT_NEAR(r0->potential_sync, ms(2.5), kTol);
  EXPECT_NEAR(r0->sendrecv, ms(1) + ms(0.5), kTol);
}

// Generalized requests are completed by the user (MPI_Grequest_complete) and
// waited on like any request.
TEST(Instants, GeneralizedRequestsAreNotUnknown) {
  TraceBuilder b(1);
  b.init(0, 0, 1 * kMs);
  b.other(0, GrequestStart, 2 * kMs, 2 * kMs);
  b.other(0, GrequestComplete, 3 * kMs, 3 * kMs);
  b.wait(0, Wait, 4 * kMs, 4 * kMs, {TraceBuilder::done(0xAC000700u)});
  // Without a generalized request outstanding, it is a real problem.
  b.wait(0, Wait, 5 * kMs, 5 * kMs, {TraceBuilder::done(0xAC000701u)});
  b.finalize(0, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  EXPECT_EQ(a.stats.unknown_requests, 1u) << warnings_text(a);
}

// A receive that waits through a collective call: the instants when both
// wait count once (PotentSync), never as collective or transfer time too.
TEST(Instants, WaitThroughACollectiveCountsOnce) {
  TraceBuilder b(2);
  const uint32_t rq = 0xAC000800u;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.irecv(0, 2 * kMs, 2 * kMs, 1, 9, rq);
  b.collective(0, Allreduce, 3 * kMs, 8 * kMs);  // rank 1 enters at 6 ms
  b.wait(0, Wait, 9 * kMs, 12 * kMs, {TraceBuilder::done(rq, 1, 9, 8)});
  b.collective(1, Allreduce, 6 * kMs, 8 * kMs);
  b.send(1, 11 * kMs, 11 * kMs, 0, 9);
  for (int r = 0; r < 2; ++r) b.finalize(r, 20 * kMs, 21 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto* r0 = rank_of(a.intervals[0], 0);
  ASSERT_TRUE(r0);
  EXPECT_NEAR(r0->potential_sync, ms(9), kTol);  // 2 .. 11 ms, the Allreduce's wait inside it
  EXPECT_NEAR(r0->collective, 0, kTol);          // all of it while the receive waited
  EXPECT_NEAR(r0->sendrecv, ms(1), kTol);        // 11 .. 12 ms
  EXPECT_NEAR(r0->mpi, ms(8), kTol);
}

// Several threads of one rank: calls that overlap in time count once in MPI
// time (the union), and markers nest per thread.
TEST(Instants, ThreadsOfOneRankCountOnce) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  // Rank 0: thread 0 opens interval 1 (2..20 ms); threads 1 and 2 each hold
  // MPI calls overlapping thread 0's: 4..10, 6..12 and 8..14 ms.
  b.begin(0, 2 * kMs, 1);
  b.other(0, Compute, 4 * kMs, 10 * kMs);
  b.thread(0, 1);
  b.other(0, Compute, 6 * kMs, 12 * kMs);
  b.begin(0, 15 * kMs, 2, 2);  // thread 1's own interval, 15..18 ms
  b.other(0, Compute, 16 * kMs, 17 * kMs);
  b.end(0, 18 * kMs, 2, 2);
  b.thread(0, 2);
  b.other(0, Compute, 8 * kMs, 14 * kMs);
  b.thread(0, 0);
  b.end(0, 20 * kMs, 1);
  b.begin(1, 2 * kMs, 1);
  b.end(1, 20 * kMs, 1);
  for (int r = 0; r < 2; ++r) b.finalize(r, 30 * kMs, 31 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  EXPECT_EQ(a.stats.unbalanced_markers, 0u) << warnings_text(a);
  const auto& root = a.intervals[0];
  const auto* r0 = rank_of(root, 0);
  ASSERT_TRUE(r0);
  EXPECT_NEAR(r0->mpi, ms(10) + ms(1), kTol);  // 4..14 ms and 16..17 ms, not 6+6+6+1
  EXPECT_EQ(r0->calls, 4u);
  const auto* i1 = find_interval(a, 1);
  ASSERT_TRUE(i1);
  EXPECT_NEAR(rank_of(*i1, 0)->mpi, ms(11), kTol);  // all of it lies in 2..20 ms
  const auto* i2 = find_interval(a, 2);
  ASSERT_TRUE(i2);
  EXPECT_EQ(i2->main.processors, 1);
  EXPECT_NEAR(rank_of(*i2, 0)->time, ms(3), kTol);
  EXPECT_NEAR(rank_of(*i2, 0)->mpi, ms(1), kTol);
}

// Time Variation is a set of instants too: two threads of rank 0 leave their
// Allreduces at 5 ms, whose instances' last members (rank 1) leave at 9 and
// 10 ms. The rank's exit spread is 5..10 ms, once, not 4 + 5 ms.
TEST(Instants, TimeVariationOfThreadsCountsEachInstantOnce) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.thread(0, 1);
  b.collective(0, Allreduce, 3 * kMs, 5 * kMs);
  b.thread(0, 2);
  b.collective(0, Allreduce, 3500 * kUs, 5 * kMs);
  b.thread(0, 0);
  b.collective(1, Allreduce, 4 * kMs, 9 * kMs);
  b.collective(1, Allreduce, 9500 * kUs, 10 * kMs);
  for (int r = 0; r < 2; ++r) b.finalize(r, 30 * kMs, 31 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  EXPECT_EQ(a.stats.incomplete_collectives, 0u) << warnings_text(a);
  const auto* r0 = rank_of(a.intervals[0], 0);
  ASSERT_TRUE(r0);
  EXPECT_NEAR(r0->time_variation, ms(5), kTol);
  EXPECT_LE(r0->time_variation, r0->time);
}

// A rank's exit spreads add up over its collectives, each up to the run's
// length, so their sum can pass what an Instant holds (+-52 days): the root of
// three Bcasts leaves each at once, and rank 1 leaves each 40 days later (its
// first call waits those 40 days, the next two are short). The
// sum (120 days) stops at the range's end, 2^52 ns, on one worker and on two.
TEST(Instants, TimeVariationOfOneRankStopsAtTheRangesEnd) {
  constexpr uint64_t kDay = 86400ull * 1000 * kMs;
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  for (uint64_t k = 0; k < 3; ++k) {
    b.collective(0, Bcast, (2 + k) * kMs, (2 + k) * kMs + 10 * kUs);
    b.collective(1, Bcast, k == 0 ? 2 * kMs : 40 * kDay + k * kMs - 500 * kUs, 40 * kDay + k * kMs);
  }
  for (int r = 0; r < 2; ++r) b.finalize(r, 40 * kDay + 10 * kMs, 40 * kDay + 11 * kMs);
  b.close();
  const double end_s = std::ldexp(1.0, 52) * 1e-9;  // (2^62 - 2^10 units of 2^-10 ns)
  for (unsigned threads : {1u, 2u}) {
    analysis::Options o;
    o.threads = threads;
    const auto a = analyze_checked(b.dir(), o);
    ASSERT_TRUE(a.usable()) << threads;
    const auto* r0 = rank_of(a.intervals[0], 0);
    const auto* r1 = rank_of(a.intervals[0], 1);
    ASSERT_TRUE(r0 && r1) << threads;
    EXPECT_NEAR(r0->time_variation, end_s, 1e-6) << threads;
    EXPECT_NEAR(r1->time_variation, 0, kTol) << threads;
    EXPECT_NEAR(a.intervals[0].main.time_variation, end_s, 1e-6) << threads;
  }
}

// Two threads each in their own interval, at the same time, both in MPI: an
// instant counts once in each interval and once in their common parent.
TEST(Instants, ConcurrentIntervalsOfTwoThreads) {
  TraceBuilder b(1);
  b.init(0, 0, 1 * kMs);
  b.begin(0, 2 * kMs, 1);
  b.other(0, Compute, 3 * kMs, 9 * kMs);
  b.thread(0, 1);
  b.begin(0, 2 * kMs, 2, 2);
  b.other(0, Compute, 5 * kMs, 11 * kMs);
  b.end(0, 12 * kMs, 2, 2);
  b.thread(0, 0);
  b.end(0, 10 * kMs, 1);
  b.finalize(0, 20 * kMs, 21 * kMs);
  b.close();
  const auto a = analyze_usable(b);
  const auto* i1 = find_interval(a, 1);
  const auto* i2 = find_interval(a, 2);
  ASSERT_TRUE(i1 && i2);
  EXPECT_NEAR(rank_of(a.intervals[0], 0)->mpi, ms(8), kTol);  // 3..11 ms
  EXPECT_NEAR(rank_of(*i1, 0)->mpi, ms(7), kTol);  // the instants in 2..10 ms: 3..10
  EXPECT_NEAR(rank_of(*i2, 0)->mpi, ms(8), kTol);  // in 2..12 ms: 3..11
}

}  // namespace
}  // namespace prof::test

namespace prof::test {
namespace {

// A damaged stream number costs a slot, not a table that large.
TEST(Instants, HugeStreamNumberIsJustAnotherThread) {
  TraceBuilder b(1);
  b.init(0, 0, 1 * kMs);
  b.thread(0, 0x7ffffff0u);
  b.begin(0, 2 * kMs, 1);
  b.other(0, Compute, 3 * kMs, 4 * kMs);
  b.end(0, 5 * kMs, 1);
  b.thread(0, 0);
  b.finalize(0, 10 * kMs, 11 * kMs);
  b.close();
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  const auto* i1 = find_interval(a, 1);
  ASSERT_TRUE(i1);
  EXPECT_NEAR(rank_of(*i1, 0)->mpi, 1e-3, 1e-9);
}

}  // namespace
}  // namespace prof::test
