// Damaged, truncated, foreign or inconsistent input: the analysis never
// crashes or hangs; it names the file (and offset), counts the problem, and
// either reports what it could salvage or says nothing is usable. Checked via
// the library and via the prof-analyze binary (exit status and messages).
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "prof/analysis/report.h"
#include "prof/analysis/timeline.h"
#include "file_bytes.h"
#include "trace_builder.h"

namespace prof::test {
namespace {

namespace fs = std::filesystem;

struct CliResult {
  int status = -1;
  std::string out;  // stdout and stderr together
};

CliResult run_cli(const std::string& args) {
  CliResult r;
  // (Bounded: an analysis that hangs fails here instead of stalling the suite.)
  const std::string cmd = "timeout 60 " + std::string(PROF_ANALYZE_BIN) + " --no-progress " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// A small healthy 4-rank run: an interval with a ring exchange and an
// Allreduce, so every rank talks to two others.
void build_ring(TraceBuilder& b, int ranks = 4) {
  for (int r = 0; r < ranks; ++r) {
    b.init(r, 0, 1 * kMs);
    b.begin(r, 2 * kMs, 1);
    b.send(r, 3 * kMs, 3100 * kUs, (r + 1) % ranks, 1);
    b.recv(r, 3200 * kUs, 4 * kMs, (r + ranks - 1) % ranks, 1);
    b.collective(r, Allreduce, 5 * kMs + r * 100 * kUs, 6 * kMs);
    b.end(r, 7 * kMs, 1);
    b.finalize(r, 10 * kMs, 11 * kMs);
  }
}

void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5A);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

bool any_example_contains(const analysis::Analysis& a, const std::string& needle) {
  for (const auto& w : a.warnings)
    for (const auto& e : w.examples)
      if (e.find(needle) != std::string::npos) return true;
  return false;
}

TEST(DamagedInput, MissingRankIsReportedAndTheRestAnalyzed) {
  TraceBuilder b(4);
  build_ring(b);
  b.close();
  fs::remove(b.path(2));
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_TRUE(a.damaged);
  EXPECT_EQ(a.processors, 3);
  EXPECT_EQ(a.intervals[0].main.processors, 3);
  EXPECT_TRUE(any_example_contains(a, "rank 2 missing")) << warnings_text(a);
  // Its messages and its share of the Allreduce are accounted as unmatched.
  EXPECT_EQ(a.stats.unmatched_sends, 1u);     // 1 -> 2
  EXPECT_EQ(a.stats.unmatched_receives, 1u);  // 3 <- 2
  EXPECT_EQ(a.stats.incomplete_collectives, 0u);  // 3 of 3 present members called

  const auto cli = run_cli(b.dir());
  EXPECT_EQ(cli.status, 3) << cli.out;
  EXPECT_NE(cli.out.find("rank 2 missing"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("Processors 3"), std::string::npos) << cli.out;
}

TEST(DamagedInput, CollectivesMissingInATraceThatLostRecordsBlameTheLoss) {
  // Rank 1 lost records (a full disk): its second Barrier is not in the
  // trace. The incomplete instance is put down to the loss, not to a rank
  // cut short: both ranks ended normally.
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    b.collective(r, Barrier, 2 * kMs, 3 * kMs);
    if (r == 0) b.collective(r, Barrier, 4 * kMs, 5 * kMs);
    b.finalize(r, 10 * kMs, 11 * kMs);
  }
  b.w(1).meta("records_lost", "1");
  b.close();
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_EQ(a.stats.incomplete_collectives, 1u);
  const std::string text = warnings_text(a);
  EXPECT_NE(text.find("in a trace that lost records"), std::string::npos) << text;
  EXPECT_EQ(text.find("cut short"), std::string::npos) << text;
}

TEST(DamagedInput, ForeignRankFileIsSkipped) {
  TraceBuilder b(4);
  build_ring(b);
  b.close();
  {
    TraceBuilder other(4, /*run_id=*/999);
    build_ring(other);
    other.close();
    fs::copy_file(other.path(1), b.path(1), fs::copy_options::overwrite_existing);
  }
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_TRUE(a.damaged);
  EXPECT_EQ(a.processors, 3);
  EXPECT_TRUE(any_example_contains(a, "foreign")) << warnings_text(a);
  const auto cli = run_cli(b.dir());
  EXPECT_EQ(cli.status, 3);
  EXPECT_NE(cli.out.find("rank-00001.prof"), std::string::npos) << cli.out;
}

TEST(DamagedInput, BitFlipInEventsIsDetectedWithFileAndOffset) {
  TraceBuilder b(4);
  build_ring(b);
  b.close();
  // The last chunk of a rank file is its events chunk.
  const uint64_t size = fs::file_size(b.path(1));
  flip_byte(b.path(1), size - 16);
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_TRUE(a.damaged);
  EXPECT_TRUE(any_example_contains(a, "rank-00001.prof: offset")) << warnings_text(a);
  const auto cli = run_cli(b.dir());
  EXPECT_EQ(cli.status, 3);
  EXPECT_NE(cli.out.find("CRC"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("Interval (LineNumber"), std::string::npos);  // salvaged report
}

// 300 Allreduces, rank 1 entering 10 us after rank 0 each time, in small
// chunks; with init and final clock synchronizations, so the trace knows the
// run's span (2 ms to 303 ms). Without the final one and with a last
// heartbeat at `heartbeat` (ticks, 0: none), the span ends at the later of
// it and the rank's last leave (304 ms).
constexpr int kAllreduces = 300;
void build_allreduces(TraceBuilder& b, bool final_sync = true, uint64_t heartbeat = 0) {
  for (int r = 0; r < 2; ++r) {
    b.w(r).clock_sync(trace::ClockSyncDef{"init", 1 * kMs, 0, 1000});
    b.init(r, 0, 1 * kMs);
    for (int k = 0; k < kAllreduces; ++k) {
      const uint64_t t = (2 + k) * kMs;
      b.collective(r, Allreduce, t + (r == 1 ? 10 * kUs : 0), t + 20 * kUs);
    }
    if (final_sync) b.w(r).clock_sync(trace::ClockSyncDef{"final", 303 * kMs, 0, 1000});
    b.finalize(r, 303 * kMs, 304 * kMs);
    if (heartbeat != 0) b.w(r).live(heartbeat, std::vector<format::InFlightSlot>{});
  }
  b.close();
}
// The latest timestamp of the Chrome export of `dir`, us.
double latest_chrome_ts(const std::string& dir) {
  const std::string chrome = dir + "/chrome.json";
  run_cli(dir + " -o /dev/null --chrome-trace " + chrome);
  const std::string text = file_bytes(chrome);
  EXPECT_NE(text.find("\"ts\":"), std::string::npos);
  double latest = 0;
  for (size_t at = text.find("\"ts\":"); at != std::string::npos; at = text.find("\"ts\":", at + 1))
    latest = std::max(latest, std::strtod(text.c_str() + at + 5, nullptr));
  return latest;
}
std::vector<trace::ChunkInfo> chunks_of(const std::string& dir, int rank) {
  const trace::TraceDir d = trace::TraceDir::open(dir);
  return d.ranks.at(static_cast<size_t>(rank))->chunks(0);
}

// Rank 0 waits 10 us in each instance it shares with rank 1, and nothing in
// one rank 1 never joined: a wrong numbering of rank 1's calls would make it
// wait milliseconds.
void expect_allreduces_numbered_right(const analysis::Analysis& a) {
  const auto* r0 = rank_of(a.intervals[0], 0);
  ASSERT_TRUE(r0);
  const uint64_t shared = a.stats.collective_instances - a.stats.incomplete_collectives;
  EXPECT_LT(shared, static_cast<uint64_t>(kAllreduces));
  EXPECT_GT(shared, 0u);
  EXPECT_NEAR(r0->potential_sync, static_cast<double>(shared) * 10e-6, 1e-9 * kAllreduces);
  for (const auto& f : a.intervals[0].per_rank) EXPECT_LT(f.time_variation, 1e-6) << f.rank;
}

TEST(DamagedInput, ChunkLostMidRankEndsTheRankThereInsteadOfMisnumberingItsCalls) {
  TraceBuilder b(2, 42, true, 1024);
  build_allreduces(b);
  const auto chunks = chunks_of(b.dir(), 1);
  ASSERT_GT(chunks.size(), 6u);
  const trace::ChunkInfo& middle = chunks[chunks.size() / 2];
  flip_byte(b.path(1), middle.file_offset + 32 + middle.payload_bytes / 2);  // its CRC fails
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_TRUE(a.damaged);
  EXPECT_GT(a.stats.events_not_analyzed, 0u);
  EXPECT_TRUE(has_warning(a, "lost data")) << warnings_text(a);
  EXPECT_TRUE(any_example_contains(a, "after lost data")) << warnings_text(a);
  expect_allreduces_numbered_right(a);
  // Rank 1 ends at its last event before the loss: no time after it counts.
  EXPECT_LT(rank_of(a.intervals[0], 1)->time, rank_of(a.intervals[0], 0)->time * 0.75);
  const auto cli = run_cli(b.dir());
  EXPECT_EQ(cli.status, 3) << cli.out;
  EXPECT_NE(cli.out.find("not analyzed"), std::string::npos) << cli.out;
}

TEST(DamagedInput, ChunkTimeOutsideTheRunEndsTheRankThere) {
  // A chunk's base time is outside its CRC: corrupted by 1000 s, its events
  // would be figures of 1000 s in a 0.3 s run.
  TraceBuilder b(2, 42, true, 1024);
  build_allreduces(b);
  const auto chunks = chunks_of(b.dir(), 1);
  ASSERT_GT(chunks.size(), 6u);
  const uint64_t at = chunks[chunks.size() / 2].file_offset + offsetof(format::ChunkHeader, base_time);
  {
    std::fstream f(b.path(1), std::ios::in | std::ios::out | std::ios::binary);
    uint64_t base = 0;
    f.seekg(static_cast<std::streamoff>(at));
    f.read(reinterpret_cast<char*>(&base), sizeof base);
    base += 1000000 * kMs;
    f.seekp(static_cast<std::streamoff>(at));
    f.write(reinterpret_cast<const char*>(&base), sizeof base);
  }
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_TRUE(a.damaged);
  EXPECT_GT(a.stats.events_not_analyzed, 0u);
  EXPECT_TRUE(any_example_contains(a, "outside the run's span")) << warnings_text(a);
  expect_allreduces_numbered_right(a);
  for (const auto& f : a.intervals[0].per_rank) EXPECT_LT(f.time, 0.31) << f.rank;
  EXPECT_LT(a.intervals[0].main.execution_time, 0.31);
  // The viewer's timeline stops the rank at the same event, and says so.
  std::string error;
  const auto timeline = analysis::Timeline::open(b.dir(), &error);
  ASSERT_TRUE(timeline) << error;
  ASSERT_TRUE(timeline->build(&error)) << error;
  EXPECT_LT(timeline->end(), 0.31e9);
  const auto warnings = timeline->warnings();
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("outside the run's span") != std::string::npos;
  }));
  // So does the Chrome export: no event past the run (timestamps in us).
  EXPECT_LT(latest_chrome_ts(b.dir()), 0.31e6);
}

