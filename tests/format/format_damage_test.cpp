// Damaged traces: truncation, bit flips, garbage, unsealed and oversized chunks,
// files that are not traces at all, randomized corruption; and TraceDir's
// checks (foreign, missing, duplicate, unreadable rank files).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "format_test_util.h"
#include "prof/trace_reader.h"

namespace {

using namespace prof;
using namespace prof::trace;
using format::FuncKind;
namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

constexpr uint32_t kWorld = 0x44000000u;

std::vector<FileChunk> event_chunks_of(const Bytes& b) {
  std::vector<FileChunk> out;
  for (auto& c : file_chunks(b))
    if (c.h.type == uint16_t(format::ChunkType::Events)) out.push_back(c);
  return out;
}

// A single-stream trace of `n` Send events (bytes = i) in chunks of ~chunk_bytes.
struct Written {
  std::string path;
  std::vector<Event> events;
};
// write_sends' Send records: 8-byte short-time header + 3 payload words. The
// communicator alternates between two, so no record leaves its Comm word out
// (kSameComm) and every record has this size.
constexpr size_t kSendRecordBytes = 20;
constexpr uint32_t kSelf = 0x44000001u;

Written write_sends(const std::string& dir, int n, uint32_t chunk_bytes = 2048,
                    bool seal = true, int rank = 0, uint64_t run_id = 1, int world = 1) {
  Written w;
  char name[64];
  std::snprintf(name, sizeof name, format::kRankFilePattern, rank);
  w.path = dir + "/" + name;
  TraceWriter tw(w.path, rank, world, run_id, format::TimerKind::Monotonic, chunk_bytes);
  tw.meta("host", "testhost");
  tw.function(1, FuncKind::Send, "MPI_Send");
  tw.function(2, FuncKind::Other, "MPI_Comm_rank");
  uint64_t t = 1000;
  for (int i = 0; i < n; ++i) {
    Event e;
    e.kind = FuncKind::Send;
    e.func = 1;
    t += 7 + i % 5;
    e.enter = t;
    e.leave = t + 3;
    e.peer = i % 4;
    e.tag = i % 100;
    e.comm = i % 2 ? kSelf : kWorld;
    e.bytes = static_cast<uint64_t>(i);
    tw.event(e);
    w.events.push_back(e);
  }
  tw.end("finalize");
  if (seal) tw.close();
  else tw.close_without_sealing();
  return w;
}

// write_sends' events less those of the events chunks `skipped` (indices in
// `ev`), whose records the chunk headers count (every record
// kSendRecordBytes).
std::vector<Event> events_outside(const Written& w, const std::vector<FileChunk>& ev,
                                  std::initializer_list<size_t> skipped) {
  std::vector<Event> out;
  for (size_t i = 0, k = 0; i < ev.size(); ++i)
    for (size_t j = 0; j < ev[i].h.used / kSendRecordBytes; ++j, ++k)
      if (std::find(skipped.begin(), skipped.end(), i) == skipped.end()) out.push_back(w.events[k]);
  return out;
}

// Reads every event; checks they are a prefix of `want`; returns how many.
size_t read_prefix(const RankTrace& t, const std::vector<Event>& want) {
  auto c = t.events();
  Event g;
  size_t n = 0;
  while (c.next(g)) {
    if (n < want.size()) {
      EXPECT_EQ(g.enter, want[n].enter) << n;
      EXPECT_EQ(g.bytes, want[n].bytes) << n;
      EXPECT_EQ(g.peer, want[n].peer) << n;
    }
    ++n;
  }
  EXPECT_LE(n, want.size());
  return n;
}

// Reads everything from a file of unknown content: must not crash or hang.
void read_anything(const std::string& path) {
  std::string err;
  auto t = RankTrace::open(path, &err);
  if (!t) {
    EXPECT_FALSE(err.empty());
    return;
  }
  Event e;
  for (size_t s = 0; s < t->stream_count() + 1; ++s) {
    auto c = t->stream(s);
    while (c.next(e)) {
    }
  }
  auto m = t->events();
  while (m.next(e)) {
    for (auto& k : e.completions) (void)k.bytes;
    t->world_rank(e.comm, e.enter, e.peer);
    t->to_global_ns(e.enter);
  }
}

TEST(FormatDamage, ZeroLengthFileIsAnErrorNamingTheFile) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  write_file(path, {});
  std::string err;
  EXPECT_EQ(RankTrace::open(path, &err), nullptr);
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("offset 0"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(FormatDamage, MissingFileShortFileBadMagicBadVersion) {
  const std::string dir = temp_dir();
  std::string err;
  EXPECT_EQ(RankTrace::open(dir + "/nope.prof", &err), nullptr);
  EXPECT_NE(err.find(dir + "/nope.prof"), std::string::npos) << err;

  Written w = write_sends(dir, 10);
  Bytes good = read_file(w.path);

  Bytes shortb(good.begin(), good.begin() + 63);
  write_file(w.path, shortb);
  EXPECT_EQ(RankTrace::open(w.path, &err), nullptr);
  EXPECT_NE(err.find(w.path), std::string::npos) << err;
  EXPECT_NE(err.find("too short"), std::string::npos) << err;

  Bytes bad = good;
  bad[0] = 'X';
  write_file(w.path, bad);
  EXPECT_EQ(RankTrace::open(w.path, &err), nullptr);
  EXPECT_EQ(err, w.path + ": offset 0: not a prof trace (bad magic)");

  for (uint32_t v : {0u, format::kFormatVersion + 1}) {  // before the oldest, after the newest
    bad = good;
    std::memcpy(&bad[8], &v, 4);
    write_file(w.path, bad);
    EXPECT_EQ(RankTrace::open(w.path, &err), nullptr);
    EXPECT_NE(err.find(w.path), std::string::npos) << err;
    EXPECT_NE(err.find("version " + std::to_string(v)), std::string::npos) << err;
  }

  // A directory is not a trace file.
  EXPECT_EQ(RankTrace::open(dir, &err), nullptr);
  EXPECT_NE(err.find(dir), std::string::npos) << err;

  write_file(w.path, good);
  EXPECT_NE(RankTrace::open(w.path, &err), nullptr) << err;
  fs::remove_all(dir);
}

TEST(FormatDamage, TruncatedAtManyOffsetsSalvagesAPrefix) {
  const std::string dir = temp_dir();
  Written w = write_sends(dir, 3000);
  const Bytes good = read_file(w.path);
  ASSERT_GT(event_chunks_of(good).size(), 5u);
  const std::string cut_path = dir + "/cut.prof";
  size_t prev_n = 0;
  bool salvaged_partial = false;
  std::vector<size_t> cuts;
  for (size_t cut = 0; cut < good.size(); cut += (cut < 400 ? 1 : 97)) cuts.push_back(cut);
  for (auto& c : file_chunks(good))  // around every chunk boundary
    for (size_t d : {0, 1, 8, 31, 32, 33, 44, 45})
      if (c.off + d < good.size()) cuts.push_back(c.off + d);
  cuts.push_back(good.size());
  std::sort(cuts.begin(), cuts.end());
  for (size_t cut : cuts) {
    write_file(cut_path, Bytes(good.begin(), good.begin() + static_cast<ptrdiff_t>(cut)));
    std::string err;
    auto t = RankTrace::open(cut_path, &err);
    if (cut < sizeof(format::FileHeader)) {
      EXPECT_EQ(t, nullptr) << cut;
      EXPECT_NE(err.find(cut_path), std::string::npos);
      continue;
    }
    ASSERT_NE(t, nullptr) << cut << ": " << err;
    const size_t n = read_prefix(*t, w.events);
    EXPECT_GE(n, prev_n) << "cut at " << cut;  // more file, never fewer events
    prev_n = n;
    // Cut strictly inside an events chunk's used bytes: that chunk is salvaged.
    for (auto& c : event_chunks_of(good))
      if (cut > c.off + 32 + kEmptySnapshotBytes + 12 && cut < c.off + 32 + c.h.used) {
        EXPECT_GE(t->stats().truncated_chunks, 1u) << cut;
        salvaged_partial = salvaged_partial || n > 0;
      }
  }
  EXPECT_TRUE(salvaged_partial);
  EXPECT_EQ(prev_n, w.events.size());  // the whole file gives everything
  fs::remove_all(dir);
}

TEST(FormatDamage, TruncatedInsideLastChunkKeepsItsCompleteRecords) {
  const std::string dir = temp_dir();
  Written w = write_sends(dir, 500, 1 << 20);  // one events chunk
  Bytes b = read_file(w.path);
  auto ev = event_chunks_of(b);
  ASSERT_EQ(ev.size(), 1u);
  // Cut in the middle of record 300 (each Send record here is 5 words).
  const size_t rec = kSendRecordBytes;
  b.resize(ev[0].off + 32 + kEmptySnapshotBytes + 300 * rec + 10);
  write_file(w.path, b);
  auto t = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(read_prefix(*t, w.events), 300u);
  EXPECT_EQ(t->stats().truncated_chunks, 1u);
  EXPECT_EQ(t->stats().crc_mismatches, 0u);
  EXPECT_EQ(t->stats().bad_chunk_headers, 0u);
  fs::remove_all(dir);
}

// A writer killed between a definitions chunk's text and its alignment padding
// (the shim writes them with separate pwrites) leaves the last chunk a few bytes
// short: nothing is lost, no warning.
TEST(FormatDamage, MissingPaddingOfLastChunkIsNormal) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  {
    TraceWriter w(path, 0, 1, 1);
    w.meta("host", "x");
    w.end("signal:9");  // "E\tsignal:9\n": 11 bytes, 5 of padding
  }
  Bytes b = read_file(path);
  auto all = file_chunks(b);
  ASSERT_EQ(all.back().h.used, 11u);
  ASSERT_EQ(all.back().h.capacity, 16u);
  b.resize(b.size() - 5);
  write_file(path, b);
  auto t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->end_reason(), "signal:9");
  EXPECT_EQ(t->stats().truncated_chunks, 0u);
  EXPECT_TRUE(t->warnings().empty()) << t->warnings().front();
  // One byte of the text missing too: that is a truncation.
  b.resize(b.size() - 1);
  write_file(path, b);
  t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stats().truncated_chunks, 1u);
  EXPECT_EQ(t->end_reason(), "");  // the incomplete line is not read
  fs::remove_all(dir);
}

