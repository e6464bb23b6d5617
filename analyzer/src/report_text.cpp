// The text report: the interval-analyzer thesis's block per interval, line for
// line (docs/metrics.md, "The text report"), then extras.
#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "prof/analysis/characteristics.h"
#include "prof/analysis/report.h"

namespace prof::analysis {
namespace {

// The thesis's analyzer kept whole microseconds and divided integers, so its
// figures are cut, never rounded, to the microsecond (its mean 0.068763 / 4 =
// 0.01719075 prints as 0.017190). The guard: a figure that is a whole number
// of microseconds may land a few ulps below it after the conversions to
// seconds (0.000249 s is 248.99999999999997 us as doubles), which a cut would
// take a microsecond lower; a figure within 1 ps of the next microsecond
// (or 64 ulps of itself, past 70 s) counts as reaching it.
// Written through std::to_chars, not printf: a report of 4096 ranks prints
// some 150,000 numbers, and snprintf's parse of the format was most of the
// report's time. Appended to a line: the per-rank rows are built whole and
// written at once (at 10^5 ranks, 36 MB of them; a stream insertion per
// number was most of the report's time).
void append_figure(std::string& line, double seconds) {
  double us = seconds * 1e6;
  const double guard = std::max(1e-6, std::abs(us) * 0x1p-46);
  us = std::trunc(us >= 0 ? us + guard : us - guard);
  if (us == 0) us = 0;  // (-0.0000004 cut toward zero is 0, not "-0.000000")
  char b[400];  // (the longest double in fixed notation: 309 digits, sign, point, 6 decimals)
  const auto r = std::to_chars(b, b + sizeof b, us / 1e6, std::chars_format::fixed, 6);
  line.append(b, r.ptr);
}
// The integer std::to_string gives, appended to a line.
void append_integer(std::string& line, unsigned long long v) {
  char b[24];
  const auto r = std::to_chars(b, b + sizeof b, v);
  line.append(b, r.ptr);
}

// Ascending ranks as ranges ("0-3", "8").
std::vector<std::string> rank_range_list(const std::vector<int>& ranks) {
  std::vector<std::string> out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out.push_back(std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : ""));
    i = j + 1;
  }
  return out;
}

// "0-3,8": ascending ranks as ranges.
std::string rank_ranges(const std::vector<int>& ranks) {
  std::string s;
  for (const std::string& r : rank_range_list(ranks)) s += (s.empty() ? "" : ",") + r;
  return s;
}

// What the run ran under, a few lines after Level 0 (only for traces that
// recorded it: the report of an older trace is unchanged). The profiler's
// settings at their defaults are left out (the JSON has every one).
void write_run_block(const RunRecord& run, std::ostream& out) {
  if (run.mpi_library.empty() && run.prof_settings.empty()) return;
  out << "\n---Run---\n";
  out << "MPI library " << (run.library.empty() ? "unknown" : run.library);
  if (!run.library_version.empty()) out << ' ' << run.library_version;
  out << '\n';
  out << "Transport " << (run.transport.empty() ? "unknown" : run.transport);
  if (!run.transport_version.empty()) out << ' ' << run.transport_version;
  out << '\n';
  out << "Hosts " << run.hosts.size() << ':';
  for (const RunRecord::Host& h : run.hosts) out << ' ' << h.name << " (ranks " << rank_ranges(h.ranks) << ')';
  out << '\n';
  out << "Command " << run.command << '\n';
  out << "Settings";
  bool any = false;
  for (const auto& [name, setting] : run.prof_settings)
    if (setting.from_environment) {
      out << ' ' << name << '=' << setting.value;
      any = true;
    }
  out << (any ? "\n" : " (all defaults)\n");
  out << "Environment";
  for (const auto& [name, value] : run.environment) out << ' ' << name << '=' << value;
  out << (run.environment.empty() ? " (none of MPI's or the transport's variables set)\n" : "\n");
}

}  // namespace

std::string figure_text(double seconds) {
  std::string s;
  append_figure(s, seconds);
  return s;
}

std::string interval_title(const IntervalNode& n) {
  return "Interval (LineNumber = " + std::to_string(n.line) + " SourceFile = " + n.source_label() +
         ") Level=" + std::to_string(n.level) + " EXE_Count=" + std::to_string(n.exe_count);
}

