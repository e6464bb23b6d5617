// The shim's fixed-layout records (format::encode_fixed, encode_fixed_plain)
// against the general encoder, through the real reader: a chunk of fixed
// records, stored word by word as the shim stores them, reads back as the
// same events as TraceWriter's records of the same calls; a value one past
// a fixed field's limit is refused (fixed_misfit), never truncated; and the
// communicator a fixed record writes in full is the chunk's context for the
// records after it.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "format_test_util.h"
#include "prof/event_difference.h"
#include "prof/trace_reader.h"

namespace {

using namespace prof;
using namespace prof::trace;
using format::FuncKind;

constexpr uint16_t kSendId = 1, kRecvId = 2, kProbeId = 3, kIsendId = 4, kRankId = 9;
constexpr uint32_t kCommA = 0x84000002u, kCommB = 0x84000005u;

void define_functions(TraceWriter& w) {
  w.function(kSendId, FuncKind::Send, "MPI_Send");
  w.function(kRecvId, FuncKind::Recv, "MPI_Recv");
  w.function(kProbeId, FuncKind::Probe, "MPI_Probe");
  w.function(kIsendId, FuncKind::Isend, "MPI_Isend");
  w.function(kRankId, FuncKind::Other, "MPI_Comm_rank");
}

// The first event of both traces: the time chain's start, written by
// TraceWriter in both.
Event primer() {
  Event e;
  e.kind = FuncKind::Other;
  e.func = kRankId;
  e.enter = 1000;
  e.leave = 1001;
  return e;
}

// A trace of the primer alone, unsealed (a reader reads its chunk up to the
// first zero word), then `words` stored right after the primer's record, as
// the shim stores records into its mapped chunk.
void write_with_raw_records(const std::string& path, const std::vector<uint32_t>& words) {
  {
    TraceWriter w(path, 0, 1, 1, format::TimerKind::Monotonic, 1 << 20);
    define_functions(w);
    w.event(primer());
    w.close_without_sealing();
  }
  std::vector<unsigned char> b = read_file(path);
  size_t off = sizeof(format::FileHeader);
  while (off + sizeof(format::ChunkHeader) <= b.size()) {
    format::ChunkHeader h;
    std::memcpy(&h, &b[off], sizeof h);
    if (h.type == uint16_t(format::ChunkType::Events)) {
      size_t at = off + sizeof h;
      for (uint32_t w0; std::memcpy(&w0, &b[at], 4), w0 != 0;) at += format::record_words(w0) * 4;
      ASSERT_LE(at + words.size() * 4, off + sizeof h + h.capacity);
      std::memcpy(&b[at], words.data(), words.size() * 4);
      write_file(path, b);
      return;
    }
    off += sizeof h + h.capacity;
  }
  FAIL() << "no events chunk in " << path;
}

void write_general(const std::string& path, const std::vector<Event>& events) {
  TraceWriter w(path, 0, 1, 1, format::TimerKind::Monotonic, 1 << 20);
  define_functions(w);
  w.event(primer());
  for (const Event& e : events) w.event(e);
  w.close();
  ASSERT_TRUE(w.ok());
}

std::vector<Event> read_events(const std::string& path) {
  std::string err;
  auto t = RankTrace::open(path, &err);
  EXPECT_TRUE(t) << err;
  if (!t) return {};
  EXPECT_EQ(t->stats().bad_records, 0u);
  std::vector<Event> out;
  auto cur = t->stream(0);
  for (Event g; cur.next(g);) out.push_back(g);
  return out;
}

void expect_same_events(const std::vector<Event>& got, const std::vector<Event>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i));
    EXPECT_EQ(event_difference(got[i], want[i]), "");
  }
}

// The events read back from `words` written as one rank's raw records, and
// from `events` written by TraceWriter (the general encoders), each file in
// a directory of its own under `dir`.
struct ReadBack {
  std::vector<Event> fixed, general;
};
ReadBack read_fixed_and_general(const std::string& dir, const std::vector<uint32_t>& words,
                                const std::vector<Event>& events) {
  std::filesystem::create_directories(dir + "/fixed");
  std::filesystem::create_directories(dir + "/general");
  write_with_raw_records(dir + "/fixed/rank-00000.prof", words);
  write_general(dir + "/general/rank-00000.prof", events);
  return {read_events(dir + "/fixed/rank-00000.prof"), read_events(dir + "/general/rank-00000.prof")};
}

// One call's record in its fixed form, appended to `words` (what the shim's
// record_fixed stores), when its values fit; returns whether they did.
template <FuncKind K>
bool append_fixed(std::vector<uint32_t>& words, format::ChunkContext& cx, const Event& e,
                  uint64_t previous_enter) {
  const format::RecordValues v{.peer = e.peer, .tag = e.tag, .comm = e.comm, .bytes = e.bytes};
  const uint64_t dt = e.enter - previous_enter, duration = e.leave - e.enter;
  if (format::fixed_misfit<K>(dt, duration, v) != 0) return false;
  const size_t at = words.size();
  words.resize(at + format::fixed_record_words<K>);
  format::encode_fixed<K>(&words[at], e.func, e.flags, dt, duration, v, cx);
  return true;
}

}  // namespace