TEST(FormatDamage, FlippedBitInSealedChunk) {
  const std::string dir = temp_dir();
  Written w = write_sends(dir, 1000);
  Bytes b = read_file(w.path);
  auto ev = event_chunks_of(b);
  ASSERT_GE(ev.size(), 4u);
  b[ev[1].off + 32 + 17] ^= 0x10;
  write_file(w.path, b);
  auto t = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(t);
  // Every other chunk still reads, with correct times (each chunk has its base).
  const std::vector<Event> want = events_outside(w, ev, {1});
  const size_t n = read_prefix(*t, want);
  EXPECT_EQ(n, want.size());
  EXPECT_EQ(n, w.events.size() - ev[1].h.used / kSendRecordBytes);
  // Events chunks' CRCs are checked as the cursor enters them.
  EXPECT_EQ(t->stats().crc_mismatches, 1u);
  bool named = false;
  for (auto& s : t->warnings())
    named = named || (s.find(w.path) != std::string::npos &&
                      s.find("offset " + std::to_string(ev[1].off)) != std::string::npos);
  EXPECT_TRUE(named);
  fs::remove_all(dir);
}

// Format 8 numbers each stream's events chunks: a chunk cut out of the middle
// of the file (its bytes gone, the next chunk right after the one before)
// leaves a jump, which the reader counts and names; every other chunk reads.
TEST(FormatDamage, ChunkCutOutOfTheFileIsMissing) {
  const std::string dir = temp_dir();
  Written w = write_sends(dir, 1000);
  const Bytes good = read_file(w.path);
  const auto ev = event_chunks_of(good);
  ASSERT_GE(ev.size(), 4u);
  for (size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i].h.sequence, i);
  {
    auto t = RankTrace::open(w.path, nullptr);
    ASSERT_TRUE(t);
    EXPECT_EQ(read_prefix(*t, w.events), w.events.size());
    EXPECT_EQ(t->stats().missing_chunks, 0u);
    EXPECT_EQ(t->stats().damage(), 0u);
    EXPECT_TRUE(t->warnings().empty()) << t->warnings().front();
  }
  Bytes b = good;
  b.erase(b.begin() + static_cast<ptrdiff_t>(ev[1].off),
          b.begin() + static_cast<ptrdiff_t>(ev[2].off));
  write_file(w.path, b);
  auto t = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(t);
  const std::vector<Event> want = events_outside(w, ev, {1});
  EXPECT_EQ(read_prefix(*t, want), want.size());
  EXPECT_EQ(t->stats().missing_chunks, 1u);
  EXPECT_GT(t->stats().damage(), 0u);
  EXPECT_EQ(t->stats().bad_chunk_headers + t->stats().truncated_chunks, 0u);
  ASSERT_EQ(t->warnings().size(), 1u);
  EXPECT_EQ(t->warnings()[0], w.path + ": offset " + std::to_string(ev[1].off) +
                                  ": 1 events chunk of stream 0 missing before this chunk "
                                  "(numbered 2, expected 1)");
  // A cursor that numbers calls across chunks sees the loss.
  auto c = t->events();
  Event e;
  while (c.next(e)) {
  }
  EXPECT_EQ(c.gaps(), 1u);
  fs::remove_all(dir);
}

