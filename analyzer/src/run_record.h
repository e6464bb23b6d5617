// The run record (RunRecord, analysis.h) read from the rank files'
// definitions: what the run ran under.
#pragma once

#include <vector>

#include "prof/analysis/analysis.h"

namespace prof::analysis {

// `traces` in rank order. The library, transport, variables, settings and
// command are the first trace's that recorded each; hosts gather every rank's
// `M host`.
RunRecord run_record(const std::vector<const trace::RankTrace*>& traces);

}  // namespace prof::analysis
