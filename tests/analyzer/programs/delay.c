/* Root causes and the critical path on a real run (2 ranks). In interval 1
 * each rank computes 5 ms in interval 4, then in interval 3 rank 1 computes
 * 30 ms more than rank 0 (35 ms against 5), then both call MPI_Allreduce
 * inside interval 1: rank 0 waits there ~30 ms for rank 1. Since the two last
 * synchronized (the MPI_Barrier) rank 1 spent ~30 ms more than rank 0, so
 * interval 1's waits are caused by rank 1, in proportion to its time in
 * each interval: ~35/40 of the wait to interval 3, ~5/40 to interval 4. The
 * critical path runs through rank 1's interval 3. check_delay.py derives the
 * expected values from the program's stamps (realrun.h):
 *   NAME.begin / NAME.in / NAME.out / NAME.end   around the markers
 *   barrier.0 / barrier.1                        around the MPI_Barrier
 *   1.allreduce.0 / 1.allreduce.1                around the MPI_Allreduce */
#include <mpi.h>
#include <prof/markers.h>
#include <time.h>

#include "realrun.h"

#define PLANTED_MS 30

/* Busy work for `ms` milliseconds: CPU time, not MPI time. */
static void compute(int ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000.0 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

/* Markers with stamps around them (macros: the call sites stay in main). */
#define BEGIN(id, name)              \
  do {                               \
    realrun_stamp("%s.begin", name); \
    PROF_INTERVAL_BEGIN(id);         \
    realrun_stamp("%s.in", name);    \
  } while (0)
#define END(id, name)                \
  do {                               \
    realrun_stamp("%s.out", name);   \
    PROF_INTERVAL_END(id);           \
    realrun_stamp("%s.end", name);   \
  } while (0)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, sum = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  realrun_stamp("barrier.0");
  MPI_Barrier(MPI_COMM_WORLD);
  realrun_stamp("barrier.1");
  BEGIN(1, "1");
  BEGIN(4, "4");
  compute(5);
  END(4, "4");
  BEGIN(3, "3");
  compute(rank == 1 ? 5 + PLANTED_MS : 5);
  END(3, "3");
  realrun_stamp("1.allreduce.0");
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  realrun_stamp("1.allreduce.1");
  END(1, "1");

  const int stamps_failed = realrun_write_stamps(rank);
  MPI_Finalize();
  return (sum == 1 && !stamps_failed) ? 0 : 1;
}
