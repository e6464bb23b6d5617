// The timeline layer (timeline.h): queries. Each row is read under its lock,
// held shared, so a query sees whole published blocks and a pyramid that
// matches them, while the build goes on.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <mutex>
#include <set>
#include <shared_mutex>

#include "prof/analysis/timeline.h"
#include "timeline_impl.h"
#include "wait_rules.h"

namespace prof::analysis {

using namespace timeline_detail;
using detail::collective_wait;
using detail::late_sender_wait;

namespace {

// A call overlaps [from, to) when it enters before `to` and leaves after
// `from`; a call of no duration when it enters inside.
bool overlaps(int64_t enter, int64_t leave, double from, double to) {
  const double e = static_cast<double>(enter), l = static_cast<double>(leave);
  return e < to && (l > from || (l == e && e >= from));
}

// The communicators' global ids known so far.
std::vector<uint64_t> comm_ids(const Impl& tl) {
  std::lock_guard lock(tl.names_mutex);
  return tl.comm_ids;
}

TimelineCall to_call(const Impl& tl, const std::vector<uint64_t>& comms, const Row& row, size_t row_index,
                     uint64_t index, const Record& r) {
  TimelineCall c;
  c.row = row_index;
  c.index = index;
  c.enter = r.enter;
  c.duration = row.duration(r, index);
  c.kind = static_cast<TimelineKind>(r.kind);
  if (c.kind == TimelineKind::Marker) {
    c.function = r.flags & kMarkerBeginFlag ? "interval begin" : "interval end";
    c.interval_id = static_cast<uint32_t>(r.peer);
    c.site = static_cast<uint32_t>(r.tag);
    c.marker_begin = r.flags & kMarkerBeginFlag;
    return c;
  }
  const uint32_t function = record_function(r.name, tl.names_hold_sites);
  c.function = function < tl.registry.functions.size() ? std::string_view(tl.registry.functions[function])
                                                       : std::string_view("(unknown)");
  c.function_index = function;
  c.call_site_index = record_site_index(r.name, tl.names_hold_sites);
  c.peer = r.peer;
  c.tag = r.tag;
  c.bytes = row.bytes_of(r, index);
  c.has_comm = (r.flags & kHasComm) && r.comm < comms.size();
  if (c.has_comm) c.comm = comms[r.comm];
  return c;
}

// The blocks one query has unpacked: finding a range, listing its calls and
// reading the far ends of its messages mostly touch the same few blocks, each
// unpacked once. Bounded (all forgotten past kKept): a pointer it gives is
// valid until the next call.
class Unpacked {
 public:
  explicit Unpacked(const Impl& tl) : tl_(tl) {}
  // Block b of a row (caller holds the row's lock).
  const Record* block(const Row& row, size_t b) {
    if (blocks_.size() >= kKept) blocks_.clear();
    auto [it, added] = blocks_.try_emplace({&row, b});
    return added ? tl_.block_records(row, b, it->second) : it->second.data();
  }

