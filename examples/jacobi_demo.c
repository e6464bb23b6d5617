/* Demo for prof: a 1-D Jacobi relaxation split over the ranks, with the
 * intervals the report is organised by.
 *
 *   interval 1  the iteration loop        (markers.h macros)
 *   interval 2    halo exchange           (raw DVM-style markers: tag 0xAA<id><AA|BB>)
 *   interval 3    local update            (markers.h; rank 0 does extra work, so the
 *                                          others wait for it: idle and late-sender time)
 *
 * Usage: mpiexec -n 4 prof-run ./jacobi_demo [iterations] [cells per rank]
 * Prints the residual so runs with and without the profiler can be compared. */
#include <math.h>
#include <mpi.h>
#include <prof/markers.h>
#include <stdio.h>
#include <stdlib.h>

#define RAW_BEGIN(id) MPI_Send(NULL, 0, MPI_BYTE, MPI_PROC_NULL, (int)(0xAA0000AAu | ((id) << 8)), MPI_COMM_WORLD)
#define RAW_END(id) MPI_Send(NULL, 0, MPI_BYTE, MPI_PROC_NULL, (int)(0xAA0000BBu | ((id) << 8)), MPI_COMM_WORLD)

static int profiled(void) { return prof_marker_at != NULL; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iterations = argc > 1 ? atoi(argv[1]) : 20;
  const int n = argc > 2 ? atoi(argv[2]) : 20000;

  double* u = calloc((size_t)n + 2, sizeof(double));
  double* v = calloc((size_t)n + 2, sizeof(double));
  if (rank == 0) u[0] = 1.0; /* a hot left edge */
  const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  const int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  double residual = 0.0;

  PROF_INTERVAL_BEGIN(1);
  for (int it = 0; it < iterations; ++it) {
    /* Raw markers make MPICH fail without the profiler; use them only under it. */
    if (profiled()) RAW_BEGIN(2);
    MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 10, &u[n + 1], 1, MPI_DOUBLE, right, 10,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Request reqs[2];
    MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(&u[n], 1, MPI_DOUBLE, right, 11, MPI_COMM_WORLD, &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    if (rank == 0) u[0] = 1.0;
    if (profiled()) RAW_END(2);

    PROF_INTERVAL_BEGIN(3);
    const int sweeps = rank == 0 ? 3 : 1; /* imbalance: rank 0 works three times as long */
    double local = 0.0;
    for (int s = 0; s < sweeps; ++s) {
      local = 0.0;
      for (int i = 1; i <= n; ++i) {
        v[i] = 0.5 * (u[i - 1] + u[i + 1]);
        local += fabs(v[i] - u[i]);
      }
    }
    for (int i = 1; i <= n; ++i) u[i] = v[i];
    PROF_INTERVAL_END(3);

    MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  PROF_INTERVAL_END(1);

  if (rank == 0) printf("jacobi_demo: %d ranks, %d iterations, residual %.9e\n", size, iterations, residual);
  free(u);
  free(v);
  MPI_Finalize();
  return 0;
}
