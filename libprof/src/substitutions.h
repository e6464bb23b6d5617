// Implementations the generated wrappers call instead of the PMPI function
// (the 'callfn' facts in libprof/wrappers/mpi_function_facts.py): same
// arguments, same return; the large-count twin (MPI_Bcast_c) by overload.
#pragma once

#include <mpi.h>

namespace prof::shim {

// PROF_BCAST: MPICH's PMPI_Bcast, or the shared-memory broadcast (prof/bcast/shm.h).
int bcast_call(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int bcast_call(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm);

}  // namespace prof::shim
