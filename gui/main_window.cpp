#include "main_window.h"

#include <QAction>
#include <QComboBox>
#include <QCompleter>
#include <QDoubleSpinBox>
#include <QSpinBox>
#include <QStringListModel>
#include <QApplication>
#include <QTabWidget>
#include <QEventLoop>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSaveFile>
#include <QSplitter>
#include <QStatusBar>
#include <QThread>
#include <QTableView>
#include <QTableWidget>
#include <QTreeView>
#include <QVBoxLayout>
#include <limits>
#include <optional>

#include "characteristics_panel.h"
#include "prof/analysis/characteristics.h"
#include "interval_tree_model.h"
#include "overview_strip.h"
#include "range_statistics.h"
#include "table_csv.h"
#include "timeline_view.h"
#include "trace_loader.h"

namespace prof::gui {

namespace {
constexpr int kMaxRecent = 8;
}

int matching_interval(const analysis::Analysis& from, int i, const analysis::Analysis& to) {
  if (i < 0 || static_cast<size_t>(i) >= from.intervals.size() || to.intervals.empty()) return -1;
  const auto& n = from.intervals[static_cast<size_t>(i)];
  if (n.parent < 0) return 0;
  const int parent = matching_interval(from, n.parent, to);
  if (parent < 0) return -1;
  for (int c : to.intervals[static_cast<size_t>(parent)].children) {
    const auto& m = to.intervals[static_cast<size_t>(c)];
    if (m.id == n.id && site_label(m) == site_label(n)) return c;
  }
  return -1;
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("prof-gui");
  loader_ = new TraceLoader(this);
  compare_loader_ = new TraceLoader(this);
  compare_loader_->setTimeline(false);
  model_ = new IntervalTreeModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(IntervalTreeModel::SortRole);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setRecursiveFilteringEnabled(true);
  proxy_->setFilterKeyColumn(IntervalTreeModel::Interval);

  // Left: filter box and tree; right: the panel; below: the timeline.
  auto* left = new QWidget(this);
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(4, 4, 4, 4);
  filter_ = new QLineEdit(left);
  filter_->setPlaceholderText(tr("Filter intervals (call site or id)"));
  filter_->setClearButtonEnabled(true);
  // Filtering changes what the tree lists, never the selection, the panel or
  // the timeline: the selected interval stays current while it is listed.
  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& text) {
    const int kept = chosen_interval_;
    filtering_ = true;
    proxy_->setFilterFixedString(text);
    tree_->expandAll();
    const QModelIndex shown = kept >= 0 ? proxy_->mapFromSource(model_->indexOfInterval(kept)) : QModelIndex();
    if (shown.isValid()) tree_->setCurrentIndex(shown);
    filtering_ = false;
  });
  tree_ = new QTreeView(left);
  tree_->setModel(proxy_);
  tree_->setSortingEnabled(true);
  tree_->sortByColumn(-1, Qt::AscendingOrder);  // tree order until a header is clicked
  tree_->setUniformRowHeights(true);
  tree_->setAlternatingRowColors(true);
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // Comparing: the characteristic the tree compares, above it; the runs'
  // differences and B's unmatched intervals under it.
  compare_row_ = new QWidget(left);
  auto* compare_row_layout = new QHBoxLayout(compare_row_);
  compare_row_layout->setContentsMargins(0, 0, 0, 0);
  compare_by_ = new QComboBox(compare_row_);
  compare_by_->setObjectName("compareBy");
  compare_row_layout->addWidget(new QLabel(tr("Compare by:"), compare_row_));
  compare_row_layout->addWidget(compare_by_, 1);
  compare_row_->hide();
  connect(compare_by_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i < 0 || static_cast<size_t>(i) >= compare_columns_.size()) return;
    compare_choice_ = compare_columns_[static_cast<size_t>(i)];
    model_->setComparedColumn(*compare_choice_);
  });
  compare_pane_ = new QWidget(left);
  compare_pane_->setObjectName("comparisonPane");
  auto* compare_layout = new QVBoxLayout(compare_pane_);
  compare_layout->setContentsMargins(0, 0, 0, 0);
  auto* compare_head = new QHBoxLayout;
  compare_title_ = new QLabel(compare_pane_);
  compare_title_->setWordWrap(true);
  compare_title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* close_button = new QPushButton(tr("Close comparison"), compare_pane_);
  connect(close_button, &QPushButton::clicked, this, &MainWindow::closeComparison);
  compare_head->addWidget(compare_title_, 1);
  compare_head->addWidget(close_button);
  compare_layout->addLayout(compare_head);
  auto* compare_tables = new QHBoxLayout;
  auto make_table = [this](const QString& name, const QStringList& headers) {
    auto* table = new QTableWidget(0, static_cast<int>(headers.size()), compare_pane_);
    table->setObjectName(name);
    table->setHorizontalHeaderLabels(headers);
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    return table;
  };
  run_differences_ = make_table("runDifferences", {tr("Runs differ in"), "A", "B"});
  // A and B share the width left: a long value (a command line) is elided in
  // the middle, whole in its tooltip, and never pushes B out of sight.
  for (int column : {1, 2}) run_differences_->horizontalHeader()->setSectionResizeMode(column, QHeaderView::Stretch);
  run_differences_->setTextElideMode(Qt::ElideMiddle);
  run_differences_->setWordWrap(false);
  only_in_b_ = make_table("onlyInB", {tr("Only in B"), tr("EXE_Count"), tr("Lost time (s)"), tr("Execution time (s)")});
  compare_tables->addWidget(run_differences_, 1);
  compare_tables->addWidget(only_in_b_, 1);
  compare_layout->addLayout(compare_tables, 1);
  compare_pane_->hide();
  auto* tree_split = new QSplitter(Qt::Vertical, left);
  tree_split->addWidget(tree_);
  tree_split->addWidget(compare_pane_);
  tree_split->setStretchFactor(0, 3);
  tree_split->setStretchFactor(1, 2);
  left_layout->addWidget(filter_);
  left_layout->addWidget(compare_row_);
  left_layout->addWidget(tree_split, 1);
  connect(tree_->selectionModel(), &QItemSelectionModel::currentChanged, this, &MainWindow::onSelectionChanged);

  panel_ = new CharacteristicsPanel(this);
  view_ = new TimelineView(this);
  // A matrix cell: the timeline zooms to its first message, send to receive.
  connect(panel_, &CharacteristicsPanel::messageChosen, this, [this](const analysis::TimelineMessage& m) {
    const double from = static_cast<double>(std::min(m.send_enter, m.recv_enter));
    const double to = static_cast<double>(std::max(m.recv_leave, m.send_enter));
    const double margin = std::max((to - from) * 0.1, 100.0);
    view_->setRange(from - margin, to + margin);
    statusBar()->showMessage(tr("First message of rank %1 to rank %2: sent at %3, received %4 .. %5")
                                 .arg(session_ && session_->timeline ? session_->timeline->rows()[m.send_row].rank : -1)
                                 .arg(session_ && session_->timeline ? session_->timeline->rows()[m.recv_row].rank : -1)
                                 .arg(duration_text(static_cast<double>(m.send_enter)),
                                      duration_text(static_cast<double>(m.recv_enter)),
                                      duration_text(static_cast<double>(m.recv_leave))));
  });
  connect(view_, &TimelineView::callClicked, this, [this](size_t, qulonglong, int node) {
    if (view_->selectedCall()) statusBar()->showMessage(view_->describeCall(*view_->selectedCall()).join(", "));
    if (!session_ || node < 0 || static_cast<size_t>(node) >= session_->interval_of_node.size()) return;
    const int interval = session_->interval_of_node[static_cast<size_t>(node)];
    if (interval >= 0) selectInterval(interval, false);
  });
  connect(view_, &TimelineView::rangeChanged, this, [this] {
    if (visible_range_->isChecked()) range_timer_.start();
  });

  auto* top = top_ = new QSplitter(Qt::Horizontal, this);
  top->addWidget(left);
  right_tabs_ = new QTabWidget(this);
  range_statistics_ = new RangeStatisticsPanel(this);
  right_tabs_->addTab(panel_, tr("Characteristics"));
  right_tabs_->addTab(range_statistics_, tr("Range statistics"));
  top->addWidget(right_tabs_);
  top->setStretchFactor(0, 5);
  top->setStretchFactor(1, 6);
  // The timeline with its find bar above.
  auto* timeline_area = new QWidget(this);
  auto* timeline_layout = new QVBoxLayout(timeline_area);
  timeline_layout->setContentsMargins(0, 0, 0, 0);
  timeline_layout->setSpacing(2);
  auto* bar = new QHBoxLayout();
  bar->setContentsMargins(4, 2, 4, 0);
  find_ = new QLineEdit(timeline_area);
  find_->setPlaceholderText(tr("Find an MPI function, interval or call site (Ctrl+F; Enter/F3 next, Shift+F3 previous)"));
  find_->setClearButtonEnabled(true);
  find_->setMaximumWidth(420);
  connect(find_, &QLineEdit::returnPressed, this, [this] { findNext(true); });
  auto* previous_button = new QPushButton(tr("Previous"), timeline_area);
  auto* next_button = new QPushButton(tr("Next"), timeline_area);
  connect(previous_button, &QPushButton::clicked, this, [this] { findNext(false); });
  connect(next_button, &QPushButton::clicked, this, [this] { findNext(true); });
  // Completion over the trace's MPI functions (filled when a trace loads).
  auto* completer = new QCompleter(new QStringListModel(find_), find_);
  completer->setCaseSensitivity(Qt::CaseInsensitive);
  completer->setFilterMode(Qt::MatchContains);
  find_->setCompleter(completer);
  find_min_us_ = new QDoubleSpinBox(timeline_area);
  find_min_us_->setObjectName("findMinDuration");
  find_min_us_->setRange(0, 1e9);
  find_min_us_->setDecimals(3);
  find_min_us_->setSuffix(tr(" us"));
  find_min_us_->setPrefix(tr("at least "));
  find_min_us_->setSpecialValueText(tr("any duration"));
  find_peer_ = new QSpinBox(timeline_area);
  find_peer_->setObjectName("findPeer");
  find_peer_->setRange(-1, 1 << 30);
  find_peer_->setValue(-1);
  find_peer_->setPrefix(tr("peer "));
  find_peer_->setSpecialValueText(tr("any peer"));
  bar->addWidget(new QLabel(tr("Find:"), timeline_area));
  bar->addWidget(find_, 1);
  bar->addWidget(find_min_us_);
  bar->addWidget(find_peer_);
  bar->addWidget(previous_button);
  bar->addWidget(next_button);
  bar->addStretch(1);
  timeline_layout->addLayout(bar);
  overview_ = new OverviewStrip(view_, timeline_area);
  timeline_layout->addWidget(overview_);
  timeline_layout->addWidget(view_, 1);
  auto* vertical = vertical_ = new QSplitter(Qt::Vertical, this);
  vertical->addWidget(top);
  vertical->addWidget(timeline_area);
  vertical->setStretchFactor(0, 1);
  vertical->setStretchFactor(1, 1);
  setCentralWidget(vertical);
  for (QSplitter* splitter : {top_, vertical_})
    connect(splitter, &QSplitter::splitterMoved, this, [this] { user_layout_ = true; });
  connect(view_, &TimelineView::rangeDragged, this, &MainWindow::showRangeStatistics);

  // Menus.
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open trace..."), QKeySequence::Open, this, &MainWindow::chooseTrace);
  recent_menu_ = file->addMenu(tr("Recent traces"));
  file->addAction(tr("&Compare with..."), this, &MainWindow::chooseComparison);
  close_comparison_ = file->addAction(tr("C&lose comparison"), this, &MainWindow::closeComparison);
  close_comparison_->setEnabled(false);
  file->addSeparator();
  file->addAction(tr("Export view as &PNG..."), this, [this] {
    exportTo(tr("Export view as PNG"), tr("PNG images (*.png)"), ".png", &MainWindow::exportViewPng);
  });
  file->addAction(tr("Export view as &SVG..."), this, [this] {
    exportTo(tr("Export view as SVG"), tr("SVG drawings (*.svg)"), ".svg", &MainWindow::exportViewSvg);
  });
  file->addAction(tr("Export &table as CSV..."), this, [this] {
    exportTo(tr("Export table as CSV"), tr("CSV files (*.csv)"), ".csv", &MainWindow::exportTableCsv);
  });
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  edit->addAction(tr("&Copy interval as report text"), QKeySequence::Copy, panel_,
                  &CharacteristicsPanel::copyReportText);
  edit->addSeparator();
  edit->addAction(tr("&Find an MPI function, interval or call site"), QKeySequence::Find, this, [this] {
    find_->setFocus();
    find_->selectAll();
  });
  edit->addAction(tr("Find &next"), QKeySequence(Qt::Key_F3), this, [this] { findNext(true); });
  edit->addAction(tr("Find &previous"), QKeySequence(Qt::SHIFT | Qt::Key_F3), this, [this] { findNext(false); });
  QMenu* view = menuBar()->addMenu(tr("&View"));
  back_ = view->addAction(tr("&Back"), QKeySequence(Qt::ALT | Qt::Key_Left), view_, &TimelineView::back);
  forward_ = view->addAction(tr("F&orward"), QKeySequence(Qt::ALT | Qt::Key_Right), view_, &TimelineView::forward);
  auto history_actions = [this] {
    back_->setEnabled(view_->canGoBack());
    forward_->setEnabled(view_->canGoForward());
  };
  connect(view_, &TimelineView::historyChanged, this, history_actions);
  connect(view_, &TimelineView::rangeChanged, this, history_actions);
  history_actions();
  view->addSeparator();
  view->addAction(tr("Show the &whole run"), QKeySequence(Qt::Key_Home), view_, &TimelineView::showAll);
  view->addAction(tr("Zoom &rows in"), QKeySequence(Qt::CTRL | Qt::Key_Plus), view_,
                  [this] { view_->setRowZoom(view_->rowZoom() * 2, view_->plotRect().center().y()); });
  view->addAction(tr("Zoom rows &out"), QKeySequence(Qt::CTRL | Qt::Key_Minus), view_,
                  [this] { view_->setRowZoom(view_->rowZoom() / 2, view_->plotRect().center().y()); });
  view->addAction(tr("&Fit all rows"), QKeySequence(Qt::CTRL | Qt::Key_0), view_, &TimelineView::fitRows);
  arrows_ = view->addAction(tr("Message &arrows (when few are visible)"));
  arrows_->setCheckable(true);
  arrows_->setChecked(true);
  connect(arrows_, &QAction::toggled, view_, &TimelineView::setArrows);
  view->addAction(tr("&Statistics of the visible range"), QKeySequence(Qt::CTRL | Qt::Key_T), this,
                  &MainWindow::showRangeStatistics);
  visible_range_ = view->addAction(tr("Panel shows the &visible range"));
  visible_range_->setCheckable(true);
  connect(visible_range_, &QAction::toggled, this, [this](bool on) {
    if (on)
      analyzeVisibleRange();
    else {
      range_analysis_.reset();
      ++*range_generation_;
      updatePanel();
    }
  });
  rebuildRecentMenu();

  // Status bar: progress and cancel of a load.
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(260);
  progress_->hide();
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->hide();
  connect(cancel_, &QPushButton::clicked, this, [this] {
    loader_->cancel();
    compare_loader_->cancel();
  });
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  progress_timer_.setInterval(100);
  // The loads in progress, averaged.
  connect(&progress_timer_, &QTimer::timeout, this, [this] {
    double sum = 0;
    int loads = 0;
    for (const TraceLoader* l : {loader_, compare_loader_})
      if (l->busy()) {
        sum += l->progress();
        ++loads;
      }
    if (loads > 0) progress_->setValue(static_cast<int>(sum / loads * 1000));
  });
  range_timer_.setSingleShot(true);
  range_timer_.setInterval(400);
  connect(&range_timer_, &QTimer::timeout, this, &MainWindow::analyzeVisibleRange);

  connect(loader_, &TraceLoader::timelineOpened, this, &MainWindow::onTimelineOpened);
  view_->setProgressSource([this]() -> std::optional<double> {
    return loader_->busy() ? std::optional<double>(loader_->progress()) : std::nullopt;
  });
  connect(loader_, &TraceLoader::finished, this, &MainWindow::onLoaded);
  connect(compare_loader_, &TraceLoader::finished, this, &MainWindow::onCompareLoaded);
  resize(1400, 900);
}

