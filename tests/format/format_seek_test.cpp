// Seek by time: RankTrace::stream_from / events_from land on the first event
// that leaves at or after T and know the intervals open there, whether they
// come from the chunk's snapshot (format 3) or a scan (format 2, deep stacks);
// the chunk index's times; ticks_at_global_ns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "format_test_util.h"
#include "prof/trace_reader.h"

namespace fs = std::filesystem;
using namespace prof;
using namespace prof::trace;

namespace {

constexpr uint32_t kWorld = 0x44000000u;
constexpr uint16_t kSendId = 1, kIsendId = 2, kOtherId = 3;

struct StreamEvents {
  std::vector<Event> events;                         // as written, in order
  std::vector<std::vector<OpenInterval>> open_before;  // open intervals before events[i]
  std::vector<OpenInterval> open_at_end;
};

struct Written {
  std::string path;
  std::vector<StreamEvents> streams;
};

// Sequential calls on each stream (a call leaves before the next enters) with
// markers nesting up to `max_depth` deep, some ends closing several intervals
// and some ends with nothing open, over small chunks.
Written write_trace(const std::string& dir, uint32_t version, int streams, int events_per_stream,
                    size_t max_depth, uint32_t seed, uint32_t chunk_bytes = 1024,
                    bool seal = true) {
  Written w;
  w.path = dir + "/rank-00000.prof";
  TraceWriter tw(w.path, 0, 2, 5, format::TimerKind::Monotonic, chunk_bytes, version);
  tw.function(kSendId, FuncKind::Send, "MPI_Send");
  tw.function(kIsendId, FuncKind::Isend, "MPI_Isend");
  tw.function(kOtherId, FuncKind::Other, "MPI_Comm_rank");
  tw.clock_sync({"init", 500, 2500.0, 40.0});
  tw.clock_sync({"final", 900000000, 2600.0, 40.0});
  std::mt19937 rng(seed);
  w.streams.resize(static_cast<size_t>(streams));
  std::vector<uint64_t> now(static_cast<size_t>(streams), 1000);
  // Streams interleaved in time, each in enter order.
  for (int i = 0; i < events_per_stream; ++i)
    for (int s = 0; s < streams; ++s) {
      StreamEvents& out = w.streams[static_cast<size_t>(s)];
      std::vector<OpenInterval> open = out.open_at_end;
      Event e;
      e.stream = static_cast<uint32_t>(s);
      e.enter = now[static_cast<size_t>(s)] + 1 + rng() % 3000;
      const uint32_t pick = rng() % 10;
      if (pick < 3) {
        e.kind = FuncKind::Marker;
        e.func = format::kMarkerFuncId;
        e.leave = e.enter;
        e.callsite = 1 + rng() % 7;
        // Deeper while below the limit, with a bias so stacks get deep.
        const bool begin = open.size() < max_depth && (open.empty() || rng() % 8 < 5);
        e.marker_begin = begin;
        if (begin) {
          e.interval_id = 1 + rng() % 40;
        } else if (!open.empty() && rng() % 10 != 0) {
          // Mostly the innermost; sometimes one further out (closes several).
          const size_t back = rng() % 4 == 0 ? rng() % open.size() : 0;
          e.interval_id = open[open.size() - 1 - back].interval_id;
        } else {
          e.interval_id = 900 + rng() % 5;  // nothing open with this id
        }
      } else if (pick < 6) {
        e.kind = FuncKind::Send;
        e.func = kSendId;
        e.leave = e.enter + rng() % 70000;
        e.peer = 1;
        e.tag = static_cast<int32_t>(rng() % 50);
        e.comm = kWorld;
        e.bytes = rng() % 5000;
      } else if (pick < 8) {
        e.kind = FuncKind::Isend;
        e.func = kIsendId;
        e.leave = e.enter + rng() % 500;
        e.peer = 1;
        e.tag = 3;
        e.comm = kWorld;
        e.bytes = rng() % 60000;
        e.request = 0xAC000000u + rng() % 64;  // high half repeats: packed
      } else {
        e.kind = FuncKind::Other;
        e.func = kOtherId;
        e.leave = e.enter + rng() % 200;
      }
      now[static_cast<size_t>(s)] = e.leave;
      tw.event(e);
      out.open_before.push_back(open);
      if (e.kind == FuncKind::Marker)
        format::apply_marker(open, e.marker_begin, e.interval_id, e.callsite, e.enter);
      out.open_at_end = open;
      out.events.push_back(e);
    }
  tw.end("finalize");
  if (seal) tw.close();
  else tw.close_without_sealing();
  return w;
}

// Index of the first event leaving at or after t (events.size() if none).
size_t first_leaving(const std::vector<Event>& events, uint64_t t) {
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i].leave >= t) return i;
  return events.size();
}

