// MergedCursor::next_batch against next(): the same events, every field, on
// the same bytes: every kind narrow and wide, repeated communicators and
// packed requests, calls continued over records and chunks, long times,
// chunk edges, format versions 1, 2 and current, damaged (CRC mismatch),
// unsealed and randomly corrupted salvaged chunks, calls in flight, several
// streams and cursors that start inside a trace (window index, seek); calls
// that repeat the previous call of their function (format 6 leaves the
// payload out) decode as the same calls written in full (format 5). Also
// that a batch's events start in one chunk and that the reader's statistics
// and warnings come out the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "format_test_util.h"
#include "prof/event_difference.h"
#include "prof/trace_reader.h"

namespace {

using namespace prof;
using namespace prof::trace;
using format::FuncKind;
using Bytes = std::vector<unsigned char>;

// One decoded event with copies of its lists, and the chunk the cursor said
// it starts in.
struct Decoded {
  Event e;
  std::vector<Completion> completions;
  std::vector<uint32_t> requests;
  size_t chunk = SIZE_MAX;
};

Decoded copy_of(const Event& e, size_t chunk) {
  Decoded d{e, {e.completions.begin(), e.completions.end()}, {e.requests.begin(), e.requests.end()},
            chunk};
  d.e.completions = {};
  d.e.requests = {};
  return d;
}

std::vector<Decoded> by_next(RankTrace::MergedCursor c) {
  std::vector<Decoded> out;
  Event e;
  while (c.next(e)) out.push_back(copy_of(e, c.current_chunk()));
  return out;
}

// Copies each batch only once it is whole: earlier events' lists must still
// hold. Every leave lies within the batch's bounds (the damage check passes
// batches on them: DamageStop::admits).
std::vector<Decoded> by_batch(RankTrace::MergedCursor c, size_t* batches = nullptr) {
  std::vector<Decoded> out;
  for (auto batch = c.next_batch(); !batch.empty(); batch = c.next_batch()) {
    EXPECT_LE(batch.size(), RankTrace::MergedCursor::kBatchEvents);
    const auto [lower, upper] = c.batch_leave_bounds();
    size_t outside = 0;
    for (const Event& e : batch) outside += e.leave < lower || e.leave > upper;
    EXPECT_EQ(outside, 0u) << "batch from event " << out.size() << ", bounds [" << lower << ", " << upper << "]";
    for (const Event& e : batch) out.push_back(copy_of(e, c.current_chunk()));
    if (batches) ++*batches;
  }
  return out;
}

// Each event's members (prof/event_difference.h) and the chunk it starts in.
Event with_lists(const Decoded& d) {
  Event e = d.e;
  e.completions = d.completions;
  e.requests = d.requests;
  return e;
}

void expect_same(const std::vector<Decoded>& want, const std::vector<Decoded>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i));
    EXPECT_EQ(event_difference(with_lists(want[i]), with_lists(got[i])), "");
    EXPECT_EQ(want[i].chunk, got[i].chunk);
  }
}

void expect_same_stats(const RankTrace& a, const RankTrace& b) {
  const ReadStats &x = a.stats(), &y = b.stats();
  EXPECT_EQ(x.events, y.events);
  EXPECT_EQ(x.bad_records, y.bad_records);
  EXPECT_EQ(x.backwards_timestamps, y.backwards_timestamps);
  EXPECT_EQ(x.crc_mismatches, y.crc_mismatches);
  EXPECT_EQ(x.unsealed_chunks, y.unsealed_chunks);
  EXPECT_EQ(a.warnings(), b.warnings());
}

std::unique_ptr<RankTrace> open_trace(const std::string& path) {
  std::string error;
  auto t = RankTrace::open(path, &error);
  EXPECT_TRUE(t) << error;
  return t;
}

// The whole trace both ways, each on its own RankTrace (statistics are per
// trace); returns next()'s statistics.
ReadStats expect_batch_equals_next(const std::string& path, size_t* events = nullptr) {
  auto a = open_trace(path), b = open_trace(path);
  if (!a || !b) return {};
  size_t batches = 0;
  const auto want = by_next(a->events());
  const auto got = by_batch(b->events(), &batches);
  expect_same(want, got);
  expect_same_stats(*a, *b);
  if (b->stream_count() == 1 && !want.empty()) {
    EXPECT_LT(batches, want.size());
  }
  if (events) *events = want.size();
  size_t long_calls = 0;  // continued over records
  for (const Decoded& d : want) long_calls += d.completions.size() > 32 || d.requests.size() > 120;
  if (want.size() > 1000) {
    EXPECT_GT(long_calls, 0u);
  }
  return a->stats();
}

// A stream of random events of every kind; `context` lets the writer leave
// out repeated communicators and pack requests (not in a version-1 file).
struct RandomTrace {
  std::mt19937_64 rng;
  bool context = true;
  // Most calls repeat the arguments of one of the last 4 new calls of their
  // kind (new times), as a loop's calls from a few sites do: what format 6's
  // repeats leave out.
  bool repetitive = false;
  std::vector<std::vector<Completion>> completion_store;
  std::vector<std::vector<uint32_t>> request_store;

  explicit RandomTrace(uint64_t seed) : rng(seed) {}
  uint64_t below(uint64_t n) { return rng() % n; }
  int32_t peer_or_tag() {
    switch (below(4)) {
      case 0: return static_cast<int32_t>(below(8));
      case 1: return -static_cast<int32_t>(below(4));
      case 2: return static_cast<int32_t>(below(70000));
      default: return static_cast<int32_t>(below(32768));
    }
  }
  uint64_t bytes() {
    switch (below(4)) {
      case 0: return below(100);
      case 1: return below(70000);
      case 2: return uint64_t{5} << 30;
      default: return below(uint64_t{1} << 32);
    }
  }
  uint32_t comm() {
    if (!context) return 0x84000000u + static_cast<uint32_t>(below(1u << 20)) * 2;
    const uint32_t comms[] = {0x44000000u, 0x44000001u, 0x84000002u};
    return comms[below(3)];
  }
  uint32_t request() {
    const uint32_t high = context ? 0xAC00u : static_cast<uint32_t>(0xAC00u + below(200));
    return (high << 16) | static_cast<uint32_t>(below(65536));
  }

