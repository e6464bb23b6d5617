#include "characteristics_panel.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <sstream>

#include "prof/analysis/characteristics.h"
#include "prof/analysis/report.h"
#include "function_chart.h"
#include "message_matrix_view.h"
#include "trace_session.h"

namespace prof::gui {
namespace {

QStandardItem* number_item(double v, bool integer = false) {
  auto* item = new QStandardItem(integer ? QString::number(static_cast<qulonglong>(v)) : seconds_text(v));
  item->setData(v, CharacteristicsPanel::NumberRole);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  item->setEditable(false);
  return item;
}
// Tmid as the report prints it (truncated, not rounded); sorts by the mean.
QStandardItem* tmid_item(double mean) {
  QStandardItem* item = number_item(mean);
  item->setText(QString::fromStdString(analysis::tmid_text(mean)));
  return item;
}
QStandardItem* text_item(const QString& s, const QString& key = {}) {
  auto* item = new QStandardItem(s);
  item->setData(s, CharacteristicsPanel::NumberRole);
  if (!key.isEmpty()) item->setData(key, CharacteristicsPanel::KeyRole);
  item->setEditable(false);
  return item;
}
void set_header(QStandardItemModel* m, const QStringList& labels, const QStringList& keys) {
  m->setColumnCount(static_cast<int>(labels.size()));
  for (int c = 0; c < labels.size(); ++c) {
    m->setHeaderData(c, Qt::Horizontal, labels[c]);
    m->setHeaderData(c, Qt::Horizontal, c < keys.size() ? QVariant(keys[c]) : QVariant(), CharacteristicsPanel::KeyRole);
  }
}

}  // namespace

CharacteristicsPanel::CharacteristicsPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* head = new QHBoxLayout;
  title_ = new QLabel(this);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  title_->setWordWrap(true);
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  auto* copy = new QPushButton(tr("Copy as report text"), this);
  copy->setObjectName("copyReport");
  connect(copy, &QPushButton::clicked, this, &CharacteristicsPanel::copyReportText);
  head->addWidget(title_, 1);
  head->addWidget(copy);
  layout->addLayout(head);
  scope_ = new QLabel(this);
  layout->addWidget(scope_);
  tabs_ = new QTabWidget(this);
  layout->addWidget(tabs_, 1);

  main_ = new QStandardItemModel(this);
  comparative_ = new QStandardItemModel(this);
  per_rank_ = new QStandardItemModel(this);
  functions_ = new QStandardItemModel(this);
  wait_states_ = new QStandardItemModel(this);
  waited_for_ = new QStandardItemModel(this);
  caused_by_ = new QStandardItemModel(this);
  // (Not "Value (s)": the column holds an efficiency and a count as well.)
  set_header(main_, {tr("Main characteristic"), tr("Value")}, {});
  set_header(comparative_, {tr("Comparative"), "Tmin", "Nproc", "Tmax", "Nproc", "Tmid"},
             {"", "min", "min_rank", "max", "max_rank", "mean"});
  QStringList rank_columns, rank_keys;
  for (const analysis::RankCharacteristic& c : analysis::kRankCharacteristics) {
    rank_columns << c.column;
    rank_keys << c.key;
  }
  set_header(per_rank_, rank_columns, rank_keys);
  set_header(functions_, {tr("Function"), tr("Calls"), tr("Time (s)"), tr("Bytes")},
             {"name", "calls", "time", "bytes"});
  set_header(wait_states_, {tr("Wait state"), tr("Total (s)"), tr("Max (s)"), "Nproc"},
             {"", "total", "max", "max_rank"});
  set_header(waited_for_, {tr("Waited for (rank)"), tr("Time (s)"), tr("Uncertain (s)")},
             {"rank", "seconds", "uncertain_s"});
  set_header(caused_by_, {tr("Caused by (interval)"), tr("Rank"), tr("Time (s)")}, {"interval", "rank", "seconds"});

