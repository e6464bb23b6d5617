// Instructions one MPI_Bcast call costs a process, MPICH's (PMPI_Bcast) against
// the shared-memory one (prof::bcast::shm_bcast), counted by callgrind on one
// rank while the other runs natively (bench/run_bcast_call_cost.sh). The rank
// under valgrind runs about 50 times slower, so when it reads, the data is
// already there and its count is the call's own work, not time spent polling;
// as the root it rarely finds a reader still behind.
//
//   bcast_call_cost native|shm BYTES ROOT|rotate CALLS
//
// Only call_loop() is counted (--toggle-collect=call_loop). Exit status 1 when
// a result was wrong.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "prof/bcast/shm.h"

namespace {
bool use_shm = false;

int bcast(void* buffer, int count, int root, MPI_Comm comm) {
  if (use_shm) {
    const int rc = prof::bcast::shm_bcast(buffer, count, MPI_BYTE, root, comm);
    if (rc != prof::bcast::kUseNative) return rc;
  }
  return PMPI_Bcast(buffer, count, MPI_BYTE, root, comm);
}
}  // namespace

// The counted region: `calls` broadcasts of `bytes`, the root fixed or rotating.
extern "C" __attribute__((noinline)) int call_loop(unsigned char* buffer, int bytes, int root, int calls,
                                                  MPI_Comm comm, int rank, int size) {
  int wrong = 0;
  for (int i = 0; i < calls; ++i) {
    const int from = root < 0 ? i % size : root;
    if (rank == from) std::memset(buffer, i & 0xff, std::size_t(bytes));
    bcast(buffer, bytes, from, comm);
    if (bytes > 0 && (buffer[0] != (i & 0xff) || buffer[bytes - 1] != (i & 0xff))) ++wrong;
  }
  return wrong;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 5 || (std::string(argv[1]) != "native" && std::string(argv[1]) != "shm")) {
    if (rank == 0) std::fprintf(stderr, "usage: bcast_call_cost native|shm BYTES ROOT|rotate CALLS\n");
    MPI_Finalize();
    return 2;
  }
  use_shm = std::string(argv[1]) == "shm";
  const int bytes = std::atoi(argv[2]);
  const int root = std::string(argv[3]) == "rotate" ? -1 : std::atoi(argv[3]);
  const int calls = std::atoi(argv[4]);
  prof::bcast::Settings settings = prof::bcast::default_settings();
  settings.impl = prof::bcast::Impl::Shm;
  prof::bcast::configure(settings);

  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  std::vector<unsigned char> buffer(std::size_t(bytes) + 1);
  // Set-up outside the count: the segment (shm), MPICH's first collectives.
  for (int i = 0; i < 8; ++i) bcast(buffer.data(), bytes, i % size, comm);
  MPI_Barrier(comm);
  int wrong = call_loop(buffer.data(), bytes, root, calls, comm, rank, size);
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_SUM, comm);
  if (rank == 0 && wrong) std::fprintf(stderr, "bcast_call_cost: %d wrong results\n", wrong);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return wrong ? 1 : 0;
}
