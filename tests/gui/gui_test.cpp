// prof-gui on synthetic traces (TraceBuilder): the tree model is the
// analysis's tree; the panel shows the JSON report's numbers; the timeline's
// hit test, click, zoom to a dragged range and selection; damaged and unusable
// traces give a dialog; --screenshot and --bench-frames as docs/interfaces.md
// says. Every time in the trace is known, so every check is exact. Real runs
// for the call-site tooltip and for comparing two runs (checked against
// prof-analyze --compare's JSON).
#include <QCompleter>
#include <QDoubleSpinBox>
#include <QHeaderView>
#include <QLabel>
#include <QSpinBox>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QScrollBar>
#include <QProcess>
#include <QSettings>
#include <QRegularExpression>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QStatusBar>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QTreeView>
#include <QXmlStreamReader>
#include <QComboBox>
#include <QTableWidget>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "characteristics_panel.h"
#include "function_chart.h"
#include "message_matrix_view.h"
#include "interval_tree_model.h"
#include "main_window.h"
#include "overview_strip.h"
#include "prof/analysis/characteristics.h"
#include "prof/analysis/report.h"
#include "range_statistics.h"
#include "timeline_view.h"
#include "trace_loader.h"
#include "span_union.h"
#include "trace_builder.h"

using namespace prof;
using prof::gui::CharacteristicsPanel;
using prof::gui::IntervalTreeModel;
using prof::gui::MainWindow;
using prof::gui::OverviewStrip;
using prof::gui::TimelineView;

namespace {

// A call the test wrote: its row (rank: no threads here), times (ns from the
// trace's start, which is 0: MPI_Init enters at 0) and function.
struct Written {
  size_t row;
  int64_t enter, leave;
  std::string function;
  bool operator<(const Written& o) const { return std::tie(row, enter, leave) < std::tie(o.row, o.enter, o.leave); }
};

constexpr uint64_t kPeriod = test::kMs;
constexpr uint64_t kLoopStart = 2 * test::kMs;

// Two ranks, `iterations` times: interval 1 (app.c:100) around rank 0's Send
// of 64 bytes (tag 7) to rank 1's Recv, and interval 2 (app.c:200, nested)
// around an Allreduce that rank 1 enters 100 us late; then interval 3
// (app.c:300) around MPI_Comm_rank.
class DemoTrace {
 public:
  explicit DemoTrace(int iterations) : b_(2) {
    for (int r = 0; r < 2; ++r) {
      put(r, 0, test::kMs, "MPI_Init", [&] { b_.init(r, 0, test::kMs); });
      uint64_t t = kLoopStart;
      for (int it = 0; it < iterations; ++it, t += kPeriod) {
        marker(r, t, 1, true, 1);
        if (r == 0)
          put(0, t + 100 * test::kUs, t + 150 * test::kUs, "MPI_Send",
              [&] { b_.send(0, t + 100 * test::kUs, t + 150 * test::kUs, 1, 7, 64); });
        else
          put(1, t + 50 * test::kUs, t + 200 * test::kUs, "MPI_Recv",
              [&] { b_.recv(1, t + 50 * test::kUs, t + 200 * test::kUs, 0, 7, 64); });
        marker(r, t + 300 * test::kUs, 2, true, 2);
        const uint64_t enter = t + (400 + 100 * static_cast<uint64_t>(r)) * test::kUs;
        put(r, enter, t + 700 * test::kUs, "MPI_Allreduce",
            [&] { b_.collective(r, test::Allreduce, enter, t + 700 * test::kUs); });
        marker(r, t + 800 * test::kUs, 2, false, 2);
        marker(r, t + 900 * test::kUs, 1, false, 1);
      }
      marker(r, t, 3, true, 3);
      put(r, t + 100 * test::kUs, t + 200 * test::kUs, "MPI_Comm_rank",
          [&] { b_.other(r, test::CommRank, t + 100 * test::kUs, t + 200 * test::kUs); });
      marker(r, t + 300 * test::kUs, 3, false, 3);
      put(r, t + test::kMs, t + test::kMs + 100 * test::kUs, "MPI_Finalize",
          [&] { b_.finalize(r, t + test::kMs, t + test::kMs + 100 * test::kUs); });
    }
    b_.close();
  }
  test::TraceBuilder& builder() { return b_; }
  QString dir() const { return QString::fromStdString(b_.dir()); }
  const std::vector<Written>& written() const { return written_; }

 private:
  template <class F>
  void put(int r, uint64_t enter, uint64_t leave, const char* function, F&& write) {
    write();
    written_.push_back({static_cast<size_t>(r), static_cast<int64_t>(enter), static_cast<int64_t>(leave), function});
  }
  void marker(int r, uint64_t t, uint32_t id, bool begin, uint32_t site) {
    put(r, t, t, begin ? "interval begin" : "interval end", [&] { b_.marker(r, t, id, begin, site); });
  }
  test::TraceBuilder b_;
  std::vector<Written> written_;
};

// `ranks` ranks, `iterations` times (t = 2 ms + i ms): MPI_Comm_rank at
// [t + 100, t + 150] us, then an Allreduce that rank r enters at
// t + 300 us + r us (so every enter is distinct and known), leaving at t + 700 us.
class ManyRanksTrace {
 public:
  ManyRanksTrace(int ranks, int iterations) : b_(ranks) {
    for (int r = 0; r < ranks; ++r) {
      put(r, 0, test::kMs, "MPI_Init", [&] { b_.init(r, 0, test::kMs); });
      uint64_t t = 2 * test::kMs;
      for (int it = 0; it < iterations; ++it, t += test::kMs) {
        put(r, t + 100 * test::kUs, t + 150 * test::kUs, "MPI_Comm_rank",
            [&] { b_.other(r, test::CommRank, t + 100 * test::kUs, t + 150 * test::kUs); });
        const uint64_t enter = allreduceEnter(r, it);
        put(r, enter, t + 700 * test::kUs, "MPI_Allreduce",
            [&] { b_.collective(r, test::Allreduce, enter, t + 700 * test::kUs); });
      }
      put(r, t, t + 100 * test::kUs, "MPI_Finalize", [&] { b_.finalize(r, t, t + 100 * test::kUs); });
    }
    b_.close();
  }
  static uint64_t allreduceEnter(int rank, int iteration) {
    return 2 * test::kMs + static_cast<uint64_t>(iteration) * test::kMs + 300 * test::kUs +
           static_cast<uint64_t>(rank) * test::kUs;
  }
  QString dir() const { return QString::fromStdString(b_.dir()); }
  const std::vector<Written>& written() const { return written_; }

 private:
  template <class F>
  void put(int r, uint64_t enter, uint64_t leave, const char* function, F&& write) {
    write();
    written_.push_back({static_cast<size_t>(r), static_cast<int64_t>(enter), static_cast<int64_t>(leave), function});
  }
  test::TraceBuilder b_;
  std::vector<Written> written_;
};

// Two ranks, `iterations` times (t = 2 ms + i ms): interval 4 (app.c:300)
// around interval 5 (app.c:200, nested) around an Allreduce that rank 1
// enters 50 us late, then interval 1 (app.c:100, DemoTrace's) around
// interval 6 (app.c:200, nested) around another Allreduce. Against
// DemoTrace: 4 and 5 are only here, nested; 6 only here, under a matched
// interval; DemoTrace's 2 and 3 only there.
class ExtraIntervalsTrace {
 public:
  explicit ExtraIntervalsTrace(int iterations) : b_(2) {
    using test::kUs;
    for (int r = 0; r < 2; ++r) {
      b_.init(r, 0, test::kMs);
      uint64_t t = 2 * test::kMs;
      const uint64_t late = 50 * kUs * static_cast<uint64_t>(r);
      for (int it = 0; it < iterations; ++it, t += test::kMs) {
        b_.marker(r, t, 4, true, 3);
        b_.marker(r, t + 50 * kUs, 5, true, 2);
        b_.collective(r, test::Allreduce, t + 100 * kUs + late, t + 300 * kUs);
        b_.marker(r, t + 350 * kUs, 5, false, 2);
        b_.marker(r, t + 400 * kUs, 4, false, 3);
        b_.marker(r, t + 500 * kUs, 1, true, 1);
        b_.marker(r, t + 550 * kUs, 6, true, 2);
        b_.collective(r, test::Allreduce, t + 600 * kUs + late, t + 800 * kUs);
        b_.marker(r, t + 850 * kUs, 6, false, 2);
        b_.marker(r, t + 900 * kUs, 1, false, 1);
      }
      b_.finalize(r, t, t + 100 * kUs);
    }
    b_.close();
  }
  QString dir() const { return QString::fromStdString(b_.dir()); }

 private:
  test::TraceBuilder b_;
};

// `ranks` ranks: MPI_Init [0, 1 ms], user code, MPI_Allreduce [2, 3 ms] on
// every rank, MPI_Comm_rank [3, 3.9 ms] on even ranks, MPI_Finalize [4, 4.1 ms].
class OverviewTrace {
 public:
  explicit OverviewTrace(int ranks) : b_(ranks) {
    for (int r = 0; r < ranks; ++r) {
      b_.init(r, 0, test::kMs);
      b_.collective(r, test::Allreduce, 2 * test::kMs, 3 * test::kMs);
      if (r % 2 == 0) b_.other(r, test::CommRank, 3 * test::kMs, 3 * test::kMs + 900 * test::kUs);
      b_.finalize(r, 4 * test::kMs, 4 * test::kMs + 100 * test::kUs);
    }
    b_.close();
  }
  std::string dir() const { return b_.dir(); }

 private:
  test::TraceBuilder b_;
};

// `ranks` ranks (even) in pairs (a, a + 1), `iterations` times (t = 10 us +
// i ms): a posts two MPI_Irecvs from a + 1 at t + 10 and t + 20 us and waits
// for both in an MPI_Waitall from t + 300 us; a + 1 sends them late, from
// t + 100 to 400 us (varying per pair and iteration), so a waits from t + 10
// us, partly in user code; then an MPI_Barrier of all that a enters at
// t + 600 us and a + 1 at t + 650..654 us.
class LateSenderPairs {
 public:
  LateSenderPairs(int ranks, int iterations) : b_(ranks) {
    using test::kUs;
    for (int r = 0; r < ranks; ++r) b_.init(r, 0, 5 * kUs);
    for (int a = 0; a < ranks; a += 2)
      for (int it = 0; it < iterations; ++it) {
        const uint64_t t = 10 * kUs + static_cast<uint64_t>(it) * 1000 * kUs;
        const uint64_t s1 = t + (100 + 50 * static_cast<uint64_t>((it + a / 2) % 7)) * kUs;
        const uint32_t request = 0xAC000000u + static_cast<uint32_t>(2 * it);
        b_.irecv(a, t + 10 * kUs, t + 12 * kUs, a + 1, 1, request);
        b_.irecv(a, t + 20 * kUs, t + 22 * kUs, a + 1, 2, request + 1);
        b_.wait(a, test::Waitall, t + 300 * kUs, std::max(t + 300 * kUs, s1 + 20 * kUs) + 30 * kUs,
                {test::TraceBuilder::done(request, a + 1, 1, 8), test::TraceBuilder::done(request + 1, a + 1, 2, 8)});
        b_.send(a + 1, s1, s1 + 5 * kUs, a, 1);
        b_.send(a + 1, s1 + 20 * kUs, s1 + 25 * kUs, a, 2);
        b_.collective(a, test::Barrier, t + 600 * kUs, t + 700 * kUs);
        b_.collective(a + 1, test::Barrier, t + (650 + static_cast<uint64_t>(it % 5)) * kUs, t + 700 * kUs);
      }
    const uint64_t end = 10 * kUs + static_cast<uint64_t>(iterations) * 1000 * kUs;
    for (int r = 0; r < ranks; ++r) b_.finalize(r, end, end + 5 * kUs);
    b_.close();
  }
  std::string dir() const { return b_.dir(); }

 private:
  test::TraceBuilder b_;
};

// Loads a trace into a shown window; problems are collected, not shown.
struct LoadedWindow {
  MainWindow window;
  QStringList problems;
  explicit LoadedWindow(const QString& dir, bool quiet = true) {
    if (quiet) window.setQuiet([this](const QString& text) { problems << text; });
    window.resize(1400, 900);
    window.show();
    window.openTrace(dir);
    window.waitLoaded();
    QCoreApplication::processEvents();
  }
};

double ns(uint64_t v) { return static_cast<double>(v); }

}  // namespace

class GuiTest : public QObject {
  Q_OBJECT
 private slots:
  void tree_model_equals_analysis();
  void selection_shows_json_numbers();
  void hit_test_gives_tooltip();
  void wait_tooltip_names_kind_and_partner();
  void tooltip_names_call_site();
  void click_selects_interval();
  void zoom_to_range_shows_exact_events();
  void selection_highlights_and_zooms();
  void dense_markers_and_messages_leave_calls_visible();
  void long_call_fills_the_row_at_the_zoom_limit();
  void comparison_keeps_both_runs_columns_in_sight();
  void call_in_flight_says_so_in_its_tooltip();
  void panel_shows_visible_range();
  void wheel_zooms_about_cursor();
  void dense_rows_drawn_from_pyramid_leaves();
  void cancel_stops_loading();
  void loading_writes_the_window_index();
  void opening_another_trace_frees_the_first();
  void damaged_trace_opens_with_dialog();
  void unusable_directory_opens_with_dialog();
  void screenshot_writes_png();
  void bench_frames_prints_one_line();
  void many_ranks_scroll();
  void hidden_rows_leave_the_view();
  void find_goes_to_next_and_previous_call();
  void range_statistics_equal_brute_force();
  void overview_shows_every_rank();
  void layout_gives_timeline_half_and_is_remembered();
  void zoom_history_goes_back_and_forward();
  void navigation_stays_inside_the_trace();
  void exports_view_and_table();
  void overview_strip_marks_range_and_centres_on_click();
  void function_chart_equals_function_table();
  void message_matrix_equals_brute_force_and_click_finds_message();
  void summarized_call_is_one_run_of_its_colour();
  void nesting_bands_equal_interval_executions();
  void find_by_substring_with_completion_and_filters();
  void find_goes_to_interval_executions();
  void find_goes_to_calls_from_a_site();
  void comparison_equals_prof_analyze();
  void failed_comparison_keeps_the_trace();
  void comparison_of_different_rank_counts();
  void comparison_tabs_equal_prof_analyze();
  void comparison_tree_holds_every_interval_of_both_runs();
  void closing_comparison_restores_the_single_run_view();
  void summaries_keep_the_wait_overlay_as_a_fraction();
  void load_progress_is_one_figure();
  void summarized_rows_keep_their_nesting_bands();
  void group_frames_read_each_bucket_once();
};

void GuiTest::tree_model_equals_analysis() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  const analysis::Analysis a = analysis::analyze(trace.builder().dir());
  QVERIFY(a.usable());
  IntervalTreeModel* model = loaded.window.model();
  QCOMPARE(model->rowCount(), 1);
  // Every node in the same place with the same figures, walking both trees.
  size_t visited = 0;
  std::function<void(const QModelIndex&, int)> walk = [&](const QModelIndex& index, int i) {
    ++visited;
    const auto& n = a.intervals[static_cast<size_t>(i)];
    auto cell = [&](int column, int role) { return model->data(index.siblingAtColumn(column), role); };
    QCOMPARE(model->intervalOf(index), i);
    QCOMPARE(cell(IntervalTreeModel::Level, Qt::DisplayRole).toInt(), n.level);
    QCOMPARE(cell(IntervalTreeModel::ExeCount, Qt::DisplayRole).toULongLong(), n.exe_count);
    QCOMPARE(cell(IntervalTreeModel::Efficiency, IntervalTreeModel::SortRole).toDouble(), n.main.efficiency);
    QCOMPARE(cell(IntervalTreeModel::ExecutionTime, IntervalTreeModel::SortRole).toDouble(), n.main.execution_time);
    QCOMPARE(cell(IntervalTreeModel::LostTime, IntervalTreeModel::SortRole).toDouble(), n.main.lost_time);
    QCOMPARE(cell(IntervalTreeModel::ExecutionTime, Qt::DisplayRole).toString().toStdString(),
             analysis::figure_text(n.main.execution_time));
    const QString name = cell(IntervalTreeModel::Interval, Qt::DisplayRole).toString();
    if (n.id) {
      QVERIFY2(name.contains(QStringLiteral("id %1").arg(*n.id)), qPrintable(name));
      QVERIFY2(name.contains(QString::fromStdString(n.source_file + ":" + std::to_string(n.line))), qPrintable(name));
    }
    QCOMPARE(model->rowCount(index), static_cast<int>(n.children.size()));
    for (size_t k = 0; k < n.children.size(); ++k) {
      const QModelIndex child = model->index(static_cast<int>(k), 0, index);
      QCOMPARE(model->parent(child), index);
      walk(child, n.children[k]);
    }
  };
  walk(model->index(0, 0), 0);
  QCOMPARE(visited, a.intervals.size());
  QCOMPARE(a.intervals.size(), size_t{4});  // run, 1, 2 inside 1, 3

  // Sorted by lost time, largest first, through the proxy.
  QSortFilterProxyModel* proxy = loaded.window.proxy();
  loaded.window.tree()->sortByColumn(IntervalTreeModel::LostTime, Qt::DescendingOrder);
  const QModelIndex root = proxy->index(0, 0);
  QCOMPARE(proxy->rowCount(root), 2);
  const double first = proxy->index(0, IntervalTreeModel::LostTime, root).data(IntervalTreeModel::SortRole).toDouble();
  const double second = proxy->index(1, IntervalTreeModel::LostTime, root).data(IntervalTreeModel::SortRole).toDouble();
  QVERIFY(first >= second);
  QVERIFY(first > second || first == 0);
  // The filter keeps matches and their ancestors only.
  proxy->setFilterFixedString("app.c:200");
  QCOMPARE(proxy->rowCount(), 1);
  QCOMPARE(proxy->rowCount(proxy->index(0, 0)), 1);
  const QModelIndex one = proxy->index(0, 0, proxy->index(0, 0));
  QVERIFY(one.data().toString().contains("app.c:100"));
  QCOMPARE(proxy->rowCount(one), 1);
  QVERIFY(proxy->index(0, 0, one).data().toString().contains("app.c:200"));
}

void GuiTest::selection_shows_json_numbers() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  // The JSON report of prof-analyze, a separate process.
  QTemporaryDir out;
  const QString json_path = out.filePath("report.json");
  QProcess analyze;
  analyze.start(PROF_ANALYZE_BIN, {trace.dir(), "--json", json_path, "-o", out.filePath("report.txt"), "-q",
                                   "--no-progress"});
  QVERIFY(analyze.waitForFinished(60000));
  QCOMPARE(analyze.exitCode(), 0);
  std::ifstream in(json_path.toStdString());
  const nlohmann::json report = nlohmann::json::parse(in);

  int causes_shown = 0;
  double on_critical_path = 0;
  for (int id : {1, 2, 3}) {
    QVERIFY(loaded.window.selectIntervalId(id));
    const int interval = loaded.window.selectedInterval();
    QVERIFY(interval > 0);
    const auto& j = report["intervals"][static_cast<size_t>(interval)];
    QCOMPARE(j["id"].get<int>(), id);
    CharacteristicsPanel* panel = loaded.window.panel();
    QCOMPARE(panel->interval(), interval);
    QVERIFY2(panel->title().contains(QStringLiteral("LineNumber = %1").arg(j["line"].get<int>())),
             qPrintable(panel->title()));
    QVERIFY(panel->title().contains(QStringLiteral("EXE_Count=%1").arg(j["exe_count"].get<uint64_t>())));

    const QStandardItemModel* main = panel->mainTable();
    QCOMPARE(main->rowCount(), 15);
    for (int r = 0; r < main->rowCount(); ++r) {
      const std::string key = main->item(r, 0)->data(CharacteristicsPanel::KeyRole).toString().toStdString();
      QVERIFY2(j["main"].contains(key), key.c_str());
      const double value = j["main"][key].get<double>();
      QCOMPARE(main->item(r, 1)->data(CharacteristicsPanel::NumberRole).toDouble(), value);
      // Read as in the text report: cut, not rounded.
      if (key != "processors")
        QCOMPARE(main->item(r, 1)->text().toStdString(), analysis::figure_text(value));
    }
    const QStandardItemModel* comparative = panel->comparativeTable();
    QCOMPARE(comparative->rowCount(), static_cast<int>(j["comparative"].size()));
    for (int r = 0; r < comparative->rowCount(); ++r) {
      const std::string key = comparative->item(r, 0)->data(CharacteristicsPanel::KeyRole).toString().toStdString();
      for (int c = 1; c < comparative->columnCount(); ++c) {
        const std::string field =
            comparative->headerData(c, Qt::Horizontal, CharacteristicsPanel::KeyRole).toString().toStdString();
        QCOMPARE(comparative->item(r, c)->data(CharacteristicsPanel::NumberRole).toDouble(),
                 j["comparative"][key][field].get<double>());
      }
      // Tmid reads as in the text report.
      QCOMPARE(comparative->item(r, 5)->text().toStdString(),
               analysis::figure_text(j["comparative"][key]["mean"].get<double>()));
    }
    const QStandardItemModel* per_rank = panel->perRankTable();
    QCOMPARE(per_rank->rowCount(), static_cast<int>(j["per_rank"].size()));
    for (int r = 0; r < per_rank->rowCount(); ++r)
      for (int c = 0; c < per_rank->columnCount(); ++c) {
        const std::string field =
            per_rank->headerData(c, Qt::Horizontal, CharacteristicsPanel::KeyRole).toString().toStdString();
        QCOMPARE(per_rank->item(r, c)->data(CharacteristicsPanel::NumberRole).toDouble(),
                 j["per_rank"][static_cast<size_t>(r)][field].get<double>());
      }
    // Shown: ranks in ascending order, functions longest first.
    const QAbstractItemModel* shown_ranks = panel->perRankView()->model();
    for (int r = 1; r < shown_ranks->rowCount(); ++r)
      QVERIFY(shown_ranks->index(r - 1, 0).data(CharacteristicsPanel::NumberRole).toDouble() <
              shown_ranks->index(r, 0).data(CharacteristicsPanel::NumberRole).toDouble());
    const QAbstractItemModel* shown_functions = panel->functionView()->model();
    for (int r = 1; r < shown_functions->rowCount(); ++r)
      QVERIFY(shown_functions->index(r - 1, 2).data(CharacteristicsPanel::NumberRole).toDouble() >=
              shown_functions->index(r, 2).data(CharacteristicsPanel::NumberRole).toDouble());
    QCOMPARE(panel->mainTable()->headerData(1, Qt::Horizontal).toString(), QString("Value"));
    const QStandardItemModel* functions = panel->functionTable();
    QCOMPARE(functions->rowCount(), static_cast<int>(j["functions"].size()));
    for (int r = 0; r < functions->rowCount(); ++r) {
      QCOMPARE(functions->item(r, 0)->text().toStdString(), j["functions"][static_cast<size_t>(r)]["name"].get<std::string>());
      QCOMPARE(functions->item(r, 2)->data(CharacteristicsPanel::NumberRole).toDouble(),
               j["functions"][static_cast<size_t>(r)]["time"].get<double>());
    }
    // Wait states: each kind's total and largest rank, and the partners
    // waited for, as the JSON report has them.
    const QStandardItemModel* waits = panel->waitStateTable();
    QCOMPARE(waits->rowCount(), static_cast<int>(j["wait_states"].size()));
    for (int r = 0; r < waits->rowCount(); ++r) {
      const std::string key = waits->item(r, 0)->data(CharacteristicsPanel::KeyRole).toString().toStdString();
      QVERIFY2(j["wait_states"].contains(key), key.c_str());
      QCOMPARE(waits->item(r, 1)->data(CharacteristicsPanel::NumberRole).toDouble(),
               j["wait_states"][key]["total"].get<double>());
      double largest = 0;
      for (const auto& v : j["wait_states"][key]["per_rank"]) largest = std::max(largest, v.get<double>());
      QCOMPARE(waits->item(r, 2)->data(CharacteristicsPanel::NumberRole).toDouble(), largest);
    }
    const QStandardItemModel* partners = panel->waitedForTable();
    QCOMPARE(partners->rowCount(), static_cast<int>(j["waited_for"].size()));
    for (int r = 0; r < partners->rowCount(); ++r) {
      QCOMPARE(partners->item(r, 0)->data(CharacteristicsPanel::NumberRole).toInt(),
               j["waited_for"][static_cast<size_t>(r)]["rank"].get<int>());
      QCOMPARE(partners->item(r, 1)->data(CharacteristicsPanel::NumberRole).toDouble(),
               j["waited_for"][static_cast<size_t>(r)]["seconds"].get<double>());
    }
    // Root causes (interval, rank, seconds) and the time on the critical path.
    const QStandardItemModel* causes = panel->causedByTable();
    QCOMPARE(causes->rowCount(), static_cast<int>(j["caused_by"].size()));
    for (int r = 0; r < causes->rowCount(); ++r) {
      const auto& cause = j["caused_by"][static_cast<size_t>(r)];
      QCOMPARE(causes->item(r, 0)->data(CharacteristicsPanel::NumberRole).toInt(), cause["interval"].get<int>());
      const auto& by = report["intervals"][cause["interval"].get<size_t>()];
      // An interval by its line; the root (no id), where a partner spent
      // time outside any interval, by name.
      QVERIFY2(by["id"].is_null() ? causes->item(r, 0)->text() == QStringLiteral("the whole run")
                                  : causes->item(r, 0)->text().contains(QStringLiteral(":%1").arg(by["line"].get<int>())),
               qPrintable(causes->item(r, 0)->text()));
      QCOMPARE(causes->item(r, 1)->data(CharacteristicsPanel::NumberRole).toInt(), cause["rank"].get<int>());
      QCOMPARE(causes->item(r, 2)->data(CharacteristicsPanel::NumberRole).toDouble(), cause["seconds"].get<double>());
    }
    causes_shown += causes->rowCount();
    QVERIFY(panel->criticalPathSeconds().has_value());
    QCOMPARE(*panel->criticalPathSeconds(), j["critical_path_s"].get<double>());
    on_critical_path += *panel->criticalPathSeconds();
    // The report text is the text report's block of that interval.
    const QString text = panel->reportText();
    std::ifstream txt(out.filePath("report.txt").toStdString());
    const std::string whole((std::istreambuf_iterator<char>(txt)), std::istreambuf_iterator<char>());
    const std::string block = text.section("---Characteristics per Processor---", 0, 0).toStdString();
    QVERIFY(block.size() > 200);
    QVERIFY2(whole.find(block) != std::string::npos, block.c_str());
  }
  // The demo's waits have causes, and its intervals lie on the critical path.
  QVERIFY(causes_shown > 0);
  QVERIFY(on_critical_path > 0);
}

