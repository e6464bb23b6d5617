/* The send modes and message forms semantics.c does not call (2 ranks):
 * Ssend, Bsend, Rsend and their nonblocking and persistent forms, partitioned
 * Psend_init/Precv_init, matched probes on a communicator whose ranks run in
 * reverse world order (Mprobe/Mrecv, Improbe/Imrecv, and both on
 * MPI_PROC_NULL, whose MPI_MESSAGE_NO_PROC names no communicator), and
 * Sendrecv_replace there. Each message has its own tag and byte count, so a
 * recorded peer, tag, byte count or communicator taken from the wrong argument
 * differs from the log. Every result is checked. */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ex.h"

static const MPI_Comm W = MPI_COMM_WORLD;
static MPI_Comm rev;  /* world reversed: comm ranks differ from world ranks */
static int rank, peer;

static void wait_logged(MPI_Request* q, MPI_Comm c, int src, int tag, long long bytes) {
  const MPI_Request h = *q;
  MPI_Status st;
  MPI_Wait(q, &st);
  ex_comp_begin("MPI_Wait");
  ex_comp_add(h, c, src, tag, bytes, 0);
  ex_comp_end();
}

static void barrier(void) {
  MPI_Barrier(W);
  ex_coll("MPI_Barrier", W, -1, 0);
}

/* The receiving side of one message: a blocking receive, logged. */
static void recv_check(void* buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c,
                       uint64_t bytes) {
  MPI_Status st;
  MPI_Recv(buf, count, t, src, tag, c, &st);
  EX_CHECK(st.MPI_TAG == tag, "Recv tag %d, expected %d", st.MPI_TAG, tag);
  ex_p2p("MPI_Recv", src, tag, c, bytes, 0);
}

/* Synchronous mode: Ssend, Issend, Ssend_init; rank 0 to 1 on world, 1 to 0 on rev. */
static void synchronous(void) {
  int rpeer;
  PMPI_Comm_rank(rev, &rpeer);
  rpeer = 1 - rpeer;
  int v[6] = {1, 2, 3, 4, 5, 6}, in[6] = {0};
  MPI_Request q;
  if (rank == 0) {
    MPI_Ssend(v, 3, MPI_INT, 1, 101, W);
    ex_p2p("MPI_Ssend", 1, 101, W, 12, 0);
    MPI_Issend(v, 4, MPI_INT, 1, 102, W, &q);
    ex_p2p_req("MPI_Issend", 1, 102, W, 16, 0, q);
    wait_logged(&q, W, EX_ANY, EX_ANY, -1);
    recv_check(in, 6, MPI_INT, rpeer, 103, rev, 20);
    EX_CHECK(in[4] == 5, "Ssend on rev payload %d", in[4]);
  } else {
    recv_check(in, 6, MPI_INT, 0, 101, W, 12);
    recv_check(in, 6, MPI_INT, 0, 102, W, 16);
    EX_CHECK(in[3] == 4, "Issend payload %d", in[3]);
    MPI_Ssend_init(v, 5, MPI_INT, rpeer, 103, rev, &q);
    ex_p2p_req("MPI_Ssend_init", rpeer, 103, rev, 20, 0, q);
    const MPI_Request h = q;
    MPI_Start(&q);
    ex_reqop("MPI_Start", 1, &h);
    wait_logged(&q, rev, EX_ANY, EX_ANY, -1);
    MPI_Request_free(&q);
    ex_reqop("MPI_Request_free", 1, &h);
  }
}

/* Buffered mode: Bsend, Ibsend, Bsend_init from an attached buffer. */
static void buffered(void) {
  int pack = 0;
  PMPI_Pack_size(64, MPI_SHORT, W, &pack);
  const int cap = 3 * (pack + MPI_BSEND_OVERHEAD);
  char* buffer = malloc((size_t)cap);
  MPI_Buffer_attach(buffer, cap);
  ex_other("MPI_Buffer_attach");
  short s[64], in[64];
  for (int i = 0; i < 64; ++i) s[i] = (short)(i + 7);
  MPI_Request q;
  if (rank == 1) {
    MPI_Bsend(s, 7, MPI_SHORT, 0, 111, W);
    ex_p2p("MPI_Bsend", 0, 111, W, 14, 0);
    MPI_Ibsend(s, 9, MPI_SHORT, 0, 112, W, &q);
    ex_p2p_req("MPI_Ibsend", 0, 112, W, 18, 0, q);
    wait_logged(&q, W, EX_ANY, EX_ANY, -1);
    MPI_Bsend_init(s, 11, MPI_SHORT, 0, 113, W, &q);
    ex_p2p_req("MPI_Bsend_init", 0, 113, W, 22, 0, q);
    const MPI_Request h = q;
    MPI_Start(&q);
    ex_reqop("MPI_Start", 1, &h);
    wait_logged(&q, W, EX_ANY, EX_ANY, -1);
    MPI_Request_free(&q);
    ex_reqop("MPI_Request_free", 1, &h);
  } else {
    recv_check(in, 64, MPI_SHORT, 1, 111, W, 14);
    recv_check(in, 64, MPI_SHORT, 1, 112, W, 18);
    recv_check(in, 64, MPI_SHORT, 1, 113, W, 22);
    EX_CHECK(in[10] == 17, "Bsend_init payload %d", in[10]);
  }
  void* detached = NULL;
  int detached_size = 0;
  MPI_Buffer_detach(&detached, &detached_size);
  ex_other("MPI_Buffer_detach");
  EX_CHECK(detached == buffer && detached_size == cap, "Buffer_detach %p %d", detached,
           detached_size);
  free(buffer);
}

