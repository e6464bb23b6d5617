// InstantSets (analyzer/src/instants.h) fed the way the engine feeds it:
// spans arriving as several ascending runs per lane (one per owner or sending
// worker), in order of start, backwards, with ties, swept in batches. Times
// are whole numbers, so every sum is exact and the credits must equal a
// brute-force count, instant by instant, of which unions cover each unit of time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "instants.h"

namespace prof::analysis::detail {
namespace {

struct TestSpan {
  double from, to;
  SpanKind kind;
  SpanLane lane;
};
struct ContextChange {
  double t;
  uint32_t context;
};
using Credits = std::map<std::pair<uint32_t, int>, double>;  // (context, level) -> length

// Each unit [t, t+1) counts once per level whose union covers it: levels 0-3
// nested (kinds up to the level), 4 and 5 their own kind; to the context in force.
Credits brute_force(const std::vector<TestSpan>& spans, const std::vector<ContextChange>& contexts,
                    int horizon) {
  Credits out;
  for (int t = 0; t < horizon; ++t) {
    uint32_t context = kNoContext;
    for (const ContextChange& c : contexts)
      if (c.t <= t) context = c.context;
    if (context == kNoContext) continue;
    for (int level = 0; level < kLevels; ++level) {
      bool covered = false;
      for (const TestSpan& s : spans) {
        const bool counts = level <= kAllToAllCallSpan ? s.kind <= level : s.kind == level;
        covered = covered || (counts && s.from <= t && t + 1 <= s.to);
      }
      if (covered) out[{context, level}] += 1;
    }
  }
  return out;
}

// Adds the spans batch by batch (each batch's spans start at or after the
// previous watermark, as the engine guarantees) and sweeps to each watermark.
Credits swept(const std::vector<std::vector<TestSpan>>& batches, const std::vector<double>& watermarks,
              const std::vector<ContextChange>& contexts) {
  InstantSets sets;
  for (const ContextChange& c : contexts) sets.set_context(c.t, c.context);
  Credits out;
  auto credit = [&](uint32_t context, const Instant* length, int levels) {
    for (int level = 0; level < levels; ++level)
      if (length[level] > 0) out[{context, level}] += instant_ns(length[level]);
  };
  for (size_t b = 0; b < batches.size(); ++b) {
    for (const TestSpan& s : batches[b]) sets.add(s.from, s.to, s.kind, s.lane);
    sets.sweep(watermarks[b], credit);
  }
  sets.sweep(std::numeric_limits<double>::infinity(), credit);
  return out;
}

const std::vector<ContextChange> kContexts = {{0, 0}, {130, 1}, {260, kNoContext}, {300, 2}, {450, 0}};

// Spans with whole-number ends in [lo, hi), random kinds; non-overlapping
// spans of one kind in a row would be merged by add(), which is fine too.
std::vector<TestSpan> random_spans(std::mt19937& rng, int lo, int hi, size_t n, SpanLane lane) {
  std::uniform_int_distribution<int> start(lo, hi - 1), length(0, 25), kind(0, kSpanKinds - 1);
  std::vector<TestSpan> v;
  for (size_t i = 0; i < n; ++i) {
    const int from = start(rng);
    v.push_back(TestSpan{double(from), double(from + length(rng)), SpanKind(kind(rng)), lane});
  }
  return v;
}

// The order of arrival: `runs` ascending runs, span i going to run i mod runs
// (owners taking instances in turn), runs concatenated.
std::vector<TestSpan> as_runs(std::vector<TestSpan> v, size_t runs) {
  std::stable_sort(v.begin(), v.end(), [](const TestSpan& a, const TestSpan& b) { return a.from < b.from; });
  std::vector<TestSpan> out;
  for (size_t r = 0; r < runs; ++r)
    for (size_t i = r; i < v.size(); i += runs) out.push_back(v[i]);
  return out;
}

void expect_equal(const Credits& got, const Credits& want) {
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [key, length] : want) {
    auto it = got.find(key);
    ASSERT_NE(it, got.end()) << "context " << key.first << " level " << key.second;
    EXPECT_EQ(it->second, length) << "context " << key.first << " level " << key.second;
  }
}

// A time in the sets: to the nearest 2^-10 ns (ties to even); beyond the
// range (+-2^62 units, about 52 days), infinite or NaN, at the range's ends,
// so that no difference of two can overflow whatever a damaged trace holds.
TEST(Instants, TimesRoundToTheUnitAndStayInsideTheRange) {
  EXPECT_EQ(to_instant(0.0), 0);
  EXPECT_EQ(to_instant(1.0), 1024);
  EXPECT_EQ(to_instant(-1.0), -1024);
  EXPECT_EQ(to_instant(0.385187261371), 394);  // 394.43 units
  EXPECT_EQ(to_instant(0.5 / 1024), 0);        // a tie: to even
  EXPECT_EQ(to_instant(1.5 / 1024), 2);
  const double end_ns = static_cast<double>(kInstantMax) / kInstantsPerNs;
  EXPECT_EQ(to_instant(end_ns), kInstantMax);
  EXPECT_EQ(to_instant(-end_ns), kInstantMin);
  EXPECT_EQ(to_instant(end_ns / 2), kInstantMax / 2);
  for (double beyond : {end_ns * 1.0000001, 1e300, std::numeric_limits<double>::max(),
                        std::numeric_limits<double>::infinity()}) {
    EXPECT_EQ(to_instant(beyond), kInstantMax) << beyond;
    EXPECT_EQ(to_instant(-beyond), kInstantMin) << -beyond;
  }
  EXPECT_EQ(to_instant(std::numeric_limits<double>::quiet_NaN()), kInstantMin);
  // Every difference of two fits.
  EXPECT_GT(kInstantMax - kInstantMin, 0);
  EXPECT_EQ(instant_ns(to_instant(123456.75)), 123456.75);
}

// A time cut to a window in one step (to_instant_within: the cut made on the
// double, as the sets add spans) is the time as to_instant() gives it, then
// cut to the window's ends as integers: around the ends, at ties, beyond the
// range, infinite and NaN, for windows of every scale, and at random.
TEST(Instants, TheCutOnTheDoubleIsTheCutOfTheInteger) {
  const double end_ns = static_cast<double>(kInstantMax) / kInstantsPerNs;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::pair<double, double>> windows = {
      {-inf, inf}, {0.0, 1.0}, {1.5 / 1024, 2.5 / 1024}, {123.4567, 123.4568}, {1e9, 1e9 + 0.3},
      {1e13, 2e13}, {-end_ns, end_ns}, {end_ns / 2, end_ns * 2}, {-1e300, -1e200}, {5.0, 5.0}, {7.0, 3.0}};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-12, 16);
  const auto random_ns = [&] { return std::pow(10.0, exponent(rng)) * (rng() % 2 ? 1 : -1); };
  for (int i = 0; i < 200; ++i) {
    double lo = random_ns(), hi = random_ns();
    if (lo > hi) std::swap(lo, hi);
    windows.emplace_back(lo, hi);
  }
  for (const auto& [lo_ns, hi_ns] : windows) {
    const Instant lo = to_instant(lo_ns), hi = to_instant(hi_ns);
    const double lo_units = static_cast<double>(lo), hi_units = static_cast<double>(hi);
    ASSERT_EQ(static_cast<Instant>(lo_units), lo) << lo_ns;  // each end a double exactly
    ASSERT_EQ(static_cast<Instant>(hi_units), hi) << hi_ns;
    std::vector<double> times = {lo_ns, hi_ns, std::nextafter(lo_ns, -inf), std::nextafter(lo_ns, inf),
                                 std::nextafter(hi_ns, -inf), std::nextafter(hi_ns, inf), lo_units / kInstantsPerNs,
                                 hi_units / kInstantsPerNs, (lo_units + 0.5) / kInstantsPerNs,
                                 (hi_units - 0.5) / kInstantsPerNs, 0.0, -0.0, 0.5 / 1024, 1.5 / 1024, end_ns,
                                 -end_ns, end_ns * 1.0000001, 1e300, -1e300, inf, -inf, nan};
    for (int k = 0; k < 50; ++k) times.push_back(random_ns());
    if (std::isfinite(lo_ns) && std::isfinite(hi_ns))
      for (int k = 0; k < 50; ++k) times.push_back(lo_ns + (hi_ns - lo_ns) * static_cast<double>(rng() % 1001) / 1000);
    for (double t : times) {
      // (A window whose ends cross cuts everything to its high end, as
      // min(max(x, lo), hi) does.)
      const Instant integer_cut = std::min(std::max(to_instant(t), lo), hi);
      EXPECT_EQ(to_instant_within(t, lo_units, hi_units), integer_cut)
          << "time " << t << " ns, window [" << lo_ns << ", " << hi_ns << "] ns";
    }
  }
}

