// Time per MPI function and per kind over some rows of a timeline and a range
// [from, to) of it (Perfetto's area selection), and the panel that shows it.
//
// A row with at most its share of `call_budget` calls overlapping the range is
// read call by call: a call counts its overlap with the range, user code the
// overlap of the gaps between consecutive calls (the row's previous and next
// calls included, as the timeline layer defines user time; a range with no
// call of a row inside counts no user time for it). A row with more calls is
// taken from the level-of-detail summaries (per kind only, so the function
// table leaves it out): buckets inside the range count whole, the one at each
// edge in proportion to its overlap, so it is exact up to those two buckets.
// Cost: O(budget + rows x buckets), whatever the trace's size.
#pragma once

#include <QWidget>
#include <string>
#include <vector>

#include "prof/analysis/timeline.h"

class QLabel;
class QTableWidget;

namespace prof::gui {

struct RangeStatistics {
  struct Function {
    std::string name;
    analysis::TimelineKind kind = analysis::TimelineKind::OtherMpi;
    uint64_t calls = 0;  // overlapping the range
    double time = 0;     // ns inside the range
  };
  double from = 0, to = 0;
  size_t rows = 0;
  size_t rows_from_summaries = 0;
  double summary_bucket = 0;             // widest bucket of those rows (ns)
  std::vector<Function> functions;       // rows read call by call; by time, longest first
  double kind_time[analysis::kTimelineKinds] = {};  // every row (ns)
};

RangeStatistics range_statistics(const analysis::Timeline& timeline, const std::vector<size_t>& rows, double from,
                                 double to, uint64_t call_budget = 200000, uint32_t buckets = 2000);

class RangeStatisticsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RangeStatisticsPanel(QWidget* parent = nullptr);
  void showStatistics(const RangeStatistics& stats);
  const RangeStatistics& statistics() const { return stats_; }
  QTableWidget* functionTable() const { return functions_; }
  QTableWidget* kindTable() const { return kinds_; }

 private:
  RangeStatistics stats_;
  QLabel* header_;
  QTableWidget* functions_;
  QTableWidget* kinds_;
};

}  // namespace prof::gui
