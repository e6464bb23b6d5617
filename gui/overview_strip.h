// A strip of the whole run above the timeline, with the visible range marked.
//
// Each pixel column is a time bucket of [0, the trace's end], aligned with
// the timeline's plot (the same left edge and width), coloured by what all
// rows did there: the dominant kind's colour, stronger the larger the rows'
// share of time in MPI (as the timeline's groups). The visible range is a
// dark frame over it. A click (or a drag) centres the timeline there, keeping
// its width: one history entry per press.
//
// Cost: one Timeline::summarize_groups (one group of every row, a bucket per
// column) when the width or the built part changes; the picture is kept, so
// a change of the visible range only repaints the frame.
#pragma once

#include <QImage>
#include <QTimer>
#include <QWidget>

#include "timeline_view.h"

namespace prof::gui {

class OverviewStrip : public QWidget {
  Q_OBJECT
 public:
  explicit OverviewStrip(TimelineView* view, QWidget* parent = nullptr);
  // The frame of the visible range as drawn ([left, right] px of this widget).
  QRect markedRect() const;
  // The columns of the whole run: x of time 0 and of the trace's end.
  int runLeft() const;
  int runRight() const;
  static constexpr int kHeight = 18;


 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;

 private:
  double timeAt(double x) const;
  double xOf(double t) const;
  void centreAt(double x);
  void timelineChanged();  // a new trace: a new picture, repainted as it builds
  TimelineView* view_;
  QTimer build_timer_;
  TimelineView::ViewState press_state_{};
  QImage picture_;
  // What picture_ shows: its width, the timeline, and how much was built.
  int picture_width_ = -1;
  const void* picture_timeline_ = nullptr;
  double picture_built_ = -1;
};

}  // namespace prof::gui
