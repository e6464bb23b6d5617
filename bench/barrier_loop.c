/* A plain barrier-loop timer of collectives, the way OSU and IMB measure them,
 * to compare with prof-bench (bench/compare_collectives.sh):
 *   for each iteration: MPI_Barrier; t0 = MPI_Wtime(); op; t1 = MPI_Wtime()
 * Each rank averages its (t1 - t0); the result is the average of those over
 * ranks (OSU's "Avg Latency") and their maximum (IMB's t_max).
 *
 *   mpiexec -n P barrier_loop --op bcast --sizes 8,1024 [--iters N] [--warmup N]
 *                             [--root R] [--inject-delay RANK:SECONDS]
 * prints CSV: op,procs,bytes,iters,avg_s,max_s
 * --inject-delay makes RANK wait SECONDS inside the timed region, as
 * prof-bench's test hook of the same name does. */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage_error(const char *option, const char *value, const char *expected) {
  fprintf(stderr, "barrier_loop: error: %s '%s': expected %s\n", option, value ? value : "", expected);
  exit(2);
}

static void spin_for(double seconds) {
  const double until = MPI_Wtime() + seconds;
  while (MPI_Wtime() < until) sched_yield();
}

static int run_op(const char *op, unsigned char *send, unsigned char *recv, int bytes, int root) {
  if (!strcmp(op, "bcast")) return MPI_Bcast(send, bytes, MPI_BYTE, root, MPI_COMM_WORLD);
  if (!strcmp(op, "allreduce"))
    return MPI_Allreduce(send, recv, bytes, MPI_UNSIGNED_CHAR, MPI_SUM, MPI_COMM_WORLD);
  if (!strcmp(op, "reduce"))
    return MPI_Reduce(send, recv, bytes, MPI_UNSIGNED_CHAR, MPI_SUM, root, MPI_COMM_WORLD);
  if (!strcmp(op, "gather"))
    return MPI_Gather(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, root, MPI_COMM_WORLD);
  if (!strcmp(op, "alltoall"))
    return MPI_Alltoall(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, MPI_COMM_WORLD);
  return MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  const char *op = "bcast", *sizes = "8";
  int iters = 200, warmup = 10, root = 0, delay_rank = -1;
  double delay_s = 0;
  for (int i = 1; i < argc; ++i) {
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--op") && value) {
      op = argv[++i];
      if (strcmp(op, "bcast") && strcmp(op, "allreduce") && strcmp(op, "reduce") && strcmp(op, "gather") &&
          strcmp(op, "alltoall") && strcmp(op, "barrier"))
        usage_error("--op", op, "bcast, allreduce, reduce, gather, alltoall or barrier");
    } else if (!strcmp(argv[i], "--sizes") && value) {
      sizes = argv[++i];
    } else if (!strcmp(argv[i], "--iters") && value) {
      iters = atoi(argv[++i]);
      if (iters < 1) usage_error("--iters", value, "a positive count");
    } else if (!strcmp(argv[i], "--warmup") && value) {
      warmup = atoi(argv[++i]);
      if (warmup < 0) usage_error("--warmup", value, "a count");
    } else if (!strcmp(argv[i], "--root") && value) {
      root = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--inject-delay") && value) {
      if (sscanf(argv[++i], "%d:%lf", &delay_rank, &delay_s) != 2 || delay_rank < 0 || delay_s < 0)
        usage_error("--inject-delay", value, "RANK:SECONDS");
    } else {
      usage_error(argv[i], value, "one of --op --sizes --iters --warmup --root --inject-delay with a value");
    }
  }

  MPI_Init(&argc, &argv);
  int rank, procs;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &procs);
  if (root < 0 || root >= procs) {
    if (rank == 0) fprintf(stderr, "barrier_loop: error: --root '%d': expected a rank below %d\n", root, procs);
    MPI_Finalize();
    return 2;
  }
  if (rank == 0) printf("op,procs,bytes,iters,avg_s,max_s\n");

  char *list = strdup(sizes);
  for (char *item = strtok(list, ","); item; item = strtok(NULL, ",")) {
    const int bytes = strcmp(op, "barrier") ? atoi(item) : 0;
    const size_t all = (size_t)bytes * (size_t)procs + 1;
    unsigned char *send = calloc(all, 1), *recv = calloc(all, 1);
    for (int i = 0; i < warmup; ++i) run_op(op, send, recv, bytes, root);
    double total = 0;
    for (int i = 0; i < iters; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      if (rank == delay_rank) spin_for(delay_s);
      run_op(op, send, recv, bytes, root);
      total += MPI_Wtime() - t0;
    }
    const double mine = total / iters;
    double sum = 0, max = 0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%s,%d,%d,%d,%.9g,%.9g\n", op, procs, bytes, iters, sum / procs, max);
    free(send);
    free(recv);
    if (!strcmp(op, "barrier")) break;
  }
  free(list);
  MPI_Finalize();
  return 0;
}
