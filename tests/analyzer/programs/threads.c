/* MPI_THREAD_MULTIPLE (2 ranks; check_threads.py): in interval 1, opened and
 * closed by the main thread, THREADS threads per rank each call MPI_Sendrecv
 * with the peer ITERATIONS times, each on its own duplicate of MPI_COMM_WORLD.
 * The threads are inside MPI at the same time, so the sum of their calls'
 * durations exceeds the rank's time; the rank's MPI time (the union) must not.
 *
 * Stamps (realrun.h): 1.begin / 1.end around the markers, 1.in / 1.out just
 * inside them, and thread.T.mpi_seconds: the time thread T spent in its calls
 * (a duration, not an instant). */
#include <mpi.h>
#include <prof/markers.h>
#include <pthread.h>
#include <stdio.h>

#include "realrun.h"

enum { THREADS = 4, ITERATIONS = 300 };

struct worker {
  int index, rank, wrong;
  MPI_Comm comm;
  double mpi_seconds;
};

static void* work(void* arg) {
  struct worker* w = arg;
  const int peer = 1 - w->rank;
  for (int i = 0; i < ITERATIONS; ++i) {
    int out = 100000 * w->rank + 1000 * w->index + i, in = -1;
    const double t0 = realrun_now();
    MPI_Sendrecv(&out, 1, MPI_INT, peer, i, &in, 1, MPI_INT, peer, i, w->comm, MPI_STATUS_IGNORE);
    w->mpi_seconds += realrun_now() - t0;
    if (in != 100000 * peer + 1000 * w->index + i) ++w->wrong;
  }
  return NULL;
}

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2 || provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "threads: needs 2 ranks and MPI_THREAD_MULTIPLE (got %d)\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  struct worker workers[THREADS];
  pthread_t ids[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    workers[t] = (struct worker){.index = t, .rank = rank};
    MPI_Comm_dup(MPI_COMM_WORLD, &workers[t].comm);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  realrun_stamp("1.begin");
  PROF_INTERVAL_BEGIN(1);
  realrun_stamp("1.in");
  for (int t = 0; t < THREADS; ++t) pthread_create(&ids[t], NULL, work, &workers[t]);
  for (int t = 0; t < THREADS; ++t) pthread_join(ids[t], NULL);
  realrun_stamp("1.out");
  PROF_INTERVAL_END(1);
  realrun_stamp("1.end");

  int wrong = 0;
  for (int t = 0; t < THREADS; ++t) {
    wrong += workers[t].wrong;
    /* A duration in the seconds column: the checker reads it as such. */
    realrun_stamp("thread.%d.mpi_seconds", t);
    realrun_stamps[realrun_stamp_count - 1].seconds = workers[t].mpi_seconds;
    MPI_Comm_free(&workers[t].comm);
  }
  if (wrong) fprintf(stderr, "threads: rank %d: %d wrong values\n", rank, wrong);
  const int stamps_failed = realrun_write_stamps(rank);
  MPI_Finalize();
  return wrong || stamps_failed ? 1 : 0;
}
