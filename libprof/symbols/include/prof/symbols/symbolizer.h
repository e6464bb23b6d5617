// Offline resolution of recorded code addresses (marker call sites) to
// file:line, with elfutils' libdw over the load map the shim recorded: each
// loaded object is reported at its load bias, so the address taken in the
// process maps to the object's own DWARF line table.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "prof/trace_reader.h"

namespace prof::symbols {

struct SourceLocation {
  std::string file;
  int line = 0;
  std::string function;  // may be empty
};

class Symbolizer {
 public:
  explicit Symbolizer(const std::vector<trace::LoadObject>& objects);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // A return address (the instruction after a call) as recorded: resolved at
  // address - 1 so the line is the call's. nullopt when no object or no debug
  // info covers it.
  std::optional<SourceLocation> resolve_return_address(uint64_t address);

  // The objects met so far whose file has another build id than the object
  // the run loaded (rebuilt since): their addresses stay unresolved, since
  // their line tables would name wrong lines.
  const std::vector<std::string>& rebuilt_objects() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The call site's file:line: what the marker macro passed, else the address
// resolved with the rank's load map; file empty when neither is known.
SourceLocation callsite_location(const trace::RankTrace& rank, uint32_t callsite_id,
                                 Symbolizer* symbolizer);

}  // namespace prof::symbols
