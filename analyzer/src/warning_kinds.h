// Every kind of problem the analysis reports, in one table: its name in the
// code and the category users read (stderr, JSON `warnings[].category`).
// Statistics that count a kind (JSON `stats`) take it from here by name, so
// rewording a category changes what users read, never a figure.
#pragma once

#include <cstdint>
#include <string_view>

namespace prof::analysis::detail {

#define PROF_WARNING_KINDS(X)                                                                      \
  X(UnknownCommunicator, "unknown communicator")                                                   \
  X(UnmappablePeer, "unmappable peer")                                                             \
  X(UnknownRequestCompletion, "completion of an unknown request")                                 \
  X(UnknownRequestStart, "start of an unknown request")                                           \
  X(MarkerAfterFinalize, "interval marker after MPI_Finalize (ignored)")                          \
  X(NestingTooDeep, "interval nesting deeper than 4096 (begin ignored)")                          \
  X(EndWithoutBegin, "interval end without a begin (ignored)")                                    \
  X(IntervalsCrossing, "interval ids crossing (inner intervals closed at the outer end)")         \
  X(BeginNeverClosed, "interval begin never closed (closed at the end of the run)")               \
  X(MessagesToMissingRanks, "messages to ranks not in the trace")                                  \
  X(MessagesFromMissingRanks, "messages from ranks not in the trace")                              \
  X(CancelledSendMatched, "cancelled send already matched to a receive")                           \
  X(SendsNeverReceived, "sends never received")                                                    \
  X(ReceivesWithoutSend, "receives without a matching send")                                       \
  X(IncompleteCollectives, "collectives some members never called (rank cut short or missing)")   \
  X(IncompleteCollectivesRecordsLost, "collectives some members never called (in a trace that lost records)") \
  X(CollectiveCallsBeyondMembers, "collective calls beyond their instance's members")              \
  X(RankFilesSkipped, "rank files skipped or missing")                                             \
  X(TraceFileProblems, "trace file problems (data skipped or salvaged)")                           \
  X(TracesCutShort, "traces cut short (analyzed as far as they go)")                               \
  X(RecordsLost, "records lost when recording (disk full or a failed write; not in the trace)")    \
  X(DefinitionsLost, "definitions lost when recording (disk full or a failed write; not in the trace)") \
  X(EventsNotAnalyzed, "ranks analyzed only up to lost data or a time outside the run (the rest not analyzed)") \
  X(TimestampsBackwards, "timestamps going backwards")                                             \
  X(BinariesRebuilt, "binaries rebuilt since the run (build id differs): their call sites are left unresolved")

enum class WarningKind : uint8_t {
#define PROF_WARNING_ENUM(name, text) name,
  PROF_WARNING_KINDS(PROF_WARNING_ENUM)
#undef PROF_WARNING_ENUM
      kCount
};
inline constexpr size_t kWarningKinds = static_cast<size_t>(WarningKind::kCount);

inline constexpr std::string_view kWarningCategory[kWarningKinds] = {
#define PROF_WARNING_TEXT(name, text) text,
    PROF_WARNING_KINDS(PROF_WARNING_TEXT)
#undef PROF_WARNING_TEXT
};

constexpr std::string_view category_of(WarningKind kind) { return kWarningCategory[static_cast<size_t>(kind)]; }

}  // namespace prof::analysis::detail
