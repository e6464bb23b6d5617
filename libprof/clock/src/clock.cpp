// Timers and clock synchronization (see clock.h; Kurnosov's MPIPerf method).
#include "prof/clock.h"

#include <sys/time.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <vector>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "prof/polite_wait.h"

namespace prof::clock {

namespace {

// Exchange loop (MPIPerf): stop when the minimal RTT has not improved for
// kPatience exchanges, or at a cap that keeps oversubscribed runs short.
constexpr int kPatience = 100;
constexpr int kMaxExchanges = 2000;
constexpr uint64_t kMaxPairNs = 500'000'000;  // 0.5 s per pair
// init()'s sanity check of the TSC rate only has to tell a counter that runs
// from one that does not (plausible: 0.01..100 ns per tick), so a few us of
// spinning are enough: no sleep, which costs a timer slack and, on a busy
// machine, a time slice.
constexpr uint64_t kSanitySpanNs = 2'000;

// Tags on the private communicator (never visible to the application).
constexpr int kTagHello = 1;  // client -> server: ready to measure
constexpr int kTagGo = 2;     // server -> client: serving you now
constexpr int kTagPing = 3;   // client -> server: int, 1 = exchange, 0 = done
constexpr int kTagPong = 4;   // server -> client: Reply
constexpr int kTagChain = 5;  // ring: accumulated offset, rank i-1 -> rank i
constexpr int kTagCheck = 6;  // hierarchical: member -> leader -> member, one raw reading
constexpr int kChecks = 8;    // hierarchical: the shared-clock check's exchanges per member

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

#if defined(__x86_64__)
// Read with stdio, not iostreams: they would bring the C++ library's locale
// machinery into libprof.so, which every process it is preloaded into pays
// for at load (docs/design/shim-hot-path.md, "Start-up").
bool cpuinfo_has_invariant_tsc() {
  FILE* in = std::fopen("/proc/cpuinfo", "re");
  if (!in) return false;
  char* line = nullptr;
  size_t capacity = 0;
  bool found = false, constant = false, nonstop = false;
  while (!found && ::getline(&line, &capacity, in) > 0) {
    if (std::strncmp(line, "flags", 5) != 0) continue;
    found = true;  // the first CPU speaks for all
    const char* colon = std::strchr(line, ':');
    char* save = nullptr;
    for (char* w = strtok_r(colon ? line + (colon - line) + 1 : line, " \t\n", &save); w;
         w = strtok_r(nullptr, " \t\n", &save)) {
      constant |= std::strcmp(w, "constant_tsc") == 0;
      nonstop |= std::strcmp(w, "nonstop_tsc") == 0;
    }
  }
  std::free(line);
  std::fclose(in);
  return constant && nonstop;
}

bool has_invariant_tsc() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u &&
      __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8)))
    return true;
  // Hypervisors often hide the CPUID bit but the kernel still reports the flags.
  return cpuinfo_has_invariant_tsc();
}

// A (TSC, CLOCK_MONOTONIC) pair read at the same instant: the tightest of a few
// bracketed readings (about 1 us in all).
void tsc_mono_pair(uint64_t* tsc, uint64_t* mono) {
  uint64_t best = ~uint64_t{0};
  for (int i = 0; i < 16; ++i) {
    const uint64_t a = __rdtsc();
    const uint64_t m = mono_ns();
    const uint64_t b = __rdtsc();
    if (b >= a && b - a < best) {
      best = b - a;
      *tsc = a + (b - a) / 2;
      *mono = m;
    }
  }
}
#endif


void polite_recv(void* buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm) {
  MPI_Request req;
  PMPI_Irecv(buf, count, type, src, tag, comm, &req);
  polite_wait(&req);
}

// The server's answer: its reading (to_ns) and the granularity of its timer.
struct Reply {
  double ref_ns;
  double resolution_ns;
};

// One link's best exchange, from the client's side.
struct Link {
  uint64_t local_ticks = 0;
  double offset_ns = 0;   // server's clock minus ours
  double rtt_ns = 0;      // widened by the resolutions (see SyncResult)
  int exchanges = 0;
};

