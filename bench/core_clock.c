// core_clock: the clock of the core it runs on, in GHz, from chains of
// dependent instructions whose latency is known (a register add: 1 cycle; a
// 64-bit multiply and a CRC-32 step: 3 cycles on x86-64 cores since Intel's
// Sandy Bridge and AMD's Zen). A VM's perf has no cycle counter to read, and
// /proc/cpuinfo gives the nominal clock, not the one the core runs at; with
// an instruction count (callgrind) this turns a CPU time into instructions a
// cycle (bench/instructions_per_cycle.py). The three chains agree where the
// latencies hold; a disagreement says one of them does not on this core.
//
//   core_clock [ITERATIONS]   (default 2*10^9 steps a chain: at 4 GHz 0.5 s of adds, 1.5 s each of the others)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__)
static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// Eight steps an iteration, each depending on the last; the loop's own
// counter runs beside the chain.
#define CHAIN(name, step)                                          \
  static double name(uint64_t steps) {                             \
    uint64_t x = 1, y = 1;                                         \
    const double t0 = now_s();                                     \
    for (uint64_t i = 0; i < steps; i += 8)                        \
      __asm__ volatile(step step step step step step step step     \
                       : "+r"(x)                                   \
                       : "r"(y));                                  \
    return now_s() - t0;                                           \
  }

CHAIN(add_chain, "add %1, %0\n\t")
CHAIN(imul_chain, "imul %1, %0\n\t")
CHAIN(crc_chain, "crc32q %1, %0\n\t")

int main(int argc, char** argv) {
  const uint64_t steps = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000000ull;
  if (steps < 8) {
    fprintf(stderr, "core_clock: ITERATIONS must be at least 8\n");
    return 2;
  }
  const double add_ghz = (double)steps / add_chain(steps) / 1e9;
  const double imul_ghz = 3.0 * (double)steps / imul_chain(steps) / 1e9;
  const double crc_ghz = 3.0 * (double)steps / crc_chain(steps) / 1e9;
  printf("add %.3f GHz, imul %.3f GHz, crc32 %.3f GHz\n", add_ghz, imul_ghz, crc_ghz);
  return 0;
}
#else
int main(void) {
  fprintf(stderr, "core_clock: x86-64 only\n");
  return 2;
}
#endif