// 1000 Sends of one stream in chunks of 2 KiB, written as `version`;
// `count_chunks`: closed with a Live chunk whose slot 0 counts the stream's
// chunks, as the shim keeps it (format 8), and holds `heartbeat`.
Written write_numbered_sends(const std::string& dir, uint32_t version, bool count_chunks,
                             uint64_t heartbeat = 0) {
  Written w;
  w.path = dir + "/rank-00000.prof";
  TraceWriter tw(w.path, 0, 1, 1, format::TimerKind::Monotonic, 2048, version);
  tw.function(1, FuncKind::Send, "MPI_Send");
  for (int i = 0; i < 1000; ++i) {
    Event e;
    e.kind = FuncKind::Send;
    e.func = 1;
    e.enter = 1000 + 10 * static_cast<uint64_t>(i);
    e.leave = e.enter + 3;
    e.peer = i % 4;
    e.tag = i % 100;
    e.comm = i % 2 ? kSelf : kWorld;
    e.bytes = static_cast<uint64_t>(i);
    tw.event(e);
    w.events.push_back(e);
  }
  if (count_chunks) tw.close_counting_chunks(heartbeat);
  return w;
}

// The Live chunk that counts the chunks carries the last heartbeat: the rank
// was alive until the later of it and its last leave (1000 + 10 * 999 + 3).
TEST(FormatDamage, ChunkCountingLiveChunkCarriesTheHeartbeat) {
  for (const uint64_t heartbeat : {uint64_t{0}, uint64_t{5000}, uint64_t{20000}}) {
    const std::string dir = temp_dir();
    const Written w = write_numbered_sends(dir, format::kFormatVersion, true, heartbeat);
    auto t = RankTrace::open(w.path, nullptr);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->heartbeat(), heartbeat);
    EXPECT_EQ(t->last_alive(), std::max<uint64_t>(heartbeat, 10993)) << heartbeat;
    EXPECT_TRUE(t->in_flight().empty());
    EXPECT_EQ(read_prefix(*t, w.events), w.events.size());
    EXPECT_TRUE(t->warnings().empty()) << t->warnings().front();
    fs::remove_all(dir);
  }
}

