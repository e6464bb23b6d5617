// The record schema (record_schema.h) against the writer and the reader: every
// kind the table declares, with every flag combination its fields allow (wide
// peer/tag, wide bytes, kSameComm, kPackedRequest), is written by TraceWriter,
// checked word by word against the size the table gives, and read back with
// every field the table lists intact and every other field at its default.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "format_test_util.h"
#include "prof/event_difference.h"
#include "prof/trace_reader.h"

namespace {

using namespace prof;
using namespace prof::trace;
using format::Field;
using format::FuncKind;
using format::KindSchema;

struct Combo {
  bool wide_peer_tag = false, wide_bytes = false, same_comm = false, packed_request = false;
  std::string text() const {
    return std::string(wide_peer_tag ? " wide_peer_tag" : "") + (wide_bytes ? " wide_bytes" : "") +
           (same_comm ? " same_comm" : "") + (packed_request ? " packed_request" : "");
  }
};

// The combinations a kind's fields allow.
std::vector<Combo> combos(const KindSchema& s) {
  const bool pt = s.has(Field::PeerTag) || s.has(Field::RecvPeerTag) || s.has(Field::Completions);
  const bool by = s.has(Field::Bytes) || s.has(Field::RecvBytes) || s.has(Field::Completions);
  const bool sc = s.context_flags & format::kSameComm;
  const bool pr = s.context_flags & format::kPackedRequest;
  std::vector<Combo> out;
  for (unsigned m = 0; m < 16; ++m) {
    const Combo c{bool(m & 1), bool(m & 2), bool(m & 4), bool(m & 8)};
    if ((c.wide_peer_tag && !pt) || (c.wide_bytes && !by) || (c.same_comm && !sc) ||
        (c.packed_request && (!pr || c.wide_bytes)))
      continue;
    out.push_back(c);
  }
  return out;
}

constexpr uint32_t kFirstComm = 0x84000002u, kOtherComm = 0x84000005u;
constexpr uint32_t kFirstRequest = 0xAC010001u;

// The event of kind `s` whose encoding takes combination `c`, written after
// the primer (same kind, kFirstComm, kFirstRequest). Every field gets a value
// distinct from the reader's defaults.
Event probe_event(const KindSchema& s, const Combo& c, std::deque<std::vector<Completion>>& comps,
                  std::deque<std::vector<uint32_t>>& reqs) {
  Event e;
  e.kind = s.kind;
  e.func = s.kind == FuncKind::Marker ? format::kMarkerFuncId : uint16_t(uint16_t(s.kind) + 1);
  e.enter = 2000;
  e.leave = 2007;
  const int32_t peer = c.wide_peer_tag ? 70000 : 3, tag = c.wide_peer_tag ? -40000 : 11;
  const uint64_t bytes = c.wide_bytes ? (uint64_t{5} << 32) + 9 : c.packed_request ? 900 : 70000;
  for (size_t i = 0; i < s.field_count; ++i) switch (s.fields[i]) {
      case Field::PeerTag: e.peer = peer; e.tag = tag; break;
      case Field::RecvPeerTag: e.recv_peer = peer + 1; e.recv_tag = tag - 1; break;
      case Field::Comm: e.comm = c.same_comm ? kFirstComm : kOtherComm; break;
      case Field::Bytes: e.bytes = bytes; break;
      case Field::RecvBytes: e.recv_bytes = bytes + 2; break;
      // Packed: the same high half as the primer's request; else another one.
      case Field::Request: e.request = c.packed_request ? 0xAC01BEEFu : 0xAC02BEEFu; break;
      case Field::Root: e.root = 2; break;
      case Field::NewComm: e.new_comm = 0x84000009u; break;
      case Field::IntervalId: e.interval_id = 77; e.marker_begin = true; break;
      case Field::CallSite: e.callsite = 5; break;
      case Field::Completions:
        comps.push_back({{0xAC000010u, peer, tag, c.wide_bytes ? bytes : 123, false},
                         {0xAC000011u, format::kAnySourceRank, format::kAnyTagValue, 0, false},
                         {0xAC000012u, 1, 2, 8, true}});
        e.completions = comps.back();
        break;
      case Field::Requests:
        reqs.push_back({0xAC000020u, 0xAC000021u});
        e.requests = reqs.back();
        break;
    }
  return e;
}

// The payload words the table gives the probe's record.
unsigned expected_words(const KindSchema& s, const Combo& c, const Event& e) {
  if (s.has(Field::Requests)) return unsigned(e.requests.size());
  if (s.has(Field::Completions)) {
    unsigned n = 1;  // the bitmap
    for (const Completion& k : e.completions) {
      const bool status = !(k.source == format::kAnySourceRank && k.tag == format::kAnyTagValue &&
                            k.bytes == 0 && !k.cancelled);
      n += 1 + (status ? (c.wide_peer_tag ? 2 : 1) + (c.wide_bytes ? 2 : 1) : 0);
    }
    return n;
  }
  return format::fixed_payload_words(s, c.wide_peer_tag, c.wide_bytes, c.same_comm,
                                     c.packed_request);
}

// The last record's first word in the file's only events chunk.
uint32_t last_record_word(const std::string& path) {
  const std::vector<unsigned char> file = read_file(path);
  size_t off = sizeof(format::FileHeader);
  while (off + sizeof(format::ChunkHeader) <= file.size()) {
    format::ChunkHeader h;
    std::memcpy(&h, file.data() + off, sizeof h);
    const unsigned char* p = file.data() + off + sizeof h;
    if (h.type == uint16_t(format::ChunkType::Events)) {
      uint32_t last = 0;
      for (uint32_t at = 0; at + 4 <= h.used;) {
        uint32_t w0;
        std::memcpy(&w0, p + at, 4);
        last = w0;
        at += format::record_words(w0) * 4;
      }
      return last;
    }
    off += sizeof h + h.capacity;
  }
  return 0;
}

TEST(FormatSchema, EveryKindAndFlagCombinationRoundTrips) {
  const std::string dir = temp_dir();
  size_t cases = 0;
  for (const KindSchema& s : format::kKindSchemas) {
    for (const Combo& c : combos(s)) {
      SCOPED_TRACE(std::string(s.name) + c.text());
      std::deque<std::vector<Completion>> comps;
      std::deque<std::vector<uint32_t>> reqs;
      const Event probe = probe_event(s, c, comps, reqs);
      Event primer = probe;  // sets the chunk's communicator and request context
      primer.enter = 1000;
      primer.leave = 1001;
      primer.comm = s.has(Field::Comm) ? kFirstComm : primer.comm;
      primer.request = s.has(Field::Request) ? kFirstRequest : primer.request;
      primer.marker_begin = false;
      // Another function of the kind: the probe's payload, which may equal
      // the primer's, is then written in full (no repeat, format 6).
      if (s.kind != FuncKind::Marker) primer.func = uint16_t(probe.func + 100);
      const std::string path = dir + "/rank-00000.prof";
      {
        TraceWriter w(path, 0, 1, 1, format::TimerKind::Monotonic);
        for (const KindSchema& d : format::kKindSchemas)
          if (d.kind != FuncKind::Marker) {
            w.function(uint16_t(uint16_t(d.kind) + 1), d.kind, d.name);
            w.function(uint16_t(uint16_t(d.kind) + 101), d.kind, std::string(d.name) + "_primer");
          }
        w.event(primer);
        w.event(probe);
        w.close();
        ASSERT_TRUE(w.ok());
      }
      // The writer encoded exactly what the table says for this combination.
      const uint32_t w0 = last_record_word(path);
      const uint8_t flags = uint8_t(w0 >> 16);
      EXPECT_EQ(c.wide_peer_tag, (flags & format::kWidePeerTag) != 0);
      EXPECT_EQ(c.wide_bytes, (flags & format::kWideBytes) != 0);
      if (s.context_flags & format::kSameComm) {
        EXPECT_EQ(c.same_comm, (flags & format::kSameComm) != 0);
      }
      if (s.context_flags & format::kPackedRequest) {
        EXPECT_EQ(c.packed_request, (flags & format::kPackedRequest) != 0);
      }
      EXPECT_EQ(format::record_payload_words(w0), expected_words(s, c, probe));

      // The reader gives back every field of both records.
      std::string err;
      auto t = RankTrace::open(path, &err);
      ASSERT_TRUE(t) << err;
      auto cur = t->stream(0);
      Event g;
      for (const Event* want : {static_cast<const Event*>(&primer), &probe}) {
        ASSERT_TRUE(cur.next(g));
        // Context flags are encoding only: the reader never reports them.
        EXPECT_EQ(g.flags & s.context_flags, 0);
        Event expected = *want;
        expected.flags = g.flags;  // (the flags: above)
        EXPECT_EQ(event_difference(expected, g), "");
      }
      EXPECT_FALSE(cur.next(g));
      EXPECT_EQ(t->stats().bad_records, 0u);
      ++cases;
    }
  }
  // At least one case per kind of the table.
  EXPECT_GE(cases, format::kKindCount);
  std::filesystem::remove_all(dir);
}

// A record one word shorter than the table's size for its flags is a bad
// record, never decoded from the next record's words.
TEST(FormatSchema, RecordShorterThanTheTableSaysIsBad) {
  const std::string dir = temp_dir();
  for (const KindSchema& s : format::kKindSchemas) {
    if (s.variable() || s.field_count == 0) continue;
    SCOPED_TRACE(s.name);
    const std::string path = dir + "/rank-00000.prof";
    {
      // Written as a kind with one word less; read as `s`.
      TraceWriter w(path, 0, 1, 1, format::TimerKind::Monotonic);
      w.function(1, s.kind, s.name);
      Event e;
      e.kind = FuncKind::RequestOp;  // payload: one word per request
      e.func = 1;
      e.enter = 100;
      e.leave = 101;
      std::vector<uint32_t> words(format::fixed_payload_words(s, false, false, false, false) - 1,
                                  7u);
      e.requests = words;
      w.event(e);
      w.close();
    }
    std::string err;
    auto t = RankTrace::open(path, &err);
    ASSERT_TRUE(t) << err;
    auto cur = t->stream(0);
    Event g;
    EXPECT_FALSE(cur.next(g));
    EXPECT_EQ(t->stats().bad_records, 1u);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace

// The shim's one-pass encoder (format::encode_narrow) against the general
// one (RecordEncoder with wide_flags_for and encode_fields): for every kind
// it serves and values on both sides of each size limit, a sequence of
// records (so the chunk context carries from one to the next) is either
// encoded identically, word for word and with the same context after it, or
// left to the general encoder with nothing stored.
template <FuncKind K>
void check_narrow_encoder(size_t& short_form, size_t& normal_form, size_t& declined) {
  SCOPED_TRACE(format::schema_of(K).name);
  const int32_t peers[] = {3, -2, 32767, -32768, 32768, 70000};
  const int32_t tags[] = {11, -1, 32767, -32769};
  const uint64_t byte_counts[] = {0, 900, 65535, 65536, UINT32_MAX, uint64_t{UINT32_MAX} + 1};
  const uint32_t comms[] = {kFirstComm, kFirstComm, kOtherComm};
  const uint32_t requests[] = {0xAC01BEEFu, 0xAC01BEF0u, 0xAC02BEEFu};
  const uint64_t times[] = {0, 65535, 65536, UINT32_MAX, uint64_t{UINT32_MAX} + 1};
  format::ChunkContext general_cx, narrow_cx;
  uint64_t step = 0;
  for (int32_t peer : peers)
    for (int32_t tag : tags)
      for (uint64_t bytes : byte_counts)
        for (uint64_t dt : times) {
          ++step;
          format::RecordValues v{.peer = peer,
                                 .tag = tag,
                                 .comm = comms[step % 3],
                                 .bytes = bytes,
                                 .request = requests[step % 3],
                                 .root = int32_t(step % 5) - 1};
          const uint64_t duration = times[step % 5];
          const uint8_t call_flags = step % 7 == 0 ? format::kCallFailed : format::kAnySource;
          uint32_t general[format::kMaxRecordWords] = {};
          uint32_t narrow[format::kMaxRecordWords] = {};
          const format::ChunkContext before = narrow_cx;
          size_t words = 0;
          const bool took = format::encode_narrow<K>(narrow, 99, call_flags, dt, duration, v,
                                                     narrow_cx, words);
          format::RecordEncoder enc(general);
          enc.flag(call_flags | format::wide_flags_for<K>(v));
          enc.time(dt, duration);
          format::encode_fields<K>(enc, v, general_cx);
          const size_t general_words = enc.commit(99);
          const bool narrow_case = dt <= UINT32_MAX && duration <= UINT32_MAX &&
                                   enc.flags() == (enc.flags() & ~(format::kWidePeerTag |
                                                                   format::kWideBytes | format::kLongTime));
          ASSERT_EQ(took, narrow_case) << "step " << step;
          if (!took) {
            // Declined: nothing stored, the context as it was; the general
            // encoder's record stands for both.
            for (uint32_t w : narrow) ASSERT_EQ(w, 0u) << "step " << step;
            ASSERT_EQ(narrow_cx.comm, before.comm);
            ASSERT_EQ(narrow_cx.request_high, before.request_high);
            narrow_cx = general_cx;
            ++declined;
            continue;
          }
          ASSERT_EQ(words, general_words) << "step " << step;
          for (size_t i = 0; i < format::kMaxRecordWords; ++i)
            ASSERT_EQ(narrow[i], general[i]) << "step " << step << " word " << i;
          ASSERT_EQ(narrow_cx.comm, general_cx.comm);
          ASSERT_EQ(narrow_cx.request_high, general_cx.request_high);
          ++(format::record_short_time(narrow[0]) ? short_form : normal_form);
        }
}

// With repeats (format 6), one chunk's records in a row: the narrow
// encoder leaves out the payloads the general one does
// (RecordEncoder::commit_repeating), word for word, and some are left out,
// some repeating a function's latest full record, some an older one. The
// records carry call sites (format 7): the narrow encoder reads the func
// field from memory (as the shim's call-site cache holds it) and keys its
// repeats by the function alone.
template <FuncKind K>
void check_narrow_repeats(size_t& repeats, size_t& older) {
  SCOPED_TRACE(format::schema_of(K).name);
  const uint32_t comms[] = {kFirstComm, kOtherComm};
  const uint32_t requests[] = {0xAC01BEEFu, 0xAC02BEF0u};
  const uint64_t times[] = {3, 70000, uint64_t{UINT32_MAX} + 1};
  std::vector<uint32_t> general(64 * 1024), narrow(64 * 1024);
  auto general_table = std::make_unique<format::RepeatTable>();
  auto narrow_table = std::make_unique<format::RepeatTable>();
  general_table->reset();
  narrow_table->reset();
  format::ChunkContext general_cx, narrow_cx;
  size_t g = 0, n = 0;
  for (uint64_t step = 0; step < 600; ++step) {
    const uint16_t func = step % 5 == 0 ? 98 : 99;  // two functions of the kind
    const uint32_t field = func | uint32_t((step / 3) % 4) << format::kSiteShift;
    format::RecordValues v{.peer = int32_t(step % 7 < 5 ? 3 : 4),
                           .tag = step % 11 == 0 ? 70000 : 9,
                           .comm = comms[step % 13 == 0],
                           .bytes = step % 17 == 0 ? uint64_t{1} << 33 : 800,
                           .request = requests[step % 19 == 0],
                           .root = 0};
    const uint64_t dt = times[step % 23 == 0 ? 2 : step % 3 == 0];
    const uint8_t call_flags = step % 29 == 0 ? format::kCallFailed : 0;
    format::RecordEncoder enc(&general[g]);
    enc.flag(call_flags | format::wide_flags_for<K>(v));
    enc.time(dt, 5);
    format::encode_fields<K>(enc, v, general_cx);
    const size_t general_words = enc.commit_repeating(static_cast<uint16_t>(field), *general_table);
    size_t words = 0;
    if (format::encode_narrow<K>(&narrow[n], func, call_flags, dt, 5, v, narrow_cx, words,
                                 narrow_table.get(), &field)) {
      ASSERT_EQ(words, general_words) << "step " << step;
    } else {  // the general encoder's record stands for both, as in the shim
      words = general_words;
      std::copy_n(&general[g], words, &narrow[n]);
      narrow_cx = general_cx;
      // Its payload, when whole, becomes the function's last in both tables.
      if (!format::record_repeats(general[g])) {
        const format::RepeatRef& r = general_table->last[func][0];
        narrow_table->note(func, &narrow[n] + (r.payload - &general[g]), r.words, r.flags);
      }
    }
    for (size_t i = 0; i < words; ++i)
      ASSERT_EQ(narrow[n + i], general[g + i]) << "step " << step << " word " << i;
    if (format::record_repeats(general[g])) {
      ++repeats;
      older += format::repeat_index(general[g] >> 16) > 0;
    }
    g += general_words;
    n += words;
  }
}

TEST(FormatSchema, NarrowEncoderRepeatsAsTheGeneralOneDoes) {
  size_t repeats = 0, older = 0;  // older: of a full record before the latest
  check_narrow_repeats<FuncKind::Isend>(repeats, older);
  check_narrow_repeats<FuncKind::Irecv>(repeats, older);
  check_narrow_repeats<FuncKind::Collective>(repeats, older);
  check_narrow_repeats<FuncKind::ICollective>(repeats, older);
  EXPECT_GT(repeats, 500u);
  EXPECT_GT(older, 100u);
}

TEST(FormatSchema, NarrowEncoderWritesWhatTheGeneralOneDoes) {
  size_t short_form = 0, normal_form = 0, declined = 0;
  check_narrow_encoder<FuncKind::Send>(short_form, normal_form, declined);
  check_narrow_encoder<FuncKind::Recv>(short_form, normal_form, declined);
  check_narrow_encoder<FuncKind::Probe>(short_form, normal_form, declined);
  check_narrow_encoder<FuncKind::Isend>(short_form, normal_form, declined);
  check_narrow_encoder<FuncKind::Irecv>(short_form, normal_form, declined);
  check_narrow_encoder<FuncKind::Collective>(short_form, normal_form, declined);
  check_narrow_encoder<FuncKind::ICollective>(short_form, normal_form, declined);
  check_narrow_encoder<FuncKind::AllToAll>(short_form, normal_form, declined);
  check_narrow_encoder<FuncKind::IAllToAll>(short_form, normal_form, declined);
  // Every outcome was exercised: both header forms, and declined.
  EXPECT_GT(short_form, 100u);
  EXPECT_GT(normal_form, 100u);
  EXPECT_GT(declined, 500u);
}
