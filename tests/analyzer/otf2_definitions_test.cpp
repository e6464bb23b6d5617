// prof-analyze --otf2: the global definitions walked with libotf2's reader,
// asserting what a replay-based analyzer of MPI traces (Scalasca's) looks up
// in them, in the form Score-P writes it: the MPI paradigm declared with its
// name templates for unnamed communicators and windows, one location group
// of type PROCESS per rank under a system tree node, every rank's master
// thread in the MPI COMM_LOCATIONS group at its rank's position, and
// MPI_COMM_WORLD a communicator over a COMM_GROUP of every rank; then, as
// Score-P's system tree, communicators and clock: a node per host under the
// machine, MPI_COMM_SELF over a COMM_SELF group, each communicator's parent.
#include <otf2/otf2.h>

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "run_command.h"
#include "trace_builder.h"

namespace prof::test {
namespace {

// The global definitions the test looks at, as libotf2 reads them.
struct Definitions {
  std::map<OTF2_StringRef, std::string> strings;
  std::map<OTF2_Paradigm, OTF2_ParadigmClass> paradigms;
  std::map<std::pair<OTF2_Paradigm, OTF2_ParadigmProperty>, OTF2_StringRef> string_properties;
  struct TreeNode {
    OTF2_StringRef name, class_name;
    OTF2_SystemTreeNodeRef parent;
  };
  std::map<OTF2_SystemTreeNodeRef, TreeNode> tree_nodes;
  struct LocationGroup {
    OTF2_StringRef name;
    OTF2_LocationGroupType type;
    OTF2_SystemTreeNodeRef parent;
  };
  std::map<OTF2_LocationGroupRef, LocationGroup> location_groups;
  std::map<OTF2_LocationRef, OTF2_LocationGroupRef> locations;
  struct Group {
    OTF2_GroupType type;
    OTF2_Paradigm paradigm;
    std::vector<uint64_t> members;
  };
  std::map<OTF2_GroupRef, Group> groups;
  struct Comm {
    OTF2_StringRef name;
    OTF2_GroupRef group;
    OTF2_CommRef parent;
  };
  std::map<OTF2_CommRef, Comm> comms;
  struct Clock {
    uint64_t global_offset = 0, realtime = 0;
  };
  std::vector<Clock> clock_properties;
};

Definitions& defs_of(void* user) { return *static_cast<Definitions*>(user); }

Definitions read_definitions(const std::string& anchor) {
  Definitions d;
  std::unique_ptr<OTF2_Reader, decltype(&OTF2_Reader_Close)> reader(OTF2_Reader_Open(anchor.c_str()),
                                                                    &OTF2_Reader_Close);
  if (!reader) {
    ADD_FAILURE() << "libotf2 cannot open " << anchor;
    return d;
  }
  OTF2_Reader_SetSerialCollectiveCallbacks(reader.get());
  OTF2_GlobalDefReader* global = OTF2_Reader_GetGlobalDefReader(reader.get());
  OTF2_GlobalDefReaderCallbacks* cb = OTF2_GlobalDefReaderCallbacks_New();
  OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, [](void* u, OTF2_StringRef self, const char* s) {
    defs_of(u).strings[self] = s;
    return OTF2_CALLBACK_SUCCESS;
  });
  OTF2_GlobalDefReaderCallbacks_SetParadigmCallback(
      cb, [](void* u, OTF2_Paradigm p, OTF2_StringRef, OTF2_ParadigmClass c) {
        defs_of(u).paradigms[p] = c;
        return OTF2_CALLBACK_SUCCESS;
      });
  OTF2_GlobalDefReaderCallbacks_SetParadigmPropertyCallback(
      cb, [](void* u, OTF2_Paradigm p, OTF2_ParadigmProperty property, OTF2_Type type, OTF2_AttributeValue v) {
        if (type == OTF2_TYPE_STRING) defs_of(u).string_properties[{p, property}] = v.stringRef;
        return OTF2_CALLBACK_SUCCESS;
      });
  OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback(
      cb, [](void* u, OTF2_SystemTreeNodeRef self, OTF2_StringRef name, OTF2_StringRef class_name,
             OTF2_SystemTreeNodeRef parent) {
        defs_of(u).tree_nodes[self] = {name, class_name, parent};
        return OTF2_CALLBACK_SUCCESS;
      });
  OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(
      cb, [](void* u, OTF2_LocationGroupRef self, OTF2_StringRef name, OTF2_LocationGroupType type,
             OTF2_SystemTreeNodeRef parent, OTF2_LocationGroupRef) {
        defs_of(u).location_groups[self] = {name, type, parent};
        return OTF2_CALLBACK_SUCCESS;
      });
  OTF2_GlobalDefReaderCallbacks_SetLocationCallback(
      cb, [](void* u, OTF2_LocationRef self, OTF2_StringRef, OTF2_LocationType, uint64_t, OTF2_LocationGroupRef group) {
        defs_of(u).locations[self] = group;
        return OTF2_CALLBACK_SUCCESS;
      });
  OTF2_GlobalDefReaderCallbacks_SetGroupCallback(
      cb, [](void* u, OTF2_GroupRef self, OTF2_StringRef, OTF2_GroupType type, OTF2_Paradigm paradigm,
             OTF2_GroupFlag, uint32_t n, const uint64_t* members) {
        defs_of(u).groups[self] = {type, paradigm, std::vector<uint64_t>(members, members + n)};
        return OTF2_CALLBACK_SUCCESS;
      });
  OTF2_GlobalDefReaderCallbacks_SetCommCallback(
      cb, [](void* u, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef group, OTF2_CommRef parent,
             OTF2_CommFlag) {
        defs_of(u).comms[self] = {name, group, parent};
        return OTF2_CALLBACK_SUCCESS;
      });
  OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(
      cb, [](void* u, uint64_t, uint64_t global_offset, uint64_t, uint64_t realtime) {
        defs_of(u).clock_properties.push_back({global_offset, realtime});
        return OTF2_CALLBACK_SUCCESS;
      });
  EXPECT_EQ(OTF2_Reader_RegisterGlobalDefCallbacks(reader.get(), global, cb, &d), OTF2_SUCCESS);
  uint64_t read = 0;
  EXPECT_EQ(OTF2_Reader_ReadAllGlobalDefinitions(reader.get(), global, &read), OTF2_SUCCESS);
  OTF2_GlobalDefReaderCallbacks_Delete(cb);
  return d;
}

// prof-analyze --otf2 over the trace in `dir` (the archive in dir/a), and the
// archive's definitions; an export that fails fails the test (and gives none).
Definitions export_definitions(const std::string& dir) {
  std::string out;
  const int status = run_shell(std::string(PROF_ANALYZE_BIN) + " --no-progress --no-index -q -o /dev/null " + dir +
                                   " --otf2 " + dir + "/a",
                               &out);
  if (status != 0) {
    ADD_FAILURE() << "prof-analyze --otf2 exited " << status << ": " << out;
    return Definitions{};
  }
  return read_definitions(dir + "/a/traces.otf2");
}

// Three ranks: a message, an Allreduce on the world, then MPI_Finalize.
TEST(Otf2Definitions, WhatScalascasReaderLooksUp) {
  constexpr int kRanks = 3;
  TraceBuilder b(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    b.init(r, 0, 1 * kMs);
    if (r == 0) b.send(r, 3 * kMs, 3 * kMs + 10 * kUs, 1, 7);
    if (r == 1) b.recv(r, 2500 * kUs, 3 * kMs + 20 * kUs, 0, 7);
    b.collective(r, Allreduce, 4 * kMs, 5 * kMs);
    b.finalize(r, 7 * kMs, 8 * kMs);
  }
  b.close();
  const Definitions d = export_definitions(b.dir());
  ASSERT_FALSE(::testing::Test::HasFailure());

  // The MPI paradigm, a process paradigm, with Score-P's name templates.
  ASSERT_TRUE(d.paradigms.count(OTF2_PARADIGM_MPI));
  EXPECT_EQ(d.paradigms.at(OTF2_PARADIGM_MPI), OTF2_PARADIGM_CLASS_PROCESS);
  for (const auto& [property, want] :
       {std::pair{OTF2_PARADIGM_PROPERTY_COMM_NAME_TEMPLATE, "MPI_COMM_${id}"},
        std::pair{OTF2_PARADIGM_PROPERTY_RMA_WIN_NAME_TEMPLATE, "MPI_WIN_${id}"}}) {
    const auto it = d.string_properties.find({OTF2_PARADIGM_MPI, property});
    ASSERT_NE(it, d.string_properties.end()) << "MPI paradigm property " << int(property) << " missing";
    EXPECT_EQ(d.strings.at(it->second), want);
  }

  // One PROCESS location group per rank, its id the rank, under a node of
  // the system tree whose root is a node without parent.
  ASSERT_EQ(d.location_groups.size(), size_t(kRanks));
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(d.location_groups.count(OTF2_LocationGroupRef(r))) << r;
    const auto& g = d.location_groups.at(OTF2_LocationGroupRef(r));
    EXPECT_EQ(g.type, OTF2_LOCATION_GROUP_TYPE_PROCESS);
    EXPECT_EQ(d.strings.at(g.name), "MPI Rank " + std::to_string(r));
    ASSERT_TRUE(d.tree_nodes.count(g.parent)) << "rank " << r << "'s system tree node is not defined";
    OTF2_SystemTreeNodeRef node = g.parent;
    for (int depth = 0; node != OTF2_UNDEFINED_SYSTEM_TREE_NODE && depth < 8; ++depth) {
      ASSERT_TRUE(d.tree_nodes.count(node)) << "undefined system tree node " << node;
      node = d.tree_nodes.at(node).parent;
    }
    EXPECT_EQ(node, OTF2_UNDEFINED_SYSTEM_TREE_NODE) << "the system tree has no root";
  }

