// What the exports of an MPI job (the Chrome trace, the OTF2 archive) share:
// their time zero over every process's block, and a stream of bytes from
// the process that holds a rank to process 0, which writes the output.
//
// Algorithm
//   Time zero is the minimum of each block's earliest event (one
//   all_to_all). A holder's stream goes in rounds of about kRoundBytes, one
//   all_to_all each: to process 0 a flag byte ('m' more to come, 'e' the
//   last) and the round's bytes, to every other process the flag alone.
// Invariants
//   - Every process takes part in every round: the holder sends each, the
//     others take them until the flag says the last, so the all_to_all
//     calls match everywhere (exchange.h).
//   - No process holds more than a round of another's output.
#pragma once

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "damage_stop.h"
#include "interpret.h"
#include "prof/analysis/exchange.h"

namespace prof::analysis::detail {

inline constexpr size_t kRoundBytes = size_t{1} << 20;

// The exports' time zero in a job: the earliest event in the run's span
// over every process's own ranks (`holder[i] == job.rank()`).
inline double job_time_zero(Exchange& job, const std::vector<const trace::RankTrace*>& traces,
                            const std::vector<int>& holder, const RunSpan& span) {
  std::vector<const trace::RankTrace*> mine;
  for (size_t i = 0; i < traces.size(); ++i)
    if (holder[i] == job.rank()) mine.push_back(traces[i]);
  const double earliest = earliest_event_in_span(mine, span);
  const std::string bytes(reinterpret_cast<const char*>(&earliest), sizeof earliest);
  double least = earliest;
  for (const std::string& m : job.all_to_all(std::vector<std::string>(static_cast<size_t>(job.size()), bytes))) {
    if (m.size() != sizeof(double)) throw std::runtime_error("export: a process sent a short time zero");
    double theirs;
    std::memcpy(&theirs, m.data(), sizeof theirs);
    least = std::min(least, theirs);
  }
  return time_zero_of_earliest(least);
}

// What every export of a trace starts from: its ranks and their definitions,
// whether an MPI job's processes hold them in blocks (this one `me`), the
// run's span and time zero (over every block in a job).
struct ExportScope {
  ExportScope(const trace::TraceDir& dir, Exchange* job)
      : traces(traces_of(dir)),
        world_to_index(traces),
        held(job && job->size() > 1 && !dir.holder.empty()),
        me(held ? job->rank() : 0),
        span(traces),
        t0(held ? job_time_zero(*job, traces, dir.holder, span) : first_event_in_span(traces, span)) {
    registry.build(traces);
  }
  std::vector<const trace::RankTrace*> traces;
  WorldIndex world_to_index;
  Registry registry;
  bool held;
  int me;
  RunSpan span;
  double t0;

 private:
  static std::vector<const trace::RankTrace*> traces_of(const trace::TraceDir& dir) {
    std::vector<const trace::RankTrace*> out;
    for (const auto& t : dir.ranks) out.push_back(t.get());
    return out;
  }
};

// On the holder (never process 0): one round of its stream.
inline void send_round(Exchange& job, std::string_view bytes, bool last) {
  std::vector<std::string> out(static_cast<size_t>(job.size()), std::string(1, last ? 'e' : 'm'));
  out[0].append(bytes);
  out[static_cast<size_t>(job.rank())].clear();
  job.all_to_all(out);
}

// On every other process: the holder's rounds to its last; process 0 gets
// each as use(bytes, last). `what` names the export in the error.
template <class Use>
void take_rounds(Exchange& job, int holder, const char* what, Use&& use) {
  for (;;) {
    const std::vector<std::string> in = job.all_to_all(std::vector<std::string>(static_cast<size_t>(job.size())));
    const std::string& m = in[static_cast<size_t>(holder)];
    if (m.empty() || (m[0] != 'm' && m[0] != 'e'))
      throw std::runtime_error(std::string(what) + ": process " + std::to_string(holder) + " sent nothing");
    const bool last = m[0] == 'e';
    if (job.rank() == 0) use(std::string_view(m).substr(1), last);
    if (last) return;
  }
}

}  // namespace prof::analysis::detail
