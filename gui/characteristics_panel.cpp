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
#include <map>
#include <sstream>
#include <string_view>

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
QStandardItem* text_item(const QString& s, const QString& key = {}) {
  auto* item = new QStandardItem(s);
  item->setData(s, CharacteristicsPanel::NumberRole);
  if (!key.isEmpty()) item->setData(key, CharacteristicsPanel::KeyRole);
  item->setEditable(false);
  return item;
}
// A cell of the run that lacks the interval (or a difference without both).
QStandardItem* absent_item() {
  auto* item = new QStandardItem;
  item->setEditable(false);
  return item;
}
// B - A with its sign; counts as whole numbers.
QStandardItem* difference_item(double d, bool integer) {
  QStandardItem* item = number_item(d, integer);
  item->setText(integer ? QString::asprintf("%+lld", static_cast<long long>(d)) : difference_text(d));
  return item;
}
// B / A as prof-analyze --compare writes it; sorts by the quotient.
QStandardItem* ratio_item(double a, double b) {
  QStandardItem* item = text_item(ratio_text(a, b));
  item->setData(a != 0 ? QVariant(b / a) : QVariant(), CharacteristicsPanel::NumberRole);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
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
  set_header(comparative_, {tr("Comparative"), "Tmin", "Nproc", "Tmax", "Nproc", "Tmid"},
             {"", "min", "min_rank", "max", "max_rank", "mean"});
  // A single run's headers, before the views sort by their columns (clear()
  // empties the rows; the chart does not exist yet).
  const analysis::IntervalNode none;
  showMain(none);
  showPerRank(none);
  showFunctions(none);
  showWaitStates(none);
  setPartnerHeaders({});

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
  per_rank_view_ = addTable(per_rank_, tr("Per rank"), &per_rank_note_);
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
  matrix_note_ = new QLabel(tr("Messages of A: B is compared by its analysis, its messages are not read."), matrix_page_);
  matrix_note_->setWordWrap(true);
  matrix_note_->hide();
  matrix_layout->addWidget(matrix_note_);
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

QTableView* CharacteristicsPanel::addTable(QStandardItemModel* model, const QString& tab, QLabel** note) {
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model);
  proxy->setSortRole(NumberRole);
  // With a note: a page of the note (hidden until there is one) above the table.
  QWidget* page = nullptr;
  if (note) {
    page = new QWidget(tabs_);
    auto* column = new QVBoxLayout(page);
    column->setContentsMargins(0, 0, 0, 0);
    *note = new QLabel(page);
    (*note)->setWordWrap(true);
    (*note)->hide();
    column->addWidget(*note);
  }
  auto* view = new QTableView(page ? page : tabs_);
  view->setModel(proxy);
  view->setSortingEnabled(true);
  view->verticalHeader()->hide();
  view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 4);
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  if (page) {
    page->layout()->addWidget(view);
    tabs_->addTab(page, tab);
  } else {
    tabs_->addTab(view, tab);
  }
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

  // Comparing: the interval in A and in B (one of them absent when only one
  // run has it); a visible range's analysis is shown as without a comparison.
  const bool comparing = comparison_ && (comparison_->a == analysis_ || comparison_->b == analysis_);
  const analysis::IntervalNode* in_a = nullptr;
  const analysis::IntervalNode* in_b = nullptr;
  if (comparing) {
    const bool shows_a = comparison_->a == analysis_;
    in_a = shows_a ? &n : comparison_->matchedInA(interval);
    in_b = shows_a ? comparison_->matched(interval) : &n;
    if (!in_b) scope_->setText(scope + tr("; only in A (B has no interval matching it)"));
    if (!in_a) scope_->setText(scope + tr("; only in B (A has no interval matching it)"));
  }
  if (comparing != compared_layout_) setComparedLayout(comparing);
  if (comparing) {
    showCompared(in_a, in_b);
  } else {
    showMain(n);
    showComparative({{&n, QString()}});
    showPerRank(n);
    showFunctions(n);
    showWaitStates(n);
  }
  // The partners waited for, the causes and the critical path: of the run
  // shown (A, or B for an interval only in B), as compare.h does not pair them.
  const QString run = !comparing ? QString() : comparison_->a == analysis_ ? tr(" in A") : tr(" in B");
  setPartnerHeaders(run);
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
    critical_path_->setText(tr("Time on the run's critical path%1: %2 s of %3 s")
                                .arg(run, seconds_text(n.critical_path_s), seconds_text(analysis_->run_span_s)));
  } else {
    critical_path_->setText(tr("Root causes and the critical path are computed for the whole run only."));
  }
  for (QTableView* view : views_) view->resizeColumnsToContents();
}