// A file cut at a chunk boundary before its stream's last chunks: no chunk
// is truncated and the numbers do not jump, but the stream's Live slot counts
// more chunks than the file holds.
TEST(FormatDamage, FileCutAtAChunkBoundaryIsMissingItsLastChunks) {
  const std::string dir = temp_dir();
  Written w = write_numbered_sends(dir, format::kFormatVersion, true);
  const Bytes good = read_file(w.path);
  const auto ev = event_chunks_of(good);
  ASSERT_GE(ev.size(), 4u);
  {
    auto t = RankTrace::open(w.path, nullptr);
    ASSERT_TRUE(t);
    EXPECT_EQ(read_prefix(*t, w.events), w.events.size());
    EXPECT_EQ(t->stats().damage(), 0u);
    EXPECT_TRUE(t->warnings().empty()) << t->warnings().front();
  }
  // Cut before the last two events chunks, the Live chunk kept.
  const auto all = file_chunks(good);
  const size_t live_at = all.back().off;
  ASSERT_EQ(all.back().h.type, uint16_t(format::ChunkType::Live));
  Bytes b(good.begin(), good.begin() + static_cast<ptrdiff_t>(ev[ev.size() - 2].off));
  b.insert(b.end(), good.begin() + static_cast<ptrdiff_t>(live_at), good.end());
  write_file(w.path, b);
  auto t = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(t);
  const std::vector<Event> want = events_outside(w, ev, {ev.size() - 2, ev.size() - 1});
  EXPECT_EQ(read_prefix(*t, want), want.size());
  EXPECT_EQ(t->stats().missing_chunks, 2u);
  EXPECT_EQ(t->stats().truncated_chunks, 0u);
  ASSERT_EQ(t->warnings().size(), 1u);
  EXPECT_NE(t->warnings()[0].find("2 events chunks of stream 0 missing after this chunk"),
            std::string::npos)
      << t->warnings()[0];
  auto c = t->events();
  Event e;
  while (c.next(e)) {
  }
  EXPECT_EQ(c.gaps(), 1u);
  fs::remove_all(dir);
}

// Files before format 8 have no chunk numbers: they read as before, and a
// chunk cut out of one goes unseen (the reader cannot tell).
TEST(FormatDamage, OlderVersionsReadWithoutTheChunkCheck) {
  for (const uint32_t version : {format::kFirstRepeatVersion, format::kFirstSiteVersion}) {
    const std::string dir = temp_dir();
    const Written w = write_numbered_sends(dir, version, true);
    const std::string& path = w.path;
    const std::vector<Event>& written = w.events;
    Bytes b = read_file(path);
    const auto ev = event_chunks_of(b);
    ASSERT_GE(ev.size(), 4u);
    for (const auto& c : ev) EXPECT_EQ(c.h.sequence, 0u) << version;  // the old stream's high half
    {
      auto t = RankTrace::open(path, nullptr);
      ASSERT_TRUE(t) << version;
      EXPECT_EQ(t->header().version, version);
      EXPECT_EQ(read_prefix(*t, written), written.size()) << version;
      EXPECT_EQ(t->stats().damage(), 0u) << version;
      EXPECT_TRUE(t->warnings().empty()) << t->warnings().front();
    }
    b.erase(b.begin() + static_cast<ptrdiff_t>(ev[1].off),
            b.begin() + static_cast<ptrdiff_t>(ev[2].off));
    write_file(path, b);
    auto t = RankTrace::open(path, nullptr);
    ASSERT_TRUE(t) << version;
    EXPECT_EQ(t->stats().missing_chunks, 0u) << version;
    EXPECT_TRUE(t->warnings().empty()) << t->warnings().front();
    fs::remove_all(dir);
  }
}

// A cursor decodes its first chunks in the file mapping and reads the later
// ones into its buffer (reader_internal.h, kMappedChunks): a chunk whose CRC
// fails is skipped on either path, and every other chunk reads whole, in order.
TEST(FormatDamage, FlippedBitsInMappedAndBufferedChunks) {
  const std::string dir = temp_dir();
  Written w = write_sends(dir, 1000);
  Bytes b = read_file(w.path);
  auto ev = event_chunks_of(b);
  ASSERT_GE(ev.size(), 9u);
  const size_t damaged[] = {1, 7};  // one among the first chunks, one well after them
  for (size_t i : damaged) b[ev[i].off + 32 + 17] ^= 0x10;
  write_file(w.path, b);
  const std::vector<Event> want = events_outside(w, ev, {damaged[0], damaged[1]});
  auto t = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(read_prefix(*t, want), want.size());
  EXPECT_EQ(t->stats().crc_mismatches, 2u);
  fs::remove_all(dir);
}

