// The JSON report: the keys docs/interfaces.md lists, in its order.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "prof/analysis/report.h"
#include "prof/definition_lines.h"

namespace prof::analysis {
namespace {

using Json = nlohmann::ordered_json;

Json main_json(const MainFigures& m) {
  return Json{{"efficiency", m.efficiency},
              {"execution_time", m.execution_time},
              {"processors", m.processors},
              {"total_time", m.total_time},
              {"productive_time", m.productive_time},
              {"lost_time", m.lost_time},
              {"mpi_time", m.mpi_time},
              {"idle_time", m.idle_time},
              {"comm_time", m.comm_time},
              {"sendrecv_time", m.sendrecv_time},
              {"collective_time", m.collective_time},
              {"alltoall_time", m.alltoall_time},
              {"potential_sync", m.potential_sync},
              {"time_variation", m.time_variation},
              {"time_of_start", m.time_of_start}};
}

Json rank_json(const RankFigures& f) {
  return Json{{"rank", f.rank},
              {"executions", f.executions},
              {"time", f.time},
              {"cpu_time", f.cpu},
              {"lost_time", f.lost},
              {"mpi_time", f.mpi},
              {"idle_time", f.idle},
              {"comm_time", f.comm},
              {"sendrecv_time", f.sendrecv},
              {"collective_time", f.collective},
              {"alltoall_time", f.alltoall},
              {"potential_sync", f.potential_sync},
              {"time_variation", f.time_variation},
              {"time_of_start", f.time_of_start},
              {"calls", f.calls}};
}

}  // namespace

void write_json_report(const Analysis& a, std::ostream& out) {
  Json j;
  j["processors"] = a.processors;
  if (a.window) j["window"] = {{"from", a.window->first}, {"to", a.window->second}};
  j["world_size"] = a.world_size;
  j["ranks"] = a.ranks;
  j["executable"] = a.executable;
  j["bcast_impl"] = a.bcast_impl;
  j["bcast_fallbacks"] = a.bcast_fallbacks;
  // The length the critical path covers (null when not computed: a window).
  j["run_span_s"] = a.delay_known ? Json(a.run_span_s) : Json(nullptr);
  if (a.clock.known) {
    Json per_rank = Json::array();
    for (const auto& [rank, error_s] : a.clock.per_rank) per_rank.push_back({{"rank", rank}, {"error_s", error_s}});
    j["clock"] = {{"scheme", a.clock.scheme}, {"max_error_s", a.clock.max_error_s}, {"per_rank", per_rank}};
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
    if (c.comm) f["comm"] = *c.comm;
    if (c.peer) f["peer"] = *c.peer;
    else if (c.any_source) f["peer"] = "MPI_ANY_SOURCE";
    if (c.tag) f["tag"] = *c.tag;
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
    for (int c = 0; c < kComparativeCount; ++c) {
      const ComparativeFigures& cf = n.comparative[static_cast<size_t>(c)];
      comp[comparative_key(static_cast<Comparative>(c))] =
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
    list.push_back(std::move(i));
  }
  j["intervals"] = std::move(list);
  // Names come from the trace: replace invalid UTF-8 rather than throw.
  out << j.dump(1, ' ', false, Json::error_handler_t::replace) << '\n';
}

}  // namespace prof::analysis