  // The main and comparative tables side by side, then one tab per long table.
  auto* page = new QWidget(tabs_);
  auto* row = main_row_ = new QHBoxLayout(page);
  row->setContentsMargins(0, 0, 0, 0);
  for (QStandardItemModel* m : {main_, comparative_}) {
    auto* view = new QTableView(page);
    view->setModel(m);
    view->verticalHeader()->hide();
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 4);
    view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    row->addWidget(view, m == main_ ? 2 : 3);
    views_.push_back(view);
  }
  tabs_->addTab(page, tr("Characteristics"));
  // The wait states by kind beside the partners waited for and the causes,
  // the time on the critical path below.
  auto* waits_page = new QWidget(tabs_);
  auto* waits_column = new QVBoxLayout(waits_page);
  waits_column->setContentsMargins(0, 0, 0, 0);
  auto* waits_row = new QHBoxLayout;
  waits_column->addLayout(waits_row, 1);
  critical_path_ = new QLabel(waits_page);
  critical_path_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  waits_column->addWidget(critical_path_);
  for (QStandardItemModel* m : {wait_states_, waited_for_, caused_by_}) {
    auto* view = new QTableView(waits_page);
    view->setModel(m);
    view->verticalHeader()->hide();
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 4);
    view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    waits_row->addWidget(view, m == wait_states_ || m == caused_by_ ? 3 : 2);
    views_.push_back(view);
  }
  // Ranks in their order, functions by time, longest first (a header click
  // sorts otherwise).
  per_rank_view_ = addTable(per_rank_, tr("Per rank"));
  per_rank_view_->sortByColumn(0, Qt::AscendingOrder);
  functions_view_ = addTable(functions_, tr("MPI functions"));
  functions_view_->sortByColumn(2, Qt::DescendingOrder);
  auto* chart_scroll = new QScrollArea(tabs_);
  chart_scroll->setWidgetResizable(true);
  function_chart_ = new FunctionChart(chart_scroll);
  chart_scroll->setWidget(function_chart_);
  tabs_->addTab(chart_scroll, tr("Function chart"));
  // Messages: the quantity to colour by above the matrix.
  matrix_page_ = new QWidget(tabs_);
  auto* matrix_layout = new QVBoxLayout(matrix_page_);
  matrix_layout->setContentsMargins(0, 0, 0, 0);
  auto* quantity = new QComboBox(matrix_page_);
  quantity->setObjectName("matrixQuantity");
  quantity->addItems({tr("Bytes"), tr("Messages"), tr("Receive time")});
  matrix_layout->addWidget(quantity);
  matrix_ = new MessageMatrixView(matrix_page_);
  matrix_layout->addWidget(matrix_, 1);
  connect(quantity, &QComboBox::currentIndexChanged, this,
          [this](int i) { matrix_->setQuantity(static_cast<MessageMatrixView::Quantity>(i)); });
  connect(matrix_, &MessageMatrixView::messageChosen, this, &CharacteristicsPanel::messageChosen);
  tabs_->addTab(matrix_page_, tr("Messages"));
  connect(tabs_, &QTabWidget::currentChanged, this, [this] { refreshMatrix(); });
  tabs_->addTab(waits_page, tr("Wait states"));
  clear(tr("No trace loaded"));
}

QTableView* CharacteristicsPanel::addTable(QStandardItemModel* model, const QString& tab) {
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model);
  proxy->setSortRole(NumberRole);
  auto* view = new QTableView(tabs_);
  view->setModel(proxy);
  view->setSortingEnabled(true);
  view->verticalHeader()->hide();
  view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 4);
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  tabs_->addTab(view, tab);
  views_.push_back(view);
  return view;
}

QTableView* CharacteristicsPanel::currentTableView() const {
  const QWidget* page = tabs_->currentWidget();
  QTableView* first = nullptr;
  for (QTableView* view : views_) {
    if (!page || (view != page && !page->isAncestorOf(view))) continue;
    if (view->hasFocus()) return view;
    if (!first) first = view;
  }
  return first;
}

void CharacteristicsPanel::clear(const QString& message) {
  analysis_.reset();
  interval_ = -1;
  title_->setText(message);
  scope_->clear();
  for (QStandardItemModel* m : {main_, comparative_, per_rank_, functions_, wait_states_, waited_for_, caused_by_})
    m->setRowCount(0);
  function_chart_->setFunctions({});
  setMatrixSource(nullptr);
  critical_path_s_.reset();
  critical_path_->clear();
}

void CharacteristicsPanel::setMatrixSource(std::function<analysis::TimelineMessageMatrix()> source) {
  matrix_source_ = std::move(source);
  matrix_stale_ = true;
  ++matrix_generation_;  // an answer in flight is for the old source
  refreshMatrix();
}