 private:
  static constexpr size_t kKept = 64;  // 2 MiB
  const Impl& tl_;
  std::map<std::pair<const Row*, size_t>, std::vector<Record>> blocks_;
};

// Reads a row's published records [first, last) (caller holds its lock).
template <class F>
void for_records(Unpacked& blocks, const Row& row, uint64_t first, uint64_t last, F&& f) {
  for (uint64_t i = first; i < last;) {
    const size_t b = static_cast<size_t>(i / kBlockRecords);
    const Record* records = blocks.block(row, b);
    const uint64_t base = uint64_t{b} * kBlockRecords;
    const uint64_t end = std::min<uint64_t>(last, base + row.blocks[b].count);
    for (; i < end; ++i) f(i, records[i - base]);
  }
}

// The index range of a row's calls that may overlap [from, to): from the
// first that leaves at or after `from` to the first that enters at or after
// `to` (caller holds the row's lock).
std::pair<uint64_t, uint64_t> index_range(Unpacked& unpacked, const Row& row, double from, double to) {
  if (row.blocks.empty() || !(from < to)) return {0, 0};
  const auto& blocks = row.blocks;
  // First: the block where the running maximum of leaves reaches `from`.
  const size_t bf = static_cast<size_t>(
      std::partition_point(blocks.begin(), blocks.end(),
                           [&](const BlockInfo& b) { return static_cast<double>(b.max_leave) < from; }) -
      blocks.begin());
  if (bf == blocks.size()) return {row.count, row.count};
  uint64_t first = uint64_t{bf} * kBlockRecords;
  {
    const Record* r = unpacked.block(row, bf);
    uint32_t k = 0;
    while (k < blocks[bf].count &&
           static_cast<double>(r[k].enter + static_cast<int64_t>(row.duration(r[k], first + k))) < from)
      ++k;
    first += k;
  }
  // Last: the first call that enters at or after `to`.
  const size_t bl = static_cast<size_t>(
      std::partition_point(blocks.begin(), blocks.end(),
                           [&](const BlockInfo& b) { return static_cast<double>(b.first_enter) < to; }) -
      blocks.begin());
  if (bl == 0) return {0, 0};
  const Record* r = unpacked.block(row, bl - 1);
  const uint32_t k = static_cast<uint32_t>(
      std::partition_point(r, r + blocks[bl - 1].count,
                           [&](const Record& x) { return static_cast<double>(x.enter) < to; }) - r);
  const uint64_t last = uint64_t{bl - 1} * kBlockRecords + k;
  return {first, std::max(first, last)};
}

TimelineBucket to_bucket(const Cell& c, double wait) {
  TimelineBucket b;
  b.wait = wait;
  b.count = c.count;
  int best = 0;
  for (int k = 0; k < kTimelineKinds; ++k) {
    b.time[k] = c.time[k];
    if (c.time[k] > c.time[best]) best = k;
  }
  b.dominant = static_cast<TimelineKind>(best);
  b.has_longest = c.has_longest;
  b.longest_index = c.longest_index;
  b.longest_duration = c.longest_duration;
  return b;
}

// Adds a row's calls in `range` (and the user time before the first) to the
// grid's cells (caller holds the row's lock).
void summarize_calls(Unpacked& unpacked, const Row& row, Grid g, std::pair<uint64_t, uint64_t> range) {
  uint64_t first = range.first, last = std::min<uint64_t>(range.second + 1, row.count);
  bool has_previous = false;
  int64_t previous_leave = 0;
  if (first > 0) {
    for_records(unpacked, row, first - 1, first, [&](uint64_t i, const Record& r) {
      previous_leave = r.enter + static_cast<int64_t>(row.duration(r, i));
    });
    has_previous = true;
  }
  for_records(unpacked, row, first, last, [&](uint64_t i, const Record& r) {
    const uint64_t d = row.duration(r, i);
    g.add_call(r, d, static_cast<uint32_t>(i), has_previous, previous_leave);
    has_previous = true;
    previous_leave = r.enter + static_cast<int64_t>(d);
  });
}

// Waits on the grid [origin + i*width, ...), i < n, of a row's calls in
// `range` (caller holds the row's lock; nothing before the build is complete).
void summarize_waits(const Impl& tl, const Row& row, size_t ri, std::pair<uint64_t, uint64_t> range, double origin,
                     double width, double* waits, size_t n) {
  if (!tl.finished.load(std::memory_order_acquire)) return;
  RecordReader reader(tl, &row);
  WaitSpans spans;
  row_wait_spans(tl, reader, ri, range.first, range.second, true, spans);
  add_wait_spans(spans, origin, width, waits, n);
}

void summarize(const Impl& tl, Unpacked& unpacked, const Row& row, size_t ri, double from, double to, uint32_t width,
               std::pair<uint64_t, uint64_t> range, TimelineRowAnswer& out) {
  const double target = (to - from) / width;
  const Pyramid& p = row.pyramid;
  out.summarized = true;
  if (target >= p.leaf) {
    // The level whose cells are the widest not above the target; past the
    // top level, buckets merge 2^extra of its cells (at most two exist).
    const size_t k = static_cast<size_t>(std::min(60.0, std::floor(std::log2(target / p.leaf))));
    const size_t level_index = std::min(k, p.levels.size() - 1);
    const uint64_t group = uint64_t{1} << std::min<size_t>(k - level_index, 40);
    const double size = std::ldexp(p.leaf, static_cast<int>(level_index)) * static_cast<double>(group);
    const int64_t c0 = static_cast<int64_t>(std::floor(from / size));
    const int64_t c1 = static_cast<int64_t>(std::ceil(to / size));
    out.bucket_from = static_cast<double>(c0) * size;
    out.bucket_width = size;
    const auto& level = p.levels[level_index];
    const double* waits = p.waits.size() > level_index ? p.waits[level_index].data() : nullptr;
    const uint64_t cells = level.size();
    out.buckets.reserve(static_cast<size_t>(c1 - c0));
    for (int64_t c = c0; c < c1; ++c) {
      Cell merged;
      double wait = 0;
      if (c >= 0)
        for (uint64_t i = static_cast<uint64_t>(c) * group; i < std::min(cells, static_cast<uint64_t>(c + 1) * group); ++i) {
          merged.merge(level[i]);
          if (waits) wait += waits[i];
        }
      out.buckets.push_back(to_bucket(merged, wait));
    }
    return;
  }
  // Finer than a leaf: from the calls themselves, by the same rules.
  std::vector<Cell> cells(width);
  summarize_calls(unpacked, row, Grid{cells.data(), cells.size(), from, target}, range);
  std::vector<double> waits(width, 0.0);
  summarize_waits(tl, row, ri, range, from, target, waits.data(), width);
  out.bucket_from = from;
  out.bucket_width = target;
  out.buckets.reserve(width);
  for (size_t i = 0; i < width; ++i) out.buckets.push_back(to_bucket(cells[i], waits[i]));
}

// Sums one row's pyramid cells on the grid [c0 * size, ...) of `n` buckets
// into `add(bucket, cell, wait)` (wait: the cell's, 0 before the build is
// complete); size is a power-of-two multiple of the row's leaf (caller holds
// the row's lock).
template <class Add>
void for_pyramid_buckets(const Pyramid& p, double size, int64_t c0, size_t n, Add&& add) {
  const size_t k = static_cast<size_t>(std::lround(std::log2(size / p.leaf)));
  const size_t level_index = std::min(k, p.levels.size() - 1);
  const uint64_t group = uint64_t{1} << std::min<size_t>(k - level_index, 40);
  const auto& level = p.levels[level_index];
  const double* waits = p.waits.size() > level_index ? p.waits[level_index].data() : nullptr;
  const uint64_t cells = level.size();
  for (size_t b = 0; b < n; ++b) {
    const int64_t c = c0 + static_cast<int64_t>(b);
    if (c < 0) continue;
    const uint64_t lo = static_cast<uint64_t>(c) * group;
    if (lo >= cells) break;
    const uint64_t hi = std::min(cells, lo + group);
    for (uint64_t i = lo; i < hi; ++i) add(b, level[i], waits ? waits[i] : 0.0);
  }
}

// A summarized row's executions overlapping [from, to), merged per level and
// read at most kTimelineBucketExecutions a bucket (TimelineRowAnswer). An
// execution enclosing time t is an ancestor of (or is) the last one starting
// before t (a row's executions nest), so each skip lists that chain. A
// row's executions of one level never overlap, so they come in start order
// per level and touching ones merge (caller holds the row's lock).
void summary_executions(const Row& row, size_t ri, const std::vector<int>& level_of, double from, double to,
                        double bucket, std::vector<TimelineExecution>& out) {
  const auto& ex = row.executions;
  std::vector<TimelineExecution> open;  // per level: the span being merged
  std::vector<char> has;
  auto add = [&](size_t k) {
    const Execution& e = ex[k];
    const size_t level = e.node < level_of.size() ? static_cast<size_t>(level_of[e.node]) : 0;
    if (level >= open.size()) {
      open.resize(level + 1);
      has.resize(level + 1, 0);
    }
    TimelineExecution& s = open[level];
    if (has[level] && e.start <= s.end) {
      s.end = std::max(s.end, double{e.end});  // (a copy: a packed Execution's double may be misaligned)
      return;
    }
    if (has[level]) out.push_back(s);
    s = TimelineExecution{ri, e.node, e.start, e.end};
    has[level] = 1;
  };
  // Those enclosing t (ending after it), outermost first; `j`: the first starting at or after t.
  std::vector<size_t> chain;  // (one buffer for every skip)
  auto enclosing = [&](size_t j, double t) {
    chain.clear();
    for (int32_t k = j > 0 ? static_cast<int32_t>(j - 1) : -1; k >= 0; k = row.execution_parent[static_cast<size_t>(k)])
      if (ex[static_cast<size_t>(k)].end > t) chain.push_back(static_cast<size_t>(k));
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) add(*it);
  };
  // The first at or after i starting at or after t: inside t's leaf's
  // executions once the leaves index them (execution_by_leaf).
  const auto& by_leaf = row.execution_by_leaf;
  auto first_from = [&](size_t i, double t) {
    size_t lo = i, hi = ex.size();
    if (by_leaf.size() > 1 && t >= 0) {
      const double leaf = std::floor(t / row.pyramid.leaf);
      if (leaf < static_cast<double>(by_leaf.size() - 1)) {
        const size_t l = static_cast<size_t>(leaf);
        lo = std::max<size_t>(lo, by_leaf[l]);
        hi = std::max<size_t>(lo, by_leaf[l + 1]);
      } else {
        lo = std::max<size_t>(lo, by_leaf.back());
      }
    }
    return static_cast<size_t>(std::partition_point(ex.begin() + static_cast<std::ptrdiff_t>(lo),
                                                    ex.begin() + static_cast<std::ptrdiff_t>(hi),
                                                    [&](const Execution& e) { return e.start < t; }) -
                               ex.begin());
  };
  size_t i = first_from(0, from);
  enclosing(i, from);
  int64_t column = -1;
  int in_column = 0;
  while (i < ex.size() && ex[i].start < to) {
    const int64_t c = static_cast<int64_t>(std::floor((ex[i].start - from) / bucket));
    if (c != column) {
      column = c;
      in_column = 0;
    }
    if (++in_column > kTimelineBucketExecutions) {
      const double next = from + static_cast<double>(c + 1) * bucket;
      i = first_from(i, next);
      enclosing(i, next);
      continue;
    }
    add(i++);
  }
  for (size_t level = 0; level < open.size(); ++level)
    if (has[level]) out.push_back(open[level]);
}

}  // namespace

