// Round trips through TraceWriter and RankTrace: every FuncKind with narrow and
// wide values, long and backwards times, many chunks and streams, the merged
// cursor, definitions, comm_at/world_rank, time conversion, marker tags, CRC.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "format_test_util.h"
#include "prof/event_difference.h"
#include "prof/trace_reader.h"

namespace {

using namespace prof;
using namespace prof::trace;
using format::FuncKind;
namespace fs = std::filesystem;

constexpr uint32_t kWorld = 0x44000000u;
constexpr uint32_t kSelf = 0x44000001u;
constexpr uint64_t GiB = uint64_t{1} << 30;

// Function ids used below: id = kind + 1.
uint16_t fid(FuncKind k) { return static_cast<uint16_t>(k) + 1; }

void define_all(TraceWriter& w) {
  const char* names[] = {"MPI_Comm_rank", "MPI_Send",      "MPI_Recv",    "MPI_Sendrecv",
                         "MPI_Isend",     "MPI_Irecv",     "MPI_Waitall", "MPI_Startall",
                         "MPI_Bcast",     "MPI_Ibcast",    "MPI_Comm_split", "MPI_Probe",
                         "MPI_Marker",    "MPI_Alltoall",  "MPI_Ialltoall"};
  for (int k = 0; k <= 14; ++k) {
    if (k == static_cast<int>(FuncKind::Marker)) continue;
    w.function(static_cast<uint16_t>(k + 1), static_cast<FuncKind>(k), names[k]);
  }
}

constexpr uint8_t kUserFlags = format::kAnySource | format::kAnyTag | format::kCallFailed;

// Every member (prof/event_difference.h), the flags but those the user's call
// sets aside (the context flags are the encoding's).
void expect_event(const Event& w, const Event& g, const std::string& ctx) {
  SCOPED_TRACE(ctx);
  Event want = w, got = g;
  want.flags &= kUserFlags;
  got.flags &= kUserFlags;
  EXPECT_EQ(event_difference(want, got), "");
}

// Builds events of every kind; storage for spans lives in the struct.
struct Sample {
  std::deque<std::vector<Completion>> comp_store;
  std::deque<std::vector<uint32_t>> req_store;
  std::vector<Event> events;
  uint64_t t = 1000;

  Event& add(FuncKind k, uint64_t dt = 10, uint64_t dur = 5) {
    Event e;
    t += dt;
    e.enter = t;
    e.leave = t + dur;
    e.kind = k;
    e.func = k == FuncKind::Marker ? format::kMarkerFuncId : fid(k);
    events.push_back(e);
    return events.back();
  }
  void completions(Event& e, std::vector<Completion> c) {
    comp_store.push_back(std::move(c));
    e.completions = comp_store.back();
  }
  void requests(Event& e, std::vector<uint32_t> r) {
    req_store.push_back(std::move(r));
    e.requests = req_store.back();
  }

  void build() {
    add(FuncKind::Other);
    // Point to point: narrow, wide peer, wide tag, wide bytes, negative values.
    for (auto [peer, tag, bytes] : std::vector<std::tuple<int32_t, int32_t, uint64_t>>{
             {1, 7, 800}, {40000, 7, 8}, {3, 70000, 16}, {2, 5, 5 * GiB},
             {format::kProcNull, -32768, 0}, {32767, 32767, UINT32_MAX}, {-32769, 1, 1}}) {
      for (FuncKind k : {FuncKind::Send, FuncKind::Recv, FuncKind::Probe}) {
        Event& e = add(k);
        e.peer = peer;
        e.tag = tag;
        e.comm = kWorld;
        e.bytes = bytes;
      }
      for (FuncKind k : {FuncKind::Isend, FuncKind::Irecv}) {
        Event& e = add(k);
        e.peer = peer;
        e.tag = tag;
        e.comm = 0x84000003u;
        e.bytes = bytes;
        e.request = 0xAC000000u + static_cast<uint32_t>(events.size());
      }
    }
    {
      Event& e = add(FuncKind::Irecv);
      e.peer = format::kAnySourceRank;
      e.tag = format::kAnyTagValue;
      e.comm = kWorld;
      e.bytes = 64;
      e.request = 0xAC000042u;
      e.flags = format::kAnySource | format::kAnyTag;
    }
    // SendRecv: narrow, and wide in the receive half only.
    {
      Event& e = add(FuncKind::SendRecv);
      e.peer = 1, e.tag = 2, e.bytes = 3, e.recv_peer = 4, e.recv_tag = 5, e.recv_bytes = 6;
      e.comm = kWorld;
      Event& f = add(FuncKind::SendRecv);
      f.peer = 1, f.tag = 2, f.bytes = 3, f.recv_peer = 100000, f.recv_tag = 5,
      f.recv_bytes = 7 * GiB;
      f.comm = kSelf;
    }
    // Completions: narrow with a cancelled entry, wide (source, bytes), empty.
    {
      Event& e = add(FuncKind::Completion);
      completions(e, {{0xAC000001u, 1, 7, 800, false}, {0xAC000002u, -1, -1, 0, true},
                      {0xAC000003u, 3, 9, 0x7FFFFFFF, false}});
      Event& f = add(FuncKind::Completion);
      completions(f, {{0xAC000004u, 70000, 7, 6 * GiB, false}, {0xAC000005u, 2, 80000, 1, true},
                      {0xAC000006u, 2, 3, 0x80000000u, true}});
      Event& g = add(FuncKind::Completion);
      completions(g, {});
    }
    {
      Event& e = add(FuncKind::RequestOp);
      requests(e, {0xAC000001u, 0xAC000002u, 0x2c000000u, 7});
      Event& f = add(FuncKind::RequestOp);
      requests(f, {});
    }
    for (FuncKind k : {FuncKind::Collective, FuncKind::AllToAll, FuncKind::ICollective,
                       FuncKind::IAllToAll}) {
      for (auto [root, bytes] : std::vector<std::pair<int32_t, uint64_t>>{
               {0, 100}, {format::kRootRank, 5}, {-1, 9 * GiB}, {70000, 1}}) {
        Event& e = add(k);
        e.comm = 0x84000001u;
        e.root = root;
        e.bytes = bytes;
        if (k == FuncKind::ICollective || k == FuncKind::IAllToAll) e.request = 0xAC000077u;
      }
    }
    {
      Event& e = add(FuncKind::CommCreate);
      e.comm = kWorld;
      e.new_comm = 0x84000005u;
      Event& f = add(FuncKind::CommCreate);
      f.comm = kWorld;
      f.new_comm = format::kNoComm;
    }
    {
      Event& b = add(FuncKind::Marker);
      b.interval_id = 1;
      b.callsite = 3;
      b.marker_begin = true;
      Event& e = add(FuncKind::Marker);
      e.interval_id = 0xFFFF;
      e.callsite = 0xFFFFFFFFu;
      e.marker_begin = false;
    }
    // Times: a long dt, a long duration, a backwards dt, a failed call.
    {
      Event& e = add(FuncKind::Send, uint64_t{1} << 33, 3);
      e.peer = 1, e.tag = 1, e.comm = kWorld, e.bytes = 1;
      Event& f = add(FuncKind::Other, 1, uint64_t{5} << 32);
      f.flags = format::kCallFailed;
      Event& g = add(FuncKind::Other, 0, 0);  // same enter as the previous
      (void)g;
    }
  }
};

TEST(FormatRoundTrip, EveryKindNarrowAndWide) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  Sample s;
  s.build();
  // A backwards event at the end: enter before its predecessor.
  {
    Event& e = s.add(FuncKind::Other, 0, 1);
    e.enter -= 500;
    e.leave -= 500;
  }
  {
    TraceWriter w(path, 0, 4, 0x1234, format::TimerKind::Monotonic);
    ASSERT_TRUE(w.ok());
    define_all(w);
    for (const Event& e : s.events) w.event(e);
    w.close();
    EXPECT_TRUE(w.ok());
  }
  std::string err;
  auto t = RankTrace::open(path, &err);
  ASSERT_TRUE(t) << err;
  EXPECT_EQ(t->rank(), 0);
  EXPECT_EQ(t->header().world_size, 4);
  EXPECT_EQ(t->header().run_id, 0x1234u);
  EXPECT_EQ(t->header().timer, static_cast<uint32_t>(format::TimerKind::Monotonic));
  ASSERT_EQ(t->stream_count(), 1u);
  auto c = t->stream(0);
  Event g;
  size_t n = 0;
  while (c.next(g)) {
    ASSERT_LT(n, s.events.size());
    expect_event(s.events[n], g, "event " + std::to_string(n));
    // The writer picked wide encodings exactly where needed.
    const Event& w = s.events[n];
    bool wide_pt = false, wide_b = false;
    auto pt = [&](int32_t p, int32_t tg) { wide_pt |= !format::fits_packed_peer_tag(p, tg); };
    switch (w.kind) {
      case FuncKind::Send: case FuncKind::Recv: case FuncKind::Probe:
      case FuncKind::Isend: case FuncKind::Irecv:
        pt(w.peer, w.tag);
        wide_b = w.bytes > UINT32_MAX;
        break;
      case FuncKind::SendRecv:
        pt(w.peer, w.tag);
        pt(w.recv_peer, w.recv_tag);
        wide_b = w.bytes > UINT32_MAX || w.recv_bytes > UINT32_MAX;
        break;
      case FuncKind::Completion:
        for (auto& k : w.completions) {
          pt(k.source, k.tag);
          wide_b |= k.bytes > 0x7FFFFFFF;
        }
        break;
      case FuncKind::Collective: case FuncKind::ICollective:
      case FuncKind::AllToAll: case FuncKind::IAllToAll:
        wide_b = w.bytes > UINT32_MAX;
        break;
      default:
        break;
    }
    EXPECT_EQ(wide_pt, (g.flags & format::kWidePeerTag) != 0) << "event " << n;
    EXPECT_EQ(wide_b, (g.flags & format::kWideBytes) != 0) << "event " << n;
    const bool long_time = (w.leave - w.enter) > UINT32_MAX ||
                           (n > 0 && (w.enter - s.events[n - 1].enter) > UINT32_MAX);
    EXPECT_EQ(long_time, (g.flags & format::kLongTime) != 0) << "event " << n;
    ++n;
  }
  EXPECT_EQ(n, s.events.size());
  EXPECT_EQ(t->stats().events, s.events.size());
  EXPECT_EQ(t->stats().backwards_timestamps, 1u);
  EXPECT_EQ(t->stats().bad_records, 0u);
  EXPECT_EQ(t->stats().crc_mismatches, 0u);
  EXPECT_EQ(t->stats().unsealed_chunks, 0u);
  EXPECT_TRUE(t->warnings().empty()) << t->warnings().front();
  fs::remove_all(dir);
}

