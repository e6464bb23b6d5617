#include "timeline_view.h"

#include <QHelpEvent>
#include <QContextMenuEvent>
#include <QKeyEvent>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QScrollBar>
#include <QSvgGenerator>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <tuple>

#include "prof/analysis/analysis.h"
#include "prof/function_roles.h"
#include "trace_session.h"

namespace prof::gui {

using analysis::TimelineCall;
using analysis::TimelineKind;

namespace {

constexpr int kLabelWidth = 78;
constexpr int kRulerHeight = 24;
constexpr int kLegendHeight = 22;
constexpr double kMinWidthNs = 10;
constexpr int kBarWidth = 14;
constexpr int kHighlightStrip = 4;  // px at the ruler's foot marking the selected interval

QRgb background_rgb() { return qRgb(250, 250, 250); }

// std::lround of x >= 0, inline (libm's is a call; x - floor(x) is exact).
int round_nonnegative(double x) {
  const int r = static_cast<int>(x);
  return x - r >= 0.5 ? r + 1 : r;
}
// A blend's weight in 1/256ths (0: unchanged, 256: the colour) from a fraction.
int blend_weight(double amount) { return round_nonnegative(std::clamp(amount, 0.0, 1.0) * 256); }
// `from` moved towards `to` by a/256.
QRgb blend_rgb(QRgb from, QRgb to, int a) {
  auto mix = [a](int f, int t) { return f + (((t - f) * a) >> 8); };
  return qRgb(mix(qRed(from), qRed(to)), mix(qGreen(from), qGreen(to)), mix(qBlue(from), qBlue(to)));
}

// Fills columns [x0, x1) of lines [y0, y1) of an RGB32 image, clipped.
// Writes through the raw bits: scanLine() costs a detach check per call.
struct Canvas {
  QRgb* bits;
  qsizetype stride;  // in pixels
  int width, height;
  explicit Canvas(QImage& image)
      : bits(reinterpret_cast<QRgb*>(image.bits())), stride(image.bytesPerLine() / 4),
        width(image.width()), height(image.height()) {}
  void fill(int x0, int x1, int y0, int y1, QRgb colour) const {
    x0 = std::max(x0, 0);
    x1 = std::min(x1, width);
    y0 = std::max(y0, 0);
    y1 = std::min(y1, height);
    if (x0 >= x1) return;
    for (int y = y0; y < y1; ++y) std::fill(bits + y * stride + x0, bits + y * stride + x1, colour);
  }
  // Moves the pixels towards `colour` by `amount` (0: unchanged, 1: colour).
  void blend(int x0, int x1, int y0, int y1, QRgb colour, double amount) const {
    x0 = std::max(x0, 0);
    x1 = std::min(x1, width);
    y0 = std::max(y0, 0);
    y1 = std::min(y1, height);
    const int a = blend_weight(amount);
    if (x0 >= x1 || y0 >= y1 || a == 0) return;
    // Runs of one colour are the rule (a bucket's stacked kinds): each pixel
    // mixed once per run, not once per pixel.
    QRgb last_in = bits[y0 * stride + x0], last_out = blend_rgb(last_in, colour, a);
    for (int y = y0; y < y1; ++y)
      for (QRgb* p = bits + y * stride + x0; p < bits + y * stride + x1; ++p) {
        if (*p != last_in) {
          last_in = *p;
          last_out = blend_rgb(last_in, colour, a);
        }
        *p = last_out;
      }
  }
};

// 1, 2 or 5 times a power of ten, at least v.
double nice_step(double v) {
  const double power = std::pow(10.0, std::floor(std::log10(std::max(v, 1e-9))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= v) return m * power;
  return 10 * power;
}

QString row_label(const analysis::TimelineRow& row) {
  return row.stream == 0 ? QStringLiteral("rank %1").arg(row.rank)
                         : QStringLiteral("rank %1 t%2").arg(row.rank).arg(row.stream);
}

}  // namespace

QColor kind_color(TimelineKind kind) {
  switch (kind) {
    case TimelineKind::User: return QColor(170, 214, 160);
    case TimelineKind::PointToPoint: return QColor(58, 118, 206);
    case TimelineKind::Collective: return QColor(242, 142, 43);
    case TimelineKind::AllToAll: return QColor(160, 70, 170);
    case TimelineKind::Marker: return QColor(20, 20, 20);
    case TimelineKind::OtherMpi: return QColor(140, 140, 150);
  }
  return Qt::gray;
}
QColor waiting_color() { return QColor(214, 39, 40); }

namespace {
struct KindColours {
  QRgb rgb[analysis::kTimelineKinds];
  KindColours() {
    for (int k = 0; k < analysis::kTimelineKinds; ++k) rgb[k] = kind_color(static_cast<TimelineKind>(k)).rgb();
  }
};
QRgb kind_rgb(TimelineKind kind) {
  static const KindColours colours;
  return colours.rgb[static_cast<int>(kind)];
}
}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  setMinimumSize(200, 120);
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(false);
  build_timer_.setInterval(150);
  connect(&build_timer_, &QTimer::timeout, this, &TimelineView::followBuild);
  bar_ = new QScrollBar(Qt::Vertical, this);
  bar_->hide();
  connect(bar_, &QScrollBar::valueChanged, this, [this](int value) {
    if (value == scroll_) return;
    scroll_ = value;
    update();
  });
}

void TimelineView::followBuild() {
  if (!timeline_) return build_timer_.stop();
  if (follow_end_) {
    from_ = 0;
    to_ = std::max(timeline_->end(), kMinWidthNs);
  }
  // (Loading goes on after the build: the analysis, in the corner's figure.)
  const bool loading = progress_source_ && progress_source_().has_value();
  if ((timeline_->complete() || timeline_->cancelled() || timeline_->failed()) && !loading) build_timer_.stop();
  update();
}

void TimelineView::setTimeline(std::shared_ptr<analysis::Timeline> timeline) {
  timeline_ = std::move(timeline);
  run_end_.clear();
  group_cells_ = GroupCells{};
  row_leaves_.clear();
  highlight_node_ = -1;
  highlight_.clear();
  drawn_calls_.clear();
  selected_call_.reset();
  found_execution_.reset();
  labels_ = QImage();
  follow_end_ = true;
  from_ = 0;
  to_ = timeline_ ? std::max(timeline_->end(), kMinWidthNs) : 1;
  hidden_.assign(timeline_ ? timeline_->rows().size() : 0, 0);
  scroll_ = 0;
  history_.clear();
  history_pos_ = 0;
  emit historyChanged();
  rowsChanged();
  if (timeline_) build_timer_.start();
}

void TimelineView::rowsChanged() {
  ++rows_generation_;
  shown_.clear();
  slot_.assign(hidden_.size(), -1);
  for (size_t row = 0; row < hidden_.size(); ++row)
    if (!hidden_[row]) {
      slot_[row] = static_cast<int>(shown_.size());
      shown_.push_back(row);
    }
  layoutBar();
  update();
}

void TimelineView::layoutBar() {
  const QRect plot = plotRect();
  const int max = maxVerticalScroll();
  scroll_ = std::clamp(scroll_, 0, max);
  if (max <= 0) {
    bar_->hide();
  } else {
    bar_->setGeometry(width() - kBarWidth, plot.top(), kBarWidth, plot.height());
    bar_->setPageStep(plot.height());
    bar_->setSingleStep(std::max(1, static_cast<int>(rowHeight())));
    bar_->show();
  }
  const QSignalBlocker block(bar_);
  bar_->setRange(0, std::max(0, max));
  bar_->setValue(scroll_);
}

void TimelineView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  layoutBar();
}

void TimelineView::setRowHidden(size_t row, bool hidden) {
  if (row >= hidden_.size() || static_cast<bool>(hidden_[row]) == hidden) return;
  hidden_[row] = hidden;
  rowsChanged();
}

void TimelineView::showOnlyRank(int rank) {
  if (!timeline_) return;
  const auto& rows = timeline_->rows();
  for (size_t row = 0; row < hidden_.size(); ++row) hidden_[row] = rows[row].rank != rank;
  scroll_ = 0;
  rowsChanged();
}

void TimelineView::showAllRows() {
  std::fill(hidden_.begin(), hidden_.end(), 0);
  rowsChanged();
}

void TimelineView::populateRowMenu(QMenu& menu, size_t row) {
  if (!timeline_ || row >= hidden_.size()) return;
  const int rank = timeline_->rows()[row].rank;
  menu.addAction(tr("Hide %1").arg(row_label(timeline_->rows()[row])), this, [this, row] { setRowHidden(row, true); });
  menu.addAction(tr("Show only rank %1").arg(rank), this, [this, rank] { showOnlyRank(rank); });
  QAction* all = menu.addAction(tr("Show all rows"), this, &TimelineView::showAllRows);
  all->setEnabled(shown_.size() < hidden_.size());
}

void TimelineView::contextMenuEvent(QContextMenuEvent* e) {
  // Only on the labels: a right press in the plot starts a zoom-to-range drag.
  const int row = rowAt(e->pos().y());
  if (e->pos().x() >= plotRect().left() || row < 0) return e->ignore();
  QMenu menu(this);
  populateRowMenu(menu, static_cast<size_t>(row));
  menu.exec(e->globalPos());
}

bool TimelineView::rowsOverflow() const {
  return static_cast<double>(shown_.size()) * rowHeight() > plotHeight() + 0.5;
}

double TimelineView::maxRowZoom() const {
  const double rows = static_cast<double>(std::max<size_t>(1, shown_.size()));
  const double fit = std::min(plotHeight() / rows, kMaxRowHeight);
  return std::max(1.0, kMaxRowHeight / fit);
}

void TimelineView::setRowZoom(double zoom, int about_y) {
  const ViewState before = viewState();
  // The slot under about_y stays there; about the plot's last pixel row, its
  // bottom edge stays (the last rank stays in sight).
  double anchor = about_y < 0 ? 0.0 : std::clamp(about_y - kRulerHeight, 0, plotHeight());
  if (anchor >= plotHeight() - 1) anchor = plotHeight();
  const double slot = (anchor + scroll_) / rowHeight();
  row_zoom_ = std::clamp(zoom, 1.0, maxRowZoom());
  scroll_ = std::clamp(static_cast<int>(std::lround(slot * rowHeight() - anchor)), 0, maxVerticalScroll());
  layoutBar();
  update();
  remember(before);
}

size_t TimelineView::rowsPerGroup() const {
  const double h = rowHeight();
  return h >= 1 ? 1 : static_cast<size_t>(std::ceil(1 / h - 1e-9));
}

