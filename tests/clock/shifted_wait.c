/* Late senders of known lateness, for checking clock synchronization end to
 * end (run under the profiler with PROF_TEST_CLOCK_SHIFT_NS shifting some
 * ranks' clocks, or some pretend nodes' with PROF_TEST_NODES;
 * run_shifted_wait.sh). N >= 2 ranks, 2(N-1) intervals, for k = 1..N-1:
 *
 *   interval k        rank k sleeps 40 ms and sends; rank 0 waits in MPI_Recv
 *   interval N-1+k    rank 0 sleeps 40 ms and sends; rank k waits in MPI_Recv
 *
 * A receiver's wait ends when it leaves MPI_Recv, so a sender's clock shown too
 * late leaves that wait unchanged, and one shown too early shortens it: the
 * two directions together catch a misalignment of either sign between rank 0
 * and every other rank. Every rank notes CLOCK_MONOTONIC (one clock for every
 * process of the machine, never shifted) just before each of its calls, and
 * rank 0 prints "shifted_wait ranks N", then per interval
 *   "shifted_wait interval I receiver R recv_enter S send_enter S"
 * (seconds): the wait the analyzer must find for R is send enter minus
 * receive enter, however the machine scheduled the run. */
#include <errno.h>
#include <mpi.h>
#include <prof/markers.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double mono_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One late-sender phase between sender and receiver, in its own interval.
 * The receiver tells the sender it is about to wait (outside the interval)
 * and the sender sleeps 40 ms from then: on a busy machine a receiver
 * descheduled for a while still waits, however late it got there. Returns
 * this rank's instant just before its call (0 for a rank not in the phase). */
static double late_sender(int rank, int sender, int receiver, int interval) {
  int value = 0;
  double enter = 0;
  const int ready_tag = 1000 + interval;
  if (rank == receiver) MPI_Send(&value, 1, MPI_INT, sender, ready_tag, MPI_COMM_WORLD);
  if (rank == sender) MPI_Recv(&value, 1, MPI_INT, receiver, ready_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  PROF_INTERVAL_BEGIN(interval);
  if (rank == sender) {
    struct timespec late = {0, 40 * 1000 * 1000};
    while (nanosleep(&late, &late) != 0 && errno == EINTR) {
    }
    value = interval;
    enter = mono_s();
    MPI_Send(&value, 1, MPI_INT, receiver, interval, MPI_COMM_WORLD);
  } else if (rank == receiver) {
    enter = mono_s();
    MPI_Recv(&value, 1, MPI_INT, sender, interval, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (value != interval) {
      fprintf(stderr, "shifted_wait: received %d, want %d\n", value, interval);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  PROF_INTERVAL_END(interval);
  return enter;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    fprintf(stderr, "shifted_wait: needs 2 ranks or more, got %d\n", size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int phases = 2 * (size - 1);
  /* mine[i]: this rank's instant in interval i + 1 (rank 0 is in every one). */
  double* mine = calloc((size_t)phases, sizeof(double));
  for (int k = 1; k < size; ++k) mine[k - 1] = late_sender(rank, k, 0, k);
  for (int k = 1; k < size; ++k) mine[size - 2 + k] = late_sender(rank, 0, k, size - 1 + k);
  if (rank != 0) {
    const double pair[2] = {mine[rank - 1], mine[size - 2 + rank]};
    MPI_Send(pair, 2, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
  } else {
    printf("shifted_wait ranks %d\n", size);
    for (int k = 1; k < size; ++k) {
      double theirs[2];
      MPI_Recv(theirs, 2, MPI_DOUBLE, k, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      printf("shifted_wait interval %d receiver 0 recv_enter %.9f send_enter %.9f\n", k, mine[k - 1],
             theirs[0]);
      printf("shifted_wait interval %d receiver %d recv_enter %.9f send_enter %.9f\n", size - 1 + k, k,
             theirs[1], mine[size - 2 + k]);
    }
  }
  free(mine);
  MPI_Finalize();
  return 0;
}
