// prof-analyze --otf2: what a user of the archive relies on beyond the counts
// otf2_export_check.cpp compares: a directory that cannot take the archive is
// refused before the analysis with a message naming it; how each rank ended
// and the calls it was inside are in the archive (mpi_job_test.cpp: an MPI
// job of the analyzer writes the same archive as the plain command).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "file_bytes.h"
#include "run_command.h"
#include "trace_builder.h"

namespace prof::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int run_cli(const std::string& args, std::string* out = nullptr) {
  return run_shell(std::string(PROF_ANALYZE_BIN) + " --no-progress --no-index " + args, out);
}
// The peak resident memory (KiB) of `cmd`, run by exec from a shell.
long peak_kb(const std::string& cmd) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >/dev/null 2>&1").c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int st = 0;
  rusage ru{};
  if (pid < 0 || ::wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
  return ru.ru_maxrss;
}
// otf2-print's whole output (anchor, definitions, events) without the
// archive's random trace identifier, each run of blanks made one.
std::string print_all(const std::string& archive) {
  std::string out;
  EXPECT_EQ(run_shell(std::string(PROF_OTF2_PRINT) + " -A -Werror " + archive + "/traces.otf2", &out), 0) << out;
  out = std::regex_replace(out, std::regex("Trace identifier[^\n]*\n"), "");
  return std::regex_replace(out, std::regex(" +"), " ");
}

// Two ranks, a message and an Allreduce in interval 1, then MPI_Finalize.
void build_small(TraceBuilder& b) {
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    b.begin(r, 2 * kMs, 1);
    if (r == 0) b.send(r, 3 * kMs, 3 * kMs + 10 * kUs, 1, 7);
    else b.recv(r, 2500 * kUs, 3 * kMs + 20 * kUs, 0, 7);
    b.collective(r, Allreduce, 4 * kMs, 5 * kMs);
    b.end(r, 6 * kMs, 1);
    b.finalize(r, 7 * kMs, 8 * kMs);
  }
  b.close();
}

// A directory that holds anything, a file, or a path that cannot be created:
// exit 1 before any report, the option and the path named; nothing written
// into it. A new directory or an empty one takes the archive.
TEST(Otf2, DirectoryMustBeNewOrEmpty) {
  TraceBuilder b(2);
  build_small(b);
  const std::string busy = b.dir() + "/busy";
  fs::create_directories(busy);
  std::ofstream(busy + "/keep.txt") << "mine\n";
  const std::string file = b.dir() + "/a-file";
  std::ofstream(file) << "x\n";
  struct Case {
    std::string path, says;
  } cases[] = {{busy, "the directory is not empty"},
               {file, "exists and is not a directory"},
               {file + "/sub", "cannot create " + file + "/sub: Not a directory"},
               {b.dir() + "/no/such/parent", "cannot create " + b.dir() + "/no/such/parent: No such file"}};
  for (const Case& c : cases) {
    std::string out;
    EXPECT_EQ(run_cli(b.dir() + " --otf2 " + c.path, &out), 1) << c.path << "\n" << out;
    EXPECT_NE(out.find("prof-analyze: error: --otf2 "), std::string::npos) << out;
    EXPECT_NE(out.find(c.says), std::string::npos) << out;
    EXPECT_EQ(out.find("Level 0"), std::string::npos) << "a report was written:\n" << out;
  }
  EXPECT_EQ(file_bytes(busy + "/keep.txt"), "mine\n");
  EXPECT_FALSE(fs::exists(busy + "/traces.otf2"));

  const std::string empty = b.dir() + "/empty";
  fs::create_directories(empty);
  std::string out;
  ASSERT_EQ(run_cli(b.dir() + " -o /dev/null --otf2 " + empty, &out), 0) << out;
  EXPECT_TRUE(fs::exists(empty + "/traces.otf2"));
  ASSERT_EQ(run_cli(b.dir() + " -o /dev/null --otf2 " + b.dir() + "/new", &out), 0) << out;
  EXPECT_EQ(print_all(empty), print_all(b.dir() + "/new"));
}