namespace {
// Slots under a pixel (h < 1): pixel row p (of the slots' content) holds the
// slots whose tops lie in it, [first_slot(p), first_slot(p + 1)); each holds
// at least one, and every slot lies in exactly one.
size_t first_slot(double p, double h, size_t n) {
  auto pixel = [&](size_t s) { return std::floor(static_cast<double>(s) * h); };
  size_t s = std::min(n, static_cast<size_t>(std::max(0.0, std::ceil(p / h))));
  while (s > 0 && pixel(s - 1) >= p) --s;
  while (s < n && pixel(s) < p) ++s;
  return s;
}
}  // namespace

std::vector<std::pair<size_t, size_t>> TimelineView::visibleGroups() const {
  std::vector<std::pair<size_t, size_t>> groups;
  const size_t n = shown_.size();
  if (n == 0) return groups;
  const double h = rowHeight();
  if (h >= 1) {  // a slot a group
    for (size_t slot = static_cast<size_t>(std::max(0.0, std::floor(scroll_ / h)));
         slot < n && static_cast<double>(slot) * h < scroll_ + plotHeight(); ++slot)
      groups.emplace_back(slot, slot + 1);
    return groups;
  }
  for (int p = scroll_; p < scroll_ + plotHeight(); ++p) {
    const size_t first = first_slot(p, h, n), end = first_slot(p + 1, h, n);
    if (first >= n) break;
    groups.emplace_back(first, end);
  }
  return groups;
}

std::optional<std::pair<size_t, size_t>> TimelineView::groupAt(int y) const {
  const QRect r = plotRect();
  if (!timeline_ || shown_.empty() || y < r.top() || y > r.bottom()) return std::nullopt;
  const double h = rowHeight();
  const size_t n = shown_.size();
  const int p = y - r.top() + scroll_;
  if (h >= 1) {
    size_t slot = static_cast<size_t>(std::floor(p / h));
    // Drawn from floor(slot * h): the pixel may belong to the next slot.
    if (slot + 1 < n && std::floor(static_cast<double>(slot + 1) * h) <= p) ++slot;
    if (slot >= n) return std::nullopt;
    return std::make_pair(slot, slot + 1);
  }
  const size_t first = first_slot(p, h, n);
  if (first >= n) return std::nullopt;
  return std::make_pair(first, first_slot(p + 1, h, n));
}

int TimelineView::maxVerticalScroll() const {
  if (!rowsOverflow()) return 0;
  return std::max(0, static_cast<int>(std::ceil(static_cast<double>(shown_.size()) * rowHeight())) -
                         plotRect().height());
}

void TimelineView::setVerticalScroll(int px) {
  scroll_ = std::clamp(px, 0, maxVerticalScroll());
  layoutBar();
  update();
}

void TimelineView::scrollToRow(size_t row) {
  if (row >= slot_.size() || slot_[row] < 0) return;
  const double h = rowHeight();
  const double top = slot_[row] * h;
  const int plot_h = plotRect().height();
  if (top < scroll_)
    setVerticalScroll(static_cast<int>(std::floor(top)));
  else if (top + h > scroll_ + plot_h)
    setVerticalScroll(static_cast<int>(std::ceil(top + h - plot_h)));
}

std::vector<size_t> TimelineView::visibleRows() const {
  std::vector<size_t> rows;
  if (shown_.empty()) return rows;
  const double h = rowHeight();
  const size_t first = static_cast<size_t>(std::max(0.0, std::floor(scroll_ / h)));
  const size_t last = std::min(shown_.size(), static_cast<size_t>(std::ceil((scroll_ + plotRect().height()) / h)));
  for (size_t slot = first; slot < last; ++slot) rows.push_back(shown_[slot]);
  return rows;
}

double TimelineView::slotTop(size_t row) const {
  return row < slot_.size() && slot_[row] >= 0 ? slot_[row] * rowHeight() - scroll_ : -1e9;
}

void TimelineView::setRange(double from, double to) {
  if (!(to - from >= kMinWidthNs)) {
    const double mid = (from + to) / 2;
    from = mid - kMinWidthNs / 2;
    to = mid + kMinWidthNs / 2;
  }
  follow_end_ = false;
  from_ = from;
  to_ = to;
  emit rangeChanged(from_, to_);
  update();
}

void TimelineView::navigateTo(double from, double to) {
  const double width = std::max(to - from, kMinWidthNs);
  if (!timeline_) return setRange(from, from + width);
  // Inside [0, end], keeping the width where it fits (to: never an ulp past end).
  const double end = std::max(timeline_->end(), kMinWidthNs);
  from = std::clamp(from, 0.0, std::max(0.0, end - width));
  setRange(from, std::min(from + width, end));
}

void TimelineView::showAll() {
  const ViewState before = viewState();
  const double end = timeline_ ? std::max(timeline_->end(), kMinWidthNs) : 1;
  setRange(0, end);
  follow_end_ = timeline_ && !timeline_->complete();
  remember(before);
}

TimelineView::ViewState TimelineView::viewState() const { return {from_, to_, row_zoom_, scroll_}; }

bool TimelineView::ViewState::sameView(const ViewState& o) const {
  return from == o.from && to == o.to && row_zoom == o.row_zoom;
}

void TimelineView::remember(const ViewState& before) {
  if (restoring_) return;
  wheel_zoomed_ = false;
  const ViewState now = viewState();
  const bool changed = !now.sameView(before);
  // The state before the act is the current entry (it may have drifted:
  // a scroll, the range growing with the build, a range set by a caller).
  if (history_.empty() || (changed && !history_[history_pos_].sameView(before))) {
    if (!history_.empty()) history_.resize(history_pos_ + 1);
    history_.push_back(before);
    history_pos_ = history_.size() - 1;
  } else if (changed) {
    history_[history_pos_].scroll = before.scroll;
  }
  if (changed) {
    history_.resize(history_pos_ + 1);
    history_.push_back(now);
    if (history_.size() > kMaxHistory) history_.erase(history_.begin());
    history_pos_ = history_.size() - 1;
  }
  emit historyChanged();
}

bool TimelineView::canGoBack() const {
  return history_pos_ > 0 || (!history_.empty() && !history_[history_pos_].sameView(viewState()));
}

bool TimelineView::canGoForward() const { return history_pos_ + 1 < history_.size(); }

void TimelineView::back() {
  if (!canGoBack()) return;
  if (!history_[history_pos_].sameView(viewState())) {
    // The view moved without an act that records (a scroll, a caller's
    // range): Back returns to the last entry, Forward comes back here.
    history_.resize(history_pos_ + 1);
    history_.push_back(viewState());
  } else {
    --history_pos_;
  }
  restore(history_[history_pos_]);
}

void TimelineView::forward() {
  if (!canGoForward()) return;
  ++history_pos_;
  restore(history_[history_pos_]);
}

void TimelineView::restore(const ViewState& state) {
  wheel_zoomed_ = false;
  restoring_ = true;
  setRange(state.from, state.to);
  setRowZoom(state.row_zoom);
  setVerticalScroll(state.scroll);
  restoring_ = false;
  emit historyChanged();
}

bool TimelineView::exportPng(const QString& path) {
  return grab().save(path, "PNG");
}

bool TimelineView::exportSvg(const QString& path) {
  QSvgGenerator svg;
  svg.setFileName(path);
  svg.setSize(size());
  svg.setViewBox(rect());
  svg.setTitle(tr("prof-gui timeline"));
  svg.setDescription(tr("%1 to %2 ns from the trace's start").arg(from_, 0, 'f', 0).arg(to_, 0, 'f', 0));
  QPainter painter;
  if (!painter.begin(&svg)) return false;
  render(&painter, QPoint(), QRegion(), RenderFlag::DrawChildren);
  return painter.end();
}

void TimelineView::setArrows(bool on) {
  arrows_ = on;
  update();
}

std::optional<analysis::TimelineExecution> TimelineView::highlightNode(int node) {
  highlight_node_ = node;
  highlight_.clear();
  std::optional<analysis::TimelineExecution> first;
  if (timeline_ && node >= 0) {
    highlight_.resize(timeline_->rows().size());
    for (size_t row = 0; row < highlight_.size(); ++row) {
      for (const auto& e : timeline_->executions(row))
        if (e.node == static_cast<uint32_t>(node)) highlight_[row].push_back(e);
      if (!highlight_[row].empty() && (!first || highlight_[row].front().start < first->start))
        first = highlight_[row].front();
    }
  }
  update();
  return first;
}

int TimelineView::plotHeight() const { return std::max(1, height() - kRulerHeight - kLegendHeight); }

QRect TimelineView::plotRect() const {
  return QRect(kLabelWidth, kRulerHeight, std::max(1, width() - kLabelWidth - 4 - (rowsOverflow() ? kBarWidth : 0)),
               plotHeight());
}
double TimelineView::xOf(double t) const {
  const QRect r = plotRect();
  return r.left() + (t - from_) / (to_ - from_) * r.width();
}
double TimelineView::timeAt(double x) const {
  const QRect r = plotRect();
  return from_ + (x - r.left()) / r.width() * (to_ - from_);
}
double TimelineView::rowHeight() const {
  // Every row fits at zoom 1; zooming scales the slots up to kMaxRowHeight.
  const double rows = static_cast<double>(std::max<size_t>(1, shown_.size()));
  const double fit = std::min(plotHeight() / rows, kMaxRowHeight);
  return std::min(fit * row_zoom_, std::max(fit, kMaxRowHeight));
}
int TimelineView::rowAt(int y) const {
  if (!timeline_) return -1;
  const QRect r = plotRect();
  if (y < r.top() || y > r.bottom()) return -1;
  const int slot = static_cast<int>((y - r.top() + scroll_) / rowHeight());
  return slot < static_cast<int>(shown_.size()) ? static_cast<int>(shown_[static_cast<size_t>(slot)]) : -1;
}
int TimelineView::rowCenterY(size_t row) const {
  if (row >= slot_.size() || slot_[row] < 0) return -1;
  return static_cast<int>(plotRect().top() + slotTop(row) + 0.5 * rowHeight());
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(background_rgb()));
  drawn_calls_.clear();
  drawn_waits_.clear();
  drawn_messages_.clear();
  drawn_bands_.clear();
  drawn_summaries_.clear();
  drawn_fractions_.clear();
  summarized_rows_ = drawn_arrows_ = drawn_wait_arrows_ = 0;
  if (!timeline_) {
    p.drawText(rect(), Qt::AlignCenter, tr("No trace: File > Open"));
    return;
  }
  const QRect plot = plotRect();
  drawn_groups_ = drawn_group_rows_ = 0;
  if (image_.size() != plot.size()) image_ = QImage(plot.size(), QImage::Format_RGB32);
  image_.fill(background_rgb());
  analysis::TimelineAnswer answer;
  if (grouped()) {
    answer.built = timeline_->built();
    answer.complete = timeline_->complete();
    bucket_widths_.assign(timeline_->rows().size(), 0);
    drawGroups(image_);
  } else {
    answer = frameAnswer(static_cast<uint32_t>(plot.width()));
    drawRows(image_, answer);
  }
  p.drawImage(plot.topLeft(), image_);
  drawRuler(p);  // before the overlays: the selected interval's strip lies on its foot
  drawOverlays(p, answer);
  drawLegend(p);
  if (const QString text = progressText(); !text.isEmpty()) {
    p.setPen(Qt::darkRed);
    p.drawText(QRect(0, 0, width() - 6, kRulerHeight), Qt::AlignRight | Qt::AlignVCenter, text);
  }
}

