// Every characteristic of one interval (docs/metrics.md): the main
// characteristics, the comparative table (min/max/mean over ranks), the
// per-rank table, the MPI function profile and the wait states by kind with
// the ranks waited for, the root causes of the waits (intervals and ranks
// that were late) and the time on the critical path (docs/metrics.md, "Wait
// states", "Root causes", "Critical path"), each a table whose
// cells hold the raw number under NumberRole and the report's text on show.
// "Copy as report text" puts the interval's block of the text report
// (report.h, the same writer as prof-analyze) on the clipboard.
#pragma once

#include <QWidget>
#include <memory>
#include <optional>

#include "prof/analysis/analysis.h"

class QLabel;
class QStandardItemModel;
class QTabWidget;
class QTableView;

namespace prof::gui {

class CharacteristicsPanel : public QWidget {
  Q_OBJECT
 public:
  static constexpr int NumberRole = Qt::UserRole;
  static constexpr int KeyRole = Qt::UserRole + 1;  // the JSON report's key of a row or column

  explicit CharacteristicsPanel(QWidget* parent = nullptr);
  // Shows intervals[interval] of `analysis`; `scope` says what it covers
  // ("whole run", "visible range ...").
  void showInterval(std::shared_ptr<const analysis::Analysis> analysis, int interval, const QString& scope);
  void clear(const QString& message = {});
  // The interval's text report block (per-rank table and functions included).
  QString reportText() const;
  int interval() const { return interval_; }

  // Tables: rows of (name, value) with KeyRole on column 0; comparative rows
  // (name, Tmin, Nproc, Tmax, Nproc, Tmid) keyed as in characteristics.h; per-rank
  // and function rows with a KeyRole per header section.
  QStandardItemModel* mainTable() const { return main_; }
  QStandardItemModel* comparativeTable() const { return comparative_; }
  QStandardItemModel* perRankTable() const { return per_rank_; }
  QStandardItemModel* functionTable() const { return functions_; }
  // Wait states: a row per kind (KeyRole: the JSON key) with the total over
  // ranks, the largest rank's value and that rank; the partners waited for
  // (rank, seconds, uncertain seconds), largest first.
  QStandardItemModel* waitStateTable() const { return wait_states_; }
  QStandardItemModel* waitedForTable() const { return waited_for_; }
  // Root causes (IntervalNode::caused_by): rows of (interval: its title, its
  // index under NumberRole; rank; seconds), largest first; and the
  // interval's time on the critical path. Empty and none when the analysis
  // did not compute them (a visible range: Analysis::delay_known unset).
  QStandardItemModel* causedByTable() const { return caused_by_; }
  std::optional<double> criticalPathSeconds() const { return critical_path_s_; }
  // The per-rank and function tables as shown (sorted).
  QTableView* perRankView() const { return per_rank_view_; }
  QTableView* functionView() const { return functions_view_; }
  QString title() const;
  QString scope() const;

 public slots:
  void copyReportText() const;

 private:
  QTableView* addTable(QStandardItemModel* model, const QString& tab);
  QLabel* title_;
  QLabel* scope_;
  QTabWidget* tabs_;
  std::vector<QTableView*> views_;
  QTableView* per_rank_view_ = nullptr;
  QTableView* functions_view_ = nullptr;
  QStandardItemModel* main_;
  QStandardItemModel* comparative_;
  QStandardItemModel* per_rank_;
  QStandardItemModel* functions_;
  QStandardItemModel* wait_states_;
  QStandardItemModel* waited_for_;
  QStandardItemModel* caused_by_;
  QLabel* critical_path_;
  std::optional<double> critical_path_s_;
  std::shared_ptr<const analysis::Analysis> analysis_;
  int interval_ = -1;
};

}  // namespace prof::gui
