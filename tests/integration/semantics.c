/* MPI semantics the shim must record right (2 ranks): STATUS_IGNORE and
 * STATUSES_IGNORE, ANY_SOURCE/ANY_TAG, PROC_NULL, MPI_REQUEST_NULL entries in
 * Waitany/Waitsome/Testall/Waitall, persistent requests, a cancelled receive,
 * Probe/Iprobe, Sendrecv, MPI_IN_PLACE collectives, Alltoallv, nonblocking
 * collectives and raw interval markers. Every call is logged (ex.h) and every
 * result checked. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ex.h"

static MPI_Comm W;
static int rank, size, peer;

static void blocking_and_status_ignore(void) {
  int buf[8];
  /* Both directions, receiver asks for more than is sent and ignores the
   * status: the recorded bytes are the 16 actually received. */
  for (int from = 0; from < 2; ++from) {
    if (rank == from) {
      for (int i = 0; i < 4; ++i) buf[i] = 100 * from + i;
      MPI_Send(buf, 4, MPI_INT, peer, 10, W);
      ex_p2p("MPI_Send", peer, 10, W, 16, 0);
    } else {
      memset(buf, 0, sizeof buf);
      MPI_Recv(buf, 8, MPI_INT, peer, 10, W, MPI_STATUS_IGNORE);
      ex_p2p("MPI_Recv", peer, 10, W, 16, 0);
      for (int i = 0; i < 4; ++i) EX_CHECK(buf[i] == 100 * from + i, "buf[%d]=%d", i, buf[i]);
    }
  }
}

static void any_source_any_tag(void) {
  double d[3] = {0, 0, 0};
  MPI_Status st;
  if (rank == 1) {
    d[0] = 1.5; d[1] = 2.5; d[2] = 3.5;
    MPI_Send(d, 3, MPI_DOUBLE, 0, 11, W);
    ex_p2p("MPI_Send", 0, 11, W, 24, 0);
  } else {
    MPI_Recv(d, 8, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, W, &st);
    int n = -1;
    PMPI_Get_count(&st, MPI_DOUBLE, &n);
    EX_CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 11 && n == 3, "source %d tag %d count %d",
             st.MPI_SOURCE, st.MPI_TAG, n);
    EX_CHECK(d[0] == 1.5 && d[2] == 3.5, "payload %g %g", d[0], d[2]);
    /* The log says what the status says: the actual source and tag. */
    ex_p2p("MPI_Recv", st.MPI_SOURCE, st.MPI_TAG, W, (uint64_t)n * 8, EX_ANY_SOURCE | EX_ANY_TAG);
  }
  /* ANY_SOURCE with STATUS_IGNORE: only rank 0 can be the sender. */
  int v = 0;
  if (rank == 0) {
    v = 77;
    MPI_Send(&v, 1, MPI_INT, 1, 12, W);
    ex_p2p("MPI_Send", 1, 12, W, 4, 0);
  } else {
    MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 12, W, MPI_STATUS_IGNORE);
    EX_CHECK(v == 77, "v=%d", v);
    ex_p2p("MPI_Recv", 0, 12, W, 4, EX_ANY_SOURCE);
  }
}

static void proc_null(void) {
  int buf[5] = {1, 2, 3, 4, 5};
  MPI_Status st;
  MPI_Send(buf, 5, MPI_INT, MPI_PROC_NULL, 13, W);
  ex_p2p("MPI_Send", MPI_PROC_NULL, 13, W, 20, 0);
  MPI_Recv(buf, 5, MPI_INT, MPI_PROC_NULL, 13, W, &st);
  int n = -1;
  PMPI_Get_count(&st, MPI_INT, &n);
  EX_CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && n == 0,
           "PROC_NULL status: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, n);
  ex_p2p("MPI_Recv", MPI_PROC_NULL, MPI_ANY_TAG, W, 0, 0);
  MPI_Recv(buf, 5, MPI_INT, MPI_PROC_NULL, 13, W, MPI_STATUS_IGNORE);
  ex_p2p("MPI_Recv", MPI_PROC_NULL, MPI_ANY_TAG, W, 0, 0);

  MPI_Request r;
  MPI_Isend(buf, 5, MPI_INT, MPI_PROC_NULL, 14, W, &r);
  ex_p2p_req("MPI_Isend", MPI_PROC_NULL, 14, W, 20, 0, r);
  MPI_Request h = r;
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  EX_CHECK(r == MPI_REQUEST_NULL, "request not freed");
  ex_comp_begin("MPI_Wait");
  ex_comp_add(h, W, EX_ANY, EX_ANY, -1, 0);
  ex_comp_end();

  MPI_Irecv(buf, 5, MPI_INT, MPI_PROC_NULL, 15, W, &r);
  ex_p2p_req("MPI_Irecv", MPI_PROC_NULL, 15, W, 20, 0, r);
  h = r;
  MPI_Wait(&r, &st);
  /* MPICH 4.0.2 completes an Irecv from MPI_PROC_NULL with source 0, tag 0
   * (the standard says PROC_NULL, ANY_TAG): the shim records the status as
   * MPI gives it, so the log says what the status says. */
  PMPI_Get_count(&st, MPI_INT, &n);
  EX_CHECK(n == 0, "Irecv PROC_NULL count %d", n);
  ex_comp_begin("MPI_Wait");
  ex_comp_add(h, W, st.MPI_SOURCE, st.MPI_TAG, 0, 0);
  ex_comp_end();
}