// Server side of one pair: answers `client` until it says done. Receives are
// posted before the message can arrive (no unexpected-message path), and all
// waits are polite_wait: when ranks outnumber cores the partner may share ours.
int serve(const Timer& timer, MPI_Comm comm, int client) {
  int msg = 0;
  polite_recv(&msg, 1, MPI_INT, client, kTagHello, comm);
  MPI_Request ping;
  PMPI_Irecv(&msg, 1, MPI_INT, client, kTagPing, comm, &ping);
  int go = 1;
  PMPI_Send(&go, 1, MPI_INT, client, kTagGo, comm);
  int served = 0;
  for (;;) {
    polite_wait(&ping);
    const Reply r{timer.to_ns(timer.now()), timer.resolution_ns()};
    if (msg == 0) break;
    PMPI_Irecv(&msg, 1, MPI_INT, client, kTagPing, comm, &ping);
    PMPI_Send(&r, 2, MPI_DOUBLE, client, kTagPong, comm);
    ++served;
  }
  return served;
}

// Client side of one pair: ping-pongs with `server`, keeps the exchange with the
// smallest round trip.
Link measure(const Timer& timer, MPI_Comm comm, int server) {
  int msg = 1;
  PMPI_Send(&msg, 1, MPI_INT, server, kTagHello, comm);
  polite_recv(&msg, 1, MPI_INT, server, kTagGo, comm);

  Link best;
  double best_raw_rtt = INFINITY;
  int since_best = 0;
  const uint64_t start = mono_ns();
  for (;;) {
    Reply r;
    MPI_Request pong;
    PMPI_Irecv(&r, 2, MPI_DOUBLE, server, kTagPong, comm, &pong);
    msg = 1;
    const uint64_t t_send = timer.now();
    PMPI_Send(&msg, 1, MPI_INT, server, kTagPing, comm);
    polite_wait(&pong);
    const uint64_t t_recv = timer.now();
    ++best.exchanges;
    ++since_best;
    if (t_recv >= t_send) {
      const Exchange ex = exchange_estimate(timer.to_ns(t_send), r.ref_ns, timer.to_ns(t_recv));
      if (ex.rtt_ns < best_raw_rtt) {
        best_raw_rtt = ex.rtt_ns;
        since_best = 0;
        best.local_ticks = t_send + (t_recv - t_send) / 2;
        best.offset_ns = ex.offset_ns;
        best.rtt_ns = ex.rtt_ns + 3.0 * std::max(timer.resolution_ns(), r.resolution_ns);
      }
    }
    if (since_best >= kPatience && best_raw_rtt < INFINITY) break;
    if (best.exchanges >= kMaxExchanges || mono_ns() - start >= kMaxPairNs) break;
  }
  msg = 0;
  PMPI_Send(&msg, 1, MPI_INT, server, kTagPing, comm);
  return best;
}

}  // namespace

// A short spin first (an answer from a peer on another core takes ~1 us), then
// sched_yield (lets a peer sharing our core run at once: a round trip then
// costs two context switches, not two time slices), then, for long waits
// (our turn in the linear scheme), sleeps from 50 us growing to 1 ms.
void polite_wait(MPI_Request* req, MPI_Status* status) {
  constexpr PoliteWait kPeerWait{64, std::chrono::milliseconds(2), std::chrono::microseconds(50),
                                 std::chrono::milliseconds(1)};
  wait_politely(
      [&] {
        int done = 0;
        PMPI_Test(req, &done, status);
        return done != 0;
      },
      kPeerWait);
}

// ---------------------------------------------------------------------------
// Timer

bool Timer::parse(std::string_view name, format::TimerKind* out) {
  using format::TimerKind;
  for (uint32_t k = uint32_t(TimerKind::Tsc); k <= uint32_t(TimerKind::MpiWtime); ++k)
    if (format::timer_name(TimerKind(k)) == name) {
      if (out) *out = TimerKind(k);
      return true;
    }
  return false;
}

