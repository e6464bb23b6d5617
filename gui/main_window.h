// The main window: the interval tree (filterable, sortable) beside the
// characteristics panel, the timeline below, a status bar with the load's
// progress and a cancel button. Selecting an interval shows its
// characteristics and its executions on the timeline (zooming to the first);
// clicking a call selects its interval. With "Panel shows the visible range"
// on, the panel shows the selected interval's characteristics over the
// timeline's visible range (an analysis of that window, run in the background,
// the latest range winning).
//
// Above the timeline, a find box (Ctrl+F, completing the trace's MPI function
// names, its intervals as "interval " and the tree's name, its call sites as
// "calls from " and file:line): Enter or F3 goes to the next call of the MPI
// function typed, or of every function whose name contains the text
// (case-insensitive), over the shown rows, Shift+F3 to the previous one,
// wrapping around at either end; filters beside it skip calls shorter than a
// duration or with another peer. Text no function matches finds intervals
// (their next execution, selected in the tree, the timeline zoomed to it;
// the duration filter skips shorter ones), else call sites (the next call
// from one); the prefixes "interval " and
// "calls from " choose one kind (findTarget). The status bar describes what
// was found.
//
// The range statistics (a tab beside the characteristics, brought forward by
// View > Statistics of the visible range and after each zoom to a dragged
// range, so the timeline keeps its size): time per MPI function and per kind
// over the shown rows and the visible range.
//
// Between the find box and the timeline, the overview strip (the whole run,
// the visible range framed; overview_strip.h). View > Back / Forward
// (Alt+Left / Alt+Right) walk the timeline's zoom history; File > Export writes the timeline (PNG, SVG) or the panel's table
// on show (CSV).
//
// Comparing (File > Compare with..., prof-gui A --compare B): B is analyzed
// on a second loader (the same progress bar and Cancel), A stays the trace
// shown. The tree gets A, B, B - A and B / A of the characteristic chosen
// above it and rows for B's intervals that match none of A's ("only in B",
// selectable: the panel then shows B's figures); the panel compares every
// tab it can (characteristics_panel.h); a pane under the tree lists what the
// runs' records differ in and B's unmatched intervals (all from compare.h,
// as prof-analyze --compare). A B that
// cannot be compared leaves everything as it was, with one problem reported.
// Opening another trace compares it with the same B; File > Close
// comparison returns to the plain view.
//
// Layout: a trace of more than 8 ranks gives the timeline 60% of the height
// (its rows all fit at first, aggregated below a pixel), unless the user has
// arranged the splitters. Window size, splitters and the tree's column widths
// are remembered (QSettings, "layout/..."), read at the first show and
// written at close, except in quiet mode (a screenshot or a test): those
// neither read nor write the user's settings.
#pragma once

#include <QMainWindow>
#include <QPointer>
#include <QThread>
#include <QTimer>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include "trace_comparison.h"
#include "trace_session.h"

class QComboBox;
class QLabel;
class QTableWidget;
class QDoubleSpinBox;
class QLineEdit;
class QSpinBox;
class QMenu;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QTreeView;
class QAction;
class QTabWidget;
class QSplitter;

namespace prof::gui {

class CharacteristicsPanel;
class OverviewStrip;
class RangeStatisticsPanel;
class IntervalTreeModel;
class TimelineView;
class TraceLoader;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  void openTrace(const QString& dir);
  // Loads `dir` as B and compares the trace shown (A) with it.
  void compareWith(const QString& dir);
  void closeComparison();
  // Null when not comparing.
  std::shared_ptr<const TraceComparison> comparison() const { return comparison_; }
  QComboBox* compareByBox() const { return compare_by_; }        // the tree's compared characteristic
  QTableWidget* runDifferencesTable() const { return run_differences_; }  // what, A, B
  QTableWidget* onlyInBTable() const { return only_in_b_; }      // interval, EXE_Count, lost, execution time
  QWidget* comparisonPane() const { return compare_pane_; }
  QAction* closeComparisonAction() const { return close_comparison_; }
  TraceLoader* compareLoader() const { return compare_loader_; }
  // Problems of a trace go to a dialog, or with quiet mode (a screenshot) to
  // this sink; a trace opened in quiet mode is not added to Recent traces.
  void setQuiet(std::function<void(const QString&)> sink) { quiet_sink_ = std::move(sink); }
  // Blocks (event loop running) until the loads in progress (A's, B's) end.
  void waitLoaded();
  // Whether analyses may write the window index (prof-gui --no-index: no), as
  // prof-analyze's do: a trace's whole analysis writes it, a visible range's
  // builds it where none fits (analysis::Options::write_window_index).
  void setWriteWindowIndex(bool on);

  // Selects the interval with that id (its node with the earliest first entry);
  // comparing, B's row of one only B has; false when there is none.
  bool selectIntervalId(int id);
  void selectInterval(int interval, bool zoom_to_first = true);
  int selectedInterval() const;  // A's interval; -1 for none or a row only in B
  // Comparing: B's interval of the selected row when only B has it, else -1.
  int selectedOnlyInBInterval() const;

