// Checks a shim trace (shim_snapshots.c): every events chunk opens with a
// snapshot, and a seek to any chunk's first event, or to random times, gives
// the open intervals a scan from the stream's start gives, from the snapshot;
// local time zero is still the first event.
// Usage: shim_snapshots_check TRACE_DIR   (exit 0: all good)
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "prof/trace_reader.h"

using namespace prof;
using namespace prof::trace;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TRACE_DIR\n", argv[0]);
    return 2;
  }
  TraceDir dir = TraceDir::open(argv[1]);
  if (!dir.errors.empty() || dir.ranks.empty()) {
    std::fprintf(stderr, "cannot read %s: %s\n", argv[1],
                 dir.errors.empty() ? "no ranks" : dir.errors[0].c_str());
    return 1;
  }
  int failures = 0;
  auto fail = [&](const std::string& what) {
    if (++failures <= 20) std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  };
  for (const auto& rank : dir.ranks) {
    const std::string name = rank->path();
    if (rank->header().version != format::kFormatVersion)
      fail(name + ": version " + std::to_string(rank->header().version));
    // Local time zero is the first event, not the snapshot before it.
    {
      auto all = rank->events();
      Event first;
      if (!all.next(first) || rank->to_local_ns(first.enter) != 0.0)
        fail(name + ": local time zero is not the first event");
    }
    for (size_t s = 0; s < rank->stream_count(); ++s) {
      // The open intervals before each event, by a scan from the start.
      std::vector<Event> events;
      std::vector<std::vector<OpenInterval>> open_before;
      std::vector<OpenInterval> open;
      auto all = rank->stream(s);
      Event e;
      while (all.next(e)) {
        open_before.push_back(open);
        if (e.kind == FuncKind::Marker)
          format::apply_marker(open, e.marker_begin, e.interval_id, e.callsite, e.enter);
        e.completions = {};
        e.requests = {};
        events.push_back(e);
      }
      const auto chunks = rank->chunks(s);
      size_t nonempty_snapshots = 0;
      auto check = [&](uint64_t t, const std::string& where) {
        size_t first = 0;
        while (first < events.size() && events[first].leave < t) ++first;
        auto cursor = rank->stream_from(s, t);
        if (!cursor.open_intervals_from_snapshot()) fail(where + ": no snapshot used");
        if (cursor.open_intervals() != (first < events.size() ? open_before[first] : open))
          fail(where + ": open intervals differ from a scan");
        Event got;
        const bool any = cursor.next(got);
        if (any != (first < events.size()) || (any && got.enter != events[first].enter))
          fail(where + ": wrong first event");
        return first < events.size() ? open_before[first].size() : open.size();
      };
      for (size_t k = 0; k < chunks.size(); ++k) {
        const std::string where = name + " stream " + std::to_string(s) + " chunk " +
                                  std::to_string(k);
        if (!chunks[k].has_snapshot) fail(where + ": no snapshot");
        if (chunks[k].damaged || !chunks[k].sealed) fail(where + ": damaged or unsealed");
        if (chunks[k].events == 0) continue;
        if (k > 0 && check(chunks[k].first_enter, where) > 0) ++nonempty_snapshots;
      }
      std::mt19937_64 rng(s + 1);
      for (int i = 0; i < 50 && !events.empty(); ++i) {
        const uint64_t lo = events.front().enter, hi = events.back().leave;
        check(lo + rng() % (hi - lo + 1), name + " random time");
      }
      std::printf("%s stream %zu: %zu events, %zu chunks, %zu open with intervals open\n",
                  name.c_str(), s, events.size(), chunks.size(), nonempty_snapshots);
      // Stream 0 of shim_snapshots.c: most chunks open inside intervals 1 and 2.
      if (s == 0 && (chunks.size() < 4 || nonempty_snapshots < chunks.size() / 2))
        fail(name + ": too few chunks opening inside intervals");
    }
  }
  if (failures) std::fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
