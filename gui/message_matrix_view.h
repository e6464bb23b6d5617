// The communication matrix (Timeline::message_matrix): senders down, receivers
// across, each pair's cell coloured by the chosen quantity (bytes, messages or
// receive time) on a linear scale from white (none) to dark red (the largest
// cell). Cells are laid on a square grid of ranks x ranks; with more ranks than
// pixels several ranks share a pixel and the largest cell drawn there shows.
// Only the pairs that exchanged messages are drawn (the matrix is sparse). A
// tooltip gives the pair's figures; a click emits its first message. While
// its owner computes a new matrix (setComputing), the grid says "computing".
#pragma once

#include <QWidget>

#include "prof/analysis/timeline.h"

namespace prof::gui {

class MessageMatrixView : public QWidget {
  Q_OBJECT
 public:
  enum class Quantity { Bytes, Messages, Time };
  explicit MessageMatrixView(QWidget* parent = nullptr);
  void setMatrix(analysis::TimelineMessageMatrix matrix);
  const analysis::TimelineMessageMatrix& matrix() const { return matrix_; }
  // A matrix is being computed: the grid says so until setMatrix.
  void setComputing();
  bool computing() const { return computing_; }
  void setQuantity(Quantity q);
  Quantity quantity() const { return quantity_; }
  // The quantity of a cell, and its colour (white: zero, dark red: the largest).
  double value(const analysis::TimelineMatrixCell& c) const;
  QColor colourOf(double value) const;
  // The area the grid takes, a cell's rectangle, and the cell under a point.
  QRectF gridRect() const;
  QRectF cellRect(int sender, int receiver) const;
  const analysis::TimelineMatrixCell* cellAt(QPointF p) const;
  QString cellText(const analysis::TimelineMatrixCell& c) const;

 signals:
  void messageChosen(const analysis::TimelineMessage& first);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  analysis::TimelineMessageMatrix matrix_;
  Quantity quantity_ = Quantity::Bytes;
  double largest_ = 0;
  bool computing_ = false;
};

}  // namespace prof::gui
