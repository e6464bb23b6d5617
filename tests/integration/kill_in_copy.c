/* Preloaded ahead of the shim by home_copy.sh: kills the process with
 * SIGKILL inside the shim's Nth copy of a home chunk (its pwritev), as a
 * batch system's kill may land. KILL_IN_COPY_AT=N (1-based), on the rank
 * KILL_IN_COPY_RANK names (PMI_RANK; default 0); KILL_IN_COPY_MODE=partial
 * writes the chunk's header and half its payload first, whole writes all of
 * it. Every other pwritev goes through unchanged. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

typedef ssize_t (*pwritev_fn)(int, const struct iovec*, int, off_t);

static ssize_t copy_or_kill(const char* name, int fd, const struct iovec* iov, int n, off_t at) {
  static int copies;
  pwritev_fn real = (pwritev_fn)dlsym(RTLD_NEXT, name);
  const char* kill_at = getenv("KILL_IN_COPY_AT");
  const char* kill_rank = getenv("KILL_IN_COPY_RANK");
  const char* rank = getenv("PMI_RANK");
  const int ours = kill_at && strcmp(rank ? rank : "0", kill_rank ? kill_rank : "0") == 0;
  if (!ours || ++copies != atoi(kill_at)) return real(fd, iov, n, at);
  const char* mode = getenv("KILL_IN_COPY_MODE");
  if (mode && strcmp(mode, "partial") == 0 && n == 2) {
    struct iovec half[2] = {iov[0], {iov[1].iov_base, iov[1].iov_len / 2}};
    real(fd, half, 2, at);
  } else {
    real(fd, iov, n, at);
  }
  kill(getpid(), SIGKILL);
  return -1;
}

ssize_t pwritev(int fd, const struct iovec* iov, int n, off_t at) {
  return copy_or_kill("pwritev", fd, iov, n, at);
}
ssize_t pwritev64(int fd, const struct iovec* iov, int n, off_t at) {
  return copy_or_kill("pwritev64", fd, iov, n, at);
}
