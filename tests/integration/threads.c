/* MPI_THREAD_MULTIPLE (2 ranks): 4 threads per rank, each with its own event
 * stream, make MPI calls at the same time: MPI_Comm_rank in a loop with
 * Isend/Irecv/Waitall pairs on thread-specific tags in between; thread 1 also
 * makes enough calls to fill its growing chunks (each sealed and a new one
 * mapped) and then its home chunk twice (copied out and reused, format 5)
 * while the other threads record. trace_check matches each thread's
 * log with one stream, call by call: exact counts per stream, no record torn
 * or lost (bad_records == 0, crc_mismatches == 0). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ex.h"

enum { kThreads = 4, kCalls = 1000, kEvery = 50, kBulk = 400000 };

static int rank, peer;

static void* worker(void* arg) {
  const int t = (int)(long)arg;
  ex_set_thread(t);
  const int tag = 1000 + t;
  int me = -1;
  for (int i = 0; i < kCalls; ++i) {
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    ex_other("MPI_Comm_rank");
    EX_CHECK(me == rank, "thread %d: Comm_rank %d", t, me);
    if (i % kEvery == kEvery - 1) {
      int out[2] = {rank, 100 * t + i}, in[2] = {-1, -1};
      MPI_Request rq[2];
      MPI_Irecv(in, 2, MPI_INT, peer, tag, MPI_COMM_WORLD, &rq[0]);
      ex_p2p_req("MPI_Irecv", peer, tag, MPI_COMM_WORLD, 8, 0, rq[0]);
      MPI_Isend(out, 2, MPI_INT, peer, tag, MPI_COMM_WORLD, &rq[1]);
      ex_p2p_req("MPI_Isend", peer, tag, MPI_COMM_WORLD, 8, 0, rq[1]);
      const MPI_Request h0 = rq[0], h1 = rq[1];
      MPI_Status st[2];
      MPI_Waitall(2, rq, st);
      ex_comp_begin("MPI_Waitall");
      ex_comp_add(h0, MPI_COMM_WORLD, peer, tag, 8, 0);
      ex_comp_add(h1, MPI_COMM_WORLD, EX_ANY, EX_ANY, -1, 0);
      ex_comp_end();
      EX_CHECK(in[0] == peer && in[1] == 100 * t + i && st[0].MPI_TAG == tag,
               "thread %d: got %d %d tag %d", t, in[0], in[1], st[0].MPI_TAG);
    }
  }
  if (t == 1) {
    /* 120000 records of 12 bytes: more than one 1 MiB chunk. */
    for (int i = 0; i < kBulk; ++i) MPI_Comm_rank(MPI_COMM_WORLD, &me);
    ex_line("MPI_Comm_rank repeat=%d", kBulk);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int provided = -1, size;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ex_open();
  ex_other("MPI_Init_thread");
  if (provided != MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "threads: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ex_other("MPI_Comm_rank");
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ex_other("MPI_Comm_size");
  if (size != 2) {
    fprintf(stderr, "threads: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  peer = 1 - rank;

  /* One chunk per stream (main + 4 threads) and at least one more: the bulk. */
  ex_line("!event_chunks_at_least %d", kThreads + 2);
  pthread_t th[kThreads];
  for (int t = 0; t < kThreads; ++t) pthread_create(&th[t], NULL, worker, (void*)(long)(t + 1));
  for (int t = 0; t < kThreads; ++t) pthread_join(th[t], NULL);

  MPI_Barrier(MPI_COMM_WORLD);
  ex_coll("MPI_Barrier", MPI_COMM_WORLD, -1, 0);
  MPI_Finalize();
  ex_other("MPI_Finalize");
  if (ex_failures()) {
    fprintf(stderr, "threads: rank %d: %d wrong MPI result(s)\n", rank, ex_failures());
    return 1;
  }
  return 0;
}