/* MPI_REQUEST_NULL entries in the arrays: never recorded as completions. */
static void null_requests(void) {
  int in[4] = {0}, out[4];
  MPI_Request reqs[4];
  MPI_Status st, sts[4];
  int idx = -1;

  /* Waitany over {NULL, recv, NULL}, then over all NULL. */
  reqs[0] = reqs[2] = MPI_REQUEST_NULL;
  MPI_Irecv(&in[0], 1, MPI_INT, peer, 20, W, &reqs[1]);
  ex_p2p_req("MPI_Irecv", peer, 20, W, 4, 0, reqs[1]);
  const MPI_Request r1 = reqs[1];
  out[0] = 20 + rank;
  MPI_Send(&out[0], 1, MPI_INT, peer, 20, W);
  ex_p2p("MPI_Send", peer, 20, W, 4, 0);
  MPI_Waitany(3, reqs, &idx, &st);
  EX_CHECK(idx == 1 && in[0] == 20 + peer && st.MPI_SOURCE == peer, "Waitany idx %d in %d", idx,
           in[0]);
  ex_comp_begin("MPI_Waitany");
  ex_comp_add(r1, W, peer, 20, 4, 0);
  ex_comp_end();
  MPI_Waitany(3, reqs, &idx, MPI_STATUS_IGNORE);
  EX_CHECK(idx == MPI_UNDEFINED, "Waitany on all-NULL gave %d", idx);
  ex_comp_begin("MPI_Waitany");
  ex_comp_end();

  /* Waitsome over {recv 21, NULL, recv 22, NULL} with MPI_STATUSES_IGNORE. */
  reqs[1] = reqs[3] = MPI_REQUEST_NULL;
  MPI_Irecv(&in[0], 1, MPI_INT, peer, 21, W, &reqs[0]);
  ex_p2p_req("MPI_Irecv", peer, 21, W, 4, 0, reqs[0]);
  MPI_Irecv(&in[2], 2, MPI_INT, peer, 22, W, &reqs[2]);
  ex_p2p_req("MPI_Irecv", peer, 22, W, 8, 0, reqs[2]);
  MPI_Request saved[4];
  memcpy(saved, reqs, sizeof saved);
  out[0] = 21; out[1] = 22; out[2] = 23;
  MPI_Send(&out[0], 1, MPI_INT, peer, 21, W);
  ex_p2p("MPI_Send", peer, 21, W, 4, 0);
  MPI_Send(&out[1], 2, MPI_INT, peer, 22, W);
  ex_p2p("MPI_Send", peer, 22, W, 8, 0);
  int done = 0;
  while (done < 2) {
    int outcount = 0, indices[4];
    MPI_Waitsome(4, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
    EX_CHECK(outcount >= 1 && outcount <= 2, "Waitsome outcount %d", outcount);
    ex_comp_begin("MPI_Waitsome");
    for (int j = 0; j < outcount; ++j) {
      const int k = indices[j];
      EX_CHECK(k == 0 || k == 2, "Waitsome index %d", k);
      ex_comp_add(saved[k], W, peer, k == 0 ? 21 : 22, k == 0 ? 4 : 8, 0);
    }
    ex_comp_end();
    done += outcount;
  }
  EX_CHECK(in[0] == 21 && in[2] == 22 && in[3] == 23, "Waitsome payload %d %d %d", in[0], in[2],
           in[3]);

  /* Testall over {send 23, NULL, recv 23}: polled until all are done. */
  reqs[1] = MPI_REQUEST_NULL;
  out[0] = 230 + rank;
  MPI_Isend(&out[0], 1, MPI_INT, peer, 23, W, &reqs[0]);
  ex_p2p_req("MPI_Isend", peer, 23, W, 4, 0, reqs[0]);
  MPI_Irecv(&in[0], 1, MPI_INT, peer, 23, W, &reqs[2]);
  ex_p2p_req("MPI_Irecv", peer, 23, W, 4, 0, reqs[2]);
  memcpy(saved, reqs, sizeof saved);
  int flag = 0;
  while (!flag) {
    MPI_Testall(3, reqs, &flag, sts);
    ex_comp_begin("MPI_Testall");
    if (flag) {
      ex_comp_add(saved[0], W, EX_ANY, EX_ANY, -1, 0);
      ex_comp_add(saved[2], W, peer, 23, 4, 0);
      EX_CHECK(sts[2].MPI_SOURCE == peer && sts[2].MPI_TAG == 23, "Testall status %d %d",
               sts[2].MPI_SOURCE, sts[2].MPI_TAG);
    }
    ex_comp_end();
  }
  EX_CHECK(in[0] == 230 + peer, "Testall payload %d", in[0]);

  /* Waitall with MPI_STATUSES_IGNORE over {NULL, recv 24, send 24}. */
  reqs[0] = MPI_REQUEST_NULL;
  MPI_Irecv(&in[1], 1, MPI_INT, peer, 24, W, &reqs[1]);
  ex_p2p_req("MPI_Irecv", peer, 24, W, 4, 0, reqs[1]);
  out[1] = 240 + rank;
  MPI_Isend(&out[1], 1, MPI_INT, peer, 24, W, &reqs[2]);
  ex_p2p_req("MPI_Isend", peer, 24, W, 4, 0, reqs[2]);
  memcpy(saved, reqs, sizeof saved);
  MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE);
  ex_comp_begin("MPI_Waitall");
  ex_comp_add(saved[1], W, peer, 24, 4, 0);
  ex_comp_add(saved[2], W, EX_ANY, EX_ANY, -1, 0);
  ex_comp_end();
  EX_CHECK(in[1] == 240 + peer, "Waitall payload %d", in[1]);

  /* MPI_Test until done (STATUS_IGNORE). */
  MPI_Request r;
  out[2] = 250 + rank;
  MPI_Irecv(&in[2], 1, MPI_INT, peer, 25, W, &r);
  ex_p2p_req("MPI_Irecv", peer, 25, W, 4, 0, r);
  const MPI_Request rh = r;
  MPI_Send(&out[2], 1, MPI_INT, peer, 25, W);
  ex_p2p("MPI_Send", peer, 25, W, 4, 0);
  flag = 0;
  while (!flag) {
    MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    ex_comp_begin("MPI_Test");
    if (flag) ex_comp_add(rh, W, peer, 25, 4, 0);
    ex_comp_end();
  }
  EX_CHECK(in[2] == 250 + peer, "Test payload %d", in[2]);
}

