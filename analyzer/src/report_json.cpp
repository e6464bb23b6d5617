// The JSON report: the keys docs/interfaces.md lists, in its order.
#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "json_parts.h"
#include "prof/analysis/characteristics.h"
#include "prof/analysis/report.h"
#include "prof/definition_lines.h"

namespace prof::analysis {

Json main_json(const MainFigures& m) {
  Json j = Json::object();
  for (const MainCharacteristic& c : kMainCharacteristics) {
    const double v = c.value(m);
    j[c.key] = c.integer ? Json(static_cast<long long>(v)) : Json(v);
  }
  return j;
}

Json run_json(const RunRecord& run) {
  const auto text = [](const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); };
  Json settings = Json::object();
  for (const auto& [name, value] : run.environment) settings[name] = value;
  Json transport{{"name", text(run.transport)}, {"version", text(run.transport_version)}, {"settings", settings}};
  Json hosts = Json::array();
  for (const RunRecord::Host& h : run.hosts) hosts.push_back(Json{{"host", h.name}, {"ranks", h.ranks}});
  Json prof = Json::object();
  Json given = Json::array();
  for (const auto& [name, s] : run.prof_settings) {
    prof[name] = s.value;
    if (s.from_environment) given.push_back(name);
  }
  return Json{{"mpi_library", text(run.mpi_library)},
              {"library", text(run.library)},
              {"library_version", text(run.library_version)},
              {"transport", transport},
              {"hosts", hosts},
              {"ranks_per_node", run.hosts.empty() ? Json(nullptr) : Json(run.ranks_per_node())},
              {"command", text(run.command)},
              {"prof_settings", prof},
              {"prof_settings_from_env", given}};
}

namespace {

Json rank_json(const RankFigures& f) {
  Json j = Json::object();
  for (const RankCharacteristic& c : kRankCharacteristics) {
    const double v = c.value(f);
    j[c.key] = c.integer ? Json(static_cast<unsigned long long>(v)) : Json(v);
  }
  return j;
}

}  // namespace