  void write(TraceWriter& w, size_t n, uint32_t streams = 1) {
    const char* names[] = {"MPI_Comm_rank", "MPI_Send",   "MPI_Recv",    "MPI_Sendrecv",
                           "MPI_Isend",     "MPI_Irecv",  "MPI_Waitall", "MPI_Startall",
                           "MPI_Bcast",     "MPI_Ibcast", "MPI_Comm_split", "MPI_Probe",
                           "MPI_Marker",    "MPI_Alltoall", "MPI_Ialltoall"};
    for (int k = 0; k <= 14; ++k)
      if (k != static_cast<int>(FuncKind::Marker))
        w.function(static_cast<uint16_t>(k + 1), static_cast<FuncKind>(k), names[k]);
    completion_store.reserve(n);
    request_store.reserve(n);
    std::vector<uint64_t> t(streams, 1000);
    // By kind, the last 4 new calls, which later calls repeat (as from 4 sites).
    std::vector<std::vector<Event>> previous(16);
    for (size_t i = 0; i < n; ++i) {
      Event e;
      e.stream = static_cast<uint32_t>(below(streams));
      const uint64_t pick = below(20);
      t[e.stream] += pick == 0 ? (uint64_t{1} << 33) : pick == 1 ? 70000 : below(50);
      e.enter = t[e.stream];
      e.leave = e.enter + (pick == 2 ? (uint64_t{5} << 32) : pick == 3 ? 80000 : below(40));
      e.kind = static_cast<FuncKind>(below(15));
      e.func = e.kind == FuncKind::Marker ? format::kMarkerFuncId
                                          : static_cast<uint16_t>(static_cast<int>(e.kind) + 1);
      if (below(8) == 0) e.flags = format::kCallFailed;
      e.peer = peer_or_tag();
      e.tag = peer_or_tag();
      e.comm = comm();
      e.bytes = bytes();
      e.root = peer_or_tag();
      e.request = request();
      e.recv_peer = peer_or_tag();
      e.recv_tag = peer_or_tag();
      e.recv_bytes = bytes();
      e.new_comm = comm();
      e.interval_id = static_cast<uint32_t>(below(5));
      e.callsite = static_cast<uint32_t>(below(100));
      e.marker_begin = below(2);
      if (e.kind == FuncKind::Completion) {
        // Up to 80 entries: calls split over continuation records.
        auto& c = completion_store.emplace_back(below(4) == 0 ? below(80) : below(4));
        for (Completion& k : c) {
          k.request = request();
          k.source = peer_or_tag();
          k.tag = peer_or_tag();
          k.bytes = bytes() & ~format::kCancelledBit64;
          k.cancelled = below(5) == 0;
        }
        e.completions = c;
      } else if (e.kind == FuncKind::RequestOp) {
        auto& r = request_store.emplace_back(below(4) == 0 ? below(300) : below(4));
        for (uint32_t& q : r) q = request();
        e.requests = r;
      }
      auto& calls = previous[static_cast<size_t>(e.kind)];
      if (repetitive && !calls.empty() && below(4) != 0) {
        // Its lists too: their stores outlive the writer.
        Event again = calls[below(calls.size())];
        again.enter = e.enter;
        again.leave = e.leave;
        again.stream = e.stream;
        e = again;
      } else {
        if (calls.size() == 4) calls.erase(calls.begin());
        calls.push_back(e);
      }
      w.event(e);
    }
  }
};

std::string rank_file(const std::string& dir) { return dir + "/rank-00000.prof"; }

std::string write_random(const std::string& dir, uint64_t seed, size_t n, uint32_t chunk_bytes,
                         uint32_t version = format::kFormatVersion, uint32_t streams = 1,
                         bool seal = true, bool repetitive = false) {
  const std::string path = rank_file(dir);
  RandomTrace gen(seed);
  gen.context = version >= 2;
  gen.repetitive = repetitive;
  {
    TraceWriter w(path, 0, 1, 7, format::TimerKind::Monotonic, chunk_bytes,
                  version >= 2 ? version : 2);
    gen.write(w, n, streams);
    w.end("finalize");
    if (seal) w.close();
    else w.close_without_sealing();
  }
  if (version < 2) {  // a version-2 file without context flags is a version-1 file
    Bytes b = read_file(path);
    format::FileHeader h;
    std::memcpy(&h, b.data(), sizeof h);
    h.version = version;
    std::memcpy(b.data(), &h, sizeof h);
    write_file(path, b);
  }
  return path;
}

TEST(FormatBatch, EveryKindInSmallAndLargeChunksEveryVersion) {
  const std::string dir = temp_dir();
  for (uint32_t version : {1u, 2u, format::kFormatVersion})
    for (uint32_t chunk_bytes : {1024u, 4096u, 1u << 20}) {
      SCOPED_TRACE("version " + std::to_string(version) + ", chunks of " +
                   std::to_string(chunk_bytes));
      const std::string path = write_random(dir, version * 31 + chunk_bytes, 3000, chunk_bytes, version);
      size_t events = 0;
      expect_batch_equals_next(path, &events);
      EXPECT_EQ(events, 3000u);
    }
  std::filesystem::remove_all(dir);
}

// Batches limited to fewer events (a reader of many ranks at once,
// MergedCursor::limit_batch) give the same events, none more than the limit.
TEST(FormatBatch, LimitedBatchesGiveTheSameEvents) {
  const std::string dir = temp_dir();
  const std::string path = write_random(dir, 77, 3000, 4096, format::kFormatVersion);
  auto a = open_trace(path);
  ASSERT_TRUE(a);
  const auto want = by_next(a->events());
  for (size_t limit : {1, 3, 8, 63}) {
    SCOPED_TRACE("batches of at most " + std::to_string(limit));
    auto b = open_trace(path);
    ASSERT_TRUE(b);
    RankTrace::MergedCursor c = b->events();
    c.limit_batch(limit);
    std::vector<Decoded> got;
    size_t full = 0;
    for (auto batch = c.next_batch(); !batch.empty(); batch = c.next_batch()) {
      EXPECT_LE(batch.size(), limit);
      full += batch.size() == limit;
      for (const Event& e : batch) got.push_back(copy_of(e, c.current_chunk()));
    }
    expect_same(want, got);
    EXPECT_GT(full, 0u);
  }
  std::filesystem::remove_all(dir);
}

