/* Checks MPI_Bcast (the shim's, under PROF_BCAST=shm) against MPICH's own
 * PMPI_Bcast on the same arguments: every root, sizes from 0 bytes to 8 MiB with
 * odd ones, predefined types with and without holes, a strided vector type
 * (also against a contiguous receive of the same signature), several
 * communicators used in turn, repeated calls with changing roots, the
 * large-count MPI_Bcast_c, MPI_BOTTOM with absolute addresses, messages in
 * flight while a broadcast waits, and the errors MPICH reports for arguments
 * it refuses. Exit status 0 when every result matched.
 *
 *   bcast_check [full|short|crash]
 * short: fewer sizes (the 3..5 rank runs); crash: rank 1 kills itself in the
 * middle of a run of broadcasts on fresh communicators.
 * Rank 0 first prints "pids: P0 P1 ..." so that the caller can look for
 * segments these processes left in /dev/shm. */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, failures;

static void fill(unsigned char* p, size_t n, unsigned seed) {
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    p[i] = (unsigned char)(x >> 16);
  }
}

static void report(const char* what, size_t bytes, int root, const char* comm_name) {
  if (failures++ < 20)
    fprintf(stderr, "rank %d: MISMATCH %s: %zu bytes, root %d, %s\n", rank, what, bytes, root, comm_name);
}

/* One broadcast of `count` elements of `type` (buffer span `span` bytes) from
 * root on comm, through MPI_Bcast and through PMPI_Bcast; the results must be
 * byte-identical, holes included. */
static void check_one(MPI_Comm comm, const char* comm_name, int root, MPI_Datatype send_type,
                      MPI_Datatype recv_type, int count_send, int count_recv, size_t span, unsigned seed) {
  int me;
  MPI_Comm_rank(comm, &me);
  unsigned char* mine = malloc(span + 1);
  unsigned char* ref = malloc(span + 1);
  if (me == root) {
    fill(mine, span + 1, seed);
    memcpy(ref, mine, span + 1);
  } else {
    memset(mine, 0xEE, span + 1);
    memset(ref, 0xEE, span + 1);
  }
  MPI_Datatype type = me == root ? send_type : recv_type;
  int count = me == root ? count_send : count_recv;
  if (MPI_Bcast(mine, count, type, root, comm) != MPI_SUCCESS) report("MPI_Bcast failed", span, root, comm_name);
  PMPI_Bcast(ref, count, type, root, comm);
  if (memcmp(mine, ref, span + 1) != 0) report("result differs from MPICH's", span, root, comm_name);
  free(mine);
  free(ref);
}

static void bytes_all_roots(MPI_Comm comm, const char* name, const size_t* sizes, int nsizes) {
  int n;
  MPI_Comm_size(comm, &n);
  for (int i = 0; i < nsizes; ++i)
    for (int root = 0; root < n; ++root)
      check_one(comm, name, root, MPI_BYTE, MPI_BYTE, (int)sizes[i], (int)sizes[i], sizes[i],
                (unsigned)(i * 131 + root));
}