// A call with more entries than one record holds is split into kContinuation
// records (as the shim does) and merged back into one Event by the reader, also
// across chunk boundaries.
TEST(FormatRoundTrip, HugeCompletionAndRequestOpSplitAndMerged) {
  const std::string dir = temp_dir();
  std::vector<Completion> comps;
  for (int i = 0; i < 300; ++i)
    comps.push_back({0xAC000000u + i, 70000 + i, i, (i % 2) ? 6 * GiB : 10, i % 3 == 0});
  std::vector<uint32_t> reqs;
  for (int i = 0; i < 1000; ++i) reqs.push_back(0xAC100000u + i);
  for (uint32_t chunk : {1u << 20, 2048u}) {
    const std::string path = dir + "/rank-00000.prof";
    {
      TraceWriter w(path, 0, 1, 1, format::TimerKind::Monotonic, chunk);
      define_all(w);
      Event e;
      e.kind = FuncKind::Completion;
      e.func = fid(e.kind);
      e.enter = 100;
      e.leave = 200;
      e.completions = comps;
      w.event(e);
      Event r;
      r.kind = FuncKind::RequestOp;
      r.func = fid(r.kind);
      r.enter = 300;
      r.leave = 301;
      r.requests = reqs;
      w.event(r);
      Event o;
      o.kind = FuncKind::Other;
      o.func = fid(o.kind);
      o.enter = 400;
      o.leave = 401;
      w.event(o);
    }
    std::string err;
    auto t = RankTrace::open(path, &err);
    ASSERT_TRUE(t) << err;
    if (chunk == 2048u) {
      EXPECT_GT(t->stats().event_chunks, 3u);
    }
    auto c = t->events();
    Event g;
    ASSERT_TRUE(c.next(g));
    ASSERT_EQ(g.kind, FuncKind::Completion);
    EXPECT_EQ(g.enter, 100u);
    EXPECT_EQ(g.leave, 200u);
    EXPECT_EQ(g.flags & format::kContinuation, 0);
    ASSERT_EQ(g.completions.size(), comps.size());
    for (size_t i = 0; i < comps.size(); ++i) {
      EXPECT_EQ(g.completions[i].request, comps[i].request);
      EXPECT_EQ(g.completions[i].source, comps[i].source);
      EXPECT_EQ(g.completions[i].tag, comps[i].tag);
      EXPECT_EQ(g.completions[i].bytes, comps[i].bytes);
      EXPECT_EQ(g.completions[i].cancelled, comps[i].cancelled);
    }
    ASSERT_TRUE(c.next(g));
    ASSERT_EQ(g.kind, FuncKind::RequestOp);
    EXPECT_EQ(g.enter, 300u);
    EXPECT_EQ(std::vector<uint32_t>(g.requests.begin(), g.requests.end()), reqs);
    ASSERT_TRUE(c.next(g));
    EXPECT_EQ(g.kind, FuncKind::Other);
    EXPECT_EQ(g.enter, 400u);
    EXPECT_FALSE(c.next(g));
    EXPECT_EQ(t->stats().events, 3u);
    EXPECT_EQ(t->stats().bad_records, 0u);
    EXPECT_EQ(t->stats().backwards_timestamps, 0u);
  }
  fs::remove_all(dir);
}

