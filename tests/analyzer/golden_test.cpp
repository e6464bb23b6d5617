// The golden test: a 4-rank trace whose report is the worked example of the
// interval-analyzer thesis (docs/metrics.md, "The text report"), every line of
// it, under the definitions docs/metrics.md gives (waits and transfers are
// measures of sets of instants, each counted once).
//
// The trace is a halo exchange (exch.c) designed so the definitions give the
// example's numbers exactly. Per rank (us; root = MPI_Init's return at 1000 to
// MPI_Finalize's call):
//   T:      2079077 2079975 2079085 2079147  -> Exec 2079975, Idle 898 0 890 828
//   MPI:    59159   39839   42233   32259
//   Comm:   34854   16839   18273   6597     (SendRecv + CollectiveAll)
//   PSync:  1800    18000   19594   29369
//   TVar:   520     161     502     607
// Rank 3 issues two Irecvs at 1200, computes, and completes them with one
// MPI_Waitall at 5000; its later sender enters at 4907, so it waited 3707 us
// outside any MPI call (potential sync), and the whole Waitall is transfer.
// That is how its PotentSync and Comm add up to more than its MPI time, as in
// the thesis's example, with no instant counted twice. Two world Allreduces
// give every rank its late-entry and exit spread; an Allreduce on
// MPI_COMM_SELF (no one to wait for) is pure CollectiveAll time.
#include <cstdio>
#include <random>
#include <sstream>

#include "prof/analysis/report.h"
#include "trace_builder.h"

