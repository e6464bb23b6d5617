// Loads a trace off the UI thread: opens the timeline (announced at once so
// the view draws while it builds), builds it on a thread of its own and
// analyzes the trace meanwhile; the UI polls progress() and gets finished().
// With setTimeline(false) it analyzes only (the second run of a comparison).
//
// The analysis writes the window index as the CLI's does (unless
// setWriteWindowIndex(false)): finished() comes once the result is known, and
// the worker goes on writing the index in the background.
//
// Cancel stops the timeline build, the analysis and the index it writes (all
// check between steps); the destructor cancels and waits for the worker, and
// abandons indexes still being written.
#pragma once

#include <QObject>
#include <QPointer>
#include <QThread>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "trace_session.h"

namespace prof::gui {

class TraceLoader : public QObject {
  Q_OBJECT
 public:
  explicit TraceLoader(QObject* parent = nullptr);
  ~TraceLoader() override;

  // Starts loading `dir` (a load in progress is cancelled first).
  void load(const QString& dir);
  void cancel();
  // Off: the timeline only (what --bench-frames measures). On by default.
  void setAnalyze(bool on) { analyze_ = on; }
  // Off: the analysis only, no timeline opened or built. On by default.
  void setTimeline(bool on) { timeline_ = on; }
  // analysis::Options::write_window_index for the loads to come. On by default.
  void setWriteWindowIndex(bool on) { write_index_ = on; }
  bool busy() const { return worker_ != nullptr; }
  // Fraction done (0..1): the timeline build (Timeline::built(), the figure
  // the timeline itself gives) and the analysis, averaged; the one figure a
  // window shows of a load (its status bar, and the timeline's corner through
  // TimelineView::setProgressSource). Never decreases during a load.
  double progress() const;
  // Blocks (running the event loop) until the current load ends.
  void wait_done();
  // Blocks until the loads that ended have written their window indexes.
  void wait_background();

 signals:
  // The timeline is open and building: draw what is built so far.
  void timelineOpened(std::shared_ptr<prof::gui::TraceSession> session);
  void finished(std::shared_ptr<prof::gui::TraceSession> session, bool cancelled);

 private:
  struct Progress {
    std::atomic<double> timeline{0}, analysis{0};
    std::atomic<bool> cancelled{false};
    std::mutex mutex;
    // Under mutex; set before the build starts. Weak: the timeline keeps its
    // options' progress callback, which holds this Progress, so a strong
    // handle here would keep every opened timeline for the process's life.
    std::weak_ptr<analysis::Timeline> timeline_handle;
  };
  // A load's worker after finished(), still writing the window index.
  struct Background {
    QPointer<QThread> thread;
    std::shared_ptr<Progress> progress;
  };
  void keep_in_background(QThread* worker, std::shared_ptr<Progress> progress);

  QThread* worker_ = nullptr;
  bool analyze_ = true;
  bool timeline_ = true;
  bool write_index_ = true;
  std::shared_ptr<Progress> progress_;
  std::vector<Background> background_;
};

}  // namespace prof::gui