TimelineAnswer Timeline::query(const TimelineQuery& q) const {
  const Impl& tl = *impl_;
  TimelineAnswer answer;
  answer.complete = tl.finished.load(std::memory_order_acquire);
  answer.built = tl.built_fraction();
  const uint32_t width = std::max<uint32_t>(1, q.buckets);
  const uint64_t cap = q.max_events ? q.max_events : uint64_t{2} * width;
  std::vector<size_t> rows = q.rows;
  if (rows.empty())
    for (size_t r = 0; r < tl.rows.size(); ++r) rows.push_back(r);
  // Rows answered with calls: their index ranges (for messages and collectives).
  std::map<size_t, std::pair<uint64_t, uint64_t>> listed;
  const std::vector<uint64_t> comms = comm_ids(tl);
  Unpacked unpacked(tl);
  std::vector<int> level_of;  // per node: its level (for summarized rows' executions)
  {
    std::lock_guard names(tl.names_mutex);
    for (const TimelineNode& n : tl.node_list) level_of.push_back(n.level);
  }
  for (size_t ri : rows) {
    if (ri >= tl.rows.size()) continue;
    const Row& row = *tl.rows[ri];
    TimelineRowAnswer out;
    out.row = ri;
    std::shared_lock lock(row.mutex);
    const double from = std::max(q.from, 0.0);
    double to = q.to;
    if (!std::isfinite(to)) {
      const double end = row.blocks.empty() ? 0.0 : static_cast<double>(row.blocks.back().max_leave);
      to = std::max(end + 1, from + width);
    }
    if (!(from < to)) {  // an empty range
      answer.rows.push_back(std::move(out));
      continue;
    }
    const auto range = index_range(unpacked, row, from, to);
    if (range.second - range.first <= cap) {
      for_records(unpacked, row, range.first, range.second, [&](uint64_t i, const Record& r) {
        const TimelineCall c = to_call(tl, comms, row, ri, i, r);
        if (overlaps(c.enter, c.leave(), from, to)) out.calls.push_back(c);
      });
      listed[ri] = range;
      // Executions overlapping the range: those starting inside it, and
      // those enclosing its start (the ancestors of the last one before it).
      const auto& ex = row.executions;
      const size_t j = static_cast<size_t>(
          std::partition_point(ex.begin(), ex.end(), [&](const Execution& e) { return e.start < from; }) - ex.begin());
      std::vector<size_t> picked;
      for (int32_t k = j > 0 ? static_cast<int32_t>(j - 1) : -1; k >= 0; k = row.execution_parent[static_cast<size_t>(k)])
        if (ex[static_cast<size_t>(k)].end > from) picked.push_back(static_cast<size_t>(k));
      std::reverse(picked.begin(), picked.end());
      for (size_t i = j; i < ex.size() && ex[i].start < to && picked.size() <= cap; ++i) picked.push_back(i);
      if (picked.size() > cap) {
        out.executions_omitted = true;
      } else {
        for (size_t i : picked) out.executions.push_back(TimelineExecution{ri, ex[i].node, ex[i].start, ex[i].end});
      }
    } else {
      summarize(tl, unpacked, row, ri, from, to, width, range, out);
      summary_executions(row, ri, level_of, from, to, (to - from) / width, out.executions);
    }
    answer.rows.push_back(std::move(out));
  }
  if (!answer.complete || listed.empty()) return answer;

  // Messages and collectives with an end among the listed calls.
  auto listed_at = [&](size_t row, uint64_t index) {
    auto it = listed.find(row);
    return it != listed.end() && index >= it->second.first && index < it->second.second;
  };
  std::vector<std::array<uint32_t, 6>> pairs;  // send row, send index, recv row, recv index, issue row, issue index
  std::set<uint32_t> instance_ids;
  // (No structured binding: Clang before 16 cannot capture one in the lambda below.)
  for (const auto& listed_row : listed) {
    const auto& ri = listed_row.first;
    const auto& range = listed_row.second;
    const Row& row = *tl.rows[ri];
    std::shared_lock lock(row.mutex);
    auto in = [&](const auto& v) {
      using T = typename std::decay_t<decltype(v)>::value_type;
      auto lo = std::partition_point(v.begin(), v.end(), [&](const T& m) { return m.first < range.first; });
      auto hi = std::partition_point(lo, v.end(), [&](const T& m) { return m.first < range.second; });
      return std::make_pair(lo, hi);
    };
    for (auto [it, end] = in(row.sent); it != end; ++it)
      pairs.push_back({static_cast<uint32_t>(ri), it->first, it->recv_row, it->recv_index, UINT32_MAX, 0});
    for (auto [it, end] = in(row.received); it != end; ++it)
      if (!listed_at(it->send_row, it->send_index))
        pairs.push_back(
            {it->send_row, it->send_index, static_cast<uint32_t>(ri), it->first, it->issue_row, it->issue_index});
    for (auto [it, end] = in(row.collectives); it != end; ++it) instance_ids.insert(it->instance);
  }
  auto record = [&](uint32_t ri, uint64_t index) {
    const Row& row = *tl.rows[ri];
    std::shared_lock lock(row.mutex);
    std::pair<int64_t, uint64_t> out{0, 0};
    const size_t b = static_cast<size_t>(index / kBlockRecords);
    if (index >= row.count) return out;
    const Record* records = unpacked.block(row, b);
    const Record& r = records[index - uint64_t{b} * kBlockRecords];
    return std::pair<int64_t, uint64_t>{r.enter, row.duration(r, index)};
  };
  // A pair found from its send: the receive's end (the completing call's
  // ends sorted by index; a Waitall's several told apart by their send)
  // names the issuing call.
  for (auto& p : pairs) {
    if (p[4] != UINT32_MAX) continue;
    p[4] = p[2];
    p[5] = p[3];
    const Row& row = *tl.rows[p[2]];
    std::shared_lock lock(row.mutex);
    auto it = std::partition_point(row.received.begin(), row.received.end(),
                                   [&](const ReceivedMessage& r) { return r.first < p[3]; });
    for (; it != row.received.end() && it->first == p[3]; ++it)
      if (it->send_row == p[0] && it->send_index == p[1]) {
        p[4] = it->issue_row;
        p[5] = it->issue_index;
        break;
      }
  }
  for (const auto& p : pairs) {
    TimelineMessage m;
    m.send_row = p[0];
    m.send_index = p[1];
    m.recv_row = p[2];
    m.recv_index = p[3];
    m.send_enter = record(p[0], p[1]).first;
    const auto [enter, duration] = record(p[2], p[3]);
    m.recv_enter = enter;
    m.recv_leave = enter + static_cast<int64_t>(duration);
    m.issue_row = p[4];
    m.issue_index = p[5];
    m.issue_enter = p[4] == p[2] && p[5] == p[3] ? enter : record(p[4], p[5]).first;
    m.wait = static_cast<uint64_t>(late_sender_wait(m.issue_enter, m.send_enter, m.recv_leave).length());
    answer.messages.push_back(m);
  }
  std::shared_lock lock(tl.pairs_mutex);
  for (uint32_t id : instance_ids) {
    const CollectiveInstance& in = tl.instances[id];
    TimelineCollective c;
    c.comm = in.gid;
    c.sequence = in.seq;
    int64_t last_enter = std::numeric_limits<int64_t>::min();
    for (uint32_t k = 0; k < in.count; ++k) {
      const EventRefPublic& ref = tl.members[in.first_member + k];
      const auto [enter, duration] = record(ref.row, ref.index);
      c.members.push_back(TimelineCollective::Member{ref.row, ref.index, enter, duration, 0});
      last_enter = std::max(last_enter, enter);
    }
    for (auto& m : c.members)
      m.wait = static_cast<uint64_t>(
          collective_wait(m.enter, m.enter + static_cast<int64_t>(m.duration), last_enter).length());
    answer.collectives.push_back(std::move(c));
  }
  return answer;
}