QString TimelineView::progressText() const {
  if (progress_source_)
    if (const std::optional<double> f = progress_source_())
      return tr("loading %1%").arg(static_cast<int>(std::clamp(*f, 0.0, 1.0) * 100));
  if (!timeline_ || timeline_->complete()) return {};
  return tr("building %1%").arg(static_cast<int>(timeline_->built() * 100));
}

analysis::TimelineAnswer TimelineView::frameAnswer(uint32_t width) const {
  // Rows whose pixel columns are narrower than their pyramid's leaves would be
  // summarized from every call in range. Where a count at leaf resolution
  // says that is more than kFineBudget calls (and more than fit as calls), the
  // row is drawn from those leaves instead: coarser columns, bounded cost.
  const double range = to_ - from_;
  std::vector<size_t> fine;
  std::vector<analysis::TimelineRowAnswer> coarse;
  for (size_t row : visibleRows()) {
    const double leaf = timeline_->leaf_ns(row);
    if (leaf <= 0 || range / width >= leaf) {
      fine.push_back(row);
      continue;
    }
    analysis::TimelineQuery q;
    q.rows = {row};
    q.from = from_;
    q.to = to_;
    q.buckets = static_cast<uint32_t>(std::max(1.0, std::floor(range / leaf)));
    q.max_events = 1;  // summaries only
    analysis::TimelineAnswer leaves = timeline_->query(q);
    uint64_t calls = 0;
    if (!leaves.rows.empty())
      for (const auto& b : leaves.rows[0].buckets) calls += b.count;
    if (leaves.rows.empty() || !leaves.rows[0].summarized || calls <= std::max<uint64_t>(kFineBudget, 2 * width))
      fine.push_back(row);
    else
      coarse.push_back(std::move(leaves.rows[0]));
  }
  analysis::TimelineAnswer answer;
  answer.built = timeline_->built();
  answer.complete = timeline_->complete();
  if (!fine.empty()) {
    analysis::TimelineQuery q;
    q.rows = fine;
    q.from = from_;
    q.to = to_;
    q.buckets = width;
    answer = timeline_->query(q);
  }
  for (auto& r : coarse) answer.rows.push_back(std::move(r));
  return answer;
}

void TimelineView::drawRows(QImage& image, const analysis::TimelineAnswer& answer) {
  const Canvas canvas(image);
  const double row_h = rowHeight();
  bucket_widths_.assign(timeline_->rows().size(), 0);
  const double scale = image.width() / (to_ - from_);
  // Clamped just outside the image: zoomed to nanoseconds, a call entered
  // long before the view lies billions of pixels away, past int's range.
  const double x_max = image.width() + 2.0;
  auto x_of = [&](double t) { return std::clamp((t - from_) * scale, -2.0, x_max); };
  const QRgb user = kind_color(TimelineKind::User).rgb();
  // The nesting track: as many bands as the tree has levels below the root.
  const std::vector<analysis::TimelineNode> nodes = timeline_->nodes();
  int levels = 0;
  for (const auto& n : nodes) levels = std::max(levels, n.level);
  levels = std::min(levels, kMaxBandLevels);
  const int track = row_h >= kBandRowHeight ? levels * kBandHeight : 0;
  for (const auto& answer_row : answer.rows) {
    const double slot = slotTop(answer_row.row);
    const int top = static_cast<int>(slot);
    if (track > 0) {
      // Darker the deeper, over a pale track.
      canvas.fill(0, canvas.width, top + 1, top + 1 + track, qRgb(225, 228, 236));
      for (const auto& e : answer_row.executions) {
        const int level = e.node < nodes.size() ? nodes[e.node].level : 0;
        if (level < 1 || level > levels) continue;
        const int x0 = static_cast<int>(std::floor(x_of(e.start)));
        const int x1 = std::max(x0 + 1, static_cast<int>(std::ceil(x_of(e.end))));
        const int b0 = top + 1 + (level - 1) * kBandHeight;
        const int shade = 170 - 30 * (level - 1);
        canvas.fill(x0, x1, b0, b0 + kBandHeight, qRgb(shade - 40, shade - 20, shade + 40));
        drawn_bands_.push_back({answer_row.row, level, e.start, e.end, e.node});
      }
    }
    const int y0 = top + (row_h >= 6 ? 1 : 0) + track;
    const int y1 = std::max(y0 + 1, static_cast<int>(slot + row_h) - (row_h >= 6 ? 2 : 0));
    const int h = y1 - y0;
    if (answer_row.summarized) {
      ++summarized_rows_;
      bucket_widths_[answer_row.row] = answer_row.bucket_width;
      // Stacked fractions of the bucket's time per kind, MPI at the bottom.
      static constexpr TimelineKind order[] = {TimelineKind::Collective, TimelineKind::AllToAll,
                                               TimelineKind::PointToPoint, TimelineKind::OtherMpi,
                                               TimelineKind::Marker, TimelineKind::User};
      // Both edges of a bucket from its index, so that neighbours share the
      // column edge: b0 + width and the next bucket's start may differ by an
      // ulp, and a floor on either side of a whole pixel left a 1-px gap.
      auto edge = [&](size_t i) {
        return static_cast<int>(
            std::floor(x_of(answer_row.bucket_from + static_cast<double>(i) * answer_row.bucket_width)));
      };
      for (size_t i = 0; i < answer_row.buckets.size(); ++i) {
        const auto& b = answer_row.buckets[i];
        const int x0 = edge(i);
        const int x1 = std::max(x0 + 1, edge(i + 1));
        double cumulative = 0;
        int y = y1;
        for (TimelineKind k : order) {
          const double t = b.time[static_cast<int>(k)];
          if (t <= 0) continue;
          cumulative += t;
          const int next = y1 - static_cast<int>(std::min(1.0, cumulative / answer_row.bucket_width) * h + 0.5);
          canvas.fill(x0, x1, next, y, kind_rgb(k));
          y = next;
        }
        // Calls entered but too short for a pixel: one line of their colour.
        if (y == y1 && b.count > 0) canvas.fill(x0, x1, y1 - 1, y1, kind_rgb(b.dominant));
      }
      // The potential-sync overlay, as on rows drawn call by call (the lower
      // third), its strength the bucket's waiting fraction.
      drawn_summaries_.push_back({y0, y1, static_cast<size_t>(slot_[answer_row.row]), 1, answer_row.bucket_from,
                                  answer_row.bucket_width, drawn_fractions_.size(), answer_row.buckets.size()});
      const int wait_y0 = y1 - std::max(2, static_cast<int>(row_h / 3));
      const QRgb wait_rgb = waiting_color().rgb();
      for (size_t i = 0; i < answer_row.buckets.size(); ++i) {
        const double f = std::clamp(answer_row.buckets[i].wait / answer_row.bucket_width, 0.0, 1.0);
        drawn_fractions_.push_back(static_cast<float>(f));
        if (f > 0) canvas.blend(edge(i), std::max(edge(i) + 1, edge(i + 1)), wait_y0, y1, wait_rgb, f);
      }
      continue;
    }
    // User code: the rank's run (the root execution), and between calls.
    for (const auto& e : answer_row.executions)
      if (e.node == 0)
        canvas.fill(static_cast<int>(std::floor(x_of(e.start))), static_cast<int>(std::ceil(x_of(e.end))),
                  y0, y1, user);
    for (size_t i = 0; i + 1 < answer_row.calls.size(); ++i)
      canvas.fill(static_cast<int>(std::floor(x_of(static_cast<double>(answer_row.calls[i].leave())))),
                static_cast<int>(std::ceil(x_of(static_cast<double>(answer_row.calls[i + 1].enter)))), y0, y1, user);
    for (const TimelineCall& c : answer_row.calls) {
      drawn_calls_.push_back(c);
      if (c.kind == TimelineKind::Marker) continue;  // drawn as lines over everything
      const int x0 = static_cast<int>(std::floor(x_of(static_cast<double>(c.enter))));
      const int x1 = std::max(x0 + 1, static_cast<int>(std::ceil(x_of(static_cast<double>(c.leave())))));
      canvas.fill(x0, x1, y0, y1, kind_rgb(c.kind));
    }
  }
  // Waiting that is potential synchronization: the lower third of the call.
  std::vector<char> by_calls(timeline_->rows().size(), 0);
  for (const auto& answer_row : answer.rows) by_calls[answer_row.row] = !answer_row.summarized;
  auto wait_span = [&](DrawnWait w) {
    if (!(w.end > w.begin) || w.row >= by_calls.size() || !by_calls[w.row]) return;
    const int y1 = static_cast<int>(slotTop(w.row) + row_h) - (row_h >= 6 ? 2 : 0);
    const int y0 = y1 - std::max(2, static_cast<int>(row_h / 3));
    const int x0 = static_cast<int>(std::floor(x_of(w.begin)));
    canvas.fill(x0, std::max(x0 + 1, static_cast<int>(std::ceil(x_of(w.end)))), y0, y1, waiting_color().rgb());
    drawn_waits_.push_back(w);
  };
  for (const auto& m : answer.messages) {
    const double begin = static_cast<double>(m.issue_enter);
    wait_span({m.recv_row, m.recv_index, begin, begin + static_cast<double>(m.wait), true, 0, m.send_row, m.send_index,
               static_cast<double>(m.send_enter)});
  }
  for (const auto& c : answer.collectives) {
    if (c.members.empty()) continue;
    const auto last = std::max_element(c.members.begin(), c.members.end(),
                                       [](const auto& a, const auto& b) { return a.enter < b.enter; });
    for (size_t k = 0; k < c.members.size(); ++k) {
      const auto& m = c.members[k];
      const double begin = static_cast<double>(m.enter);
      wait_span({m.row, m.index, begin, begin + static_cast<double>(m.wait), false, k, last->row, last->index,
                 static_cast<double>(last->enter)});
    }
  }
}

