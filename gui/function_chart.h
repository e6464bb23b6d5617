// A horizontal bar chart of the characteristics panel's MPI function profile
// (IntervalNode::functions): one bar per function, its length the function's
// time relative to the longest, labelled with the time and the call count.
// Drawn with QPainter from the list it is given, every function included
// however many there are (the widget grows; a scroll area shows it), so the
// chart never drops a function the table shows.
#pragma once

#include <QWidget>
#include <vector>

#include "prof/analysis/analysis.h"

namespace prof::gui {

class FunctionChart : public QWidget {
  Q_OBJECT
 public:
  explicit FunctionChart(QWidget* parent = nullptr);
  // The functions in the order given (the analysis's: by time, longest first).
  void setFunctions(std::vector<analysis::FunctionFigures> functions);
  const std::vector<analysis::FunctionFigures>& functions() const { return functions_; }
  // Bar i's rectangle in widget coordinates (its width is proportional to its time).
  QRectF barRect(int i) const;
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  int rowHeight() const;
  int labelWidth() const;
  void updateHeight();
  std::vector<analysis::FunctionFigures> functions_;
  double longest_ = 0;
};

}  // namespace prof::gui
