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
// in A" there.
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
  int intervalOf(const QModelIndex& index) const;  // -1 for an invalid index

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  QVariant comparedData(const analysis::IntervalNode& n, int column, int role) const;
  std::shared_ptr<const analysis::Analysis> analysis_;
  std::shared_ptr<const TraceComparison> comparison_;
  ComparedColumn column_;
  std::vector<int> row_in_parent_;  // per interval: its position among its parent's children
};

}  // namespace prof::gui
