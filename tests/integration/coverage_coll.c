/* Every collective the shim records (any size >= 2), in its three forms:
 * blocking on MPI_COMM_WORLD, nonblocking (MPI_Ixxx + MPI_Wait) and persistent
 * (MPI_Xxx_init + MPI_Start + MPI_Wait + MPI_Request_free) on a communicator
 * whose ranks run in reverse world order; neighbour collectives on a periodic
 * 1-D Cartesian communicator. Rooted ones use root 1, and every call moves its
 * own number of elements, so a recorded root, byte count or communicator taken
 * from the wrong argument differs from the log. Also every communicator
 * constructor not in comms.c (Comm_split_type, Cart_create/sub, graphs,
 * Comm_create(_group), *_with_info, Comm_create_from_group,
 * Intercomm_create_from_groups). Every result is checked. */
#include <ctype.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ex.h"

enum { BLOCKING, NONBLOCKING, PERSISTENT };
enum { ROOT = 1 };

static int rank, size;
static MPI_Request q;  /* the request of the call being made */
static int calls;      /* distinct element counts: one more per call */

static int next_count(void) { return 2 + calls++; }

static int comm_rank(MPI_Comm c) {
  int r;
  PMPI_Comm_rank(c, &r);
  return r;
}

static int* ints(size_t n) {
  int* p = malloc(sizeof(int) * (n ? n : 1));
  for (size_t i = 0; i < n; ++i) p[i] = -1;
  return p;
}

/* MPI_Bcast -> MPI_Ibcast, MPI_Bcast_init. */
static const char* form_name(const char* base, int form) {
  static char buf[64];
  if (form == NONBLOCKING) snprintf(buf, sizeof buf, "MPI_I%c%s", tolower(base[4]), base + 5);
  else if (form == PERSISTENT) snprintf(buf, sizeof buf, "%s_init", base);
  else snprintf(buf, sizeof buf, "%s", base);
  return buf;
}

/* Logs the call just made; a nonblocking one is waited for, a persistent one
 * started, waited for and freed (each call logged). */
static void finish(const char* base, int form, MPI_Comm c, int root, uint64_t bytes) {
  if (form == BLOCKING) {
    ex_coll(base, c, root, bytes);
    return;
  }
  ex_icoll(form_name(base, form), c, root, bytes, q);
  const MPI_Request h = q;
  if (form == PERSISTENT) {
    MPI_Start(&q);
    ex_reqop("MPI_Start", 1, &h);
  }
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  ex_comp_begin("MPI_Wait");
  ex_comp_add(h, c, EX_ANY, EX_ANY, -1, 0);
  ex_comp_end();
  if (form == PERSISTENT) {
    MPI_Request_free(&q);
    ex_reqop("MPI_Request_free", 1, &h);
    EX_CHECK(q == MPI_REQUEST_NULL, "Request_free left the request");
  }
}

#define CALL3(blocking, nonblocking, persistent) \
  do {                                           \
    if (form == BLOCKING) blocking;              \
    else if (form == NONBLOCKING) nonblocking;   \
    else persistent;                             \
  } while (0)
#define INFO MPI_INFO_NULL

static void barrier(int form, MPI_Comm c) {
  CALL3(MPI_Barrier(c), MPI_Ibarrier(c, &q), MPI_Barrier_init(c, INFO, &q));
  finish("MPI_Barrier", form, c, -1, 0);
}

static void bcast(int form, MPI_Comm c) {
  const int k = next_count(), r = comm_rank(c);
  int* b = ints((size_t)k);
  if (r == ROOT)
    for (int i = 0; i < k; ++i) b[i] = 1000 * k + i;
  CALL3(MPI_Bcast(b, k, MPI_INT, ROOT, c), MPI_Ibcast(b, k, MPI_INT, ROOT, c, &q),
        MPI_Bcast_init(b, k, MPI_INT, ROOT, c, INFO, &q));
  finish("MPI_Bcast", form, c, ROOT, 4 * (uint64_t)k);
  for (int i = 0; i < k; ++i) EX_CHECK(b[i] == 1000 * k + i, "Bcast [%d]=%d", i, b[i]);
  free(b);
}