// A group's bucket: the dominant kind's colour over the background, the
// stronger the more of the rows' time was in MPI (pale: mostly user code).
static QRgb group_rgb(TimelineKind dominant, double mpi_share) {
  const double strength = 0.3 + 0.7 * std::clamp(mpi_share, 0.0, 1.0);
  const QRgb c = kind_rgb(dominant), bg = background_rgb();
  auto mix = [&](int a, int b) { return round_nonnegative(b + (a - b) * strength); };
  return qRgb(mix(qRed(c), qRed(bg)), mix(qGreen(c), qGreen(bg)), mix(qBlue(c), qBlue(bg)));
}

std::pair<size_t, size_t> TimelineView::groupOfOrdinal(size_t ordinal) const {
  const double h = rowHeight();
  const size_t n = shown_.size();
  if (h >= 1) return {std::min(ordinal, n), std::min(ordinal + 1, n)};
  const double p = static_cast<double>(ordinal);
  return {first_slot(p, h, n), first_slot(p + 1, h, n)};
}

namespace {
// A group bucket as drawn: the colour of its rows' time (none without any)
// and that colour blended towards the wait colour by the waiting fraction.
struct GroupBucketColours {
  QRgb fill = 0, wait = 0;
  float fraction = 0;
};
GroupBucketColours group_colours(const analysis::TimelineGroupBucket& b, double rows, double width) {
  GroupBucketColours out;
  const double f = std::clamp(b.wait / (rows * width), 0.0, 1.0);
  out.fraction = static_cast<float>(f);
  double total = 0;
  for (double t : b.time) total += t;
  if (total <= 0) return out;
  out.fill = group_rgb(b.dominant, b.mpi() / (rows * width));
  static const QRgb wait_rgb = waiting_color().rgb();
  out.wait = blend_rgb(out.fill, wait_rgb, blend_weight(f));
  return out;
}
}  // namespace

void TimelineView::computeGroupCells(size_t g0, size_t g1, int64_t c0, int64_t c1) {
  if (g0 >= g1 || c0 >= c1) return;
  analysis::TimelineGroupQuery q;
  q.groups.reserve(g1 - g0);
  std::vector<double> rows(g1 - g0);
  for (size_t g = g0; g < g1; ++g) {
    const auto [first, end] = groupOfOrdinal(g);
    q.groups.emplace_back(shown_.begin() + static_cast<std::ptrdiff_t>(first),
                          shown_.begin() + static_cast<std::ptrdiff_t>(end));
    rows[g - g0] = static_cast<double>(end - first);
    group_cells_read_ += static_cast<uint64_t>(end - first) * static_cast<uint64_t>(c1 - c0);
  }
  // Exactly the cells' grid: (to - from) / buckets is the cell width, a
  // power-of-two multiple of each row's leaf.
  q.from = group_cells_.origin + static_cast<double>(c0) * group_cells_.width;
  q.to = group_cells_.origin + static_cast<double>(c1) * group_cells_.width;
  q.buckets = static_cast<uint32_t>(c1 - c0);
  const analysis::TimelineGroupAnswer answer = timeline_->summarize_groups(q);
  for (size_t g = g0; g < g1; ++g) {
    const auto& buckets = answer.groups[g - g0];
    for (int64_t c = c0; c < c1; ++c) {
      const size_t i = static_cast<size_t>(c - c0);
      const auto colours = i < buckets.size() ? group_colours(buckets[i], rows[g - g0], answer.bucket_width)
                                              : GroupBucketColours{};
      group_cells_.at(g, c) = GroupCell{colours.fill, colours.wait, colours.fraction};
    }
  }
}

void TimelineView::drawGroups(QImage& image) {
  group_cells_read_ = 0;
  const auto groups = visibleGroups();
  if (groups.empty()) return;
  const double h = rowHeight();
  // Ordinals of the groups in sight: consecutive from the first's.
  const size_t g_lo = h < 1 ? static_cast<size_t>(scroll_) : groups.front().first;
  const size_t g_hi = g_lo + groups.size();
  const uint32_t width = static_cast<uint32_t>(image.width());
  const double from = std::max(from_, 0.0);
  if (!(from < to_)) return;
  const bool complete = timeline_->complete();
  if (complete && row_leaves_.size() != timeline_->rows().size()) {
    row_leaves_.resize(timeline_->rows().size());
    for (size_t r = 0; r < row_leaves_.size(); ++r) row_leaves_[r] = timeline_->leaf_ns(r);
  }
  // The grid summarize_groups chooses for the frame (TimelineGroupQuery).
  const double target = (to_ - from) / width;
  double leaf = 0;
  size_t rows_in_sight = 0;
  if (complete)
    for (const auto& [first, end] : groups) {
      rows_in_sight += end - first;
      for (size_t k = first; k < end; ++k) leaf = std::max(leaf, row_leaves_[shown_[k]]);
    }
  const double size = leaf > 0 ? std::ldexp(leaf, static_cast<int>(std::min(
                                                      60.0, std::floor(std::log2(std::max(1.0, target / leaf))))))
                               : 0;
  const bool exact_grid = size > target && rows_in_sight <= analysis::kTimelineGroupCallRows;
  int64_t c_lo = 0, c_hi = 0;
  if (!complete || leaf <= 0 || exact_grid) {
    // One query of the frame, kept for this frame only.
    analysis::TimelineGroupQuery q;
    q.groups.reserve(groups.size());
    for (const auto& [first, end] : groups) q.groups.emplace_back(shown_.begin() + static_cast<std::ptrdiff_t>(first),
                                                                  shown_.begin() + static_cast<std::ptrdiff_t>(end));
    q.from = from_;
    q.to = to_;
    q.buckets = width;
    const analysis::TimelineGroupAnswer answer = timeline_->summarize_groups(q);
    const size_t n = answer.groups.empty() ? 0 : answer.groups.front().size();
    group_cells_ = GroupCells{};
    group_cells_.origin = answer.bucket_from;
    group_cells_.width = answer.bucket_width;
    group_cells_.g0 = g_lo;
    group_cells_.g1 = g_hi;
    group_cells_.c1 = c_hi = static_cast<int64_t>(n);
    group_cells_.cells.resize(groups.size() * n);
    for (size_t g = 0; g < groups.size(); ++g) {
      const double rows = static_cast<double>(groups[g].second - groups[g].first);
      group_cells_read_ += static_cast<uint64_t>(groups[g].second - groups[g].first) * n;
      for (size_t i = 0; i < n && g < answer.groups.size(); ++i) {
        const auto colours = group_colours(answer.groups[g][i], rows, answer.bucket_width);
        group_cells_.at(g_lo + g, static_cast<int64_t>(i)) = GroupCell{colours.fill, colours.wait, colours.fraction};
      }
    }
  } else {
    c_lo = static_cast<int64_t>(std::floor(from / size));
    c_hi = static_cast<int64_t>(std::ceil(to_ / size));
    GroupCells& held = group_cells_;
    const bool same = held.reusable && held.timeline == timeline_.get() && held.rows_generation == rows_generation_ &&
                      held.row_height == h && held.origin == 0 && held.width == size;
    const bool touching = held.g0 <= g_hi && g_lo <= held.g1 && held.c0 <= c_hi && c_lo <= held.c1;
    const size_t g0 = std::min(held.g0, g_lo), g1 = std::max(held.g1, g_hi);
    const int64_t c0 = std::min(held.c0, c_lo), c1 = std::max(held.c1, c_hi);
    const double needed = static_cast<double>(g_hi - g_lo) * static_cast<double>(c_hi - c_lo);
    const bool grows = g0 != held.g0 || g1 != held.g1 || c0 != held.c0 || c1 != held.c1;
    if (!same || !touching || (grows && static_cast<double>(g1 - g0) * static_cast<double>(c1 - c0) > 2 * needed)) {
      held = GroupCells{timeline_.get(), rows_generation_, h, true, 0, size, g_lo, g_hi, c_lo, c_hi, {}};
      held.cells.resize((g_hi - g_lo) * static_cast<size_t>(c_hi - c_lo));
      computeGroupCells(g_lo, g_hi, c_lo, c_hi);
    } else if (grows) {
      GroupCells grown{held.timeline, held.rows_generation, h, true, 0, size, g0, g1, c0, c1, {}};
      grown.cells.resize((g1 - g0) * static_cast<size_t>(c1 - c0));
      for (size_t g = held.g0; g < held.g1; ++g)
        std::copy_n(&held.at(g, held.c0), held.c1 - held.c0, &grown.at(g, held.c0));
      const GroupCells before = std::move(held);
      held = std::move(grown);
      // What was not held: whole rows of cells above and below, the columns
      // left and right beside the rows held.
      computeGroupCells(g0, before.g0, c0, c1);
      computeGroupCells(before.g1, g1, c0, c1);
      computeGroupCells(before.g0, before.g1, c0, before.c0);
      computeGroupCells(before.g0, before.g1, before.c1, c1);
    }
  }
  const Canvas canvas(image);
  const double scale = image.width() / (to_ - from_);
  const double origin = group_cells_.origin, cell_width = group_cells_.width;
  // Both edges of a bucket from its index, so neighbours share the column edge.
  const size_t cells = static_cast<size_t>(c_hi - c_lo);
  edges_.resize(cells + 1);
  for (size_t i = 0; i <= cells; ++i)
    edges_[i] = static_cast<int>(
        std::floor((origin + static_cast<double>(c_lo + static_cast<int64_t>(i)) * cell_width - from_) * scale));
  // A group is a line of its buckets' colours over its upper part and one of
  // their wait colours over the overlay's lines (all of a group under 3 px),
  // each made once, in the image's first such line, and copied.
  drawn_fractions_.reserve(drawn_fractions_.size() + groups.size() * cells);
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto [first, end] = groups[g];
    // From the pixel row of its first slot's top to that of the next group.
    const int y0 = static_cast<int>(std::floor(static_cast<double>(first) * h)) - scroll_;
    const int y1 = std::max(y0 + 1, static_cast<int>(std::floor(static_cast<double>(end) * h)) - scroll_);
    // The potential-sync overlay: the lower third of a group of 3 px or
    // more, else all of it.
    const int wait_y0 = y1 - y0 >= 3 ? y1 - std::max(1, (y1 - y0) / 3) : y0;
    drawn_summaries_.push_back({y0, y1, first, end - first, origin + static_cast<double>(c_lo) * cell_width, cell_width,
                                drawn_fractions_.size(), cells});
    const GroupCell* row = &group_cells_.at(g_lo + g, c_lo);
    for (size_t i = 0; i < cells; ++i) drawn_fractions_.push_back(row[i].fraction);
    // Cells in order, a later one over an earlier one where a bucket under a
    // pixel is drawn 1 px wide; empty cells leave the background.
    auto make_line = [&](QRgb* line, bool wait) {
      int done = 0;
      for (size_t i = 0; i < cells; ++i) {
        const GroupCell& cell = row[i];
        if (cell.fill == 0) continue;
        const int x0 = std::max(edges_[i], 0);
        const int x1 = std::min(std::max(edges_[i] + 1, edges_[i + 1]), canvas.width);
        if (x0 >= x1) continue;
        if (x0 > done) std::fill(line + done, line + x0, background_rgb());
        std::fill(line + x0, line + x1, wait ? cell.wait : cell.fill);
        done = std::max(done, x1);
      }
      if (done < canvas.width) std::fill(line + done, line + canvas.width, background_rgb());
    };
    for (const auto& [from_y, to_y, wait] : {std::tuple{y0, wait_y0, false}, std::tuple{wait_y0, y1, true}}) {
      const int a = std::max(from_y, 0), b = std::min(to_y, canvas.height);
      if (a >= b) continue;
      QRgb* line = canvas.bits + a * canvas.stride;
      make_line(line, wait);
      for (int y = a + 1; y < b; ++y) std::copy_n(line, canvas.width, canvas.bits + y * canvas.stride);
    }
    ++drawn_groups_;
    drawn_group_rows_ += end - first;
  }
}

