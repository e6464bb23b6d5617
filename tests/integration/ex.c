/* Expectation log (see ex.h). Bookkeeping goes through PMPI_* only. */
#include "ex.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdatomic.h>

static int expect_fd = -1;
static int world_rank = -1, world_size = 0;
static _Thread_local int t_thread = 0;
static atomic_int check_failures;

/* One completion line under construction per thread. */
static _Thread_local char t_comp[8192];
static _Thread_local size_t t_comp_len;

static void put_line(const char* s, size_t n) {
  if (expect_fd < 0) {
    fprintf(stderr, "ex: log not open (ex_open not called?)\n");
    abort();
  }
  char buf[8300];
  size_t len = 0;
  if (t_thread != 0 && s[0] != '!') len = (size_t)snprintf(buf, sizeof buf, "@%d ", t_thread);
  if (len + n + 1 > sizeof buf) n = sizeof buf - len - 1;
  memcpy(buf + len, s, n);
  len += n;
  buf[len++] = '\n';
  const char* p = buf;
  while (len > 0) {
    const ssize_t w = write(expect_fd, p, len);
    if (w <= 0) {
      perror("ex: write");
      abort();
    }
    p += w;
    len -= (size_t)w;
  }
}

void ex_line(const char* fmt, ...) {
  char buf[8192];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
  put_line(buf, (size_t)n);
}

static void group_list(MPI_Group g, char* out, size_t cap) {
  int n = 0;
  PMPI_Group_size(g, &n);
  MPI_Group world;
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  int* in = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  int* wr = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  for (int i = 0; i < n; ++i) in[i] = i;
  if (n > 0) PMPI_Group_translate_ranks(g, n, in, world, wr);
  PMPI_Group_free(&world);
  size_t len = 0;
  out[0] = '\0';
  for (int i = 0; i < n && len < cap; ++i)
    len += (size_t)snprintf(out + len, cap - len, "%s%d", i ? "," : "", wr[i]);
  free(in);
  free(wr);
}

void ex_open(void) {
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
  const char* dir = getenv("PROF_EXPECT_DIR");
  if (!dir || !*dir) dir = ".";
  char path[4096];
  snprintf(path, sizeof path, "%s/expect-rank-%05d.txt", dir, world_rank);
  expect_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (expect_fd < 0) {
    perror(path);
    abort();
  }
  char list[4096];
  MPI_Group g;
  PMPI_Comm_group(MPI_COMM_WORLD, &g);
  group_list(g, list, sizeof list);
  PMPI_Group_free(&g);
  ex_line("!comm 0x%x members=%s", (unsigned)MPI_COMM_WORLD, list);
  PMPI_Comm_group(MPI_COMM_SELF, &g);
  group_list(g, list, sizeof list);
  PMPI_Group_free(&g);
  ex_line("!comm 0x%x members=%s", (unsigned)MPI_COMM_SELF, list);
}

int ex_rank(void) { return world_rank; }
int ex_size(void) { return world_size; }
void ex_set_thread(int t) { t_thread = t; }

int ex_world(MPI_Comm comm, int rank) {
  if (rank < 0) return rank;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  MPI_Group g, world;
  if (inter) PMPI_Comm_remote_group(comm, &g);
  else PMPI_Comm_group(comm, &g);
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  int out = -1;
  PMPI_Group_translate_ranks(g, 1, &rank, world, &out);
  PMPI_Group_free(&g);
  PMPI_Group_free(&world);
  return out;
}

static const char* flag_text(int flags) {
  switch (flags & 3) {
    case EX_ANY_SOURCE: return " any_source=1";
    case EX_ANY_TAG: return " any_tag=1";
    case EX_ANY_SOURCE | EX_ANY_TAG: return " any_source=1 any_tag=1";
  }
  return "";
}

void ex_other(const char* fn) { ex_line("%s", fn); }

void ex_p2p(const char* fn, int peer, int tag, MPI_Comm comm, uint64_t bytes, int flags) {
  ex_line("%s peer=%d tag=%d comm=0x%x bytes=%llu%s", fn, ex_world(comm, peer), tag,
          (unsigned)comm, (unsigned long long)bytes, flag_text(flags));
}

void ex_p2p_req(const char* fn, int peer, int tag, MPI_Comm comm, uint64_t bytes, int flags,
                MPI_Request req) {
  ex_line("%s peer=%d tag=%d comm=0x%x bytes=%llu req=0x%x%s", fn, ex_world(comm, peer), tag,
          (unsigned)comm, (unsigned long long)bytes, (unsigned)req, flag_text(flags));
}

void ex_sendrecv(const char* fn, int dest, int stag, uint64_t sbytes, int src, int rtag,
                 uint64_t rbytes, MPI_Comm comm, int flags) {
  ex_line("%s peer=%d tag=%d bytes=%llu rpeer=%d rtag=%d rbytes=%llu comm=0x%x%s", fn,
          ex_world(comm, dest), stag, (unsigned long long)sbytes, ex_world(comm, src), rtag,
          (unsigned long long)rbytes, (unsigned)comm, flag_text(flags));
}

