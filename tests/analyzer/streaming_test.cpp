// The streaming pass gives the same answer whatever its windows and threads:
// tiny windows force messages, collectives and interval executions to be
// matched across many phases (pending receives, sends arriving later,
// instances completed by another worker, executions folded part by part).
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "prof/analysis/report.h"
#include "prof/trace_reader.h"
#include "trace_builder.h"

namespace prof::test {
namespace {

// Six ranks, 300 iterations: a ring exchange (blocking and Irecv/Wait), a
// world Allreduce, a reduction among the even ranks, nested intervals, rank
// clocks offset by whole microseconds, and a rank that stops early. Rank 1
// has a second thread whose calls overlap the first's (and an interval of its
// own now and then); rank 3 keeps a receive from rank 2 outstanding from the
// first iteration to the last, sent in the middle (it holds rank 3's waits
// back across every window in between).
void build(TraceBuilder& b) {
  constexpr int R = 6;
  const uint32_t evens = 0x84000020u;
  for (int r = 0; r < R; ++r) {
    if (r % 2 == 0) {
      trace::CommDef d;
      d.handle = evens;
      d.global_id = 900;
      d.ranks = {0, 2, 4};
      b.w(r).comm(d);
    }
    // Rank r's clock runs r * 7 us behind rank 0's.
    b.w(r).clock_sync({"init", 0, static_cast<double>(r * 7 * kUs), 100});
  }
  auto raw = [](int r, uint64_t global) { return global - static_cast<uint64_t>(r) * 7 * kUs; };
  std::vector<uint64_t> t(R, 1 * kMs);
  for (int r = 0; r < R; ++r) b.init(r, raw(r, 100 * kUs), raw(r, 1 * kMs));
  const int iterations = 300;
  for (int it = 0; it < iterations; ++it) {
    for (int r = 0; r < R; ++r) {
      if (r == 5 && it >= 250) continue;  // rank 5 is cut short
      const int right = (r + 1) % R, left = (r + R - 1) % R;
      uint64_t& now = t[static_cast<size_t>(r)];
      now += (1 + (it * 7 + r * 3) % 5) * 10 * kUs;
      b.begin(r, raw(r, now), 1, 1);
      const uint32_t rq = 0xAC000000u + static_cast<uint32_t>(it % 3);
      b.irecv(r, raw(r, now + 1 * kUs), raw(r, now + 2 * kUs), left, 3, rq);
      b.send(r, raw(r, now + 3 * kUs), raw(r, now + 5 * kUs), right, 3);
      b.wait(r, Wait, raw(r, now + 6 * kUs), raw(r, now + (20 + (it + r) % 7) * kUs),
             {TraceBuilder::done(rq, left, 3, 8)});
      b.begin(r, raw(r, now + 30 * kUs), 2, 2);
      b.collective(r, Allreduce, raw(r, now + (31 + r) * kUs), raw(r, now + 50 * kUs));
      if (r % 2 == 0)
        b.collective(r, Bcast, raw(r, now + (51 + r) * kUs), raw(r, now + 60 * kUs), evens);
      b.end(r, raw(r, now + 70 * kUs), 2, 2);
      b.end(r, raw(r, now + 80 * kUs), 1, 1);
      if (r == 1) {
        b.thread(r, 1);
        if (it % 4 == 0) b.begin(r, raw(r, now + 35 * kUs), 3, 3);
        b.other(r, CommRank, raw(r, now + 40 * kUs), raw(r, now + 55 * kUs));
        if (it % 4 == 0) b.end(r, raw(r, now + 90 * kUs), 3, 3);
        b.thread(r, 0);
      }
      if (r == 3 && it == 0) b.irecv(r, raw(r, now + 85 * kUs), raw(r, now + 86 * kUs), 2, 99, 0xAC0000FFu);
      if (r == 3 && it == iterations - 1)
        b.wait(r, Wait, raw(r, now + 85 * kUs), raw(r, now + 95 * kUs), {TraceBuilder::done(0xAC0000FFu, 2, 99, 8)});
      if (r == 2 && it == iterations / 2) b.send(r, raw(r, now + 85 * kUs), raw(r, now + 86 * kUs), 3, 99);
      now += 100 * kUs;
    }
  }
  for (int r = 0; r < R; ++r) {
    if (r == 5) {
      b.w(r).close_without_sealing();
      continue;
    }
    b.finalize(r, raw(r, t[static_cast<size_t>(r)] + 1 * kMs), raw(r, t[static_cast<size_t>(r)] + 2 * kMs));
    b.close(r);
  }
}

// The first line where two reports differ ("" when equal), with its number.
std::string first_difference(const std::string& got, const std::string& want) {
  std::istringstream g(got), w(want);
  std::string lg, lw;
  for (int n = 1;; ++n) {
    const bool more_g = static_cast<bool>(std::getline(g, lg));
    const bool more_w = static_cast<bool>(std::getline(w, lw));
    if (!more_g && !more_w) return "";
    if (lg != lw || more_g != more_w)
      return "line " + std::to_string(n) + ": got '" + lg + "', want '" + lw + "'";
  }
}

// Everything but the warnings' examples (which instances a worker happened to
// list first depends on how the work was split; their counts do not).
std::string report(analysis::Analysis a) {
  for (auto& w : a.warnings) w.examples.clear();
  std::ostringstream out;
  analysis::TextOptions o;
  o.functions = true;
  analysis::write_text_report(a, out, o);
  std::ostringstream json;
  analysis::write_json_report(a, json);
  return out.str() + json.str();
}

TEST(Streaming, SameReportWhateverTheWindowsAndThreads) {
  TraceBuilder b(6);
  build(b);
  analysis::Options whole;
  whole.threads = 1;
  whole.window_events = 1u << 30;  // one window
  const auto reference = analyze_checked(b.dir(), whole);
  ASSERT_TRUE(reference.usable());
  EXPECT_LT(reference.stats.windows, 10u);  // the pass, then a few to drain
  EXPECT_GT(reference.stats.messages_matched, 1000u);
  // Rank 5 stopped after 250 iterations: the last 50 Allreduces lack it.
  EXPECT_EQ(reference.stats.incomplete_collectives, 50u);
  const std::string want = report(reference);

  for (auto [threads, window] : {std::pair{2u, 1ull}, std::pair{3u, 7ull}, std::pair{6u, 100ull},
                                 std::pair{4u, 1000ull}}) {
    analysis::Options o;
    o.threads = threads;
    o.window_events = window;
    o.window_events_per_rank = 0;
    const auto a = analyze_checked(b.dir(), o);
    EXPECT_GT(a.stats.windows, 10u);
    const std::string got = report(a);
    EXPECT_EQ(first_difference(got, want), "")
        << threads << " threads, windows of " << window << " events";
  }
}

// With fewer file mappings allowed than ranks (prof::trace::set_mapping_budget),
// the analysis holds no more than its budget between phases (each rank's file
// is given back after its visit and mapped again at the next) and its report
// is the same, with one worker and with three.
TEST(Streaming, FewerMappingsThanRanksSameReport) {
  TraceBuilder b(6);
  build(b);
  analysis::Options o;
  o.window_events = 64;
  o.window_events_per_rank = 0;
  o.delay_analysis = true;
  const std::string want = report(analyze_checked(b.dir(), o));
  constexpr int kBudget = 2;
  trace::set_mapping_budget(kBudget);
  for (unsigned threads : {1u, 3u}) {
    o.threads = threads;
    int most = 0;
    size_t phases = 0;
    o.progress = [&](double, uint64_t) {  // between phases
      most = std::max(most, trace::mappings_held());
      ++phases;
    };
    const auto a = analyze_checked(b.dir(), o);
    EXPECT_GT(phases, 10u);
    EXPECT_LE(most, kBudget) << threads << " workers";
    EXPECT_EQ(first_difference(report(a), want), "") << threads << " workers";
  }
  trace::set_mapping_budget(0);
}

// PROF_ANALYZE_WORKER_STATS=1 says where each worker's time went, on stderr,
// and changes nothing in the report.
TEST(Streaming, WorkerStatsLeaveTheReportAlone) {
  TraceBuilder b(6);
  build(b);
  analysis::Options o;
  o.threads = 3;
  o.window_events = 100;
  o.window_events_per_rank = 0;
  const std::string want = report(analyze_checked(b.dir(), o));
  ::setenv("PROF_ANALYZE_WORKER_STATS", "1", 1);
  testing::internal::CaptureStderr();
  const auto a = analyze_checked(b.dir(), o);
  const std::string err = testing::internal::GetCapturedStderr();
  ::unsetenv("PROF_ANALYZE_WORKER_STATS");
  EXPECT_EQ(first_difference(report(a), want), "");
  EXPECT_NE(err.find("prof-analyze workers: 3, phases " + std::to_string(a.stats.windows)), std::string::npos)
      << err;
  for (int w = 0; w < 3; ++w)
    EXPECT_NE(err.find("  worker " + std::to_string(w) + ": ranks "), std::string::npos) << err;
}

TEST(Streaming, ProgressIsReportedAndEndsAtOne) {
  TraceBuilder b(6);
  build(b);
  analysis::Options o;
  o.window_events = 64;
  o.window_events_per_rank = 0;
  std::vector<double> seen;
  uint64_t last_events = 0;
  o.progress = [&](double f, uint64_t events) {
    seen.push_back(f);
    last_events = events;
  };
  const auto a = analyze_checked(b.dir(), o);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), 1.0);
  EXPECT_EQ(last_events, a.stats.events);
  for (double f : seen) {
    EXPECT_GE(f, 0.0);
    EXPECT_LE(f, 1.0);
  }
}

