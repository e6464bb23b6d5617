#include "interval_tree_model.h"

#include <QColor>

#include "trace_session.h"

namespace prof::gui {

IntervalTreeModel::IntervalTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

void IntervalTreeModel::setAnalysis(std::shared_ptr<const analysis::Analysis> a) {
  beginResetModel();
  analysis_ = a && a->usable() ? std::move(a) : nullptr;
  comparison_.reset();
  only_in_b_children_.clear();
  row_in_parent_.clear();
  if (analysis_) {
    row_in_parent_.assign(analysis_->intervals.size(), 0);
    for (const auto& n : analysis_->intervals)
      for (size_t k = 0; k < n.children.size(); ++k)
        row_in_parent_[static_cast<size_t>(n.children[k])] = static_cast<int>(k);
  }
  endResetModel();
}

void IntervalTreeModel::setComparison(std::shared_ptr<const TraceComparison> comparison, ComparedColumn column) {
  if (comparison && comparison->a != analysis_) comparison.reset();
  beginResetModel();
  comparison_ = std::move(comparison);
  column_ = column;
  const size_t a_size = static_cast<size_t>(aSize());
  row_in_parent_.resize(a_size);
  only_in_b_children_.clear();
  if (comparison_) {
    const size_t rows = a_size + comparison_->only_in_b.size();
    only_in_b_children_.assign(rows, {});
    row_in_parent_.resize(rows, 0);
    for (size_t k = 0; k < comparison_->only_in_b.size(); ++k) {
      const auto parent = static_cast<size_t>(comparison_->only_in_b_parent_row[k]);
      std::vector<int>& under = only_in_b_children_[parent];
      const size_t own = parent < a_size ? analysis_->intervals[parent].children.size() : 0;
      row_in_parent_[a_size + k] = static_cast<int>(own + under.size());
      under.push_back(static_cast<int>(a_size + k));
    }
  }
  endResetModel();
}

void IntervalTreeModel::setComparedColumn(ComparedColumn column) {
  column_ = column;
  if (!comparison_ || !analysis_) return;
  emit headerDataChanged(Qt::Horizontal, CompareA, CompareRatio);
  // Every row's compared cells, A's intervals and B's only.
  for (size_t r = 0; r < row_in_parent_.size(); ++r)
    emit dataChanged(indexOfRow(static_cast<int>(r), CompareA), indexOfRow(static_cast<int>(r), CompareRatio));
}

QModelIndex IntervalTreeModel::indexOfRow(int row, int column) const {
  if (!analysis_ || row < 0 || static_cast<size_t>(row) >= row_in_parent_.size()) return {};
  return createIndex(row_in_parent_[static_cast<size_t>(row)], column, static_cast<quintptr>(row));
}

QModelIndex IntervalTreeModel::indexOfInterval(int interval, int column) const {
  return interval < aSize() ? indexOfRow(interval, column) : QModelIndex();
}

QModelIndex IntervalTreeModel::indexOfBInterval(int b_interval, int column) const {
  if (!comparison_ || b_interval < 0 || static_cast<size_t>(b_interval) >= comparison_->a_of_b.size()) return {};
  const int a = comparison_->a_of_b[static_cast<size_t>(b_interval)];
  if (a >= 0) return indexOfRow(a, column);
  const auto& only = comparison_->only_in_b;
  const auto it = std::lower_bound(only.begin(), only.end(), b_interval);  // in B's tree order: ascending
  return indexOfRow(aSize() + static_cast<int>(it - only.begin()), column);
}

int IntervalTreeModel::intervalOf(const QModelIndex& index) const {
  if (!index.isValid()) return -1;
  const int row = static_cast<int>(index.internalId());
  return row < aSize() ? row : -1;
}

int IntervalTreeModel::onlyInBIntervalOf(const QModelIndex& index) const {
  if (!index.isValid() || !comparison_) return -1;
  const int k = static_cast<int>(index.internalId()) - aSize();
  return k >= 0 && static_cast<size_t>(k) < comparison_->only_in_b.size() ? comparison_->only_in_b[static_cast<size_t>(k)]
                                                                           : -1;
}

int IntervalTreeModel::childCount(int row) const {
  const size_t r = static_cast<size_t>(row);
  const size_t own = row < aSize() ? analysis_->intervals[r].children.size() : 0;
  return static_cast<int>(own + (r < only_in_b_children_.size() ? only_in_b_children_[r].size() : 0));
}

int IntervalTreeModel::childRow(int row, int k) const {
  const size_t r = static_cast<size_t>(row);
  const size_t own = row < aSize() ? analysis_->intervals[r].children.size() : 0;
  if (static_cast<size_t>(k) < own) return analysis_->intervals[r].children[static_cast<size_t>(k)];
  return only_in_b_children_[r][static_cast<size_t>(k) - own];
}

QModelIndex IntervalTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (!analysis_ || row < 0 || column < 0 || column >= columnCount()) return {};
  if (!parent.isValid()) return row == 0 ? createIndex(0, column, quintptr{0}) : QModelIndex();
  const int parent_row = static_cast<int>(parent.internalId());
  if (row >= childCount(parent_row)) return {};
  return createIndex(row, column, static_cast<quintptr>(childRow(parent_row, row)));
}

