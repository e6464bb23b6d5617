/* Known waits, for checking prof-analyze on a real run (2 ranks). Each phase is
 * its own interval; rank 0 is made late by computing D = 40 ms:
 *
 *   interval 1  late sender, blocking: rank 1 MPI_Recv waits ~D for rank 0's Send
 *   interval 2  late sender through MPI_Wait: rank 1 Irecv + Wait waits ~D
 *   interval 3  late entry into a collective: rank 1 waits ~D in MPI_Allreduce
 *   interval 4  pure imbalance, no MPI: rank 0 computes 2D, rank 1 D -> Idle_1 ~ D
 *   interval 5  repeated 3 times, with interval 6 nested in it each time
 *   interval 7  late receiver: rank 0's MPI_Ssend waits ~50 ms for rank 1's Recv
 *
 * "~D" is what an idle machine gives; a busy one stretches the computation or
 * delays a rank, so the program stamps (realrun.h) every marker and MPI call
 * and check_known_waits.py derives the expected values from those stamps:
 *   NAME.begin / NAME.in / NAME.out / NAME.end   around the markers
 *   NAME.CALL.0 / NAME.CALL.1                    around an MPI call
 * with NAME the interval id (1..4) or "5.K" / "6.K" for execution K. */
#include <mpi.h>
#include <prof/markers.h>
#include <stdio.h>
#include <time.h>

#include "realrun.h"

#define D_MS 40

/* Busy work for `ms` milliseconds: CPU time, not MPI time. */
static void compute(int ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000.0 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

/* Markers and calls with stamps around them (macros: the markers' call site
 * stays in main). */
#define BEGIN(id, name)                     \
  do {                                      \
    realrun_stamp("%s.begin", name);        \
    PROF_INTERVAL_BEGIN(id);                \
    realrun_stamp("%s.in", name);           \
  } while (0)
#define END(id, name)                       \
  do {                                      \
    realrun_stamp("%s.out", name);          \
    PROF_INTERVAL_END(id);                  \
    realrun_stamp("%s.end", name);          \
  } while (0)
#define STAMPED(name, call, ...)            \
  do {                                      \
    realrun_stamp("%s." call ".0", name);   \
    __VA_ARGS__;                            \
    realrun_stamp("%s." call ".1", name);   \
  } while (0)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, value = 0, sum = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  MPI_Barrier(MPI_COMM_WORLD);
  BEGIN(1, "1");
  if (rank == 0) {
    compute(D_MS);
    value = 1;
    STAMPED("1", "send", MPI_Send(&value, 1, MPI_INT, 1, 10, MPI_COMM_WORLD));
  } else {
    STAMPED("1", "recv", MPI_Recv(&value, 1, MPI_INT, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  }
  END(1, "1");

  MPI_Barrier(MPI_COMM_WORLD);
  BEGIN(2, "2");
  if (rank == 0) {
    compute(D_MS);
    value = 2;
    STAMPED("2", "send", MPI_Send(&value, 1, MPI_INT, 1, 20, MPI_COMM_WORLD));
  } else {
    MPI_Request req;
    STAMPED("2", "irecv", MPI_Irecv(&value, 1, MPI_INT, 0, 20, MPI_COMM_WORLD, &req));
    STAMPED("2", "wait", MPI_Wait(&req, MPI_STATUS_IGNORE));
  }
  END(2, "2");

  MPI_Barrier(MPI_COMM_WORLD);
  BEGIN(3, "3");
  if (rank == 0) compute(D_MS);
  STAMPED("3", "allreduce", MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  END(3, "3");

  MPI_Barrier(MPI_COMM_WORLD);
  BEGIN(4, "4");
  compute(rank == 0 ? 2 * D_MS : D_MS);
  END(4, "4");

  for (int i = 0; i < 3; ++i) {
    char outer[16], inner[16];
    snprintf(outer, sizeof outer, "5.%d", i);
    snprintf(inner, sizeof inner, "6.%d", i);
    MPI_Barrier(MPI_COMM_WORLD);
    BEGIN(5, outer);
    compute(2);
    BEGIN(6, inner);
    compute(2);
    END(6, inner);
    END(5, outer);
  }

  MPI_Barrier(MPI_COMM_WORLD);
  BEGIN(7, "7");
  if (rank == 0) {
    value = 7;
    STAMPED("7", "ssend", MPI_Ssend(&value, 1, MPI_INT, 1, 70, MPI_COMM_WORLD));
  } else {
    compute(50);
    STAMPED("7", "recv", MPI_Recv(&value, 1, MPI_INT, 0, 70, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  }
  END(7, "7");

  if (rank == 1) printf("known_waits: value %d sum %d\n", value, sum);
  const int stamps_failed = realrun_write_stamps(rank);
  MPI_Finalize();
  return (value == 7 && sum == 1 && !stamps_failed) ? 0 : 1;
}
