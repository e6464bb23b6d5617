// Contiguous blocks of items of about equal weight: the engine's blocks of
// ranks per worker (by event bytes) and, in an MPI job, the blocks of rank
// files per process (by count, before any is opened).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace prof::analysis::detail {

// The part of each item: item i goes where the middle of its weight falls
// among `parts` equal shares of the total, with the parts in order (never
// decreasing), none skipped and none left empty; with fewer items than
// parts, one item a part in the last parts. Weights are at least 1 (a rank
// with no events still costs).
inline std::vector<unsigned> cut_blocks(const std::vector<uint64_t>& weights, unsigned parts) {
  std::vector<unsigned> part;
  part.reserve(weights.size());
  uint64_t total = 0;
  for (uint64_t w : weights) total += w;
  uint64_t done = 0;
  unsigned prev = 0;
  const size_t n = weights.size();
  for (size_t i = 0; i < n; ++i) {
    const uint64_t mid = done + weights[i] / 2;
    unsigned p = std::min<unsigned>(
        parts - 1, static_cast<unsigned>(static_cast<double>(mid) / static_cast<double>(total) * parts));
    p = std::max(p, prev);                                                     // contiguous
    p = std::min(p, i == 0 ? 0u : prev + 1);                                   // no part skipped
    p = std::max<unsigned>(p, static_cast<unsigned>(parts - std::min<size_t>(parts, n - i)));  // none left empty
    prev = p;
    part.push_back(p);
    done += weights[i];
  }
  return part;
}

}  // namespace prof::analysis::detail
