/* An Irecv, then computation, then MPI_Wait, with a late sender (2 ranks;
 * check_late_irecv.py). In each of EXECUTIONS executions of interval 1, rank 0
 * posts MPI_Irecv, computes COMPUTE_MS (a sleep: the other rank's busy-polling
 * MPI keeps the core), then waits in MPI_Wait; rank 1 sends SENDER_LATE_MS after
 * the barrier. Rank 0's PotentSync runs from the Irecv, not from the Wait: about
 * SENDER_LATE_MS per execution, not SENDER_LATE_MS - COMPUTE_MS.
 *
 * Stamps (realrun.h), K the execution:
 *   rank 0: K.irecv0 K.irecv1 (around MPI_Irecv), K.wait0 K.wait1 (around MPI_Wait)
 *   rank 1: K.send0 K.send1 (around MPI_Send) */
#include <mpi.h>
#include <prof/markers.h>
#include <stdio.h>

#include "realrun.h"

enum { EXECUTIONS = 3, COMPUTE_MS = 20, SENDER_LATE_MS = 50 };

int main(int argc, char** argv) {
  const int rank = realrun_init_2ranks(&argc, &argv, "late_irecv");
  int wrong = 0;
  for (int k = 0; k < EXECUTIONS; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    PROF_INTERVAL_BEGIN(1);
    if (rank == 0) {
      int value = -1;
      MPI_Request request;
      realrun_stamp("%d.irecv0", k);
      MPI_Irecv(&value, 1, MPI_INT, 1, k, MPI_COMM_WORLD, &request);
      realrun_stamp("%d.irecv1", k);
      realrun_sleep_ms(COMPUTE_MS);
      realrun_stamp("%d.wait0", k);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
      realrun_stamp("%d.wait1", k);
      if (value != 100 + k) ++wrong;
    } else {
      const int value = 100 + k;
      realrun_sleep_ms(SENDER_LATE_MS);
      realrun_stamp("%d.send0", k);
      MPI_Send(&value, 1, MPI_INT, 0, k, MPI_COMM_WORLD);
      realrun_stamp("%d.send1", k);
    }
    PROF_INTERVAL_END(1);
  }
  if (wrong) fprintf(stderr, "late_irecv: rank %d: %d wrong values\n", rank, wrong);
  const int stamps_failed = realrun_write_stamps(rank);
  MPI_Finalize();
  return wrong || stamps_failed ? 1 : 0;
}
