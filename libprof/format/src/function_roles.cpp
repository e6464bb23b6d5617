#include "prof/function_roles.h"

#include <algorithm>
#include <iterator>

namespace prof::format {
namespace {

struct NamedRole {
  std::string_view name;
  uint16_t role;
};

constexpr NamedRole kRoles[] = {
#include "function_roles.inc"
};

constexpr bool sorted_by_name() {
  for (size_t i = 1; i < std::size(kRoles); ++i)
    if (!(kRoles[i - 1].name < kRoles[i].name)) return false;
  return true;
}
static_assert(sorted_by_name(), "function_roles.inc must be sorted by name");

uint16_t find(std::string_view name) {
  const auto it = std::lower_bound(std::begin(kRoles), std::end(kRoles), name,
                                   [](const NamedRole& r, std::string_view n) { return r.name < n; });
  return it != std::end(kRoles) && it->name == name ? it->role : 0;
}

}  // namespace

uint16_t function_role(std::string_view name) {
  if (const uint16_t role = find(name)) return role;
  if (name.size() > 2 && name.substr(name.size() - 2) == "_c") return find(name.substr(0, name.size() - 2));
  return 0;
}

}  // namespace prof::format
