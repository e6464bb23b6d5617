/* Many small MPI calls whose results the program checks and prints, for the
 * tests of where the trace goes (losses.sh): busy ROUNDS LOCAL_CALLS. Each
 * round is an MPI_Allreduce, an MPI_Sendrecv around a ring and LOCAL_CALLS
 * MPI_Comm_rank calls (cheap calls that fill the trace fast). Prints one line
 * per rank with a checksum of what it received; exit status 0 when every
 * result was right, 1 otherwise. The MPI calls it makes in all:
 * 4 + ROUNDS * (2 + LOCAL_CALLS). No expectation log: the trace is checked by
 * the tools that read it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const long rounds = argc > 1 ? atol(argv[1]) : 1000;
  const long local_calls = argc > 2 ? atol(argv[2]) : 0;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  long wrong = 0;
  unsigned long long checksum = 0;
  for (long i = 0; i < rounds; ++i) {
    const int mine = (int)(i % 1000) + rank;
    int sum = 0, from_left = -1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Sendrecv(&mine, 1, MPI_INT, right, 0, &from_left, 1, MPI_INT, left, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    if (sum != size * (int)(i % 1000) + size * (size - 1) / 2) ++wrong;
    if (from_left != (int)(i % 1000) + left) ++wrong;
    for (long k = 0; k < local_calls; ++k) {
      int me = -1;
      MPI_Comm_rank(MPI_COMM_WORLD, &me);
      if (me != rank) ++wrong;
    }
    checksum = checksum * 31u + (unsigned)sum + (unsigned)from_left;
  }
  printf("busy: rank %d: %ld rounds, checksum %llu, %ld wrong\n", rank, rounds, checksum, wrong);
  MPI_Finalize();
  return wrong ? 1 : 0;
}
