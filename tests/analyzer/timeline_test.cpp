// The timeline layer (prof/analysis/timeline.h) on synthetic traces: the calls
// of a range are exactly those written that overlap it; bucket summaries equal
// a brute-force count over the calls, from the pyramid and from the calls
// themselves, with records in memory or in the spill file; interval executions
// equal the analysis's; messages and collective instances pair as written;
// queries while the build runs; cancel; an allocation failing in a build
// thread.
#include "prof/analysis/timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <new>
#include <random>
#include <set>
#include <thread>

#include "span_union.h"
#include "timeline_store.h"
#include "trace_builder.h"

// Allocations that fail on demand, for the out-of-memory tests: while armed,
// every allocation of kLargeAllocation bytes or more throws std::bad_alloc, as
// when memory runs out (a row's block in the making, CallColumns, is some
// 31 KiB). This replaces operator new for the whole test program; disarmed,
// it is malloc.
namespace {
std::atomic<bool> fail_large_allocations{false};
constexpr std::size_t kLargeAllocation = std::size_t{16} << 10;
}  // namespace

// Out of line: inlined, GCC pairs the new expressions' operator new with the
// free() below and warns of a mismatch (-Wmismatched-new-delete).
[[gnu::noinline]] void* operator new(std::size_t size) {
  if (size >= kLargeAllocation && fail_large_allocations.load(std::memory_order_relaxed)) throw std::bad_alloc();
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace prof::test {
namespace {

using analysis::Timeline;
using analysis::TimelineCall;
using analysis::TimelineKind;
using analysis::TimelineOptions;
using analysis::TimelineQuery;

// What the test wrote on one row, ns from the trace's start.
struct Written {
  int64_t enter, leave;
  TimelineKind kind;
};

constexpr uint32_t kRecvReq = 0xAC000001u, kSendReq = 0xAC000002u;
constexpr uint64_t kStart = 1000;       // every rank's MPI_Init enters here
constexpr uint64_t kPeriod = 10000;     // one iteration
constexpr uint32_t kTag = 7;

uint64_t jitter(uint64_t it, int r) {
  uint64_t x = (it + 1) * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(r) + 1) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x % 1500;
}

// A ring of `ranks` ranks, `iterations` times: interval 1 around Irecv(left),
// Isend(right), Waitall; interval 2 (nested) around an Allreduce entered at
// different times; a compute call; rank 0's second thread calls
// MPI_Comm_rank every 4th iteration; a long barrier at the end.
class RingTrace {
 public:
  RingTrace(int ranks, uint64_t iterations) : ranks_(ranks), b_(ranks), rows_(static_cast<size_t>(ranks) + 1) {
    for (int r = 0; r < ranks; ++r) put(r, 0, [&] { b_.init(r, kStart, kStart + 500); }, kStart, kStart + 500,
                                         TimelineKind::OtherMpi);
    uint64_t t = kStart + 1000;
    for (uint64_t it = 0; it < iterations; ++it, t += kPeriod) {
      for (int r = 0; r < ranks; ++r) {
        const int left = (r + ranks - 1) % ranks, right = (r + 1) % ranks;
        const uint64_t w = t + 300 + jitter(it, r), a = t + 2100 + jitter(it + 7, r);
        marker(r, t, 1, true, 1);
        put(r, 0, [&] { b_.irecv(r, t + 100, t + 130, left, kTag, kRecvReq); }, t + 100, t + 130,
            TimelineKind::PointToPoint);
        put(r, 0, [&] { b_.isend(r, t + 200, t + 240, right, kTag, kSendReq); }, t + 200, t + 240,
            TimelineKind::PointToPoint);
        put(r, 0, [&] {
          b_.wait(r, Waitall, w, t + 1900, {TraceBuilder::done(kRecvReq, left, kTag, 8), TraceBuilder::done(kSendReq)});
        }, w, t + 1900, TimelineKind::PointToPoint);
        marker(r, t + 2000, 2, true, 2);
        put(r, 0, [&] { b_.collective(r, Allreduce, a, t + 3700); }, a, t + 3700, TimelineKind::Collective);
        marker(r, t + 3800, 2, false, 2);
        put(r, 0, [&] { b_.other(r, Compute, t + 3900, t + 4000); }, t + 3900, t + 4000, TimelineKind::OtherMpi);
        marker(r, t + 9000, 1, false, 1);
        if (r == 0 && it % 4 == 0) {
          b_.thread(0, 1);
          put(0, 1, [&] { b_.other(0, CommRank, t + 5000, t + 5050); }, t + 5000, t + 5050,
              TimelineKind::OtherMpi);
          b_.thread(0, 0);
        }
      }
    }
    for (int r = 0; r < ranks; ++r) {
      put(r, 0, [&] { b_.collective(r, Barrier, t + 100 * static_cast<uint64_t>(r), t + 2 * kMs); },
          t + 100 * static_cast<uint64_t>(r), t + 2 * kMs, TimelineKind::Collective);
      put(r, 0, [&] { b_.finalize(r, t + 2 * kMs + 100, t + 2 * kMs + 200); }, t + 2 * kMs + 100,
          t + 2 * kMs + 200, TimelineKind::OtherMpi);
    }
    b_.close();
    iterations_ = iterations;
  }
  const std::string& dir() const { return b_.dir(); }
  // Rows: rank r's main thread is row r + (r > 0), rank 0's second thread row 1.
  static size_t row(int rank, int stream) { return rank == 0 ? static_cast<size_t>(stream) : static_cast<size_t>(rank) + 1; }
  const std::vector<Written>& written(size_t row) const { return rows_[row]; }
  int ranks() const { return ranks_; }
  uint64_t iterations() const { return iterations_; }

 private:
  template <class F>
  void put(int r, int stream, F&& write, uint64_t enter, uint64_t leave, TimelineKind kind) {
    write();
    rows_[row(r, stream)].push_back(Written{static_cast<int64_t>(enter - kStart), static_cast<int64_t>(leave - kStart), kind});
  }
  void marker(int r, uint64_t t, uint32_t id, bool begin, uint32_t site) {
    put(r, 0, [&] { b_.marker(r, t, id, begin, site); }, t, t, TimelineKind::Marker);
  }
  int ranks_;
  TraceBuilder b_;
  std::vector<std::vector<Written>> rows_;
  uint64_t iterations_ = 0;
};

std::unique_ptr<Timeline> built(const std::string& dir, TimelineOptions options = {}) {
  std::string error;
  auto tl = Timeline::open(dir, &error, std::move(options));
  EXPECT_TRUE(tl) << error;
  if (tl) tl->build();
  return tl;
}

bool overlaps(const Written& w, double from, double to) {
  return w.enter < to && (w.leave > from || (w.leave == w.enter && w.enter >= from));
}

// The option sets every check runs under: records in memory with a fine
// pyramid; records in the spill file with few leaves (so the pyramid
// coarsens); records meant for a spill file that cannot be made (they stay
// in memory, with a warning).
constexpr const char* kNoSuchDir = "/nonexistent-prof-timeline-test-dir";
std::vector<TimelineOptions> option_sets() {
  TimelineOptions memory;
  memory.threads = 2;
  TimelineOptions spilled;
  spilled.threads = 1;
  spilled.memory_bytes = 0;
  spilled.leaves_per_row = 64;
  TimelineOptions unwritable = spilled;
  unwritable.threads = 2;
  unwritable.spill_dir = kNoSuchDir;
  return {memory, spilled, unwritable};
}

TEST(Timeline, RowsHoldExactlyTheCallsWritten) {
  RingTrace trace(3, 300);
  for (const TimelineOptions& options : option_sets()) {
    auto tl = built(trace.dir(), options);
    ASSERT_TRUE(tl);
    ASSERT_TRUE(tl->complete());
    // Where the records are, and a warning when they could not go where asked.
    const auto warnings = tl->warnings();
    const bool warned = std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
      return w.find("cannot write the spill file") != std::string::npos;
    });
    EXPECT_EQ(warned, options.spill_dir == kNoSuchDir);
    EXPECT_EQ(tl->memory().records_spilled > 0, options.memory_bytes == 0 && options.spill_dir.empty());
    ASSERT_EQ(tl->rows().size(), 4u);
    EXPECT_EQ(tl->rows()[1].rank, 0);
    EXPECT_EQ(tl->rows()[1].stream, 1u);
    for (size_t row = 0; row < 4; ++row) {
      const auto calls = tl->calls(row, -INFINITY, INFINITY);
      const auto& want = trace.written(row);
      ASSERT_EQ(calls.size(), want.size()) << "row " << row;
      for (size_t i = 0; i < calls.size(); ++i) {
        EXPECT_EQ(calls[i].index, i);
        EXPECT_EQ(calls[i].enter, want[i].enter) << "row " << row << " call " << i;
        EXPECT_EQ(calls[i].leave(), want[i].leave) << "row " << row << " call " << i;
        EXPECT_EQ(calls[i].kind, want[i].kind) << "row " << row << " call " << i;
      }
    }
    // Tooltip fields of one Isend of rank 1: to rank 2, tag 7, 8 bytes, MPI_COMM_WORLD.
    const auto calls = tl->calls(RingTrace::row(1, 0), -INFINITY, INFINITY);
    const auto isend = std::find_if(calls.begin(), calls.end(), [](const TimelineCall& c) { return c.function == "MPI_Isend"; });
    ASSERT_NE(isend, calls.end());
    EXPECT_EQ(isend->peer, 2);
    EXPECT_EQ(isend->tag, 7);
    EXPECT_EQ(isend->bytes, 8u);
    EXPECT_TRUE(isend->has_comm);
    const auto begin = std::find_if(calls.begin(), calls.end(), [](const TimelineCall& c) { return c.kind == TimelineKind::Marker; });
    ASSERT_NE(begin, calls.end());
    EXPECT_TRUE(begin->marker_begin);
    EXPECT_EQ(begin->interval_id, 1u);
    EXPECT_EQ(tl->site(begin->site), "app.c:100");
  }
}

