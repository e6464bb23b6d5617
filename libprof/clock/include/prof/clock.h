// Timers and clock synchronization (Kurnosov's MPIPerf method, section 4;
// docs/references.md).
//
// Timer: raw ticks on the hot path (rdtsc for TSC, a vDSO clock_gettime
// otherwise), converted to ns offline with ns_per_tick. The TSC rate comes from
// (TSC, CLOCK_MONOTONIC) pairs, each read in a tight bracket: one at init(),
// one at the first use of the rate (after PMPI_Init, so the measurement costs
// the program nothing), one at finalize (the whole run: the rate the trace
// ends with). init() only checks that the counter runs, over 2 us.
//
// ClockSync: the offset of each rank's clock against rank 0 from the ping-pong
// exchange with the smallest round trip; exchanges stop when the minimum has
// not improved for `kPatience` exchanges (or a cap is hit). Offset error is
// bounded by that exchange's RTT/2. Schemes: hierarchical (ranks sharing a
// node's clock take their leader's offset, leaders measure in a binomial tree:
// O(log nodes) rounds; after Hunold and Carpen-Amarie, docs/references.md),
// linear (rank 0 against each rank in turn) and ring (each rank against its
// predecessor, offsets summed along the ring). Only PMPI calls: the tool's own
// traffic is never recorded.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "prof/trace_format.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include <time.h>

namespace prof::clock {

class Timer {
 public:
  // Accepts "tsc", "monotonic", "gettimeofday", "mpi_wtime"; false otherwise.
  static bool parse(std::string_view name, format::TimerKind* out);

  // Prepares the timer. TSC: checks that it is invariant, takes the first
  // (TSC, CLOCK_MONOTONIC) pair and checks the rate over 2 us of spinning (the
  // precise rate comes later, see ns_per_tick()). Returns false with *why set
  // when the timer cannot be used here (e.g. no invariant TSC; mpi_wtime
  // before MPI_Init, which MPICH refuses).
  bool init(format::TimerKind kind, std::string* why);

  format::TimerKind kind() const { return kind_; }
  // now() is a bare rdtsc (the TSC, no test shift).
  bool plain_tsc() const { return plain_tsc_; }

  // Raw ticks. Hot path: the default timer (TSC, no test shift) is one flag
  // test and rdtsc, inline; every other timer, out of line.
  __attribute__((always_inline)) inline uint64_t now() const {
#if defined(__x86_64__)
    if (__builtin_expect(plain_tsc_, 1)) return __rdtsc();
#endif
    return slow_now();
  }

  // Nanoseconds per tick. TSC: the first call measures the rate over [init(),
  // now] and keeps it until finish_calibration(); a first call less than
  // kMinRateSpanNs after init() waits for the rest of that span. The shim's
  // first call comes after PMPI_Init, on the thread that called it (the first
  // call is not thread-safe; later ones are).
  double ns_per_tick() const {
    if (rate_pending_) measure_rate();
    return ns_per_tick_;
  }
  // Shortest span a TSC rate is measured over: a pair is read within tens of
  // ns, so the rate's relative error is below 1e-4.
  static constexpr uint64_t kMinRateSpanNs = 1'000'000;
  // Raw reading taken by init(). Every conversion to ns is relative to it, so a
  // refined ns_per_tick moves times by (t - epoch) * error, not t * error (raw
  // TSC values are ~1e14). Clock sync must use to_ns(), and the trace stores the
  // epoch (M epoch_ticks) so readers convert the same way.
  uint64_t epoch() const { return epoch_; }
  double to_ns(uint64_t ticks) const {
    return static_cast<double>(static_cast<int64_t>(ticks - epoch_)) * ns_per_tick();
  }
  // The rate as first measured, before any finish_calibration() (equal to
  // ns_per_tick() for the fixed-rate timers): for diagnostics.
  double initial_ns_per_tick() const {
    if (rate_pending_) measure_rate();
    return initial_ns_per_tick_;
  }
  // Granularity of one reading in ns (1000 for gettimeofday, about one tick for
  // TSC, clock_getres for monotonic, MPI_Wtick for mpi_wtime).
  double resolution_ns() const {
    if (rate_pending_) measure_rate();
    return resolution_ns_;
  }
  // Re-measures the TSC rate over [init, now] (call before the final sync).
  // mpi_wtime: re-anchors the fallback that serves readings after MPI_Finalize
  // (MPI_Wtime aborts then), so call it shortly before PMPI_Finalize.
  void finish_calibration();

