// trace_check: compares what the shim recorded with what the test program says
// it did (its expectation log, see ex.h).
//
//   trace_check TRACE_DIR EXPECT_DIR [--dump]
//
// For every rank: the trace must be readable and undamaged (no CRC mismatch, no
// bad record, ...), its end reason the expected one, the communicator
// definitions as logged, and each thread's stream of events must equal, call by
// call, the thread's logged lines: same function, peers mapped to world ranks
// through the communicator definitions, tags, bytes, actual sources of
// receives, request handles, completion entries. Across ranks, the members of a
// communicator agree on its global id. Exit status 0 when everything matches;
// 1 with a diff on stderr otherwise; 2 on usage or unreadable input.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "prof/definition_lines.h"
#include "prof/trace_format.h"
#include "prof/trace_reader.h"

namespace fs = std::filesystem;
using prof::format::FuncKind;
using prof::trace::Event;
using prof::trace::RankTrace;
using prof::trace::TraceDir;

namespace {

int problem_count = 0;
std::string problem_prefix;  // "rank N" prefix of messages

void error(const std::string& msg) {
  ++problem_count;
  std::fprintf(stderr, "trace_check: %s%s\n", problem_prefix.empty() ? "" : (problem_prefix + ": ").c_str(),
               msg.c_str());
}

using prof::format::hex;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// A line: function name and key=value fields (ordered as written).
struct Line {
  std::string text;  // as written / as formatted
  std::string func;
  std::vector<std::pair<std::string, std::string>> fields;
  int lineno = 0;    // in the expectation file (0 for recorded events)
  const std::string* get(const std::string& k) const {
    for (const auto& [key, v] : fields)
      if (key == k) return &v;
    return nullptr;
  }
};

Line parse_fields(const std::string& text, int lineno) {
  Line l;
  l.text = text;
  l.lineno = lineno;
  std::istringstream in(text);
  std::string tok;
  in >> l.func;
  while (in >> tok) {
    const size_t eq = tok.find('=');
    if (eq == std::string::npos) l.fields.emplace_back(tok, "");
    else l.fields.emplace_back(tok.substr(0, eq), tok.substr(eq + 1));
  }
  return l;
}

struct Expectation {
  std::map<int, std::vector<Line>> threads;  // thread number -> lines in order
  std::string end_reason = "finalize";
  bool salvaged = false;                     // !salvaged: an unsealed chunk must be there
  // !or_killed: the end reason may instead be "" because the launcher killed the
  // rank on its way out (its chunks may then be unsealed); at most one such rank.
  bool may_be_killed = false;
  uint64_t min_event_chunks = 0;             // !event_chunks_at_least N: chunks were rotated
  std::vector<Line> comm_checks;             // !comm HANDLE members=...
};

bool read_expectation(const std::string& path, Expectation* ex) {
  std::ifstream in(path);
  if (!in) return false;
  std::string s;
  int lineno = 0;
  while (std::getline(in, s)) {
    ++lineno;
    if (s.empty()) continue;
    if (s[0] == '!') {
      const Line d = parse_fields(s.substr(1), lineno);
      if (d.func == "end") {
        const size_t sp = s.find(' ');
        ex->end_reason = sp == std::string::npos ? "" : s.substr(sp + 1);
      } else if (d.func == "event_chunks_at_least" && !d.fields.empty()) {
        ex->min_event_chunks = std::strtoull(d.fields[0].first.c_str(), nullptr, 10);
      } else if (d.func == "salvaged") {
        ex->salvaged = true;
      } else if (d.func == "or_killed") {
        ex->may_be_killed = true;
      } else if (d.func == "comm" && !d.fields.empty()) {
        // "!comm HANDLE members=...": kept as a Line named by the handle.
        ex->comm_checks.push_back(parse_fields(s.substr(6), lineno));
      } else {
        std::fprintf(stderr, "trace_check: %s:%d: unknown directive '%s'\n", path.c_str(), lineno,
                     s.c_str());
        return false;
      }
      continue;
    }
    int thread = 0;
    std::string body = s;
    if (s[0] == '@') {
      const size_t sp = s.find(' ');
      thread = std::atoi(s.substr(1, sp).c_str());
      body = sp == std::string::npos ? "" : s.substr(sp + 1);
    }
    Line l = parse_fields(body, lineno);
    long repeat = 1;
    for (auto it = l.fields.begin(); it != l.fields.end(); ++it) {
      if (it->first == "repeat") {
        repeat = std::atol(it->second.c_str());
        l.fields.erase(it);
        break;
      }
    }
    auto& v = ex->threads[thread];
    for (long i = 0; i < repeat; ++i) v.push_back(l);
  }
  return true;
}

// ---------------------------------------------------------------------------
// Recorded events as Lines.

struct Recorded {
  Event e;  // spans cleared
  std::vector<prof::trace::Completion> completions;
  std::vector<uint32_t> requests;
};

struct RequestOrigin {
  uint64_t time;
  uint32_t comm;
};

// The communicator an MPI_Comm_idup record created: the shim defines it at the
// call's enter time (other than the parent).
const prof::trace::CommDef* created_at(const RankTrace& t, uint64_t time, uint32_t parent) {
  for (const auto& c : t.comms())
    if (c.time == time && c.handle != parent) return &c;
  return nullptr;
}

class Formatter {
 public:
  explicit Formatter(const RankTrace& t) : t_(t) {
    auto it = t.meta().find("exe");
    if (it != t.meta().end()) exe_ = it->second;
  }