  // One MPI COMM_LOCATIONS group: every rank's master thread (the location
  // of its group with Score-P's id, the rank) at its rank's position.
  std::vector<uint64_t> world_locations;
  size_t comm_locations_groups = 0;
  for (const auto& [ref, g] : d.groups)
    if (g.type == OTF2_GROUP_TYPE_COMM_LOCATIONS && g.paradigm == OTF2_PARADIGM_MPI) {
      ++comm_locations_groups;
      world_locations = g.members;
    }
  ASSERT_EQ(comm_locations_groups, 1u);
  ASSERT_EQ(world_locations.size(), size_t(kRanks));
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(world_locations[size_t(r)], uint64_t(r)) << "position " << r;
    ASSERT_TRUE(d.locations.count(OTF2_LocationRef(r))) << "rank " << r << "'s master thread is not a location";
    EXPECT_EQ(d.locations.at(OTF2_LocationRef(r)), OTF2_LocationGroupRef(r));
  }

  // Every communicator's group is an MPI COMM_GROUP (or COMM_SELF) of
  // positions in the COMM_LOCATIONS group; MPI_COMM_WORLD's holds them all.
  bool world = false;
  for (const auto& [ref, c] : d.comms) {
    ASSERT_TRUE(d.groups.count(c.group)) << "communicator " << ref << ": undefined group";
    const auto& g = d.groups.at(c.group);
    EXPECT_TRUE(g.type == OTF2_GROUP_TYPE_COMM_GROUP || g.type == OTF2_GROUP_TYPE_COMM_SELF) << ref;
    EXPECT_EQ(g.paradigm, OTF2_PARADIGM_MPI) << ref;
    for (uint64_t m : g.members) EXPECT_LT(m, uint64_t(kRanks)) << ref;
    if (d.strings.at(c.name) == "MPI_COMM_WORLD") {
      world = true;
      EXPECT_EQ(g.type, OTF2_GROUP_TYPE_COMM_GROUP);
      EXPECT_EQ(g.members, (std::vector<uint64_t>{0, 1, 2}));
    }
  }
  EXPECT_TRUE(world) << "no communicator MPI_COMM_WORLD";

  // A trace that records no wall-clock time: no realtime stamp.
  ASSERT_EQ(d.clock_properties.size(), 1u);
  EXPECT_EQ(d.clock_properties[0].realtime, OTF2_UNDEFINED_TIMESTAMP);
}