MainWindow::~MainWindow() {
  // Analyses of a visible range stop at their next time window.
  ++*range_generation_;
  for (const QPointer<QThread>& worker : range_workers_)
    if (worker) worker->wait();
}

void MainWindow::chooseTrace() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a trace directory"),
                                                        session_ ? session_->dir : QString());
  if (!dir.isEmpty()) openTrace(dir);
}

void MainWindow::openTrace(const QString& dir) {
  statusBar()->showMessage(tr("Loading %1 ...").arg(dir));
  progress_->setValue(0);
  progress_->show();
  cancel_->show();
  progress_timer_.start();
  setWindowTitle(QStringLiteral("prof-gui - %1").arg(dir));
  loader_->load(dir);
}

void MainWindow::chooseComparison() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Compare with a trace directory"),
                                                        session_ ? session_->dir : QString());
  if (!dir.isEmpty()) compareWith(dir);
}

void MainWindow::compareWith(const QString& dir) {
  statusBar()->showMessage(tr("Loading %1 to compare with ...").arg(dir));
  progress_->show();
  cancel_->show();
  progress_timer_.start();
  compare_loader_->load(dir);
}

void MainWindow::loadEnded() {
  if (loader_->busy() || compare_loader_->busy()) return;
  progress_timer_.stop();
  progress_->hide();
  cancel_->hide();
}