TEST(FormatRoundTrip, UnknownKindPayloadIsSkipped) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  {
    TraceWriter w(path, 0, 1, 1);
    define_all(w);
    w.function(40, static_cast<FuncKind>(99), "MPI_Future");
    Event e;
    e.kind = FuncKind::Send;  // encoded with a Send payload, read as kind 99
    e.func = 40;
    e.enter = 10;
    e.leave = 11;
    e.peer = 5, e.tag = 6, e.bytes = 7, e.comm = kWorld;
    w.event(e);
    Event f = e;
    f.func = fid(FuncKind::Send);
    f.enter = 20;
    f.leave = 22;
    // Another communicator: the writer, which encoded the first record as a
    // Send, would otherwise leave this Comm out (kSameComm), and a reader that
    // skips an unknown kind cannot know the communicator it referred to.
    f.comm = kWorld + 1;
    w.event(f);
  }
  auto t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  auto c = t->events();
  Event g;
  ASSERT_TRUE(c.next(g));
  EXPECT_EQ(static_cast<int>(g.kind), 99);
  EXPECT_EQ(g.func, 40);
  EXPECT_EQ(g.peer, -1);  // payload skipped: defaults
  EXPECT_EQ(g.bytes, 0u);
  ASSERT_TRUE(c.next(g));
  EXPECT_EQ(g.kind, FuncKind::Send);
  EXPECT_EQ(g.enter, 20u);
  EXPECT_EQ(g.peer, 5);
  EXPECT_FALSE(c.next(g));
  EXPECT_EQ(t->stats().bad_records, 0u);
  fs::remove_all(dir);
}

// Format 7: each call's site index travels in its record's func field and
// the A definitions name its call site; a call repeating its function's
// payload from another site keeps its own site. Version 6 has no sites.
TEST(FormatRoundTrip, CallSitesByIndex) {
  for (const uint32_t version : {format::kFormatVersion, format::kFirstRepeatVersion}) {
    SCOPED_TRACE(version);
    const std::string dir = temp_dir();
    const std::string path = dir + "/rank-00000.prof";
    const uint16_t allreduce = fid(FuncKind::Collective);
    std::vector<Event> written;
    {
      TraceWriter w(path, 0, 1, 1, format::TimerKind::Monotonic, 1u << 20, version);
      define_all(w);
      w.callsite({31, 0x401000, "", 0});
      w.callsite({32, 0x401100, "", 0});
      w.call_site_index(allreduce, 1, 31);
      w.call_site_index(allreduce, 2, 32);
      for (int i = 0; i < 40; ++i) {
        Event e;
        e.kind = FuncKind::Collective;
        e.func = allreduce;
        e.enter = 100 + 10 * uint64_t(i);
        e.leave = e.enter + 3;
        e.comm = kWorld;
        e.root = -1;
        e.bytes = 4;
        // Sites 1, 2, 2, 1, ...; the last few calls from a site with no index.
        e.call_site_index = i >= 36 ? 0 : uint8_t((i % 3 == 0) ? 1 : 2);
        w.event(e);
        written.push_back(e);
      }
    }
    auto t = RankTrace::open(path, nullptr);
    ASSERT_TRUE(t);
    const bool sites = version >= format::kFirstSiteVersion;
    auto check = [&](const Event& g, size_t i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(g.func, allreduce);
      EXPECT_EQ(g.bytes, 4u);
      const uint8_t index = sites ? written[i].call_site_index : 0;
      EXPECT_EQ(g.call_site_index, index);
      EXPECT_EQ(g.call_site, index == 1 ? 31u : index == 2 ? 32u : 0u);
    };
    auto c = t->events();
    Event g;
    size_t n = 0;
    while (c.next(g)) check(g, n++);
    EXPECT_EQ(n, written.size());
    auto b = t->events();  // the batch decoder
    n = 0;
    for (auto batch = b.next_batch(); !batch.empty(); batch = b.next_batch())
      for (const Event& e : batch) check(e, n++);
    EXPECT_EQ(n, written.size());
    EXPECT_EQ(t->stats().bad_records, 0u);
    fs::remove_all(dir);
  }
}

TEST(FormatRoundTrip, BadRecordsCountedAndSkipped) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  {
    TraceWriter w(path, 0, 1, 1);
    define_all(w);
    Event e;
    e.kind = FuncKind::Other;
    e.func = 77;  // never defined
    e.enter = 10;
    e.leave = 11;
    w.event(e);
    Event f;
    f.kind = FuncKind::Other;  // no payload, but function 2 is a Send: too short
    f.func = fid(FuncKind::Send);
    f.enter = 20;
    f.leave = 21;
    w.event(f);
    Event g;
    g.kind = FuncKind::Other;
    g.func = fid(FuncKind::Other);
    g.enter = 30;
    g.leave = 31;
    w.event(g);
  }
  auto t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  Event g;
  size_t n = 0;
  {
    auto c = t->events();
    while (c.next(g)) {
      ++n;
      EXPECT_EQ(g.enter, 30u);  // times of skipped records still chain
    }
  }
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(t->stats().bad_records, 2u);
  ASSERT_FALSE(t->warnings().empty());
  EXPECT_NE(t->warnings()[0].find("unknown function id 77"), std::string::npos);
  EXPECT_NE(t->warnings()[0].find(path), std::string::npos);
  // A second pass does not count the same damage twice.
  {
    auto c = t->events();
    while (c.next(g)) {
    }
  }
  EXPECT_EQ(t->stats().bad_records, 2u);
  EXPECT_EQ(t->stats().events, 2u);
  fs::remove_all(dir);
}

// Streams with ids 0, 3, 6...; the merge takes its linear path up to 16 live
// streams and its heap path beyond.
class FormatMerge : public testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Streams, FormatMerge, testing::Values(2, 5, 20));

TEST_P(FormatMerge, ManyChunksAndStreamsMerged) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00002.prof";
  const int kStreams = GetParam();
  const int kPerStream = 100000 / kStreams;
  std::mt19937_64 rng(42);
  std::vector<std::vector<Event>> want(kStreams);
  {
    TraceWriter w(path, 2, 3, 99, format::TimerKind::Tsc, 4096);
    define_all(w);
    std::vector<uint64_t> t(kStreams, 1000);
    for (int i = 0; i < kPerStream * kStreams; ++i) {
      const uint32_t s = static_cast<uint32_t>(rng() % kStreams);
      if (want[s].size() >= static_cast<size_t>(s == 0 ? kPerStream / 3 : kPerStream)) continue;
      Event e;
      e.stream = s * 3;  // stream ids need not be dense
      e.kind = (i % 3) ? FuncKind::Send : FuncKind::Other;
      e.func = fid(e.kind);
      t[s] += rng() % 50;
      e.enter = t[s];
      e.leave = e.enter + rng() % 20;
      if (e.kind == FuncKind::Send) {
        e.peer = i % 3;
        e.tag = i;  // goes wide past 32767
        e.comm = kWorld;
        e.bytes = static_cast<uint64_t>(i) * 1000;
      }
      want[s].push_back(e);
      w.event(e);
    }
  }
  std::string err;
  auto t = RankTrace::open(path, &err);
  ASSERT_TRUE(t) << err;
  ASSERT_EQ(t->stream_count(), static_cast<size_t>(kStreams));
  EXPECT_GT(t->stats().event_chunks, 100u);
  // One stream ends early: the merge goes on with the others.
  ASSERT_GT(want[0].size(), 0u);
  size_t total = 0;
  for (int s = 0; s < kStreams; ++s) {
    auto c = t->stream(s);
    Event g;
    size_t n = 0;
    while (c.next(g)) {
      ASSERT_LT(n, want[s].size());
      if (g.enter != want[s][n].enter || g.bytes != want[s][n].bytes || g.tag != want[s][n].tag)
        expect_event(want[s][n], g, "stream " + std::to_string(s) + " event " + std::to_string(n));
      ASSERT_EQ(g.stream, static_cast<uint32_t>(s * 3));
      ++n;
    }
    EXPECT_EQ(n, want[s].size());
    total += n;
  }
  // Merged: every event once, in enter order (ties by stream index).
  auto m = t->events();
  Event g;
  size_t n = 0;
  uint64_t prev = 0;
  uint32_t prev_stream = 0;
  std::vector<size_t> seen(kStreams, 0);
  while (m.next(g)) {
    ASSERT_GE(g.enter, prev);
    if (g.enter == prev && n > 0) {
      ASSERT_GE(g.stream, prev_stream);
    }
    const size_t s = g.stream / 3;
    ASSERT_LT(seen[s], want[s].size());
    ASSERT_EQ(g.enter, want[s][seen[s]].enter);
    ASSERT_EQ(g.bytes, want[s][seen[s]].bytes);
    ++seen[s];
    prev = g.enter;
    prev_stream = g.stream;
    ++n;
  }
  EXPECT_EQ(n, total);
  EXPECT_EQ(t->stats().backwards_timestamps, 0u);
  EXPECT_EQ(t->stats().crc_mismatches, 0u);  // counted as cursors enter chunks
  fs::remove_all(dir);
}

