// prof-analyze as an MPI job (`mpiexec -n K prof-analyze TRACE ...`): for
// every K the same text report (with --functions and --callsites), JSON, messages and exit
// status as the plain command, byte for byte, on a trace with messages,
// collectives, nested intervals, a rank killed mid-run and a message never
// received, on a damaged trace, and on errors; and process 0 decodes only
// its own block of ranks, each process holding the state of its block alone
// and opening its block's rank files only (the text and JSON reports, the
// Chrome trace and the OTF2 archive, and a --window, whose index each
// process builds for its block); a process waiting for another gives its
// core away; memory that runs out on one process ends the job; and a
// launcher the MPI library does not see is refused.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "file_bytes.h"
#include "mixed_workload.h"
#include "phase_log.h"
#include "trace_builder.h"

namespace fs = std::filesystem;
using namespace prof::test;

namespace {

// A command's exit status and its output (stdout and stderr), by way of a
// file rather than a pipe (run_command.h): a process of mpiexec's that
// outlives it (timeout killed it) would keep a pipe open, and reading to its
// end would wait for that process.
int run_shell(const std::string& cmd, std::string* out) {
  const std::string file = fs::temp_directory_path() / ("prof-mpi-job-" + std::to_string(::getpid()) + ".out");
  const int st = std::system((cmd + " >" + file + " 2>&1").c_str());
  *out = file_bytes(file);
  fs::remove(file);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct Outputs {
  int status = -1;
  std::string text, json, chrome, messages;
};

// The command, plain (procs 0) or under `mpiexec -n procs`; "{json}" and
// "{chrome}" in `args` stand for the JSON report's and Chrome trace's paths.
Outputs run(int procs, const std::string& trace, std::string args, const std::string& env = "") {
  static int n = 0;
  const fs::path out = fs::path(trace) / ("out-" + std::to_string(n++));
  fs::create_directories(out);
  if (const size_t at = args.find("{json}"); at != std::string::npos)
    args.replace(at, 6, (out / "report.json").string());
  if (const size_t at = args.find("{chrome}"); at != std::string::npos)
    args.replace(at, 8, (out / "chrome.json").string());
  std::string cmd = env + " timeout -k 5 60 ";
  if (procs > 0) cmd += std::string(PROF_MPIEXEC) + " -n " + std::to_string(procs) + " ";
  cmd += std::string(PROF_ANALYZE_BIN) + " --no-progress --no-index " + args + " '" + trace + "' >'" +
         (out / "text").string() + "' 2>'" + (out / "messages").string() + "'";
  const int st = std::system(cmd.c_str());
  Outputs o;
  o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  o.text = file_bytes(out / "text");
  o.messages = file_bytes(out / "messages");
  o.json = file_bytes(out / "report.json");
  o.chrome = file_bytes(out / "chrome.json");
  fs::remove_all(out);
  return o;
}

// Every output of the job equals the plain command's, for K = 1, 2, 3.
void expect_same_for_every_k(const std::string& trace, const std::string& args, int max_k = 3) {
  const Outputs plain = run(0, trace, args);
  ASSERT_FALSE(plain.text.empty() && plain.messages.empty());
  for (int k = 1; k <= max_k; ++k) {
    const Outputs job = run(k, trace, args);
    EXPECT_EQ(job.status, plain.status) << "K=" << k << "\n" << job.messages;
    EXPECT_EQ(job.text, plain.text) << "K=" << k;
    EXPECT_EQ(job.json, plain.json) << "K=" << k;
    EXPECT_EQ(job.chrome, plain.chrome) << "K=" << k;
    EXPECT_EQ(job.messages, plain.messages) << "K=" << k;
  }
}

// Six ranks: a ring of messages in nested intervals, Allreduce and Alltoall,
// each rank shifted differently per iteration; rank 5 is killed after 20 of
// 30 iterations; rank 0 sends a message nobody receives.
void build_ring(TraceBuilder& b, int ranks) {
  for (int r = 0; r < ranks; ++r) b.init(r, 0, 1 * kMs);
  for (int it = 0; it < 30; ++it)
    for (int r = 0; r < ranks; ++r) {
      if (r == ranks - 1 && it >= 20) continue;
      const uint64_t a = (2 + static_cast<uint64_t>(it)) * kMs + static_cast<uint64_t>((r * 13 + it * 5) % 50) * kUs;
      b.begin(r, a, 1, 1);
      if (it % 3 == 0) b.begin(r, a + 10 * kUs, 2, 2);
      b.send(r, a + 20 * kUs, a + 25 * kUs, (r + 1) % ranks, it);
      b.recv(r, a + 30 * kUs, a + 60 * kUs + static_cast<uint64_t>(r) * kUs, (r + ranks - 1) % ranks, it);
      if (r == 0 && it == 7) b.send(r, a + 62 * kUs, a + 63 * kUs, 2, 999);
      if (it % 3 == 0) b.end(r, a + 70 * kUs, 2, 2);
      // From two call sites (app.c:200 on even iterations, app.c:300 on odd ones).
      b.collective(r, Allreduce, a + 100 * kUs, a + 200 * kUs, kWorld, 8, prof::format::kNoRequest, 0,
                   uint8_t(1 + it % 2));
      if (it % 5 == 0) b.collective(r, Alltoall, a + 300 * kUs, a + 400 * kUs + static_cast<uint64_t>(it) * kUs);
      b.end(r, a + 500 * kUs, 1, 1);
    }
  for (int r = 0; r < ranks - 1; ++r) {
    b.finalize(r, 40 * kMs, 41 * kMs);
    b.close(r);
  }
  b.w(ranks - 1).close_without_sealing();
}

// The job's outputs where each process can read its own block's rank files
// only, against the plain command's. Process p runs in a view of the trace
// of its own (the same relative path, `t`, under a directory per process)
// where its block's files are the trace's and every other rank file is an
// empty file of the same name: a process that opened another block's file
// would read nothing there, and its outputs would differ from the plain
// command's (which reads the whole trace through the same relative path).
// The blocks are the job's: rank files cut by count into `procs`
// contiguous blocks in name order (file i to process i * procs / files).
void expect_same_reading_own_block_only(const std::string& trace, int ranks, std::string args, int procs) {
  const fs::path base = fs::path(trace) / ("views-" + std::to_string(procs));
  fs::create_directories(base / "out");
  if (const size_t at = args.find("{json}"); at != std::string::npos)
    args.replace(at, 6, (base / "out" / "report.json").string());
  if (const size_t at = args.find("{chrome}"); at != std::string::npos)
    args.replace(at, 8, (base / "out" / "chrome.json").string());
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(trace))
    if (e.path().filename().string().rfind("rank-", 0) == 0) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  ASSERT_EQ(names.size(), static_cast<size_t>(ranks));
  for (int p = -1; p < procs; ++p) {  // (-1: the plain command's view, every file)
    const fs::path view = base / (p < 0 ? std::string("all") : "p" + std::to_string(p)) / "t";
    fs::create_directories(view);
    for (size_t i = 0; i < names.size(); ++i) {
      if (p < 0 || static_cast<int>(i * static_cast<size_t>(procs) / names.size()) == p)
        fs::create_symlink(fs::path(trace) / names[i], view / names[i]);
      else
        std::ofstream(view / names[i]);
    }
  }
  const fs::path wrapper = base / "own-block-only.sh";
  std::ofstream(wrapper) << "#!/bin/sh\ncd " << base.string() << "/p$PMI_RANK && exec " PROF_ANALYZE_BIN " \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  // (An OTF2 archive, "{otf2}" in `args`, is compared as otf2-print lists it,
  // in `Outputs::chrome` when there is no Chrome trace.)
  int archives = 0;
  auto outputs = [&](const std::string& cmd) {
    std::string with = args;
    const fs::path archive = base / "out" / ("otf2-" + std::to_string(archives++));
    if (const size_t at = with.find("{otf2}"); at != std::string::npos) with.replace(at, 6, archive.string());
    const int st = std::system((cmd + " --no-progress --no-index " + with + " t >" + (base / "out" / "text").string() +
                                " 2>" + (base / "out" / "messages").string())
                                   .c_str());
    Outputs o;
    o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (with != args) {
      const std::string listing = archive.string() + ".txt";
      EXPECT_EQ(std::system((std::string(PROF_OTF2_PRINT) + " -A -Werror " + archive.string() + "/traces.otf2 >" +
                             listing + " 2>&1")
                                .c_str()),
                0)
          << file_bytes(listing);
      o.chrome = file_bytes(listing);
      fs::remove_all(archive);
      fs::remove(listing);
      return o;
    }
    for (auto [field, name] : {std::pair{&o.text, "text"}, {&o.messages, "messages"}, {&o.json, "report.json"},
                               {&o.chrome, "chrome.json"}}) {
      *field = file_bytes(base / "out" / name);
      fs::remove(base / "out" / name);
    }
    return o;
  };
  const Outputs plain = outputs("cd " + (base / "all").string() + " && timeout -k 5 60 " PROF_ANALYZE_BIN);
  const Outputs job = outputs("timeout -k 5 60 " + std::string(PROF_MPIEXEC) + " -n " + std::to_string(procs) + " " +
                              wrapper.string());
  EXPECT_EQ(job.status, plain.status) << "K=" << procs << "\n" << job.messages;
  EXPECT_EQ(job.text, plain.text) << "K=" << procs;
  EXPECT_EQ(job.json, plain.json) << "K=" << procs;
  EXPECT_EQ(job.chrome, plain.chrome) << "K=" << procs;
  EXPECT_EQ(job.messages, plain.messages) << "K=" << procs;
  fs::remove_all(base);
}

}  // namespace

