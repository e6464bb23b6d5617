// --window served by the window index (docs/trace-format.md, "The window
// index"): it decodes only the chunks near the window, and its report is the
// report of the window decoded from the trace's start, exactly, with
// messages, nonblocking receives, persistent requests, collectives and
// interval executions straddling both edges. A stale or corrupt index is
// rebuilt, and a trace it cannot serve is decoded whole, saying so. A whole
// analysis writes the index a window then uses; where the trace directory
// cannot be written, the index goes to the user's cache directory.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "prof/analysis/report.h"
#include "prof/crc32c.h"
#include "file_bytes.h"
#include "trace_builder.h"
#include "window_index.h"
#include "window_traces.h"

namespace prof::test {
namespace {

constexpr uint64_t kStep = 200 * kUs;
constexpr int kRanks = 3;

// Deterministic jitter in [0, 30) us of rank r at step s.
uint64_t jitter(int r, int s) {
  uint64_t x = static_cast<uint64_t>(s) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(r) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return x % (30 * kUs);
}

// Three ranks, `steps` steps of 200 us. Every step: interval 2 (nested in
// interval 1, which closes every 40 steps), a ring of blocking messages with
// late senders; every 5th step an Irecv completed by a Wait 17 steps later
// (its Isend 3 steps after the Irecv); every 3rd step persistent send and
// receive (created before the first step) started and waited; every 7th step
// an Allreduce. Small chunks: a run of ~120 ms spans dozens of chunks a rank.
void build(TraceBuilder& b, int steps) {
  const uint32_t persistent_send = 0xac000000u, persistent_recv = 0xac000001u;
  auto base = [](int s) { return 2 * kMs + static_cast<uint64_t>(s) * kStep; };
  for (int r = 0; r < kRanks; ++r) {
    const int next = (r + 1) % kRanks, prev = (r + kRanks - 1) % kRanks;
    b.init(r, 0, 1 * kMs);
    b.p2p(r, SendInit, FuncKind::Isend, 1000 * kUs, 1010 * kUs, next, 7, 8, kWorld, persistent_send);
    b.p2p(r, RecvInit, FuncKind::Irecv, 1020 * kUs, 1030 * kUs, prev, 7, 8, kWorld, persistent_recv);
    b.begin(r, 1500 * kUs, 1, 1);
    for (int s = 0; s < steps; ++s) {
      const uint64_t t = base(s) + jitter(r, s), from_prev = base(s) + jitter(prev, s);
      b.begin(r, t, 2, 2);
      b.send(r, t + 5 * kUs, t + 8 * kUs, next, 1);
      b.recv(r, t + 10 * kUs, std::max(t + 12 * kUs, from_prev + 8 * kUs), prev, 1);
      const uint64_t at = t + 50 * kUs;
      if (s % 5 == 0 && s + 17 < steps) b.irecv(r, at, at + 1 * kUs, prev, 2, 0x9c000000u + static_cast<uint32_t>(s));
      if (s >= 3 && (s - 3) % 5 == 0 && s - 3 + 17 < steps) b.isend(r, at + 3 * kUs, at + 4 * kUs, next, 2, kBuiltinDoneSend);
      if (s >= 17 && (s - 17) % 5 == 0)
        b.wait(r, Wait, at + 6 * kUs, at + 8 * kUs,
               {TraceBuilder::done(0x9c000000u + static_cast<uint32_t>(s - 17), prev, 2)});
      if (s % 3 == 0) {
        const uint64_t p = t + 60 * kUs, prev_start = from_prev + 60 * kUs;
        b.request_op(r, Start, p, p + 1 * kUs, {persistent_send});
        b.request_op(r, Start, p + 2 * kUs, p + 3 * kUs, {persistent_recv});
        b.wait(r, Waitall, p + 4 * kUs, std::max(p + 6 * kUs, prev_start + 2 * kUs),
               {TraceBuilder::done(persistent_send), TraceBuilder::done(persistent_recv, prev, 7)});
      }
      if (s % 7 == 0) {
        uint64_t last = 0;
        for (int m = 0; m < kRanks; ++m) last = std::max(last, base(s) + jitter(m, s) + 100 * kUs);
        b.collective(r, Allreduce, t + 100 * kUs, last + static_cast<uint64_t>(3 + r) * kUs);
      }
      b.end(r, base(s) + 150 * kUs, 2, 2);
      if (s % 40 == 39 && s + 1 < steps) {
        b.end(r, base(s) + 160 * kUs, 1, 1);
        b.begin(r, base(s) + 170 * kUs, 1, 1);
      }
    }
    b.end(r, base(steps), 1, 1);
    b.request_op(r, RequestFree, base(steps) + 10 * kUs, base(steps) + 11 * kUs, {persistent_send});
    b.request_op(r, RequestFree, base(steps) + 12 * kUs, base(steps) + 13 * kUs, {persistent_recv});
    b.finalize(r, base(steps) + 1 * kMs, base(steps) + 2 * kMs);
  }
  b.close();
}

analysis::Options window(double from_s, double to_s, bool index) {
  analysis::Options o = window_options(from_s, to_s);
  o.use_window_index = index;
  return o;
}

std::string report_of(const analysis::Analysis& a) {
  std::ostringstream out;
  out << text_with_functions(a);
  // Every figure, to the last bit (the text rounds).
  for (const auto& n : a.intervals) {
    out << n.id.value_or(0) << ' ' << n.exe_count << ' ' << n.first_enter << ' ' << n.main.execution_time << '\n';
    for (const auto& f : n.per_rank)
      out << f.rank << ' ' << f.executions << ' ' << f.time << ' ' << f.idle << ' ' << f.mpi << ' '
          << f.potential_sync << ' ' << f.sendrecv << ' ' << f.collective << ' ' << f.time_variation
          << ' ' << f.time_of_start << ' ' << f.calls << '\n';
    for (const auto& fn : n.functions) out << fn.name << ' ' << fn.calls << ' ' << fn.time << ' ' << fn.bytes << '\n';
  }
  return out.str();
}

std::string index_path(const TraceBuilder& b) { return b.dir() + "/window-index.bin"; }

// An environment variable set for a test's length.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A fresh directory, removed with what it holds.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "prof-index-cache-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The index files in a cache directory's prof/.
std::vector<std::string> cached_indexes(const std::string& cache) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(cache + "/prof", ec))
    if (e.path().filename().string().rfind("window-index-", 0) == 0) found.push_back(e.path().string());
  return found;
}