// The clock properties' realtime stamp is the wall-clock time of the global
// offset (the run's first event): the epoch's wall-clock time the trace
// records (`M epoch_realtime_ns`, the lowest rank's) plus the time from the
// epoch to that event.
TEST(Otf2Definitions, ClockPropertiesDateTheFirstEventByTheWallClock) {
  constexpr uint64_t kEpochWallNs = 1700000000123456789ull;
  TraceBuilder b(2);
  for (int r = 0; r < 2; ++r) {
    b.w(r).meta("epoch_ticks", "0");
    // Rank 1's clock reads its epoch 5 us later: the lowest rank's is taken.
    b.w(r).meta("epoch_realtime_ns", std::to_string(kEpochWallNs + uint64_t(r) * 5 * kUs));
    b.init(r, 2 * kMs + uint64_t(r) * kMs, 3 * kMs + uint64_t(r) * kMs);
    b.finalize(r, 7 * kMs, 8 * kMs);
  }
  b.close();
  const Definitions d = export_definitions(b.dir());
  ASSERT_FALSE(::testing::Test::HasFailure());
  ASSERT_EQ(d.clock_properties.size(), 1u);
  EXPECT_EQ(d.clock_properties[0].global_offset, 2 * kMs);  // the first event, rank 0's MPI_Init
  EXPECT_EQ(d.clock_properties[0].realtime, kEpochWallNs + 2 * kMs);
}