TEST(FormatRoundTrip, MergedCursorKeepsCompletionsValidUntilNextCall) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  std::vector<Completion> a = {{0xAC000001u, 1, 2, 3, false}};
  std::vector<Completion> b = {{0xAC000009u, 4, 5, 6, true}, {0xAC00000Au, 7, 8, 9, false}};
  {
    TraceWriter w(path, 0, 1, 1);
    define_all(w);
    for (int i = 0; i < 10; ++i) {
      Event e;
      e.kind = FuncKind::Completion;
      e.func = fid(e.kind);
      e.stream = 0;
      e.enter = 100 + 10 * i;
      e.leave = e.enter + 1;
      e.completions = a;
      w.event(e);
      e.stream = 1;
      e.enter += 1;  // interleaves with stream 0
      e.leave = e.enter + 1;
      e.completions = b;
      w.event(e);
    }
  }
  auto t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  auto m = t->events();
  Event g;
  int n = 0;
  while (m.next(g)) {
    const auto& want = (n % 2 == 0) ? a : b;
    ASSERT_EQ(g.completions.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(g.completions[i].request, want[i].request);
      EXPECT_EQ(g.completions[i].cancelled, want[i].cancelled);
    }
    ++n;
  }
  EXPECT_EQ(n, 20);
  fs::remove_all(dir);
}

// Cursors of different streams of one trace may run on different threads.
TEST(FormatRoundTrip, ConcurrentStreamCursors) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  const int kStreams = 4, kPer = 30000;
  {
    TraceWriter w(path, 0, 1, 1, format::TimerKind::Monotonic, 4096);
    define_all(w);
    for (int i = 0; i < kPer; ++i)
      for (int s = 0; s < kStreams; ++s) {
        Event e;
        e.stream = static_cast<uint32_t>(s);
        e.kind = FuncKind::Send;
        e.func = fid(e.kind);
        e.enter = 100 + static_cast<uint64_t>(i) * 10;
        e.leave = e.enter + 1;
        e.peer = s;
        e.comm = kWorld;
        e.bytes = static_cast<uint64_t>(i);
        w.event(e);
      }
  }
  auto t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->stream_count(), static_cast<size_t>(kStreams));
  std::vector<std::thread> threads;
  std::vector<uint64_t> sums(kStreams, 0), counts(kStreams, 0);
  for (int s = 0; s < kStreams; ++s)
    threads.emplace_back([&, s] {
      auto c = t->stream(static_cast<size_t>(s));
      Event e;
      while (c.next(e)) {
        sums[s] += e.bytes;
        ++counts[s];
      }
    });
  for (auto& th : threads) th.join();
  for (int s = 0; s < kStreams; ++s) {
    EXPECT_EQ(counts[s], static_cast<uint64_t>(kPer));
    EXPECT_EQ(sums[s], static_cast<uint64_t>(kPer) * (kPer - 1) / 2);
  }
  EXPECT_EQ(t->stats().events, static_cast<uint64_t>(kPer) * kStreams);
  fs::remove_all(dir);
}

// A continuation record whose first part is gone (e.g. in a chunk that failed
// its CRC) is delivered on its own, flagged kContinuation.
TEST(FormatRoundTrip, LoneContinuationIsItsOwnEvent) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  std::vector<Completion> comps(10, Completion{0xAC000001u, 1, 2, 3, false});
  {
    TraceWriter w(path, 0, 1, 1);
    define_all(w);
    Event e;
    e.kind = FuncKind::Completion;
    e.func = fid(e.kind);
    e.enter = 100;
    e.leave = 110;
    e.completions = comps;
    e.flags = format::kContinuation;  // the writer decides this flag: ignored
    w.event(e);
  }
  // Flip the flag into the record by hand: it becomes a lone continuation.
  std::vector<unsigned char> b = read_file(path);
  size_t off = sizeof(format::FileHeader);
  format::ChunkHeader h{};
  for (;;) {
    ASSERT_LE(off + sizeof h, b.size());
    std::memcpy(&h, b.data() + off, sizeof h);
    if (h.type == uint16_t(format::ChunkType::Events)) break;
    off += sizeof h + h.capacity;
  }
  const size_t rec = off + sizeof h + kEmptySnapshotBytes;
  EXPECT_EQ(b[rec + 2] & format::kContinuation, 0);  // the writer cleared it
  b[rec + 2] |= format::kContinuation;
  h.crc32 = format::crc32c(b.data() + off + sizeof h, h.used);
  std::memcpy(b.data() + off, &h, sizeof h);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  auto t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  auto c = t->events();
  Event g;
  ASSERT_TRUE(c.next(g));
  EXPECT_NE(g.flags & format::kContinuation, 0);
  EXPECT_EQ(g.completions.size(), 10u);
  EXPECT_FALSE(c.next(g));
  fs::remove_all(dir);
}

