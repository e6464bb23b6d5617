#include "prof/bcast/tree.h"

namespace prof::bcast {

int NotifyTrees::relative_parent(TreeSpec spec, int size, int r) {
  if (r == 0) return -1;
  switch (spec.kind) {
    case TreeKind::Flat: return 0;
    case TreeKind::Chain: return r - 1;
    case TreeKind::Kary: return (r - 1) / spec.k;
    case TreeKind::Knomial: {
      // Clear r's lowest non-zero base-k digit.
      for (long mask = 1; mask < size; mask *= spec.k) {
        const long digit = (r / mask) % spec.k;
        if (digit) return int(r - digit * mask);
      }
      return 0;
    }
  }
  return 0;
}

std::vector<int> NotifyTrees::relative_children(TreeSpec spec, int size, int r) {
  std::vector<int> out;
  switch (spec.kind) {
    case TreeKind::Flat:
      if (r == 0)
        for (int c = 1; c < size; ++c) out.push_back(c);
      break;
    case TreeKind::Chain:
      if (r + 1 < size) out.push_back(r + 1);
      break;
    case TreeKind::Kary:
      for (long c = long(r) * spec.k + 1; c <= long(r) * spec.k + spec.k && c < size; ++c)
        out.push_back(int(c));
      break;
    case TreeKind::Knomial: {
      // Children differ from r in one base-k digit below r's lowest non-zero one.
      long limit = 1;
      while (limit < size && (r / limit) % spec.k == 0) limit *= spec.k;
      std::vector<long> masks;
      for (long mask = 1; mask < limit && mask < size; mask *= spec.k) masks.push_back(mask);
      for (auto m = masks.rbegin(); m != masks.rend(); ++m)
        for (long j = 1; j < spec.k && r + j * *m < size; ++j) out.push_back(int(r + j * *m));
      break;
    }
  }
  return out;
}

NotifyTrees::NotifyTrees(TreeSpec spec, int size, int rank)
    : parent_(size, -1), children_(size) {
  for (int root = 0; root < size; ++root) {
    const int r = (rank - root + size) % size;
    const int p = relative_parent(spec, size, r);
    parent_[root] = p < 0 ? -1 : (p + root) % size;
    for (int c : relative_children(spec, size, r)) children_[root].push_back((c + root) % size);
  }
}

}  // namespace prof::bcast