void write_text_report(const Analysis& a, std::ostream& out, const TextOptions& opt) {
  if (opt.wait_states && !a.waits_known)
    throw std::logic_error("write_text_report: the wait states were not computed (Options::wait_states)");
  if ((opt.functions || opt.callsites) && !a.functions_known)
    throw std::logic_error("write_text_report: the function profile was not computed (Options::function_profile)");
  bool first = true;
  if (a.window) {
    out << "Window " << figure_text(a.window->first) << " .. " << figure_text(a.window->second)
        << " s from the trace's start\n\n";
  }
  for (const IntervalNode& n : a.intervals) {
    if (!first) out << '\n';
    first = false;
    const MainFigures& m = n.main;
    out << interval_title(n) << '\n';
    out << "---Main Characteristics---\n";
    for (const MainCharacteristic& c : kMainCharacteristics) {
      if (!c.in_text_report) continue;
      const double v = c.value(m);
      out << c.label << ' ' << (c.integer ? std::to_string(static_cast<long long>(v)) : figure_text(v)) << c.text_suffix
          << '\n';
    }
    out << "---Comparative Characteristics---\n";
    out << "Tmin Nproc Tmax Nproc Tmid\n";
    for (const ComparativeCharacteristic& c : kComparativeCharacteristics) {
      const ComparativeFigures& cf = n.comparative[static_cast<size_t>(c.which)];
      out << c.label << ' ' << figure_text(cf.min) << ' '
          << cf.min_rank << ' ' << figure_text(cf.max) << ' ' << cf.max_rank << ' ' << figure_text(cf.mean)
          << '\n';
    }
    if (opt.wait_states) {
      // Kinds in the JSON's order (the first six partition Potential Sync.),
      // then the ranks waited for most.
      out << "---Wait States---\n";
      for (int k = 0; k < kWaitKindCount; ++k)
        out << kWaitKindLabels[k] << ' ' << figure_text(n.waits[static_cast<size_t>(k)]) << '\n';
      out << "Waited for: Nproc Time Uncertain\n";
      for (size_t p = 0; p < n.waited_for.size() && p < kTopPartners; ++p)
        out << n.waited_for[p].rank << ' ' << figure_text(n.waited_for[p].seconds) << ' '
            << figure_text(n.waited_for[p].uncertain_seconds) << '\n';
      if (a.delay_known) {
        out << "Waits here caused by:";
        if (n.caused_by.empty()) out << " none";
        for (size_t c = 0; c < n.caused_by.size() && c < kTopCauses; ++c) {
          const CauseShare& cs = n.caused_by[c];
          const IntervalNode& by = a.intervals[static_cast<size_t>(cs.interval)];
          out << (c ? ", " : " ") << (by.id ? "id " + std::to_string(*by.id) : std::string("the root"))
              << " at " << by.source_label() << ':' << by.line << " on rank " << cs.rank << " ("
              << figure_text(cs.seconds) << " s)";
        }
        out << '\n';
        out << "Critical Path Time " << figure_text(n.critical_path_s) << '\n';
      }
    }
    auto shown = [&opt](int rank) {
      if (opt.ranks.empty()) return true;
      for (const auto& [lo, hi] : opt.ranks)
        if (rank >= lo && rank <= hi) return true;
      return false;
    };
    if (opt.per_rank) {
      out << "---Characteristics per Processor---\n";
      for (size_t c = 0; c < std::size(kRankCharacteristics); ++c)
        out << (c ? " " : "") << kRankCharacteristics[c].column;
      out << '\n';
      std::string row;
      for (const RankFigures& f : n.per_rank) {
        if (!shown(f.rank)) continue;
        row.clear();
        for (size_t c = 0; c < std::size(kRankCharacteristics); ++c) {
          const double v = kRankCharacteristics[c].value(f);
          if (c) row += ' ';
          if (kRankCharacteristics[c].integer) append_integer(row, static_cast<unsigned long long>(v));
          else append_figure(row, v);
        }
        row += '\n';
        out.write(row.data(), static_cast<std::streamsize>(row.size()));
      }
    }
    if (opt.functions) {
      out << "---MPI Functions---\n";
      out << "Function Calls Time Bytes\n";
      for (const FunctionFigures& f : n.functions)
        out << f.name << ' ' << f.calls << ' ' << figure_text(f.time) << ' ' << f.bytes << '\n';
    }
    if (opt.callsites) {
      out << "---MPI Call Sites---\n";
      out << "Function Site Calls Time Bytes\n";
      for (size_t c = 0; c < n.callsites.size() && c < kTextCallSites; ++c) {
        const CallSiteFigures& f = n.callsites[c];
        out << f.function << ' ' << f.site_label() << ' ' << f.calls << ' ' << figure_text(f.time) << ' '
            << f.bytes << '\n';
      }
    }
    if (n.parent < 0 && a.clock.known) {
      // After Level 0: how far the figures between ranks can be trusted.
      char line[160];
      if (a.clock.measured())
        std::snprintf(line, sizeof line, "\nClock offsets known within %.3f us (scheme %s)\n",
                      a.clock.max_error_s * 1e6, a.clock.scheme.empty() ? "unknown" : a.clock.scheme.c_str());
      else
        std::snprintf(line, sizeof line, "\nClock offsets not measured (scheme none): each rank's own clock\n");
      out << line;
    }
    if (n.parent < 0) write_run_block(a.run, out);
    if (n.parent < 0 && a.complete &&
        std::any_of(a.run_end.begin(), a.run_end.end(), [](const RankEnd& e) { return e.records_lost; })) {
      // After Level 0: the run ended cleanly but not everything was recorded.
      out << "\n---Records lost when recording (not in the figures)---\n";
      out << "Nproc RecordsLost\n";
      for (const RankEnd& e : a.run_end)
        if (e.records_lost && shown(e.rank)) out << e.rank << ' ' << e.records_lost << '\n';
    }
    if (n.parent < 0 && !a.complete) {
      // After Level 0, for a run that did not end cleanly.
      out << "\n---Where each rank was when the run ended---\n";
      out << "Nproc EndedBy LastAlive RecordsLost\n";
      for (const RankEnd& e : a.run_end)
        if (shown(e.rank))
          out << e.rank << ' ' << e.ended_by << ' ' << figure_text(e.last_alive) << ' ' << e.records_lost << '\n';
      // The calls in flight, then each cycle of ranks waiting for each other
      // (every cycle, whichever ranks the tables show).
      for (const RankEnd& e : a.run_end)
        for (const CallInFlight& c : e.in_flight) {
          if (!shown(e.rank)) continue;
          out << "Rank " << e.rank;
          if (c.stream != 0) out << " (thread " << c.stream << ')';
          out << " inside " << c.function << " since " << figure_text(c.entered) << " s at "
              << c.site_label;
          if (c.peer) out << (c.collective ? ", root " : ", peer ") << *c.peer;
          else if (c.any_source) out << ", peer MPI_ANY_SOURCE";
          if (c.tag && !c.collective) out << ", tag " << *c.tag;
          if (c.comm) {
            if (*c.comm == 0) out << ", MPI_COMM_WORLD";
            else out << ", communicator " << *c.comm;
          }
          if (!c.waiting_for.empty()) {
            out << (c.collective ? "; members not entered: " : c.waits_for_any ? "; waiting for any of " : "; waiting for ");
            for (size_t i = 0; i < c.waiting_for.size(); ++i)
              out << (i ? ", " : "") << c.waiting_for[i];
          }
          out << '\n';
        }
      for (const std::vector<int>& cycle : a.wait_cycles) {
        out << "Deadlock: rank" << (cycle.size() > 1 ? "s " : " ");
        for (size_t i = 0; i < cycle.size(); ++i)
          out << (i == 0 ? "" : i + 1 == cycle.size() ? " and " : ", ") << cycle[i];
        out << (cycle.size() > 1 ? " wait for each other in " : " waits for itself in ");
        // The calls of the cycle, each distinct function and site once.
        std::vector<std::string> calls;
        for (int rank : cycle)
          for (const RankEnd& e : a.run_end)
            if (e.rank == rank)
              for (const CallInFlight& c : e.in_flight) {
                if (std::find(c.waiting_for.begin(), c.waiting_for.end(),
                              cycle[(std::find(cycle.begin(), cycle.end(), rank) - cycle.begin() + 1) %
                                    cycle.size()]) == c.waiting_for.end())
                  continue;
                const std::string call = c.function + " (" + c.site_label + ")";
                if (std::find(calls.begin(), calls.end(), call) == calls.end()) calls.push_back(call);
              }
        for (size_t i = 0; i < calls.size(); ++i) out << (i ? ", " : "") << calls[i];
        out << '\n';
      }
    }
  }
}

