#include "trace_loader.h"

#include <QDir>
#include <QEventLoop>
#include <QFileInfo>
#include <QPointer>
#include <algorithm>
#include <thread>

namespace prof::gui {

namespace {

// Call records the timeline keeps in memory: the layer's default (256 MiB
// of packed records) unless the trace is over 1 GiB on disk (some 6*10^7
// events), then 128 MiB: most records of such a trace are in the spill file
// either way (docs/design/timeline.md, the viewer).
uint64_t record_budget(const QString& dir) {
  uint64_t bytes = 0;
  for (const QFileInfo& file : QDir(dir).entryInfoList({"rank-*.prof"}, QDir::Files)) bytes += static_cast<uint64_t>(file.size());
  return bytes > (uint64_t{1} << 30) ? uint64_t{128} << 20 : analysis::TimelineOptions{}.memory_bytes;
}

}  // namespace

TraceLoader::TraceLoader(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<prof::gui::TraceSession>>();
}

TraceLoader::~TraceLoader() {
  cancel();
  if (worker_) {
    worker_->wait();
    delete worker_;
  }
  // Window indexes still being written are abandoned (a window builds one).
  for (const Background& b : background_) {
    b.progress->cancelled = true;
    if (b.thread) b.thread->wait();
  }
}

double TraceLoader::progress() const {
  if (!progress_) return 0;
  double timeline = progress_->timeline.load();
  {
    std::lock_guard lock(progress_->mutex);
    if (const auto handle = progress_->timeline_handle.lock()) timeline = std::max(timeline, handle->built());
  }
  return (timeline + progress_->analysis.load()) / 2;
}

void TraceLoader::cancel() {
  if (!progress_) return;
  progress_->cancelled = true;
  std::lock_guard lock(progress_->mutex);
  if (const auto handle = progress_->timeline_handle.lock()) handle->cancel();
}

void TraceLoader::load(const QString& dir) {
  if (worker_) {
    cancel();
    // The old worker reports to nobody: its signals check its own progress.
    worker_->disconnect(this);
    QThread* old = worker_;
    connect(old, &QThread::finished, old, &QObject::deleteLater);
    worker_ = nullptr;
  }
  auto progress = std::make_shared<Progress>();
  progress_ = progress;
  QPointer<TraceLoader> self(this);
  const bool analyze = analyze_, write_index = write_index_, open_timeline = timeline_;
  worker_ = QThread::create([self, progress, dir, analyze, write_index, open_timeline] {
    auto session = std::make_shared<TraceSession>();
    session->dir = dir;
    session->timeline_wanted = open_timeline;
    const std::string path = dir.toStdString();
    analysis::TimelineOptions topt;
    topt.memory_bytes = record_budget(dir);
    topt.progress = [progress](double f) { progress->timeline = f; };
    std::string error;
    std::shared_ptr<analysis::Timeline> tl;
    if (open_timeline) {
      tl = analysis::Timeline::open(path, &error, topt);
      session->timeline_error = QString::fromStdString(error);
    }
    std::thread builder;
    std::string build_error;
    if (tl) {
      session->timeline = tl;
      {
        std::lock_guard lock(progress->mutex);
        progress->timeline_handle = tl;
        if (progress->cancelled) tl->cancel();
      }
      auto opened = std::make_shared<TraceSession>(*session);
      if (self)
        QMetaObject::invokeMethod(
          self.data(),
          [self, progress, opened] {
            if (self && self->progress_ == progress) emit self->timelineOpened(opened);
          },
          Qt::QueuedConnection);
      builder = std::thread([tl, &build_error] { tl->build(&build_error); });
    } else {
      progress->timeline = 1;
    }
    // Once the timeline is built and the analysis known: finished(). The
    // worker may go on writing the window index after it.
    auto announce = [&] {
      progress->analysis = 1;
      if (builder.joinable()) builder.join();
      if (!build_error.empty()) session->timeline_error = QString::fromStdString(build_error);
      session->map_nodes();
      if (!self) return;
      QMetaObject::invokeMethod(
          self.data(),
          [self, progress, session] {
            if (!self || self->progress_ != progress) return;
            if (QThread* done = self->worker_) {
              self->worker_ = nullptr;
              self->keep_in_background(done, progress);
            }
            emit self->finished(session, progress->cancelled.load());
          },
          Qt::QueuedConnection);
    };
    analysis::Options aopt;
    aopt.progress = [progress](double f, uint64_t) { progress->analysis = f; };
    aopt.cancelled = [progress] { return progress->cancelled.load(); };
    aopt.write_window_index = write_index;
    aopt.delay_analysis = true;  // the root causes and critical path of the waits panel
    aopt.on_result = [&](const analysis::Analysis& a) {
      session->analysis = std::make_shared<const analysis::Analysis>(a);
      announce();
    };
    if (analyze && !progress->cancelled) analysis::analyze(path, aopt);
    else announce();
  });
  worker_->start();
}

void TraceLoader::keep_in_background(QThread* worker, std::shared_ptr<Progress> progress) {
  // (deleteLater twice is harmless: the thread may have ended before the connection.)
  connect(worker, &QThread::finished, worker, &QObject::deleteLater);
  if (worker->isFinished()) worker->deleteLater();
  background_.erase(std::remove_if(background_.begin(), background_.end(),
                                   [](const Background& b) { return b.thread.isNull(); }),
                    background_.end());
  background_.push_back(Background{QPointer<QThread>(worker), std::move(progress)});
}

void TraceLoader::wait_background() {
  for (const Background& b : background_)
    if (b.thread) b.thread->wait();
}

void TraceLoader::wait_done() {
  if (!worker_) return;
  QEventLoop loop;
  connect(this, &TraceLoader::finished, &loop, &QEventLoop::quit);
  loop.exec();
}

}  // namespace prof::gui