/* Reduce, Allreduce, Scan, Exscan: sums of (comm rank + i). */
enum { REDUCE, ALLREDUCE, SCAN, EXSCAN };
static void reduction(int which, int form, MPI_Comm c) {
  const int k = next_count(), r = comm_rank(c);
  int* s = ints((size_t)k);
  int* out = ints((size_t)k);
  for (int i = 0; i < k; ++i) s[i] = r + i;
  const char* base = "";
  switch (which) {
    case REDUCE:
      base = "MPI_Reduce";
      CALL3(MPI_Reduce(s, out, k, MPI_INT, MPI_SUM, ROOT, c),
            MPI_Ireduce(s, out, k, MPI_INT, MPI_SUM, ROOT, c, &q),
            MPI_Reduce_init(s, out, k, MPI_INT, MPI_SUM, ROOT, c, INFO, &q));
      break;
    case ALLREDUCE:
      base = "MPI_Allreduce";
      CALL3(MPI_Allreduce(s, out, k, MPI_INT, MPI_SUM, c),
            MPI_Iallreduce(s, out, k, MPI_INT, MPI_SUM, c, &q),
            MPI_Allreduce_init(s, out, k, MPI_INT, MPI_SUM, c, INFO, &q));
      break;
    case SCAN:
      base = "MPI_Scan";
      CALL3(MPI_Scan(s, out, k, MPI_INT, MPI_SUM, c),
            MPI_Iscan(s, out, k, MPI_INT, MPI_SUM, c, &q),
            MPI_Scan_init(s, out, k, MPI_INT, MPI_SUM, c, INFO, &q));
      break;
    case EXSCAN:
      base = "MPI_Exscan";
      CALL3(MPI_Exscan(s, out, k, MPI_INT, MPI_SUM, c),
            MPI_Iexscan(s, out, k, MPI_INT, MPI_SUM, c, &q),
            MPI_Exscan_init(s, out, k, MPI_INT, MPI_SUM, c, INFO, &q));
      break;
  }
  finish(base, form, c, which == REDUCE ? ROOT : -1, 4 * (uint64_t)k);
  /* Ranks 0..m-1 contribute sum(ranks) + m*i. */
  const int m = which == SCAN ? r + 1 : which == EXSCAN ? r : size;
  const int checked = (which == REDUCE && r != ROOT) || (which == EXSCAN && r == 0) ? 0 : k;
  for (int i = 0; i < checked; ++i)
    EX_CHECK(out[i] == m * (m - 1) / 2 + m * i, "%s [%d]=%d", base, i, out[i]);
  free(s);
  free(out);
}

/* Reduce_scatter_block (k each) and Reduce_scatter (k + j to comm rank j). */
static void reduce_scatter(int block, int form, MPI_Comm c) {
  const int k = next_count(), r = comm_rank(c);
  int* counts = ints((size_t)size);
  int* offs = ints((size_t)size);
  int total = 0;
  for (int j = 0; j < size; ++j) {
    counts[j] = block ? k : k + j;
    offs[j] = total;
    total += counts[j];
  }
  int* s = ints((size_t)total);
  int* out = ints((size_t)counts[r]);
  for (int j = 0; j < size; ++j)
    for (int i = 0; i < counts[j]; ++i) s[offs[j] + i] = r + j + i;
  if (block) {
    CALL3(MPI_Reduce_scatter_block(s, out, k, MPI_INT, MPI_SUM, c),
          MPI_Ireduce_scatter_block(s, out, k, MPI_INT, MPI_SUM, c, &q),
          MPI_Reduce_scatter_block_init(s, out, k, MPI_INT, MPI_SUM, c, INFO, &q));
    finish("MPI_Reduce_scatter_block", form, c, -1, 4 * (uint64_t)total);
  } else {
    CALL3(MPI_Reduce_scatter(s, out, counts, MPI_INT, MPI_SUM, c),
          MPI_Ireduce_scatter(s, out, counts, MPI_INT, MPI_SUM, c, &q),
          MPI_Reduce_scatter_init(s, out, counts, MPI_INT, MPI_SUM, c, INFO, &q));
    finish("MPI_Reduce_scatter", form, c, -1, 4 * (uint64_t)total);
  }
  for (int i = 0; i < counts[r]; ++i)
    EX_CHECK(out[i] == size * (size - 1) / 2 + size * (r + i), "Reduce_scatter%s [%d]=%d",
             block ? "_block" : "", i, out[i]);
  free(counts);
  free(offs);
  free(s);
  free(out);
}

/* Gather(v) to ROOT, Allgather(v): comm rank j contributes k (v: k + j)
 * elements 100*j + i. */
