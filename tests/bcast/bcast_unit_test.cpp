// The broadcast's trees and settings, without MPI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "prof/bcast/params.h"
#include "prof/bcast/tree.h"

using namespace prof::bcast;

namespace {

std::vector<TreeSpec> all_trees() {
  return {{TreeKind::Flat, 0},    {TreeKind::Chain, 1},   {TreeKind::Kary, 1}, {TreeKind::Kary, 2},
          {TreeKind::Kary, 3},    {TreeKind::Knomial, 2}, {TreeKind::Knomial, 3}, {TreeKind::Knomial, 4}};
}

// Every rank is reached exactly once from the root, children agree with
// parents, for every size and root.
TEST(BcastTree, SpansEveryRankOnceForEveryRoot) {
  for (const TreeSpec& spec : all_trees()) {
    for (int size = 1; size <= 37; ++size) {
      std::vector<NotifyTrees> trees;
      for (int rank = 0; rank < size; ++rank) trees.emplace_back(spec, size, rank);
      for (int root = 0; root < size; ++root) {
        std::vector<int> reached(size, 0);
        std::vector<int> frontier{root};
        reached[root] = 1;
        EXPECT_EQ(trees[root].parent(root), -1);
        while (!frontier.empty()) {
          const int r = frontier.back();
          frontier.pop_back();
          for (int c : trees[r].children(root)) {
            ASSERT_GE(c, 0);
            ASSERT_LT(c, size);
            EXPECT_EQ(trees[c].parent(root), r) << tree_name(spec) << " size " << size << " root " << root;
            ++reached[c];
            frontier.push_back(c);
          }
        }
        for (int r = 0; r < size; ++r)
          EXPECT_EQ(reached[r], 1) << tree_name(spec) << " size " << size << " root " << root << " rank " << r;
      }
    }
  }
}

TEST(BcastTree, ShapesAreTheNamedOnes) {
  // Relative ranks, size 8.
  EXPECT_EQ(NotifyTrees::relative_children({TreeKind::Flat, 0}, 8, 0).size(), 7u);
  EXPECT_EQ(NotifyTrees::relative_children({TreeKind::Chain, 1}, 8, 3), std::vector<int>{4});
  EXPECT_EQ(NotifyTrees::relative_children({TreeKind::Kary, 2}, 8, 1), (std::vector<int>{3, 4}));
  // Binomial: 0 -> 4, 2, 1 (larger subtrees first); 4 -> 6, 5; 6 -> 7.
  EXPECT_EQ(NotifyTrees::relative_children({TreeKind::Knomial, 2}, 8, 0), (std::vector<int>{4, 2, 1}));
  EXPECT_EQ(NotifyTrees::relative_children({TreeKind::Knomial, 2}, 8, 4), (std::vector<int>{6, 5}));
  EXPECT_EQ(NotifyTrees::relative_parent({TreeKind::Knomial, 2}, 8, 7), 6);
  // Trinomial over 9: 0 -> 3, 6, 1, 2.
  EXPECT_EQ(NotifyTrees::relative_children({TreeKind::Knomial, 3}, 9, 0), (std::vector<int>{3, 6, 1, 2}));
}

TEST(BcastSettings, DefaultsAreTheModelsOptimum) {
  const long page = sysconf(_SC_PAGESIZE);
  // f* = sqrt(b t_w / t) = sqrt(2^20 * 50) = 7240.8 -> whole pages.
  EXPECT_EQ(model_fragment_bytes(1u << 20, 4096), 8192u);
  EXPECT_EQ(model_fragment_bytes(4u << 20, 4096), 16384u);
  const Settings s = default_settings();
  EXPECT_EQ(s.impl, Impl::Native);
  EXPECT_EQ(s.fragment % std::size_t(page), 0u);
  EXPECT_EQ(std::size_t(s.slots) * s.fragment, kModelQueueBytes);
  EXPECT_EQ(s.slots % s.sets, 0);
}

}  // namespace