TimelineGroupAnswer Timeline::summarize_groups(const TimelineGroupQuery& q) const {
  // Every row of every group is read on one grid, so the groups' buckets line
  // up: a power-of-two multiple of the widest leaf among them (all leaves are
  // 2^k ns from the trace's start, so each row's cells at some level of its
  // pyramid tile that grid exactly). Where that grid would be coarser than the
  // buckets asked for and the range holds few calls (their count read from
  // the leaves), the exact grid is summed from the calls instead.
  const Impl& tl = *impl_;
  TimelineGroupAnswer answer;
  answer.groups.resize(q.groups.size());
  const uint32_t width = std::max<uint32_t>(1, q.buckets);
  const double from = std::max(q.from, 0.0);
  const double to = std::isfinite(q.to) ? q.to : std::max(end() + 1, from + width);
  if (!(from < to)) return answer;
  const double target = (to - from) / width;
  double leaf = 0;
  size_t row_count = 0;
  for (const auto& group : q.groups)
    for (size_t ri : group)
      if (ri < tl.rows.size()) {
        std::shared_lock lock(tl.rows[ri]->mutex);
        leaf = std::max(leaf, tl.rows[ri]->pyramid.leaf);
        ++row_count;
      }
  if (row_count == 0) return answer;
  const double levels_up = std::floor(std::log2(std::max(1.0, target / leaf)));
  double size = std::ldexp(leaf, static_cast<int>(std::min(60.0, levels_up)));
  bool from_calls = false;
  if (size > target && row_count <= kTimelineGroupCallRows) {
    uint64_t calls = 0;
    for (const auto& group : q.groups)
      for (size_t ri : group) {
        if (ri >= tl.rows.size() || calls > q.max_calls) continue;
        const Row& row = *tl.rows[ri];
        std::shared_lock lock(row.mutex);
        const double leaf_size = row.pyramid.leaf;
        for_pyramid_buckets(row.pyramid, leaf_size, static_cast<int64_t>(std::floor(from / leaf_size)),
                            static_cast<size_t>(std::ceil(to / leaf_size) - std::floor(from / leaf_size)),
                            [&](size_t, const Cell& c, double) { calls += c.count; });
      }
    from_calls = calls <= q.max_calls;
  }
  int64_t c0 = 0;
  size_t n = width;
  if (from_calls) {
    answer.bucket_from = from;
    answer.bucket_width = target;
  } else {
    c0 = static_cast<int64_t>(std::floor(from / size));
    n = static_cast<size_t>(static_cast<int64_t>(std::ceil(to / size)) - c0);
    answer.bucket_from = static_cast<double>(c0) * size;
    answer.bucket_width = size;
  }
  answer.from_calls = from_calls;
  Unpacked unpacked(tl);
  std::vector<Cell> cells;
  std::vector<double> waits;
  for (size_t g = 0; g < q.groups.size(); ++g) {
    auto& out = answer.groups[g];
    out.assign(n, TimelineGroupBucket{});
    auto add = [&](size_t b, const Cell& c, double wait) {
      TimelineGroupBucket& o = out[b];
      o.count += c.count;
      for (int k = 0; k < kTimelineKinds; ++k) o.time[k] += c.time[k];
      o.wait += wait;
    };
    for (size_t ri : q.groups[g]) {
      if (ri >= tl.rows.size()) continue;
      const Row& row = *tl.rows[ri];
      std::shared_lock lock(row.mutex);
      // A leaf that grew since the grid was chosen (a build going on): from
      // the calls, on the grid all the same.
      if (from_calls || row.pyramid.leaf > size) {
        cells.assign(n, Cell{});
        waits.assign(n, 0.0);
        const Grid grid{cells.data(), n, answer.bucket_from, answer.bucket_width};
        const auto range = index_range(unpacked, row, answer.bucket_from,
                                       answer.bucket_from + answer.bucket_width * static_cast<double>(n));
        summarize_calls(unpacked, row, grid, range);
        summarize_waits(tl, row, ri, range, answer.bucket_from, answer.bucket_width, waits.data(), n);
        for (size_t b = 0; b < n; ++b) add(b, cells[b], waits[b]);
      } else {
        for_pyramid_buckets(row.pyramid, size, c0, n, add);
      }
    }
    for (TimelineGroupBucket& b : out) {
      int best = 0;
      for (int k = 1; k < kTimelineKinds; ++k)
        if (b.time[k] > b.time[best]) best = k;
      b.dominant = static_cast<TimelineKind>(best);
    }
  }
  return answer;
}

