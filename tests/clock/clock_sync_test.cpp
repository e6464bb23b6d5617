// Clock synchronization under MPI: shifts some ranks' clocks by a known amount
// (Timer::set_test_shift_ns) and checks that synchronize_clocks recovers it.
//
//   mpiexec -n N clock_sync_test [--timers tsc,monotonic,gettimeofday,mpi_wtime]
//       [--schemes hierarchical,linear,ring,none] [--shifts 5000000,-3000000000]
//       [--repeat K] [--nodes N]
//
// --nodes N pretends world rank r is on node r mod N (set_test_nodes) and
// shifts whole nodes alike instead of ranks (below): the hierarchical scheme's
// leaders then measure in its tree, and a rank on the reference's node takes
// the reference's offset without an exchange, exactly.
// Rank 1 is shifted by each value of --shifts; rank r >= 2 by -(r * 700 us) so
// the ring's accumulation is checked too. Rank 0 is never shifted, and all ranks
// share one host (one raw clock), so rank 0's clock minus rank r's is known:
// -shift_r plus the difference of the init epochs that to_ns() counts from, i.e.
// to_ns_0(L - s) - to_ns_r(L) for our reading L and our shift s in ticks. The
// recovered offset must match it within the reported error bound rtt_ns (the
// method guarantees rtt_ns / 2).
// One summary line per case on rank 0; exits non-zero when any case fails.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "prof/clock.h"

using prof::format::TimerKind;
using prof::clock::SyncResult;
using prof::clock::SyncScheme;
using prof::clock::Timer;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

double mono_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

// With pretend nodes (--nodes N), every rank of node k = rank mod N is
// shifted alike (k x rank1_shift): ranks of one node share a clock, as on a
// real node, and node 0's is the reference's.
int pretend_nodes = 0;
int64_t shift_for(int rank, int64_t rank1_shift) {
  if (pretend_nodes > 0) return int64_t(rank % pretend_nodes) * rank1_shift;
  if (rank == 0) return 0;
  if (rank == 1) return rank1_shift;
  return -int64_t(rank) * 700'000;
}

