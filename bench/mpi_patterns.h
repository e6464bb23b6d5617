/* The MPI patterns that bench/shim_overhead.c times and bench/hop_calls.c
 * counts instructions of, written once so both measure the same calls. */
#ifndef PROF_BENCH_MPI_PATTERNS_H
#define PROF_BENCH_MPI_PATTERNS_H

#include <mpi.h>

/* GCC takes MPI_STATUSES_IGNORE (a null pointer) for a too-small array. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"

/* n round trips of a 0-byte message between ranks 0 and 1 (other ranks idle);
 * returns the MPI calls this rank made. */
static inline long ping_pong(int rank, long n) {
  for (long i = 0; i < n; ++i) {
    if (rank == 0) {
      MPI_Send(NULL, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(NULL, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(NULL, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(NULL, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
  }
  return rank < 2 ? 2 * n : 0;
}

/* n iterations of a ring of small nonblocking messages in both directions
 * completed by one Waitall, with an Allreduce every 10th; returns the MPI
 * calls this rank made. */
static inline long message_ring(int rank, int size, long n) {
  int sbuf[4] = {rank, 0, 0, 0}, rbuf[8];
  double local = 1.0, global = 0.0;
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  long calls = 0;
  for (long i = 0; i < n; ++i) {
    MPI_Request req[4];
    MPI_Irecv(rbuf, 4, MPI_INT, left, 2, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(rbuf + 4, 4, MPI_INT, right, 3, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(sbuf, 4, MPI_INT, right, 2, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(sbuf, 4, MPI_INT, left, 3, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    calls += 5;
    if (i % 10 == 0) {
      MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      calls++;
    }
  }
  return calls;
}

/* n iterations of one exchange between the ranks of a pair (0 with 1, 2 with
 * 3, ...): Irecv, Isend, Waitall of the two, and an Allreduce every 16th
 * (the message-heavy loop whose bytes per event docs/performance.md gives);
 * returns the MPI calls this rank made. */
static inline long exchange_loop(int rank, int size, long n) {
  int sbuf[4] = {rank, 0, 0, 0}, rbuf[4];
  double local = 1.0, global = 0.0;
  const int peer = (rank ^ 1) < size ? (rank ^ 1) : rank;
  long calls = 0;
  for (long i = 0; i < n; ++i) {
    MPI_Request req[2];
    MPI_Irecv(rbuf, 4, MPI_INT, peer, 7, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(sbuf, 4, MPI_INT, peer, 7, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    calls += 3;
    if (i % 16 == 15) {
      MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      calls++;
    }
  }
  return calls;
}

#endif
