#include "overview_strip.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>

#include "timeline_view.h"

namespace prof::gui {

OverviewStrip::OverviewStrip(TimelineView* view, QWidget* parent) : QWidget(parent), view_(view) {
  setFixedHeight(kHeight);
  setToolTip(tr("The whole run; the frame marks the visible range. Click to centre the view there."));
  connect(view_, &TimelineView::rangeChanged, this, qOverload<>(&QWidget::update));
  // While the timeline builds, its picture grows.
  build_timer_.setInterval(300);
  connect(&build_timer_, &QTimer::timeout, this, [this] {
    if (view_->timeline()) update();
    if (view_->timeline() && view_->timeline()->complete()) build_timer_.stop();
  });
  build_timer_.start();
  // setTimeline resets the history: a new trace, a new picture.
  connect(view_, &TimelineView::historyChanged, this, [this] {
    if (view_->timeline() != picture_timeline_) timelineChanged();
  });
}

void OverviewStrip::timelineChanged() {
  picture_width_ = -1;
  build_timer_.start();
  update();
}

int OverviewStrip::runLeft() const { return view_->plotRect().left(); }
int OverviewStrip::runRight() const { return view_->plotRect().right(); }

double OverviewStrip::xOf(double t) const {
  const double end = view_->timeline() ? std::max(view_->timeline()->end(), 1.0) : 1.0;
  return runLeft() + t / end * (runRight() + 1 - runLeft());
}

double OverviewStrip::timeAt(double x) const {
  const double end = view_->timeline() ? std::max(view_->timeline()->end(), 1.0) : 1.0;
  return (x - runLeft()) / (runRight() + 1 - runLeft()) * end;
}

QRect OverviewStrip::markedRect() const {
  const int left = static_cast<int>(std::floor(xOf(view_->from())));
  // At least 3 px wide, so a deep zoom stays visible.
  const int right = std::max(left + 2, static_cast<int>(std::ceil(xOf(view_->to()))) - 1);
  return QRect(QPoint(left, 0), QPoint(right, height() - 1));
}

void OverviewStrip::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(236, 236, 240));
  const analysis::Timeline* timeline = view_->timeline();
  if (!timeline) return;
  const int width = runRight() + 1 - runLeft();
  if (width <= 0) return;
  const double built = timeline->complete() ? 1.0 : timeline->built();
  if (picture_width_ != width || picture_timeline_ != timeline || picture_built_ != built) {
    picture_ = QImage(width, 1, QImage::Format_RGB32);
    picture_.fill(QColor(250, 250, 250));
    analysis::TimelineGroupQuery q;
    q.groups.emplace_back();
    for (size_t r = 0; r < timeline->rows().size(); ++r) q.groups.back().push_back(r);
    q.from = 0;
    q.to = std::max(timeline->end(), 1.0);
    q.buckets = static_cast<uint32_t>(width);
    const analysis::TimelineGroupAnswer answer = timeline->summarize_groups(q);
    const double rows = static_cast<double>(std::max<size_t>(1, q.groups.back().size()));
    if (!answer.groups.empty() && answer.bucket_width > 0) {
      const auto& buckets = answer.groups.front();
      for (size_t i = 0; i < buckets.size(); ++i) {
        const auto& b = buckets[i];
        if (b.count == 0 && b.time[static_cast<int>(analysis::TimelineKind::User)] <= 0) continue;
        const double t0 = answer.bucket_from + static_cast<double>(i) * answer.bucket_width;
        const int x0 = std::clamp(static_cast<int>(xOf(t0)) - runLeft(), 0, width - 1);
        const int x1 = std::clamp(static_cast<int>(xOf(t0 + answer.bucket_width)) - runLeft(), x0 + 1, width);
        // The dominant kind, from pale (all computing) to full (all in MPI).
        const double share = std::clamp(b.mpi() / (rows * answer.bucket_width), 0.0, 1.0);
        const QColor kind = kind_color(b.dominant);
        const double strength = 0.35 + 0.65 * share;
        const QColor colour = QColor::fromRgbF(static_cast<float>(1 - strength * (1 - kind.redF())),
                                               static_cast<float>(1 - strength * (1 - kind.greenF())),
                                               static_cast<float>(1 - strength * (1 - kind.blueF())));
        for (int x = x0; x < x1; ++x) picture_.setPixel(x, 0, colour.rgb());
      }
    }
    picture_width_ = width;
    picture_timeline_ = timeline;
    picture_built_ = built;
  }
  p.drawImage(QRect(runLeft(), 2, width, height() - 4), picture_);
  p.setPen(QPen(QColor(20, 20, 20), 2));
  p.setBrush(Qt::NoBrush);
  p.drawRect(markedRect().adjusted(1, 1, 0, 0));
}

void OverviewStrip::centreAt(double x) {
  if (!view_->timeline()) return;
  const double t = timeAt(x), width = view_->to() - view_->from();
  view_->navigateTo(t - width / 2, t + width / 2);
}

void OverviewStrip::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  press_state_ = view_->viewState();
  centreAt(e->position().x());
}

void OverviewStrip::mouseMoveEvent(QMouseEvent* e) {
  if (e->buttons() & Qt::LeftButton) centreAt(e->position().x());
}

void OverviewStrip::mouseReleaseEvent(QMouseEvent* e) {
  if (e->button() == Qt::LeftButton) view_->remember(press_state_);  // the press and its drag: one entry
}

}  // namespace prof::gui