void MainWindow::onCompareLoaded(std::shared_ptr<TraceSession> session, bool cancelled) {
  loadEnded();
  if (cancelled) {
    statusBar()->showMessage(tr("Loading %1 to compare with cancelled").arg(session->dir));
    return;
  }
  if (!session->analysis || !session->analysis->usable()) {
    // What was shown stays, the comparison before this one included.
    reportProblem(tr("Cannot compare with %1 (the view is unchanged):\n%2").arg(session->dir, session->problem_text()),
                  tr("Cannot compare"));
    return;
  }
  compare_session_ = session;
  applyComparison();
  const QString problem = session->problem_text();
  if (!problem.isEmpty()) reportProblem(problem);
}

void MainWindow::closeComparison() {
  compare_session_.reset();
  applyComparison();
}

void MainWindow::applyComparison() {
  const int kept = chosen_interval_;
  comparison_.reset();
  const bool a_usable = session_ && session_->analysis && session_->analysis->usable();
  if (compare_session_ && a_usable)
    comparison_ = TraceComparison::make(session_->dir, session_->analysis, compare_session_->dir,
                                        compare_session_->analysis);
  // The columns offered; the one chosen last kept where the new list has it,
  // else the one prof-analyze --compare sorts by.
  compare_columns_ = comparison_ ? comparison_->columns() : std::vector<ComparedColumn>{};
  int current = -1;
  for (size_t k = 0; k < compare_columns_.size(); ++k) {
    const ComparedColumn& c = compare_columns_[k];
    const bool chosen = compare_choice_ && c.characteristic == compare_choice_->characteristic &&
                        c.mean_per_rank == compare_choice_->mean_per_rank;
    const bool sort_key = !c.mean_per_rank &&
                          std::string_view(analysis::kMainCharacteristics[c.characteristic].key) == analysis::kCompareSortKey;
    if (chosen || (current < 0 && sort_key)) current = static_cast<int>(k);
    if (chosen) break;
  }
  {
    const QSignalBlocker block(compare_by_);
    compare_by_->clear();
    for (const ComparedColumn& c : compare_columns_) compare_by_->addItem(c.label());
    compare_by_->setCurrentIndex(current);
  }
  const ComparedColumn column = current >= 0 ? compare_columns_[static_cast<size_t>(current)] : ComparedColumn{};
  filtering_ = true;  // the reset below changes the tree's columns, not the selection
  model_->setComparison(comparison_, column);
  // The compared columns first after EXE_Count, where the window shows them.
  if (comparison_)
    for (int k = 0; k < 4; ++k)
      tree_->header()->moveSection(tree_->header()->visualIndex(IntervalTreeModel::CompareA + k),
                                   IntervalTreeModel::ExeCount + 1 + k);
  expandTree();
  filtering_ = false;
  panel_->setComparison(comparison_);
  // The tree's four more columns want room: 55% of the width, unless the user arranged it.
  if (comparison_ && !compare_pane_->isVisible() && !user_layout_) {
    const int total = top_->width();
    top_->setSizes({total * 11 / 20, total - total * 11 / 20});
  }
  compare_row_->setVisible(comparison_ != nullptr);
  compare_pane_->setVisible(comparison_ != nullptr);
  close_comparison_->setEnabled(compare_session_ != nullptr);
  run_differences_->setRowCount(0);
  only_in_b_->setRowCount(0);
  if (comparison_) {
    const analysis::Comparison& c = comparison_->comparison;
    QString title = tr("A = %1\nB = %2").arg(comparison_->a_dir, comparison_->b_dir);
    if (!c.same_ranks())
      title += tr("\nRanks differ (%1 and %2): totals and means per rank are compared, per-rank values are not")
                   .arg(c.processors_a)
                   .arg(c.processors_b);
    compare_title_->setText(title);
    auto cell = [](const QString& text) { return new QTableWidgetItem(text); };
    for (const analysis::RunDifference& d : c.differences) {
      const int row = run_differences_->rowCount();
      run_differences_->insertRow(row);
      run_differences_->setItem(row, 0, cell(QString::fromStdString(d.what)));
      for (const auto& [column, value] : {std::pair{1, &d.a}, std::pair{2, &d.b}}) {
        QTableWidgetItem* item = cell(value->empty() ? tr("(absent)") : QString::fromStdString(*value));
        item->setToolTip(item->text());
        run_differences_->setItem(row, column, item);
      }
    }
    if (c.differences.empty()) {
      run_differences_->insertRow(0);
      run_differences_->setItem(0, 0, cell(tr("(none recorded)")));
    }
    for (const analysis::ComparedInterval& e : c.only_b) {
      const int row = only_in_b_->rowCount();
      only_in_b_->insertRow(row);
      only_in_b_->setItem(row, 0, cell(interval_name(*e.b)));
      only_in_b_->setItem(row, 1, cell(QString::number(e.b->exe_count)));
      only_in_b_->setItem(row, 2, cell(seconds_text(e.b->main.lost_time)));
      only_in_b_->setItem(row, 3, cell(seconds_text(e.b->main.execution_time)));
    }
    setWindowTitle(QStringLiteral("prof-gui - %1 compared with %2").arg(comparison_->a_dir, comparison_->b_dir));
    statusBar()->showMessage(tr("Comparing %1 (A) with %2 (B): %3 intervals matched, %4 only in A, %5 only in B")
                                 .arg(comparison_->a_dir, comparison_->b_dir)
                                 .arg(c.matched.size())
                                 .arg(c.only_a.size())
                                 .arg(c.only_b.size()));
  } else if (session_) {
    setWindowTitle(QStringLiteral("prof-gui - %1").arg(session_->dir));
  }
  // (A row only in B, selected before, is gone or renumbered: the whole run instead.)
  if (kept >= 0) selectInterval(kept, false);
  else if (model_->analysis()) selectInterval(0, false);
  else updatePanel();
}

