/* What reading a file's pages from the page cache costs after they lay idle
 * for a while (docs/performance.md, "The page cache's state"). For each
 * pause: the file is read through once (every page touched), left idle for
 * the pause, then timed in one of four ways, each after its own read-through
 * and pause:
 *   - "headers": 32 bytes a MiB, as opening a trace reads its chunk headers
 *     (one page a chunk);
 *   - "chunks": the whole file in 1 MiB preads, as the analysis reads its
 *     chunks;
 *   - "mapped": the file's pages mapped into the process without reading
 *     their bytes (MADV_POPULATE_READ), then the chunks' preads;
 *   - "touched": a byte a page read through a mapping, then the chunks'
 *     preads.
 * Where idle cached pages cost nothing more they stay flat; in a VM whose
 * host reclaims or moves its idle memory they grow with the pause, and the
 * last two tell whether the cost is the guest's mapping of the pages or the
 * first touch of their bytes.
 * Usage: idle_page_cost FILE [PAUSE_S ...]   (default pauses 0 1 2 5 10 20) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 uapi value */
#endif

enum { kChunk = 1 << 20 };

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void read_through(int fd, size_t size, char* buf) {
  for (size_t off = 0; off < size; off += kChunk)
    if (pread(fd, buf, kChunk, (off_t)off) < 0) perror("pread");
}

static void pause_for(double seconds) {
  struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&t, NULL);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE [PAUSE_S ...]\n", argv[0]);
    return 2;
  }
  const int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < kChunk) {
    fprintf(stderr, "%s: cannot read, or smaller than 1 MiB\n", argv[1]);
    return 2;
  }
  char* buf = aligned_alloc(4096, kChunk);
  if (!buf) return 2;
  for (int i = 0; i < kChunk; i += 4096) buf[i] = 1;  // (the buffer's own faults, before any timing)
  static const double kDefault[] = {0, 1, 2, 5, 10, 20};
  const int pauses = argc > 2 ? argc - 2 : (int)(sizeof kDefault / sizeof kDefault[0]);
  const size_t size = (size_t)st.st_size;
  const long chunks = (long)(size / kChunk);
  const double per_gib = (double)(1 << 30) / (double)size;
  printf("%s: %ld MiB; ms are a GiB's\n%8s %12s %10s %22s %22s\n", argv[1], chunks, "pause s", "header us", "chunks ms",
         "mapped ms + chunks ms", "touched ms + chunks ms");
  for (int p = 0; p < pauses; ++p) {
    const double pause = argc > 2 ? atof(argv[p + 2]) : kDefault[p];
    char header[32];
    read_through(fd, size, buf);
    pause_for(pause);
    double t = now_s();
    for (long k = 0; k < chunks; ++k)
      if (pread(fd, header, sizeof header, (off_t)k * kChunk + 8) < 0) perror("pread");
    const double headers_us = (now_s() - t) / (double)chunks * 1e6;
    read_through(fd, size, buf);
    pause_for(pause);
    t = now_s();
    read_through(fd, size, buf);
    const double chunks_ms = (now_s() - t) * 1e3 * per_gib;
    double first_ms[2], then_ms[2];
    for (int touch = 0; touch < 2; ++touch) {
      char* map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
      if (map == MAP_FAILED) {
        perror("mmap");
        return 1;
      }
      read_through(fd, size, buf);
      pause_for(pause);
      t = now_s();
      if (touch) {
        volatile char sink = 0;
        for (size_t at = 0; at < size; at += 4096) sink += map[at];
      } else if (madvise(map, size, MADV_POPULATE_READ) != 0) {
        perror("madvise(MADV_POPULATE_READ)");
      }
      const double mid = now_s();
      read_through(fd, size, buf);
      first_ms[touch] = (mid - t) * 1e3 * per_gib;
      then_ms[touch] = (now_s() - mid) * 1e3 * per_gib;
      munmap(map, size);
    }
    printf("%8.1f %12.1f %10.1f %11.1f + %8.1f %11.1f + %8.1f\n", pause, headers_us, chunks_ms, first_ms[0], then_ms[0],
           first_ms[1], then_ms[1]);
    fflush(stdout);
  }
  free(buf);
  close(fd);
  return 0;
}