// Chunks up to 16 MiB are read into a cursor's buffer; larger ones (a
// PROF_BUFFER_MB above 16) are decoded from the file mapping. Both paths must
// decode the same events and skip a chunk whose CRC fails.
TEST(FormatDamage, ChunkAboveTheReadLimitDecodesFromTheMapping) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  const uint32_t kBig = 20u << 20;
  const uint64_t n = kBig / kSendRecordBytes + 1000;  // fills the big chunk, then a small one
  {
    TraceWriter tw(path, 0, 1, 1, format::TimerKind::Monotonic, kBig);
    tw.function(1, FuncKind::Send, "MPI_Send");
    Event e;
    e.kind = FuncKind::Send;
    e.func = 1;
    for (uint64_t i = 0; i < n; ++i) {
      e.comm = i % 2 ? kSelf : kWorld;  // every record 20 bytes (see kSendRecordBytes)
      e.enter = 1000 + 10 * i;
      e.leave = e.enter + 3;
      e.peer = static_cast<int32_t>(i % 4);
      e.tag = static_cast<int32_t>(i % 100);
      e.bytes = i;
      tw.event(e);
    }
  }
  Bytes b = read_file(path);
  auto ev = event_chunks_of(b);
  ASSERT_EQ(ev.size(), 2u);
  ASSERT_GT(ev[0].h.used, 16u << 20);
  ASSERT_LT(ev[1].h.used, 1u << 20);
  const uint64_t in_big = ev[0].h.used / kSendRecordBytes;

  auto read_all = [&](uint64_t first) {
    auto t = RankTrace::open(path, nullptr);
    EXPECT_TRUE(t);
    auto c = t->events();
    Event g;
    uint64_t i = first, bad = 0;
    while (c.next(g)) {
      bad += g.bytes != i || g.enter != 1000 + 10 * i || g.peer != static_cast<int32_t>(i % 4);
      ++i;
    }
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(i, n);
    return t->stats().crc_mismatches;
  };
  EXPECT_EQ(read_all(0), 0u);
  b[ev[0].off + 32 + (12u << 20)] ^= 0x04;  // inside the big chunk
  write_file(path, b);
  EXPECT_EQ(read_all(in_big), 1u);  // the big chunk skipped, the small one read
  fs::remove_all(dir);
}

TEST(FormatDamage, FlippedBitInDefinitionsChunk) {
  const std::string dir = temp_dir();
  Written w = write_sends(dir, 10);
  Bytes b = read_file(w.path);
  auto all = file_chunks(b);
  ASSERT_EQ(all[0].h.type, uint16_t(format::ChunkType::Definitions));  // the M line
  b[all[0].off + 32 + 2] ^= 0x01;
  write_file(w.path, b);
  auto t = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stats().crc_mismatches, 1u);
  EXPECT_EQ(t->meta().count("host"), 0u);
  EXPECT_EQ(read_prefix(*t, w.events), 10u);
  fs::remove_all(dir);
}

TEST(FormatDamage, HugeCapacityIsTruncatedNotAllocated) {
  const std::string dir = temp_dir();
  Written w = write_sends(dir, 1000);
  Bytes b = read_file(w.path);
  auto ev = event_chunks_of(b);
  ASSERT_GE(ev.size(), 3u);
  // The last events chunk claims 2^31 bytes: sealed data still there.
  Bytes sealed = b;
  const uint32_t huge = 0x80000000u;
  std::memcpy(sealed.data() + ev.back().off + 8, &huge, 4);
  // Same, unsealed (flags 0): salvaged by scanning.
  Bytes unsealed = sealed;
  const uint16_t zero = 0;
  std::memcpy(unsealed.data() + ev.back().off + 6, &zero, 2);
  // A middle chunk claims 2^31: later chunks are found again by resync.
  Bytes middle = b;
  std::memcpy(middle.data() + ev[1].off + 8, &huge, 4);

  for (const Bytes* variant : {&sealed, &unsealed, &middle}) {
    write_file(w.path, *variant);
    // In a child with a 1 GiB address-space limit: a 2 GiB allocation would die.
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
      // (Sanitizers reserve terabytes of shadow space: no limit under them.)
      rlimit lim{uint64_t{1} << 30, uint64_t{1} << 30};
      setrlimit(RLIMIT_AS, &lim);
#endif
      auto t = RankTrace::open(w.path, nullptr);
      if (!t) _exit(3);
      Event e;
      size_t n = 0;
      auto c = t->events();
      while (c.next(e)) ++n;
      _exit(n == 1000 && t->stats().truncated_chunks == 1 ? 0 : 4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status)) << "child crashed";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "variant " << (variant - &sealed);
    auto t = RankTrace::open(w.path, nullptr);
    ASSERT_TRUE(t);
    EXPECT_EQ(read_prefix(*t, w.events), 1000u);
    EXPECT_EQ(t->stats().truncated_chunks, 1u);
    EXPECT_EQ(t->stats().bad_chunk_headers, 0u);
  }
  fs::remove_all(dir);
}

