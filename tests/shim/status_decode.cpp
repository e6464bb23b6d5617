// The shim reads a status's byte count and cancel flag from MPICH's layout
// (libprof/src/mpich_status.h) instead of calling MPI_Get_count_c and
// MPI_Test_cancelled. This holds the two readings equal for statuses MPICH
// itself fills: counts below and above 2^31 and 2^32, in bytes and in larger
// types, cancelled or not. Exits 1 naming the first difference.
#include <mpi.h>

#include <cstdint>
#include <cstdio>

#include "mpich_status.h"

namespace {

int check(MPI_Count count, MPI_Datatype type, int type_bytes, int cancelled) {
  MPI_Status st;
  st.MPI_SOURCE = 3;
  st.MPI_TAG = 7;
  st.MPI_ERROR = MPI_SUCCESS;
  if (MPI_Status_set_elements_x(&st, type, count) != MPI_SUCCESS ||
      MPI_Status_set_cancelled(&st, cancelled) != MPI_SUCCESS) {
    std::fprintf(stderr, "status_decode: MPI refused count %lld\n", static_cast<long long>(count));
    return 1;
  }
  MPI_Count mpi_bytes = -1;
  int mpi_cancelled = -1;
  MPI_Get_count_c(&st, MPI_BYTE, &mpi_bytes);
  MPI_Test_cancelled(&st, &mpi_cancelled);
  const uint64_t want = static_cast<uint64_t>(count) * static_cast<uint64_t>(type_bytes);
  const uint64_t got = prof::shim::status_bytes(&st);
  const bool got_cancelled = prof::shim::status_cancelled(&st);
  if (static_cast<uint64_t>(mpi_bytes) != want || got != want ||
      got_cancelled != (mpi_cancelled != 0) || got_cancelled != (cancelled != 0)) {
    std::fprintf(stderr,
                 "status_decode: %lld elements of %d bytes, cancelled %d: MPI says %lld bytes "
                 "cancelled %d, the shim reads %llu bytes cancelled %d\n",
                 static_cast<long long>(count), type_bytes, cancelled,
                 static_cast<long long>(mpi_bytes), mpi_cancelled,
                 static_cast<unsigned long long>(got), got_cancelled ? 1 : 0);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const MPI_Count counts[] = {0,           1,           16,          65535,
                              65536,       INT32_MAX,   INT64_C(1) << 31,
                              UINT32_MAX,  INT64_C(1) << 32,
                              (INT64_C(1) << 32) + 5,   INT64_C(5000000000),
                              (INT64_C(1) << 40) + 3,   (INT64_C(1) << 61) - 1};
  int failures = 0;
  for (MPI_Count n : counts)
    for (int cancelled = 0; cancelled <= 1; ++cancelled) {
      failures += check(n, MPI_BYTE, 1, cancelled);
      if (n < (INT64_C(1) << 58)) failures += check(n, MPI_DOUBLE, 8, cancelled);
    }
  MPI_Finalize();
  if (failures == 0) std::puts("status_decode: all statuses read as MPI reads them");
  return failures ? 1 : 0;
}
