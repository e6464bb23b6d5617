// The symbolizer names a call site's file as its compiler was given it, as the
// user knows it from the build command: `cc -g x.c` in x.c's directory gives
// "x.c", `cd build/dir && cc -g ../../src/x.c` gives "../../src/x.c" (never the
// path of the machine or directory the tool runs in).
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "prof/symbols/symbolizer.h"

namespace {

// `so` loaded here: its load object as a trace records it, and the return
// address of a call one byte into symbolizer_target_answer (resolved at its
// first instruction, on the line that opens the function).
struct LoadedTarget {
  void* lib = nullptr;
  prof::trace::LoadObject object;
  uint64_t address = 0;
  explicit LoadedTarget(const char* so) {
    lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(lib, nullptr) << dlerror();
    if (!lib) return;
    link_map* map = nullptr;
    EXPECT_EQ(dlinfo(lib, RTLD_DI_LINKMAP, &map), 0) << dlerror();
    object.path = so;
    object.bias = map->l_addr;
    address = reinterpret_cast<uintptr_t>(dlsym(lib, "symbolizer_target_answer")) + 1;
  }
  ~LoadedTarget() {
    if (lib) dlclose(lib);
  }
};

std::optional<prof::symbols::SourceLocation> resolve_target(const char* so) {
  LoadedTarget target(so);
  prof::symbols::Symbolizer symbolizer({target.object});
  return symbolizer.resolve_return_address(target.address);
}

// A load object recorded with a build id its file no longer has (rebuilt
// since the run): its line table would name wrong lines, so the address stays
// unresolved and the object is reported as rebuilt. Without a recorded build
// id (traces of earlier versions) it resolves as before.
TEST(Symbolizer, ObjectRebuiltSinceTheRunIsNotResolvedAgainst) {
  LoadedTarget target(SYMBOLIZER_TARGET_SO);
  ASSERT_NE(target.lib, nullptr);
  {
    prof::symbols::Symbolizer symbolizer({target.object});
    EXPECT_TRUE(symbolizer.resolve_return_address(target.address).has_value());
    EXPECT_TRUE(symbolizer.rebuilt_objects().empty());
  }
  target.object.build_id = "0123456789abcdef0123456789abcdef01234567";
  prof::symbols::Symbolizer symbolizer({target.object});
  EXPECT_FALSE(symbolizer.resolve_return_address(target.address).has_value());
  EXPECT_EQ(symbolizer.rebuilt_objects(), std::vector<std::string>{SYMBOLIZER_TARGET_SO});
}

TEST(Symbolizer, SourceNamedAsTheCompilerWasGivenIt) {
  const auto here = resolve_target(SYMBOLIZER_TARGET_HERE_SO);
  ASSERT_TRUE(here.has_value());
  EXPECT_EQ(here->file, "symbolizer_target.c");
  EXPECT_EQ(here->line, 3);
  const auto elsewhere = resolve_target(SYMBOLIZER_TARGET_SO);
  ASSERT_TRUE(elsewhere.has_value());
  EXPECT_EQ(elsewhere->file, SYMBOLIZER_TARGET_REL);
  EXPECT_EQ(elsewhere->line, 3);
  EXPECT_EQ(elsewhere->function, "symbolizer_target_answer");
}

// Given the whole load map of a process (objects reported as they are needed,
// in any order of the map), an address is resolved in the object holding it,
// whichever objects lie above and below it, and an address no object holds
// stays unresolved.
TEST(Symbolizer, WholeLoadMapResolvesInTheObjectHoldingTheAddress) {
  void* lib = dlopen(SYMBOLIZER_TARGET_SO, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  void* fn = dlsym(lib, "symbolizer_target_answer");
  ASSERT_NE(fn, nullptr) << dlerror();
  std::vector<prof::trace::LoadObject> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name && info->dlpi_name[0] == '/')
          static_cast<std::vector<prof::trace::LoadObject>*>(out)->push_back({info->dlpi_addr, info->dlpi_name, ""});
        return 0;
      },
      &objects);
  const auto target = reinterpret_cast<uintptr_t>(fn);
  size_t below = 0, above = 0;
  for (const auto& o : objects) (o.bias <= target ? below : above) += 1;
  ASSERT_GE(below, 2u) << "the target and an object under it";
  ASSERT_GE(above, 1u) << "an object above the target";
  for (bool reversed : {false, true}) {
    SCOPED_TRACE(reversed ? "map in reverse order" : "map in load order");
    if (reversed) std::reverse(objects.begin(), objects.end());
    prof::symbols::Symbolizer symbolizer(objects);
    EXPECT_FALSE(symbolizer.resolve_return_address(1).has_value());
    const auto loc = symbolizer.resolve_return_address(target + 1);
    ASSERT_TRUE(loc.has_value());
    EXPECT_EQ(loc->file, SYMBOLIZER_TARGET_REL);
    EXPECT_EQ(loc->line, 3);
    EXPECT_EQ(loc->function, "symbolizer_target_answer");
  }
  dlclose(lib);
}

}  // namespace
