// Numbers in definition lines: decimal, or hexadecimal with a 0x prefix,
// wherever a number is expected; the S address and the L bias are hexadecimal
// with or without the 0x prefix (TraceWriter writes 0x-prefixed hex for
// handles, addresses and biases, decimal for everything else).
#include <charconv>

#include "reader_internal.h"

namespace prof::trace::reader {

bool parse_u64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && p == s.data() + s.size();
}
bool parse_hex_u64(std::string_view s, uint64_t* out) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return ec == std::errc() && p == s.data() + s.size();
}
bool parse_i64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  bool neg = false;
  if (s[0] == '-') {
    neg = true;
    s.remove_prefix(1);
  }
  uint64_t u;
  if (!parse_u64(s, &u)) return false;
  if (neg) {
    if (u > uint64_t{1} << 63) return false;
    *out = static_cast<int64_t>(0 - u);
  } else {
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(u);
  }
  return true;
}
bool parse_i32(std::string_view s, int32_t* out) {
  int64_t v;
  if (!parse_i64(s, &v) || v < INT32_MIN || v > INT32_MAX) return false;
  *out = static_cast<int32_t>(v);
  return true;
}
bool parse_u32(std::string_view s, uint32_t* out) {
  uint64_t v;
  if (!parse_u64(s, &v) || v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}
bool parse_double(std::string_view s, double* out) {
  if (s.empty()) return false;
  if (s[0] == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}
bool parse_rank_list(std::string_view s, std::vector<int32_t>* out) {
  out->clear();
  if (s.empty()) return true;
  size_t start = 0;
  for (;;) {
    size_t comma = s.find(',', start);
    std::string_view item = s.substr(start, comma == std::string_view::npos ? s.npos : comma - start);
    int32_t r;
    if (!parse_i32(item, &r)) return false;
    out->push_back(r);
    if (comma == std::string_view::npos) return true;
    start = comma + 1;
  }
}

}  // namespace prof::trace::reader