void GuiTest::hit_test_gives_tooltip() {
  DemoTrace trace(60);
  LoadedWindow loaded(trace.dir());
  TimelineView* view = loaded.window.timelineView();
  // Iteration 3: the Send on rank 0 at [5.100, 5.150] ms, the Recv on rank 1 at [5.050, 5.200] ms.
  const double t = ns(kLoopStart + 3 * kPeriod);
  view->setRange(t, t + ns(500 * test::kUs));
  const QPoint send(static_cast<int>(view->xOf(t + ns(125 * test::kUs))), view->rowCenterY(0));
  const auto call = view->callAt(send);
  QVERIFY(call.has_value());
  QCOMPARE(call->function, std::string_view("MPI_Send"));
  QCOMPARE(call->enter, static_cast<int64_t>(t + ns(100 * test::kUs)));
  const QString tip = view->tooltipAt(send);
  for (const char* part : {"MPI_Send", "rank 0", "bytes 64", "peer 1", "tag 7", "duration 50.000 us",
                           "in interval 1 (call site app.c:100)"})
    QVERIFY2(tip.contains(part), qPrintable(tip + " lacks " + part));
  const QPoint recv(static_cast<int>(view->xOf(t + ns(180 * test::kUs))), view->rowCenterY(1));
  const QString recv_tip = view->tooltipAt(recv);
  for (const char* part : {"MPI_Recv", "rank 1", "peer 0", "tag 7", "duration 150.000 us"})
    QVERIFY2(recv_tip.contains(part), qPrintable(recv_tip + " lacks " + part));
  // User code between calls (interval 2's begin marker at 300 us does not split it): the span between
  // the Send's leave and the Allreduce's enter.
  view->grab();
  const QString user = view->tooltipAt(QPoint(static_cast<int>(view->xOf(t + ns(250 * test::kUs))), view->rowCenterY(0)));
  QVERIFY2(user.startsWith("<b>UserCode"), qPrintable(user));
  for (const QString& part : {QStringLiteral("rank 0"), QStringLiteral("after MPI_Send"), QStringLiteral("before MPI_Allreduce"),
                              QStringLiteral("from %1 s").arg(QString::number((t + ns(150 * test::kUs)) / 1e9, 'f', 9)),
                              QStringLiteral("to %1 s").arg(QString::number((t + ns(400 * test::kUs)) / 1e9, 'f', 9)),
                              QStringLiteral("duration 250.000 us")})
    QVERIFY2(user.contains(part), qPrintable(user + " lacks " + part));
  QVERIFY2(!user.contains("Message"), qPrintable(user));
  // The message's arrow, halfway from the Send's enter (rank 0) to the Recv's return (rank 1).
  QCOMPARE(view->drawnArrows(), size_t{1});
  const QPoint arrow(static_cast<int>(std::lround(view->xOf(t + ns(150 * test::kUs)))),
                     (view->rowCenterY(0) + view->rowCenterY(1)) / 2);
  const QString message = view->tooltipAt(arrow);
  QVERIFY2(message.startsWith("<b>Message rank 0 to rank 1</b>"), qPrintable(message));
  for (const char* part : {"bytes 64, tag 7", "sent by MPI_Send", "latency 100.000 us"})
    QVERIFY2(message.contains(part), qPrintable(message + " lacks " + part));
  // Arrows off: no message there.
  view->setArrows(false);
  view->grab();
  QVERIFY(!view->tooltipAt(arrow).contains("Message"));
  view->setArrows(true);
  // The whole run in a narrow view (118 px, 365 calls a row): rows are summarized and the hit test gives
  // the longest call of the pixel.
  TimelineView narrow;
  narrow.setTimeline(loaded.window.session()->timeline);
  narrow.resize(200, 200);
  narrow.showAll();
  narrow.grab();
  QCOMPARE(narrow.summarizedRows(), size_t{2});
  const auto longest = narrow.callAt(
      QPoint(static_cast<int>(narrow.xOf(ns(kLoopStart + 10 * kPeriod + 500 * test::kUs))), narrow.rowCenterY(0)));
  QVERIFY(longest.has_value());
  QCOMPARE(longest->function, std::string_view("MPI_Allreduce"));
}

// A real trace (gui.callsites_trace: tests/shim/callsites_c.c at 2 ranks, 5
// MPI_Allreduce calls from line 10, then 3 from line 22): the tooltip over a
// call names the line it was made from, on either rank.
void GuiTest::tooltip_names_call_site() {
  const QString dir = qEnvironmentVariable("PROF_GUI_CALLSITES_TRACE");
  QVERIFY2(!dir.isEmpty(), "PROF_GUI_CALLSITES_TRACE names the trace (ctest sets it)");
  LoadedWindow loaded(dir);
  TimelineView* view = loaded.window.timelineView();
  const auto& timeline = loaded.window.session()->timeline;
  size_t checked = 0;
  for (size_t row = 0; row < timeline->rows().size(); ++row) {
    if (timeline->rows()[row].stream != 0) continue;
    std::optional<analysis::TimelineCall> call = timeline->find_call(row, "MPI_Allreduce", 0, true);
    for (int n = 0; n < 8; ++n) {
      QVERIFY2(call.has_value(), qPrintable(QStringLiteral("row %1: call %2 missing").arg(row).arg(n)));
      // The call alone in the middle third of the view.
      const double d = static_cast<double>(call->duration), margin = std::max(d, 1000.0);
      view->setRange(static_cast<double>(call->enter) - margin, static_cast<double>(call->enter) + d + margin);
      view->grab();
      const QPoint at(static_cast<int>(view->xOf(static_cast<double>(call->enter) + d / 2)),
                      view->rowCenterY(row));
      const auto hit = view->callAt(at);
      QVERIFY(hit.has_value());
      QCOMPARE(hit->index, call->index);
      const QString tip = view->tooltipAt(at);
      const QRegularExpression want(QStringLiteral("called from (\\S*/)?callsites_c\\.c:%1(<|$)").arg(n < 5 ? 10 : 22));
      QVERIFY2(tip.contains(QStringLiteral("<b>MPI_Allreduce")) && want.match(tip).hasMatch(),
               qPrintable(tip + " lacks " + want.pattern()));
      ++checked;
      call = timeline->find_call(row, "MPI_Allreduce", static_cast<double>(call->enter) + 1, true);
    }
  }
  QCOMPARE(checked, size_t{16});
}

void GuiTest::wait_tooltip_names_kind_and_partner() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  TimelineView* view = loaded.window.timelineView();
  // Iteration 3: rank 1's Recv waits from 50 us to the Send's enter at 100 us;
  // rank 0 enters the Allreduce at 400 us and waits for rank 1 until 500 us.
  const double t = ns(kLoopStart + 3 * kPeriod);
  view->setRange(t, t + ns(kPeriod));
  view->grab();
  const QString late_sender = view->tooltipAt(QPoint(static_cast<int>(view->xOf(t + ns(75 * test::kUs))), view->rowCenterY(1)));
  for (const char* part : {"Late Sender", "50.000 us", "rank 0's MPI_Send", "MPI_Recv"})
    QVERIFY2(late_sender.contains(part), qPrintable(late_sender + " lacks " + part));
  const QString nxn = view->tooltipAt(QPoint(static_cast<int>(view->xOf(t + ns(450 * test::kUs))), view->rowCenterY(0)));
  for (const char* part : {"Wait at NxN", "100.000 us", "rank 1's MPI_Allreduce (the last member to enter)"})
    QVERIFY2(nxn.contains(part), qPrintable(nxn + " lacks " + part));
  // Past the wait, inside the Allreduce: the call alone.
  const QString after = view->tooltipAt(QPoint(static_cast<int>(view->xOf(t + ns(650 * test::kUs))), view->rowCenterY(0)));
  QVERIFY2(after.contains("MPI_Allreduce") && !after.contains("Wait at"), qPrintable(after));
  // Few waits in view: each gets its arrow to the call that released it.
  const auto& waits = view->drawnWaits();
  QCOMPARE(waits.size(), size_t{2});
  QCOMPARE(view->drawnWaitArrows(), size_t{2});
  for (const auto& w : waits) {
    const auto partner = loaded.window.session()->timeline->call(w.partner_row, w.partner_index);
    QVERIFY(partner.has_value());
    QCOMPARE(static_cast<double>(partner->enter), w.partner_enter);
    QCOMPARE(w.end, w.partner_enter);  // released when the partner entered
  }
}

void GuiTest::click_selects_interval() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  TimelineView* view = loaded.window.timelineView();
  const double t = ns(kLoopStart + 5 * kPeriod);
  view->setRange(t, t + ns(kPeriod));
  // The Allreduce of rank 1 (in interval 2), then the Send of rank 0 (in interval 1).
  QTest::mouseClick(view, Qt::LeftButton, {}, QPoint(static_cast<int>(view->xOf(t + ns(600 * test::kUs))), view->rowCenterY(1)));
  const auto& a = *loaded.window.session()->analysis;
  int selected = loaded.window.selectedInterval();
  QVERIFY(selected > 0);
  QCOMPARE(*a.intervals[static_cast<size_t>(selected)].id, uint16_t{2});
  QTest::mouseClick(view, Qt::LeftButton, {}, QPoint(static_cast<int>(view->xOf(t + ns(125 * test::kUs))), view->rowCenterY(0)));
  selected = loaded.window.selectedInterval();
  QVERIFY(selected > 0);
  QCOMPARE(*a.intervals[static_cast<size_t>(selected)].id, uint16_t{1});
  QCOMPARE(loaded.window.panel()->interval(), selected);
  // A click does not move the view.
  QCOMPARE(view->from(), t);
}

void GuiTest::zoom_to_range_shows_exact_events() {
  DemoTrace trace(40);
  LoadedWindow loaded(trace.dir());
  TimelineView* view = loaded.window.timelineView();
  view->showAll();
  view->grab();
  // Shift-drag over a stretch of a few iterations.
  const QRect plot = view->plotRect();
  const QPoint a(plot.left() + plot.width() * 3 / 10, view->rowCenterY(0));
  const QPoint b(plot.left() + plot.width() * 4 / 10, view->rowCenterY(1));
  const double from = view->timeAt(a.x()), to = view->timeAt(b.x());
  QTest::mousePress(view, Qt::LeftButton, Qt::ShiftModifier, a);
  QTest::mouseMove(view, QPoint((a.x() + b.x()) / 2, a.y()));
  QTest::mouseMove(view, b);
  QTest::mouseRelease(view, Qt::LeftButton, Qt::ShiftModifier, b);
  QCOMPARE(view->from(), from);
  QCOMPARE(view->to(), to);
  QVERIFY(to - from > ns(2 * kPeriod));
  view->grab();
  QCOMPARE(view->summarizedRows(), size_t{0});
  std::set<Written> expected, drawn;
  for (const Written& w : trace.written())
    if (static_cast<double>(w.enter) < to &&
        (static_cast<double>(w.leave) > from || (w.leave == w.enter && static_cast<double>(w.enter) >= from)))
      expected.insert(w);
  for (const auto& c : view->drawnCalls())
    drawn.insert(Written{c.row, c.enter, c.leave(), std::string(c.function)});
  QCOMPARE(drawn.size(), expected.size());
  for (auto e = expected.begin(), d = drawn.begin(); e != expected.end(); ++e, ++d) {
    QCOMPARE(d->row, e->row);
    QCOMPARE(d->enter, e->enter);
    QCOMPARE(d->leave, e->leave);
    QCOMPARE(d->function, e->function);
  }
  // Few messages are visible: each gets an arrow.
  size_t sends = 0;
  for (const Written& w : expected) sends += w.function == "MPI_Send";
  QVERIFY(sends >= 2);
  QVERIFY(view->drawnArrows() >= sends);
  // A plain drag pans by the distance dragged, keeping the width.
  const double width = view->to() - view->from(), before = view->from();
  const double per_px = width / plot.width();
  QTest::mousePress(view, Qt::LeftButton, {}, QPoint(500, view->rowCenterY(0)));
  QTest::mouseMove(view, QPoint(450, view->rowCenterY(0)));
  QTest::mouseRelease(view, Qt::LeftButton, {}, QPoint(450, view->rowCenterY(0)));
  QVERIFY(std::abs((view->from() - before) - 50 * per_px) < 1e-3);
  QVERIFY(std::abs((view->to() - view->from()) - width) < 1e-3);
}

// The whole run of a loop with a message and four markers a rank every
// millisecond, 200 times: markers in nearly every pixel column and messages
// every few pixels. The calls and waits under them stay visible: markers are
// ticks along the row's top, and arrows are drawn only where they are at
// least kPixelsPerArrow apart on average (zoomed in, they are).
void GuiTest::dense_markers_and_messages_leave_calls_visible() {
  DemoTrace trace(200);
  LoadedWindow loaded(trace.dir());
  TimelineView* view = loaded.window.timelineView();
  view->showAll();
  const QImage shot = view->grab().toImage();
  QCOMPARE(view->drawnArrows(), size_t{0});
  const int x0 = static_cast<int>(view->xOf(ns(kLoopStart))) + 1,
            x1 = static_cast<int>(view->xOf(ns(kLoopStart + 200 * kPeriod))) - 1;
  QVERIFY(x1 - x0 > 200);
  const QColor marker = prof::gui::kind_color(analysis::TimelineKind::Marker);
  for (int row = 0; row < 2; ++row) {
    int dark = 0;
    for (int x = x0; x < x1; ++x) dark += shot.pixelColor(x, view->rowCenterY(row)) == marker;
    QVERIFY2(dark == 0, qPrintable(QStringLiteral("row %1: %2 of %3 pixels at mid-height are the marker colour")
                                       .arg(row).arg(dark).arg(x1 - x0)));
  }
  // Two iterations in view: each message gets its arrow.
  view->setRange(ns(kLoopStart), ns(kLoopStart + 2 * kPeriod));
  view->grab();
  QVERIFY(view->drawnArrows() >= 2);
}

void GuiTest::selection_highlights_and_zooms() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  QVERIFY(loaded.window.selectIntervalId(2));
  TimelineView* view = loaded.window.timelineView();
  // Interval 2's first execution: rank 0 from 2.300 ms to 2.800 ms (rank 1 the same).
  QVERIFY(view->highlightedNode() > 0);
  QVERIFY(view->from() < ns(kLoopStart + 300 * test::kUs));
  QVERIFY(view->from() > ns(kLoopStart + 200 * test::kUs));
  QVERIFY(view->to() > ns(kLoopStart + 800 * test::kUs));
  QVERIFY(view->to() < ns(kLoopStart + 900 * test::kUs));
  // The highlight is drawn in a strip along the ruler's foot and as an
  // outline in the row's margins: the calls under it keep their colours
  // (rank 0's Allreduce from 2.4 to 2.7 ms), zoomed in and out.
  for (const bool zoomed_out : {false, true}) {
    if (zoomed_out) view->showAll();
    const QImage shot = view->grab().toImage();
    // row_y: the call's top line, under the nesting track (two levels).
    const int strip_y = view->plotRect().top() - 2, row_y = view->plotRect().top() + 1 + 2 * TimelineView::kBandHeight;
    const int x = static_cast<int>(view->xOf(ns(kLoopStart + 550 * test::kUs)));
    QCOMPARE(shot.pixelColor(x, strip_y), QColor(255, 200, 0));
    QCOMPARE(shot.pixelColor(x, row_y), prof::gui::kind_color(analysis::TimelineKind::Collective));
    QCOMPARE(shot.pixelColor(x, view->rowCenterY(0)), prof::gui::kind_color(analysis::TimelineKind::Collective));
  }
  view->setRange(ns(kLoopStart + 200 * test::kUs), ns(kLoopStart + 900 * test::kUs));
  const QImage image = view->grab().toImage();
  const int band_y = view->plotRect().top() - 2;
  const QColor outside = image.pixelColor(static_cast<int>(view->xOf(ns(kLoopStart + 250 * test::kUs))), band_y);
  QVERIFY2(outside != QColor(255, 200, 0), qPrintable(outside.name()));
  // Typing in the interval filter changes the tree's rows only: the panel,
  // the selection (while it is listed) and the timeline stay as they were.
  view->setRange(ns(kLoopStart), ns(kLoopStart + 3 * kPeriod));  // the user scrolled away
  const QString title = loaded.window.panel()->title();
  const int selected = loaded.window.selectedInterval();
  const double from = view->from(), to = view->to();
  for (const QString& text : {QString("a"), QString("ap"), QString("zzz-matches-nothing"), QString()}) {
    loaded.window.filterBox()->setText(text);
    QCoreApplication::processEvents();
    QCOMPARE(loaded.window.panel()->title(), title);
    QCOMPARE(view->from(), from);
    QCOMPARE(view->to(), to);
    if (text != "zzz-matches-nothing") QCOMPARE(loaded.window.selectedInterval(), selected);
  }
}

void GuiTest::panel_shows_visible_range() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  QVERIFY(loaded.window.selectIntervalId(2));
  TimelineView* view = loaded.window.timelineView();
  // Iterations 4 to 6 only.
  const double from = ns(kLoopStart + 4 * kPeriod), to = ns(kLoopStart + 7 * kPeriod);
  loaded.window.visibleRangeAction()->setChecked(true);
  view->setRange(from, to);
  CharacteristicsPanel* panel = loaded.window.panel();
  QTRY_VERIFY_WITH_TIMEOUT(panel->scope().startsWith("Visible range 0.006000"), 20000);
  analysis::Options options;
  options.window_from_s = from / 1e9;
  options.window_to_s = to / 1e9;
  const analysis::Analysis windowed = analysis::analyze(trace.builder().dir(), options);
  const auto* node = test::find_interval(windowed, 2);
  QVERIFY(node);
  QCOMPARE(node->exe_count, uint64_t{3});
  QVERIFY2(panel->title().contains("EXE_Count=3"), qPrintable(panel->title()));
  const QStandardItemModel* main = panel->mainTable();
  for (int r = 0; r < main->rowCount(); ++r)
    if (main->item(r, 0)->data(CharacteristicsPanel::KeyRole).toString() == "execution_time")
      QCOMPARE(main->item(r, 1)->data(CharacteristicsPanel::NumberRole).toDouble(), node->main.execution_time);
  // Off again: the whole run's figures.
  loaded.window.visibleRangeAction()->setChecked(false);
  QVERIFY2(panel->title().contains("EXE_Count=20"), qPrintable(panel->title()));
  QCOMPARE(panel->scope(), QString("Whole run"));
}

