// What writing the timeline's spill file costs the kernel: 740 MiB (the
// spill of a 10^8-event trace) written to an unlinked file in $TMPDIR (or
// /tmp) from a 4 MiB stage that is rewritten before each write, as the build
// packs blocks into its SpillStage. Compare the system time of the modes
// under /usr/bin/time (docs/design/timeline.md, the spill file).
// Usage: build/bench/spill_write_cost RESERVE PIECE_KIB
//   RESERVE 1: the file's blocks reserved 64 MiB ahead (fallocate KEEP_SIZE)
//   PIECE_KIB: bytes per pwrite (4096: the whole stage at once)
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 3 || atoi(argv[2]) <= 0 || 4096 % atoi(argv[2]) != 0) {
    fprintf(stderr, "usage: %s RESERVE(0|1) PIECE_KIB (dividing 4096)\n", argv[0]);
    return 2;
  }
  int reserve = atoi(argv[1]);
  const size_t total = (size_t)740 << 20, stage_bytes = (size_t)4 << 20, reserve_step = (size_t)64 << 20;
  const size_t piece = (size_t)atoi(argv[2]) << 10;
  char* stage = malloc(stage_bytes);
  const char* dir = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/spill-write-cost-XXXXXX", dir && *dir ? dir : "/tmp");
  const int fd = mkstemp(path);
  if (!stage || fd < 0) {
    perror("spill_write_cost");
    return 1;
  }
  unlink(path);
  size_t reserved = 0;
  for (size_t at = 0; at < total; at += stage_bytes) {
    memset(stage, (int)(at >> 20), stage_bytes);  // the packing, which writes the stage
    while (reserve && reserved < at + stage_bytes) {
      if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)reserved, (off_t)reserve_step) != 0) reserve = 0;
      reserved += reserve_step;
    }
    for (size_t done = 0; done < stage_bytes; done += piece)
      if (pwrite(fd, stage + done, piece, (off_t)(at + done)) != (ssize_t)piece) {
        perror("pwrite");
        return 1;
      }
  }
  close(fd);
  return 0;
}
