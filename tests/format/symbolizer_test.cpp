// The symbolizer names a call site's file as an absolute, normalized path even
// when the object was compiled with a relative source path from elsewhere
// (`cd build/dir && cc -g ../../src/x.c`), which leaves the line table with a
// relative directory ("../.."): the name must not depend on where the tool runs.
#include <dlfcn.h>
#include <link.h>

#include <filesystem>
#include <string>

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

}  // namespace