TEST(WindowIndex, EqualsTheWindowDecodedFromTheStartAndDecodesLittle) {
  TraceBuilder b(kRanks, 42, true, 2048);
  build(b, 600);
  const double step = 200e-6;
  // Edges anywhere, on a step's start, on a message, and the whole run.
  const std::pair<double, double> windows[] = {
      {0.0301, 0.0312}, {0.002 + 40 * step, 0.002 + 41 * step}, {0.05 + 10e-6, 0.0613 + 60e-6},
      {0, 0.01},        {0.1, 0.2},                              {0.02, 0.1},
      {0.0877, 0.0878}, {0, 1}};
  bool first = true;
  for (const auto& [from, to] : windows) {
    const auto full = analyze_checked(b.dir(), window(from, to, false));
    const auto fast = analyze_checked(b.dir(), window(from, to, true));
    const std::string where = "window " + std::to_string(from) + ":" + std::to_string(to);
    EXPECT_EQ(report_of(fast), report_of(full)) << where;
    if (!full.window) {  // (the whole run: no window, no index)
      EXPECT_EQ(to, 1) << where;
      EXPECT_TRUE(fast.stats.window_index.empty()) << where << ": " << fast.stats.window_index;
      continue;
    }
    EXPECT_EQ(full.stats.chunks_decoded, full.stats.chunks_total) << where;
    EXPECT_EQ(fast.stats.chunks_total, full.stats.chunks_total) << where;
    EXPECT_TRUE(fast.warnings.empty()) << where << ": " << (fast.warnings.empty() ? "" : fast.warnings[0].category + " " + (fast.warnings[0].examples.empty() ? "" : fast.warnings[0].examples[0]));
    EXPECT_EQ(fast.stats.window_index.rfind(first ? "built " : "used ", 0), 0u)
        << where << ": " << fast.stats.window_index;
    first = false;
  }
  // A window of 1 ms out of 122: a small part of the chunks (the window's, the
  // chunk before it, those up to the late Waits after it, those holding
  // sends still in flight at its start).
  const auto small = analyze_checked(b.dir(), window(0.06, 0.061, true));
  EXPECT_GT(small.stats.chunks_total, 60u);
  EXPECT_LE(small.stats.chunks_decoded * 4, small.stats.chunks_total)
      << small.stats.chunks_decoded << " of " << small.stats.chunks_total;
  EXPECT_GT(small.stats.chunks_decoded, 0u);
}

