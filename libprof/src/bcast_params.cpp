#include "bcast_params.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace prof::bcast {

namespace {
std::size_t page_bytes() {
  const long p = ::sysconf(_SC_PAGESIZE);
  return p > 0 ? std::size_t(p) : 4096;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

bool parse_long(const char* text, long lo, long hi, long* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}
}  // namespace

std::size_t model_fragment_bytes(std::size_t queue_bytes, std::size_t page) {
  const double f = std::sqrt(double(queue_bytes) * kModelNotifyOverCopyByte);
  const std::size_t pages = std::size_t(std::ceil(f / double(page)));
  return (pages ? pages : 1) * page;
}

Settings default_settings() {
  Settings s;
  s.fragment = model_fragment_bytes(kModelQueueBytes, page_bytes());
  s.slots = int(kModelQueueBytes / s.fragment);
  if (s.slots < 2) s.slots = 2;
  s.sets = 2;
  return s;
}

bool parse_tree(const std::string& text, TreeSpec* out) {
  if (text == "flat") {
    *out = {TreeKind::Flat, 0};
    return true;
  }
  if (text == "chain") {
    *out = {TreeKind::Chain, 1};
    return true;
  }
  const auto colon = text.find(':');
  if (colon == std::string::npos) return false;
  const std::string kind = text.substr(0, colon);
  long k = 0;
  if (!parse_long(text.c_str() + colon + 1, 1, 1024, &k)) return false;
  if (kind == "kary") {
    *out = {TreeKind::Kary, int(k)};
    return true;
  }
  if (kind == "knomial" && k >= 2) {
    *out = {TreeKind::Knomial, int(k)};
    return true;
  }
  return false;
}

std::string tree_name(const TreeSpec& tree) {
  switch (tree.kind) {
    case TreeKind::Flat: return "flat";
    case TreeKind::Chain: return "chain";
    case TreeKind::Kary: return "kary:" + std::to_string(tree.k);
    case TreeKind::Knomial: return "knomial:" + std::to_string(tree.k);
  }
  return "?";
}

bool read_settings(Settings* out, std::vector<std::string>* errors) {
  const std::size_t before = errors->size();
  const std::size_t page = page_bytes();
  Settings s = default_settings();
  if (const char* v = env("PROF_BCAST")) {
    if (std::strcmp(v, "native") == 0) s.impl = Impl::Native;
    else if (std::strcmp(v, "shm") == 0) s.impl = Impl::Shm;
    else errors->push_back(std::string("PROF_BCAST='") + v + "' is not one of native, shm");
  }
  if (const char* v = env("PROF_BCAST_FRAGMENT")) {
    long f = 0;
    if (!parse_long(v, long(page), 64l << 20, &f) || f % long(page) != 0)
      errors->push_back(std::string("PROF_BCAST_FRAGMENT='") + v + "' is not a multiple of the page size (" +
                        std::to_string(page) + ") from " + std::to_string(page) + " to 67108864 bytes");
    else
      s.fragment = std::size_t(f);
  }
  bool slots_ok = true, sets_ok = true;
  if (const char* v = env("PROF_BCAST_SLOTS")) {
    long n = 0;
    if (!parse_long(v, 1, 65536, &n))
      errors->push_back(std::string("PROF_BCAST_SLOTS='") + v + "' is not an integer in 1..65536"), slots_ok = false;
    else
      s.slots = int(n);
  }
  if (const char* v = env("PROF_BCAST_SETS")) {
    long n = 0;
    if (!parse_long(v, 1, 65536, &n))
      errors->push_back(std::string("PROF_BCAST_SETS='") + v + "' is not an integer in 1..65536"), sets_ok = false;
    else
      s.sets = int(n);
  }
  if (slots_ok && sets_ok && s.slots % s.sets != 0)
    errors->push_back("PROF_BCAST_SETS=" + std::to_string(s.sets) + " does not divide PROF_BCAST_SLOTS=" +
                      std::to_string(s.slots) + " (each set holds slots/sets buffers)");
  if (const char* v = env("PROF_BCAST_TREE")) {
    if (!parse_tree(v, &s.tree))
      errors->push_back(std::string("PROF_BCAST_TREE='") + v +
                        "' is not one of flat, chain, kary:K (K in 1..1024), knomial:K (K in 2..1024)");
  }
  if (const char* v = env("PROF_TEST_BCAST_FAIL_SHM")) {
    if (std::strcmp(v, "1") == 0) s.test_fail_shm = true;
    else if (std::strcmp(v, "0") != 0)
      errors->push_back(std::string("PROF_TEST_BCAST_FAIL_SHM='") + v + "' is not 0 or 1");
  }
  if (errors->size() != before) return false;
  *out = s;
  return true;
}

}  // namespace prof::bcast