void MainWindow::expandTree() {
  if (model_->analysis() && model_->analysis()->intervals.size() <= 500)
    tree_->expandAll();
  else
    tree_->expandToDepth(1);
}

void MainWindow::waitLoaded() {
  loader_->wait_done();
  compare_loader_->wait_done();
  loader_->wait_done();
}

void MainWindow::setWriteWindowIndex(bool on) {
  write_index_ = on;
  loader_->setWriteWindowIndex(on);
  compare_loader_->setWriteWindowIndex(on);
}

void MainWindow::onTimelineOpened(std::shared_ptr<TraceSession> session) {
  view_->setTimeline(session->timeline);
  // Many ranks: the timeline takes 60% of the height (its rows all fit at first).
  if (!user_layout_ && session->timeline && session->timeline->world_size() > 8) {
    const int total = vertical_->height();
    vertical_->setSizes({total * 2 / 5, total - total * 2 / 5});
  }
}

void MainWindow::showEvent(QShowEvent* e) {
  QMainWindow::showEvent(e);
  if (!layout_read_) restoreLayout();
}

void MainWindow::closeEvent(QCloseEvent* e) {
  saveLayout();
  QMainWindow::closeEvent(e);
}

void MainWindow::restoreLayout() {
  layout_read_ = true;
  if (quiet_sink_) return;
  const QSettings settings("prof", "prof-gui");
  const QSize size = settings.value("layout/size").toSize();
  if (size.isValid()) resize(size);
  if (settings.contains("layout/vertical")) {
    vertical_->restoreState(settings.value("layout/vertical").toByteArray());
    top_->restoreState(settings.value("layout/top").toByteArray());
    user_layout_ = true;
  }
  if (settings.contains("layout/tree_columns"))
    tree_->header()->restoreState(settings.value("layout/tree_columns").toByteArray());
}

