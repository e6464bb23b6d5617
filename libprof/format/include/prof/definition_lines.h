// The definition lines of a trace (docs/trace-format.md, "Definitions"), made
// by one formatter: the shim and the synthetic TraceWriter write the same text
// for the same definition, and the reader parses what this writes. Also the
// one place that knows MPICH's handle values for the predefined communicators
// and the global ids the trace gives them.
//
// Numbers are decimal except handles and addresses, which are hexadecimal with
// a 0x prefix; doubles are the shortest text that reads back exactly. Free
// text (file names, command lines, values) has tabs and newlines turned into
// spaces, so a line always has its fields.
//
// Not for signal handlers: these allocate (the shim's end-of-run line, written
// from a handler, formats into a fixed buffer in the same layout).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace prof::format {

// MPICH's handles of the predefined communicators (mpi.h: MPI_COMM_WORLD,
// MPI_COMM_SELF), as traces record them.
inline constexpr uint32_t kMpichCommWorld = 0x44000000u;
inline constexpr uint32_t kMpichCommSelf = 0x44000001u;
// The global ids of the implicit communicators: MPI_COMM_WORLD is 1 on every
// rank; each rank's MPI_COMM_SELF is (world rank << 32) | 2. A communicator
// the program creates gets an id its members agree on, usually (world rank of
// its leader << 32) | that leader's counter, counters starting at
// kFirstCreatedCommCounter.
inline constexpr uint64_t kWorldCommGlobalId = 1;
inline constexpr uint64_t self_comm_global_id(int32_t world_rank) {
  return (uint64_t{static_cast<uint32_t>(world_rank)} << 32) | 2u;
}
inline constexpr uint32_t kFirstCreatedCommCounter = 16;

// "0x1f": handles, addresses and run ids, in traces and in messages alike.
inline std::string hex(uint64_t v) {
  char text[2 + 16];
  text[0] = '0';
  text[1] = 'x';
  const auto end = std::to_chars(text + 2, text + sizeof text, v, 16).ptr;
  return std::string(text, end);
}

// Free text whose line structure matters (the MPI library's version string):
// backslash, newline and tab written as \\, \n and \t, so it stays one field;
// unescaped_text() restores it.
inline std::string escaped_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') continue;
    else out += c;
  }
  return out;
}
inline std::string unescaped_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      const char next = text[++i];
      out += next == 'n' ? '\n' : next == 't' ? '\t' : next;
    } else {
      out += text[i];
    }
  }
  return out;
}

namespace definition_line {
namespace detail {
inline void append_field(std::string& line, std::string_view text) {
  line += '\t';
  const size_t start = line.size();
  line += text;
  for (size_t i = start; i < line.size(); ++i) {
    char& c = line[i];
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
}
inline void append_number(std::string& line, uint64_t v) {
  char text[24];
  line += '\t';
  line.append(text, std::to_chars(text, text + sizeof text, v).ptr);
}
inline void append_double(std::string& line, double v) {
  char text[64];
  const auto [end, error] = std::to_chars(text, text + sizeof text, v);
  line += '\t';
  if (error == std::errc()) line.append(text, end);
  else line += '0';
}
inline std::string rank_list(const std::vector<int32_t>& ranks) {
  std::string s;
  char text[16];
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += ',';
    s.append(text, std::to_chars(text, text + sizeof text, ranks[i]).ptr);
  }
  return s;
}
}  // namespace detail

// M <key> <value>
inline std::string meta(std::string_view key, std::string_view value) {
  std::string line = "M";
  detail::append_field(line, key);
  detail::append_field(line, value);
  return line + '\n';
}
// F <id> <kind> <name>, appended to `out` (the shim writes hundreds at once).
inline void append_function(std::string& out, uint32_t id, unsigned kind, std::string_view name) {
  out += 'F';
  detail::append_number(out, id);
  detail::append_number(out, kind);
  detail::append_field(out, name);
  out += '\n';
}
inline std::string function(uint32_t id, unsigned kind, std::string_view name) {
  std::string line;
  append_function(line, id, kind, name);
  return line;
}
// C <handle> <global id> <time> <size> <inter 0|1> <world ranks> <remote world ranks>
inline std::string comm(uint64_t handle, uint64_t global_id, uint64_t time, uint64_t size,
                        bool inter, const std::vector<int32_t>& ranks,
                        const std::vector<int32_t>& remote_ranks) {
  std::string line = "C\t" + hex(handle);
  detail::append_number(line, global_id);
  detail::append_number(line, time);
  detail::append_number(line, size);
  line += inter ? "\t1" : "\t0";
  detail::append_field(line, detail::rank_list(ranks));
  detail::append_field(line, detail::rank_list(remote_ranks));
  return line + '\n';
}
// S <id> <address> <file> <line>: a call site by return address (file and
// line found later from debug info: both empty) or by file and line (address 0).
inline std::string callsite(uint32_t id, uint64_t address, std::string_view file, uint32_t line_number) {
  std::string line = "S";
  detail::append_number(line, id);
  line += '\t' + hex(address);
  detail::append_field(line, file);
  if (file.empty() && line_number == 0) line += '\t';
  else detail::append_number(line, line_number);
  return line + '\n';
}
// A <function id> <site index> <call site id>: the site index a function's
// records carry (format 7, trace_format.h kSiteShift) names that S call site.
inline std::string call_site_index(uint32_t func, uint32_t index, uint32_t callsite_id) {
  std::string line = "A";
  detail::append_number(line, func);
  detail::append_number(line, index);
  detail::append_number(line, callsite_id);
  return line + '\n';
}
// L <bias> <path>: a loaded object
inline std::string load_object(uint64_t bias, std::string_view path) {
  std::string line = "L\t" + hex(bias);
  detail::append_field(line, path);
  return line + '\n';
}
// B <bias> <build id>: the GNU build id (hex) of the object loaded at bias
inline std::string build_id(uint64_t bias, std::string_view id_hex) {
  std::string line = "B\t" + hex(bias);
  detail::append_field(line, id_hex);
  return line + '\n';
}
// K <phase> <local ticks> <offset ns> <round trip ns>
inline std::string clock_sync(std::string_view phase, uint64_t local_ticks, double offset_ns,
                              double rtt_ns) {
  std::string line = "K";
  detail::append_field(line, phase);
  detail::append_number(line, local_ticks);
  detail::append_double(line, offset_ns);
  detail::append_double(line, rtt_ns);
  return line + '\n';
}
// V <name> <value>: an environment variable of the run (kRunEnvironmentPrefixes)
inline std::string environment(std::string_view name, std::string_view value) {
  std::string line = "V";
  detail::append_field(line, name);
  detail::append_field(line, value);
  return line + '\n';
}
// P <name> <value> <env|default>: a PROF_* setting as the shim resolved it
inline std::string setting(std::string_view name, std::string_view value, bool from_environment) {
  std::string line = "P";
  detail::append_field(line, name);
  detail::append_field(line, value);
  detail::append_field(line, from_environment ? "env" : "default");
  return line + '\n';
}
// E <reason>: how the rank ended
inline std::string end(std::string_view reason) {
  std::string line = "E";
  detail::append_field(line, reason);
  return line + '\n';
}

}  // namespace definition_line
}  // namespace prof::format
