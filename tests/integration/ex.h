/* Expectation log for the integration tests.
 *
 * Each test program runs under the shim and ALSO writes, per rank, what it did:
 * one line per MPI call it made, in call order, into
 * $PROF_EXPECT_DIR/expect-rank-NNNNN.txt. trace_check then compares those lines
 * with the events the shim recorded. Line grammar (tokens separated by one
 * space; `*` as a value or sub-value matches anything):
 *
 *   [@T ]FUNC [key=value ...]        one MPI call (T: thread number, 0 = main)
 *   !DIRECTIVE [args]                 what to expect of the rank file as a whole
 *
 * Keys, by what the shim records (see trace_format.h FuncKind):
 *   peer tag comm bytes any_source any_tag       Send/Recv/Probe (peer: WORLD rank)
 *   req                                          Isend/Irecv/ICollective (handle, hex)
 *   rpeer rtag rbytes                            SendRecv's receive half
 *   root                                         collectives (comm-local, as MPI has it)
 *   c=REQ/SRC/TAG/BYTES/CANCELLED,...           Completion entries (SRC as world rank)
 *   r=REQ,...                                    RequestOp requests
 *   new members inter remote key                 CommCreate (members: world ranks)
 *   id begin site                                MARKER (site=exe: the call site lies in
 *                                                the application executable; site=exe#L:
 *                                                and is the same for every L, distinct
 *                                                between labels)
 *   repeat=N                                     the same line N times
 *
 * Every helper looks things up through PMPI_* (never recorded by the shim), so
 * the log's bookkeeping adds no events. Lines are written with one write(2)
 * each, so they survive the process being killed right after.
 */
#ifndef PROF_TEST_EX_H
#define PROF_TEST_EX_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the log of this process (after MPI_Init; uses PMPI_Comm_rank) and writes
 * the directives for MPI_COMM_WORLD and MPI_COMM_SELF membership. */
void ex_open(void);

/* The opening every program shares: MPI_Init, ex_open, MPI_Comm_rank and
 * MPI_Comm_size, each call logged. */
void ex_init(int* argc, char*** argv, int* rank, int* size);

/* The ending: MPI_Finalize, logged, then the program's verdict: 0, or 1 with
 * a message naming the program, the rank and how many MPI results were wrong. */
int ex_finalize(const char* program, int rank);
int ex_rank(void);
int ex_size(void);
/* Thread number for the lines this thread logs (0: the main thread). */
void ex_set_thread(int t);

/* A raw line or directive (printf format, no newline). */
void ex_line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/* Comm-local rank -> world rank, computed with PMPI (remote group for
 * intercommunicators); negative (special) ranks unchanged. */
int ex_world(MPI_Comm comm, int rank);

/* One line per recorded kind. flags: EX_ANY_SOURCE | EX_ANY_TAG. */
enum { EX_ANY_SOURCE = 1, EX_ANY_TAG = 2 };
void ex_other(const char* fn);
void ex_p2p(const char* fn, int peer, int tag, MPI_Comm comm, uint64_t bytes, int flags);
void ex_p2p_req(const char* fn, int peer, int tag, MPI_Comm comm, uint64_t bytes, int flags,
                MPI_Request req);
void ex_sendrecv(const char* fn, int dest, int stag, uint64_t sbytes, int src, int rtag,
                 uint64_t rbytes, MPI_Comm comm, int flags);
void ex_coll(const char* fn, MPI_Comm comm, int root, uint64_t bytes);
void ex_icoll(const char* fn, MPI_Comm comm, int root, uint64_t bytes, MPI_Request req);
/* newcomm's membership is looked up with PMPI; key names the communicator for
 * the cross-rank global id check (same key: same communicator). */
void ex_comm_create(const char* fn, MPI_Comm parent, MPI_Comm newcomm, const char* key);
/* MPI_Comm_idup: an ICollective line, with the new communicator's membership. */
void ex_comm_idup(const char* fn, MPI_Comm parent, MPI_Comm newcomm, MPI_Request req,
                  const char* key);
/* A marker the program made at call site LABEL (e.g. "file.c:12"): markers
 * with the same label must share one call site id, different labels not. */
void ex_marker(int id, int begin, const char* label);

/* Completion lines: begin, one add per completed request, end.
 * src/tag: EX_ANY for "don't care"; src is comm-local on `comm`. bytes < 0: any. */
#define EX_ANY (-99999)
void ex_comp_begin(const char* fn);
void ex_comp_add(MPI_Request req, MPI_Comm comm, int src, int tag, long long bytes,
                 int cancelled);
void ex_comp_end(void);
/* Request operations (Start, Startall, Cancel, Request_free). */
void ex_reqop(const char* fn, int n, const MPI_Request* reqs);

/* The raw marker call (an MPI_Send to MPI_PROC_NULL with a marker tag) made
 * right where the macro is used, and logged with that call site. */
int ex_marker_tag(int id, int begin);
#define EX_STR2(x) #x
#define EX_STR(x) EX_STR2(x)
#define EX_MARKER(id, begin)                                                        \
  do {                                                                              \
    MPI_Send(NULL, 0, MPI_BYTE, MPI_PROC_NULL, ex_marker_tag(id, begin), MPI_COMM_WORLD); \
    ex_marker(id, begin, __FILE__ ":" EX_STR(__LINE__));                            \
  } while (0)

/* Self-checks of MPI results: a failure is printed and remembered. */
#define EX_CHECK(cond, ...)                                                  \
  do {                                                                       \
    if (!(cond)) ex_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);            \
  } while (0)
void ex_fail(const char* file, int line, const char* cond, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
int ex_failures(void);

#ifdef __cplusplus
}
#endif
#endif