void ex_coll(const char* fn, MPI_Comm comm, int root, uint64_t bytes) {
  ex_line("%s comm=0x%x root=%d bytes=%llu", fn, (unsigned)comm, root,
          (unsigned long long)bytes);
}

void ex_icoll(const char* fn, MPI_Comm comm, int root, uint64_t bytes, MPI_Request req) {
  ex_line("%s comm=0x%x root=%d bytes=%llu req=0x%x", fn, (unsigned)comm, root,
          (unsigned long long)bytes, (unsigned)req);
}

/* "members=... inter=N remote=..." of a communicator's groups, as trace_check
 * prints a definition. */
static void membership(MPI_Comm c, char* out, size_t n) {
  int inter = 0;
  PMPI_Comm_test_inter(c, &inter);
  MPI_Group g;
  char members[4096], remote[4096] = "-";
  PMPI_Comm_group(c, &g);
  group_list(g, members, sizeof members);
  PMPI_Group_free(&g);
  if (inter) {
    PMPI_Comm_remote_group(c, &g);
    group_list(g, remote, sizeof remote);
    PMPI_Group_free(&g);
  }
  snprintf(out, n, "members=%s inter=%d remote=%s", members, inter, remote);
}

void ex_comm_create(const char* fn, MPI_Comm parent, MPI_Comm newcomm, const char* key) {
  if (newcomm == MPI_COMM_NULL) {
    ex_line("%s comm=0x%x new=0x%x", fn, (unsigned)parent, (unsigned)newcomm);
    return;
  }
  char m[8300];
  membership(newcomm, m, sizeof m);
  ex_line("%s comm=0x%x new=0x%x %s key=%s", fn, (unsigned)parent, (unsigned)newcomm, m, key);
}

void ex_comm_idup(const char* fn, MPI_Comm parent, MPI_Comm newcomm, MPI_Request req,
                  const char* key) {
  /* The new communicator may not be asked anything before the request
   * completes: it has the parent's groups. */
  char m[8300];
  membership(parent, m, sizeof m);
  ex_line("%s comm=0x%x root=-1 bytes=0 req=0x%x new=0x%x %s key=%s", fn, (unsigned)parent,
          (unsigned)req, (unsigned)newcomm, m, key);
}

void ex_marker(int id, int begin, const char* label) {
  const char* base = strrchr(label, '/');
  ex_line("MARKER id=%d begin=%d site=exe#%s", id, begin ? 1 : 0, base ? base + 1 : label);
}

int ex_marker_tag(int id, int begin) {
  return (int)(0xAA000000u | ((unsigned)(id & 0xFFFF) << 8) | (begin ? 0xAAu : 0xBBu));
}

void ex_comp_begin(const char* fn) {
  t_comp_len = (size_t)snprintf(t_comp, sizeof t_comp, "%s c=", fn);
}

void ex_comp_add(MPI_Request req, MPI_Comm comm, int src, int tag, long long bytes,
                 int cancelled) {
  char s[32], t[32], b[32];
  if (src == EX_ANY) snprintf(s, sizeof s, "*");
  else snprintf(s, sizeof s, "%d", ex_world(comm, src));
  if (tag == EX_ANY) snprintf(t, sizeof t, "*");
  else snprintf(t, sizeof t, "%d", tag);
  if (bytes < 0) snprintf(b, sizeof b, "*");
  else snprintf(b, sizeof b, "%lld", bytes);
  const int first = t_comp[t_comp_len - 1] == '=';
  t_comp_len += (size_t)snprintf(t_comp + t_comp_len, sizeof t_comp - t_comp_len,
                                 "%s0x%x/%s/%s/%s/%d", first ? "" : ",", (unsigned)req, s, t, b,
                                 cancelled ? 1 : 0);
}

void ex_comp_end(void) {
  if (t_comp[t_comp_len - 1] == '=') t_comp[t_comp_len++] = '-';  /* no entries */
  put_line(t_comp, t_comp_len);
}

void ex_reqop(const char* fn, int n, const MPI_Request* reqs) {
  char buf[8192];
  size_t len = (size_t)snprintf(buf, sizeof buf, "%s r=", fn);
  for (int i = 0; i < n && len < sizeof buf; ++i)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s0x%x", i ? "," : "",
                            (unsigned)reqs[i]);
  if (n <= 0) buf[len++] = '-';
  put_line(buf, len);
}

void ex_fail(const char* file, int line, const char* cond, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s:%d: rank %d: MPI result check failed: %s: %s\n", file, line, world_rank, cond,
          buf);
  fflush(stderr);
  atomic_fetch_add(&check_failures, 1);
}

int ex_failures(void) { return atomic_load(&check_failures); }

void ex_init(int* argc, char*** argv, int* rank, int* size) {
  MPI_Init(argc, argv);
  ex_open();
  ex_other("MPI_Init");
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  ex_other("MPI_Comm_rank");
  MPI_Comm_size(MPI_COMM_WORLD, size);
  ex_other("MPI_Comm_size");
}

int ex_finalize(const char* program, int rank) {
  MPI_Finalize();
  ex_other("MPI_Finalize");
  if (ex_failures()) {
    fprintf(stderr, "%s: rank %d: %d wrong MPI result(s)\n", program, rank, ex_failures());
    return 1;
  }
  return 0;
}
