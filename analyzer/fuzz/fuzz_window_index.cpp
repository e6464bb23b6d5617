// libFuzzer target: any bytes as the body of a trace's window index
// (window-index.bin: everything after its magic, version and checksum), with
// a valid header written around them, so that the input reaches the parser
// rather than stopping at the checksum; then an analysis of a window of the
// trace, which reads the index and starts each rank from its checkpoints.
// A file that passes the checksum yet is malformed (a writer's bug, another
// build's layout under the same version) must be refused or used, never
// crash, hang or allocate without bound.
//
// The trace is the directory in PROF_FUZZ_TRACE, with the index prof-analyze
// wrote for it (tests/analyzer/run_fuzz_window_index.sh makes both), copied
// once at start; the seed corpus is that index's body, and its first 12 bytes
// (magic and version, as the writer makes them) head every input's file.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <string>

#include "fuzz_support.h"
#include "prof/analysis/analysis.h"
#include "prof/analysis/report.h"
#include "prof/crc32c.h"

namespace {
// The index file's magic and version, then the CRC-32C of the rest (8 bytes).
constexpr size_t kMagicAndVersionBytes = 12;
char magic_and_version[kMagicAndVersionBytes];

// The window the analysis is asked for, in seconds from the trace's start:
// the middle of the 3 ms trace that run_fuzz_window_index.sh makes, so that
// ranks start from checkpoints (58 of its 172 chunks decoded).
constexpr double kWindowFrom = 0.0015, kWindowTo = 0.0025;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* source = std::getenv("PROF_FUZZ_TRACE");
  if (!source) {
    std::fprintf(stderr, "fuzz_window_index: set PROF_FUZZ_TRACE to a trace directory\n");
    std::exit(2);
  }
  const std::string index = std::string(source) + "/window-index.bin";
  FILE* seed = std::fopen(index.c_str(), "rb");
  if (!seed || std::fread(magic_and_version, 1, kMagicAndVersionBytes, seed) != kMagicAndVersionBytes) {
    std::fprintf(stderr, "fuzz_window_index: no window index in %s\n", source);
    std::exit(2);
  }
  std::fclose(seed);
  prof::fuzz::make_trace_dir("prof-fuzz-index");
  const std::string& trace_dir = prof::fuzz::trace_dir();
  for (const auto& entry : std::filesystem::directory_iterator(source))
    if (entry.path().filename().string().rfind("rank-", 0) == 0)
      std::filesystem::copy_file(entry.path(), std::filesystem::path(trace_dir) / entry.path().filename());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& trace_dir = prof::fuzz::trace_dir();
  const std::string path = trace_dir + "/window-index.bin";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(magic_and_version, 1, kMagicAndVersionBytes, f);
  const uint64_t sum = prof::format::crc32c(data, size);
  std::fwrite(&sum, sizeof sum, 1, f);
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);

  prof::analysis::Options opt;
  opt.threads = 1;
  opt.window_from_s = kWindowFrom;
  opt.window_to_s = kWindowTo;
  opt.write_window_index = false;  // a refused file is rebuilt in memory, not overwritten
  const prof::analysis::Analysis a = prof::analysis::analyze(trace_dir, opt);
  // (How the index served the window: "used", or "rebuilt (why)": to see
  // what an input reaches, run the fuzzer on it alone with this set.)
  if (std::getenv("PROF_FUZZ_SHOW_INDEX")) std::fprintf(stderr, "index %s\n", a.stats.window_index.c_str());
  prof::fuzz::NullBuf nb;
  std::ostream null(&nb);
  prof::analysis::write_text_report(a, null, prof::analysis::TextOptions{});
  return 0;
}