// Past one 4 MiB stage of packed records on a thread, with a budget of one
// stage: the first is kept in memory, the next ones go to the spill file,
// and every call reads back exactly from either, across their border.
TEST(Timeline, RecordsPartlyKeptPartlySpilledReadBackExactly) {
  RingTrace trace(2, 70000);  // about 1.3 million calls
  TimelineOptions options;
  options.threads = 1;  // one stage for both ranks
  options.memory_bytes = uint64_t{4} << 20;
  auto tl = built(trace.dir(), options);
  ASSERT_TRUE(tl);
  const auto memory = tl->memory();
  EXPECT_GT(memory.records_spilled, 0u);
  EXPECT_GT(memory.records, uint64_t{3} << 20);  // the kept stage (and the block list)
  for (size_t row = 0; row < 3; ++row) {
    const auto calls = tl->calls(row, -INFINITY, INFINITY);
    const auto& want = trace.written(row);
    ASSERT_EQ(calls.size(), want.size()) << "row " << row;
    for (size_t i = 0; i < calls.size(); ++i) {
      ASSERT_EQ(calls[i].enter, want[i].enter) << "row " << row << " call " << i;
      ASSERT_EQ(calls[i].leave(), want[i].leave) << "row " << row << " call " << i;
      ASSERT_EQ(calls[i].kind, want[i].kind) << "row " << row << " call " << i;
    }
  }
}

TEST(Timeline, NarrowRangesReturnExactlyTheOverlappingCalls) {
  RingTrace trace(3, 300);
  for (const TimelineOptions& options : option_sets()) {
    auto tl = built(trace.dir(), options);
    ASSERT_TRUE(tl);
    const auto& row1 = trace.written(RingTrace::row(1, 0));
    size_t call = 10;
    while (row1[call].leave - row1[call].enter < 10) ++call;
    // Ranges with edges inside calls, on call edges, between calls, empty.
    std::vector<std::pair<double, double>> ranges = {
        {0, 1}, {double(row1[call].enter) + 1, double(row1[call].leave) - 1}, {5000, 5000}, {7000, 6000},
        {double(row1[10].leave), double(row1[14].enter)}, {double(row1[50].enter) + 0.5, double(row1[57].leave) + 0.5},
        {5 * kPeriod + 123, 9 * kPeriod + 4567}, {double(row1.back().leave) - 10, 1e15}, {1e15, 2e15}};
    for (const auto& [from, to] : ranges) {
      TimelineQuery q;
      q.from = from;
      q.to = to;
      q.buckets = 100;
      q.max_events = 1000000;
      const auto a = tl->query(q);
      ASSERT_EQ(a.rows.size(), 4u);
      for (const auto& r : a.rows) {
        ASSERT_FALSE(r.summarized);
        std::vector<int64_t> want, got;
        for (const Written& w : trace.written(r.row))
          if (from < to && overlaps(w, from, to)) want.push_back(w.enter * 4 + static_cast<int64_t>(w.kind));
        for (const TimelineCall& c : r.calls) got.push_back(c.enter * 4 + static_cast<int64_t>(c.kind));
        EXPECT_EQ(got, want) << "row " << r.row << " range [" << from << ", " << to << ")";
        // Executions: those overlapping the range, in order of start.
        std::vector<std::pair<double, double>> want_executions, got_executions;
        for (const auto& e : tl->executions(r.row))
          if (from < to && e.start < to && (e.end > from || (e.end == e.start && e.start >= from)))
            want_executions.emplace_back(e.start, e.end);
        for (const auto& e : r.executions) got_executions.emplace_back(e.start, e.end);
        EXPECT_FALSE(r.executions_omitted);
        EXPECT_EQ(got_executions, want_executions) << "row " << r.row << " range [" << from << ", " << to << ")";
      }
    }
  }
}

// Brute force over the calls written: the summary of [b0, b1) (timeline.h).
struct Expected {
  uint32_t count = 0;
  double time[analysis::kTimelineKinds] = {};
  int64_t longest = -1;  // index
};
Expected brute_force(const std::vector<Written>& calls, double b0, double b1, double origin, double width, int64_t cell) {
  Expected e;
  auto clip = [&](double a, double b) { return std::max(0.0, std::min(b, b1) - std::max(a, b0)); };
  uint64_t longest = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Written& w = calls[i];
    if (static_cast<int64_t>(std::floor((double(w.enter) - origin) / width)) == cell) ++e.count;
    e.time[static_cast<int>(w.kind)] += clip(double(w.enter), double(w.leave));
    if (i > 0) e.time[0] += clip(double(calls[i - 1].leave), double(w.enter));
    const bool over = w.leave > w.enter ? (double(w.enter) < b1 && double(w.leave) > b0)
                                        : (double(w.enter) >= b0 && double(w.enter) < b1);
    const uint64_t d = static_cast<uint64_t>(w.leave - w.enter);
    if (over && (e.longest < 0 || d > longest)) {
      e.longest = static_cast<int64_t>(i);
      longest = d;
    }
  }
  return e;
}

TEST(Timeline, BucketSummariesEqualBruteForce) {
  RingTrace trace(3, 200);
  for (const TimelineOptions& options : option_sets()) {
    auto tl = built(trace.dir(), options);
    ASSERT_TRUE(tl);
    const double end = tl->end();
    const double mid = double(trace.written(2)[333].enter) + 17;  // inside a call
    struct Case {
      double from, to;
      uint32_t buckets;
    };
    const Case cases[] = {{0, end, 7},       {0, end, 100},           {0, end, 2000},
                          {mid, mid + 3 * kPeriod + 3, 13}, {mid, end - 999.5, 64},
                          {mid, mid + 20000, 1000},          // finer than a leaf: from the calls
                          {end - 5000, end + 5000, 33}};
    bool from_pyramid = false, from_calls = false;
    for (const Case& c : cases) {
      TimelineQuery q;
      q.from = c.from;
      q.to = c.to;
      q.buckets = c.buckets;
      q.max_events = 1;
      const auto a = tl->query(q);
      for (const auto& r : a.rows) {
        const auto& calls = trace.written(r.row);
        if (!r.summarized) continue;  // at most one call in range
        ASSERT_FALSE(r.buckets.empty());
        // The buckets cover the range, with between W and 2W + 1 of them.
        EXPECT_LE(r.bucket_from, c.from);
        EXPECT_GE(r.bucket_from + r.bucket_width * double(r.buckets.size()), c.to - 1e-6);
        EXPECT_GE(r.buckets.size(), c.buckets);
        EXPECT_LE(r.buckets.size(), 2 * c.buckets + 1);
        if (r.bucket_width == (c.to - c.from) / c.buckets && r.bucket_from == c.from) from_calls = true;
        else from_pyramid = true;
        for (size_t i = 0; i < r.buckets.size(); ++i) {
          const double b0 = r.bucket_from + double(i) * r.bucket_width, b1 = b0 + r.bucket_width;
          const Expected e = brute_force(calls, b0, b1, r.bucket_from, r.bucket_width, static_cast<int64_t>(i));
          const auto& got = r.buckets[i];
          const std::string where = "row " + std::to_string(r.row) + " bucket " + std::to_string(i) + " of [" +
                                    std::to_string(c.from) + ", " + std::to_string(c.to) + ")/" + std::to_string(c.buckets);
          EXPECT_EQ(got.count, e.count) << where;
          int dominant = 0;
          for (int k = 0; k < analysis::kTimelineKinds; ++k) {
            EXPECT_NEAR(got.time[k], e.time[k], 1e-6 * r.bucket_width + 1e-6) << where << " kind " << k;
            if (e.time[k] > e.time[dominant] + 1e-6) dominant = k;
          }
          if (e.time[dominant] > 0) {
            EXPECT_EQ(static_cast<int>(got.dominant), dominant) << where;
          }
          EXPECT_EQ(got.has_longest, e.longest >= 0) << where;
          if (got.has_longest && e.longest >= 0) {
            EXPECT_EQ(got.longest_duration, static_cast<uint64_t>(calls[size_t(e.longest)].leave - calls[size_t(e.longest)].enter))
                << where;
          }
        }
      }
    }
    EXPECT_TRUE(from_pyramid);
    EXPECT_TRUE(from_calls);
  }
}

