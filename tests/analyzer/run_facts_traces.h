// Synthetic runs for the run record's and the comparison's tests: two
// intervals whose lost time is exact integer arithmetic, with or without the
// definitions of what the run ran under (M mpi_library, transport, V, P).
#pragma once

#include <string>

#include "trace_builder.h"

namespace prof::test {

struct Plan {
  int ranks = 2;
  uint64_t slow = 0;            // rank 0 computes this much longer inside interval 2
  uint64_t wait1 = 20 * kMs;    // how long ranks 1.. wait in interval 1's Allreduce
  bool extra = false;           // interval 3 (call site 3) exists
  bool facts = true;            // the run record's definitions
  std::string bcast = "native";
};

// Interval 1 (site 1): ranks 1.. wait `wait1` in an Allreduce for rank 0.
// Interval 2 (site 2): ranks 1.. wait in a Barrier while rank 0 computes
// 1 ms + `slow`, so its lost time is (ranks - 1) * (1 ms + slow) + 100 us.
inline void build(TraceBuilder& b, const Plan& p) {
  for (int r = 0; r < p.ranks; ++r) {
    if (p.facts) {
      b.w(r).meta("mpi_library", format::escaped_text("MPICH Version:\t4.0.2\nMPICH Device:\tch4:ucx"));
      b.w(r).meta("transport", "ucx");
      b.w(r).meta("transport_version", "1.13.1");
      b.w(r).meta("host", r < 2 ? "n0" : "n1");
      b.w(r).meta("command", "./app -n 10");
      b.w(r).environment("UCX_TLS", p.bcast == "shm" ? "sm,self" : "sm");
      b.w(r).setting("PROF_BCAST", {p.bcast, p.bcast != "native"});
      b.w(r).setting("PROF_SYNC", {"hierarchical", false});
      b.w(r).setting("PROF_OUTPUT", {"/tmp/trace-" + p.bcast, true});
    }
    const uint64_t s = p.slow;
    b.init(r, 0, 1 * kMs);
    b.begin(r, 2 * kMs, 1, 1);
    b.collective(r, Allreduce, r == 0 ? 2 * kMs + p.wait1 : 2 * kMs + 100 * kUs, 2 * kMs + p.wait1 + 100 * kUs);
    b.end(r, 3 * kMs + p.wait1, 1, 1);
    const uint64_t t2 = 4 * kMs + p.wait1;
    b.begin(r, t2, 2, 2);
    b.collective(r, Barrier, r == 0 ? t2 + 1 * kMs + s : t2, t2 + 1 * kMs + s + 100 * kUs);
    b.end(r, t2 + 2 * kMs + s, 2, 2);
    uint64_t t = t2 + 3 * kMs + s;
    if (p.extra) {
      b.begin(r, t, 3, 3);
      b.end(r, t + 1 * kMs, 3, 3);
    }
    b.finalize(r, t + 5 * kMs, t + 6 * kMs);
  }
  b.close();
}

inline analysis::Analysis analyzed(const Plan& p, TraceBuilder& b) {
  build(b, p);
  return analysis::analyze(b.dir());
}

}  // namespace prof::test
