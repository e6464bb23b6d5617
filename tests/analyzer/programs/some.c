/* MPI_Waitsome, MPI_Testsome and a mixed MPI_Waitall, each completing 16
 * receives from a late sender (2 ranks; check_some.py). In each phase rank 0
 * posts 16 MPI_Irecv; rank 1 sends them (MPI_Send) after a delay:
 *
 *   interval 1  Waitsome loop; rank 1 sends after SENDER_LATE_MS, then one
 *               message every GAP_MS, so the loop completes them a few at a time
 *   interval 2  the same with a Testsome loop (sleeping 0.2 ms between tests)
 *   interval 3  one Waitall; rank 1 sends 8 at once, then the other 8 after
 *               SENDER_LATE_MS: early and late messages in one completion
 *
 * Rank 0's PotentSync in each runs from its Irecvs to the enter of the last
 * send, counted once. Stamps (realrun.h), P the phase (1..3):
 *   rank 0: P.irecv0 (before the first Irecv), P.irecv15 (after the last)
 *   rank 1: P.send15.0 P.send15.1 (around the last MPI_Send) */
#include <mpi.h>
#include <prof/markers.h>
#include <stdio.h>

#include "realrun.h"

enum { MESSAGES = 16, SENDER_LATE_MS = 30, GAP_MS = 2 };

static int wrong;

/* Rank 0: posts the receives of phase `phase`. */
static void post(int phase, int* values, MPI_Request* requests) {
  realrun_stamp("%d.irecv0", phase);
  for (int m = 0; m < MESSAGES; ++m)
    MPI_Irecv(&values[m], 1, MPI_INT, 1, m, MPI_COMM_WORLD, &requests[m]);
  realrun_stamp("%d.irecv15", phase);
}

/* Rank 0: each request completed once, with the value sent for it. */
static void verify(int phase, const int* values, const int* completions) {
  for (int m = 0; m < MESSAGES; ++m) {
    if (completions[m] != 1 || values[m] != 1000 * phase + m) {
      fprintf(stderr, "some: phase %d message %d: completed %d times, value %d\n", phase, m,
              completions[m], values[m]);
      ++wrong;
    }
  }
}

/* Rank 1: the sends of phase `phase`; `gap_ms` before each, `late_ms` before
 * message `late_from` and the ones after it. */
static void send_all(int phase, int gap_ms, int late_ms, int late_from) {
  for (int m = 0; m < MESSAGES; ++m) {
    if (m == late_from) realrun_sleep_ms(late_ms);
    if (gap_ms) realrun_sleep_ms(gap_ms);
    const int value = 1000 * phase + m;
    if (m == MESSAGES - 1) realrun_stamp("%d.send15.0", phase);
    MPI_Send(&value, 1, MPI_INT, 0, m, MPI_COMM_WORLD);
    if (m == MESSAGES - 1) realrun_stamp("%d.send15.1", phase);
  }
}

int main(int argc, char** argv) {
  const int rank = realrun_init_2ranks(&argc, &argv, "some");
  int values[MESSAGES], indices[MESSAGES], completions[MESSAGES];
  MPI_Request requests[MESSAGES];

  for (int phase = 1; phase <= 3; ++phase) {
    MPI_Barrier(MPI_COMM_WORLD);
    PROF_INTERVAL_BEGIN(phase);
    if (rank == 1) {
      if (phase == 3) send_all(phase, 0, SENDER_LATE_MS, MESSAGES / 2);
      else send_all(phase, GAP_MS, SENDER_LATE_MS, 0);
    } else {
      for (int m = 0; m < MESSAGES; ++m) values[m] = -1, completions[m] = 0;
      post(phase, values, requests);
      int done = 0;
      if (phase == 3) {
        MPI_Waitall(MESSAGES, requests, MPI_STATUSES_IGNORE);
        for (int m = 0; m < MESSAGES; ++m) completions[m] = 1;
        done = MESSAGES;
      }
      while (done < MESSAGES) {
        int count = 0;
        if (phase == 1) {
          MPI_Waitsome(MESSAGES, requests, &count, indices, MPI_STATUSES_IGNORE);
        } else {
          MPI_Testsome(MESSAGES, requests, &count, indices, MPI_STATUSES_IGNORE);
          if (count == 0) realrun_sleep_us(200);
        }
        if (count == MPI_UNDEFINED) break;
        for (int i = 0; i < count; ++i) ++completions[indices[i]];
        done += count;
      }
      verify(phase, values, completions);
    }
    PROF_INTERVAL_END(phase);
  }
  const int stamps_failed = realrun_write_stamps(rank);
  MPI_Finalize();
  return wrong || stamps_failed ? 1 : 0;
}