void GuiTest::wheel_zooms_about_cursor() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  TimelineView* view = loaded.window.timelineView();
  view->showAll();
  const QPointF at(view->plotRect().left() + 300.5, view->rowCenterY(0));
  const double t = view->timeAt(at.x()), width = view->to() - view->from();
  QWheelEvent wheel(at, view->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QCoreApplication::sendEvent(view, &wheel);
  QVERIFY(view->to() - view->from() < width * 0.9);
  QVERIFY(std::abs(view->timeAt(at.x()) - t) < 1e-3 * width);
  // Keys: + zooms in about the middle, Home shows everything again.
  const double mid = (view->from() + view->to()) / 2, zoomed = view->to() - view->from();
  QTest::keyClick(view, Qt::Key_Plus);
  QVERIFY(std::abs((view->to() - view->from()) - zoomed / 2) < 1e-6 * zoomed);
  QVERIFY(std::abs((view->from() + view->to()) / 2 - mid) < 1e-6 * zoomed);
  QTest::keyClick(view, Qt::Key_Right);
  QVERIFY((view->from() + view->to()) / 2 > mid);
  QTest::keyClick(view, Qt::Key_Home);
  QCOMPARE(view->from(), 0.0);
  QCOMPARE(view->to(), width);
  // Ruler labels never overlap, at any zoom: the whole run, and a microsecond
  // 45 s and 4 years in (labels of up to 21 characters), at 1600 and 500 px.
  for (int w : {1600, 500})
    for (const auto& [from, to] : {std::pair<double, double>{0.0, width}, {45.008882e9, 45.008882e9 + 1000},
                                   {123456789.012e9, 123456789.012e9 + 1000}}) {
      view->resize(w, view->height());
      view->setRange(from, to);
      const auto ticks = view->rulerTicks();
      int labels = 0, last_right = -1;
      for (const auto& tick : ticks) {
        if (tick.label.isEmpty()) continue;
        ++labels;
        QVERIFY2(tick.label_rect.left() > last_right, qPrintable(tick.label));
        QVERIFY(tick.label_rect.right() < view->width());
        last_right = tick.label_rect.right();
      }
      QVERIFY2(labels >= 2, qPrintable(QString::number(labels)));
    }
}

void GuiTest::dense_rows_drawn_from_pyramid_leaves() {
  // One rank, 20,000 calls of 50 ns every 100 ns: 2 ms of dense calls.
  test::TraceBuilder b(1);
  b.init(0, 0, 1000);
  constexpr uint64_t kFirst = 10000, kCalls = 20000;
  for (uint64_t k = 0; k < kCalls; ++k) b.other(0, test::CommRank, kFirst + 100 * k, kFirst + 100 * k + 50);
  b.finalize(0, kFirst + 100 * kCalls, kFirst + 100 * kCalls + 1000);
  b.close();
  LoadedWindow loaded(QString::fromStdString(b.dir()));
  TimelineView* view = loaded.window.timelineView();
  const auto* timeline = view->timeline();
  const double leaf = timeline->leaf_ns(0);
  QVERIFY(leaf > 0);
  const int columns = view->plotRect().width();
  // Columns finer than a leaf with 10,000 calls in range: drawn from the leaves.
  const double from = ns(kFirst + 5000 * 100), width = leaf * columns * 0.9;
  QVERIFY(width / 100 > TimelineView::kFineBudget);
  view->setRange(from, from + width);
  QImage image = view->grab().toImage();
  QCOMPARE(view->summarizedRows(), size_t{1});
  QVERIFY2(view->drawnBucketWidth(0) >= leaf, qPrintable(QString::number(view->drawnBucketWidth(0))));
  // Every column of the row shows MPI time (half of it is calls).
  const QRgb other = prof::gui::kind_color(analysis::TimelineKind::OtherMpi).rgb();
  const int bottom = view->rowCenterY(0) + 2 * (view->rowCenterY(0) - view->plotRect().top()) / 3 - 2;
  for (int x = view->plotRect().left() + 1; x < view->plotRect().right() - 1; ++x)
    QVERIFY2(image.pixel(x, bottom) == other, qPrintable(QStringLiteral("column %1").arg(x)));
  // Fewer calls than fit as calls: exactly those calls.
  view->setRange(from, from + 100.0 * columns);
  view->grab();
  QCOMPARE(view->summarizedRows(), size_t{0});
  QCOMPARE(view->drawnCalls().size(), static_cast<size_t>(columns));
  QCOMPARE(view->drawnCalls().front().enter, static_cast<int64_t>(from));
}

// Zoomed to the 10 ns limit inside a call of 100 ms: the call, whose ends lie
// billions of pixels outside the view, still fills the row.
void GuiTest::long_call_fills_the_row_at_the_zoom_limit() {
  test::TraceBuilder b(1);
  b.init(0, 0, 1000);
  b.other(0, test::CommRank, 2000, 2000 + 100 * test::kMs);
  b.finalize(0, 101 * test::kMs, 102 * test::kMs);
  b.close();
  LoadedWindow loaded(QString::fromStdString(b.dir()));
  TimelineView* view = loaded.window.timelineView();
  const QRgb other = prof::gui::kind_color(analysis::TimelineKind::OtherMpi).rgb();
  for (const double width : {10.0, 20.0, 1000.0}) {
    view->setRange(ns(50 * test::kMs), ns(50 * test::kMs) + width);
    const QImage image = view->grab().toImage();
    for (int x = view->plotRect().left() + 1; x < view->plotRect().right() - 1; x += 7)
      QVERIFY2(image.pixel(x, view->rowCenterY(0)) == other,
               qPrintable(QStringLiteral("%1 ns wide: column %2").arg(width).arg(x)));
  }
}

void GuiTest::cancel_stops_loading() {
  DemoTrace trace(2000);
  prof::gui::TraceLoader loader;
  std::shared_ptr<prof::gui::TraceSession> loaded;
  bool cancelled = false;
  connect(&loader, &prof::gui::TraceLoader::finished, this,
          [&](std::shared_ptr<prof::gui::TraceSession> session, bool was_cancelled) {
            loaded = session;
            cancelled = was_cancelled;
          });
  loader.load(trace.dir());
  loader.cancel();  // how far the worker got by then is the scheduler's business
  loader.wait_done();
  QVERIFY(loaded);
  QVERIFY(cancelled);
  QVERIFY(!loader.busy());
  // The window keeps its previous state: a cancelled load changes nothing.
  LoadedWindow window(trace.dir());
  const auto before = window.window.session();
  QVERIFY(before->analysis->usable());
  DemoTrace other(10);
  window.window.openTrace(other.dir());
  window.window.loader()->cancel();
  window.window.waitLoaded();
  QCOMPARE(window.window.session(), before);
  QCOMPARE(window.window.model()->rowCount(), 1);
  QCOMPARE(window.window.timelineView()->timeline(), before->timeline.get());
}

// Opening a trace writes the window index as prof-analyze does (its whole
// analysis), after the load has finished; setWriteWindowIndex(false), as
// prof-gui --no-index, writes none.
void GuiTest::loading_writes_the_window_index() {
  for (const bool write : {false, true}) {
    DemoTrace trace(200);
    const std::string index = trace.builder().dir() + "/window-index.bin";
    prof::gui::TraceLoader loader;
    loader.setWriteWindowIndex(write);
    std::shared_ptr<prof::gui::TraceSession> loaded;
    connect(&loader, &prof::gui::TraceLoader::finished, this,
            [&](std::shared_ptr<prof::gui::TraceSession> session, bool) { loaded = session; });
    loader.load(trace.dir());
    loader.wait_done();
    QVERIFY(loaded && loaded->analysis && loaded->analysis->usable());
    QVERIFY(!loader.busy());
    loader.wait_background();
    QCOMPARE(std::filesystem::exists(index), write);
  }
}

// A trace's timeline (its records, spill file and open rank files) lives as
// long as something shows it: once another trace is open and the first
// load's background work is done, nothing holds the first one.
void GuiTest::opening_another_trace_frees_the_first() {
  DemoTrace first(200), second(20);
  LoadedWindow window(first.dir());
  std::weak_ptr<const prof::analysis::Timeline> timeline = window.window.session()->timeline;
  std::weak_ptr<const prof::analysis::Analysis> analysis = window.window.session()->analysis;
  QVERIFY(!timeline.expired() && !analysis.expired());
  window.window.openTrace(second.dir());
  window.window.waitLoaded();
  window.window.loader()->wait_background();
  QCoreApplication::processEvents();
  QCOMPARE(window.window.session()->dir, second.dir());
  QVERIFY2(timeline.expired(), "the first trace's timeline is still held");
  QVERIFY2(analysis.expired(), "the first trace's analysis is still held");
}

void GuiTest::damaged_trace_opens_with_dialog() {
  DemoTrace trace(50);
  const std::string path = trace.builder().path(1);
  const auto size = std::filesystem::file_size(path);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(size - 16));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5A);
  f.seekp(static_cast<std::streamoff>(size - 16));
  f.write(&c, 1);
  f.close();
  LoadedWindow loaded(trace.dir(), false);
  QMessageBox* box = nullptr;
  QTRY_VERIFY((box = loaded.window.findChild<QMessageBox*>("problemDialog")) != nullptr);
  QVERIFY2(box->text().contains("rank-00001.prof"), qPrintable(box->text()));
  QVERIFY2(box->text().contains("Salvaged"), qPrintable(box->text()));
  // What was salvaged is shown.
  QCOMPARE(loaded.window.model()->rowCount(), 1);
  QVERIFY(loaded.window.panel()->interval() == 0);
  box->accept();
}

void GuiTest::unusable_directory_opens_with_dialog() {
  QTemporaryDir empty;
  LoadedWindow loaded(empty.path(), false);
  QMessageBox* box = nullptr;
  QTRY_VERIFY((box = loaded.window.findChild<QMessageBox*>("problemDialog")) != nullptr);
  QVERIFY2(box->text().contains(empty.path()), qPrintable(box->text()));
  QCOMPARE(loaded.window.model()->rowCount(), 0);
  box->accept();
}

void GuiTest::screenshot_writes_png() {
  DemoTrace trace(30);
  QTemporaryDir out;
  // Settings of its own (other tests running meanwhile open traces).
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("XDG_CONFIG_HOME", out.filePath("config"));
  for (const QStringList& extra : {QStringList{}, QStringList{"--select", "2"},
                                   QStringList{"--window", "0.005:0.008", "--select", "1"}}) {
    const QString png = out.filePath("shot.png");
    QFile::remove(png);
    QProcess gui;
    gui.setProcessEnvironment(env);
    gui.start(PROF_GUI_BIN, QStringList{trace.dir(), "--screenshot", png} + extra);
    QVERIFY(gui.waitForFinished(60000));
    QCOMPARE(gui.exitStatus(), QProcess::NormalExit);
    QVERIFY2(gui.exitCode() == 0, gui.readAllStandardError().constData());
    QVERIFY(QFileInfo(png).size() > 20000);
    QImage image(png);
    QCOMPARE(image.format() == QImage::Format_Invalid, false);
    QCOMPARE(image.size(), QSize(1600, 1000));
    std::set<QRgb> colours;
    for (int y = 0; y < image.height(); y += 7)
      for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
    QVERIFY2(colours.size() > 20, qPrintable(QString::number(colours.size())));
    // The timeline shows the run: user code and collectives drawn.
    size_t user = 0, collective = 0;
    for (int y = 0; y < image.height(); ++y)
      for (int x = 0; x < image.width(); ++x) {
        const QRgb pixel = image.pixel(x, y);
        user += pixel == prof::gui::kind_color(analysis::TimelineKind::User).rgb();
        collective += pixel == prof::gui::kind_color(analysis::TimelineKind::Collective).rgb();
      }
    QVERIFY2(user > 5000 && collective > 1000,
             qPrintable(QStringLiteral("%1 user, %2 collective pixels").arg(user).arg(collective)));
  }
  // A damaged argument is refused with a message and exit status 1: a window
  // backwards, before the trace's start or past its end, an interval id that
  // is not one or that the trace does not have, a second picture.
  for (const QStringList& extra : {QStringList{"--window", "5:1"}, QStringList{"--window", "50:60"},
                                   QStringList{"--window", "-1:2"}, QStringList{"--select", "abc"},
                                   QStringList{"--select", "999"}, QStringList{"--screenshot", out.filePath("y.png")}}) {
    QProcess bad;
    bad.setProcessEnvironment(env);
    bad.start(PROF_GUI_BIN, QStringList{trace.dir(), "--screenshot", out.filePath("x.png")} + extra);
    QVERIFY(bad.waitForFinished(60000));
    QCOMPARE(bad.exitStatus(), QProcess::NormalExit);
    QVERIFY2(bad.exitCode() == 1, qPrintable(extra.join(' ')));
    QVERIFY2(bad.readAllStandardError().contains(extra[0].toUtf8()), qPrintable(extra.join(' ')));
  }
  // --screenshot and --bench-frames each run on their own; an empty FILE is
  // no file.
  for (const QStringList& extra : {QStringList{"--screenshot", out.filePath("x.png"), "--bench-frames", "2"},
                                   QStringList{"--screenshot", ""}}) {
    QProcess bad;
    bad.setProcessEnvironment(env);
    bad.start(PROF_GUI_BIN, QStringList{trace.dir()} + extra);
    QVERIFY(bad.waitForFinished(60000));
    QVERIFY2(bad.exitCode() == 1, qPrintable(extra.join(' ')));
    QVERIFY2(bad.readAllStandardError().contains("--screenshot"), qPrintable(extra.join(' ')));
  }
  // A window whose end lies past the trace's stops at the trace's end, as
  // panning and zooming do: from 0, the picture of the whole run.
  {
    QStringList pictures;
    for (const QStringList& extra : {QStringList{}, QStringList{"--window", "0:1000"}}) {
      const QString file = out.filePath(QStringLiteral("whole%1.png").arg(pictures.size()));
      QProcess gui;
      gui.setProcessEnvironment(env);
      gui.start(PROF_GUI_BIN, QStringList{trace.dir(), "--screenshot", file} + extra);
      QVERIFY(gui.waitForFinished(60000));
      QVERIFY2(gui.exitCode() == 0, qPrintable(extra.join(' ')));
      pictures << file;
    }
    QCOMPARE(QImage(pictures[1]), QImage(pictures[0]));
  }
  // --window and --select shape the screenshot: without one they are refused,
  // not left unused.
  for (const QStringList& extra : {QStringList{"--window", "0:0.001"}, QStringList{"--select", "1"},
                                   QStringList{"--bench-frames", "2", "--select", "1"}}) {
    QProcess bad;
    bad.setProcessEnvironment(env);
    bad.start(PROF_GUI_BIN, QStringList{trace.dir()} + extra);
    QVERIFY(bad.waitForFinished(60000));
    QVERIFY2(bad.exitCode() == 1, qPrintable(extra.join(' ')));
    QVERIFY2(bad.readAllStandardError().contains("goes with --screenshot"), qPrintable(extra.join(' ')));
  }
  // Without any display: --help and --screenshot run offscreen, the window
  // itself says in one line that it needs one (never Qt's abort).
  QProcessEnvironment bare = env;
  for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) bare.remove(name);
  const std::pair<QStringList, int> runs[] = {{{"--help"}, 0},
                                              {{trace.dir(), "--screenshot", out.filePath("bare.png")}, 0},
                                              {{trace.dir()}, 1}};
  for (const auto& [arguments, status] : runs) {
    QProcess gui;
    gui.setProcessEnvironment(bare);
    gui.start(PROF_GUI_BIN, arguments);
    QVERIFY(gui.waitForFinished(60000));
    QCOMPARE(gui.exitStatus(), QProcess::NormalExit);
    QVERIFY2(gui.exitCode() == status, qPrintable(arguments.join(' ') + ": " + gui.readAllStandardError()));
  }
  QVERIFY(QFileInfo(out.filePath("bare.png")).size() > 20000);
  // Screenshots are not the user's visits: Recent traces stays as it was.
  const QSettings settings(out.filePath("config/prof/prof-gui.conf"), QSettings::IniFormat);
  QVERIFY2(settings.value("recent").toStringList().isEmpty(),
           qPrintable(settings.value("recent").toStringList().join(' ')));
}

void GuiTest::bench_frames_prints_one_line() {
  DemoTrace trace(30);
  QProcess gui;
  gui.start(PROF_GUI_BIN, {trace.dir(), "--bench-frames", "9"});
  QVERIFY(gui.waitForFinished(60000));
  QCOMPARE(gui.exitCode(), 0);
  const QString out = QString::fromUtf8(gui.readAllStandardOutput());
  const QRegularExpression line(
      "^open_ms [0-9.]+ first_frame_ms [0-9.]+ frames 9 median_ms [0-9.]+ p99_ms [0-9.]+ peak_rss_mb [0-9]+ "
      "built_frame_ms [0-9.]+\n$");
  QVERIFY2(line.match(out).hasMatch(), qPrintable(out));
}