// The pages of `path`'s mapping resident in this process, kB (/proc/self/smaps).
long resident_kb_of_mapping(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  const std::string name = std::filesystem::canonical(path).string();
  long kb = 0;
  bool in = false;
  for (std::string line; std::getline(smaps, line);) {
    if (line.find('-') < line.find(' ') && line.find(' ') != std::string::npos && line.find(':') > line.find(' '))
      in = line.size() >= name.size() && line.compare(line.size() - name.size(), name.size(), name) == 0;
    else if (in && line.rfind("Rss:", 0) == 0)
      kb += std::stol(line.substr(4));
  }
  return kb;
}

// A cursor set aside between uses (a reader of many ranks, between phases)
// gives back the pages of the chunk it decodes in the file's mapping
// (MergedCursor::release_pages) and then decodes on the same events.
TEST(FormatBatch, ReleasedPagesHoldNothingAndDecodeTheSameEvents) {
  const std::string dir = temp_dir();
  // One chunk: decoded in the mapping, not read into a buffer.
  const std::string path = write_random(dir, 91, 3000, 1u << 20, format::kFormatVersion);
  auto a = open_trace(path);
  ASSERT_TRUE(a);
  const auto want = by_next(a->events());
  a.reset();  // (its mapping would count too)
  auto b = open_trace(path);
  ASSERT_TRUE(b);
  RankTrace::MergedCursor c = b->events();
  c.limit_batch(32);
  std::vector<Decoded> got;
  long held = 0;
  for (auto batch = c.next_batch(); !batch.empty(); batch = c.next_batch()) {
    for (const Event& e : batch) got.push_back(copy_of(e, c.current_chunk()));
    held = std::max(held, resident_kb_of_mapping(path));
    c.release_pages();
    ASSERT_EQ(resident_kb_of_mapping(path), 0) << "after " << got.size() << " events";
  }
  EXPECT_GT(held, 0);  // (it was resident while decoding)
  expect_same(want, got);
  std::filesystem::remove_all(dir);
}

// A cursor that reaches the end of its stream holds none of the file's pages,
// not even those its last chunk shares with the file's header or ends in:
// thousands of ranks that end in the same phase each held two pages.
TEST(FormatBatch, AStreamsEndHoldsNoPages) {
  const std::string dir = temp_dir();
  const std::string path = write_random(dir, 92, 3000, 1u << 20, format::kFormatVersion);
  auto t = open_trace(path);
  ASSERT_TRUE(t);
  RankTrace::MergedCursor c = t->events();
  size_t events = 0;
  long held = 0;
  for (auto batch = c.next_batch(); !batch.empty(); batch = c.next_batch()) {
    events += batch.size();
    held = std::max(held, resident_kb_of_mapping(path));
  }
  EXPECT_EQ(events, 3000u);
  EXPECT_GT(held, 0);  // (it was resident while decoding)
  EXPECT_EQ(resident_kb_of_mapping(path), 0);
  std::filesystem::remove_all(dir);
}

// Mappings of files under `dir` this process holds (/proc/self/maps).
int mappings_under(const std::string& dir) {
  std::ifstream maps("/proc/self/maps");
  const std::string prefix = std::filesystem::canonical(dir).string() + "/";
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    if (const size_t at = line.find(prefix); at != std::string::npos && at > 0 && line[at - 1] == ' ') ++n;
  return n;
}

// A reader of more rank files than its budget of mappings (Linux refuses a
// process more than vm.max_map_count) holds at most the budget between
// visits, one more during one, and decodes the same events: files of one
// chunk (decoded in the mapping), of many (read into the cursor's buffer
// after the first), and of several streams, visited in turns as the analysis
// visits its ranks in a phase.
TEST(FormatBatch, FilesPastTheMappingBudgetAreUnmappedBetweenVisits) {
  const std::string dir = temp_dir();
  constexpr int kFiles = 24, kBudget = 6;
  std::vector<std::string> paths;
  std::vector<std::vector<Decoded>> want;
  for (int i = 0; i < kFiles; ++i) {
    const std::string sub = dir + "/r" + std::to_string(i);
    std::filesystem::create_directories(sub);
    const uint32_t chunk = i % 3 == 0 ? 1u << 20 : 4096;
    paths.push_back(write_random(sub, 300 + static_cast<uint64_t>(i), 1500, chunk, format::kFormatVersion,
                                 i % 4 == 1 ? 2 : 1, true, i % 2 == 0));
    auto t = open_trace(paths.back());
    ASSERT_TRUE(t);
    want.push_back(by_next(t->events()));
  }
  ASSERT_EQ(mappings_under(dir), 0);
  set_mapping_budget(kBudget);
  std::vector<std::unique_ptr<RankTrace>> traces;
  for (const std::string& p : paths) {
    traces.push_back(open_trace(p));
    ASSERT_TRUE(traces.back());
    ASSERT_LE(mappings_under(dir), kBudget) << "opening " << p;
  }
  std::vector<RankTrace::MergedCursor> cursors;
  for (auto& t : traces) cursors.push_back(t->events());
  std::vector<std::vector<Decoded>> got(kFiles);
  std::vector<bool> done(kFiles, false);
  int most = 0;
  for (int left = kFiles; left > 0;) {
    for (int i = 0; i < kFiles; ++i) {
      if (done[static_cast<size_t>(i)]) continue;
      RankTrace::MergedCursor& c = cursors[static_cast<size_t>(i)];
      for (int b = 0; b < 16; ++b) {  // a visit: a few batches
        const auto batch = c.next_batch();
        if (batch.empty()) {
          done[static_cast<size_t>(i)] = true;
          --left;
          break;
        }
        for (const Event& e : batch) got[static_cast<size_t>(i)].push_back(copy_of(e, c.current_chunk()));
      }
      const int during = mappings_under(dir);
      ASSERT_LE(during, kBudget + 1) << "visiting " << i;
      most = std::max(most, during);
      c.release_file();
      ASSERT_LE(mappings_under(dir), kBudget) << "after visiting " << i;
      ASSERT_EQ(mappings_held(), mappings_under(dir));
    }
  }
  EXPECT_EQ(most, kBudget + 1);  // (the budget was reached: files were mapped again)
  for (int i = 0; i < kFiles; ++i) {
    SCOPED_TRACE("file " + std::to_string(i));
    expect_same(want[static_cast<size_t>(i)], got[static_cast<size_t>(i)]);
    EXPECT_EQ(traces[static_cast<size_t>(i)]->stats().bad_records, 0u);
    EXPECT_EQ(traces[static_cast<size_t>(i)]->stats().crc_mismatches, 0u);
  }
  cursors.clear();
  traces.clear();
  set_mapping_budget(0);
  EXPECT_EQ(mappings_under(dir), 0);
  std::filesystem::remove_all(dir);
}