TEST(InstantSets, SpansArrivingAsInterleavedRunsCountLikeBruteForce) {
  for (size_t runs : {1, 2, 3, 7}) {
    std::mt19937 rng(static_cast<unsigned>(runs));
    std::vector<std::vector<TestSpan>> batches;
    std::vector<double> watermarks;
    std::vector<TestSpan> all;
    for (int b = 0; b < 5; ++b) {
      const int lo = b * 100, hi = lo + 100;
      std::vector<TestSpan> batch;
      for (SpanLane lane : {kDecodeLane, kMatchLane, kCollectiveLane}) {
        auto v = as_runs(random_spans(rng, lo, hi, 40, lane), lane == kDecodeLane ? 1 : runs);
        batch.insert(batch.end(), v.begin(), v.end());
      }
      all.insert(all.end(), batch.begin(), batch.end());
      batches.push_back(batch);
      watermarks.push_back(hi);  // later batches start at or after it
    }
    SCOPED_TRACE("runs " + std::to_string(runs));
    expect_equal(swept(batches, watermarks, kContexts), brute_force(all, kContexts, 600));
  }
}

TEST(InstantSets, SpansArrivingBackwardsWithTiesCountLikeBruteForce) {
  // Every span a run of its own (descending starts), many equal starts, and a
  // wait and a call span starting together as a receive or collective gives them.
  std::vector<TestSpan> batch;
  for (int i = 60; i-- > 0;) {
    const double from = 5.0 * (i / 3);
    batch.push_back(TestSpan{from, from + 7, kWaitSpan, kCollectiveLane});
    batch.push_back(TestSpan{from, from + 11 + i % 5, kCollCallSpan, kCollectiveLane});
    batch.push_back(TestSpan{from + 1, from + 4, kRecvCallSpan, kMatchLane});
  }
  expect_equal(swept({batch}, {std::numeric_limits<double>::infinity()}, kContexts),
               brute_force(batch, kContexts, 600));
}

