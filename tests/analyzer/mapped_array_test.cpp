// MappedArray (analyzer/src/mapped_array.h), under the timeline's per-row
// lists: elements survive the move from the heap to a mapping of its own,
// growth by mremap, the remove_if idiom, shrinking and moves.
#include "mapped_array.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace prof::test {
namespace {

using analysis::detail::MappedArray;

struct Entry {
  uint32_t first, second, third;
};

TEST(MappedArray, KeepsItsElementsAcrossHeapMappingGrowthEraseAndShrink) {
  constexpr uint32_t kCount = 300000;  // 3.6 MB: past the heap, then grown by mremap
  MappedArray<Entry> list;
  for (uint32_t i = 0; i < kCount; ++i) {
    list.push_back(Entry{i, ~i, i * 7});
    ASSERT_GE(list.capacity(), list.size());
  }
  ASSERT_EQ(list.size(), kCount);
  for (uint32_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(list[i].first, i);
    ASSERT_EQ(list[i].second, ~i);
    ASSERT_EQ(list[i].third, i * 7);
  }
  // The remove_if idiom keeps the even ones, in order.
  list.erase(std::remove_if(list.begin(), list.end(), [](const Entry& e) { return e.first % 2; }), list.end());
  ASSERT_EQ(list.size(), kCount / 2);
  list.shrink_to_fit();
  EXPECT_LT(list.capacity() * sizeof(Entry), kCount / 2 * sizeof(Entry) + 4096);
  for (uint32_t i = 0; i < kCount / 2; ++i) ASSERT_EQ(list[i].first, 2 * i);
  // Moved: the source is empty, the target has everything.
  MappedArray<Entry> moved(std::move(list));
  EXPECT_TRUE(list.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty
  ASSERT_EQ(moved.size(), kCount / 2);
  EXPECT_EQ(moved.back().first, kCount - 2);
  // Growing by resize adds zeroed elements; shrinking to nothing frees all.
  moved.resize(kCount);
  EXPECT_EQ(moved[kCount / 2 - 1].first, kCount - 2);
  EXPECT_EQ(moved[kCount - 1].first, 0u);
  EXPECT_EQ(moved[kCount - 1].third, 0u);
  moved.clear();
  moved.shrink_to_fit();
  EXPECT_EQ(moved.capacity(), 0u);
  moved.push_back(Entry{1, 2, 3});
  EXPECT_EQ(moved[0].third, 3u);
}

// Pages made present ahead of push_back stay within a step (2 MiB) of what
// the list holds, not the room its last doubling reserved; appending after
// erase, resize and shrink goes on where the list ends.
TEST(MappedArray, PresentPagesStayWithinAStepOfTheElements) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto resident_bytes = [&](const MappedArray<uint64_t>& list) {
    const size_t bytes = list.capacity() * sizeof(uint64_t);
    std::vector<unsigned char> present((bytes + page - 1) / page);
    EXPECT_EQ(mincore(const_cast<uint64_t*>(list.data()), bytes, present.data()), 0);
    size_t n = 0;
    for (unsigned char p : present) n += p & 1;
    return n * page;
  };
  constexpr size_t kStep = size_t{2} << 20;
  MappedArray<uint64_t> list;
  // Just past a doubling: 8.4 MB held in a 16 MiB mapping.
  constexpr uint64_t kCount = (size_t{8} << 20) / sizeof(uint64_t) + 50000;
  for (uint64_t i = 0; i < kCount; ++i) list.push_back(i);
  ASSERT_GE(list.capacity(), 2 * kCount - 100000);
  // (Twice the step: where transparent huge pages are on for every mapping,
  // the kernel may fault in up to 2 MiB around the step's end.)
  EXPECT_LE(resident_bytes(list), kCount * sizeof(uint64_t) + 2 * kStep);
  EXPECT_GE(resident_bytes(list), kCount * sizeof(uint64_t));
  list.erase(list.begin() + 1000, list.end());
  for (uint64_t i = 0; i < 10; ++i) list.push_back(kCount + i);
  list.resize(3 * kCount);  // past what was made present
  for (uint64_t i = 0; i < 10; ++i) list.push_back(5 * kCount + i);
  list.shrink_to_fit();
  for (uint64_t i = 0; i < 10; ++i) list.push_back(7 * kCount + i);
  ASSERT_EQ(list.size(), 3 * kCount + 20);
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_EQ(list[i], i);
  for (uint64_t i = 0; i < 10; ++i) {
    ASSERT_EQ(list[1000 + i], kCount + i);
    ASSERT_EQ(list[3 * kCount + i], 5 * kCount + i);
    ASSERT_EQ(list[3 * kCount + 10 + i], 7 * kCount + i);
  }
  EXPECT_EQ(list[1010], 0u);
  EXPECT_EQ(list[3 * kCount - 1], 0u);
}

// A short list stays on the heap and behaves the same.
TEST(MappedArray, ShortListsOnTheHeapShrinkExactly) {
  MappedArray<uint64_t> list;
  for (uint64_t i = 0; i < 100; ++i) list.push_back(i * i);
  list.shrink_to_fit();
  EXPECT_EQ(list.capacity(), 100u);
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(list[i], i * i);
  MappedArray<uint64_t> other;
  other = std::move(list);
  EXPECT_EQ(other.size(), 100u);
  EXPECT_EQ(other[99], 99u * 99u);
}

}  // namespace
}  // namespace prof::test
