/* Communicators (any size >= 2): Comm_dup, Comm_idup (twice, on two parents), Comm_split (reversed order, so comm
 * ranks differ from world ranks; one rank with MPI_UNDEFINED), Comm_free and a
 * handle reused by a later communicator, an intercommunicator with messages
 * across it (peers mapped through the remote group, ANY_SOURCE), and
 * Intercomm_merge. The log gives the membership of each new communicator in
 * world ranks, which trace_check compares with the shim's C definitions. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "ex.h"

static int rank, size;

static void ring(MPI_Comm c, int tag) {
  int r, n;
  PMPI_Comm_rank(c, &r);
  PMPI_Comm_size(c, &n);
  const int right = (r + 1) % n, left = (r - 1 + n) % n;
  int out = 1000 * rank + tag, in = -1;
  MPI_Request q;
  MPI_Irecv(&in, 1, MPI_INT, left, tag, c, &q);
  ex_p2p_req("MPI_Irecv", left, tag, c, 4, 0, q);
  const MPI_Request h = q;
  MPI_Send(&out, 1, MPI_INT, right, tag, c);
  ex_p2p("MPI_Send", right, tag, c, 4, 0);
  MPI_Status st;
  MPI_Wait(&q, &st);
  ex_comp_begin("MPI_Wait");
  ex_comp_add(h, c, st.MPI_SOURCE, tag, 4, 0);
  ex_comp_end();
  EX_CHECK(st.MPI_SOURCE == left, "ring source %d, expected %d", st.MPI_SOURCE, left);
  EX_CHECK(in == 1000 * ex_world(c, left) + tag, "ring payload %d", in);
}

int main(int argc, char** argv) {
  ex_init(&argc, &argv, &rank, &size);
  const MPI_Comm W = MPI_COMM_WORLD;
  char key[64];

  EX_MARKER(7, 1);

  /* Comm_dup and a ring on it. */
  MPI_Comm dup;
  MPI_Comm_dup(W, &dup);
  ex_comm_create("MPI_Comm_dup", W, dup, "dup");
  ring(dup, 1);
  const MPI_Comm old_dup = dup;

  /* Comm_idup: usable once its request completes; a ring and an Allreduce on
   * it. A second idup, of the dup, must get another global id. */
  MPI_Comm idup, idup2;
  MPI_Request iq[2];
  MPI_Comm_idup(W, &idup, &iq[0]);
  ex_comm_idup("MPI_Comm_idup", W, idup, iq[0], "idup");
  const MPI_Request ih0 = iq[0];
  MPI_Comm_idup(dup, &idup2, &iq[1]);
  ex_comm_idup("MPI_Comm_idup", dup, idup2, iq[1], "idup2");
  const MPI_Request ih1 = iq[1];
  MPI_Waitall(2, iq, MPI_STATUSES_IGNORE);
  ex_comp_begin("MPI_Waitall");
  ex_comp_add(ih0, W, EX_ANY, EX_ANY, -1, 0);
  ex_comp_add(ih1, W, EX_ANY, EX_ANY, -1, 0);
  ex_comp_end();
  ring(idup, 5);
  int one = 1, count = 0;
  MPI_Allreduce(&one, &count, 1, MPI_INT, MPI_SUM, idup2);
  ex_coll("MPI_Allreduce", idup2, -1, 4);
  EX_CHECK(count == size, "Allreduce on the idup of the dup: %d", count);
  MPI_Comm_free(&idup2);
  ex_other("MPI_Comm_free");
  MPI_Comm_free(&idup);
  ex_other("MPI_Comm_free");

  /* Split by parity, reversed order. */
  const int color = rank % 2;
  MPI_Comm half;
  MPI_Comm_split(W, color, -rank, &half);
  snprintf(key, sizeof key, "half.%d", color);
  ex_comm_create("MPI_Comm_split", W, half, key);
  int hr, hn;
  MPI_Comm_rank(half, &hr);
  ex_other("MPI_Comm_rank");
  MPI_Comm_size(half, &hn);
  ex_other("MPI_Comm_size");
  EX_CHECK(hn == (size + 1 - color) / 2, "half size %d", hn);
  ring(half, 2);
  int sum = rank, total = 0;
  MPI_Allreduce(&sum, &total, 1, MPI_INT, MPI_SUM, half);
  ex_coll("MPI_Allreduce", half, -1, 4);
  int expect = 0;
  for (int i = color; i < size; i += 2) expect += i;
  EX_CHECK(total == expect, "Allreduce on half: %d, expected %d", total, expect);

  /* The dup is freed; the next communicator may get its handle back, with a
   * different membership order (reversed world), so only the definition valid
   * at the time maps its peers right. */
  MPI_Comm_free(&dup);
  ex_other("MPI_Comm_free");
  MPI_Comm rev;
  MPI_Comm_split(W, 0, -rank, &rev);
  ex_comm_create("MPI_Comm_split", W, rev, "rev");
  if (rank == 0)
    printf("comms: communicator handle %s (0x%x)\n", rev == old_dup ? "reused" : "not reused",
           (unsigned)rev);
  ring(rev, 3);

  /* A split where rank 0 takes no part: MPI_COMM_NULL. */
  MPI_Comm some;
  MPI_Comm_split(W, rank == 0 ? MPI_UNDEFINED : 1, rank, &some);
  if (rank == 0) {
    EX_CHECK(some == MPI_COMM_NULL, "MPI_UNDEFINED color gave a communicator");
    ex_comm_create("MPI_Comm_split", W, some, "");
  } else {
    ex_comm_create("MPI_Comm_split", W, some, "some");
  }

  /* Intercommunicator between the two halves. Local leader: half rank 0 (the
   * highest world rank of the color); remote leader named in world. */
  const int last_even = (size - 1) % 2 == 0 ? size - 1 : size - 2;
  const int last_odd = (size - 1) % 2 == 1 ? size - 1 : size - 2;
  const int remote_leader = color == 0 ? last_odd : last_even;
  MPI_Comm inter;
  MPI_Intercomm_create(half, 0, W, remote_leader, 77, &inter);
  ex_comm_create("MPI_Intercomm_create", half, inter, "inter");
  int rn;
  MPI_Comm_remote_size(inter, &rn);
  ex_other("MPI_Comm_remote_size");
  EX_CHECK(rn == size - hn, "remote size %d", rn);
  /* Local rank i of color 0 sends to remote rank i; color 1 receives it with
   * ANY_SOURCE; then color 1 answers through Isend/Irecv. */
  int v = -1;
  if (hr < rn) {
    MPI_Status st;
    if (color == 0) {
      v = 500 + rank;
      MPI_Send(&v, 1, MPI_INT, hr, 78, inter);
      ex_p2p("MPI_Send", hr, 78, inter, 4, 0);
      MPI_Request q;
      MPI_Irecv(&v, 1, MPI_INT, hr, 79, inter, &q);
      ex_p2p_req("MPI_Irecv", hr, 79, inter, 4, 0, q);
      const MPI_Request h = q;
      MPI_Wait(&q, &st);
      ex_comp_begin("MPI_Wait");
      ex_comp_add(h, inter, hr, 79, 4, 0);
      ex_comp_end();
      EX_CHECK(v == 600 + ex_world(inter, hr), "intercomm answer %d", v);
    } else {
      MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 78, inter, &st);
      EX_CHECK(st.MPI_SOURCE == hr, "intercomm source %d, expected %d", st.MPI_SOURCE, hr);
      EX_CHECK(v == 500 + ex_world(inter, hr), "intercomm payload %d", v);
      ex_p2p("MPI_Recv", st.MPI_SOURCE, 78, inter, 4, EX_ANY_SOURCE);
      v = 600 + rank;
      MPI_Request q;
      MPI_Isend(&v, 1, MPI_INT, hr, 79, inter, &q);
      ex_p2p_req("MPI_Isend", hr, 79, inter, 4, 0, q);
      const MPI_Request h = q;
      MPI_Wait(&q, MPI_STATUS_IGNORE);
      ex_comp_begin("MPI_Wait");
      ex_comp_add(h, inter, EX_ANY, EX_ANY, -1, 0);
      ex_comp_end();
    }
  }
  MPI_Comm merged;
  MPI_Intercomm_merge(inter, color, &merged);
  ex_comm_create("MPI_Intercomm_merge", inter, merged, "merged");
  ring(merged, 4);

  MPI_Comm_free(&merged);
  ex_other("MPI_Comm_free");
  MPI_Comm_free(&inter);
  ex_other("MPI_Comm_free");
  if (some != MPI_COMM_NULL) {
    MPI_Comm_free(&some);
    ex_other("MPI_Comm_free");
  }
  MPI_Comm_free(&rev);
  ex_other("MPI_Comm_free");
  MPI_Comm_free(&half);
  ex_other("MPI_Comm_free");
  EX_MARKER(7, 0);

  return ex_finalize("comms", rank);
}