/* Ready mode: the receive is posted before the barrier, the ready send after. */
static void ready(void) {
  double d[8] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5}, in[3][8];
  MPI_Request q[3];
  if (rank == 0) {
    for (int k = 0; k < 3; ++k) {
      MPI_Irecv(in[k], 8, MPI_DOUBLE, 1, 121 + k, W, &q[k]);
      ex_p2p_req("MPI_Irecv", 1, 121 + k, W, 64, 0, q[k]);
    }
    barrier();
    for (int k = 0; k < 3; ++k) wait_logged(&q[k], W, 1, 121 + k, 8 * (2 + k));
    EX_CHECK(in[2][3] == 3.5, "Rsend_init payload %g", in[2][3]);
  } else {
    barrier();
    MPI_Rsend(d, 2, MPI_DOUBLE, 0, 121, W);
    ex_p2p("MPI_Rsend", 0, 121, W, 16, 0);
    MPI_Irsend(d, 3, MPI_DOUBLE, 0, 122, W, &q[0]);
    ex_p2p_req("MPI_Irsend", 0, 122, W, 24, 0, q[0]);
    wait_logged(&q[0], W, EX_ANY, EX_ANY, -1);
    MPI_Rsend_init(d, 4, MPI_DOUBLE, 0, 123, W, &q[0]);
    ex_p2p_req("MPI_Rsend_init", 0, 123, W, 32, 0, q[0]);
    const MPI_Request h = q[0];
    MPI_Start(&q[0]);
    ex_reqop("MPI_Start", 1, &h);
    wait_logged(&q[0], W, EX_ANY, EX_ANY, -1);
    MPI_Request_free(&q[0]);
    ex_reqop("MPI_Request_free", 1, &h);
  }
}

/* Partitioned: 3 partitions of 5 ints from rank 1 to rank 0 on rev. */
static void partitioned(void) {
  int rpeer;
  PMPI_Comm_rank(rev, &rpeer);
  rpeer = 1 - rpeer;
  int buf[15];
  MPI_Request q;
  if (rank == 1) {
    for (int i = 0; i < 15; ++i) buf[i] = 300 + i;
    MPI_Psend_init(buf, 3, 5, MPI_INT, rpeer, 131, rev, MPI_INFO_NULL, &q);
    ex_p2p_req("MPI_Psend_init", rpeer, 131, rev, 60, 0, q);
  } else {
    memset(buf, 0, sizeof buf);
    MPI_Precv_init(buf, 3, 5, MPI_INT, rpeer, 131, rev, MPI_INFO_NULL, &q);
    ex_p2p_req("MPI_Precv_init", rpeer, 131, rev, 60, 0, q);
  }
  const MPI_Request h = q;
  MPI_Start(&q);
  ex_reqop("MPI_Start", 1, &h);
  if (rank == 1) {
    for (int p = 2; p >= 0; --p) {
      MPI_Pready(p, q);
      ex_other("MPI_Pready");
    }
  }
  MPI_Status st;
  MPI_Wait(&q, &st);
  ex_comp_begin("MPI_Wait");
  /* What MPI's status of a partitioned request says is what gets recorded. */
  int n = 0;
  PMPI_Get_count(&st, MPI_BYTE, &n);
  ex_comp_add(h, rev, rank == 0 ? st.MPI_SOURCE : EX_ANY, rank == 0 ? st.MPI_TAG : EX_ANY,
              rank == 0 ? n : -1, 0);
  ex_comp_end();
  MPI_Request_free(&q);
  ex_reqop("MPI_Request_free", 1, &h);
  if (rank == 0)
    for (int i = 0; i < 15; ++i) EX_CHECK(buf[i] == 300 + i, "partitioned [%d]=%d", i, buf[i]);
}

