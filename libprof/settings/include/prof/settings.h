// Every PROF_* environment variable in one table: its name, type and accepted
// values, default, description, how it sets the Config, and how to print the
// value the shim resolved. One parser (read_config) reads them all from the
// table, and every bad value gets one message in one format:
//
//   NAME='VALUE' is not ACCEPTED[: DETAIL]
//
// where ACCEPTED follows from the entry's type (an integer range, the list of
// names, or the text a parsed setting gives). docs/configuration.md is printed
// from the same table (prof-config-doc, `prof-run --help-config`), and the
// trace records every setting's resolved value (`P` definitions) from it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "prof/bcast/params.h"
#include "prof/clock.h"
#include "prof/trace_format.h"

namespace prof::settings {

struct Config {
  std::string output_dir;                 // empty: make a unique one in the working directory
  format::TimerKind timer = format::TimerKind::Tsc;
  bool timer_given = false;
  clock::SyncScheme sync = clock::SyncScheme::Hierarchical;
  uint64_t buffer_bytes = 1u << 20;       // per-thread mapped chunk
  bool strict = false;
  bool callsites = true;                  // PROF_CALLSITES: MPI calls' own sites
  double hang_warn_seconds = 0;           // PROF_HANG_WARN; 0: off
  int log_level = 3;                      // 0 trace, 1 debug, 2 info, 3 warn, 4 error, 5 critical, 6 off
  // PROF_TEST_CLOCK_SHIFT_NS=RANK:NS[,RANK:NS...]: each names a distinct rank
  // (with PROF_TEST_NODES, a distinct pretend node).
  struct TestShift {
    int rank;
    int64_t ns;
  };
  std::vector<TestShift> test_shifts;
  int test_nodes = 0;                     // PROF_TEST_NODES; 0: the real nodes
  bcast::Settings bcast = bcast::default_settings();  // PROF_BCAST*
};

enum class SettingKind {
  Text,     // any non-empty text
  Integer,  // a decimal integer in [lo, hi]
  Choice,   // one of `choices`
  Parsed,   // a syntax of its own, checked by `parse`
};

struct ConfigVariable {
  const char* name = nullptr;
  SettingKind kind = SettingKind::Text;
  // Text and Parsed: the type column of the doc; Parsed: also the ACCEPTED of
  // its error message (`accepted`, when it differs). Integer and Choice print
  // theirs from lo..hi and `choices`.
  const char* type = nullptr;
  const char* default_value = nullptr;
  const char* description = nullptr;
  long lo = 0, hi = 0;                            // Integer
  void (*set_integer)(Config&, long) = nullptr;   // Integer
  std::vector<std::string> choices;               // Choice
  void (*set_choice)(Config&, size_t) = nullptr;  // Choice: the index into `choices`
  // Choice: other spellings taken for a choice (another library's names for
  // the same value), as {spelling, choice}; the doc and messages name `choices`.
  std::vector<std::pair<std::string, std::string>> aliases;
  // Text and Parsed: stores `value`; Parsed: false when it is not accepted,
  // with *detail set when more than ACCEPTED is worth saying. The settings
  // read before it (the table's order) are already in the Config.
  bool (*parse)(Config&, const std::string& value, std::string* detail) = nullptr;
  const char* accepted = nullptr;  // Parsed: ACCEPTED, when not `type`
  // Parsed: a value it rejects, so a test can walk the whole table.
  const char* bad_example = nullptr;
  // A rule between settings, checked once all are read whether or not this
  // one was given: "" when it holds, else the DETAIL.
  std::string (*check)(const Config&) = nullptr;
  // The setting as the shim resolved it (a default filled in, a fallback
  // taken), in the variable's own syntax; "" when unset and without a value.
  std::string (*resolved)(const Config&) = nullptr;
  // prof-bench reads it too (the broadcast's parameters).
  bool read_by_prof_bench = false;
  // The shim's own collectives follow it (the clock sync, the shared-memory
  // broadcast): ranks that differ would wait for each other forever, so
  // every rank's value is compared with rank 0's at MPI_Init.
  bool same_on_every_rank = false;
};
const std::vector<ConfigVariable>& config_variables();

// The doc's type column and the error message's ACCEPTED for one variable.
std::string setting_type(const ConfigVariable& v);
std::string setting_accepted(const ConfigVariable& v);
// The one error format: NAME='VALUE' is not ACCEPTED[: DETAIL].
std::string setting_error(const ConfigVariable& v, const std::string& value, const std::string& detail);

// Reads the environment into *cfg: every variable of the table, or those
// `wanted` selects. Returns false with one message per bad variable.
bool read_config(Config* cfg, std::vector<std::string>* errors,
                 bool (*wanted)(const ConfigVariable&) = nullptr);

// The settings every rank must share (same_on_every_rank), resolved, one
// `NAME=VALUE` line each, in the table's order.
std::string shared_settings(const Config& cfg);
// "" when `mine` (this rank's shared_settings) equals rank 0's, else the
// message naming the first setting that differs and both values.
std::string shared_settings_difference(const std::string& mine, const std::string& rank0s, int rank);

// A PROF_* variable of the environment that names no setting of the table
// (a misspelling, or a setting of another version), and the setting whose
// name is fewest edits away, at most two ("" when none is).
struct UnknownSetting {
  std::string name, nearest;
};
// Those of `environment` (environ's layout), in its order. The other tools'
// own variables (PROF_ANALYZE_*, PROF_GUI_*, PROF_FUZZ_*) are not the shim's
// to judge.
std::vector<UnknownSetting> unknown_settings(const char* const* environment);
// The one warning for it: NAME is not a libprof setting ... ignored.
std::string unknown_setting_warning(const UnknownSetting& unknown);

}  // namespace prof::settings