// A window's report is the same, JSON and all, whatever the workers: an MPI
// job of K processes runs at least K, the plain command one for a short
// window and a core's worth for a long one. Decoding goes on past the window
// for as long as something inside it waits for a partner, a while longer
// with several workers (their mail takes a phase); so the events and chunks
// decoded are counted at the window's end, the messages and instances those
// begun inside it, and the end waits for every wait inside it, a late
// receiver's too (mailed back to the sender's worker).
TEST(WindowIndex, AWindowsReportIsTheSameForEveryWorkerCount) {
  TraceBuilder b(kRanks, 42, true, 2048);
  build(b, 600);
  for (const auto& [from, to] : {std::pair{0.0301, 0.0312}, {0.05, 0.0613}, {0, 0.01}, {0.1, 0.2}}) {
    std::string one;
    for (unsigned threads = 1; threads <= kRanks; ++threads) {
      analysis::Options o = window(from, to, true);
      o.threads = threads;
      o.write_window_index = false;  // (the index's note the same each time: built in memory)
      const auto a = analyze_checked(b.dir(), o);
      std::ostringstream json;
      analysis::write_json_report(a, json);
      if (threads == 1) one = json.str();
      else EXPECT_EQ(json.str(), one) << "window " << from << ":" << to << ", " << threads << " workers";
    }
  }
}

// A rank file missing: the messages to and from it (unmatched) are counted
// up to the window's end, as the matched ones are, not as far as decoding
// goes past it, which depends on the workers. Five ranks in a ring of
// messages, rank 2's file removed; no collective, whose instances would
// wait for rank 2 and keep every rank decoding to its end.
TEST(WindowIndex, MessagesToAMissingRankAreCountedUpToTheWindowsEnd) {
  constexpr int kRing = 5, kSteps = 2000;
  TraceBuilder b(kRing, 42, true, 2048);
  for (int r = 0; r < kRing; ++r) {
    b.init(r, 0, 1 * kMs);
    for (int s = 0; s < kSteps; ++s) {
      const uint64_t t = 2 * kMs + static_cast<uint64_t>(s) * 20 * kUs + jitter(r, s) / 10;
      b.send(r, t, t + 2 * kUs, (r + 1) % kRing, 1);
      b.recv(r, t + 5 * kUs, t + 9 * kUs, (r + kRing - 1) % kRing, 1);
    }
    b.finalize(r, 50 * kMs, 51 * kMs);
  }
  b.close();
  std::filesystem::remove(b.path(2));
  for (const auto& [from, to] : {std::pair{0.0101, 0.0112}, {0.02, 0.03}}) {
    uint64_t sends = 0;
    std::string one;
    for (unsigned threads = 1; threads < kRing; ++threads) {
      analysis::Options o = window(from, to, true);
      o.threads = threads;
      o.write_window_index = false;
      const auto a = analyze_checked(b.dir(), o);
      std::ostringstream json;
      analysis::write_json_report(a, json);
      if (threads == 1) {
        one = json.str();
        sends = a.stats.unmatched_sends;
        // Rank 1's sends to rank 2 (and rank 3's receives from it) from the
        // start checkpoint to the window's end, a step every 20 us.
        for (const uint64_t n : {sends, a.stats.unmatched_receives}) {
          EXPECT_GE(n, static_cast<uint64_t>((to - from) / 20e-6)) << from << ":" << to;
          EXPECT_LE(n, static_cast<uint64_t>(to / 20e-6)) << from << ":" << to;
        }
      } else {
        EXPECT_EQ(a.stats.unmatched_sends, sends) << "window " << from << ":" << to << ", " << threads << " workers";
        EXPECT_EQ(json.str(), one) << "window " << from << ":" << to << ", " << threads << " workers";
      }
    }
  }
}

// The same run written in format 5 and in format 6 (whose repeated payloads
// are left out): the analysis reports the same, whole and in windows that
// start inside chunks.
TEST(WindowIndex, Format6ReportsWhatFormat5Does) {
  TraceBuilder v5(kRanks, 42, true, 64 * 1024, 5), v6(kRanks, 42, true, 64 * 1024, 6);
  build(v5, 2000);
  build(v6, 2000);
  const auto whole5 = analyze_checked(v5.dir(), analysis::Options{});
  const auto whole6 = analyze_checked(v6.dir(), analysis::Options{});
  EXPECT_EQ(report_of(whole6), report_of(whole5));
  EXPECT_EQ(whole6.stats.events, whole5.stats.events);
  EXPECT_LT(whole6.stats.chunks_total, whole5.stats.chunks_total);  // fewer bytes
  const double s = 200e-6;
  for (const auto& [from, to] : {std::pair{0.002 + 700 * s, 0.002 + 760 * s},
                                 std::pair{0.002 + 1500.3 * s, 0.002 + 1517.6 * s}}) {
    const std::string where = "window " + std::to_string(from) + ":" + std::to_string(to);
    EXPECT_EQ(report_of(analyze_checked(v6.dir(), window(from, to, true))),
              report_of(analyze_checked(v5.dir(), window(from, to, true))))
        << where;
  }
}

