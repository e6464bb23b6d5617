/* A signal the program handles or ignores does not end the rank (2 ranks):
 *   handled   SIGTERM, SIGINT and SIGQUIT handled by the program (installed
 *             before MPI_Init, so the profiler's handlers chain to them),
 *             each raised between calls; then abort() whose SIGABRT handler
 *             leaves by siglongjmp, and the program goes on;
 *   ignored   the same signals ignored (SIG_IGN before MPI_Init), raised;
 *   delivery  the program's handlers are delivered as without the profiler:
 *             with their sa_mask (SIGTERM's blocks SIGUSR1 while it runs),
 *             SA_RESTART (a read() that SIGINT interrupts resumes and gets its
 *             data), and SA_RESETHAND (a forked child raising SIGQUIT twice
 *             dies of the second).
 * Every way the program goes on as it would unprofiled: every call after the
 * signals is in the trace, the end reason is "finalize", the exit status 0. */
#include <mpi.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ex.h"

static volatile sig_atomic_t handled;
static void on_signal(int sig) { (void)sig; ++handled; }

static sigjmp_buf recovered;
static void on_abort(int sig) {
  (void)sig;
  siglongjmp(recovered, 1);
}

/* delivery: what the handlers saw. */
static volatile sig_atomic_t usr1_blocked = -1, interrupted;
static void on_term_masked(int sig) {
  (void)sig;
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, NULL, &now);
  usr1_blocked = sigismember(&now, SIGUSR1);
}
static void on_int_counted(int sig) { (void)sig; ++interrupted; }

static int pipe_ends[2];
static pthread_t reader;
static void pause_ms(long ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}
/* Interrupts the reader's read() with SIGINT, then gives it its data. */
static void* interrupt_then_write(void* unused) {
  (void)unused;
  pause_ms(50);
  pthread_kill(reader, SIGINT);
  pause_ms(50);
  if (write(pipe_ends[1], "ok", 2) != 2) return NULL;
  return NULL;
}

static void install(int sig, void (*handler)(int), int flags, int masked) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  action.sa_flags = flags;
  sigemptyset(&action.sa_mask);
  if (masked) sigaddset(&action.sa_mask, masked);
  sigaction(sig, &action, NULL);
}

/* delivery's three checks; false when one saw a difference (said on stderr). */
static int delivered_as_installed(void) {
  int ok = 1;
  raise(SIGTERM);
  if (usr1_blocked != 1) fprintf(stderr, "signals: SIGTERM's handler ran without its sa_mask\n"), ok = 0;
  if (pipe(pipe_ends) != 0) return 0;
  reader = pthread_self();
  pthread_t writer;
  pthread_create(&writer, NULL, interrupt_then_write, NULL);
  char got[2] = {0, 0};
  const ssize_t n = read(pipe_ends[0], got, 2);
  pthread_join(writer, NULL);
  if (n != 2 || memcmp(got, "ok", 2) != 0 || interrupted != 1)
    fprintf(stderr, "signals: read() under SA_RESTART returned %zd (SIGINT handled %d times)\n", n,
            (int)interrupted), ok = 0;
  const pid_t child = fork();
  if (child == 0) {
    raise(SIGQUIT);
    raise(SIGQUIT);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGQUIT)
    fprintf(stderr, "signals: a one-shot SIGQUIT handler ran twice (child status %d)\n", status), ok = 0;
  return ok;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const int signals[] = {SIGTERM, SIGINT, SIGQUIT};
  const int count = (int)(sizeof signals / sizeof signals[0]);
  if (strcmp(mode, "handled") && strcmp(mode, "ignored") && strcmp(mode, "delivery")) {
    fprintf(stderr, "usage: signals handled|ignored|delivery\n");
    return 2;
  }
  const int delivery = strcmp(mode, "delivery") == 0;
  if (delivery) {
    install(SIGTERM, on_term_masked, 0, SIGUSR1);
    install(SIGINT, on_int_counted, SA_RESTART, 0);
    install(SIGQUIT, on_signal, SA_RESETHAND, 0);
  } else {
    for (int i = 0; i < count; ++i) signal(signals[i], strcmp(mode, "handled") == 0 ? on_signal : SIG_IGN);
  }
  if (strcmp(mode, "handled") == 0) install(SIGABRT, on_abort, 0, 0);
  int rank, size;
  ex_init(&argc, &argv, &rank, &size);
  int sum = -1;
  if (delivery) {
    EX_CHECK(delivered_as_installed(), "a handler delivered otherwise than installed");
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ex_coll("MPI_Allreduce", MPI_COMM_WORLD, -1, 4);
    return ex_finalize("signals", rank);
  }
  for (int i = 0; i < count; ++i) {
    raise(signals[i]);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ex_coll("MPI_Allreduce", MPI_COMM_WORLD, -1, 4);
    EX_CHECK(sum == size * (size - 1) / 2, "sum %d", sum);
  }
  if (strcmp(mode, "handled") == 0) {
    EX_CHECK(handled == count, "%d of %d signals handled", (int)handled, count);
    if (sigsetjmp(recovered, 1) == 0) abort();
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ex_coll("MPI_Allreduce", MPI_COMM_WORLD, -1, 4);
    EX_CHECK(sum == size * (size - 1) / 2, "sum %d after abort()", sum);
  }
  return ex_finalize("signals", rank);
}
