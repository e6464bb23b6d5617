// Every characteristic of one interval (docs/metrics.md): the main
// characteristics, the comparative table (min/max/mean over ranks), the
// per-rank table, the MPI function profile and the wait states by kind with
// the ranks waited for, the root causes of the waits (intervals and ranks
// that were late) and the time on the critical path (docs/metrics.md, "Wait
// states", "Root causes", "Critical path"), each a table whose cells hold the
// raw number under NumberRole and the report's text on show; the function
// profile also as a bar chart (FunctionChart), and the messages between ranks
// as a matrix (MessageMatrixView), computed from the timeline only while its
// tab is shown, on a worker thread (every message of the range is read): the
// tab says "computing" meanwhile, and only the latest request's answer is
// shown (each request bumps a generation; older answers are dropped).
// "Copy as report text" puts the interval's block of the text report
// (report.h, the same writer as prof-analyze) on the clipboard.
//
// Comparing with a second run (setComparison), an interval of the
// comparison's A or B is shown in both runs, as prof-analyze --compare
// pairs them (compare.h): the main table has A, B, B - A and B / A (and the
// summed characteristics' means per rank when the rank counts differ); the
// comparative table each row for A and for B; "Per rank" each rank's figures
// in A, B and B - A (when the rank counts differ, each figure's total and
// mean per rank instead, which the tab says); "MPI functions" and its chart
// either run's functions (compare_functions); "Wait states" each kind's
// total in A and B. The partners waited for, the causes and the Messages tab
// stay the shown run's (B is analyzed only: no timeline, no pairing in
// compare.h). A run without the interval leaves its cells empty. An interval
// of another analysis (a visible range) is shown as without a comparison.
#pragma once

#include <QPointer>
#include <QThread>
#include <QWidget>
#include <functional>
#include <memory>
#include <optional>

#include "prof/analysis/analysis.h"
#include "prof/analysis/timeline.h"
#include "trace_comparison.h"

class QHBoxLayout;
class QLabel;
class QStandardItemModel;
class QTabWidget;
class QTableView;

namespace prof::gui {

class FunctionChart;
class MessageMatrixView;

class CharacteristicsPanel : public QWidget {
  Q_OBJECT
 public:
  static constexpr int NumberRole = Qt::UserRole;
  static constexpr int KeyRole = Qt::UserRole + 1;  // the JSON report's key of a row or column

  explicit CharacteristicsPanel(QWidget* parent = nullptr);
  ~CharacteristicsPanel() override;
  // Shows intervals[interval] of `analysis`; `scope` says what it covers
  // ("whole run", "visible range ...").
  void showInterval(std::shared_ptr<const analysis::Analysis> analysis, int interval, const QString& scope);
  void clear(const QString& message = {});
  // Null: no comparison. Takes effect at the next showInterval.
  void setComparison(std::shared_ptr<const TraceComparison> comparison) { comparison_ = std::move(comparison); }
  // The interval's text report block (per-rank table and functions included).
  QString reportText() const;
  int interval() const { return interval_; }

  // Tables: rows of (name, value) with KeyRole on column 0 (comparing: name,
  // A, B, B - A, B / A; a mean per rank keyed "KEY/mean"); comparative rows
  // (name, Tmin, Nproc, Tmax, Nproc, Tmid) keyed as in characteristics.h
  // (comparing: "KEY/a" and "KEY/b"); per-rank and function rows with a
  // KeyRole per header section (comparing, per rank: "rank" then "KEY/a",
  // "KEY/b", "KEY/diff", or rows keyed "total" and "mean" when the rank
  // counts differ; functions keyed as prof-analyze --compare's JSON
  // `functions`, plus "ratio"; wait states "a", "b", "diff", "ratio").
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
  // What the Per rank tab says above its table (hidden: nothing to say).
  QLabel* perRankNote() const { return per_rank_note_; }
  QLabel* messagesNote() const { return matrix_note_; }
  // The table of the tab shown (of its two, the one with focus, else the
  // first), as shown (sorted): what File > Export table as CSV writes.
  QTableView* currentTableView() const;
  // The function profile as bars (the same list as functionTable()).
  FunctionChart* functionChart() const { return function_chart_; }
  // The communication matrix: `source` computes it (for the interval and
  // range shown), called when the Messages tab is or becomes current; null: none.
  void setMatrixSource(std::function<analysis::TimelineMessageMatrix()> source);
  MessageMatrixView* messageMatrix() const { return matrix_; }
  // A matrix is being computed for the tab (its answer not shown yet).
  bool matrixComputing() const;
  void showMessagesTab();

 signals:
  // A matrix cell was clicked: its first message (to find on the timeline).
  void messageChosen(const analysis::TimelineMessage& message);

 public:
  QString title() const;
  QString scope() const;

 public slots:
  void copyReportText() const;

 private:
  // `note`: the tab is a page with a label (hidden) above the table.
  QTableView* addTable(QStandardItemModel* model, const QString& tab, QLabel** note = nullptr);
  void setComparedLayout(bool compared);
  // The partner and cause tables' headers; `run`: " in A", " in B" or empty.
  void setPartnerHeaders(const QString& run);
  void showMain(const analysis::IntervalNode& n);
  // The rows of each run given (label suffix: the run; empty: a single run).
  void showComparative(const std::vector<std::pair<const analysis::IntervalNode*, QString>>& runs);
  void showPerRank(const analysis::IntervalNode& n);
  void showFunctions(const analysis::IntervalNode& n);
  void showWaitStates(const analysis::IntervalNode& n);
  // Comparing: the interval in A and in B (either null: only in the other).
  void showCompared(const analysis::IntervalNode* a, const analysis::IntervalNode* b);
  bool compared_layout_ = false;
  QLabel* per_rank_note_ = nullptr;
  QLabel* matrix_note_ = nullptr;
  QLabel* title_;
  QLabel* scope_;
  QTabWidget* tabs_;
  QHBoxLayout* main_row_ = nullptr;  // the main and comparative tables
  std::vector<QTableView*> views_;
  QTableView* per_rank_view_ = nullptr;
  QTableView* functions_view_ = nullptr;
  FunctionChart* function_chart_ = nullptr;
  MessageMatrixView* matrix_ = nullptr;
  QWidget* matrix_page_ = nullptr;
  std::function<analysis::TimelineMessageMatrix()> matrix_source_;
  bool matrix_stale_ = false;
  uint64_t matrix_generation_ = 0;
  std::vector<QPointer<QThread>> matrix_workers_;  // waited for on destruction
  void refreshMatrix();
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
  std::shared_ptr<const TraceComparison> comparison_;
  int interval_ = -1;
};

}  // namespace prof::gui