// A small rank file (a trace of thousands of ranks is made of them) is read
// whole and indexed at open, so opening it holds no mapping of it; the file
// is mapped when a cursor first decodes in it, and its events are those of
// a file large enough to be mapped at open (the same calls, followed by
// more).
TEST(FormatBatch, SmallFilesAreMappedOnlyWhenDecoded) {
  const std::string dir = temp_dir();
  const std::string small_dir = dir + "/small", large_dir = dir + "/large";
  std::filesystem::create_directories(small_dir);
  std::filesystem::create_directories(large_dir);
  const std::string small = write_random(small_dir, 17, 1000, 1u << 20);
  const std::string large = write_random(large_dir, 17, 30000, 1u << 20);
  ASSERT_LT(std::filesystem::file_size(small), 128u << 10);
  ASSERT_GT(std::filesystem::file_size(large), 1u << 20);
  auto s = open_trace(small), l = open_trace(large);
  ASSERT_TRUE(s && l);
  EXPECT_EQ(mappings_under(small_dir), 0);
  EXPECT_EQ(mappings_under(large_dir), 1);
  RankTrace::MergedCursor c = s->events();
  std::vector<Decoded> got;
  for (auto batch = c.next_batch(); !batch.empty(); batch = c.next_batch()) {
    EXPECT_EQ(mappings_under(small_dir), 1);
    for (const Event& e : batch) got.push_back(copy_of(e, c.current_chunk()));
  }
  std::vector<Decoded> want = by_next(l->events());
  ASSERT_GT(want.size(), got.size());
  ASSERT_GE(got.size(), 1000u);
  // (The small file's last event is its finalize, the large one's goes on.)
  got.pop_back();
  want.resize(got.size());
  for (Decoded& d : want) d.chunk = 0;
  for (Decoded& d : got) d.chunk = 0;
  expect_same(want, got);
  EXPECT_EQ(s->stats().crc_mismatches, 0u);
  EXPECT_EQ(s->warnings(), l->warnings());
  std::filesystem::remove_all(dir);
}

// A small rank file is unmapped as the last cursor decoding in it leaves
// its end (an analysis of thousands of ranks gives each file back as its rank
// ends, not all of them as the trace closes), also where its streams end one
// after the other; a cursor made later maps it again and decodes the same
// events.
TEST(FormatBatch, SmallFileIsUnmappedWhenItsLastCursorEnds) {
  const std::string dir = temp_dir();
  for (uint32_t streams : {1u, 2u}) {
    SCOPED_TRACE(std::to_string(streams) + " streams");
    const std::string path = write_random(dir, 41 + streams, 2000, 1u << 20, format::kFormatVersion, streams);
    ASSERT_LT(std::filesystem::file_size(path), 128u << 10);
    auto t = open_trace(path);
    ASSERT_TRUE(t);
    const int held_before = mappings_held();
    for (int pass = 0; pass < 2; ++pass) {
      SCOPED_TRACE("cursor " + std::to_string(pass));
      RankTrace::MergedCursor c = t->events();
      std::vector<Decoded> got;
      for (auto batch = c.next_batch(); !batch.empty(); batch = c.next_batch()) {
        if (got.empty()) {
          EXPECT_EQ(mappings_under(dir), 1);  // (gone once a batch reached the end)
        }
        for (const Event& e : batch) got.push_back(copy_of(e, c.current_chunk()));
      }
      EXPECT_EQ(mappings_under(dir), 0);
      EXPECT_EQ(mappings_held(), held_before);
      const std::vector<Decoded> want = by_next(t->events());
      ASSERT_EQ(got.size(), 2000u);
      expect_same(want, got);
    }
    EXPECT_EQ(t->stats().crc_mismatches, 0u);
  }
  std::filesystem::remove_all(dir);
}

// Held BetweenVisits::kKeepFilesMapped, the file stays mapped past its end (no
// system call on the reader's thread there) until the trace closes, a visit's
// end (end_visit()) keeps its chunk's pages, and the events are the same.
TEST(FormatBatch, KeptFileStaysMappedUntilTheTraceCloses) {
  const std::string dir = temp_dir();
  const std::string path = write_random(dir, 47, 2000, 1u << 20, format::kFormatVersion, 1);
  ASSERT_LT(std::filesystem::file_size(path), 128u << 10);
  const int held_before = mappings_held();
  {
    auto t = open_trace(path);
    ASSERT_TRUE(t);
    RankTrace::MergedCursor c = t->events();
    c.hold_between_visits(RankTrace::MergedCursor::BetweenVisits::kKeepFilesMapped);
    std::vector<Decoded> got;
    for (auto batch = c.next_batch(); !batch.empty(); batch = c.next_batch()) {
      for (const Event& e : batch) got.push_back(copy_of(e, c.current_chunk()));
      c.end_visit();
      ASSERT_GT(resident_kb_of_mapping(path), 0) << "after " << got.size() << " events";
    }
    EXPECT_EQ(mappings_under(dir), 1);
    EXPECT_EQ(mappings_held(), held_before + 1);
    expect_same(by_next(t->events()), got);
    ASSERT_EQ(got.size(), 2000u);
  }
  EXPECT_EQ(mappings_under(dir), 0);
  EXPECT_EQ(mappings_held(), held_before);
  std::filesystem::remove_all(dir);
}

