/* Overhead of libprof, measured from inside an MPI program; run it plain and
 * under prof-run, alternating (bench/run_shim_overhead.sh does that).
 *
 * Prints one line "key value" per measurement, on rank 0:
 *   rdtsc_ns        cost of one rdtsc (the floor is two per call)
 *   comm_rank_ns    MPI_Comm_rank, per call (median of 11 batches)
 *   pingpong_ns     one-way latency of a 0-byte ping-pong between ranks 0 and 1
 *   message_heavy_s time of a message-heavy phase (Isend/Irecv/Waitall rings,
 *                   small Allreduce), wall time on rank 0
 *   calls           MPI calls rank 0 made (to compute bytes per event)
 *
 * With --message-heavy-only, only the message-heavy phase runs (bytes per event
 * of message traffic rather than of MPI_Comm_rank). With --exchange-only [N],
 * only N (default 200000) iterations of exchange_loop run (Irecv, Isend,
 * Waitall, an Allreduce every 16th): the bytes-per-event figure of
 * docs/performance.md. With --hop [BLOCKS] [TRIPS], only the ping-pong and
 * MPI_Comm_rank run, in many short blocks (default 201 of 1000 round trips;
 * MPI_Comm_rank 201 of 10000 calls), each figure the median over its blocks:
 * a block that meets the machine's hiccups (another process scheduled, the
 * trace's chunk copied out) is left out instead of averaged in
 * (bench/run_hop_pair.sh). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>
#include "mpi_patterns.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* --hop: the one-way latency of a 0-byte ping-pong and the cost of
 * MPI_Comm_rank, each the median over short blocks. */
static int hop_only(int rank, int argc, char** argv) {
  const int blocks = argc > 2 ? atoi(argv[2]) : 201;
  const long trips = argc > 3 ? atol(argv[3]) : 1000;
  if (blocks < 1 || trips < 1) {
    if (rank == 0) fprintf(stderr, "shim_overhead --hop [BLOCKS] [TRIPS]: both positive\n");
    return 2;
  }
  double* v = malloc((size_t)blocks * sizeof *v);
  if (!v) return 2;
  MPI_Barrier(MPI_COMM_WORLD);
  ping_pong(rank, trips);  /* warm-up: the first block pays the connection */
  for (int b = 0; b < blocks; ++b) {
    double t = now_s();
    ping_pong(rank, trips);
    v[b] = (now_s() - t) / (double)trips / 2 * 1e9;
  }
  const double pp_ns = median(v, blocks);
  for (int b = 0; b < blocks; ++b) {
    int r;
    double t = now_s();
    for (int i = 0; i < 10000; ++i) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    v[b] = (now_s() - t) / 10000 * 1e9;
  }
  const double rank_ns = median(v, blocks);
  free(v);
  if (rank == 0) printf("pingpong_ns %.3f\ncomm_rank_ns %.3f\n", pp_ns, rank_ns);
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long calls = 3;  /* Init, Comm_rank, Comm_size */
  if (argc > 1 && strcmp(argv[1], "--hop") == 0) {
    const int rc = hop_only(rank, argc, argv);
    MPI_Finalize();
    return rc;
  }
  if (argc > 1 && strcmp(argv[1], "--exchange-only") == 0) {
    const long n = argc > 2 ? atol(argv[2]) : 200000;
    MPI_Barrier(MPI_COMM_WORLD);
    calls += 1 + exchange_loop(rank, size, n);
    if (rank == 0) printf("calls %ld\n", calls + 1 /* Finalize */);
    MPI_Finalize();
    return 0;
  }
  const int heavy_only = argc > 1 && strcmp(argv[1], "--message-heavy-only") == 0;
  double rdtsc_ns = 0, rank_ns = 0, pp_ns = 0;
  if (!heavy_only) {

  /* rdtsc */
  enum { B = 11 };
  double batch[B];
  const int n_rdtsc = 2000000;
  for (int b = 0; b < B; ++b) {
    double t = now_s();
    uint64_t sink = 0;
    for (int i = 0; i < n_rdtsc; ++i) sink += __rdtsc();
    batch[b] = (now_s() - t) / n_rdtsc * 1e9;
    if (sink == 1) puts("");
  }
  rdtsc_ns = median(batch, B);

  /* MPI_Comm_rank */
  const int n_rank = 1000000;
  for (int b = 0; b < B; ++b) {
    int r;
    double t = now_s();
    for (int i = 0; i < n_rank; ++i) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    batch[b] = (now_s() - t) / n_rank * 1e9;
    calls += n_rank;
  }
  rank_ns = median(batch, B);

  /* 0-byte ping-pong between 0 and 1 */
  const int n_pp = 20000;
  MPI_Barrier(MPI_COMM_WORLD);
  calls++;
  for (int b = 0; b < B; ++b) {
    double t = now_s();
    calls += ping_pong(rank, n_pp);
    batch[b] = (now_s() - t) / n_pp / 2 * 1e9;
  }
  pp_ns = median(batch, B);
  }

  /* Message-heavy phase: rings of small nonblocking messages plus allreduces. */
  const int n_iter = 20000;
  MPI_Barrier(MPI_COMM_WORLD);
  calls++;
  double t = now_s();
  calls += message_ring(rank, size, n_iter);
  const double heavy_s = now_s() - t;

  if (rank == 0) {
    printf("rdtsc_ns %.3f\ncomm_rank_ns %.3f\npingpong_ns %.2f\nmessage_heavy_s %.4f\ncalls %ld\n",
           rdtsc_ns, rank_ns, pp_ns, heavy_s, calls + 1 /* Finalize */);
  }
  MPI_Finalize();
  return 0;
}