// Two chunks a rank: the index also starts ranks inside a chunk
// (every WindowIndex::kCheckpointEvents events), and past the window's end
// decoding stops once nothing begun inside it still waits. Window edges in
// every part of a step (a blocking send, a late receive, an Irecv whose Wait
// comes 17 steps later, persistent requests and their Waitall, an Allreduce
// straddling the edge, between steps), each equal to the window decoded from
// the start, with the run's end as the whole run's.
TEST(WindowIndex, StartsInsideChunksAndStopsEarlyAtEveryKindOfEdge) {
  TraceBuilder b(kRanks, 42, true, 256 * 1024);
  const int steps = 5000;
  build(b, steps);
  auto at = [](int s, double us) { return 0.002 + s * 200e-6 + us * 1e-6; };
  const double offsets[] = {0, 6, 11, 50.5, 56.5, 62, 66, 101, 155};
  std::vector<std::pair<double, double>> windows;
  for (size_t i = 0; i < std::size(offsets); ++i) {
    windows.emplace_back(at(2200, offsets[i]), at(2200, offsets[(i + 4) % std::size(offsets)]) + (i >= 5 ? 200e-6 : 0));
    windows.emplace_back(at(4000, offsets[i]), at(4017, offsets[(i + 2) % std::size(offsets)]));
  }
  windows.emplace_back(at(700, 101), at(760, 6));
  const auto whole = analyze_checked(b.dir(), analysis::Options{});
  uint64_t most = 0;
  for (const auto& [from, to] : windows) {
    const auto full = analyze_checked(b.dir(), window(from, to, false));
    const auto fast = analyze_checked(b.dir(), window(from, to, true));
    const std::string where = "window " + std::to_string(from) + ":" + std::to_string(to);
    EXPECT_EQ(report_of(fast), report_of(full)) << where;
    EXPECT_TRUE(fast.warnings.empty()) << where;
    ASSERT_EQ(fast.run_end.size(), whole.run_end.size());
    for (size_t r = 0; r < whole.run_end.size(); ++r)
      EXPECT_EQ(fast.run_end[r].last_alive, whole.run_end[r].last_alive) << where;
    most = std::max(most, fast.stats.events);
  }
  EXPECT_GT(whole.stats.chunks_total, static_cast<uint64_t>(kRanks));
  // From their chunk's start, the windows at step 4000 would decode 70,000 of
  // the run's 87,000 events; from checkpoints inside the chunks, 13,000 at most.
  EXPECT_LT(most * 4, whole.stats.events) << most << " of " << whole.stats.events;
}

// Ranks that make different numbers of calls between their collective
// calls (rank 0 three or four more a step): their checkpoints every so many events
// fall at different collective calls, and those before every 1024th
// collective call let both start near the window with as many calls made.
TEST(WindowIndex, RanksOfDifferentCallCountsStartNearTheWindow) {
  TraceBuilder b(2, 42, true, 1 << 20);
  const int steps = 12000;
  auto base = [](int s) { return 2 * kMs + static_cast<uint64_t>(s) * 20 * kUs; };
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    for (int s = 0; s < steps; ++s) {
      const uint64_t t = base(s);
      if (r == 0)
        for (int k = 0; k < (s % 7 == 0 ? 4 : 3); ++k) b.other(r, Compute, t + static_cast<uint64_t>(k) * kUs, t + static_cast<uint64_t>(k) * kUs + 500);
      b.send(r, t + 4 * kUs, t + 5 * kUs, 1 - r, 1);
      b.recv(r, t + 6 * kUs, t + (r == 0 ? 7 : 9) * kUs, 1 - r, 1);
      b.collective(r, Allreduce, t + (10 + r) * kUs, t + 13 * kUs);
    }
    b.finalize(r, base(steps), base(steps) + 1 * kMs);
  }
  b.close();
  const auto whole = analyze_checked(b.dir(), analysis::Options{});
  for (const auto& [from, to] : {std::pair{0.1505, 0.1515}, std::pair{0.2001, 0.21}}) {
    const auto full = analyze_checked(b.dir(), window(from, to, false));
    const auto fast = analyze_checked(b.dir(), window(from, to, true));
    EXPECT_EQ(report_of(fast), report_of(full)) << from << ":" << to;
    // Within 1024 collective calls (~5,000 events a rank) of the window.
    EXPECT_LT(fast.stats.events * 4, whole.stats.events) << fast.stats.events << " of " << whole.stats.events;
  }
}