/* A completion with more entries than one record holds: the shim writes
 * continuation records, which the reader hands back as one call. */
static void big_waitall(void) {
  enum { N = 100 };
  int in[N], out[N];
  MPI_Request rq[2 * N], saved[2 * N];
  MPI_Status sts[2 * N];
  for (int i = 0; i < N; ++i) {
    MPI_Irecv(&in[i], 1, MPI_INT, peer, 26, W, &rq[i]);
    ex_p2p_req("MPI_Irecv", peer, 26, W, 4, 0, rq[i]);
  }
  for (int i = 0; i < N; ++i) {
    out[i] = 1000 * rank + i;
    MPI_Isend(&out[i], 1, MPI_INT, peer, 26, W, &rq[N + i]);
    ex_p2p_req("MPI_Isend", peer, 26, W, 4, 0, rq[N + i]);
  }
  memcpy(saved, rq, sizeof saved);
  MPI_Waitall(2 * N, rq, sts);
  ex_comp_begin("MPI_Waitall");
  for (int i = 0; i < N; ++i) ex_comp_add(saved[i], W, peer, 26, 4, 0);
  for (int i = 0; i < N; ++i) ex_comp_add(saved[N + i], W, EX_ANY, EX_ANY, -1, 0);
  ex_comp_end();
  for (int i = 0; i < N; ++i)
    EX_CHECK(in[i] == 1000 * peer + i, "big Waitall in[%d]=%d", i, in[i]);
}

