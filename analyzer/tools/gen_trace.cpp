// prof-gen-trace: writes a synthetic trace of about N events over R ranks with
// TraceWriter, for the analyzer's benchmark (and the fuzzer's seed corpus).
//
// The program it pretends to be is a halo exchange in a loop, on a ring:
//   for each iteration:                          (10 events per rank)
//     begin interval 1                           bench.c:10
//       Irecv(left) Isend(right) Waitall         the wait ends after the left
//                                                neighbour's send entered
//       begin interval 2 (nested)                bench.c:20
//         Sendrecv(right, left)                  leaves after both entered
//         Allreduce(world)                       leaves after the last entry
//       end interval 2
//       Comm_rank
//     end interval 1
// with per-rank, per-iteration compute times drawn from a fixed hash, so late
// senders and late entries happen. With --call-sites K, each MPI call is made
// from one of K source lines of its function (format 7's site index, the
// iteration's modulo K), as a program calling the loop body from K places.
// With --uncalled-functions N, each rank also defines N functions it never
// calls (ids from 9), as libprof's traces define every function the shim
// wraps (611 beyond these eight). With --hung, the job is killed (SIGTERM)
// hung instead of finalizing: every rank but the middle one inside one more
// MPI_Allreduce (the Live chunk's slot), the middle one computing, as a hang
// report of many ranks meets it. Times are ns (monotonic timer, 1 ns/tick),
// computed for all ranks in lockstep so every message is causal.
#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "prof/definition_lines.h"
#include "prof/trace_reader.h"

namespace {

using prof::format::FuncKind;
using prof::trace::Completion;
using prof::trace::Event;

constexpr uint32_t kWorld = prof::format::kMpichCommWorld;
enum Func : uint16_t { Init = 1, Finalize, Irecv, Isend, Waitall, Sendrecv, Allreduce, CommRank };

uint64_t hash(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return x;
}

// Rank files open at once: 256 (their chunks, 1 MiB at most each, bounded
// too), or half the descriptor limit where that is less.
size_t files_open_at_once() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 256;
  return std::clamp<size_t>(static_cast<size_t>(limit.rlim_cur / 2), 1, 256);
}

void write_definitions(prof::trace::TraceWriter& t, uint32_t call_sites, uint32_t uncalled_functions) {
  t.meta("ns_per_tick", "1");
  t.meta("exe", "/usr/local/bin/bench");
  t.meta("host", "localhost");
  t.function(Init, FuncKind::Other, "MPI_Init");
  t.function(Finalize, FuncKind::Other, "MPI_Finalize");
  t.function(Irecv, FuncKind::Irecv, "MPI_Irecv");
  t.function(Isend, FuncKind::Isend, "MPI_Isend");
  t.function(Waitall, FuncKind::Completion, "MPI_Waitall");
  t.function(Sendrecv, FuncKind::SendRecv, "MPI_Sendrecv");
  t.function(Allreduce, FuncKind::Collective, "MPI_Allreduce");
  t.function(CommRank, FuncKind::Other, "MPI_Comm_rank");
  for (uint32_t k = 0; k < uncalled_functions; ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "MPI_Uncalled_%03u", k);
    t.function(static_cast<uint16_t>(CommRank + 1 + k), FuncKind::Other, name);
  }
  t.callsite({1, 0x401000, "bench.c", 10});
  t.callsite({2, 0x401100, "bench.c", 20});
  // Function f's k-th site: bench.c line 1000 f + k (ids above the markers').
  for (uint16_t f = Init; f <= CommRank; ++f)
    for (uint32_t k = 1; k <= call_sites; ++k) {
      const uint32_t id = 100 + f * 64u + k;
      t.callsite({id, 0x402000 + id * 16, "bench.c", static_cast<int>(1000u * f + k)});
      t.call_site_index(f, k, id);
    }
}