void MainWindow::saveLayout() const {
  if (quiet_sink_ || !layout_read_) return;
  QSettings settings("prof", "prof-gui");
  settings.setValue("layout/size", size());
  if (user_layout_) {  // else a trace's rank count keeps choosing the split
    settings.setValue("layout/vertical", vertical_->saveState());
    settings.setValue("layout/top", top_->saveState());
  }
  // (A comparison's columns are not the tree's own: its widths wait for a plain view.)
  if (!comparison_) settings.setValue("layout/tree_columns", tree_->header()->saveState());
}

void MainWindow::onLoaded(std::shared_ptr<TraceSession> session, bool cancelled) {
  loadEnded();
  if (cancelled) {
    // Back to the trace shown before (the view may have started drawing the new one).
    if (view_->timeline() != (session_ ? session_->timeline.get() : nullptr)) {
      view_->setTimeline(session_ ? session_->timeline : nullptr);
      onSelectionChanged();
    }
    statusBar()->showMessage(tr("Loading %1 cancelled").arg(session->dir));
    return;
  }
  session_ = session;
  fillFindCompletions();
  range_analysis_.reset();
  ++*range_generation_;  // a visible range's analysis of the previous trace is stale
  if (view_->timeline() != session->timeline.get()) view_->setTimeline(session->timeline);
  view_->setRunEnd(session->analysis ? session->analysis->run_end : std::vector<analysis::RankEnd>{});
  view_->followBuild();  // the build is over: show all of it (unless zoomed)
  model_->setAnalysis(session->analysis);
  chosen_interval_ = -1;
  if (compare_session_ || comparison_) applyComparison();  // this trace against the same B
  expandTree();
  if (model_->analysis()) {
    if (!quiet_sink_) addRecent(session->dir);  // (a screenshot is no visit of the user's)
    const auto& a = *model_->analysis();
    QString status = tr("%1: %2 ranks, %3 events, %4 intervals")
                         .arg(session->dir)
                         .arg(a.processors)
                         .arg(a.stats.events)
                         .arg(a.intervals.size());
    // A run that did not end cleanly says so where it is seen first (the
    // report's run_end: the calls in flight tell more in their tooltips).
    if (!a.complete) {
      int unfinished = 0;
      for (const analysis::RankEnd& end : a.run_end) unfinished += end.ended_by != "finalize";
      status += tr("; %1 of %2 ranks ended without MPI_Finalize").arg(unfinished).arg(a.run_end.size());
      for (const std::vector<int>& cycle : a.wait_cycles) {
        QStringList ranks;
        for (int rank : cycle) ranks << QString::number(rank);
        status += tr("; deadlock: ranks %1 wait for each other").arg(ranks.join(", "));
      }
    }
    statusBar()->showMessage(status);
    selectInterval(0, false);
    if (visible_range_->isChecked()) range_timer_.start();
  } else {
    panel_->clear(tr("Nothing usable in %1").arg(session->dir));
    statusBar()->showMessage(tr("%1: nothing usable").arg(session->dir));
  }
  const QString problem = session->problem_text();
  if (!problem.isEmpty()) reportProblem(problem);
}