  void note_request(uint32_t req, uint64_t time, uint32_t comm) {
    origins_[req].push_back({time, comm});
  }
  void sort_origins() {
    for (auto& [r, v] : origins_)
      std::stable_sort(v.begin(), v.end(),
                       [](const RequestOrigin& a, const RequestOrigin& b) { return a.time < b.time; });
  }

  std::string peer(uint32_t comm, uint64_t t, int32_t p) const {
    if (p < 0) return std::to_string(p);
    if (!t_.comm_at(comm, t)) return "nocomm(" + hex(comm) + ")";
    const int32_t w = t_.world_rank(comm, t, p);
    if (w < 0) return "unmapped(" + std::to_string(p) + ")";
    return std::to_string(w);
  }

  // Where a call site's address lies: "exe" when in the application executable.
  std::string site(uint32_t id) const {
    const auto* cs = t_.callsite(id);
    if (!cs) return "undefined(" + std::to_string(id) + ")";
    if (cs->address == 0) return cs->file.empty() ? "unknown" : cs->file + ":" + std::to_string(cs->line);
    const prof::trace::LoadObject* best = nullptr;
    for (const auto& lo : t_.load_objects())
      if (lo.bias <= cs->address && (!best || lo.bias > best->bias)) best = &lo;
    if (best && !exe_.empty() && best->path == exe_) return "exe";
    return hex(cs->address) + "(" + (best ? best->path : std::string("?")) + ")";
  }