// Three ranks on two hosts (0 and 1 on node-a, 2 on node-b). Ranks 1 and 2
// split MPI_COMM_WORLD into `sub` (rank 0 gets no communicator) and
// duplicate it into `dup`, reduce on it, and every rank calls a barrier on
// its MPI_COMM_SELF.
constexpr uint32_t kSub = 0x84000002u, kDup = 0x84000003u;
constexpr uint32_t kSelf = 0x44000001u;  // MPICH's MPI_COMM_SELF
constexpr uint16_t kCommSplit = 120, kCommDup = 121;
const char* const kHosts[] = {"node-a", "node-a", "node-b"};

struct HostsAndCommunicators {
  TraceBuilder b{3};
  Definitions d;
  HostsAndCommunicators() {
    auto create = [&](int r, uint16_t func, uint32_t parent, uint32_t child, uint64_t enter) {
      b.comm_create(r, func, enter, enter + 10 * kUs, parent, child);
    };
    for (int r = 0; r < 3; ++r) {
      b.w(r).meta("host", kHosts[r]);
      b.w(r).function(kCommSplit, FuncKind::CommCreate, "MPI_Comm_split");
      b.w(r).function(kCommDup, FuncKind::CommCreate, "MPI_Comm_dup");
      if (r > 0)
        for (const auto& [handle, gid, time] : {std::tuple{kSub, 77u, 2 * kMs}, std::tuple{kDup, 78u, 3 * kMs}}) {
          trace::CommDef def;
          def.handle = handle;
          def.global_id = gid;
          def.time = time;
          def.ranks = {1, 2};
          b.w(r).comm(def);
        }
      b.init(r, 0, 1 * kMs);
      create(r, kCommSplit, kWorld, r > 0 ? kSub : format::kNoComm, 2 * kMs);
      if (r > 0) {
        create(r, kCommDup, kSub, kDup, 3 * kMs);
        b.collective(r, Allreduce, 4 * kMs, 5 * kMs, kDup);
      }
      b.collective(r, Barrier, 6 * kMs, 6 * kMs + 1 * kUs, kSelf);
      b.finalize(r, 7 * kMs, 8 * kMs);
    }
    b.close();
    d = export_definitions(b.dir());
  }
  // The communicators whose group holds exactly `members`.
  std::vector<OTF2_CommRef> comms_over(const std::vector<uint64_t>& members) const {
    std::vector<OTF2_CommRef> found;
    for (const auto& [ref, c] : d.comms)
      if (d.groups.count(c.group) && d.groups.at(c.group).members == members) found.push_back(ref);
    return found;
  }
};

