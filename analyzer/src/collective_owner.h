// A worker's collective instances in flight, as their owner (Owner): the
// members that have called, until the last one completes the instance
// (collective_matching.cpp; the engine: engine.h).
#pragma once

#include <utility>
#include <vector>

#include "engine_constants.h"
#include "flat_map.h"
#include "interpret.h"
#include "warning_sink.h"

namespace prof::analysis::detail {

// (Largest fields first: 40 bytes, not 48. A phase of members waits at its
// owner, more than the cache keeps, so each byte is a miss.)
struct Member {
  double enter, leave;
  uint64_t hold;
  int32_t rank;
  uint32_t node;
  bool a2a;
  uint8_t wait_class;
  bool whole_call;  // (CollRec::whole_call)
};
static_assert(sizeof(Member) == 40);

struct Instance {
  uint32_t expected = 0, got = 0;
  double max_enter = -kInf, max_leave = -kInf;
  double root_enter = -kInf;   // the root's enter (rooted collectives; -inf: not known)
  int32_t last_rank = -1;      // the member that entered last, the lowest of a tie (rank index)
  const CommDef* def = nullptr;
  bool done = false;
  // The members that have called, in order of arrival: one array, read in
  // order when the instance completes (a list linked member to member is a
  // dependent miss a member at thousands of ranks). Its
  // buffer comes from, and goes back to, the owner's spares (Owner::members_for).
  std::vector<Member> members;
};

// One communicator's pending instances at their owner. The owner of
// instance seq is (hash(gid) + seq) % W, so an owner holds every W-th one and
// keeps them in a ring indexed by seq / W; instances complete roughly in
// order, so the ring holds only those in flight.
struct CommQueue {
  uint64_t gid = 0;
  uint64_t base = 0;  // seq / W of the first instance held
  // A ring of instances base, base + 1, ... (power-of-two capacity).
  std::vector<Instance> buf;
  size_t head = 0, count = 0;

  Instance& at(size_t i) { return buf[(head + i) & (buf.size() - 1)]; }
  void grow_to(size_t n) {
    if (n <= buf.size()) return;
    size_t cap = buf.empty() ? 8 : buf.size();
    while (cap < n) cap *= 2;
    std::vector<Instance> next(cap);
    for (size_t i = 0; i < count; ++i) next[i] = std::move(at(i));
    buf.swap(next);
    head = 0;
  }
  // Makes instance `idx` (seq / W) present; false if it is already gone.
  Instance* get(uint64_t idx) {
    if (idx < base) return nullptr;
    const uint64_t off = idx - base;
    if (off >= count) {
      grow_to(static_cast<size_t>(off) + 1);
      for (size_t i = count; i <= off; ++i) at(i) = Instance{};
      count = static_cast<size_t>(off) + 1;
    }
    return &at(static_cast<size_t>(off));
  }
  void pop_done() {
    while (count > 0 && at(0).done) {
      head = (head + 1) & (buf.size() - 1);
      --count;
      ++base;
    }
  }
};

// One worker's collective instances in flight: a CommQueue per communicator,
// each instance with the array of its members that have called; an
// instance's array is taken from the spare buffers at its first member and
// given back, emptied, once it completes, so buffers are reused and their
// number is that of the instances in flight.
//
// Invariants: touched only by its worker (the owner of instance seq of a
// communicator is (mix64(gid) + seq) mod W, Engine::owner_of); an instance
// completes once: when every member in the trace has called or ended, at the
// end of the pass, or where a window served by the window index is cut; a
// done instance holds no buffer.
struct alignas(64) Owner {
  FlatMap<uint64_t, uint32_t> queue_of;  // gid -> index + 1 into queues
  std::vector<CommQueue> queues;
  uint64_t last_gid = 0;                 // the communicator asked for last
  uint32_t last_queue = 0;               // (index + 1)
  std::vector<std::vector<Member>> spare_members;  // empty, with their capacity
  FlatMap<uint64_t, std::pair<uint32_t, uint32_t>> gone_members;  // def -> (epoch, count)
  uint64_t instances = 0, incomplete = 0;
  WarningSink warn;

  [[gnu::always_inline]] CommQueue& queue(uint64_t gid) {  // (at every collective call)
    if (last_queue != 0 && last_gid == gid) return queues[last_queue - 1];
    uint32_t& i = queue_of[gid];
    if (i == 0) {
      queues.emplace_back();
      queues.back().gid = gid;
      i = static_cast<uint32_t>(queues.size());
    }
    last_gid = gid;
    last_queue = i;
    return queues[i - 1];
  }
  // An instance's first member: its array, from a spare buffer if any.
  void members_for(Instance& in, uint32_t expected) {
    if (!spare_members.empty()) {
      in.members = std::move(spare_members.back());
      spare_members.pop_back();
    }
    in.members.reserve(expected);
  }
  // The instance is done with its members: their buffer becomes a spare.
  void release_members(Instance& in) {
    if (in.members.capacity() == 0) return;
    in.members.clear();
    spare_members.push_back(std::move(in.members));
    in.members = {};
  }
};

}  // namespace prof::analysis::detail
