// The schedule's verdict on one stage (see stage.h).
#include "stage.h"

#include <algorithm>
#include <cstddef>

namespace prof::bench {

StageVerdict judge_stage(const std::vector<double>& late, const std::vector<double>& end_ns,
                         const std::vector<double>& call_ns, double slot_ns, long first_run) {
  StageVerdict verdict;
  const std::size_t runs = std::min({late.size(), end_ns.size(), call_ns.size()});
  for (std::size_t i = 0; i < runs; ++i) {
    const long number = first_run + long(i);
    verdict.longest_call_ns = std::max(verdict.longest_call_ns, call_ns[i]);
    if (late[i] != 0) {
      verdict.late_runs.push_back(number);
      continue;
    }
    if (end_ns[i] > slot_ns) verdict.overrun_runs.push_back(number);
    else verdict.valid_ns.push_back(end_ns[i]);
  }
  verdict.next_slot_ns = slot_ns;
  const std::size_t invalid = verdict.late_runs.size() + verdict.overrun_runs.size();
  if (runs > 0 && double(invalid) > kMaxInvalidShare * double(runs)) {
    const double stage_length = double(runs - 1) * slot_ns + end_ns[runs - 1];
    const double wanted = std::max(2 * slot_ns, 1.1 * stage_length / double(runs));
    verdict.next_slot_ns = std::min(wanted, std::max(slot_ns, 4 * verdict.longest_call_ns + 100e3));
  }
  return verdict;
}

}  // namespace prof::bench