TEST(FormatDefinitions, AllKindsRoundTrip) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00001.prof";
  {
    TraceWriter w(path, 1, 4, 7);
    w.meta("host", "node17");
    w.meta("exe", "/path/with\ttab");
    w.meta("ns_per_tick", "0.5");
    define_all(w);
    CallSiteDef cs;
    cs.id = 3;
    cs.address = 0x401234;
    cs.file = "file.c";
    cs.line = 42;
    w.callsite(cs);
    CallSiteDef cs2;
    cs2.id = 4;
    cs2.address = 0x7f0000001000ull;
    w.callsite(cs2);
    w.load_object({0x7f0000000000ull, "/lib/libfoo.so", ""});
    w.load_object({0x7f1000000000ull, "/lib/libbar.so", "5e1f00dbeef0"});
    w.clock_sync({"init", 1000, -12.5, 3.25});
    w.end("signal:11");
  }
  std::string err;
  auto t = RankTrace::open(path, &err);
  ASSERT_TRUE(t) << err;
  EXPECT_EQ(t->meta().at("host"), "node17");
  EXPECT_EQ(t->meta().at("exe"), "/path/with tab");
  EXPECT_DOUBLE_EQ(t->ns_per_tick(), 0.5);
  ASSERT_NE(t->function(fid(FuncKind::Send)), nullptr);
  EXPECT_EQ(t->function(fid(FuncKind::Send))->name, "MPI_Send");
  EXPECT_EQ(t->function(fid(FuncKind::Send))->kind, FuncKind::Send);
  EXPECT_EQ(t->function(fid(FuncKind::IAllToAll))->kind, FuncKind::IAllToAll);
  EXPECT_EQ(t->function(200), nullptr);
  EXPECT_EQ(t->functions().size(), 14u);
  ASSERT_NE(t->callsite(3), nullptr);
  EXPECT_EQ(t->callsite(3)->file, "file.c");
  EXPECT_EQ(t->callsite(3)->line, 42);
  EXPECT_EQ(t->callsite(3)->address, 0x401234u);
  ASSERT_NE(t->callsite(4), nullptr);
  EXPECT_EQ(t->callsite(4)->file, "");
  EXPECT_EQ(t->callsite(4)->line, 0);
  EXPECT_EQ(t->callsite(4)->address, 0x7f0000001000ull);
  EXPECT_EQ(t->callsite(5), nullptr);
  ASSERT_EQ(t->load_objects().size(), 2u);
  EXPECT_EQ(t->load_objects()[0].bias, 0x7f0000000000ull);
  EXPECT_EQ(t->load_objects()[0].path, "/lib/libfoo.so");
  EXPECT_EQ(t->load_objects()[0].build_id, "");  // none recorded (as in earlier formats)
  EXPECT_EQ(t->load_objects()[1].path, "/lib/libbar.so");
  EXPECT_EQ(t->load_objects()[1].build_id, "5e1f00dbeef0");
  ASSERT_EQ(t->clock_syncs().size(), 1u);
  EXPECT_EQ(t->clock_syncs()[0].phase, "init");
  EXPECT_EQ(t->clock_syncs()[0].local_ticks, 1000u);
  EXPECT_DOUBLE_EQ(t->clock_syncs()[0].offset_ns, -12.5);
  EXPECT_DOUBLE_EQ(t->clock_syncs()[0].rtt_ns, 3.25);
  EXPECT_EQ(t->end_reason(), "signal:11");
  EXPECT_EQ(t->stats().bad_definitions, 0u);
  EXPECT_TRUE(t->warnings().empty());
  fs::remove_all(dir);
}

// Hand-written definition text: unknown tags skipped, malformed lines counted.
TEST(FormatDefinitions, MalformedAndUnknownLines) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  {
    TraceWriter w(path, 0, 2, 1);
    w.meta("ok", "1");
  }
  // Append a definitions chunk with mixed lines.
  const std::string text =
      "F\t5\t1\tMPI_Send\n"
      "X\tfuture\tstuff\n"             // unknown tag: skipped silently
      "Zeta\tlonger tag\n"             // unknown tag
      "F\tnotanumber\t1\tMPI_Bad\n"    // malformed
      "F\t0\t1\tMPI_Zero\n"            // id 0 is invalid
      "C\t0x84000001\t5\t0\t3\t0\t0,1\t\n"  // size 3 but 2 ranks
      "C\t0x84000002\t6\t0\t2\t0\t0,1\t\n"  // fine
      "K\tinit\t10\tnan\t1\n"          // non-finite offset
      "M\tonlykey\n"                   // malformed
      "\n"
      "E\texit\n";
  {
    FILE* f = std::fopen(path.c_str(), "ab");
    ASSERT_TRUE(f);
    format::ChunkHeader h{};
    h.magic = format::kChunkMagic;
    h.type = uint16_t(format::ChunkType::Definitions);
    h.flags = format::kChunkSealed;
    h.used = static_cast<uint32_t>(text.size());
    h.capacity = static_cast<uint32_t>(format::align8(text.size()));
    h.crc32 = format::crc32c(text.data(), text.size());
    std::fwrite(&h, sizeof h, 1, f);
    std::string padded = text;
    padded.resize(h.capacity, '\0');
    std::fwrite(padded.data(), padded.size(), 1, f);
    std::fclose(f);
  }
  auto t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stats().bad_definitions, 5u);
  ASSERT_NE(t->function(5), nullptr);
  EXPECT_EQ(t->function(5)->name, "MPI_Send");
  EXPECT_EQ(t->functions().size(), 1u);
  EXPECT_EQ(t->end_reason(), "exit");
  EXPECT_EQ(t->comm_at(0x84000001u, 0), nullptr);
  ASSERT_NE(t->comm_at(0x84000002u, 0), nullptr);
  EXPECT_EQ(t->comm_at(0x84000002u, 0)->global_id, 6u);
  EXPECT_EQ(t->meta().count("onlykey"), 0u);
  fs::remove_all(dir);
}

TEST(FormatComms, CommAtHandleReuseAndWorldRank) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00001.prof";
  const uint32_t h = 0x84000002u;
  const uint32_t ic = 0x84000010u;
  {
    TraceWriter w(path, 1, 4, 7);
    CommDef a;
    a.handle = h;
    a.global_id = 100;
    a.time = 100;
    a.ranks = {0, 2};
    w.comm(a);
    CommDef b;
    b.handle = h;  // freed and reused
    b.global_id = 200;
    b.time = 500;
    b.ranks = {1, 3, 0};
    w.comm(b);
    CommDef c;
    c.handle = ic;
    c.global_id = 300;
    c.time = 50;
    c.inter = true;
    c.ranks = {1, 0};
    c.remote_ranks = {2, 3};
    w.comm(c);
  }
  auto t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  ASSERT_NE(t->comm_at(h, 50), nullptr);
  EXPECT_EQ(t->comm_at(h, 50)->global_id, 100u);  // before all: the earliest
  EXPECT_EQ(t->comm_at(h, 100)->global_id, 100u);
  EXPECT_EQ(t->comm_at(h, 499)->global_id, 100u);
  EXPECT_EQ(t->comm_at(h, 500)->global_id, 200u);
  EXPECT_EQ(t->comm_at(h, ~uint64_t{0})->global_id, 200u);
  EXPECT_EQ(t->comm_at(0x84000099u, 1000), nullptr);
  EXPECT_EQ(t->world_rank(h, 200, 1), 2);
  EXPECT_EQ(t->world_rank(h, 600, 1), 3);
  EXPECT_EQ(t->world_rank(h, 600, 2), 0);
  EXPECT_EQ(t->world_rank(h, 200, 2), -1);  // out of range at that time
  EXPECT_EQ(t->world_rank(h, 600, format::kAnySourceRank), format::kAnySourceRank);
  EXPECT_EQ(t->world_rank(h, 600, format::kProcNull), format::kProcNull);
  EXPECT_EQ(t->world_rank(0x84000099u, 600, 0), -1);
  // Intercommunicator: peers are in the remote group.
  EXPECT_EQ(t->world_rank(ic, 100, 0), 2);
  EXPECT_EQ(t->world_rank(ic, 100, 1), 3);
  EXPECT_EQ(t->world_rank(ic, 100, 2), -1);
  EXPECT_TRUE(t->comm_at(ic, 100)->inter);
  // Implicit world and self.
  ASSERT_NE(t->comm_at(kWorld, 0), nullptr);
  EXPECT_EQ(t->comm_at(kWorld, 0)->ranks.size(), 4u);
  EXPECT_EQ(t->world_rank(kWorld, 12345, 3), 3);
  EXPECT_EQ(t->world_rank(kWorld, 12345, 4), -1);
  EXPECT_EQ(t->world_rank(kSelf, 12345, 0), 1);
  EXPECT_EQ(t->world_rank(kSelf, 12345, 1), -1);
  fs::remove_all(dir);
}

