/* Under the shim: nested intervals across many event chunks (1 MiB chunks,
 * about a million calls a rank), so chunks open with intervals open. */
#include <mpi.h>
#include <prof/markers.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, sum = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int outer = 0; outer < 40; ++outer) {
    PROF_INTERVAL_BEGIN(1);
    for (int mid = 0; mid < 5; ++mid) {
      PROF_INTERVAL_BEGIN(2);
      int r = 0;
      for (int i = 0; i < 5000; ++i) MPI_Comm_rank(MPI_COMM_WORLD, &r);
      int in = 0, out = rank + r;
      MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 0, &in, 1, MPI_INT,
                   (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      sum += in;
      PROF_INTERVAL_END(2);
    }
    PROF_INTERVAL_END(1);
  }
  if (rank == 0) printf("done %d\n", sum > 0);
  MPI_Finalize();
  return 0;
}
