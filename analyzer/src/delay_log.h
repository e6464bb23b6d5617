// What the streaming pass keeps of one rank for the two analyses that run
// after it, on the whole run (docs/metrics.md, "Root causes" and "Critical
// path"): delay_analysis.cpp and critical_path.cpp.
//
// Both look back in time (since two ranks last synchronized; backward from
// the run's end), which one forward pass cannot do without keeping history:
// so each rank logs, in its own worker,
//   - contexts: from which instant which execution context (local node, or a
//     Combo of threads; kNoContext after the root ended) was open;
//   - syncs: the leave of each call that synchronized it with another rank:
//     a matched send or receive (the peer), a collective (its communicator);
//   - waits: each wait state with a partner (Engine::credit_partner): where
//     it waited, on whom, from when to when (the partner's arrival).
// Memory grows with markers, point-to-point and collective calls (16 or 24
// bytes each), not only with what is in flight: Options::delay_analysis
// turns the logs and the analyses off.
//
// Invariants: a rank's log is written only by its worker; with several
// processes it travels to process 0 with the rank's other figures
// (Engine::gather_at_root), so the analyses see the same logs either way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstddef>
#include <vector>

#include "prof/trace_reader.h"

namespace prof::analysis::detail {

struct DelayLog {
  struct Context {
    double t;
    uint32_t context;
    uint32_t unused = 0;
  };
  struct Sync {
    double leave;
    int32_t peer;   // world rank of a send's or receive's peer; -1: a collective
    uint32_t comm;  // a collective's communicator: index into `comms`
  };
  struct Wait {
    double from, to;  // to: the partner's arrival (enter, or a receive's issue)
    int32_t partner;  // world rank
    uint32_t node;    // local node of the waiting call
  };
  struct Comm {
    uint64_t gid = 0;
    // World ranks, sorted. The communicator's own list where that is sorted
    // (shared with its definition, and MPI_COMM_WORLD's with every rank's):
    // a copy each was 64 KB a rank at 16384 ranks.
    trace::RankList members;
  };
  std::vector<Context> contexts;
  std::vector<Sync> syncs;
  std::vector<Wait> waits;
  std::vector<Comm> comms;
  uint32_t last_comm = UINT32_MAX;  // the communicator found last (index)

  // The index of communicator `gid` in `comms`; its members (world ranks:
  // `local`, and `remote` for an intercommunicator) are read the first time.
  uint32_t comm_index(uint64_t gid, const trace::RankList& local, const trace::RankList* remote) {
    if (last_comm < comms.size() && comms[last_comm].gid == gid) return last_comm;
    for (uint32_t i = 0; i < comms.size(); ++i)
      if (comms[i].gid == gid) return last_comm = i;
    Comm c;
    c.gid = gid;
    if (remote == nullptr && std::is_sorted(local.begin(), local.end())) {
      c.members = local;
    } else {
      std::vector<int32_t> m(local.begin(), local.end());
      if (remote) m.insert(m.end(), remote->begin(), remote->end());
      std::sort(m.begin(), m.end());
      c.members = trace::RankList(std::move(m));
    }
    comms.push_back(std::move(c));
    return last_comm = static_cast<uint32_t>(comms.size() - 1);
  }
};

// The partition point of a sorted log for a predicate true on a prefix of
// it (the entries before some instant), found from `hint` (where a search
// of the same log ended last): galloping towards it, steps 1, 2, 4, ... up
// to `max_step`, then a binary search in the range left. The place a binary
// search of the whole log finds; where successive instants are close, a few
// entries next to the last ones are read instead of a path through the log
// (a miss each on a log out of cache).
template <class T, class Before>
size_t partition_near(const T* log, size_t n, size_t hint, Before before, size_t max_step = SIZE_MAX) {
  hint = std::min(hint, n);
  size_t lo = 0, hi = n;  // the answer is in [lo, hi]
  size_t step = 1;
  if (hint < n && before(log[hint])) {
    lo = hint + 1;
    while (lo < n && step <= max_step) {
      const size_t probe = std::min(n - 1, lo + step - 1);
      if (!before(log[probe])) {
        hi = probe;
        break;
      }
      lo = probe + 1;
      step *= 2;
    }
  } else {
    hi = hint;
    while (hi > 0 && step <= max_step) {
      const size_t probe = hi > step ? hi - step : 0;
      if (before(log[probe])) {
        lo = probe + 1;
        break;
      }
      hi = probe;
      step *= 2;
    }
  }
  return static_cast<size_t>(std::partition_point(log + lo, log + hi, before) - log);
}
template <class T, class Before>
size_t partition_near(const std::vector<T>& log, size_t hint, Before before, size_t max_step = SIZE_MAX) {
  return partition_near(log.data(), log.size(), hint, before, max_step);
}

}  // namespace prof::analysis::detail