TEST(FormatDamage, UnsealedLastChunkAllRecordsSalvaged) {
  const std::string dir = temp_dir();
  Written w = write_sends(dir, 777, 2048, /*seal=*/false);
  auto t = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stats().unsealed_chunks, 1u);
  EXPECT_EQ(t->stats().truncated_chunks, 0u);
  EXPECT_EQ(read_prefix(*t, w.events), 777u);
  EXPECT_EQ(t->stats().crc_mismatches, 0u);
  EXPECT_EQ(t->end_reason(), "finalize");
  ASSERT_EQ(t->warnings().size(), 1u);
  const std::string& msg = t->warnings()[0];
  EXPECT_NE(msg.find(w.path), std::string::npos) << msg;
  EXPECT_NE(msg.find("unsealed chunk at offset"), std::string::npos) << msg;
  EXPECT_NE(msg.find("process ended without sealing"), std::string::npos) << msg;
  // The salvaged count is the number of records in the last chunk.
  Bytes b = read_file(w.path);
  auto ev = event_chunks_of(b);
  size_t before = 0;
  for (size_t i = 0; i + 1 < ev.size(); ++i)
    before += (ev[i].h.used - kEmptySnapshotBytes) / kSendRecordBytes;
  // The chunk's snapshot is a record too.
  EXPECT_NE(msg.find("; " + std::to_string(777 - before + 1) + " records salvaged"),
            std::string::npos)
      << msg;
  fs::remove_all(dir);
}

TEST(FormatDamage, UnsealedChunkWithPartialRecordStopsAtZeroWord) {
  const std::string dir = temp_dir();
  Written w = write_sends(dir, 50, 1 << 16, /*seal=*/false);
  Bytes b = read_file(w.path);
  auto ev = event_chunks_of(b);
  ASSERT_EQ(ev.size(), 1u);
  // A killed writer: record 40's first word not yet stored, payload present.
  const size_t rec40 = ev[0].off + 32 + kEmptySnapshotBytes + 40 * kSendRecordBytes;
  std::memset(b.data() + rec40, 0, 4);
  write_file(w.path, b);
  auto t = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(read_prefix(*t, w.events), 40u);
  EXPECT_EQ(t->stats().bad_records, 0u);
  fs::remove_all(dir);
}

TEST(FormatDamage, GarbageBetweenChunksResyncs) {
  const std::string dir = temp_dir();
  Written w = write_sends(dir, 1000);
  Bytes b = read_file(w.path);
  auto ev = event_chunks_of(b);
  ASSERT_GE(ev.size(), 3u);
  Bytes g = b;
  Bytes garbage(40, 0xAB);
  g.insert(g.begin() + static_cast<ptrdiff_t>(ev[2].off), garbage.begin(), garbage.end());
  write_file(w.path, g);
  auto t = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stats().bad_chunk_headers, 1u);
  EXPECT_EQ(read_prefix(*t, w.events), 1000u);
  EXPECT_EQ(t->stats().crc_mismatches, 0u);
  bool named = false;
  for (auto& s : t->warnings())
    named = named || s.find(w.path + ": offset " + std::to_string(ev[2].off)) != std::string::npos;
  EXPECT_TRUE(named);

  // Zero padding is normal: no warning at all.
  Bytes z = b;
  Bytes zeros(64, 0);
  z.insert(z.begin() + static_cast<ptrdiff_t>(ev[2].off), zeros.begin(), zeros.end());
  write_file(w.path, z);
  t = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stats().bad_chunk_headers, 0u);
  EXPECT_TRUE(t->warnings().empty());
  EXPECT_EQ(read_prefix(*t, w.events), 1000u);

  // Garbage at the end of the file.
  Bytes e = b;
  for (int i = 0; i < 100; ++i) e.push_back(static_cast<unsigned char>(i * 7 + 1));
  write_file(w.path, e);
  t = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stats().bad_chunk_headers, 1u);
  EXPECT_EQ(read_prefix(*t, w.events), 1000u);
  fs::remove_all(dir);
}

TEST(FormatDamage, UnknownChunkTypeSkipped) {
  const std::string dir = temp_dir();
  Written w = write_sends(dir, 100);
  Bytes b = read_file(w.path);
  auto ev = event_chunks_of(b);
  format::ChunkHeader h{};
  h.magic = format::kChunkMagic;
  h.type = 9;
  h.flags = format::kChunkSealed;
  h.capacity = 48;
  h.used = 48;
  Bytes chunk(sizeof h + 48, 0x5A);
  std::memcpy(chunk.data(), &h, sizeof h);
  b.insert(b.begin() + static_cast<ptrdiff_t>(ev[0].off), chunk.begin(), chunk.end());
  write_file(w.path, b);
  auto t = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stats().unknown_chunk_types, 1u);
  EXPECT_EQ(t->stats().bad_chunk_headers, 0u);
  EXPECT_EQ(read_prefix(*t, w.events), 100u);
  fs::remove_all(dir);
}

