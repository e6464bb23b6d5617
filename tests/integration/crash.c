/* Ways a run can end badly (2 ranks); every event recorded before the end must
 * be in the trace. crash MODE:
 *   segv     rank 1 dereferences NULL: its end reason is "signal:11"; hydra
 *            then kills rank 0 (blocked in a receive that never comes), whose
 *            events are salvaged from its unsealed chunk, end reason "".
 *   abort    rank 1 calls MPI_Abort: "abort"; rank 0 as for segv.
 *   noexit   both ranks return from main without MPI_Finalize: "exit". Once
 *            one has exited, hydra SIGKILLs the other, which may still be in
 *            its exit path: its end reason is then "" (its events are all
 *            kept, salvaged from unsealed chunks if need be); never both.
 *   noexit_slow  as noexit, but rank 1 lingers 1 s in its exit path before
 *            the profiler's exit handler runs, so it is the one killed.
 *   sigkill  rank 1 first fills more than one chunk, then raise(SIGKILL): no
 *            end reason, the sealed chunks and the unsealed last one all read.
 * Both ranks first exchange messages and make local calls, each logged as it
 * returns, so the log never claims a call the shim could not have recorded. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "ex.h"

/* Hand-shakes outside MPI, through files next to the logs: a rank must not
 * crash (or exit) while the other still waits for a message from it, or that
 * rank would stop at a point its log cannot know. */
static void flag_path(char* out, size_t cap, const char* what, int rank) {
  const char* dir = getenv("PROF_EXPECT_DIR");
  snprintf(out, cap, "%s/%s-%d", dir && *dir ? dir : ".", what, rank);
}
static void set_flag(const char* what, int rank) {
  char p[4096];
  flag_path(p, sizeof p, what, rank);
  FILE* f = fopen(p, "w");
  if (f) fclose(f);
}
static int wait_flag(const char* what, int rank) {
  char p[4096];
  flag_path(p, sizeof p, what, rank);
  for (int i = 0; i < 20000; ++i) {  /* 20 s */
    if (access(p, F_OK) == 0) return 1;
    usleep(1000);
  }
  fprintf(stderr, "crash: timed out waiting for %s\n", p);
  return 0;
}

static void linger(void) { usleep(1000 * 1000); }

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "segv") && strcmp(mode, "abort") && strcmp(mode, "noexit") &&
      strcmp(mode, "noexit_slow") && strcmp(mode, "sigkill")) {
    fprintf(stderr, "usage: crash segv|abort|noexit|noexit_slow|sigkill\n");
    return 2;
  }
  int rank, size;
  ex_init(&argc, &argv, &rank, &size);
  if (size != 2) {
    fprintf(stderr, "crash: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const MPI_Comm W = MPI_COMM_WORLD;
  const int peer = 1 - rank;
  EX_MARKER(9, 1);  /* never ended */

  for (int i = 0; i < 5; ++i) {
    int v = 10 * i + rank, w = -1;
    if (rank == 0) {
      MPI_Send(&v, 1, MPI_INT, peer, i, W);
      ex_p2p("MPI_Send", peer, i, W, 4, 0);
      MPI_Recv(&w, 1, MPI_INT, peer, i, W, MPI_STATUS_IGNORE);
      ex_p2p("MPI_Recv", peer, i, W, 4, 0);
    } else {
      MPI_Recv(&w, 1, MPI_INT, peer, i, W, MPI_STATUS_IGNORE);
      ex_p2p("MPI_Recv", peer, i, W, 4, 0);
      MPI_Send(&v, 1, MPI_INT, peer, i, W);
      ex_p2p("MPI_Send", peer, i, W, 4, 0);
    }
    EX_CHECK(w == 10 * i + peer, "round %d: got %d", i, w);
  }
  int me = -1;
  for (int i = 0; i < 20; ++i) {
    MPI_Comm_rank(W, &me);
    ex_other("MPI_Comm_rank");
  }
  MPI_Barrier(W);
  ex_coll("MPI_Barrier", W, -1, 0);
  if (ex_failures()) return 1;

  if (strncmp(mode, "noexit", 6) == 0) {
    ex_line("!end exit");
    ex_line("!or_killed");
    /* Registered after MPI_Init, so it runs before the profiler's handler. */
    if (strcmp(mode, "noexit_slow") == 0 && rank == 1) atexit(linger);
    /* Both ranks out of MPI (no message in flight) before either exits. */
    set_flag("out-of-mpi", rank);
    wait_flag("out-of-mpi", peer);
    return 0;  /* no MPI_Finalize */
  }

  if (rank == 0) {
    /* Wait for a message that never comes: hydra kills this rank once rank 1
     * is gone. Its events are only in the mapped (unsealed) chunk. */
    ex_line("!end ");
    ex_line("!salvaged");
    set_flag("blocked", 0);  /* rank 1 crashes only after this */
    int never;
    MPI_Recv(&never, 1, MPI_INT, 1, 999, W, MPI_STATUS_IGNORE);
    fprintf(stderr, "crash: rank 0 received what was never sent\n");
    return 1;
  }

  if (!wait_flag("blocked", 0)) return 1;
  if (strcmp(mode, "segv") == 0) {
    ex_line("!end signal:11");
    volatile int* volatile p = NULL;
    *p = 1;
  } else if (strcmp(mode, "abort") == 0) {
    ex_line("!end abort");
    ex_other("MPI_Abort");  /* recorded when called: it does not return */
    MPI_Abort(W, 7);
  } else if (strcmp(mode, "sigkill") == 0) {
    /* 100000 records of 12 bytes: the first 1 MiB chunk fills and is sealed,
     * the rest stays in the unsealed one. */
    for (int i = 0; i < 100000; ++i) MPI_Comm_rank(W, &me);
    ex_line("MPI_Comm_rank repeat=100000");
    ex_line("!end ");
    ex_line("!salvaged");
    ex_line("!event_chunks_at_least 2");
    raise(SIGKILL);
  }
  fprintf(stderr, "crash: rank 1 survived %s\n", mode);
  return 1;
}
