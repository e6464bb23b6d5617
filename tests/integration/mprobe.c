/* Matched probes (2 ranks): MPI_Mprobe + MPI_Mrecv and MPI_Improbe +
 * MPI_Imrecv + MPI_Wait. The receive's source is a rank of the communicator
 * the message was probed on, so the receive record must name that
 * communicator, or its peer cannot be mapped to a world rank (and matched
 * with its send). */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>

#include "ex.h"

int main(int argc, char** argv) {
  int rank, size;
  ex_init(&argc, &argv, &rank, &size);
  if (size != 2) MPI_Abort(MPI_COMM_WORLD, 2);
  const MPI_Comm W = MPI_COMM_WORLD;
  int buf[3] = {1, 2, 3};
  if (rank == 0) {
    MPI_Send(buf, 3, MPI_INT, 1, 60, W);
    ex_p2p("MPI_Send", 1, 60, W, 12, 0);
    MPI_Send(buf, 2, MPI_INT, 1, 61, W);
    ex_p2p("MPI_Send", 1, 61, W, 8, 0);
  } else {
    MPI_Message m;
    MPI_Status st;
    MPI_Mprobe(MPI_ANY_SOURCE, 60, W, &m, &st);
    EX_CHECK(st.MPI_SOURCE == 0, "Mprobe source %d", st.MPI_SOURCE);
    ex_p2p("MPI_Mprobe", st.MPI_SOURCE, 60, W, 12, EX_ANY_SOURCE);
    int in[3] = {0};
    MPI_Mrecv(in, 3, MPI_INT, &m, &st);
    EX_CHECK(in[2] == 3 && st.MPI_SOURCE == 0, "Mrecv %d from %d", in[2], st.MPI_SOURCE);
    ex_p2p("MPI_Mrecv", 0, 60, W, 12, 0);

    int flag = 0;
    while (!flag) {
      MPI_Improbe(0, 61, W, &flag, &m, &st);
      ex_p2p("MPI_Improbe", 0, 61, W, flag ? 8 : 0, 0);
      if (!flag) sched_yield();
    }
    MPI_Request q;
    MPI_Imrecv(in, 3, MPI_INT, &m, &q);
    /* Requested source/tag: none (the message is already matched). */
    ex_line("MPI_Imrecv peer=* tag=* comm=0x%x bytes=12 req=0x%x", (unsigned)W, (unsigned)q);
    const MPI_Request h = q;
    MPI_Wait(&q, &st);
    ex_comp_begin("MPI_Wait");
    ex_comp_add(h, W, 0, 61, 8, 0);
    ex_comp_end();
    EX_CHECK(in[1] == 2 && st.MPI_SOURCE == 0, "Imrecv %d from %d", in[1], st.MPI_SOURCE);
  }
  MPI_Finalize();
  ex_other("MPI_Finalize");
  return ex_failures() ? 1 : 0;
}
