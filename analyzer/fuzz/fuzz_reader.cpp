// libFuzzer target: any bytes as a rank file, through the reader (index, every
// stream's cursor, the merged cursor) and the whole analysis. The reader and
// the analyzer must never crash, hang or allocate without bound on them.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <streambuf>
#include <string>

#include "prof/analysis/analysis.h"
#include "prof/analysis/report.h"
#include "prof/trace_reader.h"

namespace {
std::string trace_dir;

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
