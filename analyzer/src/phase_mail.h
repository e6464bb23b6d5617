// What ranks and workers hand each other during the pass (sends, late
// receivers, collective calls and their results) and the mailboxes that
// carry them between workers (PhaseMail; the engine: engine.h).
#pragma once

#include <memory>
#include <type_traits>
#include <vector>

#include "interpret.h"
#include "mailbox.h"
#include "wire.h"

namespace prof::analysis::detail {

struct Rank;

// A send known at its destination: its enter, and for a blocking send its
// leave and the sender's hold until the receive's issue is known (a late
// receiver: SendRec).
struct QueuedSend {
  double enter, leave;
  uint64_t hold;
  int32_t rank;   // sender's rank index
  uint32_t node;  // sender's innermost node at the call
};

struct SendRec {
  ChannelKey key;
  double enter;
  // A blocking send: its leave, the sender's hold (HoldQueue::kNone for
  // other sends), rank index and innermost node; an MPI_Isend: leave -inf
  // (the call that completes it tells) and its hold.
  double leave;
  uint64_t hold;
  int32_t rank;
  uint32_t node;
  QueuedSend queued() const { return QueuedSend{enter, leave, hold, rank, node}; }
};
static_assert(sizeof(SendRec) == 56);
// A send of a run without the wait states (Rank::track_waits off, the same
// for every rank): no hold, so its destination needs only the channel and the
// enter. Over half of SendRec's bytes: every message crosses workers once,
// through memory (the boxes' streamed stores), so its size is their traffic.
struct BareSendRec {
  ChannelKey key;
  double enter;
  QueuedSend queued() const { return QueuedSend{enter, enter, HoldQueue::kNone, -1, 0}; }
};
static_assert(sizeof(BareSendRec) == 32);
// A blocking send's late receiver, from the receiver's worker back to the
// sender's: the wait [from, to) (empty when none) on world rank `partner`;
// for an MPI_Isend or a persistent send's Start (to = -inf) `from` is the
// receive's issue (-inf: not known).
struct LateRecvRec {
  int32_t rank;  // sender's rank index
  uint32_t node;
  int32_t partner;
  double from, to;
  uint64_t hold;
};
// A collective call's wait kind (prof/function_roles.h's wait bits), from the call and
// whether the member is the root.
enum CollWaitClass : uint8_t {
  kCollWaitOther = 0,
  kCollWaitBarrier,
  kCollWaitNxN,
  kCollWaitOneToAllNonRoot,
  kCollWaitAllToOneRoot,
};
struct CollRec {
  uint64_t gid, seq;
  const CommDef* def;
  uint32_t expected;
  int32_t rank;  // rank index
  uint32_t node;
  bool a2a;
  uint8_t wait_class;  // CollWaitClass
  bool is_root;        // the root of a rooted collective
  bool whole_call;     // its call is this instance's alone, on a rank of one thread (Engine::add_result)
  double enter, leave;
  uint64_t hold;
};
static_assert(sizeof(CollRec) == 64);
// A member's part of a completed instance: it waited in [enter, wait_end)
// for the last member, then worked until leave; time_variation after it.
// Its wait's kind follows from wait_class and the root's enter; `partner`
// is the last member to enter (world rank).
struct ResultRec {
  int32_t rank;
  uint32_t node;
  bool a2a;
  uint8_t wait_class;
  bool whole_call;  // (CollRec::whole_call)
  int32_t partner;
  double enter, wait_end, leave, time_variation;
  double root_enter;
  uint64_t hold;
};
static_assert(sizeof(ResultRec) == 64);

// The mailboxes between workers: for each parity of the phase (and, for the
// results, kEarlyResults) and each pair of workers (source, destination), a
// box of sends, of sends without a hold (BareSendRec), of cancelled sends, of
// late receivers, of collective calls and of collective results.
//
// Invariants: a box of parity P is written only by its source worker in a
// phase of parity P, published before the phase's barrier and read and
// cleared only by its destination worker in the next phase (the early
// results: published by publish_early(), read after the source's flag,
// Engine::take_early_results). Between processes, pack() empties a box that
// unpack() fills and publishes on the destination's process. A run fills
// either the sends' boxes or the bare sends' (wait states on or off), never
// both: a channel's sends then reach it in the order they were sent. A pair
// is noted as written (written_, incoming_) from its first record in the
// phase to its reading; publish, empty, pack and the readers
// (take_sources) visit the noted pairs only, and a pair not noted has
// nothing in its boxes. A source's notes of a parity are forgotten at its
// next phase of that parity (start_phase), after they were packed and read.
//
// Layout: each family is one array. A process holds the boxes with one of
// its workers at an end: first each local source's, by parity, then
// destination (every worker); then each other process's worker's, by
// parity, then local destination. Each source's boxes are followed by a
// guard of at least kGuardBytes that no one writes. Each box is one cache
// line, its header (Mailbox allocates its staging and records at the first
// record: most pairs of many workers never meet); the guard keeps the lines
// after a worker's boxes, which a stream prefetcher may fetch as the worker
// writes its boxes' lines, off the next source's boxes, which another worker
// writes in the same phase (measured with the staging in the boxes, not
// traced to its cause: docs/performance.md, "The mailboxes' layout and
// size").
class PhaseMail : private FirstRecordNotes {
  template <class T>
  struct alignas(64) Box {
    Mailbox<T> v;
  };
  static constexpr size_t kGuardBytes = 512;
  template <class T>
  static constexpr size_t kGuardBoxes = (kGuardBytes + sizeof(Box<T>) - 1) / sizeof(Box<T>);

