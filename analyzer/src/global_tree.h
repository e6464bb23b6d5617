// The tree of interval nodes across ranks and its figures (interval_tree.cpp;
// the engine: engine.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine_constants.h"
#include "flat_map.h"
#include "interpret.h"
#include "prof/analysis/analysis.h"

namespace prof::analysis::detail {

struct NodeKey {
  uint32_t parent = 0, id = 0, site = 0;
  bool operator==(const NodeKey& o) const {
    return parent == o.parent && id == o.id && site == o.site;
  }
};
struct NodeKeyHash {
  uint64_t operator()(const NodeKey& k) const {
    return mix64((uint64_t{k.parent} << 32 | k.id) ^ mix64(k.site + 0x51ull));
  }
};

// A node of the tree across ranks, built as ranks create local nodes.
struct GNode {
  uint32_t parent, id, site;
  std::vector<std::pair<uint32_t, uint32_t>> members;  // (rank index, local node)
  std::vector<uint32_t> children;
  double first = kInf;
};

struct Rank;
struct RankOutcome;
struct PartnerWaitAcc;

// The tree of interval nodes across ranks: a node per (parent, interval id,
// call site) path, built during the pass as ranks create local nodes (merge()
// at each phase's end), each listing its members (rank index, local node) in
// the order they joined until order() sorts them by rank.
//
// Invariants
//   - Node 0 is the root; a node's parent was created before it (children
//     have larger indices).
//   - A rank's gmap maps its local nodes merged so far, in order, and
//     merged_at says at which merge each joined: process 0 of an MPI job
//     rebuilds the same tree (rebuild()).
//   - After order(), members are in rank order, so every sum over members
//     adds the same values in the same order whatever the phases (which
//     depend on the workers and processes).
class GlobalTree {
 public:
  using Ranks = std::vector<std::unique_ptr<Rank>>;
  // After the pass, by rank index (RankOutcomes, engine.h).
  using Outcomes = std::vector<RankOutcome*>;
  // The root alone.
  void start();
  // Local nodes created since the last merge join the tree (null: another
  // process's rank).
  void merge(const Ranks& ranks);
  // The tree as one process merges it, from every rank's nodes and merged_at
  // (distributed.cpp).
  void rebuild(const Outcomes& ranks);
  // After the pass and the last merge(): children ordered by first entry,
  // members by rank.
  void order(const Outcomes& ranks);
  const std::vector<GNode>& nodes() const { return nodes_; }
  // One node's figures across ranks (docs/metrics.md), in seconds.
  IntervalNode node_figures(const GNode& gn, const SiteInfo& site, const Outcomes& ranks,
                            const Registry& reg) const;

 private:
  void join(RankOutcome& r, size_t li);
  std::vector<GNode> nodes_;
  FlatMap<NodeKey, uint32_t, NodeKeyHash> index_;
  uint32_t merges_ = 0;  // merge() calls so far
};
// Nested nodes' sums roll up into their parents', after the pass (the waits
// by partner only as rolled_partner_waits() reads them).
void roll_up(RankOutcome& r);
// A node's waits by partner summed over its subtree, sorted by partner: each
// child's (its own subtree's first) added to the node's own, children by
// decreasing index, the sums a roll-up of the lists into every ancestor would
// hold. Taken one node at a time, so those rolled-up copies never all exist.
void rolled_partner_waits(const RankOutcome& r, uint32_t node, std::vector<PartnerWaitAcc>& out);
// The root's source: MPI_Init's call site when the trace names it, else the program.
SiteInfo root_call_site(const GlobalTree::Outcomes& ranks, const Registry& reg, const std::string& executable);

}  // namespace prof::analysis::detail
