// Chrome trace-event JSON writer (see chrome_trace.h for the layout).
//
// Each rank is streamed once through the same Interpreter as the analysis; the
// output is built in a buffer flushed every 1 MiB. Flow ids are a 48-bit hash
// of (channel, n) for the n-th message on the channel: both ends compute it
// alone, and 48 bits keep it exact as a JSON (double) number.
#include "prof/analysis/chrome_trace.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <streambuf>
#include <limits>
#include <set>

#include "damage_stop.h"
#include "interpret.h"
#include "job_export.h"
#include "prof/analysis/analysis.h"
#include "prof/analysis/exchange.h"
#include "prof/definition_lines.h"
#include "intervals.h"

namespace prof::analysis {
namespace {

using namespace detail;

void escape(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      // Keep well-formed UTF-8 sequences, replace anything else.
      size_t n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
      bool ok = n > 0 && i + n <= s.size();
      for (size_t k = 1; ok && k < n; ++k)
        ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
      if (ok) {
        out.append(s.data() + i, n);
        i += n - 1;
      } else {
        out += '?';
      }
    }
  }
  out += '"';
}

struct Writer {
  std::ostream& out;
  std::string buf;
  bool first = true;
  ChromeTraceStats stats;

  void begin_event() {
    if (!first) buf += ",\n";
    first = false;
  }
  void flush(bool force = false) {
    if (force || buf.size() >= (1u << 20)) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  }
  void num(double v) {
    char b[64];
    if (!std::isfinite(v) || std::fabs(v) > 1e18) v = 0;
    const auto r = std::to_chars(b, b + sizeof b, v, std::chars_format::fixed, 3);
    buf.append(b, r.ptr);
  }
  void integer(long long v) {
    char b[24];
    const auto r = std::to_chars(b, b + sizeof b, v);
    buf.append(b, r.ptr);
  }
};

struct ChromeHandler {
  ChromeHandler(Writer& writer, const Registry& registry, size_t rank_index, int world_rank,
                double time_zero, const ChromeTraceOptions& options)
      : w(writer), reg(registry), index(rank_index), rank(world_rank), t0(time_zero),
        from_us(options.from_s * 1e6), to_us(options.to_s * 1e6), intervals(world_rank) {}

  Writer& w;
  const Registry& reg;
  size_t index;
  int rank;
  double t0;
  double from_us, to_us;  // the window
  const Event* cur = nullptr;
  std::set<uint32_t> streams;
  IntervalTracker intervals;
  // An interval execution's slice name, by (interval id, call site).
  std::vector<std::string> labels;
  FlatMap<uint64_t, uint32_t> label_of;
  FlatMap<ChannelKey, uint64_t, ChannelHash> sent, received;
  CommCache* comms = nullptr;
  const RankTrace* rank_trace = nullptr;  // resolves the sites of calls in flight
  std::vector<std::string> site_labels;  // by Registry site: "file:line" (made when first drawn)

  long long tid(uint32_t stream) const {
    return stream == 0 ? rank : 1000000ll + static_cast<long long>(rank) * 1000 + stream;
  }
  double us(double ns) const { return (ns - t0) / 1000.0; }
  bool in_window(double enter, double leave) const {
    return us(leave) >= from_us && us(enter) <= to_us;
  }

