// Stand-ins (RankTrace::describe, RankTrace::stand_in): a rank known from
// its holder's description answers as the opened file does, definitions,
// time and end alike, with no events; a garbled description is refused;
// stand-ins of one share hold each distinct function table once; and only
// open() counts as a file opened.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "format_test_util.h"
#include "prof/definition_lines.h"
#include "prof/trace_reader.h"

using namespace prof;
using namespace prof::trace;
using format::FuncKind;

namespace {

// A rank that was killed in MPI_Recv, with every kind of definition and two
// threads' streams.
std::string write_rank(const std::string& dir) {
  const std::string path = dir + "/rank-00003.prof";
  TraceWriter w(path, 3, 8, 77, format::TimerKind::Monotonic, 2048);
  w.meta("ns_per_tick", "2");
  w.meta("epoch_ticks", "1000");
  w.meta("exe", "/bin/app");
  w.meta("command", "/bin/app --steps 10");
  w.meta("mpi_library", "MPICH Version: 4.0.2");
  w.environment("MPIR_CVAR_X", "1");
  w.setting("PROF_BUFFER_MB", ProfSetting{"4", true});
  w.function(1, FuncKind::Send, "MPI_Send");
  w.function(2, FuncKind::Recv, "MPI_Recv");
  CommDef half;
  half.handle = 0x84000001;
  half.global_id = 0xABCD;
  half.time = 3000;
  half.ranks = std::vector<int32_t>{1, 3, 5, 7};
  w.comm(half);
  w.callsite({5, 0x401000, "app.c", 42});
  w.call_site_index(1, 1, 5);
  w.load_object({0x400000, "/bin/app", "beef"});
  w.clock_sync({"init", 2000, 500.0, 10.0});
  w.clock_sync({"final", 90000, 900.0, 12.0});
  for (uint32_t stream = 0; stream < 2; ++stream)
    for (uint64_t i = 0; i < 300; ++i) {
      Event e;
      e.kind = FuncKind::Send;
      e.func = 1;
      e.stream = stream;
      e.enter = 4000 + i * 100 + stream;
      e.leave = e.enter + 50;
      e.peer = 1;
      e.tag = static_cast<int32_t>(i);
      e.comm = 0x84000001;
      e.bytes = 8;
      e.call_site_index = 1;
      w.event(e);
    }
  format::InFlightSlot slot{};
  slot.enter = 80000;
  slot.site_func = (uint64_t{2} << 48) | 0x401234;
  slot.peer = 2;
  slot.tag = 9;
  slot.comm = 0x44000000;
  w.live(85000, {slot});
  w.close_without_sealing();
  return path;
}

}  // namespace