bool Timer::init(format::TimerKind kind, std::string* why) {
  using format::TimerKind;
  auto fail = [&](const char* msg) {
    if (why) *why = msg;
    return false;
  };
  double npt = 1.0, res = 1.0;
  uint64_t t0 = 0, m0 = 0;
  switch (kind) {
    case TimerKind::Tsc: {
#if defined(__x86_64__)
      if (!has_invariant_tsc())
        return fail("no invariant TSC (CPUID 0x80000007 EDX bit 8 / constant_tsc+nonstop_tsc)");
      // The precise rate is measured later, over a longer span (ns_per_tick());
      // this only checks that the counter runs at a plausible rate.
      uint64_t t1 = 0, m1 = 0;
      tsc_mono_pair(&t0, &m0);
      while (mono_ns() - m0 < kSanitySpanNs) {
      }
      tsc_mono_pair(&t1, &m1);
      if (t1 <= t0 || m1 <= m0) return fail("TSC check failed: clock did not advance");
      npt = double(m1 - m0) / double(t1 - t0);
      if (!(npt > 0.01 && npt < 100.0)) return fail("TSC check gave an implausible rate");
      res = npt;
      break;
#else
      return fail("the TSC timer needs x86-64");
#endif
    }
    case TimerKind::Monotonic: {
      timespec r{};
      clock_getres(CLOCK_MONOTONIC, &r);
      res = std::max(1.0, double(r.tv_sec) * 1e9 + double(r.tv_nsec));
      break;
    }
    case TimerKind::Gettimeofday:
      res = 1000.0;
      break;
    case TimerKind::MpiWtime: {
      int initialized = 0, finalized = 0;
      PMPI_Initialized(&initialized);
      PMPI_Finalized(&finalized);
      if (!initialized || finalized) return fail("mpi_wtime needs MPI to be initialized");
      const double w = PMPI_Wtime();
      // The double's own granularity matters once Wtime counts from the epoch.
      const double ulp = std::nextafter(w, INFINITY) - w;
      res = std::max({1.0, PMPI_Wtick() * 1e9, ulp * 1e9});
      break;
    }
    default:
      return fail("unknown timer kind");
  }
  kind_ = kind;
  rate_pending_ = kind == TimerKind::Tsc;
  ns_per_tick_ = initial_ns_per_tick_ = npt;
  resolution_ns_ = res;
  calib_ticks0_ = t0;
  calib_mono0_ns_ = m0;
  calib_span_ns_ = 0;
  if (kind == TimerKind::MpiWtime) anchor_wtime();
  apply_shift();
  // The origin of to_ns(): an unshifted reading, so that a test shift shows in
  // to_ns() whether it was set before or after init().
  epoch_ = kind == TimerKind::Tsc ? t0 : now() - shift_ticks_;
  return true;
}

void Timer::anchor_wtime() {
  int finalized = 0;
  PMPI_Finalized(&finalized);
  if (finalized) return;
  wtime_anchor_mono_ns_ = mono_ns();
  wtime_anchor_ns_ = uint64_t(int64_t(std::llround(PMPI_Wtime() * 1e9)));
}

void Timer::measure_rate() const {
  rate_pending_ = false;
#if defined(__x86_64__)
  uint64_t t1 = 0, m1 = 0;
  tsc_mono_pair(&t1, &m1);
  if (m1 >= calib_mono0_ns_ && m1 - calib_mono0_ns_ < kMinRateSpanNs) {
    const long rest = long(kMinRateSpanNs - (m1 - calib_mono0_ns_));
    timespec ts{0, rest};
    while (nanosleep(&ts, &ts) != 0) {
    }
    tsc_mono_pair(&t1, &m1);
  }
  if (t1 <= calib_ticks0_ || m1 <= calib_mono0_ns_) return;  // keep init()'s check
  const double npt = double(m1 - calib_mono0_ns_) / double(t1 - calib_ticks0_);
  if (!(npt > 0.01 && npt < 100.0)) return;
  ns_per_tick_ = initial_ns_per_tick_ = resolution_ns_ = npt;
  calib_span_ns_ = m1 - calib_mono0_ns_;
#endif
}

void Timer::finish_calibration() {
  if (kind_ == format::TimerKind::MpiWtime) anchor_wtime();
#if defined(__x86_64__)
  if (kind_ != format::TimerKind::Tsc) return;
  if (rate_pending_) measure_rate();
  uint64_t t1 = 0, m1 = 0;
  tsc_mono_pair(&t1, &m1);
  // Only a longer span than the first measurement's is an improvement.
  if (t1 <= calib_ticks0_ || m1 <= calib_mono0_ns_ || m1 - calib_mono0_ns_ <= calib_span_ns_) return;
  const double npt = double(m1 - calib_mono0_ns_) / double(t1 - calib_ticks0_);
  if (npt > 0.01 && npt < 100.0) {
    ns_per_tick_ = npt;
    resolution_ns_ = npt;
    calib_span_ns_ = m1 - calib_mono0_ns_;
  }
#endif
}

