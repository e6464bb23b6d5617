/* Interval markers for C and C++.
 *
 *   #include <prof/markers.h>
 *   PROF_INTERVAL_BEGIN(1);   ... code ...   PROF_INTERVAL_END(1);
 *
 * Intervals nest; an id (0..65535) names an interval, e.g. to tell loop phases
 * apart. The macros pass __FILE__ and __LINE__, so no debug info is needed.
 *
 * Without the profiler the program runs unchanged: prof_marker_at is a weak
 * reference that stays null unless libprof.so is loaded (LD_PRELOAD or
 * prof-run), so no MPI call is made and nothing needs linking. With it, the
 * markers cost a function call and one trace record.
 *
 * The raw form of the DVM tradition works too, with no header at all:
 *   MPI_Send(NULL, 0, MPI_BYTE, MPI_PROC_NULL, (int)0xAA0001AA, MPI_COMM_WORLD);  begin 1
 *   MPI_Send(NULL, 0, MPI_BYTE, MPI_PROC_NULL, (int)0xAA0001BB, MPI_COMM_WORLD);  end 1
 * but MPICH rejects such a tag when the profiler is absent.
 */
#ifndef PROF_MARKERS_H
#define PROF_MARKERS_H

#ifdef __cplusplus
extern "C" {
#endif

void prof_marker_at(int id, int begin, const char* file, int line) __attribute__((weak));

static inline void prof_marker_call(int id, int begin, const char* file, int line) {
  if (prof_marker_at) prof_marker_at(id, begin, file, line);
}

#ifdef __cplusplus
}
#endif

#define PROF_INTERVAL_BEGIN(id) prof_marker_call((id), 1, __FILE__, __LINE__)
#define PROF_INTERVAL_END(id) prof_marker_call((id), 0, __FILE__, __LINE__)

#endif /* PROF_MARKERS_H */
