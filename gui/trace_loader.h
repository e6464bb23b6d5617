// Loads a trace off the UI thread: opens the timeline (announced at once so
// the view draws while it builds), builds it on a thread of its own and
// analyzes the trace meanwhile; the UI polls progress() and gets finished().
//
// Cancel stops the timeline build and the analysis (both check between
// steps); the destructor cancels and waits for the worker.
#pragma once

#include <QObject>
#include <QThread>
#include <atomic>
#include <memory>
#include <mutex>

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
  bool busy() const { return worker_ != nullptr; }
  // Fraction done (0..1): the timeline build and the analysis, averaged.
  double progress() const;
  // Blocks (running the event loop) until the current load ends.
  void wait_done();

 signals:
  // The timeline is open and building: draw what is built so far.
  void timelineOpened(std::shared_ptr<prof::gui::TraceSession> session);
  void finished(std::shared_ptr<prof::gui::TraceSession> session, bool cancelled);

 private:
  struct Progress {
    std::atomic<double> timeline{0}, analysis{0};
    std::atomic<bool> cancelled{false};
    std::mutex mutex;
    std::shared_ptr<analysis::Timeline> timeline_handle;  // under mutex; set before the build starts
  };
  QThread* worker_ = nullptr;
  bool analyze_ = true;
  std::shared_ptr<Progress> progress_;
};

}  // namespace prof::gui
