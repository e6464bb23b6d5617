/* A ping-pong whose messages carry their round in the tag, for the tests of
 * how a thread's home chunk is copied out (home_copy.sh): sequence ROUNDS.
 * Ranks 0 and 1 exchange ROUNDS zero-byte messages each way, tag = round %
 * 32000, so a trace read back must hold each rank's sends and receives with
 * consecutive tags: a record read twice or lost shows. Other ranks only
 * initialize and finalize. Prints one line per rank; exit status 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const long rounds = argc > 1 ? atol(argv[1]) : 1000;
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank < 2) {
    const int peer = 1 - rank;
    for (long i = 0; i < rounds; ++i) {
      const int tag = (int)(i % 32000);
      if (rank == 0) {
        MPI_Send(NULL, 0, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        MPI_Recv(NULL, 0, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(NULL, 0, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(NULL, 0, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
      }
    }
  }
  printf("rank %d: %ld rounds\n", rank, rank < 2 ? rounds : 0L);
  MPI_Finalize();
  return 0;
}