static void persistent(void) {
  int sbuf[3], rbuf[3];
  MPI_Request rq[2];
  MPI_Recv_init(rbuf, 3, MPI_INT, peer, 30, W, &rq[0]);
  ex_p2p_req("MPI_Recv_init", peer, 30, W, 12, 0, rq[0]);
  MPI_Send_init(sbuf, 3, MPI_INT, peer, 30, W, &rq[1]);
  ex_p2p_req("MPI_Send_init", peer, 30, W, 12, 0, rq[1]);
  const MPI_Request R = rq[0], S = rq[1];
  for (int it = 0; it < 3; ++it) {
    for (int i = 0; i < 3; ++i) sbuf[i] = 1000 * it + 10 * rank + i;
    MPI_Status sts[2];
    if (it < 2) {
      MPI_Startall(2, rq);
      ex_reqop("MPI_Startall", 2, rq);
      MPI_Waitall(2, rq, sts);
      EX_CHECK(rq[0] == R && rq[1] == S, "persistent handles changed");
      EX_CHECK(sts[0].MPI_SOURCE == peer && sts[0].MPI_TAG == 30, "persistent status");
      ex_comp_begin("MPI_Waitall");
      ex_comp_add(R, W, peer, 30, 12, 0);
      ex_comp_add(S, W, EX_ANY, EX_ANY, -1, 0);
      ex_comp_end();
    } else {
      MPI_Start(&rq[0]);
      ex_reqop("MPI_Start", 1, &rq[0]);
      MPI_Start(&rq[1]);
      ex_reqop("MPI_Start", 1, &rq[1]);
      MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
      ex_comp_begin("MPI_Wait");
      ex_comp_add(S, W, EX_ANY, EX_ANY, -1, 0);
      ex_comp_end();
      MPI_Wait(&rq[0], &sts[0]);
      ex_comp_begin("MPI_Wait");
      ex_comp_add(R, W, peer, 30, 12, 0);
      ex_comp_end();
    }
    for (int i = 0; i < 3; ++i)
      EX_CHECK(rbuf[i] == 1000 * it + 10 * peer + i, "persistent it %d rbuf[%d]=%d", it, i,
               rbuf[i]);
  }
  MPI_Request_free(&rq[0]);
  ex_reqop("MPI_Request_free", 1, &R);
  MPI_Request_free(&rq[1]);
  ex_reqop("MPI_Request_free", 1, &S);
  EX_CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "Request_free");
}

static void cancelled_receive(void) {
  int x = 0;
  MPI_Request r;
  MPI_Status st;
  MPI_Irecv(&x, 1, MPI_INT, peer, 99, W, &r);  /* never sent */
  ex_p2p_req("MPI_Irecv", peer, 99, W, 4, 0, r);
  const MPI_Request h = r;
  MPI_Cancel(&r);
  ex_reqop("MPI_Cancel", 1, &h);
  MPI_Wait(&r, &st);
  ex_comp_begin("MPI_Wait");
  ex_comp_add(h, W, EX_ANY, EX_ANY, -1, 1);
  ex_comp_end();
  int cancelled = 0;
  MPI_Test_cancelled(&st, &cancelled);
  ex_other("MPI_Test_cancelled");
  EX_CHECK(cancelled, "receive not cancelled");
}

static void probes(void) {
  int buf[7];
  MPI_Status st;
  int flag = 1;
  /* Nothing to find: recorded with the requested peer and tag, 0 bytes. */
  MPI_Iprobe(peer, 98, W, &flag, MPI_STATUS_IGNORE);
  EX_CHECK(!flag, "Iprobe found a message that was never sent");
  ex_p2p("MPI_Iprobe", peer, 98, W, 0, 0);

  if (rank == 0) {
    for (int i = 0; i < 7; ++i) buf[i] = i * i;
    MPI_Send(buf, 7, MPI_INT, 1, 40, W);
    ex_p2p("MPI_Send", 1, 40, W, 28, 0);
    /* Iprobe with ANY_SOURCE until the answer is there. */
    flag = 0;
    while (!flag) {
      MPI_Iprobe(MPI_ANY_SOURCE, 41, W, &flag, &st);
      if (flag) ex_p2p("MPI_Iprobe", st.MPI_SOURCE, 41, W, 8, EX_ANY_SOURCE);
      else ex_p2p("MPI_Iprobe", MPI_ANY_SOURCE, 41, W, 0, EX_ANY_SOURCE);
    }
    EX_CHECK(st.MPI_SOURCE == 1, "Iprobe source %d", st.MPI_SOURCE);
    MPI_Recv(buf, 2, MPI_INT, 1, 41, W, MPI_STATUS_IGNORE);
    ex_p2p("MPI_Recv", 1, 41, W, 8, 0);
    EX_CHECK(buf[0] == 41 && buf[1] == 42, "Iprobe'd payload %d %d", buf[0], buf[1]);
  } else {
    MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, W, &st);
    int n = -1;
    MPI_Get_count(&st, MPI_INT, &n);
    EX_CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 40 && n == 7, "Probe %d %d %d", st.MPI_SOURCE,
             st.MPI_TAG, n);
    ex_p2p("MPI_Probe", st.MPI_SOURCE, st.MPI_TAG, W, 28, EX_ANY_SOURCE | EX_ANY_TAG);
    ex_other("MPI_Get_count");
    MPI_Recv(buf, n, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, W, MPI_STATUS_IGNORE);
    ex_p2p("MPI_Recv", 0, 40, W, 28, 0);
    EX_CHECK(buf[6] == 36, "probed payload %d", buf[6]);
    buf[0] = 41; buf[1] = 42;
    MPI_Send(buf, 2, MPI_INT, 0, 41, W);
    ex_p2p("MPI_Send", 0, 41, W, 8, 0);
  }
}