  Line format(const Recorded& r) const {
    const Event& e = r.e;
    std::ostringstream o;
    if (e.func == prof::format::kMarkerFuncId) {
      o << "MARKER id=" << e.interval_id << " begin=" << (e.marker_begin ? 1 : 0)
        << " site=" << site(e.callsite) << " _site=" << e.callsite;
      return parse_fields(o.str(), 0);
    }
    const auto* fd = t_.function(e.func);
    o << (fd ? fd->name : "unknown-function#" + std::to_string(e.func));
    const auto flags = [&] {
      if (e.flags & prof::format::kAnySource) o << " any_source=1";
      if (e.flags & prof::format::kAnyTag) o << " any_tag=1";
    };
    switch (e.kind) {
      case FuncKind::Send:
      case FuncKind::Recv:
      case FuncKind::Probe:
        o << " peer=" << peer(e.comm, e.enter, e.peer) << " tag=" << e.tag
          << " comm=" << hex(e.comm) << " bytes=" << e.bytes;
        flags();
        break;
      case FuncKind::Isend:
      case FuncKind::Irecv:
        o << " peer=" << peer(e.comm, e.enter, e.peer) << " tag=" << e.tag
          << " comm=" << hex(e.comm) << " bytes=" << e.bytes << " req=" << hex(e.request);
        flags();
        break;
      case FuncKind::SendRecv:
        o << " peer=" << peer(e.comm, e.enter, e.peer) << " tag=" << e.tag << " bytes=" << e.bytes
          << " rpeer=" << peer(e.comm, e.enter, e.recv_peer) << " rtag=" << e.recv_tag
          << " rbytes=" << e.recv_bytes << " comm=" << hex(e.comm);
        flags();
        break;
      case FuncKind::Completion: {
        o << " c=";
        if (r.completions.empty()) o << "-";
        for (size_t i = 0; i < r.completions.size(); ++i) {
          const auto& c = r.completions[i];
          o << (i ? "," : "") << hex(c.request) << "/" << completion_source(c, e.enter) << "/"
            << c.tag << "/" << c.bytes << "/" << (c.cancelled ? 1 : 0);
        }
        break;
      }
      case FuncKind::RequestOp: {
        o << " r=";
        if (r.requests.empty()) o << "-";
        for (size_t i = 0; i < r.requests.size(); ++i) o << (i ? "," : "") << hex(r.requests[i]);
        break;
      }
      case FuncKind::Collective:
      case FuncKind::AllToAll:
        o << " comm=" << hex(e.comm) << " root=" << e.root << " bytes=" << e.bytes;
        break;
      case FuncKind::ICollective:
      case FuncKind::IAllToAll:
        o << " comm=" << hex(e.comm) << " root=" << e.root << " bytes=" << e.bytes
          << " req=" << hex(e.request);
        if (const auto* c = created_at(t_, e.enter, e.comm))
          o << " new=" << hex(c->handle) << " members=" << join(c->ranks)
            << " inter=" << (c->inter ? 1 : 0) << " remote=" << (c->inter ? join(c->remote_ranks) : "-");
        break;
      case FuncKind::CommCreate: {
        o << " comm=" << hex(e.comm) << " new=" << hex(e.new_comm);
        if (e.new_comm != prof::format::kNoComm) {
          const auto* c = t_.comm_at(e.new_comm, e.enter);
          if (!c || c->time != e.enter) {
            o << " members=undefined";
          } else {
            o << " members=" << join(c->ranks) << " inter=" << (c->inter ? 1 : 0)
              << " remote=" << (c->inter ? join(c->remote_ranks) : "-");
          }
        }
        break;
      }
      case FuncKind::Marker:
      case FuncKind::Other:
        break;
    }
    if (e.flags & prof::format::kCallFailed) o << " failed=1";
    return parse_fields(o.str(), 0);
  }

  static std::string join(const std::vector<int32_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s.empty() ? "-" : s;
  }

 private:
  // The source of a completed receive as a world rank: the request's
  // communicator is the one of the latest call that returned this handle.
  std::string completion_source(const prof::trace::Completion& c, uint64_t t) const {
    if (c.source < 0) return std::to_string(c.source);
    auto it = origins_.find(c.request);
    if (it == origins_.end()) return "unknown-request(" + std::to_string(c.source) + ")";
    const RequestOrigin* o = nullptr;
    for (const auto& ro : it->second)
      if (ro.time <= t) o = &ro;
    if (!o) return "unknown-request(" + std::to_string(c.source) + ")";
    return peer(o->comm, o->time, c.source);
  }

