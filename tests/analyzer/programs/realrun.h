/* Timestamps for the real-run analyzer tests.
 *
 * A program run under the profiler notes, on CLOCK_MONOTONIC (one clock for
 * every process of the machine), when it entered and left the calls that
 * matter. The checker derives the expected characteristics from these
 * instants, so a rank descheduled for 20 ms on a loaded machine changes the
 * expected value with the measured one instead of failing a fixed tolerance.
 * The profiler's own timestamps lie inside the program's, a few microseconds
 * away.
 *
 * Stamps are kept in memory and written at the end, to
 * $REALRUN_STAMPS/stamps-rank-R.txt, one "name seconds" line each. */
#ifndef PROF_TEST_REALRUN_H
#define PROF_TEST_REALRUN_H

#include <errno.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { REALRUN_MAX_STAMPS = 8192, REALRUN_NAME_BYTES = 48 };

static struct {
  char name[REALRUN_NAME_BYTES];
  double seconds;
} realrun_stamps[REALRUN_MAX_STAMPS];
static int realrun_stamp_count;

static inline double realrun_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Notes the current instant under a printf-formatted name. */
static inline void realrun_stamp(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void realrun_stamp(const char* fmt, ...) {
  const double now = realrun_now();
  if (realrun_stamp_count >= REALRUN_MAX_STAMPS) {
    fprintf(stderr, "realrun: more than %d stamps\n", REALRUN_MAX_STAMPS);
    exit(2);
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(realrun_stamps[realrun_stamp_count].name, REALRUN_NAME_BYTES, fmt, ap);
  va_end(ap);
  realrun_stamps[realrun_stamp_count++].seconds = now;
}

/* Sleeps (yielding the core to the other rank's busy-polling MPI) at least us
 * microseconds. */
static inline void realrun_sleep_us(long us) {
  struct timespec left = {us / 1000000L, (us % 1000000L) * 1000L};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}
static inline void realrun_sleep_ms(int ms) { realrun_sleep_us(1000L * ms); }

/* MPI_Init, then this rank's number; a run with other than 2 ranks aborts
 * with a message naming the program. (Needs <mpi.h> before this header.) */
static inline int realrun_init_2ranks(int* argc, char*** argv, const char* program) {
  MPI_Init(argc, argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    fprintf(stderr, "%s: run with 2 ranks\n", program);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return rank;
}

/* Writes the stamps; returns 0, or 1 (with a message) when it cannot. */
static inline int realrun_write_stamps(int rank) {
  const char* dir = getenv("REALRUN_STAMPS");
  if (!dir || !*dir) {
    fprintf(stderr, "realrun: REALRUN_STAMPS is not set\n");
    return 1;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/stamps-rank-%d.txt", dir, rank);
  FILE* f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "realrun: cannot write %s\n", path);
    return 1;
  }
  for (int i = 0; i < realrun_stamp_count; ++i)
    fprintf(f, "%s %.9f\n", realrun_stamps[i].name, realrun_stamps[i].seconds);
  return fclose(f) == 0 ? 0 : 1;
}

#endif /* PROF_TEST_REALRUN_H */
