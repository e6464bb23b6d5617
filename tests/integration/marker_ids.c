/* Header-form markers with ids inside and outside 0..65535 (1 or 2 ranks):
 * interval 7 twice, and interval 70000, which the record's 16 bits cannot
 * hold (taken as 70000 mod 65536 = 4464 it would merge with that interval). */
#include <mpi.h>
#include <prof/markers.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  for (int i = 0; i < 2; ++i) {
    PROF_INTERVAL_BEGIN(7);
    MPI_Barrier(MPI_COMM_WORLD);
    PROF_INTERVAL_END(7);
  }
  PROF_INTERVAL_BEGIN(70000);
  MPI_Barrier(MPI_COMM_WORLD);
  PROF_INTERVAL_END(70000);
  MPI_Finalize();
  return 0;
}