void GuiTest::many_ranks_scroll() {
  ManyRanksTrace trace(96, 3);
  LoadedWindow loaded(trace.dir());
  TimelineView* view = loaded.window.timelineView();
  QCOMPARE(view->shownRows().size(), size_t{96});
  view->showAll();
  view->grab();
  // At first all 96 rows fit, no scroll bar.
  QVERIFY(!view->rowsOverflow());
  QCOMPARE(view->visibleRows().size(), size_t{96});
  QVERIFY(!view->verticalBar()->isVisible());
  // Rows zoomed to 18 px (Shift+wheel about the plot's top) do not fit: a
  // scroll bar appears, only the rows in sight are drawn.
  const double fit = view->rowHeight();
  for (int notch = 0; notch < 40 && view->rowHeight() < 18; ++notch) {
    const QPointF top(view->plotRect().left() + 10.5, view->plotRect().top());
    QWheelEvent wheel(top, view->mapToGlobal(top), QPoint(), QPoint(0, 30), Qt::NoButton, Qt::ShiftModifier,
                      Qt::NoScrollPhase, false);
    QCoreApplication::sendEvent(view, &wheel);
  }
  QVERIFY2(view->rowHeight() >= 18 && view->rowHeight() < 18 * 1.1, qPrintable(QString::number(view->rowHeight())));
  QCOMPARE(view->verticalScroll(), 0);
  view->setRowZoom(18 / fit);
  QCOMPARE(view->rowHeight(), 18.0);
  const QRect plot = view->plotRect();
  QVERIFY(view->rowsOverflow());
  QVERIFY(view->verticalBar()->isVisible());
  const size_t in_sight = static_cast<size_t>(std::ceil(plot.height() / view->rowHeight()));
  QVERIFY(view->visibleRows().size() <= in_sight + 1);
  QCOMPARE(view->visibleRows().front(), size_t{0});
  std::set<size_t> drawn_rows;
  auto drawn = [&] {
    drawn_rows.clear();
    view->setRange(ns(2 * test::kMs), ns(3 * test::kMs));  // every call drawn as a call
    view->grab();
    for (const auto& c : view->drawnCalls()) drawn_rows.insert(c.row);
  };
  drawn();
  QCOMPARE(drawn_rows.size(), view->visibleRows().size());
  QVERIFY(!drawn_rows.count(95));
  QCOMPARE(view->rowAt(plot.bottom()), static_cast<int>(view->visibleRows().back()));
  // The wheel (no modifier) scrolls rows and keeps the time range; Ctrl+wheel zooms.
  const double from = view->from(), to = view->to();
  const QPointF at(plot.left() + 200.5, plot.top() + 10);
  for (int notch = 0; notch < 60; ++notch) {
    QWheelEvent wheel(at, view->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
    QCoreApplication::sendEvent(view, &wheel);
  }
  QCOMPARE(view->from(), from);
  QCOMPARE(view->to(), to);
  QCOMPARE(view->verticalScroll(), view->maxVerticalScroll());
  QCOMPARE(view->verticalBar()->value(), view->verticalScroll());
  // Scrolled to the end: the last rank is the last row, at the plot's bottom.
  QCOMPARE(view->visibleRows().back(), size_t{95});
  QCOMPARE(view->rowAt(plot.bottom()), 95);
  QVERIFY(view->rowCenterY(95) < plot.bottom());
  drawn();
  QVERIFY(drawn_rows.count(95));
  QVERIFY(!drawn_rows.count(0));
  // The last rank's Allreduce is under its row: the hit test finds it.
  const auto call = view->callAt(QPoint(static_cast<int>(view->xOf(ns(ManyRanksTrace::allreduceEnter(95, 0)) + ns(100 * test::kUs))),
                                        view->rowCenterY(95)));
  QVERIFY(call.has_value());
  QCOMPARE(call->row, size_t{95});
  QCOMPARE(call->function, std::string_view("MPI_Allreduce"));
  QCOMPARE(call->enter, static_cast<int64_t>(ManyRanksTrace::allreduceEnter(95, 0)));
  // Ctrl+wheel zooms about the cursor, rows stay where they are.
  const int scroll = view->verticalScroll();
  QWheelEvent zoom(at, view->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::ControlModifier,
                   Qt::NoScrollPhase, false);
  QCoreApplication::sendEvent(view, &zoom);
  QVERIFY(view->to() - view->from() < (to - from) * 0.9);
  QCOMPARE(view->verticalScroll(), scroll);
  // The scroll bar moves the rows too.
  view->verticalBar()->setValue(0);
  QCOMPARE(view->verticalScroll(), 0);
  QCOMPARE(view->rowAt(plot.top() + 1), 0);
  // Keys: Page Down scrolls a page.
  QTest::keyClick(view, Qt::Key_PageDown);
  QCOMPARE(view->verticalScroll(), plot.height());
}

void GuiTest::hidden_rows_leave_the_view() {
  ManyRanksTrace trace(96, 2);
  LoadedWindow loaded(trace.dir());
  TimelineView* view = loaded.window.timelineView();
  view->setRowZoom(18 / view->rowHeight());
  view->setRange(ns(2 * test::kMs), ns(3 * test::kMs));
  view->grab();
  const int y = view->rowCenterY(3);
  QCOMPARE(view->rowAt(y), 3);
  // The row menu of rank 3's label: hide it.
  QMenu menu;
  view->populateRowMenu(menu, 3);
  QStringList texts;
  for (QAction* action : menu.actions()) texts << action->text();
  QCOMPARE(texts, QStringList({"Hide rank 3", "Show only rank 3", "Show all rows"}));
  QVERIFY(!menu.actions()[2]->isEnabled());
  menu.actions()[0]->trigger();
  QVERIFY(view->rowHidden(3));
  QCOMPARE(view->shownRows().size(), size_t{95});
  QCOMPARE(view->rowCenterY(3), -1);
  // Its place now holds the next row; the hit test there finds rank 4's calls.
  QCOMPARE(view->rowAt(y), 4);
  const double t = ns(ManyRanksTrace::allreduceEnter(4, 0)) + ns(50 * test::kUs);
  const auto call = view->callAt(QPoint(static_cast<int>(view->xOf(t)), y));
  QVERIFY(call.has_value());
  QCOMPARE(call->row, size_t{4});
  QCOMPARE(call->enter, static_cast<int64_t>(ManyRanksTrace::allreduceEnter(4, 0)));
  view->grab();
  for (const auto& c : view->drawnCalls()) QVERIFY(c.row != 3);
  // Show only rank 7: one row, every row fits again, the wheel zooms.
  QMenu only;
  view->populateRowMenu(only, 7);
  only.actions()[1]->trigger();
  QCOMPARE(view->shownRows(), std::vector<size_t>{7});
  QVERIFY(!view->rowsOverflow());
  QVERIFY(!view->verticalBar()->isVisible());
  QCOMPARE(view->rowAt(view->plotRect().top() + 1), 7);
  view->grab();
  std::set<size_t> rows;
  for (const auto& c : view->drawnCalls()) rows.insert(c.row);
  QCOMPARE(rows, std::set<size_t>{7});
  const double width = view->to() - view->from();
  const QPointF at(view->plotRect().left() + 100.5, view->rowCenterY(7));
  QWheelEvent wheel(at, view->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QCoreApplication::sendEvent(view, &wheel);
  QVERIFY(view->to() - view->from() < width * 0.9);
  // Show all rows again.
  QMenu all;
  view->populateRowMenu(all, 7);
  QVERIFY(all.actions()[2]->isEnabled());
  all.actions()[2]->trigger();
  QCOMPARE(view->shownRows().size(), size_t{96});
  QVERIFY(!view->rowHidden(3));
}

void GuiTest::find_goes_to_next_and_previous_call() {
  ManyRanksTrace trace(96, 3);
  LoadedWindow loaded(trace.dir());
  MainWindow& window = loaded.window;
  TimelineView* view = window.timelineView();
  view->showAll();
  view->setRowZoom(18 / view->rowHeight());  // rows that scroll
  QVERIFY(QTest::qWaitForWindowActive(&window));
  auto selected = [&]() -> std::pair<size_t, int64_t> {
    const auto& c = view->selectedCall();
    return c ? std::pair<size_t, int64_t>{c->row, c->enter} : std::pair<size_t, int64_t>{999, -1};
  };
  auto allreduce = [](int rank, int iteration) {
    return std::pair<size_t, int64_t>{static_cast<size_t>(rank),
                                      static_cast<int64_t>(ManyRanksTrace::allreduceEnter(rank, iteration))};
  };
  // The selected call is in the range and its row in sight.
  auto shown = [&] {
    const auto& c = *view->selectedCall();
    const QRect plot = view->plotRect();
    return static_cast<double>(c.enter) >= view->from() && static_cast<double>(c.leave()) <= view->to() &&
           view->xOf(static_cast<double>(c.leave())) - view->xOf(static_cast<double>(c.enter)) >= 2 &&
           view->rowCenterY(c.row) > plot.top() && view->rowCenterY(c.row) < plot.bottom();
  };
  // Ctrl+F, a name in any case, Enter: the first Allreduce from the range's start.
  QTest::keyClick(&window, Qt::Key_F, Qt::ControlModifier);
  QVERIFY(window.findBox()->hasFocus());
  QTest::keyClicks(window.findBox(), "mpi_allreduce");
  QTest::keyClick(window.findBox(), Qt::Key_Return);
  QCOMPARE(selected(), allreduce(0, 0));
  QVERIFY(shown());
  QVERIFY(window.statusBar()->currentMessage().startsWith("MPI_Allreduce (collective), rank 0"));
  // F3: the next in time order (rank 1 enters 1 us later); a hidden row is skipped.
  QTest::keyClick(&window, Qt::Key_F3);
  QCOMPARE(selected(), allreduce(1, 0));
  view->setRowHidden(2, true);
  QTest::keyClick(&window, Qt::Key_F3);
  QCOMPARE(selected(), allreduce(3, 0));
  QTest::keyClick(&window, Qt::Key_F3, Qt::ShiftModifier);
  QCOMPARE(selected(), allreduce(1, 0));
  view->showAllRows();
  // From a range that starts after rank 94's first Allreduce and is far too
  // wide to show it: rank 95's, its row scrolled into sight, the range zoomed.
  view->setRange(ns(ManyRanksTrace::allreduceEnter(94, 0)) + 0.5, 1e11);
  QVERIFY(window.findNext(true));
  QCOMPARE(selected(), allreduce(95, 0));
  QVERIFY(view->verticalScroll() > 0);
  QVERIFY(shown());
  QVERIFY(view->to() - view->from() < 1e7);
  // Then the next iteration's rank 0 (back at the top), and back again.
  QVERIFY(window.findNext(true));
  QCOMPARE(selected(), allreduce(0, 1));
  QVERIFY(shown());
  QVERIFY(window.findNext(false));
  QCOMPARE(selected(), allreduce(95, 0));
  QVERIFY(shown());
  // Another function: the last Comm_rank before that Allreduce is rank 95's
  // of the same iteration (every rank enters at 2.1 ms; rows break the tie).
  window.findBox()->setText("MPI_Comm_rank");
  QVERIFY(window.findNext(false));
  QCOMPARE(selected(), (std::pair<size_t, int64_t>{95, static_cast<int64_t>(2 * test::kMs + 100 * test::kUs)}));
  QVERIFY(window.findNext(false));
  QCOMPARE(selected(), (std::pair<size_t, int64_t>{94, static_cast<int64_t>(2 * test::kMs + 100 * test::kUs)}));
  // Nothing before the first call: the search wraps around to the last one
  // (rank 95's of the last iteration), and the status bar says so.
  view->setRange(0, ns(test::kMs));
  QVERIFY(window.findNext(false));
  QCOMPARE(selected(), (std::pair<size_t, int64_t>{95, static_cast<int64_t>(4 * test::kMs + 100 * test::kUs)}));
  QVERIFY(view->wrappedAround());
  QVERIFY(window.statusBar()->currentMessage().startsWith("(wrapped around to the end)"));
  // And forward from there, back to the first.
  QVERIFY(window.findNext(true));
  QCOMPARE(selected(), (std::pair<size_t, int64_t>{0, static_cast<int64_t>(2 * test::kMs + 100 * test::kUs)}));
  QVERIFY(view->wrappedAround());
  // A name the trace lacks.
  window.findBox()->setText("MPI_Alltoallw");
  QVERIFY(!window.findNext(true));
  QVERIFY(window.statusBar()->currentMessage().contains("no MPI function, interval or call site named"));
}

namespace {

// Brute force over the calls written: time per function and per kind (user
// code: the gaps between a row's consecutive calls) inside [from, to) on `rows`.
struct BruteForce {
  std::map<std::string, std::pair<uint64_t, double>> functions;  // calls, ns
  double kind[analysis::kTimelineKinds] = {};
};
BruteForce brute_force(const std::vector<Written>& written, const std::set<size_t>& rows, double from, double to,
                       const std::function<analysis::TimelineKind(const std::string&)>& kind_of) {
  BruteForce out;
  auto clip = [&](double a, double b) { return std::max(0.0, std::min(b, to) - std::max(a, from)); };
  const Written* previous = nullptr;
  for (const Written& w : written) {
    if (!rows.count(w.row)) continue;
    if (previous && previous->row == w.row)
      out.kind[0] += clip(static_cast<double>(previous->leave), static_cast<double>(w.enter));
    previous = &w;
    const double t = clip(static_cast<double>(w.enter), static_cast<double>(w.leave));
    out.kind[static_cast<int>(kind_of(w.function))] += t;
    if (w.function.rfind("MPI_", 0) != 0) continue;  // markers
    const bool overlaps = static_cast<double>(w.enter) < to &&
                          (static_cast<double>(w.leave) > from ||
                           (w.leave == w.enter && static_cast<double>(w.enter) >= from));
    if (!overlaps) continue;
    ++out.functions[w.function].first;
    out.functions[w.function].second += t;
  }
  return out;
}

analysis::TimelineKind kind_of_function(const std::string& f) {
  if (f == "MPI_Allreduce") return analysis::TimelineKind::Collective;
  if (f == "MPI_Send" || f == "MPI_Recv") return analysis::TimelineKind::PointToPoint;
  if (f.rfind("MPI_", 0) == 0) return analysis::TimelineKind::OtherMpi;
  return analysis::TimelineKind::Marker;
}

}  // namespace

void GuiTest::range_statistics_equal_brute_force() {
  {
    // A zoom to a dragged range over the shown rows (two hidden): the tab
    // comes forward with every function's calls and time, and every kind's.
    ManyRanksTrace trace(96, 4);
    LoadedWindow loaded(trace.dir());
    MainWindow& window = loaded.window;
    TimelineView* view = window.timelineView();
    view->setRowHidden(5, true);
    view->setRowHidden(60, true);
    view->setRange(0, ns(7 * test::kMs));
    view->grab();
    const QRect plot = view->plotRect();
    const QPoint a(plot.left() + plot.width() * 31 / 100, view->rowCenterY(0));
    const QPoint b(plot.left() + plot.width() * 67 / 100, view->rowCenterY(1));
    const double from = view->timeAt(a.x()), to = view->timeAt(b.x());
    QTest::mousePress(view, Qt::RightButton, {}, a);
    QTest::mouseMove(view, QPoint((a.x() + b.x()) / 2, a.y()));
    QTest::mouseMove(view, b);
    QTest::mouseRelease(view, Qt::RightButton, {}, b);
    QCOMPARE(view->from(), from);
    QCOMPARE(window.rightTabs()->currentWidget(), static_cast<QWidget*>(window.rangeStatistics()));
    const prof::gui::RangeStatistics& stats = window.rangeStatistics()->statistics();
    QCOMPARE(stats.from, from);
    QCOMPARE(stats.to, to);
    QCOMPARE(stats.rows, size_t{94});
    QCOMPARE(stats.rows_from_summaries, size_t{0});
    std::set<size_t> rows(view->shownRows().begin(), view->shownRows().end());
    const BruteForce want = brute_force(trace.written(), rows, from, to, kind_of_function);
    QCOMPARE(stats.functions.size(), want.functions.size());
    QVERIFY(want.functions.count("MPI_Allreduce") && want.functions.count("MPI_Comm_rank"));
    for (const auto& f : stats.functions) {
      QVERIFY2(want.functions.count(f.name), f.name.c_str());
      QCOMPARE(f.calls, want.functions.at(f.name).first);
      QVERIFY2(std::abs(f.time - want.functions.at(f.name).second) < 1e-6 * (to - from),
               qPrintable(QString("%1: %2 vs %3").arg(f.name.c_str()).arg(f.time).arg(want.functions.at(f.name).second)));
    }
    QCOMPARE(stats.functions.front().name, std::string("MPI_Allreduce"));  // the longest first
    for (int k = 0; k < analysis::kTimelineKinds; ++k)
      QVERIFY2(std::abs(stats.kind_time[k] - want.kind[k]) < 1e-6 * (to - from),
               qPrintable(QString("kind %1: %2 vs %3").arg(k).arg(stats.kind_time[k]).arg(want.kind[k])));
    QVERIFY(want.kind[0] > 0 && want.kind[static_cast<int>(analysis::TimelineKind::Collective)] > 0);
    // The table shows them: Allreduce's calls in its row.
    QTableWidget* table = window.rangeStatistics()->functionTable();
    QCOMPARE(table->rowCount(), static_cast<int>(want.functions.size()));
    QCOMPARE(table->item(0, 0)->text(), QString("MPI_Allreduce"));
    QCOMPARE(table->item(0, 2)->text(), QString::number(want.functions.at("MPI_Allreduce").first));
    // Selecting an interval brings the characteristics back.
    window.selectInterval(0, false);
    QCOMPARE(window.rightTabs()->currentWidget(), static_cast<QWidget*>(window.panel()));
  }
  {
    // Rows with more calls than the budget: per kind from the summaries,
    // exact over the whole run (no bucket crosses its edges); the same with
    // a budget they fit in, read call by call.
    DemoTrace trace(1200);
    LoadedWindow loaded(trace.dir());
    const auto& timeline = *loaded.window.session()->timeline;
    const double to = timeline.end() + 1;
    const auto summarized = prof::gui::range_statistics(timeline, {0, 1}, 0, to, 1000, 1600);
    QCOMPARE(summarized.rows_from_summaries, size_t{2});
    QVERIFY(summarized.functions.empty());
    const auto by_calls = prof::gui::range_statistics(timeline, {0, 1}, 0, to, 100000, 1600);
    QCOMPARE(by_calls.rows_from_summaries, size_t{0});
    const BruteForce want = brute_force(trace.written(), {0, 1}, 0, to, kind_of_function);
    for (int k = 0; k < analysis::kTimelineKinds; ++k) {
      QVERIFY2(std::abs(summarized.kind_time[k] - want.kind[k]) < 1e-6 * to,
               qPrintable(QString("kind %1: %2 vs %3").arg(k).arg(summarized.kind_time[k]).arg(want.kind[k])));
      QVERIFY2(std::abs(by_calls.kind_time[k] - want.kind[k]) < 1e-6 * to,
               qPrintable(QString("kind %1: %2 vs %3").arg(k).arg(by_calls.kind_time[k]).arg(want.kind[k])));
    }
    QCOMPARE(by_calls.functions.size(), want.functions.size());
    for (const auto& f : by_calls.functions) QCOMPARE(f.calls, want.functions.at(f.name).first);
    // Ranges with edges inside buckets (summaries, then the edges finer), and
    // one inside user code between two calls of each row (no call in it).
    const double gap = ns(kLoopStart + 7 * kPeriod + 210 * test::kUs);
    for (const auto& [a, b] : {std::pair<double, double>{ns(kLoopStart + 3 * kPeriod) + 333333.3, to * 0.83 + 17},
                               std::pair<double, double>{ns(kLoopStart) + 1, ns(kLoopStart + 401 * kPeriod) - 7},
                               std::pair<double, double>{gap, gap + ns(80 * test::kUs)}}) {
      const BruteForce exact = brute_force(trace.written(), {0, 1}, a, b, kind_of_function);
      for (uint64_t budget : {uint64_t{1000}, uint64_t{100000}}) {
        const auto stats = prof::gui::range_statistics(timeline, {0, 1}, a, b, budget, 1600);
        QCOMPARE(stats.rows_from_summaries, size_t{budget == 1000 && b - a > ns(test::kMs) ? 2u : 0u});
        for (int k = 0; k < analysis::kTimelineKinds; ++k)
          QVERIFY2(std::abs(stats.kind_time[k] - exact.kind[k]) < 1e-6 * (b - a),
                   qPrintable(QString("[%1, %2) budget %3 kind %4: %5 vs %6")
                                  .arg(a).arg(b).arg(budget).arg(k).arg(stats.kind_time[k]).arg(exact.kind[k])));
      }
    }
    QCOMPARE(brute_force(trace.written(), {0, 1}, gap, gap + ns(80 * test::kUs), kind_of_function).kind[0],
             2 * ns(80 * test::kUs));
  }
}


void GuiTest::overview_shows_every_rank() {
  // 4096 ranks at 1600x900: every rank in sight, a pixel row for several.
  OverviewTrace trace(4096);
  std::string error;
  std::shared_ptr<analysis::Timeline> timeline = analysis::Timeline::open(trace.dir(), &error);
  QVERIFY2(timeline, error.c_str());
  QVERIFY(timeline->build(&error));
  TimelineView view;
  view.resize(1600, 900);
  view.setTimeline(timeline);
  view.showAll();
  QImage image = view.grab().toImage();
  QVERIFY(view.grouped());
  QVERIFY(!view.rowsOverflow());
  QVERIFY(view.rowsPerGroup() > 1);
  // The groups in sight cover ranks 0..4095, each once, in order.
  const auto groups = view.visibleGroups();
  QCOMPARE(groups.front().first, size_t{0});
  QCOMPARE(groups.back().second, size_t{4096});
  for (size_t g = 1; g < groups.size(); ++g) QCOMPARE(groups[g].first, groups[g - 1].second);
  QCOMPARE(view.drawnGroupRows(), size_t{4096});
  const QRect plot = view.plotRect();
  // Every pixel row at 2.5 ms is in the Allreduce of all its ranks: the
  // collective colour at full strength.
  const int x = static_cast<int>(view.xOf(ns(2500 * test::kUs)));
  for (int y = plot.top(); y <= plot.bottom(); ++y)
    QVERIFY2(image.pixelColor(x, y) == prof::gui::kind_color(analysis::TimelineKind::Collective),
             qPrintable(QStringLiteral("y %1: %2").arg(y).arg(image.pixelColor(x, y).name())));
  // The tooltips name the rank ranges, the last one ending at 4095.
  const QString last = view.tooltipAt(QPoint(x, plot.bottom()));
  QVERIFY2(QRegularExpression("ranks \\d+-4095").match(last).hasMatch(), qPrintable(last));
  QVERIFY2(last.contains("mostly collective"), qPrintable(last));
  const QString first = view.tooltipAt(QPoint(x, plot.top()));
  QVERIFY2(first.contains(QStringLiteral("ranks 0-%1").arg(groups.front().second - 1)), qPrintable(first));
  // Zooming rows drills into groups down to single ranks: Shift+wheel about
  // the bottom keeps rank 4095 in sight; at the full zoom it is a row of its own.
  const QPointF at(plot.left() + 10.5, plot.bottom());
  const size_t k = view.rowsPerGroup();
  QWheelEvent wheel(at, view.mapToGlobal(at), QPoint(), QPoint(0, 240), Qt::NoButton, Qt::ShiftModifier,
                    Qt::NoScrollPhase, false);
  QCoreApplication::sendEvent(&view, &wheel);
  QVERIFY(view.rowZoom() > 1);
  QVERIFY(view.rowsPerGroup() < k);
  QVERIFY(view.rowsOverflow());
  QCOMPARE(view.visibleGroups().back().second, size_t{4096});
  view.setRowZoom(view.maxRowZoom(), plot.bottom());
  view.grab();
  QVERIFY(!view.grouped());
  QCOMPARE(view.rowHeight(), TimelineView::kMaxRowHeight);
  QCOMPARE(view.visibleRows().back(), size_t{4095});
  QCOMPARE(view.rowAt(plot.bottom()), 4095);
  const auto call = view.callAt(QPoint(x, view.rowCenterY(4095)));
  QVERIFY(call.has_value());
  QCOMPARE(call->function, std::string_view("MPI_Allreduce"));
  // Ctrl+0 fits every rank again.
  QTest::keyClick(&view, Qt::Key_0, Qt::ControlModifier);
  QCOMPARE(view.rowZoom(), 1.0);
  QCOMPARE(view.verticalScroll(), 0);
  QVERIFY(view.grouped());
}

void GuiTest::layout_gives_timeline_half_and_is_remembered() {
  QTemporaryDir config;
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, config.path());
  QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, config.path());
  auto stored = [] { return QSettings("prof", "prof-gui").allKeys(); };
  // 64 ranks: the timeline takes at least half the window and shows them all.
  ManyRanksTrace trace(64, 2);
  {
    LoadedWindow loaded(trace.dir());
    const int timeline_h = loaded.window.timelineView()->parentWidget()->height();
    QVERIFY2(timeline_h >= loaded.window.height() / 2,
             qPrintable(QStringLiteral("%1 of %2").arg(timeline_h).arg(loaded.window.height())));
    QCOMPARE(loaded.window.timelineView()->visibleRows().size(), size_t{64});
    loaded.window.resize(1200, 800);
    loaded.window.close();
  }
  // Quiet mode (a screenshot, a benchmark, these tests) writes nothing.
  QVERIFY2(stored().isEmpty(), qPrintable(stored().join(",")));
  // A window the user arranged: size, splitters and the tree's columns come back.
  QList<int> vertical, top;
  int column = 0;
  {
    MainWindow window;
    window.show();
    window.resize(1300, 850);
    QCoreApplication::processEvents();
    window.verticalSplitter()->setSizes({500, 250});
    emit window.verticalSplitter()->splitterMoved(500, 1);
    window.topSplitter()->setSizes({700, 500});
    window.tree()->header()->resizeSection(0, 333);
    QCoreApplication::processEvents();
    vertical = window.verticalSplitter()->sizes();
    top = window.topSplitter()->sizes();
    column = window.tree()->header()->sectionSize(0);
    window.close();
  }
  QVERIFY(stored().contains("layout/size"));
  {
    MainWindow window;
    window.show();
    QCoreApplication::processEvents();
    QCOMPARE(window.size(), QSize(1300, 850));
    QCOMPARE(window.verticalSplitter()->sizes(), vertical);
    QCOMPARE(window.topSplitter()->sizes(), top);
    QCOMPARE(window.tree()->header()->sectionSize(0), column);
    // A trace of many ranks leaves the user's split as it was.
    window.setQuiet([](const QString&) {});
    window.openTrace(trace.dir());
    window.waitLoaded();
    QCOMPARE(window.verticalSplitter()->sizes(), vertical);
  }
}

namespace {
// A mouse drag on the timeline from x0 to x1 at y (left button: a pan).
void drag(TimelineView* view, int x0, int x1, int y) {
  QTest::mousePress(view, Qt::LeftButton, Qt::NoModifier, QPoint(x0, y));
  QMouseEvent move(QEvent::MouseMove, QPointF(x1, y), view->mapToGlobal(QPointF(x1, y)), Qt::NoButton,
                   Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(view, &move);
  QTest::mouseRelease(view, Qt::LeftButton, Qt::NoModifier, QPoint(x1, y));
}

void wheel(TimelineView* view, QPointF at, int delta) {
  QWheelEvent e(at, view->mapToGlobal(at), QPoint(), QPoint(0, delta), Qt::NoButton, Qt::NoModifier,
                Qt::NoScrollPhase, false);
  QCoreApplication::sendEvent(view, &e);
}

// RFC 4180 lines: fields split at commas outside quotes, "" inside quotes a quote.
std::vector<QStringList> parse_csv(const QString& text) {
  std::vector<QStringList> rows;
  QStringList row;
  QString field;
  bool quoted = false;
  for (qsizetype i = 0; i < text.size(); ++i) {
    const QChar c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row << field, field.clear();
    } else if (c == '\n') {
      row << field, field.clear();
      rows.push_back(row), row.clear();
    } else {
      field += c;
    }
  }
  return rows;
}
}  // namespace

void GuiTest::zoom_history_goes_back_and_forward() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  MainWindow& window = loaded.window;
  TimelineView* view = window.timelineView();
  using Range = std::pair<double, double>;
  auto range = [&] { return Range{view->from(), view->to()}; };
  const Range whole = range();
  QVERIFY(!window.backAction()->isEnabled());
  // Two zooms: the wheel about a point, then + about the middle.
  wheel(view, QPointF(view->plotRect().left() + 300.5, view->rowCenterY(0)), 120);
  const Range first = range();
  QVERIFY(first != whole);
  QTest::keyClick(view, Qt::Key_Plus);
  const Range second = range();
  QVERIFY(second != first);
  QVERIFY(window.backAction()->isEnabled());
  QVERIFY(!window.forwardAction()->isEnabled());
  // Back twice (the menu's action, then Alt+Left), Forward twice: the exact ranges.
  window.backAction()->trigger();
  QVERIFY(range() == first);
  QTest::keyClick(&window, Qt::Key_Left, Qt::AltModifier);
  QVERIFY(range() == whole);
  QVERIFY(!window.backAction()->isEnabled());
  QTest::keyClick(&window, Qt::Key_Right, Qt::AltModifier);
  QVERIFY(range() == first);
  window.forwardAction()->trigger();
  QVERIFY(range() == second);
  QVERIFY(!window.forwardAction()->isEnabled());
  // A pan by drag is one entry (not one per mouse move); a new act after
  // Back drops the entries ahead.
  drag(view, view->plotRect().left() + 400, view->plotRect().left() + 300, view->rowCenterY(0));
  const Range panned = range();
  QVERIFY(panned.first > second.first);
  window.backAction()->trigger();
  QVERIFY(range() == second);
  window.backAction()->trigger();
  QVERIFY(range() == first);
  QTest::keyClick(view, Qt::Key_Minus);
  QVERIFY(!window.forwardAction()->isEnabled());
  window.backAction()->trigger();
  QVERIFY(range() == first);
  // Selecting an interval zooms to its first execution: Back undoes that too.
  QVERIFY(window.selectIntervalId(2));
  QVERIFY(range() != first);
  window.backAction()->trigger();
  QVERIFY(range() == first);
  // Home (the whole run) is an entry too.
  QTest::keyClick(view, Qt::Key_Home);
  QVERIFY(range() == whole);
  window.backAction()->trigger();
  QVERIFY(range() == first);
}

