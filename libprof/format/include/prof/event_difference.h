// Whether two decodings of a record agree, member by member: the one list of
// Event's members that every such check uses (the format tests, the fuzzer's
// oracle that batches decode as next() does). A member added to Event is
// added here; the size check below fails until it is.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>

#include "prof/trace_reader.h"

namespace prof::trace {

static_assert(sizeof(Event) == 128, "a member added to Event must be compared in event_difference");

// The first member in which `a` and `b` differ, named with both values
// ("peer 3 != 4", "completions[1].tag 5 != -1"), or "" when every member and
// every entry of the lists is the same.
inline std::string event_difference(const Event& a, const Event& b) {
  std::string diff;
  const auto check = [&diff](const char* name, const auto& x, const auto& y) {
    if (!diff.empty() || x == y) return;
    std::ostringstream out;
    out << name << ' ' << +x << " != " << +y;
    diff = out.str();
  };
  check("enter", a.enter, b.enter);
  check("leave", a.leave, b.leave);
  check("func", a.func, b.func);
  check("kind", static_cast<int>(a.kind), static_cast<int>(b.kind));
  check("flags", a.flags, b.flags);
  check("call_site_index", a.call_site_index, b.call_site_index);
  check("marker_begin", a.marker_begin, b.marker_begin);
  check("in_flight", a.in_flight, b.in_flight);
  check("stream", a.stream, b.stream);
  check("peer", a.peer, b.peer);
  check("tag", a.tag, b.tag);
  check("comm", a.comm, b.comm);
  check("bytes", a.bytes, b.bytes);
  check("root", a.root, b.root);
  check("request", a.request, b.request);
  check("recv_peer", a.recv_peer, b.recv_peer);
  check("recv_tag", a.recv_tag, b.recv_tag);
  check("recv_bytes", a.recv_bytes, b.recv_bytes);
  check("new_comm", a.new_comm, b.new_comm);
  check("interval_id", a.interval_id, b.interval_id);
  check("callsite", a.callsite, b.callsite);
  check("call_site", a.call_site, b.call_site);
  check("site", a.site, b.site);
  check("completions.size()", a.completions.size(), b.completions.size());
  check("requests.size()", a.requests.size(), b.requests.size());
  if (!diff.empty()) return diff;
  for (size_t i = 0; i < a.completions.size() && diff.empty(); ++i) {
    const Completion &x = a.completions[i], &y = b.completions[i];
    if (x == y) continue;
    const std::string at = "completions[" + std::to_string(i) + "].";
    check((at + "request").c_str(), x.request, y.request);
    check((at + "source").c_str(), x.source, y.source);
    check((at + "tag").c_str(), x.tag, y.tag);
    check((at + "bytes").c_str(), x.bytes, y.bytes);
    check((at + "cancelled").c_str(), x.cancelled, y.cancelled);
    if (diff.empty()) diff = "completions[" + std::to_string(i) + "] (a member not named here)";
  }
  for (size_t i = 0; i < a.requests.size() && diff.empty(); ++i)
    check(("requests[" + std::to_string(i) + "]").c_str(), a.requests[i], b.requests[i]);
  return diff;
}

}  // namespace prof::trace
