#include "range_statistics.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <map>

#include "trace_session.h"

namespace prof::gui {

using analysis::TimelineCall;
using analysis::TimelineKind;

namespace {

double overlap(double a, double b, double from, double to) { return std::max(0.0, std::min(b, to) - std::max(a, from)); }

}  // namespace

namespace {

// Adds a row's time inside [from, to) to `stats`: from its calls when at most
// `budget` overlap (functions too when `functions` is given), else from the
// summaries: buckets inside the range whole, the parts of the range in edge
// buckets by the same rule on that part (each step's buckets are `buckets`
// times narrower; below a leaf the layer aligns them on the range: exact).
void add_row(const analysis::Timeline& timeline, size_t row, double from, double to, uint64_t budget,
             uint32_t buckets, RangeStatistics& stats, std::map<std::string_view, RangeStatistics::Function>* functions,
             bool* summarized) {
  if (!(from < to)) return;
  analysis::TimelineQuery q;
  q.rows = {row};
  q.from = from;
  q.to = to;
  q.buckets = buckets;
  q.max_events = budget;
  const analysis::TimelineAnswer answer = timeline.query(q);
  if (answer.rows.empty()) return;
  const analysis::TimelineRowAnswer& r = answer.rows[0];
  if (r.summarized) {
    *summarized = true;
    stats.summary_bucket = std::max(stats.summary_bucket, r.bucket_width);
    // Buckets aligned on the range (below a leaf) end on it up to rounding.
    const double eps = 1e-6 * r.bucket_width;
    double inside_from = to, inside_to = from;  // the buckets wholly inside
    for (size_t i = 0; i < r.buckets.size(); ++i) {
      const double b0 = r.bucket_from + static_cast<double>(i) * r.bucket_width, b1 = b0 + r.bucket_width;
      if (b0 < from - eps || b1 > to + eps) continue;
      inside_from = std::min(inside_from, b0);
      inside_to = std::max(inside_to, b1);
      for (int k = 0; k < analysis::kTimelineKinds; ++k) stats.kind_time[k] += r.buckets[i].time[k];
    }
    if (inside_from >= inside_to) inside_from = inside_to = to;  // none inside: all of it is an edge
    if (inside_from <= from + eps && inside_to >= to - eps) return;
    // The edges, unless no narrower buckets exist (then one whole edge bucket's share).
    if (inside_from == to && r.bucket_width <= (to - from) / buckets * 1.0000001) {
      for (size_t i = 0; i < r.buckets.size(); ++i) {
        const double b0 = r.bucket_from + static_cast<double>(i) * r.bucket_width;
        const double share = overlap(b0, b0 + r.bucket_width, from, to) / r.bucket_width;
        for (int k = 0; k < analysis::kTimelineKinds; ++k) stats.kind_time[k] += r.buckets[i].time[k] * share;
      }
      return;
    }
    if (inside_from > from + eps) add_row(timeline, row, from, inside_from, budget, buckets, stats, nullptr, summarized);
    if (inside_to > inside_from && inside_to < to - eps)
      add_row(timeline, row, inside_to, to, budget, buckets, stats, nullptr, summarized);
    return;
  }
  // User code: the gaps between consecutive calls, with the row's calls just
  // before and after those listed (none listed: the calls around `from`).
  std::vector<TimelineCall> calls;
  if (r.calls.empty()) {
    if (auto before = timeline.find_call(row, "", from, false)) calls.push_back(*before);
    if (auto after = timeline.find_call(row, "", from, true)) calls.push_back(*after);
  } else {
    if (r.calls.front().index > 0)
      if (auto before = timeline.call(row, r.calls.front().index - 1)) calls.push_back(*before);
    calls.insert(calls.end(), r.calls.begin(), r.calls.end());
    if (auto after = timeline.call(row, r.calls.back().index + 1)) calls.push_back(*after);
  }
  for (size_t i = 0; i + 1 < calls.size(); ++i)
    stats.kind_time[static_cast<int>(TimelineKind::User)] +=
        overlap(static_cast<double>(calls[i].leave()), static_cast<double>(calls[i + 1].enter), from, to);
  for (const TimelineCall& c : r.calls) {
    const double t = overlap(static_cast<double>(c.enter), static_cast<double>(c.leave()), from, to);
    stats.kind_time[static_cast<int>(c.kind)] += t;
    if (!functions || c.kind == TimelineKind::Marker) continue;
    auto& f = (*functions)[c.function];
    f.kind = c.kind;
    ++f.calls;
    f.time += t;
  }
}

}  // namespace

RangeStatistics range_statistics(const analysis::Timeline& timeline, const std::vector<size_t>& rows, double from,
                                 double to, uint64_t call_budget, uint32_t buckets) {
  RangeStatistics stats;
  stats.from = from;
  stats.to = to;
  stats.rows = rows.size();
  if (rows.empty() || !(from < to)) return stats;
  const uint64_t per_row = std::max<uint64_t>(2000, call_budget / rows.size());
  buckets = std::max<uint32_t>(buckets, 2);
  std::map<std::string_view, RangeStatistics::Function> functions;
  for (size_t row : rows) {
    bool summarized = false;
    add_row(timeline, row, from, to, per_row, buckets, stats, &functions, &summarized);
    stats.rows_from_summaries += summarized;
  }
  for (auto& [name, f] : functions) {
    f.name = std::string(name);
    stats.functions.push_back(std::move(f));
  }
  std::stable_sort(stats.functions.begin(), stats.functions.end(),
                   [](const auto& a, const auto& b) { return a.time > b.time; });
  return stats;
}

namespace {

// Sorts numerically by the UserRole value when there is one.
class NumberItem : public QTableWidgetItem {
 public:
  using QTableWidgetItem::QTableWidgetItem;
  bool operator<(const QTableWidgetItem& other) const override {
    const QVariant a = data(Qt::UserRole), b = other.data(Qt::UserRole);
    if (a.isValid() && b.isValid()) return a.toDouble() < b.toDouble();
    return QTableWidgetItem::operator<(other);
  }
};

QTableWidgetItem* sortable(const QString& text, double number) {
  auto* item = new NumberItem(text);
  item->setData(Qt::UserRole, number);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

QTableWidget* make_table(QWidget* parent, const QStringList& headers) {
  auto* table = new QTableWidget(0, static_cast<int>(headers.size()), parent);
  table->setHorizontalHeaderLabels(headers);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->setSortingEnabled(true);
  return table;
}

}  // namespace

RangeStatisticsPanel::RangeStatisticsPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  header_ = new QLabel(tr("Zoom to a range (Shift+drag) or View > Statistics of the visible range"), this);
  header_->setWordWrap(true);
  functions_ = make_table(this, {tr("Function"), tr("Kind"), tr("Calls"), tr("Time"), tr("% of rows x range")});
  kinds_ = make_table(this, {tr("Kind"), tr("Time"), tr("% of rows x range")});
  layout->addWidget(header_);
  layout->addWidget(functions_, 3);
  layout->addWidget(kinds_, 2);
}

void RangeStatisticsPanel::showStatistics(const RangeStatistics& stats) {
  stats_ = stats;
  const double area = (stats.to - stats.from) * static_cast<double>(stats.rows);
  auto percent = [&](double t) { return area > 0 ? 100 * t / area : 0.0; };
  QString header = tr("%1 .. %2 s (%3) over %4 rows")
                       .arg(QString::number(stats.from / 1e9, 'f', 9), QString::number(stats.to / 1e9, 'f', 9),
                            duration_text(stats.to - stats.from))
                       .arg(stats.rows);
  if (stats.rows_from_summaries > 0)
    header += tr("; %1 rows had too many calls: counted per kind from summaries (exact to a %2 bucket at each "
                 "edge), left out of the function table")
                  .arg(stats.rows_from_summaries)
                  .arg(duration_text(stats.summary_bucket));
  header_->setText(header);
  functions_->setSortingEnabled(false);
  functions_->setRowCount(static_cast<int>(stats.functions.size()));
  for (int i = 0; i < functions_->rowCount(); ++i) {
    const auto& f = stats.functions[static_cast<size_t>(i)];
    functions_->setItem(i, 0, new QTableWidgetItem(QString::fromStdString(f.name)));
    functions_->setItem(i, 1, new QTableWidgetItem(QString::fromUtf8(analysis::timeline_kind_name(f.kind))));
    functions_->setItem(i, 2, sortable(QString::number(f.calls), static_cast<double>(f.calls)));
    functions_->setItem(i, 3, sortable(duration_text(f.time), f.time));
    functions_->setItem(i, 4, sortable(QString::number(percent(f.time), 'f', 2), percent(f.time)));
  }
  functions_->setSortingEnabled(true);
  functions_->sortByColumn(3, Qt::DescendingOrder);
  kinds_->setSortingEnabled(false);
  kinds_->setRowCount(0);
  for (int k = 0; k < analysis::kTimelineKinds; ++k) {
    if (static_cast<TimelineKind>(k) == TimelineKind::Marker) continue;
    const int i = kinds_->rowCount();
    kinds_->insertRow(i);
    const double t = stats.kind_time[k];
    kinds_->setItem(i, 0, new QTableWidgetItem(QString::fromUtf8(analysis::timeline_kind_name(static_cast<TimelineKind>(k)))));
    kinds_->setItem(i, 1, sortable(duration_text(t), t));
    kinds_->setItem(i, 2, sortable(QString::number(percent(t), 'f', 2), percent(t)));
  }
  kinds_->setSortingEnabled(true);
  kinds_->sortByColumn(1, Qt::DescendingOrder);
}

}  // namespace prof::gui