void GuiTest::navigation_stays_inside_the_trace() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  TimelineView* view = loaded.window.timelineView();
  const double end = view->timeline()->end();
  view->showAll();
  QCOMPARE(view->from(), 0.0);
  QCOMPARE(view->to(), end);
  // The whole run: neither panning nor zooming out goes past it.
  QTest::keyClick(view, Qt::Key_Left);
  QTest::keyClick(view, Qt::Key_Right);
  QTest::keyClick(view, Qt::Key_Minus);
  wheel(view, QPointF(view->plotRect().left() + 10.5, view->rowCenterY(0)), -1200);
  QCOMPARE(view->from(), 0.0);
  QCOMPARE(view->to(), end);
  // Zoomed in: panning stops at either end with the width kept.
  QTest::keyClick(view, Qt::Key_Plus);
  QTest::keyClick(view, Qt::Key_Plus);
  const double width = view->to() - view->from();
  for (int i = 0; i < 30; ++i) QTest::keyClick(view, Qt::Key_Right);
  QCOMPARE(view->to(), end);
  QCOMPARE(view->to() - view->from(), width);
  drag(view, view->plotRect().left() + 10, view->plotRect().right() - 10, view->rowCenterY(0));
  drag(view, view->plotRect().left() + 10, view->plotRect().right() - 10, view->rowCenterY(0));
  drag(view, view->plotRect().left() + 10, view->plotRect().right() - 10, view->rowCenterY(0));
  drag(view, view->plotRect().left() + 10, view->plotRect().right() - 10, view->rowCenterY(0));
  QCOMPARE(view->from(), 0.0);
  QCOMPARE(view->to() - view->from(), width);
  // Zooming out about a point near the end: the range grows, still inside.
  wheel(view, QPointF(view->plotRect().right() - 5.5, view->rowCenterY(0)), -240);
  QVERIFY(view->from() >= 0.0);
  QVERIFY(view->to() <= end);
  QVERIFY(view->to() - view->from() > width);
  // Zooming in stops at the minimum span, 10 ns.
  for (int i = 0; i < 40; ++i) QTest::keyClick(view, Qt::Key_Plus);
  QVERIFY2(std::abs(view->to() - view->from() - 10.0) < 1e-6, qPrintable(QString::number(view->to() - view->from())));
  QVERIFY(view->from() >= 0.0 && view->to() <= end);
}

void GuiTest::exports_view_and_table() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  MainWindow& window = loaded.window;
  TimelineView* view = window.timelineView();
  QVERIFY(window.selectIntervalId(2));
  view->setRange(ns(kLoopStart), ns(kLoopStart + 2 * kPeriod));
  QCoreApplication::processEvents();
  QTemporaryDir dir;
  // PNG: the view's size.
  const QString png = dir.filePath("view.png");
  QVERIFY(window.exportViewPng(png));
  const QImage image(png);
  QVERIFY(!image.isNull());
  QCOMPARE(image.size(), view->size());
  // SVG: well-formed XML of the view's size: the rows as an embedded image,
  // ruler, legend and overlays as shapes and text (each drawn call's kind
  // colour among the fills: the legend's swatches).
  const QString svg = dir.filePath("view.svg");
  QVERIFY(window.exportViewSvg(svg));
  QFile svg_file(svg);
  QVERIFY(svg_file.open(QIODevice::ReadOnly));
  const QString svg_text = QString::fromUtf8(svg_file.readAll());
  QXmlStreamReader xml(svg_text);
  int images = 0, shapes = 0, texts = 0;
  QString view_box;
  while (!xml.atEnd()) {
    xml.readNext();
    if (!xml.isStartElement()) continue;
    const auto name = xml.name();
    if (name == QLatin1String("svg")) view_box = xml.attributes().value("viewBox").toString();
    if (name == QLatin1String("image")) ++images;
    if (name == QLatin1String("path") || name == QLatin1String("rect") || name == QLatin1String("polyline")) ++shapes;
    if (name == QLatin1String("text")) ++texts;
  }
  QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
  QCOMPARE(view_box, QString("0 0 %1 %2").arg(view->width()).arg(view->height()));
  QVERIFY(images >= 1);
  QVERIFY2(shapes >= 5, qPrintable(QString::number(shapes)));
  QVERIFY2(texts >= 3, qPrintable(QString::number(texts)));
  QVERIFY(!view->drawnCalls().empty());
  for (const auto& c : view->drawnCalls())
    QVERIFY2(svg_text.contains(prof::gui::kind_color(c.kind).name(), Qt::CaseInsensitive),
             qPrintable(prof::gui::kind_color(c.kind).name()));
  // CSV: the shown table's header keys and its numbers, exactly.
  CharacteristicsPanel* panel = window.panel();
  auto tabs = panel->findChild<QTabWidget*>();
  QVERIFY(tabs);
  for (QTableView* table : {static_cast<QTableView*>(nullptr), panel->perRankView(), panel->functionView()}) {
    // The tab holding the table (it may be a page with a note above the table).
    QWidget* page = table;
    while (page && tabs->indexOf(page) < 0) page = page->parentWidget();
    if (table) tabs->setCurrentWidget(page);
    const QTableView* shown = panel->currentTableView();
    QVERIFY(shown);
    if (table) QCOMPARE(shown, table);
    const QAbstractItemModel* model = shown->model();
    const QString csv = dir.filePath("table.csv");
    QVERIFY(window.exportTableCsv(csv));
    QFile file(csv);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const auto rows = parse_csv(QString::fromUtf8(file.readAll()));
    QCOMPARE(rows.size(), static_cast<size_t>(model->rowCount()) + 1);
    QVERIFY(model->rowCount() > 0);
    for (int c = 0; c < model->columnCount(); ++c) {
      const QVariant key = model->headerData(c, Qt::Horizontal, CharacteristicsPanel::KeyRole);
      QCOMPARE(rows[0][c], key.isValid() ? key.toString() : model->headerData(c, Qt::Horizontal).toString());
    }
    int numbers = 0;
    for (int r = 0; r < model->rowCount(); ++r) {
      QCOMPARE(rows[r + 1].size(), model->columnCount());
      for (int c = 0; c < model->columnCount(); ++c) {
        const QVariant v = model->index(r, c).data(CharacteristicsPanel::NumberRole);
        if (v.typeId() == QMetaType::Double) {
          bool ok = false;
          QVERIFY(rows[r + 1][c].toDouble(&ok) == v.toDouble());  // exact: shortest round-trip text
          QVERIFY(ok);
          ++numbers;
        } else {
          QCOMPARE(rows[r + 1][c], model->index(r, c).data().toString());
        }
      }
    }
    QVERIFY(numbers > 0);
  }
  // An unwritable path: false, and the problem named.
  QVERIFY(!window.exportTableCsv(dir.filePath("missing/dir/table.csv")));
  QVERIFY2(window.lastProblem().contains("missing/dir/table.csv"), qPrintable(window.lastProblem()));
}

void GuiTest::overview_strip_marks_range_and_centres_on_click() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  MainWindow& window = loaded.window;
  TimelineView* view = window.timelineView();
  OverviewStrip* strip = window.overviewStrip();
  QVERIFY(strip && strip->isVisible());
  const double end = view->timeline()->end();
  // Aligned with the plot: the whole run spans the plot's columns.
  QCOMPARE(strip->runLeft(), view->plotRect().left());
  QCOMPARE(strip->runRight(), view->plotRect().right());
  const double columns = strip->runRight() + 1 - strip->runLeft();
  // The visible range's frame: the run's first quarter.
  view->setRange(0, end / 4);
  QRect marked = strip->markedRect();
  QCOMPARE(marked.left(), strip->runLeft());
  QVERIFY(std::abs(marked.right() + 1 - (strip->runLeft() + columns / 4)) <= 1);
  // The picture: rank 1 waits in an Allreduce 400..700 us of each 1 ms
  // iteration; over the loop the columns are not the background.
  const QImage shot = strip->grab().toImage();
  const int loop_x = static_cast<int>(strip->runLeft() + ns(kLoopStart + 5 * kPeriod) / end * columns);
  QVERIFY(shot.pixelColor(loop_x, strip->height() / 2) != QColor(250, 250, 250));
  // A click centres the view there, its width kept; Back returns.
  const double width = view->to() - view->from();
  const int x = strip->runLeft() + static_cast<int>(columns / 2);
  QTest::mouseClick(strip, Qt::LeftButton, Qt::NoModifier, QPoint(x, strip->height() / 2));
  const double centre = (x - strip->runLeft()) / columns * end;
  QVERIFY(std::abs((view->from() + view->to()) / 2 - centre) < 1e-6 * end);
  QVERIFY(std::abs(view->to() - view->from() - width) < 1e-6 * end);
  marked = strip->markedRect();
  QVERIFY(marked.left() <= x && marked.right() >= x);
  // Near the end: centred as far as the trace allows.
  QTest::mouseClick(strip, Qt::LeftButton, Qt::NoModifier, QPoint(strip->runRight(), strip->height() / 2));
  QCOMPARE(view->to(), end);
  window.backAction()->trigger();
  QVERIFY(std::abs((view->from() + view->to()) / 2 - centre) < 1e-6 * end);
}

QTEST_MAIN(GuiTest)
#include "gui_test.moc"
// The chart's bars are the function table's rows: same names, same times, bar
// lengths in proportion to the times; for the whole run and the visible range.
void GuiTest::function_chart_equals_function_table() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  loaded.window.resize(1300, 850);
  QVERIFY(loaded.window.selectIntervalId(1));
  CharacteristicsPanel* panel = loaded.window.panel();
  auto check = [&](int expected_functions) {
    const gui::FunctionChart* chart = panel->functionChart();
    const QStandardItemModel* table = panel->functionTable();
    QCOMPARE(static_cast<int>(chart->functions().size()), table->rowCount());
    QCOMPARE(table->rowCount(), expected_functions);
    std::map<QString, double> table_time;
    for (int r = 0; r < table->rowCount(); ++r)
      table_time[table->item(r, 0)->text()] = table->item(r, 2)->data(CharacteristicsPanel::NumberRole).toDouble();
    const double longest = chart->functions().front().time;
    const double full = chart->barRect(0).width();
    QVERIFY(full > 0);
    for (int i = 0; i < static_cast<int>(chart->functions().size()); ++i) {
      const auto& f = chart->functions()[static_cast<size_t>(i)];
      QCOMPARE(f.time, table_time.at(QString::fromStdString(f.name)));
      QVERIFY(std::abs(chart->barRect(i).width() - full * f.time / longest) < 1e-6 * full);
      if (i > 0) QVERIFY(f.time <= chart->functions()[static_cast<size_t>(i - 1)].time);
    }
  };
  check(3);  // Send, Recv, Allreduce
  // The visible range: iterations 4 to 6 only, three times fewer calls in the table and the chart.
  TimelineView* view = loaded.window.timelineView();
  loaded.window.visibleRangeAction()->setChecked(true);
  view->setRange(ns(kLoopStart + 4 * kPeriod), ns(kLoopStart + 7 * kPeriod));
  QTRY_VERIFY_WITH_TIMEOUT(panel->scope().startsWith("Visible range 0.006000"), 20000);
  check(3);
  QCOMPARE(panel->functionChart()->functions().front().calls, uint64_t{6});  // Allreduce: 2 ranks x 3
}

// The Messages tab's matrix against the receives the test wrote (rank 0 sends
// rank 1 64 bytes per iteration, inside interval 1): for the whole run and the
// visible range; a click on the cell zooms the timeline to the first message.
void GuiTest::message_matrix_equals_brute_force_and_click_finds_message() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  loaded.window.resize(1300, 850);
  QVERIFY(loaded.window.selectIntervalId(1));
  CharacteristicsPanel* panel = loaded.window.panel();
  panel->showMessagesTab();
  gui::MessageMatrixView* matrix = panel->messageMatrix();
  // Computed on a worker: until its answer comes back the tab says so.
  QVERIFY(panel->matrixComputing());
  QVERIFY(matrix->matrix().cells.empty());
  auto expect = [&](double from, double to) {
    QTRY_VERIFY_WITH_TIMEOUT(!panel->matrixComputing(), 20000);
    uint64_t messages = 0;
    double time = 0;
    int64_t first_recv = -1;
    for (const Written& w : trace.written())
      if (w.row == 1 && w.function == "MPI_Recv" && w.enter >= from && w.enter < to) {
        ++messages;
        time += static_cast<double>(w.leave - w.enter);
        if (first_recv < 0) first_recv = w.enter;
      }
    QVERIFY(matrix->matrix().complete);
    QCOMPARE(matrix->matrix().ranks, 2);
    QCOMPARE(matrix->matrix().cells.size(), size_t{1});
    const analysis::TimelineMatrixCell* c = matrix->matrix().find(0, 1);
    QVERIFY(c);
    QCOMPARE(c->messages, messages);
    QCOMPARE(c->bytes, 64 * messages);
    QCOMPARE(c->time, time);
    QCOMPARE(c->first.recv_enter, first_recv);
    QVERIFY(!matrix->matrix().find(1, 0));
  };
  expect(0, 1e18);
  QCOMPARE(matrix->matrix().find(0, 1)->messages, uint64_t{20});
  // The one cell is the largest: dark; no message is white.
  QVERIFY(matrix->colourOf(matrix->value(*matrix->matrix().find(0, 1))).lightnessF() < 0.5);
  QCOMPARE(matrix->colourOf(0).rgb(), QColor(Qt::white).rgb());
  // A click on the cell: the timeline shows the first message, send to receive.
  TimelineView* view = loaded.window.timelineView();
  const QRectF cell = matrix->cellRect(0, 1);
  QVERIFY(matrix->cellAt(cell.center()));
  QVERIFY(!matrix->cellAt(matrix->cellRect(1, 0).center()));
  QTest::mouseClick(matrix, Qt::LeftButton, Qt::NoModifier, cell.center().toPoint());
  const double send = ns(kLoopStart + 100 * test::kUs), recv_leave = ns(kLoopStart + 200 * test::kUs);
  QVERIFY2(view->from() <= ns(kLoopStart + 50 * test::kUs) && view->to() >= recv_leave,
           qPrintable(QString("%1 .. %2").arg(view->from()).arg(view->to())));
  QVERIFY(view->to() - view->from() < 2 * (recv_leave - send) + 1000);
  // The visible range: iterations 4 to 6.
  loaded.window.visibleRangeAction()->setChecked(true);
  const double from = ns(kLoopStart + 4 * kPeriod), to = ns(kLoopStart + 7 * kPeriod);
  view->setRange(from, to);
  QTRY_VERIFY_WITH_TIMEOUT(panel->scope().startsWith("Visible range 0.006000"), 20000);
  expect(from, to);
  QCOMPARE(matrix->matrix().find(0, 1)->messages, uint64_t{3});
}

namespace {
// The runs of `colour` along one pixel row of an image, inside [x0, x1).
int runs_of(const QImage& image, int y, int x0, int x1, QRgb colour) {
  int runs = 0;
  bool in = false;
  for (int x = x0; x < x1; ++x) {
    const bool now = image.pixel(x, y) == colour;
    runs += now && !in;
    in = now;
  }
  return runs;
}
}  // namespace

void GuiTest::summarized_call_is_one_run_of_its_colour() {
  // One rank: calls of 400 ns every 800 ns from 1 to 20 ms, an Allreduce of
  // 1.7 ms, dense calls again to 40 ms, Finalize at 10 s (leaves of about
  // 100 us: a 10 ms window is drawn from them).
  test::TraceBuilder b(1);
  b.init(0, 0, 1000);
  constexpr uint64_t kAllreduce = 20 * test::kMs, kLong = 1700 * test::kUs;
  for (uint64_t t = test::kMs; t + 800 <= kAllreduce; t += 800) b.other(0, test::CommRank, t, t + 400);
  b.collective(0, test::Allreduce, kAllreduce, kAllreduce + kLong);
  for (uint64_t t = kAllreduce + kLong; t + 800 <= 40 * test::kMs; t += 800) b.other(0, test::CommRank, t, t + 400);
  b.finalize(0, 10000 * test::kMs, 10000 * test::kMs + 1000);
  b.close();
  LoadedWindow loaded(QString::fromStdString(b.dir()));
  TimelineView* view = loaded.window.timelineView();
  const QRgb collective = prof::gui::kind_color(analysis::TimelineKind::Collective).rgb();
  const QRect plot = view->plotRect();
  // Windows drawn from pyramid levels (200 ms), from the leaves (10 ms) and
  // from the calls summarized (4 ms, a bucket a pixel): the Allreduce is one
  // run of its colour on every pixel row of the row's slot, as wide as the call.
  for (const double window : {200e6, 10e6, 4e6}) {
    const double from = std::max(0.0, ns(kAllreduce) - window / 2);
    view->setRange(from, from + window);
    const QImage image = view->grab().toImage();
    QCOMPARE(view->summarizedRows(), size_t{1});
    const int x0 = static_cast<int>(std::floor(view->xOf(ns(kAllreduce))));
    const int x1 = static_cast<int>(std::ceil(view->xOf(ns(kAllreduce + kLong))));
    const int top = plot.top() + 1, bottom = plot.top() + static_cast<int>(view->rowHeight()) - 3;
    for (int y = top; y <= bottom; ++y) {
      QCOMPARE(runs_of(image, y, plot.left(), plot.right(), collective), 1);
      int width = 0;
      for (int x = plot.left(); x < plot.right(); ++x) width += image.pixel(x, y) == collective;
      // Buckets partly covered at either end: a bucket at most on each side.
      const double bucket_px = view->drawnBucketWidth(0) * plot.width() / window;
      QVERIFY2(std::abs(width - (x1 - x0)) <= 2 * bucket_px + 2,
               qPrintable(QStringLiteral("window %1 y %2: %3 px, the call %4 px, buckets %5 px")
                              .arg(window).arg(y).arg(width).arg(x1 - x0).arg(bucket_px)));
    }
  }
}

// The nesting track: per row and level, the bands drawn are the executions of
// the intervals at that level, as the markers the test wrote delimit them
// (interval 1 and 3 at level 1, interval 2 inside 1 at level 2).
void GuiTest::nesting_bands_equal_interval_executions() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  TimelineView* view = loaded.window.timelineView();
  // Iterations 2 (its end) to 6 (its interval 2 begun): executions cut at both edges.
  const double from = ns(kLoopStart + 3 * kPeriod - 250 * test::kUs), to = ns(kLoopStart + 6 * kPeriod + 350 * test::kUs);
  view->setRange(from, to);
  const QImage image = view->grab().toImage();
  QVERIFY(view->rowHeight() >= TimelineView::kBandRowHeight);
  using Band = std::tuple<size_t, int, double, double>;
  std::set<Band> expected, drawn;
  // The markers in written order per row: begin ids 1, 2, 3 nest as the demo writes them.
  std::map<size_t, std::vector<int64_t>> open;
  for (const Written& w : trace.written()) {
    if (w.function == "interval begin") {
      open[w.row].push_back(w.enter);
    } else if (w.function == "interval end") {
      const int64_t start = open[w.row].back();
      open[w.row].pop_back();
      const int level = static_cast<int>(open[w.row].size()) + 1;
      if (static_cast<double>(start) < to && static_cast<double>(w.enter) > from)
        expected.insert({w.row, level, static_cast<double>(start), static_cast<double>(w.enter)});
    }
  }
  for (const auto& b : view->drawnBands()) drawn.insert({b.row, b.level, b.start, b.end});
  QCOMPARE(drawn.size(), view->drawnBands().size());  // each once
  QCOMPARE(expected.size(), size_t{2 * 5 * 2});  // per rank: iterations 2 to 6, intervals 1 and 2
  QVERIFY(drawn == expected);
  // Drawn: level 2's band is dark inside interval 2 (iteration 4 at 500 us)
  // and the pale track outside it (at 100 us, in interval 1 only).
  const int top = view->plotRect().top() + 1;
  const double t4 = ns(kLoopStart + 4 * kPeriod);
  const int inside = static_cast<int>(view->xOf(t4 + ns(500 * test::kUs)));
  const int outside = static_cast<int>(view->xOf(t4 + ns(100 * test::kUs)));
  const QRgb track = qRgb(225, 228, 236);
  QVERIFY(image.pixel(inside, top) != track);                              // level 1
  QVERIFY(image.pixel(inside, top + TimelineView::kBandHeight) != track);  // level 2
  QVERIFY(image.pixel(outside, top) != track);
  QCOMPARE(image.pixel(outside, top + TimelineView::kBandHeight), track);
}

