/* A rank that forks after MPI_Init (2 ranks; rank 0 forks, twice). fork MODE:
 *   exit  the child returns through exit(0), so its exit handlers run, as a
 *         helper process started with fork() does;
 *   exec  the child replaces itself with /bin/true (which loads the shim
 *         again through LD_PRELOAD and never calls MPI_Init).
 * The children share the parent's mapped trace; they must not write to it:
 * every call the parent makes after the forks is in the trace, the chunks
 * after them included (the parent rotates chunks after the forks), no chunk
 * damaged, end reason "finalize". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ex.h"

static int run_child(const char* mode) {
  fflush(stdout);
  fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    perror("fork: fork");
    return 0;
  }
  if (pid == 0) {
    if (strcmp(mode, "exec") == 0) {
      execl("/bin/true", "true", (char*)NULL);
      _exit(127);
    }
    exit(0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "fork: the child did not exit with 0 (status %d)\n", status);
    return 0;
  }
  return 1;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "exit") && strcmp(mode, "exec")) {
    fprintf(stderr, "usage: fork exit|exec\n");
    return 2;
  }
  int rank, size;
  ex_init(&argc, &argv, &rank, &size);
  if (size != 2) {
    fprintf(stderr, "fork: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const MPI_Comm W = MPI_COMM_WORLD;
  const int peer = 1 - rank;
  int me = -1;

  for (int round = 0; round < 2; ++round) {
    if (rank == 0) EX_CHECK(run_child(mode), "round %d: child failed", round);
    /* Both ranks go on after the child has ended: messages, then enough
     * calls to fill the chunk open at the fork and open new ones. */
    int v = 100 * round + rank, w = -1;
    MPI_Sendrecv(&v, 1, MPI_INT, peer, round, &w, 1, MPI_INT, peer, round, W, MPI_STATUS_IGNORE);
    ex_sendrecv("MPI_Sendrecv", peer, round, 4, peer, round, 4, W, 0);
    EX_CHECK(w == 100 * round + peer, "round %d: got %d", round, w);
    for (int i = 0; i < 12000; ++i) MPI_Comm_rank(W, &me);
    ex_line("MPI_Comm_rank repeat=12000");
    MPI_Barrier(W);
    ex_coll("MPI_Barrier", W, -1, 0);
  }
  ex_line("!event_chunks_at_least 2");
  return ex_finalize("fork", rank);
}