QModelIndex IntervalTreeModel::parent(const QModelIndex& child) const {
  if (!analysis_ || !child.isValid()) return {};
  const int row = static_cast<int>(child.internalId());
  const int parent_row = row < aSize() ? analysis_->intervals[static_cast<size_t>(row)].parent
                                       : comparison_->only_in_b_parent_row[static_cast<size_t>(row - aSize())];
  return parent_row < 0 ? QModelIndex() : indexOfRow(parent_row);
}

int IntervalTreeModel::rowCount(const QModelIndex& parent) const {
  if (!analysis_) return 0;
  if (!parent.isValid()) return 1;
  if (parent.column() != 0) return 0;
  return childCount(static_cast<int>(parent.internalId()));
}

int IntervalTreeModel::columnCount(const QModelIndex&) const {
  return comparison_ ? int{CompareColumnCount} : int{ColumnCount};
}

namespace {

// White through yellow to red as the share grows.
QColor heat(double share) {
  share = std::clamp(share, 0.0, 1.0);
  const int g = static_cast<int>(255 - 175 * share);
  const int b = static_cast<int>(255 - 255 * std::min(1.0, share * 2));
  return QColor(255, g, b);
}

}  // namespace

QVariant IntervalTreeModel::data(const QModelIndex& index, int role) const {
  if (!analysis_ || !index.isValid()) return {};
  const int b_only = onlyInBIntervalOf(index);
  if (role == IntervalRole) return intervalOf(index);
  if (b_only >= 0) return onlyInBData(comparison_->b->intervals[static_cast<size_t>(b_only)], index.column(), role);
  const size_t i = index.internalId();
  const auto& n = analysis_->intervals[i];
  if (index.column() >= ColumnCount) return comparedData(n, index.column(), role);
  if (role == SortRole) {
    switch (index.column()) {
      case Interval: return QString::fromStdString(site_label(n)) + QString::asprintf(" %08u", n.id ? *n.id : 0u);
      case Level: return n.level;
      case ExeCount: return static_cast<qulonglong>(n.exe_count);
      case Efficiency: return n.main.efficiency;
      case ExecutionTime: return n.main.execution_time;
      case LostTime: return n.main.lost_time;
    }
  }
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Interval: return interval_name(n);
      case Level: return n.level;
      case ExeCount: return static_cast<qulonglong>(n.exe_count);
      case Efficiency: return QString::asprintf("%.4f", n.main.efficiency);
      case ExecutionTime: return seconds_text(n.main.execution_time);
      case LostTime: return seconds_text(n.main.lost_time);
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() != Interval)
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::BackgroundRole && index.column() == LostTime) {
    const double run_lost = analysis_->intervals[0].main.lost_time;
    return heat(run_lost > 0 ? n.main.lost_time / run_lost : 0);
  }
  if (role == Qt::ForegroundRole && index.column() == LostTime) return QColor(Qt::black);
  if (role == Qt::ToolTipRole && index.column() == Interval)
    return QString::fromStdString(site_label(n));
  if (role == Qt::ToolTipRole && index.column() == LostTime)
    return tr("Lost time %1 s: %2% of the whole run's")
        .arg(seconds_text(n.main.lost_time))
        .arg(analysis_->intervals[0].main.lost_time > 0
                 ? 100 * n.main.lost_time / analysis_->intervals[0].main.lost_time
                 : 0.0,
             0, 'f', 1);
  return {};
}