// Every value at and below each fixed field's limit, for the three kinds the
// fixed layout serves, read back as TraceWriter's records of the same calls
// read back; plain calls (8-byte fixed form) between them.
TEST(FormatFixed, FixedRecordsReadBackAsTheGeneralEncodersDo) {
  const std::string dir = temp_dir();
  const int32_t peers[] = {3, -2, -1, 32767, -32768};
  const int32_t tags[] = {11, -1, 32767, -32768};
  const uint64_t byte_counts[] = {0, 900, 65536, UINT32_MAX};
  const uint64_t times[] = {0, 7, 65535, 65536, UINT32_MAX};
  const uint8_t call_flags[] = {0, format::kCallFailed, format::kAnySource | format::kAnyTag};
  std::vector<uint32_t> words;
  std::vector<Event> events;
  format::ChunkContext cx;
  uint64_t enter = primer().enter;
  size_t step = 0;
  for (int32_t peer : peers)
    for (int32_t tag : tags)
      for (uint64_t bytes : byte_counts) {
        ++step;
        Event e;
        e.kind = step % 3 == 0 ? FuncKind::Send : step % 3 == 1 ? FuncKind::Recv : FuncKind::Probe;
        e.func = e.kind == FuncKind::Send ? kSendId : e.kind == FuncKind::Recv ? kRecvId : kProbeId;
        e.flags = call_flags[step % 3];
        e.enter = enter + times[step % 5];
        e.leave = e.enter + times[(step / 5) % 5];
        e.peer = peer;
        e.tag = tag;
        e.comm = step % 4 < 2 ? kCommA : kCommB;  // repeats, then changes
        e.bytes = bytes;
        ASSERT_TRUE(append_fixed<FuncKind::Send>(words, cx, e, enter)) << "step " << step;
        enter = e.enter;
        events.push_back(e);
        // A plain call between them, in its fixed form when its times fit 16 bits.
        Event r;
        r.kind = FuncKind::Other;
        r.func = kRankId;
        r.flags = step % 7 == 0 ? format::kCallFailed : 0;
        r.enter = enter + (step % 2 ? 3 : 65535);
        r.leave = r.enter + step % 11;
        const size_t at = words.size();
        words.resize(at + 2);
        format::encode_fixed_plain(&words[at], r.func, r.flags, r.enter - enter, r.leave - r.enter);
        enter = r.enter;
        events.push_back(r);
      }
  const ReadBack got = read_fixed_and_general(dir, words, events);
  ASSERT_EQ(got.general.size(), events.size() + 1);
  expect_same_events(got.fixed, got.general);
  std::filesystem::remove_all(dir);
}

// A value one past a fixed field's limit does not fit: the shim then writes
// the general form, so nothing is truncated.
TEST(FormatFixed, ValuesPastAFixedFieldDoNotFit) {
  using format::fixed_misfit;
  const format::RecordValues fits{.peer = -32768, .tag = 32767, .comm = kCommA, .bytes = UINT32_MAX};
  EXPECT_EQ(fixed_misfit<FuncKind::Send>(UINT32_MAX, UINT32_MAX, fits), 0u);
  EXPECT_NE(fixed_misfit<FuncKind::Send>(uint64_t{UINT32_MAX} + 1, 0, fits), 0u);
  EXPECT_NE(fixed_misfit<FuncKind::Send>(0, uint64_t{UINT32_MAX} + 1, fits), 0u);
  EXPECT_NE(fixed_misfit<FuncKind::Send>(uint64_t(-5), 0, fits), 0u);  // time went back
  for (auto [peer, tag] : {std::pair{32768, 0}, {-32769, 0}, {0, 32768}, {0, -32769}}) {
    format::RecordValues v = fits;
    v.peer = peer;
    v.tag = tag;
    EXPECT_NE(fixed_misfit<FuncKind::Recv>(1, 1, v), 0u) << peer << " " << tag;
  }
  format::RecordValues wide = fits;
  wide.bytes = uint64_t{UINT32_MAX} + 1;
  EXPECT_NE(fixed_misfit<FuncKind::Probe>(1, 1, wide), 0u);
}

// A fixed record's communicator, written in full, is what a later record's
// kSameComm refers to: an Isend on communicator B, a fixed Send on A, then an
// Isend on A left out by the narrow encoder (the context says A), and an
// Isend on B written in full again.
TEST(FormatFixed, FixedRecordSetsTheChunksCommunicator) {
  const std::string dir = temp_dir();
  std::vector<uint32_t> words;
  std::vector<Event> events;
  format::ChunkContext cx;
  uint64_t enter = primer().enter;
  const uint32_t comms[] = {kCommB, kCommA, kCommA, kCommB};
  for (int i = 0; i < 4; ++i) {
    Event e;
    e.kind = i == 1 ? FuncKind::Send : FuncKind::Isend;
    e.func = i == 1 ? kSendId : kIsendId;
    e.enter = enter + 10;
    e.leave = e.enter + 5;
    e.peer = 1;
    e.tag = 7;
    e.comm = comms[i];
    e.bytes = 8;
    if (e.kind == FuncKind::Isend) e.request = 0xAC000010u + uint32_t(i);
    if (i == 1) {
      ASSERT_TRUE(append_fixed<FuncKind::Send>(words, cx, e, enter));
    } else {
      const format::RecordValues v{
          .peer = e.peer, .tag = e.tag, .comm = e.comm, .bytes = e.bytes, .request = e.request};
      const size_t at = words.size();
      words.resize(at + format::kMaxRecordWords);
      size_t n = 0;
      ASSERT_TRUE(format::encode_narrow<FuncKind::Isend>(&words[at], e.func, 0, e.enter - enter,
                                                          e.leave - e.enter, v, cx, n));
      words.resize(at + n);
      if (i == 2) {
        EXPECT_TRUE((words[at] >> 16) & format::kSameComm);  // A repeats the fixed record's
      }
    }
    enter = e.enter;
    events.push_back(e);
  }
  const ReadBack got = read_fixed_and_general(dir, words, events);
  expect_same_events(got.fixed, got.general);
  std::filesystem::remove_all(dir);
}
