// Two runs compared (`prof-analyze --compare A B`, docs/interfaces.md): what
// differs in what they ran under, then per interval each main characteristic
// of both, B - A and B / A.
//
// Intervals are matched as tree nodes: by id and call site (file and line,
// or the unresolved address) under the same parent (B's match of the A
// node's parent), the k-th of a key there in A's tree order with the k-th of
// B's; the roots (the whole runs) always match. Matched intervals,
// the roots among them, come by the change in lost time, largest |B - A|
// first (ties in A's tree order);
// nodes found in one run only are listed apart. Runs of different rank counts
// are compared by totals and by means over ranks (per-rank values are not
// compared).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "prof/analysis/analysis.h"

namespace prof::analysis {

// The characteristics a comparison shows are the main characteristics
// table's (characteristics.h) marked `compared`, in its order.
// The one the matched intervals are sorted by.
inline constexpr const char* kCompareSortKey = "lost_time";

// One thing the two runs' `run` records (or their rank counts) disagree on;
// an empty side is absent there.
struct RunDifference {
  std::string what;  // "ranks", "library_version", "PROF_BCAST", "UCX_TLS", ...
  std::string a, b;
};

struct ComparedInterval {
  std::optional<uint16_t> id;  // none for the root
  std::string source_file;     // IntervalNode::source_label()
  int line = 0;
  int level = 0;
  const IntervalNode* a = nullptr;  // null: only in B
  const IntervalNode* b = nullptr;  // null: only in A
};

struct Comparison {
  std::vector<RunDifference> differences;
  std::vector<ComparedInterval> matched;  // by |change in lost time|, the root among them
  std::vector<ComparedInterval> only_a, only_b;  // each in its run's tree order
  int processors_a = 0, processors_b = 0;
  bool waits_known = true;  // both runs' wait states were computed (Analysis::waits_known)
  bool functions_known = true;  // both runs' function profiles were (Analysis::functions_known)
  bool same_ranks() const { return processors_a == processors_b; }
};

// Both analyses usable.
Comparison compare(const Analysis& a, const Analysis& b);

// One MPI function of a matched interval in both runs (zero where a run did
// not call it).
struct ComparedFunction {
  std::string name;
  uint64_t calls_a = 0, calls_b = 0;
  double time_a = 0, time_b = 0;
  uint64_t bytes_a = 0, bytes_b = 0;
};
// The functions either run called in the interval, the largest |change in
// time| first, ties by name.
std::vector<ComparedFunction> compare_functions(const IntervalNode& a, const IntervalNode& b);

// What the text adds to each matched interval (JSON always has both).
struct CompareTextOptions {
  bool functions = false;    // `--functions`: "---MPI Functions---"
  bool wait_states = false;  // `--wait-states`: "---Wait States---"
};

// What the two runs' records disagree on: the rank and host counts, the MPI
// library and its version, the transport and its version, the command, every
// PROF_* setting (PROF_OUTPUT aside: two traces always live in two places)
// and every recorded variable of the MPI library and its transport.
std::vector<RunDifference> run_differences(const Analysis& a, const Analysis& b);

// `a_name`, `b_name`: how the runs are named (their trace directories).
// The JSON, and the text with opt.wait_states, compare the wait states:
// std::logic_error where they were not computed (Comparison::waits_known);
// the same for the function profiles, which the JSON and the text with
// opt.functions compare (Comparison::functions_known).
void write_compare_text(const Comparison& c, const std::string& a_name, const std::string& b_name,
                        std::ostream& out, const CompareTextOptions& opt = {});
void write_compare_json(const Comparison& c, const Analysis& a, const Analysis& b,
                        const std::string& a_name, const std::string& b_name, std::ostream& out);

}  // namespace prof::analysis
