/* The floor of a profiled hop, measured rather than assumed: an LD_PRELOAD
 * library whose MPI_Send, MPI_Recv and MPI_Comm_rank only read the time
 * stamp counter before and after the PMPI call, as libprof's fast wrappers
 * do, and keep the readings where the compiler cannot drop them. Nothing is
 * recorded. Against it (BASELINE_SHIM of bench/run_shim_overhead.sh), the
 * "this - base" lines are what libprof adds beyond its timestamps
 * (docs/performance.md, "libprof: cost per MPI call").
 * x86-64 only (rdtsc). */
#include <mpi.h>
#include <stdint.h>
#include <x86intrin.h>

/* One pair per thread, so that threads do not share its line. */
static __thread volatile uint64_t readings[2];

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  readings[0] = __rdtsc();
  const int rc = PMPI_Send(buf, count, type, dest, tag, comm);
  readings[1] = __rdtsc();
  return rc;
}

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  readings[0] = __rdtsc();
  const int rc = PMPI_Recv(buf, count, type, source, tag, comm, status);
  readings[1] = __rdtsc();
  return rc;
}

int MPI_Comm_rank(MPI_Comm comm, int* rank) {
  readings[0] = __rdtsc();
  const int rc = PMPI_Comm_rank(comm, rank);
  readings[1] = __rdtsc();
  return rc;
}
