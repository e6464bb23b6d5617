// Home chunks (format 5): a thread's newest chunk lies in its home, before
// the copies of its older chunks in the file, and a process killed while it
// copied its home out leaves a chunk twice or a partial copy, which the Live
// slot's home_copy word tells apart. Each case lays a TraceWriter trace out
// as the shim leaves it and asserts the reader gives every event once, in
// order.
#include <gtest/gtest.h>

#include <cstring>

#include "format_test_util.h"
#include "prof/definition_lines.h"
#include "prof/trace_format.h"
#include "prof/trace_reader.h"

namespace {

using namespace prof;
using namespace prof::trace;
using format::ChunkHeader;
using format::FuncKind;

struct RawChunk {
  ChunkHeader h;
  std::vector<unsigned char> bytes;  // header and payload
};

// The chunks of a file in file order, with their bytes.
std::vector<RawChunk> raw_chunks(const std::vector<unsigned char>& file) {
  std::vector<RawChunk> out;
  for (const FileChunk& c : file_chunks(file))
    out.push_back({c.h, std::vector<unsigned char>(file.begin() + long(c.off),
                                                   file.begin() + long(c.off + sizeof c.h + c.h.capacity))});
  return out;
}

void set_header(RawChunk& c, const ChunkHeader& h) {
  c.h = h;
  std::memcpy(c.bytes.data(), &h, sizeof h);
}

// `n` MPI_Send calls on one stream, in chunks of `chunk_bytes`, with a Live
// chunk of one empty slot (the shim's 64-byte stride).
struct Written {
  std::string path;
  std::vector<Event> events;
};
Written write_sends(const std::string& dir, int n, uint32_t chunk_bytes) {
  Written w;
  w.path = dir + "/rank-00000.prof";
  TraceWriter tw(w.path, 0, 1, 5, format::TimerKind::Monotonic, chunk_bytes);
  tw.function(1, FuncKind::Send, "MPI_Send");
  tw.live(1, std::vector<format::LiveSlot>(1));
  uint64_t t = 1000;
  for (int i = 0; i < n; ++i) {
    Event e;
    e.kind = FuncKind::Send;
    e.func = 1;
    t += 5 + uint64_t(i % 7);
    e.enter = t;
    e.leave = t + 2;
    e.peer = i % 3;
    e.tag = i;
    e.comm = format::kMpichCommWorld;
    e.bytes = uint64_t(i) * 8;
    tw.event(e);
    w.events.push_back(e);
  }
  tw.end("finalize");
  tw.close();
  return w;
}

// The shim's layout of a written trace: the header and the chunks that are
// not events, the stream's last chunk as its home, then the older chunks (the
// home's earlier copies), then `appended` (copies being made when the process
// ended). home_copy: slot 0's word, `copy_state` | the offset of the first
// appended chunk (0: the word stays 0).
struct Layout {
  std::vector<RawChunk> defs_and_live, events;  // events: in time order
};
Layout layout_of(const std::string& path) {
  Layout l;
  for (auto& c : raw_chunks(read_file(path)))
    (c.h.type == uint16_t(format::ChunkType::Events) ? l.events : l.defs_and_live)
        .push_back(std::move(c));
  return l;
}

void write_home_layout(const std::string& path, const std::vector<unsigned char>& file_header,
                       Layout l, const RawChunk& home, const std::vector<RawChunk>& appended,
                       uint64_t copy_state) {
  std::vector<unsigned char> out(file_header.begin(),
                                 file_header.begin() + long(sizeof(format::FileHeader)));
  size_t live_at = 0;
  for (const auto& c : l.defs_and_live) {
    if (c.h.type == uint16_t(format::ChunkType::Live)) live_at = out.size();
    out.insert(out.end(), c.bytes.begin(), c.bytes.end());
  }
  out.insert(out.end(), home.bytes.begin(), home.bytes.end());
  for (size_t i = 0; i + 1 < l.events.size(); ++i)
    out.insert(out.end(), l.events[i].bytes.begin(), l.events[i].bytes.end());
  const uint64_t first_appended = out.size();
  for (const auto& c : appended) out.insert(out.end(), c.bytes.begin(), c.bytes.end());
  ASSERT_NE(live_at, 0u);
  if (copy_state) {
    const uint64_t word = first_appended | copy_state;
    std::memcpy(&out[live_at + sizeof(ChunkHeader) + sizeof(format::LiveHeader) +
                     format::kHomeCopyOffset],
                &word, sizeof word);
  }
  write_file(path, out);
}

// The home as the shim keeps it: the stream's newest chunk, flagged.
RawChunk home_of(const Layout& l) {
  RawChunk home = l.events.back();
  ChunkHeader h = home.h;
  h.flags |= format::kChunkHome;
  set_header(home, h);
  return home;
}

// The copy the shim writes of a home chunk: sealed, not a home.
RawChunk copy_of(const RawChunk& home) {
  RawChunk copy = home;
  ChunkHeader h = home.h;
  h.flags = format::kChunkSealed;
  set_header(copy, h);
  return copy;
}

// Every event of the file, in order, equals `want` (enter, tag, bytes).
void expect_events(const std::string& path, const std::vector<Event>& want) {
  std::string err;
  auto t = RankTrace::open(path, &err);
  ASSERT_TRUE(t) << err;
  auto c = t->events();
  Event e;
  size_t n = 0;
  while (c.next(e)) {
    if (n < want.size()) {
      EXPECT_EQ(e.enter, want[n].enter) << "event " << n;
      EXPECT_EQ(e.tag, want[n].tag) << "event " << n;
      EXPECT_EQ(e.bytes, want[n].bytes) << "event " << n;
    }
    ++n;
  }
  EXPECT_EQ(n, want.size());
  EXPECT_EQ(t->stats().backwards_timestamps, 0u);
  EXPECT_EQ(t->stats().crc_mismatches, 0u);
  EXPECT_EQ(t->stats().bad_records, 0u);
}

class FormatHome : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir();
    w_ = write_sends(dir_, 400, 1024);
    file_ = read_file(w_.path);
    layout_ = layout_of(w_.path);
    ASSERT_GE(layout_.events.size(), 4u);  // several chunks: a home and its earlier copies
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
  Written w_;
  std::vector<unsigned char> file_;
  Layout layout_;
};

