#include "trace_session.h"

#include <QFileInfo>
#include <map>
#include <tuple>

#include "prof/analysis/report.h"

namespace prof::gui {

std::string site_label(const analysis::IntervalNode& n) {
  if (!n.source_file.empty()) return n.source_file + ":" + std::to_string(n.line);
  return n.source_label();
}

QString interval_name(const analysis::IntervalNode& n) {
  if (!n.id)
    return QStringLiteral("whole run (%1:%2)").arg(QString::fromStdString(n.source_label()).section('/', -1)).arg(n.line);
  // The file's name only: the tree stays narrow (the tooltip has the path).
  const QString site = QString::fromStdString(site_label(n));
  return QStringLiteral("id %1 at %2").arg(*n.id).arg(site.section('/', -1));
}

QString seconds_text(double s) { return QString::fromStdString(analysis::figure_text(s)); }

QString duration_text(double ns) {
  const double a = ns < 0 ? -ns : ns;
  if (a < 1e3) return QString::asprintf("%.0f ns", ns);
  if (a < 1e6) return QString::asprintf("%.3f us", ns / 1e3);
  if (a < 1e9) return QString::asprintf("%.3f ms", ns / 1e6);
  return QString::asprintf("%.6f s", ns / 1e9);
}

void TraceSession::map_nodes() {
  interval_of_node.clear();
  node_of_interval.clear();
  if (!timeline || !analysis || analysis->intervals.empty()) return;
  const auto nodes = timeline->nodes();
  const auto& intervals = analysis->intervals;
  interval_of_node.assign(nodes.size(), -1);
  node_of_interval.assign(intervals.size(), -1);
  // (parent interval, id, site) -> interval.
  std::map<std::tuple<int, uint32_t, std::string>, int> by_key;
  for (size_t i = 1; i < intervals.size(); ++i) {
    const auto& n = intervals[i];
    by_key[{n.parent, n.id ? *n.id : 0u, site_label(n)}] = static_cast<int>(i);
  }
  if (!nodes.empty()) {
    interval_of_node[0] = 0;
    node_of_interval[0] = 0;
  }
  // A node's parent precedes it (the timeline creates parents first).
  for (size_t k = 1; k < nodes.size(); ++k) {
    const auto& node = nodes[k];
    if (node.parent < 0 || static_cast<size_t>(node.parent) >= k) continue;
    const int parent = interval_of_node[static_cast<size_t>(node.parent)];
    if (parent < 0) continue;
    auto it = by_key.find({parent, node.id, timeline->site(node.site)});
    if (it == by_key.end()) continue;
    interval_of_node[k] = it->second;
    node_of_interval[static_cast<size_t>(it->second)] = static_cast<int>(k);
  }
}

QString TraceSession::problem_text() const {
  QStringList lines;
  if (!timeline && timeline_wanted) lines << QStringLiteral("The timeline could not be read: %1").arg(timeline_error);
  else if (!timeline_error.isEmpty()) lines << QStringLiteral("The timeline could not be fully built: %1").arg(timeline_error);
  if (analysis) {
    const auto& a = *analysis;
    for (const auto& e : a.errors) lines << QString::fromStdString(e);
    if (a.damaged || a.cut_short || !a.usable()) {
      for (const auto& w : a.warnings) {
        QString line = QStringLiteral("%1 (%2)").arg(QString::fromStdString(w.category)).arg(w.count);
        for (const auto& e : w.examples) line += QStringLiteral("\n    ") + QString::fromStdString(e);
        lines << line;
      }
    }
    if (!a.usable() && lines.isEmpty()) lines << QStringLiteral("Nothing usable in the trace.");
    if (lines.isEmpty()) return {};
    if (a.usable()) {
      lines << QStringLiteral("Salvaged: %1 of %2 ranks, %3 events, %4 intervals%5.")
                   .arg(a.processors)
                   .arg(a.world_size)
                   .arg(a.stats.events)
                   .arg(a.intervals.size())
                   .arg(a.complete ? QString() : QStringLiteral(", a run that did not end cleanly"));
    } else {
      lines << QStringLiteral("Nothing could be salvaged.");
    }
  }
  if (lines.isEmpty()) return {};
  return QStringLiteral("Trace %1:\n").arg(dir) + lines.join('\n');
}

}  // namespace prof::gui