// Cursors that lend their buffer between visits (kLendChunkBuffers, a
// reader of thousands of ranks visited in turn, sharing the thread's
// buffers) never map a file of chunks up to 64 KiB: each visit reads its
// chunk again, and the events are the same as decoded in one go. A larger
// chunk is decoded in the mapping, its pages dropped between visits.
TEST(FormatBatch, LentBuffersMapNothingAndDecodeTheSameEvents) {
  const std::string dir = temp_dir();
  struct Case {
    uint32_t events, chunk_bytes;
    bool small_chunks;
  };
  for (const Case k : {Case{3000, 4096, true}, Case{3000, 16384, true}, Case{8000, 1u << 20, false}}) {
    SCOPED_TRACE(std::to_string(k.events) + " events, chunks of " + std::to_string(k.chunk_bytes));
    const std::string sub = dir + "/" + std::to_string(k.chunk_bytes);
    std::vector<std::string> paths;
    std::vector<std::vector<Decoded>> want;
    for (uint32_t seed : {k.chunk_bytes + 5, k.chunk_bytes + 6}) {
      const std::string rank_dir = sub + "/" + std::to_string(seed);  // (one rank file a directory)
      std::filesystem::create_directories(rank_dir);
      paths.push_back(write_random(rank_dir, seed, k.events, k.chunk_bytes, format::kFormatVersion));
      if (!k.small_chunks) {
        ASSERT_GT(std::filesystem::file_size(paths.back()), 80u << 10);
      }
      auto a = open_trace(paths.back());
      ASSERT_TRUE(a);
      want.push_back(by_next(a->events()));
    }
    std::vector<std::unique_ptr<RankTrace>> traces;
    std::vector<RankTrace::MergedCursor> cursors;
    for (const std::string& path : paths) {
      traces.push_back(open_trace(path));
      ASSERT_TRUE(traces.back());
      cursors.push_back(traces.back()->events());
      cursors.back().hold_between_visits(RankTrace::MergedCursor::BetweenVisits::kLendChunkBuffers);
      cursors.back().limit_batch(k.small_chunks ? 32 : 128);
    }
    std::vector<std::vector<Decoded>> got(2);
    int most_mapped = 0;
    for (bool more = true; more;) {  // (visits in turn, as an analysis's worker makes them)
      more = false;
      for (size_t i = 0; i < 2; ++i) {
        const auto batch = cursors[i].next_batch();
        for (const Event& e : batch) got[i].push_back(copy_of(e, cursors[i].current_chunk()));
        more |= !batch.empty();
        most_mapped = std::max(most_mapped, mappings_under(sub));
        cursors[i].end_visit();
        if (!k.small_chunks) {
          ASSERT_EQ(resident_kb_of_mapping(paths[i]), 0) << "after " << got[i].size() << " events";
        }
      }
    }
    EXPECT_EQ(most_mapped, k.small_chunks ? 0 : 2);
    for (size_t i = 0; i < 2; ++i) {
      expect_same(want[i], got[i]);
      EXPECT_EQ(traces[i]->stats().crc_mismatches, 0u);
    }
  }
  std::filesystem::remove_all(dir);
}

// Format 6 against format 5 on the same calls, most of which repeat the
// previous call of their function: every event decodes the same (by next()
// and by batches, from the start and from positions inside chunks, as the
// window index starts), and the repeats make the file smaller.
TEST(FormatBatch, RepeatedPayloadsDecodeAsWrittenInFull) {
  const std::string dir = temp_dir(), dir5 = dir + "/v5", dir6 = dir + "/v6";
  std::filesystem::create_directories(dir5);
  std::filesystem::create_directories(dir6);
  for (uint32_t chunk_bytes : {1024u, 4096u, 1u << 20}) {
    SCOPED_TRACE("chunks of " + std::to_string(chunk_bytes));
    const std::string v5 = write_random(dir5, chunk_bytes + 3, 3000, chunk_bytes, 5, 1, true, true);
    const std::string v6 = write_random(dir6, chunk_bytes + 3, 3000, chunk_bytes,
                                        format::kFirstRepeatVersion, 1, true, true);
    auto t5 = open_trace(v5), t6 = open_trace(v6);
    ASSERT_TRUE(t5 && t6);
    ASSERT_EQ(t5->header().version, 5u);
    // The chunks differ (smaller records fill them later): compare the calls.
    // So does kLongTime, which says how a record's enter delta was written
    // (the first record of a chunk counts from the chunk's base time).
    auto calls = [](std::vector<Decoded> d) {
      for (Decoded& x : d) {
        x.chunk = SIZE_MAX;
        x.e.flags &= static_cast<uint8_t>(~format::kLongTime);
      }
      return d;
    };
    const auto want = by_next(t5->events());
    ASSERT_EQ(want.size(), 3000u);
    expect_same(calls(want), calls(by_next(t6->events())));
    expect_same(calls(want), calls(by_batch(t6->events())));
    EXPECT_EQ(t6->stats().bad_records, 0u);
    EXPECT_LT(t6->event_bytes(), t5->event_bytes());
    if (chunk_bytes >= (1u << 20)) {  // a chunk's first calls of each function are whole
      EXPECT_LT(t6->event_bytes() * 10, t5->event_bytes() * 8) << "not 20% smaller";
    }
    expect_batch_equals_next(v6);
    // From positions inside chunks (the window index's checkpoints): the
    // repeats there refer to records before the position.
    for (size_t skip : {1u, 7u, 100u, 999u, 2500u}) {
      SCOPED_TRACE("from the position after " + std::to_string(skip) + " events");
      auto c = t6->events();
      Event e;
      for (size_t i = 0; i < skip; ++i) ASSERT_TRUE(c.next(e));
      const auto at = c.position();
      if (!at.valid) continue;
      const auto rest = by_next(t6->events_from_position(at));
      ASSERT_EQ(rest.size(), want.size() - skip);
      expect_same(calls({want.begin() + static_cast<ptrdiff_t>(skip), want.end()}), calls(rest));
      expect_same(rest, by_batch(t6->events_from_position(at)));
    }
  }
  std::filesystem::remove_all(dir);
}