void CharacteristicsPanel::setComparedLayout(bool compared) {
  compared_layout_ = compared;
  // Comparing, the main table has five columns: it gets the larger share.
  main_row_->setStretch(0, compared ? 3 : 2);
  main_row_->setStretch(1, compared ? 2 : 3);
  // Compared functions come in compare.h's order (the largest change first)
  // until a header is clicked; a single run's, by time, longest first.
  if (compared)
    functions_view_->sortByColumn(-1, Qt::AscendingOrder);
  else
    functions_view_->sortByColumn(2, Qt::DescendingOrder);
  per_rank_view_->sortByColumn(compared ? -1 : 0, Qt::AscendingOrder);
  matrix_note_->setVisible(compared);
  if (!compared) per_rank_note_->hide();
}

void CharacteristicsPanel::setPartnerHeaders(const QString& run) {
  set_header(waited_for_, {tr("Waited for%1 (rank)").arg(run), tr("Time (s)"), tr("Uncertain (s)")},
             {"rank", "seconds", "uncertain_s"});
  set_header(caused_by_, {tr("Caused by%1 (interval)").arg(run), tr("Rank"), tr("Time (s)")},
             {"interval", "rank", "seconds"});
}

void CharacteristicsPanel::showMain(const analysis::IntervalNode& n) {
  main_->setRowCount(0);
  // (Not "Value (s)": the column holds an efficiency and a count as well.)
  set_header(main_, {tr("Main characteristic"), tr("Value")}, {});
  for (const analysis::MainCharacteristic& c : analysis::kMainCharacteristics)
    main_->appendRow({text_item(QString(c.label) + c.text_suffix, c.key), number_item(c.value(n.main), c.integer)});
}

void CharacteristicsPanel::showComparative(const std::vector<std::pair<const analysis::IntervalNode*, QString>>& runs) {
  comparative_->setRowCount(0);
  for (const analysis::ComparativeCharacteristic& c : analysis::kComparativeCharacteristics)
    for (const auto& [node, run] : runs) {
      const auto& f = node->comparative[static_cast<size_t>(c.which)];
      const QString label = run.isEmpty() ? QString(c.label) : QStringLiteral("%1 (%2)").arg(c.label, run);
      const QString key = run.isEmpty() ? QString(c.key) : QStringLiteral("%1/%2").arg(c.key, run.toLower());
      comparative_->appendRow({text_item(label, key), number_item(f.min), number_item(f.min_rank, true),
                               number_item(f.max), number_item(f.max_rank, true), number_item(f.mean)});
    }
}

void CharacteristicsPanel::showPerRank(const analysis::IntervalNode& n) {
  QStringList labels, keys;
  for (const analysis::RankCharacteristic& c : analysis::kRankCharacteristics) {
    labels << c.column;
    keys << c.key;
  }
  set_header(per_rank_, labels, keys);
  per_rank_->setRowCount(0);
  for (const auto& f : n.per_rank) {
    QList<QStandardItem*> items;
    for (const analysis::RankCharacteristic& c : analysis::kRankCharacteristics)
      items << number_item(c.value(f), c.integer);
    per_rank_->appendRow(items);
  }
}

