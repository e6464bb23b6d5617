// What the window shows of one trace: the analysis (interval tree and
// characteristics) and the timeline (calls, pyramid, executions, messages),
// both made by the analyzer library, plus the map between their node numbers.
//
// The timeline keys an interval node as the analysis does, (parent node,
// interval id, call site), but numbers nodes in the order it meets them; the
// map pairs them by walking down from the roots (node 0 of each).
#pragma once

#include <QString>
#include <memory>
#include <string>
#include <vector>

#include "prof/analysis/analysis.h"
#include "prof/analysis/timeline.h"

namespace prof::gui {

struct TraceSession {
  QString dir;
  std::shared_ptr<analysis::Timeline> timeline;        // null when it could not be opened
  bool timeline_wanted = true;  // false: an analysis-only load (a comparison's B)
  std::shared_ptr<const analysis::Analysis> analysis;  // null until analyzed
  QString timeline_error;  // why the timeline could not be opened, or was not fully built
  std::vector<int> interval_of_node;  // timeline node -> analysis interval (-1: none)
  std::vector<int> node_of_interval;  // analysis interval -> timeline node (-1: none)

  // Fills the two maps from the timeline's nodes and the analysis's intervals.
  void map_nodes();
  // A problem worth a dialog: unusable, damaged or cut short; "" when none.
  QString problem_text() const;
};

// How the timeline names a call site ("file:line", else where the address is).
std::string site_label(const analysis::IntervalNode& n);
// "id 3 at app.c:100" / "whole run (app)".
QString interval_name(const analysis::IntervalNode& n);
// Seconds as the text report prints them (analysis::figure_text).
QString seconds_text(double s);
// A duration in the unit that suits it ("1.234 ms").
QString duration_text(double ns);

}  // namespace prof::gui
