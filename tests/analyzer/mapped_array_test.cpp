// MappedArray (analyzer/src/mapped_array.h), under the timeline's per-row
// lists: elements survive the move from the heap to a mapping of its own,
// growth by mremap, the remove_if idiom, shrinking and moves.
#include "mapped_array.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

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