// A group's bucket is what its rows' calls give, summed: counts and time per
// kind from the raw calls of its ranks, the dominant kind the one with the
// most of that time; on the pyramid's grid (wide ranges), on the exact grid
// from the calls (a narrow range), and on leaves when calls are not allowed.
TEST(Timeline, GroupSummariesEqualBruteForceOverTheirRows) {
  RingTrace trace(9, 120);
  for (const TimelineOptions& options : option_sets()) {
    auto tl = built(trace.dir(), options);
    ASSERT_TRUE(tl);
    const size_t rows = tl->rows().size();
    ASSERT_EQ(rows, 10u);
    const double end = tl->end();
    const double mid = double(trace.written(4)[301].enter) + 17;
    struct Case {
      double from, to;
      uint32_t buckets;
      uint64_t max_calls;
    };
    const Case cases[] = {{0, end, 50, 20000}, {0, end, 700, 20000}, {mid, mid + 4 * kPeriod + 3, 37, 20000},
                          {mid, mid + 20000, 900, 20000}, {mid, mid + 20000, 900, 0}, {end - 5000, end + 5000, 33, 20000}};
    const std::vector<std::vector<size_t>> groups = {{0, 1, 2}, {3, 4, 5, 6}, {7, 8, 9}, {5}, {}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}};
    bool exact_grid = false, pyramid_grid = false;
    for (const Case& c : cases) {
      analysis::TimelineGroupQuery q;
      q.groups = groups;
      q.from = c.from;
      q.to = c.to;
      q.buckets = c.buckets;
      q.max_calls = c.max_calls;
      const auto a = tl->summarize_groups(q);
      ASSERT_EQ(a.groups.size(), groups.size());
      ASSERT_GT(a.bucket_width, 0);
      const size_t n = a.groups[0].size();
      // The buckets cover the range: exactly as asked from the calls, else
      // at least W of them (or as many leaves as the range spans).
      EXPECT_LE(a.bucket_from, c.from);
      EXPECT_GE(a.bucket_from + a.bucket_width * double(n), c.to - 1e-6);
      if (a.from_calls) {
        exact_grid = true;
        EXPECT_EQ(n, c.buckets);
        EXPECT_EQ(a.bucket_width, (c.to - c.from) / c.buckets);
        EXPECT_GT(c.max_calls, 0u);
      } else {
        pyramid_grid = true;
        EXPECT_LE(n, 2 * c.buckets + 1);
        for (size_t r = 0; r < rows; ++r) EXPECT_GE(a.bucket_width, tl->leaf_ns(r));
      }
      for (size_t g = 0; g < groups.size(); ++g) {
        ASSERT_EQ(a.groups[g].size(), n);
        for (size_t i = 0; i < n; ++i) {
          const double b0 = a.bucket_from + double(i) * a.bucket_width, b1 = b0 + a.bucket_width;
          uint32_t count = 0;
          double time[analysis::kTimelineKinds] = {};
          for (size_t r : groups[g]) {
            const Expected e = brute_force(trace.written(r), b0, b1, a.bucket_from, a.bucket_width, static_cast<int64_t>(i));
            count += e.count;
            for (int k = 0; k < analysis::kTimelineKinds; ++k) time[k] += e.time[k];
          }
          int dominant = 0;
          for (int k = 1; k < analysis::kTimelineKinds; ++k)
            if (time[k] > time[dominant]) dominant = k;
          const auto& got = a.groups[g][i];
          const std::string where = "group " + std::to_string(g) + " bucket " + std::to_string(i) + " of [" +
                                    std::to_string(c.from) + ", " + std::to_string(c.to) + ")/" + std::to_string(c.buckets);
          EXPECT_EQ(got.count, count) << where;
          double mpi = 0;
          for (int k = 0; k < analysis::kTimelineKinds; ++k) {
            // Whole ns on the pyramid's grid: exact; the exact grid's edges are fractions.
            EXPECT_NEAR(got.time[k], time[k], a.from_calls ? 1e-6 * a.bucket_width : 0) << where << " kind " << k;
            if (k != int(TimelineKind::User) && k != int(TimelineKind::Marker)) mpi += time[k];
          }
          EXPECT_NEAR(got.mpi(), mpi, 1e-6 * a.bucket_width) << where;
          if (time[dominant] > 0) {
            EXPECT_EQ(static_cast<int>(got.dominant), dominant) << where;
          }
        }
      }
    }
    EXPECT_TRUE(exact_grid);
    EXPECT_TRUE(pyramid_grid);
  }
}

