/* The root's edges on a real run (2 ranks): rank 1 comes to MPI_Init LATE_MS
 * after rank 0 and calls MPI_Finalize LATE_MS after it. On each rank the run
 * starts where MPI_Init returns and ends where MPI_Finalize is called
 * (docs/metrics.md, "The root"); the profiler's clock syncs inside both calls
 * wait for the later rank, and that wait is neither rank's computation.
 * Stamps (realrun.h):
 *   init.return     just after MPI_Init returns
 *   finalize.call   before MPI_Finalize, with only the stamps' writing between */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "realrun.h"

#define LATE_MS 300

int main(int argc, char** argv) {
  /* Hydra's rank, known before MPI_Init. */
  const char* launched_as = getenv("PMI_RANK");
  if (launched_as && atoi(launched_as) == 1) realrun_sleep_ms(LATE_MS);
  const int rank = realrun_init_2ranks(&argc, &argv, "root_edges");
  realrun_stamp("init.return");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) realrun_sleep_ms(LATE_MS);
  realrun_stamp("finalize.call");
  const int failed = realrun_write_stamps(rank);
  MPI_Finalize();
  return failed;
}
