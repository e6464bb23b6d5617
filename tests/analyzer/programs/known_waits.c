/* Known waits, for checking prof-analyze on a real run (2 ranks). Each phase is
 * its own interval; rank 0 is made late by sleeping D = 40 ms:
 *
 *   interval 1  late sender, blocking: rank 1 MPI_Recv waits ~D for rank 0's Send
 *   interval 2  late sender through MPI_Wait: rank 1 Irecv + Wait waits ~D
 *   interval 3  late entry into a collective: rank 1 waits ~D in MPI_Allreduce
 *   interval 4  pure imbalance, no MPI: rank 0 computes 2D, rank 1 D -> Idle_1 ~ D
 *   interval 5  repeated 3 times, with interval 6 nested in it each time
 *
 * check_known_waits.py compares the report's JSON with these values. */
#include <mpi.h>
#include <prof/markers.h>
#include <stdio.h>
#include <time.h>

#define D_MS 40

/* Busy work for `ms` milliseconds: CPU time, not MPI time. */
static void compute(int ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000.0 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, value = 0, sum = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  MPI_Barrier(MPI_COMM_WORLD);
  PROF_INTERVAL_BEGIN(1);
  if (rank == 0) {
    compute(D_MS);
    value = 1;
    MPI_Send(&value, 1, MPI_INT, 1, 10, MPI_COMM_WORLD);
  } else {
    MPI_Recv(&value, 1, MPI_INT, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  PROF_INTERVAL_END(1);

  MPI_Barrier(MPI_COMM_WORLD);
  PROF_INTERVAL_BEGIN(2);
  if (rank == 0) {
    compute(D_MS);
    value = 2;
    MPI_Send(&value, 1, MPI_INT, 1, 20, MPI_COMM_WORLD);
  } else {
    MPI_Request req;
    MPI_Irecv(&value, 1, MPI_INT, 0, 20, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  }
  PROF_INTERVAL_END(2);

  MPI_Barrier(MPI_COMM_WORLD);
  PROF_INTERVAL_BEGIN(3);
  if (rank == 0) compute(D_MS);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  PROF_INTERVAL_END(3);

  MPI_Barrier(MPI_COMM_WORLD);
  PROF_INTERVAL_BEGIN(4);
  compute(rank == 0 ? 2 * D_MS : D_MS);
  PROF_INTERVAL_END(4);

  for (int i = 0; i < 3; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    PROF_INTERVAL_BEGIN(5);
    compute(2);
    PROF_INTERVAL_BEGIN(6);
    compute(2);
    PROF_INTERVAL_END(6);
    PROF_INTERVAL_END(5);
  }

  if (rank == 1) printf("known_waits: value %d sum %d\n", value, sum);
  MPI_Finalize();
  return (value == 2 && sum == 1) ? 0 : 1;
}
