// MirroredRing (analyzer/src/mirrored_ring.h): a queue whose live records are
// one array, used by the sets of instants for spans and contexts. Checked
// against std::deque through many wraps and growths, with records of a size
// that does not divide the buffer (they straddle its seam), in both the
// double-mapped and the heap form.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "mirrored_ring.h"

namespace prof::analysis::detail {
namespace {

// 17 bytes, as the sweep's spans: records straddle the seam between the views.
struct [[gnu::packed]] Record {
  double from;
  uint64_t id;
  uint8_t kind;
};
static_assert(sizeof(Record) == 17);

bool memfd_allowed() {
  const int probe = memfd_create("mirrored-ring-test", MFD_CLOEXEC);
  if (probe < 0) return false;
  close(probe);
  return true;
}

Record make(uint64_t id) { return Record{static_cast<double>(id % 1000), id, static_cast<uint8_t>(id % 7)}; }

void expect_same(const MirroredRing<Record>& ring, const std::deque<Record>& want) {
  ASSERT_EQ(ring.size(), want.size());
  const Record* p = ring.begin();
  for (size_t i = 0; i < want.size(); ++i, ++p) {
    ASSERT_EQ(p->id, want[i].id) << "record " << i;
    ASSERT_EQ(double{p->from}, double{want[i].from});
    ASSERT_EQ(p->kind, want[i].kind);
  }
  ASSERT_EQ(p, ring.end());
}

// Pushes and drops at random, the live count drifting up (growth, past the
// size from which the buffer is double-mapped) and down, through many laps of
// the buffer.
void run_against_deque(bool allow_mirror, uint32_t seed) {
  MirroredRing<Record> ring(allow_mirror);
  std::deque<Record> want;
  std::mt19937 rng(seed);
  uint64_t next_id = 0;
  constexpr int kRounds = 6000;
  // Live records at the peak: 1.5 times the first double-mapped view.
  constexpr size_t kPeak = MirroredRing<Record>::kMirrorFromBytes * 3 / 2 / sizeof(Record);
  constexpr size_t kStep = kPeak / (kRounds / 2);
  bool was_mirrored = false;
  for (int round = 0; round < kRounds; ++round) {
    const size_t up = static_cast<size_t>(round < kRounds / 2 ? round : kRounds - round);
    const size_t target = 50 + up * kStep;
    const size_t pushes = std::uniform_int_distribution<size_t>(0, 400)(rng);
    for (size_t i = 0; i < pushes; ++i) {
      ring.push_back(make(next_id));
      want.push_back(make(next_id));
      ++next_id;
    }
    if (want.size() > target) {
      const size_t drop = std::uniform_int_distribution<size_t>(0, want.size() - target)(rng);
      ring.drop_front(drop);
      want.erase(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(drop));
    }
    if (!want.empty() && rng() % 5 == 0) {
      ring.pop_back();
      want.pop_back();
    }
    if (!want.empty()) {  // written in place through back(), read back through the array
      ring.back().kind = static_cast<uint8_t>(round % 200);
      want.back().kind = static_cast<uint8_t>(round % 200);
    }
    ASSERT_NO_FATAL_FAILURE(expect_same(ring, want)) << "round " << round;
    was_mirrored = was_mirrored || ring.mirrored();
  }
  EXPECT_GT(next_id * sizeof(Record), 20 * ring.capacity() * sizeof(Record)) << "too few laps to test the wrap";
  EXPECT_EQ(was_mirrored, allow_mirror && memfd_allowed());
  ring.clear();
  EXPECT_TRUE(ring.empty());
}

TEST(MirroredRing, MirroredMatchesDeque) { run_against_deque(true, 1); }
TEST(MirroredRing, HeapFallbackMatchesDeque) { run_against_deque(false, 2); }

// The live records are one array wherever they lie: sorting them in place
// and binary searching work across the seam.
TEST(MirroredRing, LiveRecordsSortAcrossTheSeam) {
  for (bool allow_mirror : {true, false})
    for (bool past_mirror_size : {false, true}) {
      SCOPED_TRACE(std::string(allow_mirror ? "mirror allowed" : "heap only") +
                   (past_mirror_size ? ", past kMirrorFromBytes" : ", short"));
      MirroredRing<Record> ring(allow_mirror);
      // Until the first drop, every record sits at its id's position.
      uint64_t id = 0;
      const size_t mirror_from = MirroredRing<Record>::kMirrorFromBytes / sizeof(Record);
      do ring.push_back(make(id++));
      while (id < 150 || (past_mirror_size && ring.capacity() < mirror_from));
      ring.drop_front(ring.size() - 150);
      const size_t capacity = ring.capacity();
      if (past_mirror_size) {
        EXPECT_EQ(ring.mirrored(), allow_mirror && memfd_allowed());
      }
      // Walk the live window around until it straddles the seam (its first
      // record at capacity - 100). (150 records: a heap ring of more than
      // three quarters live grows instead of moving them; see below.)
      for (size_t first = id - 150; first < capacity - 100; ++first) {
        ring.drop_front(1);
        ring.push_back(make(id++));
      }
      ASSERT_EQ(ring.capacity(), capacity) << "the ring grew; the window did not wrap";
      std::vector<uint64_t> ids;
      for (const Record& r : ring) ids.push_back(r.id);
      std::reverse(ring.begin(), ring.end());
      std::sort(ring.begin(), ring.end(), [](const Record& a, const Record& b) { return a.id < b.id; });
      size_t i = 0;
      for (const Record& r : ring) ASSERT_EQ(r.id, ids[i++]);
      const uint64_t probe = ids[ids.size() / 2];
      const Record* hit = std::lower_bound(ring.begin(), ring.end(), probe,
                                           [](const Record& r, uint64_t v) { return r.id < v; });
      ASSERT_NE(hit, ring.end());
      EXPECT_EQ(hit->id, probe);
    }
}

// A short ring is a heap buffer (no memfd and mappings for a few records);
// from kMirrorFromBytes on the double mapping is made wherever the system
// allows a memfd (a silent fall back to the heap form would cost the
// compactions the ring exists to avoid), and there stepping back from the
// second view to the first moves nothing: the record at its old address (the
// second view) and at its new one (the first) are the same bytes. Either form
// keeps the records.
TEST(MirroredRing, MirroredWhereMemfdIsAllowedAndSteppingBackMovesNothing) {
  MirroredRing<Record> ring;
  ring.push_back(make(0));
  EXPECT_FALSE(ring.mirrored());
  uint64_t pushed = 1;
  while (ring.capacity() * sizeof(Record) < MirroredRing<Record>::kMirrorFromBytes) ring.push_back(make(pushed++));
  ASSERT_EQ(ring.mirrored(), memfd_allowed());
  for (uint64_t i = 0; i < pushed; ++i) ASSERT_EQ(ring[i].id, i);  // kept through the growths
  const size_t capacity = ring.capacity();
  for (uint64_t i = pushed; i < capacity; ++i) ring.push_back(make(i));
  ring.drop_front(capacity - 1);
  ring.push_back(make(capacity));      // across the seam or right at it
  ring.push_back(make(capacity + 1));  // wholly in the second view
  Record* in_second_view = &ring.back();
  ring.drop_front(2);  // begin enters the second view and steps back by a view
  ASSERT_EQ(ring.size(), 1u);
  EXPECT_EQ(ring.begin()->id, capacity + 1);
  if (!ring.mirrored()) return;  // the heap form copied the record down: checked above
  ASSERT_LT(reinterpret_cast<std::byte*>(ring.begin()), reinterpret_cast<std::byte*>(in_second_view));
  in_second_view->id = 424242;
  EXPECT_EQ(ring.begin()->id, 424242u);
}

// A sweep drops a phase of records and keeps the next one: a heap ring that
// holds L records at the most takes less than 2L records' bytes (one buffer
// of the next power of two), whatever the number of laps. (A buffer twice
// its capacity, its records moved only once they passed the middle, took 2L
// to 4L: with thousands of ranks' rings, most of an analysis's memory.)
TEST(MirroredRing, HeapRingTakesLessThanTwiceItsPeak) {
  MirroredRing<Record> ring(false);
  constexpr size_t kPhase = 150;  // records a phase; 2 phases live before each drop
  uint64_t next_id = 0;
  std::deque<Record> want;
  for (int phase = 0; phase < 200; ++phase) {
    for (size_t i = 0; i < kPhase; ++i, ++next_id) {
      ring.push_back(make(next_id));
      want.push_back(make(next_id));
    }
    if (ring.size() > kPhase) {
      const size_t drop = ring.size() - kPhase;
      ring.drop_front(drop);
      want.erase(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(drop));
    }
    ASSERT_NO_FATAL_FAILURE(expect_same(ring, want)) << "phase " << phase;
  }
  EXPECT_FALSE(ring.mirrored());
  EXPECT_LT(ring.reserved_bytes(), 2 * 2 * kPhase * sizeof(Record));
  EXPECT_GE(ring.reserved_bytes(), 2 * kPhase * sizeof(Record));
}

// A heap ring moves its records only when a push finds no room, and then only
// where a quarter of the buffer is free before them: each record pushed is
// moved less than 3/4 of a time on average (moving the kept phase at every
// drop moved each about once), and a drop leaves the records where they are.
TEST(MirroredRing, HeapRingMovesRecordsOnlyToMakeRoom) {
  MirroredRing<Record> ring(false);
  constexpr size_t kPhase = 150;
  uint64_t next_id = 0, moved = 0, pushed = 0;
  std::deque<Record> want;
  for (int phase = 0; phase < 200; ++phase) {
    for (size_t i = 0; i < kPhase; ++i, ++next_id) {
      const Record* before = ring.empty() ? nullptr : ring.begin();
      const size_t live = ring.size();
      ring.push_back(make(next_id));
      want.push_back(make(next_id));
      ++pushed;
      if (before && ring.begin() != before) moved += live;
    }
    if (ring.size() > kPhase) {
      const size_t drop = ring.size() - kPhase;
      const Record* kept = &ring[drop];
      ring.drop_front(drop);
      want.erase(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(drop));
      ASSERT_EQ(ring.begin(), kept) << "phase " << phase << ": the drop moved the kept records";
    }
    ASSERT_NO_FATAL_FAILURE(expect_same(ring, want)) << "phase " << phase;
  }
  EXPECT_LT(moved * 4, pushed * 3) << moved << " records moved for " << pushed << " pushed";
}

}  // namespace
}  // namespace prof::analysis::detail