void write_json_report(const Analysis& a, std::ostream& out) {
  if (!a.waits_known)
    throw std::logic_error("write_json_report: the wait states were not computed (Options::wait_states)");
  if (!a.functions_known)
    throw std::logic_error("write_json_report: the function profile was not computed (Options::function_profile)");
  Json j;
  j["processors"] = a.processors;
  if (a.window) j["window"] = {{"from", a.window->first}, {"to", a.window->second}};
  j["world_size"] = a.world_size;
  j["ranks"] = a.ranks;
  j["executable"] = a.executable;
  j["bcast_impl"] = a.bcast_impl;
  j["bcast_fallbacks"] = a.bcast_fallbacks;
  j["run"] = run_json(a.run);
  // The length the critical path covers (null when not computed: a window).
  j["run_span_s"] = a.delay_known ? Json(a.run_span_s) : Json(nullptr);
  if (a.clock.known) {
    Json per_rank = Json::array();
    const bool measured = a.clock.measured();
    for (const auto& [rank, error_s] : a.clock.per_rank)
      per_rank.push_back({{"rank", rank}, {"error_s", measured ? Json(error_s) : Json(nullptr)}});
    j["clock"] = {{"scheme", a.clock.scheme},
                  {"max_error_s", measured ? Json(a.clock.max_error_s) : Json(nullptr)},
                  {"per_rank", per_rank}};
  } else {
    j["clock"] = nullptr;
  }
  j["damaged"] = a.damaged;
  j["cut_short"] = a.cut_short;
  j["stats"] = Json{{"events", a.stats.events},
                    {"events_not_analyzed", a.stats.events_not_analyzed},
                    {"mpi_calls", a.stats.mpi_calls},
                    {"messages_matched", a.stats.messages_matched},
                    {"unmatched_sends", a.stats.unmatched_sends},
                    {"unmatched_receives", a.stats.unmatched_receives},
                    {"collective_instances", a.stats.collective_instances},
                    {"incomplete_collectives", a.stats.incomplete_collectives},
                    {"unknown_requests", a.stats.unknown_requests},
                    {"unbalanced_markers", a.stats.unbalanced_markers},
                    {"chunks_decoded", a.stats.chunks_decoded},
                    {"chunks_total", a.stats.chunks_total}};
  if (!a.stats.window_index.empty()) j["stats"]["window_index"] = a.stats.window_index;
  Json warns = Json::array();
  for (const Warning& w : a.warnings)
    warns.push_back(Json{{"category", w.category}, {"count", w.count}, {"examples", w.examples}});
  j["warnings"] = warns;
  j["errors"] = a.errors;
  // How the run ended: per rank the call it was inside (its first thread's;
  // `in_flight_threads` lists every thread's when several were), and the
  // cycles of ranks waiting for each other.
  auto call_json = [](const CallInFlight& c) {
    Json f{{"function", c.function}, {"entered", c.entered}};
    f["file"] = c.file.empty() ? Json(c.site_label) : Json(c.file);
    f["line"] = c.line;
    if (c.stream != 0) f["stream"] = c.stream;
    // (Every key in every call, null where the call has none: a barrier has
    // no peer, a non-blocking Wait no communicator.)
    f["comm"] = c.comm ? Json(*c.comm) : Json(nullptr);
    f["peer"] = c.peer ? Json(*c.peer) : c.any_source ? Json("MPI_ANY_SOURCE") : Json(nullptr);
    f["tag"] = c.tag ? Json(*c.tag) : Json(nullptr);
    f["waiting_for"] = c.waiting_for;
    return f;
  };
  Json ends = Json::array();
  for (const RankEnd& e : a.run_end) {
    Json r{{"rank", e.rank},
           {"ended_by", e.ended_by},
           {"last_alive", e.last_alive},
           {"records_lost", e.records_lost},
           {"in_flight", e.in_flight.empty() ? Json(nullptr) : call_json(e.in_flight.front())}};
    if (e.in_flight.size() > 1) {
      Json all = Json::array();
      for (const CallInFlight& c : e.in_flight) all.push_back(call_json(c));
      r["in_flight_threads"] = all;
    }
    ends.push_back(std::move(r));
  }
  j["run_end"] = Json{{"complete", a.complete}, {"ranks", ends}, {"wait_cycles", a.wait_cycles}};

  Json list = Json::array();
  for (const IntervalNode& n : a.intervals) {
    Json i;
    i["id"] = n.id ? Json(*n.id) : Json(nullptr);
    i["level"] = n.level;
    i["exe_count"] = n.exe_count;
    i["parent"] = n.parent < 0 ? Json(nullptr) : Json(n.parent);
    i["children"] = n.children;
    i["source_file"] = n.source_label();
    i["line"] = n.line;
    if (n.source_file.empty()) i["address"] = format::hex(n.address);
    i["first_enter"] = n.first_enter;
    i["main"] = main_json(n.main);
    Json comp;
    for (const ComparativeCharacteristic& c : kComparativeCharacteristics) {
      const ComparativeFigures& cf = n.comparative[static_cast<size_t>(c.which)];
      comp[c.key] =
          Json{{"min", cf.min}, {"min_rank", cf.min_rank}, {"max", cf.max},
               {"max_rank", cf.max_rank}, {"mean", cf.mean}};
    }
    i["comparative"] = comp;
    Json per = Json::array();
    for (const RankFigures& f : n.per_rank) per.push_back(rank_json(f));
    i["per_rank"] = per;
    // Wait states: per_rank has one entry per rank of the trace (Analysis::ranks).
    Json waits = Json::object();
    for (int k = 0; k < kWaitKindCount; ++k) {
      Json ranks = Json::array();
      for (int rank : a.ranks) {
        auto it = std::lower_bound(n.per_rank.begin(), n.per_rank.end(), rank,
                                   [](const RankFigures& f, int r) { return f.rank < r; });
        const bool has = it != n.per_rank.end() && it->rank == rank;
        ranks.push_back(has ? it->waits[static_cast<size_t>(k)] : 0.0);
      }
      waits[kWaitKindKeys[k]] = Json{{"total", n.waits[static_cast<size_t>(k)]}, {"per_rank", ranks}};
    }
    i["wait_states"] = waits;
    Json partners = Json::array();
    for (size_t p = 0; p < n.waited_for.size() && p < kTopPartners; ++p) {
      const PartnerWait& pw = n.waited_for[p];
      partners.push_back(Json{{"rank", pw.rank}, {"seconds", pw.seconds}, {"uncertain_s", pw.uncertain_seconds}});
    }
    i["waited_for"] = partners;
    Json causes = Json::array();
    for (size_t c = 0; c < n.caused_by.size() && c < kTopCauses; ++c) {
      const CauseShare& cs = n.caused_by[c];
      causes.push_back(Json{{"interval", cs.interval}, {"rank", cs.rank}, {"seconds", cs.seconds}});
    }
    i["caused_by"] = causes;
    i["critical_path_s"] = a.delay_known ? Json(n.critical_path_s) : Json(nullptr);
    Json calls = Json::object();
    Json funcs = Json::array();
    for (const FunctionFigures& f : n.functions) {
      calls[f.name] = f.calls;
      funcs.push_back(Json{{"name", f.name}, {"calls", f.calls}, {"time", f.time}, {"bytes", f.bytes}});
    }
    i["calls"] = calls;
    i["functions"] = funcs;
    Json sites = Json::array();
    for (const CallSiteFigures& c : n.callsites) {
      Json site{{"function", c.function}, {"file", c.file.empty() ? Json(nullptr) : Json(c.file)},
                {"line", c.line}, {"site", c.site_label()}, {"calls", c.calls}, {"time", c.time},
                {"bytes", c.bytes}};
      sites.push_back(std::move(site));
    }
    i["callsites"] = sites;
    list.push_back(std::move(i));
  }
  j["intervals"] = std::move(list);
  // Names come from the trace: replace invalid UTF-8 rather than throw.
  out << j.dump(1, ' ', false, Json::error_handler_t::replace) << '\n';
}

}  // namespace prof::analysis
