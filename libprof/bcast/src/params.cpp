#include "prof/bcast/params.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace prof::bcast {

std::size_t page_bytes() {
  const long p = ::sysconf(_SC_PAGESIZE);
  return p > 0 ? std::size_t(p) : 4096;
}

const char* impl_name(Impl impl) { return impl == Impl::Shm ? "shm" : "native"; }

namespace {
// Digits alone (strtol alone would take a sign and spaces before them).
bool parse_long(const char* text, long lo, long hi, long* out) {
  if (*text < '0' || *text > '9') return false;
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

}  // namespace prof::bcast
