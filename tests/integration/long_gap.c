/* Calls entered more than 2^32 timer ticks after the previous record (2.6 s:
 * enough for a TSC up to 1.65 GHz). A fixed record's 32-bit gap cannot hold
 * that, so the shim's fast MPI_Recv and MPI_Send must hand such a call to
 * the general record (its long time form). A gap stored truncated would
 * shift every later enter time: the MPI_Comm_dup after it would no longer
 * sit at its communicator definition's time, which trace_check compares. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

#include "ex.h"

static void pause_seconds(time_t seconds, long nanoseconds) {
  struct timespec left = {seconds, nanoseconds};
  while (nanosleep(&left, &left) != 0) {
  }
}

int main(int argc, char** argv) {
  int rank, size;
  ex_init(&argc, &argv, &rank, &size);
  if (size != 2) {
    fprintf(stderr, "long_gap: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const MPI_Comm W = MPI_COMM_WORLD;
  const int peer = 1 - rank;
  int value = rank, got = -1;
  pause_seconds(2, 600000000L);
  if (rank == 0) {
    MPI_Recv(&got, 1, MPI_INT, peer, 5, W, MPI_STATUS_IGNORE);
    ex_p2p("MPI_Recv", peer, 5, W, 4, 0);
    EX_CHECK(got == peer, "received %d", got);
  } else {
    MPI_Send(&value, 1, MPI_INT, peer, 5, W);
    ex_p2p("MPI_Send", peer, 5, W, 4, 0);
  }
  MPI_Comm dup;
  MPI_Comm_dup(W, &dup);
  ex_comm_create("MPI_Comm_dup", W, dup, "dup");
  MPI_Comm_free(&dup);
  ex_other("MPI_Comm_free");
  return ex_finalize("long_gap", rank);
}
