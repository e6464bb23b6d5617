// prof-gui: the window, or (docs/interfaces.md "prof-gui") a screenshot of it
// or a benchmark of timeline frames, without a display under
// QT_QPA_PLATFORM=offscreen.
#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QImage>
#include <QPixmap>
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <sys/resource.h>
#include <unistd.h>

#include "main_window.h"
#include "timeline_view.h"
#include "trace_loader.h"

using prof::gui::MainWindow;
using prof::gui::TimelineView;

namespace {

QElapsedTimer launch;

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KB on Linux
}

// FROM:TO in seconds from the trace's start, 0 <= FROM < TO (as prof-analyze's).
bool parse_window(const QString& text, double* from, double* to) {
  const QStringList parts = text.split(':');
  if (parts.size() != 2) return false;
  bool from_ok = false, to_ok = false;
  *from = parts[0].toDouble(&from_ok);
  *to = parts[1].toDouble(&to_ok);
  return from_ok && to_ok && std::isfinite(*from) && std::isfinite(*to) && *from >= 0 && *from < *to;
}

int screenshot(MainWindow& window, const QString& dir, const QString& compare, const QString& file,
               const QString& range, const QString& select) {
  window.setQuiet([](const QString& text) { std::fprintf(stderr, "prof-gui: %s\n", qPrintable(text)); });
  window.resize(1600, 1000);
  window.show();
  window.openTrace(dir);
  if (!compare.isEmpty()) window.compareWith(compare);
  window.waitLoaded();
  QApplication::processEvents();
  const auto session = window.session();
  if (!select.isEmpty() && !window.selectIntervalId(select.toInt())) {
    std::fprintf(stderr, "prof-gui: --select %s: no interval with that id\n", qPrintable(select));
    return 1;
  }
  if (!range.isEmpty()) {
    double from = 0, to = 0;
    parse_window(range, &from, &to);
    TimelineView* view = window.timelineView();
    view->showAll();
    const double end_s = view->to() / 1e9;
    if (from >= end_s) {
      std::fprintf(stderr, "prof-gui: --window %s starts past the trace's end (%.6f s)\n", qPrintable(range), end_s);
      return 1;
    }
    // (As panning and zooming do: never past the end. A TO past it is the end.)
    view->setRange(from * 1e9, std::min(to, end_s) * 1e9);
  }
  QApplication::processEvents();
  const QPixmap shot = window.grab();
  if (!shot.save(file, "PNG")) {
    std::fprintf(stderr, "prof-gui: cannot write %s\n", qPrintable(file));
    return 1;
  }
  const bool usable = session && session->analysis && session->analysis->usable() &&
                      (compare.isEmpty() || window.comparison());
  return usable ? 0 : 2;
}

