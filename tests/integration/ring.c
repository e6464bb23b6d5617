/* A short program for more than 2 ranks (few messages: the test machine may
 * be oversubscribed): a ring received with ANY_SOURCE/ANY_TAG (the recorded
 * source and tag are the actual ones), MPI_IN_PLACE Allreduce and Gather at a
 * non-zero root, Alltoallv with per-peer counts, an Ibcast, a marker. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "ex.h"

int main(int argc, char** argv) {
  int rank, size;
  ex_init(&argc, &argv, &rank, &size);
  const MPI_Comm W = MPI_COMM_WORLD;
  EX_MARKER(5, 1);

  /* Ring: tag 100 + sender, received from anyone with any tag. */
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int out[2] = {rank, 7}, in[4] = {-1, -1, -1, -1};
  MPI_Request q;
  MPI_Isend(out, 2, MPI_INT, right, 100 + rank, W, &q);
  ex_p2p_req("MPI_Isend", right, 100 + rank, W, 8, 0, q);
  const MPI_Request h = q;
  MPI_Status st;
  MPI_Recv(in, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, W, &st);
  int n = -1;
  PMPI_Get_count(&st, MPI_INT, &n);
  EX_CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 100 + left && n == 2 && in[0] == left,
           "ring: source %d tag %d count %d payload %d", st.MPI_SOURCE, st.MPI_TAG, n, in[0]);
  ex_p2p("MPI_Recv", st.MPI_SOURCE, st.MPI_TAG, W, (uint64_t)n * 4, EX_ANY_SOURCE | EX_ANY_TAG);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  ex_comp_begin("MPI_Wait");
  ex_comp_add(h, W, EX_ANY, EX_ANY, -1, 0);
  ex_comp_end();

  /* Allreduce in place. */
  long v[2] = {rank, 1};
  MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_LONG, MPI_SUM, W);
  ex_coll("MPI_Allreduce", W, -1, 16);
  EX_CHECK(v[0] == (long)size * (size - 1) / 2 && v[1] == size, "Allreduce %ld %ld", v[0], v[1]);

  /* Gather in place at the last rank. */
  const int root = size - 1;
  int* g = malloc(sizeof(int) * (size_t)size * 3);
  for (int i = 0; i < 3 * size; ++i) g[i] = -1;
  for (int k = 0; k < 3; ++k) g[3 * rank + k] = 10 * rank + k;
  if (rank == root) MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, 3, MPI_INT, root, W);
  else MPI_Gather(&g[3 * rank], 3, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root, W);
  ex_coll("MPI_Gather", W, root, 12);
  if (rank == root)
    for (int i = 0; i < size; ++i)
      for (int k = 0; k < 3; ++k)
        EX_CHECK(g[3 * i + k] == 10 * i + k, "Gather [%d][%d]=%d", i, k, g[3 * i + k]);
  free(g);

  /* Alltoallv: rank r sends r+i+1 shorts to rank i. */
  int *sc = malloc(sizeof(int) * (size_t)size), *sd = malloc(sizeof(int) * (size_t)size);
  int *rc = malloc(sizeof(int) * (size_t)size), *rd = malloc(sizeof(int) * (size_t)size);
  int sn = 0, rn = 0;
  for (int i = 0; i < size; ++i) {
    sc[i] = rank + i + 1;
    sd[i] = sn;
    sn += sc[i];
    rc[i] = i + rank + 1;
    rd[i] = rn;
    rn += rc[i];
  }
  short* sb = malloc(sizeof(short) * (size_t)sn);
  short* rb = malloc(sizeof(short) * (size_t)rn);
  for (int i = 0; i < size; ++i)
    for (int k = 0; k < sc[i]; ++k) sb[sd[i] + k] = (short)(100 * rank + 10 * i + k);
  MPI_Alltoallv(sb, sc, sd, MPI_SHORT, rb, rc, rd, MPI_SHORT, W);
  ex_coll("MPI_Alltoallv", W, -1, (uint64_t)sn * 2);
  for (int i = 0; i < size; ++i)
    for (int k = 0; k < rc[i]; ++k)
      EX_CHECK(rb[rd[i] + k] == 100 * i + 10 * rank + k, "Alltoallv from %d", i);
  free(sc); free(sd); free(rc); free(rd); free(sb); free(rb);

  /* Ibcast from rank 1. */
  double d[3] = {0, 0, 0};
  if (rank == 1) d[0] = 1.0, d[1] = 2.0, d[2] = 3.0;
  MPI_Ibcast(d, 3, MPI_DOUBLE, 1, W, &q);
  ex_icoll("MPI_Ibcast", W, 1, 24, q);
  const MPI_Request hb = q;
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  ex_comp_begin("MPI_Wait");
  ex_comp_add(hb, W, EX_ANY, EX_ANY, -1, 0);
  ex_comp_end();
  EX_CHECK(d[2] == 3.0, "Ibcast %g", d[2]);

  EX_MARKER(5, 0);
  return ex_finalize("ring", rank);
}
