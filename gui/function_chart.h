// A horizontal bar chart of the characteristics panel's MPI function profile
// (IntervalNode::functions): one bar per function, its length the function's
// time relative to the longest, labelled with the time and the call count.
// Drawn with QPainter from the list it is given, every function included
// however many there are (the widget grows; a scroll area shows it), so the
// chart never drops a function the table shows.
//
// Comparing two runs (setComparedFunctions), each function has two bars, A's
// above B's, both scaled to the longest time of either run, labelled with
// each run's time and calls; a run without the interval has no bars.
#pragma once

#include <QWidget>
#include <vector>

#include "prof/analysis/analysis.h"
#include "prof/analysis/compare.h"

namespace prof::gui {

class FunctionChart : public QWidget {
  Q_OBJECT
 public:
  explicit FunctionChart(QWidget* parent = nullptr);
  // The functions in the order given (the analysis's: by time, longest first).
  void setFunctions(std::vector<analysis::FunctionFigures> functions);
  const std::vector<analysis::FunctionFigures>& functions() const { return functions_; }
  // Two runs' functions in the order given (compare_functions'); `in_a`,
  // `in_b`: whether that run has the interval (else it gets no bars).
  void setComparedFunctions(std::vector<analysis::ComparedFunction> functions, bool in_a, bool in_b);
  const std::vector<analysis::ComparedFunction>& comparedFunctions() const { return compared_; }
  bool comparing() const { return comparing_; }
  // Bar i's rectangle in widget coordinates (its width is proportional to its
  // time); comparing, run B's when `b`, else A's (empty for a run without bars).
  QRectF barRect(int i, bool b = false) const;
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  int rowHeight() const;
  int labelWidth() const;
  int count() const;
  QString name(size_t i) const;
  void updateHeight();
  std::vector<analysis::FunctionFigures> functions_;
  std::vector<analysis::ComparedFunction> compared_;
  bool comparing_ = false;
  bool in_a_ = false, in_b_ = false;
  double longest_ = 0;
};

}  // namespace prof::gui