std::vector<TimelineCall> Timeline::calls(size_t ri, double from, double to) const {
  const Impl& tl = *impl_;
  std::vector<TimelineCall> out;
  if (ri >= tl.rows.size()) return out;
  const Row& row = *tl.rows[ri];
  const std::vector<uint64_t> comms = comm_ids(tl);
  std::shared_lock lock(row.mutex);
  from = std::max(from, -1.0);
  if (!std::isfinite(to)) to = std::numeric_limits<double>::max();
  Unpacked unpacked(tl);
  const auto range = index_range(unpacked, row, from, to);
  for_records(unpacked, row, range.first, range.second, [&](uint64_t i, const Record& r) {
    TimelineCall c = to_call(tl, comms, row, ri, i, r);
    if (overlaps(c.enter, c.leave(), from, to)) out.push_back(c);
  });
  return out;
}

double Timeline::leaf_ns(size_t ri) const {
  if (ri >= impl_->rows.size()) return 0;
  const Row& row = *impl_->rows[ri];
  std::shared_lock lock(row.mutex);
  return row.pyramid.leaf;
}

std::optional<TimelineCall> Timeline::call(size_t ri, uint64_t index) const {
  const Impl& tl = *impl_;
  if (ri >= tl.rows.size()) return std::nullopt;
  const Row& row = *tl.rows[ri];
  const std::vector<uint64_t> comms = comm_ids(tl);
  std::shared_lock lock(row.mutex);
  if (index >= row.count) return std::nullopt;
  std::optional<TimelineCall> out;
  Unpacked unpacked(tl);
  for_records(unpacked, row, index, index + 1,
              [&](uint64_t i, const Record& r) { out = to_call(tl, comms, row, ri, i, r); });
  return out;
}

