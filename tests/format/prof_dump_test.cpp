// prof-dump: runs the real executable on written traces and greps its output
// (the line format documented at the top of libprof/tools/prof_dump.cpp).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "format_test_util.h"
#include "prof/trace_reader.h"

#ifndef PROF_DUMP_PATH
#error "PROF_DUMP_PATH must name the prof-dump executable"
#endif

namespace {

using namespace prof;
using namespace prof::trace;
using format::FuncKind;
namespace fs = std::filesystem;

struct DumpResult {
  int status = -1;
  std::string out;
};
DumpResult run_dump(const std::string& args) {
  DumpResult r;
  // (Bounded: a dump that hangs fails here instead of stalling the suite.)
  const std::string cmd = "timeout 60 " + std::string(PROF_DUMP_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

void write_rank(const std::string& path, int rank) {
  TraceWriter w(path, rank, 2, 0x77);
  w.meta("ns_per_tick", "1");
  w.function(1, FuncKind::Send, "MPI_Send");
  w.function(2, FuncKind::Completion, "MPI_Waitall");
  w.function(3, FuncKind::Collective, "MPI_Bcast");
  w.function(4, FuncKind::CommCreate, "MPI_Comm_dup");
  CallSiteDef cs;
  cs.id = 3;
  cs.file = "file.c";
  cs.line = 42;
  w.callsite(cs);
  CommDef dup;
  dup.handle = 0x84000001u;
  dup.global_id = 9;
  dup.time = 0;
  dup.ranks = {1, 0};
  w.comm(dup);
  Event m;
  m.kind = FuncKind::Marker;
  m.func = format::kMarkerFuncId;
  m.enter = 1000;
  m.leave = 1000;
  m.interval_id = 1;
  m.callsite = 3;
  m.marker_begin = true;
  w.event(m);
  Event s;
  s.kind = FuncKind::Send;
  s.func = 1;
  s.enter = 13345;
  s.leave = 13345 + 1234;
  s.peer = 1;
  s.tag = 7;
  s.comm = 0x44000000u;
  s.bytes = 800;
  w.event(s);
  s.enter = 20000;
  s.leave = 20010;
  s.comm = 0x84000001u;
  s.peer = 0;  // world rank 1 on the dup
  w.event(s);
  Completion comps[2] = {{0xAC000001u, 1, 7, 800, false}, {0xAC000002u, -1, -1, 0, true}};
  Event c;
  c.kind = FuncKind::Completion;
  c.func = 2;
  c.enter = 30000;
  c.leave = 30100;
  c.completions = comps;
  w.event(c);
  Event b;
  b.kind = FuncKind::Collective;
  b.func = 3;
  b.enter = 40000;
  b.leave = 40100;
  b.comm = 0x44000000u;
  b.root = 0;
  b.bytes = 64;
  w.event(b);
  Event d;
  d.kind = FuncKind::CommCreate;
  d.func = 4;
  d.enter = 50000;
  d.leave = 50100;
  d.comm = 0x44000000u;
  d.new_comm = 0x84000001u;
  w.event(d);
  m.enter = m.leave = 60000;
  m.marker_begin = false;
  w.event(m);
  w.end("finalize");
}

TEST(FormatDump, FileLines) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  write_rank(path, 0);
  DumpResult r = run_dump(path + " --stats");
  EXPECT_EQ(r.status, 0) << r.out;
  for (const std::string& want : std::vector<std::string>{
           "file ",
           "header version=" + std::to_string(format::kFormatVersion) +
               " run_id=0x77 rank=0 world_size=2 timer=monotonic\n",
           "function 1 send MPI_Send\n",
           "comm 0x84000001 global=9 time=0 size=2 inter=0 ranks=1,0\n",
           "callsite 3 0x0 file.c:42\n",
           "end finalize\n",
           "r0 s0 0.000000 us +0.000 us MARKER begin id=1 site=3 (file.c:42)\n",
           "r0 s0 12.345000 us +1.234 us MPI_Send peer=1(world 1) tag=7 comm=0x44000000 bytes=800\n",
           "MPI_Send peer=0(world 1) tag=7 comm=0x84000001 bytes=800\n",
           "MPI_Waitall count=2 req=0xac000001 src=1 tag=7 bytes=800 req=0xac000002 src=-1 tag=-1 "
           "bytes=0 cancelled\n",
           "MPI_Bcast comm=0x44000000 root=0(world 0) bytes=64\n",
           "MPI_Comm_dup comm=0x44000000 new_comm=0x84000001\n",
           "MARKER end id=1 site=3 (file.c:42)\n",
           "stats chunks=",
           " events=7\n",
       })
    EXPECT_NE(r.out.find(want), std::string::npos) << "missing: " << want << "\n" << r.out;
  EXPECT_EQ(r.out.find("warning:"), std::string::npos) << r.out;

  DumpResult q = run_dump(path + " --no-events");
  EXPECT_EQ(q.status, 0);
  EXPECT_EQ(q.out.find("MPI_Send peer="), std::string::npos);
  EXPECT_EQ(q.out.find("stats "), std::string::npos);
  fs::remove_all(dir);
}

TEST(FormatDump, DirectoryAndErrors) {
  const std::string dir = temp_dir();
  write_rank(dir + "/rank-00000.prof", 0);
  write_rank(dir + "/rank-00001.prof", 1);
  DumpResult r = run_dump(dir + " --no-events");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("trace " + dir + " world_size=2 ranks=2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank=1 world_size=2"), std::string::npos) << r.out;

  // Unreadable file: exit 1, message names it.
  const std::string bad = dir + "/bad.prof";
  std::ofstream(bad) << "this is not a trace, definitely not one, no no no no no no no no no no";
  DumpResult b = run_dump(bad);
  EXPECT_EQ(b.status, 1);
  EXPECT_NE(b.out.find(bad), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("bad magic"), std::string::npos) << b.out;
  DumpResult m = run_dump(dir + "/missing.prof");
  EXPECT_EQ(m.status, 1);
  EXPECT_NE(m.out.find(dir + "/missing.prof"), std::string::npos) << m.out;
  DumpResult e = run_dump(dir + "/empty-dir-does-not-exist/");
  EXPECT_EQ(e.status, 1);
  DumpResult u = run_dump("");
  EXPECT_EQ(u.status, 2);
  // A usage error names what was wrong.
  DumpResult o = run_dump(dir + " --bogus");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.out.find("unknown option --bogus"), std::string::npos) << o.out;
  fs::remove_all(dir);
}

