// Problems found while analyzing, counted by category, with a few examples.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "prof/analysis/analysis.h"

namespace prof::analysis::detail {

inline constexpr size_t kWarningExamples = 5;

// Problems of one kind, counted; the first few described.
class WarningSink {
 public:
  // Rare (damage, unmatched messages): kept out of line and cold, so the hot
  // paths that may report a problem stay small.
  template <class F>
  [[gnu::noinline, gnu::cold]] void add(std::string_view category, F&& example, uint64_t n = 1) {
    auto it = cats_.find(category);
    if (it == cats_.end()) it = cats_.emplace(std::string(category), Cat{}).first;
    it->second.count += n;
    if (it->second.examples.size() < kWarningExamples) {
      std::string e = example();
      auto& ex = it->second.examples;
      if (std::find(ex.begin(), ex.end(), e) == ex.end()) ex.push_back(std::move(e));
    }
  }
  void merge_into(std::map<std::string, Warning>& out) const {
    for (const auto& [name, c] : cats_) {
      Warning& w = out[name];
      w.category = name;
      w.count += c.count;
      for (const auto& e : c.examples)
        if (w.examples.size() < kWarningExamples &&
            std::find(w.examples.begin(), w.examples.end(), e) == w.examples.end())
          w.examples.push_back(e);
    }
  }

 private:
  struct Cat {
    uint64_t count = 0;
    std::vector<std::string> examples;
  };
  std::map<std::string, Cat, std::less<>> cats_;
};

}  // namespace prof::analysis::detail