void expect_same(const Event& got, const Event& want, const std::string& where) {
  EXPECT_EQ(got.enter, want.enter) << where;
  EXPECT_EQ(got.leave, want.leave) << where;
  EXPECT_EQ(got.func, want.func) << where;
  EXPECT_EQ(got.stream, want.stream) << where;
  EXPECT_EQ(got.bytes, want.bytes) << where;
  EXPECT_EQ(got.comm, want.comm) << where;
  EXPECT_EQ(got.request, want.request) << where;
  EXPECT_EQ(got.interval_id, want.interval_id) << where;
}

// A seek to t on stream s gives exactly the events from the first leaving at
// or after t, and the intervals open before it.
void check_seek(const RankTrace& trace, const StreamEvents& want, size_t s, uint64_t t,
                bool whole_rest = true) {
  const std::string where = "stream " + std::to_string(s) + " t " + std::to_string(t);
  const size_t first = first_leaving(want.events, t);
  auto cursor = trace.stream_from(s, t);
  const auto& expected_open =
      first < want.events.size() ? want.open_before[first] : want.open_at_end;
  EXPECT_EQ(cursor.open_intervals(), expected_open) << where;
  Event e;
  size_t i = first;
  while (cursor.next(e)) {
    ASSERT_LT(i, want.events.size()) << where;
    expect_same(e, want.events[i], where + " event " + std::to_string(i));
    ++i;
    if (!whole_rest && i > first + 3) return;
  }
  EXPECT_EQ(i, want.events.size()) << where;
}

class FormatSeek : public testing::TestWithParam<uint32_t> {};

TEST_P(FormatSeek, RandomTimesMatchAScanFromTheStart) {
  const uint32_t version = GetParam();
  const std::string dir = temp_dir();
  // Depth up to 40: some chunks start deeper than a snapshot holds (a scan).
  Written w = write_trace(dir, version, 1, 6000, 40, 11);
  auto trace = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(trace);
  ASSERT_GT(trace->chunk_count(0), 50u);  // many small chunks
  const auto& events = w.streams[0].events;
  std::mt19937 rng(7);
  const uint64_t span = events.back().leave + 100;
  bool any_snapshot = false, any_scan = false;
  for (int k = 0; k < 300; ++k) {
    const uint64_t t = rng() % span;
    check_seek(*trace, w.streams[0], 0, t, /*whole_rest=*/k % 20 == 0);
    auto c = trace->stream_from(0, t);
    (c.open_intervals_from_snapshot() ? any_snapshot : any_scan) = true;
  }
  if (version >= 3) EXPECT_TRUE(any_snapshot);
  else EXPECT_FALSE(any_snapshot);
  EXPECT_TRUE(any_scan);  // format 2, or a stack deeper than a snapshot holds
  EXPECT_EQ(trace->stats().bad_records, 0u);
  EXPECT_EQ(trace->stats().crc_mismatches, 0u);
  fs::remove_all(dir);
}

TEST_P(FormatSeek, ChunkEdgesAndBothEnds) {
  const uint32_t version = GetParam();
  const std::string dir = temp_dir();
  Written w = write_trace(dir, version, 1, 3000, 12, 3);
  auto trace = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(trace);
  const StreamEvents& want = w.streams[0];
  const auto chunks = trace->chunks(0);
  ASSERT_GT(chunks.size(), 10u);
  uint64_t total = 0;
  for (size_t k = 0; k < chunks.size(); ++k) {
    const ChunkInfo& c = chunks[k];
    ASSERT_GT(c.events, 0u);
    total += c.events;
    EXPECT_EQ(c.has_snapshot, version >= 3);
    EXPECT_TRUE(c.sealed);
    EXPECT_FALSE(c.damaged);
    EXPECT_LE(c.first_enter, c.last_enter);
    EXPECT_LE(c.last_enter, c.last_leave);
    EXPECT_EQ(c.first_enter_ns, trace->to_global_ns(c.first_enter));
    EXPECT_EQ(c.last_leave_ns, trace->to_global_ns(c.last_leave));
    if (k > 0) {
      EXPECT_LT(chunks[k - 1].last_leave, c.first_enter);
    }
    // The chunk's first event, its last, and a time between two chunks.
    auto first = trace->stream_from(0, c.first_enter);
    Event e;
    ASSERT_TRUE(first.next(e));
    EXPECT_EQ(e.enter, c.first_enter) << k;
    check_seek(*trace, want, 0, c.first_enter, false);
    auto last = trace->stream_from(0, c.last_leave);
    ASSERT_TRUE(last.next(e));
    EXPECT_EQ(e.leave, c.last_leave) << k;
    check_seek(*trace, want, 0, c.last_leave, false);
    if (k + 1 < chunks.size()) {
      const uint64_t between = c.last_leave + 1;
      ASSERT_LT(between, chunks[k + 1].first_enter + 1);
      auto next = trace->stream_from(0, between);
      ASSERT_TRUE(next.next(e));
      EXPECT_EQ(e.enter, chunks[k + 1].first_enter) << k;
      check_seek(*trace, want, 0, between, false);
    }
  }
  EXPECT_EQ(total, want.events.size());
  // Before the first event: everything, nothing open. After the last: nothing,
  // the intervals still open at the end.
  check_seek(*trace, want, 0, 0);
  auto after = trace->stream_from(0, want.events.back().leave + 1);
  Event e;
  EXPECT_FALSE(after.next(e));
  EXPECT_EQ(after.open_intervals(), want.open_at_end);
  // A call in flight at t is the first event.
  for (const Event& call : want.events)
    if (call.leave > call.enter + 2) {
      auto c = trace->stream_from(0, call.enter + 1);
      ASSERT_TRUE(c.next(e));
      EXPECT_EQ(e.enter, call.enter);
      break;
    }
  fs::remove_all(dir);
}

