/* A job that hangs or dies inside MPI calls, for hang.sh (issue 10).
 *
 *   hang deadlock INFO_DIR   ranks 0 and 1 each wait in MPI_Recv for the other,
 *                            rank 2 (and any further rank) in MPI_Barrier; all
 *                            inside interval 1. Never returns: killed by hang.sh.
 *   hang deadlock_split INFO_DIR
 *                            the same, but ranks 0 and 1 wait on a communicator
 *                            of the two where world rank 0 is rank 1 and world
 *                            rank 1 rank 0 (MPI_Comm_split, reversed keys).
 *   hang segv INFO_DIR       rank 1 dies of SIGSEGV while the others wait in
 *                            MPI_Allreduce (inside interval 1): it waits until
 *                            their INFO files say they are entering it.
 *   hang abort INFO_DIR      the same, but rank 1 calls MPI_Abort.
 *
 * Each rank writes INFO_DIR/info-R: "pid PID", then, just before the call it
 * will not return from, "call FUNC FILE LINE WALL" (WALL: CLOCK_REALTIME
 * seconds), each line with one write(2), so hang.sh knows whom to kill, when
 * each call was entered and at which line.
 */
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prof/markers.h"

static int info_fd = -1;

static void note(const char* fmt, const char* func, int line) {
  char buf[256];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const int n = snprintf(buf, sizeof buf, fmt, func, __FILE__, line,
                         (double)ts.tv_sec + ts.tv_nsec * 1e-9);
  if (write(info_fd, buf, (size_t)n) != n) abort();
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: hang deadlock|deadlock_split|segv|abort INFO_DIR\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char path[4096];
  snprintf(path, sizeof path, "%s/info-%d", argv[2], rank);
  info_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (info_fd < 0) {
    perror(path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char pid[64];
  const int n = snprintf(pid, sizeof pid, "pid %d\n", (int)getpid());
  if (write(info_fd, pid, (size_t)n) != n) abort();
  MPI_Barrier(MPI_COMM_WORLD);

  const int split = strcmp(argv[1], "deadlock_split") == 0;
  MPI_Comm pair = MPI_COMM_WORLD;
  if (split) MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, 1 - rank, &pair);

  const char* fmt = "call %s %s %d %.6f\n";
  int x = 0, y = 0;
  PROF_INTERVAL_BEGIN(1);
  if (strcmp(argv[1], "deadlock") == 0 || split) {
    if (rank < 2) {
      /* The other rank: 1 - rank in the world, rank in the reversed pair. */
      note(fmt, "MPI_Recv", __LINE__ + 1);
      MPI_Recv(&x, 1, MPI_INT, split ? rank : 1 - rank, 7, pair, MPI_STATUS_IGNORE);
    } else {
      note(fmt, "MPI_Barrier", __LINE__ + 1);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  } else if (strcmp(argv[1], "segv") == 0 || strcmp(argv[1], "abort") == 0) {
    if (rank == 1) {
      /* Dies once every other rank is about to enter the Allreduce (their info
       * files say so), and a moment more so they are inside it. */
      for (int r = 0; r < size; ++r) {
        if (r == 1) continue;
        snprintf(path, sizeof path, "%s/info-%d", argv[2], r);
        for (;;) {
          char text[512] = {0};
          FILE* f = fopen(path, "r");
          if (f) {
            size_t got = fread(text, 1, sizeof text - 1, f);
            text[got] = 0;
            fclose(f);
          }
          if (strstr(text, "call ")) break;
          usleep(10000);
        }
      }
      usleep(300000);
      if (strcmp(argv[1], "abort") == 0) {
        note(fmt, "MPI_Abort", __LINE__ + 1);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
      note(fmt, "SIGSEGV", __LINE__ + 1);
      raise(SIGSEGV);
    }
    note(fmt, "MPI_Allreduce", __LINE__ + 1);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  }
  PROF_INTERVAL_END(1);
  MPI_Finalize();
  return 0;
}