// Frames of a fixed sequence over the whole run: zoom in about a point at 37%
// of the width down to 10 us, pan right, zoom out to the whole run; each frame is one paint of the timeline
// at 1600x900. The first frame is drawn as soon as the timeline is open (what
// is built by then); the timed frames once it is built, after the whole run
// drawn once as the window draws it when the build ends.
int bench_frames(const QString& dir, int frames) {
  TimelineView view;
  view.resize(1600, 900);
  prof::gui::TraceLoader loader;
  loader.setAnalyze(false);
  double open_ms = -1, first_frame_ms = -1;
  QImage image(view.size(), QImage::Format_RGB32);
  std::shared_ptr<prof::gui::TraceSession> loaded;
  QObject::connect(&loader, &prof::gui::TraceLoader::timelineOpened, [&](auto session) {
    open_ms = static_cast<double>(launch.nsecsElapsed()) / 1e6;
    view.setTimeline(session->timeline);
    view.render(&image);
    first_frame_ms = static_cast<double>(launch.nsecsElapsed()) / 1e6;
  });
  QObject::connect(&loader, &prof::gui::TraceLoader::finished, [&](auto session, bool) { loaded = session; });
  loader.load(dir);
  loader.wait_done();
  if (!loaded || !loaded->timeline) {
    const QString error = loaded ? loaded->timeline_error : QString("not loaded");
    // (The directory once: the reader's errors name it already.)
    std::fprintf(stderr, "prof-gui: %s\n",
                 qPrintable(error.startsWith(dir + ":") ? error : dir + ": " + error));
    return 2;
  }
  // The frame the window draws when the build ends (the view follows the
  // build to its end): timed on its own, since it fills the per-bucket caches
  // that the navigation's frames (median and p99) then reuse.
  view.showAll();
  QElapsedTimer built_frame;
  built_frame.start();
  view.render(&image);
  const double built_frame_ms = static_cast<double>(built_frame.nsecsElapsed()) / 1e6;
  const double end = view.to();
  // Zoom in geometrically from the whole run to 10 us, pan by a tenth of the
  // width per frame, zoom back out to the whole run.
  const int third = std::max(1, frames / 3);
  const double deepest = std::min(end, 1e4);
  const double step = std::pow(deepest / end, 1.0 / third);
  std::vector<double> times;
  for (int i = 0; i < frames; ++i) {
    const double width = view.to() - view.from();
    if (i < third || i >= 2 * third) {
      const double w = i < third ? width * step : std::min(width / step, end);
      const double anchor = view.from() + 0.37 * width;
      view.setRange(anchor - 0.37 * w, anchor + 0.63 * w);
    } else {
      view.setRange(view.from() + 0.1 * width, view.to() + 0.1 * width);
    }
    QElapsedTimer frame;
    frame.start();
    view.render(&image);
    times.push_back(static_cast<double>(frame.nsecsElapsed()) / 1e6);
  }
  std::sort(times.begin(), times.end());
  const double median = times.empty() ? 0 : times[times.size() / 2];
  const double p99 = times.empty() ? 0 : times[std::min(times.size() - 1, (times.size() * 99 + 99) / 100 - 1)];
  std::printf(
      "open_ms %.1f first_frame_ms %.1f frames %d median_ms %.2f p99_ms %.2f peak_rss_mb %.0f built_frame_ms %.1f\n",
      open_ms, first_frame_ms, frames, median, p99, peak_rss_mb(), built_frame_ms);
  std::fflush(stdout);
  return 0;
}

}  // namespace

// Without a display, what needs none (help, a screenshot, a benchmark) runs
// offscreen; the window itself cannot open, which is said in one line
// instead of Qt's abort.
bool prepare_display(int argc, char** argv) {
  const auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v;
  };
  if (set("DISPLAY") || set("WAYLAND_DISPLAY") || set("QT_QPA_PLATFORM")) return true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-h" || a == "--help" || a == "--help-all" || a == "-v" || a == "--version" ||
        a.rfind("--screenshot", 0) == 0 || a.rfind("--bench-frames", 0) == 0) {
      ::setenv("QT_QPA_PLATFORM", "offscreen", 1);
      return true;
    }
  }
  std::fprintf(stderr,
               "prof-gui: no display (DISPLAY and WAYLAND_DISPLAY are not set); --screenshot FILE.png "
               "renders the window without one\n");
  return false;
}