TEST_P(FormatSeek, MergedCursorFromATime) {
  const uint32_t version = GetParam();
  const std::string dir = temp_dir();
  Written w = write_trace(dir, version, 3, 2000, 8, 5);
  auto trace = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(trace);
  ASSERT_EQ(trace->stream_count(), 3u);
  std::mt19937 rng(9);
  for (int k = 0; k < 20; ++k) {
    const uint64_t t = rng() % (w.streams[0].events.back().leave + 10);
    std::vector<Event> want;
    for (size_t s = 0; s < 3; ++s) {
      const auto& events = w.streams[s].events;
      want.insert(want.end(), events.begin() + static_cast<ptrdiff_t>(first_leaving(events, t)),
                  events.end());
    }
    std::stable_sort(want.begin(), want.end(), [](const Event& a, const Event& b) {
      return a.enter < b.enter || (a.enter == b.enter && a.stream < b.stream);
    });
    auto merged = trace->events_from(t);
    for (size_t s = 0; s < 3; ++s) {
      const StreamEvents& stream = w.streams[s];
      const size_t first = first_leaving(stream.events, t);
      EXPECT_EQ(merged.open_intervals(s), first < stream.events.size()
                                              ? stream.open_before[first]
                                              : stream.open_at_end);
    }
    Event e;
    size_t i = 0;
    while (merged.next(e)) {
      ASSERT_LT(i, want.size());
      expect_same(e, want[i], "merged t " + std::to_string(t));
      ++i;
    }
    EXPECT_EQ(i, want.size());
  }
  fs::remove_all(dir);
}

// A cursor started where another stood (MergedCursor::position) reads the
// same events on: the record's offset, the delta chain and the chunk context
// (communicators and requests given earlier in the chunk) carry over.
TEST_P(FormatSeek, CursorFromAPositionContinuesTheSameEvents) {
  const uint32_t version = GetParam();
  const std::string dir = temp_dir();
  Written w = write_trace(dir, version, 1, 3000, 8, 11, 4096);
  auto trace = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(trace);
  const std::vector<Event>& want = w.streams[0].events;
  auto cursor = trace->events();
  Event e;
  size_t read = 0, checked = 0, whole = 0;
  while (cursor.next(e)) {
    ++read;
    const auto at = cursor.position();
    if (!at.valid || read % 29 != 0) continue;
    EXPECT_EQ(at.chunk, cursor.reading_chunk());
    auto from = trace->events_from_position(at);
    Event f;
    size_t i = read;
    const bool to_the_end = read % 290 == 0;
    while ((to_the_end || i < read + 5) && from.next(f)) {
      ASSERT_LT(i, want.size());
      expect_same(f, want[i], "from event " + std::to_string(read) + ", event " + std::to_string(i));
      ++i;
    }
    if (to_the_end) {
      EXPECT_EQ(i, want.size());
      ++whole;
    }
    ++checked;
  }
  EXPECT_EQ(read, want.size());
  EXPECT_GT(checked, 50u);
  EXPECT_GT(whole, 3u);
  // A position that is not one: nothing.
  auto none = trace->events_from_position(RankTrace::MergedCursor::Position{});
  EXPECT_FALSE(none.next(e));
  RankTrace::MergedCursor::Position past;
  past.valid = true;
  past.chunk = static_cast<uint32_t>(trace->chunk_count(0));
  auto beyond = trace->events_from_position(past);
  EXPECT_FALSE(beyond.next(e));
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Versions, FormatSeek, testing::Values(2u, 3u),
                         [](const auto& info) { return "v" + std::to_string(info.param); });