void CharacteristicsPanel::showMessagesTab() { tabs_->setCurrentWidget(matrix_page_); }

// Every message of the range is read: done only for the tab on show.
void CharacteristicsPanel::refreshMatrix() {
  if (!matrix_stale_ || tabs_->currentWidget() != matrix_page_) return;
  matrix_stale_ = false;
  const uint64_t generation = ++matrix_generation_;
  if (!matrix_source_) return matrix_->setMatrix({});
  matrix_->setComputing();
  // The source holds the timeline (shared) and the range by value: the worker
  // needs nothing of the panel's but the queued call back, which Qt drops
  // if the panel is gone.
  QThread* worker = QThread::create([this, source = matrix_source_, generation] {
    auto matrix = std::make_shared<analysis::TimelineMessageMatrix>(source());
    QMetaObject::invokeMethod(this, [this, matrix, generation] {
      if (generation == matrix_generation_) matrix_->setMatrix(std::move(*matrix));
    }, Qt::QueuedConnection);
  });
  connect(worker, &QThread::finished, worker, &QObject::deleteLater);
  std::erase_if(matrix_workers_, [](const QPointer<QThread>& t) { return t.isNull(); });
  matrix_workers_.emplace_back(worker);
  worker->start();
}

bool CharacteristicsPanel::matrixComputing() const { return matrix_->computing(); }

CharacteristicsPanel::~CharacteristicsPanel() {
  for (const QPointer<QThread>& t : matrix_workers_)
    if (t) t->wait();
}

QString CharacteristicsPanel::title() const { return title_->text(); }
QString CharacteristicsPanel::scope() const { return scope_->text(); }

