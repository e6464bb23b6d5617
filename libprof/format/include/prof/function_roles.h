// What the analysis must know of an MPI function beyond its record's kind:
// whether it starts or ends the MPI run, starts an operation, makes a
// persistent request, and which wait state a member of its collective has.
// The bits come from one place, libprof/wrappers/mpi_function_facts.py
// (ROLES, each collective's `wait`, and the kinds that start operations),
// through a table generated at build time.
#pragma once

#include <cstdint>
#include <string_view>

namespace prof::format {

enum FunctionRole : uint16_t {
  kRoleInit = 1 << 0,            // MPI_Init, MPI_Init_thread
  kRoleFinalize = 1 << 1,        // MPI_Finalize
  kRolePreInit = 1 << 2,         // may be called before MPI_Init (MPI_Initialized, ...)
  kRoleStart = 1 << 3,           // MPI_Start, MPI_Startall
  kRoleFree = 1 << 4,            // MPI_Request_free
  kRolePersistentInit = 1 << 5,  // *_init: creates a persistent request, starts nothing
  kRoleStartsOp = 1 << 6,        // counts in Time of Start (nonblocking starts)
  kRoleGrequestStart = 1 << 7,   // MPI_Grequest_start: a request completed by the user
  // A collective's wait kind (docs/metrics.md, "Wait states by kind"):
  kRoleBarrier = 1 << 8,         // MPI_Barrier, MPI_Ibarrier
  kRoleNxN = 1 << 9,             // Allreduce, Allgather(v), Alltoall(v/w), Reduce_scatter(_block), (Ex)scan
  kRoleOneToAll = 1 << 10,       // Bcast, Scatter(v): non-roots wait for the root
  kRoleAllToOne = 1 << 11,       // Reduce, Gather(v): the root waits for the others
  kRoleCompletesAny = 1 << 12,   // Waitany, Waitsome (Test*): returns once any one request completes
  // A communicator creation that every member of its parent calls, ordered
  // with the parent's collectives (MPI_Comm_split, _dup, Cart_create, ...).
  kRoleCreatesOverParent = 1 << 13,
};

// The roles of the function named `name` ("MPI_Allreduce"); a large-count
// variant ("MPI_Allreduce_c") has its base function's. 0 for any other name.
uint16_t function_role(std::string_view name);

}  // namespace prof::format
