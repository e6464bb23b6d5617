/* What it costs to make a trace file's pages writable in a shared mapping,
 * per 24-byte record (a point-to-point call's fixed record), as the shim
 * does for each chunk: posix_fallocate, mmap MAP_SHARED, MADV_POPULATE_WRITE
 * (the write faults, taken ahead of the records), the records' stores,
 * munmap. The file lies in DIR (default /tmp): the write faults' cost is the
 * file system's (page_mkwrite), e.g. ext4 against tmpfs (/dev/shm).
 * Then the alternative: the records stored into one chunk of the file mapped
 * and faulted once, and each full chunk copied to its place with pwrite (its
 * pages stay writable, so no write fault per chunk).
 * docs/design/shim-hot-path.md, "Home chunks".
 * Usage: file_page_cost [DIR] [CHUNKS]   (chunks of 1 MiB, default 64) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 uapi value */
#endif

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "/tmp";
  const int chunks = argc > 2 ? atoi(argv[2]) : 64;
  const size_t chunk_bytes = 1u << 20, record_bytes = 24;
  char path[4096];
  snprintf(path, sizeof path, "%s/file_page_cost.%d", dir, (int)getpid());
  const int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 || chunks <= 0) {
    perror(path);
    return 2;
  }
  unlink(path); /* gone at exit */
  double allocate = 0, map = 0, populate = 0, store = 0, unmap = 0;
  for (int c = 0; c < chunks; ++c) {
    const off_t at = (off_t)c * (off_t)chunk_bytes;
    const double t0 = now_ns();
    if (posix_fallocate(fd, at, (off_t)chunk_bytes) != 0) {
      fprintf(stderr, "file_page_cost: posix_fallocate failed in %s\n", dir);
      return 2;
    }
    const double t1 = now_ns();
    char* p = mmap(NULL, chunk_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, at);
    if (p == MAP_FAILED) {
      perror("mmap");
      return 2;
    }
    const double t2 = now_ns();
    if (madvise(p, chunk_bytes, MADV_POPULATE_WRITE) != 0) perror("madvise (faults taken by the stores)");
    const double t3 = now_ns();
    for (size_t i = 0; i + record_bytes <= chunk_bytes; i += record_bytes)
      *(volatile uint64_t*)(p + i) = i;
    const double t4 = now_ns();
    munmap(p, chunk_bytes);
    const double t5 = now_ns();
    allocate += t1 - t0;
    map += t2 - t1;
    populate += t3 - t2;
    store += t4 - t3;
    unmap += t5 - t4;
  }
  const double records = (double)chunks * (double)(chunk_bytes / record_bytes);

  /* One chunk mapped and faulted once, copied out per chunk. */
  const off_t tail = (off_t)chunks * (off_t)chunk_bytes;
  double ring_store = 0, copy = 0;
  char* ring = mmap(NULL, chunk_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (ring == MAP_FAILED) {
    perror("mmap");
    return 2;
  }
  madvise(ring, chunk_bytes, MADV_POPULATE_WRITE);
  for (int c = 0; c < chunks; ++c) {
    const double t0 = now_ns();
    for (size_t i = 0; i + record_bytes <= chunk_bytes; i += record_bytes)
      *(volatile uint64_t*)(ring + i) = i;
    const double t1 = now_ns();
    if (pwrite(fd, ring, chunk_bytes, tail + (off_t)c * (off_t)chunk_bytes) != (ssize_t)chunk_bytes) {
      perror("pwrite");
      return 2;
    }
    ring_store += t1 - t0;
    copy += now_ns() - t1;
  }
  munmap(ring, chunk_bytes);
  close(fd);
  printf("%s: ns per 24-byte record: fallocate %.2f, mmap %.2f, populate (write faults) %.2f, "
         "stores %.2f, munmap %.2f; total %.2f\n",
         dir, allocate / records, map / records, populate / records, store / records, unmap / records,
         (allocate + map + populate + store + unmap) / records);
  printf("%s: ns per 24-byte record, one chunk mapped once and copied out: stores %.2f, pwrite %.2f; total %.2f\n",
         dir, ring_store / records, copy / records, (ring_store + copy) / records);
  return 0;
}