static void gather(int all, int vector, int form, MPI_Comm c) {
  const int k = next_count(), r = comm_rank(c);
  int* counts = ints((size_t)size);
  int* offs = ints((size_t)size);
  int total = 0;
  for (int j = 0; j < size; ++j) {
    counts[j] = vector ? k + j : k;
    offs[j] = total;
    total += counts[j];
  }
  int* s = ints((size_t)counts[r]);
  int* out = ints((size_t)total);
  for (int i = 0; i < counts[r]; ++i) s[i] = 100 * r + i;
  const int n = counts[r];
  const char* base;
  if (all && vector) {
    base = "MPI_Allgatherv";
    CALL3(MPI_Allgatherv(s, n, MPI_INT, out, counts, offs, MPI_INT, c),
          MPI_Iallgatherv(s, n, MPI_INT, out, counts, offs, MPI_INT, c, &q),
          MPI_Allgatherv_init(s, n, MPI_INT, out, counts, offs, MPI_INT, c, INFO, &q));
  } else if (all) {
    base = "MPI_Allgather";
    CALL3(MPI_Allgather(s, n, MPI_INT, out, k, MPI_INT, c),
          MPI_Iallgather(s, n, MPI_INT, out, k, MPI_INT, c, &q),
          MPI_Allgather_init(s, n, MPI_INT, out, k, MPI_INT, c, INFO, &q));
  } else if (vector) {
    base = "MPI_Gatherv";
    CALL3(MPI_Gatherv(s, n, MPI_INT, out, counts, offs, MPI_INT, ROOT, c),
          MPI_Igatherv(s, n, MPI_INT, out, counts, offs, MPI_INT, ROOT, c, &q),
          MPI_Gatherv_init(s, n, MPI_INT, out, counts, offs, MPI_INT, ROOT, c, INFO, &q));
  } else {
    base = "MPI_Gather";
    CALL3(MPI_Gather(s, n, MPI_INT, out, k, MPI_INT, ROOT, c),
          MPI_Igather(s, n, MPI_INT, out, k, MPI_INT, ROOT, c, &q),
          MPI_Gather_init(s, n, MPI_INT, out, k, MPI_INT, ROOT, c, INFO, &q));
  }
  finish(base, form, c, all ? -1 : ROOT, 4 * (uint64_t)n);
  if (all || r == ROOT)
    for (int j = 0; j < size; ++j)
      for (int i = 0; i < counts[j]; ++i)
        EX_CHECK(out[offs[j] + i] == 100 * j + i, "%s from %d [%d]=%d", base, j, i,
                 out[offs[j] + i]);
  free(counts);
  free(offs);
  free(s);
  free(out);
}

/* Scatter(v) from ROOT: comm rank j gets k (v: k + j) elements 100*j + i. */
static void scatter(int vector, int form, MPI_Comm c) {
  const int k = next_count(), r = comm_rank(c);
  int* counts = ints((size_t)size);
  int* offs = ints((size_t)size);
  int total = 0;
  for (int j = 0; j < size; ++j) {
    counts[j] = vector ? k + j : k;
    offs[j] = total;
    total += counts[j];
  }
  int* s = ints((size_t)total);
  for (int j = 0; j < size; ++j)
    for (int i = 0; i < counts[j]; ++i) s[offs[j] + i] = 100 * j + i;
  const int n = counts[r];
  int* out = ints((size_t)n);
  if (vector) {
    CALL3(MPI_Scatterv(s, counts, offs, MPI_INT, out, n, MPI_INT, ROOT, c),
          MPI_Iscatterv(s, counts, offs, MPI_INT, out, n, MPI_INT, ROOT, c, &q),
          MPI_Scatterv_init(s, counts, offs, MPI_INT, out, n, MPI_INT, ROOT, c, INFO, &q));
  } else {
    CALL3(MPI_Scatter(s, k, MPI_INT, out, n, MPI_INT, ROOT, c),
          MPI_Iscatter(s, k, MPI_INT, out, n, MPI_INT, ROOT, c, &q),
          MPI_Scatter_init(s, k, MPI_INT, out, n, MPI_INT, ROOT, c, INFO, &q));
  }
  const char* base = vector ? "MPI_Scatterv" : "MPI_Scatter";
  finish(base, form, c, ROOT, 4 * (uint64_t)n);
  for (int i = 0; i < n; ++i) EX_CHECK(out[i] == 100 * r + i, "%s [%d]=%d", base, i, out[i]);
  free(counts);
  free(offs);
  free(s);
  free(out);
}

/* Alltoall (k to each), Alltoallv and Alltoallw (k + j to comm rank j):
 * element i from rank a to rank b is 10000*a + 100*b + i. */
