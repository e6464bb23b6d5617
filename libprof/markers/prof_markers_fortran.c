/* Fortran entry points of the interval markers (libprof_markers.a). Fortran
 * cannot declare a weak reference, so this small static library does it: it
 * calls libprof's prof_marker_at when the profiler is loaded and does nothing
 * otherwise, so a Fortran program using the markers runs unchanged without it. */
#include <stddef.h>
#include <string.h>

void prof_marker_at(int id, int begin, const char* file, int line) __attribute__((weak));

/* Called through the prof_markers module (bind(C)); file is a Fortran
 * character of length file_len, not NUL-terminated. */
void prof_fortran_marker(int id, int begin, const char* file, int file_len, int line) {
  if (!prof_marker_at) return;
  char buf[1024];
  size_t n = file_len > 0 ? (size_t)file_len : 0;
  if (n >= sizeof buf) n = sizeof buf - 1;
  if (file && n) memcpy(buf, file, n);
  buf[n] = '\0';
  while (n > 0 && buf[n - 1] == ' ') buf[--n] = '\0';
  prof_marker_at(id, begin, buf, line);
}
