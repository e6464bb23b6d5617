/* The profiler's start-up and shut-down cost: an empty MPI program. Each rank
 * prints how long MPI_Init and MPI_Finalize took, by CLOCK_MONOTONIC read
 * around them (bench/run_startup.sh runs it plain and under prof-run).
 * Output, one line per rank: "rank R init_ms I finalize_ms F total_ms T". */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int main(int argc, char** argv) {
  const double t0 = mono_ms();
  MPI_Init(&argc, &argv);
  const double t1 = mono_ms();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const double t2 = mono_ms();
  MPI_Finalize();
  const double t3 = mono_ms();
  printf("rank %d init_ms %.3f finalize_ms %.3f total_ms %.3f\n", rank, t1 - t0, t3 - t2,
         (t1 - t0) + (t3 - t2));
  return 0;
}
