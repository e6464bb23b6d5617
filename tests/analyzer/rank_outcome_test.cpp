// RankOutcome (analyzer/src/engine.h): what the report reads of a rank once
// its pass is over, which process 0 of an MPI job holds for the other
// processes' ranks, built from what put_outcome() sent. Every member a
// process fills must come back as it was sent (a figure lost or mixed up on
// the way would change only the job's report, and only where that member is
// nonzero): each gets a distinct nonzero value here.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine.h"
#include "trace_builder.h"

namespace prof::analysis::detail {
namespace {

using test::TraceBuilder;

template <class T>
std::vector<T> entries(const PagedLog<T>& log) {
  std::vector<T> v;
  log.for_each([&](const T& e) { v.push_back(e); });
  return v;
}
// (Of types without padding.)
template <class T>
bool same_bytes(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

struct Warned {
  WarningKind kind;
  uint64_t count;
  std::vector<std::string> examples;
  std::vector<WarningSink::Key> keys;
};
std::vector<Warned> warnings_of(const WarningSink& sink) {
  std::vector<Warned> v;
  sink.for_each([&](WarningKind kind, uint64_t count, const std::vector<std::string>& examples,
                    const std::vector<WarningSink::Key>& keys) { v.push_back(Warned{kind, count, examples, keys}); });
  return v;
}

// A rank's outcome with every member the wire carries set, each to a value
// of its own (`seed` shifts them all).
void fill(RankOutcome& r, double seed) {
  r.nodes = {LocalNode{kNoParent, kRootId, 0}, LocalNode{0, 7, 3}, LocalNode{1, 9, 4}};
  r.merged_at = {1, 2, 5};
  r.acc.assign(3, NodeAcc{});
  for (size_t n = 0; n < r.acc.size(); ++n) {
    NodeAcc& a = r.acc[n];
    const double x = seed + 100.0 * static_cast<double>(n);
    for (int l = 0; l < kLevels; ++l) {
      a.in.level[l] = to_instant(x + l + 0.25);
      a.waits.level[l] = to_instant(x + l + 0.5);
    }
    a.waited_for.add(3, to_instant(x + 1), 0);
    a.waited_for.add(1, to_instant(x + 2), to_instant(x + 0.125));
    a.mpi_time = x + 3.25;
    a.start_time = x + 3.5;
    a.calls = static_cast<uint64_t>(x) + 4;
    a.inside = static_cast<uint64_t>(x) + 5;
    a.closed = static_cast<uint64_t>(x) + 6;
    a.t_sum = x + 7;
    a.first_enter = x + 8;
    a.executed_in_run = n % 2 == 1;
    a.funcs = {FuncStat{static_cast<uint64_t>(x) + 9, x + 10, 11}, FuncStat{12, x + 13, 14}};
  }
  Combo c{{1, 2}, {}, {}};
  for (int l = 0; l < kLevels; ++l) {
    c.in.level[l] = to_instant(seed + 1000 + l);
    c.waits.level[l] = to_instant(seed + 2000 + l);
  }
  r.combos = {c};
  r.slot_name = {21, 22};
  r.slot_site = {0, 23};
  r.delay.contexts.push_back(DelayLog::Context{seed + 31, 1});
  r.delay.contexts.push_back(DelayLog::Context{seed + 32, kComboBit});
  r.delay.syncs.push_back(DelayLog::sync_with_peer(seed + 33, 1));
  r.delay.syncs.push_back(DelayLog::sync_on_comm(seed + 34, 1));
  r.delay.waits.push_back(DelayLog::Wait{seed + 35, seed + 36, 1, 2});
  r.delay.comms = {DelayLog::Comm{0, trace::RankList::identity(4)},
                   DelayLog::Comm{41, trace::RankList(std::vector<int32_t>{0, 2})}};
  r.events = 51;
  r.calls = 52;
  r.matched = 53;
  r.unmatched_sends = 54;
  r.unmatched_recvs = 55;
  r.local_instances = 56;
  r.damage.stopped = true;
  r.damage.by_time = true;
  r.damage.excluded_time = seed + 57;
  r.damage.events_not_read = 58;
  r.gathered_unbalanced = 59;
  r.gathered_last_alive = seed + 60;
  r.gathered_stats.crc_mismatches = 61;
  r.gathered_stats.events = 62;
  r.gathered_trace_warnings = {"rank-00000.prof: a chunk's CRC"};
  r.warn.add(WarningKind::SendsNeverReceived, [] { return std::string("2 on rank 0 -> rank 1"); }, 2);
  r.warn.add(WarningKind::UnknownRequestCompletion, [] { return std::string("a request"); });
  CallInFlight call;
  call.function = "MPI_Recv";
  call.stream = 1;
  call.entered = seed + 63;
  call.file = "loop.c";
  call.line = 64;
  call.site_label = "loop.c:64";
  call.peer = 1;
  call.tag = 65;
  call.waiting_for = {1};
  r.gathered_in_flight = {call};
  r.gathered_rebuilt = {"/usr/lib/libfoo.so"};
}

void expect_same_figures(const RankOutcome& got, const RankOutcome& sent, bool waits, bool delay) {
  EXPECT_TRUE(got.gathered);
  ASSERT_EQ(got.nodes.size(), sent.nodes.size());
  EXPECT_EQ(got.merged_at, sent.merged_at);
  ASSERT_EQ(got.acc.size(), sent.acc.size());
  for (size_t n = 0; n < got.nodes.size(); ++n) {
    SCOPED_TRACE("node " + std::to_string(n));
    EXPECT_EQ(got.nodes[n].parent, sent.nodes[n].parent);
    EXPECT_EQ(got.nodes[n].id, sent.nodes[n].id);
    EXPECT_EQ(got.nodes[n].site, sent.nodes[n].site);
    const NodeAcc &g = got.acc[n], &s = sent.acc[n];
    EXPECT_TRUE(same_bytes(g.in, s.in));
    if (waits) {
      EXPECT_TRUE(same_bytes(g.waits, s.waits));
      const auto gp = g.waited_for.list(), sp = s.waited_for.list();
      ASSERT_EQ(gp.size(), sp.size());
      // (In partner order once received: the order of partners means nothing.)
      for (const PartnerWaitAcc& p : sp) {
        bool found = false;
        for (const PartnerWaitAcc& q : gp)
          found = found || (q.partner == p.partner && q.length == p.length && q.uncertain == p.uncertain);
        EXPECT_TRUE(found) << "partner " << p.partner;
      }
    } else {
      EXPECT_TRUE(same_bytes(g.waits, WaitSums{}));
      EXPECT_EQ(g.waited_for.size(), 0u);
    }
    EXPECT_EQ(g.mpi_time, s.mpi_time);
    EXPECT_EQ(g.start_time, s.start_time);
    EXPECT_EQ(g.calls, s.calls);
    EXPECT_EQ(g.inside, s.inside);
    EXPECT_EQ(g.closed, s.closed);
    EXPECT_EQ(g.t_sum, s.t_sum);
    EXPECT_EQ(g.first_enter, s.first_enter);
    EXPECT_EQ(g.executed_in_run, s.executed_in_run);
    ASSERT_EQ(g.funcs.size(), s.funcs.size());
    for (size_t f = 0; f < g.funcs.size(); ++f) EXPECT_TRUE(same_bytes(g.funcs[f], s.funcs[f]));
  }
  ASSERT_EQ(got.combos.size(), sent.combos.size());
  for (size_t c = 0; c < got.combos.size(); ++c) {
    EXPECT_EQ(got.combos[c].nodes, sent.combos[c].nodes);
    EXPECT_TRUE(same_bytes(got.combos[c].in, sent.combos[c].in));
    EXPECT_TRUE(same_bytes(got.combos[c].waits, waits ? sent.combos[c].waits : WaitSums{}));
  }
  EXPECT_EQ(got.slot_name, sent.slot_name);
  EXPECT_EQ(got.slot_site, sent.slot_site);
  if (delay) {
    const auto gc = entries(got.delay.contexts), sc = entries(sent.delay.contexts);
    ASSERT_EQ(gc.size(), sc.size());
    for (size_t i = 0; i < gc.size(); ++i) EXPECT_TRUE(same_bytes(gc[i], sc[i]));
    const auto gs = entries(got.delay.syncs), ss = entries(sent.delay.syncs);
    ASSERT_EQ(gs.size(), ss.size());
    for (size_t i = 0; i < gs.size(); ++i) EXPECT_TRUE(same_bytes(gs[i], ss[i]));
    const auto gw = entries(got.delay.waits), sw = entries(sent.delay.waits);
    ASSERT_EQ(gw.size(), sw.size());
    for (size_t i = 0; i < gw.size(); ++i) EXPECT_TRUE(same_bytes(gw[i], sw[i]));
    ASSERT_EQ(got.delay.comms.size(), sent.delay.comms.size());
    for (size_t i = 0; i < got.delay.comms.size(); ++i) {
      EXPECT_EQ(got.delay.comms[i].gid, sent.delay.comms[i].gid);
      EXPECT_EQ(got.delay.comms[i].members.vector(), sent.delay.comms[i].members.vector());
    }
  } else {
    EXPECT_EQ(got.delay.contexts.size() + got.delay.syncs.size() + got.delay.waits.size(), 0u);
  }
  EXPECT_EQ(got.events, sent.events);
  EXPECT_EQ(got.calls, sent.calls);
  EXPECT_EQ(got.matched, sent.matched);
  EXPECT_EQ(got.unmatched_sends, sent.unmatched_sends);
  EXPECT_EQ(got.unmatched_recvs, sent.unmatched_recvs);
  EXPECT_EQ(got.local_instances, sent.local_instances);
  EXPECT_EQ(got.damage.stopped, sent.damage.stopped);
  EXPECT_EQ(got.damage.by_time, sent.damage.by_time);
  EXPECT_EQ(got.damage.excluded_time, sent.damage.excluded_time);
  EXPECT_EQ(got.damage.events_not_read, sent.damage.events_not_read);
  EXPECT_EQ(got.gathered_unbalanced, sent.gathered_unbalanced);
  EXPECT_EQ(got.gathered_last_alive, sent.gathered_last_alive);
  EXPECT_TRUE(same_bytes(got.gathered_stats, sent.gathered_stats));
  EXPECT_EQ(got.gathered_trace_warnings, sent.gathered_trace_warnings);
  const auto gwarn = warnings_of(got.warn), swarn = warnings_of(sent.warn);
  ASSERT_EQ(gwarn.size(), swarn.size());
  for (size_t i = 0; i < gwarn.size(); ++i) {
    EXPECT_EQ(gwarn[i].kind, swarn[i].kind);
    EXPECT_EQ(gwarn[i].count, swarn[i].count);
    EXPECT_EQ(gwarn[i].examples, swarn[i].examples);
    EXPECT_EQ(gwarn[i].keys.size(), swarn[i].keys.size());
  }
  ASSERT_EQ(got.gathered_in_flight.size(), sent.gathered_in_flight.size());
  for (size_t i = 0; i < got.gathered_in_flight.size(); ++i) {
    const CallInFlight &g = got.gathered_in_flight[i], &s = sent.gathered_in_flight[i];
    EXPECT_EQ(g.function, s.function);
    EXPECT_EQ(g.stream, s.stream);
    EXPECT_EQ(g.entered, s.entered);
    EXPECT_EQ(g.file, s.file);
    EXPECT_EQ(g.line, s.line);
    EXPECT_EQ(g.site_label, s.site_label);
    EXPECT_EQ(g.comm, s.comm);
    EXPECT_EQ(g.peer, s.peer);
    EXPECT_EQ(g.tag, s.tag);
    EXPECT_EQ(g.any_source, s.any_source);
    EXPECT_EQ(g.collective, s.collective);
    EXPECT_EQ(g.waiting_for, s.waiting_for);
  }
  EXPECT_EQ(got.gathered_rebuilt, sent.gathered_rebuilt);
}

class RankOutcomeWire : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(RankOutcomeWire, ComesBackWithEveryFigure) {
  const auto [waits, delay] = GetParam();
  TraceBuilder b(2);
  b.close();
  const trace::TraceDir dir = trace::TraceDir::open(b.dir());
  ASSERT_EQ(dir.ranks.size(), 2u);
  RankOutcome sent(*dir.ranks[1], 1);
  fill(sent, 0.5);
  WireOut out;
  put_outcome(out, sent, waits, delay);
  out.put<uint32_t>(77);  // (what follows a rank on the wire stays where it was)
  RankOutcome got(*dir.ranks[1], 1);
  WireIn in(out.buf);
  get_outcome(in, got, waits, delay);
  EXPECT_EQ(in.get<uint32_t>(), 77u);
  EXPECT_TRUE(in.done());
  EXPECT_EQ(got.rank, 1);
  EXPECT_EQ(got.index, 1u);
  expect_same_figures(got, sent, waits, delay);
}

INSTANTIATE_TEST_SUITE_P(WaitsAndDelayLog, RankOutcomeWire,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

}  // namespace
}  // namespace prof::analysis::detail