// Score-P's system tree: the machine at the root, a node per host, each
// rank's location group under its host's node.
TEST(Otf2Definitions, SystemTreeHasANodePerHostUnderTheMachine) {
  const HostsAndCommunicators run;
  const Definitions& d = run.d;
  std::map<std::string, OTF2_SystemTreeNodeRef> node_of_host;
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(d.location_groups.count(OTF2_LocationGroupRef(r))) << r;
    const OTF2_SystemTreeNodeRef node = d.location_groups.at(OTF2_LocationGroupRef(r)).parent;
    ASSERT_TRUE(d.tree_nodes.count(node)) << r;
    const auto& n = d.tree_nodes.at(node);
    EXPECT_EQ(d.strings.at(n.name), kHosts[r]) << "rank " << r;
    EXPECT_EQ(d.strings.at(n.class_name), "node") << "rank " << r;
    node_of_host.emplace(kHosts[r], node);
    EXPECT_EQ(node_of_host.at(kHosts[r]), node) << "rank " << r << ": a second node for its host";
    ASSERT_TRUE(d.tree_nodes.count(n.parent)) << "rank " << r << "'s node has no machine above it";
    const auto& machine = d.tree_nodes.at(n.parent);
    EXPECT_EQ(d.strings.at(machine.class_name), "machine");
    EXPECT_EQ(machine.parent, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
  }
  EXPECT_EQ(node_of_host.size(), 2u);
  EXPECT_EQ(d.tree_nodes.size(), 3u);  // the machine and two nodes
}

// Every rank's MPI_COMM_SELF is one communicator over a COMM_SELF group
// without members, as Score-P defines it (not a one-member group per rank).
TEST(Otf2Definitions, CommSelfIsOneCommunicatorOverACommSelfGroup) {
  const HostsAndCommunicators run;
  const Definitions& d = run.d;
  std::vector<OTF2_CommRef> self;
  for (const auto& [ref, c] : d.comms) {
    ASSERT_TRUE(d.groups.count(c.group)) << ref;
    if (d.groups.at(c.group).type == OTF2_GROUP_TYPE_COMM_SELF) self.push_back(ref);
  }
  ASSERT_EQ(self.size(), 1u);
  const auto& c = d.comms.at(self[0]);
  EXPECT_EQ(d.strings.at(c.name), "MPI_COMM_SELF");
  EXPECT_EQ(d.groups.at(c.group).paradigm, OTF2_PARADIGM_MPI);
  EXPECT_TRUE(d.groups.at(c.group).members.empty());
  for (uint64_t r = 0; r < 3; ++r) EXPECT_TRUE(run.comms_over({r}).empty()) << "a one-member communicator of rank " << r;
}

// A communicator's parent is the one it was created from: sub's is
// MPI_COMM_WORLD, dup's sub; the predefined ones have none.
TEST(Otf2Definitions, CommunicatorsNameTheParentTheyWereCreatedFrom) {
  const HostsAndCommunicators run;
  const Definitions& d = run.d;
  const std::vector<OTF2_CommRef> pair = run.comms_over({1, 2});
  ASSERT_EQ(pair.size(), 2u);  // sub and dup
  const std::vector<OTF2_CommRef> world = run.comms_over({0, 1, 2});
  ASSERT_EQ(world.size(), 1u);
  EXPECT_EQ(d.comms.at(world[0]).parent, OTF2_UNDEFINED_COMM);
  // sub is the one whose parent is the world; dup's parent is sub.
  const OTF2_CommRef sub = d.comms.at(pair[0]).parent == world[0] ? pair[0] : pair[1];
  const OTF2_CommRef dup = sub == pair[0] ? pair[1] : pair[0];
  EXPECT_EQ(d.comms.at(sub).parent, world[0]);
  EXPECT_EQ(d.comms.at(dup).parent, sub);
  for (const auto& [ref, c] : d.comms) {
    if (d.strings.at(c.name) == "MPI_COMM_SELF") {
      EXPECT_EQ(c.parent, OTF2_UNDEFINED_COMM);
    }
  }
}

}  // namespace
}  // namespace prof::test