  // An "X" slice; args from `e` when given (an MPI call).
  void slice(uint32_t stream, std::string_view name, const char* cat, double enter, double leave,
             const Event* e = nullptr) {
    streams.insert(stream);
    if (!in_window(enter, leave)) {
      ++w.stats.outside_window;
      return;
    }
    w.begin_event();
    w.buf += "{\"ph\":\"X\",\"pid\":0,\"tid\":";
    w.integer(tid(stream));
    w.buf += ",\"ts\":";
    w.num(us(enter));
    w.buf += ",\"dur\":";
    w.num(std::max(0.0, leave - enter) / 1000.0);
    w.buf += ",\"name\":";
    escape(w.buf, name);
    w.buf += ",\"cat\":\"";
    w.buf += cat;
    w.buf += '"';
    if (e) {
      const size_t at = w.buf.size();
      w.buf += ",\"args\":{";
      const size_t body = w.buf.size();
      args(*e);
      if (w.buf.size() == body) w.buf.resize(at);  // no args
      else w.buf += '}';
    }
    w.buf += '}';
    ++w.stats.slices;
    w.flush();
  }
  static uint64_t flow_id(const ChannelKey& k, uint64_t n) {
    const uint64_t id = mix64(ChannelHash{}(k) ^ mix64(n + 0x9E37ull)) & ((uint64_t{1} << 48) - 1);
    return id ? id : 1;
  }
  // A flow end; false when it lies outside the window (not written).
  bool flow(const char* ph, uint32_t stream, double t, uint64_t id) {
    streams.insert(stream);
    if (us(t) < from_us || us(t) > to_us) return false;
    w.begin_event();
    w.buf += "{\"ph\":\"";
    w.buf += ph;
    w.buf += "\",\"pid\":0,\"tid\":";
    w.integer(tid(stream));
    w.buf += ",\"ts\":";
    w.num(us(t));
    w.buf += ",\"id\":";
    w.integer(static_cast<long long>(id));
    w.buf += ",\"name\":\"message\",\"cat\":\"message\"";
    if (ph[0] == 'f') w.buf += ",\"bp\":\"e\"";
    w.buf += '}';
    w.flush();
    return true;
  }

  // An MPI call's args, appended to the output (nothing for calls without
  // any). The communicator is its global id (the same on every rank), or the
  // raw handle in hex when the trace does not define it.
  void args(const Event& e) {
    bool first = true;
    auto key = [&](const char* k) {
      if (!first) w.buf += ',';
      first = false;
      w.buf += '"';
      w.buf += k;
      w.buf += "\":";
    };
    auto add_comm = [&] {
      key("comm");
      if (comms)
        if (const CommInfo* c = comms->at(e.comm, e.enter)) {
          w.integer(static_cast<long long>(reported_comm_id(c->gid)));
          return;
        }
      w.buf += '"';
      w.buf += format::hex(e.comm);
      w.buf += '"';
    };
    auto add = [&](const char* k, long long v) {
      key(k);
      w.integer(v);
    };
    // The call's values in the record schema's field order, its communicator
    // last; handles a viewer cannot use (requests, new communicators) and
    // marker fields are left out.
    const format::KindSchema* schema = format::find_schema(e.kind);
    const size_t fields = schema ? schema->field_count : 0;
    for (size_t i = 0; i < fields; ++i) switch (schema->fields[i]) {
        case format::Field::PeerTag:
          add("peer", e.peer);
          add("tag", e.tag);
          break;
        case format::Field::RecvPeerTag:
          add("recv_peer", e.recv_peer);
          add("recv_tag", e.recv_tag);
          break;
        case format::Field::Bytes: add("bytes", static_cast<long long>(e.bytes)); break;
        case format::Field::RecvBytes: add("recv_bytes", static_cast<long long>(e.recv_bytes)); break;
        case format::Field::Root: add("root", e.root); break;
        case format::Field::Completions:
          add("completed", static_cast<long long>(e.completions.size()));
          break;
        default: break;
      }
    if (schema && schema->has(format::Field::Comm)) add_comm();
    if (e.call_site != 0 && !e.in_flight) {
      // The call's own site (format 7): file:line, else object+offset; a
      // call in flight's below.
      if (const uint32_t site = reg.site(index, e.call_site); site != 0) {
        if (site_labels.size() <= site) site_labels.resize(reg.sites.size());
        std::string& label = site_labels[site];
        if (label.empty()) {
          const SiteInfo& s = reg.sites[site];
          label = s.file.empty() ? s.label : s.file + ":" + std::to_string(s.line);
        }
        key("site");
        escape(w.buf, label);
      }
    }
    if (e.in_flight) {
      // Entered, never completed: the slice runs to the rank's last moment
      // alive. Its call site too (file:line, else object+offset), as the
      // report's run_end says it: the one place a hang shows in the viewer.
      key("in_flight");
      w.buf += "true";
      if (rank_trace) {
        key("site");
        escape(w.buf, resolve_code_address(*rank_trace, e.site).label);
      }
    }
  }