TEST(Streaming, CancelStopsTheAnalysis) {
  TraceBuilder b(6);
  build(b);
  analysis::Options o;
  o.window_events = 64;
  o.window_events_per_rank = 0;
  uint64_t asked = 0;
  o.cancelled = [&] { return ++asked >= 3; };
  const auto a = analysis::analyze(b.dir(), o);
  EXPECT_FALSE(a.usable());
  ASSERT_EQ(a.errors.size(), 1u);
  EXPECT_EQ(a.errors[0], "analysis cancelled");
  EXPECT_EQ(asked, 3u);  // not asked again once it said so
  // Never cancelled: the same analysis as without the question.
  o.cancelled = [] { return false; };
  EXPECT_TRUE(analysis::analyze(b.dir(), o).usable());
}

// A burst after a quiet stretch: the window, grown through the quiet
// phases, would take the whole burst at once (and the buffers of what
// waits for the next sweep grown to hold it), but each rank stops at the
// phase's events (Options::window_events), so a phase holds at most that
// many events a rank; the report is the one of a single window. Two ranks
// exchange blocking messages: 20 iterations 1 ms apart, a burst of 3,000
// iterations 2 us apart (6,000 events a rank), 20 more 1 ms apart.
TEST(Streaming, BurstStaysWithinThePhasesEventsARank) {
  constexpr int R = 2;
  TraceBuilder b(R);
  for (int r = 0; r < R; ++r) b.init(r, 100 * kUs, 1 * kMs);
  uint64_t now = 2 * kMs;
  auto iteration = [&](uint64_t step) {
    b.send(0, now, now + 1 * kUs / 4, 1, 1);
    b.recv(1, now, now + 1 * kUs / 2, 0, 1);
    b.send(1, now + 1 * kUs / 2, now + 3 * kUs / 4, 0, 2);
    b.recv(0, now + 1 * kUs / 2, now + 1 * kUs, 1, 2);
    now += step;
  };
  for (int i = 0; i < 20; ++i) iteration(1 * kMs);
  for (int i = 0; i < 3000; ++i) iteration(2 * kUs);
  for (int i = 0; i < 20; ++i) iteration(1 * kMs);
  for (int r = 0; r < R; ++r) b.finalize(r, now, now + 1 * kMs);
  b.close();

  analysis::Options whole;
  whole.threads = 1;
  whole.window_events = 1u << 30;
  const std::string want = report(analyze_checked(b.dir(), whole));
  constexpr uint64_t kPhase = 1024;  // (the least phase a rank stops at)
  for (unsigned threads : {1u, 2u}) {
    analysis::Options o;
    o.threads = threads;
    o.window_events = kPhase;
    o.window_events_per_rank = 0;
    uint64_t last = 0, most = 0;
    o.progress = [&](double, uint64_t events) {  // after each phase, the events so far
      most = std::max(most, events - last);
      last = events;
    };
    const auto a = analyze_checked(b.dir(), o);
    EXPECT_LE(most, R * kPhase) << threads << " workers";
    EXPECT_GT(most, kPhase) << threads << " workers";  // (the burst filled both ranks' parts)
    EXPECT_EQ(first_difference(report(a), want), "") << threads << " workers";
  }
}