// The hang report's counts of communicator creations cross the processes:
// with K = 4, rank 1's split is decoded by another process than rank 0's
// split in flight, which waits for ranks 2 and 3 only (Outputs' test).
TEST(MpiJob, HangInACommunicatorsCreationIsTheSameForEveryProcessCount) {
  TraceBuilder b(4);
  build_hang_in_comm_split(b);
  expect_same_for_every_k(b.dir(), "--json {json}", 4);
}

// prof-gen-trace --hung: 64 ranks killed inside an MPI_Allreduce that rank
// 32 never entered. Each process finds a collective's absent members once
// for the ranks of its block; the report is the plain command's, each rank
// waiting for rank 32 alone.
TEST(MpiJob, HungJobOfManyRanksIsTheSameForEveryProcessCount) {
  const fs::path dir = fs::temp_directory_path() / ("prof-mpi-job-hung-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string trace = (dir / "t").string();
  std::string out;
  ASSERT_EQ(run_shell(std::string(PROF_GEN_TRACE_BIN) + " --hung -n 20000 -r 64 " + trace, &out), 0) << out;
  expect_same_for_every_k(trace, "--json {json}");
  const std::string text = run(0, trace, "").text;
  size_t waiting = 0;
  for (size_t at = 0; (at = text.find("MPI_COMM_WORLD; members not entered: 32\n", at)) != std::string::npos; ++at)
    ++waiting;
  EXPECT_EQ(waiting, 63u) << text;
  fs::remove_all(dir);
}

// Ranks of one process inside different collectives: rank 0 in the world's
// second (an MPI_Barrier), rank 1 in its first (an MPI_Allreduce), rank 2
// computing, rank 3 in the second. Rank 1 waits for rank 2 alone: rank 0,
// whose figures its process may have gathered first, had entered the first.
TEST(MpiJob, CallsInFlightOfOneProcessesRanksAtDifferentInstancesAreTheSameForEveryProcessCount) {
  TraceBuilder b(4);
  for (int r = 0; r < 4; ++r) b.init(r, 0, 1 * kMs);
  for (int r : {0, 3}) {
    b.collective(r, Allreduce, 2 * kMs, 3 * kMs);
    b.w(r).live(20 * kMs, {in_flight_slot(Barrier, 4 * kMs, -1, -1, kWorld)});
  }
  b.w(1).live(20 * kMs, {in_flight_slot(Allreduce, 2 * kMs, -1, -1, kWorld)});
  b.w(2).live(20 * kMs, std::vector<prof::format::InFlightSlot>{});
  b.close("signal:15");
  const Outputs plain = run(0, b.dir(), "");
  EXPECT_NE(plain.text.find("Rank 1 inside MPI_Allreduce since 0.002000 s at 0x401000, MPI_COMM_WORLD; "
                            "members not entered: 2\n"),
            std::string::npos)
      << plain.text;
  expect_same_for_every_k(b.dir(), "--json {json}");
}

TEST(MpiJob, RingWithAKilledRankIsTheSameForEveryProcessCount) {
  TraceBuilder b(6);
  build_ring(b, 6);
  expect_same_for_every_k(b.dir(), "--functions --callsites --json {json} --chrome-trace {chrome}");
  // Without the JSON the wait states are not computed, nor sent to process 0.
  expect_same_for_every_k(b.dir(), "--functions --chrome-trace {chrome}");
  // The call-site profile is there to compare (each rank's sites reach process 0).
  const Outputs plain = run(0, b.dir(), "--callsites");
  EXPECT_NE(plain.text.find("MPI_Allreduce app.c:200 "), std::string::npos) << plain.text;
  EXPECT_NE(plain.text.find("MPI_Allreduce app.c:300 "), std::string::npos) << plain.text;
  // A window (the index does not serve it: a rank was killed; every
  // process decodes its block from the start).
  expect_same_for_every_k(b.dir(), "--window 0.005:0.02 --functions --json {json} --chrome-trace {chrome}");
}

// Six ranks that all finalize, in chunks of 4 KiB: a ring of messages each
// received two iterations after it was sent (so a window's starts find sends
// not yet received, made before the senders' starts), in nested intervals,
// an Allreduce every iteration from ranks drifting apart and back (so the
// starts move back to agree on the Allreduces made), an Alltoall every 50.
void build_clean_ring(TraceBuilder& b, int ranks, int iterations) {
  for (int r = 0; r < ranks; ++r) b.init(r, 0, 1 * kMs);
  for (int it = 0; it < iterations; ++it)
    for (int r = 0; r < ranks; ++r) {
      const uint64_t a = 2 * kMs + static_cast<uint64_t>(it) * 200 * kUs +
                         static_cast<uint64_t>((r * 37 + it * 11) % 90) * kUs;
      b.begin(r, a, 1, 1);
      if (it % 4 == 0) b.begin(r, a + 2 * kUs, 2, 2);
      b.send(r, a + 5 * kUs, a + 6 * kUs, (r + 1) % ranks, it);
      if (it >= 2)
        b.recv(r, a + 10 * kUs, a + 20 * kUs + static_cast<uint64_t>(r) * kUs, (r + ranks - 1) % ranks, it - 2);
      if (it % 4 == 0) b.end(r, a + 25 * kUs, 2, 2);
      b.collective(r, Allreduce, a + 100 * kUs, a + 150 * kUs);
      if (it % 50 == 0) b.collective(r, Alltoall, a + 160 * kUs, a + 170 * kUs);
      b.end(r, a + 180 * kUs, 1, 1);
    }
  const uint64_t end = 2 * kMs + static_cast<uint64_t>(iterations + 1) * 200 * kUs;
  for (int r = 0; r < ranks; ++r)
    for (int it = iterations - 2; it < iterations; ++it)
      b.recv(r, end + static_cast<uint64_t>(it) * kUs, end + static_cast<uint64_t>(it) * kUs + kUs,
             (r + ranks - 1) % ranks, it);
  for (int r = 0; r < ranks; ++r) b.finalize(r, end + 1 * kMs, end + 2 * kMs);
  b.close();
}

// A window the index serves: each process plans its own ranks' starts from
// its part of the index (built from its block), the sends made before a
// start reach their receivers' processes, and the window's figures and
// counts (events decoded up to the window's end, messages and instances
// inside it) are the plain command's for every K, byte for byte.
// Where times are fractional ns (a TSC's), to the last bit: a rank gets its
// collective results from their instances' owners, spread over the
// processes, in an order that depends on K.
TEST(MpiJob, MixedWorkloadOnATscClockIsTheSameForEveryProcessCount) {
  TraceBuilder b(6, 42, true, 1u << 20, prof::format::kFormatVersion, kTscRate);
  build_mixed_workload(b);
  expect_same_for_every_k(b.dir(), "--functions --json {json}");
}

TEST(MpiJob, WindowServedByTheIndexIsTheSameForEveryProcessCount) {
  TraceBuilder b(6, 42, true, 4096);
  build_clean_ring(b, 6, 1500);
  for (const char* window : {"0.1:0.102", "0.15:0.2", "0:0.01", "0.29:0.31"}) {
    const std::string args = std::string("--window ") + window + " --functions --json {json} --chrome-trace {chrome}";
    expect_same_for_every_k(b.dir(), args);
    // (Served by the index: a part of the trace decoded.)
    const Outputs plain = run(0, b.dir(), args);
    std::smatch m;
    const std::regex served(R"(window: (\d+) of (\d+) chunks decoded; index built)");
    ASSERT_TRUE(std::regex_search(plain.messages, m, served)) << plain.messages;
    EXPECT_LT(std::stoi(m[1]), std::stoi(m[2])) << plain.messages;
  }
}

// The index file a plain command wrote serves the job as it serves the plain
// command: every process checks its block's ranks in it (their intervals'
// call sites against the trace's sites, which only process 0 names), so the
// job reads the file instead of building its parts again, and says so as the
// plain command does (the JSON's stats included).
TEST(MpiJob, WindowIndexThePlainCommandWroteServesEveryProcessCount) {
  TraceBuilder b(6, 42, true, 4096);
  build_clean_ring(b, 6, 1500);
  std::string out;
  const std::string plain = std::string(PROF_ANALYZE_BIN) + " --no-progress -q -o /dev/null --window 0:0.01 ";
  ASSERT_EQ(run_shell("timeout -k 5 60 " + plain + b.dir(), &out), 0) << out;
  ASSERT_TRUE(fs::exists(fs::path(b.dir()) / "window-index.bin")) << out;
  for (const char* window : {"0.15:0.2", "0.29:0.31"}) {
    const std::string args = std::string("--window ") + window + " --functions --json {json} --chrome-trace {chrome}";
    expect_same_for_every_k(b.dir(), args);
    const Outputs job = run(2, b.dir(), args);
    EXPECT_NE(job.messages.find("index used"), std::string::npos) << job.messages;
  }
}

// No process opens another block's rank file, whatever the job writes: the
// text report (with the functions and call sites), the JSON report and the
// Chrome trace, whose ranks each process draws and sends process 0 in rank
// order (a Chrome trace window included), the OTF2 archive, for which each
// process sends process 0 its ranks' events in rank order, and a --window,
// whose index each process builds from its block's files.
TEST(MpiJob, EachProcessReadsItsOwnBlocksFilesOnlyForEveryOutput) {
  TraceBuilder b(6);
  build_ring(b, 6);
  for (int k = 2; k <= 3; ++k) {
    expect_same_reading_own_block_only(b.dir(), 6, "--functions --callsites --json {json} --chrome-trace {chrome}", k);
    expect_same_reading_own_block_only(b.dir(), 6, "-q -o /dev/null --chrome-trace {chrome} "
                                       "--chrome-trace-window 0.01:0.02", k);
    expect_same_reading_own_block_only(b.dir(), 6, "--json {json} --otf2 {otf2}", k);
  }
  // A window served by the index: each process builds its block's part.
  TraceBuilder clean(6, 42, true, 4096);
  build_clean_ring(clean, 6, 1500);
  for (int k = 2; k <= 3; ++k)
    expect_same_reading_own_block_only(clean.dir(), 6,
                                       "--window 0.15:0.2 --functions --json {json} --chrome-trace {chrome}", k);
}

// The registry's numbers (functions and call sites, by first definition over
// the ranks in order) are process 0's in every process: here each rank first
// defines a function and a call site of its own, so a rank's numbers depend on
// every rank before it, in other blocks too, and a process that numbered its
// block alone (the others' descriptions carry no functions or call sites)
// would send process 0 figures under other names.
TEST(MpiJob, RanksDefiningTheirOwnFunctionsAndCallSitesAreTheSameForEveryProcessCount) {
  constexpr int kRanks = 6;
  TraceBuilder b(kRanks, 42, false);
  for (int r = 0; r < kRanks; ++r) {
    prof::trace::TraceWriter& w = b.w(r);
    w.function(static_cast<uint16_t>(100 + r), FuncKind::Other, "MPI_Rank" + std::to_string(r) + "_only");
    w.callsite({7, 0x407000, "rank" + std::to_string(r) + ".c", 10 + r});
    TraceBuilder::define(w);
  }
  for (int r = 0; r < kRanks; ++r) {
    b.init(r, 0, 1 * kMs);
    for (int it = 0; it < 10; ++it) {
      const uint64_t a = (2 + static_cast<uint64_t>(it)) * kMs + static_cast<uint64_t>(r) * 20 * kUs;
      b.begin(r, a, 1, 7);  // (the rank's own call site)
      b.other(r, static_cast<Fn>(100 + r), a + 10 * kUs, a + 20 * kUs);
      b.collective(r, Allreduce, a + 100 * kUs, a + 200 * kUs, kWorld, 8, prof::format::kNoRequest, 0,
                   uint8_t(1 + it % 2));
      b.end(r, a + 500 * kUs, 1, 7);
    }
    b.finalize(r, 40 * kMs, 41 * kMs);
  }
  b.close();
  expect_same_for_every_k(b.dir(), "--functions --callsites --json {json} --chrome-trace {chrome}");
  const Outputs plain = run(0, b.dir(), "--functions --callsites");
  EXPECT_NE(plain.text.find("MPI_Rank5_only"), std::string::npos) << plain.text;
  EXPECT_NE(plain.text.find("(LineNumber = 15 SourceFile = rank5.c)"), std::string::npos) << plain.text;
}

TEST(MpiJob, DamagedTraceIsTheSameForEveryProcessCount) {
  TraceBuilder b(3);
  for (int r = 0; r < 3; ++r) {
    b.init(r, 0, 1 * kMs);
    for (int k = 0; k < 2000; ++k) {
      const uint64_t t = (2 + static_cast<uint64_t>(k)) * kMs;
      b.other(r, CommRank, t, t + 10 * kUs);
      if (k % 100 == 0) b.collective(r, Barrier, t + 20 * kUs, t + 30 * kUs + static_cast<uint64_t>(r) * kUs);
    }
    b.finalize(r, 3000 * kMs, 3001 * kMs);
  }
  b.close();
  fs::resize_file(b.path(1), fs::file_size(b.path(1)) / 2);
  expect_same_for_every_k(b.dir(), "--functions --json {json}");
  expect_same_for_every_k(b.dir(), "--window 0.5:1 --functions --json {json}");
}

TEST(MpiJob, ErrorsEndTheJobWithThePlainCommandsMessageAndStatus) {
  TraceBuilder b(2);
  build_ring(b, 2);
  for (const std::string& args : {std::string("--json /nonexistent-dir/report.json"), std::string("--ranks x")}) {
    const Outputs plain = run(0, b.dir(), args);
    const Outputs job = run(2, b.dir(), args);
    EXPECT_NE(plain.status, 0) << args;
    EXPECT_EQ(job.status, plain.status) << args;
    EXPECT_EQ(job.messages, plain.messages) << args;
  }
  const Outputs plain = run(0, b.dir() + "/no-such-trace", "");
  const Outputs job = run(2, b.dir() + "/no-such-trace", "");
  EXPECT_EQ(plain.status, 2);
  EXPECT_EQ(job.status, plain.status);
  EXPECT_EQ(job.messages, plain.messages);
}

// Started by a launcher whose processes the MPI library cannot see (another
// MPI's mpirun: here its variable without it), each process would analyze
// the whole trace alone and write the same files; it refuses, naming both
// counts, and writes nothing.
TEST(MpiJob, ALauncherTheLibraryDoesNotSeeIsRefused) {
  TraceBuilder b(2);
  build_ring(b, 2);
  const Outputs alone = run(0, b.dir(), "--json {json}", "OMPI_COMM_WORLD_SIZE=3");
  EXPECT_EQ(alone.status, 1);
  EXPECT_NE(alone.messages.find("prof-analyze: error: started as one of 3 processes (OMPI_COMM_WORLD_SIZE), but "
                                "the MPI library ("),
            std::string::npos)
      << alone.messages;
  EXPECT_NE(alone.messages.find(") sees 1: launch the job with that library's mpiexec\n"), std::string::npos)
      << alone.messages;
  EXPECT_TRUE(alone.text.empty());
  EXPECT_TRUE(alone.json.empty());
}

// Two members enter each Allreduce last at the same instant: the others' waits
// name the lower of the two ranks whichever member reaches the instance's
// owner first (in one process, rank 0; in a job, the owner's own rank may come
// before the other's through the exchange).
TEST(MpiJob, CollectiveWaitOnMembersEnteringLastTogetherIsTheSameForEveryProcessCount) {
  TraceBuilder b(4);
  for (int r = 0; r < 4; ++r) {
    b.init(r, 0, 1 * kMs);
    for (int it = 0; it < 8; ++it) {
      const uint64_t a = (2 + static_cast<uint64_t>(it)) * kMs;
      const bool last = r == 0 || r == 3;
      b.collective(r, Allreduce, a + (last ? 300 : 100 + static_cast<uint64_t>(r)) * kUs, a + 400 * kUs);
    }
    b.finalize(r, 20 * kMs, 21 * kMs);
  }
  b.close();
  expect_same_for_every_k(b.dir(), "-j 1 --json {json}");
  // Ranks 1 and 2 wait 199 and 198 us an iteration, all on rank 0.
  const Outputs plain = run(0, b.dir(), "-j 1 --json {json}");
  EXPECT_TRUE(std::regex_search(
      plain.json, std::regex(R"("waited_for": \[\s*\{\s*"rank": 0,\s*"seconds": 0\.003176\d*,\s*"uncertain_s": 0\.0\s*\}\s*\])")))
      << plain.json;
}

// A process that cannot read the trace (a node without its file system) ends
// the job: process 0 names it and its error, no process waits for it.
TEST(MpiJob, AProcessThatCannotReadTheTraceEndsTheJob) {
  TraceBuilder b(2);
  build_ring(b, 2);
  const fs::path wrapper = fs::path(b.dir()) / "second-process-elsewhere.sh";
  std::ofstream(wrapper) << "#!/bin/sh\n"
                            "[ \"$PMI_RANK\" = 1 ] && exec " PROF_ANALYZE_BIN " " << b.dir() << "/elsewhere -q\n"
                            "exec " PROF_ANALYZE_BIN " \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  const std::string cmd = "timeout -k 5 60 " + std::string(PROF_MPIEXEC) + " -n 2 " + wrapper.string() + " " +
                          b.dir() + " -q -o /dev/null --no-index 2>" + b.dir() + "/messages";
  const int st = std::system(cmd.c_str());
  EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 2);
  EXPECT_NE(file_bytes(fs::path(b.dir()) / "messages").find("prof-analyze: error: process 1: " + b.dir() + "/elsewhere"),
            std::string::npos)
      << file_bytes(fs::path(b.dir()) / "messages");
}

