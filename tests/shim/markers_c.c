/* Interval markers through prof/markers.h: must run unchanged without the
 * profiler and record begin/end with this file's lines under it. */
#include <mpi.h>
#include <prof/markers.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, value = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PROF_INTERVAL_BEGIN(7); /* line 11 */
  if (rank == 0) value = 42;
  MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  PROF_INTERVAL_END(7); /* line 14 */
  printf("rank %d value %d\n", rank, value);
  MPI_Finalize();
  return value == 42 ? 0 : 1;
}