std::vector<std::string> ranges_naming_no_rank(const Analysis& a, const std::vector<std::pair<int, int>>& ranks,
                                               std::string* report_ranks) {
  report_ranks->clear();
  std::vector<std::string> unnamed;
  if (a.intervals.empty() || a.intervals[0].per_rank.empty()) return unnamed;
  std::vector<int> have;
  for (const auto& f : a.intervals[0].per_rank) have.push_back(f.rank);
  std::sort(have.begin(), have.end());
  for (const auto& [from, to] : ranks) {
    const auto it = std::lower_bound(have.begin(), have.end(), from);
    if (it == have.end() || *it > to)
      unnamed.push_back(from == to ? std::to_string(from) : std::to_string(from) + "-" + std::to_string(to));
  }
  const std::vector<std::string> ranges = rank_range_list(have);
  for (size_t i = 0; i < ranges.size(); ++i) {
    // (The first and the last ones, the middle ones as one "...".)
    const size_t head = kRankRangesShown / 2, tail = kRankRangesShown - head;
    if (ranges.size() > kRankRangesShown && i >= head && i + tail < ranges.size()) {
      if (i == head) *report_ranks += ",...";
      continue;
    }
    *report_ranks += (i == 0 ? "" : ",") + ranges[i];
  }
  return unnamed;
}

bool parse_rank_list(const std::string& text, std::vector<std::pair<int, int>>* ranks, std::string* error) {
  ranks->clear();
  size_t at = 0;
  auto number = [&](int* out) {
    size_t end = at;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (end == at || end - at > 9) return false;
    *out = std::stoi(text.substr(at, end - at));
    at = end;
    return true;
  };
  while (true) {
    int lo = 0, hi = 0;
    if (!number(&lo)) break;
    hi = lo;
    if (at < text.size() && text[at] == '-') {
      ++at;
      if (!number(&hi) || hi < lo) break;
    }
    ranks->emplace_back(lo, hi);
    if (at == text.size()) return true;
    if (text[at] != ',') break;
    ++at;
  }
  ranks->clear();
  *error = "'" + text + "' is not a rank list: ranks and inclusive ranges FROM-TO, comma-separated (e.g. 0-3,100)";
  return false;
}

}  // namespace prof::analysis