// The pyramid's cells hold exactly what a brute-force count gives (whole ns
// are exact in doubles, so equal, not near), whatever the calls' edges: calls
// ending on a leaf's edge, of no duration on an edge or inside a leaf, one
// ns before an edge, across many leaves, and (second trace) one of 6 s whose
// duration overflows the record and whose block makes the pyramid coarsen
// several times before its calls are added.
TEST(Timeline, PyramidCellsEqualBruteForceExactlyAtLeafEdges) {
  for (const bool long_call : {false, true}) {
    TraceBuilder b(1);
    std::vector<Written> calls;
    auto put = [&](uint64_t enter, uint64_t leave) {
      b.other(0, Compute, kStart + enter, kStart + leave);
      calls.push_back(Written{static_cast<int64_t>(enter), static_cast<int64_t>(leave), TimelineKind::OtherMpi});
    };
    b.init(0, kStart, kStart + 500);
    calls.push_back(Written{0, 500, TimelineKind::OtherMpi});
    uint64_t t = 1024;
    for (int i = 0; i < 3000; ++i) {
      const uint64_t edge = (t + 1023) / 1024 * 1024;
      switch (i % 6) {
        // Three whole leaves, so longer than anything in the leaf after them.
        case 0: put(edge, edge + 3 * 1024); t = edge + 3 * 1024; break;
        case 1: put(t, t); t += 100; break;                           // no duration, on an edge
        case 2: put(t + 37, t + 37 + 2500); t += 2537 + 11; break;    // across three leaves
        case 3: put(edge + 3 * 1024 - 1, edge + 3 * 1024); t = edge + 3 * 1024; break;  // ends on an edge
        case 4:
          if (long_call && i == 1498) {
            put(t + 5, t + 5 + 6'000'000'000ull);
            t += 6'000'000'010ull;
          } else {
            put(t + 5, t + 305);
            t += 310;
          }
          break;
        default: put(t + 200, t + 200); t += 400; break;  // no duration, inside a leaf
      }
    }
    put(t + 100, t + 200);
    calls.back().kind = TimelineKind::OtherMpi;
    b.finalize(0, kStart + t + 300, kStart + t + 400);
    calls.push_back(Written{static_cast<int64_t>(t + 300), static_cast<int64_t>(t + 400), TimelineKind::OtherMpi});
    b.close();
    TimelineOptions fine;
    fine.threads = 1;
    TimelineOptions coarse = fine;
    coarse.leaves_per_row = 16;
    coarse.memory_bytes = 0;
    for (const TimelineOptions& options : {fine, coarse}) {
      auto tl = built(b.dir(), options);
      ASSERT_TRUE(tl);
      ASSERT_EQ(tl->calls(0, -INFINITY, INFINITY).size(), calls.size());
      const double leaf = tl->leaf_ns(0), end = tl->end();
      const std::string which = std::string(long_call ? "with" : "without") + " the long call, leaf " + std::to_string(leaf);
      if (long_call) {
        EXPECT_GE(leaf, 6e9 / double(options.leaves_per_row)) << which;
      } else if (options.leaves_per_row > 4096) {
        EXPECT_EQ(leaf, 1024.0) << which;
      }
      const double mid = double(calls[700].enter) + 3;
      const double spans[][2] = {{0, end}, {mid, mid + 40 * leaf}, {end - 7 * leaf, end}};
      for (const auto& span : spans)
        for (const double cells_per_bucket : {1.0, 2.0, 8.0}) {
          TimelineQuery q;
          q.rows = {0};
          q.from = span[0];
          q.to = span[1];
          // (At most 500 buckets: the brute force reads every call per bucket.)
          q.buckets = static_cast<uint32_t>(
              std::clamp(std::floor((q.to - q.from) / (leaf * cells_per_bucket)), 1.0, 500.0));
          q.max_events = 1;
          const auto a = tl->query(q);
          ASSERT_EQ(a.rows.size(), 1u);
          const auto& r = a.rows[0];
          ASSERT_TRUE(r.summarized);
          ASSERT_GE(r.bucket_width, leaf) << which;  // from the pyramid
          for (size_t i = 0; i < r.buckets.size(); ++i) {
            const double b0 = r.bucket_from + double(i) * r.bucket_width, b1 = b0 + r.bucket_width;
            const Expected e = brute_force(calls, b0, b1, r.bucket_from, r.bucket_width, static_cast<int64_t>(i));
            const auto& got = r.buckets[i];
            const std::string where = which + ", bucket [" + std::to_string(b0) + ", " + std::to_string(b1) + ")";
            ASSERT_EQ(got.count, e.count) << where;
            for (int k = 0; k < analysis::kTimelineKinds; ++k) ASSERT_EQ(got.time[k], e.time[k]) << where << " kind " << k;
            ASSERT_EQ(got.has_longest, e.longest >= 0) << where;
            if (e.longest >= 0) {
              ASSERT_EQ(got.longest_index, static_cast<uint64_t>(e.longest)) << where;
            }
          }
        }
    }
  }
}

// Find: the next (previous) Allreduce of a row from a time equals the first
// written collective entering at or after it (the last before it), across
// blocks and from the spill file; markers and unknown names never match; an
// empty name gives the neighbouring calls of a time.
TEST(Timeline, FindCallGivesTheNextAndPreviousCallOfAFunction) {
  RingTrace trace(3, 300);
  for (const TimelineOptions& options : option_sets()) {
    auto tl = built(trace.dir(), options);
    ASSERT_TRUE(tl);
    for (size_t row : {RingTrace::row(0, 0), RingTrace::row(2, 0)}) {
      // Every collective but the final barrier is an Allreduce.
      std::vector<int64_t> allreduce;
      for (const Written& w : trace.written(row))
        if (w.kind == TimelineKind::Collective) allreduce.push_back(w.enter);
      allreduce.pop_back();
      ASSERT_EQ(allreduce.size(), trace.iterations());
      ASSERT_GT(tl->calls(row, -INFINITY, INFINITY).size(), 2048u);  // several blocks
      std::vector<double> times = {-1e9, 0, 1e15};
      for (size_t i = 0; i < allreduce.size(); i += 37) {
        times.push_back(static_cast<double>(allreduce[i]));
        times.push_back(static_cast<double>(allreduce[i]) + 0.5);
        times.push_back(static_cast<double>(allreduce[i]) - 1);
      }
      for (double t : times) {
        const auto next = std::find_if(allreduce.begin(), allreduce.end(), [&](int64_t e) { return double(e) >= t; });
        const auto found = tl->find_call(row, "MPI_Allreduce", t, true);
        ASSERT_EQ(found.has_value(), next != allreduce.end()) << "row " << row << " t " << t;
        if (found) {
          EXPECT_EQ(found->enter, *next) << "row " << row << " t " << t;
          EXPECT_EQ(found->function, "MPI_Allreduce");
          EXPECT_EQ(found->row, row);
          EXPECT_EQ(tl->call(row, found->index)->enter, found->enter);
        }
        const auto previous = std::find_if(allreduce.rbegin(), allreduce.rend(), [&](int64_t e) { return double(e) < t; });
        const auto back = tl->find_call(row, "MPI_Allreduce", t, false);
        ASSERT_EQ(back.has_value(), previous != allreduce.rend()) << "row " << row << " t " << t;
        if (back) {
          EXPECT_EQ(back->enter, *previous) << "row " << row << " t " << t;
        }
      }
    }
    EXPECT_FALSE(tl->find_call(0, "MPI_No_such_call", 0, true));
    EXPECT_FALSE(tl->find_call(0, "interval begin", 0, true));
    // MPI_Comm_rank is called on rank 0's second thread only.
    EXPECT_FALSE(tl->find_call(RingTrace::row(0, 0), "MPI_Comm_rank", 0, true));
    const auto rank_call = tl->find_call(RingTrace::row(0, 1), "MPI_Comm_rank", 0, true);
    ASSERT_TRUE(rank_call);
    EXPECT_EQ(rank_call->enter, trace.written(RingTrace::row(0, 1)).front().enter);
    EXPECT_FALSE(tl->find_call(99, "MPI_Allreduce", 0, true));
    // An empty name: the neighbours of a time, markers included.
    const auto& row2 = trace.written(RingTrace::row(2, 0));
    for (size_t i : {size_t{1}, size_t{500}, row2.size() - 1}) {
      const auto at = tl->find_call(RingTrace::row(2, 0), "", double(row2[i].enter), true);
      ASSERT_TRUE(at);
      EXPECT_EQ(at->index, i);
      const auto before = tl->find_call(RingTrace::row(2, 0), "", double(row2[i].enter), false);
      ASSERT_TRUE(before);
      EXPECT_EQ(before->index, i - 1);
      EXPECT_EQ(before->enter, row2[i - 1].enter);
    }
  }
}

TEST(Timeline, ExecutionsEqualTheAnalysis) {
  RingTrace trace(3, 150);
  const analysis::Analysis a = analysis::analyze(trace.dir());
  ASSERT_TRUE(a.usable());
  for (const TimelineOptions& options : option_sets()) {
    auto tl = built(trace.dir(), options);
    ASSERT_TRUE(tl);
    const auto nodes = tl->nodes();
    // Per (interval id, rank): executions and total time, from each.
    std::map<std::pair<uint32_t, int>, std::pair<uint64_t, double>> timeline, analysis;
    for (size_t row = 0; row < tl->rows().size(); ++row)
      for (const auto& e : tl->executions(row)) {
        auto& v = timeline[{nodes[e.node].id, tl->rows()[row].rank}];
        ++v.first;
        v.second += e.end - e.start;
      }
    for (const auto& n : a.intervals)
      for (const auto& f : n.per_rank) {
        auto& v = analysis[{n.id ? *n.id : 0u, f.rank}];
        v.first += f.executions;
        v.second += f.time * 1e9;
      }
    ASSERT_EQ(timeline.size(), analysis.size());
    for (const auto& [key, v] : analysis) {
      ASSERT_TRUE(timeline.count(key)) << "interval " << key.first << " rank " << key.second;
      EXPECT_EQ(timeline[key].first, v.first) << "interval " << key.first << " rank " << key.second;
      EXPECT_NEAR(timeline[key].second, v.second, 1e-3) << "interval " << key.first << " rank " << key.second;
    }
    EXPECT_EQ((timeline[{1u, 0}].first), trace.iterations());
    // The tree: interval 2 (app.c:200) inside interval 1 (app.c:100) inside the run.
    ASSERT_EQ(nodes.size(), 3u);
    EXPECT_EQ(nodes[2].parent, 1);
    EXPECT_EQ(tl->site(nodes[2].site), "app.c:200");
    EXPECT_EQ(nodes[2].level, 2);
  }
}

TEST(Timeline, MessagesPairSendsWithReceivesAndCollectivesTheirMembers) {
  RingTrace trace(3, 100);
  for (const TimelineOptions& options : option_sets()) {
    auto tl = built(trace.dir(), options);
    ASSERT_TRUE(tl);
    const auto messages = tl->messages();
    ASSERT_EQ(messages.size(), 3 * trace.iterations());
    std::map<size_t, std::vector<std::pair<uint64_t, uint64_t>>> by_sender;
    for (const auto& m : messages) {
      const int from = tl->rows()[m.send_row].rank, to = tl->rows()[m.recv_row].rank;
      EXPECT_EQ(to, (from + 1) % 3);
      const auto send = tl->calls(m.send_row, double(m.send_enter), double(m.send_enter) + 1);
      ASSERT_FALSE(send.empty());
      EXPECT_EQ(send[0].function, "MPI_Isend");
      EXPECT_EQ(send[0].index, m.send_index);
      const auto recv = tl->calls(m.recv_row, double(m.recv_enter), double(m.recv_enter) + 1);
      ASSERT_FALSE(recv.empty());
      EXPECT_EQ(recv[0].function, "MPI_Waitall");
      EXPECT_EQ(recv[0].index, m.recv_index);
      // Sent and received in the same iteration (the send enters 200 ns into it).
      EXPECT_EQ((m.send_enter - 1000) / int64_t(kPeriod), (m.recv_enter - 1000) / int64_t(kPeriod));
      // The waiting starts at the receive's issue, the iteration's MPI_Irecv.
      const auto issue = tl->call(m.issue_row, m.issue_index);
      ASSERT_TRUE(issue);
      EXPECT_EQ(issue->function, "MPI_Irecv");
      EXPECT_EQ(issue->enter, m.issue_enter);
      EXPECT_EQ(m.issue_row, m.recv_row);
      EXPECT_EQ(m.wait, uint64_t(std::max<int64_t>(0, std::min(m.send_enter, m.recv_leave) - m.issue_enter)));
    }
    const auto collectives = tl->collectives();
    ASSERT_EQ(collectives.size(), trace.iterations() + 1);  // the Allreduces and the final Barrier
    for (const auto& c : collectives) {
      ASSERT_EQ(c.members.size(), 3u);
      // In row order, however many threads built them.
      for (size_t k = 1; k < c.members.size(); ++k) EXPECT_LT(c.members[k - 1].row, c.members[k].row);
      int64_t last = INT64_MIN;
      for (const auto& m : c.members) last = std::max(last, m.enter);
      for (const auto& m : c.members) {
        EXPECT_EQ(m.wait, uint64_t(last - m.enter));
        EXPECT_EQ((m.enter - 1000) / int64_t(kPeriod), (c.members[0].enter - 1000) / int64_t(kPeriod));
      }
    }
    // The message matrix's first message of a pair is that message as
    // messages() gives it: its receive issued at the Irecv, its wait from there.
    const auto matrix = tl->message_matrix(0, std::numeric_limits<double>::infinity());
    ASSERT_EQ(matrix.cells.size(), 3u);
    for (const auto& c : matrix.cells) {
      const analysis::TimelineMessage* first = nullptr;
      for (const auto& m : messages)
        if (tl->rows()[m.send_row].rank == c.sender && tl->rows()[m.recv_row].rank == c.receiver &&
            (!first || m.recv_enter < first->recv_enter))
          first = &m;
      ASSERT_TRUE(first);
      EXPECT_EQ(c.first.send_index, first->send_index);
      EXPECT_EQ(c.first.recv_index, first->recv_index);
      EXPECT_EQ(c.first.issue_row, first->issue_row);
      EXPECT_EQ(c.first.issue_index, first->issue_index);
      EXPECT_EQ(c.first.issue_enter, first->issue_enter);
      EXPECT_LT(c.first.issue_enter, c.first.recv_enter);
      EXPECT_EQ(c.first.wait, first->wait);
    }
  }
}

// The union of the instants in [begin, end) spans, ns.
int64_t union_length(std::vector<std::pair<int64_t, int64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  int64_t total = 0, covered_to = INT64_MIN;
  for (const auto& [begin, end] : spans) {
    const int64_t from = std::max(begin, covered_to);
    if (end > from) total += end - from;
    covered_to = std::max(covered_to, end);
  }
  return total;
}

// Writes the trace of WaitsOfARankAreTheAnalysisPotentSync into b (2 ranks).
constexpr int kEarlyReceiveIterations = 8;
void write_early_receives_late_senders(TraceBuilder& b) {
  constexpr uint32_t kA = 0xAC000011u, kB = 0xAC000012u, kC = 0xAC000013u, kD = 0xAC000014u;
  for (int r = 0; r < 2; ++r) b.init(r, 0, 5 * kUs);
  const int iterations = kEarlyReceiveIterations;
  for (int it = 0; it < iterations; ++it) {
    const uint64_t t = 10 * kUs + static_cast<uint64_t>(it) * 1000 * kUs;
    // Rank 1 sends tag 1 from 100 to 400 us into the iteration: before rank
    // 0's Waitall (entered at 300 us), or while rank 0 is inside it.
    const uint64_t s1 = t + (100 + 50 * static_cast<uint64_t>(it % 7)) * kUs;
    const uint64_t waitall_leave = std::max(t + 300 * kUs, s1 + 20 * kUs) + 30 * kUs;
    b.irecv(0, t + 10 * kUs, t + 12 * kUs, 1, 1, kA);
    b.irecv(0, t + 20 * kUs, t + 22 * kUs, 1, 2, kB);
    b.isend(0, t + 30 * kUs, t + 32 * kUs, 1, 3, kC);
    b.wait(0, Waitall, t + 300 * kUs, waitall_leave,
           {TraceBuilder::done(kA, 1, 1, 8), TraceBuilder::done(kB, 1, 2, 8), TraceBuilder::done(kC)});
    b.irecv(1, t + 5 * kUs, t + 7 * kUs, 0, 3, kD);
    b.send(1, s1, s1 + 5 * kUs, 0, 1);
    b.send(1, s1 + 20 * kUs, s1 + 25 * kUs, 0, 2);
    b.wait(1, Wait, s1 + 40 * kUs, s1 + 60 * kUs, {TraceBuilder::done(kD, 0, 3, 8)});
    b.collective(0, Barrier, t + 600 * kUs, t + 700 * kUs);
    b.collective(1, Barrier, t + (650 + static_cast<uint64_t>(it)) * kUs, t + 700 * kUs);
  }
  const uint64_t end = 10 * kUs + iterations * 1000 * kUs;
  for (int r = 0; r < 2; ++r) b.finalize(r, end, end + 5 * kUs);
  b.close();
}

// Late senders to receives issued early (MPI_Irecv, computation, then a
// Waitall of two receives from the same sender and a send) and a late member
// of a barrier: the timeline's waits of a rank, as a union of instants, are
// the analysis's PotentSync of that rank over the whole run, waiting outside
// MPI calls included; its messages' waits are the Late Sender wait state and
// its collectives' the collective kinds together (both apply wait_rules.h).
TEST(Timeline, WaitsOfARankAreTheAnalysisPotentSync) {
  TraceBuilder b(2);
  write_early_receives_late_senders(b);

  const analysis::Analysis a = analysis::analyze(b.dir());
  ASSERT_TRUE(a.usable());
  auto tl = built(b.dir());
  ASSERT_TRUE(tl);
  // rank -> spans: every wait, the messages', the collectives'
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> waits, message_waits, collective_waits;
  const auto messages = tl->messages();
  ASSERT_EQ(messages.size(), 3u * kEarlyReceiveIterations);
  for (const auto& m : messages)
    if (m.wait > 0) {
      const std::pair<int64_t, int64_t> span{m.issue_enter, m.issue_enter + static_cast<int64_t>(m.wait)};
      waits[tl->rows()[m.recv_row].rank].push_back(span);
      message_waits[tl->rows()[m.recv_row].rank].push_back(span);
    }
  for (const auto& c : tl->collectives())
    for (const auto& m : c.members)
      if (m.wait > 0) {
        const std::pair<int64_t, int64_t> span{m.enter, m.enter + static_cast<int64_t>(m.wait)};
        waits[tl->rows()[m.row].rank].push_back(span);
        collective_waits[tl->rows()[m.row].rank].push_back(span);
      }
  for (const analysis::RankFigures& f : a.intervals[0].per_rank) {
    EXPECT_GT(f.potential_sync, 0) << "rank " << f.rank;
    EXPECT_NEAR(static_cast<double>(union_length(waits[f.rank])) * 1e-9, f.potential_sync, 1e-10) << "rank " << f.rank;
    // (The messages' waits end before the barriers: the two never overlap.)
    EXPECT_GT(f.waits[analysis::kLateSender], 0) << "rank " << f.rank;
    EXPECT_NEAR(static_cast<double>(union_length(message_waits[f.rank])) * 1e-9, f.waits[analysis::kLateSender],
                1e-10) << "rank " << f.rank;
    double collective_kinds = 0;
    for (int k = analysis::kWaitAtBarrier; k <= analysis::kWaitAtCollectiveOther; ++k)
      collective_kinds += f.waits[static_cast<size_t>(k)];
    EXPECT_NEAR(static_cast<double>(union_length(collective_waits[f.rank])) * 1e-9, collective_kinds, 1e-10)
        << "rank " << f.rank;
  }
}

// Summaries say how much of each bucket a row waited (a potential-sync
// overlay where calls are not drawn one by one): the union of the row's
// message and collective waits inside the bucket, from the pyramid's cells
// (a whole-run view), from the calls (buckets narrower than a leaf) and
// summed over a group's rows.
TEST(Timeline, BucketWaitsAreTheUnionOfTheRowsWaitsInside) {
  TraceBuilder b(2);
  write_early_receives_late_senders(b);
  auto tl = built(b.dir());
  ASSERT_TRUE(tl);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> waits(tl->rows().size());
  for (const auto& m : tl->messages())
    waits[m.recv_row].emplace_back(m.issue_enter, m.issue_enter + static_cast<int64_t>(m.wait));
  for (const auto& c : tl->collectives())
    for (const auto& m : c.members) waits[m.row].emplace_back(m.enter, m.enter + static_cast<int64_t>(m.wait));
  // The union of a row's waits clipped to [from, to), ns.
  auto inside = [&](size_t row, double from, double to) { return test::union_inside(waits[row], from, to); };
  double total[2] = {0, 0};
  for (size_t row = 0; row < 2; ++row) total[row] = inside(row, 0, 1e18);
  ASSERT_GT(total[0], 0);
  ASSERT_GT(total[1], 0);
  struct Case {
    double from, to;
    uint32_t buckets;
  };
  // The whole run and an iteration (pyramid cells), and parts of the
  // iteration in buckets of 0.8 and 0.3 us (finer than the leaves: from the
  // calls), across a Waitall's overlapping receives.
  for (const Case& k : {Case{0, 8.1e6, 50}, Case{1000e3, 2000e3, 300}, Case{1005e3, 1250e3, 300},
                        Case{1005e3, 1350e3, 1000}}) {
    TimelineQuery q;
    q.from = k.from;
    q.to = k.to;
    q.buckets = k.buckets;
    q.max_events = 1;  // summaries
    const analysis::TimelineAnswer a = tl->query(q);
    ASSERT_EQ(a.rows.size(), 2u);
    for (const auto& r : a.rows) {
      ASSERT_TRUE(r.summarized);
      double sum = 0;
      for (size_t i = 0; i < r.buckets.size(); ++i) {
        const double b0 = r.bucket_from + static_cast<double>(i) * r.bucket_width, b1 = b0 + r.bucket_width;
        EXPECT_NEAR(r.buckets[i].wait, inside(r.row, b0, b1), 1e-3) << "row " << r.row << " bucket " << i << " of ["
                                                                     << k.from << ", " << k.to << ")";
        EXPECT_LE(r.buckets[i].wait, r.bucket_width * (1 + 1e-12));
        sum += r.buckets[i].wait;
      }
      if (k.from == 0) {
        EXPECT_NEAR(sum, total[r.row], 1e-3);
      }
    }
    analysis::TimelineGroupQuery g;
    g.groups = {{0, 1}, {1}};
    g.from = k.from;
    g.to = k.to;
    g.buckets = k.buckets;
    const analysis::TimelineGroupAnswer ga = tl->summarize_groups(g);
    ASSERT_EQ(ga.groups.size(), 2u);
    for (size_t i = 0; i < ga.groups[0].size(); ++i) {
      const double b0 = ga.bucket_from + static_cast<double>(i) * ga.bucket_width, b1 = b0 + ga.bucket_width;
      EXPECT_NEAR(ga.groups[0][i].wait, inside(0, b0, b1) + inside(1, b0, b1), 2e-3) << "bucket " << i;
      EXPECT_NEAR(ga.groups[1][i].wait, inside(1, b0, b1), 1e-3) << "bucket " << i;
    }
  }
}

// The build's waits step reads each row's blocks in order, from memory or
// from the spill file: over rows of several blocks (a ring of Irecv, Isend,
// Waitall and Allreduce), a whole run's buckets sum to the union of the row's
// waits as the messages and collectives list them, and are the same, bit for
// bit, wherever the records are.
TEST(Timeline, BucketWaitsSpanBlocksWhereverTheRecordsAre) {
  RingTrace trace(3, 300);
  TimelineOptions memory, spilled;
  spilled.memory_bytes = 0;
  auto in_memory = built(trace.dir(), memory);
  auto in_file = built(trace.dir(), spilled);
  ASSERT_TRUE(in_memory && in_file);
  EXPECT_GT(in_file->memory().records_spilled, 0u);
  ASSERT_GT(in_memory->events(), 3u * 2u * 1024u);  // (each rank's main row: three blocks)
  std::vector<std::vector<std::pair<int64_t, int64_t>>> waits(in_memory->rows().size());
  for (const auto& m : in_memory->messages())
    if (m.wait > 0) waits[m.recv_row].emplace_back(m.issue_enter, m.issue_enter + static_cast<int64_t>(m.wait));
  for (const auto& c : in_memory->collectives())
    for (const auto& m : c.members)
      if (m.wait > 0) waits[m.row].emplace_back(m.enter, m.enter + static_cast<int64_t>(m.wait));
  for (const uint32_t buckets : {7u, 300u}) {
    TimelineQuery q;
    q.from = 0;
    q.to = in_memory->end();
    q.buckets = buckets;
    q.max_events = 1;  // summaries, from the pyramid's cells
    const analysis::TimelineAnswer a = in_memory->query(q), b = in_file->query(q);
    ASSERT_EQ(a.rows.size(), b.rows.size());
    for (size_t i = 0; i < a.rows.size(); ++i) {
      const auto& r = a.rows[i];
      ASSERT_TRUE(r.summarized);
      ASSERT_EQ(r.buckets.size(), b.rows[i].buckets.size());
      double sum = 0;
      for (size_t k = 0; k < r.buckets.size(); ++k) {
        EXPECT_EQ(r.buckets[k].wait, b.rows[i].buckets[k].wait) << "row " << r.row << " bucket " << k;
        sum += r.buckets[k].wait;
      }
      EXPECT_NEAR(sum, static_cast<double>(union_length(waits[r.row])), 1e-3) << "row " << r.row;
      if (r.row != 1) {  // (row 1: rank 0's second thread)
        EXPECT_GT(sum, 0) << "row " << r.row;
      }
    }
  }
}

// What the build's waits step holds beside the timeline does not grow with
// the messages: a ring of 140,000 late-sender receives and 140,000
// Allreduce calls, whose waits listed at once (8 bytes a message for the
// send's enter and 16 a span) would take over 4 MB, takes a few blocks'
// enters and a bounded heap of spans per thread; the buckets still hold the
// union of the row's waits.
TEST(Timeline, WaitsStepHoldsAFewBlocksWhateverTheMessages) {
  RingTrace trace(2, 70000);
  auto tl = built(trace.dir());
  ASSERT_TRUE(tl);
  const auto messages = tl->messages();
  ASSERT_EQ(messages.size(), 140000u);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> waits(tl->rows().size());
  for (const auto& m : messages)
    if (m.wait > 0) waits[m.recv_row].emplace_back(m.issue_enter, m.issue_enter + static_cast<int64_t>(m.wait));
  for (const auto& c : tl->collectives())
    for (const auto& m : c.members)
      if (m.wait > 0) waits[m.row].emplace_back(m.enter, m.enter + static_cast<int64_t>(m.wait));
  ASSERT_GT(waits[0].size() + waits[2].size(), 100000u);
  const uint64_t peak = tl->memory().waits_step_peak;
  EXPECT_GT(peak, 0u);
  EXPECT_LE(peak, uint64_t{512} << 10);
  TimelineQuery q;
  q.from = 0;
  q.to = tl->end();
  q.buckets = 300;
  q.max_events = 1;  // summaries, from the pyramid's cells
  for (const auto& r : tl->query(q).rows) {
    double sum = 0;
    for (const auto& b : r.buckets) sum += b.wait;
    EXPECT_NEAR(sum, static_cast<double>(union_length(waits[r.row])), 1e-3) << "row " << r.row;
  }
}

// A receive issued long before it completes (an MPI_Irecv at the start,
// its MPI_Wait after 6,000 other late-sender receives, its send the last)
// waits from its issue, before every wait between: its span comes far out
// of start order, past what the waits step reorders as it goes, and the
// row's waits are then listed and sorted. Every bucket still holds the
// union of the row's waits inside it.
TEST(Timeline, BucketWaitsKeepAReceiveIssuedLongBefore) {
  constexpr uint32_t kEarly = 0xAC000021u;
  constexpr uint64_t kReceives = 6000;
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 5 * kUs);
  b.irecv(0, 10 * kUs, 11 * kUs, 1, 9, kEarly);
  uint64_t t = 20 * kUs;
  for (uint64_t i = 0; i < kReceives; ++i, t += 10 * kUs) {
    b.recv(0, t, t + 5 * kUs, 1, 1);
    b.send(1, t + 2 * kUs + (i % 3) * kUs, t + 3 * kUs + (i % 3) * kUs, 0, 1);
  }
  b.wait(0, Wait, t, t + 20 * kUs, {TraceBuilder::done(kEarly, 1, 9, 8)});
  b.send(1, t + 10 * kUs, t + 11 * kUs, 0, 9);
  t += 30 * kUs;
  for (int r = 0; r < 2; ++r) b.finalize(r, t, t + 5 * kUs);
  b.close();
  auto tl = built(b.dir());
  ASSERT_TRUE(tl);
  std::vector<std::pair<int64_t, int64_t>> waits;
  for (const auto& m : tl->messages())
    if (m.wait > 0 && tl->rows()[m.recv_row].rank == 0)
      waits.emplace_back(m.issue_enter, m.issue_enter + static_cast<int64_t>(m.wait));
  ASSERT_EQ(waits.size(), kReceives + 1);
  // (Listed: 16 bytes a span.)
  EXPECT_GE(tl->memory().waits_step_peak, (kReceives + 1) * 16);
  for (const uint32_t buckets : {7u, 1000u}) {
    TimelineQuery q;
    q.from = 0;
    q.to = tl->end();
    q.buckets = buckets;
    q.max_events = 1;
    const analysis::TimelineAnswer a = tl->query(q);
    ASSERT_FALSE(a.rows.empty());
    const auto& r = a.rows[0];
    ASSERT_TRUE(r.summarized);
    for (size_t i = 0; i < r.buckets.size(); ++i) {
      const double b0 = r.bucket_from + static_cast<double>(i) * r.bucket_width, b1 = b0 + r.bucket_width;
      EXPECT_NEAR(r.buckets[i].wait, test::union_inside(waits, b0, b1), 1e-3) << "bucket " << i << " of " << buckets;
    }
  }
}