TEST(FormatStandIn, AnswersAsTheOpenedFileWithoutEvents) {
  const std::string dir = temp_dir();
  const std::string path = write_rank(dir);
  const uint64_t opened_before = RankTrace::files_opened();
  std::string error;
  auto file = RankTrace::open(path, &error);
  ASSERT_TRUE(file) << error;
  EXPECT_EQ(RankTrace::files_opened(), opened_before + 1);
  auto stand_in = RankTrace::stand_in(file->describe(RankTrace::DescriptionFor::kReport), &error);
  ASSERT_TRUE(stand_in) << error;
  EXPECT_EQ(RankTrace::files_opened(), opened_before + 1);  // (a stand-in opens nothing)
  EXPECT_TRUE(stand_in->is_stand_in());
  EXPECT_FALSE(file->is_stand_in());

  const RankTrace& a = *file;
  const RankTrace& b = *stand_in;
  EXPECT_EQ(b.path(), a.path());
  EXPECT_EQ(b.rank(), 3);
  EXPECT_EQ(b.header().run_id, a.header().run_id);
  EXPECT_EQ(b.header().world_size, 8);
  EXPECT_EQ(b.meta(), a.meta());
  EXPECT_EQ(b.environment(), a.environment());
  ASSERT_EQ(b.settings().size(), 1u);
  EXPECT_EQ(b.settings().at("PROF_BUFFER_MB").value, "4");
  EXPECT_TRUE(b.settings().at("PROF_BUFFER_MB").from_environment);
  ASSERT_EQ(b.functions().size(), a.functions().size());
  ASSERT_TRUE(b.function(2));
  EXPECT_EQ(b.function(2)->name, "MPI_Recv");
  EXPECT_EQ(b.function(2)->kind, FuncKind::Recv);
  EXPECT_FALSE(b.function(3));
  // Communicators, the implicit ones included, by handle and time.
  ASSERT_EQ(b.comms().size(), a.comms().size());
  for (uint64_t t : {0ull, 2999ull, 3000ull, 50000ull}) {
    EXPECT_EQ(b.world_rank(0x84000001, t, 2), a.world_rank(0x84000001, t, 2)) << t;
    EXPECT_EQ(b.world_rank(format::kMpichCommWorld, t, 6), 6);
  }
  EXPECT_EQ(b.world_rank(0x84000001, 50000, 2), 5);
  ASSERT_TRUE(b.comm_at(format::kMpichCommWorld, 0));
  EXPECT_TRUE(b.comm_at(format::kMpichCommWorld, 0)->ranks.is_identity());
  ASSERT_TRUE(b.callsite(5));
  EXPECT_EQ(b.callsite(5)->file, "app.c");
  EXPECT_EQ(b.callsite(5)->line, 42);
  ASSERT_EQ(b.load_objects().size(), 1u);
  EXPECT_EQ(b.load_objects()[0].build_id, "beef");
  ASSERT_EQ(b.clock_syncs().size(), 2u);
  // Time: the rate, the epoch, the drift between the syncs, local zero.
  for (uint64_t t : {1000ull, 4000ull, 50000ull, 90000ull, 120000ull}) {
    EXPECT_EQ(b.to_global_ns(t), a.to_global_ns(t)) << t;
    EXPECT_EQ(b.to_local_ns(t), a.to_local_ns(t)) << t;
    EXPECT_EQ(b.ticks_at_global_ns(a.to_global_ns(t)), a.ticks_at_global_ns(a.to_global_ns(t))) << t;
  }
  // Its end: the call in flight, the heartbeat, the last moment alive.
  EXPECT_EQ(b.end_reason(), a.end_reason());
  EXPECT_EQ(b.heartbeat(), 85000u);
  EXPECT_EQ(b.last_alive(), a.last_alive());
  ASSERT_EQ(a.in_flight().size(), 1u);
  ASSERT_EQ(b.in_flight().size(), 1u);
  EXPECT_EQ(b.in_flight()[0].enter, 80000u);
  EXPECT_EQ(b.in_flight()[0].kind, FuncKind::Recv);
  EXPECT_EQ(b.in_flight()[0].site, a.in_flight()[0].site);
  // Sizes, what opening counted, and no events.
  EXPECT_EQ(b.event_bytes(), a.event_bytes());
  EXPECT_EQ(b.file_bytes(), a.file_bytes());
  EXPECT_EQ(a.file_bytes(), std::filesystem::file_size(a.path()));
  ASSERT_EQ(b.stream_count(), 2u);
  EXPECT_GT(a.chunk_count(1), 1u);
  for (size_t s = 0; s < 2; ++s) EXPECT_EQ(b.chunk_count(s), a.chunk_count(s));
  EXPECT_EQ(b.stats().unsealed_chunks, a.stats().unsealed_chunks);
  EXPECT_EQ(b.warnings(), a.warnings());
  Event e;
  EXPECT_FALSE(b.events().next(e));
  EXPECT_TRUE(b.events().next_batch().empty());
  EXPECT_FALSE(b.events_from(5000).next(e));
  EXPECT_EQ(b.chunk(0, 0).events, 0u);

  // For another process's pass: its time, communicators and end as the
  // file's, without what only the registry and the report read (the run's
  // facts, functions, call sites, load objects, warnings, statistics).
  const std::string pass_description = file->describe(RankTrace::DescriptionFor::kPass);
  auto lean = RankTrace::stand_in(pass_description, &error);
  ASSERT_TRUE(lean) << error;
  EXPECT_LT(pass_description.size(), file->describe(RankTrace::DescriptionFor::kReport).size());
  EXPECT_TRUE(lean->environment().empty());
  EXPECT_TRUE(lean->settings().empty());
  EXPECT_TRUE(lean->functions().empty());
  EXPECT_TRUE(lean->callsites().empty());
  EXPECT_TRUE(lean->load_objects().empty());
  EXPECT_TRUE(lean->warnings().empty());
  EXPECT_EQ(lean->stats().unsealed_chunks, 0u);
  // (The meta lines but the MPI library's text and the command line.)
  std::map<std::string, std::string> pass_meta = a.meta();
  ASSERT_EQ(pass_meta.erase("mpi_library") + pass_meta.erase("command"), 2u);
  EXPECT_EQ(lean->meta(), pass_meta);
  EXPECT_EQ(lean->rank(), 3);
  EXPECT_EQ(lean->header().run_id, a.header().run_id);
  ASSERT_EQ(lean->comms().size(), a.comms().size());
  EXPECT_EQ(lean->world_rank(0x84000001, 50000, 2), 5);
  ASSERT_EQ(lean->clock_syncs().size(), 2u);
  for (uint64_t t : {1000ull, 4000ull, 50000ull, 90000ull, 120000ull})
    EXPECT_EQ(lean->to_global_ns(t), a.to_global_ns(t)) << t;
  EXPECT_EQ(lean->end_reason(), a.end_reason());
  EXPECT_EQ(lean->last_alive(), a.last_alive());
  ASSERT_EQ(lean->in_flight().size(), 1u);
  EXPECT_EQ(lean->in_flight()[0].enter, 80000u);
  EXPECT_EQ(lean->event_bytes(), a.event_bytes());
  EXPECT_EQ(lean->file_bytes(), a.file_bytes());
  for (size_t s = 0; s < 2; ++s) EXPECT_EQ(lean->chunk_count(s), a.chunk_count(s));
  std::filesystem::remove_all(dir);
}