// A setting of one process's own environment that is bad (a TMPDIR missing
// on its node) ends the job before the analysis, named by process 0 with
// the plain command's message and status, instead of leaving the other
// processes waiting for the one that left.
TEST(MpiJob, ABadSettingOfOneProcessEndsTheJob) {
  TraceBuilder b(2);
  build_ring(b, 2);
  const std::string missing = b.dir() + "/no-such-tmpdir";
  const Outputs plain = run(0, b.dir(), "-o /dev/null", "TMPDIR=" + missing);
  EXPECT_EQ(plain.status, 1);
  const fs::path wrapper = fs::path(b.dir()) / "second-process-tmpdir.sh";
  std::ofstream(wrapper) << "#!/bin/sh\n"
                            "[ \"$PMI_RANK\" = 1 ] && export TMPDIR=" << missing << "\n"
                            "exec " PROF_ANALYZE_BIN " \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  const std::string cmd = "timeout -k 5 60 " + std::string(PROF_MPIEXEC) + " -n 2 " + wrapper.string() + " " +
                          b.dir() + " -o /dev/null --no-index 2>" + b.dir() + "/messages";
  const int st = std::system(cmd.c_str());
  EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, plain.status);
  std::string from_process_1 = plain.messages;
  from_process_1.insert(from_process_1.find("error: ") + 7, "process 1: ");
  EXPECT_EQ(file_bytes(fs::path(b.dir()) / "messages"), from_process_1);
  // Every process with it: one message, as the plain command's.
  const Outputs job = run(2, b.dir(), "-o /dev/null", "TMPDIR=" + missing);
  EXPECT_EQ(job.status, plain.status);
  EXPECT_EQ(job.messages, plain.messages);
}

