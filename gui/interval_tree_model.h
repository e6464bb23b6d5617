// The interval tree as a Qt item model over Analysis::intervals: one item per
// node, children under their parent as in the text report. An index's
// internal id is the interval's position in Analysis::intervals, so parent()
// and index() are O(1) through the node's `parent` and `children`.
//
// Columns hold numbers under SortRole (raw seconds or counts, for a
// QSortFilterProxyModel to sort by) and text under DisplayRole. The lost time
// is shaded by its share of the whole run's lost time (a heat colour).
//
// Comparing with a second run (setComparison), four columns follow: the
// compared characteristic in A (this tree's run) and in B, B - A and B / A,
// B's value from the node compare.h matched; an interval B lacks says "only
// in A" there. B's intervals that match none of A's are rows too, after A's
// children of the row they hang under (TraceComparison): their internal ids
// follow A's intervals, their A columns are empty and the first compared one
// says "only in B", so the tree holds every interval of both runs.
#pragma once

#include <QAbstractItemModel>
#include <memory>

#include "prof/analysis/analysis.h"
#include "trace_comparison.h"

namespace prof::gui {

class IntervalTreeModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { Interval = 0, Level, ExeCount, Efficiency, ExecutionTime, LostTime, ColumnCount };
  // The comparison's columns, after the others (only while comparing).
  enum ComparedColumnIndex { CompareA = ColumnCount, CompareB, CompareDifference, CompareRatio, CompareColumnCount };
  static constexpr int SortRole = Qt::UserRole;
  static constexpr int IntervalRole = Qt::UserRole + 1;  // position in Analysis::intervals

  explicit IntervalTreeModel(QObject* parent = nullptr);
  void setAnalysis(std::shared_ptr<const analysis::Analysis> analysis);
  const analysis::Analysis* analysis() const { return analysis_.get(); }
  // Null: no comparison columns. The comparison's A must be this analysis.
  void setComparison(std::shared_ptr<const TraceComparison> comparison, ComparedColumn column);
  void setComparedColumn(ComparedColumn column);
  const TraceComparison* comparison() const { return comparison_.get(); }
  ComparedColumn comparedColumn() const { return column_; }

  QModelIndex indexOfInterval(int interval, int column = 0) const;
  int intervalOf(const QModelIndex& index) const;  // A's interval; -1 for an invalid index or a row only in B
  // Comparing: the row of B's interval (its match's row when A has one).
  QModelIndex indexOfBInterval(int b_interval, int column = 0) const;
  // B's interval of a row only in B; -1 for any other.
  int onlyInBIntervalOf(const QModelIndex& index) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  QVariant comparedData(const analysis::IntervalNode& n, int column, int role) const;
  QVariant onlyInBData(const analysis::IntervalNode& b, int column, int role) const;
  QModelIndex indexOfRow(int row, int column = 0) const;
  int aSize() const { return analysis_ ? static_cast<int>(analysis_->intervals.size()) : 0; }
  // The row's children: A's, then those only in B that hang under it.
  int childCount(int row) const;
  int childRow(int row, int k) const;
  std::shared_ptr<const analysis::Analysis> analysis_;
  std::shared_ptr<const TraceComparison> comparison_;
  ComparedColumn column_;
  std::vector<int> row_in_parent_;  // per row (A's intervals, then B's only): its position among its parent's children
  std::vector<std::vector<int>> only_in_b_children_;  // per row while comparing: its children only in B
};

}  // namespace prof::gui
