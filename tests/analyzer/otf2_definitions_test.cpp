// prof-analyze --otf2: the global definitions walked with libotf2's reader,
// asserting what a replay-based analyzer of MPI traces (Scalasca's) looks up
// in them, in the form Score-P writes it: the MPI paradigm declared with its
// name templates for unnamed communicators and windows, one location group
// of type PROCESS per rank under a system tree node, every rank's master
// thread in the MPI COMM_LOCATIONS group at its rank's position, and
// MPI_COMM_WORLD a communicator over a COMM_GROUP of every rank.
#include <otf2/otf2.h>

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
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
  std::map<OTF2_SystemTreeNodeRef, OTF2_SystemTreeNodeRef> tree_nodes;  // node -> parent
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
  };
  std::map<OTF2_CommRef, Comm> comms;
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
      cb, [](void* u, OTF2_SystemTreeNodeRef self, OTF2_StringRef, OTF2_StringRef, OTF2_SystemTreeNodeRef parent) {
        defs_of(u).tree_nodes[self] = parent;
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
      cb, [](void* u, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef group, OTF2_CommRef, OTF2_CommFlag) {
        defs_of(u).comms[self] = {name, group};
        return OTF2_CALLBACK_SUCCESS;
      });
  EXPECT_EQ(OTF2_Reader_RegisterGlobalDefCallbacks(reader.get(), global, cb, &d), OTF2_SUCCESS);
  uint64_t read = 0;
  EXPECT_EQ(OTF2_Reader_ReadAllGlobalDefinitions(reader.get(), global, &read), OTF2_SUCCESS);
  OTF2_GlobalDefReaderCallbacks_Delete(cb);
  return d;
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
  std::string out;
  ASSERT_EQ(run_shell(std::string(PROF_ANALYZE_BIN) + " --no-progress --no-index -q -o /dev/null " + b.dir() +
                          " --otf2 " + b.dir() + "/a",
                      &out),
            0)
      << out;
  const Definitions d = read_definitions(b.dir() + "/a/traces.otf2");

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
      node = d.tree_nodes.at(node);
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
}

}  // namespace
}  // namespace prof::test