void TimelineView::drawOverlays(QPainter& p, const analysis::TimelineAnswer& answer) {
  const QRect plot = plotRect();
  const double row_h = rowHeight();
  p.save();
  p.setClipRect(plot);
  // The selected interval's executions: spans merged per pixel (a zoomed-out
  // view costs O(pixels log n)), outlined in the row's 1-px margins so that
  // the calls under them keep their colours, and marked in a strip along the
  // ruler's foot (for rows too thin to outline, and groups).
  if (!highlight_.empty()) {
    std::vector<char> strip(static_cast<size_t>(plot.width()) + 2, 0);
    const bool outline = !grouped() && row_h >= 6;
    p.setPen(QPen(QColor(220, 160, 0), 1));
    p.setBrush(Qt::NoBrush);
    for (size_t row : visibleRows()) {
      if (row >= highlight_.size()) continue;
      const auto& list = highlight_[row];
      const double top = plot.top() + slotTop(row);
      auto it = std::partition_point(list.begin(), list.end(), [&](const auto& e) { return e.end < from_; });
      while (it != list.end() && it->start < to_) {
        const double x0 = xOf(it->start);
        double x1 = std::max(xOf(it->end), x0 + 2);
        auto next = it + 1;
        // Merge what starts within a pixel of this span's end.
        while (next != list.end() && xOf(next->start) <= x1 + 1) {
          const double resume = timeAt(x1 + 1);
          next = std::partition_point(next, list.end(), [&](const auto& e) { return e.end < resume; });
          if (next != list.end() && xOf(next->start) <= x1 + 1) {
            x1 = std::max(xOf(next->end), x1 + 1);
            ++next;
          }
        }
        const double left = std::max(x0, plot.left() - 2.0), right = std::min(x1, plot.right() + 2.0);
        for (int x = std::max(0, static_cast<int>(left) - plot.left());
             x <= std::min(plot.width(), static_cast<int>(right) - plot.left()); ++x)
          strip[static_cast<size_t>(x)] = 1;
        if (outline) {
          // The slot's top line and its bottom line lie outside the calls (drawn
          // from top + 1 to top + h - 2); the sides are one column each.
          const double bottom = std::floor(top + row_h) - 1;
          p.drawLine(QPointF(left, std::floor(top) + 0.5), QPointF(right, std::floor(top) + 0.5));
          p.drawLine(QPointF(left, bottom + 0.5), QPointF(right, bottom + 0.5));
          p.drawLine(QPointF(std::floor(left) + 0.5, std::floor(top)), QPointF(std::floor(left) + 0.5, bottom));
          p.drawLine(QPointF(std::floor(right) + 0.5, std::floor(top)), QPointF(std::floor(right) + 0.5, bottom));
        }
        it = next;
      }
    }
    p.setClipping(false);
    for (int x = 0; x <= plot.width();) {
      if (!strip[static_cast<size_t>(x)]) {
        ++x;
        continue;
      }
      int end = x;
      while (end <= plot.width() && strip[static_cast<size_t>(end)]) ++end;
      p.fillRect(QRect(plot.left() + x, plot.top() - kHighlightStrip, end - x, kHighlightStrip), QColor(255, 200, 0));
      x = end;
    }
    p.setClipRect(plot);
  }
  // Markers: a dark tick at the top of the row, a quarter of its height, so
  // that where a loop's markers fall in every pixel column they make a band
  // along the top, not a black row hiding the calls and waits under them.
  p.setPen(QPen(kind_color(TimelineKind::Marker), 1));
  const double tick = std::max(3.0, std::floor(row_h / 4));
  for (const auto& c : drawn_calls_)
    if (c.kind == TimelineKind::Marker) {
      const double x = std::floor(xOf(static_cast<double>(c.enter))) + 0.5;
      const double top = plot.top() + slotTop(c.row);
      p.drawLine(QPointF(x, top), QPointF(x, top + std::min(tick, static_cast<double>(row_h)) - 1));
    }
  // Message arrows, from the send's entry to the receive's return.
  if (arrows_ && !answer.messages.empty() && answer.messages.size() <= maxArrows(plot.width())) {
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setPen(QPen(QColor(30, 30, 30), 1));
    p.setBrush(QColor(30, 30, 30));
    for (const auto& m : answer.messages) {
      if (rowHidden(m.send_row) || rowHidden(m.recv_row)) continue;
      const QPointF a(xOf(static_cast<double>(m.send_enter)), rowCenterY(m.send_row));
      const QPointF b(xOf(static_cast<double>(m.recv_leave)), rowCenterY(m.recv_row));
      p.drawLine(a, b);
      drawn_messages_.push_back(m);
      const QLineF line(b, a);
      if (line.length() > 6) {
        const double angle = std::atan2(a.y() - b.y(), a.x() - b.x());
        const QPointF left = b + QPointF(std::cos(angle + 0.4) * 7, std::sin(angle + 0.4) * 7);
        const QPointF right = b + QPointF(std::cos(angle - 0.4) * 7, std::sin(angle - 0.4) * 7);
        p.drawPolygon(QPolygonF({b, left, right}));
      }
      ++drawn_arrows_;
    }
    p.setRenderHint(QPainter::Antialiasing, false);
  }
  // Waits to their releasing calls: dashed red arrows, from the wait's start
  // on the waiting row to the late partner's enter.
  {
    std::vector<const DrawnWait*> arrows;
    if (drawn_waits_.size() <= kMaxWaitArrows)
      for (const DrawnWait& w : drawn_waits_) arrows.push_back(&w);
    else if (hovered_wait_)
      arrows.push_back(&*hovered_wait_);
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setPen(QPen(waiting_color(), 1, Qt::DashLine));
    p.setBrush(waiting_color());
    for (const DrawnWait* w : arrows) {
      if (rowHidden(w->row) || rowHidden(w->partner_row) || w->row == w->partner_row) continue;
      const QPointF a(xOf(w->begin), rowCenterY(w->row));
      const QPointF b(xOf(w->partner_enter), rowCenterY(w->partner_row));
      p.drawLine(a, b);
      if (QLineF(a, b).length() > 6) {
        const double angle = std::atan2(a.y() - b.y(), a.x() - b.x());
        p.drawPolygon(QPolygonF({b, b + QPointF(std::cos(angle + 0.4) * 6, std::sin(angle + 0.4) * 6),
                                 b + QPointF(std::cos(angle - 0.4) * 6, std::sin(angle - 0.4) * 6)}));
      }
      ++drawn_wait_arrows_;
    }
    p.setRenderHint(QPainter::Antialiasing, false);
  }
  // The selected call (find): a magenta outline.
  if (selected_call_ && !rowHidden(selected_call_->row)) {
    const double top = plot.top() + slotTop(selected_call_->row);
    const double x0 = std::floor(xOf(static_cast<double>(selected_call_->enter)));
    const double x1 = std::max(x0 + 3, std::ceil(xOf(static_cast<double>(selected_call_->leave()))));
    p.setPen(QPen(QColor(200, 0, 160), 2));
    p.setBrush(Qt::NoBrush);
    p.drawRect(QRectF(x0 - 1, top + 1, x1 - x0 + 2, row_h - 2));
  }
  // Rubber band of a zoom to a range.
  if (drag_ == Drag::Range && moved_) {
    const int x0 = std::min(press_.x(), last_.x()), x1 = std::max(press_.x(), last_.x());
    p.setPen(QColor(40, 80, 200));
    p.setBrush(QColor(40, 80, 200, 50));
    p.drawRect(QRect(x0, plot.top(), x1 - x0, plot.height() - 1));
  }
  p.restore();
  // Row labels, redrawn only when the rows in sight move: one a row when
  // rows are tall enough, else every m-th row's rank (m a 1-2-5 step leaving
  // 20 px between them) with a tick.
  auto key = std::make_tuple(scroll_, row_h, plot.height(), visibleRows());
  if (labels_.isNull() || key != labels_key_) {
    labels_ = QImage(kLabelWidth, plot.height(), QImage::Format_RGB32);
    labels_.fill(background_rgb());
    QPainter lp(&labels_);
    lp.setFont(font());
    lp.setPen(QColor(40, 40, 40));
    const auto& rows = timeline_->rows();
    if (row_h >= kLabelRowHeight) {
      for (size_t r : std::get<3>(key))
        lp.drawText(QRectF(4, slotTop(r), kLabelWidth - 8, row_h), Qt::AlignVCenter | Qt::AlignLeft, row_label(rows[r]));
    } else if (!shown_.empty()) {
      const size_t m = static_cast<size_t>(nice_step(20 / row_h));
      for (size_t slot = static_cast<size_t>(std::ceil(scroll_ / (row_h * static_cast<double>(m)))) * m;
           slot < shown_.size() && static_cast<double>(slot) * row_h - scroll_ < plot.height(); slot += m) {
        const double y = std::floor(static_cast<double>(slot) * row_h) - scroll_;
        lp.drawLine(QPointF(kLabelWidth - 6, y + 0.5), QPointF(kLabelWidth, y + 0.5));
        lp.drawText(QRectF(4, y - 1, kLabelWidth - 12, 16), Qt::AlignTop | Qt::AlignLeft, row_label(rows[shown_[slot]]));
      }
    }
    labels_key_ = std::move(key);
  }
  p.drawImage(QPoint(0, plot.top()), labels_);
  p.setPen(QColor(200, 200, 200));
  p.drawLine(plot.left() - 1, plot.top(), plot.left() - 1, plot.bottom());
}