// Records are kept packed per block, each field in the fewest bytes that its
// values in the block need: every field must come back exactly, at every
// width (gaps and durations past 2^32 ns, bytes past 2^32, tags up to 2^30),
// and messages on channels that interleave differently at the two ends must
// pair the n-th send of a channel with its n-th receive.
TEST(Timeline, CallFieldsAndChannelsSurviveAcrossBlocks) {
  constexpr int kCalls = 3 * 1024;  // three blocks a row, each with its own ranges of values
  // Per block: values whose spans need 2 bytes and just over (70,000), 4 and
  // 8 bytes (past 2^32, and bytes or durations that overflow the record),
  // 1 byte, and constant columns (no bytes).
  struct Values {
    std::vector<uint64_t> gaps, durations, sizes;
    std::vector<int32_t> tags;
  };
  const Values blocks[3] = {
      {{10, 70'000}, {0, 1, 70'000}, {0, 8, 70'000}, {0, 5, 70'000}},
      {{1, 5'000'000'000ull}, {0, 6'000'000'000ull}, {0, uint64_t{1} << 33, UINT32_MAX}, {0, 1 << 30}},
      {{1, 200}, {0, 255, 256}, {8}, {5}},
  };
  TraceBuilder b(2);
  b.init(0, kStart, kStart + 500);
  b.init(1, kStart, kStart + 500);
  struct Call {
    int64_t enter;
    uint64_t duration, bytes;
    int32_t tag;
  };
  std::vector<Call> want[2];
  for (int r = 0; r < 2; ++r) {
    uint64_t t = kStart + 1000;
    for (int i = 0; i < kCalls; ++i) {
      const Values& v = blocks[(i + 1) / 1024 % 3];  // (the row's first call is MPI_Init)
      // Rank 1 receives the tags in another interleaving than rank 0 sends them.
      const int32_t tag = v.tags[static_cast<size_t>(i + r) % v.tags.size()];
      const uint64_t d = v.durations[static_cast<size_t>(i / 7) % v.durations.size()];
      const uint64_t bytes = v.sizes[static_cast<size_t>(i + 3 * r) % v.sizes.size()];
      if (r == 0) b.send(0, t, t + d, 1, tag, bytes);
      else b.recv(1, t, t + d, 0, tag, bytes);
      want[r].push_back(Call{static_cast<int64_t>(t - kStart), d, bytes, tag});
      t += d + v.gaps[static_cast<size_t>(i / 3 + r) % v.gaps.size()];
    }
    b.finalize(r, t, t + 100);
  }
  b.close();
  for (const TimelineOptions& options : option_sets()) {
    auto tl = built(b.dir(), options);
    ASSERT_TRUE(tl);
    for (size_t row = 0; row < 2; ++row) {
      const auto calls = tl->calls(row, -INFINITY, INFINITY);
      ASSERT_EQ(calls.size(), size_t{kCalls} + 2) << "row " << row;
      for (size_t i = 0; i < size_t{kCalls}; ++i) {
        const TimelineCall& c = calls[i + 1];
        const Call& w = want[row][i];
        EXPECT_EQ(c.index, i + 1);
        EXPECT_EQ(c.enter, w.enter) << "row " << row << " call " << i;
        EXPECT_EQ(c.duration, w.duration) << "row " << row << " call " << i;
        EXPECT_EQ(c.bytes, w.bytes) << "row " << row << " call " << i;
        EXPECT_EQ(c.tag, w.tag) << "row " << row << " call " << i;
        EXPECT_EQ(c.peer, row == 0 ? 1 : 0) << "row " << row << " call " << i;
        EXPECT_EQ(c.function, row == 0 ? "MPI_Send" : "MPI_Recv");
        EXPECT_TRUE(c.has_comm);
        const auto one = tl->call(row, i + 1);
        ASSERT_TRUE(one);
        EXPECT_EQ(one->enter, w.enter);
        EXPECT_EQ(one->bytes, w.bytes);
      }
    }
    // Brute force: per tag, the n-th send (call index) with the n-th receive.
    std::map<int32_t, std::vector<uint64_t>> sends, recvs;
    for (size_t i = 0; i < size_t{kCalls}; ++i) {
      sends[want[0][i].tag].push_back(i + 1);
      recvs[want[1][i].tag].push_back(i + 1);
    }
    std::set<std::pair<uint64_t, uint64_t>> expected, got;
    for (const auto& [tag, list] : sends)
      for (size_t n = 0; n < std::min(list.size(), recvs[tag].size()); ++n) expected.emplace(list[n], recvs[tag][n]);
    for (const auto& m : tl->messages()) {
      EXPECT_EQ(m.send_row, 0u);
      EXPECT_EQ(m.recv_row, 1u);
      got.emplace(m.send_index, m.recv_index);
    }
    EXPECT_EQ(got, expected);
  }
}