void MainWindow::reportProblem(const QString& text, const QString& title) {
  last_problem_ = text;
  if (quiet_sink_) return quiet_sink_(text);
  // Window-modal and not blocking: the salvaged part stays usable behind it.
  auto* box = new QMessageBox(QMessageBox::Warning, title.isEmpty() ? tr("Damaged trace") : title, text,
                              QMessageBox::Ok, this);
  box->setObjectName("problemDialog");
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

int MainWindow::selectedInterval() const {
  return model_->intervalOf(proxy_->mapToSource(tree_->currentIndex()));
}

int MainWindow::selectedOnlyInBInterval() const {
  return model_->onlyInBIntervalOf(proxy_->mapToSource(tree_->currentIndex()));
}

bool MainWindow::selectIntervalId(int id) {
  const auto* a = model_->analysis();
  if (!a) return false;
  int best = -1;
  for (size_t i = 0; i < a->intervals.size(); ++i) {
    const auto& n = a->intervals[i];
    if (n.id && *n.id == static_cast<uint32_t>(id) &&
        (best < 0 || n.first_enter < a->intervals[static_cast<size_t>(best)].first_enter))
      best = static_cast<int>(i);
  }
  if (best >= 0) {
    selectInterval(best, true);
    return true;
  }
  // Comparing: an interval only in B has a row of its own (B's figures in the panel).
  if (!comparison_ || !comparison_->b) return false;
  const auto& b = comparison_->b->intervals;
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i].id && *b[i].id == static_cast<uint32_t>(id) && comparison_->a_of_b[i] < 0 &&
        (best < 0 || b[i].first_enter < b[static_cast<size_t>(best)].first_enter))
      best = static_cast<int>(i);
  if (best < 0) return false;
  if (!proxy_->mapFromSource(model_->indexOfBInterval(best)).isValid()) filter_->clear();
  const QModelIndex shown = proxy_->mapFromSource(model_->indexOfBInterval(best));
  right_tabs_->setCurrentWidget(panel_);
  tree_->setCurrentIndex(shown);
  tree_->scrollTo(shown);
  return true;
}

void MainWindow::selectInterval(int interval, bool zoom_to_first) {
  const QModelIndex index = proxy_->mapFromSource(model_->indexOfInterval(interval));
  if (!index.isValid()) {
    // Hidden by the filter: clear it so the selection can be shown.
    filter_->clear();
  }
  const QModelIndex shown = proxy_->mapFromSource(model_->indexOfInterval(interval));
  zoom_on_select_ = zoom_to_first;
  right_tabs_->setCurrentWidget(panel_);
  tree_->setCurrentIndex(shown);
  tree_->scrollTo(shown);
  zoom_on_select_ = true;
}

void MainWindow::onSelectionChanged() {
  if (filtering_) return;
  const int interval = selectedInterval();
  chosen_interval_ = interval;
  right_tabs_->setCurrentWidget(panel_);
  updatePanel();
  if (!session_ || interval < 0 || static_cast<size_t>(interval) >= session_->node_of_interval.size()) {
    view_->highlightNode(-1);
    return;
  }
  const int node = interval == 0 ? -1 : session_->node_of_interval[static_cast<size_t>(interval)];
  const auto first = view_->highlightNode(node);
  if (first && zoom_on_select_) {
    // The first execution with a margin of a tenth on each side.
    const double margin = std::max((first->end - first->start) * 0.1, 100.0);
    const TimelineView::ViewState before = view_->viewState();
    view_->navigateTo(first->start - margin, first->end + margin);
    view_->remember(before);
  }
}

void MainWindow::updatePanel() {
  const int interval = selectedInterval();
  const int only_in_b = selectedOnlyInBInterval();
  if (only_in_b >= 0 && comparison_) {
    // B's whole-run figures (B has no timeline, and no visible range of its own).
    panel_->showInterval(comparison_->b, only_in_b, tr("Whole run of B"));
    panel_->setMatrixSource(nullptr);
    return;
  }
  if (!session_ || !session_->analysis || interval < 0) {
    if (!session_) panel_->clear(tr("No trace loaded"));
    return;
  }
  if (visible_range_->isChecked() && range_analysis_) {
    const int match = matching_interval(*session_->analysis, interval, *range_analysis_);
    const auto& w = *range_analysis_->window;
    const QString scope = tr("Visible range %1 .. %2 s").arg(seconds_text(w.first), seconds_text(w.second));
    if (match >= 0)
      panel_->showInterval(range_analysis_, match, scope);
    else
      panel_->clear(tr("The interval has no execution in the visible range (%1)").arg(scope));
  } else {
    panel_->showInterval(session_->analysis, interval,
                         visible_range_->isChecked() ? tr("Visible range: analyzing...") : tr("Whole run"));
  }
  // The matrix of the same interval and range, from the timeline's messages
  // (none when the timeline lacks the trace or the interval).
  std::shared_ptr<const analysis::Timeline> timeline = session_->timeline;
  const int n = static_cast<size_t>(interval) < session_->node_of_interval.size()
                    ? session_->node_of_interval[static_cast<size_t>(interval)]
                    : -1;
  if (!timeline || (interval != 0 && n < 0)) {
    panel_->setMatrixSource(nullptr);
    return;
  }
  std::optional<uint32_t> node;
  if (interval != 0) node = static_cast<uint32_t>(n);
  double from = 0, to = std::numeric_limits<double>::infinity();
  if (visible_range_->isChecked()) {
    from = std::max(0.0, view_->from());
    to = view_->to();
  }
  panel_->setMatrixSource([timeline, node, from, to] { return timeline->message_matrix(from, to, node); });
}