TEST(FormatComms, ExplicitWorldOverridesImplicit) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  {
    TraceWriter w(path, 0, 3, 7);
    CommDef wd;
    wd.handle = kWorld;
    wd.global_id = 1;
    wd.ranks = {2, 0, 1};
    w.comm(wd);
  }
  auto t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->world_rank(kWorld, 10, 0), 2);
  EXPECT_EQ(t->comm_at(kWorld, 10)->global_id, 1u);
  EXPECT_EQ(t->world_rank(kSelf, 10, 0), 0);
  fs::remove_all(dir);
}

// Every rank file of a run defines MPI_COMM_WORLD, implicitly or as written
// by the shim: the readers of a trace of n ranks hold its list 0..n-1 once, not
// once a file (n^2 in all: 1 GiB at 16384 ranks).
TEST(FormatComms, EveryFilesWorldSharesOneList) {
  const std::string dir = temp_dir();
  for (int r = 0; r < 3; ++r) {
    TraceWriter w(dir + "/rank-0000" + std::to_string(r) + ".prof", r, 3, 7);
    if (r == 2) {  // written out, as the shim writes it
      CommDef wd;
      wd.handle = kWorld;
      wd.global_id = 1;
      wd.ranks = {0, 1, 2};
      w.comm(wd);
    }
  }
  const TraceDir d = TraceDir::open(dir);
  ASSERT_EQ(d.ranks.size(), 3u);
  const CommDef* first = d.ranks[0]->comm_at(kWorld, 0);
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(first->ranks.size(), 3u);
  EXPECT_TRUE(first->ranks.is_identity());
  for (const auto& t : d.ranks) {
    const CommDef* world = t->comm_at(kWorld, 0);
    ASSERT_NE(world, nullptr);
    EXPECT_EQ(world->ranks.begin(), first->ranks.begin()) << t->path();
    EXPECT_EQ(t->world_rank(kWorld, 0, 2), 2);
  }
  // Another group is a list of its own.
  const CommDef* self = d.ranks[1]->comm_at(kSelf, 0);
  ASSERT_NE(self, nullptr);
  EXPECT_FALSE(self->ranks.is_identity());
  EXPECT_EQ(self->ranks.vector(), std::vector<int32_t>{1});
  fs::remove_all(dir);
}

TEST(FormatTime, LocalAndGlobalConversion) {
  const std::string dir = temp_dir();
  auto write = [&](const std::string& path, bool final_sync) {
    TraceWriter w(path, 1, 2, 7);
    w.meta("ns_per_tick", "2");
    define_all(w);
    w.clock_sync({"init", 1000, 500.0, 10.0});
    if (final_sync) w.clock_sync({"final", 11000, 1500.0, 10.0});
    Event e;
    e.kind = FuncKind::Other;
    e.func = fid(e.kind);
    e.enter = 5000;
    e.leave = 5100;
    w.event(e);
  };
  const std::string p1 = dir + "/a.prof", p2 = dir + "/b.prof";
  write(p1, false);
  write(p2, true);
  auto a = RankTrace::open(p1, nullptr);
  auto b = RankTrace::open(p2, nullptr);
  ASSERT_TRUE(a && b);
  EXPECT_DOUBLE_EQ(a->ns_per_tick(), 2.0);
  EXPECT_DOUBLE_EQ(a->to_local_ns(5000), 0.0);
  EXPECT_DOUBLE_EQ(a->to_local_ns(5100), 200.0);
  EXPECT_DOUBLE_EQ(a->to_local_ns(4990), -20.0);
  // init only: constant offset.
  EXPECT_DOUBLE_EQ(a->to_global_ns(1000), 2000.0 + 500.0);
  EXPECT_DOUBLE_EQ(a->to_global_ns(6000), 12000.0 + 500.0);
  // init + final: linear drift between them (and extrapolated beyond).
  EXPECT_DOUBLE_EQ(b->to_global_ns(1000), 2000.0 + 500.0);
  EXPECT_DOUBLE_EQ(b->to_global_ns(6000), 12000.0 + 1000.0);
  EXPECT_DOUBLE_EQ(b->to_global_ns(11000), 22000.0 + 1500.0);
  EXPECT_DOUBLE_EQ(b->to_global_ns(21000), 42000.0 + 2500.0);
  fs::remove_all(dir);
}

// Conversions count from the timer's epoch (M epoch_ticks), as the shim's clock
// sync does: with raw TSC values near 1e14, a rate refined at finalize must
// move times by (t - epoch) * error, not t * error.
TEST(FormatTime, GlobalTimeCountsFromTheEpoch) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00001.prof";
  const uint64_t epoch = 100000000000000ull;  // 1e14 ticks
  {
    TraceWriter w(path, 1, 2, 7);
    w.meta("ns_per_tick", "0.5");
    w.meta("epoch_ticks", std::to_string(epoch));
    define_all(w);
    w.clock_sync({"init", epoch + 10, -250.0, 10.0});
    Event e;
    e.kind = FuncKind::Other;
    e.func = fid(e.kind);
    e.enter = epoch + 2000;
    e.leave = epoch + 2100;
    w.event(e);
  }
  auto t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->to_global_ns(epoch + 2000), 1000.0 - 250.0);
  EXPECT_DOUBLE_EQ(t->to_global_ns(epoch), -250.0);
  fs::remove_all(dir);
}

TEST(FormatTime, DefaultsWithoutDefinitions) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  {
    TraceWriter w(path, 0, 1, 7);
    define_all(w);
    Event e;
    e.kind = FuncKind::Other;
    e.func = fid(e.kind);
    e.stream = 1;
    e.enter = 700;
    e.leave = 800;
    w.event(e);
    e.stream = 0;
    e.enter = 650;  // earlier, in another stream
    w.event(e);
  }
  auto t = RankTrace::open(path, nullptr);
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->ns_per_tick(), 1.0);
  EXPECT_DOUBLE_EQ(t->to_local_ns(650), 0.0);  // the first event of any stream
  EXPECT_DOUBLE_EQ(t->to_global_ns(650), 650.0);
  EXPECT_EQ(t->end_reason(), "");
  fs::remove_all(dir);
}

