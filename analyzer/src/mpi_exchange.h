// prof-analyze as an MPI job: `mpiexec -n K prof-analyze TRACE ...` spreads
// the analysis over K processes (prof::analysis::Exchange over MPI). A plain
// command never initializes MPI.
#pragma once

#include <memory>

#include "prof/analysis/exchange.h"

namespace prof::analyze_cli {

// Whether mpiexec started this process as one of several (the launchers'
// environment: PMI_SIZE for MPICH's hydra, OMPI_COMM_WORLD_SIZE for Open
// MPI, PMIX_RANK for PMIx launchers).
bool launched_as_mpi_job();

// The cores each process of the job may use: the machine's divided by the
// job's processes on this node (MPI_LOCALNRANKS from MPICH's hydra,
// OMPI_COMM_WORLD_LOCAL_SIZE from Open MPI); every core where the launcher
// does not say.
unsigned cores_per_process();

// MPI_Init and the world communicator as an Exchange.
std::unique_ptr<analysis::Exchange> start_mpi(int* argc, char*** argv);

// Process 0 speaks for the job: the others' standard output and error go to
// /dev/null (their messages would repeat its own), their own standard error
// kept for Exchange::abort_job.
void quiet_unless_first(const analysis::Exchange& ex);

// Every process exits with process 0's status; MPI_Finalize.
int finish_mpi(analysis::Exchange& ex, int status);

}  // namespace prof::analyze_cli
