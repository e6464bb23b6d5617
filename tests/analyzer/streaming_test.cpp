// The streaming pass gives the same answer whatever its windows and threads:
// tiny windows force messages, collectives and interval executions to be
// matched across many phases (pending receives, sends arriving later,
// instances completed by another worker, executions folded part by part).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "prof/analysis/report.h"
#include "prof/trace_reader.h"
#include "file_bytes.h"
#include "mixed_workload.h"
#include "phase_log.h"
#include "trace_builder.h"

namespace prof::test {
namespace {

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
// (The JSON report prints the wait states: without them, the text alone.)
std::string report(analysis::Analysis a) {
  for (auto& w : a.warnings) w.examples.clear();
  std::ostringstream out;
  analysis::TextOptions o;
  o.functions = true;
  analysis::write_text_report(a, out, o);
  if (!a.waits_known) return out.str();
  std::ostringstream json;
  analysis::write_json_report(a, json);
  return out.str() + json.str();
}

// With the wait states and without them (prof-analyze's text report alone):
// the workers hand each other sends of another form then (BareSendRec).
// (Without them, without the root causes too, which take each wait.)
void expect_same_report_whatever_the_windows_and_threads(TickRate rate) {
  TraceBuilder b(6, 42, true, 1u << 20, format::kFormatVersion, rate);
  build_mixed_workload(b);
  const auto checked_analysis = [&](const std::string& dir, const analysis::Options& o) {
    if (o.wait_states) return analyze_checked(dir, o);
    analysis::Analysis a = analysis::analyze(dir, o);
    expect_invariants(a);
    return a;
  };
  for (bool wait_states : {true, false}) {
    analysis::Options whole;
    whole.threads = 1;
    whole.window_events = 1u << 30;  // one window
    whole.wait_states = wait_states;
    const auto reference = checked_analysis(b.dir(), whole);
    ASSERT_TRUE(reference.usable());
    EXPECT_EQ(reference.waits_known, wait_states);
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
      o.wait_states = wait_states;
      const auto a = checked_analysis(b.dir(), o);
      EXPECT_GT(a.stats.windows, 10u);
      const std::string got = report(a);
      EXPECT_EQ(first_difference(got, want), "")
          << threads << " threads, windows of " << window << " events, wait states " << wait_states;
    }
  }
}

TEST(Streaming, SameReportWhateverTheWindowsAndThreads) {
  expect_same_report_whatever_the_windows_and_threads(TickRate{});
}

// The same to the last bit where times are fractional ns, as a TSC's are:
// each figure's terms are summed in an order that depends on the trace alone
// (the collective results' exit spreads, for one, arrive from their
// instances' owners in an order that depends on the workers and phases).
TEST(Streaming, SameReportWhateverTheWindowsAndThreadsOnATscClock) {
  expect_same_report_whatever_the_windows_and_threads(kTscRate);
}

// Three ranks on a TSC's clock, 3000 iterations: rank 0 waits on rank 1 in
// receives and in Allreduces that rank 1 enters last, and its waits add up
// to about a second (so their sums are not exact).
void build_waits_on_one_partner(TraceBuilder& b) {
  for (int r = 0; r < 3; ++r) {
    b.init(r, 0, 1 * kMs);
    uint64_t now = 1 * kMs;
    for (int it = 0; it < 3000; ++it) {
      const uint64_t jitter = static_cast<uint64_t>((it * 37 + r * 11) % 97) * 1013;
      if (r == 0) {
        b.begin(r, now, 1, 1);
        b.irecv(r, now + 1000, now + 2000, 1, 7, 0xAC000001u);
        b.collective(r, Allreduce, now + 3000, now + 400 * kUs + jitter);
        b.wait(r, Wait, now + 401 * kUs + jitter, now + 700 * kUs + jitter,
               {TraceBuilder::done(0xAC000001u, 1, 7, 8)});
        b.end(r, now + 800 * kUs, 1, 1);
      } else if (r == 1) {
        b.collective(r, Allreduce, now + 300 * kUs + jitter, now + 400 * kUs + jitter);
        b.send(r, now + 600 * kUs + jitter, now + 601 * kUs + jitter, 0, 7);
      } else {
        b.collective(r, Allreduce, now + 5000 + jitter, now + 400 * kUs);
      }
      now += 1 * kMs;
    }
    b.finalize(r, now + 1 * kMs, now + 2 * kMs);
    b.close(r);
  }
}

// Each interval's waits by partner, to the last bit, whatever the windows
// and workers: the waits reach a rank as their receives are matched and
// their collectives' results arrive, in an order that depends on both.
TEST(Streaming, WaitsByPartnerOnATscClockWhateverTheWindowsAndThreads) {
  TraceBuilder b(3, 42, true, 1u << 20, format::kFormatVersion, kTscRate);
  build_waits_on_one_partner(b);
  auto partners = [](const analysis::Analysis& a) {
    std::ostringstream out;
    out.precision(17);
    for (const auto& node : a.intervals)
      for (const auto& p : node.waited_for) out << p.rank << ' ' << p.seconds << ' ' << p.uncertain_seconds << '\n';
    return out.str();
  };
  analysis::Options whole;
  whole.threads = 1;
  whole.window_events = 1u << 30;
  const std::string want = partners(analyze_checked(b.dir(), whole));
  ASSERT_NE(want, "");
  for (auto [threads, window] : {std::pair{1u, 500ull}, std::pair{2u, 500ull}, std::pair{3u, 50ull}}) {
    analysis::Options o;
    o.threads = threads;
    o.window_events = window;
    o.window_events_per_rank = 0;
    EXPECT_EQ(partners(analyze_checked(b.dir(), o)), want) << threads << " threads, windows of " << window;
  }
}

// The whole report on the same trace, to the last bit: each sweep stops at
// the watermark of its phase, cuts the pieces that cross it and credits what
// it gathered when it ends, so other stops add the same lengths in other
// groups; the sums are exact (instants.h, Instant), so the groups do not
// matter. (In doubles, SendRecv was 0.11558622340287507 s with one window
// and 0.1155862234028752 s with windows of 500 events.)
TEST(Streaming, SweepsOnATscClockSameReportWhateverTheWindowsAndThreads) {
  TraceBuilder b(3, 42, true, 1u << 20, format::kFormatVersion, kTscRate);
  build_waits_on_one_partner(b);
  analysis::Options whole;
  whole.threads = 1;
  whole.window_events = 1u << 30;
  const std::string want = report(analyze_checked(b.dir(), whole));
  for (unsigned threads : {1u, 2u, 3u}) {
    analysis::Options o;
    o.threads = threads;
    o.window_events = 500;
    o.window_events_per_rank = 0;
    EXPECT_EQ(first_difference(report(analyze_checked(b.dir(), o)), want), "") << threads << " threads";
  }
}

// With fewer file mappings allowed than ranks (prof::trace::set_mapping_budget),
// the analysis holds no more than its budget between phases (each rank's file
// is given back after its visit and mapped again at the next) and its report
// is the same, with one worker and with three.
TEST(Streaming, FewerMappingsThanRanksSameReport) {
  TraceBuilder b(6);
  build_mixed_workload(b);
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

// Three workers and phases of about 100 events: many phases on a small trace.
analysis::Options three_workers_short_phases() {
  analysis::Options o;
  o.threads = 3;
  o.window_events = 100;
  o.window_events_per_rank = 0;
  return o;
}

// The analysis with the environment variable `name` set to `value`, and what
// it said on stderr.
analysis::Analysis analyze_with_setting(const std::string& dir, const analysis::Options& o, const char* name,
                                        const std::string& value, std::string* err) {
  ::setenv(name, value.c_str(), 1);
  testing::internal::CaptureStderr();
  auto a = analyze_checked(dir, o);
  *err = testing::internal::GetCapturedStderr();
  ::unsetenv(name);
  return a;
}

// PROF_ANALYZE_WORKER_STATS=1 says where each worker's time went, on stderr,
// and changes nothing in the report.
TEST(Streaming, WorkerStatsLeaveTheReportAlone) {
  TraceBuilder b(6);
  build_mixed_workload(b);
  const analysis::Options o = three_workers_short_phases();
  const std::string want = report(analyze_checked(b.dir(), o));
  std::string err;
  const auto a = analyze_with_setting(b.dir(), o, "PROF_ANALYZE_WORKER_STATS", "1", &err);
  EXPECT_EQ(first_difference(report(a), want), "");
  EXPECT_NE(err.find("prof-analyze workers: 3, phases " + std::to_string(a.stats.windows)), std::string::npos)
      << err;
  // Each worker's line, then where its busy time went: its stages, and its
  // decoding by rank, one figure for each of its ranks in the order visited
  // (the blocks are contiguous: together the trace's ranks in order).
  std::vector<int> ranks_listed;
  for (int w = 0; w < 3; ++w) {
    const size_t at = err.find("  worker " + std::to_string(w) + ": ranks ");
    ASSERT_NE(at, std::string::npos) << err;
    const size_t line_end = err.find('\n', at);
    ASSERT_NE(line_end, std::string::npos) << err;
    const size_t stage_end = err.find('\n', line_end + 1);
    const std::string stages = err.substr(line_end + 1, stage_end - line_end - 1);
    EXPECT_EQ(stages.rfind("    of it: first steps ", 0), 0u) << stages;
    EXPECT_NE(stages.find(" s, decoding "), std::string::npos) << stages;
    EXPECT_NE(stages.find(" s, settling "), std::string::npos) << stages;
    const std::string by_rank = "; decoding by rank, as visited:";
    const size_t list = stages.find(by_rank);
    ASSERT_NE(list, std::string::npos) << stages;
    std::istringstream figures(stages.substr(list + by_rank.size()));
    int rank;
    double seconds;
    std::string unit;
    int listed = 0;
    while (figures >> rank >> seconds >> unit) {
      EXPECT_EQ(unit, "s") << stages;
      EXPECT_GE(seconds, 0.0) << stages;
      ranks_listed.push_back(rank);
      ++listed;
    }
    const std::string ranks_field = ": ranks ";
    EXPECT_EQ(listed, std::stoi(err.substr(err.find(ranks_field, at) + ranks_field.size())))
        << "worker " << w << ": " << err.substr(at, line_end - at);
  }
  EXPECT_EQ(ranks_listed, (std::vector<int>{0, 1, 2, 3, 4, 5})) << err;
}

// PROF_ANALYZE_PHASE_LOG=FILE writes one line a phase and worker: every
// phase of every worker, and their events add up to the analysis's. Of a
// phase's busy time, the wait for the other workers' first steps is its own
// column: within the phase, and none with one worker.
TEST(Streaming, PhaseLogHasEveryPhaseOfEveryWorker) {
  TraceBuilder b(6);
  build_mixed_workload(b);
  const analysis::Options o = three_workers_short_phases();
  const std::string want = report(analyze_checked(b.dir(), o));
  const std::string log = b.dir() + "/phases.txt";
  std::string err;
  const auto a = analyze_with_setting(b.dir(), o, "PROF_ANALYZE_PHASE_LOG", log, &err);
  EXPECT_EQ(first_difference(report(a), want), "");
  ASSERT_TRUE(std::filesystem::exists(log)) << log;
  const std::string text = file_bytes(log);
  EXPECT_EQ(text.substr(0, text.find('\n')), kPhaseLogHeader);
  std::vector<uint64_t> lines_of(3, 0);
  uint64_t events = 0;
  const std::vector<PhaseLine> lines = phase_lines(text);
  for (const PhaseLine& p : lines) {
    ASSERT_LT(p.worker, 3u) << "phase " << p.phase;
    EXPECT_EQ(p.phase, lines_of[p.worker]++) << "worker " << p.worker;
    EXPECT_LE(p.handover_ns, p.busy_ns) << "phase " << p.phase << ", worker " << p.worker;
    events += p.events;
  }
  EXPECT_GT(a.stats.windows, 1u);
  for (uint64_t n : lines_of) EXPECT_EQ(n, a.stats.windows);
  EXPECT_EQ(lines.size(), 3 * a.stats.windows);
  EXPECT_EQ(events, a.stats.events);

  analysis::Options one = o;
  one.threads = 1;
  const auto alone = analyze_with_setting(b.dir(), one, "PROF_ANALYZE_PHASE_LOG", log, &err);
  EXPECT_EQ(first_difference(report(alone), want), "");
  const std::vector<PhaseLine> alone_lines = phase_lines(file_bytes(log));
  EXPECT_EQ(alone_lines.size(), alone.stats.windows);
  for (const PhaseLine& p : alone_lines) {
    EXPECT_EQ(p.worker, 0u);
    EXPECT_EQ(p.handover_ns, 0u) << "phase " << p.phase;
  }

  // A file that cannot be written is named on stderr; the report stays.
  const std::string nowhere = b.dir() + "/no-such-directory/phases.txt";
  const auto unlogged = analyze_with_setting(b.dir(), o, "PROF_ANALYZE_PHASE_LOG", nowhere, &err);
  EXPECT_EQ(first_difference(report(unlogged), want), "");
  EXPECT_NE(err.find("cannot write the phase log " + nowhere + ": No such file or directory"), std::string::npos)
      << err;
}

TEST(Streaming, ProgressIsReportedAndEndsAtOne) {
  TraceBuilder b(6);
  build_mixed_workload(b);
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
  build_mixed_workload(b);
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

// Past 64 ranks each collective result waits in its member's queue until the
// rank settles, and from Options::stream_results_ranks ranks on it is written
// there with streaming stores: the same report either way, with one worker
// and with several (whose results cross workers in mailboxes first), with the
// wait states and the root causes. (96 ranks in lock-step: a ring of
// blocking messages, late senders among them, then an Allreduce and a Bcast
// from rank 0 that members enter at different times, in an interval.)
TEST(Streaming, StreamedCollectiveResultsSameReport) {
  constexpr int R = 96, kIterations = 40;
  TraceBuilder b(R);
  for (int r = 0; r < R; ++r) b.init(r, 100 * kUs, 1 * kMs);
  uint64_t now = 1 * kMs;
  std::vector<uint64_t> start(R), recv_leave(R), allreduce_enter(R);
  for (int it = 0; it < kIterations; ++it) {
    for (int r = 0; r < R; ++r) start[static_cast<size_t>(r)] = now + static_cast<uint64_t>((it * 7 + r * 3) % 5) * 10 * kUs;
    for (int r = 0; r < R; ++r) {
      const int right = (r + 1) % R, left = (r + R - 1) % R;
      const uint64_t s = start[static_cast<size_t>(r)];
      b.begin(r, s, 1, 1);
      b.send(r, s + 1 * kUs, s + 2 * kUs, right, 3);
      // (It ends once its sender's send has entered.)
      recv_leave[static_cast<size_t>(r)] = std::max(s + 3 * kUs, start[static_cast<size_t>(left)] + 1 * kUs) + 2 * kUs;
      b.recv(r, s + 3 * kUs, recv_leave[static_cast<size_t>(r)], left, 3);
      allreduce_enter[static_cast<size_t>(r)] =
          recv_leave[static_cast<size_t>(r)] + static_cast<uint64_t>(1 + (r * 5 + it) % 13) * kUs;
    }
    const uint64_t last = *std::max_element(allreduce_enter.begin(), allreduce_enter.end());
    const uint64_t root_enter = last + 20 * kUs;  // rank 0 enters the Bcast late
    for (int r = 0; r < R; ++r) {
      b.collective(r, Allreduce, allreduce_enter[static_cast<size_t>(r)], last + 5 * kUs);
      const uint64_t bcast_enter = r == 0 ? root_enter : last + static_cast<uint64_t>(6 + (r + it) % 7) * kUs;
      b.collective(r, Bcast, bcast_enter, root_enter + 10 * kUs);
      b.end(r, root_enter + 12 * kUs, 1, 1);
    }
    now = root_enter + 100 * kUs;
  }
  for (int r = 0; r < R; ++r) b.finalize(r, now + 1 * kMs, now + 2 * kMs);
  b.close();

  analysis::Options plain;
  plain.wait_states = true;
  plain.stream_results_ranks = 0;  // never streamed
  const auto reference = analyze_checked(b.dir(), plain);
  ASSERT_TRUE(reference.usable());
  EXPECT_EQ(reference.stats.collective_instances, 2u * kIterations);
  EXPECT_EQ(reference.stats.incomplete_collectives, 0u);
  EXPECT_EQ(reference.stats.messages_matched, static_cast<uint64_t>(R) * kIterations);
  const std::string want = report(reference);
  for (unsigned threads : {1u, 3u}) {
    analysis::Options o;
    o.threads = threads;
    o.wait_states = true;
    o.stream_results_ranks = R;  // streamed from this trace's ranks on
    o.window_events = 1000;
    o.window_events_per_rank = 0;
    const auto a = analyze_checked(b.dir(), o);
    EXPECT_GT(a.stats.windows, 10u);
    EXPECT_EQ(first_difference(report(a), want), "") << threads << " workers";
  }
}

}  // namespace
}  // namespace prof::test