static void datatypes(MPI_Comm comm, const char* name) {
  int n;
  MPI_Comm_size(comm, &n);
  /* A strided type: 3 ints out of every 5, 4099 blocks (odd, beyond one fragment). */
  const int blocks = 4099;
  MPI_Datatype strided, flat;
  MPI_Type_vector(blocks, 3, 5, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  MPI_Type_contiguous(3 * blocks, MPI_INT, &flat);
  MPI_Type_commit(&flat);
  const size_t span = (size_t)blocks * 5 * sizeof(int);
  for (int root = 0; root < n; ++root) {
    check_one(comm, name, root, strided, strided, 1, 1, span, 7u + root);
    /* Root sends the strided column, the others receive it contiguous: same signature. */
    check_one(comm, name, root, strided, MPI_INT, 1, 3 * blocks, span, 11u + root);
    check_one(comm, name, root, MPI_INT, strided, 3 * blocks, 1, span, 13u + root);
    check_one(comm, name, root, flat, flat, 2, 2, 2 * (size_t)blocks * 3 * sizeof(int), 17u + root);
    check_one(comm, name, root, MPI_INT, MPI_INT, 12345, 12345, 12345 * sizeof(int), 19u + root);
    /* A predefined pair type with a hole (12 bytes of 16). */
    check_one(comm, name, root, MPI_DOUBLE_INT, MPI_DOUBLE_INT, 1001, 1001, 1001 * 16, 23u + root);
  }
  MPI_Type_free(&strided);
  MPI_Type_free(&flat);
}

/* Non-contiguous messages beyond the queue (1 MiB by default), packed chunk by
 * chunk: 9-byte elements with a hole (double, char; extent 16) straddle the
 * chunks' ends; the same signature as one element of 1.8 MB (larger than a
 * chunk) on one side; a strided vector of one 1.2 MB element. */
static void datatypes_beyond_queue(MPI_Comm comm, const char* name) {
  int n;
  MPI_Comm_size(comm, &n);
  const int elements = 200003;
  MPI_Datatype pair, pairs, column;
  int lengths[2] = {1, 1};
  MPI_Aint displacements[2] = {0, 8};
  MPI_Datatype types[2] = {MPI_DOUBLE, MPI_CHAR};
  MPI_Type_create_struct(2, lengths, displacements, types, &pair);
  MPI_Type_commit(&pair);
  MPI_Type_contiguous(elements, pair, &pairs);
  MPI_Type_commit(&pairs);
  MPI_Type_vector(100003, 3, 5, MPI_INT, &column);
  MPI_Type_commit(&column);
  MPI_Aint lb, pair_extent, column_extent;
  MPI_Type_get_extent(pair, &lb, &pair_extent);
  MPI_Type_get_extent(column, &lb, &column_extent);
  const size_t span = (size_t)elements * (size_t)pair_extent;
  for (int root = 0; root < n; ++root) {
    check_one(comm, name, root, pair, pair, elements, elements, span, 31u + root);
    check_one(comm, name, root, pair, pairs, elements, 1, span, 37u + root);
    check_one(comm, name, root, pairs, pair, 1, elements, span, 41u + root);
    check_one(comm, name, root, column, column, 1, 1, (size_t)column_extent, 43u + root);
  }
  MPI_Type_free(&pair);
  MPI_Type_free(&pairs);
  MPI_Type_free(&column);
}

/* Several communicators in turn, changing roots and sizes every call. */
static void interleaved(MPI_Comm* comms, const char** names, int ncomms, int calls) {
  for (int i = 0; i < calls; ++i) {
    MPI_Comm c = comms[i % ncomms];
    int n;
    MPI_Comm_size(c, &n);
    const size_t bytes = ((size_t)i * 7919u) % 70000u + (i % 3);
    check_one(c, names[i % ncomms], (i / ncomms) % n, MPI_BYTE, MPI_BYTE, (int)bytes, (int)bytes, bytes,
              (unsigned)i);
  }
}

/* Back-to-back broadcasts with nothing in between, the root changing every call
 * and sizes around the inline limit (56 bytes), one fragment and a few: more
 * calls than the queue has slots and inline notices, so each is reused many
 * times while slower ranks may still be reading the previous contents. Every
 * rank checks all results only at the end. */
static void burst(MPI_Comm comm, const char* name, int calls) {
  static const size_t cycle[] = {1, 8, 55, 56, 57, 200, 8192, 9000, 0, 3};
  const int ncycle = (int)(sizeof cycle / sizeof *cycle);
  int n, me;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  size_t* offset = malloc(sizeof(size_t) * ((size_t)calls + 1));
  offset[0] = 0;
  for (int i = 0; i < calls; ++i) offset[i + 1] = offset[i] + (i % 97 == 96 ? 70001 : cycle[i % ncycle]);
  unsigned char* got = malloc(offset[calls] + 1);
  unsigned char* want = malloc(offset[calls] + 1);
  for (int i = 0; i < calls; ++i) fill(want + offset[i], offset[i + 1] - offset[i], 1000u + (unsigned)i);
  memset(got, 0xEE, offset[calls] + 1);
  for (int i = 0; i < calls; ++i) {
    const int root = (i + i / 7) % n;
    if (me == root) memcpy(got + offset[i], want + offset[i], offset[i + 1] - offset[i]);
    MPI_Bcast(got + offset[i], (int)(offset[i + 1] - offset[i]), MPI_BYTE, root, comm);
  }
  for (int i = 0; i < calls; ++i)
    if (memcmp(got + offset[i], want + offset[i], offset[i + 1] - offset[i]) != 0)
      report("back-to-back broadcast", offset[i + 1] - offset[i], (i + i / 7) % n, name);
  free(offset);
  free(got);
  free(want);
}

/* MPI's own messages move while a process waits inside MPI_Bcast, as they do
 * in MPICH's: rank 1 posts a receive and enters the broadcast; rank 0 first
 * sends to it, synchronously (inline) or 1 MiB (rendezvous), a message only
 * rank 1's MPI moves, then broadcasts. The communicator's segment exists
 * already, so the waits are on the segment alone. */
static void progress_while_waiting(MPI_Comm comm, const char* name) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  if (n < 2) return;
  const int big = 1 << 20;
  unsigned char* message = calloc((size_t)big, 1);
  for (int rendezvous = 0; rendezvous < 2; ++rendezvous) {
    const size_t bytes = rendezvous ? 65536 + 13 : 8;
    unsigned char* data = malloc(bytes);
    if (me == 0) fill(data, bytes, 555u + (unsigned)rendezvous), fill(message, (size_t)big, 77u);
    else memset(data, 0, bytes), memset(message, 0, (size_t)big);
    const int message_bytes = rendezvous ? big : 4;
    if (me == 1) {
      MPI_Request request;
      MPI_Irecv(message, message_bytes, MPI_BYTE, 0, 5, comm, &request);
      MPI_Bcast(data, (int)bytes, MPI_BYTE, 0, comm);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else if (me == 0) {
      if (rendezvous) MPI_Send(message, message_bytes, MPI_BYTE, 1, 5, comm);
      else MPI_Ssend(message, message_bytes, MPI_BYTE, 1, 5, comm);
      MPI_Bcast(data, (int)bytes, MPI_BYTE, 0, comm);
    } else {
      MPI_Bcast(data, (int)bytes, MPI_BYTE, 0, comm);
    }
    unsigned char* want = malloc(bytes > (size_t)big ? bytes : (size_t)big);
    fill(want, bytes, 555u + (unsigned)rendezvous);
    if (memcmp(data, want, bytes) != 0) report("broadcast after a message in flight", bytes, 0, name);
    fill(want, (size_t)big, 77u);
    if (me == 1 && memcmp(message, want, (size_t)message_bytes) != 0)
      report("message in flight during a broadcast", (size_t)message_bytes, 0, name);
    free(want);
    free(data);
  }
  free(message);
}

/* MPI_BOTTOM with a datatype of absolute addresses (two arrays), packed and
 * unpacked by every root and reader. */
static void from_bottom(MPI_Comm comm, const char* name) {
  int n;
  MPI_Comm_size(comm, &n);
  for (int root = 0; root < n; ++root) {
    int me;
    MPI_Comm_rank(comm, &me);
    double reals[100], want_reals[100];
    int ints[50], want_ints[50];
    for (int i = 0; i < 100; ++i) want_reals[i] = root * 1000 + i + 0.5;
    for (int i = 0; i < 50; ++i) want_ints[i] = root * 1000 - i;
    if (me == root) memcpy(reals, want_reals, sizeof reals), memcpy(ints, want_ints, sizeof ints);
    else memset(reals, 0, sizeof reals), memset(ints, 0, sizeof ints);
    int lengths[2] = {100, 50};
    MPI_Aint addresses[2];
    MPI_Get_address(reals, &addresses[0]);
    MPI_Get_address(ints, &addresses[1]);
    MPI_Datatype types[2] = {MPI_DOUBLE, MPI_INT}, absolute;
    MPI_Type_create_struct(2, lengths, addresses, types, &absolute);
    MPI_Type_commit(&absolute);
    if (MPI_Bcast(MPI_BOTTOM, 1, absolute, root, comm) != MPI_SUCCESS ||
        memcmp(reals, want_reals, sizeof reals) != 0 || memcmp(ints, want_ints, sizeof ints) != 0)
      report("MPI_BOTTOM with absolute addresses", sizeof reals + sizeof ints, root, name);
    MPI_Type_free(&absolute);
  }
}

/* MPI_Bcast's error `got` is of the class of MPICH's error `want`. */
static void same_refusal(const char* what, int got, int want) {
  int got_class = MPI_SUCCESS, want_class = MPI_SUCCESS;
  if (got != MPI_SUCCESS) MPI_Error_class(got, &got_class);
  if (want != MPI_SUCCESS) MPI_Error_class(want, &want_class);
  if ((want == MPI_SUCCESS || got_class != want_class) && failures++ < 20)
    fprintf(stderr, "rank %d: MISMATCH %s: error class %d, MPICH's %d\n", rank, what, got_class, want_class);
}

/* Arguments MPICH refuses are refused alike (the same error class, through
 * the communicator's handler, here MPI_ERRORS_RETURN): a null buffer with a
 * predefined or a derived type, a datatype not committed. Every rank makes
 * the same call. */
static void refused_arguments(MPI_Comm world) {
  MPI_Comm comm;
  MPI_Comm_dup(world, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Datatype committed, uncommitted;
  MPI_Type_vector(4, 1, 2, MPI_INT, &committed);
  MPI_Type_commit(&committed);
  MPI_Type_vector(4, 1, 2, MPI_INT, &uncommitted);
  int buffer[8] = {0};
  /* The communicator's first broadcast, by one rank alone, with a root out of
   * range: refused there and then, not waiting for the others. */
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  if (me == 0)
    same_refusal("a first broadcast with a root out of range", MPI_Bcast(buffer, 1, MPI_INT, n, comm),
                 PMPI_Bcast(buffer, 1, MPI_INT, n, comm));
  MPI_Barrier(comm);
  MPI_Bcast(buffer, 8, MPI_INT, 0, comm); /* (the communicator's segment, for the calls below) */
  struct {
    const char* what;
    void* buffer;
    int count;
    MPI_Datatype type;
  } calls[] = {{"a null buffer of MPI_INT", NULL, 4, MPI_INT},
               {"a null buffer of a vector type", NULL, 1, committed},
               {"a datatype not committed", buffer, 1, uncommitted}};
  for (size_t i = 0; i < sizeof calls / sizeof *calls; ++i)
    same_refusal(calls[i].what, MPI_Bcast(calls[i].buffer, calls[i].count, calls[i].type, 0, comm),
                 PMPI_Bcast(calls[i].buffer, calls[i].count, calls[i].type, 0, comm));
  MPI_Type_free(&committed);
  MPI_Type_free(&uncommitted);
  MPI_Comm_free(&comm);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "full";
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  int pid = (int)getpid();
  int* pids = malloc(sizeof(int) * (size_t)size);
  PMPI_Gather(&pid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("pids:");
    for (int i = 0; i < size; ++i) printf(" %d", pids[i]);
    printf("\n");
    fflush(stdout);
  }

  if (strcmp(mode, "crash") == 0) {
    /* Fresh communicators (fresh segments), then a rank dies mid-way. */
    for (int i = 0; i < 50; ++i) {
      MPI_Comm dup;
      MPI_Comm_dup(MPI_COMM_WORLD, &dup);
      static unsigned char buf[1 << 20];
      MPI_Bcast(buf, sizeof buf, MPI_BYTE, i % size, dup);
      if (i == 20 && rank == 1) raise(SIGKILL);
      MPI_Comm_free(&dup);
    }
    MPI_Finalize();
    return 0;
  }

  const size_t full_sizes[] = {0, 1, 3, 8, 55, 56, 57, 63, 1000, 4095, 4096, 4097, 8191, 8192, 8193, 65536 + 13,
                               (1u << 20) - 1, 3u * (1u << 20) + 5, 8u << 20};
  const size_t short_sizes[] = {0, 1, 56, 57, 4097, 8193, 65536 + 13, (1u << 20) + 3};
  const int is_short = strcmp(mode, "short") == 0;

  /* world, a duplicate, and one whose ranks run backwards. */
  MPI_Comm dup, reversed;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
  MPI_Comm comms[] = {MPI_COMM_WORLD, dup, reversed};
  const char* names[] = {"world", "dup", "reversed"};

  if (is_short)
    bytes_all_roots(MPI_COMM_WORLD, "world", short_sizes, sizeof short_sizes / sizeof *short_sizes);
  else
    bytes_all_roots(MPI_COMM_WORLD, "world", full_sizes, sizeof full_sizes / sizeof *full_sizes);
  bytes_all_roots(reversed, "reversed", short_sizes, 6);
  datatypes(is_short ? reversed : MPI_COMM_WORLD, is_short ? "reversed" : "world");
  datatypes_beyond_queue(is_short ? reversed : dup, is_short ? "reversed" : "dup");
  progress_while_waiting(MPI_COMM_WORLD, "world");
  from_bottom(reversed, "reversed");
  refused_arguments(MPI_COMM_WORLD);
  interleaved(comms, names, 3, is_short ? 60 : 300);
  burst(dup, "dup", is_short ? 400 : 2000);

  /* The large-count binding. */
  {
    const MPI_Count n = 100003;
    unsigned char* a = malloc((size_t)n);
    unsigned char* b = malloc((size_t)n);
    if (rank == size - 1) fill(a, (size_t)n, 99), memcpy(b, a, (size_t)n);
    else memset(a, 0, (size_t)n), memset(b, 0, (size_t)n);
    MPI_Bcast_c(a, n, MPI_BYTE, size - 1, dup);
    PMPI_Bcast_c(b, n, MPI_BYTE, size - 1, dup);
    if (memcmp(a, b, (size_t)n) != 0) report("MPI_Bcast_c differs from MPICH's", (size_t)n, size - 1, "dup");
    free(a);
    free(b);
  }
  /* A size-1 communicator goes straight to MPICH. */
  {
    int v = rank;
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_SELF);
    if (v != rank) report("MPI_COMM_SELF", sizeof v, 0, "self");
  }

  MPI_Comm_free(&dup);
  MPI_Comm_free(&reversed);
  int all = 0;
  PMPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%s: %d mismatches\n", all ? "FAIL" : "OK", all);
  MPI_Finalize();
  return all ? 1 : 0;
}