static void sendrecv(void) {
  int s[2] = {rank, 50 + rank}, r[10] = {0};
  MPI_Status st;
  MPI_Sendrecv(s, 2, MPI_INT, peer, 50, r, 10, MPI_INT, MPI_ANY_SOURCE, 50, W, &st);
  EX_CHECK(st.MPI_SOURCE == peer && r[0] == peer && r[1] == 50 + peer, "Sendrecv");
  ex_sendrecv("MPI_Sendrecv", peer, 50, 8, peer, 50, 8, W, EX_ANY_SOURCE);
}

/* Bytes of derived and pair datatypes (sized through MPI, not the handle),
 * byte counts above 4 GiB (to MPI_PROC_NULL: nothing is touched) through the
 * int and the MPI_Count entry points, and tags too big for the packed form. */
static void sizes_and_wide_fields(void) {
  MPI_Datatype tri;
  MPI_Type_contiguous(3, MPI_INT, &tri);
  ex_other("MPI_Type_contiguous");
  MPI_Type_commit(&tri);
  ex_other("MPI_Type_commit");
  int t[6] = {0}, tr[6] = {0};
  for (int i = 0; i < 6; ++i) t[i] = 10 * rank + i;
  struct { double d; int i; } di[2] = {{1.5, rank}, {2.5, rank + 1}}, dr[2];
  int* tagub = NULL;
  int found = 0;
  MPI_Comm_get_attr(W, MPI_TAG_UB, &tagub, &found);
  ex_other("MPI_Comm_get_attr");
  const int big_tag = found && *tagub >= 1000000 ? 1000000 : 40000;
  MPI_Request q[2];
  MPI_Irecv(tr, 2, tri, peer, big_tag, W, &q[0]);
  ex_p2p_req("MPI_Irecv", peer, big_tag, W, 24, 0, q[0]);
  MPI_Irecv(dr, 2, MPI_DOUBLE_INT, peer, 63, W, &q[1]);
  ex_p2p_req("MPI_Irecv", peer, 63, W, 2 * sizeof(dr[0].d) + 2 * sizeof(int), 0, q[1]);
  const MPI_Request h0 = q[0], h1 = q[1];
  MPI_Send(t, 2, tri, peer, big_tag, W);
  ex_p2p("MPI_Send", peer, big_tag, W, 24, 0);
  int pair_size = 0;
  PMPI_Type_size(MPI_DOUBLE_INT, &pair_size);
  MPI_Send(di, 2, MPI_DOUBLE_INT, peer, 63, W);
  ex_p2p("MPI_Send", peer, 63, W, 2 * (uint64_t)pair_size, 0);
  MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
  ex_comp_begin("MPI_Waitall");
  ex_comp_add(h0, W, peer, big_tag, 24, 0);
  ex_comp_add(h1, W, peer, 63, 2 * (long long)pair_size, 0);
  ex_comp_end();
  for (int i = 0; i < 6; ++i) EX_CHECK(tr[i] == 10 * peer + i, "tri[%d]=%d", i, tr[i]);
  EX_CHECK(dr[1].d == 2.5 && dr[1].i == peer + 1, "DOUBLE_INT %g %d", dr[1].d, dr[1].i);
  MPI_Type_free(&tri);
  ex_other("MPI_Type_free");

  /* Blocking receives of tags too big for the fixed record: one asked for
   * by its tag (the shim's fast wrapper hands it to the general one on
   * entry), one by MPI_ANY_TAG (the fast wrapper finds the tag only in the
   * status, after the call, and finishes by the general record). */
  int one = rank, got = -1;
  for (int turn = 0; turn < 2; ++turn) {
    if ((turn == 0) == (rank < peer)) {
      MPI_Send(&one, 1, MPI_INT, peer, big_tag, W);
      ex_p2p("MPI_Send", peer, big_tag, W, 4, 0);
      MPI_Send(&one, 1, MPI_INT, peer, big_tag - 1, W);
      ex_p2p("MPI_Send", peer, big_tag - 1, W, 4, 0);
    } else {
      MPI_Status st;
      MPI_Recv(&got, 1, MPI_INT, peer, big_tag, W, &st);
      ex_p2p("MPI_Recv", peer, big_tag, W, 4, 0);
      EX_CHECK(got == peer && st.MPI_TAG == big_tag, "big tag %d from %d", st.MPI_TAG, got);
      /* A record on another communicator first: the general record that
       * finishes this receive must name W itself, not lean on the chunk's
       * last communicator. */
      MPI_Barrier(MPI_COMM_SELF);
      ex_coll("MPI_Barrier", MPI_COMM_SELF, -1, 0);
      MPI_Recv(&got, 1, MPI_INT, peer, MPI_ANY_TAG, W, MPI_STATUS_IGNORE);
      ex_p2p("MPI_Recv", peer, big_tag - 1, W, 4, EX_ANY_TAG);
    }
  }

  /* > 4 GiB to MPI_PROC_NULL. */
  static double dummy;
  MPI_Send(&dummy, 1 << 30, MPI_DOUBLE, MPI_PROC_NULL, big_tag, W);
  ex_p2p("MPI_Send", MPI_PROC_NULL, big_tag, W, (uint64_t)8 << 30, 0);
  /* The same with a narrow tag: the count fits 32 bits, the bytes do not. */
  MPI_Send(&dummy, 1 << 30, MPI_DOUBLE, MPI_PROC_NULL, 65, W);
  ex_p2p("MPI_Send", MPI_PROC_NULL, 65, W, (uint64_t)8 << 30, 0);
  MPI_Send_c(&dummy, (MPI_Count)1 << 40, MPI_INT, MPI_PROC_NULL, 64, W);
  ex_p2p("MPI_Send_c", MPI_PROC_NULL, 64, W, (uint64_t)4 << 40, 0);
  MPI_Request r;
  MPI_Isend_c(&dummy, (MPI_Count)3 << 33, MPI_BYTE, MPI_PROC_NULL, big_tag, W, &r);
  ex_p2p_req("MPI_Isend_c", MPI_PROC_NULL, big_tag, W, (uint64_t)3 << 33, 0, r);
  const MPI_Request hr = r;
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  ex_comp_begin("MPI_Wait");
  ex_comp_add(hr, W, EX_ANY, EX_ANY, -1, 0);
  ex_comp_end();
}