void Timer::set_test_shift_ns(int64_t ns) {
  test_shift_ns_ = ns;
  apply_shift();
}

void Timer::apply_shift() {
  if (test_shift_ns_ == 0) {
    shift_ticks_ = 0;  // without measuring the TSC rate
  } else {
    // Two's complement: adding the wrapped value subtracts for negative shifts.
    shift_ticks_ = uint64_t(int64_t(std::llround(double(test_shift_ns_) / ns_per_tick())));
  }
  plain_tsc_ = kind_ == format::TimerKind::Tsc && shift_ticks_ == 0;
}

uint64_t Timer::slow_now() const {
  switch (kind_) {
    case format::TimerKind::Gettimeofday: {
      timeval tv;
      gettimeofday(&tv, nullptr);
      return (uint64_t(tv.tv_sec) * 1000000u + uint64_t(tv.tv_usec)) * 1000u + shift_ticks_;
    }
    case format::TimerKind::MpiWtime: {
      int finalized = 0;
      PMPI_Finalized(&finalized);
      if (finalized) return wtime_anchor_ns_ + (mono_ns() - wtime_anchor_mono_ns_) + shift_ticks_;
      return uint64_t(int64_t(std::llround(PMPI_Wtime() * 1e9))) + shift_ticks_;
    }
#if defined(__x86_64__)
    case format::TimerKind::Tsc:  // with a test shift (else now() reads it inline)
      return __rdtsc() + shift_ticks_;
#endif
    default: {
      // Monotonic. (Tsc on a non-x86 build never gets here: init refuses it.)
      timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec) + shift_ticks_;
    }
  }
}

// ---------------------------------------------------------------------------
// Synchronization

