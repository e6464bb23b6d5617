/* A plain MPI program for the transparency tests: prints one line per rank and
 * returns the exit code given as argv[1] after MPI_Finalize. Under the shim,
 * output and exit code must be the same as without it. With PROF_EXPECT_DIR
 * set, it also logs its calls (ex.h) so the trace can be checked. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "ex.h"

int main(int argc, char** argv) {
  const int code = argc > 1 ? atoi(argv[1]) : 0;
  const int log = getenv("PROF_EXPECT_DIR") != NULL;
  int rank, size;
  MPI_Init(&argc, &argv);
  if (log) ex_open(), ex_other("MPI_Init");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (log) ex_other("MPI_Comm_rank");
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (log) ex_other("MPI_Comm_size");
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (log) ex_coll("MPI_Allreduce", MPI_COMM_WORLD, -1, 4);
  printf("hello from rank %d of %d, sum %d\n", rank, size, sum);
  fflush(stdout);
  MPI_Finalize();
  if (log) ex_other("MPI_Finalize");
  if (sum != size * (size - 1) / 2) {
    fprintf(stderr, "hello: wrong sum %d\n", sum);
    return 1;
  }
  return code;
}