// A loop's records on one stream, their times only growing: calls with
// the members of a given Event, markers, calls with no payload.
struct LoopRecords {
  TraceWriter& w;
  uint32_t stream = 0;
  uint64_t t = 1000;
  void call(Event e, uint16_t func, FuncKind kind) {
    e.stream = stream;
    e.func = func;
    e.kind = kind;
    e.enter = t += 7;
    e.leave = t += 3;
    w.event(e);
  }
  void marker(uint32_t id, uint32_t site, bool begin, uint64_t gap = 5) {
    Event m;
    m.stream = stream;
    m.func = format::kMarkerFuncId;
    m.kind = FuncKind::Marker;
    m.interval_id = id;
    m.callsite = site;
    m.marker_begin = begin;
    m.enter = t += gap;
    m.leave = t += 2;
    w.event(m);
  }
  void bare(uint16_t func, uint8_t site_index = 0) {
    Event b;
    b.stream = stream;
    b.func = func;
    b.kind = FuncKind::Other;
    b.call_site_index = site_index;
    b.enter = t += 4;
    b.leave = t += 1;
    w.event(b);
  }
};

// A loop's calls, nearly all repeats (format 7), whose repeats the batch
// reader copies from the last one it decoded of the same header and
// reference: the copy must be dropped wherever a decode would differ. The
// same Isend repeated from two call sites; communicators that alternate, so
// that a repeat's left-out Comm reads a context another call changed; request
// handles with two high halves (packed requests read the context too);
// Waitalls of 2 entries and of 6 (more than a copy keeps); chunks of 4 KiB
// (repeats across chunk ends) and 1 MiB. Between the repeats, markers of
// three intervals (a loop of intervals: the batch decodes them, and calls
// with no payload, within its run of copies), a call with no payload from two
// sites, one with no payload but a flag (a Barrier on the same communicator),
// and now and then a long gap (a marker with the long header). Batches give
// what next() gives, and what the same calls written in full (format 5) give.
// (On the rank's one thread, of stream id 3: the batch's events of the
// records decoded at template speed carry the cursor's stream too.)
TEST(FormatBatch, LoopRepeatsDecodeAsWrittenInFull) {
  const std::string dir = temp_dir();
  const uint32_t stream = 3;
  const uint16_t irecv = 6, isend = 5, waitall = 7, allreduce = 9, comm_rank = 10, barrier = 11;
  auto write = [&](const std::string& path, uint32_t chunk_bytes, uint32_t version) {
    TraceWriter w(path, 0, 2, 1, format::TimerKind::Monotonic, chunk_bytes, version);
    w.function(irecv, FuncKind::Irecv, "MPI_Irecv");
    w.function(isend, FuncKind::Isend, "MPI_Isend");
    w.function(waitall, FuncKind::Completion, "MPI_Waitall");
    w.function(allreduce, FuncKind::Collective, "MPI_Allreduce");
    w.function(comm_rank, FuncKind::Other, "MPI_Comm_rank");
    w.function(barrier, FuncKind::Collective, "MPI_Barrier");
    w.callsite({41, 0x401000, "", 0});
    w.callsite({42, 0x401100, "", 0});
    w.call_site_index(isend, 1, 41);
    w.call_site_index(isend, 2, 42);
    w.call_site_index(comm_rank, 1, 41);
    w.call_site_index(comm_rank, 2, 42);
    std::vector<Completion> two(2), six(6);
    LoopRecords loop{w, stream};
    for (uint32_t i = 0; i < 6000; ++i) {
      const uint32_t comm = (i / 3) % 2 ? 0x44000000u : 0x84000002u;
      const uint32_t high = (i / 5) % 2 ? 0xAC00u : 0xAD00u;
      Event e;
      e.comm = comm;
      e.peer = 1;
      e.tag = static_cast<int32_t>(i % 2);
      e.bytes = 4096;
      const uint32_t interval = 1 + i % 3;
      loop.marker(interval, 41 + interval % 2, true, i % 13 == 12 ? 70000 : 5);
      e.request = high << 16 | 1;
      loop.call(e, irecv, FuncKind::Irecv);
      e.request = high << 16 | 2;
      e.call_site_index = static_cast<uint8_t>(1 + (i / 7) % 2);
      loop.call(e, isend, FuncKind::Isend);
      e.call_site_index = 0;
      std::vector<Completion>& done = i % 11 == 10 ? six : two;
      for (size_t k = 0; k < done.size(); ++k)
        done[k] = Completion{high << 16 | static_cast<uint32_t>(k + 1), k == 0 ? 1 : -1, 0, k == 0 ? 4096u : 0u,
                             false};
      e.completions = done;
      loop.call(e, waitall, FuncKind::Completion);
      e.completions = {};
      loop.marker(interval, 41 + interval % 2, false);
      loop.bare(comm_rank, static_cast<uint8_t>(i % 3));
      if (i % 16 == 15) {
        e.comm = 0x44000000u;
        loop.call(e, allreduce, FuncKind::Collective);
        loop.call(e, barrier, FuncKind::Collective);
      }
    }
    w.end("finalize");
    w.close();
  };
  for (uint32_t chunk_bytes : {4096u, 1u << 20}) {
    SCOPED_TRACE("chunks of " + std::to_string(chunk_bytes));
    const std::string v5 = dir + "/v5-" + std::to_string(chunk_bytes);
    const std::string v7 = dir + "/v7-" + std::to_string(chunk_bytes);
    write(v5, chunk_bytes, 5);
    write(v7, chunk_bytes, format::kFormatVersion);
    auto t5 = open_trace(v5), t7 = open_trace(v7);
    ASSERT_TRUE(t5 && t7);
    // (Markers and calls with no payload are as long in both.)
    EXPECT_LT(t7->event_bytes() * 3, t5->event_bytes() * 2) << "the calls did not repeat";
    const auto got = by_batch(t7->events());
    expect_same(by_next(t7->events()), got);
    // Format 5 has no call sites, and its chunks end elsewhere.
    auto calls = [](std::vector<Decoded> d) {
      for (Decoded& x : d) {
        x.chunk = SIZE_MAX;
        x.e.call_site = 0;
        x.e.call_site_index = 0;
        x.e.flags &= static_cast<uint8_t>(~format::kLongTime);
      }
      return d;
    };
    expect_same(calls(by_next(t5->events())), calls(got));
    size_t from_second_site = 0, markers = 0, bare_from_second_site = 0;
    for (const Decoded& d : got) {
      from_second_site += d.e.call_site == 42;
      markers += d.e.kind == FuncKind::Marker;
      bare_from_second_site += d.e.func == comm_rank && d.e.call_site == 42;
    }
    EXPECT_GT(from_second_site, 0u);
    EXPECT_EQ(markers, 2 * 6000u);
    EXPECT_TRUE(std::all_of(got.begin(), got.end(), [&](const Decoded& d) { return d.e.stream == stream; }));
    EXPECT_EQ(bare_from_second_site, 2000u);
  }
  std::filesystem::remove_all(dir);
}