  // Interpreter handler interface. Every call is drawn; what counts as the
  // run and its intervals is IntervalTracker's to say.
  bool call(const Event& e, const FuncInfo& fi, double enter, double leave) {
    cur = &e;
    if (fi.name != 0) slice(e.stream, reg.functions[fi.name], "mpi", enter, leave, &e);
    else slice(e.stream, "MPI function " + std::to_string(e.func), "mpi", enter, leave, &e);
    intervals.call(fi, enter, leave, *this);
    return true;
  }
  bool continuation() const { return true; }
  void marker(const Event& e, double enter, double leave) { intervals.marker(e, enter, leave, *this); }

  // IntervalTracker handler interface.
  void root_started(double) {}
  uint32_t interval_begun(uint32_t, const Event& e, double, uint32_t) {
    const uint64_t key = uint64_t{e.interval_id} << 32 | e.callsite;
    if (const uint32_t* i = label_of.find(key)) return *i;
    const SiteInfo& s = reg.sites[reg.site(index, e.callsite)];
    const std::string where = s.file.empty() ? s.label : s.file + ":" + std::to_string(s.line);
    labels.push_back("interval " + std::to_string(e.interval_id) + " (" + where + ")");
    label_of[key] = static_cast<uint32_t>(labels.size() - 1);
    return static_cast<uint32_t>(labels.size() - 1);
  }
  void interval_ended(uint32_t stream, const OpenInterval& o, double t) {
    slice(stream, labels[o.payload], "interval", o.start, t);
  }
  void root_ended(double t) {
    slice(0, "run (rank " + std::to_string(rank) + ")", "interval", intervals.root_start(), t);
  }
  void send(const ChannelKey& k, double enter, double, const Event& e) {
    if (flow("s", e.stream, enter, flow_id(k, sent[k]++))) ++w.stats.flows;
  }
  // The arrow ends where the receive (or the call completing it) returns:
  // by then the send has begun, so the arrow never points back in time,
  // which the viewers drop (a late sender's receive enters before its send).
  // Two nanoseconds inside the slice (times print to the nanosecond), so the
  // end binds to it.
  void recv(const ChannelKey& k, double, uint64_t, double enter, double leave, const Event& e) {
    const double at = leave - enter > 4 ? leave - 2 : (enter + leave) / 2;
    flow("f", e.stream, at, flow_id(k, received[k]++));
  }
  // The export draws calls, not waits: no watermark to hold.
  uint64_t hold(double) { return HoldQueue::kNone; }
  void release(uint64_t) {}
  void cancel_send(const ChannelKey&, double) {}
  void collective(const CommInfo&, bool, double, double, const Event&) {}
  template <class F>
  void problem(WarningKind, F&&, uint64_t = 1) {}
};

// Draws rank i: its slices and flow ends, then its threads' names.
void draw_rank(Writer& w, const Registry& reg, const WorldIndex& w2i, const RankTrace& rank_trace, size_t i,
               double t0, const RunSpan& span, const ChromeTraceOptions& options) {
  Interpreter interp(rank_trace, reg, i, w2i);
  ChromeHandler h(w, reg, i, rank_trace.rank(), t0, options);
  h.rank_trace = &rank_trace;
  h.comms = &interp.comms();
  auto cursor = rank_trace.events();
  // A damaged rank ends where the analysis ends it (damage_stop.h).
  DamageStop damage;
  damage.span = &span;
  damage.read(cursor, interp, [&](std::span<const Event> batch) {
    for (const Event& e : batch) interp.process(e, interp.global(e.enter), h);
    return true;
  });
  if (rank_trace.heartbeat() != 0 && !damage.stopped)
    h.intervals.note_alive([&] { return interp.global(rank_trace.last_alive()); });
  h.intervals.finish(h);
  h.streams.insert(0);
  for (uint32_t s : h.streams) {
    const long long tid = h.tid(s);
    const std::string name = s == 0 ? "rank " + std::to_string(rank_trace.rank())
                                    : "rank " + std::to_string(rank_trace.rank()) + " thread " + std::to_string(s);
    w.begin_event();
    w.buf += "{\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(tid) +
             ",\"name\":\"thread_name\",\"args\":{\"name\":";
    escape(w.buf, name);
    w.buf += "}}";
    w.begin_event();
    w.buf += "{\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(tid) +
             ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" + std::to_string(tid) + "}}";
  }
  w.flush();
}

