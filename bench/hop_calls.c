/* The calls whose shim cost bench/count_hop_instructions.sh counts under
 * callgrind, at 2 ranks, with nothing else around them:
 *   hop_calls pingpong N   N round trips of 0-byte MPI_Send/MPI_Recv
 *                          (MPI_STATUS_IGNORE), as in bench/shim_overhead.c
 *   hop_calls heavy N      N iterations of the message-heavy ring
 *                          (2 Irecv, 2 Isend, Waitall with MPI_STATUSES_IGNORE;
 *                          an Allreduce every 10)
 *   hop_calls exchange N   N iterations of exchange_loop (Irecv, Isend,
 *                          Waitall of the two; an Allreduce every 16)
 *   hop_calls rank N       N calls of MPI_Comm_rank (the cheapest wrapper) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpi_patterns.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3 || atol(argv[2]) <= 0 ||
      (strcmp(argv[1], "pingpong") && strcmp(argv[1], "heavy") && strcmp(argv[1], "exchange") &&
       strcmp(argv[1], "rank"))) {
    if (rank == 0) fprintf(stderr, "usage: hop_calls pingpong|heavy|exchange|rank N (N > 0)\n");
    MPI_Finalize();
    return 2;
  }
  const long n = atol(argv[2]);
  if (strcmp(argv[1], "pingpong") == 0) {
    ping_pong(rank, n);
  } else if (strcmp(argv[1], "heavy") == 0) {
    message_ring(rank, size, n);
  } else if (strcmp(argv[1], "exchange") == 0) {
    exchange_loop(rank, size, n);
  } else {
    int r = 0;
    for (long i = 0; i < n; ++i) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  }
  MPI_Finalize();
  return 0;
}