/* Failed blocking calls (a negative count, under MPI_ERRORS_RETURN): each
 * recorded as failed, with the peer, tag and communicator it was called
 * with, and the calls after them recorded as usual. */
static void failed_calls(void) {
  int buf[2] = {0, 0};
  MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN);
  ex_other("MPI_Comm_set_errhandler");
  int rc = MPI_Recv(buf, -1, MPI_INT, peer, 71, W, MPI_STATUS_IGNORE);
  EX_CHECK(rc != MPI_SUCCESS, "Recv with count -1 returned %d", rc);
  ex_line("MPI_Recv peer=%d tag=71 comm=0x%x bytes=0 failed=1", ex_world(W, peer), (unsigned)W);
  rc = MPI_Recv(buf, -1, MPI_INT, MPI_ANY_SOURCE, 72, W, MPI_STATUS_IGNORE);
  EX_CHECK(rc != MPI_SUCCESS, "Recv with count -1 returned %d", rc);
  ex_line("MPI_Recv peer=%d tag=72 comm=0x%x bytes=0 any_source=1 failed=1", MPI_ANY_SOURCE,
          (unsigned)W);
  rc = MPI_Send(buf, -1, MPI_INT, peer, 73, W);
  EX_CHECK(rc != MPI_SUCCESS, "Send with count -1 returned %d", rc);
  /* The byte count as the shim computes it: the count as an unsigned 64-bit
   * number times the type's size. */
  ex_line("MPI_Send peer=%d tag=73 comm=0x%x bytes=%llu failed=1", ex_world(W, peer), (unsigned)W,
          (unsigned long long)((uint64_t)(int64_t)-1 * 4));
  MPI_Comm_set_errhandler(W, MPI_ERRORS_ARE_FATAL);
  ex_other("MPI_Comm_set_errhandler");
  /* A receive after them, on a communicator only it names. */
  MPI_Recv(buf, 2, MPI_INT, MPI_PROC_NULL, 74, MPI_COMM_SELF, MPI_STATUS_IGNORE);
  ex_p2p("MPI_Recv", MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_SELF, 0, 0);
}