// The whole program's events, each handed to emit(rank, event); a rank's
// events come in its enter order.
template <class Emit>
void simulate(size_t R, uint64_t iterations, uint32_t call_sites, Emit&& emit) {
  std::vector<uint64_t> t(R, 1'000'000'000'000ull);
  uint8_t site_index = 0;  // the iteration's, with --call-sites
  auto put = [&](size_t r, Event e) {
    if (e.kind != FuncKind::Marker) e.call_site_index = site_index;
    emit(r, e);
  };
  auto plain = [&](size_t r, uint16_t f, FuncKind k, uint64_t enter, uint64_t leave) {
    Event e;
    e.func = f;
    e.kind = k;
    e.enter = enter;
    e.leave = leave;
    put(r, e);
  };
  auto marker = [&](size_t r, uint32_t id, bool begin, uint64_t enter) {
    Event e;
    e.func = prof::format::kMarkerFuncId;
    e.kind = FuncKind::Marker;
    e.enter = enter;
    e.leave = enter + 40;
    e.interval_id = id;
    e.callsite = id;
    e.marker_begin = begin;
    put(r, e);
  };
  for (size_t r = 0; r < R; ++r) {
    plain(r, Init, FuncKind::Other, t[r], t[r] + 500000);
    t[r] += 500000 + 1000;
  }

  std::vector<uint64_t> isend_enter(R), sendrecv_enter(R), allreduce_enter(R), compute(R);
  const uint32_t kRecvReq = 0xAC000001u, kSendReq = 0xAC000002u;
  for (uint64_t it = 0; it < iterations; ++it) {
    site_index = call_sites ? static_cast<uint8_t>(1 + it % call_sites) : 0;
    for (size_t r = 0; r < R; ++r) {
      compute[r] = 2000 + hash(it, r) % 3000;
      const int left = static_cast<int>((r + R - 1) % R), right = static_cast<int>((r + 1) % R);
      marker(r, 1, true, t[r]);
      t[r] += 140;
      Event e;
      e.func = Irecv;
      e.kind = FuncKind::Irecv;
      e.enter = t[r];
      e.leave = t[r] + 30;
      e.peer = left;
      e.tag = 7;
      e.comm = kWorld;
      e.bytes = 8;
      e.request = kRecvReq;
      put(r, e);
      t[r] += 50;
      e.func = Isend;
      e.kind = FuncKind::Isend;
      e.enter = t[r];
      e.leave = t[r] + 40;
      e.peer = right;
      e.request = kSendReq;
      isend_enter[r] = t[r];
      put(r, e);
      t[r] += 90;
    }
    for (size_t r = 0; r < R; ++r) {
      const size_t left = (r + R - 1) % R;
      const uint64_t enter = t[r];
      const uint64_t leave = std::max(enter, isend_enter[left] + 300) + 200;
      Completion c[2];
      c[0].request = kRecvReq;
      c[0].source = static_cast<int32_t>(left);
      c[0].tag = 7;
      c[0].bytes = 8;
      c[1].request = kSendReq;
      Event e;
      e.func = Waitall;
      e.kind = FuncKind::Completion;
      e.enter = enter;
      e.leave = leave;
      e.completions = std::span<const Completion>(c, 2);
      put(r, e);
      t[r] = leave + compute[r] / 2;
      marker(r, 2, true, t[r]);
      t[r] += 90;
      sendrecv_enter[r] = t[r];
    }
    for (size_t r = 0; r < R; ++r) {
      const size_t left = (r + R - 1) % R, right = (r + 1) % R;
      const uint64_t leave = std::max({sendrecv_enter[r], sendrecv_enter[left], sendrecv_enter[right]}) + 400;
      Event e;
      e.func = Sendrecv;
      e.kind = FuncKind::SendRecv;
      e.enter = sendrecv_enter[r];
      e.leave = leave;
      e.peer = static_cast<int32_t>(right);
      e.tag = 9;
      e.bytes = 64;
      e.recv_peer = static_cast<int32_t>(left);
      e.recv_tag = 9;
      e.recv_bytes = 64;
      e.comm = kWorld;
      put(r, e);
      allreduce_enter[r] = leave + compute[r] / 2;
    }
    const uint64_t last = *std::max_element(allreduce_enter.begin(), allreduce_enter.end());
    for (size_t r = 0; r < R; ++r) {
      Event e;
      e.func = Allreduce;
      e.kind = FuncKind::Collective;
      e.enter = allreduce_enter[r];
      e.leave = last + 800 + (r * 37) % 100;
      e.comm = kWorld;
      e.root = -1;
      e.bytes = 8;
      put(r, e);
      t[r] = e.leave + 50;
      marker(r, 2, false, t[r]);
      t[r] += 90;
      plain(r, CommRank, FuncKind::Other, t[r], t[r] + 20);
      t[r] += 70;
      marker(r, 1, false, t[r]);
      t[r] += 40 + compute[r];
    }
  }
  const uint64_t end = *std::max_element(t.begin(), t.end());
  for (size_t r = 0; r < R; ++r) plain(r, Finalize, FuncKind::Other, end + r * 100, end + 200000);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"prof-gen-trace: a synthetic prof trace for benchmarks"};
  std::string out;
  uint64_t events = 1000000;
  int ranks = 4;
  uint32_t chunk = 1u << 20;
  uint64_t run_id = 0x5EED;
  uint32_t call_sites = 0;
  uint32_t uncalled_functions = 0;
  bool heartbeat = false;
  bool hung = false;
  bool replace = false;
  app.add_option("OUT_DIR", out, "directory to create and fill with rank-*.prof")->required();
  // Digits only, checked as text before the conversion (which would take "-5"
  // for 2^64 - 5 events); `least`: the smallest value allowed.
  const auto whole_number = [](uint64_t least) {
    return CLI::Validator(
        [least](const std::string& text) -> std::string {
          char* end = nullptr;
          errno = 0;
          const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
          if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || errno == ERANGE ||
              *end != '\0' || v < least)
            return "'" + text + "': expected a whole number, " + std::to_string(least) + " or more";
          return "";
        },
        "UINT");
  };
  app.add_option("-n,--events", events, "events over all ranks (about), 1 or more")->check(whole_number(1));
  app.add_option("-r,--ranks", ranks, "ranks")->check(CLI::Range(1, 100000));
  app.add_option("--run-id", run_id, "run id written in every file")->check(whole_number(0));
  app.add_flag("--replace", replace, "replace the trace OUT_DIR holds (its rank files and window index)");
  app.add_option("--call-sites", call_sites, "source lines each MPI function is called from (0: no call sites)")
      ->check(CLI::Range(0u, prof::format::kSiteIndexes));
  app.add_option("--uncalled-functions", uncalled_functions,
                 "functions each rank defines and never calls (libprof's traces: 611)")
      ->check(CLI::Range(0u, prof::format::kRepeatFuncs - 1u - CommRank));
  app.add_flag("--heartbeat", heartbeat,
               "a heartbeat in each file, at the rank's last leave, as libprof writes one");
  app.add_flag("--hung", hung,
               "killed hung: every rank but the middle one inside an MPI_Allreduce, no MPI_Finalize");
  auto* chunk_option = app.add_option("--chunk-bytes", chunk, "event chunk size (default: 1 MiB, less above 1024 ranks)")
                            ->check(CLI::Range(1u << 10, 1u << 30));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "prof-gen-trace: %s\nRun with --help for more information.\n", e.what());
    return 1;  // (a usage error, as in prof-analyze)
  }
  // Default: 1 GiB over all ranks, within 64 KiB..1 MiB (a trace of many
  // ranks has smaller chunks, as a shim's of many ranks would).
  if (chunk_option->count() == 0) chunk = std::max<uint32_t>(64u << 10, std::min<uint32_t>(1u << 20, (1u << 30) / ranks));
  if (out.empty()) {  // (a script's unset variable)
    std::fprintf(stderr, "prof-gen-trace: OUT_DIR is empty: name the directory to create\n");
    return 1;
  }

  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) {
    std::fprintf(stderr, "prof-gen-trace: cannot create %s: %s\n", out.c_str(), ec.message().c_str());
    return 1;
  }
  // A trace already there is never mixed with the new one (its other ranks'
  // files would stay): refused, or with --replace removed first.
  std::vector<std::filesystem::path> old_files;
  for (const auto& entry : std::filesystem::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (prof::format::is_trace_file_name(name)) old_files.push_back(entry.path());
  }
  if (!old_files.empty() && !replace) {
    std::fprintf(stderr, "prof-gen-trace: %s already holds a trace (rank-*.prof); name a new directory, or --replace\n",
                 out.c_str());
    return 1;
  }
  for (const auto& f : old_files) std::filesystem::remove(f, ec);
  // About 11 bytes an event are written (the synthetic 10^8: 1.12 GB): a
  // count whose trace would need more than the free space at 10 bytes an
  // event is refused before a byte is written.
  if (const std::filesystem::space_info space = std::filesystem::space(out, ec);
      !ec && events > space.available / 10) {
    std::fprintf(stderr, "prof-gen-trace: -n %llu: about %.1f GB, more than the %.1f GB free in %s\n",
                 static_cast<unsigned long long>(events), static_cast<double>(events) * 11 / 1e9,
                 static_cast<double>(space.available) / 1e9, out.c_str());
    return 1;
  }
  const size_t R = static_cast<size_t>(ranks);
  const uint64_t iterations = std::max<uint64_t>(1, events / (10 * R));
  // Rank files are written a group at a time (files_open_at_once()), each group by
  // a pass of the whole simulation that writes its ranks' events only: a
  // rank's times depend on its neighbours' and on the collectives' last
  // entry, so every pass computes all ranks' times in the same order and a
  // file's bytes do not depend on the group it is in. Open files and chunk
  // memory stay bounded at any number of ranks (a 10^5-rank trace under
  // `ulimit -n 1024`); the price is a pass of arithmetic per group.
  const size_t group = files_open_at_once();
  for (size_t lo = 0; lo < R; lo += group) {
    const size_t hi = std::min(R, lo + group);
    std::vector<std::unique_ptr<prof::trace::TraceWriter>> w;
    for (size_t r = lo; r < hi; ++r) {
      char name[64];
      std::snprintf(name, sizeof name, prof::format::kRankFilePattern, static_cast<int>(r));
      w.push_back(std::make_unique<prof::trace::TraceWriter>(
          (std::filesystem::path(out) / name).string(), static_cast<int>(r), ranks, run_id,
          prof::format::TimerKind::Monotonic, chunk));
      if (!w.back()->ok()) {
        std::fprintf(stderr, "prof-gen-trace: cannot write %s in %s\n", name, out.c_str());
        return 1;
      }
      write_definitions(*w.back(), call_sites, uncalled_functions);
    }
    std::vector<uint64_t> last_leave(hi - lo, 0);
    simulate(R, iterations, call_sites, [&](size_t r, const Event& e) {
      if (r < lo || r >= hi || (hung && e.func == Finalize)) return;
      w[r - lo]->event(e);
      last_leave[r - lo] = std::max(last_leave[r - lo], e.leave);
    });
    for (size_t r = lo; r < hi; ++r) {
      auto& t = *w[r - lo];
      if (hung) {
        std::vector<prof::format::InFlightSlot> slots;
        if (r != R / 2) {
          prof::format::InFlightSlot in{};
          in.enter = last_leave[r - lo] + 1000;
          in.site_func = 0x401000u | (uint64_t{Allreduce} << 48);
          in.peer = in.tag = -1;
          in.comm = kWorld;
          slots.push_back(in);
        }
        t.end("signal:15");
        t.live(last_leave[r - lo] + 1000000, slots);
        t.close();
      } else {
        t.end("finalize");
        // As the shim's Live slots count them (format 8); the last beat at the
        // rank's last leave.
        t.close_counting_chunks(heartbeat ? last_leave[r - lo] : 0);
      }
      if (!t.ok()) {
        std::fprintf(stderr, "prof-gen-trace: write error in %s\n", out.c_str());
        return 1;
      }
    }
  }
  std::printf("%s: %llu events over %zu ranks (%llu iterations)\n", out.c_str(),
              static_cast<unsigned long long>(iterations * 10 * R + (hung ? 1 : 2) * R), R,
              static_cast<unsigned long long>(iterations));
  return 0;
}