// Find: a part of a name in any case finds every function containing it; the
// box completes names containing what is typed; filters skip calls shorter
// than a duration or with another peer.
void GuiTest::find_by_substring_with_completion_and_filters() {
  DemoTrace trace(20);
  LoadedWindow loaded(trace.dir());
  MainWindow& window = loaded.window;
  TimelineView* view = window.timelineView();
  const double t3 = ns(kLoopStart + 3 * kPeriod);
  auto selected = [&]() -> std::tuple<size_t, int64_t, std::string> {
    const auto& c = view->selectedCall();
    if (!c) return {999, -1, ""};
    return {c->row, c->enter, std::string(c->function)};
  };
  // Completion: the names containing "REDUCE", whatever the case.
  QCompleter* completer = window.findBox()->completer();
  QVERIFY(completer);
  completer->setCompletionPrefix("REDUCE");
  QStringList completions;
  for (int i = 0; completer->setCurrentRow(i); ++i) completions << completer->currentCompletion();
  // (The trace defines more functions than the demo calls: every one that contains it.)
  QVERIFY2(completions.contains("MPI_Allreduce") && !completions.contains("MPI_Send"), qPrintable(completions.join(",")));
  for (const QString& c : completions) QVERIFY2(c.contains("reduce", Qt::CaseInsensitive), qPrintable(c));
  completer->setCompletionPrefix("mpi_");
  QStringList all;
  for (int i = 0; completer->setCurrentRow(i); ++i) all << completer->currentCompletion();
  for (const char* f : {"MPI_Allreduce", "MPI_Comm_rank", "MPI_Finalize", "MPI_Init", "MPI_Recv", "MPI_Send"})
    QVERIFY2(all.contains(f), qPrintable(all.join(",") + " lacks " + f));
  // A substring: "reduc" is the Allreduce; "_send"/"recv" alone pick one function each.
  QCOMPARE(window.functionsMatching("reduc"), completions);
  QCOMPARE(window.functionsMatching("mpi_send"), QStringList{"MPI_Send"});  // exact beats contains
  QVERIFY(window.functionsMatching("mpi_").size() >= 6);
  // "mpi_" from iteration 3's start: the next call of any function is rank 1's Recv at 50 us.
  view->setRange(t3, t3 + ns(kPeriod));
  view->setSelectedCall(std::nullopt);
  window.findBox()->setText("mpi_");
  QVERIFY(window.findNext(true));
  QCOMPARE(selected(), (std::tuple<size_t, int64_t, std::string>{1, t3 + 50 * test::kUs, "MPI_Recv"}));
  QVERIFY(window.findNext(true));
  QCOMPARE(selected(), (std::tuple<size_t, int64_t, std::string>{0, t3 + 100 * test::kUs, "MPI_Send"}));
  // Peer 1: only rank 0's sends (the Recv's peer is 0, the Allreduce's root 0).
  window.findPeer()->setValue(1);
  QVERIFY(window.findNext(true));
  QCOMPARE(selected(), (std::tuple<size_t, int64_t, std::string>{0, t3 + ns(kPeriod) + 100 * test::kUs, "MPI_Send"}));
  QVERIFY(window.findNext(false));
  QCOMPARE(selected(), (std::tuple<size_t, int64_t, std::string>{0, t3 + 100 * test::kUs, "MPI_Send"}));
  window.findPeer()->setValue(-1);
  // At least 250 us: rank 0's Allreduce (300 us), not the Recv (150 us) nor rank 1's Allreduce (200 us).
  window.findMinDuration()->setValue(250);
  view->setRange(t3, t3 + ns(kPeriod));
  view->setSelectedCall(std::nullopt);
  QVERIFY(window.findNext(true));
  QCOMPARE(selected(), (std::tuple<size_t, int64_t, std::string>{0, t3 + 400 * test::kUs, "MPI_Allreduce"}));
  QVERIFY(window.findNext(true));
  QCOMPARE(selected(), (std::tuple<size_t, int64_t, std::string>{0, t3 + ns(kPeriod) + 400 * test::kUs, "MPI_Allreduce"}));
  // Nothing that long: not found, the selection stays.
  window.findMinDuration()->setValue(5000);
  QVERIFY(!window.findNext(true));
  QCOMPARE(std::get<1>(selected()), static_cast<int64_t>(t3 + ns(kPeriod) + 400 * test::kUs));
  QVERIFY(window.statusBar()->currentMessage().contains("passes the filters"));
}

namespace {

// The find box's completions containing `text`.
QStringList find_completions(MainWindow& window, const QString& text) {
  QCompleter* completer = window.findBox()->completer();
  completer->setCompletionPrefix(text);
  QStringList out;
  for (int i = 0; completer->setCurrentRow(i); ++i) out << completer->currentCompletion();
  return out;
}

}  // namespace

// Find an interval (the demo's: 1 at app.c:100, 2 at app.c:200 nested, 3 at
// app.c:300 once after the loop): its executions one after the other in
// (start, rank) order, each selected in the tree with the timeline zoomed to
// it, wrapping around at either end.
void GuiTest::find_goes_to_interval_executions() {
  constexpr int kIterations = 6;
  DemoTrace trace(kIterations);
  LoadedWindow loaded(trace.dir());
  MainWindow& window = loaded.window;
  TimelineView* view = window.timelineView();
  const auto& a = *window.session()->analysis;
  auto near = [](double x, double y) { return std::abs(x - y) < 1; };  // ns
  // The completions: each interval as the tree names it, each site's file:line.
  const QStringList app2 = find_completions(window, "APP.C:2");
  QVERIFY2(app2.contains("interval id 2 at app.c:200") && app2.contains("calls from app.c:200"), qPrintable(app2.join(",")));
  const QStringList intervals = find_completions(window, "interval ");
  QCOMPARE(intervals, (QStringList{"interval id 1 at app.c:100", "interval id 2 at app.c:200", "interval id 3 at app.c:300"}));
  // What texts find: an id, a name in any case, a part of one; a function wins.
  auto found = [&](const QString& text) {
    const auto t = window.findTarget(text);
    std::vector<uint16_t> ids;
    for (int i : t.intervals) ids.push_back(*a.intervals[static_cast<size_t>(i)].id);
    return std::make_pair(t.kind, ids);
  };
  using Found = std::pair<MainWindow::FindTarget::Kind, std::vector<uint16_t>>;
  QCOMPARE(found("interval 2"), (Found{MainWindow::FindTarget::Intervals, {2}}));
  QCOMPARE(found("ID 2 AT APP.C:200"), (Found{MainWindow::FindTarget::Intervals, {2}}));
  Found all = found("app.c");
  std::sort(all.second.begin(), all.second.end());
  QCOMPARE(all, (Found{MainWindow::FindTarget::Intervals, {1, 2, 3}}));
  QCOMPARE(found("interval 4"), (Found{MainWindow::FindTarget::Nothing, {}}));
  QCOMPARE(found("allred").first, MainWindow::FindTarget::Functions);
  QCOMPARE(found("calls from app.c:200").first, MainWindow::FindTarget::Sites);

  // Interval 2's executions as planted: [t + 300 us, t + 800 us] of every
  // iteration on both ranks, rank 0 first at equal starts.
  std::vector<std::pair<double, size_t>> planted;
  for (int it = 0; it < kIterations; ++it)
    for (size_t row = 0; row < 2; ++row)
      planted.emplace_back(ns(kLoopStart + static_cast<uint64_t>(it) * kPeriod + 300 * test::kUs), row);
  view->showAll();
  window.findBox()->setText("interval id 2 at app.c:200");
  for (size_t k = 0; k <= planted.size(); ++k) {
    QVERIFY(window.findNext(true));
    const auto& [start, row] = planted[k % planted.size()];
    const int interval = window.selectedInterval();
    QVERIFY(interval > 0);
    QCOMPARE(*a.intervals[static_cast<size_t>(interval)].id, uint16_t{2});
    // Zoomed to it: the execution with a tenth of it on either side.
    QVERIFY(near(view->from(), start - 50 * ns(test::kUs)));
    QVERIFY(near(view->to(), start + 550 * ns(test::kUs)));
    QCOMPARE(view->wrappedAround(), k == planted.size());
    const QString status = window.statusBar()->currentMessage();
    QVERIFY2(status.contains(QStringLiteral("id 2 at app.c:200")) && status.contains(QStringLiteral("rank %1").arg(row)) &&
                 status.contains(QStringLiteral("wrapped")) == (k == planted.size()),
             qPrintable(status));
  }
  // Back from the first: the last, then the one before it.
  QVERIFY(window.findNext(false));
  QVERIFY(view->wrappedAround());
  QVERIFY(near(view->from(), planted.back().first - 50 * ns(test::kUs)));
  QVERIFY(window.statusBar()->currentMessage().contains("rank 1"));
  QVERIFY(window.findNext(false));
  QVERIFY(!view->wrappedAround());
  QVERIFY(near(view->from(), planted.back().first - 50 * ns(test::kUs)));
  QVERIFY(window.statusBar()->currentMessage().contains("rank 0"));
  // By id, with rank 0's row hidden: interval 3's one execution on rank 1
  // ([end of the loop, + 300 us]), again and again.
  view->setRowHidden(0, true);
  window.findBox()->setText("interval 3");
  const double t3 = ns(kLoopStart + kIterations * kPeriod);
  for (int k = 0; k < 2; ++k) {
    QVERIFY(window.findNext(true));
    QVERIFY(near(view->from(), t3 - 30 * ns(test::kUs)));
    QVERIFY(near(view->to(), t3 + 330 * ns(test::kUs)));
    QVERIFY(window.statusBar()->currentMessage().contains("rank 1"));
  }
  // The duration filter: interval 3 (300 us) is not 400 us long.
  window.findMinDuration()->setValue(400);
  QVERIFY(!window.findNext(true));
  QVERIFY(window.statusBar()->currentMessage().contains("passes the filters"));
}

// On a real trace (gui.callsites_trace: tests/shim/callsites_c.c at 2 ranks,
// MPI_Allreduce 5 times from line 10, then 3 times from line 22 inside
// interval 7): a site's file:line finds the calls from that line only, in
// (enter, rank) order, wrapping around.
void GuiTest::find_goes_to_calls_from_a_site() {
  const QString dir = qEnvironmentVariable("PROF_GUI_CALLSITES_TRACE");
  QVERIFY2(!dir.isEmpty(), "PROF_GUI_CALLSITES_TRACE names the trace (ctest sets it)");
  LoadedWindow loaded(dir);
  MainWindow& window = loaded.window;
  TimelineView* view = window.timelineView();
  const auto& timeline = window.session()->timeline;
  // The program's Allreduce calls per main-thread row, in order: the oracle.
  std::map<size_t, std::vector<analysis::TimelineCall>> allreduces;
  for (size_t row = 0; row < timeline->rows().size(); ++row) {
    if (timeline->rows()[row].stream != 0) continue;
    for (auto c = timeline->find_call(row, "MPI_Allreduce", 0, true); c;
         c = timeline->find_call(row, "MPI_Allreduce", static_cast<double>(c->enter) + 1, true))
      allreduces[row].push_back(*c);
    QCOMPARE(allreduces[row].size(), size_t{8});
  }
  QCOMPARE(allreduces.size(), size_t{2});
  const QStringList sites = find_completions(window, "callsites_c.c:");
  for (const char* line : {":10", ":22"})
    QVERIFY2(std::any_of(sites.begin(), sites.end(),
                         [&](const QString& c) { return c.startsWith("calls from ") && c.endsWith(line); }),
             qPrintable(sites.join(",")));
  for (const int line : {22, 10}) {
    // The calls from that line: (enter, row) order.
    std::vector<std::pair<int64_t, size_t>> want;
    for (const auto& [row, calls] : allreduces)
      for (size_t n = line == 10 ? 0 : 5; n < (line == 10 ? 5u : 8u); ++n) want.emplace_back(calls[n].enter, row);
    std::sort(want.begin(), want.end());
    window.findBox()->setText(QStringLiteral("callsites_c.c:%1").arg(line));
    QCOMPARE(window.findTarget(window.findBox()->text()).kind, MainWindow::FindTarget::Sites);
    view->showAll();
    view->setSelectedCall(std::nullopt);
    for (size_t k = 0; k <= want.size(); ++k) {
      QVERIFY(window.findNext(true));
      const auto& c = view->selectedCall();
      QVERIFY(c.has_value());
      QCOMPARE(std::make_pair(c->enter, c->row), want[k % want.size()]);
      QCOMPARE(c->function, std::string_view("MPI_Allreduce"));
      QCOMPARE(view->wrappedAround(), k == want.size());
    }
    QVERIFY(window.findNext(false));
    QCOMPARE(std::make_pair(view->selectedCall()->enter, view->selectedCall()->row), want.back());
    QVERIFY(window.statusBar()->currentMessage().contains(QStringLiteral("called from")));
  }
  // Interval 7 by id: one execution per rank, holding its 3 calls from line 22.
  window.findBox()->setText("interval 7");
  view->showAll();
  std::set<size_t> rows;
  for (int k = 0; k < 2; ++k) {
    QVERIFY(window.findNext(true));
    const auto& row_text = window.statusBar()->currentMessage();
    QVERIFY2(row_text.contains("id 7 at callsites_c.c:"), qPrintable(row_text));
    const int rank = row_text.contains("rank 0") ? 0 : 1;
    QVERIFY2(row_text.contains(QStringLiteral("rank %1").arg(rank)), qPrintable(row_text));
    size_t row = 0;
    for (const auto& [r, calls] : allreduces)
      if (timeline->rows()[r].rank == rank) row = r;
    rows.insert(row);
    // Zoomed to that rank's execution, a tenth of its length on each side
    // (100 ns at least): its calls in view. (Whether the calls before it
    // are too depends on the run's timing: not asserted.)
    const auto nodes = timeline->nodes();
    const auto executions = timeline->executions(row);
    const auto seven = std::find_if(executions.begin(), executions.end(), [&](const analysis::TimelineExecution& e) {
      return e.node < nodes.size() && nodes[e.node].id == 7;
    });
    QVERIFY(seven != executions.end());
    const double margin = std::max((seven->end - seven->start) * 0.1, 100.0);
    QVERIFY2(std::abs(view->from() - (seven->start - margin)) < 1, qPrintable(QString::number(view->from())));
    QVERIFY2(std::abs(view->to() - (seven->end + margin)) < 1, qPrintable(QString::number(view->to())));
    for (size_t n = 5; n < 8; ++n) {
      QVERIFY(static_cast<double>(allreduces[row][n].enter) > view->from());
      QVERIFY(static_cast<double>(allreduces[row][n].leave()) < view->to());
    }
  }
  QCOMPARE(rows.size(), size_t{2});
}

namespace {

// `prof-analyze --compare A B --json`, a separate process.
nlohmann::json compare_json(const QString& a, const QString& b) {
  QTemporaryDir out;
  const QString json_path = out.filePath("compare.json");
  QProcess analyze;
  analyze.start(PROF_ANALYZE_BIN, {"--compare", a, b, "--json", json_path, "-o", out.filePath("compare.txt"),
                                   "--no-progress", "--no-index"});
  if (!analyze.waitForFinished(60000) || analyze.exitCode() != 0) return {};
  std::ifstream in(json_path.toStdString());
  return nlohmann::json::parse(in);
}

// `prof-analyze DIR --json`, a separate process.
nlohmann::json report_json(const QString& dir) {
  QTemporaryDir out;
  const QString json_path = out.filePath("report.json");
  QProcess analyze;
  analyze.start(PROF_ANALYZE_BIN, {dir, "--json", json_path, "-o", out.filePath("report.txt"), "-q",
                                   "--no-progress", "--no-index"});
  if (!analyze.waitForFinished(60000) || analyze.exitCode() != 0) return {};
  std::ifstream in(json_path.toStdString());
  return nlohmann::json::parse(in);
}

// A table's cell by its row and its header's KeyRole.
int column_keyed(const QStandardItemModel* m, const QString& key) {
  for (int c = 0; c < m->columnCount(); ++c)
    if (m->headerData(c, Qt::Horizontal, CharacteristicsPanel::KeyRole).toString() == key) return c;
  return -1;
}
QVariant number_at(const QStandardItemModel* m, int row, const QString& key) {
  const int c = column_keyed(m, key);
  return c < 0 || !m->item(row, c) ? QVariant() : m->item(row, c)->data(CharacteristicsPanel::NumberRole);
}

// The node of `a` an entry of JSON `compare` names: its id (null: the run), call site and line.
int interval_named(const analysis::Analysis& a, const nlohmann::json& entry) {
  int found = -1;
  for (size_t i = 0; i < a.intervals.size(); ++i) {
    const auto& n = a.intervals[i];
    const bool same_id = entry["id"].is_null() ? !n.id : (n.id && *n.id == entry["id"].get<uint32_t>());
    if (same_id && n.source_label() == entry["source_file"].get<std::string>() && n.line == entry["line"].get<int>()) {
      if (found >= 0) return -2;  // not one: the test's traces have each key once
      found = static_cast<int>(i);
    }
  }
  return found;
}

// The rows of a QTableWidget as "cell|cell|...".
QStringList table_rows(const QTableWidget* t) {
  QStringList rows;
  for (int r = 0; r < t->rowCount(); ++r) {
    QStringList cells;
    for (int c = 0; c < t->columnCount(); ++c) cells << (t->item(r, c) ? t->item(r, c)->text() : QString());
    rows << cells.join('|');
  }
  return rows;
}

}  // namespace

// Two real runs (gui.compare_traces): A with PROF_BCAST=native, B with shm, a
// planted 200 ms slowdown in interval 2 and interval 3 in B only. Opened as
// prof-gui A --compare B does, the tree's A, B, B - A and B / A of every
// compared characteristic and the panel's equal prof-analyze --compare's
// JSON for every matched interval; B's unmatched interval is listed; the
// runs' difference names PROF_BCAST; closing returns to the plain view;
// --screenshot --compare works offscreen.
void GuiTest::comparison_equals_prof_analyze() {
  const QString traces = qEnvironmentVariable("PROF_GUI_COMPARE_TRACES");
  QVERIFY2(!traces.isEmpty(), "PROF_GUI_COMPARE_TRACES names the traces (ctest sets it)");
  const QString a_dir = traces + "/a", b_dir = traces + "/b";
  const nlohmann::json expected = compare_json(a_dir, b_dir);
  QVERIFY(expected.contains("compare"));

  MainWindow window;
  QStringList problems;
  window.setQuiet([&](const QString& text) { problems << text; });
  window.resize(1400, 900);
  window.show();
  window.openTrace(a_dir);
  window.compareWith(b_dir);
  window.waitLoaded();
  QCoreApplication::processEvents();
  QVERIFY2(problems.isEmpty(), qPrintable(problems.join('\n')));
  QVERIFY(window.comparison());
  IntervalTreeModel* model = window.model();
  QCOMPARE(model->columnCount(), static_cast<int>(IntervalTreeModel::CompareColumnCount));
  QVERIFY(window.comparisonPane()->isVisible());
  // The timeline stays A's.
  QCOMPARE(window.timelineView()->timeline(), window.session()->timeline.get());
  const analysis::Analysis& a = *model->analysis();

  // Every compared characteristic the box offers, every matched interval.
  QComboBox* by = window.compareByBox();
  QCOMPARE(by->currentText(), QString("Lost Time"));  // what prof-analyze sorts by
  size_t matched = 0, checked = 0;
  for (int choice = 0; choice < by->count(); ++choice) {
    by->setCurrentIndex(choice);
    const auto& ch = analysis::kMainCharacteristics[model->comparedColumn().characteristic];
    QVERIFY(ch.compared && !model->comparedColumn().mean_per_rank);  // same rank counts: totals only
    QCOMPARE(model->headerData(IntervalTreeModel::CompareB, Qt::Horizontal, Qt::DisplayRole).toString(),
             QStringLiteral("B: %1").arg(ch.name()));
    matched = 0;
    for (const auto& e : expected["compare"]) {
      if (e["a"].is_null() || e["b"].is_null()) continue;
      ++matched;
      const int interval = interval_named(a, e);
      QVERIFY2(interval >= 0, e.dump().c_str());
      const QModelIndex row = model->indexOfInterval(interval);
      auto number = [&](int column) {
        return model->data(row.siblingAtColumn(column), IntervalTreeModel::SortRole);
      };
      auto text = [&](int column) { return model->data(row.siblingAtColumn(column), Qt::DisplayRole).toString(); };
      const double x = e["a"][ch.key].get<double>(), y = e["b"][ch.key].get<double>();
      const double d = e["diff"][ch.key].get<double>();
      QCOMPARE(number(IntervalTreeModel::CompareA).toDouble(), x);
      QCOMPARE(number(IntervalTreeModel::CompareB).toDouble(), y);
      QCOMPARE(number(IntervalTreeModel::CompareDifference).toDouble(), d);
      QCOMPARE(text(IntervalTreeModel::CompareB).toStdString(), analysis::figure_text(y));
      const std::string cut = analysis::figure_text(d);
      QCOMPARE(text(IntervalTreeModel::CompareDifference).toStdString(), cut[0] == '-' ? cut : "+" + cut);
      if (e["ratio"][ch.key].is_null())
        QVERIFY(!number(IntervalTreeModel::CompareRatio).isValid());
      else
        QCOMPARE(number(IntervalTreeModel::CompareRatio).toDouble(), e["ratio"][ch.key].get<double>());
      ++checked;
    }
  }
  QCOMPARE(matched, size_t{3});  // the run, intervals 1 and 2
  QVERIFY(checked >= 3 * 10);

  // The panel of the slowed interval: A, B, B - A and B / A of every compared characteristic.
  QVERIFY(window.selectIntervalId(2));
  const nlohmann::json* two = nullptr;
  for (const auto& e : expected["compare"])
    if (!e["id"].is_null() && e["id"].get<int>() == 2) two = &e;
  QVERIFY(two);
  const QStandardItemModel* main = window.panel()->mainTable();
  QCOMPARE(main->columnCount(), 5);
  int panel_rows = 0;
  for (int r = 0; r < main->rowCount(); ++r) {
    const std::string key = main->item(r, 0)->data(CharacteristicsPanel::KeyRole).toString().toStdString();
    QCOMPARE(main->item(r, 1)->data(CharacteristicsPanel::NumberRole).toDouble(), (*two)["a"][key].get<double>());
    QCOMPARE(main->item(r, 2)->data(CharacteristicsPanel::NumberRole).toDouble(), (*two)["b"][key].get<double>());
    if (!(*two)["diff"].contains(key)) continue;  // the processors: a difference of the runs
    QCOMPARE(main->item(r, 3)->data(CharacteristicsPanel::NumberRole).toDouble(), (*two)["diff"][key].get<double>());
    ++panel_rows;
  }
  QCOMPARE(panel_rows, static_cast<int>((*two)["diff"].size()));
  // The planted slowdown: rank 1 waits for rank 0's 200 ms of sleep in B
  // (less whatever rank 1 was late itself).
  QVERIFY((*two)["b"]["lost_time"].get<double>() > 0.1);

  // B's interval 3 matches none of A's: listed apart.
  const QStringList only_b = table_rows(window.onlyInBTable());
  QCOMPARE(only_b.size(), 1);
  QVERIFY2(only_b[0].startsWith("id 3 at compare_runs.c:"), qPrintable(only_b[0]));
  // Selected by id (as --select does), it is B's row, with B's figures.
  QVERIFY(window.selectIntervalId(3));
  QVERIFY(window.selectedOnlyInBInterval() >= 0);
  QCOMPARE(*window.comparison()->b->intervals[static_cast<size_t>(window.selectedOnlyInBInterval())].id, 3u);
  QVERIFY(window.selectIntervalId(2));  // (as before, for what follows)
  // What the runs' records differ in: the broadcast (and nothing prof-analyze does not list).
  const QStringList differences = table_rows(window.runDifferencesTable());
  QVERIFY2(differences.contains("PROF_BCAST|native|shm"), qPrintable(differences.join('\n')));
  QCOMPARE(differences.size(), static_cast<int>(expected["run_differences"].size()));

  // Close comparison: the plain view, the selection kept.
  window.closeComparisonAction()->trigger();
  QVERIFY(!window.comparison());
  QCOMPARE(model->columnCount(), static_cast<int>(IntervalTreeModel::ColumnCount));
  QVERIFY(!window.comparisonPane()->isVisible());
  QCOMPARE(window.panel()->mainTable()->columnCount(), 2);
  QCOMPARE(a.intervals[static_cast<size_t>(window.selectedInterval())].id, std::optional<uint16_t>(2));

  // The other way round: A's interval 3 (this time the first run's) is shown as only in A.
  MainWindow reversed;
  reversed.setQuiet([&](const QString& text) { problems << text; });
  reversed.show();
  reversed.openTrace(b_dir);
  reversed.compareWith(a_dir);
  reversed.waitLoaded();
  QVERIFY(reversed.comparison());
  QVERIFY(reversed.selectIntervalId(3));
  const QModelIndex three = reversed.model()->indexOfInterval(reversed.selectedInterval());
  QCOMPARE(three.siblingAtColumn(IntervalTreeModel::CompareB).data().toString(), QString("only in A"));
  QVERIFY(!three.siblingAtColumn(IntervalTreeModel::CompareDifference).data(IntervalTreeModel::SortRole).isValid());
  QVERIFY(reversed.panel()->scope().contains("only in A"));
  QCOMPARE(reversed.onlyInBTable()->rowCount(), 0);

  // --screenshot with --compare, offscreen: written, exit 0 (2 when B could not be compared).
  QTemporaryDir out;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("XDG_CONFIG_HOME", out.filePath("config"));
  for (const auto& [b, status] : {std::pair{b_dir, 0}, std::pair{out.filePath("missing"), 2}}) {
    const QString png = out.filePath("compare.png");
    QFile::remove(png);
    QProcess gui;
    gui.setProcessEnvironment(env);
    gui.start(PROF_GUI_BIN, {a_dir, "--compare", b, "--screenshot", png, "--select", "2", "--no-index"});
    QVERIFY(gui.waitForFinished(60000));
    const QByteArray err = gui.readAllStandardError();
    QVERIFY2(gui.exitCode() == status, err.constData());
    QCOMPARE(QImage(png).size(), QSize(1600, 1000));
    if (status != 0) QVERIFY2(err.contains(out.filePath("missing").toUtf8()), err.constData());
  }
}