TEST(FormatMarkers, TagRoundTrip) {
  for (uint32_t id : {0u, 1u, 0x1234u, 0xAAAAu, 0xFFFFu}) {
    for (bool begin : {true, false}) {
      const int tag = format::encode_marker_tag(static_cast<uint16_t>(id), begin);
      const auto m = format::decode_marker_tag(tag);
      EXPECT_TRUE(m.is_marker) << id;
      EXPECT_EQ(m.begin, begin) << id;
      EXPECT_EQ(m.id, id);
    }
  }
  for (int tag : {0, 7, -1, 32767, static_cast<int>(0xAA0000CCu), static_cast<int>(0xAB0000AAu),
                  static_cast<int>(0x00AAAAAAu)})
    EXPECT_FALSE(format::decode_marker_tag(tag).is_marker) << tag;
}

TEST(FormatCrc, Crc32cCheckValueAndPathsAgree) {
  EXPECT_EQ(format::crc32c("123456789", 9), 0xE3069283u);  // the CRC-32C check value
  std::mt19937 rng(7);
  // Long enough for the three-lane path (blocks of 3 x kCrcLane) and its tail.
  std::vector<unsigned char> buf(5 * 3 * format::detail::kCrcLane + 5000);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  const size_t block = 3 * format::detail::kCrcLane;
  for (size_t off : {0u, 1u, 3u, 7u})
    for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{100},
                     size_t{4093}, block - 1, block, block + 1, 2 * block + 13, 5 * block + 4093})
      EXPECT_EQ(format::crc32c(buf.data() + off, n),
                ~format::detail::crc32c_sw(buf.data() + off, n, ~0u))
          << off << " " << n;
  // Incremental: crc(a+b) == crc(b, crc(a)).
  EXPECT_EQ(format::crc32c(buf.data(), 5000),
            format::crc32c(buf.data() + 1000, 4000, format::crc32c(buf.data(), 1000)));
}

TEST(FormatWriter, UnwritablePathIsNotOk) {
  TraceWriter w("/nonexistent-dir-xyz/rank-00000.prof", 0, 1, 1);
  EXPECT_FALSE(w.ok());
  Event e;
  w.event(e);  // harmless
  w.close();
}

}  // namespace

// ---------------------------------------------------------------------------
// Compact records: short (8-byte) headers and Completion status bitmaps.

namespace {
// One stream's decoded events and its event payload bytes.
struct ReadBack {
  std::vector<Event> events;
  std::vector<std::vector<Completion>> completions;
  uint64_t event_bytes = 0;
};
ReadBack write_and_read(const std::string& path, const std::vector<Event>& events) {
  {
    TraceWriter w(path, 0, 1, 1);
    define_all(w);
    for (const Event& e : events) w.event(e);
  }
  ReadBack rb;
  std::string err;
  auto t = RankTrace::open(path, &err);
  EXPECT_TRUE(t) << err;
  if (!t) return rb;
  rb.event_bytes = t->event_bytes();
  auto c = t->events();
  Event g;
  while (c.next(g)) {
    rb.completions.emplace_back(g.completions.begin(), g.completions.end());
    g.completions = {};
    rb.events.push_back(g);
  }
  EXPECT_EQ(t->stats().bad_records, 0u);
  EXPECT_EQ(t->stats().crc_mismatches, 0u);
  return rb;
}
}  // namespace

TEST(FormatRoundTrip, ShortTimeBoundaries) {
  const std::string dir = temp_dir();
  // (dt_enter, duration) of a second Other record (no payload) and its size:
  // 8 bytes when both are below 65536, 12 up to 2^32 - 1, 28 (long time) beyond.
  struct Case {
    uint64_t dt, dur;
    uint64_t bytes;
  };
  const Case cases[] = {
      {0, 0, 8},           {65535, 65535, 8},       {65536, 0, 12},
      {0, 65536, 12},      {65535, 65536, 12},      {65536, 65535, 12},
      {UINT32_MAX, 1, 12}, {uint64_t{1} << 32, 1, 28}, {1, uint64_t{1} << 32, 28},
  };
  for (const Case& k : cases) {
    Event a;
    a.kind = FuncKind::Other;
    a.func = fid(a.kind);
    a.enter = 1000;
    a.leave = 1001;  // first record of the chunk: dt 0, short
    Event b = a;
    b.enter = a.enter + k.dt;
    b.leave = b.enter + k.dur;
    ReadBack rb = write_and_read(dir + "/rank-00000.prof", {a, b});
    ASSERT_EQ(rb.events.size(), 2u);
    EXPECT_EQ(rb.events[0].enter, a.enter);
    EXPECT_EQ(rb.events[0].leave, a.leave);
    EXPECT_EQ(rb.events[1].enter, b.enter) << k.dt << " " << k.dur;
    EXPECT_EQ(rb.events[1].leave, b.leave) << k.dt << " " << k.dur;
    EXPECT_EQ(rb.event_bytes, kEmptySnapshotBytes + 8 + k.bytes) << k.dt << " " << k.dur;
    EXPECT_EQ((rb.events[1].flags & format::kLongTime) != 0, k.bytes == 28);
  }
  // A payload after either header form: a Send with short and with 32-bit times.
  for (uint64_t dur : {uint64_t{65535}, uint64_t{65536}}) {
    Event s;
    s.kind = FuncKind::Send;
    s.func = fid(s.kind);
    s.enter = 5;
    s.leave = 5 + dur;
    s.peer = 3;
    s.tag = 9;
    s.comm = kWorld;
    s.bytes = 77;
    ReadBack rb = write_and_read(dir + "/rank-00000.prof", {s});
    ASSERT_EQ(rb.events.size(), 1u);
    expect_event(s, rb.events[0], "send dur " + std::to_string(dur));
    EXPECT_EQ(rb.event_bytes, kEmptySnapshotBytes + (dur < 65536 ? 8u : 12u) + 12u);
  }
  fs::remove_all(dir);
}

TEST(FormatRoundTrip, CompletionEntriesWithAndWithoutStatus) {
  const std::string dir = temp_dir();
  // Without status: what the shim's cleared status says (ANY_SOURCE, ANY_TAG,
  // no bytes, not cancelled); everything else keeps its status.
  const std::vector<Completion> comps = {
      {0xAC000001u, format::kAnySourceRank, format::kAnyTagValue, 0, false},  // a send: none
      {0xAC000002u, 3, 7, 100, false},
      {0xAC000003u, format::kAnySourceRank, format::kAnyTagValue, 0, true},  // cancelled
      {0xAC000004u, format::kProcNull, format::kAnyTagValue, 0, false},      // PROC_NULL recv
      {0xAC000005u, format::kAnySourceRank, format::kAnyTagValue, 0, false},
  };
  Event e;
  e.kind = FuncKind::Completion;
  e.func = fid(e.kind);
  e.enter = 10;
  e.leave = 20;
  e.completions = comps;
  Event empty = e;
  empty.enter = 30;
  empty.leave = 31;
  empty.completions = {};
  ReadBack rb = write_and_read(dir + "/rank-00000.prof", {e, empty});
  ASSERT_EQ(rb.events.size(), 2u);
  ASSERT_EQ(rb.completions[0].size(), comps.size());
  for (size_t i = 0; i < comps.size(); ++i) {
    EXPECT_EQ(rb.completions[0][i].request, comps[i].request) << i;
    EXPECT_EQ(rb.completions[0][i].source, comps[i].source) << i;
    EXPECT_EQ(rb.completions[0][i].tag, comps[i].tag) << i;
    EXPECT_EQ(rb.completions[0][i].bytes, comps[i].bytes) << i;
    EXPECT_EQ(rb.completions[0][i].cancelled, comps[i].cancelled) << i;
  }
  EXPECT_TRUE(rb.completions[1].empty());
  // 8 header + bitmap + 5 requests + 3 statuses (packed PeerTag, narrow Bytes);
  // the empty one is a bare 8-byte header.
  EXPECT_EQ(rb.event_bytes, kEmptySnapshotBytes + (2 + 1 + 5 + 3 * 2) * 4u + 8u);
  fs::remove_all(dir);
}