// The run's span ends at the last moment a rank was alive: its last leave
// when its heartbeat stopped earlier (here at 50 ms, no final clock sync).
// The span's first estimate, from the heartbeats alone, ends near 250 ms:
// the events after it are inside the run's span and are analyzed.
TEST(DamagedInput, EventsAfterAnEarlyLastHeartbeatAreNotDamage) {
  TraceBuilder b(2, 42, true, 1024);
  build_allreduces(b, false, 50 * kMs);
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_FALSE(a.damaged) << warnings_text(a);
  EXPECT_EQ(a.stats.events_not_analyzed, 0u);
  EXPECT_EQ(a.stats.collective_instances, static_cast<uint64_t>(kAllreduces));
  EXPECT_EQ(a.stats.incomplete_collectives, 0u);
  EXPECT_GT(a.intervals[0].main.execution_time, 0.3);  // to MPI_Finalize, at 304 ms
  std::string error;
  const auto timeline = analysis::Timeline::open(b.dir(), &error);
  ASSERT_TRUE(timeline) << error;
  ASSERT_TRUE(timeline->build(&error)) << error;
  EXPECT_GT(timeline->end(), 0.3e9);
  for (const std::string& w : timeline->warnings()) EXPECT_EQ(w.find("outside the run's span"), std::string::npos) << w;
  // The Chrome export keeps them too (timestamps in us).
  EXPECT_GT(latest_chrome_ts(b.dir()), 0.3e6);
}

