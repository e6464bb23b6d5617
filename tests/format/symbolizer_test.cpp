// The symbolizer names a call site's file as an absolute, normalized path even
// when the object was compiled with a relative source path from elsewhere
// (`cd build/dir && cc -g ../../src/x.c`), which leaves the line table with a
// relative directory ("../.."): the name must not depend on where the tool runs.
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "symbolizer.h"

namespace {

TEST(Symbolizer, RelativeSourcePathResolvesToTheAbsoluteFile) {
  void* lib = dlopen(SYMBOLIZER_TARGET_SO, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  void* fn = dlsym(lib, "symbolizer_target_answer");
  ASSERT_NE(fn, nullptr) << dlerror();
  link_map* map = nullptr;
  ASSERT_EQ(dlinfo(lib, RTLD_DI_LINKMAP, &map), 0) << dlerror();

  prof::trace::LoadObject object;
  object.path = SYMBOLIZER_TARGET_SO;
  object.bias = map->l_addr;
  prof::symbols::Symbolizer symbolizer({object});
  // A return address one byte into the function: resolved at its first
  // instruction, on the line that opens the function.
  const auto loc = symbolizer.resolve_return_address(reinterpret_cast<uintptr_t>(fn) + 1);
  ASSERT_TRUE(loc.has_value());
  const std::filesystem::path want =
      std::filesystem::path(SYMBOLIZER_TARGET_SRC).lexically_normal();
  EXPECT_TRUE(std::filesystem::path(loc->file).is_absolute()) << loc->file;
  EXPECT_EQ(loc->file, want.string());
  EXPECT_TRUE(std::filesystem::equivalent(loc->file, SYMBOLIZER_TARGET_SRC)) << loc->file;
  EXPECT_EQ(loc->line, 3);
  EXPECT_EQ(loc->function, "symbolizer_target_answer");
  dlclose(lib);
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
          static_cast<std::vector<prof::trace::LoadObject>*>(out)->push_back({info->dlpi_addr, info->dlpi_name});
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
    EXPECT_TRUE(std::filesystem::equivalent(loc->file, SYMBOLIZER_TARGET_SRC)) << loc->file;
    EXPECT_EQ(loc->line, 3);
    EXPECT_EQ(loc->function, "symbolizer_target_answer");
  }
  dlclose(lib);
}

}  // namespace
