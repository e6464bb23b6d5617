// Problems of the run: unmatched messages, trace damage, ranks cut short,
// and the statistics that go with them.
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "engine.h"

namespace prof::analysis::detail {

// The trace's end reason as the report says it: "signal:15" is "signal
// SIGTERM"; no reason at all means the process died without a word (SIGKILL).
std::string ended_by(const std::string& reason) {
  if (reason.empty()) return "killed";
  if (reason == "exit") return "exit without finalize";
  if (reason.rfind("signal:", 0) == 0) {
    const int sig = std::atoi(reason.c_str() + 7);
    const char* name = sig > 0 ? sigabbrev_np(sig) : nullptr;
    return name ? std::string("signal SIG") + name : "signal " + reason.substr(7);
  }
  return reason;
}

void Engine::read_warnings(Analysis& a, std::map<std::string, Warning>& warns) {
  auto add = [&](const std::string& cat, uint64_t n, const std::string& example) {
    Warning& w = warns[cat];
    w.category = cat;
    w.count += n;
    if (w.examples.size() < 10 && !example.empty()) w.examples.push_back(example);
  };
  for (const auto& w : dir_.warnings) {
    add("rank files skipped or missing", 1, w);
    a.damaged = true;
  }
  for (const auto& r : ranks_) {
    const RankTrace& rt = *r->rt;
    const trace::ReadStats& s = rt.stats();
    const uint64_t damage = s.crc_mismatches + s.bad_chunk_headers + s.truncated_chunks +
                            s.bad_records + s.bad_definitions;
    if (damage) a.damaged = true;
    for (const auto& w : rt.warnings()) add("trace file problems (data skipped or salvaged)", 1, w);
    if (s.unsealed_chunks) a.cut_short = true;
    const std::string& end = rt.end_reason();
    if (end != "finalize") {
      a.cut_short = true;
      add("traces cut short (analyzed as far as they go)", 1,
          rt.path() + ": recording ended " +
              (end.empty() ? std::string("without a word (killed, e.g. SIGKILL)") : "by " + end));
    }
    if (s.backwards_timestamps)
      add("timestamps going backwards", s.backwards_timestamps,
          rt.path() + ": " + std::to_string(s.backwards_timestamps) + " records");
  }
}

// Messages never matched become warnings; per-rank and per-owner counts
// become the run's statistics.
void Engine::collect_warnings_and_stats(Analysis& a) {
  std::map<std::string, Warning> warns;
  for (auto& rp : ranks_) {
    Rank& r = *rp;
    r.channels.for_each([&](const ChannelKey& k, uint32_t& idx) {
      const Channel& ch = r.channel_store[idx - 1];
      if (!ch.sends.empty()) {
        r.unmatched_sends += ch.sends.size();
        r.warn.add(
            "sends never received",
            [&] {
              return std::to_string(ch.sends.size()) + " on rank " + std::to_string(k.src) +
                     " -> rank " + std::to_string(k.dst) + ", tag " + std::to_string(k.tag) +
                     ", communicator " + std::to_string(k.gid);
            },
            ch.sends.size());
      }
      if (!ch.recvs.empty()) {
        r.unmatched_recvs += ch.recvs.size();
        r.warn.add(
            "receives without a matching send",
            [&] {
              return std::to_string(ch.recvs.size()) + " on rank " + std::to_string(k.dst) +
                     " <- rank " + std::to_string(k.src) + ", tag " + std::to_string(k.tag) +
                     ", communicator " + std::to_string(k.gid);
            },
            ch.recvs.size());
      }
    });
    r.channels.clear();
    r.channel_store.clear();
    for (auto& c : r.channel_cache) c.index = 0;
    a.stats.events += r.events;
    a.stats.mpi_calls += r.calls;
    a.stats.messages_matched += r.matched;
    a.stats.unmatched_sends += r.unmatched_sends;
    a.stats.unmatched_receives += r.unmatched_recvs;
    a.stats.unbalanced_markers += r.intervals.unbalanced();
    a.stats.collective_instances += r.local_instances;
    r.warn.merge_into(warns);
  }
  for (auto& own : owners_) {
    a.stats.collective_instances += own.instances;
    a.stats.incomplete_collectives += own.incomplete;
    own.warn.merge_into(warns);
  }
  if (auto it = warns.find("completion of an unknown request"); it != warns.end())
    a.stats.unknown_requests += it->second.count;
  if (auto it = warns.find("start of an unknown request"); it != warns.end())
    a.stats.unknown_requests += it->second.count;
  a.stats.windows = windows_;
  for (const auto& rp : ranks_) {
    RankEnd end;
    end.rank = rp->rank;
    const std::string& reason = rp->rt->end_reason();
    end.ended_by = ended_by(reason);
    end.last_alive = rp->intervals.last_leave() > -kInf ? (rp->intervals.last_leave() - t_first_) * 1e-9 : 0;
    if (auto it = rp->rt->meta().find("records_lost"); it != rp->rt->meta().end())
      end.records_lost = std::strtoull(it->second.c_str(), nullptr, 10);
    if (end.ended_by != "finalize") a.complete = false;
    a.run_end.push_back(end);
  }
  if (opt_.windowed()) a.window = std::make_pair(opt_.window_from_s, opt_.window_to_s);
  read_warnings(a, warns);
  for (auto& [k, w] : warns) a.warnings.push_back(std::move(w));

}

}  // namespace prof::analysis::detail