std::optional<TimelineCall> Timeline::find_call(size_t ri, std::string_view function, double t,
                                                bool forward) const {
  const Impl& tl = *impl_;
  if (ri >= tl.rows.size()) return std::nullopt;
  const auto& names = tl.registry.functions;
  const bool any = function.empty();
  const auto name_it = std::find(names.begin(), names.end(), function);
  if (!any && name_it == names.end()) return std::nullopt;
  const auto name = static_cast<uint16_t>(any ? 0 : name_it - names.begin());
  const Row& row = *tl.rows[ri];
  const std::vector<uint64_t> comms = comm_ids(tl);
  std::shared_lock lock(row.mutex);
  const auto& blocks = row.blocks;
  if (blocks.empty()) return std::nullopt;
  std::vector<Record> buffer;
  // The first call entering at or after t: the blocks, then within one.
  uint64_t start = 0;
  const size_t after = static_cast<size_t>(
      std::partition_point(blocks.begin(), blocks.end(),
                           [&](const BlockInfo& b) { return static_cast<double>(b.first_enter) < t; }) -
      blocks.begin());
  if (after > 0) {
    const Record* r = tl.block_records(row, after - 1, buffer);
    start = uint64_t{after - 1} * kBlockRecords +
            static_cast<uint64_t>(std::partition_point(r, r + blocks[after - 1].count,
                                                       [&](const Record& x) { return static_cast<double>(x.enter) < t; }) -
                                  r);
  }
  auto matches = [&](const Record& r) {
    return any || (record_function(r.name, tl.names_hold_sites) == name &&
                   r.kind != static_cast<uint8_t>(TimelineKind::Marker));
  };
  if (forward) {
    for (size_t b = static_cast<size_t>(start / kBlockRecords); b < blocks.size(); ++b) {
      const Record* r = tl.block_records(row, b, buffer);
      const uint64_t base = uint64_t{b} * kBlockRecords;
      for (uint64_t i = std::max(start, base); i < base + blocks[b].count; ++i)
        if (matches(r[i - base])) return to_call(tl, comms, row, ri, i, r[i - base]);
    }
    return std::nullopt;
  }
  for (uint64_t end = start; end > 0;) {  // [.., end) is left to search
    const size_t b = static_cast<size_t>((end - 1) / kBlockRecords);
    const Record* r = tl.block_records(row, b, buffer);
    const uint64_t base = uint64_t{b} * kBlockRecords;
    for (uint64_t i = end; i > base; --i)
      if (matches(r[i - 1 - base])) return to_call(tl, comms, row, ri, i - 1, r[i - 1 - base]);
    end = base;
  }
  return std::nullopt;
}