TEST(FormatDump, DamagedFileStillDumpsWithWarnings) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  {
    TraceWriter w(path, 0, 1, 1);
    w.function(1, FuncKind::Other, "MPI_Comm_rank");
    Event e;
    e.kind = FuncKind::Other;
    e.func = 1;
    e.enter = 10;
    e.leave = 20;
    w.event(e);
    w.close_without_sealing();
  }
  DumpResult r = run_dump(path + " --stats");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("end (none)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("r0 s0 0.000000 us +0.010 us MPI_Comm_rank\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning: " + path + ": offset "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unsealed_chunks=1 "), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// Damage is printed as warnings and makes the exit status 3, with one line on
// stderr naming the file; records the shim could not store count as damage.
TEST(FormatDump, DamageAndLossesExitThree) {
  const std::string dir = temp_dir();
  write_rank(dir + "/rank-00000.prof", 0);
  write_rank(dir + "/rank-00001.prof", 1);
  ASSERT_EQ(run_dump(dir + " --stats").status, 0);
  const std::string path = dir + "/rank-00001.prof";
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(path) - 16));
    f.put('\x5a');
  }
  DumpResult r = run_dump(dir + " --stats");
  EXPECT_EQ(r.status, 3) << r.out;
  // (What is damaged, named: the byte flipped in the last chunk fails its CRC.)
  EXPECT_NE(r.out.find("prof-dump: damaged: " + path + ": 1 CRC mismatch\n"), std::string::npos) << r.out;
  r = run_dump(path + " --no-events --stats");
  EXPECT_EQ(r.status, 3) << r.out;

  const std::string lost = dir + "/lost.prof";
  {
    TraceWriter w(lost, 0, 1, 1);
    w.meta("records_lost", "17");
  }
  r = run_dump(lost);
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find(lost + ": 17 records lost when recording"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// A FIFO or a device is refused at once (never read), named with what it is.
TEST(FormatDump, FifoOrDeviceIsRefused) {
  const std::string dir = temp_dir();
  ASSERT_EQ(::mkfifo((dir + "/rank-00000.prof").c_str(), 0600), 0);
  DumpResult r = run_dump(dir + "/rank-00000.prof");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("rank-00000.prof: is a FIFO, not a regular file"), std::string::npos) << r.out;
  fs::create_symlink("/dev/zero", dir + "/zero.prof");
  r = run_dump(dir + "/zero.prof");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("zero.prof: is a character device"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// --chunks: one line per events chunk with its snapshot and the intervals
// open at its first event.
TEST(FormatDump, ChunksShowTheIntervalsOpenAtEachChunk) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/rank-00000.prof";
  {
    TraceWriter w(path, 0, 1, 1, format::TimerKind::Monotonic, 1024);
    w.function(1, FuncKind::Other, "MPI_Comm_rank");
    Event begin;
    begin.kind = FuncKind::Marker;
    begin.func = format::kMarkerFuncId;
    begin.marker_begin = true;
    begin.interval_id = 7;
    begin.enter = begin.leave = 5;
    w.event(begin);
    for (uint64_t i = 0; i < 300; ++i) {
      Event e;
      e.kind = FuncKind::Other;
      e.func = 1;
      e.enter = 10 + 10 * i;
      e.leave = e.enter + 5;
      w.event(e);
    }
  }
  DumpResult r = run_dump(path + " --no-events --chunks");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("chunk s0 0 offset="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" first=5 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("snapshot=1 open=-\n"), std::string::npos) << r.out;  // before the begin
  EXPECT_NE(r.out.find("chunk s0 1 offset="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("snapshot=1 open=7\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("snapshot=0"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

}  // namespace