// Stand-ins made with one share hold one function table for the ranks that
// define the same functions (each rank of a run defines the shim's few
// hundred: about 60 KB a stand-in otherwise), and each answers as its file.
TEST(FormatStandIn, RanksWithTheSameFunctionsShareOneTable) {
  const std::string dir = temp_dir();
  auto file = RankTrace::open(write_rank(dir), nullptr);
  ASSERT_TRUE(file);
  TraceWriter other(dir + "/rank-00004.prof", 4, 8, 77);
  other.function(1, FuncKind::Send, "MPI_Send");
  other.function(7, FuncKind::Collective, "MPI_Barrier");
  other.close();
  auto different = RankTrace::open(dir + "/rank-00004.prof", nullptr);
  ASSERT_TRUE(different);
  StandInShare share;
  std::string error;
  auto a = RankTrace::stand_in(file->describe(RankTrace::DescriptionFor::kReport), &error, &share);
  auto b = RankTrace::stand_in(file->describe(RankTrace::DescriptionFor::kReport), &error, &share);
  auto c = RankTrace::stand_in(different->describe(RankTrace::DescriptionFor::kReport), &error, &share);
  ASSERT_TRUE(a && b && c) << error;
  EXPECT_EQ(&a->functions(), &b->functions());
  EXPECT_NE(&a->functions(), &c->functions());
  EXPECT_EQ(share.functions.size(), 2u);
  ASSERT_TRUE(b->function(2));
  EXPECT_EQ(b->function(2)->name, "MPI_Recv");
  EXPECT_FALSE(c->function(2));
  ASSERT_TRUE(c->function(7));
  EXPECT_EQ(c->function(7)->name, "MPI_Barrier");
  EXPECT_EQ(c->function(7)->kind, FuncKind::Collective);
  std::filesystem::remove_all(dir);
}

TEST(FormatStandIn, GarbledDescriptionIsRefused) {
  const std::string dir = temp_dir();
  auto file = RankTrace::open(write_rank(dir), nullptr);
  ASSERT_TRUE(file);
  const std::string d = file->describe(RankTrace::DescriptionFor::kReport);
  for (const std::string& bad : {std::string(), std::string("not one"), d.substr(0, d.size() / 2), d + "x"}) {
    std::string error;
    EXPECT_FALSE(RankTrace::stand_in(bad, &error)) << bad.size();
    EXPECT_NE(error.find("a rank file's description"), std::string::npos) << error;
  }
  std::filesystem::remove_all(dir);
}
