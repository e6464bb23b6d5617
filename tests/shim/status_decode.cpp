// The shim reads a status's byte count and cancel flag from MPICH's layout
// (libprof/src/mpich_status.h) instead of calling MPI_Get_count_c and
// MPI_Test_cancelled. This holds the two readings equal for statuses MPICH
// itself fills: counts below and above 2^31 and 2^32, in bytes and in larger
// types, cancelled or not. And the builtin datatypes' sizes it reads from
// their handles, against MPI_Type_size; derived and null types must not read
// as builtin. Exits 1 naming the first difference.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <initializer_list>

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

struct NamedType {
  const char* name;
  MPI_Datatype type;
};

int check_builtin(const NamedType& t) {
  int mpi_size = -1;
  MPI_Type_size(t.type, &mpi_size);
  if (prof::shim::not_builtin_type(t.type) != 0 ||
      prof::shim::builtin_type_size(t.type) != static_cast<uint32_t>(mpi_size)) {
    std::fprintf(stderr, "status_decode: %s: MPI_Type_size says %d bytes, the shim reads %s %u\n",
                 t.name, mpi_size, prof::shim::not_builtin_type(t.type) ? "not builtin," : "builtin,",
                 prof::shim::builtin_type_size(t.type));
    return 1;
  }
  return 0;
}

int check_not_builtin(const NamedType& t) {
  if (prof::shim::not_builtin_type(t.type) == 0) {
    std::fprintf(stderr, "status_decode: %s reads as a builtin datatype\n", t.name);
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
#define PROF_NAMED(t) NamedType{#t, t}
  for (const NamedType& t :
       {PROF_NAMED(MPI_BYTE), PROF_NAMED(MPI_CHAR), PROF_NAMED(MPI_SHORT), PROF_NAMED(MPI_INT),
        PROF_NAMED(MPI_LONG), PROF_NAMED(MPI_LONG_LONG), PROF_NAMED(MPI_FLOAT), PROF_NAMED(MPI_DOUBLE),
        PROF_NAMED(MPI_LONG_DOUBLE), PROF_NAMED(MPI_PACKED), PROF_NAMED(MPI_INT64_T),
        PROF_NAMED(MPI_C_DOUBLE_COMPLEX), PROF_NAMED(MPI_AINT), PROF_NAMED(MPI_COUNT),
        PROF_NAMED(MPI_C_BOOL), PROF_NAMED(MPI_2INT)})
    failures += check_builtin(t);
  MPI_Datatype contiguous = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(3, MPI_INT, &contiguous);
  MPI_Type_commit(&contiguous);
  for (const NamedType& t : {PROF_NAMED(MPI_DATATYPE_NULL), PROF_NAMED(MPI_DOUBLE_INT),
                             PROF_NAMED(MPI_LONG_DOUBLE_INT), NamedType{"MPI_Type_contiguous(3, MPI_INT)", contiguous}})
    failures += check_not_builtin(t);
#undef PROF_NAMED
  MPI_Type_free(&contiguous);
  MPI_Finalize();
  if (failures == 0) std::puts("status_decode: all statuses and builtin datatypes read as MPI reads them");
  return failures ? 1 : 0;
}