std::vector<TimelineExecution> Timeline::executions(size_t ri) const {
  std::vector<TimelineExecution> out;
  if (ri >= impl_->rows.size()) return out;
  const Row& row = *impl_->rows[ri];
  std::shared_lock lock(row.mutex);
  for (const Execution& e : row.executions) out.push_back(TimelineExecution{ri, e.node, e.start, e.end});
  return out;
}

std::vector<TimelineMessage> Timeline::messages() const {
  TimelineQuery q;
  q.max_events = std::numeric_limits<uint64_t>::max();
  return query(q).messages;
}

// Per receiving row: the spans to count (the range, or its overlap with each
// execution of the node), the receives entering in them found by binary
// search on the row's received list (by receive index), then both ends read.
TimelineMessageMatrix Timeline::message_matrix(double from, double to, std::optional<uint32_t> node) const {
  const Impl& tl = *impl_;
  TimelineMessageMatrix out;
  out.complete = tl.finished.load(std::memory_order_acquire);
  out.ranks = std::max(0, tl.dir.world_size);
  if (!out.complete || !(from < to)) return out;
  std::map<std::pair<int, int>, TimelineMatrixCell> cells;
  Unpacked unpacked(tl);
  auto read = [&](const Row& row, uint64_t index) {
    const size_t b = static_cast<size_t>(index / kBlockRecords);
    const Record& r = unpacked.block(row, b)[index - uint64_t{b} * kBlockRecords];
    return std::make_tuple(r.enter, row.duration(r, index), row.bytes_of(r, index));
  };
  for (size_t ri = 0; ri < tl.rows.size(); ++ri) {
    const Row& row = *tl.rows[ri];
    std::vector<std::pair<double, double>> spans;
    // receive index, enter, duration, send row, send index, issue row, issue index
    std::vector<std::array<uint64_t, 7>> found;
    {
      std::shared_lock lock(row.mutex);
      if (node) {
        for (const Execution& e : row.executions)
          if (e.node == *node && e.start < to && e.end > from)
            spans.emplace_back(std::max(from, double{e.start}), std::min(to, double{e.end}));  // (copies: a packed double may be misaligned)
      } else {
        spans.emplace_back(from, to);
      }
      for (const auto& [lo, hi] : spans) {
        const auto range = index_range(unpacked, row, lo, hi);
        auto it = std::partition_point(row.received.begin(), row.received.end(),
                                       [&](const ReceivedMessage& m) { return m.first < range.first; });
        for (; it != row.received.end() && it->first < range.second; ++it) {
          const auto [enter, duration, bytes] = read(row, it->first);
          (void)bytes;
          const double e = static_cast<double>(enter);
          if (e < lo || e >= hi) continue;
          found.push_back({it->first, static_cast<uint64_t>(enter), duration, it->send_row, it->send_index,
                           it->issue_row, it->issue_index});
        }
      }
    }
    const int receiver = row.id.rank;
    for (const auto& f : found) {
      const Row& sender_row = *tl.rows[f[3]];
      std::shared_lock lock(sender_row.mutex);
      const auto [send_enter, send_duration, bytes] = read(sender_row, f[4]);
      (void)send_duration;
      lock.unlock();  // (the issue may be on the sender's row: a rank's message to itself)
      const int sender = sender_row.id.rank;
      if (sender < 0 || sender >= out.ranks || receiver < 0 || receiver >= out.ranks) continue;
      TimelineMatrixCell& c = cells[{sender, receiver}];
      const int64_t recv_enter = static_cast<int64_t>(f[1]);
      if (c.messages == 0 || recv_enter < c.first.recv_enter) {
        TimelineMessage& m = c.first;
        m.send_row = f[3];
        m.send_index = f[4];
        m.recv_row = ri;
        m.recv_index = f[0];
        m.send_enter = send_enter;
        m.recv_enter = recv_enter;
        m.recv_leave = recv_enter + static_cast<int64_t>(f[2]);
        m.issue_row = f[5];
        m.issue_index = f[6];
        if (f[5] == ri && f[6] == f[0]) {
          m.issue_enter = recv_enter;
        } else {
          const Row& issue_row = *tl.rows[f[5]];
          std::shared_lock issue_lock(issue_row.mutex);
          m.issue_enter = std::get<0>(read(issue_row, f[6]));
        }
        m.wait = static_cast<uint64_t>(late_sender_wait(m.issue_enter, m.send_enter, m.recv_leave).length());
      }
      ++c.messages;
      c.bytes += bytes;
      c.time += static_cast<double>(f[2]);
    }
  }
  out.cells.reserve(cells.size());
  for (auto& [pair, c] : cells) {
    c.sender = pair.first;
    c.receiver = pair.second;
    out.cells.push_back(c);
  }
  return out;
}