// One chunk a rank: the index starts every rank at its start, and the
// window past its end is cut where nothing inside it still waits.
TEST(WindowIndex, OneChunkTraceEqualsTheWindowDecodedFromTheStart) {
  TraceBuilder b(2);
  build_known_waits_trace(b);
  for (const auto& [from, to] : {std::pair{0.005, 0.014}, std::pair{0.012, 0.03}, std::pair{0.0, 0.0085}}) {
    const auto full = analyze_checked(b.dir(), window(from, to, false));
    const auto fast = analyze_checked(b.dir(), window(from, to, true));
    EXPECT_EQ(report_of(fast), report_of(full)) << from << ":" << to;
  }
}

// A communicator's first collective call, far into a chunk (hundreds of
// events after the index's pass last read its cursor's position on a
// schedule), gets a checkpoint at its own record, and so does every 1024th
// call on it: a window that starts from one repeats none of the messages
// before it (started from a position read a few events early, it would).
TEST(WindowIndex, ACommunicatorsFirstCollectiveCallStartsAWindowAtItsOwnRecord) {
  TraceBuilder b(2, 42, true, 1 << 20);
  const int steps = 2300;
  auto base = [](int s) { return 2 * kMs + static_cast<uint64_t>(s) * 20 * kUs; };
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    for (int s = 0; s < steps; ++s) {
      const uint64_t t = base(s);
      b.send(r, t + 1 * kUs, t + 2 * kUs, 1 - r, 1);
      // (Rank 0's receives take 2 to 6 us: a window that repeats a step counts it.)
      b.recv(r, t + 3 * kUs, t + (r == 0 ? 5 + s % 5 : 4) * kUs, 1 - r, 1);
      if (s >= 150) b.collective(r, Allreduce, t + (10 + r) * kUs, t + 13 * kUs);
    }
    b.finalize(r, base(steps), base(steps) + 1 * kMs);
  }
  b.close();
  {
    // The checkpoints: at the first call (after Init and 150 steps' send and
    // receive, and its step's), and at the 1025th (1024 steps and calls on).
    namespace d = analysis::detail;
    const trace::TraceDir dir = trace::TraceDir::open(b.dir());
    std::vector<const trace::RankTrace*> traces;
    for (const auto& t : dir.ranks) traces.push_back(t.get());
    d::Registry reg;
    reg.build(traces);
    std::string note;
    const d::WindowIndex ix =
        d::load_or_build_window_index(dir, reg, d::WorldIndex(traces), 1, d::IndexWriting{false, false}, &note);
    ASSERT_EQ(ix.ranks.size(), 2u) << note;
    for (const auto& r : ix.ranks)
      for (const uint64_t ordinal : {uint64_t{1 + 150 * 2 + 2}, uint64_t{1 + 1174 * 2 + 1024 + 2}}) {
        const auto& cps = r.checkpoints;
        bool found = false;
        for (size_t i = 0; i < cps.size(); ++i) found |= cps[i].ordinal == ordinal && cps[i].at.valid;
        EXPECT_TRUE(found) << "no checkpoint at event " << ordinal;
      }
  }
  const double first = 0.002 + 150 * 20e-6, stride = 1024 * 20e-6;
  // (Each window opens after its call left, 13 us into the step.)
  for (const auto& [from, to] : {std::pair{first + 15e-6, first + 200e-6}, std::pair{first + stride + 15e-6, first + stride + 90e-6}}) {
    const auto full = analyze_checked(b.dir(), window(from, to, false));
    const auto fast = analyze_checked(b.dir(), window(from, to, true));
    EXPECT_EQ(report_of(fast), report_of(full)) << from << ":" << to;
    // (The first window builds the index, the second uses it.)
    EXPECT_TRUE(fast.stats.window_index.rfind("built ", 0) == 0 || fast.stats.window_index.rfind("used ", 0) == 0)
        << fast.stats.window_index;
  }
}

