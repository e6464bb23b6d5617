// The roles the analysis reads from the facts table (prof/function_roles.h).
#include <gtest/gtest.h>

#include "prof/function_roles.h"

namespace prof::format {
namespace {

TEST(FunctionRoles, CollectivesCarryTheirWaitKindInEveryForm) {
  EXPECT_EQ(function_role("MPI_Barrier"), kRoleBarrier);
  EXPECT_EQ(function_role("MPI_Allreduce"), kRoleNxN);
  EXPECT_EQ(function_role("MPI_Iallreduce"), kRoleNxN | kRoleStartsOp);
  EXPECT_EQ(function_role("MPI_Allreduce_init"), kRoleNxN | kRolePersistentInit);
  EXPECT_EQ(function_role("MPI_Bcast"), kRoleOneToAll);
  EXPECT_EQ(function_role("MPI_Iscatterv"), kRoleOneToAll | kRoleStartsOp);
  EXPECT_EQ(function_role("MPI_Gather"), kRoleAllToOne);
  EXPECT_EQ(function_role("MPI_Alltoallw"), kRoleNxN);
  // Neighbourhood collectives wait on their neighbours only: no kind.
  EXPECT_EQ(function_role("MPI_Neighbor_alltoall"), 0);
}

TEST(FunctionRoles, LargeCountVariantsHaveTheirBaseFunctionsRoles) {
  EXPECT_EQ(function_role("MPI_Allreduce_c"), kRoleNxN);
  EXPECT_EQ(function_role("MPI_Isend_c"), kRoleStartsOp);
  EXPECT_EQ(function_role("MPI_Send_init_c"), kRolePersistentInit);
  EXPECT_EQ(function_role("MPI_Bcast_c"), kRoleOneToAll);
}

TEST(FunctionRoles, RunBoundariesRequestsAndUnknownNames) {
  EXPECT_EQ(function_role("MPI_Init"), kRoleInit);
  EXPECT_EQ(function_role("MPI_Init_thread"), kRoleInit);
  EXPECT_EQ(function_role("MPI_Finalize"), kRoleFinalize);
  EXPECT_EQ(function_role("MPI_Waitany"), kRoleCompletesAny);
  EXPECT_EQ(function_role("MPI_Waitsome"), kRoleCompletesAny);
  EXPECT_EQ(function_role("MPI_Waitall"), 0);
  EXPECT_EQ(function_role("MPI_Wait"), 0);
  EXPECT_EQ(function_role("MPI_Wtime"), kRolePreInit);
  EXPECT_EQ(function_role("MPI_Start"), kRoleStart | kRoleStartsOp);
  EXPECT_EQ(function_role("MPI_Request_free"), kRoleFree);
  EXPECT_EQ(function_role("MPI_Grequest_start"), kRoleGrequestStart);
  EXPECT_EQ(function_role("MPI_Irecv"), kRoleStartsOp);
  EXPECT_EQ(function_role("MPI_Recv"), 0);
  EXPECT_EQ(function_role("MPI_Send"), 0);
  EXPECT_EQ(function_role(""), 0);
  EXPECT_EQ(function_role("_c"), 0);
  EXPECT_EQ(function_role("NOT_MPI"), 0);
}

}  // namespace
}  // namespace prof::format