const TimelineMatrixCell* TimelineMessageMatrix::find(int sender, int receiver) const {
  auto it = std::lower_bound(cells.begin(), cells.end(), std::make_pair(sender, receiver),
                             [](const TimelineMatrixCell& c, const std::pair<int, int>& key) {
                               return std::make_pair(c.sender, c.receiver) < key;
                             });
  return it != cells.end() && it->sender == sender && it->receiver == receiver ? &*it : nullptr;
}

std::vector<TimelineCollective> Timeline::collectives() const {
  TimelineQuery q;
  q.max_events = std::numeric_limits<uint64_t>::max();
  return query(q).collectives;
}

Timeline::Memory Timeline::memory() const {
  const Impl& tl = *impl_;
  Memory m;
  m.records = tl.memory_used.load(std::memory_order_relaxed);
  for (const auto& r : tl.rows) {
    std::shared_lock lock(r->mutex);
    m.records += r->blocks.capacity() * sizeof(BlockInfo);
    m.pyramid += r->pyramid.bytes();
    m.executions += r->executions.capacity() * sizeof(Execution) + r->execution_parent.capacity() * sizeof(int32_t) +
                    r->execution_by_leaf.capacity() * sizeof(uint32_t);
    m.messages += r->sent.capacity() * sizeof(SentMessage) + r->received.capacity() * sizeof(ReceivedMessage);
    m.collectives += r->collectives.capacity() * sizeof(CollectiveRef);
  }
  {
    std::lock_guard lock(tl.spill_mutex);
    m.records_spilled = tl.spill_end;
  }
  m.waits_step_peak = tl.waits_scratch_peak.load(std::memory_order_relaxed);
  std::shared_lock lock(tl.pairs_mutex);
  m.collectives += tl.instances.capacity() * sizeof(CollectiveInstance) + tl.members.capacity() * sizeof(EventRefPublic) +
                   tl.instance_last_enter.capacity() * sizeof(int64_t);
  return m;
}

uint64_t Timeline::memory_bytes() const {
  const Memory m = memory();
  return m.records + m.pyramid + m.executions + m.messages + m.collectives;
}

}  // namespace prof::analysis