enum { A2A, A2AV, A2AW };
static void alltoall(int which, int form, MPI_Comm c) {
  const int k = next_count(), r = comm_rank(c);
  int *sc = ints((size_t)size), *sd = ints((size_t)size), *rc = ints((size_t)size),
      *rd = ints((size_t)size), *sdb = ints((size_t)size), *rdb = ints((size_t)size);
  MPI_Datatype* types = malloc(sizeof(MPI_Datatype) * (size_t)size);
  int stotal = 0, rtotal = 0;
  for (int j = 0; j < size; ++j) {
    sc[j] = which == A2A ? k : k + j;
    rc[j] = which == A2A ? k : k + r;
    sd[j] = stotal;
    rd[j] = rtotal;
    sdb[j] = 4 * stotal;
    rdb[j] = 4 * rtotal;
    types[j] = MPI_INT;
    stotal += sc[j];
    rtotal += rc[j];
  }
  int* s = ints((size_t)stotal);
  int* out = ints((size_t)rtotal);
  for (int j = 0; j < size; ++j)
    for (int i = 0; i < sc[j]; ++i) s[sd[j] + i] = 10000 * r + 100 * j + i;
  const char* base;
  uint64_t bytes = 4 * (uint64_t)stotal;
  if (which == A2A) {
    base = "MPI_Alltoall";
    CALL3(MPI_Alltoall(s, k, MPI_INT, out, k, MPI_INT, c),
          MPI_Ialltoall(s, k, MPI_INT, out, k, MPI_INT, c, &q),
          MPI_Alltoall_init(s, k, MPI_INT, out, k, MPI_INT, c, INFO, &q));
  } else if (which == A2AV) {
    base = "MPI_Alltoallv";
    CALL3(MPI_Alltoallv(s, sc, sd, MPI_INT, out, rc, rd, MPI_INT, c),
          MPI_Ialltoallv(s, sc, sd, MPI_INT, out, rc, rd, MPI_INT, c, &q),
          MPI_Alltoallv_init(s, sc, sd, MPI_INT, out, rc, rd, MPI_INT, c, INFO, &q));
  } else {
    base = "MPI_Alltoallw";
    CALL3(MPI_Alltoallw(s, sc, sdb, types, out, rc, rdb, types, c),
          MPI_Ialltoallw(s, sc, sdb, types, out, rc, rdb, types, c, &q),
          MPI_Alltoallw_init(s, sc, sdb, types, out, rc, rdb, types, c, INFO, &q));
  }
  finish(base, form, c, -1, bytes);
  for (int j = 0; j < size; ++j)
    for (int i = 0; i < rc[j]; ++i)
      EX_CHECK(out[rd[j] + i] == 10000 * j + 100 * r + i, "%s from %d [%d]=%d", base, j, i,
               out[rd[j] + i]);
  free(sc);
  free(sd);
  free(rc);
  free(rd);
  free(sdb);
  free(rdb);
  free(types);
  free(s);
  free(out);
}

/* Neighbour collectives on a periodic ring (cart, not reordered): neighbours
 * are left then right; left != right only above 2 ranks. */
enum { NB_ALLGATHER, NB_ALLGATHERV, NB_ALLTOALL, NB_ALLTOALLV, NB_ALLTOALLW };
static void neighbor(int which, int form, MPI_Comm cart) {
  const int k = next_count(), r = comm_rank(cart);
  int nb[2];
  MPI_Cart_shift(cart, 0, 1, &nb[0], &nb[1]);
  ex_other("MPI_Cart_shift");
  const int vector = which == NB_ALLGATHERV || which == NB_ALLTOALLV || which == NB_ALLTOALLW;
  /* Element i of what rank a sends towards side d (0: left, 1: right):
   * 10000*a + 1000*d + i; allgather sends the same block (d = 0) to both. */
  int sc[2], sd[2], rc[2], rd[2], sdb[2], rdb[2];
  MPI_Datatype types[2] = {MPI_INT, MPI_INT};
  int stotal = 0, rtotal = 0;
  for (int d = 0; d < 2; ++d) {
    sc[d] = vector ? k + r : k;
    rc[d] = vector ? k + nb[d] : k;
    sd[d] = stotal;
    rd[d] = rtotal;
    sdb[d] = 4 * stotal;
    rdb[d] = 4 * rtotal;
    stotal += sc[d];
    rtotal += rc[d];
  }
  int* s = ints((size_t)stotal);
  int* out = ints((size_t)rtotal);
  for (int d = 0; d < 2; ++d)
    for (int i = 0; i < sc[d]; ++i) s[sd[d] + i] = 10000 * r + 1000 * d + i;
  const char* base;
  /* Allgather: the one block it contributes; all-to-all: a block per
   * outgoing neighbour (2 on a 1-D ring). */
  uint64_t bytes = 4 * (uint64_t)stotal;
  int gathered = 0;
  switch (which) {
    case NB_ALLGATHER:
      base = "MPI_Neighbor_allgather";
      gathered = 1;
      bytes = 4 * (uint64_t)sc[0];
      CALL3(MPI_Neighbor_allgather(s, k, MPI_INT, out, k, MPI_INT, cart),
            MPI_Ineighbor_allgather(s, k, MPI_INT, out, k, MPI_INT, cart, &q),
            MPI_Neighbor_allgather_init(s, k, MPI_INT, out, k, MPI_INT, cart, INFO, &q));
      break;
    case NB_ALLGATHERV:
      base = "MPI_Neighbor_allgatherv";
      gathered = 1;
      bytes = 4 * (uint64_t)sc[0];
      CALL3(MPI_Neighbor_allgatherv(s, sc[0], MPI_INT, out, rc, rd, MPI_INT, cart),
            MPI_Ineighbor_allgatherv(s, sc[0], MPI_INT, out, rc, rd, MPI_INT, cart, &q),
            MPI_Neighbor_allgatherv_init(s, sc[0], MPI_INT, out, rc, rd, MPI_INT, cart, INFO, &q));
      break;
    case NB_ALLTOALL:
      base = "MPI_Neighbor_alltoall";
      CALL3(MPI_Neighbor_alltoall(s, k, MPI_INT, out, k, MPI_INT, cart),
            MPI_Ineighbor_alltoall(s, k, MPI_INT, out, k, MPI_INT, cart, &q),
            MPI_Neighbor_alltoall_init(s, k, MPI_INT, out, k, MPI_INT, cart, INFO, &q));
      break;
    case NB_ALLTOALLV:
      base = "MPI_Neighbor_alltoallv";
      CALL3(MPI_Neighbor_alltoallv(s, sc, sd, MPI_INT, out, rc, rd, MPI_INT, cart),
            MPI_Ineighbor_alltoallv(s, sc, sd, MPI_INT, out, rc, rd, MPI_INT, cart, &q),
            MPI_Neighbor_alltoallv_init(s, sc, sd, MPI_INT, out, rc, rd, MPI_INT, cart, INFO, &q));
      break;
    default: {
      base = "MPI_Neighbor_alltoallw";
      MPI_Aint sdw[2] = {sdb[0], sdb[1]}, rdw[2] = {rdb[0], rdb[1]};
      CALL3(MPI_Neighbor_alltoallw(s, sc, sdw, types, out, rc, rdw, types, cart),
            MPI_Ineighbor_alltoallw(s, sc, sdw, types, out, rc, rdw, types, cart, &q),
            MPI_Neighbor_alltoallw_init(s, sc, sdw, types, out, rc, rdw, types, cart, INFO, &q));
      break;
    }
  }
  finish(base, form, cart, -1, bytes);
  /* From the left neighbour: what it sent right (d = 1), from the right: what
   * it sent left (d = 0). On 2 ranks both neighbours are the same rank, and
   * which of its two blocks lands on which side is MPI's choice. */
  for (int d = 0; d < 2; ++d)
    for (int i = 0; i < rc[d]; ++i) {
      const int side = (out[rd[d] + i] - 10000 * nb[d] - i) / 1000;
      const int ok = gathered ? side == 0 : side == 1 - d || (nb[0] == nb[1] && side == d);
      EX_CHECK(ok && out[rd[d] + i] == 10000 * nb[d] + 1000 * side + i, "%s side %d [%d]=%d",
               base, d, i, out[rd[d] + i]);
    }
  free(s);
  free(out);
}