 public:
  // Results of instances completed in a phase's first step, taken in the same
  // phase (Engine::take_early_results): a third parity of the result boxes.
  static constexpr int kEarlyResults = 2;
  // The bytes a box of records T takes in its family's array (its own cache
  // lines).
  template <class T>
  static constexpr size_t kBoxBytes = sizeof(Box<T>);

  PhaseMail() = default;
  PhaseMail(const PhaseMail&) = delete;  // (its boxes point back to it)
  PhaseMail& operator=(const PhaseMail&) = delete;

  // One source's boxes of a phase, by destination: a message's box is then
  // found by its destination's worker alone (Handler::send).
  template <class T>
  class Row {
   public:
    explicit Row(Box<T>* first) : first_(first) {}
    Mailbox<T>& operator[](unsigned dst) const { return first_[dst].v; }

   private:
    Box<T>* first_;
  };
  Row<SendRec> send_row(int parity, unsigned src) { return Row<SendRec>(box_at(send_, parity, src, 0)); }
  Row<BareSendRec> bare_send_row(int parity, unsigned src) {
    return Row<BareSendRec>(box_at(bare_send_, parity, src, 0));
  }
  // A local source's phase of this parity begins: the pairs it wrote in the
  // last phase of that parity, and its early results', are forgotten (their
  // boxes were published, packed and read since).
  void start_phase(int parity, unsigned src);
  // The sources with records for local destination dst in boxes of this
  // parity (0, 1 or kEarlyResults), in increasing order, into `sources`;
  // their notes cleared (the reader reads them all).
  void take_sources(int parity, unsigned dst, std::vector<unsigned>& sources);

  // Boxes for `workers` workers, this process running [local_lo, local_hi)
  // of them: a box has a local source or destination (two processes' workers
  // exchange through their own copies, pack() and unpack()), so a process
  // holds boxes for its workers times all, not all times all.
  void resize(unsigned workers, unsigned local_lo, unsigned local_hi);
  Mailbox<SendRec>& send_box(int parity, unsigned src, unsigned dst) { return box_at(send_, parity, src, dst)->v; }
  Mailbox<BareSendRec>& bare_send_box(int parity, unsigned src, unsigned dst) {
    return box_at(bare_send_, parity, src, dst)->v;
  }
  Mailbox<SendRec>& cancel_box(int parity, unsigned src, unsigned dst) { return box_at(cancel_, parity, src, dst)->v; }
  Mailbox<LateRecvRec>& late_box(int parity, unsigned src, unsigned dst) { return box_at(late_, parity, src, dst)->v; }
  Mailbox<CollRec>& coll_box(int parity, unsigned src, unsigned dst) { return box_at(coll_, parity, src, dst)->v; }
  // parity 0 or 1, or kEarlyResults.
  Mailbox<ResultRec>& result_box(int parity, unsigned src, unsigned dst) { return box_at(result_, parity, src, dst)->v; }
  // No box of this process holds records, at the end of a phase of this
  // parity (those of the other parity and the early results were read in it).
  bool empty(int parity) const;
  // What worker w wrote in a phase of this parity becomes readable after the barrier.
  void publish(int parity, unsigned w);
  // Worker w's early results become readable (before its flag).
  void publish_early(unsigned w);
  // Several processes: the boxes from workers [src_lo, src_hi) to [dst_lo,
  // dst_hi) to a byte stream and back (only the results' with results_only).
  // A collective call's communicator travels as its index among its rank's
  // definitions: the definition's address is the process's own.
  // (`traces`: every rank's file, by rank index: another process's rank has
  // no Rank here.)
  void pack(WireOut& out, int parity, unsigned src_lo, unsigned src_hi, unsigned dst_lo, unsigned dst_hi,
            bool results_only, const std::vector<std::unique_ptr<RankTrace>>& traces);
  void unpack(WireIn& in, int parity, unsigned src_lo, unsigned src_hi, unsigned dst_lo, unsigned dst_hi,
              bool results_only, const std::vector<std::unique_ptr<RankTrace>>& traces);

