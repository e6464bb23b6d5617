// cache_latency: how long a load that misses the core's own caches takes,
// sampled over time. A chain of dependent loads walks a random cycle through
// a buffer larger than a core's L2 and smaller than the shared L3 (4 MiB by
// default), so each load is a shared-cache hit while the host leaves that
// cache alone, and a memory access where other tenants of the host evict it.
// On a shared host that state comes and goes in spells of seconds, and the
// analysis's speed per event with it (docs/performance.md, "Against the
// targets"); core_clock sees none of it (its chains touch no memory). The
// benchmarks that keep their traces print its summary beside the core's
// clock (bench/made_once.sh).
//
//   cache_latency [KIB] [SECONDS] [--series]
// KIB: the buffer (default 4096); SECONDS: how long to sample (default 1),
// in samples of about 50 ms. Prints the median, the 90th percentile and the
// largest sample, in ns a load, and how many samples took over twice the
// median; --series prints every sample first, one a line (seconds since the
// start, ns a load).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// A line a node: each load brings a line of its own.
struct node {
  struct node* next;
  char pad[64 - sizeof(struct node*)];
};

int main(int argc, char** argv) {
  size_t kib = 4096;
  double seconds = 1.0;
  int series = 0, positional = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--series") == 0) {
      series = 1;
    } else if (positional == 0) {
      kib = strtoull(argv[i], NULL, 10);
      ++positional;
    } else if (positional == 1) {
      seconds = strtod(argv[i], NULL);
      ++positional;
    } else {
      fprintf(stderr, "cache_latency: usage: cache_latency [KIB] [SECONDS] [--series]\n");
      return 2;
    }
  }
  const size_t n = kib * 1024 / sizeof(struct node);
  if (n < 2 || !(seconds > 0) || seconds > 3600) {
    fprintf(stderr, "cache_latency: KIB must be at least 1 and SECONDS in (0, 3600]\n");
    return 2;
  }
  struct node* nodes = aligned_alloc(64, n * sizeof(struct node));
  size_t* order = malloc(n * sizeof(size_t));
  if (!nodes || !order) {
    fprintf(stderr, "cache_latency: out of memory for %zu KiB\n", kib);
    return 2;
  }
  // A random cycle through every node (Sattolo's shuffle), so no prefetcher
  // can guess the next line.
  for (size_t i = 0; i < n; ++i) order[i] = i;
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  for (size_t i = n - 1; i > 0; --i) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    const size_t j = (size_t)(seed % i);
    const size_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (size_t i = 0; i < n; ++i) nodes[order[i]].next = &nodes[order[(i + 1) % n]];
  free(order);

  // Loads a sample: about 50 ms at 20 ns a load, fewer where they are slower.
  const long steps = 2500000;
  const size_t most = (size_t)(seconds / 0.001) + 1;
  double* ns = malloc(most * sizeof(double));
  if (!ns) return 2;
  struct node* p = nodes;
  for (size_t i = 0; i < n; ++i) p = p->next;  // (every line touched once first)
  size_t samples = 0;
  const double start = now_s();
  double t0 = start;
  while (samples < most) {
    for (long i = 0; i < steps; ++i) p = p->next;
    const double t1 = now_s();
    ns[samples++] = (t1 - t0) * 1e9 / (double)steps;
    if (series) printf("%.3f %.2f\n", t1 - start, ns[samples - 1]);
    t0 = t1;
    if (t1 - start >= seconds) break;
  }
  double* sorted = malloc(samples * sizeof(double));
  if (!sorted) return 2;
  memcpy(sorted, ns, samples * sizeof(double));
  qsort(sorted, samples, sizeof(double), by_value);
  const double median = sorted[samples / 2];
  size_t slow = 0;
  for (size_t i = 0; i < samples; ++i) slow += ns[i] > 2 * median;
  printf("%zu KiB: median %.1f ns a load, p90 %.1f, max %.1f, %zu of %zu samples over twice the median\n", kib,
         median, sorted[samples * 9 / 10], sorted[samples - 1], slow, samples);
  free(sorted);
  free(ns);
  free(nodes);
  // (p is used, so the chain is not optimized away.)
  return p == NULL ? 3 : 0;
}
