// Problems found while analyzing, counted by category, with a few examples.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "prof/analysis/analysis.h"
#include "warning_kinds.h"

namespace prof::analysis::detail {

inline constexpr size_t kWarningExamples = 5;

// Problems of one kind, counted; the first few described.
class WarningSink {
 public:
  // Rare (damage, unmatched messages): kept out of line and cold, so the hot
  // paths that may report a problem stay small.
  template <class F>
  [[gnu::noinline, gnu::cold]] void add(WarningKind kind, F&& example, uint64_t n = 1) {
    Cat& cat = cats_[kind];
    cat.count += n;
    if (cat.examples.size() < kWarningExamples) {
      std::string e = example();
      auto& ex = cat.examples;
      if (std::find(ex.begin(), ex.end(), e) == ex.end()) ex.push_back(std::move(e));
    }
  }
  uint64_t count(WarningKind kind) const {
    auto it = cats_.find(kind);
    return it == cats_.end() ? 0 : it->second.count;
  }
  // Each kind's count and examples: f(kind, count, examples); restore()
  // puts one back (a distributed analysis moves a rank's sink to process 0).
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [kind, c] : cats_) f(kind, c.count, c.examples);
  }
  void restore(WarningKind kind, uint64_t count, std::vector<std::string> examples) {
    cats_[kind] = Cat{count, std::move(examples)};
  }
  // Into the run's warnings, by category (the order users see them in).
  void merge_into(std::map<std::string, Warning>& out) const {
    for (const auto& [kind, c] : cats_) {
      const std::string name(category_of(kind));
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
  std::map<WarningKind, Cat> cats_;
};

}  // namespace prof::analysis::detail