static void sendrecv_replace_and_testany(void) {
  int v[2] = {rank, 60 + rank};
  MPI_Sendrecv_replace(v, 2, MPI_INT, peer, 60 + rank, peer, MPI_ANY_TAG, W, MPI_STATUS_IGNORE);
  EX_CHECK(v[0] == peer && v[1] == 60 + peer, "Sendrecv_replace %d %d", v[0], v[1]);
  ex_sendrecv("MPI_Sendrecv_replace", peer, 60 + rank, 8, peer, 60 + peer, 8, W, EX_ANY_TAG);

  /* Testany and Testsome over arrays with MPI_REQUEST_NULL entries. */
  int in[2] = {-1, -1}, out[2] = {rank, rank};
  MPI_Request rq[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Irecv(&in[0], 1, MPI_INT, peer, 61, W, &rq[1]);
  ex_p2p_req("MPI_Irecv", peer, 61, W, 4, 0, rq[1]);
  const MPI_Request h1 = rq[1];
  MPI_Send(&out[0], 1, MPI_INT, peer, 61, W);
  ex_p2p("MPI_Send", peer, 61, W, 4, 0);
  int flag = 0, idx = -1;
  while (!flag) {
    MPI_Status st;
    MPI_Testany(3, rq, &idx, &flag, &st);
    ex_comp_begin("MPI_Testany");
    if (flag) {
      EX_CHECK(idx == 1 && st.MPI_SOURCE == peer, "Testany idx %d", idx);
      ex_comp_add(h1, W, peer, 61, 4, 0);
    }
    ex_comp_end();
  }
  MPI_Testany(3, rq, &idx, &flag, MPI_STATUS_IGNORE);  /* all NULL: flag, no index */
  EX_CHECK(flag && idx == MPI_UNDEFINED, "Testany on all-NULL: flag %d idx %d", flag, idx);
  ex_comp_begin("MPI_Testany");
  ex_comp_end();

  MPI_Irecv(&in[1], 1, MPI_INT, peer, 62, W, &rq[2]);
  ex_p2p_req("MPI_Irecv", peer, 62, W, 4, 0, rq[2]);
  const MPI_Request h2 = rq[2];
  MPI_Send(&out[1], 1, MPI_INT, peer, 62, W);
  ex_p2p("MPI_Send", peer, 62, W, 4, 0);
  int outcount = 0;
  while (outcount != 1) {
    int indices[3];
    MPI_Status sts[3];
    MPI_Testsome(3, rq, &outcount, indices, sts);
    ex_comp_begin("MPI_Testsome");
    if (outcount == 1) {
      EX_CHECK(indices[0] == 2 && sts[0].MPI_TAG == 62, "Testsome index %d", indices[0]);
      ex_comp_add(h2, W, peer, 62, 4, 0);
    }
    ex_comp_end();
  }
  EX_CHECK(in[0] == peer && in[1] == peer, "Testany/Testsome payload %d %d", in[0], in[1]);
}

static void collectives(void) {
  /* Allreduce with MPI_IN_PLACE. */
  int a[3] = {rank, 2 * rank, 1};
  MPI_Allreduce(MPI_IN_PLACE, a, 3, MPI_INT, MPI_SUM, W);
  ex_coll("MPI_Allreduce", W, -1, 12);
  EX_CHECK(a[0] == 1 && a[1] == 2 && a[2] == 2, "Allreduce in place %d %d %d", a[0], a[1], a[2]);

  /* Gather with MPI_IN_PLACE at the root. */
  int g[4] = {-1, -1, -1, -1};
  g[2 * rank] = 10 * rank;
  g[2 * rank + 1] = 10 * rank + 1;
  if (rank == 0) MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, 2, MPI_INT, 0, W);
  else MPI_Gather(&g[2 * rank], 2, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, 0, W);
  ex_coll("MPI_Gather", W, 0, 8);
  if (rank == 0)
    EX_CHECK(g[0] == 0 && g[1] == 1 && g[2] == 10 && g[3] == 11, "Gather in place %d %d %d %d",
             g[0], g[1], g[2], g[3]);

  double b[5] = {0};
  if (rank == 1)
    for (int i = 0; i < 5; ++i) b[i] = i + 0.25;
  MPI_Bcast(b, 5, MPI_DOUBLE, 1, W);
  ex_coll("MPI_Bcast", W, 1, 40);
  EX_CHECK(b[4] == 4.25, "Bcast %g", b[4]);

  long l = rank + 1, lsum = 0;
  MPI_Reduce(&l, &lsum, 1, MPI_LONG, MPI_SUM, 0, W);
  ex_coll("MPI_Reduce", W, 0, 8);
  if (rank == 0) EX_CHECK(lsum == 3, "Reduce %ld", lsum);

  MPI_Barrier(W);
  ex_coll("MPI_Barrier", W, -1, 0);

  /* Alltoallv: rank r sends (r+1)*(i+1) ints to rank i. */
  int sc[2], sd[2], rc[2], rd[2], sendn = 0, recvn = 0;
  for (int i = 0; i < 2; ++i) {
    sc[i] = (rank + 1) * (i + 1);
    sd[i] = sendn;
    sendn += sc[i];
    rc[i] = (i + 1) * (rank + 1);
    rd[i] = recvn;
    recvn += rc[i];
  }
  int* sb = malloc(sizeof(int) * (size_t)sendn);
  int* rb = malloc(sizeof(int) * (size_t)recvn);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < sc[i]; ++k) sb[sd[i] + k] = 1000 * rank + 100 * i + k;
  MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, W);
  ex_coll("MPI_Alltoallv", W, -1, (uint64_t)sendn * 4);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < rc[i]; ++k)
      EX_CHECK(rb[rd[i] + k] == 1000 * i + 100 * rank + k, "Alltoallv from %d [%d]=%d", i, k,
               rb[rd[i] + k]);
  /* In place: the recorded bytes are the receive counts. */
  int ip[4];
  int ipc[2] = {2, 2}, ipd[2] = {0, 2};
  for (int i = 0; i < 4; ++i) ip[i] = 10 * rank + i;
  MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, ip, ipc, ipd, MPI_INT, W);
  ex_coll("MPI_Alltoallv", W, -1, 16);
  EX_CHECK(ip[2 * peer] == 10 * peer + 2 * rank && ip[2 * rank] == 10 * rank + 2 * rank,
           "Alltoallv in place %d %d %d %d", ip[0], ip[1], ip[2], ip[3]);
  free(sb);
  free(rb);

  /* Nonblocking collectives. */
  int ib[4] = {0};
  if (rank == 0)
    for (int i = 0; i < 4; ++i) ib[i] = 7 * i;
  double ar[2] = {rank + 0.5, 1.0}, ars[2];
  MPI_Request r1, r2;
  MPI_Ibcast(ib, 4, MPI_INT, 0, W, &r1);
  ex_icoll("MPI_Ibcast", W, 0, 16, r1);
  MPI_Iallreduce(ar, ars, 2, MPI_DOUBLE, MPI_SUM, W, &r2);
  ex_icoll("MPI_Iallreduce", W, -1, 16, r2);
  const MPI_Request h1 = r1, h2 = r2;
  MPI_Wait(&r1, MPI_STATUS_IGNORE);
  ex_comp_begin("MPI_Wait");
  ex_comp_add(h1, W, EX_ANY, EX_ANY, -1, 0);
  ex_comp_end();
  MPI_Status st;
  MPI_Wait(&r2, &st);
  ex_comp_begin("MPI_Wait");
  ex_comp_add(h2, W, EX_ANY, EX_ANY, -1, 0);
  ex_comp_end();
  EX_CHECK(ib[3] == 21, "Ibcast %d", ib[3]);
  EX_CHECK(ars[0] == 2.0 && ars[1] == 2.0, "Iallreduce %g %g", ars[0], ars[1]);
}

