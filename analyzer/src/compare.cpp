// Two runs compared: matching, the differences of their run records, and the
// text and JSON outputs (compare.h).
#include "prof/analysis/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "json_parts.h"
#include "prof/analysis/characteristics.h"
#include "prof/analysis/report.h"

namespace prof::analysis {
namespace {

using Key = std::tuple<int, std::string, int>;  // id (-1: root), call site, line

Key key_of(const IntervalNode& n) { return {n.id ? int(*n.id) : -1, n.source_label(), n.line}; }

ComparedInterval entry(const IntervalNode& n) {
  ComparedInterval c;
  c.id = n.id;
  c.source_file = n.source_label();
  c.line = n.line;
  c.level = n.level;
  return c;
}

double sort_value(const MainFigures& m) {
  for (const MainCharacteristic& c : kMainCharacteristics)
    if (std::string_view(c.key) == kCompareSortKey) return c.value(m);
  return 0;
}

std::string num(double v) { return figure_text(v); }
// B / A; empty when A is 0 (no ratio).
std::optional<double> ratio(double a, double b) {
  if (a == 0) return std::nullopt;
  return b / a;
}
std::string ratio_text(double a, double b) {
  const auto r = ratio(a, b);
  if (!r) return b == 0 ? "-" : "inf";
  char t[48];
  std::snprintf(t, sizeof t, "%.3f", *r);
  return t;
}

std::string interval_name(const ComparedInterval& c) {
  std::string s = c.id ? "Interval " + std::to_string(*c.id) : std::string("Whole run");
  return s + " (" + c.source_file + ":" + std::to_string(c.line) + ") Level=" + std::to_string(c.level);
}

void add_if_different(std::vector<RunDifference>* out, const std::string& what, const std::string& a,
                      const std::string& b) {
  if (a != b) out->push_back({what, a, b});
}

}  // namespace

std::vector<RunDifference> run_differences(const Analysis& a, const Analysis& b) {
  std::vector<RunDifference> d;
  const RunRecord& x = a.run;
  const RunRecord& y = b.run;
  add_if_different(&d, "ranks", std::to_string(a.processors), std::to_string(b.processors));
  add_if_different(&d, "hosts", std::to_string(x.hosts.size()), std::to_string(y.hosts.size()));
  add_if_different(&d, "ranks_per_node", std::to_string(x.ranks_per_node()), std::to_string(y.ranks_per_node()));
  add_if_different(&d, "library", x.library, y.library);
  add_if_different(&d, "library_version", x.library_version, y.library_version);
  // The whole text only when name and version agree (a rebuild, other options).
  if (x.library == y.library && x.library_version == y.library_version)
    add_if_different(&d, "mpi_library", x.mpi_library, y.mpi_library);
  add_if_different(&d, "transport", x.transport, y.transport);
  add_if_different(&d, "transport_version", x.transport_version, y.transport_version);
  add_if_different(&d, "command", x.command, y.command);
  std::map<std::string, std::pair<std::string, std::string>> settings;
  for (const auto& [name, s] : x.prof_settings) settings[name].first = s.value;
  for (const auto& [name, s] : y.prof_settings) settings[name].second = s.value;
  // Traces that did not record settings say nothing about them.
  if (!x.prof_settings.empty() && !y.prof_settings.empty())
    for (const auto& [name, values] : settings)
      if (name != "PROF_OUTPUT") add_if_different(&d, name, values.first, values.second);
  std::map<std::string, std::pair<std::string, std::string>> env;
  for (const auto& [name, v] : x.environment) env[name].first = v;
  for (const auto& [name, v] : y.environment) env[name].second = v;
  for (const auto& [name, values] : env) add_if_different(&d, name, values.first, values.second);
  return d;
}

std::vector<ComparedFunction> compare_functions(const IntervalNode& a, const IntervalNode& b) {
  std::map<std::string, ComparedFunction> by_name;
  for (const FunctionFigures& f : a.functions) {
    ComparedFunction& c = by_name[f.name];
    c.calls_a = f.calls;
    c.time_a = f.time;
    c.bytes_a = f.bytes;
  }
  for (const FunctionFigures& f : b.functions) {
    ComparedFunction& c = by_name[f.name];
    c.calls_b = f.calls;
    c.time_b = f.time;
    c.bytes_b = f.bytes;
  }
  std::vector<ComparedFunction> list;
  list.reserve(by_name.size());
  for (auto& [name, c] : by_name) {
    c.name = name;
    list.push_back(std::move(c));
  }
  // by_name left them in name order: ties keep it.
  std::stable_sort(list.begin(), list.end(), [](const ComparedFunction& x, const ComparedFunction& y) {
    return std::fabs(x.time_b - x.time_a) > std::fabs(y.time_b - y.time_a);
  });
  return list;
}

Comparison compare(const Analysis& a, const Analysis& b) {
  Comparison c;
  c.processors_a = a.processors;
  c.processors_b = b.processors;
  c.waits_known = a.waits_known && b.waits_known;
  c.functions_known = a.functions_known && b.functions_known;
  c.differences = run_differences(a, b);
  // Nodes match as the tree's nodes are told apart (parent, interval id,
  // call site): A's node with B's of the same key under B's match of its
  // parent, the k-th of a key there with the k-th (tree order, parents
  // first). A node whose parent matched nothing matches nothing either.
  using ParentKey = std::pair<int, Key>;  // (B's parent index, key)
  std::map<ParentKey, std::vector<size_t>> in_b;
  for (size_t i = 1; i < b.intervals.size(); ++i)
    in_b[{b.intervals[i].parent, key_of(b.intervals[i])}].push_back(i);
  std::map<ParentKey, size_t> taken;  // of each key, how many of B's are matched
  std::vector<bool> b_matched(b.intervals.size(), false);
  std::vector<int> match_in_b(a.intervals.size(), -1);
  for (size_t i = 0; i < a.intervals.size(); ++i) {
    const IntervalNode& n = a.intervals[i];
    ComparedInterval e = entry(n);
    e.a = &n;
    int found = -1;
    if (i == 0) {
      if (!b.intervals.empty()) found = 0;
    } else if (n.parent >= 0 && size_t(n.parent) < i && match_in_b[size_t(n.parent)] >= 0) {
      const ParentKey k{match_in_b[size_t(n.parent)], key_of(n)};
      auto it = in_b.find(k);
      size_t& used = taken[k];
      if (it != in_b.end() && used < it->second.size()) found = int(it->second[used++]);
    }
    if (found >= 0) {
      e.b = &b.intervals[size_t(found)];
      b_matched[size_t(found)] = true;
      match_in_b[i] = found;
    }
    (e.b ? c.matched : c.only_a).push_back(e);
  }
  for (size_t i = 0; i < b.intervals.size(); ++i)
    if (!b_matched[i]) {
      ComparedInterval e = entry(b.intervals[i]);
      e.b = &b.intervals[i];
      c.only_b.push_back(e);
    }
  // By the size of the change, the whole run among them (docs/interfaces.md,
  // "Two runs compared"); ties in A's tree order, so the whole run first
  // among equals.
  std::stable_sort(c.matched.begin(), c.matched.end(), [](const ComparedInterval& x, const ComparedInterval& y) {
    return std::fabs(sort_value(x.b->main) - sort_value(x.a->main)) >
           std::fabs(sort_value(y.b->main) - sort_value(y.a->main));
  });
  return c;
}

void write_compare_text(const Comparison& c, const std::string& a_name, const std::string& b_name,
                        std::ostream& out, const CompareTextOptions& opt) {
  if (opt.wait_states && !c.waits_known)
    throw std::logic_error("write_compare_text: the wait states were not computed (Options::wait_states)");
  if (opt.functions && !c.functions_known)
    throw std::logic_error("write_compare_text: the function profiles were not computed (Options::function_profile)");
  out << "Comparison of A = " << a_name << " and B = " << b_name << '\n';
  out << "\n---Run differences---\n";
  if (c.differences.empty()) out << "(none recorded)\n";
  for (const RunDifference& d : c.differences)
    out << d.what << ": " << (d.a.empty() ? "(absent)" : d.a) << " -> " << (d.b.empty() ? "(absent)" : d.b) << '\n';
  if (!c.same_ranks())
    out << "Ranks differ (" << c.processors_a << " and " << c.processors_b
        << "): totals and means per rank are compared; per-rank values are not\n";
  for (const ComparedInterval& e : c.matched) {
    out << '\n' << interval_name(e) << " EXE_Count=" << e.a->exe_count << " -> " << e.b->exe_count << '\n';
    out << "Characteristic A B B-A B/A\n";
    for (const MainCharacteristic& ch : kMainCharacteristics) {
      if (!ch.compared) continue;
      const double x = ch.value(e.a->main), y = ch.value(e.b->main);
      out << ch.name() << ' ' << num(x) << ' ' << num(y) << ' ' << num(y - x) << ' ' << ratio_text(x, y) << '\n';
      if (ch.summed && !c.same_ranks() && e.a->main.processors > 0 && e.b->main.processors > 0) {
        const double mx = x / e.a->main.processors, my = y / e.b->main.processors;
        out << ch.name() << " (mean per rank) " << num(mx) << ' ' << num(my) << ' ' << num(my - mx) << ' '
            << ratio_text(mx, my) << '\n';
      }
    }
    if (opt.wait_states) {
      out << "---Wait States---\n";
      out << "Kind A B B-A B/A\n";
      for (int k = 0; k < kWaitKindCount; ++k) {
        const double x = e.a->waits[static_cast<size_t>(k)], y = e.b->waits[static_cast<size_t>(k)];
        out << kWaitKindLabels[k] << ' ' << num(x) << ' ' << num(y) << ' ' << num(y - x) << ' '
            << ratio_text(x, y) << '\n';
      }
    }
    if (opt.functions) {
      out << "---MPI Functions---\n";
      out << "Function Calls_A Calls_B Time_A Time_B B-A B/A Bytes_A Bytes_B\n";
      for (const ComparedFunction& f : compare_functions(*e.a, *e.b))
        out << f.name << ' ' << f.calls_a << ' ' << f.calls_b << ' ' << num(f.time_a) << ' ' << num(f.time_b)
            << ' ' << num(f.time_b - f.time_a) << ' ' << ratio_text(f.time_a, f.time_b) << ' ' << f.bytes_a
            << ' ' << f.bytes_b << '\n';
    }
  }
  auto unmatched = [&out](const char* title, const std::vector<ComparedInterval>& list) {
    out << '\n' << title << '\n';
    if (list.empty()) out << "(none)\n";
    for (const ComparedInterval& e : list) {
      const IntervalNode& n = e.a ? *e.a : *e.b;
      out << interval_name(e) << " EXE_Count=" << n.exe_count << " Lost Time " << num(n.main.lost_time)
          << " Execution Time " << num(n.main.execution_time) << '\n';
    }
  };
  unmatched("---Only in A---", c.only_a);
  unmatched("---Only in B---", c.only_b);
}

void write_compare_json(const Comparison& c, const Analysis& a, const Analysis& b, const std::string& a_name,
                        const std::string& b_name, std::ostream& out) {
  if (!c.waits_known)
    throw std::logic_error("write_compare_json: the wait states were not computed (Options::wait_states)");
  if (!c.functions_known)
    throw std::logic_error("write_compare_json: the function profiles were not computed (Options::function_profile)");
  Json j;
  j["a"] = Json{{"trace", a_name}, {"processors", a.processors}, {"run", run_json(a.run)}};
  j["b"] = Json{{"trace", b_name}, {"processors", b.processors}, {"run", run_json(b.run)}};
  Json diffs = Json::array();
  for (const RunDifference& d : c.differences)
    diffs.push_back(Json{{"what", d.what},
                         {"a", d.a.empty() ? Json(nullptr) : Json(d.a)},
                         {"b", d.b.empty() ? Json(nullptr) : Json(d.b)}});
  j["run_differences"] = diffs;
  j["per_rank_compared"] = false;
  j["same_ranks"] = c.same_ranks();
  auto item = [&c](const ComparedInterval& e) {
    Json i;
    i["id"] = e.id ? Json(*e.id) : Json(nullptr);
    i["source_file"] = e.source_file;
    i["line"] = e.line;
    i["level"] = e.level;
    i["a"] = e.a ? main_json(e.a->main) : Json(nullptr);
    i["b"] = e.b ? main_json(e.b->main) : Json(nullptr);
    if (e.a && e.b) {
      Json diff = Json::object(), rat = Json::object(), mean_a = Json::object(), mean_b = Json::object();
      for (const MainCharacteristic& ch : kMainCharacteristics) {
        if (!ch.compared) continue;
        const double x = ch.value(e.a->main), y = ch.value(e.b->main);
        diff[ch.key] = y - x;
        const auto r = ratio(x, y);
        rat[ch.key] = r ? Json(*r) : Json(nullptr);
        if (ch.summed) {
          mean_a[ch.key] = e.a->main.processors > 0 ? x / e.a->main.processors : 0.0;
          mean_b[ch.key] = e.b->main.processors > 0 ? y / e.b->main.processors : 0.0;
        }
      }
      i["diff"] = diff;
      i["ratio"] = rat;
      Json waits = Json::object();
      for (int k = 0; k < kWaitKindCount; ++k) {
        const double x = e.a->waits[static_cast<size_t>(k)], y = e.b->waits[static_cast<size_t>(k)];
        waits[kWaitKindKeys[k]] = Json{{"a", x}, {"b", y}, {"diff", y - x}};
      }
      i["wait_states"] = waits;
      Json functions = Json::array();
      for (const ComparedFunction& f : compare_functions(*e.a, *e.b))
        functions.push_back(Json{{"name", f.name},
                                 {"calls_a", f.calls_a},
                                 {"calls_b", f.calls_b},
                                 {"time_a", f.time_a},
                                 {"time_b", f.time_b},
                                 {"diff", f.time_b - f.time_a},
                                 {"bytes_a", f.bytes_a},
                                 {"bytes_b", f.bytes_b}});
      i["functions"] = functions;
      if (!c.same_ranks()) {
        i["mean_a"] = mean_a;
        i["mean_b"] = mean_b;
      }
    }
    return i;
  };
  Json list = Json::array();
  for (const ComparedInterval& e : c.matched) list.push_back(item(e));
  for (const ComparedInterval& e : c.only_a) list.push_back(item(e));
  for (const ComparedInterval& e : c.only_b) list.push_back(item(e));
  j["compare"] = std::move(list);
  out << j.dump(1, ' ', false, Json::error_handler_t::replace) << '\n';
}

}  // namespace prof::analysis