// Memory that runs out on one process, wherever it runs out (opening its
// block, a phase's exchange or merge, the analysis's setup or end) ends the
// whole job with exit status 1 and a message that says so, instead of
// leaving the others waiting for it. Process 1's address space is limited
// (ulimit -v) from well above what it needs down, 20 MB at a time, until
// the job fails: it fails first where the analysis runs out, not where MPI
// does (MPICH may hang when its own memory runs out at the start).
TEST(MpiJob, MemoryRunningOutOnOneProcessEndsTheJob) {
  const fs::path dir = fs::temp_directory_path() / ("prof-mpi-job-oom-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string trace = (dir / "t").string();
  std::string out;
  ASSERT_EQ(run_shell(std::string(PROF_GEN_TRACE_BIN) + " -n 1000000 -r 2048 " + trace, &out), 0) << out;
  const fs::path wrapper = dir / "limited.sh";
  std::ofstream(wrapper) << "#!/bin/sh\n"
                            "[ \"$PMI_RANK\" = 1 ] && ulimit -v \"$LIMIT_KB\"\n"
                            "exec " PROF_ANALYZE_BIN " \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  int failed_at = 0;
  for (int mb = 300; mb >= 100 && failed_at == 0; mb -= 20) {
    const int st = run_shell("LIMIT_KB=" + std::to_string(mb * 1024) + " timeout -k 5 60 " + PROF_MPIEXEC +
                                 " -n 2 " + wrapper.string() + " " + trace + " -j 1 -o /dev/null --no-index --no-progress",
                             &out);
    ASSERT_TRUE(st == 0 || st == 1) << mb << " MB: exit " << st << "\n" << out;
    if (st == 0) continue;
    failed_at = mb;
    // (Process 1's own line where it ended the job; process 0's, as the plain
    // command's, where the failure came in a phase, whose exchange carries it.)
    EXPECT_TRUE(out.find("prof-analyze: error: process 1: ") != std::string::npos ||
                out.find("prof-analyze: error: analysis failed: ") != std::string::npos)
        << mb << " MB\n" << out;
    EXPECT_TRUE(out.find("out of memory") != std::string::npos || out.find("bad_alloc") != std::string::npos)
        << mb << " MB\n" << out;
  }
  EXPECT_GT(failed_at, 0) << "the job never ran out of memory at 100 MB";
  fs::remove_all(dir);
}

// The job shares the decoding: process 0's workers decode only their block
// (PROF_ANALYZE_WORKER_STATS lists every worker of the job from process 0,
// those of the other processes with no events). PROF_ANALYZE_PHASE_LOG=FILE
// has each process P write its own workers' phases to FILE.P, the same
// phases in each, in step.
TEST(MpiJob, ProcessZeroDecodesOnlyItsBlock) {
  TraceBuilder b(6);
  build_ring(b, 6);
  const std::string log = b.dir() + "/phases";
  const Outputs job =
      run(3, b.dir(), "-j 1 -o /dev/null -q", "PROF_ANALYZE_WORKER_STATS=1 PROF_ANALYZE_PHASE_LOG='" + log + "'");
  ASSERT_EQ(job.status, 0) << job.messages;
  std::vector<size_t> phases_of;
  for (int p = 0; p < 3; ++p) {
    const std::vector<PhaseLine> lines = phase_lines(file_bytes(log + "." + std::to_string(p)));
    uint64_t events = 0;
    for (size_t k = 0; k < lines.size(); ++k) {
      EXPECT_EQ(lines[k].worker, static_cast<uint64_t>(p));  // (-j 1: process p runs worker p)
      EXPECT_EQ(lines[k].phase, k);
      events += lines[k].events;
    }
    EXPECT_GT(events, 0u) << "process " << p;
    phases_of.push_back(lines.size());
  }
  EXPECT_GT(phases_of[0], 0u);
  EXPECT_EQ(phases_of[1], phases_of[0]);
  EXPECT_EQ(phases_of[2], phases_of[0]);
  EXPECT_NE(job.messages.find("workers: 3,"), std::string::npos) << job.messages;
  const std::regex worker(R"(worker (\d+): ranks (\d+), events (\d+))");
  int lines = 0, decoding = 0;
  for (auto it = std::sregex_iterator(job.messages.begin(), job.messages.end(), worker); it != std::sregex_iterator();
       ++it) {
    ++lines;
    EXPECT_EQ((*it)[2], "2");  // six ranks in blocks of two
    if ((*it)[3] != "0") ++decoding;
  }
  EXPECT_EQ(lines, 3);
  EXPECT_EQ(decoding, 1) << job.messages;
}

// Without -j, the processes of a job on one node share its cores: two
// processes run half the machine's workers each (at least one), not a
// worker per core each, which would oversubscribe the node by default.
TEST(MpiJob, ProcessesOfOneNodeShareItsCoresByDefault) {
  TraceBuilder b(16);
  build_ring(b, 16);
  const Outputs job = run(2, b.dir(), "-o /dev/null -q", "PROF_ANALYZE_WORKER_STATS=1");
  ASSERT_EQ(job.status, 0) << job.messages;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned each = std::max(1u, cores / std::min(2u, cores));
  EXPECT_NE(job.messages.find("workers: " + std::to_string(2 * each) + ","), std::string::npos) << job.messages;
}

// A process that waits for another gives its core away: process 0 writes
// the text report into a FIFO that nobody reads for 3 s, so process 1
// waits that long for it at the job's end. Polling, as MPICH's blocking
// calls do, it would spend most of those 3 s of CPU (and take them from
// the processes that share its core); it spends well under one. The report
// read from the FIFO is the plain command's.
TEST(MpiJob, AProcessWaitingForAnotherGivesItsCoreAway) {
  TraceBuilder b(8);
  build_ring(b, 8);
  const Outputs plain = run(0, b.dir(), "-q");
  ASSERT_EQ(plain.status, 0) << plain.messages;
  const fs::path out = fs::path(b.dir()) / "waiting";
  fs::create_directories(out);
  const fs::path fifo = out / "report.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // (Each process's CPU from its shell's `times`: its children's user and
  // system time, the second line.)
  const std::string cmd = "timeout -k 5 60 " + std::string(PROF_MPIEXEC) + " -n 2 bash -c 'export LC_ALL=C; " +
                          PROF_ANALYZE_BIN + " --no-progress --no-index -q -o " + fifo.string() + " " + b.dir() +
                          "; status=$?; times >" + (out / "cpu.").string() + "$PMI_RANK; exit $status'";
  int status = -1;
  std::string messages;
  std::atomic<bool> reader_done{false};
  std::thread job([&] {
    status = run_shell(cmd, &messages);
    // (A job that ended without opening the FIFO would leave its reader
    // waiting for a writer forever: be one, for an instant, until it has
    // read.)
    while (!reader_done) {
      if (const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK); fd >= 0) ::close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const std::string report = file_bytes(fifo);
  reader_done = true;
  job.join();
  ASSERT_EQ(status, 0) << messages;
  EXPECT_EQ(report, plain.text);
  const std::string times = file_bytes(out / "cpu.1");
  std::smatch cpu;
  ASSERT_TRUE(std::regex_search(times, cpu, std::regex(R"(\n(\d+)m([\d.]+)s (\d+)m([\d.]+)s)"))) << times;
  const double seconds =
      60 * std::stod(cpu[1]) + std::stod(cpu[2]) + 60 * std::stod(cpu[3]) + std::stod(cpu[4]);
  EXPECT_LT(seconds, 1.0) << times;
}

// Memory per process grows with its block, not with the trace: over 300
// ranks, each of two processes opens the rank files of its 150 ranks only
// and holds their state only during the pass (the plain command: all 300),
// its ranks' figures reach process 0 in bounded rounds, and the report is
// the plain command's.
TEST(MpiJob, EachProcessHoldsTheStateOfItsBlockOnly) {
  constexpr int kRanks = 300;
  TraceBuilder b(kRanks);
  build_ring(b, kRanks);
  const std::string args = "-j 1 -o /dev/null -q --json {json}";
  const Outputs plain = run(0, b.dir(), args, "PROF_ANALYZE_WORKER_STATS=1");
  const Outputs job = run(2, b.dir(), args, "PROF_ANALYZE_WORKER_STATS=1");
  ASSERT_EQ(plain.status, 0) << plain.messages;
  ASSERT_EQ(job.status, 0) << job.messages;
  EXPECT_EQ(job.json, plain.json);
  EXPECT_NE(plain.messages.find("rank states during the pass, of 300 ranks: 300\n"), std::string::npos)
      << plain.messages;
  const std::regex held(R"(process (\d+): (\d+))");
  const size_t line = job.messages.find("rank states during the pass, of 300 ranks:");
  ASSERT_NE(line, std::string::npos) << job.messages;
  const std::string states = job.messages.substr(line, job.messages.find('\n', line) - line);
  // (-j 1: process p runs worker p, whose block the worker lines give.)
  const std::regex worker(R"(worker (\d+): ranks (\d+))");
  std::vector<int> block;
  for (auto it = std::sregex_iterator(job.messages.begin(), job.messages.end(), worker); it != std::sregex_iterator();
       ++it)
    block.push_back(std::stoi((*it)[2]));
  ASSERT_EQ(block.size(), 2u) << job.messages;
  int processes = 0, total = 0;
  for (auto it = std::sregex_iterator(states.begin(), states.end(), held); it != std::sregex_iterator(); ++it) {
    const int p = std::stoi((*it)[1]), n = std::stoi((*it)[2]);
    ASSERT_EQ(p, processes) << states;
    EXPECT_EQ(n, block[static_cast<size_t>(p)]) << states;
    EXPECT_LE(n, kRanks / 2 + kRanks / 20) << states;  // about half the trace
    total += n;
    ++processes;
  }
  EXPECT_EQ(processes, 2) << states;
  EXPECT_EQ(total, kRanks);
  // Process 0 reports from every rank's figures alone: the decoders, its
  // block's too, are gone by then.
  EXPECT_NE(job.messages.find("rank states at the report: 0 decoders, 300 figures only\n"), std::string::npos)
      << job.messages;
  // Each process opened the rank files of its block alone (the plain
  // command: every file, once).
  EXPECT_NE(plain.messages.find("rank files opened, of 300 ranks: 300\n"), std::string::npos) << plain.messages;
  const size_t opened_at = job.messages.find("rank files opened, of 300 ranks:");
  ASSERT_NE(opened_at, std::string::npos) << job.messages;
  const std::string opened = job.messages.substr(opened_at, job.messages.find('\n', opened_at) - opened_at);
  int listed = 0;
  for (auto it = std::sregex_iterator(opened.begin(), opened.end(), held); it != std::sregex_iterator(); ++it) {
    const int p = std::stoi((*it)[1]);
    ASSERT_EQ(p, listed) << opened;
    EXPECT_EQ(std::stoi((*it)[2]), block[static_cast<size_t>(p)]) << opened;
    ++listed;
  }
  EXPECT_EQ(listed, 2) << opened;
  // (The figures reached process 0 in several bounded rounds.)
  std::smatch rounds;
  ASSERT_TRUE(std::regex_search(job.messages, rounds, std::regex(R"(\((\d+) gathering the figures\))")))
      << job.messages;
  EXPECT_GT(std::stoi(rounds[1]), 1) << job.messages;
}

// `mpiexec -n 2 prof-analyze --otf2`: process 0 writes the archive, the same
// as the plain command's; a directory it cannot use ends the whole job as the
// plain command ends.
TEST(MpiJob, Otf2ArchiveIsThePlainCommands) {
  TraceBuilder b(4);
  for (int r = 0; r < 4; ++r) {
    b.init(r, 0, 1 * kMs);
    for (int it = 0; it < 10; ++it) {
      const uint64_t a = (2 + static_cast<uint64_t>(it)) * kMs + static_cast<uint64_t>(r) * 7 * kUs;
      b.begin(r, a, 1);
      b.send(r, a + 10 * kUs, a + 20 * kUs, (r + 1) % 4, it);
      b.recv(r, a + 30 * kUs, a + 90 * kUs, (r + 3) % 4, it);
      b.collective(r, Allreduce, a + 100 * kUs, a + 300 * kUs);
      b.end(r, a + 400 * kUs, 1);
    }
    b.finalize(r, 20 * kMs, 21 * kMs);
  }
  b.close();
  auto print_all = [](const std::string& archive) {
    const std::string cmd = std::string(PROF_OTF2_PRINT) + " -A -Werror " + archive + "/traces.otf2 >" + archive +
                            ".txt 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return file_bytes(archive + ".txt");
  };
  // Every file of the archive, by its path in it.
  auto files_of = [](const std::string& archive) {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(archive))
      if (entry.is_regular_file()) files[fs::relative(entry.path(), archive).string()] = file_bytes(entry.path());
    return files;
  };
  auto run_cli = [](const std::string& args, std::string* out) {
    return run_shell(std::string(PROF_ANALYZE_BIN) + " --no-progress --no-index " + args, out);
  };
  const std::string job = "timeout -k 5 60 " + std::string(PROF_MPIEXEC) + " -n 2 " + PROF_ANALYZE_BIN +
                          " --no-progress --no-index -q -o /dev/null " + b.dir();
  std::string out;
  ASSERT_EQ(run_cli(b.dir() + " -q -o /dev/null --otf2 " + b.dir() + "/plain", &out), 0) << out;
  ASSERT_EQ(run_shell(job + " --otf2 " + b.dir() + "/job", &out), 0) << out;
  const std::string plain = print_all(b.dir() + "/plain");
  EXPECT_NE(plain.find("MPI_SEND"), std::string::npos);
  EXPECT_EQ(print_all(b.dir() + "/job"), plain);
  // The same bytes, the trace identifier that OTF2 draws at random included.
  const auto plain_files = files_of(b.dir() + "/plain");
  EXPECT_EQ(plain_files.size(), 2u + 2 * 4);  // traces.otf2, traces.def, each rank's traces/R.def and R.evt
  EXPECT_TRUE(files_of(b.dir() + "/job") == plain_files);

  std::string plain_msg, job_msg;
  EXPECT_EQ(run_cli(b.dir() + " -q -o /dev/null --otf2 " + b.dir() + "/plain", &plain_msg), 1);
  EXPECT_EQ(run_shell(job + " --otf2 " + b.dir() + "/plain", &job_msg), 1);
  EXPECT_EQ(job_msg, plain_msg);
}