TEST(DamagedInput, InitEndingLongBeforeTheInitSyncIsNotDamage) {
  // On a loaded node the init clock synchronization can end a second after
  // MPI_Init returned; recording started at the timer's epoch, before
  // MPI_Init, so MPI_Init's record is inside the run.
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.w(r).meta("epoch_ticks", "0");
    b.init(r, 0, 1 * kMs);
    b.w(r).clock_sync(trace::ClockSyncDef{"init", 1500 * kMs, 0, 1000});
    for (int k = 0; k < 10; ++k) {
      const uint64_t t = 1501 * kMs + k * kMs;
      b.collective(r, Allreduce, t + (r == 1 ? 10 * kUs : 0), t + 20 * kUs);
    }
    b.w(r).clock_sync(trace::ClockSyncDef{"final", 1520 * kMs, 0, 1000});
    b.finalize(r, 1520 * kMs, 1521 * kMs);
  }
  b.close();
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_FALSE(a.damaged) << warnings_text(a);
  EXPECT_EQ(a.stats.events_not_analyzed, 0u);
  EXPECT_NEAR(rank_of(a.intervals[0], 0)->potential_sync, 10 * 10e-6, 1e-9);
}

// A timer's epoch of 2^63 ticks or more (a forged file, or a timer that
// starts there): raw times past 2^63 do not fit the fitted line's signed
// conversion, so the analysis converts every time through the reader
// (Engine::decode_events<false>). With one tick a nanosecond and no clock
// offsets, both conversions are exact: the figures are those of the same run
// recorded from an epoch of 0, byte for byte.
void build_exchange_from(TraceBuilder& b, uint64_t epoch) {
  for (int r = 0; r < 2; ++r) {
    b.w(r).meta("epoch_ticks", std::to_string(epoch));
    const int peer = 1 - r;
    b.init(r, epoch, epoch + 1 * kMs);
    b.begin(r, epoch + 2 * kMs, 7);
    for (int k = 0; k < 40; ++k) {
      const uint64_t t = epoch + (3 + k) * kMs + (r == 1 ? 30 * kUs : 0);
      b.irecv(r, t, t + 1 * kUs, peer, k, 0x100);
      b.isend(r, t + 2 * kUs, t + 3 * kUs, peer, k, 0x101);
      b.wait(r, Waitall, t + 4 * kUs, t + 60 * kUs,
             {TraceBuilder::done(0x100, peer, k, 8), TraceBuilder::done(0x101)});
      if (k % 8 == 7)
        b.collective(r, Allreduce, t + 100 * kUs + (r == 0 ? 20 * kUs : 0), t + 150 * kUs);
    }
    b.end(r, epoch + 50 * kMs, 7);
    b.finalize(r, epoch + 51 * kMs, epoch + 52 * kMs);
  }
  b.close();
}