TEST(Timeline, QueriesWhileBuildingSeeConsistentParts) {
  RingTrace trace(4, 6000);
  uint64_t total = 0;
  for (size_t row = 0; row < 5; ++row) total += trace.written(row).size();
  std::string error;
  TimelineOptions options;
  options.threads = 2;
  options.leaves_per_row = 4096;
  std::vector<double> progress;
  options.progress = [&](double f) { progress.push_back(f); };
  auto tl = Timeline::open(trace.dir(), &error, options);
  ASSERT_TRUE(tl) << error;
  std::thread builder([&] { tl->build(); });
  size_t queries = 0;
  double last_built = 0;
  bool saw_partial = false;
  for (;;) {
    const bool done = tl->complete();  // before the query: a complete answer must follow
    const bool calls_done = tl->calls_complete();  // every call counted must follow
    if (done) {
      EXPECT_TRUE(calls_done);
    }
    TimelineQuery q;
    q.from = 0;
    q.to = 1e12;
    q.buckets = 500;
    const auto a = tl->query(q);
    ++queries;
    EXPECT_GE(a.built, last_built);
    last_built = a.built;
    ASSERT_EQ(a.rows.size(), 5u);
    uint64_t counted = 0;
    for (const auto& r : a.rows) {
      if (r.summarized)
        for (const auto& b : r.buckets) counted += b.count;
      else
        counted += r.calls.size();
    }
    // Whole blocks of calls, never more than the trace holds.
    EXPECT_LE(counted, total);
    if (!a.complete && counted < total) saw_partial = true;
    if (calls_done) {
      EXPECT_EQ(counted, total);
    }
    if (done) {
      EXPECT_TRUE(a.complete);
      EXPECT_EQ(counted, total);
      break;
    }
    std::this_thread::yield();
  }
  builder.join();
  EXPECT_GT(queries, 0u);
  (void)saw_partial;  // how much of the build a query sees depends on the scheduler
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), 1.0);
  EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
}

