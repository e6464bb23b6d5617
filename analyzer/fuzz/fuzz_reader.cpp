// libFuzzer target: any bytes as a rank file, through the reader (index, every
// stream's cursor, the merged cursor) and the whole analysis. The reader and
// the analyzer must never crash, hang or allocate without bound on them.
// And an oracle: the merged cursor's batches (which copy repeats from
// templates and decode markers and bare calls within a run) give exactly the
// events and statistics of its next(), which decodes every record in full;
// any difference aborts.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

#include "prof/analysis/analysis.h"
#include "prof/analysis/report.h"
#include "prof/trace_reader.h"

namespace {
std::string trace_dir;

using prof::trace::Completion;
using prof::trace::Event;

bool same_completion(const Completion& a, const Completion& b) {
  return a.request == b.request && a.source == b.source && a.tag == b.tag && a.bytes == b.bytes &&
         a.cancelled == b.cancelled;
}

// Every member, the lists by their entries.
bool same_event(const Event& a, const Event& b) {
  if (!(a.enter == b.enter && a.leave == b.leave && a.func == b.func && a.kind == b.kind && a.flags == b.flags &&
        a.call_site_index == b.call_site_index && a.marker_begin == b.marker_begin && a.in_flight == b.in_flight &&
        a.stream == b.stream && a.peer == b.peer && a.tag == b.tag && a.comm == b.comm && a.bytes == b.bytes &&
        a.root == b.root && a.request == b.request && a.recv_peer == b.recv_peer && a.recv_tag == b.recv_tag &&
        a.recv_bytes == b.recv_bytes && a.new_comm == b.new_comm && a.interval_id == b.interval_id &&
        a.callsite == b.callsite && a.call_site == b.call_site && a.site == b.site &&
        a.completions.size() == b.completions.size() && a.requests.size() == b.requests.size()))
    return false;
  for (size_t i = 0; i < a.completions.size(); ++i)
    if (!same_completion(a.completions[i], b.completions[i])) return false;
  for (size_t i = 0; i < a.requests.size(); ++i)
    if (a.requests[i] != b.requests[i]) return false;
  return true;
}

bool same_stats(const prof::trace::ReadStats& a, const prof::trace::ReadStats& b) {
  return a.chunks == b.chunks && a.event_chunks == b.event_chunks && a.unsealed_chunks == b.unsealed_chunks &&
         a.crc_mismatches == b.crc_mismatches && a.bad_chunk_headers == b.bad_chunk_headers &&
         a.truncated_chunks == b.truncated_chunks && a.missing_chunks == b.missing_chunks &&
         a.bad_records == b.bad_records && a.bad_definitions == b.bad_definitions &&
         a.unknown_chunk_types == b.unknown_chunk_types && a.backwards_timestamps == b.backwards_timestamps &&
         a.events == b.events;
}

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
      if (!more || !same_event(e, b)) {
        std::fprintf(stderr, "fuzz_reader: a batch's event differs from next()'s\n");
        std::abort();
      }
      more = one.next(e);
    }
  if (more) {
    std::fprintf(stderr, "fuzz_reader: next() gives more events than the batches\n");
    std::abort();
  }
  if (!same_stats(by_next->stats(), by_batch->stats())) {
    std::fprintf(stderr, "fuzz_reader: the batches' statistics differ from next()'s\n");
    std::abort();
  }
}

void cleanup() {
  std::error_code ec;
  std::filesystem::remove_all(trace_dir, ec);
}

struct NullBuf : std::streambuf {
  int overflow(int c) override { return c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "prof-fuzz-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) std::abort();
  trace_dir = tmpl;
  std::atexit(cleanup);  // libFuzzer ends with exit() on success and on -max_total_time
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
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
  NullBuf nb;
  std::ostream null(&nb);
  prof::analysis::TextOptions t;
  t.functions = true;
  prof::analysis::write_text_report(a, null, t);
  return 0;
}