// Random corruption of a valid trace: never a crash, a hang or an exception.
TEST(FormatDamage, RandomCorruptionNeverCrashes) {
  const std::string dir = temp_dir();
  Written w = write_sends(dir, 400, 1024);
  {
    // Add some variety: other kinds, several streams.
    TraceWriter tw(dir + "/multi.prof", 0, 2, 1, format::TimerKind::Tsc, 1024);
    tw.function(3, FuncKind::Completion, "MPI_Waitall");
    tw.function(4, FuncKind::RequestOp, "MPI_Startall");
    tw.function(5, FuncKind::SendRecv, "MPI_Sendrecv");
    CommDef c;
    c.handle = 0x84000001u;
    c.ranks = {0, 1};
    tw.comm(c);
    std::vector<Completion> comps(5, Completion{0xAC000001u, 70000, 1, 5ull << 32, true});
    std::vector<uint32_t> reqs(9, 0xAC000002u);
    for (int i = 0; i < 300; ++i) {
      Event e;
      e.stream = i % 3;
      e.enter = 100 + i * 10;
      e.leave = e.enter + 5;
      e.kind = (i % 3 == 0) ? FuncKind::Completion
                            : (i % 3 == 1 ? FuncKind::RequestOp : FuncKind::SendRecv);
      e.func = static_cast<uint16_t>(3 + i % 3);
      e.completions = comps;
      e.requests = reqs;
      e.peer = 1;
      e.recv_peer = 40000;
      tw.event(e);
    }
  }
  const std::string fuzz = dir + "/fuzz.prof";
  std::mt19937_64 rng(1234);
  for (const std::string& src : {w.path, dir + "/multi.prof"}) {
    const Bytes good = read_file(src);
    for (int iter = 0; iter < 600; ++iter) {
      Bytes b = good;
      const int mode = iter % 4;
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < flips; ++k) {
        const size_t pos = 64 + rng() % (b.size() - 64);
        if (mode == 0) b[pos] ^= static_cast<unsigned char>(1u << (rng() % 8));
        else if (mode == 1) b[pos] = static_cast<unsigned char>(rng());
        else if (mode == 2) b[pos] = 0xFF;
        else b[pos] = 0;
      }
      if (rng() % 3 == 0) b.resize(64 + rng() % (b.size() - 64));
      write_file(fuzz, b);
      read_anything(fuzz);
    }
  }
  // Pure noise after a valid file header.
  const Bytes good = read_file(w.path);
  for (int iter = 0; iter < 200; ++iter) {
    Bytes b(good.begin(), good.begin() + 64);
    const size_t n = rng() % 5000;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t r = rng();
      // Sprinkle chunk magics so the header paths are exercised.
      if (r % 11 == 0 && b.size() % 8 == 0) {
        const uint32_t m = format::kChunkMagic;
        b.insert(b.end(), reinterpret_cast<const unsigned char*>(&m),
                 reinterpret_cast<const unsigned char*>(&m) + 4);
      } else {
        b.push_back(static_cast<unsigned char>(r >> 8));
      }
    }
    write_file(fuzz, b);
    read_anything(fuzz);
  }
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------
TEST(FormatTraceDir, ForeignAndMissingRanks) {
  const std::string dir = temp_dir();
  for (int r : {0, 1, 3}) write_sends(dir, 10 + r, 2048, true, r, 0xABC, 4);
  // rank-00002.prof from another run.
  Written foreign = write_sends(dir, 5, 2048, true, 2, 0xDEF, 4);
  // Not a rank file: ignored.
  write_file(dir + "/notes.txt", {'h', 'i'});
  TraceDir d = TraceDir::open(dir);
  EXPECT_TRUE(d.errors.empty());
  EXPECT_EQ(d.world_size, 4);
  ASSERT_EQ(d.ranks.size(), 3u);
  EXPECT_EQ(d.ranks[0]->rank(), 0);
  EXPECT_EQ(d.ranks[1]->rank(), 1);
  EXPECT_EQ(d.ranks[2]->rank(), 3);
  bool foreign_warned = false, missing_warned = false;
  for (auto& w : d.warnings) {
    foreign_warned = foreign_warned || (w.find(foreign.path) != std::string::npos &&
                                        w.find("run_id") != std::string::npos);
    missing_warned = missing_warned || w.find("rank 2 missing") != std::string::npos;
  }
  EXPECT_TRUE(foreign_warned);
  EXPECT_TRUE(missing_warned);
  EXPECT_EQ(d.warnings.size(), 2u);
  fs::remove_all(dir);
}