// With every block spilled and two build threads, what a query lists while
// the build runs is each row's first calls exactly as written (blocks read
// from a thread's unwritten stage or from the file), and all of them at the end.
TEST(Timeline, SpilledCallsListedWhileBuildingAreThoseWritten) {
  RingTrace trace(4, 6000);
  std::string error;
  TimelineOptions options;
  options.threads = 2;
  options.memory_bytes = 0;
  auto tl = Timeline::open(trace.dir(), &error, options);
  ASSERT_TRUE(tl) << error;
  // Whether the listing is a prefix of what was written (all of it when `all`).
  auto listed_as_written = [&](bool all) {
    for (size_t row = 0; row < 5; ++row) {
      const auto calls = tl->calls(row, -INFINITY, INFINITY);
      const auto& want = trace.written(row);
      if (calls.size() > want.size() || (all && calls.size() != want.size())) {
        ADD_FAILURE() << "row " << row << ": " << calls.size() << " calls listed, " << want.size() << " written";
        return false;
      }
      for (size_t i = 0; i < calls.size(); ++i)
        if (calls[i].enter != want[i].enter || calls[i].leave() != want[i].leave) {
          ADD_FAILURE() << "row " << row << " call " << i << " differs";
          return false;
        }
    }
    return true;
  };
  std::thread builder([&] { tl->build(); });
  for (;;) {
    const bool done = tl->complete();  // before listing: a complete listing must follow
    if (!listed_as_written(done)) {
      tl->cancel();
      break;
    }
    if (done) break;
    std::this_thread::yield();
  }
  builder.join();
}

TEST(Timeline, CancelStopsTheBuild) {
  RingTrace trace(2, 20000);
  uint64_t total = 0;
  for (size_t row = 0; row < 3; ++row) total += trace.written(row).size();
  std::string error;
  TimelineOptions options;
  options.threads = 1;
  Timeline* self = nullptr;
  int calls = 0;
  options.progress = [&](double) {
    ++calls;
    self->cancel();  // at the first report: the rest is never decoded
  };
  auto tl = Timeline::open(trace.dir(), &error, options);
  ASSERT_TRUE(tl) << error;
  self = tl.get();
  tl->build();
  EXPECT_TRUE(tl->cancelled());
  EXPECT_FALSE(tl->complete());
  EXPECT_LT(tl->events(), total / 2);
  EXPECT_GE(calls, 1);
  // What was built still answers.
  TimelineQuery q;
  q.from = 0;
  q.to = 1e12;
  q.buckets = 10;
  EXPECT_EQ(tl->query(q).rows.size(), 3u);
}

// Memory runs out in the build's threads: the build stops and says so, and
// the program goes on (an exception escaping a std::thread would abort it:
// the viewer with it). The build runs on a thread of its own, as the
// viewer's loader runs it.
TEST(Timeline, OutOfMemoryInBuildThreadsIsReportedNotFatal) {
  RingTrace trace(4, 2000);
  TimelineOptions options;
  options.threads = 2;
  std::string error;
  auto tl = Timeline::open(trace.dir(), &error, options);
  ASSERT_TRUE(tl) << error;
  bool built_ok = true;
  fail_large_allocations = true;
  std::thread builder([&] { built_ok = tl->build(&error); });
  builder.join();
  fail_large_allocations = false;
  EXPECT_FALSE(built_ok);
  EXPECT_EQ(error.rfind("out of memory while building the timeline: ", 0), 0u) << error;
  EXPECT_TRUE(tl->failed());
  EXPECT_FALSE(tl->cancelled());
  EXPECT_FALSE(tl->complete());
  EXPECT_FALSE(tl->calls_complete());
}

// Memory runs out after two ranks are built (one build thread: ranks in
// order): the build stops at the third, and the calls of the first two,
// kept in memory or in the spill file, still read back exactly.
TEST(Timeline, CallsBuiltBeforeMemoryRanOutStillReadBack) {
  RingTrace trace(4, 2000);
  const size_t first_two_ranks_rows = 3;  // rank 0's two rows, rank 1's
  uint64_t first_two_ranks_calls = 0;
  for (size_t row = 0; row < first_two_ranks_rows; ++row) first_two_ranks_calls += trace.written(row).size();
  TimelineOptions in_memory;
  TimelineOptions spilled;
  spilled.memory_bytes = 0;
  for (TimelineOptions options : {in_memory, spilled}) {
    options.threads = 1;
    Timeline* self = nullptr;
    // Reported after each rank (and every 4096 events): armed once the first
    // two ranks' calls are all built.
    options.progress = [&](double) {
      if (self->events() >= first_two_ranks_calls) fail_large_allocations = true;
    };
    std::string error;
    auto tl = Timeline::open(trace.dir(), &error, options);
    ASSERT_TRUE(tl) << error;
    self = tl.get();
    bool built_ok = true;
    std::thread builder([&] { built_ok = tl->build(&error); });
    builder.join();
    fail_large_allocations = false;
    EXPECT_FALSE(built_ok);
    EXPECT_EQ(error.rfind("out of memory while building the timeline: ", 0), 0u) << error;
    EXPECT_EQ(tl->events(), first_two_ranks_calls);
    EXPECT_EQ(tl->memory().records_spilled > 0, options.memory_bytes == 0);
    ASSERT_EQ(tl->rows().size(), 5u);
    for (size_t row = 0; row < tl->rows().size(); ++row) {
      const auto calls = tl->calls(row, -INFINITY, INFINITY);
      if (row >= first_two_ranks_rows) {
        EXPECT_TRUE(calls.empty()) << "row " << row;
        continue;
      }
      const auto& want = trace.written(row);
      ASSERT_EQ(calls.size(), want.size()) << "row " << row;
      for (size_t i = 0; i < calls.size(); ++i) {
        ASSERT_EQ(calls[i].enter, want[i].enter) << "row " << row << " call " << i;
        ASSERT_EQ(calls[i].leave(), want[i].leave) << "row " << row << " call " << i;
      }
    }
  }
}

// The build rounds enters and durations as std::llround does (halves away
// from zero): at every half and the doubles next to it, at the edges of its
// short path (0.5, 2^51, 2^52), for negatives, and at random magnitudes.
TEST(TimelineRounding, RoundNsEqualsLlroundAtHalvesAndEdges) {
  using analysis::timeline_detail::round_ns;
  std::vector<double> values = {0.0, -0.0, 0.25, 0.5, 1.0, 1.5, 2.5, 3.5, 1e9 + 0.5, 0x1p51, 0x1p52, 0x1p53, 0x1p62};
  for (double k = 0; k < 64; ++k) values.push_back(k + 0.5);
  for (int e = -2; e < 64; ++e) {
    values.push_back(std::ldexp(1.0, e));
    values.push_back(std::ldexp(1.0, e) - 0.5);
    values.push_back(std::ldexp(1.0, e) + 0.5);
  }
  std::mt19937_64 random(11);
  for (int i = 0; i < 200000; ++i) {
    const double magnitude = std::ldexp(1.0, static_cast<int>(random() % 60));
    values.push_back(std::uniform_real_distribution<double>(0, magnitude)(random));
    values.push_back(std::floor(values.back()) + 0.5);
  }
  const size_t n = values.size();
  for (size_t i = 0; i < n; ++i) {  // the doubles on either side of each, and the negatives
    values.push_back(std::nextafter(values[i], 0.0));
    values.push_back(std::nextafter(values[i], INFINITY));
  }
  for (size_t i = 0, m = values.size(); i < m; ++i) values.push_back(-values[i]);
  for (const double x : values) ASSERT_EQ(round_ns(x), std::llround(x)) << std::hexfloat << x;
}

// A block's records come back from packing exactly, each field at its
// extremes, and each column takes the fewest bytes its values' span needs
// (signed fields across zero, unsigned ones across 2^31 and up to 2^32 - 1).
TEST(TimelinePacking, BlocksRoundTripWithColumnsOfTheFewestBytes) {
  using analysis::timeline_detail::Record;
  namespace packing = analysis::timeline_detail::packing;
  std::mt19937_64 random(5);
  auto check = [](const std::vector<Record>& in) {
    std::vector<uint8_t> packed;
    packing::pack(in.data(), static_cast<uint32_t>(in.size()), packed);
    std::vector<Record> out(in.size());
    packing::unpack(packed.data(), static_cast<uint32_t>(in.size()), out.data());
    for (size_t i = 0; i < in.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(out[i].enter, in[i].enter);
      EXPECT_EQ(out[i].duration, in[i].duration);
      EXPECT_EQ(out[i].name, in[i].name);
      EXPECT_EQ(out[i].kind, in[i].kind);
      EXPECT_EQ(out[i].flags, in[i].flags);
      EXPECT_EQ(out[i].peer, in[i].peer);
      EXPECT_EQ(out[i].tag, in[i].tag);
      EXPECT_EQ(out[i].bytes, in[i].bytes);
      EXPECT_EQ(out[i].comm, in[i].comm);
    }
    return packed.size() - packing::kHeaderBytes;  // the columns' bytes
  };
  // Random blocks, each field drawn from a range of its own.
  for (uint32_t n : {1u, 2u, 7u, 1024u}) {
    for (int round = 0; round < 20; ++round) {
      std::vector<Record> block(n);
      const uint64_t span[] = {1, 255, 256, 65536, 1ull << 32};
      auto draw = [&](int field) { return random() % span[(round + field) % 5]; };
      int64_t enter = static_cast<int64_t>(random() % 1000000);
      for (Record& r : block) {
        enter += static_cast<int64_t>(draw(0));
        r.enter = enter;
        r.duration = static_cast<uint32_t>(draw(1));
        r.name = static_cast<uint16_t>(draw(2));
        r.kind = static_cast<uint8_t>(random() % 6);
        r.flags = static_cast<uint8_t>(random() % 16);
        r.peer = static_cast<int32_t>(static_cast<int64_t>(draw(4)) - (round % 2 ? 1 : INT64_C(1) << 31) / 2);
        r.tag = static_cast<int32_t>(static_cast<uint32_t>(draw(5)));
        r.bytes = static_cast<uint32_t>(UINT32_MAX - draw(6));
        r.comm = static_cast<uint32_t>(draw(7));
      }
      check(block);
    }
  }
  // Columns whose values differ by one take one byte each wherever they lie;
  // enters 5 ns apart take one byte; equal values none.
  struct Extremes {
    int32_t peer_a, peer_b, tag_a, tag_b;
    uint32_t bytes_a, bytes_b, comm_a, comm_b;
  };
  const Extremes cases[] = {
      {-1, 0, INT32_MIN, INT32_MIN + 1, 0x7FFFFFFFu, 0x80000000u, UINT32_MAX - 1, UINT32_MAX},
      {INT32_MAX - 1, INT32_MAX, -2, -1, 0, 1, 0x7FFFFFFFu, 0x80000000u},
  };
  for (const Extremes& c : cases) {
    std::vector<Record> block(100);
    for (size_t i = 0; i < block.size(); ++i) {
      const bool b = i % 3 == 1;
      block[i].enter = 1000 + 5 * static_cast<int64_t>(i);
      block[i].duration = 77;
      block[i].name = 3;
      block[i].kind = 2;
      block[i].peer = b ? c.peer_b : c.peer_a;
      block[i].tag = b ? c.tag_b : c.tag_a;
      block[i].bytes = b ? c.bytes_b : c.bytes_a;
      block[i].comm = b ? c.comm_b : c.comm_a;
    }
    // enter differences (1 byte), duration, name, kind (0), four columns of 1 byte
    EXPECT_EQ(check(block), 5u * block.size());
  }
  // Columns whose values span exactly the most one or two bytes hold, low
  // and high in the 32-bit range, in blocks long enough to be packed 16
  // values at a time, and a tail: each value comes back.
  for (const uint32_t span : {255u, 65535u}) {
    const uint32_t width = span == 255 ? 1 : 2;
    for (const uint32_t base : {0u, 0x7FFFFFFFu - span, 0x80000000u - span / 2, UINT32_MAX - span}) {
      for (const size_t n : {size_t{16}, size_t{1024}, size_t{1000}}) {
        SCOPED_TRACE(testing::Message() << "span " << span << " base " << base << " n " << n);
        std::vector<Record> block(n);
        for (size_t i = 0; i < n; ++i) {
          // Both ends of the span in each run of 16 and all values between.
          const uint32_t offset = i % 16 == 3 ? 0 : i % 16 == 11 ? span : static_cast<uint32_t>((i * 2654435761u) % (span + 1));
          block[i].enter = static_cast<int64_t>(7 * i);
          block[i].duration = base + offset;
          block[i].peer = static_cast<int32_t>(base + offset);  // (as signed: across -1..0 or INT32_MAX..INT32_MIN too)
          block[i].tag = static_cast<int32_t>(UINT32_MAX - base - offset);
          block[i].bytes = base + span - offset;
          block[i].comm = base + offset;
        }
        // enter differences 1 byte; duration, peer, tag, bytes, comm `width` each
        const bool signed_wraps = static_cast<int32_t>(base) > static_cast<int32_t>(base + span);
        if (!signed_wraps) {
          EXPECT_EQ(check(block), n * (1 + 5 * width));
        } else {
          check(block);  // (peer and tag span 2^32 - span as signed: wider, still exact)
        }
      }
    }
  }
}

