// The workers' statistics (WorkerStatsReport, worker_stats.h).
#include "worker_stats.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "prof/trace_reader.h"

namespace prof::analysis::detail {

void WorkerStatsReport::read_setting() {
  const char* stats_env = std::getenv("PROF_ANALYZE_WORKER_STATS");
  on_ = stats_env && std::string(stats_env) == "1";  // (prof-analyze refuses values but 1 and 0)
  const char* log_env = std::getenv("PROF_ANALYZE_PHASE_LOG");
  phase_log_path_ = log_env ? log_env : "";
}

void WorkerStatsReport::write_phase_log(unsigned lo, unsigned hi, int process) const {
  const std::string path = process < 0 ? phase_log_path_ : phase_log_path_ + "." + std::to_string(process);
  const auto say_failed = [&path] {
    std::fprintf(stderr, "prof-analyze: cannot write the phase log %s: %s\n", path.c_str(), std::strerror(errno));
  };
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return say_failed();
  std::fprintf(f, "# phase worker busy_ns cpu_ns events handover_ns\n");
  size_t phases = 0;
  for (unsigned w = lo; w < hi; ++w) phases = std::max(phases, stats_[w].phases.size());
  for (size_t p = 0; p < phases; ++p)
    for (unsigned w = lo; w < hi; ++w) {
      if (p >= stats_[w].phases.size()) continue;
      const PhaseSample& s = stats_[w].phases[p];
      std::fprintf(f, "%zu %u %llu %llu %llu %llu\n", p, w, static_cast<unsigned long long>(s.busy_ns),
                   static_cast<unsigned long long>(s.cpu_ns), static_cast<unsigned long long>(s.events),
                   static_cast<unsigned long long>(s.handover_ns));
    }
  if (std::fclose(f) != 0) say_failed();
}

void WorkerStatsReport::print(unsigned workers, uint64_t phases, const std::vector<std::vector<size_t>>& worker_ranks,
                              const ProcessSpread& spread) const {
  auto sec = [](uint64_t ns) { return static_cast<double>(ns) * 1e-9; };
  std::fprintf(stderr, "prof-analyze workers: %u, phases %llu, setup %.3f s, finish %.3f s", workers,
               static_cast<unsigned long long>(phases), sec(setup_ns), sec(finish_ns));
  if (root_causes_ns + critical_path_ns != 0)
    std::fprintf(stderr, " (root causes %.3f s, critical path %.3f s)", sec(root_causes_ns), sec(critical_path_ns));
  std::fputc('\n', stderr);
  if (spread.spread()) {
    spread.print_stats();
  } else {
    // (Each process's Rank objects: its block's, whatever the trace's size.)
    size_t ranks = 0;
    for (const auto& block : worker_ranks) ranks += block.size();
    std::fprintf(stderr, "  rank states during the pass, of %zu ranks: %zu\n", ranks, ranks);
    std::fprintf(stderr, "  rank files opened, of %zu ranks: %llu\n", ranks,
                 static_cast<unsigned long long>(trace::RankTrace::files_opened()));
  }
  for (unsigned w = 0; w < workers; ++w) {
    const WorkerStats& s = stats_[w];
    const uint64_t waits = s.wait_ns + s.handover_ns + s.end_ns;
    std::fprintf(stderr,
                 "  worker %u: ranks %zu, events %llu, busy %.3f s (CPU %.3f), waiting %.3f s at phase ends "
                 "+ %.3f s for the others' first steps (CPU %.3f; %llu/%llu/%llu/%llu under 10 us/100 us/1 ms/longer), "
                 "phase ends run %.3f s (last at %llu phases)\n",
                 w, worker_ranks[w].size(), static_cast<unsigned long long>(s.events),
                 sec(s.total_ns - std::min(s.total_ns, waits)),
                 sec(s.total_cpu_ns - std::min(s.total_cpu_ns, s.wait_cpu_ns)), sec(s.wait_ns), sec(s.handover_ns),
                 sec(s.wait_cpu_ns), static_cast<unsigned long long>(s.waits[0]),
                 static_cast<unsigned long long>(s.waits[1]), static_cast<unsigned long long>(s.waits[2]),
                 static_cast<unsigned long long>(s.waits[3]), sec(s.end_ns), static_cast<unsigned long long>(s.last));
    std::fprintf(stderr, "    of it: first steps %.3f s, decoding %.3f s, settling %.3f s; decoding by rank, as visited:",
                 sec(s.first_steps_ns), sec(s.decode_ns), sec(s.settle_ns));
    const std::vector<size_t>& ranks = worker_ranks[w];
    constexpr size_t kListed = 8;  // (more: the least and the most)
    if (ranks.size() <= kListed) {
      for (size_t k = 0; k < ranks.size() && k < s.rank_decode_ns.size(); ++k)
        std::fprintf(stderr, " %zu %.3f s", ranks[k], sec(s.rank_decode_ns[k]));
    } else if (!s.rank_decode_ns.empty()) {
      const auto [least, most] = std::minmax_element(s.rank_decode_ns.begin(), s.rank_decode_ns.end());
      std::fprintf(stderr, " from %.3f s (rank %zu) to %.3f s (rank %zu)", sec(*least),
                   ranks[static_cast<size_t>(least - s.rank_decode_ns.begin())], sec(*most),
                   ranks[static_cast<size_t>(most - s.rank_decode_ns.begin())]);
    }
    std::fputc('\n', stderr);
  }
}

}  // namespace prof::analysis::detail
