// Two runs side by side in the window: A, the trace shown (its tree, panel
// and timeline), and B, opened by File > Compare with... (analyzed only).
// The analyzer compares them (compare.h, the matching of `prof-analyze
// --compare`: by id and call site); this adds what the tree and panel look
// up per row: the B node matched with each A interval (and back), where B's
// unmatched intervals sit in A's tree, and the columns a comparison offers.
//
// One tree of both runs: A's intervals keep their places; a B interval no A
// interval matches hangs under the row of its B parent, which is the A
// interval that parent matched or the parent's own only-in-B row (the roots
// always match, so every B interval has a row).
//
// Invariant: `comparison` points into *a and *b, which this holds.
#pragma once

#include <QString>
#include <memory>
#include <optional>
#include <vector>

#include "prof/analysis/analysis.h"
#include "prof/analysis/compare.h"

namespace prof::gui {

// What the tree compares: a main characteristic marked `compared`
// (characteristics.h), as a total or, for a summed one when the runs'
// rank counts differ, as the mean per rank (compare.h).
struct ComparedColumn {
  int characteristic = 0;  // index in analysis::kMainCharacteristics
  bool mean_per_rank = false;
  QString label() const;
  double value(const analysis::IntervalNode& n) const;
};

struct TraceComparison {
  QString a_dir, b_dir;
  std::shared_ptr<const analysis::Analysis> a, b;
  analysis::Comparison comparison;
  std::vector<int> b_of_a;  // A's interval -> B's matched interval (-1: only in A)
  std::vector<int> a_of_b;  // B's interval -> A's matched interval (-1: only in B)
  // B's intervals no A interval matches, in B's tree order, and for each the
  // row it hangs under: an A interval (< a->intervals.size()) or, past those,
  // a_size + k for only_in_b[k].
  std::vector<int> only_in_b;
  std::vector<int> only_in_b_parent_row;

  // Both analyses usable.
  static std::shared_ptr<const TraceComparison> make(const QString& a_dir, std::shared_ptr<const analysis::Analysis> a,
                                                     const QString& b_dir, std::shared_ptr<const analysis::Analysis> b);
  // B's node matched with A's interval; null when only in A.
  const analysis::IntervalNode* matched(int a_interval) const;
  // A's node matched with B's interval; null when only in B.
  const analysis::IntervalNode* matchedInA(int b_interval) const;
  // The columns offered, in the characteristics table's order, each total
  // followed by its mean per rank when the rank counts differ.
  std::vector<ComparedColumn> columns() const;
};

// B / A as prof-analyze --compare prints it ("%.3f"; "inf" when only A is 0,
// "-" when both are).
QString ratio_text(double a, double b);
// B - A with its sign.
QString difference_text(double d);

}  // namespace prof::gui