// A B that cannot be compared (a missing directory) leaves the window as it
// was, the comparison before it included, with one problem naming B; a
// cancelled one leaves it too, with none.
void GuiTest::failed_comparison_keeps_the_trace() {
  DemoTrace trace(20), other(10);
  LoadedWindow loaded(trace.dir());
  MainWindow& window = loaded.window;
  const auto session = window.session();
  QVERIFY(window.selectIntervalId(2));
  const int selected = window.selectedInterval();
  QTemporaryDir gone;
  const QString missing = gone.filePath("no-such-trace");
  window.compareWith(missing);
  window.waitLoaded();
  QCOMPARE(loaded.problems.size(), 1);
  QVERIFY2(loaded.problems[0].contains(missing) && loaded.problems[0].contains("Cannot compare"),
           qPrintable(loaded.problems[0]));
  QVERIFY(!window.comparison());
  QCOMPARE(window.session(), session);
  QCOMPARE(window.model()->columnCount(), static_cast<int>(IntervalTreeModel::ColumnCount));
  QCOMPARE(window.selectedInterval(), selected);
  QVERIFY(!window.comparisonPane()->isVisible());
  // Cancelled (Cancel stops B's load as it does A's): nothing changes, nothing is reported.
  DemoTrace large(2000);
  window.compareWith(large.dir());
  window.compareLoader()->cancel();
  window.waitLoaded();
  QVERIFY(!window.comparison());
  QCOMPARE(loaded.problems.size(), 1);
  QVERIFY2(window.statusBar()->currentMessage().contains("cancelled"), qPrintable(window.statusBar()->currentMessage()));
  QCOMPARE(window.selectedInterval(), selected);
  // A comparison in place stays when the next B fails.
  window.compareWith(other.dir());
  window.waitLoaded();
  const auto comparison = window.comparison();
  QVERIFY(comparison);
  QCOMPARE(comparison->b_dir, other.dir());
  window.compareWith(missing);
  window.waitLoaded();
  QCOMPARE(loaded.problems.size(), 2);
  QCOMPARE(window.comparison(), comparison);
  QCOMPARE(window.model()->columnCount(), static_cast<int>(IntervalTreeModel::CompareColumnCount));
  QCOMPARE(window.session(), session);
  // On the command line, --compare without the trace to compare: refused, exit 1.
  QProcess gui;
  gui.start(PROF_GUI_BIN, {"--compare", other.dir(), "--screenshot", gone.filePath("x.png")});
  QVERIFY(gui.waitForFinished(60000));
  QCOMPARE(gui.exitCode(), 1);
  QVERIFY(gui.readAllStandardError().contains("--compare B_DIR needs a TRACE_DIR"));
}

// A run killed while both ranks waited in MPI_Recv for each other: each
// receive is drawn up to its rank's last moment alive, and its tooltip says it
// was in flight, how the rank ended, its call site and whom it waited for
// (what prof-analyze's run_end says).
void GuiTest::call_in_flight_says_so_in_its_tooltip() {
  test::TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, test::kMs);
    format::InFlightSlot slot{};
    slot.enter = (3 + static_cast<uint64_t>(r)) * test::kMs;
    slot.site_func = 0x401000u | (uint64_t{test::Recv} << 48);
    slot.peer = 1 - r;
    slot.tag = 5;
    slot.comm = test::kWorld;
    b.w(r).live(10 * test::kMs, {slot});
    b.close(r, "");
  }
  LoadedWindow loaded(QString::fromStdString(b.dir()));
  const auto session = loaded.window.session();
  QVERIFY(session && session->analysis);
  TimelineView* view = loaded.window.timelineView();
  view->showAll();
  view->grab();
  for (int r = 0; r < 2; ++r) {
    const QString tip = view->tooltipAt(QPoint(static_cast<int>(view->xOf(ns(8 * test::kMs))), view->rowCenterY(r)));
    QVERIFY2(tip.contains("MPI_Recv") && tip.contains("in flight") && tip.contains("killed"), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("waiting for rank %1").arg(1 - r)), qPrintable(tip));
    const auto& f = session->analysis->run_end[static_cast<size_t>(r)].in_flight.at(0);
    QVERIFY2(tip.contains(QStringLiteral("called from %1").arg(QString::fromStdString(f.site_label))), qPrintable(tip));
  }
  // The status bar says the run did not end cleanly, and the deadlock.
  const QString status = loaded.window.statusBar()->currentMessage();
  QVERIFY2(status.contains("2 of 2 ranks ended without MPI_Finalize") &&
               status.contains("deadlock: ranks 0, 1 wait for each other"),
           qPrintable(status));
  // Before the calls in flight: no such words.
  const QString init = view->tooltipAt(QPoint(static_cast<int>(view->xOf(ns(test::kMs / 2))), view->rowCenterY(0)));
  QVERIFY2(init.contains("MPI_Init") && !init.contains("in flight"), qPrintable(init));
}

// What the runs differ in, with values longer than the pane (command lines):
// B's column stays in sight, each value elided and whole in its tooltip.
void GuiTest::comparison_keeps_both_runs_columns_in_sight() {
  const std::string long_command(300, 'x');
  std::vector<std::unique_ptr<test::TraceBuilder>> runs;
  for (const std::string& command : {"/a/" + long_command, "/b/" + long_command}) {
    auto b = std::make_unique<test::TraceBuilder>(1);
    b->w(0).meta("command", command);
    b->init(0, 0, 1000);
    b->finalize(0, 2000, 3000);
    b->close();
    runs.push_back(std::move(b));
  }
  LoadedWindow loaded(QString::fromStdString(runs[0]->dir()));
  MainWindow& window = loaded.window;
  window.compareWith(QString::fromStdString(runs[1]->dir()));
  window.waitLoaded();
  QVERIFY(window.comparison());
  window.resize(900, 900);
  QCoreApplication::processEvents();
  QTableWidget* table = window.runDifferencesTable();
  int command_row = -1;
  for (int r = 0; r < table->rowCount(); ++r)
    if (table->item(r, 0) && table->item(r, 0)->text() == "command") command_row = r;
  QVERIFY(command_row >= 0);
  QCOMPARE(table->item(command_row, 2)->toolTip(), QString::fromStdString("/b/" + long_command));
  const QHeaderView* header = table->horizontalHeader();
  QVERIFY2(header->sectionViewportPosition(2) + header->sectionSize(2) <= table->viewport()->width() + 1,
           qPrintable(QStringLiteral("B's column at %1 + %2 px, the table %3 px wide")
                          .arg(header->sectionViewportPosition(2))
                          .arg(header->sectionSize(2))
                          .arg(table->viewport()->width())));
}

// Runs of 2 and 3 ranks: compared as prof-analyze --compare does, by totals
// and by means per rank; the runs differ in "ranks"; A's intervals that B
// lacks are shown as only in A.
void GuiTest::comparison_of_different_rank_counts() {
  DemoTrace two(20);
  ManyRanksTrace three(3, 20);
  const nlohmann::json expected = compare_json(two.dir(), three.dir());
  QVERIFY(expected.contains("compare"));
  LoadedWindow loaded(two.dir());
  MainWindow& window = loaded.window;
  window.compareWith(three.dir());
  window.waitLoaded();
  QVERIFY(window.comparison());
  QVERIFY(table_rows(window.runDifferencesTable()).contains("ranks|2|3"));
  // (The whole run: the entry without an id, wherever its change sorts it.)
  const auto whole_run = std::find_if(expected["compare"].begin(), expected["compare"].end(),
                                      [](const nlohmann::json& e) { return e["id"].is_null(); });
  QVERIFY(whole_run != expected["compare"].end());
  const nlohmann::json& root = *whole_run;
  IntervalTreeModel* model = window.model();
  const QModelIndex run = model->indexOfInterval(0);
  QComboBox* by = window.compareByBox();
  int means = 0;
  for (int choice = 0; choice < by->count(); ++choice) {
    by->setCurrentIndex(choice);
    const prof::gui::ComparedColumn column = model->comparedColumn();
    const std::string key = analysis::kMainCharacteristics[column.characteristic].key;
    const double x = column.mean_per_rank ? root["mean_a"][key].get<double>() : root["a"][key].get<double>();
    const double y = column.mean_per_rank ? root["mean_b"][key].get<double>() : root["b"][key].get<double>();
    QCOMPARE(run.siblingAtColumn(IntervalTreeModel::CompareA).data(IntervalTreeModel::SortRole).toDouble(), x);
    QCOMPARE(run.siblingAtColumn(IntervalTreeModel::CompareB).data(IntervalTreeModel::SortRole).toDouble(), y);
    QCOMPARE(run.siblingAtColumn(IntervalTreeModel::CompareDifference).data(IntervalTreeModel::SortRole).toDouble(),
             y - x);
    if (column.mean_per_rank) {
      QVERIFY(by->currentText().endsWith("(mean per rank)"));
      ++means;
    }
  }
  QVERIFY(means > 0);
  QCOMPARE(means, static_cast<int>(root["mean_a"].size()));
  // DemoTrace's intervals 1, 2 and 3 are not in B.
  for (int id : {1, 2, 3}) {
    QVERIFY(window.selectIntervalId(id));
    const QModelIndex row = model->indexOfInterval(window.selectedInterval());
    QCOMPARE(row.siblingAtColumn(IntervalTreeModel::CompareB).data().toString(), QString("only in A"));
  }
  // The panel's means per rank.
  window.selectInterval(0, false);
  const QStandardItemModel* main = window.panel()->mainTable();
  int mean_rows = 0;
  for (int r = 0; r < main->rowCount(); ++r) {
    const QString key = main->item(r, 0)->data(CharacteristicsPanel::KeyRole).toString();
    if (!key.endsWith("/mean")) continue;
    const std::string k = key.chopped(5).toStdString();
    QCOMPARE(main->item(r, 1)->data(CharacteristicsPanel::NumberRole).toDouble(), root["mean_a"][k].get<double>());
    QCOMPARE(main->item(r, 2)->data(CharacteristicsPanel::NumberRole).toDouble(), root["mean_b"][k].get<double>());
    ++mean_rows;
  }
  QCOMPARE(mean_rows, means);
  // Per rank: the rank counts differ, so each figure's total over the ranks
  // and its mean per rank, as summed from each run's JSON report; the tab says so.
  const nlohmann::json report_a = report_json(two.dir()), report_b = report_json(three.dir());
  QVERIFY(report_a.contains("intervals") && report_b.contains("intervals"));
  CharacteristicsPanel* panel = window.panel();
  QVERIFY(!panel->perRankNote()->isHidden());
  QVERIFY2(panel->perRankNote()->text().contains("2 and 3"), qPrintable(panel->perRankNote()->text()));
  const QStandardItemModel* per_rank = panel->perRankTable();
  QCOMPARE(per_rank->rowCount(), 2);
  for (int r = 0; r < per_rank->rowCount(); ++r) {
    const QString row_key = per_rank->item(r, 0)->data(CharacteristicsPanel::KeyRole).toString();
    QVERIFY(row_key == "total" || row_key == "mean");
    for (const analysis::RankCharacteristic& c : analysis::kRankCharacteristics) {
      if (std::string_view(c.key) == "rank") continue;
      auto over_ranks = [&](const nlohmann::json& report) {
        const nlohmann::json& list = report["intervals"][0]["per_rank"];
        double sum = 0;
        for (const auto& f : list) sum += f[c.key].get<double>();
        return row_key == "mean" ? sum / static_cast<double>(list.size()) : sum;
      };
      const QString key = QString::fromUtf8(c.key);
      QCOMPARE(number_at(per_rank, r, key + "/a").toDouble(), over_ranks(report_a));
      QCOMPARE(number_at(per_rank, r, key + "/b").toDouble(), over_ranks(report_b));
    }
  }
}

// The panel's tabs of each matched interval of two real runs
// (gui.compare_traces) against prof-analyze: MPI functions, their chart and
// wait states as prof-analyze --compare's JSON; per rank and the
// comparative rows as each run's own JSON report (per-rank values are not in
// --compare's: the rank counts agree here, so each rank is shown in both).
void GuiTest::comparison_tabs_equal_prof_analyze() {
  const QString traces = qEnvironmentVariable("PROF_GUI_COMPARE_TRACES");
  QVERIFY2(!traces.isEmpty(), "PROF_GUI_COMPARE_TRACES names the traces (ctest sets it)");
  const QString a_dir = traces + "/a", b_dir = traces + "/b";
  const nlohmann::json expected = compare_json(a_dir, b_dir);
  const nlohmann::json report_a = report_json(a_dir), report_b = report_json(b_dir);
  QVERIFY(expected.contains("compare") && report_a.contains("intervals") && report_b.contains("intervals"));
  LoadedWindow loaded(a_dir);
  MainWindow& window = loaded.window;
  window.compareWith(b_dir);
  window.waitLoaded();
  QCoreApplication::processEvents();
  QVERIFY2(loaded.problems.isEmpty(), qPrintable(loaded.problems.join('\n')));
  const auto comparison = window.comparison();
  QVERIFY(comparison);
  CharacteristicsPanel* panel = window.panel();
  size_t checked = 0, functions_checked = 0;
  for (const auto& e : expected["compare"]) {
    if (e["a"].is_null() || e["b"].is_null()) continue;
    const int interval = interval_named(*comparison->a, e);
    QVERIFY2(interval >= 0, e.dump().c_str());
    window.selectInterval(interval, false);
    QCOMPARE(panel->interval(), interval);
    const int b_interval = comparison->b_of_a[static_cast<size_t>(interval)];
    const nlohmann::json& ja = report_a["intervals"][static_cast<size_t>(interval)];
    const nlohmann::json& jb = report_b["intervals"][static_cast<size_t>(b_interval)];
    QCOMPARE(jb["id"], e["id"]);
    QCOMPARE(jb["line"], e["line"]);

    // MPI functions: the JSON's list, in its order (the largest change first).
    const QStandardItemModel* functions = panel->functionTable();
    QCOMPARE(functions->rowCount(), static_cast<int>(e["functions"].size()));
    for (int r = 0; r < functions->rowCount(); ++r) {
      const nlohmann::json& f = e["functions"][static_cast<size_t>(r)];
      QCOMPARE(functions->item(r, 0)->text().toStdString(), f["name"].get<std::string>());
      for (const char* key : {"calls_a", "calls_b", "time_a", "time_b", "diff", "bytes_a", "bytes_b"})
        QCOMPARE(number_at(functions, r, key).toDouble(), f[key].get<double>());
      const double time_a = f["time_a"].get<double>(), time_b = f["time_b"].get<double>();
      if (time_a == 0)
        QVERIFY(!number_at(functions, r, "ratio").isValid());
      else
        QCOMPARE(number_at(functions, r, "ratio").toDouble(), time_b / time_a);
      ++functions_checked;
    }
    // The chart: the same functions, A's and B's bars scaled to the longest time of either.
    const gui::FunctionChart* chart = panel->functionChart();
    QVERIFY(chart->comparing());
    QCOMPARE(chart->comparedFunctions().size(), e["functions"].size());
    double longest = 0;
    int longest_row = 0;
    bool longest_in_b = false;
    for (size_t i = 0; i < chart->comparedFunctions().size(); ++i) {
      const auto& f = chart->comparedFunctions()[i];
      QCOMPARE(f.name, e["functions"][i]["name"].get<std::string>());
      for (bool b : {false, true})
        if ((b ? f.time_b : f.time_a) > longest) {
          longest = b ? f.time_b : f.time_a;
          longest_row = static_cast<int>(i);
          longest_in_b = b;
        }
    }
    if (longest > 0) {
      const double full = chart->barRect(longest_row, longest_in_b).width();
      QVERIFY(full > 0);
      for (size_t i = 0; i < chart->comparedFunctions().size(); ++i) {
        const auto& f = chart->comparedFunctions()[i];
        QVERIFY(std::abs(chart->barRect(static_cast<int>(i), false).width() - full * f.time_a / longest) < 1e-6 * full);
        QVERIFY(std::abs(chart->barRect(static_cast<int>(i), true).width() - full * f.time_b / longest) < 1e-6 * full);
      }
    }

    // Wait states: each kind's total in A and B, and B - A.
    const QStandardItemModel* waits = panel->waitStateTable();
    QCOMPARE(waits->rowCount(), static_cast<int>(e["wait_states"].size()));
    for (int r = 0; r < waits->rowCount(); ++r) {
      const std::string kind = waits->item(r, 0)->data(CharacteristicsPanel::KeyRole).toString().toStdString();
      for (const char* field : {"a", "b", "diff"})
        QCOMPARE(number_at(waits, r, field).toDouble(), e["wait_states"][kind][field].get<double>());
    }

    // Per rank: every rank's figures in A and B (each run's report) and B - A.
    const QStandardItemModel* per_rank = panel->perRankTable();
    QVERIFY(panel->perRankNote()->isHidden());
    QCOMPARE(per_rank->rowCount(), static_cast<int>(ja["per_rank"].size()));
    QCOMPARE(ja["per_rank"].size(), jb["per_rank"].size());
    for (int r = 0; r < per_rank->rowCount(); ++r) {
      const int rank = number_at(per_rank, r, "rank").toInt();
      auto of_rank = [rank](const nlohmann::json& list) {
        for (const auto& f : list)
          if (f["rank"].get<int>() == rank) return f;
        return nlohmann::json();
      };
      const nlohmann::json fa = of_rank(ja["per_rank"]), fb = of_rank(jb["per_rank"]);
      QVERIFY(!fa.is_null() && !fb.is_null());
      for (const analysis::RankCharacteristic& c : analysis::kRankCharacteristics) {
        if (std::string_view(c.key) == "rank") continue;
        const QString key = QString::fromUtf8(c.key);
        const double x = fa[c.key].get<double>(), y = fb[c.key].get<double>();
        QCOMPARE(number_at(per_rank, r, key + "/a").toDouble(), x);
        QCOMPARE(number_at(per_rank, r, key + "/b").toDouble(), y);
        QCOMPARE(number_at(per_rank, r, key + "/diff").toDouble(), y - x);
      }
    }
    // The comparative rows, A's and B's.
    const QStandardItemModel* comparative = panel->comparativeTable();
    QCOMPARE(comparative->rowCount(), 2 * static_cast<int>(ja["comparative"].size()));
    for (int r = 0; r < comparative->rowCount(); ++r) {
      const QString key = comparative->item(r, 0)->data(CharacteristicsPanel::KeyRole).toString();
      const nlohmann::json& run = key.endsWith("/a") ? ja : jb;
      QVERIFY(key.endsWith("/a") || key.endsWith("/b"));
      for (int c = 1; c < comparative->columnCount(); ++c) {
        const std::string field =
            comparative->headerData(c, Qt::Horizontal, CharacteristicsPanel::KeyRole).toString().toStdString();
        QCOMPARE(comparative->item(r, c)->data(CharacteristicsPanel::NumberRole).toDouble(),
                 run["comparative"][key.chopped(2).toStdString()][field].get<double>());
      }
    }
    // The Messages tab is A's (B has no timeline) and says so.
    QVERIFY(!panel->messagesNote()->isHidden());
    ++checked;
  }
  QCOMPARE(checked, size_t{3});  // the run, intervals 1 and 2
  QVERIFY(functions_checked >= 3);
}