std::vector<TimelineView::RulerTick> TimelineView::rulerTicks() const {
  const QRect plot = plotRect();
  const QFontMetrics metrics(font());
  const double ns_per_px = (to_ - from_) / plot.width();
  // Ticks far enough apart for the widest label the step's decimals give
  // (deep zooms late in a run need many digits), and a label never drawn over
  // the one before it or past the plot.
  std::vector<RulerTick> ticks;
  double spacing = 110;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const double step = nice_step(ns_per_px * spacing);
    const int decimals = std::clamp(static_cast<int>(-std::floor(std::log10(step / 1e9))), 0, 9);
    const int widest = metrics.horizontalAdvance(QString::number(to_ / 1e9, 'f', decimals) + " s") + 12;
    if (widest > spacing) {
      spacing = widest;
      continue;
    }
    int last_right = plot.left() - 1;
    for (double t = std::ceil(from_ / step) * step; t < to_; t += step) {
      const int x = static_cast<int>(std::lround(xOf(t)));
      const QString text = QString::number(t / 1e9, 'f', decimals) + " s";
      const QRect rect(x + 3, 0, metrics.horizontalAdvance(text), kRulerHeight - 4);
      const bool labelled = rect.left() > last_right && rect.right() < width();
      if (labelled) last_right = rect.right() + 6;
      ticks.push_back({x, labelled ? text : QString(), labelled ? rect : QRect()});
    }
    break;
  }
  return ticks;
}

void TimelineView::drawRuler(QPainter& p) {
  p.fillRect(QRect(0, 0, width(), kRulerHeight), QColor(236, 236, 240));
  p.setPen(QColor(60, 60, 60));
  for (const RulerTick& tick : rulerTicks()) {
    p.drawLine(tick.x, kRulerHeight - 6, tick.x, kRulerHeight);
    if (!tick.label.isEmpty()) p.drawText(tick.label_rect, Qt::AlignLeft | Qt::AlignBottom, tick.label);
  }
  p.drawText(QRect(4, 0, kLabelWidth - 6, kRulerHeight), Qt::AlignVCenter,
             duration_text(to_ - from_));
}

void TimelineView::drawLegend(QPainter& p) {
  const int y = height() - kLegendHeight;
  p.fillRect(QRect(0, y, width(), kLegendHeight), QColor(236, 236, 240));
  const std::pair<QString, QColor> items[] = {
      {tr("user code"), kind_color(TimelineKind::User)},
      {tr("point-to-point"), kind_color(TimelineKind::PointToPoint)},
      {tr("collective"), kind_color(TimelineKind::Collective)},
      {tr("all-to-all"), kind_color(TimelineKind::AllToAll)},
      {tr("other MPI"), kind_color(TimelineKind::OtherMpi)},
      {tr("interval marker"), kind_color(TimelineKind::Marker)},
      {tr("waiting (potential sync)"), waiting_color()},
      {tr("selected interval"), QColor(255, 200, 0)},
  };
  int x = 8;
  p.setPen(QColor(40, 40, 40));
  for (const auto& [name, colour] : items) {
    p.fillRect(QRect(x, y + 5, 12, 12), colour);
    x += 16;
    p.drawText(QPoint(x, y + 15), name);
    x += p.fontMetrics().horizontalAdvance(name) + 14;
  }
}