TEST(WindowIndex, AStaleOrCorruptIndexIsRebuilt) {
  TraceBuilder b(kRanks, 42, true, 2048);
  build(b, 300);
  TraceBuilder other(kRanks, 42, true, 2048);
  build(other, 200);
  const auto reference = report_of(analyze_checked(b.dir(), window(0.03, 0.035, false)));
  // Another trace's index (same run id, other sizes): stale.
  ASSERT_EQ(analyze_checked(other.dir(), window(0.01, 0.02, true)).stats.window_index.rfind("built ", 0), 0u);
  std::filesystem::copy_file(index_path(other), index_path(b));
  auto a = analyze_checked(b.dir(), window(0.03, 0.035, true));
  EXPECT_EQ(a.stats.window_index.rfind("rebuilt (stale", 0), 0u) << a.stats.window_index;
  EXPECT_EQ(report_of(a), reference);
  EXPECT_EQ(analyze_checked(b.dir(), window(0.03, 0.035, true)).stats.window_index.rfind("used ", 0), 0u);
  // A byte flipped: corrupt.
  {
    std::fstream f(index_path(b), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(200);
    char c = 0;
    f.get(c);
    f.seekp(200);
    f.put(static_cast<char>(c ^ 0x5a));
  }
  a = analyze_checked(b.dir(), window(0.03, 0.035, true));
  EXPECT_EQ(a.stats.window_index.rfind("rebuilt (corrupt", 0), 0u) << a.stats.window_index;
  EXPECT_EQ(report_of(a), reference);
  // Whole and checksummed, but an interval's call site is past the trace's
  // (a writer's bug, another build's layout): malformed, never followed.
  {
    std::string bytes = file_bytes(index_path(b));
    auto u32_at = [&](size_t at) {
      uint32_t v = 0;
      std::memcpy(&v, bytes.data() + at, sizeof v);
      return v;
    };
    size_t at = 20;             // magic, version, checksum
    at += 4 + u32_at(at);       // the trace's key
    at += 4 + u32_at(at);       // why the index cannot serve the trace ("")
    at += 8 + 8 + 8;            // the rank count; rank 0's chunks and last leave
    uint64_t nodes = 0;
    std::memcpy(&nodes, bytes.data() + at, sizeof nodes);
    ASSERT_GE(nodes, 2u);
    at += 8 + 21 + 8;           // past the root: node 1's parent and id, then its site
    const uint32_t far_site = 0x7fffffffu;
    std::memcpy(bytes.data() + at, &far_site, sizeof far_site);
    const uint64_t sum = format::crc32c(bytes.data() + 20, bytes.size() - 20);
    std::memcpy(bytes.data() + 12, &sum, sizeof sum);
    std::ofstream(index_path(b), std::ios::binary | std::ios::trunc) << bytes;
  }
  a = analyze_checked(b.dir(), window(0.03, 0.035, true));
  EXPECT_EQ(a.stats.window_index.rfind("rebuilt (corrupt (malformed)", 0), 0u) << a.stats.window_index;
  EXPECT_EQ(report_of(a), reference);
  // Cut short: not an index.
  std::filesystem::resize_file(index_path(b), 5);
  a = analyze_checked(b.dir(), window(0.03, 0.035, true));
  EXPECT_EQ(a.stats.window_index.rfind("rebuilt (not a window index", 0), 0u) << a.stats.window_index;
  EXPECT_EQ(report_of(a), reference);
}

TEST(WindowIndex, ATraceItCannotServeIsDecodedWholeSayingWhy) {
  TraceBuilder b(2, 42, true, 2048);
  for (int r = 0; r < 2; ++r) b.init(r, 0, 1 * kMs);
  b.thread(0, 1);
  b.other(0, Compute, 2 * kMs, 3 * kMs);
  b.thread(0, 0);
  for (int s = 0; s < 400; ++s) {
    const uint64_t t = 4 * kMs + static_cast<uint64_t>(s) * kStep;
    b.send(0, t, t + 10 * kUs, 1, 3);
    b.recv(1, t + 5 * kUs, t + 20 * kUs, 0, 3);
  }
  for (int r = 0; r < 2; ++r) b.finalize(r, 90 * kMs, 91 * kMs);
  b.close();
  const auto full = analyze_checked(b.dir(), window(0.03, 0.04, false));
  const auto a = analyze_checked(b.dir(), window(0.03, 0.04, true));
  EXPECT_EQ(a.stats.window_index.rfind("not used: rank 0 has several threads", 0), 0u) << a.stats.window_index;
  EXPECT_EQ(a.stats.chunks_decoded, a.stats.chunks_total);
  EXPECT_EQ(report_of(a), report_of(full));
}

// Whoever can write the trace directory cannot make an analysis write through
// a link: not at the temporary names the index is written to (planted for the
// analyzing process's own id and the next ones), nor at its final name. A FIFO
// in the index's place is not read (it would block) but replaced.
TEST(WindowIndex, NeverWritesThroughALinkOrReadsAFifoInTheTraceDirectory) {
  TraceBuilder b(kRanks, 42, true, 2048);
  build(b, 100);
  const std::string victim = b.dir() + "/../victim-" + std::to_string(::getpid());
  std::ofstream(victim) << "precious";
  for (int pid = ::getpid(); pid < ::getpid() + 8; ++pid)
    std::filesystem::create_symlink(victim, index_path(b) + ".tmp." + std::to_string(pid));
  std::filesystem::create_symlink(victim, index_path(b));
  auto a = analyze_checked(b.dir(), window(0.01, 0.012, true));
  EXPECT_EQ(a.stats.window_index.rfind("rebuilt", 0), 0u) << a.stats.window_index;
  EXPECT_EQ(file_bytes(victim), "precious");
  EXPECT_FALSE(std::filesystem::is_symlink(index_path(b)));
  EXPECT_EQ(analyze_checked(b.dir(), window(0.01, 0.012, true)).stats.window_index.rfind("used ", 0), 0u);

  std::filesystem::remove(index_path(b));
  ASSERT_EQ(::mkfifo(index_path(b).c_str(), 0600), 0);
  a = analyze_checked(b.dir(), window(0.01, 0.012, true));
  EXPECT_EQ(a.stats.window_index.rfind("rebuilt (unreadable", 0), 0u) << a.stats.window_index;
  EXPECT_TRUE(std::filesystem::is_regular_file(index_path(b)));
  std::filesystem::remove(victim);
}

// A whole analysis writes the index as it goes: the next window uses it and
// equals the window decoded from the start, and the file is byte for byte
// the one a window builds, whether the index was built after the analysis
// (one thread) or meanwhile on threads beyond the analysis's workers.
TEST(WindowIndex, AWholeAnalysisWritesTheIndexTheNextWindowUses) {
  TraceBuilder b(kRanks, 42, true, 2048);
  build(b, 600);
  const auto full = analyze_checked(b.dir(), window(0.0301, 0.0312, false));
  ASSERT_FALSE(std::filesystem::exists(index_path(b)));
  const auto built = analyze_checked(b.dir(), window(0.0301, 0.0312, true));
  ASSERT_EQ(built.stats.window_index.rfind("built ", 0), 0u) << built.stats.window_index;
  const std::string by_window = file_bytes(index_path(b));
  ASSERT_FALSE(by_window.empty());
  for (const unsigned threads : {1u, static_cast<unsigned>(kRanks) + 2}) {
    std::filesystem::remove(index_path(b));
    analysis::Options whole;
    whole.threads = threads;
    bool seen = false;
    whole.on_result = [&](const analysis::Analysis& a) { seen = a.usable(); };
    analyze_checked(b.dir(), whole);
    EXPECT_TRUE(seen) << threads << " threads";
    ASSERT_TRUE(std::filesystem::exists(index_path(b))) << threads << " threads";
    EXPECT_TRUE(file_bytes(index_path(b)) == by_window) << threads << " threads";
    const auto fast = analyze_checked(b.dir(), window(0.0301, 0.0312, true));
    EXPECT_EQ(fast.stats.window_index, "used " + index_path(b));
    EXPECT_EQ(report_of(fast), report_of(full)) << threads << " threads";
  }
}

// Options::write_window_index off: neither a whole analysis nor a window
// writes the index; a window builds one in memory, or uses one that fits.
TEST(WindowIndex, WritingTurnedOffWritesNothing) {
  TraceBuilder b(kRanks, 42, true, 2048);
  build(b, 300);
  const auto reference = report_of(analyze_checked(b.dir(), window(0.03, 0.035, false)));
  analysis::Options whole;
  whole.write_window_index = false;
  analyze_checked(b.dir(), whole);
  EXPECT_FALSE(std::filesystem::exists(index_path(b)));
  analysis::Options o = window(0.03, 0.035, true);
  o.write_window_index = false;
  auto a = analyze_checked(b.dir(), o);
  EXPECT_EQ(a.stats.window_index, "built in memory (writing it is turned off)");
  EXPECT_EQ(report_of(a), reference);
  EXPECT_FALSE(std::filesystem::exists(index_path(b)));
  analyze_checked(b.dir(), analysis::Options{});
  ASSERT_TRUE(std::filesystem::exists(index_path(b)));
  a = analyze_checked(b.dir(), o);
  EXPECT_EQ(a.stats.window_index, "used " + index_path(b));
  EXPECT_EQ(report_of(a), reference);
}

// A trace directory the analysis cannot write to (mode 0555) gets its index
// in the cache directory ($XDG_CACHE_HOME/prof, made with mode 0700), which
// the windows then read; a stale index beside the trace is passed over.
// Root writes through the mode, so there Options::window_index_in_cache says
// what the mode would (elsewhere the mode alone does).
TEST(WindowIndex, AnUnwritableTraceDirectoryGetsItsIndexInTheCache) {
  TraceBuilder b(kRanks, 42, true, 2048);
  build(b, 300);
  TraceBuilder other(kRanks, 42, true, 2048);
  build(other, 200);
  const auto reference = report_of(analyze_checked(b.dir(), window(0.03, 0.035, false)));
  analyze_checked(other.dir(), analysis::Options{});
  std::filesystem::copy_file(index_path(other), index_path(b));  // stale: another trace's
  const std::string stale = file_bytes(index_path(b));
  TempDir cache;
  ScopedEnv xdg("XDG_CACHE_HOME", cache.path() + "/xdg");
  ASSERT_EQ(::chmod(b.dir().c_str(), 0555), 0);
  auto as_unwritable = [](analysis::Options o) {
    o.window_index_in_cache = ::geteuid() == 0;
    return o;
  };
  analyze_checked(b.dir(), as_unwritable(analysis::Options{}));
  std::vector<std::string> cached = cached_indexes(cache.path() + "/xdg");
  ASSERT_EQ(cached.size(), 1u);
  struct stat st;
  ASSERT_EQ(::stat((cache.path() + "/xdg/prof").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(file_bytes(index_path(b)), stale);
  auto a = analyze_checked(b.dir(), as_unwritable(window(0.03, 0.035, true)));
  EXPECT_EQ(a.stats.window_index, "used " + cached[0]);
  EXPECT_EQ(report_of(a), reference);
  // A window that builds it puts it there too, and the next window uses it.
  std::filesystem::remove(cached[0]);
  a = analyze_checked(b.dir(), as_unwritable(window(0.03, 0.035, true)));
  EXPECT_EQ(a.stats.window_index, "rebuilt (stale (the trace changed)) " + cached[0]);
  EXPECT_EQ(report_of(a), reference);
  a = analyze_checked(b.dir(), as_unwritable(window(0.03, 0.035, true)));
  EXPECT_EQ(a.stats.window_index, "used " + cached[0]);
  EXPECT_EQ(report_of(a), reference);
  EXPECT_EQ(file_bytes(index_path(b)), stale);
  ::chmod(b.dir().c_str(), 0755);
}

// The cache's name is the trace directory's (its absolute path and run id):
// a copy of the trace elsewhere gets another; without XDG_CACHE_HOME (or with
// a relative one, which the XDG rule ignores) the cache is ~/.cache/prof.
TEST(WindowIndex, TheCacheNameIsTheTraceDirectorys) {
  TraceBuilder b(kRanks, 42, true, 2048);
  build(b, 20);
  TempDir home;
  const std::string copy = home.path() + "/copy";
  std::filesystem::copy(b.dir(), copy);
  ScopedEnv home_env("HOME", home.path());
  ScopedEnv xdg("XDG_CACHE_HOME", "relative/cache");
  const trace::TraceDir here = trace::TraceDir::open(b.dir()), there = trace::TraceDir::open(copy);
  const auto p = analysis::detail::window_index_places(here), q = analysis::detail::window_index_places(there);
  EXPECT_EQ(p.beside, b.dir() + "/window-index.bin");
  EXPECT_EQ(p.cache.rfind(home.path() + "/.cache/prof/window-index-", 0), 0u) << p.cache;
  EXPECT_NE(p.cache, q.cache);
  EXPECT_EQ(p.cache, analysis::detail::window_index_places(trace::TraceDir::open(b.dir() + "/.")).cache);
}

}  // namespace
}  // namespace prof::test