  const RankTrace& t_;
  std::string exe_;
  std::map<uint32_t, std::vector<RequestOrigin>> origins_;
};

// ---------------------------------------------------------------------------
// Comparison.

bool value_matches(const std::string& want, const std::string& got) {
  if (want == "*") return true;
  if (want.find('*') == std::string::npos) return want == got;
  // Lists (c=...) and sub-fields (a/b/c) with wildcards.
  const auto wl = split(want, ','), gl = split(got, ',');
  if (wl.size() != gl.size()) return false;
  for (size_t i = 0; i < wl.size(); ++i) {
    const auto ws = split(wl[i], '/'), gs = split(gl[i], '/');
    if (ws.size() != gs.size()) return false;
    for (size_t k = 0; k < ws.size(); ++k)
      if (ws[k] != "*" && ws[k] != gs[k]) return false;
  }
  return true;
}

// Empty when the recorded line satisfies the expected one, else why not.
std::string mismatch(const Line& want, const Line& got) {
  if (want.func != got.func) return "function " + got.func + " instead of " + want.func;
  std::string why;
  for (const auto& [k, v] : want.fields) {
    if (k == "key") continue;  // expectation-only: the communicator's name
    const std::string* g = got.get(k);
    // site=exe#LABEL: the label names the call site (checked across lines).
    const std::string want_v = k == "site" ? v.substr(0, v.find('#')) : v;
    if (!g) why += " " + k + " missing";
    else if (!value_matches(want_v, *g)) why += " " + k + "=" + *g + " (expected " + v + ")";
  }
  for (const auto& [k, v] : got.fields)
    if (!want.get(k) && k[0] != '_') why += " unexpected " + k + "=" + v;
  return why;
}

// Index of the first difference (want.size() == got.size() and none: -1).
long first_difference(const std::vector<Line>& want, const std::vector<Line>& got) {
  const size_t n = std::min(want.size(), got.size());
  for (size_t i = 0; i < n; ++i)
    if (!mismatch(want[i], got[i]).empty()) return long(i);
  if (want.size() != got.size()) return long(n);
  return -1;
}

void report_diff(const std::string& what, const std::vector<Line>& want,
                 const std::vector<Line>& got) {
  const long d = first_difference(want, got);
  if (d < 0) return;
  std::ostringstream o;
  o << what << ": recorded events differ from the program's log (" << want.size()
    << " expected, " << got.size() << " recorded); first difference at call #" << d << ":\n";
  const long from = std::max(0L, d - 3);
  for (long i = from; i <= d + 3; ++i) {
    const bool have_w = size_t(i) < want.size(), have_g = size_t(i) < got.size();
    if (!have_w && !have_g) break;
    const char* mark = i == d ? ">>" : "  ";
    o << "    " << mark << " #" << i << " expected: "
      << (have_w ? want[size_t(i)].text + "  (log line " + std::to_string(want[size_t(i)].lineno) + ")"
                 : std::string("(nothing)"))
      << "\n    " << mark << " #" << i << " recorded: "
      << (have_g ? got[size_t(i)].text : std::string("(nothing)")) << "\n";
    if (i == d && have_w && have_g) o << "       why:" << mismatch(want[size_t(i)], got[size_t(i)]) << "\n";
  }
  // Per-function counts.
  std::map<std::string, std::pair<long, long>> counts;
  for (const auto& l : want) counts[l.func].first++;
  for (const auto& l : got) counts[l.func].second++;
  bool any = false;
  for (const auto& [f, c] : counts) {
    if (c.first == c.second) continue;
    if (!any) o << "    counts that differ (expected/recorded):";
    any = true;
    o << " " << f << " " << c.first << "/" << c.second;
  }
  std::string s = o.str();
  if (!s.empty() && s.back() == '\n') s.pop_back();
  error(s);
}

struct CommKeyUse {
  int rank;
  uint64_t global_id;
  std::vector<int32_t> members;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: trace_check TRACE_DIR EXPECT_DIR [--dump]\n");
    return 2;
  }
  const std::string trace_dir = argv[1], expect_dir = argv[2];
  const bool dump = argc > 3 && std::strcmp(argv[3], "--dump") == 0;

  TraceDir td = TraceDir::open(trace_dir);
  for (const auto& w : td.warnings) error("trace directory: " + w);
  for (const auto& e : td.errors) error("trace directory: " + e);
  if (!td.errors.empty()) return 1;

