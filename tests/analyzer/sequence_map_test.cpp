// SequenceMap (analyzer/src/flat_map.h): the Isends' late-receiver table,
// keyed by hold tokens. Checked against std::map through a sliding window of
// live keys with stragglers left behind (sends never received), keys made
// below the window, growth and re-use; and consecutive keys are neighbours
// in memory, which is what it is for.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>

#include "flat_map.h"

namespace prof::analysis::detail {
namespace {

struct Wait {
  double enter = 0;
  uint64_t id = 0;
};

void expect_same(SequenceMap<Wait>& map, const std::map<uint64_t, Wait>& want, uint64_t upto, int step) {
  ASSERT_EQ(map.size(), want.size()) << "step " << step;
  for (uint64_t k = upto > 3000 ? upto - 3000 : 0; k <= upto + 3; ++k) {
    const Wait* got = map.find(k);
    const auto it = want.find(k);
    ASSERT_EQ(got != nullptr, it != want.end()) << "key " << k << ", step " << step;
    if (got) {
      ASSERT_EQ(got->id, it->second.id) << "key " << k;
    }
  }
  for (const auto& [k, v] : want) {
    const Wait* got = map.find(k);
    ASSERT_NE(got, nullptr) << "key " << k << ", step " << step;
    ASSERT_EQ(got->id, v.id);
  }
}

TEST(SequenceMap, SameAsAMapThroughSlidesStragglersAndGrowth) {
  SequenceMap<Wait> map;
  std::map<uint64_t, Wait> want;
  std::mt19937_64 random(11);
  uint64_t next = 0;
  for (int step = 0; step < 60000; ++step) {
    // In flight: a few hundred, then a few thousand (the ring grows), then few.
    const size_t in_flight = step < 20000 ? 300 : step < 40000 ? 3000 : 20;
    const unsigned roll = static_cast<unsigned>(random() % 1000);
    if (roll < 500) {
      // A new key; some tokens go to blocking sends and never reach the map.
      next += 1 + random() % 3;
      Wait& w = map[next];
      EXPECT_EQ(w.id, 0u);  // new: default-constructed
      w = Wait{static_cast<double>(step), next};
      want[next] = w;
    } else if (roll < 502 && next > 5000) {
      // The other half of an entry whose key is far behind the window.
      const uint64_t k = next - 5000 + random() % 100;
      map[k].id = k;
      want[k].id = k;
    } else if (!want.empty()) {
      // Erase an old one, mostly in order; 1 in 400 stays for good.
      auto it = want.begin();
      while (it != want.end() && it->second.enter < 0) ++it;
      if (want.size() > in_flight || roll > 990) {
        if (it == want.end()) continue;
        if (random() % 400 == 0) {
          it->second.enter = -1;  // a straggler: kept to the end
          map[it->first].enter = -1;
          continue;
        }
        map.erase(it->first);
        want.erase(it);
      }
    }
    if (step % 97 == 0) expect_same(map, want, next, step);
  }
  expect_same(map, want, next, -1);
  for (const auto& [k, v] : want) map.erase(k);
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.find(next), nullptr);
  map.erase(next + 100);  // absent: nothing happens
  EXPECT_EQ(map.size(), 0u);
}

TEST(SequenceMap, ConsecutiveKeysAreNeighboursInMemory) {
  SequenceMap<Wait> map;
  for (uint64_t k = 1000; k < 1000 + 4096; ++k) map[k].id = k;
  // A straggler far behind the window does not move the others.
  for (uint64_t k = 1001; k < 1000 + 4096; ++k) map.erase(k);
  for (uint64_t k = 100000; k < 100000 + 4096; ++k) map[k].id = k;
  for (uint64_t k = 100001; k < 100000 + 4096; ++k) {
    const auto* at = reinterpret_cast<const char*>(map.find(k));
    const auto* before = reinterpret_cast<const char*>(map.find(k - 1));
    if (at < before) continue;  // the ring wrapped
    ASSERT_LE(at - before, 64) << "key " << k;
    ASSERT_GT(at - before, 0) << "key " << k;
  }
  ASSERT_NE(map.find(1000), nullptr);
  EXPECT_EQ(map.find(1000)->id, 1000u);
  EXPECT_EQ(map.size(), 4097u);
}

}  // namespace
}  // namespace prof::analysis::detail
