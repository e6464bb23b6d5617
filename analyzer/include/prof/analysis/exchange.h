// The transport of an analysis spread over several processes (an MPI job of
// prof-analyze, docs/design/analysis-engine.md "Several processes").
//
// The engine needs one collective: every process hands one byte buffer to
// each process (itself included) and gets the one each handed it. Summaries
// every process needs are the same buffer to each; what goes to one process
// only (mailboxes, the results for process 0) is empty for the others. The
// library holds no MPI: the MPI implementation lives in prof-analyze, so
// programs that link prof_analysis (the GUI) never depend on MPI.
//
// Invariant: every process calls all_to_all the same number of times, in the
// same order (the engine's phases are the same on every process).
#pragma once

#include <string>
#include <vector>

#include "prof/trace_reader.h"

namespace prof::analysis {

class Exchange {
 public:
  virtual ~Exchange() = default;
  // This process (0 writes the outputs) and how many there are.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // out[p] goes to process p; the result's [p] came from process p.
  virtual std::vector<std::string> all_to_all(const std::vector<std::string>& out) = 0;
  // Ends every process of the job from this one, `message` (a line) on its
  // own standard error, exit status 1: for a failure the others cannot learn
  // of at an exchange (memory that runs out outside the phases, whose
  // failures travel with their sums), which would leave them waiting for
  // this process at the next one.
  [[noreturn]] virtual void abort_job(const std::string& message) = 0;
};

// The trace directory as a process of the job reads it: it opens only the
// rank files of its block (contiguous in name order, as many files a
// process as can be, cut from the directory's listing) and
// knows every other rank from a stand-in its holder described
// (trace::RankTrace::stand_in): one all_to_all of descriptions at the
// start, in which process 0 gets the run's environment and settings too.
// The result's `holder` names each rank's process; it is checked as
// TraceDir::open checks a directory, the same way on every process. A
// process that cannot list the directory ends the job: every process's
// result then has errors (another's as "process P: ..."). Two all_to_all
// calls on every process.
trace::TraceDir open_trace_block(const std::string& dir, Exchange& ex);

}  // namespace prof::analysis