void MainWindow::analyzeVisibleRange() {
  if (!session_ || !session_->analysis) return;
  const uint64_t generation = ++*range_generation_;
  analysis::Options options;
  options.window_from_s = std::max(0.0, view_->from()) / 1e9;
  options.window_to_s = view_->to() / 1e9;
  options.write_window_index = write_index_;
  options.cancelled = [current = range_generation_, generation] { return current->load() != generation; };
  const std::string dir = session_->dir.toStdString();
  QPointer<MainWindow> self(this);
  QThread* worker = QThread::create([self, generation, options, dir] {
    auto result = std::make_shared<const analysis::Analysis>(analysis::analyze(dir, options));
    QMetaObject::invokeMethod(qApp, [self, generation, result] {
      if (!self || self->range_generation_->load() != generation || !self->visible_range_->isChecked()) return;
      if (!result->usable() || !result->window) return;
      self->range_analysis_ = result;
      self->updatePanel();
    });
  });
  connect(worker, &QThread::finished, worker, &QObject::deleteLater);
  range_workers_.erase(std::remove_if(range_workers_.begin(), range_workers_.end(),
                                      [](const QPointer<QThread>& w) { return w.isNull(); }),
                       range_workers_.end());
  range_workers_.emplace_back(worker);
  worker->start();
  updatePanel();
}

QString MainWindow::functionNamed(const QString& text) const {
  const auto* timeline = view_->timeline();
  const QString wanted = text.trimmed();
  if (!timeline || wanted.isEmpty()) return {};
  // Names 1.. until the first unknown one (0 is "(unknown)").
  for (uint32_t name = 1; name < 65536; ++name) {
    const std::string_view f = timeline->function(name);
    if (f == "(unknown)") break;
    const QString candidate = QString::fromUtf8(f.data(), static_cast<qsizetype>(f.size()));
    if (candidate.compare(wanted, Qt::CaseInsensitive) == 0) return candidate;
  }
  return {};
}

QStringList MainWindow::functionsMatching(const QString& text) const {
  const auto* timeline = view_->timeline();
  const QString wanted = text.trimmed();
  QStringList found;
  if (!timeline || wanted.isEmpty()) return found;
  const QString exact = functionNamed(wanted);
  if (!exact.isEmpty()) return {exact};
  for (uint32_t name = 1; name < 65536; ++name) {
    const std::string_view f = timeline->function(name);
    if (f == "(unknown)") break;
    const QString candidate = QString::fromUtf8(f.data(), static_cast<qsizetype>(f.size()));
    if (candidate.contains(wanted, Qt::CaseInsensitive)) found << candidate;
  }
  return found;
}

namespace {

// The find box's prefixes that choose what a text finds.
const QString kIntervalPrefix = QStringLiteral("interval ");
const QString kSitePrefix = QStringLiteral("calls from ");

}  // namespace

void MainWindow::fillFindCompletions() {
  // The trace's MPI function names, then its intervals and call sites as the
  // find box takes them (with their prefixes).
  QStringList names;
  const auto* timeline = session_ ? session_->timeline.get() : nullptr;
  if (timeline)
    for (uint32_t name = 1; name < 65536; ++name) {
      const std::string_view f = timeline->function(name);
      if (f == "(unknown)") break;
      if (f.rfind("MPI_", 0) == 0) names << QString::fromUtf8(f.data(), static_cast<qsizetype>(f.size()));
    }
  names.sort();
  QStringList others;
  if (session_ && session_->analysis)
    for (size_t i = 1; i < session_->analysis->intervals.size(); ++i)
      others << kIntervalPrefix + interval_name(session_->analysis->intervals[i]);
  if (timeline)
    for (uint32_t site = 1; site < timeline->site_count(); ++site)
      if (!timeline->site(site).empty()) others << kSitePrefix + QString::fromStdString(timeline->site(site));
  others.removeDuplicates();
  others.sort();
  static_cast<QStringListModel*>(find_->completer()->model())->setStringList(names + others);
}

std::vector<int> MainWindow::intervalsMatching(const QString& text) const {
  std::vector<int> found;
  const auto* a = model_->analysis();
  const QString wanted = text.trimmed();
  if (!a || wanted.isEmpty()) return found;
  bool is_id = false;
  const uint id = wanted.toUInt(&is_id);
  // An id; else the tree's names equal to the text; else those containing it.
  for (int pass = is_id ? 0 : 1; pass < (is_id ? 1 : 3) && found.empty(); ++pass)
    for (size_t i = 1; i < a->intervals.size(); ++i) {
      const auto& n = a->intervals[i];
      const QString name = interval_name(n);
      const bool match = pass == 0   ? n.id && *n.id == id
                         : pass == 1 ? name.compare(wanted, Qt::CaseInsensitive) == 0
                                     : name.contains(wanted, Qt::CaseInsensitive);
      if (match) found.push_back(static_cast<int>(i));
    }
  return found;
}

std::vector<uint32_t> MainWindow::sitesMatching(const QString& text) const {
  std::vector<uint32_t> found;
  const auto* timeline = view_->timeline();
  const QString wanted = text.trimmed();
  if (!timeline || wanted.isEmpty()) return found;
  // The sites labelled as the text; else those whose label contains it.
  for (int pass = 0; pass < 2 && found.empty(); ++pass)
    for (uint32_t site = 1; site < timeline->site_count(); ++site) {
      const QString label = QString::fromStdString(timeline->site(site));
      if (label.isEmpty()) continue;
      if (pass == 0 ? label.compare(wanted, Qt::CaseInsensitive) == 0 : label.contains(wanted, Qt::CaseInsensitive))
        found.push_back(site);
    }
  return found;
}

MainWindow::FindTarget MainWindow::findTarget(const QString& text) const {
  FindTarget target;
  const QString wanted = text.trimmed();
  if (wanted.startsWith(kIntervalPrefix, Qt::CaseInsensitive)) {
    target.intervals = intervalsMatching(wanted.mid(kIntervalPrefix.size()));
  } else if (wanted.startsWith(kSitePrefix, Qt::CaseInsensitive)) {
    target.sites = sitesMatching(wanted.mid(kSitePrefix.size()));
  } else {
    target.functions = functionsMatching(wanted);
    if (target.functions.isEmpty()) target.intervals = intervalsMatching(wanted);
    if (target.functions.isEmpty() && target.intervals.empty()) target.sites = sitesMatching(wanted);
  }
  target.kind = !target.functions.isEmpty() ? FindTarget::Functions
                : !target.intervals.empty() ? FindTarget::Intervals
                : !target.sites.empty()     ? FindTarget::Sites
                                            : FindTarget::Nothing;
  return target;
}

