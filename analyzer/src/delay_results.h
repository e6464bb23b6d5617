// The root causes of waits and the critical path, after the pass
// (delay_analysis.cpp, critical_path.cpp; the engine: engine.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "global_tree.h"
#include "log_spill.h"
#include "interpret.h"
#include "prof/analysis/analysis.h"

namespace prof::analysis::detail {

struct RankOutcome;

// The root causes of waits and the critical path (delay_log.h,
// docs/metrics.md), computed after the pass over a whole run from the ranks'
// logs: per node of the tree across ranks, the causes of its waits
// (delay_analysis.cpp) and its time on the critical path (critical_path.cpp).
//
// Invariants: both are exclusive of nested nodes until delay_figures() rolls
// them up; they depend only on the logs (sorted by delay_analysis()), not on
// how workers or processes shared the ranks.
class DelayResults {
 public:
  // Sorts the ranks' logs and charges each wait to its causes, on `threads`
  // threads (the figures the same bytes for any). `spill`: where the logs
  // are mapped from (null: in memory), its resident pages given back as the
  // analysis goes (resident_log_bytes).
  void delay_analysis(const std::vector<RankOutcome*>& ranks, const GlobalTree& tree,
                      const WorldIndex& index_of_world, LogSpill* spill, unsigned threads);
  // After delay_analysis() (the logs sorted).
  void critical_path(const std::vector<RankOutcome*>& ranks, const GlobalTree& tree,
                     const WorldIndex& index_of_world, LogSpill* spill);
  // About how much of the mapped logs the analyses keep resident over
  // `ranks` ranks: they give the mapping's pages back each time they have
  // read about this much. 16 KiB a rank, from 16 to 64 MiB: every rank's
  // searches of its partners' logs (a collective's last member, a sender)
  // read a page or two of each partner's log again and again, and the kernel
  // maps 64 KiB around each; each time the pages go back, that set is read
  // again, one fault a page: at 4096 ranks a flat 16 MiB made 25 K of the
  // run's 56 K faults (docs/performance.md), while at a few ranks a larger
  // budget only holds more of the logs read in order.
  static constexpr size_t kResidentLogBytesPerRank = size_t{16} << 10;
  static constexpr size_t kResidentLogBytesMin = size_t{16} << 20, kResidentLogBytesMax = size_t{64} << 20;
  static size_t resident_log_bytes(size_t ranks) {
    return std::clamp(ranks * kResidentLogBytesPerRank, kResidentLogBytesMin, kResidentLogBytesMax);
  }
  // Both, rolled up, into the report's intervals (`index_of`: global node -> index).
  void delay_figures(Analysis& a, const std::vector<int>& index_of, const GlobalTree& tree) const;

 private:
  struct CauseAcc {
    uint32_t node;  // global node that caused
    int32_t rank;   // world rank on which it did
    double ns;
  };
  static uint32_t logged_node(const RankOutcome& r, uint32_t context);
  std::vector<std::vector<CauseAcc>> caused_by_;
  std::vector<double> critical_ns_;
  double run_span_ns_ = 0;
};

}  // namespace prof::analysis::detail
