/* A halo exchange, checked through prof-analyze's JSON (2 ranks; check_halo.py).
 *
 * Each of ITERATIONS iterations posts 64 MPI_Irecv and 64 MPI_Isend of small
 * messages (4..64 bytes) to the peer and completes all 128 with one
 * MPI_Waitall. Every iteration is interval 1, except iteration LATE_ITERATION,
 * interval 2, in which rank 1 sleeps LATE_MS before posting its sends: rank 0's
 * 64 receives all wait for that one late sender, so its PotentSync there is
 * about LATE_MS, counted once, not 64 times.
 *
 * Stamps (realrun.h), for iteration LATE_ITERATION only:
 *   late.irecv0   before the first Irecv      late.isend0    before the first Isend
 *   late.isend63  after the last Isend        late.waitall1  after the Waitall */
#include <mpi.h>
#include <prof/markers.h>
#include <stdio.h>
#include <string.h>

#include "realrun.h"

enum { ITERATIONS = 200, LATE_ITERATION = 100, MESSAGES = 64, LATE_MS = 30 };

static int bytes_of(int message) { return 4 * (1 + message % 16); } /* 4..64 */

int main(int argc, char** argv) {
  const int rank = realrun_init_2ranks(&argc, &argv, "halo");
  const int peer = 1 - rank;
  static char out[MESSAGES][64], in[MESSAGES][64];
  MPI_Request requests[2 * MESSAGES];
  int wrong = 0;

  MPI_Barrier(MPI_COMM_WORLD);
  for (int it = 0; it < ITERATIONS; ++it) {
    const int late = it == LATE_ITERATION;
    const int interval = late ? 2 : 1;
    PROF_INTERVAL_BEGIN(interval);
    for (int m = 0; m < MESSAGES; ++m) memset(out[m], (it + m + rank) & 0x7f, sizeof out[m]);
    if (late) realrun_stamp("late.irecv0");
    for (int m = 0; m < MESSAGES; ++m)
      MPI_Irecv(in[m], bytes_of(m), MPI_BYTE, peer, m, MPI_COMM_WORLD, &requests[m]);
    if (late && rank == 1) realrun_sleep_ms(LATE_MS);
    if (late) realrun_stamp("late.isend0");
    for (int m = 0; m < MESSAGES; ++m)
      MPI_Isend(out[m], bytes_of(m), MPI_BYTE, peer, m, MPI_COMM_WORLD, &requests[MESSAGES + m]);
    if (late) realrun_stamp("late.isend63");
    MPI_Waitall(2 * MESSAGES, requests, MPI_STATUSES_IGNORE);
    if (late) realrun_stamp("late.waitall1");
    PROF_INTERVAL_END(interval);
    for (int m = 0; m < MESSAGES; ++m)
      if (in[m][0] != (char)((it + m + peer) & 0x7f) || in[m][bytes_of(m) - 1] != in[m][0]) ++wrong;
  }

  if (wrong) fprintf(stderr, "halo: rank %d: %d messages with wrong contents\n", rank, wrong);
  const int stamps_failed = realrun_write_stamps(rank);
  MPI_Finalize();
  return wrong || stamps_failed ? 1 : 0;
}