TEST(DamagedInput, EpochPastTwoToThe63ConvertsThroughTheReaderWithTheSameFigures) {
  TraceBuilder plain(2), shifted(2);
  build_exchange_from(plain, 0);
  build_exchange_from(shifted, (uint64_t{1} << 63) + (uint64_t{1} << 50));
  const analysis::Analysis a = analyze_checked(plain.dir());
  const analysis::Analysis b = analyze_checked(shifted.dir());
  ASSERT_TRUE(a.usable());
  ASSERT_TRUE(b.usable());
  const auto* r0 = rank_of(a.intervals[0], 0);
  ASSERT_TRUE(r0);
  EXPECT_GT(r0->potential_sync, 0.0);  // rank 1 sends 30 us late: rank 0 waits
  EXPECT_EQ(b.stats.events, a.stats.events);
  std::ostringstream text_plain, text_shifted;
  analysis::write_text_report(a, text_plain);
  analysis::write_text_report(b, text_shifted);
  EXPECT_EQ(text_shifted.str(), text_plain.str());
}

TEST(DamagedInput, ZeroLengthFiles) {
  TraceBuilder b(2);
  build_ring(b, 2);
  b.close();
  fs::resize_file(b.path(0), 0);
  {
    const auto a = analyze_checked(b.dir());
    ASSERT_TRUE(a.usable());
    EXPECT_TRUE(a.damaged);
    EXPECT_TRUE(any_example_contains(a, "rank-00000.prof: offset 0")) << warnings_text(a);
    EXPECT_EQ(run_cli(b.dir()).status, 3);
  }
  fs::resize_file(b.path(1), 0);
  const auto a = analyze_checked(b.dir());
  EXPECT_FALSE(a.usable());
  const auto cli = run_cli(b.dir());
  EXPECT_EQ(cli.status, 2);
  EXPECT_NE(cli.out.find("rank-00000.prof: offset 0"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("rank-00001.prof: offset 0"), std::string::npos) << cli.out;
}

TEST(DamagedInput, NotATraceDirectory) {
  const auto cli = run_cli("/nonexistent/trace-dir");
  EXPECT_EQ(cli.status, 2);
  EXPECT_NE(cli.out.find("/nonexistent/trace-dir"), std::string::npos) << cli.out;
  EXPECT_FALSE(analysis::analyze("/nonexistent/trace-dir").usable());
}

TEST(DamagedInput, HeaderAndChunkClaimingHugeSizes) {
  TraceBuilder b(1, 42, /*standard_defs=*/false);
  b.close("");
  // Rewrite rank 0 by hand: a header with an absurd world size, a chunk that
  // claims 4 GiB, and an events chunk whose record claims 2^63 ns of duration.
  std::string data;
  format::FileHeader h{};
  std::memcpy(h.magic, format::kFileMagic, 8);
  h.version = format::kFormatVersion;
  h.header_size = sizeof h;
  h.run_id = 42;
  h.rank = 0;
  h.world_size = INT32_MAX;
  h.timer = 2;
  data.append(reinterpret_cast<const char*>(&h), sizeof h);
  {
    uint32_t words[8] = {};
    format::RecordEncoder enc(words);
    enc.time(5, uint64_t{1} << 63);
    const size_t n = enc.commit(1);
    format::ChunkHeader c{};
    c.magic = format::kChunkMagic;
    c.type = static_cast<uint16_t>(format::ChunkType::Events);
    c.flags = format::kChunkSealed;
    c.used = static_cast<uint32_t>(n * 4);
    c.capacity = static_cast<uint32_t>(format::align8(n * 4));
    c.crc32 = format::crc32c(words, n * 4);
    c.base_time = UINT64_MAX - 10;
    data.append(reinterpret_cast<const char*>(&c), sizeof c);
    data.append(reinterpret_cast<const char*>(words), c.capacity);
  }
  {
    format::ChunkHeader c{};
    c.magic = format::kChunkMagic;
    c.type = static_cast<uint16_t>(format::ChunkType::Events);
    c.capacity = 0xFFFFFFF8u;  // 4 GiB claimed, 64 bytes present
    data.append(reinterpret_cast<const char*>(&c), sizeof c);
    data.append(64, '\x01');
  }
  std::ofstream(b.path(0), std::ios::binary | std::ios::trunc).write(data.data(),
                                                                      static_cast<std::streamsize>(data.size()));
  const auto a = analyze_checked(b.dir());  // must return, bounded
  EXPECT_TRUE(a.damaged || !a.usable());
  const auto cli = run_cli(b.dir());
  EXPECT_TRUE(cli.status == 2 || cli.status == 3) << cli.out;
  EXPECT_NE(cli.out.find("rank-00000.prof"), std::string::npos) << cli.out;
}

TEST(DamagedInput, TruncatedFileIsSalvaged) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    for (int k = 0; k < 2000; ++k) b.other(r, CommRank, (2 + k) * kMs, (2 + k) * kMs + 10 * kUs);
    b.finalize(r, 3000 * kMs, 3001 * kMs);
  }
  b.close();
  const uint64_t size = fs::file_size(b.path(1));
  fs::resize_file(b.path(1), size / 2);
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_TRUE(a.damaged);
  EXPECT_TRUE(any_example_contains(a, "rank-00001.prof: offset")) << warnings_text(a);
  const auto* r1 = rank_of(a.intervals[0], 1);
  ASSERT_TRUE(r1);
  EXPECT_GT(r1->calls, 100u);   // what was before the cut is analyzed
  EXPECT_LT(r1->calls, 2000u);
  const auto cli = run_cli(b.dir());
  EXPECT_EQ(cli.status, 3) << cli.out;
  EXPECT_NE(cli.out.find("truncated"), std::string::npos) << cli.out;
}

