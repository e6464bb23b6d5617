#include "function_chart.h"

#include <QPainter>
#include <algorithm>

#include "trace_session.h"

namespace prof::gui {

FunctionChart::FunctionChart(QWidget* parent) : QWidget(parent) {
  setObjectName("functionChart");
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void FunctionChart::setFunctions(std::vector<analysis::FunctionFigures> functions) {
  functions_ = std::move(functions);
  compared_.clear();
  comparing_ = false;
  longest_ = 0;
  for (const auto& f : functions_) longest_ = std::max(longest_, f.time);
  updateHeight();
  update();
}

void FunctionChart::setComparedFunctions(std::vector<analysis::ComparedFunction> functions, bool in_a, bool in_b) {
  compared_ = std::move(functions);
  functions_.clear();
  comparing_ = true;
  in_a_ = in_a;
  in_b_ = in_b;
  longest_ = 0;
  for (const auto& f : compared_) longest_ = std::max({longest_, f.time_a, f.time_b});
  updateHeight();
  update();
}

int FunctionChart::count() const {
  return static_cast<int>(comparing_ ? compared_.size() : functions_.size());
}

QString FunctionChart::name(size_t i) const {
  return QString::fromStdString(comparing_ ? compared_[i].name : functions_[i].name);
}

// Comparing, a row holds two bars.
int FunctionChart::rowHeight() const { return (fontMetrics().height() + 6) * (comparing_ ? 2 : 1); }

int FunctionChart::labelWidth() const {
  int w = fontMetrics().horizontalAdvance("MPI_Allreduce");
  for (int i = 0; i < count(); ++i) w = std::max(w, fontMetrics().horizontalAdvance(name(static_cast<size_t>(i))));
  return w + 8;
}

void FunctionChart::updateHeight() {
  setMinimumHeight(rowHeight() * std::max(1, count()) + 4);
  updateGeometry();
}

QSize FunctionChart::sizeHint() const { return {400, minimumHeight()}; }

void FunctionChart::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  update();
}

QRectF FunctionChart::barRect(int i, bool b) const {
  if (i < 0 || i >= count()) return {};
  if (comparing_ && !(b ? in_b_ : in_a_)) return {};
  // Room on the right for the "time s, N calls" label.
  const double left = labelWidth();
  const double room =
      std::max(10.0, width() - left - fontMetrics().horizontalAdvance("B 0.000000 s, 0000000 calls") - 8);
  const auto k = static_cast<size_t>(i);
  const double time = !comparing_ ? functions_[k].time : b ? compared_[k].time_b : compared_[k].time_a;
  const double fraction = longest_ > 0 ? time / longest_ : 0;
  const int h = rowHeight();
  if (!comparing_) return QRectF(left, 2 + i * h + 2, room * fraction, h - 4);
  const int half = h / 2;
  return QRectF(left, 2 + i * h + (b ? half : 0) + 2, room * fraction, half - 4);
}

void FunctionChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (count() == 0) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("No MPI calls"));
    return;
  }
  const int h = rowHeight();
  const QColor a_colour(70, 130, 180), b_colour(230, 140, 40);
  for (int i = 0; i < count(); ++i) {
    const int y = 2 + i * h;
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(2, y, labelWidth() - 6, h), Qt::AlignRight | Qt::AlignVCenter, name(static_cast<size_t>(i)));
    auto bar = [&](const QRectF& r, const QColor& colour, const QString& label) {
      p.fillRect(r, colour);
      p.setPen(palette().color(QPalette::Text));
      p.drawText(QRectF(r.right() + 4, r.top() - 2, width() - r.right() - 4, r.height() + 4),
                 Qt::AlignLeft | Qt::AlignVCenter, label);
    };
    const auto k = static_cast<size_t>(i);
    if (!comparing_) {
      bar(barRect(i), a_colour, tr("%1 s, %2 calls").arg(seconds_text(functions_[k].time)).arg(functions_[k].calls));
      continue;
    }
    const analysis::ComparedFunction& f = compared_[k];
    if (in_a_) bar(barRect(i, false), a_colour, tr("A %1 s, %2 calls").arg(seconds_text(f.time_a)).arg(f.calls_a));
    if (in_b_) bar(barRect(i, true), b_colour, tr("B %1 s, %2 calls").arg(seconds_text(f.time_b)).arg(f.calls_b));
  }
}

}  // namespace prof::gui