  // Test-only: shifts every reading by `ns` (PROF_TEST_CLOCK_SHIFT_NS), to prove
  // that synchronization recovers a known offset.
  void set_test_shift_ns(int64_t ns);

 private:
  // Cold for the wrappers' sake (see runtime.h's attach_thread).
  [[gnu::noinline, gnu::cold]] uint64_t slow_now() const;
  void measure_rate() const;
  void apply_shift();
  void anchor_wtime();
  format::TimerKind kind_ = format::TimerKind::Monotonic;
  // kind_ is Tsc and shift_ticks_ 0: now() is a bare rdtsc (apply_shift keeps it).
  bool plain_tsc_ = false;
  // The TSC rate is measured lazily by the const accessors (see ns_per_tick()).
  mutable bool rate_pending_ = false;
  mutable double ns_per_tick_ = 1.0;
  mutable double initial_ns_per_tick_ = 1.0;
  mutable double resolution_ns_ = 1.0;
  mutable uint64_t calib_span_ns_ = 0;  // CLOCK_MONOTONIC span the rate was measured over
  uint64_t shift_ticks_ = 0;
  int64_t test_shift_ns_ = 0;
  uint64_t calib_ticks0_ = 0;     // raw TSC (no test shift) of init()'s pair
  uint64_t calib_mono0_ns_ = 0;   // CLOCK_MONOTONIC of the same pair
  uint64_t epoch_ = 0;            // set by init(): the origin of to_ns()
  // mpi_wtime after MPI_Finalize (MPICH aborts in MPI_Wtime then): a
  // (Wtime ns, CLOCK_MONOTONIC ns) pair from init()/finish_calibration(), and
  // later readings extrapolated from it with CLOCK_MONOTONIC.
  uint64_t wtime_anchor_ns_ = 0;
  uint64_t wtime_anchor_mono_ns_ = 0;
};

enum class SyncScheme { Hierarchical, Linear, Ring, None };
const char* sync_scheme_name(SyncScheme scheme);

// Test only (PROF_TEST_NODES): the hierarchical scheme takes world rank r to
// be on node r mod n (0: the real nodes, by MPI_COMM_TYPE_SHARED).
void set_test_nodes(int n);
bool parse_sync_scheme(std::string_view name, SyncScheme* out);

struct SyncResult {
  uint64_t local_ticks = 0;  // our raw time at the chosen exchange (rank 0, none: end of sync)
  // Rank 0's clock minus ours, in ns, both read with to_ns() (so it includes the
  // difference of the init epochs); 0 on rank 0.
  double offset_ns = 0;
  // Round trip of that exchange (ring: summed along the chain) widened by three
  // resolutions of the coarser timer, so that |offset error| <= rtt_ns / 2 even
  // for coarse timers (gettimeofday reads a 0.3 us round trip as 0); 0 on rank 0.
  double rtt_ns = 0;
  int exchanges = 0;         // exchanges this rank took part in (served + measured)
  // Hierarchical: this rank does not read its node leader's clock (the check
  // failed), so it measured against the leader instead of taking its offset.
  bool own_clock = false;
};

// Waits for a request without hogging a core: MPICH busy-polls in blocking
// calls, which starves the peers we wait for when ranks outnumber cores (or
// share them with other work). For the tool's own collectives.
void polite_wait(MPI_Request* req, MPI_Status* status = MPI_STATUS_IGNORE);

// Collective over `comm` (MPI_COMM_WORLD): every rank must call it. Uses PMPI only.
// The exchanges run on a private duplicate of `comm`, made and freed here,
// or, with `private_comm`, made on the first call (when *private_comm is
// MPI_COMM_NULL) and kept there for later calls; the caller frees it.
SyncResult synchronize_clocks(const Timer& timer, MPI_Comm comm, SyncScheme scheme,
                              MPI_Comm* private_comm = nullptr);

// Pure maths, unit-tested: offset and RTT of one exchange. t_send and t_recv are
// the client's clock around the exchange, t_ref the reference's reading.
struct Exchange {
  double offset_ns;
  double rtt_ns;
};
inline Exchange exchange_estimate(double t_send_ns, double t_ref_ns, double t_recv_ns) {
  return {t_ref_ns - (t_send_ns + t_recv_ns) / 2.0, t_recv_ns - t_send_ns};
}
// Linear interpolation of the offset between the init and final syncs (drift).
inline double interpolate_offset(double t, double t0, double off0, double t1, double off1) {
  if (t1 <= t0) return off0;
  return off0 + (off1 - off0) * (t - t0) / (t1 - t0);
}

}  // namespace prof::clock