QVariant IntervalTreeModel::comparedData(const analysis::IntervalNode& n, int column, int role) const {
  if (!comparison_) return {};
  const int interval = static_cast<int>(&n - analysis_->intervals.data());
  const analysis::IntervalNode* b = comparison_->matched(interval);
  const double x = column_.value(n);
  if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  if (!b) {
    if (column == CompareA) return role == Qt::DisplayRole ? QVariant(seconds_text(x)) : role == SortRole ? QVariant(x) : QVariant();
    if (column == CompareB && role == Qt::DisplayRole) return tr("only in A");
    if (column == CompareB && role == Qt::ToolTipRole)
      return tr("Only in A: B has no interval of this id at %1 left to match (by id and call site)")
          .arg(QString::fromStdString(site_label(n)));
    if (column == CompareB && role == Qt::ForegroundRole) return QColor(Qt::darkGray);
    return {};
  }
  const double y = column_.value(*b);
  if (role == SortRole) {
    switch (column) {
      case CompareA: return x;
      case CompareB: return y;
      case CompareDifference: return y - x;
      case CompareRatio: return x != 0 ? QVariant(y / x) : QVariant();
    }
  }
  if (role == Qt::DisplayRole) {
    switch (column) {
      case CompareA: return seconds_text(x);
      case CompareB: return seconds_text(y);
      case CompareDifference: return difference_text(y - x);
      case CompareRatio: return ratio_text(x, y);
    }
  }
  return {};
}

// A row only in B: its name and level, B's value; A's columns empty, the
// first compared one saying so.
QVariant IntervalTreeModel::onlyInBData(const analysis::IntervalNode& b, int column, int role) const {
  if (role == Qt::TextAlignmentRole && column != Interval)
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ForegroundRole && (column == Interval || column == CompareA)) return QColor(Qt::darkGray);
  if (role == Qt::ToolTipRole && (column == Interval || column == CompareA))
    return tr("Only in B: A has no interval of this id at %1 left to match (by id and call site)")
        .arg(QString::fromStdString(site_label(b)));
  const double y = column_.value(b);
  if (role == SortRole) {
    switch (column) {
      case Interval: return QString::fromStdString(site_label(b)) + QString::asprintf(" %08u", b.id ? *b.id : 0u);
      case Level: return b.level;
      case CompareB: return y;
    }
  }
  if (role == Qt::DisplayRole) {
    switch (column) {
      case Interval: return interval_name(b);
      case Level: return b.level;
      case CompareA: return tr("only in B");
      case CompareB: return seconds_text(y);
    }
  }
  return {};
}

QVariant IntervalTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  if (section >= ColumnCount) {
    const QString name = column_.label();
    switch (section) {
      case CompareA: return tr("A: %1").arg(name);
      case CompareB: return tr("B: %1").arg(name);
      case CompareDifference: return tr("B - A");
      case CompareRatio: return tr("B / A");
    }
  }
  switch (section) {
    case Interval: return tr("Interval (id at call site)");
    case Level: return tr("Level");
    case ExeCount: return tr("EXE_Count");
    case Efficiency: return tr("Efficiency");
    case ExecutionTime: return tr("Execution time (s)");
    case LostTime: return tr("Lost time (s)");
  }
  return {};
}

}  // namespace prof::gui
