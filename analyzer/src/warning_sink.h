// Problems found while analyzing, counted by category, with a few examples.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "prof/analysis/analysis.h"
#include "warning_kinds.h"

namespace prof::analysis::detail {

inline constexpr size_t kWarningExamples = 5;

// Problems of one kind, counted; the first few described. Where the order in
// which problems come depends on how the work is split (the owners of
// collective instances, one per worker), add_keyed keeps the examples with
// the smallest keys instead, and absorb() merges such sinks keeping the
// smallest overall: the same examples for any number of workers.
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
  using Key = std::array<uint64_t, 2>;
  template <class F>
  [[gnu::noinline, gnu::cold]] void add_keyed(WarningKind kind, Key key, F&& example, uint64_t n = 1) {
    Cat& cat = cats_[kind];
    cat.count += n;
    keep(cat, key, [&] { return example(); });
  }
  // Another sink's problems (keyed examples: the smallest keys of both).
  void absorb(const WarningSink& o) {
    for (const auto& entry : o.cats_) {
      const Cat& c = entry.second;
      Cat& cat = cats_[entry.first];
      cat.count += c.count;
      for (size_t i = 0; i < c.examples.size(); ++i) {
        if (!c.keys.empty()) {
          keep(cat, c.keys[i], [&] { return c.examples[i]; });
        } else if (cat.examples.size() < kWarningExamples &&
                   std::find(cat.examples.begin(), cat.examples.end(), c.examples[i]) == cat.examples.end()) {
          cat.examples.push_back(c.examples[i]);
        }
      }
    }
  }
  uint64_t count(WarningKind kind) const {
    auto it = cats_.find(kind);
    return it == cats_.end() ? 0 : it->second.count;
  }
  // Each kind's count, examples and their keys (empty: not keyed):
  // f(kind, count, examples, keys); restore() puts one back (a distributed
  // analysis moves a sink to process 0).
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [kind, c] : cats_) f(kind, c.count, c.examples, c.keys);
  }
  void restore(WarningKind kind, uint64_t count, std::vector<std::string> examples, std::vector<Key> keys) {
    cats_[kind] = Cat{count, std::move(examples), std::move(keys)};
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
    std::vector<Key> keys;  // keyed examples: sorted, parallel to examples
  };
  template <class F>
  static void keep(Cat& cat, const Key& key, F&& example) {
    const auto at = std::lower_bound(cat.keys.begin(), cat.keys.end(), key);
    if (at != cat.keys.end() && *at == key) return;
    const auto i = at - cat.keys.begin();
    if (static_cast<size_t>(i) >= kWarningExamples) return;
    cat.keys.insert(at, key);
    cat.examples.insert(cat.examples.begin() + i, example());
    if (cat.keys.size() > kWarningExamples) {
      cat.keys.pop_back();
      cat.examples.pop_back();
    }
  }
  std::map<WarningKind, Cat> cats_;
};

}  // namespace prof::analysis::detail
