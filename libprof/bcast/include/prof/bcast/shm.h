// The NUMA shared-memory MPI_Bcast of Kurnosov and Tokmasheva
// (docs/references.md): per communicator a segment holding a circular queue of
// s buffers of f bytes in q sets for each process; the root copies fragments
// into its own queue and notifies through a tree, the others copy them out
// (pipelined copy-in/copy-out).
// Communicators spanning nodes: node leaders through PMPI_Bcast, shared memory
// inside each node. All MPI traffic of its own goes through PMPI.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "prof/bcast/params.h"

namespace prof::bcast {

// Settings for the communicators that have not broadcast yet (each keeps the
// ones it started with). Not thread-safe against a running broadcast: call
// before the first one.
void configure(const Settings& settings);
const Settings& settings();

// MPI_Bcast through shared memory. Intercommunicators, size-1 communicators,
// arguments MPI would reject and communicators whose segment could not be had
// go to PMPI_Bcast_c (the last after one log line). Same return as MPI_Bcast.
int shm_bcast(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm);

// Called on every process of a communicator whose segment could not be had
// (its broadcasts then go to PMPI_Bcast), with the number of such
// communicators this process has seen: the shim notes it in the trace.
using FallbackFn = void (*)(uint64_t communicators);
void set_fallback_hook(FallbackFn fn);

// Whether this communicator's broadcasts go to PMPI (fell back, or never
// eligible); false before its first broadcast. For the tests and the bench.
bool uses_native(MPI_Comm comm);

}  // namespace prof::bcast

namespace prof::bcast {
// shm_bcast's answer when the caller should make the PMPI call itself (no MPI
// error code is negative).
constexpr int kUseNative = -1;
}  // namespace prof::bcast
