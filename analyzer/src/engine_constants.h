// Constants the analysis engine (engine.h) and its parts share.
#pragma once

#include <cstdint>
#include <limits>

namespace prof::analysis::detail {

inline constexpr uint32_t kRootId = UINT32_MAX;
inline constexpr uint32_t kNoParent = UINT32_MAX;
inline constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace prof::analysis::detail