namespace {
std::atomic<int> pretend_nodes{0};

// Hierarchical scheme, on the private communicator `sc` (see the header):
//   1. Node communicators: the ranks sharing a node (MPI_COMM_TYPE_SHARED, or
//      world rank r on node r mod N with set_test_nodes(N)); each node's
//      lowest rank leads it, world rank 0 leads node 0 and is the reference.
//   2. Leaders measure in a binomial tree: in round k, leader l < 2^k serves
//      l + 2^k, then sends it {offset, rtt} against the reference, to which
//      the child adds its own link's. ceil(log2 leaders) rounds, the pairs of
//      a round in parallel; the bound adds up along at most that many hops.
//   3. Each member checks that it reads its leader's clock: one exchange of
//      raw readings, member t1 <= leader tL <= member t2 (causality holds for
//      one clock; clocks that differ by more than the round trip break it).
//      A member that shares it takes the leader's offset with no exchange
//      (converted at one raw instant, since each process converts ticks with
//      its own epoch and rate); one that does not measures against its
//      leader like a ring link, and says so (SyncResult::own_clock).
struct Hierarchy {
  MPI_Comm node = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
  int node_rank = 0, node_size = 1;
  ~Hierarchy() {
    if (node != MPI_COMM_NULL) PMPI_Comm_free(&node);
    if (leaders != MPI_COMM_NULL) PMPI_Comm_free(&leaders);
  }
};

void split_nodes(MPI_Comm sc, int rank, Hierarchy* h) {
  const int pretend = pretend_nodes.load();
  if (pretend > 0) {
    int world_rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_split(sc, world_rank % pretend, rank, &h->node);
  } else {
    PMPI_Comm_split_type(sc, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &h->node);
  }
  PMPI_Comm_rank(h->node, &h->node_rank);
  PMPI_Comm_size(h->node, &h->node_size);
  PMPI_Comm_split(sc, h->node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &h->leaders);
}

// What a leader tells its node: its offset against the reference, the bound's
// round trip, and one raw instant with its own reading of it in ns.
struct LeaderClock {
  double offset_ns, rtt_ns, raw_ticks, to_ns;
};

SyncResult hierarchical(const Timer& timer, MPI_Comm sc, int rank) {
  SyncResult res;
  Hierarchy h;
  split_nodes(sc, rank, &h);
  LeaderClock leader{0, 0, 0, 0};
  bool shared = true;
  double check_rtt_ns = INFINITY;
  if (h.node_rank != 0) {
    // The check first: it needs the leader only for a few replies, whenever
    // the leader gets to them. Causality only catches clocks that differ by
    // more than an exchange's round trip, so the best one bounds the error
    // of a clock taken to be shared.
    for (int k = 0; k < kChecks; ++k) {
      const uint64_t t1 = timer.now();
      int hello = 1;
      PMPI_Send(&hello, 1, MPI_INT, 0, kTagCheck, h.node);
      uint64_t leader_ticks = 0;
      polite_recv(&leader_ticks, 1, MPI_UINT64_T, 0, kTagCheck, h.node);
      const uint64_t t2 = timer.now();
      shared = shared && t1 <= leader_ticks && leader_ticks <= t2;
      if (t2 >= t1) check_rtt_ns = std::min(check_rtt_ns, timer.to_ns(t2) - timer.to_ns(t1));
    }
  } else {
    int l = 0, count = 1;
    PMPI_Comm_rank(h.leaders, &l);
    PMPI_Comm_size(h.leaders, &count);
    double chain[2] = {0.0, 0.0};  // {offset, rtt} against leader 0
    uint64_t local = 0;
    for (int step = 1; step < count; step *= 2) {
      if (l < step) {
        if (l + step < count) {
          res.exchanges += serve(timer, h.leaders, l + step);
          PMPI_Send(chain, 2, MPI_DOUBLE, l + step, kTagChain, h.leaders);
        }
      } else if (l < 2 * step) {
        const Link link = measure(timer, h.leaders, l - step);
        res.exchanges += link.exchanges;
        polite_recv(chain, 2, MPI_DOUBLE, l - step, kTagChain, h.leaders);
        chain[0] += link.offset_ns;
        chain[1] += link.rtt_ns;
        local = link.local_ticks;
      }
    }
    if (l == 0) local = timer.now();
    res.local_ticks = local;
    res.offset_ns = chain[0];
    res.rtt_ns = chain[1];
    leader = LeaderClock{chain[0], chain[1], static_cast<double>(local), timer.to_ns(local)};
    // The members' checks, in the order they come.
    for (int m = 0; m < (h.node_size - 1) * kChecks; ++m) {
      int hello = 0;
      MPI_Request req;
      MPI_Status status;
      PMPI_Irecv(&hello, 1, MPI_INT, MPI_ANY_SOURCE, kTagCheck, h.node, &req);
      polite_wait(&req, &status);
      const uint64_t now = timer.now();
      PMPI_Send(&now, 1, MPI_UINT64_T, status.MPI_SOURCE, kTagCheck, h.node);
    }
  }
  if (h.node_size == 1) return res;
  MPI_Request req;
  PMPI_Ibcast(&leader, 4, MPI_DOUBLE, 0, h.node, &req);
  polite_wait(&req);
  // Who could not take the leader's offset measures against the leader.
  std::vector<int> own(static_cast<size_t>(h.node_rank == 0 ? h.node_size : 1));
  const int mine = shared ? 0 : 1;
  PMPI_Igather(&mine, 1, MPI_INT, own.data(), 1, MPI_INT, 0, h.node, &req);
  polite_wait(&req);
  if (h.node_rank == 0) {
    for (int m = 1; m < h.node_size; ++m)
      if (own[static_cast<size_t>(m)]) res.exchanges += serve(timer, h.node, m);
    return res;
  }
  if (shared) {
    // One clock: the leader's offset, moved to this process's conversion of
    // the same raw instant.
    const auto ticks = static_cast<uint64_t>(leader.raw_ticks);
    res.local_ticks = ticks;
    res.offset_ns = leader.offset_ns + leader.to_ns - timer.to_ns(ticks);
    // (A clock off by less than the check's best round trip passes it.)
    res.rtt_ns = leader.rtt_ns + check_rtt_ns + 3.0 * timer.resolution_ns();
  } else {
    const Link link = measure(timer, h.node, 0);
    res.exchanges += link.exchanges;
    res.local_ticks = link.local_ticks;
    res.offset_ns = leader.offset_ns + link.offset_ns;
    res.rtt_ns = leader.rtt_ns + link.rtt_ns;
    res.own_clock = true;
  }
  return res;
}
}  // namespace

