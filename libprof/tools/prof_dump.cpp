// prof-dump: prints a trace file (or every rank of a trace directory) as text.
//
//   prof-dump FILE_OR_TRACE_DIR [--no-events] [--stats] [--chunks]
//
// Exit status: 0 when the input is readable and undamaged, 1 with
// "prof-dump: <message naming the file>" on stderr when it is not readable,
// 2 for a usage error, 3 when what was read is damaged or incomplete (bad CRC,
// headers, records or definitions, cut chunks, a rank file skipped, records the
// shim could not store): everything readable is still printed, the damage as
// warnings, and one line on stderr says what was wrong.
//
// OUTPUT FORMAT (stable: tests grep it; one item per line, single spaces)
//
// For a directory, first:
//   trace DIR world_size=N ranks=K
//   warning: TEXT                      one per TraceDir warning
// then, for each rank file (a single FILE argument prints just this part):
//   file PATH
//   header version=V run_id=0xHEX rank=R world_size=N timer=NAME
//   meta KEY=VALUE                     one per M definition, sorted by key
//   env NAME=VALUE                     one per V definition (the MPI library's and
//                                      transport's variables), sorted by name
//   setting NAME=VALUE env|default     one per P definition (a PROF_* setting as
//                                      resolved, and whether it was set), sorted
//   function ID KIND NAME              KIND as in FuncKind, lower case
//                                      (other send recv sendrecv isend irecv
//                                      completion requestop collective icollective
//                                      commcreate probe marker alltoall ialltoall,
//                                      kindN when unknown)
//   comm 0xHANDLE global=ID time=T size=N inter=0|1 ranks=A,B,.. remote=X,..
//                                      (remote= only for intercommunicators)
//   callsite ID 0xADDR FILE:LINE       (FILE:LINE is "?" when unresolved)
//   load 0xBIAS PATH [build_id=HEX]  (the build id when the trace recorded it)
//   clock PHASE ticks=T offset_ns=X rtt_ns=Y
//   end REASON                         "end (none)" when the process never said
//   alive heartbeat=T last_alive=T in_flight=N
//                                      (format 4, when the file has a heartbeat or a
//                                      call in flight: raw ticks of the last beat, of
//                                      the last moment known alive, and the calls in
//                                      flight)
//   ns_per_tick X
//   streams N event_bytes B
//   chunk sS K offset=O bytes=B sealed=0|1 damaged=0|1 events=N first=T last_leave=T
//         snapshot=0|1 open=ID,ID,..   one line per events chunk (only with --chunks):
//                                      stream S's chunk K, its raw times, and the
//                                      intervals open at its first event, outermost
//                                      first ("-" when none)
//   <one line per event, all streams merged by enter time; not with --no-events>
//   warning: TEXT                      one per RankTrace warning
//   stats chunks=N event_chunks=N unsealed_chunks=N crc_mismatches=N
//         bad_chunk_headers=N truncated_chunks=N missing_chunks=N bad_records=N
//         bad_definitions=N
//         unknown_chunk_types=N backwards_timestamps=N events=N
//                                      (one line; only with --stats)
//
// Event line:
//   r<RANK> s<STREAM> <ENTER> us +<DURATION> us <NAME>[ <FIELDS>][ <FLAGS>]
// ENTER is local microseconds since the rank's first event (%.6f), DURATION
// microseconds (%.3f), NAME the function's name from its F definition
// ("func#ID" when undefined). FIELDS by kind, in the order of its fields in
// record_schema.h (P = comm-local rank, W = its
// world rank via the communicator definitions, -1 when unknown; handles and
// requests in hex):
//   send recv probe     peer=P(world W) tag=T comm=0xC bytes=B
//   isend irecv         peer=P(world W) tag=T comm=0xC bytes=B req=0xR
//   sendrecv            peer=P(world W) tag=T bytes=B recv_peer=P(world W)
//                       recv_tag=T recv_bytes=B comm=0xC
//   completion          count=N then per completed request:
//                       req=0xR src=S tag=T bytes=B (and " cancelled" if so)
//   requestop           count=N then req=0xR per request
//   collective alltoall comm=0xC root=R bytes=B      (root=R(world W) if R >= 0)
//   icollective ialltoall   the same, then req=0xR
//   commcreate          comm=0xC new_comm=0xN
//   marker              NAME is "MARKER begin" or "MARKER end", then
//                       id=I site=S (FILE:LINE) -- "(?)" when the call site is
//                       unknown, "(0xADDR)" when it has no file yet
//   unknown kinds       kind=N
// FLAGS, each when set: any_source any_tag failed
// A call whose site the trace records (format 7) then has " call_site=S
// (FILE:LINE)", as a marker's site.
// A call in flight (entered, never completed; its duration runs to the rank's
// last moment alive) ends its line with " in_flight site=0xADDR (FILE:LINE)",
// the site resolved with the load map when it can be; its fields are what the
// call asked for (sendrecv: recv_peer/recv_tag asked; completion: count=0).
//
// Example:
//   r0 s0 12.345678 us +1.234 us MPI_Send peer=1(world 1) tag=7 comm=0x44000000 bytes=800
#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "prof/symbols/symbolizer.h"
#include "prof/trace_reader.h"
#include "prof/definition_lines.h"

