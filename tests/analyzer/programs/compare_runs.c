/* One small program run twice for `prof-analyze --compare` (2 ranks):
 *   interval 1  broadcasts (PROF_BCAST picks whose)
 *   interval 2  rank 0 sleeps COMPARE_SLOW_MS (default 0) before a barrier:
 *               rank 1 waits that long, a planted slowdown of its lost time
 *   interval 3  only when COMPARE_EXTRA=1: an interval one run lacks
 * Rank 0 writes to COMPARE_FACTS (when set) what the trace's `run` record must
 * say, found without the profiler: the first line of the MPI library's
 * version string, and whether libucp is mapped in the process. */
#include <mpi.h>
#include <prof/markers.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void facts(const char* path) {
  FILE* out = fopen(path, "w");
  if (!out) return;
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  version[strcspn(version, "\n")] = '\0';
  fprintf(out, "library_line=%s\n", version);
  int ucp = 0;
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[4096];
  while (maps && fgets(line, sizeof line, maps))
    if (strstr(line, "/libucp.so")) ucp = 1;
  if (maps) fclose(maps);
  fprintf(out, "libucp_mapped=%d\n", ucp);
  fclose(out);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char* facts_path = getenv("COMPARE_FACTS");
  if (rank == 0 && facts_path) facts(facts_path);
  const char* slow = getenv("COMPARE_SLOW_MS");
  const long slow_ms = slow ? atol(slow) : 0;
  const char* extra = getenv("COMPARE_EXTRA");
  /* The ranks' skew from start-up (and rank 0's facts) waits here, outside
   * the intervals compared. */
  MPI_Barrier(MPI_COMM_WORLD);

  static char buffer[4096];
  PROF_INTERVAL_BEGIN(1);
  for (int i = 0; i < 4; ++i) MPI_Bcast(buffer, sizeof buffer, MPI_BYTE, 0, MPI_COMM_WORLD);
  PROF_INTERVAL_END(1);

  PROF_INTERVAL_BEGIN(2);
  if (rank == 0 && slow_ms > 0) {
    struct timespec t = {slow_ms / 1000, (slow_ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  PROF_INTERVAL_END(2);

  if (extra && strcmp(extra, "1") == 0) {
    PROF_INTERVAL_BEGIN(3);
    double x = rank, sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    PROF_INTERVAL_END(3);
  }
  MPI_Finalize();
  return 0;
}