// The clean run: the definitions Score-P writes for MPI (the world's location
// group, its communicator, region roles), message and collective records with
// their fields, nanoseconds from the run's first event, how each rank ended.
TEST(Otf2, DefinitionsAndRecordsOfACleanRun) {
  TraceBuilder b(2);
  build_small(b);
  std::string out;
  ASSERT_EQ(run_cli(b.dir() + " -o /dev/null --otf2 " + b.dir() + "/a", &out), 0) << out;
  const std::string all = print_all(b.dir() + "/a");
  for (const char* want :
       {"Ticks per Seconds: 1000000000", "Type: COMM_LOCATIONS, Paradigm: \"MPI\"", "Name: \"MPI_COMM_WORLD\"",
        "Name: \"MPI Rank 1\" <", "Role: COLL_ALL2ALL", "Role: POINT2POINT",
        "Name: \"PROF_RUN_END\" <", "Value: \"finalize\"", "PROF::RUN_COMPLETE\nProperty value true",
        "PROF::CLOCK_OFFSETS_APPLIED"})
    EXPECT_NE(all.find(want), std::string::npos) << want << "\n" << all;
  // Global offset 0 (the builder's clock starts at 0): timestamps are ns.
  EXPECT_NE(all.find("MPI_SEND 0 3000000 Receiver: 1 (\"Master thread\" <1>), Communicator: \"MPI_COMM_WORLD\" "
                     "<0>, Tag: 7, Length: 8"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("MPI_RECV 1 3020000 Sender: 0"), std::string::npos) << all;
  // The interval from its begin marker's return, before the first call inside it.
  EXPECT_NE(all.find("ENTER 1 2000000 Region: \"interval 1 (app.c:100)\""), std::string::npos) << all;
  EXPECT_NE(all.find("MPI_COLLECTIVE_END 1 5000000 Operation: ALLREDUCE, Communicator: \"MPI_COMM_WORLD\" <0>, "
                     "Root: NONE"),
            std::string::npos)
      << all;
}

// Killed inside calls: rank 0 in an MPI_Recv from MPI_ANY_SOURCE, rank 1 in a
// barrier, both inside interval 1. Each call is entered with the attribute
// in_flight and left at the rank's last heartbeat, the interval closes
// there, and each rank's location says how it ended, as the JSON report does.
TEST(Otf2, CallsInFlightAndHowEachRankEnded) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    b.marker(r, 2 * kMs, 1, true);
  }
  b.w(0).live(10 * kMs, {in_flight_slot(Recv, 3 * kMs, format::kAnySourceRank, 5, kWorld)});
  b.w(1).live(9 * kMs, {in_flight_slot(Barrier, 4 * kMs, -1, -1, kWorld)});
  for (int r = 0; r < 2; ++r) b.close(r, "");
  std::string out;
  run_cli(b.dir() + " -o /dev/null --json " + b.dir() + "/r.json --otf2 " + b.dir() + "/a", &out);
  const json report = json::parse(file_bytes(b.dir() + "/r.json"));
  const std::string all = print_all(b.dir() + "/a");
  for (int r = 0; r < 2; ++r) {
    const std::string ended = report["run_end"]["ranks"][r]["ended_by"];
    EXPECT_NE(all.find("Location: \"Master thread\" <" + std::to_string(r) +
                        ">, Name: \"PROF_RUN_END\" <"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find("Value: \"" + ended + "\""), std::string::npos) << ended << "\n" << all;
  }
  EXPECT_NE(all.find("PROF::RUN_COMPLETE\nProperty value false"), std::string::npos) << all;
  for (const char* want : {"ENTER 0 3000000 Region: \"MPI_Recv\"", "LEAVE 0 10000000 Region: \"MPI_Recv\"",
                           "LEAVE 0 10000000 Region: \"interval 1", "ENTER 1 4000000 Region: \"MPI_Barrier\"",
                           "LEAVE 1 9000000 Region: \"MPI_Barrier\"", "LEAVE 1 9000000 Region: \"interval 1"})
    EXPECT_NE(all.find(want), std::string::npos) << want << "\n" << all;
  // The in_flight attribute on both Enters, and no message or collective record.
  size_t attributes = 0;
  for (size_t at = all.find("\"in_flight\" <0>; UINT8; 1"); at != std::string::npos;
       at = all.find("\"in_flight\" <0>; UINT8; 1", at + 1))
    ++attributes;
  EXPECT_EQ(attributes, 2u) << all;
  EXPECT_EQ(all.find("MPI_RECV "), std::string::npos);
  EXPECT_EQ(all.find("MPI_COLLECTIVE_BEGIN"), std::string::npos);
}

