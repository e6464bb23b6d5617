// Fifo (analyzer/src/flat_map.h): a channel's queue of sends or receives, a
// ring over a power-of-two array. Checked against std::deque through many
// wraps, growths while wrapped, and removals of a cancelled send from the
// middle of a wrapped ring.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <random>

#include "flat_map.h"

namespace prof::analysis::detail {
namespace {

struct Item {
  double enter;
  uint64_t id;
};

void expect_same(Fifo<Item>& fifo, const std::deque<Item>& want) {
  ASSERT_EQ(fifo.size(), want.size());
  ASSERT_EQ(fifo.empty(), want.empty());
  if (!want.empty()) {
    EXPECT_EQ(fifo.front().id, want.front().id);
  }
}

TEST(Fifo, KeepsOrderThroughWrapsGrowthsAndRemovals) {
  Fifo<Item> fifo;
  std::deque<Item> want;
  std::mt19937_64 random(7);
  uint64_t next = 0;
  for (int step = 0; step < 200000; ++step) {
    // Phases of filling and draining, so the ring wraps at every size and
    // grows while its items straddle the end of the array.
    const bool filling = (step / 3000) % 2 == 0;
    const unsigned roll = static_cast<unsigned>(random() % 100);
    if (roll < (filling ? 70u : 30u)) {
      const Item v{static_cast<double>(next % 50), next};
      ++next;
      fifo.push(v);
      want.push_back(v);
    } else if (roll < 98u) {
      if (want.empty()) continue;
      const Item got = fifo.pop();
      ASSERT_EQ(got.id, want.front().id) << "step " << step;
      want.pop_front();
    } else {
      // A cancelled send: the last item with this enter goes, the rest keep
      // their order.
      const double enter = static_cast<double>(random() % 50);
      const bool removed = fifo.remove_last_if([&](const Item& q) { return q.enter == enter; });
      bool expected = false;
      for (size_t i = want.size(); i-- > 0;)
        if (want[i].enter == enter) {
          want.erase(want.begin() + static_cast<std::ptrdiff_t>(i));
          expected = true;
          break;
        }
      ASSERT_EQ(removed, expected) << "step " << step;
    }
    expect_same(fifo, want);
  }
  // Drained, it refills in order.
  while (!want.empty()) {
    ASSERT_EQ(fifo.pop().id, want.front().id);
    want.pop_front();
  }
  EXPECT_TRUE(fifo.empty());
  for (uint64_t i = 0; i < 100; ++i) fifo.push(Item{0, i});
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(fifo.pop().id, i);
}

}  // namespace
}  // namespace prof::analysis::detail
