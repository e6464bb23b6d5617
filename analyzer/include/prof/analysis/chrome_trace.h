// Chrome trace-event JSON of a trace, for Perfetto and chrome://tracing.
//
// One process (pid 0), one track per rank (tid = world rank, named "rank N";
// extra threads of a rank get tid = rank * 1000 + stream so slices nest).
// MPI calls are "X" slices with their peer, tag, bytes and communicator in
// args; intervals are "X" slices enclosing them (the whole run included);
// messages are flow arrows ("s" at the send, "f" bound to the enclosing slice
// of the receive). Times are microseconds on the global clock.
//
// Flow ids need no matching pass: the n-th send on a channel (communicator,
// source, destination, tag) is the n-th receive on it (MPI's non-overtaking
// rule), so both ends compute the same id from (channel, n).
//
// A time window keeps big traces loadable (10^7 events make about 1.4 GB of
// JSON): only slices that overlap it and flow ends inside it are written. Every
// event is still read, so slices that cross the window keep their true extent.
#pragma once

#include <limits>
#include <ostream>
#include <string>

#include "prof/trace_reader.h"

namespace prof::analysis {

struct ChromeTraceStats {
  uint64_t slices = 0;
  uint64_t flows = 0;          // flow starts written
  uint64_t outside_window = 0; // slices left out by the window
};

struct ChromeTraceOptions {
  // Seconds from the trace's time zero (its earliest event, as Perfetto shows it).
  double from_s = 0;
  double to_s = std::numeric_limits<double>::infinity();
};

class Exchange;

// Streams every rank (memory does not grow with events). Returns false and sets
// *error when the output stream fails.
//
// In an MPI job whose processes hold their blocks' rank files alone
// (`job` given, dir.holder set; exchange.h), every process calls it: each
// draws the ranks of its block and sends what it wrote to process 0 in
// rounds of about 1 MiB, in rank order, and process 0 alone writes `out`
// (the others' is untouched), the same bytes as one process writes.
bool write_chrome_trace(const trace::TraceDir& dir, std::ostream& out, std::string* error,
                        ChromeTraceStats* stats = nullptr, const ChromeTraceOptions& options = {},
                        Exchange* job = nullptr);

}  // namespace prof::analysis