/* MPI_IN_PLACE: a rank's contribution is its own block of the receive buffer
 * (Scatter(v): of the send buffer at the root); the arguments MPI ignores
 * then are left meaningless (0, MPI_DATATYPE_NULL). */
static void in_place(MPI_Comm c) {
  const int k = next_count(), r = comm_rank(c);
  int* counts = ints((size_t)size);
  int* offs = ints((size_t)size);
  int total = 0;
  for (int j = 0; j < size; ++j) {
    counts[j] = k + j;
    offs[j] = total;
    total += counts[j];
  }
  int* b = ints((size_t)total);
  for (int i = 0; i < counts[r]; ++i) b[offs[r] + i] = 100 * r + i;
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, counts, offs, MPI_INT, c);
  ex_coll("MPI_Allgatherv", c, -1, 4 * (uint64_t)counts[r]);
  for (int j = 0; j < size; ++j)
    for (int i = 0; i < counts[j]; ++i)
      EX_CHECK(b[offs[j] + i] == 100 * j + i, "Allgatherv in place %d [%d]=%d", j, i,
               b[offs[j] + i]);

  for (int i = 0; i < total; ++i) b[i] = -1;
  for (int i = 0; i < counts[r]; ++i) b[offs[r] + i] = 200 * r + i;
  if (r == ROOT)
    MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, counts, offs, MPI_INT, ROOT, c);
  else
    MPI_Gatherv(&b[offs[r]], counts[r], MPI_INT, NULL, NULL, NULL, MPI_DATATYPE_NULL, ROOT, c);
  ex_coll("MPI_Gatherv", c, ROOT, 4 * (uint64_t)counts[r]);
  if (r == ROOT)
    for (int j = 0; j < size; ++j)
      EX_CHECK(b[offs[j]] == 200 * j, "Gatherv in place from %d: %d", j, b[offs[j]]);

  for (int j = 0; j < size; ++j)
    for (int i = 0; i < counts[j]; ++i) b[offs[j] + i] = r == ROOT ? 300 * j + i : -1;
  int* mine = ints((size_t)counts[r]);
  if (r == ROOT)
    MPI_Scatterv(b, counts, offs, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ROOT, c);
  else
    MPI_Scatterv(NULL, NULL, NULL, MPI_DATATYPE_NULL, mine, counts[r], MPI_INT, ROOT, c);
  ex_coll("MPI_Scatterv", c, ROOT, 4 * (uint64_t)counts[r]);
  const int* got = r == ROOT ? &b[offs[r]] : mine;
  for (int i = 0; i < counts[r]; ++i)
    EX_CHECK(got[i] == 300 * r + i, "Scatterv in place [%d]=%d", i, got[i]);

  for (int i = 0; i < k * size; ++i) b[i] = r == ROOT ? 400 * (i / k) + i % k : -1;
  if (r == ROOT)
    MPI_Scatter(b, k, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ROOT, c);
  else
    MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, mine, k, MPI_INT, ROOT, c);
  ex_coll("MPI_Scatter", c, ROOT, 4 * (uint64_t)k);
  got = r == ROOT ? &b[r * k] : mine;
  for (int i = 0; i < k; ++i) EX_CHECK(got[i] == 400 * r + i, "Scatter in place [%d]=%d", i, got[i]);

  for (int j = 0; j < size; ++j)
    for (int i = 0; i < k; ++i) b[j * k + i] = 1000 * r + 10 * j + i;
  MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, k, MPI_INT, c);
  ex_coll("MPI_Alltoall", c, -1, 4 * (uint64_t)k * (uint64_t)size);
  for (int j = 0; j < size; ++j)
    for (int i = 0; i < k; ++i)
      EX_CHECK(b[j * k + i] == 1000 * j + 10 * r + i, "Alltoall in place from %d [%d]=%d", j,
               i, b[j * k + i]);
  free(mine);
  free(counts);
  free(offs);
  free(b);
}