// A loop of a fixed period, whose records the batch reader puts in the same
// slots batch after batch (its batches cut to a multiple of the period) and
// copies no template into a slot that holds it already (Cursor::Impl::
// slot_tags). That holds only while the slot's template is the same filling:
// here the loop's payloads change every few hundred iterations (the
// templates filled again, with other peers, tags and communicators), and its
// layout every thousand (a marker's end and a call with no payload swap
// slots, and the marker's interval id changes), so that a slot skipped on a
// stale tag would show another event's members. Now and then an
// MPI_Startall (a RequestOp: its requests lie outside what a copy writes,
// reset between batches), and a stretch with no period within a batch (the
// batches grow back from a multiple of the period to their whole length).
// Batches give what next() gives, in chunks of 4 KiB (templates cleared at
// every chunk) and 1 MiB.
TEST(FormatBatch, LoopSlotsKeepTheirCopiesOnlyWhileTheTemplateHolds) {
  const std::string dir = temp_dir();
  const uint16_t irecv = 6, isend = 5, waitall = 7, comm_rank = 10, startall = 11;
  for (uint32_t chunk_bytes : {4096u, 1u << 20}) {
    SCOPED_TRACE("chunks of " + std::to_string(chunk_bytes));
    const std::string path = dir + "/loop-" + std::to_string(chunk_bytes);
    size_t written = 0;
    {
      TraceWriter w(path, 0, 8, 1, format::TimerKind::Monotonic, chunk_bytes, format::kFormatVersion);
      w.function(irecv, FuncKind::Irecv, "MPI_Irecv");
      w.function(isend, FuncKind::Isend, "MPI_Isend");
      w.function(waitall, FuncKind::Completion, "MPI_Waitall");
      w.function(comm_rank, FuncKind::Other, "MPI_Comm_rank");
      w.function(startall, FuncKind::RequestOp, "MPI_Startall");
      std::vector<Completion> two(2);
      const uint32_t started[2] = {0xAC000001u, 0xAC000002u};
      LoopRecords loop{w};
      for (uint32_t i = 0; i < 5000; ++i) {
        if (i % 23 == 22) {
          Event op;
          op.requests = started;
          loop.call(op, startall, FuncKind::RequestOp);
          ++written;
        }
        if (i >= 3000 && i < 3600 && i % 3 == 0) {
          loop.bare(comm_rank);
          ++written;
        }
        const uint32_t era = i / 300;  // the payloads' (templates filled again)
        const bool swapped = (i / 1000) % 2 == 1;  // the layout's
        Event e;
        e.comm = era % 2 ? 0x44000000u : 0x84000002u;
        e.peer = static_cast<int32_t>(1 + era % 7);
        e.tag = static_cast<int32_t>(era);
        e.bytes = 64 + era;
        const uint32_t interval = swapped ? 9 : 4;
        loop.marker(interval, interval, true);
        e.request = 0xAC000001u;
        loop.call(e, irecv, FuncKind::Irecv);
        e.request = 0xAC000002u;
        loop.call(e, isend, FuncKind::Isend);
        e.request = format::kNoRequest;
        for (size_t k = 0; k < two.size(); ++k)
          two[k] = Completion{0xAC000001u + static_cast<uint32_t>(k), k == 0 ? e.peer : -1, k == 0 ? e.tag : -1,
                              k == 0 ? static_cast<uint32_t>(e.bytes) : 0u, false};
        e.completions = two;
        loop.call(e, waitall, FuncKind::Completion);
        if (swapped) {
          loop.bare(comm_rank);
          loop.marker(interval, interval, false);
        } else {
          loop.marker(interval, interval, false);
          loop.bare(comm_rank);
        }
        written += 6;
      }
      w.end("finalize");
      w.close();
    }
    auto trace = open_trace(path);
    ASSERT_TRUE(trace);
    const auto want = by_next(trace->events());
    ASSERT_EQ(want.size(), written);
    expect_same(want, by_batch(trace->events()));
  }
  std::filesystem::remove_all(dir);
}

TEST(FormatBatch, UnsealedCrcDamagedAndCorruptedChunks) {
  const std::string dir = temp_dir();
  // The last chunk unsealed (a killed rank): salvaged.
  expect_batch_equals_next(write_random(dir, 5, 2000, 2048, format::kFormatVersion, 1, false));

  const std::string path = write_random(dir, 6, 2000, 2048);
  const Bytes clean = read_file(path);
  std::vector<size_t> events_chunks;  // offsets of events chunk headers
  for (size_t off = sizeof(format::FileHeader); off + sizeof(format::ChunkHeader) <= clean.size();) {
    format::ChunkHeader h;
    std::memcpy(&h, clean.data() + off, sizeof h);
    if (h.magic != format::kChunkMagic) break;
    if (h.type == static_cast<uint16_t>(format::ChunkType::Events)) events_chunks.push_back(off);
    off += sizeof h + h.capacity;
  }
  ASSERT_GT(events_chunks.size(), 10u);

  // A flipped bit in a sealed chunk: its CRC fails, the chunk is skipped.
  Bytes flipped = clean;
  flipped[events_chunks[3] + sizeof(format::ChunkHeader) + 40] ^= 0x10;
  write_file(path, flipped);
  EXPECT_EQ(expect_batch_equals_next(path).crc_mismatches, 1u);

  // Every chunk unsealed (no CRC), then random bytes overwritten: records of
  // unknown functions, short payloads, overruns, whatever salvage keeps.
  std::mt19937_64 rng(11);
  uint64_t bad_records = 0;
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE("corruption round " + std::to_string(round));
    Bytes b = clean;
    for (size_t off : events_chunks) {
      format::ChunkHeader h;
      std::memcpy(&h, b.data() + off, sizeof h);
      h.flags = static_cast<uint16_t>(h.flags & ~format::kChunkSealed);
      std::memcpy(b.data() + off, &h, sizeof h);
      for (int k = 0; k < 6; ++k) {
        const size_t at = off + sizeof h + 12 + rng() % (h.used > 12 ? h.used - 12 : 1);
        b[at] = static_cast<unsigned char>(rng());
      }
    }
    write_file(path, b);
    bad_records += expect_batch_equals_next(path).bad_records;
  }
  EXPECT_GT(bad_records, 0u);
  std::filesystem::remove_all(dir);
}