/* Matched probes on rev, and on MPI_PROC_NULL. */
static void matched(void) {
  int rpeer;
  PMPI_Comm_rank(rev, &rpeer);
  rpeer = 1 - rpeer;
  long v[4] = {41, 42, 43, 44}, in[4] = {0};
  MPI_Message m;
  MPI_Status st;
  if (rank == 0) {
    MPI_Send(v, 3, MPI_LONG, rpeer, 141, rev);
    ex_p2p("MPI_Send", rpeer, 141, rev, 24, 0);
    MPI_Send(v, 4, MPI_LONG, rpeer, 142, rev);
    ex_p2p("MPI_Send", rpeer, 142, rev, 32, 0);
  } else {
    MPI_Mprobe(rpeer, MPI_ANY_TAG, rev, &m, &st);
    EX_CHECK(st.MPI_TAG == 141, "Mprobe tag %d", st.MPI_TAG);
    ex_p2p("MPI_Mprobe", rpeer, 141, rev, 24, EX_ANY_TAG);
    MPI_Mrecv(in, 4, MPI_LONG, &m, &st);
    EX_CHECK(in[2] == 43 && m == MPI_MESSAGE_NULL, "Mrecv %ld", in[2]);
    ex_p2p("MPI_Mrecv", rpeer, 141, rev, 24, 0);
    int flag = 0;
    while (!flag) {
      MPI_Improbe(MPI_ANY_SOURCE, 142, rev, &flag, &m, &st);
      if (flag) ex_p2p("MPI_Improbe", st.MPI_SOURCE, 142, rev, 32, EX_ANY_SOURCE);
      else ex_p2p("MPI_Improbe", MPI_ANY_SOURCE, 142, rev, 0, EX_ANY_SOURCE);
      if (!flag) sched_yield();
    }
    MPI_Request q;
    MPI_Imrecv(in, 4, MPI_LONG, &m, &q);
    ex_line("MPI_Imrecv peer=* tag=* comm=0x%x bytes=32 req=0x%x", (unsigned)rev, (unsigned)q);
    wait_logged(&q, rev, rpeer, 142, 32);
    EX_CHECK(in[3] == 44, "Imrecv %ld", in[3]);
  }

  /* MPI_PROC_NULL: the probe finds MPI_MESSAGE_NO_PROC at once, and its
   * receive is one from MPI_PROC_NULL, on MPI_COMM_SELF (no communicator
   * comes with the message). */
  MPI_Mprobe(MPI_PROC_NULL, 143, rev, &m, &st);
  EX_CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "Mprobe PROC_NULL");
  ex_p2p("MPI_Mprobe", MPI_PROC_NULL, MPI_ANY_TAG, rev, 0, 0);
  MPI_Mrecv(in, 4, MPI_LONG, &m, &st);
  EX_CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Mrecv NO_PROC source %d", st.MPI_SOURCE);
  ex_p2p("MPI_Mrecv", MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_SELF, 0, 0);
  int flag = 0;
  MPI_Improbe(MPI_PROC_NULL, 144, rev, &flag, &m, &st);
  EX_CHECK(flag && m == MPI_MESSAGE_NO_PROC, "Improbe PROC_NULL flag %d", flag);
  ex_p2p("MPI_Improbe", MPI_PROC_NULL, MPI_ANY_TAG, rev, 0, 0);
  MPI_Request q;
  MPI_Imrecv(in, 4, MPI_LONG, &m, &q);
  ex_p2p_req("MPI_Imrecv", MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_SELF, 32, 0, q);
  const MPI_Request h = q;
  MPI_Wait(&q, &st);
  ex_comp_begin("MPI_Wait");
  ex_comp_add(h, MPI_COMM_SELF, st.MPI_SOURCE, st.MPI_TAG, 0, 0);
  ex_comp_end();
}

static void sendrecv_replace(void) {
  int rpeer, me;
  PMPI_Comm_rank(rev, &me);
  rpeer = 1 - me;
  int v[5] = {me, 10 + me, 20 + me, 30 + me, 40 + me};
  MPI_Status st;
  MPI_Sendrecv_replace(v, 5, MPI_INT, rpeer, 150 + rank, rpeer, 150 + peer, rev, &st);
  EX_CHECK(v[4] == 40 + rpeer && st.MPI_SOURCE == rpeer, "Sendrecv_replace %d from %d", v[4],
           st.MPI_SOURCE);
  ex_sendrecv("MPI_Sendrecv_replace", rpeer, 150 + rank, 20, rpeer, 150 + peer, 20, rev, 0);
}

int main(int argc, char** argv) {
  int size;
  ex_init(&argc, &argv, &rank, &size);
  if (size != 2) {
    fprintf(stderr, "coverage_p2p: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  peer = 1 - rank;
  MPI_Comm_split(W, 0, -rank, &rev);
  ex_comm_create("MPI_Comm_split", W, rev, "rev");

  synchronous();
  buffered();
  ready();
  partitioned();
  matched();
  sendrecv_replace();

  MPI_Comm_free(&rev);
  ex_other("MPI_Comm_free");
  return ex_finalize("coverage_p2p", rank);
}