// A against a run with intervals A lacks, nested (4 around 5) and under a
// matched interval (6 in 1): the tree holds every interval prof-analyze
// --compare lists, each once; those only in B say so, with B's value of
// every compared characteristic, under the row of their parent in B (B's
// own JSON report); selected, the panel shows B's figures with A's empty.
void GuiTest::comparison_tree_holds_every_interval_of_both_runs() {
  DemoTrace a_trace(20);
  ExtraIntervalsTrace b_trace(10);
  const nlohmann::json expected = compare_json(a_trace.dir(), b_trace.dir());
  const nlohmann::json report_b = report_json(b_trace.dir());
  QVERIFY(expected.contains("compare") && report_b.contains("intervals"));
  LoadedWindow loaded(a_trace.dir());
  MainWindow& window = loaded.window;
  window.compareWith(b_trace.dir());
  window.waitLoaded();
  QCoreApplication::processEvents();
  const auto comparison = window.comparison();
  QVERIFY(comparison);
  IntervalTreeModel* model = window.model();

  // Every row, walked from the root; each child's parent is the row above it.
  std::vector<QModelIndex> rows;
  bool parents_agree = true;
  std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
    for (int r = 0; r < model->rowCount(parent); ++r) {
      const QModelIndex child = model->index(r, 0, parent);
      parents_agree = parents_agree && child.isValid() && model->parent(child) == parent;
      rows.push_back(child);
      walk(child);
    }
  };
  walk({});
  QVERIFY(parents_agree);
  QCOMPARE(rows.size(), expected["compare"].size());
  auto reached = [&](const QModelIndex& row) { return std::find(rows.begin(), rows.end(), row) != rows.end(); };

  QComboBox* by = window.compareByBox();
  int only_b = 0, only_a = 0, matched = 0, under_only_b = 0, under_matched = 0;
  QModelIndex five;
  const nlohmann::json* five_entry = nullptr;
  for (const auto& e : expected["compare"]) {
    if (!e["a"].is_null()) {
      const QModelIndex row = model->indexOfInterval(interval_named(*comparison->a, e));
      QVERIFY(row.isValid() && reached(row));
      const QString b = row.siblingAtColumn(IntervalTreeModel::CompareB).data().toString();
      QCOMPARE(b == "only in A", e["b"].is_null());
      ++(e["b"].is_null() ? only_a : matched);
      continue;
    }
    ++only_b;
    const int b_interval = interval_named(*comparison->b, e);
    QVERIFY(b_interval > 0);
    const QModelIndex row = model->indexOfBInterval(b_interval);
    QVERIFY(row.isValid() && reached(row));
    QCOMPARE(model->onlyInBIntervalOf(row), b_interval);
    QCOMPARE(model->intervalOf(row), -1);
    QCOMPARE(row.data().toString(),
             QStringLiteral("id %1 at app.c:%2").arg(e["id"].get<int>()).arg(e["line"].get<int>()));
    QCOMPARE(row.siblingAtColumn(IntervalTreeModel::CompareA).data().toString(), QString("only in B"));
    for (int column : {int{IntervalTreeModel::ExeCount}, int{IntervalTreeModel::Efficiency},
                       int{IntervalTreeModel::ExecutionTime}, int{IntervalTreeModel::LostTime},
                       int{IntervalTreeModel::CompareDifference}, int{IntervalTreeModel::CompareRatio}})
      QVERIFY(!row.siblingAtColumn(column).data().isValid());
    for (int choice = 0; choice < by->count(); ++choice) {
      by->setCurrentIndex(choice);
      const std::string key = analysis::kMainCharacteristics[model->comparedColumn().characteristic].key;
      QCOMPARE(row.siblingAtColumn(IntervalTreeModel::CompareB).data(IntervalTreeModel::SortRole).toDouble(),
               e["b"][key].get<double>());
    }
    // Under its parent in B: that parent's own row when only B has it, else
    // the row of A's interval of the same id and call site.
    const int parent_b = report_b["intervals"][static_cast<size_t>(b_interval)]["parent"].get<int>();
    const nlohmann::json& parent_json = report_b["intervals"][static_cast<size_t>(parent_b)];
    const QModelIndex parent = model->parent(row);
    if (model->onlyInBIntervalOf(parent) >= 0) {
      QCOMPARE(model->onlyInBIntervalOf(parent), parent_b);
      ++under_only_b;
    } else {
      const auto& in_a = comparison->a->intervals[static_cast<size_t>(model->intervalOf(parent))];
      QCOMPARE(in_a.id.has_value(), !parent_json["id"].is_null());
      if (in_a.id) {
        QCOMPARE(static_cast<int>(*in_a.id), parent_json["id"].get<int>());
        QCOMPARE(in_a.line, parent_json["line"].get<int>());
        ++under_matched;
      }
    }
    if (e["id"].get<int>() == 5) {
      five = row;
      five_entry = &e;
    }
  }
  QCOMPARE(matched, 2);  // the run, interval 1
  QCOMPARE(only_a, 2);   // DemoTrace's 2 and 3
  QCOMPARE(only_b, 3);   // 4, 5 inside 4, 6 inside 1
  QCOMPARE(under_only_b, 1);
  QCOMPARE(under_matched, 1);

  // Interval 5 selected: B's figures, A's cells empty.
  QVERIFY(five.isValid() && five_entry);
  window.tree()->setCurrentIndex(window.proxy()->mapFromSource(five));
  QCoreApplication::processEvents();
  QCOMPARE(window.selectedOnlyInBInterval(), model->onlyInBIntervalOf(five));
  QCOMPARE(window.selectedInterval(), -1);
  CharacteristicsPanel* panel = window.panel();
  QVERIFY2(panel->scope().contains("only in B"), qPrintable(panel->scope()));
  const QStandardItemModel* main = panel->mainTable();
  QCOMPARE(main->columnCount(), 5);
  for (int r = 0; r < main->rowCount(); ++r) {
    const std::string key = main->item(r, 0)->data(CharacteristicsPanel::KeyRole).toString().toStdString();
    QCOMPARE(main->item(r, 1)->text(), QString("only in B"));
    QCOMPARE(main->item(r, 2)->data(CharacteristicsPanel::NumberRole).toDouble(), (*five_entry)["b"][key].get<double>());
  }
  const nlohmann::json& five_report = report_b["intervals"][static_cast<size_t>(model->onlyInBIntervalOf(five))];
  const QStandardItemModel* functions = panel->functionTable();
  QCOMPARE(functions->rowCount(), static_cast<int>(five_report["functions"].size()));
  for (int r = 0; r < functions->rowCount(); ++r) {
    QVERIFY(!number_at(functions, r, "calls_a").isValid());
    QVERIFY(!number_at(functions, r, "diff").isValid());
    bool found = false;
    for (const auto& f : five_report["functions"])
      if (f["name"].get<std::string>() == functions->item(r, 0)->text().toStdString()) {
        QCOMPARE(number_at(functions, r, "calls_b").toDouble(), f["calls"].get<double>());
        QCOMPARE(number_at(functions, r, "time_b").toDouble(), f["time"].get<double>());
        found = true;
      }
    QVERIFY(found);
  }
  const QStandardItemModel* waits = panel->waitStateTable();
  for (int r = 0; r < waits->rowCount(); ++r) {
    const std::string kind = waits->item(r, 0)->data(CharacteristicsPanel::KeyRole).toString().toStdString();
    QVERIFY(!number_at(waits, r, "a").isValid());
    QCOMPARE(number_at(waits, r, "b").toDouble(), five_report["wait_states"][kind]["total"].get<double>());
  }
}

// Close comparison after comparing (a row only in B selected last): the
// tree, every table of the panel, the chart, the notes and the window's title
// are what they were before the comparison, for the whole run and each
// interval.
void GuiTest::closing_comparison_restores_the_single_run_view() {
  DemoTrace a_trace(20);
  ExtraIntervalsTrace b_trace(10);
  LoadedWindow loaded(a_trace.dir());
  MainWindow& window = loaded.window;
  IntervalTreeModel* model = window.model();
  CharacteristicsPanel* panel = window.panel();
  auto snapshot = [&] {
    QStringList out;
    std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
      for (int r = 0; r < model->rowCount(parent); ++r) {
        QStringList cells;
        for (int c = 0; c < model->columnCount(); ++c) cells << model->index(r, c, parent).data().toString();
        out << cells.join('|');
        walk(model->index(r, 0, parent));
      }
    };
    walk({});
    QStringList header;
    for (int c = 0; c < model->columnCount(); ++c)
      header << model->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString()
             << QString::number(window.tree()->header()->visualIndex(c));
    out << header.join('|');
    for (const QStandardItemModel* m : {panel->mainTable(), panel->comparativeTable(), panel->perRankTable(),
                                        panel->functionTable(), panel->waitStateTable(), panel->waitedForTable(),
                                        panel->causedByTable()}) {
      QStringList heads;
      for (int c = 0; c < m->columnCount(); ++c)
        heads << m->headerData(c, Qt::Horizontal).toString()
              << m->headerData(c, Qt::Horizontal, CharacteristicsPanel::KeyRole).toString();
      out << heads.join('|');
      for (int r = 0; r < m->rowCount(); ++r) {
        QStringList cells;
        for (int c = 0; c < m->columnCount(); ++c) cells << (m->item(r, c) ? m->item(r, c)->text() : QString("-"));
        out << cells.join('|');
      }
    }
    for (const auto& f : panel->functionChart()->functions())
      out << QString::fromStdString(f.name) + QString::asprintf(" %f", f.time);
    out << QStringLiteral("chart comparing %1, per-rank note %2, messages note %3, function sort %4 %5, "
                          "pane %6, compare by %7")
               .arg(panel->functionChart()->comparing())
               .arg(panel->perRankNote()->isHidden())
               .arg(panel->messagesNote()->isHidden())
               .arg(panel->functionView()->horizontalHeader()->sortIndicatorSection())
               .arg(panel->functionView()->horizontalHeader()->sortIndicatorOrder())
               .arg(window.comparisonPane()->isVisible())
               .arg(window.compareByBox()->isVisible());
    out << panel->title() << panel->scope() << window.windowTitle();
    return out;
  };
  const auto& a = *model->analysis();
  std::map<int, QStringList> before;
  for (size_t i = 0; i < a.intervals.size(); ++i) {
    window.selectInterval(static_cast<int>(i), false);
    before[static_cast<int>(i)] = snapshot();
  }
  QCOMPARE(before.size(), size_t{4});
  window.selectInterval(0, false);

  window.compareWith(b_trace.dir());
  window.waitLoaded();
  QCoreApplication::processEvents();
  QVERIFY(window.comparison());
  QVERIFY(window.closeComparisonAction()->isEnabled());
  QVERIFY(snapshot() != before[0]);  // the comparison shows otherwise
  // Interval 4, only in B, selected last.
  int four = -1;
  for (size_t i = 0; i < window.comparison()->b->intervals.size(); ++i)
    if (window.comparison()->b->intervals[i].id == std::optional<uint16_t>(4)) four = static_cast<int>(i);
  window.tree()->setCurrentIndex(window.proxy()->mapFromSource(model->indexOfBInterval(four)));
  QCOMPARE(window.selectedOnlyInBInterval(), four);
  const std::weak_ptr<const prof::analysis::Analysis> b_analysis = window.comparison()->b;

  window.closeComparisonAction()->trigger();
  // (Run B's load may still be writing its window index, holding its session.)
  for (prof::gui::TraceLoader* loader : window.findChildren<prof::gui::TraceLoader*>()) loader->wait_background();
  QCoreApplication::processEvents();
  QVERIFY(!window.comparison());
  QVERIFY2(b_analysis.expired(), "the closed comparison's run B is still held");
  QVERIFY(!window.closeComparisonAction()->isEnabled());
  QCOMPARE(window.selectedOnlyInBInterval(), -1);
  QCOMPARE(window.selectedInterval(), 0);  // the row is gone: the whole run
  QCOMPARE(snapshot(), before[0]);
  for (const auto& [interval, shown] : before) {
    window.selectInterval(interval, false);
    QCOMPARE(snapshot(), shown);
  }
}

void GuiTest::summaries_keep_the_wait_overlay_as_a_fraction() {
  LateSenderPairs trace(160, 80);
  std::string error;
  std::shared_ptr<analysis::Timeline> timeline = analysis::Timeline::open(trace.dir(), &error);
  QVERIFY2(timeline, error.c_str());
  QVERIFY(timeline->build(&error));
  // Brute force: each row's waits as the timeline lists them (the analysis's
  // PotentSync, Timeline.WaitsOfARankAreTheAnalysisPotentSync), their union
  // clipped to a bucket.
  std::vector<std::vector<std::pair<double, double>>> waits(timeline->rows().size());
  for (const auto& m : timeline->messages())
    waits[m.recv_row].emplace_back(ns(static_cast<uint64_t>(m.issue_enter)), ns(static_cast<uint64_t>(m.issue_enter) + m.wait));
  for (const auto& c : timeline->collectives())
    for (const auto& m : c.members) waits[m.row].emplace_back(ns(static_cast<uint64_t>(m.enter)), ns(static_cast<uint64_t>(m.enter) + m.wait));
  auto inside = [&](size_t row, double from, double to) { return test::union_inside(waits[row], from, to); };
  TimelineView view;
  view.resize(400, 150);
  view.setTimeline(timeline);
  // Every summary drawn at each 5th column: its bucket's fraction is the
  // rows' wait inside it over the rows' time.
  auto check = [&](const char* what) -> int {
    view.grab();
    const QRect plot = view.plotRect();
    int waiting = 0, checked = 0;
    for (int y = plot.top(); y <= plot.bottom(); ++y)
      for (int x = plot.left(); x <= plot.right(); x += 5) {
        const auto w = view.summaryWaitAt(QPoint(x, y));
        if (!w) continue;
        double expected = 0;
        for (size_t k = 0; k < w->rows; ++k) expected += inside(view.shownRows()[w->first_row + k], w->from, w->to);
        expected /= static_cast<double>(w->rows) * (w->to - w->from);
        if (std::abs(w->fraction - expected) > 1e-5) {
          qWarning() << what << "at" << x << y << "fraction" << w->fraction << "brute force" << expected;
          return -1;
        }
        ++checked;
        waiting += w->fraction > 0;
      }
    return checked > 0 && waiting > 0 ? waiting : -1;
  };
  // Groups of 1 or 2 ranks a pixel row, the whole run.
  view.showAll();
  view.grab();
  QVERIFY(view.grouped());
  QCOMPARE(view.rowsPerGroup(), size_t{2});
  QVERIFY(check("groups, whole run") > 0);
  // Zoomed into an iteration's Barrier: rank a waits from t + 600 us until
  // a + 1 enters; over [600, 640) us, a group of one receiving rank waits
  // all the time, and the overlay covers it in the wait colour.
  view.setRange(ns(1010 * test::kUs + 600 * test::kUs), ns(1010 * test::kUs + 640 * test::kUs));
  QVERIFY(check("groups, in a Barrier") > 0);
  const QImage image = view.grab().toImage();
  std::optional<QPoint> alone;
  for (int y = view.plotRect().top(); y <= view.plotRect().bottom() && !alone; ++y) {
    const QPoint at(view.plotRect().center().x(), y);
    const auto w = view.summaryWaitAt(at);
    if (w && w->rows == 1 && timeline->rows()[view.shownRows()[w->first_row]].rank % 2 == 0) {
      QCOMPARE(w->fraction, 1.0);
      alone = at;
    }
  }
  QVERIFY(alone.has_value());
  QCOMPARE(image.pixelColor(*alone), prof::gui::waiting_color());
  // A row drawn from its summaries (more calls than two a column).
  view.showOnlyRank(0);
  view.showAll();
  view.resize(200, 150);
  view.grab();
  QVERIFY(!view.grouped());
  QCOMPARE(view.summarizedRows(), size_t{1});
  QVERIFY(check("a summarized row") > 0);
}

void GuiTest::load_progress_is_one_figure() {
  // The timeline's corner shows its source's figure, not the build's own.
  ManyRanksTrace trace(4, 50);
  {
    std::string error;
    std::shared_ptr<analysis::Timeline> timeline = analysis::Timeline::open(trace.dir().toStdString(), &error);
    QVERIFY2(timeline, error.c_str());
    QVERIFY(timeline->build(&error));
    TimelineView view;
    view.setTimeline(timeline);
    QCOMPARE(view.progressText(), QString());
    view.setProgressSource([] { return std::optional<double>(0.37); });
    QCOMPARE(view.progressText(), QStringLiteral("loading 37%"));
  }
  // A window loading a trace: its corner and its status bar give one figure,
  // the loader's (the corner read between two reads of the bar's source),
  // from the first moment of the load to its end, never decreasing.
  MainWindow window;
  QStringList problems;
  window.setQuiet([&](const QString& text) { problems << text; });
  window.show();
  auto* view = window.findChild<TimelineView*>();
  auto* loader = window.findChild<prof::gui::TraceLoader*>();
  QVERIFY(view && loader);
  window.openTrace(trace.dir());
  int last = 0, samples = 0;
  while (loader->busy()) {
    const double before = loader->progress();
    const QString text = view->progressText();
    const double after = loader->progress();
    const QRegularExpressionMatch m = QRegularExpression("^loading (\\d+)%$").match(text);
    QVERIFY2(m.hasMatch(), qPrintable("corner: '" + text + "'"));
    const int shown = m.captured(1).toInt();
    QVERIFY2(static_cast<int>(before * 100) <= shown && shown <= static_cast<int>(after * 100),
             qPrintable(QStringLiteral("%1 <= %2 <= %3").arg(before).arg(shown).arg(after)));
    QVERIFY(shown >= last);
    last = shown;
    ++samples;
    QTest::qWait(2);
  }
  QVERIFY(samples >= 1);
  window.waitLoaded();
  QCOMPARE(view->progressText(), QString());
  QVERIFY2(problems.isEmpty(), qPrintable(problems.join("; ")));
}

void GuiTest::summarized_rows_keep_their_nesting_bands() {
  // 1000 iterations, 6 records each a rank, in 618 px: drawn from summaries.
  DemoTrace trace(1000);
  std::string error;
  std::shared_ptr<analysis::Timeline> timeline = analysis::Timeline::open(trace.dir().toStdString(), &error);
  QVERIFY2(timeline, error.c_str());
  QVERIFY(timeline->build(&error));
  TimelineView view;
  view.setTimeline(timeline);
  // The whole run, and iterations 50 to 350 (cut at both edges); then the
  // whole run in 118 px, some 17 executions a column a row: past 8 in a
  // column the layer skips to the next one, and every level still shows.
  struct Case {
    int width;
    double from, to;
  };
  for (const Case& k : {Case{700, 0, timeline->end()},
                        Case{700, ns(kLoopStart + 50 * kPeriod + 350 * test::kUs), ns(kLoopStart + 350 * kPeriod + 850 * test::kUs)},
                        Case{200, 0, timeline->end()}}) {
    const double from = k.from, to = k.to;
    view.resize(k.width, 300);
    view.setRange(from, to);
    const QRect plot = view.plotRect();
    const QImage image = view.grab().toImage();
    QCOMPARE(view.summarizedRows(), size_t{2});
    QVERIFY(view.rowHeight() >= TimelineView::kBandRowHeight);
    // Per row and level, the pixel columns the bands cover equal those the
    // executions written cover (each drawn from floor(x of its start) to
    // ceil(x of its end), at least a column).
    using Columns = std::map<std::pair<size_t, int>, std::set<int>>;
    auto cover = [&](Columns& c, size_t row, int level, double start, double end) {
      if (!(start < to && end > from)) return;
      const int x0 = static_cast<int>(std::floor(view.xOf(start))) - plot.left();
      const int x1 = std::max(x0 + 1, static_cast<int>(std::ceil(view.xOf(end))) - plot.left());
      for (int x = std::max(0, x0); x < std::min(plot.width(), x1); ++x) c[{row, level}].insert(x);
    };
    Columns expected, drawn;
    std::map<size_t, std::vector<int64_t>> open;
    for (const Written& w : trace.written()) {
      if (w.function == "interval begin") {
        open[w.row].push_back(w.enter);
      } else if (w.function == "interval end") {
        const int64_t start = open[w.row].back();
        open[w.row].pop_back();
        cover(expected, w.row, static_cast<int>(open[w.row].size()) + 1, ns(static_cast<uint64_t>(start)), ns(static_cast<uint64_t>(w.enter)));
      }
    }
    for (const auto& b : view.drawnBands()) cover(drawn, b.row, b.level, b.start, b.end);
    QCOMPARE(expected.size(), size_t{2 * 2});  // both rows, levels 1 and 2
    QVERIFY(drawn == expected);
    // Level 1's band is drawn over the pale track at a column it covers.
    const int x = *expected[{0, 1}].begin();
    QVERIFY(image.pixel(plot.left() + x, plot.top() + 1) != qRgb(225, 228, 236));
  }
}

void GuiTest::group_frames_read_each_bucket_once() {
  // 1200 ranks at 1600x900: groups of one or two ranks a pixel row, with waits.
  LateSenderPairs trace(1200, 3);
  std::string error;
  std::shared_ptr<analysis::Timeline> timeline = analysis::Timeline::open(trace.dir(), &error);
  QVERIFY2(timeline, error.c_str());
  QVERIFY(timeline->build(&error));
  const size_t rows = timeline->rows().size();
  TimelineView view;
  view.resize(1600, 900);
  view.setTimeline(timeline);
  view.showAll();
  const double end = view.to();
  // What a fresh view draws at the view's range, rows and scroll: the oracle
  // for the buckets kept from frame to frame.
  auto fresh = [&] {
    TimelineView other;
    other.resize(view.size());
    other.setTimeline(timeline);
    other.setRowZoom(view.rowZoom());
    other.setVerticalScroll(view.verticalScroll());
    other.setRange(view.from(), view.to());
    return other.grab().toImage();
  };
  auto grid = [&] {  // (width, cells in view) of the buckets drawn
    const auto w = view.summaryWaitAt(view.plotRect().center());
    const double size = w ? w->to - w->from : 0;
    return std::make_pair(size, size > 0 ? std::ceil(view.to() / size) - std::floor(view.from() / size) : 0.0);
  };
  view.setRange(0, end / 2);
  view.grab();
  QVERIFY(view.grouped());
  QVERIFY(view.rowsPerGroup() > 1);
  const auto [size, cells] = grid();
  QVERIFY(size > 0 && cells > 100);
  // The first frame reads each row's buckets in view once.
  QCOMPARE(view.groupCellsRead(), static_cast<uint64_t>(rows * cells));
  // Drawn again, or zoomed in on the same grid: nothing read.
  view.grab();
  QCOMPARE(view.groupCellsRead(), uint64_t{0});
  view.setRange(end / 8, end / 4);
  view.grab();
  QCOMPARE(view.groupCellsRead(), uint64_t{0});
  QCOMPARE(view.grab().toImage(), fresh());
  // A pan by a tenth of the width reads only the buckets that came into
  // view: rows x new columns, however many buckets the frame shows.
  view.setRange(0, end / 2);
  view.grab();
  const double to = view.to();
  view.setRange(view.from() + end / 20, to + end / 20);
  const QImage panned = view.grab().toImage();
  QCOMPARE(grid().first, size);
  const double new_cells = std::ceil(view.to() / size) - std::ceil(to / size);
  QVERIFY(new_cells > 0 && new_cells < cells / 5);
  QCOMPARE(view.groupCellsRead(), static_cast<uint64_t>(rows * new_cells));
  QCOMPARE(panned, fresh());
  // Rows zoomed: new groups, read once; a scroll of 10 px reads the rows of
  // the 10 pixel rows that came into sight.
  view.setRowZoom(1.5);
  view.grab();
  QVERIFY(view.grouped() && view.rowsOverflow());
  const auto groups = view.visibleGroups();
  size_t in_sight = 0;
  for (const auto& [first, last] : groups) in_sight += last - first;
  QCOMPARE(view.groupCellsRead(), static_cast<uint64_t>(in_sight * grid().second));
  view.setVerticalScroll(view.verticalScroll() + 10);
  const QImage scrolled = view.grab().toImage();
  size_t came = 0;
  for (const auto& [first, last] : view.visibleGroups())
    if (first >= groups.back().second) came += last - first;
  QVERIFY(came > 0 && came < 30);
  QCOMPARE(view.groupCellsRead(), static_cast<uint64_t>(came * grid().second));
  QCOMPARE(scrolled, fresh());
}