TEST(Timeline, UnusableDirectoryIsAnError) {
  std::string error;
  EXPECT_FALSE(Timeline::open("/nonexistent/trace", &error));
  EXPECT_FALSE(error.empty());
}


// The communication matrix against a brute-force sum over the messages the
// test wrote: three ranks, three blocking messages per iteration between
// pairs that change with the iteration, of bytes that grow with it; interval
// 1 around the even iterations only. Checked for the whole run, a range that
// cuts iterations, and interval 1's executions inside that range.
TEST(Timeline, MessageMatrixEqualsBruteForceOverTheMessagesWritten) {
  constexpr int kRanks = 3, kIterations = 40;
  struct Message {
    int sender, receiver;
    int64_t recv_enter, recv_leave, send_enter;
    uint64_t bytes;
    bool in_interval;
  };
  std::vector<Message> written;
  TraceBuilder b(kRanks);
  for (int r = 0; r < kRanks; ++r) b.init(r, 0, kMs);
  // Every rank's events in time order: per iteration, the markers and the
  // messages it takes part in.
  for (int it = 0; it < kIterations; ++it) {
    const uint64_t t = 2 * kMs + uint64_t(it) * kMs;
    const bool marked = it % 2 == 0;
    for (int r = 0; r < kRanks; ++r)
      if (marked) b.marker(r, t, 1, true, 1);
    for (int k = 0; k < 3; ++k) {
      const int s = (it + k) % kRanks, d = (s + 1 + it % 2) % kRanks;
      const uint64_t slot = t + uint64_t(k) * 200 * kUs, bytes = 8 + 100 * uint64_t(it) + uint64_t(k);
      const uint64_t recv_enter = slot + 5 * kUs, recv_leave = slot + (100 + 10 * uint64_t(k)) * kUs;
      b.recv(d, recv_enter, recv_leave, s, 7, bytes);
      b.send(s, slot + 10 * kUs, slot + 60 * kUs, d, 7, bytes);
      written.push_back({s, d, int64_t(recv_enter), int64_t(recv_leave), int64_t(slot + 10 * kUs), bytes, marked});
    }
    for (int r = 0; r < kRanks; ++r)
      if (marked) b.marker(r, t + 900 * kUs, 1, false, 1);
  }
  const uint64_t end = 2 * kMs + uint64_t(kIterations) * kMs;
  for (int r = 0; r < kRanks; ++r) b.finalize(r, end, end + 100 * kUs);
  b.close();

  for (const TimelineOptions& options : option_sets()) {
    auto tl = built(b.dir(), options);
    ASSERT_TRUE(tl);
    const auto nodes = tl->nodes();
    std::optional<uint32_t> interval1;
    for (uint32_t n = 0; n < nodes.size(); ++n)
      if (nodes[n].id == 1) interval1 = n;
    ASSERT_TRUE(interval1);
    auto check = [&](double from, double to, std::optional<uint32_t> node) {
      const analysis::TimelineMessageMatrix m = tl->message_matrix(from, to, node);
      ASSERT_TRUE(m.complete);
      ASSERT_EQ(m.ranks, kRanks);
      for (size_t i = 1; i < m.cells.size(); ++i)
        ASSERT_LT(std::make_pair(m.cells[i - 1].sender, m.cells[i - 1].receiver),
                  std::make_pair(m.cells[i].sender, m.cells[i].receiver));
      for (int s = 0; s < kRanks; ++s)
        for (int d = 0; d < kRanks; ++d) {
          uint64_t messages = 0, bytes = 0;
          double time = 0;
          const Message* first = nullptr;
          for (const Message& w : written)
            if (w.sender == s && w.receiver == d && w.recv_enter >= from && w.recv_enter < to &&
                (!node || w.in_interval)) {
              ++messages;
              bytes += w.bytes;
              time += double(w.recv_leave - w.recv_enter);
              if (!first || w.recv_enter < first->recv_enter) first = &w;
            }
          const analysis::TimelineMatrixCell* found = m.find(s, d);
          ASSERT_EQ(found != nullptr, messages > 0) << s << " -> " << d;
          if (!found) continue;
          const analysis::TimelineMatrixCell& c = *found;
          EXPECT_EQ(c.messages, messages) << s << " -> " << d;
          EXPECT_EQ(c.bytes, bytes) << s << " -> " << d;
          EXPECT_EQ(c.time, time) << s << " -> " << d;
          {
            EXPECT_EQ(c.first.recv_enter, first->recv_enter);
            EXPECT_EQ(c.first.recv_leave, first->recv_leave);
            EXPECT_EQ(c.first.send_enter, first->send_enter);
            EXPECT_EQ(tl->rows()[c.first.send_row].rank, s);
            EXPECT_EQ(tl->rows()[c.first.recv_row].rank, d);
          }
        }
    };
    check(0, std::numeric_limits<double>::infinity(), std::nullopt);
    // From inside iteration 5 (after its first message) to inside iteration 17.
    const double from = double(2 * kMs + 5 * kMs + 150 * kUs), to = double(2 * kMs + 17 * kMs + 300 * kUs);
    check(from, to, std::nullopt);
    check(from, to, interval1);
    // Every message counted once over the whole run.
    uint64_t total = 0;
    for (const auto& c : tl->message_matrix(0, std::numeric_limits<double>::infinity()).cells) total += c.messages;
    EXPECT_EQ(total, written.size());
  }
}

// Each MPI call's own site (format 7's 6-bit index, kept in the record's name
// field) reads back through Timeline::call_site as the line the trace names,
// in memory and spilled, across blocks, with markers (which repeat the row's
// last index in that field) between the calls; a call without a site index
// has none.
TEST(Timeline, CallSiteOfEachCallIsTheLineItWasCalledFrom) {
  TraceBuilder b(2);
  const int calls = 2500;  // over two blocks a row
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 5 * kUs);
    for (int i = 0; i < calls; ++i) {
      const uint64_t t = 10 * kUs + static_cast<uint64_t>(i) * 10 * kUs;
      if (i % 7 == 0) b.marker(r, t, 5, true, 1);
      b.collective(r, Allreduce, t + kUs, t + 2 * kUs, kWorld, 8, format::kNoRequest, 0,
                   static_cast<uint8_t>((i + r) % 3));
      if (i % 7 == 0) b.marker(r, t + 3 * kUs, 5, false, 1);
    }
    const uint64_t end = 10 * kUs + calls * 10 * kUs;
    b.finalize(r, end, end + 5 * kUs);
  }
  b.close();
  // Site index 1 is app.c:200, 2 app.c:300 (TraceBuilder's definitions).
  const char* const line_of[] = {"", "app.c:200", "app.c:300"};
  for (const TimelineOptions& options : option_sets()) {
    auto tl = built(b.dir(), options);
    ASSERT_TRUE(tl);
    for (size_t row = 0; row < 2; ++row) {
      int seen = 0, markers = 0;
      for (const TimelineCall& c : tl->calls(row, 0, std::numeric_limits<double>::infinity())) {
        if (c.kind == TimelineKind::Marker) {
          EXPECT_EQ(tl->site(tl->call_site(c)), "app.c:100");
          ++markers;
          continue;
        }
        if (c.function != "MPI_Allreduce") continue;
        EXPECT_EQ(tl->site(tl->call_site(c)), line_of[(seen + row) % 3]) << "row " << row << " call " << seen;
        ++seen;
      }
      EXPECT_EQ(seen, calls);
      EXPECT_EQ(markers, 2 * ((calls + 6) / 7));
    }
  }
}

}  // namespace
}  // namespace prof::test