// Enter times that run past 2^64 and wrap (damage: a chain gone wrong), in
// records of short times: a batch's leave bounds still hold every leave.
TEST(FormatBatch, LeaveBoundsHoldWhereTimesWrap) {
  const std::string dir = temp_dir();
  const std::string path = rank_file(dir);
  {
    TraceWriter w(path, 0, 1, 7, format::TimerKind::Monotonic, 4096);
    w.function(2, FuncKind::Send, "MPI_Send");
    Event e;
    e.func = 2;
    e.kind = FuncKind::Send;
    e.peer = 1;
    e.comm = 0x44000000u;
    // From 3000 ticks below 2^64 up in steps of 40 (short times), each call
    // 30 long: the last leaves near the top, then the times wrap to 0.
    e.enter = ~uint64_t{0} - 3000;
    for (int i = 0; i < 200; ++i) {
      e.leave = e.enter + 30;
      w.event(e);
      e.enter += 40;
    }
    w.close();
  }
  size_t events = 0;
  expect_batch_equals_next(path, &events);
  EXPECT_EQ(events, 200u);
  std::filesystem::remove_all(dir);
}

TEST(FormatBatch, CallInFlightEndsTheStream) {
  const std::string dir = temp_dir();
  const std::string path = rank_file(dir);
  {
    RandomTrace gen(3);
    TraceWriter w(path, 0, 1, 7, format::TimerKind::Monotonic, 2048);
    gen.write(w, 500);
    format::InFlightSlot slot{};
    slot.enter = uint64_t{1} << 40;
    slot.site_func = (uint64_t{7} << 48) | 0x401234;  // MPI_Waitall: a Completion
    slot.tag = 3;
    slot.extra = 0xAC000010u;
    w.live(slot.enter + 5000, {slot});
    w.close_without_sealing();
  }
  auto t = open_trace(path);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->in_flight().size(), 1u);
  expect_batch_equals_next(path);
  std::filesystem::remove_all(dir);
}

TEST(FormatBatch, SeveralStreamsOneEventABatch) {
  const std::string dir = temp_dir();
  const std::string path = write_random(dir, 9, 1500, 2048, format::kFormatVersion, 3);
  auto t = open_trace(path);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->stream_count(), 3u);
  expect_batch_equals_next(path);
  std::filesystem::remove_all(dir);
}

// Cursors that start inside the trace, as the window index and seeks make them.
TEST(FormatBatch, CursorsFromPositionsChunksAndTimes) {
  const std::string dir = temp_dir();
  const std::string path = write_random(dir, 4, 3000, 2048);
  auto t = open_trace(path);
  ASSERT_TRUE(t);
  const size_t chunks = t->chunk_count(0);
  ASSERT_GT(chunks, 8u);
  for (size_t first : {size_t{0}, size_t{1}, chunks / 2, chunks - 1, chunks}) {
    SCOPED_TRACE("from chunk " + std::to_string(first));
    expect_same(by_next(t->events_from_chunks({first})), by_batch(t->events_from_chunks({first})));
  }
  // Positions a cursor reported after 1, 100 and 1000 events.
  for (size_t skip : {1u, 100u, 1000u}) {
    SCOPED_TRACE("from the position after " + std::to_string(skip) + " events");
    auto c = t->events();
    Event e;
    for (size_t i = 0; i < skip; ++i) ASSERT_TRUE(c.next(e));
    const auto at = c.position();
    if (!at.valid) continue;
    expect_same(by_next(t->events_from_position(at)), by_batch(t->events_from_position(at)));
  }
  // Seeks: the event found by the seek is the first of the first batch.
  const auto all = by_next(t->events());
  for (size_t i : {size_t{0}, all.size() / 3, all.size() - 1}) {
    SCOPED_TRACE("seek to event " + std::to_string(i));
    auto want = by_next(t->events_from(all[i].e.leave));
    auto got = by_batch(t->events_from(all[i].e.leave));
    ASSERT_EQ(want.size(), got.size());
    // next() names no chunk for the event a seek stopped at; a batch does.
    if (!want.empty()) want[0].chunk = got[0].chunk;
    expect_same(want, got);
  }
  std::filesystem::remove_all(dir);
}

// next() and next_batch() mixed on one cursor read the trace once, in order.
TEST(FormatBatch, MixedWithNext) {
  const std::string dir = temp_dir();
  const std::string path = write_random(dir, 8, 2000, 1024);
  auto t = open_trace(path);
  ASSERT_TRUE(t);
  const auto want = by_next(t->events());
  std::vector<Decoded> got;
  auto c = t->events();
  Event e;
  for (int round = 0;; ++round) {
    if (round % 3 == 2) {
      if (!c.next(e)) break;
      got.push_back(copy_of(e, c.current_chunk()));
    } else {
      const auto batch = c.next_batch();
      if (batch.empty()) break;
      for (const Event& b : batch) got.push_back(copy_of(b, c.current_chunk()));
    }
  }
  expect_same(want, got);
  std::filesystem::remove_all(dir);
}

}  // namespace
