// Every characteristic the reports show, in one table per figure family
// (docs/metrics.md): its JSON key, its label, and where its value is. The text
// report, the JSON report and prof-gui's panel all print from these tables, so
// a characteristic is added, renamed or reordered here and nowhere else.
//
//  - kMainCharacteristics: the "---Main Characteristics---" block, in the
//    thesis's order. `in_text_report` is false for the one line the thesis's
//    report does not print (Comm. Time, which JSON and the GUI show).
//  - kRankCharacteristics: the per-rank table (text "Characteristics per
//    Processor", JSON `per_rank`, the GUI's "Per rank" tab), in one order.
//  - kComparativeCharacteristics: the "Comparative Characteristics" rows,
//    indexed by `Comparative`.
#pragma once

#include <array>
#include <cstddef>

#include "prof/analysis/analysis.h"

namespace prof::analysis {

struct MainCharacteristic {
  const char* key;          // JSON key in `main`
  const char* label;        // the text report's line (and the GUI's row) before the value
  const char* text_suffix;  // printed after the value ("" for most)
  double (*value)(const MainFigures&);
  bool integer;             // printed as a count, not as seconds
  bool in_text_report;      // the thesis's block prints it
  // How two runs compare it (compare.h): `summed` ones are sums over ranks,
  // compared also as means per rank when the rank counts differ; the count
  // of processors is a difference of the runs, not of an interval.
  bool compared;
  bool summed;
  // The label without the text report's nesting marks ("---", "*****").
  constexpr const char* name() const {
    const char* n = label;
    while (*n == '-' || *n == '*') ++n;
    return n;
  }
};

inline constexpr MainCharacteristic kMainCharacteristics[] = {
    {"efficiency", "Parallelization Efficiency", "", [](const MainFigures& m) { return m.efficiency; }, false, true, true, false},
    {"execution_time", "Execution Time", "", [](const MainFigures& m) { return m.execution_time; }, false, true, true, false},
    {"processors", "Processors", "", [](const MainFigures& m) { return double(m.processors); }, true, true, false, false},
    {"total_time", "Total Time", "", [](const MainFigures& m) { return m.total_time; }, false, true, true, true},
    {"productive_time", "Productive Time", " (CPU MPI)", [](const MainFigures& m) { return m.productive_time; },
     false, true, true, true},
    {"lost_time", "Lost Time", "", [](const MainFigures& m) { return m.lost_time; }, false, true, true, true},
    {"mpi_time", "---MPI Time", "", [](const MainFigures& m) { return m.mpi_time; }, false, true, true, true},
    {"idle_time", "---Idle Time", "", [](const MainFigures& m) { return m.idle_time; }, false, true, true, true},
    {"comm_time", "---Comm. Time", "", [](const MainFigures& m) { return m.comm_time; }, false, false, true, true},
    {"sendrecv_time", "*****SendRecv Time", "", [](const MainFigures& m) { return m.sendrecv_time; }, false, true, true, true},
    {"collective_time", "*****CollectiveAll Time", "", [](const MainFigures& m) { return m.collective_time; },
     false, true, true, true},
    {"alltoall_time", "*****AllToAll Time", "", [](const MainFigures& m) { return m.alltoall_time; }, false, true, true, true},
    {"potential_sync", "Potential Sync.", "", [](const MainFigures& m) { return m.potential_sync; }, false, true, true, true},
    {"time_variation", "Time Variation", "", [](const MainFigures& m) { return m.time_variation; }, false, true, true, true},
    {"time_of_start", "Time of Start", "", [](const MainFigures& m) { return m.time_of_start; }, false, true, true, true},
};

struct RankCharacteristic {
  const char* key;     // JSON key in `per_rank`
  const char* column;  // the text table's and the GUI's column header
  double (*value)(const RankFigures&);
  bool integer;
};

inline constexpr RankCharacteristic kRankCharacteristics[] = {
    {"rank", "Nproc", [](const RankFigures& f) { return double(f.rank); }, true},
    {"executions", "EXE_Count", [](const RankFigures& f) { return double(f.executions); }, true},
    {"time", "Time", [](const RankFigures& f) { return f.time; }, false},
    {"cpu_time", "CPU", [](const RankFigures& f) { return f.cpu; }, false},
    {"mpi_time", "MPI", [](const RankFigures& f) { return f.mpi; }, false},
    {"idle_time", "Idle", [](const RankFigures& f) { return f.idle; }, false},
    {"lost_time", "Lost", [](const RankFigures& f) { return f.lost; }, false},
    {"comm_time", "Comm", [](const RankFigures& f) { return f.comm; }, false},
    {"sendrecv_time", "SendRecv", [](const RankFigures& f) { return f.sendrecv; }, false},
    {"collective_time", "CollectiveAll", [](const RankFigures& f) { return f.collective; }, false},
    {"alltoall_time", "AllToAll", [](const RankFigures& f) { return f.alltoall; }, false},
    {"potential_sync", "PotentSync", [](const RankFigures& f) { return f.potential_sync; }, false},
    {"time_variation", "TimeVariation", [](const RankFigures& f) { return f.time_variation; }, false},
    {"time_of_start", "TimeOfStart", [](const RankFigures& f) { return f.time_of_start; }, false},
    {"calls", "Calls", [](const RankFigures& f) { return double(f.calls); }, true},
};

struct ComparativeCharacteristic {
  Comparative which;
  const char* key;    // JSON key in `comparative`
  const char* label;  // the text report's row
  double (*value)(const RankFigures&);
};

inline constexpr ComparativeCharacteristic kComparativeCharacteristics[] = {
    {Comparative::Lost, "lost_time", "Lost Time", [](const RankFigures& f) { return f.lost; }},
    {Comparative::Idle, "idle_time", "Idle Time", [](const RankFigures& f) { return f.idle; }},
    {Comparative::Comm, "comm_time", "Comm. Time", [](const RankFigures& f) { return f.comm; }},
    {Comparative::Mpi, "mpi_time", "MPI Time", [](const RankFigures& f) { return f.mpi; }},
    {Comparative::PotentialSync, "potential_sync", "Potential Sync.", [](const RankFigures& f) { return f.potential_sync; }},
    {Comparative::TimeVariation, "time_variation", "Time variation", [](const RankFigures& f) { return f.time_variation; }},
    {Comparative::TimeOfStart, "time_of_start", "Time of Start", [](const RankFigures& f) { return f.time_of_start; }},
};
static_assert(std::size(kComparativeCharacteristics) == kComparativeCount);

constexpr bool comparative_table_in_enum_order() {
  for (size_t i = 0; i < std::size(kComparativeCharacteristics); ++i)
    if (static_cast<size_t>(kComparativeCharacteristics[i].which) != i) return false;
  return true;
}
static_assert(comparative_table_in_enum_order(), "kComparativeCharacteristics is indexed by Comparative");

}  // namespace prof::analysis
