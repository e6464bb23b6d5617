/* Late senders of known lateness, for checking clock synchronization end to
 * end (run under the profiler with PROF_TEST_CLOCK_SHIFT_NS shifting one rank's
 * clock; run_shifted_wait.sh). 2 ranks, two intervals:
 *
 *   interval 1  rank 1 sleeps 40 ms and sends; rank 0 waits in MPI_Recv
 *   interval 2  rank 0 sleeps 40 ms and sends; rank 1 waits in MPI_Recv
 *
 * A receiver's wait ends when it leaves MPI_Recv, so a sender's clock shown too
 * late leaves that wait unchanged, and one shown too early shortens it: the
 * two directions together catch a misalignment of either sign. Both ranks
 * note CLOCK_MONOTONIC (one clock for every process of the machine, never
 * shifted) just before each call, and rank 0 prints, per interval,
 *   "shifted_wait interval I receiver R recv_enter S send_enter S"
 * (seconds): the wait the analyzer must find for R is send enter minus
 * receive enter, however the machine scheduled the run. */
#include <errno.h>
#include <mpi.h>
#include <prof/markers.h>
#include <stdio.h>
#include <time.h>

static double mono_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One late-sender phase; returns this rank's instant just before its call. */
static double late_sender(int rank, int sender, int tag) {
  int value = 0;
  double enter;
  if (rank == sender) {
    struct timespec late = {0, 40 * 1000 * 1000};
    while (nanosleep(&late, &late) != 0 && errno == EINTR) {
    }
    value = tag;
    enter = mono_s();
    MPI_Send(&value, 1, MPI_INT, 1 - sender, tag, MPI_COMM_WORLD);
  } else {
    enter = mono_s();
    MPI_Recv(&value, 1, MPI_INT, sender, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (value != tag) {
      fprintf(stderr, "shifted_wait: received %d, want %d\n", value, tag);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  return enter;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "shifted_wait: needs 2 ranks, got %d\n", size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* Barriers outside the intervals: a wait in them is no late sender's. */
  double mine[2], theirs[2];
  MPI_Barrier(MPI_COMM_WORLD);
  PROF_INTERVAL_BEGIN(1);
  mine[0] = late_sender(rank, 1, 1);
  PROF_INTERVAL_END(1);
  MPI_Barrier(MPI_COMM_WORLD);
  PROF_INTERVAL_BEGIN(2);
  mine[1] = late_sender(rank, 0, 2);
  PROF_INTERVAL_END(2);
  if (rank == 1) {
    MPI_Send(mine, 2, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
  } else {
    MPI_Recv(theirs, 2, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("shifted_wait interval 1 receiver 0 recv_enter %.9f send_enter %.9f\n", mine[0], theirs[0]);
    printf("shifted_wait interval 2 receiver 1 recv_enter %.9f send_enter %.9f\n", theirs[1], mine[1]);
  }
  MPI_Finalize();
  return 0;
}
