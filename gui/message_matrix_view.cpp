#include "message_matrix_view.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "trace_session.h"

namespace prof::gui {

MessageMatrixView::MessageMatrixView(QWidget* parent) : QWidget(parent) {
  setObjectName("messageMatrix");
  setMouseTracking(true);
  setMinimumSize(160, 160);
}

void MessageMatrixView::setMatrix(analysis::TimelineMessageMatrix matrix) {
  matrix_ = std::move(matrix);
  computing_ = false;
  setQuantity(quantity_);
}

void MessageMatrixView::setComputing() {
  matrix_ = {};
  computing_ = true;
  setQuantity(quantity_);
}

void MessageMatrixView::setQuantity(Quantity q) {
  quantity_ = q;
  largest_ = 0;
  for (const auto& c : matrix_.cells) largest_ = std::max(largest_, value(c));
  update();
}

double MessageMatrixView::value(const analysis::TimelineMatrixCell& c) const {
  switch (quantity_) {
    case Quantity::Bytes: return static_cast<double>(c.bytes);
    case Quantity::Messages: return static_cast<double>(c.messages);
    case Quantity::Time: return c.time;
  }
  return 0;
}

QColor MessageMatrixView::colourOf(double v) const {
  const double f = largest_ > 0 ? std::clamp(v / largest_, 0.0, 1.0) : 0.0;
  // White to dark red through orange: lightness falls as the value grows.
  return QColor::fromHslF(static_cast<float>(0.08 * (1 - f)), 1.0f, static_cast<float>(1.0 - 0.7 * f));
}

QRectF MessageMatrixView::gridRect() const {
  // Room for the axis titles and the first and last rank numbers.
  const double margin = fontMetrics().height() * 2 + 4;
  const double side = std::max(1.0, std::min(width(), height()) - margin - 4);
  return QRectF(margin, margin, side, side);
}

QRectF MessageMatrixView::cellRect(int sender, int receiver) const {
  if (matrix_.ranks <= 0) return {};
  const QRectF g = gridRect();
  const double w = g.width() / matrix_.ranks;
  return QRectF(g.left() + receiver * w, g.top() + sender * w, w, w);
}

const analysis::TimelineMatrixCell* MessageMatrixView::cellAt(QPointF p) const {
  const QRectF g = gridRect();
  if (matrix_.ranks <= 0 || !g.contains(p)) return nullptr;
  const double w = g.width() / matrix_.ranks;
  const int receiver = std::min(matrix_.ranks - 1, static_cast<int>((p.x() - g.left()) / w));
  const int sender = std::min(matrix_.ranks - 1, static_cast<int>((p.y() - g.top()) / w));
  return matrix_.find(sender, receiver);
}

QString MessageMatrixView::cellText(const analysis::TimelineMatrixCell& c) const {
  return tr("Rank %1 to rank %2: %3 messages, %4 bytes, receive time %5 s")
      .arg(c.sender)
      .arg(c.receiver)
      .arg(c.messages)
      .arg(c.bytes)
      .arg(seconds_text(c.time / 1e9));
}

void MessageMatrixView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().window());
  const QRectF g = gridRect();
  p.fillRect(g, Qt::white);
  p.setPen(palette().color(QPalette::Text));
  const int line = fontMetrics().height();
  p.drawText(QRectF(g.left(), 0, g.width(), line), Qt::AlignHCenter, tr("receiver"));
  p.save();
  p.translate(0, g.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-g.height() / 2, 0, g.height(), line), Qt::AlignHCenter, tr("sender"));
  p.restore();
  if (matrix_.ranks > 0) {
    const QString last = QString::number(matrix_.ranks - 1);
    p.drawText(QRectF(g.left(), line, g.width(), line), Qt::AlignLeft, "0");
    p.drawText(QRectF(g.left(), line, g.width(), line), Qt::AlignRight, last);
    p.drawText(QRectF(line, g.top(), g.left() - line - 2, line), Qt::AlignRight, "0");
    p.drawText(QRectF(line, g.bottom() - line, g.left() - line - 2, line), Qt::AlignRight, last);
  }
  if (matrix_.cells.empty()) {
    p.setPen(Qt::gray);
    p.drawText(g, Qt::AlignCenter,
               computing_ ? tr("computing...") : matrix_.complete ? tr("No messages") : tr("Messages not paired yet"));
  }
  // Smallest first, so where cells share a pixel the largest stays visible;
  // at least one pixel each, so no exchange vanishes.
  std::vector<const analysis::TimelineMatrixCell*> order;
  order.reserve(matrix_.cells.size());
  for (const auto& c : matrix_.cells) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [&](auto* a, auto* b) { return value(*a) < value(*b); });
  for (const auto* c : order) {
    QRectF r = cellRect(c->sender, c->receiver);
    r.setSize(r.size().expandedTo(QSizeF(1, 1)));
    p.fillRect(r, colourOf(value(*c)));
  }
  p.setPen(palette().color(QPalette::Mid));
  p.drawRect(g);
}

void MessageMatrixView::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  if (const auto* c = cellAt(event->position())) emit messageChosen(c->first);
}

bool MessageMatrixView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    if (const auto* c = cellAt(help->pos()))
      QToolTip::showText(help->globalPos(), cellText(*c), this);
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

}  // namespace prof::gui