// Per-rank outcome, gathered on rank 0.
struct Row {
  double offset_ns, expect_ns, rtt_ns, err_ns, sync_ms, exchanges, ok;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  std::vector<std::string> timers = {"tsc", "monotonic", "gettimeofday", "mpi_wtime"};
  std::vector<std::string> schemes = {"hierarchical", "linear", "ring", "none"};
  std::vector<int64_t> shifts = {5'000'000, -3'000'000'000LL};
  int repeat = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string opt = argv[i], val = argv[i + 1];
    if (opt == "--timers") timers = split(val);
    else if (opt == "--schemes") schemes = split(val);
    else if (opt == "--repeat") repeat = std::max(1, atoi(val.c_str()));
    else if (opt == "--nodes") {
      pretend_nodes = std::max(0, atoi(val.c_str()));
      prof::clock::set_test_nodes(pretend_nodes);
    }
    else if (opt == "--shifts") {
      shifts.clear();
      for (const auto& s : split(val)) shifts.push_back(strtoll(s.c_str(), nullptr, 10));
    } else {
      if (rank == 0) fprintf(stderr, "unknown option %s\n", opt.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }

  int failures = 0, cases = 0, skipped = 0;
  for (const auto& tname : timers) {
    TimerKind kind;
    if (!Timer::parse(tname, &kind)) {
      if (rank == 0) fprintf(stderr, "unknown timer %s\n", tname.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (const auto& sname : schemes) {
      SyncScheme scheme;
      if (!prof::clock::parse_sync_scheme(sname, &scheme)) {
        if (rank == 0) fprintf(stderr, "unknown scheme %s\n", sname.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      for (int64_t shift1 : shifts) {
        for (int rep = 0; rep < repeat; ++rep) {
          Timer timer;
          std::string why;
          int usable = timer.init(kind, &why) ? 1 : 0, all_usable = 0;
          MPI_Allreduce(&usable, &all_usable, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
          if (!all_usable) {
            if (rank == 0 && rep == 0)
              printf("SKIP %-12s %-6s n=%d: timer unusable here (%s)\n", tname.c_str(), sname.c_str(),
                     size, usable ? "on another rank" : why.c_str());
            ++skipped;
            continue;
          }
          const int64_t shift = shift_for(rank, shift1);
          timer.set_test_shift_ns(shift);
          // Rank 0's conversion, to say what its clock read at a given instant.
          double ref_npt = timer.ns_per_tick();
          uint64_t ref_epoch = timer.epoch();
          MPI_Bcast(&ref_npt, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
          MPI_Bcast(&ref_epoch, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
          const uint64_t shift_ticks = uint64_t(std::llround(double(shift) / timer.ns_per_tick()));
          // MPICH's MPI_Wtime counts from a whole second fixed at MPI_Init in each
          // process (an hour boundary, it seems): equal on all ranks unless their
          // MPI_Init straddled one. Account for it rather than assume it.
          int64_t wtime_base = 0, ref_wtime_base = 0;
          if (kind == TimerKind::MpiWtime) {
            timespec real;
            clock_gettime(CLOCK_REALTIME, &real);
            wtime_base = std::llround(double(real.tv_sec) + real.tv_nsec * 1e-9 - MPI_Wtime());
          }
          ref_wtime_base = wtime_base;
          MPI_Bcast(&ref_wtime_base, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
          MPI_Barrier(MPI_COMM_WORLD);

          const uint64_t before = timer.now();
          const double t0 = mono_ms();
          const SyncResult r = prof::clock::synchronize_clocks(timer, MPI_COMM_WORLD, scheme);
          const double t1 = mono_ms();
          const uint64_t after = timer.now();

          const bool none = scheme == SyncScheme::None;
          double expect = 0.0;
          if (!none && rank != 0) {
            // Rank 0's raw reading at that instant.
            const uint64_t ref_raw =
                r.local_ticks - shift_ticks + uint64_t((wtime_base - ref_wtime_base) * 1'000'000'000);
            expect = double(int64_t(ref_raw - ref_epoch)) * ref_npt - timer.to_ns(r.local_ticks);
          }
          const double err = r.offset_ns - expect;
          bool ok = r.local_ticks >= before && r.local_ticks <= after;
          if (none || rank == 0) {
            ok = ok && r.offset_ns == 0.0 && r.rtt_ns == 0.0;
          } else if (scheme == SyncScheme::Hierarchical && shift == shift_for(0, shift1) &&
                     (pretend_nodes > 0 ? rank % pretend_nodes == 0 : true)) {
            // Reads the reference's own clock (its node's, unshifted): its
            // offset is converted, never measured, and exact.
            ok = ok && r.exchanges == 0 && !r.own_clock && std::fabs(err) <= 1.0;
          } else {
            // What the method guarantees, whatever the load: a measured round
            // trip, and the true offset within it (no absolute bound on the RTT:
            // oversubscribed ranks may wait a time slice for every answer).
            ok = ok && r.rtt_ns > 0.0 && std::isfinite(r.rtt_ns) && std::fabs(err) <= r.rtt_ns;
          }

          Row mine{r.offset_ns, expect, r.rtt_ns, err, t1 - t0, double(r.exchanges), ok ? 1.0 : 0.0};
          std::vector<Row> rows(size);
          MPI_Gather(&mine, 7, MPI_DOUBLE, rows.data(), 7, MPI_DOUBLE, 0, MPI_COMM_WORLD);
          int case_ok = ok ? 1 : 0, all_ok = 0;
          MPI_Allreduce(&case_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
          ++cases;
          if (!all_ok) ++failures;
          if (rank == 0) {
            double sync_ms = 0;
            for (const Row& row : rows) sync_ms = std::max(sync_ms, row.sync_ms);
            printf("%s %-12s %-6s n=%d shift1=%+.0fns sync=%.2fms", all_ok ? "PASS" : "FAIL",
                   tname.c_str(), sname.c_str(), size, double(shift1), sync_ms);
            for (int i = 1; i < size; ++i) {
              const Row& row = rows[i];
              printf(" | r%d%s off=%.0f want=%.0f err=%+.1f rtt=%.0f ex=%.0f", i, row.ok ? "" : "(BAD)",
                     row.offset_ns, row.expect_ns, row.err_ns, row.rtt_ns, row.exchanges);
            }
            printf(" | r0 ex=%.0f\n", rows[0].exchanges);
            fflush(stdout);
          }
        }
      }
    }
  }
  if (rank == 0)
    printf("%s: %d cases, %d failed, %d skipped (n=%d)\n", failures ? "FAILED" : "OK", cases, failures,
           skipped, size);

  // mpi_wtime keeps reading after MPI_Finalize (MPICH's MPI_Wtime aborts then;
  // the shim reads the clock once more after PMPI_Finalize).
  Timer wt;
  const bool wt_ok = wt.init(TimerKind::MpiWtime, nullptr);
  wt.finish_calibration();
  const uint64_t before_fin = wt.now();
  MPI_Finalize();
  if (wt_ok) {
    const uint64_t after_fin = wt.now();
    const bool ok = after_fin >= before_fin && after_fin - before_fin < 1'000'000'000u;
    if (rank == 0 || !ok)
      printf("%s mpi_wtime after MPI_Finalize: +%.0f ns (rank %d)\n", ok ? "PASS" : "FAIL",
             double(int64_t(after_fin - before_fin)), rank);
    if (!ok) failures++;
  }
  return failures ? 1 : 0;
}