TEST(FormatTraceDir, DuplicateUnreadableAndWrongWorld) {
  const std::string dir = temp_dir();
  write_sends(dir, 10, 2048, true, 0, 5, 3);
  write_sends(dir, 10, 2048, true, 1, 5, 3);
  write_sends(dir, 10, 2048, true, 2, 5, 3);
  // A copy of rank 1 under another name: duplicate.
  fs::copy_file(dir + "/rank-00001.prof", dir + "/rank-00007.prof");
  // Garbage named like a rank file.
  write_file(dir + "/rank-00008.prof", {'n', 'o', 'p', 'e'});
  TraceDir d = TraceDir::open(dir);
  EXPECT_TRUE(d.errors.empty());
  ASSERT_EQ(d.ranks.size(), 3u);
  EXPECT_EQ(d.ranks[1]->path(), dir + "/rank-00001.prof");  // the rightly named one kept
  int dup = 0, unreadable = 0;
  for (auto& w : d.warnings) {
    dup += w.find("duplicate rank 1") != std::string::npos;
    unreadable += w.find("rank-00008.prof") != std::string::npos;
  }
  EXPECT_EQ(dup, 1);
  EXPECT_EQ(unreadable, 1);
  EXPECT_EQ(d.warnings.size(), 2u);
  fs::remove_all(dir);
}

// A trace of many ranks: each rank file keeps its descriptor while the trace
// is open (up to half the descriptor limit), the opening leaves no other
// descriptor behind (it grows the descriptor table first, through a
// descriptor of its own), and closing the trace closes them all.
TEST(FormatTraceDir, ManyRanksKeepOnlyTheirDescriptorsAndCloseThemAll) {
  auto open_descriptors = [] {
    size_t n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++n;
    return n;
  };
  constexpr int kRanks = 100;
  const std::string dir = temp_dir();
  for (int r = 0; r < kRanks; ++r) write_sends(dir, 4, 2048, true, r, 0x5EED, kRanks);
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  const size_t kept = std::min<size_t>(kRanks, limit.rlim_cur / 2);
  const size_t before = open_descriptors();
  {
    TraceDir d = TraceDir::open(dir);
    ASSERT_TRUE(d.errors.empty());
    ASSERT_EQ(d.ranks.size(), size_t{kRanks});
    EXPECT_EQ(open_descriptors(), before + kept);
  }
  EXPECT_EQ(open_descriptors(), before);
  fs::remove_all(dir);
}

TEST(FormatTraceDir, ErrorsForMissingOrEmptyDirectory) {
  const std::string dir = temp_dir();
  TraceDir d = TraceDir::open(dir + "/does-not-exist");
  ASSERT_FALSE(d.errors.empty());
  EXPECT_NE(d.errors[0].find("does-not-exist"), std::string::npos);
  EXPECT_TRUE(d.ranks.empty());
  TraceDir e = TraceDir::open(dir);
  ASSERT_FALSE(e.errors.empty());
  EXPECT_NE(e.errors[0].find("no rank-"), std::string::npos);
  write_file(dir + "/rank-00000.prof", {});
  TraceDir f = TraceDir::open(dir);
  EXPECT_FALSE(f.errors.empty());
  EXPECT_EQ(f.warnings.size(), 1u);
  fs::remove_all(dir);
}

}  // namespace

// A record that leaves out its Comm (kSameComm) with no Comm before it in its
// chunk cannot be decoded: it is counted and skipped, the rest is read.
TEST(FormatDamage, SameCommWithoutAnEarlierCommIsABadRecord) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  {
    TraceWriter tw(path, 0, 1, 1, format::TimerKind::Monotonic, 4096);
    tw.function(1, FuncKind::Send, "MPI_Send");
    tw.function(2, FuncKind::Other, "MPI_Comm_rank");
    for (int i = 0; i < 3; ++i) {
      Event e;
      e.kind = FuncKind::Send;
      e.func = 1;
      e.enter = 100 + 10 * static_cast<uint64_t>(i);
      e.leave = e.enter + 2;
      e.peer = i;
      e.comm = kWorld;  // the second and third leave it out
      e.bytes = static_cast<uint64_t>(i);
      tw.event(e);
    }
    tw.close_without_sealing();  // no CRC: the edit below is read as is
  }
  Bytes b = read_file(path);
  auto ev = event_chunks_of(b);
  ASSERT_EQ(ev.size(), 1u);
  const size_t first = ev[0].off + sizeof(format::ChunkHeader) + kEmptySnapshotBytes;
  uint32_t w0, w0_second;
  std::memcpy(&w0, &b[first], 4);
  ASSERT_EQ(w0 & 0xFFFFu, 1u);
  std::memcpy(&w0_second, &b[first + format::record_words(w0) * 4], 4);
  ASSERT_TRUE((w0_second >> 16) & format::kSameComm);
  // The first record becomes an MPI_Comm_rank (its payload ignored), so the
  // communicator the next ones refer to is never given.
  w0 = (w0 & ~0xFFFFu) | 2u;
  std::memcpy(&b[first], &w0, 4);
  write_file(path, b);
  auto t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  auto c = t->events();
  Event g;
  std::vector<uint16_t> funcs;
  while (c.next(g)) funcs.push_back(g.func);
  EXPECT_EQ(funcs, (std::vector<uint16_t>{2}));
  EXPECT_EQ(t->stats().bad_records, 2u);
  bool named = false;
  for (const auto& w : t->warnings())
    named = named || w.find("not given earlier in its chunk") != std::string::npos;
  EXPECT_TRUE(named);
  fs::remove_all(dir);
}