 private:
  // The parities of a family: the results' three (kEarlyResults), two for the rest.
  template <class T>
  static constexpr size_t kParities = std::is_same_v<T, ResultRec> ? 3 : 2;
  // A local source's boxes (to every worker) and its guard, in a family of
  // records T; then another process's source's (to the local workers).
  template <class T>
  size_t local_source_stride() const {
    return kParities<T> * workers_ + kGuardBoxes<T>;
  }
  template <class T>
  size_t remote_source_stride() const {
    return kParities<T> * local_n_ + kGuardBoxes<T>;
  }
  // Box (parity, src, dst) of a family (its records' type deduced from it):
  // src or dst one of this process's workers.
  template <class T>
  Box<T>* box_at(std::vector<Box<T>>& family, int parity, unsigned src, unsigned dst) {
    if (src - local_lo_ < local_n_) [[likely]]
      return &family[(src - local_lo_) * local_source_stride<T>() + static_cast<size_t>(parity) * workers_ + dst];
    return &family[remote_box(local_source_stride<T>(), remote_source_stride<T>(), parity, src, dst)];
  }
  // (Out of line: a worker of another process's box.)
  size_t remote_box(size_t local_stride, size_t remote_stride, int parity, unsigned src, unsigned dst) const;

  // Which pairs were written in a phase, so that publishing, packing and
  // reading visit those only, not every pair of a process's workers and
  // the job's (3,200 workers: 10^5 pairs, 13 boxes each, a phase):
  // - written_: for each (parity, local source) a byte per destination, set
  //   at the pair's first record in the phase (a local source's box tells
  //   its first record after each publish: first_record, its id the pair's
  //   place in written_), and the list of those destinations
  //   (written_lists_); only the source writes them;
  // - incoming_: for each (parity, local destination) a byte per source, set
  //   by the source's first record (another process's source: by unpack()),
  //   cleared by the destination's reader. Byte stores of several sources
  //   to one row are distinct objects: no race, once a pair a phase.
  // Parities 0, 1 and kEarlyResults.
  static constexpr int kNotedParities = 3;
  uint8_t* written_row(int parity, unsigned src) {
    return &written_[(static_cast<size_t>(parity) * local_n_ + (src - local_lo_)) * workers_];
  }
  std::vector<unsigned>& written_list(int parity, unsigned src) {
    return written_lists_[static_cast<size_t>(parity) * local_n_ + (src - local_lo_)];
  }
  const std::vector<unsigned>& written_list(int parity, unsigned src) const {
    return written_lists_[static_cast<size_t>(parity) * local_n_ + (src - local_lo_)];
  }
  uint8_t& incoming(int parity, unsigned dst, unsigned src) {
    return incoming_[(static_cast<size_t>(parity) * local_n_ + (dst - local_lo_)) * workers_ + src];
  }
  void first_record(uint32_t id) override;
  bool local(unsigned w) const { return w - local_lo_ < local_n_; }
  // The one list of the boxes' families: f(family) for each, the results'
  // (three parities) last.
  template <class Self, class F>
  static void each_family(Self& self, F&& f) {
    f(self.send_);
    f(self.bare_send_);
    f(self.cancel_);
    f(self.late_);
    f(self.coll_);
    f(self.result_);
  }
  // The boxes from src to dst of a parity that cross processes as plain
  // arrays, in the stream's order (the collective calls', whose communicator
  // is rewritten, and the results', which may travel alone, have steps of
  // their own).
  template <class F>
  void each_plain_box(int parity, unsigned src, unsigned dst, F&& f) {
    f(send_box(parity, src, dst));
    f(bare_send_box(parity, src, dst));
    f(cancel_box(parity, src, dst));
    f(late_box(parity, src, dst));
  }
  unsigned workers_ = 1;
  unsigned local_lo_ = 0, local_n_ = 1;  // this process's workers: [local_lo_, local_lo_ + local_n_)
  std::vector<Box<SendRec>> send_;
  std::vector<Box<BareSendRec>> bare_send_;
  std::vector<Box<SendRec>> cancel_;  // cancelled sends (rare)
  std::vector<Box<LateRecvRec>> late_;  // receives' issues back to blocking senders
  std::vector<Box<CollRec>> coll_;
  std::vector<Box<ResultRec>> result_;  // parities 0, 1 and kEarlyResults
  std::vector<uint8_t> written_, incoming_;
  std::vector<std::vector<unsigned>> written_lists_;
};

}  // namespace prof::analysis::detail