void CharacteristicsPanel::showInterval(std::shared_ptr<const analysis::Analysis> a, int interval,
                                        const QString& scope) {
  if (!a || interval < 0 || static_cast<size_t>(interval) >= a->intervals.size()) {
    clear(tr("No interval selected"));
    return;
  }
  analysis_ = std::move(a);
  interval_ = interval;
  const auto& n = analysis_->intervals[static_cast<size_t>(interval)];
  title_->setText(QString::fromStdString(analysis::interval_title(n)));
  scope_->setText(scope);

  main_->setRowCount(0);
  const auto& m = n.main;
  const bool comparing = comparison_ && comparison_->a == analysis_;
  // Comparing, the main table has five columns: it gets the larger share.
  main_row_->setStretch(0, comparing ? 3 : 2);
  main_row_->setStretch(1, comparing ? 2 : 3);
  if (!comparing) {
    set_header(main_, {tr("Main characteristic"), tr("Value")}, {});
    for (const analysis::MainCharacteristic& c : analysis::kMainCharacteristics)
      main_->appendRow({text_item(QString(c.label) + c.text_suffix, c.key), number_item(c.value(m), c.integer)});
  } else {
    set_header(main_, {tr("Main characteristic"), "A", "B", "B - A", "B / A"}, {"", "a", "b", "diff", "ratio"});
    const analysis::IntervalNode* b = comparison_->matched(interval);
    if (!b) scope_->setText(scope + tr("; only in A (B has no interval matching it)"));
    // Every characteristic of A and B; the compared ones with B - A and B / A,
    // then (rank counts differing) the summed ones' means per rank.
    auto add_row = [&](const analysis::MainCharacteristic& c, ComparedColumn column) {
      const double x = column.value(n);
      QList<QStandardItem*> row{
          text_item(column.mean_per_rank ? column.label() : QString(c.label) + c.text_suffix,
                    column.mean_per_rank ? QString(c.key) + "/mean" : QString(c.key)),
          number_item(x, c.integer)};
      if (!b) {
        row << text_item(tr("only in A"));
      } else {
        const double y = column.value(*b);
        row << number_item(y, c.integer);
        if (c.compared) {
          QStandardItem* difference = number_item(y - x, c.integer);
          difference->setText(difference_text(y - x));
          QStandardItem* ratio = text_item(ratio_text(x, y));
          ratio->setData(x != 0 ? QVariant(y / x) : QVariant(), NumberRole);
          ratio->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
          row << difference << ratio;
        }
      }
      main_->appendRow(row);
    };
    for (int k = 0; k < static_cast<int>(std::size(analysis::kMainCharacteristics)); ++k)
      add_row(analysis::kMainCharacteristics[k], {k, false});
    for (const ComparedColumn& column : comparison_->columns())
      if (column.mean_per_rank) add_row(analysis::kMainCharacteristics[column.characteristic], column);
  }

  comparative_->setRowCount(0);
  for (const analysis::ComparativeCharacteristic& c : analysis::kComparativeCharacteristics) {
    const auto& f = n.comparative[static_cast<size_t>(c.which)];
    comparative_->appendRow({text_item(c.label, c.key),
                             number_item(f.min), number_item(f.min_rank, true), number_item(f.max),
                             number_item(f.max_rank, true), tmid_item(f.mean)});
  }

  per_rank_->setRowCount(0);
  for (const auto& f : n.per_rank) {
    QList<QStandardItem*> items;
    for (const analysis::RankCharacteristic& c : analysis::kRankCharacteristics)
      items << number_item(c.value(f), c.integer);
    per_rank_->appendRow(items);
  }

  functions_->setRowCount(0);
  for (const auto& f : n.functions)
    functions_->appendRow({text_item(QString::fromStdString(f.name)), number_item(static_cast<double>(f.calls), true),
                           number_item(f.time), number_item(static_cast<double>(f.bytes), true)});
  function_chart_->setFunctions(n.functions);
  wait_states_->setRowCount(0);
  for (int k = 0; k < analysis::kWaitKindCount; ++k) {
    const auto kind = static_cast<size_t>(k);
    double largest = 0;
    int largest_rank = n.per_rank.empty() ? 0 : n.per_rank.front().rank;
    for (const auto& f : n.per_rank)
      if (f.waits[kind] > largest) {
        largest = f.waits[kind];
        largest_rank = f.rank;
      }
    wait_states_->appendRow({text_item(analysis::kWaitKindLabels[k], analysis::kWaitKindKeys[k]),
                             number_item(n.waits[kind]), number_item(largest), number_item(largest_rank, true)});
  }
  waited_for_->setRowCount(0);
  for (size_t p = 0; p < n.waited_for.size() && p < analysis::kTopPartners; ++p)
    waited_for_->appendRow({number_item(n.waited_for[p].rank, true), number_item(n.waited_for[p].seconds),
                            number_item(n.waited_for[p].uncertain_seconds)});
  caused_by_->setRowCount(0);
  critical_path_s_.reset();
  if (analysis_->delay_known) {
    for (size_t c = 0; c < n.caused_by.size() && c < analysis::kTopCauses; ++c) {
      const analysis::CauseShare& cause = n.caused_by[c];
      const auto& by = analysis_->intervals[static_cast<size_t>(cause.interval)];
      const QString name = by.id ? tr("id %1 at %2:%3")
                                       .arg(static_cast<int>(*by.id))
                                       .arg(QString::fromStdString(by.source_label()))
                                       .arg(by.line)
                                 : tr("the whole run");
      QStandardItem* interval_item = text_item(name);
      interval_item->setData(cause.interval, NumberRole);
      caused_by_->appendRow({interval_item, number_item(cause.rank, true), number_item(cause.seconds)});
    }
    critical_path_s_ = n.critical_path_s;
    critical_path_->setText(tr("Time on the run's critical path: %1 s of %2 s")
                                .arg(seconds_text(n.critical_path_s), seconds_text(analysis_->run_span_s)));
  } else {
    critical_path_->setText(tr("Root causes and the critical path are computed for the whole run only."));
  }
  for (QTableView* view : views_) view->resizeColumnsToContents();
}

QString CharacteristicsPanel::reportText() const {
  if (!analysis_ || interval_ < 0) return {};
  // A one-interval analysis for the report writer: the node, the window, and
  // how the run ended (printed after the whole run's block only).
  analysis::Analysis one;
  one.window = analysis_->window;
  one.intervals.push_back(analysis_->intervals[static_cast<size_t>(interval_)]);
  one.complete = interval_ != 0 || analysis_->complete;
  one.run_end = analysis_->run_end;
  std::ostringstream out;
  analysis::TextOptions options;
  options.functions = true;
  analysis::write_text_report(one, out, options);
  return QString::fromStdString(out.str());
}

void CharacteristicsPanel::copyReportText() const { QApplication::clipboard()->setText(reportText()); }

}  // namespace prof::gui