void set_test_nodes(int n) { pretend_nodes.store(n > 0 ? n : 0); }

const char* sync_scheme_name(SyncScheme scheme) {
  switch (scheme) {
    case SyncScheme::Hierarchical: return "hierarchical";
    case SyncScheme::Linear: return "linear";
    case SyncScheme::Ring: return "ring";
    case SyncScheme::None: return "none";
  }
  return "none";
}

bool parse_sync_scheme(std::string_view name, SyncScheme* out) {
  for (int k = int(SyncScheme::Hierarchical); k <= int(SyncScheme::None); ++k)
    if (name == sync_scheme_name(SyncScheme(k))) {
      if (out) *out = SyncScheme(k);
      return true;
    }
  return false;
}

SyncResult synchronize_clocks(const Timer& timer, MPI_Comm comm, SyncScheme scheme,
                              MPI_Comm* private_comm) {
  SyncResult res;
  int size = 1, rank = 0;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &rank);
  if (scheme == SyncScheme::None || size < 2) {
    res.local_ticks = timer.now();
    return res;
  }

  // A private communicator, so that our messages can never match the
  // application's. Nonblocking: ranks reach this point at different times
  // (finalize especially) and must wait for each other without spinning.
  MPI_Request req;
  MPI_Comm sc = private_comm ? *private_comm : MPI_COMM_NULL;
  if (sc == MPI_COMM_NULL) {
    PMPI_Comm_idup(comm, &sc, &req);
    polite_wait(&req);
    if (private_comm) *private_comm = sc;
  }

  if (scheme == SyncScheme::Hierarchical) {
    res = hierarchical(timer, sc, rank);
  } else if (scheme == SyncScheme::Linear) {
    if (rank == 0) {
      for (int c = 1; c < size; ++c) res.exchanges += serve(timer, sc, c);
      res.local_ticks = timer.now();
    } else {
      const Link l = measure(timer, sc, 0);
      res.local_ticks = l.local_ticks;
      res.offset_ns = l.offset_ns;
      res.rtt_ns = l.rtt_ns;
      res.exchanges = l.exchanges;
    }
  } else {
    // Ring: rank i measures against rank i-1. Odd ranks first (pairs (0,1),
    // (2,3), ... run in parallel), then even ranks ((1,2), (3,4), ...).
    Link link;
    const bool odd = rank % 2 == 1;
    for (int phase = 0; phase < 2; ++phase) {
      const bool client_phase = (phase == 0) == odd;
      if (client_phase) {
        if (rank > 0) link = measure(timer, sc, rank - 1);
      } else if (rank + 1 < size) {
        res.exchanges += serve(timer, sc, rank + 1);
      }
    }
    res.exchanges += link.exchanges;
    // Offsets against rank 0 accumulate along the chain 0 -> 1 -> ... -> n-1:
    // {offset, rtt} of rank i-1 against rank 0, plus ours against rank i-1.
    double chain[2] = {0.0, 0.0};
    if (rank > 0) {
      polite_recv(chain, 2, MPI_DOUBLE, rank - 1, kTagChain, sc);
      chain[0] += link.offset_ns;
      chain[1] += link.rtt_ns;
      res.local_ticks = link.local_ticks;
      res.offset_ns = chain[0];
      res.rtt_ns = chain[1];
    } else {
      res.local_ticks = timer.now();
    }
    if (rank + 1 < size) PMPI_Send(chain, 2, MPI_DOUBLE, rank + 1, kTagChain, sc);
  }

  // Leave together: a rank that is done would otherwise return to the
  // application and busy-poll in its next MPI call, taking a core from the
  // pairs still measuring (their round trips then last a time slice).
  PMPI_Ibarrier(sc, &req);
  polite_wait(&req);
  if (!private_comm) PMPI_Comm_free(&sc);
  return res;
}

}  // namespace prof::clock
