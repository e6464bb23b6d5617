// The lines of a phase log (PROF_ANALYZE_PHASE_LOG), for the tests that
// check what the engine wrote there.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace prof::test {

inline constexpr const char* kPhaseLogHeader = "# phase worker busy_ns cpu_ns events handover_ns";

struct PhaseLine {
  uint64_t phase = 0, worker = 0, busy_ns = 0, cpu_ns = 0, events = 0, handover_ns = 0;
};

// Every line of `text` but the header and blank ones; a line that is not
// six numbers fails the test.
inline std::vector<PhaseLine> phase_lines(const std::string& text) {
  std::vector<PhaseLine> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    PhaseLine p;
    std::string rest;
    if (!(fields >> p.phase >> p.worker >> p.busy_ns >> p.cpu_ns >> p.events >> p.handover_ns) || (fields >> rest)) {
      ADD_FAILURE() << "not a phase log line: " << line;
      continue;
    }
    lines.push_back(p);
  }
  return lines;
}

}  // namespace prof::test