TEST(DamagedInput, RankKilledMidRunIsAnalyzedAsFarAsItGoes) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) {
    b.init(r, 0, 1 * kMs);
    b.collective(r, Barrier, 2 * kMs, 3 * kMs);
  }
  // Rank 2 is killed (SIGKILL: no end reason, last chunk unsealed) before the
  // second barrier; the others go on and finish.
  for (int r = 0; r < 2; ++r) {
    b.collective(r, Barrier, 4 * kMs, 5 * kMs);
    b.finalize(r, 10 * kMs, 11 * kMs);
    b.close(r);
  }
  b.w(2).close_without_sealing();
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_FALSE(a.damaged);
  EXPECT_TRUE(a.cut_short);
  EXPECT_TRUE(has_warning(a, "cut short")) << warnings_text(a);
  EXPECT_EQ(a.stats.incomplete_collectives, 1u);
  EXPECT_EQ(a.stats.collective_instances, 2u);
  const auto* r2 = rank_of(a.intervals[0], 2);
  ASSERT_TRUE(r2);
  EXPECT_NEAR(r2->time, 2e-3, 1e-12);  // MPI_Init's return to its last event
  const auto cli = run_cli(b.dir());
  EXPECT_EQ(cli.status, 0) << cli.out;
  EXPECT_NE(cli.out.find("cut short"), std::string::npos) << cli.out;
}