TEST(FormatSeekDamage, CrcMismatchChunkIsSkippedAndCounted) {
  const std::string dir = temp_dir();
  Written w = write_trace(dir, format::kFormatVersion, 1, 3000, 10, 21);
  std::vector<ChunkInfo> good;
  {
    auto trace = RankTrace::open(w.path, nullptr);
    ASSERT_TRUE(trace);
    good = trace->chunks(0);
    uint64_t sum = 0;
    for (auto& c : good) sum += c.events;
    auto all = trace->stream(0);
    Event e;
    uint64_t n = 0;
    while (all.next(e)) ++n;
    EXPECT_EQ(sum, n);
    EXPECT_EQ(n, w.streams[0].events.size());
  }
  ASSERT_GT(good.size(), 12u);
  const size_t bad = good.size() / 2;
  std::vector<unsigned char> b = read_file(w.path);
  b[good[bad].file_offset + sizeof(format::ChunkHeader) + good[bad].payload_bytes - 3] ^= 0x40;
  write_file(w.path, b);

  auto trace = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(trace);
  const StreamEvents& want = w.streams[0];
  // A time inside the damaged chunk: its events are gone, the seek lands on
  // the next chunk's first event, and the snapshot there knows the intervals
  // its markers opened.
  const uint64_t t = (good[bad].first_enter + good[bad].last_leave) / 2;
  auto c = trace->stream_from(0, t);
  Event e;
  ASSERT_TRUE(c.next(e));
  EXPECT_EQ(e.enter, good[bad + 1].first_enter);
  const size_t first = first_leaving(want.events, good[bad + 1].first_enter);
  EXPECT_TRUE(c.open_intervals_from_snapshot());
  EXPECT_EQ(c.open_intervals(), want.open_before[first]);
  EXPECT_EQ(trace->stats().crc_mismatches, 1u);
  const ChunkInfo damaged = trace->chunk(0, bad);
  EXPECT_TRUE(damaged.damaged);
  EXPECT_EQ(damaged.events, 0u);
  // Times on either side are untouched.
  check_seek(*trace, want, 0, good[bad - 1].first_enter, false);
  check_seek(*trace, want, 0, good[bad + 2].last_leave, false);
  // A cursor from the start skips the chunk too, and the CRC counts once.
  auto all = trace->stream(0);
  uint64_t n = 0;
  while (all.next(e)) ++n;
  EXPECT_EQ(n, want.events.size() - good[bad].events);
  EXPECT_EQ(trace->stats().crc_mismatches, 1u);
  fs::remove_all(dir);
}

TEST(FormatSeekDamage, UnsealedLastChunkIsSalvagedAndSeekable) {
  const std::string dir = temp_dir();
  Written w = write_trace(dir, format::kFormatVersion, 1, 2500, 10, 33, 1024, /*seal=*/false);
  auto trace = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(trace);
  EXPECT_EQ(trace->stats().unsealed_chunks, 1u);
  const auto chunks = trace->chunks(0);
  ASSERT_GT(chunks.size(), 2u);
  const ChunkInfo& last = chunks.back();
  EXPECT_FALSE(last.sealed);
  EXPECT_TRUE(last.has_snapshot);
  ASSERT_GT(last.events, 2u);
  const StreamEvents& want = w.streams[0];
  check_seek(*trace, want, 0, last.first_enter);
  check_seek(*trace, want, 0, (last.first_enter + last.last_leave) / 2);
  check_seek(*trace, want, 0, last.last_leave);
  auto after = trace->stream_from(0, last.last_leave + 1);
  Event e;
  EXPECT_FALSE(after.next(e));
  EXPECT_EQ(after.open_intervals(), want.open_at_end);
  fs::remove_all(dir);
}

TEST(FormatSeekTime, TicksAtGlobalNsInvertsToGlobalNs) {
  const std::string dir = temp_dir();
  Written w = write_trace(dir, format::kFormatVersion, 1, 10, 2, 1);
  auto trace = RankTrace::open(w.path, nullptr);
  ASSERT_TRUE(trace);
  for (uint64_t t : {uint64_t{1}, uint64_t{999}, uint64_t{123456}, uint64_t{899999999},
                     uint64_t{5000000000}}) {
    const double ns = trace->to_global_ns(t);
    const uint64_t back = trace->ticks_at_global_ns(ns);
    EXPECT_GE(trace->to_global_ns(back), ns) << t;
    EXPECT_LT(trace->to_global_ns(back - 1), ns) << t;
    EXPECT_EQ(back, t) << t;
    // Half a tick later: the next tick.
    const uint64_t next = trace->ticks_at_global_ns(ns + 0.5);
    EXPECT_EQ(next, back + 1) << t;
  }
  EXPECT_EQ(trace->ticks_at_global_ns(-1e18), 0u);
  fs::remove_all(dir);
}

}  // namespace
