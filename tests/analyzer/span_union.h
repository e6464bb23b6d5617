// Brute-force oracle shared by the timeline's and prof-gui's tests: the
// length of the union of [begin, end) spans, clipped to [from, to). Spans
// may overlap (receives completed by one Waitall wait over the same
// instants), so their lengths are never summed.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

namespace prof::test {

template <class T>
double union_inside(const std::vector<std::pair<T, T>>& spans, double from, double to) {
  std::vector<std::pair<double, double>> clipped;
  clipped.reserve(spans.size());
  for (const auto& [begin, end] : spans)
    clipped.emplace_back(std::max(static_cast<double>(begin), from), std::min(static_cast<double>(end), to));
  std::sort(clipped.begin(), clipped.end());
  double length = 0, covered_to = from;
  for (auto [begin, end] : clipped) {
    begin = std::max(begin, covered_to);
    if (end > begin) length += end - begin;
    covered_to = std::max(covered_to, end);
  }
  return length;
}

}  // namespace prof::test