// An MPI job's export (write_chrome_trace with a job whose processes hold
// their blocks' rank files alone, TraceDir::holder).
//
// Algorithm
//   The ranks, in order, fall into runs of one holder each. Process 0 draws
//   its own runs into the output; a run of another process p is drawn by p
//   into a RunToRoot stream, which hands process 0 what it wrote in rounds
//   (job_export.h), the last with p's counts first. Process 0 appends each
//   round to the output as it comes, so the output is the single
//   process's, byte for byte, and no process opens a file of another's
//   block.
class RunToRoot final : public std::streambuf {
 public:
  explicit RunToRoot(Exchange& job) : job_(job) {}
  // The run's last round, with the holder's counts.
  void finish(const ChromeTraceStats& stats) {
    pending_.insert(0, reinterpret_cast<const char*>(&stats), sizeof stats);
    send_round(job_, pending_, true);
  }
  // Process 0 or a bystander during process `holder`'s run: takes the
  // rounds until the last; process 0 appends them to `out` (when it still
  // writes) and adds the holder's counts to `stats`.
  static void take_run(Exchange& job, int holder, std::ostream* out, ChromeTraceStats& stats) {
    take_rounds(job, holder, "Chrome trace", [&](std::string_view m, bool last) {
      if (last) {
        if (m.size() < sizeof(ChromeTraceStats))
          throw std::runtime_error("Chrome trace: process " + std::to_string(holder) + " sent no counts");
        ChromeTraceStats theirs;
        std::memcpy(&theirs, m.data(), sizeof theirs);
        stats.slices += theirs.slices;
        stats.flows += theirs.flows;
        stats.outside_window += theirs.outside_window;
        m.remove_prefix(sizeof theirs);
      }
      if (out && *out && !m.empty()) out->write(m.data(), static_cast<std::streamsize>(m.size()));
    });
  }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    pending_.append(s, static_cast<size_t>(n));
    if (pending_.size() >= kRoundBytes) {
      send_round(job_, pending_, false);
      pending_.clear();
    }
    return n;
  }
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) {
      const char ch = traits_type::to_char_type(c);
      xsputn(&ch, 1);
    }
    return traits_type::not_eof(c);
  }

 private:
  Exchange& job_;
  std::string pending_;
};

}  // namespace

bool write_chrome_trace(const trace::TraceDir& dir, std::ostream& out, std::string* error,
                        ChromeTraceStats* stats, const ChromeTraceOptions& options, Exchange* job) {
  const ExportScope scope(dir, job);

  Writer w{out, {}, true, {}};
  if (scope.me == 0) {
    w.buf += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"prof-analyze\"},\"traceEvents\":[\n";
    w.begin_event();
    w.buf += "{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"MPI run\"}}";
  }
  for (size_t a = 0; a < scope.traces.size();) {
    const int holder = scope.held ? dir.holder[a] : 0;
    size_t b = a + 1;
    while (b < scope.traces.size() && scope.held && dir.holder[b] == holder) ++b;
    if (holder == scope.me) {
      if (scope.me == 0) {
        for (size_t i = a; i < b && out; ++i)
          draw_rank(w, scope.registry, scope.world_to_index, *scope.traces[i], i, scope.t0, scope.span, options);
      } else {
        RunToRoot to_root(*job);
        std::ostream sink(&to_root);
        // (Process 0 wrote the first event: every one drawn here follows one.)
        Writer drawn{sink, {}, false, {}};
        for (size_t i = a; i < b; ++i)
          draw_rank(drawn, scope.registry, scope.world_to_index, *scope.traces[i], i, scope.t0, scope.span, options);
        drawn.flush(true);
        to_root.finish(drawn.stats);
      }
    } else if (holder != 0) {  // (process 0's runs go to the output without rounds)
      // (What the output had so far goes first.)
      if (scope.me == 0) w.flush(true);
      RunToRoot::take_run(*job, holder, scope.me == 0 ? &out : nullptr, w.stats);
    }
    if (!scope.held && !out) break;
    a = b;
  }
  if (scope.me != 0) return true;
  w.buf += "\n]}\n";
  w.flush(true);
  out.flush();
  if (stats) *stats = w.stats;
  if (!out) {
    if (error) *error = "cannot write the Chrome trace (output error)";
    return false;
  }
  return true;
}

}  // namespace prof::analysis
