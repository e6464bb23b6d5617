// Pieces of the JSON report that the comparison of two runs (compare.cpp)
// writes too, so both say the same thing under the same keys.
#pragma once

#include <nlohmann/json.hpp>

#include "prof/analysis/analysis.h"

namespace prof::analysis {

using Json = nlohmann::ordered_json;

// An interval's `main` object.
Json main_json(const MainFigures& m);
// The `run` object (docs/interfaces.md): null where the trace does not say.
Json run_json(const RunRecord& run);

}  // namespace prof::analysis
