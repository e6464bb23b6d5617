// Root causes of wait states (docs/metrics.md, "Root causes"), after the
// pass, from the ranks' logs (delay_log.h).
//
// Algorithm
//   For a wait of rank w on partner p, [from, to): each rank's stretch runs
//   from the leave of its last call that synchronized it with the other (a
//   matched message between them, either way, or a collective on a
//   communicator both belong to) to the wait: w's up to `from`, p's up to
//   `to`, its arrival; a rank with no such call starts at its own start.
//   Over its stretch each rank's time is summed per interval (the innermost
//   execution open, as a node of the tree across ranks): P_w(n), P_p(n),
//   totals T_w, T_p. p's delay is its excess over the stretch,
//   E = T_p - T_w; the wait charges C = min(E, to - from) (never more than
//   the wait) to the intervals p executed there, (n, p) getting
//   C * P_p(n) / T_p. A wait with E <= 0 charges nothing.
//
// Invariants
//   - A wait's charges are >= 0 and sum to C <= its length: an interval's
//     causes sum to at most the waits of its calls.
//   - Only intervals p spent time in during its stretch are charged, each in
//     proportion to that time (w's time per interval enters only through T_w).
//   - The result depends only on the logs (sorted here), not on how workers
//     or processes shared the ranks.
#include <algorithm>
#include <bit>
#include <cstring>

#include "engine.h"
#include "made_in_order.h"

namespace prof::analysis::detail {

namespace {

// How far back (in a rank's synchronizing calls) the last one with a given
// partner is looked for; past it the stretch starts at the rank's start. A
// bound on the analysis's cost for partners that rarely meet.
constexpr size_t kSyncLookBack = size_t{1} << 16;

using Profile = std::vector<std::pair<uint32_t, double>>;  // (global node, ns)

void add_to(Profile& p, uint32_t node, double ns) {
  for (auto& [n, v] : p)
    if (n == node) {
      v += ns;
      return;
    }
  p.emplace_back(node, ns);
}

// What a partner p's side of a wait ending at its arrival `to` is, for any
// waiting rank q (delay_analysis): many ranks wait on the same partner at
// the same instant (the last member of a collective), each reading p's logs
// again, out of cache at thousands of ranks. p's stretch towards q starts at
// the leave of its last synchronizing call with q: when the last of p's
// calls before `to` that synchronizes it with every rank (a collective on a
// communicator holding every world rank) is within the look-back, only the
// few point-to-point calls after it depend on q. Kept for such partners
// only, those calls a handful (else a wait reads the logs as before), with
// p's time per interval over the stretch that starts at that collective
// where it falls in a handful of intervals (else read at each wait). Every
// figure is what the reads would give.
struct PartnerMemo {
  static constexpr size_t kRecent = 4, kProfile = 4;
  double to = 0;
  int32_t partner = -1;  // index into the ranks; -1: an empty slot
  uint8_t recent_n = 0;  // p's point-to-point calls after the collective (0..kRecent), newest first
  uint8_t profile_n = 0;  // the profile's pairs; kUnknown: not computed yet; kTooMany: read each time
  static constexpr uint8_t kUnknown = 0xFF, kTooMany = 0xFE;
  int32_t recent_with[kRecent];
  double recent_leave[kRecent];
  double start = 0;  // the collective's leave
  double total = 0;  // p's time over [start, to)
  std::pair<uint32_t, double> profile[kProfile];
};

// A direct-mapped table of PartnerMemo (a thread's): a slot taken by another
// key is overwritten. 16 slots a rank, from 64 up to 16,384 (2.3 MB): a
// memo must outlive the waits of the ranks the walk passes through before
// the next rank waiting on its partner, and a few ranks' logs stay in cache
// without one.
class PartnerMemos {
 public:
  explicit PartnerMemos(size_t ranks)
      : slots_(std::clamp<size_t>(std::bit_ceil(16 * std::max<size_t>(ranks, 1)), 64, size_t{1} << 14)) {}
  PartnerMemo& slot(int32_t partner, double to) {
    uint64_t bits;
    std::memcpy(&bits, &to, sizeof bits);
    return slots_[mix64(bits ^ static_cast<uint64_t>(static_cast<uint32_t>(partner)) << 1) & (slots_.size() - 1)];
  }

