// libFuzzer target: any bytes as a rank file, through the reader (index, every
// stream's cursor, the merged cursor) and the whole analysis. The reader and
// the analyzer must never crash, hang or allocate without bound on them.
// And an oracle: the merged cursor's batches (which copy repeats from
// templates and decode markers and bare calls within a run) give exactly the
// events and statistics of its next(), which decodes every record in full;
// any difference aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>

#include "fuzz_support.h"
#include "prof/analysis/analysis.h"
#include "prof/analysis/report.h"
#include "prof/event_difference.h"
#include "prof/trace_reader.h"

namespace {
using prof::trace::Event;

// The file through next() and through next_batch(), each on a trace of its
// own (statistics are per trace), compared event by event as the batches come
// (each cursor's lists hold until its next call).
void batches_equal_next(const std::string& path) {
  std::string err;
  auto by_next = prof::trace::RankTrace::open(path, &err);
  auto by_batch = prof::trace::RankTrace::open(path, &err);
  if (!by_next || !by_batch) return;
  auto one = by_next->events();
  auto batches = by_batch->events();
  Event e;
  bool more = one.next(e);
  for (auto batch = batches.next_batch(); !batch.empty(); batch = batches.next_batch())
    for (const Event& b : batch) {
      if (!more) {
        std::fprintf(stderr, "fuzz_reader: the batches give more events than next()\n");
        std::abort();
      }
      if (const std::string diff = prof::trace::event_difference(e, b); !diff.empty()) {
        std::fprintf(stderr, "fuzz_reader: a batch's event differs from next()'s: %s\n", diff.c_str());
        std::abort();
      }
      more = one.next(e);
    }
  if (more) {
    std::fprintf(stderr, "fuzz_reader: next() gives more events than the batches\n");
    std::abort();
  }
  if (!(by_next->stats() == by_batch->stats())) {
    std::fprintf(stderr, "fuzz_reader: the batches' statistics differ from next()'s\n");
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  prof::fuzz::make_trace_dir("prof-fuzz");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& trace_dir = prof::fuzz::trace_dir();
  const std::string path = trace_dir + "/rank-00000.prof";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);

  std::string err;
  if (auto rank_trace = prof::trace::RankTrace::open(path, &err)) {
    prof::trace::Event e;
    for (size_t s = 0; s < rank_trace->stream_count(); ++s) {
      auto c = rank_trace->stream(s);
      while (c.next(e)) {
      }
    }
    (void)rank_trace->to_global_ns(e.enter);
  }
  batches_equal_next(path);
  prof::analysis::Options opt;
  opt.threads = 1;
  const prof::analysis::Analysis a = prof::analysis::analyze(trace_dir, opt);
  prof::fuzz::NullBuf nb;
  std::ostream null(&nb);
  prof::analysis::TextOptions t;
  t.functions = true;
  prof::analysis::write_text_report(a, null, t);
  return 0;
}
