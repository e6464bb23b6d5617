// The run record (what a run ran under) read from a trace's definitions: its
// JSON `run`, its text block, and traces written before it was recorded.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "prof/analysis/report.h"
#include "run_facts_traces.h"

namespace prof::test {
namespace {

using nlohmann::json;

TEST(RunRecord, ReadFromTheDefinitionsAndAbsentInOlderTraces) {
  TraceBuilder bn(3), bo(2);
  Plan pn;
  pn.ranks = 3;
  pn.bcast = "shm";
  const analysis::Analysis n = analyzed(pn, bn);
  EXPECT_EQ(n.run.mpi_library, "MPICH Version:\t4.0.2\nMPICH Device:\tch4:ucx");
  EXPECT_EQ(n.run.library, "MPICH");
  EXPECT_EQ(n.run.library_version, "4.0.2");
  EXPECT_EQ(n.run.transport, "ucx");
  ASSERT_EQ(n.run.hosts.size(), 2u);
  EXPECT_EQ(n.run.hosts[0].name, "n0");
  EXPECT_EQ(n.run.hosts[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(n.run.hosts[1].ranks, (std::vector<int>{2}));
  EXPECT_EQ(n.run.ranks_per_node(), 2);
  std::ostringstream js;
  analysis::write_json_report(n, js);
  const json run = json::parse(js.str())["run"];
  EXPECT_EQ(run["transport"], (json{{"name", "ucx"}, {"version", "1.13.1"}, {"settings", {{"UCX_TLS", "sm,self"}}}}));
  EXPECT_EQ(run["hosts"][1], (json{{"host", "n1"}, {"ranks", {2}}}));
  EXPECT_EQ(run["ranks_per_node"], 2);
  EXPECT_EQ(run["command"], "./app -n 10");
  EXPECT_EQ(run["prof_settings"]["PROF_BCAST"], "shm");
  EXPECT_EQ(run["prof_settings_from_env"], (json{"PROF_BCAST", "PROF_OUTPUT"}));
  std::ostringstream text;
  analysis::write_text_report(n, text);
  EXPECT_NE(text.str().find("\n---Run---\nMPI library MPICH 4.0.2\nTransport ucx 1.13.1\n"
                            "Hosts 2: n0 (ranks 0-1) n1 (ranks 2)\nCommand ./app -n 10\n"
                            "Settings PROF_BCAST=shm PROF_OUTPUT=/tmp/trace-shm\nEnvironment UCX_TLS=sm,self\n"),
            std::string::npos)
      << text.str();

  // A trace from before these definitions: nothing claimed, the text report
  // without the block.
  Plan po;
  po.facts = false;
  const analysis::Analysis o = analyzed(po, bo);
  EXPECT_TRUE(o.run.mpi_library.empty() && o.run.prof_settings.empty() && o.run.environment.empty());
  std::ostringstream ojs, otext;
  analysis::write_json_report(o, ojs);
  const json orun = json::parse(ojs.str())["run"];
  EXPECT_TRUE(orun["mpi_library"].is_null() && orun["library_version"].is_null() &&
              orun["transport"]["version"].is_null() && orun["hosts"].empty());
  analysis::write_text_report(o, otext);
  EXPECT_EQ(otext.str().find("---Run---"), std::string::npos);
}

TEST(RunRecord, LibraryAndVersionFromTheVersionString) {
  using analysis::library_and_version;
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(library_and_version("MPICH Version:\t4.0.2\nMPICH Release date: x"), (P{"MPICH", "4.0.2"}));
  EXPECT_EQ(library_and_version("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4"), (P{"Open MPI", "4.1.4"}));
  EXPECT_EQ(library_and_version("Intel(R) MPI Library 2021.6 for Linux* OS\n"), (P{"Intel(R) MPI Library", "2021.6"}));
  EXPECT_EQ(library_and_version("SomeMPI"), (P{"SomeMPI", ""}));
}

}  // namespace
}  // namespace prof::test