 private:
  std::vector<PartnerMemo> slots_;
};

}  // namespace

// The global node a logged context stands for: a Combo (threads) counts as
// its first node.
uint32_t DelayResults::logged_node(const RankOutcome& r, uint32_t context) {
  const uint32_t local = context & kComboBit ? r.combos[context & ~kComboBit].nodes[0] : context;
  return r.gmap[local];
}

void DelayResults::delay_analysis(const std::vector<RankOutcome*>& ranks, const GlobalTree& tree,
                                  const WorldIndex& index_of_world, LogSpill* spill, unsigned threads) {
  caused_by_.assign(tree.nodes().size(), {});
  ResidentBudget resident(spill, resident_log_bytes(ranks.size()));
  // The logs in time order (threads may interleave calls and markers), a
  // rank's on any thread; their bytes noted in the order of the ranks, and
  // a rank's waits (120 MB on 10^8 events over 4 ranks) as they are read,
  // where their bounds are known (DelayLog::log_wait): each entry is read
  // once then, so the pages that go are behind the reads (and the rest of
  // the rank's bytes are noted after its sort).
  struct NoScratch {};
  struct Sorted {
    size_t noted = 0;  // the bytes noted as they were read
  };
  // (Up to 16 ranks a thread sorted ahead of the one whose bytes are noted:
  // with one, a rank that sorts long held the other thread's next, which
  // slept half the sorts at 4096 ranks.)
  constexpr size_t kSortsAhead = 16;
  made_in_order<Sorted>(
      ranks.size(), threads, kSortsAhead, [] { return std::make_unique<NoScratch>(); },
      [&](NoScratch&, size_t i, Sorted& sorted) {
        sorted.noted = 0;
        const auto read = [&resident, &sorted](size_t bytes) {
          resident.note(bytes);
          sorted.noted += bytes;
        };
        DelayLog& d = ranks[i]->delay;
        sort_log(d.contexts, [](const DelayLog::Context& x, const DelayLog::Context& y) { return x.t < y.t; },
                 NoOrder{}, d.contexts_known_in_order());
        sort_log(d.syncs, [](const DelayLog::Sync& x, const DelayLog::Sync& y) { return x.leave < y.leave; },
                 nearly_by([](const DelayLog::Sync& x) { return x.leave; }), d.syncs_known_in_order());
        sort_log(
            d.waits,
            [](const DelayLog::Wait& x, const DelayLog::Wait& y) {
              if (x.to != y.to) return x.to < y.to;
              if (x.from != y.from) return x.from < y.from;
              if (x.partner != y.partner) return x.partner < y.partner;
              return x.node < y.node;
            },
            d.wait_sort_order(), false, read);
      },
      [&](size_t i, const Sorted& sorted) {
        resident.note(ranks[i]->delay.entry_bytes() - std::min(sorted.noted, ranks[i]->delay.entry_bytes()));
      });
  // (Every spilled log now reads its pages in order: where they lie, or its copy.)
  if (spill) spill->release_originals();

  // Each rank's searches (its last synchronizing call before an instant,
  // its context in force) start where its last ones ended
  // (partition_near_paged): a rank's waits are in time order, so its own
  // searches move a little each time, and so do those on a partner it waits
  // on again and again: a walk of a few entries in the page at hand. A
  // partner met once in a while (the last member of a collective) is a few
  // entries further on: past the walk the gallop finds it in twice the
  // logarithm of the distance, with no binary search over the rest of the
  // log, a line out of cache at each step (1.4 M of the 8.0 M searches move
  // 8 to 63 entries on 2·10^7 events over 4 ranks, 950 more than 32 K). What the
  // searches read of a rank is in one line of its own (Logs): a partner's
  // Rank and the headers of its logs are three misses a wait at thousands
  // of ranks.
  struct alignas(64) Logs {
    PagedLog<DelayLog::Sync>::View syncs;
    PagedLog<DelayLog::Context>::View contexts;
    size_t sync_at, context_at;  // where the last searches ended
    const uint32_t* gmap;
    const RankOutcome* rank;
  };
  static_assert(sizeof(Logs) == 64);
  std::vector<Logs> logs(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankOutcome& r = *ranks[i];
    logs[i] = Logs{r.delay.syncs.view(), r.delay.contexts.view(), 0, 0, r.gmap.data(), &r};
  }
  // (A communicator that holds every world rank: its members 0..n-1 with n
  // past the largest world rank in the trace.)
  int32_t top_world_rank = 0;
  for (const RankOutcome* r : ranks) top_world_rank = std::max(top_world_rank, r->rank);
  // Where rank r's stretch towards world rank q starts, for an instant x: the
  // leave of r's last call before x that synchronizes it with q, within the
  // look-back. With `memo` (r's slot for x), the same walk also notes in it
  // what a PartnerMemo keeps, where it can (`memo_made`): it goes on past
  // q's call, while the calls after r's last collective are a handful, to
  // find that collective.
  struct Stretch {
    double start;
    bool memo_made;
  };
  auto stretch_start = [top_world_rank](Logs& r, int32_t q, double x, PartnerMemo* memo) {
    const auto s = r.syncs;  // (a copy: its two words stay in registers across the stores to r and memo)
    r.sync_at = partition_near_paged(s, r.sync_at, [x](const DelayLog::Sync& e) { return e.leave <= x; });
    bool found = false, made = false;
    double start = 0;
    bool noting = memo != nullptr;  // the memo's walk goes on
    uint8_t recent = 0;
    // Back from the entry before sync_at, kSyncLookBack entries at most, a
    // page at a time (an entry's page found once a page, not once an entry).
    const size_t page_mask = s.page_entries() - 1;
    size_t k = r.sync_at, left = std::min(k, kSyncLookBack);
    while (left > 0) {
      const DelayLog::Sync* page = s.pages[(k - 1) >> s.shift].page;
      const size_t in_page = ((k - 1) & page_mask) + 1;  // page[0, in_page) lie before k
      const size_t stop = in_page > left ? in_page - left : 0;
      for (size_t i = in_page; i > stop; --i) {
        const DelayLog::Sync e = page[i - 1];
        if (!e.collective()) {
          if (!found && e.with == q) {
            found = true;
            start = e.leave;
          }
          if (noting) {
            if (recent == PartnerMemo::kRecent) {
              noting = false;
            } else {
              memo->recent_with[recent] = e.with;
              memo->recent_leave[recent++] = e.leave;
            }
          }
        } else {
          // (MPI_COMM_WORLD's members are 0..n-1: no search of its n.)
          const auto& m = r.rank->delay.comms[e.comm()].members;
          if (!found && (m.is_identity() ? q >= 0 && static_cast<size_t>(q) < m.size()
                                         : std::binary_search(m.begin(), m.end(), q))) {
            found = true;
            start = e.leave;
          }
          if (noting && m.is_identity() && m.size() > static_cast<size_t>(top_world_rank)) {
            made = true;
            memo->recent_n = recent;
            memo->start = e.leave;
            memo->profile_n = PartnerMemo::kUnknown;
          }
          noting = false;
        }
        if (found && !noting) return Stretch{start, made};
      }
      k -= in_page - stop;
      left -= in_page - stop;
    }
    if (found) return Stretch{start, made};
    return Stretch{r.contexts.size() == 0 ? -kInf : r.contexts[0].t, made};
  };
  // Rank r's time per interval in [a, b) (into `out`, unless null); returns
  // its sum.
  auto profile = [](Logs& r, double a, double b, Profile* out) {
    if (out) out->clear();
    double total = 0;
    const auto c = r.contexts;  // (a copy, as in stretch_start)
    r.context_at = partition_near_paged(c, r.context_at, [a](const DelayLog::Context& e) { return e.t <= a; });
    DelayLog::for_each_in_force(c, r.context_at == 0 ? 0 : r.context_at - 1, a, b,
                                [&](uint32_t ctx, double lo, double hi) {
                                  if (ctx == kNoContext) return;
                                  total += hi - lo;
                                  if (out) add_to(*out, ctx & kComboBit ? logged_node(*r.rank, ctx) : r.gmap[ctx], hi - lo);
                                });
    return total;
  };

  // A wait's charges are computed from the logs alone (with search hints of
  // their own: a copy of `logs` a thread), so the waits of a rank can be
  // charged in chunks on several threads; the charges are added to the
  // sums in the order of the serial loop (rank by rank, each rank's waits
  // in order), chunk after chunk, so every sum is the same bytes whatever
  // the threads. At most kChunksAhead chunks a thread wait to be added.
  struct Charge {
    uint32_t node;  // the waiting call's global node
    uint32_t cause;  // the global node that caused it
    int32_t rank;  // the world rank on which it did
    double ns;
  };
  struct Chunk {
    size_t rank, from, to;  // waits [from, to) of ranks[rank]
  };
  constexpr size_t kChunkWaits = size_t{1} << 14;
  constexpr size_t kChunksAhead = 4;
  std::vector<Chunk> chunks;
  for (size_t wi = 0; wi < ranks.size(); ++wi)
    for (size_t k = 0, n = ranks[wi]->delay.waits.size(); k < n; k += kChunkWaits)
      chunks.push_back(Chunk{wi, k, std::min(n, k + kChunkWaits)});
  // Partner p's side of a wait ending at `to` (its arrival), by its memo
  // when there is one: p's total time over its stretch towards rank q, its
  // time per interval into pp.
  auto partner_side = [&](Logs& pl, size_t pi, int32_t q, double to, PartnerMemos& memos, Profile& pp) {
    PartnerMemo& m = memos.slot(static_cast<int32_t>(pi), to);
    if (m.partner != static_cast<int32_t>(pi) || m.to != to) {
      m.partner = -1;
      const Stretch stretch = stretch_start(pl, q, to, &m);
      if (!stretch.memo_made) return profile(pl, stretch.start, to, &pp);
      m.partner = static_cast<int32_t>(pi);
      m.to = to;
    }
    for (uint8_t i = 0; i < m.recent_n; ++i)
      if (m.recent_with[i] == q) return profile(pl, m.recent_leave[i], to, &pp);
    if (m.profile_n == PartnerMemo::kTooMany) return profile(pl, m.start, to, &pp);
    if (m.profile_n == PartnerMemo::kUnknown) {
      m.total = profile(pl, m.start, to, &pp);
      if (pp.size() > PartnerMemo::kProfile) {
        m.profile_n = PartnerMemo::kTooMany;  // (the walk's part is kept)
        return m.total;
      }
      m.profile_n = static_cast<uint8_t>(pp.size());
      std::copy(pp.begin(), pp.end(), m.profile);
      return m.total;
    }
    pp.assign(m.profile, m.profile + m.profile_n);
    return m.total;
  };
  auto charge_chunk = [&](std::vector<Logs>& hints, PartnerMemos& memos, Profile& pp, const Chunk& chunk,
                          std::vector<Charge>& out) {
    out.clear();
    const RankOutcome& w = *ranks[chunk.rank];
    Logs& wl = hints[chunk.rank];
    for (size_t wk = chunk.from; wk < chunk.to; ++wk) {
      const DelayLog::Wait& wt = w.delay.waits[wk];
      const int pi = index_of_world(wt.partner);
      if (pi < 0) continue;
      Logs& pl = hints[static_cast<size_t>(pi)];
      // (wt.partner is p's world rank.)
      const double total_w = profile(wl, stretch_start(wl, wt.partner, wt.from, nullptr).start, wt.from, nullptr);
      const double total_p = partner_side(pl, static_cast<size_t>(pi), w.rank, wt.to, memos, pp);
      const double charged = std::min(total_p - total_w, wt.to - wt.from);
      if (!(charged > 0) || !(total_p > 0)) continue;
      const uint32_t g = w.gmap[wt.node];
      const double scale = charged / total_p;
      for (const auto& [n, v] : pp)
        if (v > 0) out.push_back(Charge{g, n, wt.partner, v * scale});
    }
  };
  // Per global node: (cause node, rank) -> its entry in caused_by_ (a scan
  // of the entries cost a rank's waits times the ranks that caused some:
  // quadratic in the ranks).
  std::vector<FlatMap<uint64_t, uint32_t>> cause_slot(tree.nodes().size());
  size_t noted = 0;  // ranks whose logs' bytes were noted
  auto add_charges = [&](const Chunk& chunk, const std::vector<Charge>& charges) {
    // (Each rank's own logs, and about as much of its partners', up to this
    // one: those without waits too, as a rank's turn comes; a rank of many
    // chunks a share at each, as its waits move through its logs.)
    for (; noted < chunk.rank; ++noted) resident.note(2 * ranks[noted]->delay.entry_bytes());
    const size_t waits = ranks[chunk.rank]->delay.waits.size();
    resident.note(2 * ranks[chunk.rank]->delay.entry_bytes() / waits * (chunk.to - chunk.from));
    if (chunk.to == waits) noted = chunk.rank + 1;
    for (const Charge& c : charges) {
      std::vector<CauseAcc>& into = caused_by_[c.node];
      uint32_t& slot = cause_slot[c.node][uint64_t{c.cause} << 32 | static_cast<uint32_t>(c.rank)];  // + 1; 0: new
      if (slot != 0) {
        into[slot - 1].ns += c.ns;
      } else {
        into.push_back(CauseAcc{c.cause, c.rank, c.ns});
        slot = static_cast<uint32_t>(into.size());
      }
    }
  };
  struct Scratch {
    std::vector<Logs> hints;
    PartnerMemos memos;
    Profile profile;
  };
  made_in_order<std::vector<Charge>>(
      chunks.size(), threads, kChunksAhead, [&] { return std::make_unique<Scratch>(Scratch{logs, PartnerMemos(ranks.size()), {}}); },
      [&](Scratch& scratch, size_t i, std::vector<Charge>& out) {
        charge_chunk(scratch.hints, scratch.memos, scratch.profile, chunks[i], out);
      },
      [&](size_t i, const std::vector<Charge>& out) { add_charges(chunks[i], out); });
  // The critical path reads no syncs.
  for (auto& rp : ranks) rp->delay.syncs.release();
}

// Both analyses' figures, rolled up (an interval holds its nested ones'),
// into the report's intervals (`index_of`: global node -> index).
void DelayResults::delay_figures(Analysis& a, const std::vector<int>& index_of, const GlobalTree& tree) const {
  std::vector<std::map<std::pair<uint32_t, int32_t>, double>> causes(tree.nodes().size());
  std::vector<double> critical(critical_ns_);
  critical.resize(tree.nodes().size(), 0);
  for (size_t g = 0; g < caused_by_.size(); ++g)
    for (const CauseAcc& c : caused_by_[g]) causes[g][{c.node, c.rank}] += c.ns;
  // A node's parent was created before it: children have larger indices.
  for (size_t g = tree.nodes().size(); g-- > 1;) {
    const uint32_t parent = tree.nodes()[g].parent;
    for (const auto& [k, v] : causes[g]) causes[parent][k] += v;
    critical[parent] += critical[g];
  }
  for (size_t g = 0; g < tree.nodes().size(); ++g) {
    if (index_of[g] < 0) continue;
    IntervalNode& n = a.intervals[static_cast<size_t>(index_of[g])];
    n.critical_path_s = critical[g] * 1e-9;
    for (const auto& [k, v] : causes[g]) n.caused_by.push_back(CauseShare{index_of[k.first], k.second, v * 1e-9});
    std::sort(n.caused_by.begin(), n.caused_by.end(), [](const CauseShare& x, const CauseShare& y) {
      if (x.seconds != y.seconds) return x.seconds > y.seconds;
      if (x.interval != y.interval) return x.interval < y.interval;
      return x.rank < y.rank;
    });
  }
  a.delay_known = true;
  a.run_span_s = run_span_ns_ * 1e-9;
}

}  // namespace prof::analysis::detail
