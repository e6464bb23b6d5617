// Notification trees of the shared-memory broadcast (Kurnosov and Tokmasheva's
// NUMA MPI_Bcast, section 4.1; docs/references.md):
// flat, chain, k-ary and k-nomial, built for every possible root at set-up so
// that a broadcast finds this rank's parent and children in constant time.
//
// A tree is defined over ranks relative to the root, r = (rank - root) mod p,
// with the root at r = 0; every r > 0 has exactly one parent with a smaller r,
// so the tree spans all p ranks and notifications flow away from the root.
#pragma once

#include <vector>

#include "prof/bcast/params.h"

namespace prof::bcast {

class NotifyTrees {
 public:
  NotifyTrees() = default;
  NotifyTrees(TreeSpec spec, int size, int rank);
  // This rank's parent when `root` broadcasts (-1 at the root).
  int parent(int root) const { return parent_[root]; }
  // This rank's children when `root` broadcasts, larger subtrees first.
  const std::vector<int>& children(int root) const { return children_[root]; }

  // The same over relative ranks (exposed for the tests).
  static int relative_parent(TreeSpec spec, int size, int r);
  static std::vector<int> relative_children(TreeSpec spec, int size, int r);

 private:
  std::vector<int> parent_;
  std::vector<std::vector<int>> children_;
};

}  // namespace prof::bcast