TEST(InstantSets, SweepsCutThroughSpansOfSeveralRuns) {
  // Watermarks in the middle of the runs: the part after each stays for the
  // next sweep (long spans cross several).
  std::mt19937 rng(11);
  std::vector<TestSpan> first = as_runs(random_spans(rng, 0, 300, 120, kCollectiveLane), 2);
  for (TestSpan& s : first) s.to += 60;
  std::vector<TestSpan> second = as_runs(random_spans(rng, 150, 500, 120, kMatchLane), 3);
  std::vector<TestSpan> all = first;
  all.insert(all.end(), second.begin(), second.end());
  expect_equal(swept({first, second, {}}, {150, 320, 410}, kContexts), brute_force(all, kContexts, 600));
}

TEST(HoldQueue, OldestIsTheEarliestHoldNotReleasedWhateverTheOrderOfReleases) {
  // Holds made in time order and released in random order, a few hundred in
  // flight at once (the ring grows and wraps); releasing a token twice, one
  // already passed, or kNone changes nothing. A rank's watermark is oldest().
  std::mt19937 rng(5);
  HoldQueue holds;
  std::vector<std::pair<uint64_t, double>> open;  // (token, time), made in order
  std::vector<uint64_t> released;
  double t = 0;
  for (int step = 0; step < 20000; ++step) {
    const bool add = open.size() < 300 && (open.empty() || rng() % 100 < 52);
    if (add) {
      t += 1 + rng() % 3;
      open.emplace_back(holds.add(t), t);
    } else {
      const size_t i = rng() % open.size();
      holds.release(open[i].first);
      released.push_back(open[i].first);
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
      if (rng() % 4 == 0) holds.release(released[rng() % released.size()]);
      if (rng() % 8 == 0) holds.release(HoldQueue::kNone);
    }
    const double expected = open.empty() ? std::numeric_limits<double>::infinity() : open.front().second;
    ASSERT_EQ(holds.oldest(), expected) << "step " << step;
  }
}

TEST(HoldQueue, APayloadAndItsMarksLastExactlyAsLongAsTheirHold) {
  // The sends' holds carry what is known of each one's late receiver: a few
  // hundred in flight, released in random order while the ring grows and
  // wraps, a std::map says which are in force and what each carries. A
  // released hold (and kNone) has no state; one in force keeps its payload
  // and marks wherever the ring moved it.
  struct Carried {
    double value;
    int32_t id;
  };
  std::mt19937 rng(9);
  BasicHoldQueue<Carried> holds;
  std::map<uint64_t, std::pair<Carried, uint8_t>> live;
  std::vector<uint64_t> released;
  double t = 0;
  for (int step = 0; step < 20000; ++step) {
    if (live.size() < 300 && (live.empty() || rng() % 100 < 52)) {
      const uint64_t token = holds.add(t += 1);
      uint8_t* state = holds.state(token);
      ASSERT_NE(state, nullptr);
      ASSERT_EQ(*state, 0);
      const Carried c{t * 0.5, step};
      holds.payload(token) = c;
      const uint8_t mark = static_cast<uint8_t>(rng() % 2 ? 2 : 4);
      *state |= mark;
      live[token] = {c, mark};
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<std::ptrdiff_t>(rng() % live.size()));
      holds.release(it->first);
      released.push_back(it->first);
      live.erase(it);
    }
    for (const auto& [token, want] : live) {
      const uint8_t* state = holds.state(token);
      ASSERT_NE(state, nullptr) << "step " << step << " token " << token;
      ASSERT_EQ(*state, want.second);
      ASSERT_EQ(holds.payload(token).value, want.first.value);
      ASSERT_EQ(holds.payload(token).id, want.first.id);
    }
    if (!released.empty()) {
      ASSERT_EQ(holds.state(released[rng() % released.size()]), nullptr);
    }
    ASSERT_EQ(holds.state(HoldQueue::kNone), nullptr);
    ASSERT_EQ(holds.oldest(), live.empty() ? std::numeric_limits<double>::infinity()
                                           : static_cast<double>(live.begin()->first + 1));
  }
}

}  // namespace
}  // namespace prof::analysis::detail
