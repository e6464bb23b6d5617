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
  longest_ = 0;
  for (const auto& f : functions_) longest_ = std::max(longest_, f.time);
  updateHeight();
  update();
}

int FunctionChart::rowHeight() const { return fontMetrics().height() + 6; }

int FunctionChart::labelWidth() const {
  int w = fontMetrics().horizontalAdvance("MPI_Allreduce");
  for (const auto& f : functions_) w = std::max(w, fontMetrics().horizontalAdvance(QString::fromStdString(f.name)));
  return w + 8;
}

void FunctionChart::updateHeight() {
  setMinimumHeight(rowHeight() * std::max<int>(1, static_cast<int>(functions_.size())) + 4);
  updateGeometry();
}

QSize FunctionChart::sizeHint() const { return {400, minimumHeight()}; }

void FunctionChart::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  update();
}

QRectF FunctionChart::barRect(int i) const {
  if (i < 0 || static_cast<size_t>(i) >= functions_.size()) return {};
  // Room on the right for the "time s, N calls" label.
  const double left = labelWidth();
  const double room = std::max(10.0, width() - left - fontMetrics().horizontalAdvance("0.000000 s, 0000000 calls") - 8);
  const double fraction = longest_ > 0 ? functions_[static_cast<size_t>(i)].time / longest_ : 0;
  const int h = rowHeight();
  return QRectF(left, 2 + i * h + 2, room * fraction, h - 4);
}

void FunctionChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (functions_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("No MPI calls"));
    return;
  }
  const int h = rowHeight();
  for (size_t i = 0; i < functions_.size(); ++i) {
    const auto& f = functions_[i];
    const QRectF bar = barRect(static_cast<int>(i));
    const int y = 2 + static_cast<int>(i) * h;
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(2, y, labelWidth() - 6, h), Qt::AlignRight | Qt::AlignVCenter, QString::fromStdString(f.name));
    p.fillRect(bar, QColor(70, 130, 180));
    const QString label = tr("%1 s, %2 calls").arg(seconds_text(f.time)).arg(f.calls);
    p.drawText(QRectF(bar.right() + 4, y, width() - bar.right() - 4, h), Qt::AlignLeft | Qt::AlignVCenter, label);
  }
}

}  // namespace prof::gui