static void free_comm(MPI_Comm* c) {
  MPI_Comm_free(c);
  ex_other("MPI_Comm_free");
}

/* The constructors comms.c does not call. Returns the periodic ring. */
static MPI_Comm constructors(void) {
  const MPI_Comm W = MPI_COMM_WORLD;
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  char key[64];

  MPI_Comm shared;
  MPI_Comm_split_type(W, MPI_COMM_TYPE_SHARED, -rank, INFO, &shared);
  ex_comm_create("MPI_Comm_split_type", W, shared, "shared");

  MPI_Comm dupinfo;
  MPI_Comm_dup_with_info(shared, INFO, &dupinfo);
  ex_comm_create("MPI_Comm_dup_with_info", shared, dupinfo, "dupinfo");
  MPI_Comm idupinfo;
  MPI_Comm_idup_with_info(dupinfo, INFO, &idupinfo, &q);
  ex_comm_idup("MPI_Comm_idup_with_info", dupinfo, idupinfo, q, "idupinfo");
  const MPI_Request h = q;
  MPI_Wait(&q, MPI_STATUS_IGNORE);
  ex_comp_begin("MPI_Wait");
  ex_comp_add(h, dupinfo, EX_ANY, EX_ANY, -1, 0);
  ex_comp_end();

  int dims[1] = {size}, periods[1] = {1};
  MPI_Comm cart;
  MPI_Cart_create(W, 1, dims, periods, 0, &cart);
  ex_comm_create("MPI_Cart_create", W, cart, "cart");
  /* A size x 1 grid, reordered by the reversed parent; its columns (the
   * second dimension kept) hold one rank each. */
  int grid_dims[2] = {size, 1}, grid_periods[2] = {0, 0}, remain[2] = {0, 1};
  MPI_Comm grid, column;
  MPI_Cart_create(shared, 2, grid_dims, grid_periods, 0, &grid);
  ex_comm_create("MPI_Cart_create", shared, grid, "grid");
  MPI_Cart_sub(grid, remain, &column);
  snprintf(key, sizeof key, "column.%d", rank);
  ex_comm_create("MPI_Cart_sub", grid, column, key);
  int column_size = 0;
  if (column != MPI_COMM_NULL) PMPI_Comm_size(column, &column_size);
  EX_CHECK(column_size == 1, "Cart_sub column: size %d", column_size);

  /* The ring as a graph, a distributed graph and an adjacent one. */
  int* index = ints((size_t)size);
  int* edges = ints(2 * (size_t)size);
  for (int j = 0; j < size; ++j) {
    index[j] = 2 * (j + 1);
    edges[2 * j] = (j + size - 1) % size;
    edges[2 * j + 1] = (j + 1) % size;
  }
  MPI_Comm graph, dist, adjacent;
  MPI_Graph_create(dupinfo, size, index, edges, 0, &graph);
  ex_comm_create("MPI_Graph_create", dupinfo, graph, "graph");
  free(index);
  free(edges);
  const int one = 1;
  MPI_Dist_graph_create(W, 1, &rank, &one, &right, MPI_UNWEIGHTED, INFO, 0, &dist);
  ex_comm_create("MPI_Dist_graph_create", W, dist, "dist");
  /* The same ring in the ranks of shared (world reversed). */
  const int shared_rank = comm_rank(shared);
  const int shared_left = (shared_rank + size - 1) % size, shared_right = (shared_rank + 1) % size;
  MPI_Dist_graph_create_adjacent(shared, 1, &shared_left, MPI_UNWEIGHTED, 1, &shared_right,
                                 MPI_UNWEIGHTED, INFO, 0, &adjacent);
  ex_comm_create("MPI_Dist_graph_create_adjacent", shared, adjacent, "adjacent");
  int indegree = -1, outdegree = -1, weighted = -1;
  PMPI_Dist_graph_neighbors_count(dist, &indegree, &outdegree, &weighted);
  EX_CHECK(indegree == 1 && outdegree == 1, "dist graph degrees %d %d", indegree, outdegree);

  /* Groups: the world reversed, and the halves (even, odd world ranks). */
  MPI_Group world, reversed, half, other;
  MPI_Comm_group(W, &world);
  ex_other("MPI_Comm_group");
  int* order = ints((size_t)size);
  for (int j = 0; j < size; ++j) order[j] = size - 1 - j;
  MPI_Group_incl(world, size, order, &reversed);
  ex_other("MPI_Group_incl");
  int nhalf = 0, nother = 0;
  for (int j = rank % 2; j < size; j += 2) order[nhalf++] = j;
  MPI_Group_incl(world, nhalf, order, &half);
  ex_other("MPI_Group_incl");
  for (int j = 1 - rank % 2; j < size; j += 2) order[nother++] = j;
  MPI_Group_incl(world, nother, order, &other);
  ex_other("MPI_Group_incl");
  free(order);

  MPI_Comm created, created_group, from_group, inter;
  MPI_Comm_create(W, reversed, &created);
  ex_comm_create("MPI_Comm_create", W, created, "created");
  MPI_Comm_create_group(W, half, 17, &created_group);
  snprintf(key, sizeof key, "created_group.%d", rank % 2);
  ex_comm_create("MPI_Comm_create_group", W, created_group, key);
  MPI_Comm_create_from_group(reversed, "prof.coverage.from_group", INFO, MPI_ERRORS_ARE_FATAL,
                             &from_group);
  ex_comm_create("MPI_Comm_create_from_group", MPI_COMM_NULL, from_group, "from_group");
  /* Leaders: each half's first member (world 0 and world 1). */
  MPI_Intercomm_create_from_groups(half, 0, other, 0, "prof.coverage.inter", INFO,
                                   MPI_ERRORS_ARE_FATAL, &inter);
  ex_comm_create("MPI_Intercomm_create_from_groups", MPI_COMM_NULL, inter, "inter");
  int remote = 0;
  PMPI_Comm_remote_size(inter, &remote);
  EX_CHECK(remote == nother, "inter remote size %d, expected %d", remote, nother);

  /* All-to-all on the intercommunicator: the per-rank arrays cover the remote
   * group (nother ranks); an entry past them must not count. */
  {
    const int k = next_count(), lr = comm_rank(inter);
    int *sc = ints((size_t)nother + 1), *sd = ints((size_t)nother + 1),
        *rc = ints((size_t)nother + 1), *rd = ints((size_t)nother + 1);
    int stotal = 0, rtotal = 0;
    for (int j = 0; j < nother; ++j) {
      sc[j] = k + j;
      rc[j] = k + lr;
      sd[j] = stotal;
      rd[j] = rtotal;
      stotal += sc[j];
      rtotal += rc[j];
    }
    sc[nother] = rc[nother] = 1 << 20;
    int* sbuf = ints((size_t)stotal);
    int* rbuf = ints((size_t)rtotal);
    for (int j = 0; j < nother; ++j)
      for (int i = 0; i < sc[j]; ++i) sbuf[sd[j] + i] = 100000 * rank + 1000 * j + i;
    MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, inter);
    ex_coll("MPI_Alltoallv", inter, -1, 4 * (uint64_t)stotal);
    for (int j = 0; j < nother; ++j)
      for (int i = 0; i < rc[j]; ++i)
        EX_CHECK(rbuf[rd[j] + i] == 100000 * ex_world(inter, j) + 1000 * lr + i,
                 "intercomm Alltoallv from %d [%d]=%d", j, i, rbuf[rd[j] + i]);
    MPI_Alltoall(sbuf, k, MPI_INT, rbuf, k, MPI_INT, inter);
    ex_coll("MPI_Alltoall", inter, -1, 4 * (uint64_t)k * (uint64_t)nother);
    for (int j = 0; j < nother; ++j)
      EX_CHECK(rbuf[j * k] == 100000 * ex_world(inter, j) + 1000 * lr, "intercomm Alltoall %d",
               rbuf[j * k]);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(sbuf);
    free(rbuf);
  }

  /* Neighbour all-to-all on the other topologies: the bytes count their
   * outgoing neighbours (graph ring: 2; distributed graph: 1, the right). */
  {
    const int k = next_count(), gr = comm_rank(graph);
    const int gn[2] = {(gr + size - 1) % size, (gr + 1) % size};
    int* sbuf = ints(2 * (size_t)k);
    int* rbuf = ints(2 * (size_t)k);
    for (int d = 0; d < 2; ++d)
      for (int i = 0; i < k; ++i) sbuf[d * k + i] = 10000 * gr + 1000 * d + i;
    MPI_Neighbor_alltoall(sbuf, k, MPI_INT, rbuf, k, MPI_INT, graph);
    ex_coll("MPI_Neighbor_alltoall", graph, -1, 4 * 2 * (uint64_t)k);
    for (int d = 0; d < 2; ++d)
      for (int i = 0; i < k; ++i) {
        const int from = rbuf[d * k + i] - i;
        EX_CHECK(from / 10000 == gn[d] && (from % 10000 == 0 || from % 10000 == 1000),
                 "graph Neighbor_alltoall side %d [%d]=%d", d, i, rbuf[d * k + i]);
      }
    const int sc = k + rank, rc = k + left, zero = 0;
    int* sv = ints((size_t)sc);
    int* rv = ints((size_t)rc);
    for (int i = 0; i < sc; ++i) sv[i] = 10000 * rank + i;
    MPI_Neighbor_alltoallv(sv, &sc, &zero, MPI_INT, rv, &rc, &zero, MPI_INT, dist);
    ex_coll("MPI_Neighbor_alltoallv", dist, -1, 4 * (uint64_t)sc);
    for (int i = 0; i < rc; ++i)
      EX_CHECK(rv[i] == 10000 * left + i, "dist graph Neighbor_alltoallv [%d]=%d", i, rv[i]);
    const int from = ex_world(shared, shared_left), rcw = k + from;
    int* rw = ints((size_t)rcw);
    const MPI_Aint zero_bytes = 0;
    const MPI_Datatype type = MPI_INT;
    MPI_Neighbor_alltoallw(sv, &sc, &zero_bytes, &type, rw, &rcw, &zero_bytes, &type, adjacent);
    ex_coll("MPI_Neighbor_alltoallw", adjacent, -1, 4 * (uint64_t)sc);
    for (int i = 0; i < rcw; ++i)
      EX_CHECK(rw[i] == 10000 * from + i, "adjacent Neighbor_alltoallw [%d]=%d", i, rw[i]);
    free(sbuf);
    free(rbuf);
    free(sv);
    free(rv);
    free(rw);
  }

  /* A collective on some of them, so their handles carry traffic. */
  reduction(ALLREDUCE, BLOCKING, created);
  reduction(ALLREDUCE, BLOCKING, from_group);
  barrier(BLOCKING, idupinfo);

  MPI_Group_free(&world);
  ex_other("MPI_Group_free");
  MPI_Group_free(&reversed);
  ex_other("MPI_Group_free");
  MPI_Group_free(&half);
  ex_other("MPI_Group_free");
  MPI_Group_free(&other);
  ex_other("MPI_Group_free");
  free_comm(&inter);
  free_comm(&from_group);
  free_comm(&created_group);
  free_comm(&created);
  free_comm(&adjacent);
  free_comm(&dist);
  free_comm(&graph);
  free_comm(&column);
  free_comm(&grid);
  free_comm(&idupinfo);
  free_comm(&dupinfo);
  free_comm(&shared);
  return cart;
}

