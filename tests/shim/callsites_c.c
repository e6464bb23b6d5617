/* MPI_Allreduce from two source lines a known number of times each: 5 from
 * the first (inside a helper), 3 from the second (inside interval 7). The
 * call-site profile must name both lines with exactly those counts. */
#include <mpi.h>
#include <prof/markers.h>
#include <stdio.h>

static int sum(int v) {
  int out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* line 10 */
  return out;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, total = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < 5; ++i) total += sum(rank);
  PROF_INTERVAL_BEGIN(7);
  for (int i = 0; i < 3; ++i) {
    int out = 0;
    MPI_Allreduce(&rank, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* line 22 */
    total += out;
  }
  PROF_INTERVAL_END(7);
  printf("rank %d total %d\n", rank, total);
  MPI_Finalize();
  return total == 8 ? 0 : 1;
}
