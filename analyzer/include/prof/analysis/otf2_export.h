// An OTF2 archive of a trace (Vampir, Scalasca, Cube's tools), written with
// OTF2's own library (libotf2): docs/design/otf2-export.md.
//
// DIR/traces.otf2 (the anchor), DIR/traces.def and DIR/traces/ (one
// definitions and one events file per location). One location per rank and
// thread, in a location group per rank; MPI calls and interval executions are
// regions (Enter/Leave); point-to-point transfers are MpiSend/MpiRecv and, for
// nonblocking calls, MpiIsend/MpiIsendComplete and MpiIrecvRequest/MpiIrecv
// with request ids; blocking collectives MpiCollectiveBegin/End, nonblocking
// ones NonBlockingCollectiveRequest/Complete. Timestamps
// are nanoseconds on the synchronized global clock.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "prof/trace_reader.h"

namespace prof::analysis {

struct Analysis;

struct Otf2Stats {
  uint64_t locations = 0;
  uint64_t events = 0;        // every record written to the events files
  uint64_t enters = 0, leaves = 0;
  uint64_t sends = 0, receives = 0;  // MpiSend + MpiIsend, MpiRecv + MpiIrecv
  uint64_t collectives = 0;   // MpiCollectiveBegin (each with its End), NonBlockingCollectiveComplete
};

struct Otf2Options {
  // Seconds from the trace's time zero (its earliest event, as the Chrome
  // export counts them): what overlaps [from_s, to_s] is written, clamped to it.
  double from_s = -std::numeric_limits<double>::infinity();
  double to_s = std::numeric_limits<double>::infinity();
};

// Checks that `dir` can take a new archive and creates it: it must not exist
// or be an empty directory. False with *error naming the path and the reason.
bool prepare_otf2_directory(const std::string& dir, std::string* error);

class Exchange;

// Streams every rank into the archive in `dir` (prepared above). `analysis`,
// when given, supplies how each rank ended and the clock bounds (location and
// archive properties). False with *error when libotf2 fails.
//
// In an MPI job whose processes hold their blocks' rank files alone (`job`
// given, trace.holder set; exchange.h), every process calls it: process 0
// writes the archive, each other process reads its block's ranks and sends
// their events to process 0 in rounds of about 1 MiB, in rank order; the
// archive is the one process's. (False on the others when process 0 could
// not open the archive.)
bool write_otf2(const trace::TraceDir& trace, const std::string& dir, const Analysis* analysis,
                std::string* error, Otf2Stats* stats = nullptr, const Otf2Options& options = {},
                Exchange* job = nullptr);

}  // namespace prof::analysis
