// otf2_export_check PROF_ANALYZE OTF2_PRINT TRACE WORK [FROM:TO]
//
// Exports TRACE with `prof-analyze --otf2` (and --window FROM:TO when given),
// reads the archive back with otf2-print (which must succeed with warnings
// as errors), and compares what the archive holds with what the trace holds,
// walked here with the trace reader alone:
//   - per region, Enter and Leave counts: per MPI function the calls that
//     overlap the window (every call without one), per interval the
//     executions that overlap it (begin and end markers paired per thread);
//   - every location's Enters and Leaves nest and its timestamps never
//     decrease, and lie inside the window;
//   - without a window: sends (MpiSend + MpiIsend) and receives (MpiRecv +
//     MpiIrecv) equal the analysis's matched plus unmatched ones (its JSON
//     stats), and collective begin/end pairs the blocking collective calls.
// Exit 0 when all agree; else each difference is printed and the exit is 1.
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "prof/trace_reader.h"

namespace {

int run(const std::string& cmd, std::string* out) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    if (out) out->append(buf, n);
  const int st = ::pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int failures = 0;
template <class A, class B>
void expect_eq(const A& got, const B& want, const std::string& what) {
  if (got == want) return;
  ++failures;
  std::cerr << "MISMATCH " << what << ": archive " << got << ", trace " << want << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::cerr << "usage: otf2_export_check PROF_ANALYZE OTF2_PRINT TRACE WORK [FROM:TO]\n";
    return 2;
  }
  const std::string analyze = argv[1], print = argv[2], trace = argv[3], work = argv[4];
  const std::string window = argc == 6 ? argv[5] : "";
  double from_s = -std::numeric_limits<double>::infinity(), to_s = std::numeric_limits<double>::infinity();
  if (!window.empty()) {
    from_s = std::stod(window.substr(0, window.find(':')));
    to_s = std::stod(window.substr(window.find(':') + 1));
  }
  std::filesystem::remove_all(work);
  std::filesystem::create_directories(work);
  const std::string archive = work + "/otf2";
  std::string out;
  const std::string cmd = analyze + " '" + trace + "' --no-progress --no-index -q -o /dev/null --json '" + work +
                          "/report.json' --otf2 '" + archive + "'" + (window.empty() ? "" : " --window " + window) +
                          " 2>&1";
  if (const int rc = run(cmd, &out); rc != 0) {
    std::cerr << cmd << ": exit " << rc << "\n" << out;
    return 1;
  }
  out.clear();
  if (const int rc = run(print + " -Werror '" + archive + "/traces.otf2' 2>&1", &out); rc != 0) {
    std::cerr << "otf2-print: exit " << rc << "\n" << out.substr(0, 2000);
    return 1;
  }

