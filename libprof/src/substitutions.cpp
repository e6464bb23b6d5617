#include "substitutions.h"

#include "prof/bcast/shm.h"

namespace prof::shim {

int bcast_call(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (bcast::settings().impl == bcast::Impl::Shm) {
    const int rc = bcast::shm_bcast(buffer, count, datatype, root, comm);
    if (rc != bcast::kUseNative) return rc;
  }
  return PMPI_Bcast(buffer, count, datatype, root, comm);
}

int bcast_call(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (bcast::settings().impl == bcast::Impl::Shm) {
    const int rc = bcast::shm_bcast(buffer, count, datatype, root, comm);
    if (rc != bcast::kUseNative) return rc;
  }
  return PMPI_Bcast_c(buffer, count, datatype, root, comm);
}

}  // namespace prof::shim
