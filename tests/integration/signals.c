/* A signal the program handles or ignores does not end the rank (2 ranks):
 *   handled  SIGTERM, SIGINT and SIGQUIT handled by the program (installed
 *            before MPI_Init, so the profiler's handlers chain to them),
 *            each raised between calls;
 *   ignored  the same signals ignored (SIG_IGN before MPI_Init), raised.
 * Either way the program goes on as it would unprofiled: every call after the
 * signals is in the trace, the end reason is "finalize", the exit status 0. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ex.h"

static volatile sig_atomic_t handled;
static void on_signal(int sig) { (void)sig; ++handled; }

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const int signals[] = {SIGTERM, SIGINT, SIGQUIT};
  const int count = (int)(sizeof signals / sizeof signals[0]);
  if (strcmp(mode, "handled") && strcmp(mode, "ignored")) {
    fprintf(stderr, "usage: signals handled|ignored\n");
    return 2;
  }
  for (int i = 0; i < count; ++i) signal(signals[i], strcmp(mode, "handled") == 0 ? on_signal : SIG_IGN);
  int rank, size;
  ex_init(&argc, &argv, &rank, &size);
  int sum = -1;
  for (int i = 0; i < count; ++i) {
    raise(signals[i]);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ex_coll("MPI_Allreduce", MPI_COMM_WORLD, -1, 4);
    EX_CHECK(sum == size * (size - 1) / 2, "sum %d", sum);
  }
  if (strcmp(mode, "handled") == 0) EX_CHECK(handled == count, "%d of %d signals handled", (int)handled, count);
  return ex_finalize("signals", rank);
}