  // The archive, from otf2-print's event lines: KIND LOCATION TIMESTAMP ...
  std::map<std::string, uint64_t> enters, leaves;
  uint64_t sends = 0, receives = 0, coll_begins = 0, coll_ends = 0, offset = 0;
  std::map<uint64_t, std::vector<std::string>> open;
  std::map<uint64_t, uint64_t> last;
  uint64_t min_ts = UINT64_MAX, max_ts = 0;
  {
    std::string defs;
    run(print + " -G '" + archive + "/traces.otf2'", &defs);
    const size_t at = defs.find("Global Offset: ");
    if (at != std::string::npos) offset = std::stoull(defs.substr(at + 15));
  }
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string kind;
    uint64_t loc = 0, ts = 0;
    if (!(f >> kind >> loc >> ts)) continue;
    if (kind == "ENTER" || kind == "LEAVE") {
      const size_t q = line.find("Region: \"");
      const std::string name = line.substr(q + 9, line.find('"', q + 9) - q - 9);
      if (kind == "ENTER") {
        ++enters[name];
        open[loc].push_back(name);
      } else {
        ++leaves[name];
        if (open[loc].empty() || open[loc].back() != name) {
          ++failures;
          std::cerr << "location " << loc << ": Leave of " << name << " at " << ts << " does not close the innermost Enter\n";
        } else {
          open[loc].pop_back();
        }
      }
    } else if (kind == "MPI_SEND" || kind == "MPI_ISEND") {
      ++sends;
    } else if (kind == "MPI_RECV" || kind == "MPI_IRECV") {
      ++receives;
    } else if (kind == "MPI_COLLECTIVE_BEGIN") {
      ++coll_begins;
    } else if (kind == "MPI_COLLECTIVE_END") {
      ++coll_ends;
    } else {
      continue;
    }
    if (ts < last[loc]) {
      ++failures;
      std::cerr << "location " << loc << ": timestamp " << ts << " after " << last[loc] << "\n";
    }
    last[loc] = ts;
    min_ts = std::min(min_ts, ts);
    max_ts = std::max(max_ts, ts);
  }
  for (const auto& [loc, stack] : open)
    if (!stack.empty()) {
      ++failures;
      std::cerr << "location " << loc << ": " << stack.size() << " regions never left\n";
    }

  // The trace, walked with the reader.
  const prof::trace::TraceDir td = prof::trace::TraceDir::open(trace);
  double t0 = std::numeric_limits<double>::infinity();
  for (const auto& r : td.ranks) {
    auto c = r->events();
    prof::trace::Event e;
    if (c.next(e)) t0 = std::min(t0, r->to_global_ns(e.enter));
  }
  const double from = t0 + from_s * 1e9, to = t0 + to_s * 1e9;
  auto overlaps = [&](double a, double b) { return b >= from && a <= to; };
  std::map<std::string, uint64_t> want;
  uint64_t want_collectives = 0;
  for (const auto& r : td.ranks) {
    std::map<uint32_t, std::vector<std::pair<uint32_t, double>>> stacks;  // stream -> (id, begin)
    std::map<uint32_t, std::string> site_name;
    auto c = r->events();
    for (prof::trace::Event e; c.next(e);) {
      const double enter = r->to_global_ns(e.enter), leave = r->to_global_ns(e.leave);
      if (e.kind == prof::format::FuncKind::Marker) {
        auto& s = stacks[e.stream];
        if (e.marker_begin) {
          s.emplace_back(e.interval_id, leave);
          if (!site_name.count(e.callsite)) {
            const auto* cs = r->callsite(e.callsite);
            site_name[e.callsite] = cs ? cs->file + ":" + std::to_string(cs->line) : "?";
          }
          // (The name is the begin's; the id and site make it.)
          s.back().first = e.interval_id;
          s.back().second = leave;
          continue;
        }
        if (!s.empty() && s.back().first == e.interval_id) {
          if (overlaps(s.back().second, enter)) ++want["interval " + std::to_string(e.interval_id)];
          s.pop_back();
        }
        continue;
      }
      if (e.flags & prof::format::kContinuation) continue;
      if (!overlaps(enter, leave)) continue;
      const auto* f = r->function(e.func);
      ++want[f ? f->name : "?"];
      if ((e.kind == prof::format::FuncKind::Collective || e.kind == prof::format::FuncKind::AllToAll) &&
          !e.in_flight)
        ++want_collectives;
    }
  }
  // Interval regions are named "interval ID (FILE:LINE)": compare by id.
  std::map<std::string, uint64_t> got_enters, got_leaves;
  for (const auto& [name, n] : enters)
    got_enters[name.rfind("interval ", 0) == 0 ? name.substr(0, name.find(" (")) : name] += n;
  for (const auto& [name, n] : leaves)
    got_leaves[name.rfind("interval ", 0) == 0 ? name.substr(0, name.find(" (")) : name] += n;
  for (const auto& [name, n] : want) {
    expect_eq(got_enters[name], n, "Enters of " + name);
    expect_eq(got_leaves[name], n, "Leaves of " + name);
  }
  for (const auto& [name, n] : got_enters)
    if (!want.count(name)) expect_eq(n, uint64_t{0}, "Enters of " + name);
  uint64_t total = 0;
  for (const auto& [name, n] : want) total += n;
  std::cout << "regions " << want.size() << ", enters " << total << ", sends " << sends << ", receives "
            << receives << ", collectives " << coll_begins << "\n";
  if (total == 0) {
    ++failures;
    std::cerr << "nothing to compare: no call in the trace (or the window)\n";
  }

  if (window.empty()) {
    std::ifstream jf(work + "/report.json");
    const nlohmann::json j = nlohmann::json::parse(jf);
    const auto& st = j.at("stats");
    const uint64_t matched = st.at("messages_matched");
    expect_eq(sends, matched + st.at("unmatched_sends").get<uint64_t>(), "sends");
    expect_eq(receives, matched + st.at("unmatched_receives").get<uint64_t>(), "receives");
    expect_eq(coll_begins, want_collectives, "collective begins");
    expect_eq(coll_ends, want_collectives, "collective ends");
  } else {
    // Every timestamp inside the window (ns from the trace's start, rounded).
    const double lo = std::floor(from - t0) - 1, hi = std::ceil(to - t0) + 1;
    if (min_ts != UINT64_MAX &&
        (static_cast<double>(min_ts - offset) < lo || static_cast<double>(max_ts - offset) > hi)) {
      ++failures;
      std::cerr << "timestamps " << min_ts - offset << ".." << max_ts - offset << " ns outside the window " << lo
                << ".." << hi << "\n";
    }
  }
  if (failures) std::cerr << failures << " differences\n";
  return failures ? 1 : 0;
}