TEST(DamagedInput, UnbalancedMarkersAreCountedNotFatal) {
  TraceBuilder b(1);
  b.init(0, 0, 1 * kMs);
  b.end(0, 2 * kMs, 7);       // an end without a begin
  b.begin(0, 3 * kMs, 1);
  b.begin(0, 4 * kMs, 2, 2);
  b.end(0, 5 * kMs, 1);       // ids crossing: closes 2 (implicitly) and 1
  b.begin(0, 6 * kMs, 3, 3);  // never closed
  b.finalize(0, 9 * kMs, 10 * kMs);
  b.close();
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_EQ(a.stats.unbalanced_markers, 3u);
  EXPECT_TRUE(has_warning(a, "end without a begin"));
  EXPECT_TRUE(has_warning(a, "crossing"));
  EXPECT_TRUE(has_warning(a, "never closed"));
  const auto* i1 = find_interval(a, 1);
  const auto* i2 = find_interval(a, 2);
  const auto* i3 = find_interval(a, 3);
  ASSERT_TRUE(i1 && i2 && i3);
  EXPECT_NEAR(i1->main.execution_time, 2e-3, 1e-12);
  EXPECT_NEAR(i2->main.execution_time, 1e-3, 1e-12);  // closed with its parent
  EXPECT_NEAR(i3->main.execution_time, 3e-3, 1e-12);  // closed at MPI_Finalize
  EXPECT_EQ(run_cli(b.dir()).status, 0);
}