int main(int argc, char** argv) {
  ex_init(&argc, &argv, &rank, &size);
  if (size != 2) {
    fprintf(stderr, "semantics: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  W = MPI_COMM_WORLD;
  peer = 1 - rank;

  EX_MARKER(1, 1);  /* the whole program */
  EX_MARKER(2, 1);  /* point-to-point */
  blocking_and_status_ignore();
  any_source_any_tag();
  proc_null();
  null_requests();
  big_waitall();
  persistent();
  cancelled_receive();
  probes();
  sendrecv();
  sendrecv_replace_and_testany();
  sizes_and_wide_fields();
  failed_calls();
  EX_MARKER(2, 0);
  /* Collectives, between markers carried by a receive from MPI_PROC_NULL. */
  MPI_Recv(NULL, 0, MPI_BYTE, MPI_PROC_NULL, (int)0xAA0003AAu, W, MPI_STATUS_IGNORE);
  ex_marker(3, 1, __FILE__ ":" EX_STR(__LINE__));
  collectives();
  MPI_Recv(NULL, 0, MPI_BYTE, MPI_PROC_NULL, (int)0xAA0003BBu, W, MPI_STATUS_IGNORE);
  ex_marker(3, 0, __FILE__ ":" EX_STR(__LINE__));
  /* One call site, many times: one call site id. */
  for (int i = 0; i < 3; ++i) {
    EX_MARKER(4, 1);
    EX_MARKER(4, 0);
  }
  EX_MARKER(1, 0);

  return ex_finalize("semantics", rank);
}