// MPI_Ibcast from rank 0 completed by MPI_Wait: a NonBlockingCollectiveRequest
// in the Ibcast and the NonBlockingCollectiveComplete (operation, root,
// bytes) in the Wait, with the same request id, as Score-P writes them.
TEST(Otf2, NonblockingCollectiveIsRequestedAndCompleted) {
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.init(r, 0, 1 * kMs);
    b.collective(r, Ibcast, 2 * kMs, 2 * kMs + 10 * kUs, kWorld, 64, 0x98000001u, 0);
    b.wait(r, Wait, 3 * kMs, 4 * kMs, {Completion{0x98000001u}});
    b.finalize(r, 5 * kMs, 6 * kMs);
  }
  b.close();
  std::string out;
  ASSERT_EQ(run_cli(b.dir() + " -o /dev/null --otf2 " + b.dir() + "/a", &out), 0) << out;
  const std::string all = print_all(b.dir() + "/a");
  for (const char* want :
       {"NON_BLOCKING_COLLECTIVE_REQUEST 1 2000000 Request: 0",
        "NON_BLOCKING_COLLECTIVE_COMPLETE 1 4000000 Operation: BCAST, Communicator: \"MPI_COMM_WORLD\" <0>, Root: 0 "
        "(\"Master thread\" <0>), Sent: 64, Received: 0, Request: 0"})
    EXPECT_NE(all.find(want), std::string::npos) << want << "\n" << all;
}

// The archive is flushed as it is written: a rank of 5·10^6 events (a 123 MB
// events file) costs the export's buffers beyond the analysis's own memory
// (11-14 MB where jemalloc's huge pages round them up, up to 17 MB seen with
// the suite running beside it), whatever the file's size: the bound is a
// third of the file, which an export holding the archive would pass three
// times over, and the buffers stay well under it.
TEST(Otf2, MemoryDoesNotGrowWithTheArchive) {
  TraceBuilder b(1);
  b.close();
  const std::string trace = b.dir() + "/big";
  ASSERT_EQ(run_shell(std::string(PROF_GEN_TRACE_BIN) + " -n 5000000 -r 1 " + trace), 0);
  const std::string analyze = std::string(PROF_ANALYZE_BIN) + " -q --no-progress --no-index -o /dev/null " + trace;
  const long alone = peak_kb(analyze);
  const long with_archive = peak_kb(analyze + " --otf2 " + b.dir() + "/a");
  ASSERT_GT(alone, 0);
  ASSERT_GT(with_archive, 0);
  const auto archive_kb = static_cast<long>(fs::file_size(b.dir() + "/a/traces/0.evt") / 1024);
  EXPECT_GT(archive_kb, 96 * 1024);
  EXPECT_LT(with_archive - alone, archive_kb / 3) << "alone " << alone << " KiB, with the archive " << with_archive
                                             << " KiB, its events file " << archive_kb << " KiB";
}

}  // namespace
}  // namespace prof::test