int main(int argc, char** argv) {
  launch.start();
  if (!prepare_display(argc, argv)) return 1;
  QApplication app(argc, argv);
  QApplication::setApplicationName("prof-gui");
  QApplication::setOrganizationName("prof");
  QCommandLineParser parser;
  parser.setApplicationDescription("Browser of a prof trace: interval tree, characteristics, timeline");
  parser.addHelpOption();
  parser.addPositionalArgument("TRACE_DIR", "trace directory to open");
  QCommandLineOption shot("screenshot", "render the window to FILE.png and exit", "FILE.png");
  QCommandLineOption window("window", "with --screenshot: show FROM:TO seconds from the trace's start", "FROM:TO");
  QCommandLineOption select("select", "with --screenshot: select the interval with this id", "ID");
  QCommandLineOption bench("bench-frames", "render N timeline frames at 1600x900, print timings, exit", "N");
  QCommandLineOption compare("compare",
                             "compare TRACE_DIR (A) with this trace (B), as prof-analyze --compare A B: the tree "
                             "and panel show A, B, B - A and B / A",
                             "B_DIR");
  QCommandLineOption no_index("no-index",
                              "do not write the window index (TRACE/window-index.bin, or the user's cache where "
                              "TRACE is not writable) that analyses write, as prof-analyze --no-index");
  parser.addOptions({shot, window, select, compare, bench, no_index});
  parser.process(app);
  const QStringList args = parser.positionalArguments();
  if (args.size() > 1) {
    std::fprintf(stderr, "prof-gui: one trace directory at most\n");
    return 1;
  }
  const QString dir = args.value(0);
  for (const QCommandLineOption* option : {&shot, &window, &select, &compare, &bench})
    if (parser.values(*option).size() > 1) {
      std::fprintf(stderr, "prof-gui: --%s given twice: give it once\n", qPrintable(option->names().first()));
      return 1;
    }
  // (They shape the picture --screenshot renders; the window opens on the
  // whole run, and --bench-frames runs its fixed sequence.)
  for (const QCommandLineOption* option : {&window, &select})
    if (parser.isSet(*option) && !parser.isSet(shot)) {
      std::fprintf(stderr, "prof-gui: --%s goes with --screenshot FILE.png\n", qPrintable(option->names().first()));
      return 1;
    }
  if (parser.isSet(select)) {
    bool id_ok = false;
    parser.value(select).toInt(&id_ok);
    if (!id_ok) {
      std::fprintf(stderr, "prof-gui: --select wants an interval id (an integer), not '%s'\n",
                   qPrintable(parser.value(select)));
      return 1;
    }
  }
  double from = 0, to = 0;
  if (parser.isSet(window) && !parse_window(parser.value(window), &from, &to)) {
    std::fprintf(stderr,
                 "prof-gui: --window wants FROM:TO in seconds from the trace's start with 0 <= FROM < TO, not '%s'\n",
                 qPrintable(parser.value(window)));
    return 1;
  }
  if (parser.isSet(shot) && parser.value(shot).isEmpty()) {
    std::fprintf(stderr, "prof-gui: --screenshot wants a file name (FILE.png), not an empty one\n");
    return 1;
  }
  if (parser.isSet(shot) && parser.isSet(bench)) {
    std::fprintf(stderr, "prof-gui: --screenshot and --bench-frames each run on their own: give one\n");
    return 1;
  }
  if (parser.isSet(compare) && (dir.isEmpty() || parser.isSet(bench))) {
    std::fprintf(stderr, "prof-gui: --compare B_DIR needs a TRACE_DIR to compare with it (and no --bench-frames)\n");
    return 1;
  }
  if ((parser.isSet(shot) || parser.isSet(bench)) && dir.isEmpty()) {
    std::fprintf(stderr, "prof-gui: --screenshot and --bench-frames need a TRACE_DIR\n");
    return 1;
  }
  if (parser.isSet(bench)) {
    bool ok = false;
    const int frames = parser.value(bench).toInt(&ok);
    if (!ok || frames < 1) {
      std::fprintf(stderr, "prof-gui: --bench-frames wants a positive count, not '%s'\n",
                   qPrintable(parser.value(bench)));
      return 1;
    }
    const int status = bench_frames(dir, frames);
    std::fflush(nullptr);
    _exit(status);  // nothing left to save; skip tearing down a 10^8-event timeline
  }
  MainWindow main_window;
  main_window.setWriteWindowIndex(!parser.isSet(no_index));
  if (parser.isSet(shot)) {
    const int status = screenshot(main_window, dir, parser.value(compare), parser.value(shot), parser.value(window),
                                  parser.value(select));
    std::fflush(nullptr);
    return status;
  }
  main_window.show();
  if (!dir.isEmpty()) main_window.openTrace(dir);
  if (parser.isSet(compare)) main_window.compareWith(parser.value(compare));
  return app.exec();
}