void CharacteristicsPanel::showFunctions(const analysis::IntervalNode& n) {
  set_header(functions_, {tr("Function"), tr("Calls"), tr("Time (s)"), tr("Bytes")}, {"name", "calls", "time", "bytes"});
  functions_->setRowCount(0);
  for (const auto& f : n.functions)
    functions_->appendRow({text_item(QString::fromStdString(f.name)), number_item(static_cast<double>(f.calls), true),
                           number_item(f.time), number_item(static_cast<double>(f.bytes), true)});
  if (function_chart_) function_chart_->setFunctions(n.functions);
}

void CharacteristicsPanel::showWaitStates(const analysis::IntervalNode& n) {
  set_header(wait_states_, {tr("Wait state"), tr("Total (s)"), tr("Max (s)"), "Nproc"}, {"", "total", "max", "max_rank"});
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
}

// Each tab's table with A, B and their difference (docs/interfaces.md, "Two
// runs compared"); a run without the interval leaves its cells empty.
void CharacteristicsPanel::showCompared(const analysis::IntervalNode* a, const analysis::IntervalNode* b) {
  // Main: every characteristic of A and B; the compared ones with B - A and
  // B / A, then (rank counts differing) the summed ones' means per rank.
  main_->setRowCount(0);
  set_header(main_, {tr("Main characteristic"), "A", "B", "B - A", "B / A"}, {"", "a", "b", "diff", "ratio"});
  auto add_main_row = [&](const analysis::MainCharacteristic& c, ComparedColumn column) {
    QList<QStandardItem*> row{text_item(column.mean_per_rank ? column.label() : QString(c.label) + c.text_suffix,
                                        column.mean_per_rank ? QString(c.key) + "/mean" : QString(c.key))};
    row << (a ? number_item(column.value(*a), c.integer) : text_item(tr("only in B")));
    row << (b ? number_item(column.value(*b), c.integer) : text_item(tr("only in A")));
    if (a && b && c.compared) {
      const double x = column.value(*a), y = column.value(*b);
      row << difference_item(y - x, c.integer) << ratio_item(x, y);
    }
    main_->appendRow(row);
  };
  for (int k = 0; k < static_cast<int>(std::size(analysis::kMainCharacteristics)); ++k)
    add_main_row(analysis::kMainCharacteristics[k], {k, false});
  for (const ComparedColumn& column : comparison_->columns())
    if (column.mean_per_rank) add_main_row(analysis::kMainCharacteristics[column.characteristic], column);

  std::vector<std::pair<const analysis::IntervalNode*, QString>> runs;
  if (a) runs.emplace_back(a, QStringLiteral("A"));
  if (b) runs.emplace_back(b, QStringLiteral("B"));
  showComparative(runs);

  // Per rank: each rank's figures in A and B when the rank counts agree,
  // else each figure's total over the ranks and its mean per rank.
  const bool same_ranks = comparison_->comparison.same_ranks();
  QStringList labels{same_ranks ? QStringLiteral("Nproc") : tr("Over ranks")}, keys{same_ranks ? "rank" : ""};
  std::vector<const analysis::RankCharacteristic*> figures;
  for (const analysis::RankCharacteristic& c : analysis::kRankCharacteristics) {
    if (std::string_view(c.key) == "rank") continue;
    figures.push_back(&c);
    labels << QStringLiteral("%1 A").arg(c.column) << QStringLiteral("%1 B").arg(c.column)
           << QStringLiteral("%1 B - A").arg(c.column);
    keys << QStringLiteral("%1/a").arg(c.key) << QStringLiteral("%1/b").arg(c.key)
         << QStringLiteral("%1/diff").arg(c.key);
  }
  set_header(per_rank_, labels, keys);
  per_rank_->setRowCount(0);
  // A row: its first cell, then per figure A, B, B - A (a side returning
  // nothing: empty).
  using Side = std::function<std::optional<double>(const analysis::RankCharacteristic&)>;
  auto add_rank_row = [&](QStandardItem* first, const Side& x, const Side& y) {
    QList<QStandardItem*> row{first};
    for (const analysis::RankCharacteristic* c : figures) {
      const std::optional<double> u = x(*c), v = y(*c);
      row << (u ? number_item(*u, c->integer) : absent_item()) << (v ? number_item(*v, c->integer) : absent_item())
          << (u && v ? difference_item(*v - *u, c->integer) : absent_item());
    }
    per_rank_->appendRow(row);
  };
  if (same_ranks) {
    std::map<int, std::pair<const analysis::RankFigures*, const analysis::RankFigures*>> by_rank;
    if (a)
      for (const auto& f : a->per_rank) by_rank[f.rank].first = &f;
    if (b)
      for (const auto& f : b->per_rank) by_rank[f.rank].second = &f;
    for (const auto& [rank, pair] : by_rank) {
      auto side = [](const analysis::RankFigures* f) -> Side {
        return [f](const analysis::RankCharacteristic& c) { return f ? std::optional(c.value(*f)) : std::nullopt; };
      };
      add_rank_row(number_item(rank, true), side(pair.first), side(pair.second));
    }
    per_rank_note_->hide();
  } else {
    auto total = [](const analysis::IntervalNode* n, bool mean) -> Side {
      return [n, mean](const analysis::RankCharacteristic& c) -> std::optional<double> {
        if (!n || n->per_rank.empty()) return std::nullopt;
        double sum = 0;
        for (const auto& f : n->per_rank) sum += c.value(f);
        return mean ? sum / static_cast<double>(n->per_rank.size()) : sum;
      };
    };
    add_rank_row(text_item(tr("Total"), "total"), total(a, false), total(b, false));
    add_rank_row(text_item(tr("Mean per rank"), "mean"), total(a, true), total(b, true));
    per_rank_note_->setText(tr("The runs have %1 and %2 ranks: per-rank values are not compared; each figure's "
                               "total over the ranks that ran the interval and its mean per rank instead.")
                                .arg(comparison_->comparison.processors_a)
                                .arg(comparison_->comparison.processors_b));
    per_rank_note_->show();
  }

  // MPI functions: either run's, the largest change in time first (compare.h).
  set_header(functions_,
             {tr("Function"), tr("Calls A"), tr("Calls B"), tr("Time A (s)"), tr("Time B (s)"), "B - A", "B / A",
              tr("Bytes A"), tr("Bytes B")},
             {"name", "calls_a", "calls_b", "time_a", "time_b", "diff", "ratio", "bytes_a", "bytes_b"});
  functions_->setRowCount(0);
  const analysis::IntervalNode none;
  const std::vector<analysis::ComparedFunction> compared = analysis::compare_functions(a ? *a : none, b ? *b : none);
  for (const analysis::ComparedFunction& f : compared) {
    auto count = [](bool present, uint64_t v) { return present ? number_item(static_cast<double>(v), true) : absent_item(); };
    functions_->appendRow({text_item(QString::fromStdString(f.name)), count(a, f.calls_a), count(b, f.calls_b),
                           a ? number_item(f.time_a) : absent_item(), b ? number_item(f.time_b) : absent_item(),
                           a && b ? difference_item(f.time_b - f.time_a, false) : absent_item(),
                           a && b ? ratio_item(f.time_a, f.time_b) : absent_item(), count(a, f.bytes_a),
                           count(b, f.bytes_b)});
  }
  function_chart_->setComparedFunctions(compared, a != nullptr, b != nullptr);

  // Wait states: each kind's total over ranks in A and B.
  set_header(wait_states_, {tr("Wait state"), tr("A (s)"), tr("B (s)"), "B - A", "B / A"}, {"", "a", "b", "diff", "ratio"});
  wait_states_->setRowCount(0);
  for (int k = 0; k < analysis::kWaitKindCount; ++k) {
    const auto kind = static_cast<size_t>(k);
    QList<QStandardItem*> row{text_item(analysis::kWaitKindLabels[k], analysis::kWaitKindKeys[k])};
    row << (a ? number_item(a->waits[kind]) : absent_item()) << (b ? number_item(b->waits[kind]) : absent_item());
    if (a && b) row << difference_item(b->waits[kind] - a->waits[kind], false) << ratio_item(a->waits[kind], b->waits[kind]);
    wait_states_->appendRow(row);
  }
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
