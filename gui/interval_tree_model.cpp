#include "interval_tree_model.h"

#include <QColor>

#include "trace_session.h"

namespace prof::gui {

IntervalTreeModel::IntervalTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

void IntervalTreeModel::setAnalysis(std::shared_ptr<const analysis::Analysis> a) {
  beginResetModel();
  analysis_ = a && a->usable() ? std::move(a) : nullptr;
  comparison_.reset();
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
  endResetModel();
}

void IntervalTreeModel::setComparedColumn(ComparedColumn column) {
  column_ = column;
  if (!comparison_ || !analysis_) return;
  emit headerDataChanged(Qt::Horizontal, CompareA, CompareRatio);
  // Every row's compared cells: the tree's nodes are all in intervals.
  for (size_t i = 0; i < analysis_->intervals.size(); ++i)
    emit dataChanged(indexOfInterval(static_cast<int>(i), CompareA), indexOfInterval(static_cast<int>(i), CompareRatio));
}

QModelIndex IntervalTreeModel::indexOfInterval(int interval, int column) const {
  if (!analysis_ || interval < 0 || static_cast<size_t>(interval) >= analysis_->intervals.size()) return {};
  return createIndex(row_in_parent_[static_cast<size_t>(interval)], column, static_cast<quintptr>(interval));
}

int IntervalTreeModel::intervalOf(const QModelIndex& index) const {
  return index.isValid() ? static_cast<int>(index.internalId()) : -1;
}

QModelIndex IntervalTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (!analysis_ || row < 0 || column < 0 || column >= columnCount()) return {};
  if (!parent.isValid()) return row == 0 ? createIndex(0, column, quintptr{0}) : QModelIndex();
  const auto& node = analysis_->intervals[parent.internalId()];
  if (static_cast<size_t>(row) >= node.children.size()) return {};
  return createIndex(row, column, static_cast<quintptr>(node.children[static_cast<size_t>(row)]));
}

QModelIndex IntervalTreeModel::parent(const QModelIndex& child) const {
  if (!analysis_ || !child.isValid()) return {};
  const int parent_interval = analysis_->intervals[child.internalId()].parent;
  return parent_interval < 0 ? QModelIndex() : indexOfInterval(parent_interval);
}

int IntervalTreeModel::rowCount(const QModelIndex& parent) const {
  if (!analysis_) return 0;
  if (!parent.isValid()) return 1;
  if (parent.column() != 0) return 0;
  return static_cast<int>(analysis_->intervals[parent.internalId()].children.size());
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
  const size_t i = index.internalId();
  const auto& n = analysis_->intervals[i];
  if (role == IntervalRole) return static_cast<int>(i);
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