namespace prof::test {
namespace {

const char* const kSeedBlock[] = {
    "Interval (LineNumber = 153 SourceFile = exch.c) Level=0 EXE_Count=1",
    "---Main Characteristics---",
    "Parallelization Efficiency 0.978833",
    "Execution Time 2.079975",
    "Processors 4",
    "Total Time 8.319900",
    "Productive Time 8.143794 (CPU MPI)",
    "Lost Time 0.176106",
    "---MPI Time 0.173490",
    "---Idle Time 0.002616",
    "*****SendRecv Time 0.013295",
    "*****CollectiveAll Time 0.063268",
    "*****AllToAll Time 0.000000",
    "Potential Sync. 0.068763",
    "Time Variation 0.001790",
    "Time of Start 0.000000",
    "---Comparative Characteristics---",
    "Tmin Nproc Tmax Nproc Tmid",
    "Lost Time 0.033087 3 0.060057 0 0.044026",
    "Idle Time 0.000000 1 0.000898 0 0.000654",
    "Comm. Time 0.006597 3 0.034854 0 0.019140",
    "MPI Time 0.032259 3 0.059159 0 0.043372",
    "Potential Sync. 0.001800 0 0.029369 3 0.017190",
    "Time variation 0.000161 1 0.000607 3 0.000447",
    "Time of Start 0.000000 0 0.000000 0 0.000000",
};

void build_exch(TraceBuilder& b) {
  auto us = [](uint64_t v) { return v * kUs; };
  for (int r = 0; r < 4; ++r) {
    b.w(r).callsite({9, 0x400a10, "exch.c", 153});
    b.w(r).meta("init_callsite", "9");
    b.init(r, 0, us(1000));
  }
  // Point-to-point phase: late senders everywhere.
  const uint32_t kA = 0xAC000001u, kB = 0xAC000002u;
  b.irecv(3, us(1200), us(1200), 0, 1, kA);
  b.irecv(3, us(1200), us(1200), 1, 1, kB);
  b.wait(3, Waitall, us(5000), us(11204), {TraceBuilder::done(kA, 0, 1, 8), TraceBuilder::done(kB, 1, 1, 8)});
  b.recv(2, us(2000), us(14091), 0, 3);
  b.send(0, us(4907), us(4999), 3, 1);
  b.send(1, us(3710), us(6210), 3, 1);
  b.recv(0, us(5000), us(9500), 1, 2);
  b.send(1, us(6500), us(9000), 0, 2);
  b.recv(1, us(10000), us(20000), 2, 4);
  b.send(0, us(12000), us(34413), 2, 3);
  b.send(2, us(18000), us(22366), 1, 4);
  // Two Allreduces on the world: last entries rank 0 then rank 2.
  const uint64_t ar1[4][2] = {{100000, 100080}, {94000, 100600}, {90406, 100350}, {80000, 100200}};
  const uint64_t ar2[4][2] = {{199700, 200400}, {196000, 200239}, {200000, 200148}, {194338, 200193}};
  for (int r = 0; r < 4; ++r) b.collective(r, Allreduce, us(ar1[r][0]), us(ar1[r][1]));
  for (int r = 0; r < 4; ++r) b.collective(r, Allreduce, us(ar2[r][0]), us(ar2[r][1]));
  // A reduction over MPI_COMM_SELF: nobody to wait for.
  b.collective(0, Allreduce, us(210000), us(241374), kSelf);
  b.collective(1, Allreduce, us(210000), us(224000), kSelf);
  b.collective(2, Allreduce, us(210000), us(225684), kSelf);
  const uint64_t fin[4] = {2080077, 2080975, 2080085, 2080147};
  for (int r = 0; r < 4; ++r) b.finalize(r, us(fin[r]), us(fin[r] + 500));
  b.close();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(Golden, SeedWorkedExampleLineForLine) {
  TraceBuilder b(4);
  build_exch(b);
  const analysis::Analysis a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable()) << (a.errors.empty() ? "" : a.errors[0]);
  EXPECT_TRUE(a.warnings.empty()) << warnings_text(a);
  ASSERT_EQ(a.intervals.size(), 1u);

  std::ostringstream out;
  analysis::write_text_report(a, out);
  const auto got = lines(out.str());
  const size_t n = std::size(kSeedBlock);
  ASSERT_GE(got.size(), n) << out.str();
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(got[i], kSeedBlock[i]) << "line " << i + 1;
}

TEST(Golden, PerRankFiguresOfTheExample) {
  TraceBuilder b(4);
  build_exch(b);
  const analysis::Analysis a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  const auto& root = a.intervals[0];
  ASSERT_EQ(root.per_rank.size(), 4u);
  const double mpi[4] = {0.059159, 0.039839, 0.042233, 0.032259};
  const double ps[4] = {0.001800, 0.018000, 0.019594, 0.029369};
  const double comm[4] = {0.034854, 0.016839, 0.018273, 0.006597};
  const double tv[4] = {0.000520, 0.000161, 0.000502, 0.000607};
  const double idle[4] = {0.000898, 0, 0.000890, 0.000828};
  for (int r = 0; r < 4; ++r) {
    const auto& f = root.per_rank[static_cast<size_t>(r)];
    EXPECT_EQ(f.rank, r);
    EXPECT_NEAR(f.mpi, mpi[r], 1e-9) << "rank " << r;
    EXPECT_NEAR(f.potential_sync, ps[r], 1e-9) << "rank " << r;
    EXPECT_NEAR(f.comm, comm[r], 1e-9) << "rank " << r;
    EXPECT_NEAR(f.time_variation, tv[r], 1e-9) << "rank " << r;
    EXPECT_NEAR(f.idle, idle[r], 1e-9) << "rank " << r;
    EXPECT_NEAR(f.cpu + f.mpi, f.time, 1e-12);
  }
  // As in the thesis's example: rank 3 waited for its senders while computing.
  const auto& r3 = root.per_rank[3];
  EXPECT_GT(r3.comm + r3.potential_sync, r3.mpi);
  // The JSON keeps the exact mean (the text truncates it to the microsecond).
  EXPECT_NEAR(root.comparative[static_cast<int>(analysis::Comparative::PotentialSync)].mean,
              0.06876300 / 4, 1e-12);
  EXPECT_EQ(a.stats.messages_matched, 5u);  // 3<-0, 3<-1, 0<-1, 1<-2, 2<-0
  EXPECT_EQ(a.stats.unmatched_sends + a.stats.unmatched_receives, 0u);
}

// Every figure of the reports is printed with six decimals, cut toward zero,
// never rounded (docs/metrics.md, "The text report"). Oracle: whole
// microseconds in integers, and the seconds made of them and of a fraction of
// a microsecond below one, must print as those microseconds.
TEST(Golden, FiguresAreCutTowardZeroAtTheMicrosecond) {
  EXPECT_EQ(analysis::figure_text(0.068763 / 4), "0.017190");  // the thesis's Tmid
  EXPECT_EQ(analysis::figure_text(0.0292665), "0.029266");      // rounding would give ...267
  EXPECT_EQ(analysis::figure_text(0.9999999), "0.999999");
  EXPECT_EQ(analysis::figure_text(0.000249), "0.000249");       // 248.99999999999997 us: whole stays whole
  EXPECT_EQ(analysis::figure_text(-0.0292665), "-0.029266");
  EXPECT_EQ(analysis::figure_text(-0.0000004), "0.000000");     // no negative zero
  EXPECT_EQ(analysis::figure_text(0), "0.000000");
  std::mt19937_64 random(7);
  for (int i = 0; i < 200000; ++i) {
    // Up to 10^6 s (11.6 days) of whole microseconds, plus 0 to 0.9 us.
    const int64_t us = static_cast<int64_t>(random() % 1000000000000ull) * (i % 2 ? 1 : -1);
    const double fraction = (i % 4 < 2) ? 0.0 : static_cast<double>(random() % 900) / 1000;
    const double seconds = (static_cast<double>(us) + (us < 0 ? -fraction : fraction)) / 1e6;
    const int64_t whole = us < 0 ? -us : us;
    char expected[48];
    std::snprintf(expected, sizeof expected, "%s%lld.%06lld", us < 0 ? "-" : "",
                  static_cast<long long>(whole / 1000000), static_cast<long long>(whole % 1000000));
    ASSERT_EQ(analysis::figure_text(seconds), expected) << "us " << us << " + " << fraction;
  }
}

}  // namespace
}  // namespace prof::test
