/* The calls whose shim cost bench/count_hop_instructions.sh counts under
 * callgrind, at 2 ranks, with nothing else around them:
 *   hop_calls pingpong N   N round trips of 0-byte MPI_Send/MPI_Recv
 *                          (MPI_STATUS_IGNORE), as in bench/shim_overhead.c
 *   hop_calls heavy N      N iterations of the message-heavy ring
 *                          (2 Irecv, 2 Isend, Waitall with MPI_STATUSES_IGNORE;
 *                          an Allreduce every 10)
 *   hop_calls rank N       N calls of MPI_Comm_rank (the cheapest wrapper) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3 || atol(argv[2]) <= 0 ||
      (strcmp(argv[1], "pingpong") && strcmp(argv[1], "heavy") && strcmp(argv[1], "rank"))) {
    if (rank == 0) fprintf(stderr, "usage: hop_calls pingpong|heavy|rank N (N > 0)\n");
    MPI_Finalize();
    return 2;
  }
  const long n = atol(argv[2]);
  if (strcmp(argv[1], "pingpong") == 0) {
    for (long i = 0; i < n; ++i) {
      if (rank == 0) {
        MPI_Send(NULL, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(NULL, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(NULL, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      }
    }
  } else if (strcmp(argv[1], "heavy") == 0) {
    int sbuf[4] = {rank, 0, 0, 0}, rbuf[8];
    double local = 1.0, global = 0.0;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (long i = 0; i < n; ++i) {
      MPI_Request req[4];
      MPI_Irecv(rbuf, 4, MPI_INT, left, 2, MPI_COMM_WORLD, &req[0]);
      MPI_Irecv(rbuf + 4, 4, MPI_INT, right, 3, MPI_COMM_WORLD, &req[1]);
      MPI_Isend(sbuf, 4, MPI_INT, right, 2, MPI_COMM_WORLD, &req[2]);
      MPI_Isend(sbuf, 4, MPI_INT, left, 3, MPI_COMM_WORLD, &req[3]);
      MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
      if (i % 10 == 0) MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
  } else {
    int r = 0;
    for (long i = 0; i < n; ++i) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  }
  MPI_Finalize();
  return 0;
}
