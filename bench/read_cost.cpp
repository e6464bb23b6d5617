// The reader alone (docs/performance.md, analysis speed): every event of a
// trace directory decoded in batches (MergedCursor::next_batch), each rank in
// turn on one thread, as the analysis's workers read them. Prints the events,
// a checksum of what was decoded (two builds must agree) and the time; run it
// under `valgrind --tool=callgrind` for instructions per event.
// Usage: read_cost TRACE_DIR
#include <chrono>
#include <cstdio>

#include "prof/trace_reader.h"

using namespace prof::trace;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TRACE_DIR\n", argv[0]);
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  TraceDir dir = TraceDir::open(argv[1]);
  if (!dir.errors.empty() || dir.ranks.empty()) {
    std::fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  uint64_t events = 0, sum = 0;
  for (const auto& rank : dir.ranks) {
    auto cursor = rank->events();
    for (auto batch = cursor.next_batch(); !batch.empty(); batch = cursor.next_batch()) {
      events += batch.size();
      for (const Event& e : batch) {
        sum = sum * 31 + e.enter + e.leave + e.func + static_cast<uint64_t>(e.kind) + e.flags +
              e.call_site + static_cast<uint32_t>(e.peer) + static_cast<uint32_t>(e.tag) + e.comm + e.bytes +
              e.request + e.interval_id + e.marker_begin + e.completions.size() + e.requests.size();
        for (const Completion& c : e.completions) sum += c.request + c.bytes + static_cast<uint32_t>(c.source);
      }
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("events %llu checksum %016llx ms %.1f\n", static_cast<unsigned long long>(events),
              static_cast<unsigned long long>(sum), ms);
  return 0;
}