TEST_F(FormatHome, NewestChunkFirstInTheFileIsReadLast) {
  write_home_layout(w_.path, file_, layout_, home_of(layout_), {}, 0);
  expect_events(w_.path, w_.events);
  // The flag is what orders it: the same file without it reads the newest
  // chunk first.
  write_home_layout(w_.path, file_, layout_, layout_.events.back(), {}, 0);
  std::string err;
  auto t = RankTrace::open(w_.path, &err);
  ASSERT_TRUE(t) << err;
  auto c = t->events();
  Event first;
  ASSERT_TRUE(c.next(first));
  EXPECT_NE(first.enter, w_.events.front().enter);
}

TEST_F(FormatHome, UnsealedHomeOfAKilledProcessIsSalvaged) {
  RawChunk home = home_of(layout_);
  ChunkHeader h = home.h;
  h.flags = format::kChunkHome;  // never sealed
  set_header(home, h);
  write_home_layout(w_.path, file_, layout_, home, {}, 0);
  expect_events(w_.path, w_.events);
}

// Killed inside the copy's write: the copy is partial (its CRC fails) and the
// home has every record.
TEST_F(FormatHome, PartialCopyOfAKilledProcessIsDropped) {
  const RawChunk home = home_of(layout_);
  RawChunk copy = copy_of(home);
  std::fill(copy.bytes.begin() + long(sizeof(ChunkHeader) + copy.h.used / 2), copy.bytes.end(), 0);
  write_home_layout(w_.path, file_, layout_, home, {copy}, format::kHomeCopying);
  expect_events(w_.path, w_.events);
}

// Killed after the copy was written, before the slot said so: both are whole.
TEST_F(FormatHome, WholeCopyStillMarkedCopyingIsDropped) {
  const RawChunk home = home_of(layout_);
  write_home_layout(w_.path, file_, layout_, home, {copy_of(home)}, format::kHomeCopying);
  expect_events(w_.path, w_.events);
}

// Killed after the slot said the copy is whole, before the home was emptied
// (or while it was: the home then reads as fewer records, or none): the home
// is dropped for its copy.
TEST_F(FormatHome, HomeBeingEmptiedIsDroppedForItsCopy) {
  RawChunk home = home_of(layout_);
  const RawChunk copy = copy_of(home);
  ChunkHeader h = home.h;
  h.flags = format::kChunkHome;  // unsealed, its records all there
  set_header(home, h);
  write_home_layout(w_.path, file_, layout_, home, {copy}, format::kHomeCopied);
  expect_events(w_.path, w_.events);
}

}  // namespace
