// The MPI part of tests/shim/dlopen_main.c: a call before MPI_Init (the
// first that reaches the shim), then a short exchange.
#include <mpi.h>
#include <stdio.h>

int run(void) {
  int initialized = -1, rank = -1, size = 0, sum = 0;
  MPI_Initialized(&initialized);
  MPI_Init(NULL, NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("initialized before MPI_Init: %d; %d ranks, sum of ranks %d\n", initialized, size, sum);
  MPI_Finalize();
  return 0;
}