  // Expectation files: one per rank that ran.
  std::map<int, std::string> expect_files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(expect_dir, ec)) {
    const std::string name = entry.path().filename().string();
    int r = -1;
    if (std::sscanf(name.c_str(), "expect-rank-%d.txt", &r) == 1) expect_files[r] = entry.path();
  }
  if (ec) {
    std::fprintf(stderr, "trace_check: cannot read %s: %s\n", expect_dir.c_str(),
                 ec.message().c_str());
    return 2;
  }
  if (expect_files.empty()) {
    error("no expect-rank-*.txt in " + expect_dir + " (did the program run?)");
    return 1;
  }
  if (int(expect_files.size()) != td.world_size || int(td.ranks.size()) != td.world_size)
    error("world size " + std::to_string(td.world_size) + ", " +
          std::to_string(td.ranks.size()) + " rank files, " +
          std::to_string(expect_files.size()) + " expectation logs");

  std::map<std::string, std::vector<CommKeyUse>> comm_keys;
  uint64_t total_events = 0;
  std::vector<int32_t> ranks_killed_on_exit;

  for (const auto& tp : td.ranks) {
    const RankTrace& t = *tp;
    const int rank = t.rank();
    problem_prefix = "rank " + std::to_string(rank);
    auto ef = expect_files.find(rank);
    if (ef == expect_files.end()) {
      error("no expectation log for this rank");
      continue;
    }
    Expectation ex;
    if (!read_expectation(ef->second, &ex)) {
      error("cannot read " + ef->second);
      continue;
    }

    // Events, bucketed by stream (the merged cursor keeps each stream's order);
    // continuation records are folded into the call they continue.
    std::map<uint32_t, std::vector<Recorded>> streams;
    Formatter fmt(t);
    {
      auto cur = t.events();
      Event e;
      uint64_t last_enter = 0;
      bool first = true;
      while (cur.next(e)) {
        if (!first && e.enter < last_enter)
          error("merged cursor goes back in time at " + std::to_string(e.enter));
        first = false;
        last_enter = e.enter;
        // A call in flight when the process died is no record: the logs list
        // what returned (hang.sh checks the calls in flight).
        if (e.in_flight) continue;
        auto& v = streams[e.stream];
        if ((e.flags & prof::format::kContinuation) && !v.empty() &&
            (e.kind == FuncKind::Completion || e.kind == FuncKind::RequestOp)) {
          auto& prev = v.back();
          prev.completions.insert(prev.completions.end(), e.completions.begin(), e.completions.end());
          prev.requests.insert(prev.requests.end(), e.requests.begin(), e.requests.end());
          continue;
        }
        Recorded r;
        r.e = e;
        r.e.completions = {};
        r.e.requests = {};
        r.completions.assign(e.completions.begin(), e.completions.end());
        r.requests.assign(e.requests.begin(), e.requests.end());
        if (e.kind == FuncKind::Isend || e.kind == FuncKind::Irecv ||
            e.kind == FuncKind::ICollective || e.kind == FuncKind::IAllToAll)
          fmt.note_request(e.request, e.enter, e.comm);
        v.push_back(std::move(r));
        ++total_events;
      }
    }
    fmt.sort_origins();

    // Damage: none allowed, except unsealed chunks of a killed process.
    const auto& st = t.stats();
    const std::pair<const char*, uint64_t> damage[] = {
        {"crc_mismatches", st.crc_mismatches},       {"bad_chunk_headers", st.bad_chunk_headers},
        {"truncated_chunks", st.truncated_chunks},   {"missing_chunks", st.missing_chunks},
        {"bad_records", st.bad_records},
        {"bad_definitions", st.bad_definitions},     {"unknown_chunk_types", st.unknown_chunk_types},
        {"backwards_timestamps", st.backwards_timestamps}};
    for (const auto& [name, n] : damage)
      if (n) error(std::string(name) + " = " + std::to_string(n) + " (expected 0)");
    // The epoch's wall-clock time: the run started less than an hour ago.
    {
      const auto it = t.meta().find("epoch_realtime_ns");
      const long long now_ns = static_cast<long long>(std::time(nullptr)) * 1000000000LL;
      const long long epoch_wall = it == t.meta().end() ? 0 : std::atoll(it->second.c_str());
      if (epoch_wall <= now_ns - 3600LL * 1000000000LL || epoch_wall > now_ns + 1000000000LL)
        error("epoch_realtime_ns " + (it == t.meta().end() ? std::string("missing") : it->second) +
              ", not within the hour before now (" + std::to_string(now_ns) + ")");
    }
    for (const auto& w : t.warnings()) std::fprintf(stderr, "trace_check: %s: reader warning: %s\n",
                                                    problem_prefix.c_str(), w.c_str());
    // Killed on its way out (end reason ""): whatever it had not sealed yet is
    // salvaged, and the event comparison below still requires every event.
    const bool killed_on_exit =
        ex.may_be_killed && t.end_reason().empty() && !ex.end_reason.empty();
    if (killed_on_exit) {
      ranks_killed_on_exit.push_back(rank);
      std::fprintf(stderr, "trace_check: %s: killed on its way out (end reason '', %" PRIu64
                   " unsealed chunk(s)); accepted instead of '%s'\n",
                   problem_prefix.c_str(), uint64_t(st.unsealed_chunks), ex.end_reason.c_str());
    } else {
      if (ex.salvaged && st.unsealed_chunks == 0)
        error("expected the events to be salvaged from an unsealed chunk, but every chunk is sealed");
      if (!ex.salvaged && st.unsealed_chunks != 0)
        error(std::to_string(st.unsealed_chunks) +
              " unsealed chunk(s) in a process that ended normally");
      if (t.end_reason() != ex.end_reason)
        error("end reason '" + t.end_reason() + "', expected '" + ex.end_reason + "'" +
              (ex.may_be_killed ? " (or '' if killed on its way out)" : ""));
    }
    if (st.event_chunks < ex.min_event_chunks)
      error(std::to_string(st.event_chunks) + " event chunks, expected at least " +
            std::to_string(ex.min_event_chunks));

    // Communicators defined at start.
    const uint64_t t_first = [&] {
      auto it = streams.find(0);
      return it == streams.end() || it->second.empty() ? 0 : it->second.front().e.enter;
    }();
    for (const auto& c : ex.comm_checks) {
      const uint32_t h = uint32_t(std::strtoul(c.func.c_str(), nullptr, 16));
      const auto* def = t.comm_at(h, t_first);
      const std::string* want = c.get("members");
      if (!def) error("communicator " + c.func + " not defined");
      else if (want && Formatter::join(def->ranks) != *want)
        error("communicator " + c.func + " members " + Formatter::join(def->ranks) +
              ", expected " + *want);
    }

    // Lines per stream.
    std::map<uint32_t, std::vector<Line>> got;
    for (const auto& [s, v] : streams) {
      auto& out = got[s];
      out.reserve(v.size());
      for (const auto& r : v) out.push_back(fmt.format(r));
    }
    if (dump) {
      for (const auto& [s, lines] : got)
        for (const auto& l : lines) std::printf("rank %d stream %u: %s\n", rank, s, l.text.c_str());
    }

    // Thread 0 is stream 0 (the thread that called MPI_Init); the others are
    // matched to the stream that equals their log.
    std::set<uint32_t> free_streams;
    std::map<int, uint32_t> stream_of_thread;
    for (const auto& [s, v] : got) free_streams.insert(s);
    static const std::vector<Line> none;
    if (ex.threads.count(0)) {
      report_diff("thread 0 (stream 0)", ex.threads[0], got.count(0) ? got[0] : none);
      free_streams.erase(0);
      stream_of_thread[0] = 0;
    }
    // First the threads whose log some stream equals exactly, then the others
    // against the closest stream left (longest common prefix), with a diff.
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto& [thread, want] : ex.threads) {
        if (thread == 0 || stream_of_thread.count(thread)) continue;
        long best_prefix = -2;
        uint32_t best = 0;
        bool found = false;
        for (uint32_t s : free_streams) {
          if (s == 0) continue;
          const long d = first_difference(want, got[s]);
          if (d < 0) {
            best = s;
            found = true;
            break;
          }
          if (d > best_prefix) {
            best_prefix = d;
            best = s;
          }
        }
        if (pass == 0 && !found) continue;
        const std::string what = "thread " + std::to_string(thread);
        if (!found && best_prefix == -2) {
          error(what + ": " + std::to_string(want.size()) + " calls logged, but no stream left");
          continue;
        }
        if (!found)
          report_diff(what + " (closest: stream " + std::to_string(best) + ")", want, got[best]);
        stream_of_thread[thread] = best;
        free_streams.erase(best);
      }
    }
    for (uint32_t s : free_streams)
      if (!got[s].empty())
        error("stream " + std::to_string(s) + " has " + std::to_string(got[s].size()) +
              " events that no thread logged (first: " + got[s].front().text + ")");

    // Communicator keys for the cross-rank check: the definition the creating
    // call made (recorded event at the same index as the logged line).
    for (const auto& [thread, s] : stream_of_thread) {
      const auto& want = ex.threads[thread];
      const auto& v = streams[s];
      for (size_t i = 0; i < want.size() && i < v.size(); ++i) {
        const std::string* key = want[i].get("key");
        const auto& e = v[i].e;
        if (!key || key->empty()) continue;
        const prof::trace::CommDef* def = nullptr;
        if (e.kind == FuncKind::CommCreate && e.new_comm != prof::format::kNoComm)
          def = t.comm_at(e.new_comm, e.enter);
        else if (e.kind == FuncKind::ICollective)  // MPI_Comm_idup
          def = created_at(t, e.enter, e.comm);
        if (!def || def->time != e.enter) continue;  // the diff says what is wrong
        std::vector<int32_t> all = def->ranks;  // intercomms: both groups take part
        if (def->inter) all.insert(all.end(), def->remote_ranks.begin(), def->remote_ranks.end());
        comm_keys[*key].push_back({rank, def->global_id, all});
      }
    }

    // Marker call sites: one call site per label, a different one per label.
    std::map<std::string, std::set<std::string>> ids_of_label;
    std::map<std::string, std::set<std::string>> labels_of_id;
    for (const auto& [thread, s] : stream_of_thread) {
      const auto& want = ex.threads[thread];
      const auto& lines = got[s];
      for (size_t i = 0; i < want.size() && i < lines.size(); ++i) {
        const std::string* ws = want[i].get("site");
        const std::string* id = lines[i].get("_site");
        if (!ws || !id || ws->find('#') == std::string::npos) continue;
        const std::string label = ws->substr(ws->find('#') + 1);
        ids_of_label[label].insert(*id);
        labels_of_id[*id].insert(label);
      }
    }
    for (const auto& [label, ids] : ids_of_label)
      if (ids.size() != 1)
        error("markers from one call site (" + label + ") have " + std::to_string(ids.size()) +
              " call site ids");
    for (const auto& [id, labels] : labels_of_id)
      if (labels.size() != 1) {
        std::string l;
        for (const auto& x : labels) l += " " + x;
        error("markers from different call sites share call site id " + id + ":" + l);
      }
  }
  problem_prefix.clear();

  // The launcher kills the ranks still running once one has exited, so the
  // first rank out ended by itself: not every rank can have been killed.
  if (!ranks_killed_on_exit.empty() && ranks_killed_on_exit.size() >= size_t(td.world_size))
    error("every rank lost its end reason (ranks " + Formatter::join(ranks_killed_on_exit) +
          "): the first rank to exit must have written it");

  // Cross-rank: one global id per communicator, distinct between communicators,
  // and every member reports it.
  std::map<uint64_t, std::string> key_of_gid;
  for (const auto& [key, uses] : comm_keys) {
    std::set<uint64_t> gids;
    for (const auto& u : uses) gids.insert(u.global_id);
    if (gids.size() != 1) {
      std::string s;
      for (const auto& u : uses) s += " rank " + std::to_string(u.rank) + ":" + hex(u.global_id);
      error("communicator '" + key + "': members disagree on its global id:" + s);
    }
    for (uint64_t g : gids) {
      auto [it, inserted] = key_of_gid.emplace(g, key);
      if (!inserted && it->second != key)
        error("communicators '" + key + "' and '" + it->second + "' share global id " + hex(g));
    }
    std::vector<int32_t> reporters;
    for (const auto& u : uses) reporters.push_back(u.rank);
    std::sort(reporters.begin(), reporters.end());
    std::vector<int32_t> members = uses.front().members;
    std::sort(members.begin(), members.end());
    if (reporters != members)
      error("communicator '" + key + "': members " + Formatter::join(members) +
            " but created on ranks " + Formatter::join(reporters));
  }

  if (problem_count) {
    std::fprintf(stderr, "trace_check: FAILED (%d problem(s)) for %s\n", problem_count,
                 trace_dir.c_str());
    return 1;
  }
  std::printf("trace_check: OK: %d rank(s), %" PRIu64 " events match the programs' logs\n",
              td.world_size, total_events);
  return 0;
}