TEST(FormatRoundTrip, CompletionsSplitAt32Entries) {
  const std::string dir = temp_dir();
  for (size_t n : {size_t{32}, size_t{33}, size_t{70}}) {
    std::vector<Completion> comps;
    for (size_t i = 0; i < n; ++i) {
      if (i % 3 == 0)
        comps.push_back({0xAC000000u + uint32_t(i), int32_t(i), 5, 8 * i, false});
      else
        comps.push_back({0xAC000000u + uint32_t(i), format::kAnySourceRank,
                         format::kAnyTagValue, 0, false});
    }
    Event e;
    e.kind = FuncKind::Completion;
    e.func = fid(e.kind);
    e.enter = 100;
    e.leave = 150;
    e.completions = comps;
    Event o;
    o.kind = FuncKind::Other;
    o.func = fid(o.kind);
    o.enter = 200;
    o.leave = 201;
    ReadBack rb = write_and_read(dir + "/rank-00000.prof", {e, o});
    ASSERT_EQ(rb.events.size(), 2u) << n;  // the parts merge back into one event
    EXPECT_EQ(rb.events[0].enter, 100u);
    EXPECT_EQ(rb.events[0].leave, 150u);
    EXPECT_EQ(rb.events[0].flags & format::kContinuation, 0);
    ASSERT_EQ(rb.completions[0].size(), n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(rb.completions[0][i].request, comps[i].request);
      EXPECT_EQ(rb.completions[0][i].source, comps[i].source);
      EXPECT_EQ(rb.completions[0][i].tag, comps[i].tag);
      EXPECT_EQ(rb.completions[0][i].bytes, comps[i].bytes);
    }
    EXPECT_EQ(rb.events[1].kind, FuncKind::Other);
    // ceil(n / 32) records of header + bitmap; a word per request, two per status.
    const size_t records = (n + 31) / 32, statuses = (n + 2) / 3;
    EXPECT_EQ(rb.event_bytes, kEmptySnapshotBytes + records * 12 + n * 4 + statuses * 8 + 8) << n;
  }
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------
// Chunk context: kSameComm leaves out a Comm that repeats the chunk's last
// one, kPackedRequest puts small bytes and a request with the chunk's last
// high half in one word. Each chunk starts without context.

TEST(FormatRoundTrip, RepeatedCommAndRequestsShrinkAndRoundTrip) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  std::mt19937 rng(11);
  const uint32_t comms[] = {kWorld, kSelf, 0x84000003u};
  const uint32_t highs[] = {0xEC000000u, 0xAC000000u};
  const FuncKind kinds[] = {FuncKind::Send,        FuncKind::Recv,      FuncKind::Probe,
                            FuncKind::Isend,       FuncKind::Irecv,     FuncKind::SendRecv,
                            FuncKind::Collective,  FuncKind::AllToAll,  FuncKind::ICollective,
                            FuncKind::IAllToAll};
  std::vector<Event> want;
  uint64_t t = 100;
  for (int i = 0; i < 20000; ++i) {
    Event e;
    e.kind = kinds[rng() % std::size(kinds)];
    e.func = fid(e.kind);
    e.enter = t += 1 + rng() % 40;
    e.leave = e.enter + rng() % 30;
    // Runs of one communicator and one request high half, as programs have.
    e.comm = comms[(i / 50) % 3];
    e.request = highs[(i / 300) % 2] | (rng() % 3 == 0 ? 0x10000u : 0u) | (rng() & 0xFFFFu);
    const int size_case = static_cast<int>(rng() % 4);  // across the 16-bit and 32-bit limits
    e.bytes = size_case == 0 ? 65535 : size_case == 1 ? 65536 : size_case == 2 ? rng() % 100
                                                                             : 5 * GiB;
    switch (e.kind) {
      case FuncKind::SendRecv:
        e.recv_peer = 1, e.recv_tag = 2, e.recv_bytes = 8;
        [[fallthrough]];
      case FuncKind::Send:
      case FuncKind::Recv:
      case FuncKind::Probe:
      case FuncKind::Isend:
      case FuncKind::Irecv:
        e.peer = static_cast<int32_t>(rng() % 8);
        e.tag = static_cast<int32_t>(rng() % 100);
        break;
      default:
        e.root = static_cast<int32_t>(rng() % 4);
        break;
    }
    if (e.kind != FuncKind::Isend && e.kind != FuncKind::Irecv &&
        e.kind != FuncKind::ICollective && e.kind != FuncKind::IAllToAll)
      e.request = format::kNoRequest;
    want.push_back(e);
  }
  size_t full_bytes = 0;  // what the records would take with every word written
  for (const Event& e : want) {
    const bool wide = e.bytes > UINT32_MAX;
    size_t words = 2 + 1 + (wide ? 2 : 1);  // short header, comm, bytes
    switch (e.kind) {
      case FuncKind::SendRecv: words += 1 + 1 + 1; break;  // 2 peer/tags, recv bytes
      case FuncKind::Isend:
      case FuncKind::Irecv: words += 1 + 1; break;          // peer/tag, request
      case FuncKind::ICollective:
      case FuncKind::IAllToAll: words += 1 + 1; break;      // root, request
      case FuncKind::Collective:
      case FuncKind::AllToAll: words += 1; break;           // root
      default: words += 1; break;                           // peer/tag
    }
    full_bytes += 4 * words;
  }
  uint64_t chunks = 0, event_bytes = 0;
  for (uint32_t chunk_bytes : {4096u, 1u << 20}) {
    {
      TraceWriter w(path, 0, 1, 1, format::TimerKind::Monotonic, chunk_bytes);
      define_all(w);
      for (const Event& e : want) w.event(e);
    }
    auto tr = RankTrace::open(path, nullptr);
    ASSERT_TRUE(tr);
    auto c = tr->events();
    Event g;
    size_t n = 0;
    while (c.next(g)) {
      ASSERT_LT(n, want.size());
      if (g.comm != want[n].comm || g.request != want[n].request || g.bytes != want[n].bytes ||
          g.root != want[n].root || g.recv_bytes != want[n].recv_bytes)
        expect_event(want[n], g, "event " + std::to_string(n));
      EXPECT_EQ(g.flags & (format::kSameComm | format::kPackedRequest), 0) << n;
      ++n;
    }
    EXPECT_EQ(n, want.size());
    EXPECT_EQ(tr->stats().bad_records, 0u);
    chunks = tr->stats().event_chunks;
    event_bytes = tr->event_bytes();
    // Left-out comms and packed requests make the trace smaller.
    EXPECT_LT(event_bytes, full_bytes * 9 / 10) << chunk_bytes;
  }
  EXPECT_EQ(chunks, 1u);  // the second pass: one chunk, so context spans all of it
  fs::remove_all(dir);
}