using namespace prof;
using namespace prof::trace;

namespace {

struct Options {
  bool events = true;
  bool stats = false;
  bool chunks = false;
};

const char* kind_name(FuncKind k) {
  const format::KindSchema* schema = format::find_schema(k);
  return schema ? schema->name : nullptr;
}

std::string ranks_text(const std::vector<int32_t>& r) {
  std::string s;
  for (size_t i = 0; i < r.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(r[i]);
  }
  return s;
}

// Appends printf-style text to a line buffer.
struct Line {
  char buf[16384];
  size_t n = 0;
  void add(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    if (n >= sizeof buf) return;
    va_list ap;
    va_start(ap, fmt);
    int k = std::vsnprintf(buf + n, sizeof buf - n, fmt, ap);
    va_end(ap);
    if (k > 0) n = std::min(sizeof buf - 1, n + static_cast<size_t>(k));
  }
  void put() {
    buf[n < sizeof buf ? n : sizeof buf - 1] = '\0';
    std::fputs(buf, stdout);
    std::fputc('\n', stdout);
    n = 0;
  }
};

void print_peer(Line& l, const RankTrace& t, const char* key, const Event& e, int32_t peer) {
  l.add(" %s=%d(world %d)", key, peer, t.world_rank(e.comm, e.enter, peer));
}

// One payload field of an event as KEY=VALUE (see FIELDS above).
void print_field(Line& l, const RankTrace& t, const Event& e, format::Field field) {
  using format::Field;
  switch (field) {
    case Field::PeerTag:
      print_peer(l, t, "peer", e, e.peer);
      l.add(" tag=%d", e.tag);
      break;
    case Field::RecvPeerTag:
      print_peer(l, t, "recv_peer", e, e.recv_peer);
      l.add(" recv_tag=%d", e.recv_tag);
      break;
    case Field::Comm: l.add(" comm=0x%x", e.comm); break;
    case Field::Bytes: l.add(" bytes=%" PRIu64, e.bytes); break;
    case Field::RecvBytes: l.add(" recv_bytes=%" PRIu64, e.recv_bytes); break;
    case Field::Request: l.add(" req=0x%x", e.request); break;
    case Field::Root:
      if (e.root >= 0) print_peer(l, t, "root", e, e.root);
      else l.add(" root=%d", e.root);
      break;
    case Field::NewComm: l.add(" new_comm=0x%x", e.new_comm); break;
    case Field::IntervalId: l.add(" id=%u", e.interval_id); break;
    case Field::CallSite: l.add(" site=%u", e.callsite); break;
    case Field::Completions:
      l.add(" count=%zu", e.completions.size());
      for (const Completion& c : e.completions) {
        l.add(" req=0x%x src=%d tag=%d bytes=%" PRIu64, c.request, c.source, c.tag, c.bytes);
        if (c.cancelled) l.add(" cancelled");
      }
      break;
    case Field::Requests:
      l.add(" count=%zu", e.requests.size());
      for (uint32_t r : e.requests) l.add(" req=0x%x", r);
      break;
  }
}

// Call sites as "file:line": what the marker macro passed, or the return
// address resolved with the rank's load map and debug info (libdw); the hex
// address when neither works.
using SiteNames = std::unordered_map<uint32_t, std::string>;
SiteNames resolve_sites(const RankTrace& t) {
  SiteNames names;
  prof::symbols::Symbolizer symbolizer(t.load_objects());
  for (const auto& s : t.callsites()) {
    const auto loc = prof::symbols::callsite_location(t, s.id, &symbolizer);
    names[s.id] = loc.file.empty() ? prof::format::hex(s.address) : loc.file + ":" + std::to_string(loc.line);
  }
  return names;
}

void print_event(Line& l, const RankTrace& t, const Event& e, const SiteNames& sites) {
  l.add("r%d s%u %.6f us +%.3f us ", t.rank(), e.stream, t.to_local_ns(e.enter) / 1000.0,
        static_cast<double>(e.leave - e.enter) * t.ns_per_tick() / 1000.0);
  if (e.kind == FuncKind::Marker) {
    l.add("MARKER %s id=%u site=%u", e.marker_begin ? "begin" : "end", e.interval_id,
          e.callsite);
    auto site = sites.find(e.callsite);
    l.add(" (%s)", site == sites.end() ? "?" : site->second.c_str());
  } else {
    const FunctionDef* f = t.function(e.func);
    if (f) l.add("%s", f->name.c_str());
    else l.add("func#%u", e.func);
  }
  // The payload fields in the record schema's order (a marker's were printed above).
  if (const format::KindSchema* schema = format::find_schema(e.kind)) {
    if (e.kind != FuncKind::Marker)
      for (size_t i = 0; i < schema->field_count; ++i) print_field(l, t, e, schema->fields[i]);
  } else {
    l.add(" kind=%u", static_cast<unsigned>(e.kind));
  }
  if (e.flags & format::kAnySource) l.add(" any_source");
  if (e.flags & format::kAnyTag) l.add(" any_tag");
  if (e.flags & format::kCallFailed) l.add(" failed");
  if (e.call_site != 0) {
    auto site = sites.find(e.call_site);
    l.add(" call_site=%u (%s)", e.call_site, site == sites.end() ? "?" : site->second.c_str());
  }
  if (e.in_flight) {
    // Entered and never completed: its duration runs to the rank's last moment alive.
    l.add(" in_flight site=0x%" PRIx64, e.site);
    static prof::symbols::Symbolizer* symbolizer = nullptr;
    static const RankTrace* symbolizer_of = nullptr;
    if (symbolizer_of != &t) {
      delete symbolizer;
      symbolizer = new prof::symbols::Symbolizer(t.load_objects());
      symbolizer_of = &t;
    }
    if (auto loc = symbolizer->resolve_return_address(e.site))
      l.add(" (%s:%d)", loc->file.c_str(), loc->line);
  }
  l.put();
}

// Prints one rank file; returns what is wrong with it ("" when nothing is).
std::string dump_rank(const RankTrace& t, const Options& o) {
  static Line l;
  const auto& h = t.header();
  std::printf("file %s\n", t.path().c_str());
  std::printf("header version=%u run_id=0x%" PRIx64 " rank=%d world_size=%d timer=%s\n",
              h.version, h.run_id, h.rank, h.world_size,
              std::string(format::timer_name(static_cast<format::TimerKind>(h.timer))).c_str());
  for (const auto& [k, v] : t.meta()) std::printf("meta %s=%s\n", k.c_str(), v.c_str());
  for (const auto& [k, v] : t.environment()) std::printf("env %s=%s\n", k.c_str(), v.c_str());
  for (const auto& [k, v] : t.settings())
    std::printf("setting %s=%s %s\n", k.c_str(), v.value.c_str(), v.from_environment ? "env" : "default");
  for (const auto& f : t.functions()) {
    const char* k = kind_name(f.kind);
    if (k) std::printf("function %u %s %s\n", f.id, k, f.name.c_str());
    else std::printf("function %u kind%u %s\n", f.id, static_cast<unsigned>(f.kind), f.name.c_str());
  }
  for (const auto& c : t.comms()) {
    std::printf("comm 0x%x global=%" PRIu64 " time=%" PRIu64 " size=%zu inter=%d ranks=%s",
                c.handle, c.global_id, c.time, c.ranks.size(), c.inter ? 1 : 0,
                ranks_text(c.ranks).c_str());
    if (c.inter) std::printf(" remote=%s", ranks_text(c.remote_ranks).c_str());
    std::printf("\n");
  }
  const SiteNames sites = resolve_sites(t);
  for (const auto& s : t.callsites()) {
    const std::string& name = sites.at(s.id);
    std::printf("callsite %u 0x%" PRIx64 " %s\n", s.id, s.address,
                name.rfind("0x", 0) == 0 ? "?" : name.c_str());
  }
  for (const auto& lo : t.load_objects())
    std::printf("load 0x%" PRIx64 " %s%s%s\n", lo.bias, lo.path.c_str(), lo.build_id.empty() ? "" : " build_id=",
                lo.build_id.c_str());
  for (const auto& k : t.clock_syncs())
    std::printf("clock %s ticks=%" PRIu64 " offset_ns=%.3f rtt_ns=%.3f\n", k.phase.c_str(),
                k.local_ticks, k.offset_ns, k.rtt_ns);
  if (t.end_reason().empty()) std::printf("end (none)\n");
  else std::printf("end %s\n", t.end_reason().c_str());
  if (t.heartbeat() != 0 || !t.in_flight().empty())
    std::printf("alive heartbeat=%" PRIu64 " last_alive=%" PRIu64 " in_flight=%zu\n",
                t.heartbeat(), t.last_alive(), t.in_flight().size());
  std::printf("ns_per_tick %.9g\n", t.ns_per_tick());
  std::printf("streams %zu event_bytes %" PRIu64 "\n", t.stream_count(), t.event_bytes());
  for (size_t s = 0; o.chunks && s < t.stream_count(); ++s) {
    const auto chunks = t.chunks(s);
    for (size_t k = 0; k < chunks.size(); ++k) {
      const ChunkInfo& c = chunks[k];
      std::string open;
      if (c.events > 0) {
        const auto from = t.stream_from(s, c.first_enter);
        for (const auto& interval : from.open_intervals())
          open += (open.empty() ? "" : ",") + std::to_string(interval.interval_id);
      }
      std::printf("chunk s%zu %zu offset=%" PRIu64 " bytes=%u sealed=%d damaged=%d events=%" PRIu64
                  " first=%" PRIu64 " last_leave=%" PRIu64 " snapshot=%d open=%s\n",
                  s, k, c.file_offset, c.payload_bytes, c.sealed ? 1 : 0, c.damaged ? 1 : 0,
                  c.events, c.first_enter, c.last_leave, c.has_snapshot ? 1 : 0,
                  open.empty() ? "-" : open.c_str());
    }
  }

  if (o.events || o.stats) {
    auto cur = t.events();
    Event e;
    if (o.events) {
      while (cur.next(e)) print_event(l, t, e, sites);
    } else {
      while (cur.next(e)) {
      }
    }
  }
  for (const auto& w : t.warnings()) std::printf("warning: %s\n", w.c_str());
  if (o.stats) {
    const ReadStats& s = t.stats();
    std::printf(
        "stats chunks=%" PRIu64 " event_chunks=%" PRIu64 " unsealed_chunks=%" PRIu64
        " crc_mismatches=%" PRIu64 " bad_chunk_headers=%" PRIu64 " truncated_chunks=%" PRIu64
        " missing_chunks=%" PRIu64 " bad_records=%" PRIu64 " bad_definitions=%" PRIu64
        " unknown_chunk_types=%" PRIu64 " backwards_timestamps=%" PRIu64 " events=%" PRIu64 "\n",
        s.chunks, s.event_chunks, s.unsealed_chunks, s.crc_mismatches, s.bad_chunk_headers,
        s.truncated_chunks, s.missing_chunks, s.bad_records, s.bad_definitions, s.unknown_chunk_types,
        s.backwards_timestamps, s.events);
  }
  const ReadStats& s = t.stats();
  // What is damaged, by the reader's counts.
  std::string wrong;
  s.for_each_damage([&wrong](uint64_t n, const char* what) {
    if (n == 0) return;
    wrong += (wrong.empty() ? "" : ", ") + std::to_string(n) + " " + what +
             (n == 1 ? "" : std::string_view(what).back() == 'h' ? "es" : "s");
  });
  if (auto it = t.meta().find("records_lost"); it != t.meta().end() && it->second != "0")
    wrong += std::string(wrong.empty() ? "" : ", ") + it->second + " records lost when recording";
  return wrong.empty() ? wrong : t.path() + ": " + wrong;
}

int usage() {
  std::fprintf(stderr, "usage: prof-dump FILE_OR_TRACE_DIR [--no-events] [--stats] [--chunks]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string input;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-events") o.events = false;
    else if (a == "--stats") o.stats = true;
    else if (a == "--chunks") o.chunks = true;
    else if (a == "-h" || a == "--help") return usage(), 0;
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "prof-dump: unknown option %s\n", a.c_str());
      return usage();
    } else if (input.empty()) input = a;
    else {
      std::fprintf(stderr, "prof-dump: one FILE_OR_TRACE_DIR, not also %s\n", a.c_str());
      return usage();
    }
  }
  if (input.empty()) return usage();
  static char outbuf[1 << 16];
  std::setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

  std::vector<std::string> wrong;  // what is damaged or incomplete, per file
  std::error_code ec;
  if (std::filesystem::is_directory(input, ec)) {
    TraceDir d = TraceDir::open(input);
    if (!d.errors.empty()) {
      for (const auto& w : d.warnings) std::fprintf(stderr, "prof-dump: warning: %s\n", w.c_str());
      for (const auto& err : d.errors) std::fprintf(stderr, "prof-dump: %s\n", err.c_str());
      return 1;
    }
    std::printf("trace %s world_size=%d ranks=%zu\n", input.c_str(), d.world_size, d.ranks.size());
    for (const auto& w : d.warnings) {
      std::printf("warning: %s\n", w.c_str());
      wrong.push_back(w);
    }
    for (const auto& r : d.ranks)
      if (std::string w = dump_rank(*r, o); !w.empty()) wrong.push_back(w);
  } else {
    std::string err;
    auto t = RankTrace::open(input, &err);
    if (!t) {
      std::fprintf(stderr, "prof-dump: %s\n", err.c_str());
      return 1;
    }
    if (std::string w = dump_rank(*t, o); !w.empty()) wrong.push_back(w);
  }
  if (std::fflush(stdout) != 0) {
    std::fprintf(stderr, "prof-dump: error writing output\n");
    return 1;
  }
  for (const std::string& w : wrong) std::fprintf(stderr, "prof-dump: damaged: %s\n", w.c_str());
  return wrong.empty() ? 0 : 3;
}