// A rank that sends on more channels than its sender's cache of channels
// holds (Rank::sent_cache: four, by destination and tag) and receives on
// channels that share the receiver's cache slots, with a rank missing from
// the trace among the partners: every message still meets its own
// channel's. Rank 0 sends on 18 channels in turn (ranks 1, 2 and the
// missing 3, tags 0-5); ranks 1 and 2 each receive every send 5 us before it
// starts (a 5 us wait when matched with its own send; another send of the
// rotation starts 20 us or more away), then a message from the missing rank.
// With one worker and with several (sends reaching another worker's ranks
// through the phase's mail), in windows of a few events.
TEST(Streaming, ChannelsBeyondTheCachesMatchTheirOwnMessages) {
  TraceBuilder b(4);
  constexpr int kRounds = 20, kTags = 6;
  for (int r = 0; r < 3; ++r) b.init(r, 100 * kUs, 1 * kMs);
  for (int k = 0; k < kRounds; ++k)
    for (int t = 0; t < kTags; ++t)
      for (int d = 1; d <= 3; ++d) {
        const uint64_t start = 2 * kMs + static_cast<uint64_t>(((k * kTags + t) * 3 + d - 1) * 20) * kUs;
        b.send(0, start, start + 1 * kUs, d, t);
        if (d == 3) continue;
        b.recv(d, start - 5 * kUs, start + 2 * kUs, 0, t);
        b.recv(d, start + 5 * kUs, start + 6 * kUs, 3, t);
      }
  const uint64_t end = 2 * kMs + static_cast<uint64_t>(kRounds * kTags * 3 * 20) * kUs;
  for (int r = 0; r < 3; ++r) b.finalize(r, end, end + 1 * kMs);
  b.close();
  std::filesystem::remove(b.path(3));

  constexpr uint64_t kMessages = kRounds * kTags;  // per destination
  for (auto [threads, window] : {std::pair{1u, 1ull << 30}, std::pair{1u, 5ull}, std::pair{2u, 7ull},
                                 std::pair{3u, 3ull}}) {
    analysis::Options o;
    o.threads = threads;
    o.window_events = window;
    o.window_events_per_rank = 0;
    const auto a = analyze_checked(b.dir(), o);
    ASSERT_TRUE(a.usable());
    const std::string where = std::to_string(threads) + " threads, windows of " + std::to_string(window);
    EXPECT_EQ(a.stats.messages_matched, 2 * kMessages) << where;
    EXPECT_EQ(a.stats.unmatched_sends, kMessages) << where;         // 0 -> 3
    EXPECT_EQ(a.stats.unmatched_receives, 2 * kMessages) << where;  // 1 and 2 <- 3
    for (const auto& f : a.intervals[0].per_rank) {
      if (f.rank != 1 && f.rank != 2) continue;
      EXPECT_NEAR(f.potential_sync, static_cast<double>(kMessages) * 5e-6, kTol) << where << ", rank " << f.rank;
    }
  }
}

}  // namespace
}  // namespace prof::test