int main(int argc, char** argv) {
  ex_init(&argc, &argv, &rank, &size);
  if (size < 2) {
    fprintf(stderr, "coverage_coll: run with 2 ranks or more\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm cart = constructors();

  MPI_Comm rev;
  MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &rev);
  ex_comm_create("MPI_Comm_split", MPI_COMM_WORLD, rev, "rev");

  for (int form = BLOCKING; form <= PERSISTENT; ++form) {
    const MPI_Comm c = form == BLOCKING ? MPI_COMM_WORLD : rev;
    barrier(form, c);
    bcast(form, c);
    for (int which = REDUCE; which <= EXSCAN; ++which) reduction(which, form, c);
    reduce_scatter(1, form, c);
    reduce_scatter(0, form, c);
    for (int all = 0; all < 2; ++all)
      for (int vector = 0; vector < 2; ++vector) gather(all, vector, form, c);
    scatter(0, form, c);
    scatter(1, form, c);
    for (int which = A2A; which <= A2AW; ++which) alltoall(which, form, c);
    for (int which = NB_ALLGATHER; which <= NB_ALLTOALLW; ++which) neighbor(which, form, cart);
  }
  in_place(MPI_COMM_WORLD);
  in_place(rev);

  free_comm(&rev);
  free_comm(&cart);
  return ex_finalize("coverage_coll", rank);
}