// The unbalanced markers' warnings give their times from the trace's start
// (its earliest event, here MPI_Init's enter at 10 ms), as every report's
// times and --window are: where to look in the timeline.
TEST(DamagedInput, UnbalancedMarkersWarningsCountFromTheTracesStart) {
  TraceBuilder b(1);
  b.init(0, 10 * kMs, 11 * kMs);
  b.end(0, 12 * kMs, 7);
  b.begin(0, 13 * kMs, 1);
  b.begin(0, 14 * kMs, 2, 2);
  b.end(0, 15 * kMs, 1);
  b.begin(0, 16 * kMs, 3, 3);
  b.finalize(0, 19 * kMs, 20 * kMs);
  b.close();
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_TRUE(any_example_contains(a, "end of interval 7 at 0.002000 s")) << warnings_text(a);
  EXPECT_TRUE(any_example_contains(a, "end of interval 1 while interval 2 is open, at 0.005000 s"))
      << warnings_text(a);
  EXPECT_TRUE(any_example_contains(a, "interval 3 opened at 0.006000 s")) << warnings_text(a);
}

TEST(DamagedInput, GarbageFileAmongRanks) {
  TraceBuilder b(2);
  build_ring(b, 2);
  b.close();
  std::ofstream(b.path(1), std::ios::binary | std::ios::trunc) << std::string(4096, 'x');
  const auto a = analyze_checked(b.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_TRUE(any_example_contains(a, "bad magic")) << warnings_text(a);
  EXPECT_EQ(run_cli(b.dir()).status, 3);
}

// A FIFO or a link to a device among the rank files is refused at open, named
// with what it is, never read (a FIFO would block for ever, /dev/zero would be
// read until memory runs out); the other ranks are analyzed.
TEST(DamagedInput, FifoOrDeviceInPlaceOfARankFileIsRefusedNotRead) {
  for (const std::string kind : {"FIFO", "character device"}) {
    TraceBuilder b(2);
    build_ring(b, 2);
    b.close();
    fs::remove(b.path(1));
    if (kind == "FIFO") ASSERT_EQ(::mkfifo(b.path(1).c_str(), 0600), 0);
    else fs::create_symlink("/dev/zero", b.path(1));
    const auto a = analyze_checked(b.dir());
    ASSERT_TRUE(a.usable());
    EXPECT_TRUE(a.damaged);
    EXPECT_EQ(a.processors, 1);
    EXPECT_TRUE(any_example_contains(a, "rank-00001.prof: is a " + kind + ", not a regular file"))
        << warnings_text(a);
    const auto cli = run_cli(b.dir());
    EXPECT_EQ(cli.status, 3) << cli.out;
    EXPECT_NE(cli.out.find("is a " + kind), std::string::npos) << cli.out;
  }
}

// A statistic counts its kind of problem, whatever the category's wording: a
// Wait on a request the trace never created and a Start of one are counted in
// stats.unknown_requests, and each named once among the warnings.
TEST(DamagedInput, UnknownRequestsAreCountedInTheirStatistic) {
  TraceBuilder b(2);
  build_ring(b, 2);
  b.close();
  TraceBuilder c(2);
  for (int r = 0; r < 2; ++r) {
    c.init(r, 0, 1 * kMs);
    if (r == 0) {
      c.wait(0, Wait, 2 * kMs, 3 * kMs, {TraceBuilder::done(0x9c0000aau)});
      c.request_op(0, Start, 4 * kMs, 5 * kMs, {0x9c0000abu});
    }
    c.finalize(r, 10 * kMs, 11 * kMs);
  }
  c.close();
  const auto a = analyze_checked(c.dir());
  ASSERT_TRUE(a.usable());
  EXPECT_EQ(a.stats.unknown_requests, 2u) << warnings_text(a);
  size_t named = 0;
  for (const auto& w : a.warnings)
    if (w.category == "completion of an unknown request" || w.category == "start of an unknown request") {
      EXPECT_EQ(w.count, 1u) << w.category;
      ++named;
    }
  EXPECT_EQ(named, 2u) << warnings_text(a);
  EXPECT_EQ(analyze_checked(b.dir()).stats.unknown_requests, 0u);
}

}  // namespace
}  // namespace prof::test