std::optional<TimelineCall> TimelineView::callAt(QPoint pos) const {
  const QRect plot = plotRect();
  const int row = rowAt(pos.y());
  if (!timeline_ || grouped() || row < 0 || pos.x() < plot.left() || pos.x() > plot.right()) return std::nullopt;
  analysis::TimelineQuery q;
  q.rows = {static_cast<size_t>(row)};
  q.from = from_;
  q.to = to_;
  q.buckets = static_cast<uint32_t>(plot.width());
  const auto answer = timeline_->query(q);
  if (answer.rows.empty()) return std::nullopt;
  const auto& answer_row = answer.rows[0];
  const double px = pos.x() + 0.5;
  if (answer_row.summarized) {
    const double t = timeAt(px);
    const double i = std::floor((t - answer_row.bucket_from) / answer_row.bucket_width);
    if (i < 0 || i >= static_cast<double>(answer_row.buckets.size())) return std::nullopt;
    const auto& b = answer_row.buckets[static_cast<size_t>(i)];
    if (!b.has_longest) return std::nullopt;
    return timeline_->call(static_cast<size_t>(row), b.longest_index);
  }
  // The call under the pixel, else the nearest within 3 px; among equals the
  // shortest (a marker or a short call drawn over a long one).
  std::optional<TimelineCall> best;
  double best_distance = 3.5;
  for (const auto& c : answer_row.calls) {
    const double x0 = std::floor(xOf(static_cast<double>(c.enter)));
    const double x1 = std::max(x0 + 1, std::ceil(xOf(static_cast<double>(c.leave()))));
    const double d = px >= x0 && px <= x1 ? 0 : std::min(std::abs(px - x0), std::abs(px - x1));
    if (d < best_distance || (d == best_distance && best && c.duration < best->duration)) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::optional<analysis::TimelineExecution> TimelineView::executionAt(size_t row, double t) const {
  if (!timeline_) return std::nullopt;
  const auto list = timeline_->executions(row);
  // Sorted by start and nested: the latest start that still contains t is
  // the innermost.
  auto it = std::partition_point(list.begin(), list.end(), [&](const auto& e) { return e.start <= t; });
  while (it != list.begin()) {
    --it;
    if (it->end >= t) return *it;
  }
  return std::nullopt;
}

QString TimelineView::groupTooltip(QPoint pos) const {
  const QRect plot = plotRect();
  const auto group = groupAt(pos.y());
  if (!group || pos.x() < plot.left() || pos.x() > plot.right()) return {};
  const auto& rows = timeline_->rows();
  const auto& a = rows[shown_[group->first]];
  const auto& b = rows[shown_[group->second - 1]];
  analysis::TimelineGroupQuery q;
  q.groups = {std::vector<size_t>(shown_.begin() + static_cast<std::ptrdiff_t>(group->first),
                                  shown_.begin() + static_cast<std::ptrdiff_t>(group->second))};
  q.from = from_;
  q.to = to_;
  q.buckets = static_cast<uint32_t>(plot.width());
  const auto answer = timeline_->summarize_groups(q);
  QStringList lines;
  const size_t n = group->second - group->first;
  lines << (n == 1 ? QStringLiteral("<b>%1</b>").arg(row_label(a))
                   : QStringLiteral("<b>ranks %1-%2</b> (%3 rows)").arg(a.rank).arg(b.rank).arg(n));
  const double i = std::floor((timeAt(pos.x() + 0.5) - answer.bucket_from) / answer.bucket_width);
  if (answer.groups.empty() || i < 0 || i >= static_cast<double>(answer.groups[0].size())) return lines.join("<br>");
  const auto& bucket = answer.groups[0][static_cast<size_t>(i)];
  const double b0 = answer.bucket_from + i * answer.bucket_width;
  const double whole = static_cast<double>(n) * answer.bucket_width;
  lines << tr("%1 s to %2 s").arg(QString::number(b0 / 1e9, 'f', 9), QString::number((b0 + answer.bucket_width) / 1e9, 'f', 9));
  lines << tr("mostly %1; MPI %2% of the rows' time").arg(QString::fromUtf8(analysis::timeline_kind_name(bucket.dominant)))
               .arg(100 * bucket.mpi() / whole, 0, 'f', 1);
  for (int k = 0; k < analysis::kTimelineKinds; ++k)
    if (bucket.time[k] > 0)
      lines << tr("%1 %2%").arg(QString::fromUtf8(analysis::timeline_kind_name(static_cast<TimelineKind>(k))))
                   .arg(100 * bucket.time[k] / whole, 0, 'f', 1);
  if (bucket.wait > 0)
    lines << tr("waiting (potential sync) %1% of the rows' time").arg(100 * bucket.wait / whole, 0, 'f', 1);
  lines << tr("%1 calls").arg(bucket.count);
  return lines.join("<br>");
}

std::optional<TimelineView::SummaryWait> TimelineView::summaryWaitAt(QPoint pos) const {
  const QRect plot = plotRect();
  const int x = pos.x() - plot.left(), y = pos.y() - plot.top();
  if (x < 0 || x >= plot.width()) return std::nullopt;
  const double scale = plot.width() / (to_ - from_);
  for (const DrawnSummary& s : drawn_summaries_) {
    if (y < s.y0 || y >= s.y1 || s.buckets == 0) continue;
    // The bucket whose columns [floor(x of its start), floor(x of its end)) hold x.
    auto edge = [&](size_t i) {
      return static_cast<int>(std::floor((s.bucket_from + static_cast<double>(i) * s.bucket_width - from_) * scale));
    };
    size_t i = static_cast<size_t>(std::clamp((from_ + (x + 0.5) / scale - s.bucket_from) / s.bucket_width, 0.0,
                                              static_cast<double>(s.buckets - 1)));
    while (i > 0 && edge(i) > x) --i;
    while (i + 1 < s.buckets && edge(i + 1) <= x) ++i;
    const double b0 = s.bucket_from + static_cast<double>(i) * s.bucket_width;
    return SummaryWait{b0, b0 + s.bucket_width, s.first_row, s.rows, drawn_fractions_[s.fractions + i]};
  }
  return std::nullopt;
}

std::optional<TimelineView::DrawnWait> TimelineView::waitAt(QPoint pos) const {
  const int row = rowAt(pos.y());
  if (row < 0) return std::nullopt;
  // Within a pixel of the span (a short wait is drawn 1 px wide).
  const double t = timeAt(pos.x() + 0.5), slack = (to_ - from_) / std::max(1, plotRect().width());
  for (const DrawnWait& w : drawn_waits_)
    if (w.row == static_cast<size_t>(row) && t >= w.begin - slack && t <= w.end + slack) return w;
  return std::nullopt;
}

int TimelineView::waitKind(const DrawnWait& w) const {
  if (w.message) return analysis::kLateSender;
  const auto call = timeline_->call(w.row, w.index);
  if (!call) return analysis::kWaitAtCollectiveOther;
  // As the analysis classes a member (function_roles.h). The root is taken
  // to be the member whose position in the instance (row order) is the
  // call's root rank: exact where the communicator's ranks follow the world's
  // order (MPI_COMM_WORLD, splits keyed by rank).
  const uint16_t role = format::function_role(call->function);
  const bool root = call->peer >= 0 && static_cast<size_t>(call->peer) == w.member;
  if (role & format::kRoleBarrier) return analysis::kWaitAtBarrier;
  if (role & format::kRoleNxN) return analysis::kWaitAtNxN;
  if ((role & format::kRoleOneToAll) && !root) return analysis::kLateRoot;
  if ((role & format::kRoleAllToOne) && root) return analysis::kEarlyRoot;
  return analysis::kWaitAtCollectiveOther;
}

QString TimelineView::tooltipAt(QPoint pos) const {
  if (timeline_ && grouped()) return groupTooltip(pos);
  const auto call = callAt(pos);
  const auto wait = waitAt(pos);
  const auto message = messageAt(pos);
  QStringList lines;
  if (message) {
    // The arrow first: it lies over calls and user code alike.
    lines << describeMessage(*message);
    lines[0] = QStringLiteral("<b>%1</b>").arg(lines[0]);
    if (call || wait) lines << QString();
  }
  if (!call && !wait) {
    const int row = rowAt(pos.y());
    const QRect plot = plotRect();
    if (row < 0 || pos.x() < plot.left() || pos.x() > plot.right()) return lines.join("<br>");
    if (const auto span = userCodeAt(static_cast<size_t>(row), timeAt(pos.x() + 0.5))) {
      if (message) lines << QString();
      QStringList about = describeUserCode(*span);
      about[0] = QStringLiteral("<b>%1</b>").arg(about[0]);
      lines << about;
    }
    return lines.join("<br>");
  }
  if (wait) {
    // The wait first: its kind, the late partner and how long.
    const auto partner = timeline_->call(wait->partner_row, wait->partner_index);
    const QString function =
        partner ? QString::fromUtf8(partner->function.data(), static_cast<int>(partner->function.size())) : QString();
    lines << QStringLiteral("<b>%1</b>: %2").arg(QString::fromUtf8(analysis::kWaitKindLabels[waitKind(*wait)]),
                                                  duration_text(wait->end - wait->begin));
    lines << (wait->message ? tr("waited for rank %1's %2 (the send) at %3 s")
                            : tr("waited for rank %1's %2 (the last member to enter) at %3 s"))
                 .arg(timeline_->rows()[wait->partner_row].rank)
                 .arg(function)
                 .arg(QString::number(wait->partner_enter / 1e9, 'f', 9));
    if (!call) return lines.join("<br>");
    lines << QString();
  }
  QStringList about = describeCall(*call);
  about[0] = QStringLiteral("<b>%1</b>").arg(about[0]);
  lines << about;
  return lines.join("<br>");
}

std::pair<const analysis::CallInFlight*, const analysis::RankEnd*> TimelineView::inFlight(
    const TimelineCall& c) const {
  if (!timeline_ || c.row >= timeline_->rows().size()) return {nullptr, nullptr};
  const auto& row = timeline_->rows()[c.row];
  for (const analysis::RankEnd& end : run_end_) {
    if (end.rank != row.rank) continue;
    // The same thread and function, entered at the same moment (the report's
    // seconds against the timeline's nanoseconds: within a microsecond).
    for (const analysis::CallInFlight& f : end.in_flight)
      if (f.stream == row.stream && f.function == c.function &&
          std::abs(f.entered * 1e9 - static_cast<double>(c.enter)) < 1000)
        return {&f, &end};
  }
  return {nullptr, nullptr};
}

QStringList TimelineView::describeCall(const TimelineCall& c) const {
  QStringList lines;
  lines << QStringLiteral("%1 (%2)")
               .arg(QString::fromUtf8(c.function.data(), static_cast<int>(c.function.size())),
                    c.kind == TimelineKind::Marker ? tr("interval marker")
                                                   : QString::fromUtf8(analysis::timeline_kind_name(c.kind)));
  const auto& row = timeline_->rows()[c.row];
  lines << tr("rank %1, thread %2").arg(row.rank).arg(row.stream);
  if (c.kind == TimelineKind::Marker)
    lines << tr("interval %1, call site %2").arg(c.interval_id).arg(QString::fromStdString(timeline_->site(c.site)));
  lines << tr("enter %1 s, duration %2").arg(QString::number(static_cast<double>(c.enter) / 1e9, 'f', 9),
                                             duration_text(static_cast<double>(c.duration)));
  if (c.kind != TimelineKind::Marker) {
    // The call's own site, looked up now: the timeline keeps only its index.
    // A call in flight at the rank's end has none there: the report's.
    const auto [in_flight, end] = inFlight(c);
    if (const uint32_t site = timeline_->call_site(c); site != 0)
      lines << tr("called from %1").arg(QString::fromStdString(timeline_->site(site)));
    else if (in_flight && !in_flight->site_label.empty())
      lines << tr("called from %1").arg(QString::fromStdString(in_flight->site_label));
    if (in_flight) {
      lines << tr("<b>in flight</b> when the rank ended (%1, last alive at %2 s)")
                   .arg(QString::fromStdString(end->ended_by), QString::number(end->last_alive, 'f', 6));
      QStringList waited;
      for (int rank : in_flight->waiting_for) waited << QString::number(rank);
      if (!waited.isEmpty()) lines << tr("waiting for rank %1").arg(waited.join(", "));
    }
    if (c.bytes > 0 || c.kind != TimelineKind::OtherMpi) lines << tr("bytes %1").arg(c.bytes);
    if (c.peer >= 0) lines << tr("peer %1").arg(c.peer);
    if (c.tag >= 0) lines << tr("tag %1").arg(c.tag);
    if (const auto e = executionAt(c.row, static_cast<double>(c.enter))) {
      const auto nodes = timeline_->nodes();
      if (e->node < nodes.size() && e->node != 0)
        lines << tr("in interval %1 (call site %2)")
                     .arg(nodes[e->node].id)
                     .arg(QString::fromStdString(timeline_->site(nodes[e->node].site)));
      else
        lines << tr("in the whole run (no user interval)");
    }
  }
  return lines;
}

std::optional<TimelineView::UserSpan> TimelineView::userCodeAt(size_t row, double t) const {
  if (!timeline_ || row >= timeline_->rows().size()) return std::nullopt;
  // The nearest MPI calls on either side (markers skipped: an annotation, not a call).
  // Enters are whole ns: the last entering at or before t, the first after it.
  auto neighbour = [&](bool forward) {
    std::optional<TimelineCall> c = timeline_->find_call(row, {}, std::floor(t) + 1, forward);
    while (c && c->kind == TimelineKind::Marker)
      c = forward ? timeline_->call(row, c->index + 1)
                  : c->index > 0 ? timeline_->call(row, c->index - 1) : std::nullopt;
    return c;
  };
  UserSpan span;
  span.row = row;
  span.before = neighbour(false);
  if (span.before && static_cast<double>(span.before->leave()) > t) return std::nullopt;  // inside that call
  span.after = neighbour(true);
  // The rank's run: its root execution (node 0) bounds the span at either end.
  std::optional<analysis::TimelineExecution> run;
  if (!span.before || !span.after)
    for (const auto& e : timeline_->executions(row))
      if (e.node == 0) {
        run = e;
        break;
      }
  span.from = span.before ? static_cast<double>(span.before->leave()) : run ? run->start : 0;
  span.to = span.after ? static_cast<double>(span.after->enter) : run ? run->end : timeline_->end();
  if (!(t >= span.from && t <= span.to) || !(span.to > span.from)) return std::nullopt;
  return span;
}

QStringList TimelineView::describeUserCode(const UserSpan& span) const {
  auto name = [](const std::optional<TimelineCall>& c) {
    return QString::fromUtf8(c->function.data(), static_cast<int>(c->function.size()));
  };
  QStringList lines;
  lines << tr("UserCode (user code)");
  const auto& row = timeline_->rows()[span.row];
  lines << tr("rank %1, thread %2").arg(row.rank).arg(row.stream);
  lines << tr("from %1 s (%2)").arg(QString::number(span.from / 1e9, 'f', 9),
                                     span.before ? tr("after %1").arg(name(span.before)) : tr("the rank's start"));
  lines << tr("to %1 s (%2)").arg(QString::number(span.to / 1e9, 'f', 9),
                                   span.after ? tr("before %1").arg(name(span.after)) : tr("the rank's end"));
  lines << tr("duration %1").arg(duration_text(span.to - span.from));
  return lines;
}

std::optional<analysis::TimelineMessage> TimelineView::messageAt(QPoint pos) const {
  std::optional<analysis::TimelineMessage> best;
  double best_distance = 3;
  const QPointF p(pos);
  for (const auto& m : drawn_messages_) {
    const QPointF a(xOf(static_cast<double>(m.send_enter)), rowCenterY(m.send_row));
    const QPointF b(xOf(static_cast<double>(m.recv_leave)), rowCenterY(m.recv_row));
    // Distance to the segment a-b.
    const QPointF ab = b - a;
    const double length2 = QPointF::dotProduct(ab, ab);
    const double u = length2 > 0 ? std::clamp(QPointF::dotProduct(p - a, ab) / length2, 0.0, 1.0) : 0.0;
    const QPointF d = p - (a + u * ab);
    const double distance = std::hypot(d.x(), d.y());
    if (distance <= best_distance) {
      best = m;
      best_distance = distance;
    }
  }
  return best;
}

QStringList TimelineView::describeMessage(const analysis::TimelineMessage& m) const {
  const auto& rows = timeline_->rows();
  const auto send = timeline_->call(m.send_row, m.send_index);
  QStringList lines;
  lines << tr("Message rank %1 to rank %2").arg(rows[m.send_row].rank).arg(rows[m.recv_row].rank);
  if (send) {
    lines << tr("bytes %1, tag %2").arg(send->bytes).arg(send->tag);
    lines << tr("sent by %1 at %2 s")
                 .arg(QString::fromUtf8(send->function.data(), static_cast<int>(send->function.size())),
                      QString::number(static_cast<double>(m.send_enter) / 1e9, 'f', 9));
  }
  lines << tr("received at %1 s").arg(QString::number(static_cast<double>(m.recv_leave) / 1e9, 'f', 9));
  lines << tr("latency %1 (the send's enter to the receive's return)")
               .arg(duration_text(static_cast<double>(m.recv_leave - m.send_enter)));
  return lines;
}

void TimelineView::setSelectedCall(std::optional<TimelineCall> call) {
  selected_call_ = std::move(call);
  update();
}

std::optional<TimelineCall> TimelineView::findCall(const std::vector<std::string>& functions, bool forward,
                                                   const FindFilter& filter) {
  wrapped_ = false;
  if (!timeline_ || shown_.empty() || functions.empty()) return std::nullopt;
  auto passes = [&](const TimelineCall& c) {
    return static_cast<double>(c.duration) >= filter.min_duration && (filter.peer < 0 || c.peer == filter.peer) &&
           (filter.sites.empty() ||
            std::find(filter.sites.begin(), filter.sites.end(), timeline_->call_site(c)) != filter.sites.end());
  };
  // The first call after (forward) or before the anchor (e0, r0) in (enter,
  // row) order; without an anchor row, from time e0 on every row.
  auto search = [&](double e0, std::optional<size_t> r0) {
    std::optional<TimelineCall> best;
    for (size_t row : shown_) {
      // Enters are whole ns: "after (e0, r0)" is enter >= e0 on later rows and
      // enter >= e0 + 1 on the others; "before" is enter < e0 on r0 and later
      // rows, enter < e0 + 1 on earlier ones.
      double t = e0;
      if (r0 && (forward ? row <= *r0 : row < *r0)) t = e0 + 1;
      for (const std::string& function : functions) {
        auto c = timeline_->find_call(row, function, t, forward);
        while (c && !passes(*c))
          c = timeline_->find_call(row, function, static_cast<double>(c->enter) + (forward ? 1 : 0), forward);
        if (!c) continue;
        const bool better = !best || (forward ? std::tie(c->enter, c->row) < std::tie(best->enter, best->row)
                                              : std::tie(c->enter, c->row) > std::tie(best->enter, best->row));
        if (better) best = c;
      }
    }
    return best;
  };
  // The anchor: (enter, row) of the selected call, or the range's start.
  const bool from_selection = selected_call_ && static_cast<double>(selected_call_->enter) >= from_ &&
                              static_cast<double>(selected_call_->enter) < to_;
  std::optional<TimelineCall> best =
      from_selection ? search(static_cast<double>(selected_call_->enter), selected_call_->row) : search(from_, {});
  if (!best) {
    best = search(forward ? -1.0 : std::max(timeline_->end(), 0.0) + 1, {});
    wrapped_ = best.has_value();
  }
  if (!best) return std::nullopt;
  selected_call_ = best;
  scrollToRow(best->row);
  const double enter = static_cast<double>(best->enter), duration = static_cast<double>(best->duration);
  const double width = to_ - from_;
  const bool readable = duration * plotRect().width() / width >= 2 && duration <= 0.8 * width;
  const bool inside = enter >= from_ && enter + duration <= to_;
  if (!(readable && inside)) {
    // Centred; the current zoom when the call reads at it, else five times the call.
    const double w = readable ? width : std::max(duration * 5, 1000.0);
    const ViewState before = viewState();
    navigateTo(enter + duration / 2 - w / 2, enter + duration / 2 + w / 2);
    remember(before);
  }
  update();
  return best;
}

std::optional<analysis::TimelineExecution> TimelineView::findExecution(const std::vector<uint32_t>& nodes,
                                                                       bool forward, double min_duration) {
  wrapped_ = false;
  if (!timeline_ || shown_.empty() || nodes.empty()) return std::nullopt;
  // The shown rows' executions of the nodes, in (start, row) order.
  std::vector<analysis::TimelineExecution> found;
  for (size_t row : shown_)
    for (const auto& e : timeline_->executions(row))
      if (e.end - e.start >= min_duration && std::find(nodes.begin(), nodes.end(), e.node) != nodes.end())
        found.push_back(e);
  if (found.empty()) return std::nullopt;
  auto key = [](const analysis::TimelineExecution& e) { return std::make_tuple(e.start, e.row, e.node); };
  std::sort(found.begin(), found.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  // The anchor: the last one found while it starts in view, else the range's
  // start (forward: the first starting there or later; backward: the last before).
  const bool from_last = found_execution_ && found_execution_->start >= from_ && found_execution_->start < to_;
  std::vector<analysis::TimelineExecution>::const_iterator it;
  if (from_last) {
    it = forward ? std::upper_bound(found.begin(), found.end(), *found_execution_,
                                    [&](const auto& a, const auto& b) { return key(a) < key(b); })
                 : std::lower_bound(found.begin(), found.end(), *found_execution_,
                                    [&](const auto& a, const auto& b) { return key(a) < key(b); });
  } else {
    it = std::lower_bound(found.begin(), found.end(), from_,
                          [](const analysis::TimelineExecution& e, double t) { return e.start < t; });
  }
  if (forward) {
    wrapped_ = it == found.end();
    if (wrapped_) it = found.begin();
  } else {
    wrapped_ = it == found.begin();
    it = wrapped_ ? found.end() - 1 : it - 1;
  }
  const analysis::TimelineExecution best = *it;
  found_execution_ = best;
  scrollToRow(best.row);
  const double margin = std::max((best.end - best.start) * 0.1, 100.0);
  const ViewState before = viewState();
  navigateTo(best.start - margin, best.end + margin);
  remember(before);
  update();
  return best;
}

void TimelineView::zoomAbout(double t, double factor) {
  const ViewState before = viewState();
  const double width = std::max((to_ - from_) * factor, kMinWidthNs);
  const double share = (t - from_) / (to_ - from_);
  navigateTo(t - share * width, t - share * width + width);
  remember(before);
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  // Wheel zooms close together are one gesture (a touchpad sends dozens):
  // one history entry, the gesture's last view.
  const bool gesture = wheel_zoomed_ && wheel_clock_.isValid() && wheel_clock_.elapsed() < kWheelGestureMs &&
                       history_pos_ >= 1 && history_pos_ + 1 == history_.size() &&
                       history_[history_pos_].sameView(viewState());
  const size_t entries = history_.size();
  auto zoomed = [&] {
    // The zoom added an entry after the gesture's last one: that one goes.
    if (gesture && history_.size() == entries + 1 && history_pos_ + 1 == history_.size()) {
      history_.erase(history_.begin() + static_cast<std::ptrdiff_t>(history_pos_) - 1);
      --history_pos_;
      emit historyChanged();
    }
    wheel_zoomed_ = true;
    wheel_clock_.restart();
  };
  if (e->modifiers() & Qt::ShiftModifier) {  // rows
    const int delta = e->angleDelta().y() != 0 ? e->angleDelta().y() : e->angleDelta().x();
    setRowZoom(row_zoom_ * std::pow(1.0025, delta), static_cast<int>(e->position().y()));
    zoomed();
    e->accept();
    return;
  }
  if (rowsOverflow() && !(e->modifiers() & Qt::ControlModifier)) {
    // Three rows per notch (or the touchpad's pixels).
    const int dy = !e->pixelDelta().isNull() ? e->pixelDelta().y()
                                             : static_cast<int>(e->angleDelta().y() / 120.0 * 3 * rowHeight());
    setVerticalScroll(scroll_ - dy);
    e->accept();
    return;
  }
  const double factor = std::pow(0.998, e->angleDelta().y());
  zoomAbout(timeAt(e->position().x()), factor);
  zoomed();
  e->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  press_ = last_ = e->position().toPoint();
  moved_ = false;
  if (press_.x() < plotRect().left()) {  // the labels: their menu, no drag
    drag_ = Drag::None;
    return;
  }
  const bool range = e->button() == Qt::RightButton ||
                     (e->button() == Qt::LeftButton && (e->modifiers() & Qt::ShiftModifier));
  drag_ = range ? Drag::Range : e->button() == Qt::LeftButton ? Drag::Pan : Drag::None;
  drag_start_ = viewState();
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  const QPoint pos = e->position().toPoint();
  if (drag_ == Drag::None) return;
  if ((pos - press_).manhattanLength() >= 3) moved_ = true;
  if (drag_ == Drag::Pan && moved_) {
    const double dt = (pos.x() - last_.x()) * (to_ - from_) / plotRect().width();
    navigateTo(from_ - dt, to_ - dt);
  }
  last_ = pos;
  if (drag_ == Drag::Range) update();
}

void TimelineView::mouseReleaseEvent(QMouseEvent* e) {
  const QPoint pos = e->position().toPoint();
  const Drag drag = drag_;
  drag_ = Drag::None;
  if (drag == Drag::Range && moved_) {
    const double a = timeAt(std::min(press_.x(), pos.x())), b = timeAt(std::max(press_.x(), pos.x()));
    navigateTo(a, b);
    remember(drag_start_);
    emit rangeDragged(from_, to_);
    return;
  }
  if (drag == Drag::Pan && moved_) remember(drag_start_);
  if (!moved_ && e->button() == Qt::LeftButton) {
    if (const auto call = callAt(pos)) {
      selected_call_ = call;  // find goes on from here
      const auto exe = executionAt(call->row, static_cast<double>(call->enter));
      emit callClicked(call->row, call->index, exe ? static_cast<int>(exe->node) : -1);
    }
  }
  update();
}

void TimelineView::keyPressEvent(QKeyEvent* e) {
  const double width = to_ - from_, mid = (from_ + to_) / 2;
  if (e->modifiers() & Qt::ControlModifier) {  // rows
    const int centre = plotRect().center().y();
    switch (e->key()) {
      case Qt::Key_Plus:
      case Qt::Key_Equal: return setRowZoom(row_zoom_ * 2, centre);
      case Qt::Key_Minus: return setRowZoom(row_zoom_ / 2, centre);
      case Qt::Key_0: return fitRows();
      default: break;
    }
  }
  switch (e->key()) {
    case Qt::Key_Left:
    case Qt::Key_Right: {
      const ViewState before = viewState();
      const double dt = (e->key() == Qt::Key_Left ? -0.2 : 0.2) * width;
      navigateTo(from_ + dt, to_ + dt);
      remember(before);
      break;
    }
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomAbout(mid, 0.5); break;
    case Qt::Key_Minus: zoomAbout(mid, 2.0); break;
    case Qt::Key_Home:
    case Qt::Key_0: showAll(); break;
    case Qt::Key_Up: setVerticalScroll(scroll_ - std::max(1, static_cast<int>(rowHeight()))); break;
    case Qt::Key_Down: setVerticalScroll(scroll_ + std::max(1, static_cast<int>(rowHeight()))); break;
    case Qt::Key_PageUp: setVerticalScroll(scroll_ - plotRect().height()); break;
    case Qt::Key_PageDown: setVerticalScroll(scroll_ + plotRect().height()); break;
    default: QWidget::keyPressEvent(e);
  }
}

bool TimelineView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    // The wait under the mouse gets its arrow (drawn for every wait when few).
    const auto wait = grouped() ? std::nullopt : waitAt(help->pos());
    const bool changed = wait.has_value() != hovered_wait_.has_value() ||
                         (wait && (wait->row != hovered_wait_->row || wait->begin != hovered_wait_->begin));
    hovered_wait_ = wait;
    if (changed && drawn_waits_.size() > kMaxWaitArrows) update();
    const QString text = tooltipAt(help->pos());
    if (text.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), text, this);
    return true;
  }
  return QWidget::event(e);
}

}  // namespace prof::gui