bool MainWindow::findNext(bool forward) {
  const QString text = find_->text().trimmed();
  const FindTarget target = findTarget(text);
  if (target.kind == FindTarget::Nothing) {
    statusBar()->showMessage(text.isEmpty()
                                 ? tr("Find: type the name of an MPI function, an interval or a call site (Ctrl+F)")
                                 : tr("Find: the trace has no MPI function, interval or call site named '%1'").arg(text));
    return false;
  }
  const double min_duration = find_min_us_->value() * 1e3;
  auto wrapped = [&] {
    return view_->wrappedAround()
               ? (forward ? tr("(wrapped around to the start) ") : tr("(wrapped around to the end) "))
               : QString();
  };
  if (target.kind == FindTarget::Intervals) {
    std::vector<uint32_t> nodes;
    for (int interval : target.intervals)
      if (static_cast<size_t>(interval) < session_->node_of_interval.size() &&
          session_->node_of_interval[static_cast<size_t>(interval)] >= 0)
        nodes.push_back(static_cast<uint32_t>(session_->node_of_interval[static_cast<size_t>(interval)]));
    const auto execution = view_->findExecution(nodes, forward, min_duration);
    if (!execution) {
      statusBar()->showMessage(
          tr("Find: no execution of '%1' in the shown rows that passes the filters").arg(text));
      return false;
    }
    const QString message = wrapped();  // (selecting the interval runs no find)
    const int interval = session_->interval_of_node[execution->node];
    selectInterval(interval, false);
    const auto& row = view_->timeline()->rows()[execution->row];
    statusBar()->showMessage(message + tr("interval %1: execution on rank %2%3 from %4 s, %5")
                                           .arg(interval_name(session_->analysis->intervals[static_cast<size_t>(interval)]))
                                           .arg(row.rank)
                                           .arg(row.stream ? tr(" thread %1").arg(row.stream) : QString())
                                           .arg(QString::number(execution->start / 1e9, 'f', 9))
                                           .arg(duration_text(execution->end - execution->start)));
    return true;
  }
  TimelineView::FindFilter filter;
  filter.min_duration = min_duration;
  filter.peer = find_peer_->value();
  std::vector<std::string> names;
  for (const QString& f : target.functions) names.push_back(f.toStdString());
  if (target.kind == FindTarget::Sites) {
    names = {""};  // every call, kept by its site
    filter.sites = target.sites;
  }
  const auto call = view_->findCall(names, forward, filter);
  const QString what = target.kind == FindTarget::Sites ? tr("from '%1'").arg(text)
                       : target.functions.size() == 1  ? tr("of %1").arg(target.functions[0])
                                                       : tr("of '%1'").arg(text);
  if (!call) {
    statusBar()->showMessage(tr("Find: no call %1 in the shown rows that passes the filters").arg(what));
    return false;
  }
  statusBar()->showMessage(wrapped() + view_->describeCall(*call).join(", "));
  return true;
}

void MainWindow::showRangeStatistics() {
  if (!view_->timeline()) return;
  range_statistics_->showStatistics(range_statistics(*view_->timeline(), view_->shownRows(), std::max(0.0, view_->from()),
                                                     view_->to(), 200000, static_cast<uint32_t>(view_->plotRect().width())));
  right_tabs_->setCurrentWidget(range_statistics_);
}

void MainWindow::addRecent(const QString& dir) {
  const QString path = QFileInfo(dir).absoluteFilePath();
  QSettings settings("prof", "prof-gui");
  QStringList list = settings.value("recent").toStringList();
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > kMaxRecent) list.removeLast();
  settings.setValue("recent", list);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList list = QSettings("prof", "prof-gui").value("recent").toStringList();
  for (const QString& dir : list)
    recent_menu_->addAction(dir, this, [this, dir] { openTrace(dir); });
  recent_menu_->setEnabled(!list.isEmpty());
}

void MainWindow::exportTo(const QString& title, const QString& filter, const QString& suffix,
                          bool (MainWindow::*write)(const QString&)) {
  QString path = QFileDialog::getSaveFileName(this, title, QString(), filter);
  if (path.isEmpty()) return;
  if (!path.endsWith(suffix, Qt::CaseInsensitive)) path += suffix;
  if ((this->*write)(path)) statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
}

void MainWindow::exportFailed(const QString& text) {
  last_problem_ = text;
  if (quiet_sink_) return quiet_sink_(text);
  auto* box = new QMessageBox(QMessageBox::Warning, tr("Export failed"), text, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

bool MainWindow::exportViewPng(const QString& path) {
  if (view_->exportPng(path)) return true;
  exportFailed(tr("Cannot write the PNG file %1").arg(path));
  return false;
}

bool MainWindow::exportViewSvg(const QString& path) {
  if (view_->exportSvg(path)) return true;
  exportFailed(tr("Cannot write the SVG file %1").arg(path));
  return false;
}

bool MainWindow::exportTableCsv(const QString& path) {
  const QTableView* table = panel_->currentTableView();
  if (!table || !table->model()) {
    exportFailed(tr("No table to export: the panel shows none"));
    return false;
  }
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly) || file.write(table_csv(*table->model()).toUtf8()) < 0 || !file.commit()) {
    exportFailed(tr("Cannot write the CSV file %1: %2").arg(path, file.errorString()));
    return false;
  }
  return true;
}

}  // namespace prof::gui
