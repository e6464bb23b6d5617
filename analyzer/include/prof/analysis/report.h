// Writers of an Analysis: the interval analyzer's text report and the JSON
// report (docs/metrics.md, docs/interfaces.md). Pure formatting: no analysis here.
#pragma once

#include <iterator>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "prof/analysis/analysis.h"

namespace prof::analysis {

// The outputs prof-analyze writes from an Analysis, and which of its
// optional figures each prints: the one table that decides what the command
// computes (figures_needed). A text report is Text (or TextWaitStates),
// plus TextFunctions with --functions or --callsites (a comparison's, with
// --functions). Its --ranks and per-rank tables, and the hang report (the
// calls in flight and the cycles of ranks waiting for each other), print
// none of them; the Chrome trace and the OTF2 archive read the trace itself
// (OTF2 also the run's end and clock, always there).
enum class Output : int {
  Text,                   // the text report
  TextWaitStates,         // the text report with --wait-states
  TextFunctions,          // the text report's --functions or --callsites lines, the comparison's --functions
  Json,                   // the JSON report (wait_states, waited_for, caused_by, critical_path_s, functions, callsites)
  CompareText,            // --compare, text
  CompareTextWaitStates,  // --compare --wait-states, text
  CompareJson,            // --compare, JSON (wait_states and functions always)
  ChromeTrace,
  Otf2,
};
struct FiguresNeeded {
  bool wait_states = false;       // Options::wait_states
  bool delay_analysis = false;    // Options::delay_analysis (root causes, critical path)
  bool function_profile = false;  // Options::function_profile
};
inline constexpr FiguresNeeded kFiguresNeeded[] = {
    /* Text */ {false, false, false},
    /* TextWaitStates */ {true, true, false},
    /* TextFunctions */ {false, false, true},
    /* Json */ {true, true, true},
    /* CompareText */ {false, false, false},
    /* CompareTextWaitStates */ {true, false, false},  // (root causes are not compared)
    /* CompareJson */ {true, false, true},
    /* ChromeTrace */ {false, false, false},
    /* Otf2 */ {false, false, false},
};
static_assert(std::size(kFiguresNeeded) == static_cast<size_t>(Output::Otf2) + 1);
// What the outputs print together: what Options to analyze with.
inline FiguresNeeded figures_needed(const std::vector<Output>& outputs) {
  FiguresNeeded need;
  for (Output o : outputs) {
    const FiguresNeeded& n = kFiguresNeeded[static_cast<size_t>(o)];
    need.wait_states = need.wait_states || n.wait_states;
    need.delay_analysis = need.delay_analysis || n.delay_analysis;
    need.function_profile = need.function_profile || n.function_profile;
  }
  return need;
}

// The call sites the text report lists per interval (JSON lists them all).
inline constexpr size_t kTextCallSites = 20;

struct TextOptions {
  bool per_rank = true;    // the per-rank table after the main block
  bool functions = false;  // the mpiP-style profile of each interval
  bool callsites = false;  // each interval's top call sites (kTextCallSites) by time
  bool wait_states = false;  // each interval's wait states by kind and the partners waited for
  // The ranks whose lines the per-rank tables print (inclusive ranges; empty:
  // every rank). The comparative min/max/mean always covers every rank, and
  // JSON every per-rank figure.
  std::vector<std::pair<int, int>> ranks;
};

// A rank list as `--ranks` takes it: "0-3,100" (numbers and inclusive ranges,
// comma-separated). False, with `error` saying what is wrong, when it is not.
bool parse_rank_list(const std::string& text, std::vector<std::pair<int, int>>* ranks, std::string* error);

// For `--ranks`' warning: the ranges of `ranks` that name no rank of the
// report's per-rank tables, each as the list wrote it ("7", "5-9"); and the
// ranks the report has, as ranges ("0-3,8": at most kRankRangesShown, the
// middle ones as "..."). Both empty for a report without per-rank figures.
inline constexpr size_t kRankRangesShown = 6;
std::vector<std::string> ranges_naming_no_rank(const Analysis& a, const std::vector<std::pair<int, int>>& ranks,
                                               std::string* report_ranks);

// Every interval in tree order. Each starts with the block of the
// interval-analyzer thesis (docs/references.md), line for line ("Interval
// (LineNumber = ...) Level=... EXE_Count=...", the main and the comparative
// characteristics, numbers as printf's %f), then the extras.
//
// Tmid (the comparative mean) is printed truncated to the microsecond, as the
// thesis's integer-microsecond arithmetic does: that is what reproduces its
// worked example (its Potential Sync. sum 0.068763 over 4 ranks shows a mean
// of 0.017190, not the rounded 0.017191). The JSON report has the exact mean.
//
// With opt.wait_states, `a` must have them (Analysis::waits_known), else
// std::logic_error: zeros would read as "nothing waited"; with opt.functions
// or opt.callsites, its function profile (Analysis::functions_known).
void write_text_report(const Analysis& a, std::ostream& out, const TextOptions& opt = {});

// The JSON report (the keys of docs/interfaces.md), pretty-printed. It has
// the wait states and the function profile: std::logic_error when `a` has
// not (Analysis::waits_known, functions_known).
void write_json_report(const Analysis& a, std::ostream& out);

// A figure in seconds as every report prints it: six decimals, cut toward
// zero at the microsecond, not rounded (docs/metrics.md, "The text report").
// The text report, the comparison of two runs and the GUI's tables all print
// their seconds with it.
std::string figure_text(double seconds);

// One interval's header line, e.g. "Interval (LineNumber = 153 SourceFile = exch.c) Level=0 EXE_Count=1".
std::string interval_title(const IntervalNode& n);

}  // namespace prof::analysis