  std::shared_ptr<const TraceSession> session() const { return session_; }
  IntervalTreeModel* model() const { return model_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QTreeView* tree() const { return tree_; }
  CharacteristicsPanel* panel() const { return panel_; }
  TimelineView* timelineView() const { return view_; }
  TraceLoader* loader() const { return loader_; }
  QAction* visibleRangeAction() const { return visible_range_; }
  QLineEdit* findBox() const { return find_; }
  QLineEdit* filterBox() const { return filter_; }
  // Goes to the next (previous) call of the function in the find box; false
  // when there is none (the status bar says so).
  bool findNext(bool forward);
  // The trace's MPI function named `text`, ignoring case ("" when none).
  QString functionNamed(const QString& text) const;
  // What the find box's text finds: the function of that name (ignoring
  // case), else every function whose name contains it (ignoring case).
  QStringList functionsMatching(const QString& text) const;
  // What the find box's text finds: with the prefix "interval ", intervals
  // (its rest: an id, else the tree's name ignoring case, else every name
  // containing it); with "calls from ", call sites (the site's "file:line"
  // ignoring case, else every one containing it); without one, the first of
  // functionsMatching, those intervals, those sites that finds any.
  struct FindTarget {
    enum Kind { Nothing, Functions, Intervals, Sites } kind = Nothing;
    QStringList functions;
    std::vector<int> intervals;  // positions in Analysis::intervals (never the root)
    std::vector<uint32_t> sites;  // Timeline::site indices
  };
  FindTarget findTarget(const QString& text) const;
  // The find filters: calls at least this long (us; 0: any), with this peer (-1: any).
  QDoubleSpinBox* findMinDuration() const { return find_min_us_; }
  QSpinBox* findPeer() const { return find_peer_; }
  // Computes the range statistics of the view (shown rows, visible range) and
  // brings their tab forward.
  void showRangeStatistics();
  RangeStatisticsPanel* rangeStatistics() const { return range_statistics_; }
  QTabWidget* rightTabs() const { return right_tabs_; }
  QSplitter* verticalSplitter() const { return vertical_; }  // the panes above, the timeline below
  QSplitter* topSplitter() const { return top_; }            // the tree beside the panels
  // File > Export: the timeline as drawn (PNG of its size, or SVG), the
  // panel's table shown as CSV (table_csv.h). False, with the problem
  // reported, when the file cannot be written or there is no table.
  bool exportViewPng(const QString& path);
  bool exportViewSvg(const QString& path);
  bool exportTableCsv(const QString& path);
  QAction* backAction() const { return back_; }
  OverviewStrip* overviewStrip() const { return overview_; }
  QAction* forwardAction() const { return forward_; }
  // The last problem reported for a trace ("" when none).
  QString lastProblem() const { return last_problem_; }

 protected:
  void showEvent(QShowEvent* e) override;
  void closeEvent(QCloseEvent* e) override;

 private:
  void restoreLayout();
  void saveLayout() const;
  void onTimelineOpened(std::shared_ptr<TraceSession> session);
  void onLoaded(std::shared_ptr<TraceSession> session, bool cancelled);
  void onCompareLoaded(std::shared_ptr<TraceSession> session, bool cancelled);
  // Compares the trace shown with B (when both are there) and shows it.
  void applyComparison();
  void expandTree();  // all of it, or two levels of a large tree
  void loadEnded();  // hides the progress bar once no load is left
  void chooseComparison();
  void onSelectionChanged();
  void reportProblem(const QString& text, const QString& title = {});
  void updatePanel();
  void analyzeVisibleRange();
  void addRecent(const QString& dir);
  void rebuildRecentMenu();
  void chooseTrace();
  // Asks for a file name ending in `suffix` and calls write with it.
  void exportTo(const QString& title, const QString& filter, const QString& suffix,
                bool (MainWindow::*write)(const QString&));
  void exportFailed(const QString& text);  // a dialog, or the quiet sink
  std::vector<int> intervalsMatching(const QString& text) const;
  std::vector<uint32_t> sitesMatching(const QString& text) const;
  void fillFindCompletions();

  TraceLoader* loader_;
  TraceLoader* compare_loader_;  // B's analysis only
  std::shared_ptr<TraceSession> session_;
  std::shared_ptr<TraceSession> compare_session_;  // B, kept while comparing
  std::shared_ptr<const TraceComparison> comparison_;
  std::vector<ComparedColumn> compare_columns_;  // compare_by_'s items
  std::optional<ComparedColumn> compare_choice_;  // the user's last choice in compare_by_
  QWidget* compare_row_;
  QComboBox* compare_by_;
  QWidget* compare_pane_;
  QLabel* compare_title_;
  QTableWidget* run_differences_;
  QTableWidget* only_in_b_;
  QAction* close_comparison_;
  IntervalTreeModel* model_;
  QSortFilterProxyModel* proxy_;
  QTreeView* tree_;
  QLineEdit* filter_;
  bool filtering_ = false;  // the filter is changing the tree's rows
  int chosen_interval_ = -1;  // the last interval selected (kept while the filter hides it)
  QLineEdit* find_;
  QDoubleSpinBox* find_min_us_;
  QSpinBox* find_peer_;
  CharacteristicsPanel* panel_;
  RangeStatisticsPanel* range_statistics_;
  QTabWidget* right_tabs_;
  TimelineView* view_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QTimer progress_timer_;
  QMenu* recent_menu_;
  QAction* arrows_;
  QAction* visible_range_;
  QAction* back_;
  OverviewStrip* overview_;
  QAction* forward_;
  QTimer range_timer_;  // debounces the visible range's analysis
  std::shared_ptr<const analysis::Analysis> range_analysis_;
  // Bumped for each new range: older analyses see it and stop.
  std::shared_ptr<std::atomic<uint64_t>> range_generation_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::vector<QPointer<QThread>> range_workers_;
  bool zoom_on_select_ = true;
  bool write_index_ = true;
  std::function<void(const QString&)> quiet_sink_;
  QString last_problem_;
  QSplitter* vertical_;
  QSplitter* top_;
  bool layout_read_ = false;  // restoreLayout ran (first show)
  bool user_layout_ = false;  // splitters restored or moved by the user: traces leave them
};

// The interval of `to` with the same key path (parent, id, call site) as
// interval i of `from`; -1 when `to` has none.
int matching_interval(const analysis::Analysis& from, int i, const analysis::Analysis& to);

}  // namespace prof::gui
