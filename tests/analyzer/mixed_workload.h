// A workload of the analyzer's tests that exercises the streaming pass's
// hand-overs (streaming_test.cpp, mpi_job_test.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "trace_builder.h"

namespace prof::test {

// Six ranks, 300 iterations: a ring exchange (blocking and Irecv/Wait), an
// exchange with both neighbours completed by one Waitall every other
// iteration, a world Allreduce, a reduction among the even ranks, nested intervals, rank
// clocks offset by whole microseconds, and a rank that stops early. Rank 1
// has a second thread whose calls overlap the first's (and an interval of its
// own now and then); rank 3 keeps a receive from rank 2 outstanding from the
// first iteration to the last, sent in the middle (it holds rank 3's waits
// back across every window in between).
inline void build_mixed_workload(TraceBuilder& b) {
  constexpr int R = 6;
  const uint32_t evens = 0x84000020u;
  for (int r = 0; r < R; ++r) {
    if (r % 2 == 0) {
      trace::CommDef d;
      d.handle = evens;
      d.global_id = 900;
      d.ranks = {0, 2, 4};
      b.w(r).comm(d);
    }
    // Rank r's clock runs r * 7 us behind rank 0's.
    b.w(r).clock_sync({"init", 0, static_cast<double>(r * 7 * kUs), 100});
  }
  auto raw = [](int r, uint64_t global) { return global - static_cast<uint64_t>(r) * 7 * kUs; };
  std::vector<uint64_t> t(R, 1 * kMs);
  for (int r = 0; r < R; ++r) b.init(r, raw(r, 100 * kUs), raw(r, 1 * kMs));
  const int iterations = 300;
  for (int it = 0; it < iterations; ++it) {
    for (int r = 0; r < R; ++r) {
      if (r == 5 && it >= 250) continue;  // rank 5 is cut short
      const int right = (r + 1) % R, left = (r + R - 1) % R;
      uint64_t& now = t[static_cast<size_t>(r)];
      now += (1 + (it * 7 + r * 3) % 5) * 10 * kUs;
      b.begin(r, raw(r, now), 1, 1);
      const uint32_t rq = 0xAC000000u + static_cast<uint32_t>(it % 3);
      b.irecv(r, raw(r, now + 1 * kUs), raw(r, now + 2 * kUs), left, 3, rq);
      b.send(r, raw(r, now + 3 * kUs), raw(r, now + 5 * kUs), right, 3);
      b.wait(r, Wait, raw(r, now + 6 * kUs), raw(r, now + (20 + (it + r) % 7) * kUs),
             {TraceBuilder::done(rq, left, 3, 8)});
      b.begin(r, raw(r, now + 30 * kUs), 2, 2);
      b.collective(r, Allreduce, raw(r, now + (31 + r) * kUs), raw(r, now + 50 * kUs));
      if (r % 2 == 0)
        b.collective(r, Bcast, raw(r, now + (51 + r) * kUs), raw(r, now + 60 * kUs), evens);
      b.end(r, raw(r, now + 70 * kUs), 2, 2);
      if (it % 2 == 0) {
        // Both neighbours, one Waitall: its two receives' waits start at
        // its enter, and their sends reach the rank from two other ranks.
        const uint32_t from_left = 0xAD000000u + 2 * static_cast<uint32_t>(it % 3), from_right = from_left + 1;
        b.irecv(r, raw(r, now + 71 * kUs), raw(r, now + 72 * kUs), left, 5, from_left);
        b.irecv(r, raw(r, now + 72 * kUs), raw(r, now + 73 * kUs), right, 6, from_right);
        const uint64_t late = static_cast<uint64_t>(r % 3) * kUs;
        b.send(r, raw(r, now + 73 * kUs + late), raw(r, now + 74 * kUs + late), right, 5);
        b.send(r, raw(r, now + 76 * kUs), raw(r, now + 77 * kUs), left, 6);
        b.wait(r, Waitall, raw(r, now + 77 * kUs), raw(r, now + 79 * kUs),
               {TraceBuilder::done(from_left, left, 5, 8), TraceBuilder::done(from_right, right, 6, 8)});
      }
      b.end(r, raw(r, now + 80 * kUs), 1, 1);
      if (r == 1) {
        b.thread(r, 1);
        if (it % 4 == 0) b.begin(r, raw(r, now + 35 * kUs), 3, 3);
        b.other(r, CommRank, raw(r, now + 40 * kUs), raw(r, now + 55 * kUs));
        if (it % 4 == 0) b.end(r, raw(r, now + 90 * kUs), 3, 3);
        b.thread(r, 0);
      }
      if (r == 3 && it == 0) b.irecv(r, raw(r, now + 85 * kUs), raw(r, now + 86 * kUs), 2, 99, 0xAC0000FFu);
      if (r == 3 && it == iterations - 1)
        b.wait(r, Wait, raw(r, now + 85 * kUs), raw(r, now + 95 * kUs), {TraceBuilder::done(0xAC0000FFu, 2, 99, 8)});
      if (r == 2 && it == iterations / 2) b.send(r, raw(r, now + 85 * kUs), raw(r, now + 86 * kUs), 3, 99);
      now += 100 * kUs;
    }
  }
  for (int r = 0; r < R; ++r) {
    if (r == 5) {
      b.w(r).close_without_sealing();
      continue;
    }
    b.finalize(r, raw(r, t[static_cast<size_t>(r)] + 1 * kMs), raw(r, t[static_cast<size_t>(r)] + 2 * kMs));
    b.close(r);
  }
}

}  // namespace prof::test
