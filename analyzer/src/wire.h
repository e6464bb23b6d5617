// Bytes that cross processes in a distributed analysis (exchange.h): the
// format's byte wire (prof/byte_wire.h), its short reads named as the
// distributed analysis's.
#pragma once

#include <string>
#include <string_view>

#include "prof/byte_wire.h"

namespace prof::analysis::detail {

using WireOut = prof::wire::Out;

struct WireIn : prof::wire::In {
  explicit WireIn(std::string_view s)
      : prof::wire::In(s.data(), s.data() + s.size(), "distributed analysis: short message") {}
};

}  // namespace prof::analysis::detail
