// Interval executions, the tree across ranks and each node's figures
// (docs/metrics.md).
#include <filesystem>

#include "prof/analysis/characteristics.h"
#include "interval_steps.h"

namespace prof::analysis::detail {

void Handler::root_started(double t) {
  r.plain_calls = !eng.window_.windowed() && !r.threaded;
  r.acc[0].first_enter = t;
  r.set_context(t, r.context());
}

double Handler::time_origin() const { return eng.t_first_; }

// The node of a begin that is not the parent's last child entered.
uint32_t Handler::child_node(const Event& e, uint32_t parent) {
  const uint32_t site = eng.reg_.site(r.index, e.callsite);
  const NodeKey key{parent, e.interval_id, site};
  uint32_t node;
  if (const uint32_t* found = r.node_index.find(key)) {
    node = *found;
  } else {
    node = static_cast<uint32_t>(r.nodes.size());
    r.nodes.push_back(LocalNode{key.parent, key.id, key.site});
    r.acc.emplace_back();
    r.node_index[key] = node;
  }
  LocalNode& p = r.nodes[parent];
  p.last_callsite = e.callsite;
  p.last_id = e.interval_id;
  p.last_child = node;
  return node;
}

void Handler::root_ended(double t) {
  r.plain_calls = false;
  eng.close_exec(r, 0, r.intervals.root_start(), t);
  r.set_context(t, kNoContext);
}

// Local nodes created since the last phase join the tree across ranks.
void GlobalTree::merge(const Ranks& ranks) {
  ++merges_;
  for (auto& rp : ranks) {
    if (!rp) continue;  // (another process's rank)
    Rank& r = *rp;
    for (size_t li = r.gmap.size(); li < r.nodes.size(); ++li) {
      r.merged_at.push_back(merges_);
      join(r, li);
    }
  }
}

// A rank's local node li (its parent joined already) takes its place in the
// tree across ranks: the node of the same parent, id and call site, or a new one.
void GlobalTree::start() {
  nodes_.push_back(GNode{kNoParent, kRootId, 0, {}, {}, kInf});
}

void GlobalTree::join(RankOutcome& r, size_t li) {
  uint32_t gi = 0;
  if (li > 0) {
    const NodeKey k{r.gmap[r.nodes[li].parent], r.nodes[li].id, r.nodes[li].site};
    if (const uint32_t* f = index_.find(k)) {
      gi = *f;
    } else {
      gi = static_cast<uint32_t>(nodes_.size());
      nodes_.push_back(GNode{k.parent, k.id, k.site, {}, {}, kInf});
      nodes_[k.parent].children.push_back(gi);
      index_[k] = gi;
    }
  }
  r.gmap.push_back(gi);
  nodes_[gi].members.emplace_back(static_cast<uint32_t>(r.index), static_cast<uint32_t>(li));
}

void add_into(NodeAcc& to, const NodeAcc& from) {
  to.in.add(from.in);
  to.waits.add(from.waits);
  to.mpi_time += from.mpi_time;
  to.start_time += from.start_time;
  to.calls += from.calls;
  if (to.funcs.size() < from.funcs.size()) to.funcs.resize(from.funcs.size());
  for (size_t i = 0; i < from.funcs.size(); ++i) {
    to.funcs[i].calls += from.funcs[i].calls;
    to.funcs[i].time += from.funcs[i].time;
    to.funcs[i].bytes += from.funcs[i].bytes;
  }
}

// Nested nodes roll up into their parents (children come after parents).
// Instants of executions open on several threads at once count once in each
// node open then and in each of their ancestors.
void roll_up(RankOutcome& r) {
  const size_t n = r.nodes.size();
  r.child_start.assign(n + 1, 0);
  r.child_list.resize(n > 0 ? n - 1 : 0);
  for (size_t i = 1; i < n; ++i) ++r.child_start[r.nodes[i].parent + 1];
  for (size_t i = 0; i < n; ++i) r.child_start[i + 1] += r.child_start[i];
  std::vector<uint32_t> fill(r.child_start.begin(), r.child_start.end() - 1);
  for (size_t i = n; i-- > 1;) {
    add_into(r.acc[r.nodes[i].parent], r.acc[i]);
    r.child_list[fill[r.nodes[i].parent]++] = static_cast<uint32_t>(i);
  }
  for (const Combo& combo : r.combos) {
    std::vector<uint32_t> open;
    for (uint32_t n : combo.nodes)
      for (uint32_t m = n;; m = r.nodes[m].parent) {
        open.push_back(m);
        if (m == 0) break;
      }
    std::sort(open.begin(), open.end());
    open.erase(std::unique(open.begin(), open.end()), open.end());
    for (uint32_t n : open) {
      r.acc[n].in.add(combo.in);
      r.acc[n].waits.add(combo.waits);
    }
  }
}

void rolled_partner_waits(const RankOutcome& r, uint32_t node, std::vector<PartnerWaitAcc>& out) {
  out = r.acc[node].waited_for.list();
  const auto by_partner = [](const PartnerWaitAcc& a, const PartnerWaitAcc& b) { return a.partner < b.partner; };
  if (!std::is_sorted(out.begin(), out.end(), by_partner)) std::sort(out.begin(), out.end(), by_partner);
  std::vector<PartnerWaitAcc> child, merged;
  for (uint32_t k = r.child_start[node]; k < r.child_start[node + 1]; ++k) {
    rolled_partner_waits(r, r.child_list[k], child);
    merged.clear();
    size_t i = 0, j = 0;
    while (i < out.size() || j < child.size()) {
      if (j == child.size() || (i < out.size() && out[i].partner < child[j].partner)) {
        merged.push_back(out[i++]);
      } else if (i == out.size() || child[j].partner < out[i].partner) {
        merged.push_back(child[j++]);
      } else {
        merged.push_back(PartnerWaitAcc{out[i].partner, add_lengths(out[i].length, child[j].length),
                                        add_lengths(out[i].uncertain, child[j].uncertain)});
        ++i;
        ++j;
      }
    }
    out.swap(merged);
  }
}

// The tree across ranks (built during the pass): settle the last executions,
// order children by their first entry and members by rank (they joined in an
// order the phases decide, and the phases depend on the workers and
// processes: node_figures' sums over ranks follow this order).
void GlobalTree::order(const Outcomes& ranks) {
  std::vector<GNode>& g = nodes_;
  for (GNode& gn : g) {
    if (!std::is_sorted(gn.members.begin(), gn.members.end())) std::sort(gn.members.begin(), gn.members.end());
    for (auto [ri, li] : gn.members)
      if (ranks[ri]->acc[li].executions() > 0 || ranks[ri]->acc[li].executed_in_run)
        gn.first = std::min(gn.first, ranks[ri]->acc[li].first_enter);
  }
  for (auto& n : g)
    std::sort(n.children.begin(), n.children.end(), [&](uint32_t x, uint32_t y) {
      if (g[x].first != g[y].first) return g[x].first < g[y].first;
      if (g[x].site != g[y].site) return g[x].site < g[y].site;
      return g[x].id < g[y].id;
    });

}

// The root's source: MPI_Init's call site when the trace names it, else the program.
SiteInfo root_call_site(const GlobalTree::Outcomes& ranks, const Registry& reg, const std::string& executable) {
  SiteInfo root_site;
  bool have_root_site = false;
  for (const auto& rp : ranks) {
    const auto& meta = rp->rank_trace->meta();
    auto it = meta.find("init_callsite");
    if (it == meta.end()) continue;
    char* end = nullptr;
    const unsigned long long id = std::strtoull(it->second.c_str(), &end, 0);
    if (!end || *end != '\0' || id > UINT32_MAX) continue;
    if (rp->rank_trace->callsite(static_cast<uint32_t>(id))) {
      root_site = reg.sites[reg.site(rp->index, static_cast<uint32_t>(id))];
      have_root_site = true;
      break;
    }
  }
  if (!have_root_site) {
    root_site.file = executable.empty()
                         ? std::string("(program)")
                         : std::filesystem::path(executable).filename().string();
    root_site.line = 0;
  }

  return root_site;
}

// One node's figures across ranks (docs/metrics.md), in seconds.
IntervalNode GlobalTree::node_figures(const GNode& gn, const SiteInfo& site, const Outcomes& ranks,
                                      const Registry& reg) const {
  IntervalNode node;
  if (gn.parent != kNoParent) node.id = static_cast<uint16_t>(gn.id);
  node.source_file = site.file;
  node.line = site.line;
  node.address = site.address;
  node.unresolved = site.label;
  node.first_enter = gn.first < kInf ? gn.first * 1e-9 : 0;

  uint64_t nmax = 0;
  for (auto [ri, li] : gn.members) nmax = std::max(nmax, ranks[ri]->acc[li].inside);
  node.exe_count = nmax;

  // Execution Time: the longest rank, each rank's executions summed first
  // (so a nested interval never exceeds its parent, whatever the ranks'
  // shifts between executions).
  double exec = 0;
  for (auto [ri, li] : gn.members)
    if (ranks[ri]->acc[li].inside > 0) exec = std::max(exec, ranks[ri]->acc[li].t_sum);

  std::vector<std::pair<size_t, RankFigures>> per;
  std::map<uint32_t, FunctionFigures> funcs;
  std::map<std::pair<uint32_t, uint32_t>, FunctionFigures> sites;  // (name, Registry site)
  // Partner (world rank) -> its sums' place in `partners` (a std::map took
  // a tree walk per rank and partner).
  FlatMap<int32_t, uint32_t> partner_slot;
  // Summed over the ranks in ns: a rank's sums are exact Instants, within a
  // few times the run's length, but thousands of ranks' waits on one partner
  // over a long run would pass an Instant's range.
  std::vector<PartnerWait> partners;
  std::vector<PartnerWaitAcc> rolled;
  // (In rank order, so the sums over ranks are too: order().)
  for (auto [ri, li] : gn.members) {
    const RankOutcome& r = *ranks[ri];
    const NodeAcc& acc = r.acc[li];
    if (acc.inside == 0) continue;
    RankFigures f;
    f.rank = r.rank;
    f.executions = acc.inside;
    const double t = acc.t_sum;
    f.time = t;
    f.idle = exec - t;  // Idle_r = Exec - T_r
    f.mpi = acc.mpi_time + acc.in.mpi();  // (one of the two is 0)
    f.cpu = t - f.mpi;
    f.lost = f.mpi + f.idle;
    f.sendrecv = acc.in.sendrecv();
    f.collective = acc.in.collective();
    f.alltoall = acc.in.alltoall();
    f.comm = f.sendrecv + f.collective + f.alltoall;
    f.potential_sync = acc.in.potential_sync();
    f.time_variation = acc.in.time_variation();
    f.time_of_start = acc.start_time + acc.in.time_of_start();
    f.calls = acc.calls;
    for (int k = 0; k < kWaitKindCount; ++k) f.waits[static_cast<size_t>(k)] = acc.waits.kind(static_cast<WaitKind>(k));
    rolled_partner_waits(r, static_cast<uint32_t>(li), rolled);
    for (const PartnerWaitAcc& p : rolled) {
      uint32_t& slot = partner_slot[p.partner];  // + 1; 0: new
      if (slot == 0) {
        partners.push_back(PartnerWait{p.partner, 0, 0});
        slot = static_cast<uint32_t>(partners.size());
      }
      PartnerWait& pw = partners[slot - 1];
      pw.seconds += instant_ns(p.length);
      pw.uncertain_seconds += instant_ns(p.uncertain);
    }
    per.emplace_back(ri, f);
    for (size_t s = 0; s < acc.funcs.size(); ++s) {
      const FuncStat& fs = acc.funcs[s];
      if (fs.calls == 0) continue;
      FunctionFigures& ff = funcs[r.slot_name[s]];
      ff.calls += fs.calls;
      ff.time += fs.time;
      ff.bytes += fs.bytes;
      if (s < r.slot_site.size() && r.slot_site[s] != 0) {
        const uint32_t site = reg.site(r.index, r.slot_site[s]);
        if (site != 0) {
          FunctionFigures& sf = sites[{r.slot_name[s], site}];
          sf.calls += fs.calls;
          sf.time += fs.time;
          sf.bytes += fs.bytes;
        }
      }
    }
  }
  // (`per` is in rank order: the members are sorted by rank index, order(),
  // and the trace's ranks by rank, TraceDir.)
  MainFigures& m = node.main;
  m.processors = static_cast<int>(per.size());
  m.execution_time = exec;
  m.total_time = m.execution_time * m.processors;
  for (auto& [ri, f] : per) {
    m.lost_time += f.lost;
    m.mpi_time += f.mpi;
    m.idle_time += f.idle;
    m.comm_time += f.comm;
    m.sendrecv_time += f.sendrecv;
    m.collective_time += f.collective;
    m.alltoall_time += f.alltoall;
    m.potential_sync += f.potential_sync;
    m.time_variation += f.time_variation;
    m.time_of_start += f.time_of_start;
  }
  m.productive_time = m.total_time - m.lost_time;
  m.efficiency = m.total_time > 0 ? m.productive_time / m.total_time : 0;

  // Seconds from here on.
  const double s = 1e-9;
  for (double* v : {&m.execution_time, &m.total_time, &m.productive_time, &m.lost_time,
                    &m.mpi_time, &m.idle_time, &m.comm_time, &m.sendrecv_time,
                    &m.collective_time, &m.alltoall_time, &m.potential_sync,
                    &m.time_variation, &m.time_of_start})
    *v *= s;
  for (auto& [ri, f] : per) {
    for (double& v : f.waits) v *= s;
    for (int k = 0; k < kWaitKindCount; ++k) node.waits[static_cast<size_t>(k)] += f.waits[static_cast<size_t>(k)];
    for (double* v : {&f.time, &f.cpu, &f.mpi, &f.idle, &f.lost, &f.comm, &f.sendrecv,
                      &f.collective, &f.alltoall, &f.potential_sync, &f.time_variation,
                      &f.time_of_start})
      *v *= s;
    node.per_rank.push_back(f);
  }
  for (const ComparativeCharacteristic& c : kComparativeCharacteristics) {
    ComparativeFigures& cf = node.comparative[static_cast<size_t>(c.which)];
    bool first = true;
    double sum = 0;
    for (const RankFigures& f : node.per_rank) {
      const double v = c.value(f);
      sum += v;
      if (first || v < cf.min) {
        cf.min = v;
        cf.min_rank = f.rank;
      }
      if (first || v > cf.max) {
        cf.max = v;
        cf.max_rank = f.rank;
      }
      first = false;
    }
    cf.mean = node.per_rank.empty() ? 0 : sum / static_cast<double>(node.per_rank.size());
  }
  // (Sorted below by seconds and rank: the order they came in is lost.)
  for (PartnerWait& pw : partners) {
    pw.seconds *= s;
    pw.uncertain_seconds *= s;
    node.waited_for.push_back(pw);
  }
  std::sort(node.waited_for.begin(), node.waited_for.end(), [](const PartnerWait& x, const PartnerWait& y) {
    if (x.seconds != y.seconds) return x.seconds > y.seconds;
    return x.rank < y.rank;
  });
  for (auto& [name, ff] : funcs) {
    ff.name = reg.functions[name];
    ff.time *= s;
    node.functions.push_back(ff);
  }
  std::sort(node.functions.begin(), node.functions.end(),
            [](const FunctionFigures& x, const FunctionFigures& y) {
              if (x.time != y.time) return x.time > y.time;
              return x.name < y.name;
            });
  for (auto& [key, sf] : sites) {
    const SiteInfo& info = reg.sites[key.second];
    CallSiteFigures c;
    c.function = reg.functions[key.first];
    c.file = info.file;
    c.line = info.line;
    c.unresolved = info.label;
    c.calls = sf.calls;
    c.time = sf.time * s;
    c.bytes = sf.bytes;
    node.callsites.push_back(std::move(c));
  }
  std::sort(node.callsites.begin(), node.callsites.end(),
            [](const CallSiteFigures& x, const CallSiteFigures& y) {
              if (x.time != y.time) return x.time > y.time;
              if (x.function != y.function) return x.function < y.function;
              return x.site_label() < y.site_label();
            });

  return node;
}

}  // namespace prof::analysis::detail
