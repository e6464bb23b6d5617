// What an interval is, decided once for every consumer (the analysis, the
// Chrome export, windows): the root's bounds, begin/end matching per thread,
// and what happens to markers that do not pair up.
//
// Rules
//   - The root (the whole run) of a rank starts at the return of MPI_Init, or
//     at the first event that is neither MPI_Init nor a call allowed before it
//     (MPI_Initialized, MPI_Wtime, ...), and ends at the call of MPI_Finalize,
//     or at the rank's last leave when it never calls it. Calls outside the
//     root are the tool's (clock synchronization runs inside Init and
//     Finalize) or the program's before MPI: not counted.
//   - An execution of a user interval runs from its begin marker's return to
//     its end marker's call. Markers nest per thread (stream).
//   - An end closes the innermost open execution with its id on that thread;
//     executions opened inside it and still open are closed with it (counted
//     as unbalanced). An end with no open begin of that id is ignored.
//   - Begins nested deeper than kMaxIntervalDepth are ignored.
//   - Markers after the root ended (after MPI_Finalize) are ignored.
//   - Executions still open when the root ends close there.
//   Every ignored or forced marker is counted and reported through
//   `problem(category, example, count)`.
//
// The handler gets:
//   void root_started(double t)
//   uint32_t interval_begun(uint32_t stream, const Event& begin, double t, uint32_t parent)
//       -> the consumer's payload for the execution (the analysis: its tree node),
//          `parent` being the payload of the innermost open one on that thread
//          (kRootPayload when none)
//   void interval_ended(uint32_t stream, const OpenInterval&, double t)
//   void root_ended(double t)
//   void problem(WarningKind kind, F example, uint64_t count)   example() -> std::string
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "interpret.h"

namespace prof::analysis::detail {

inline constexpr size_t kMaxIntervalDepth = 4096;
inline constexpr uint32_t kRootPayload = 0;

struct OpenInterval {
  uint32_t id;       // the marker's interval id
  uint32_t payload;  // the consumer's (e.g. the tree node)
  double start;      // the begin marker's return (global ns)
};

// The handler interface above, checked by the compiler.
template <class H>
concept IntervalHandler = requires(H& h, const Event& e, const OpenInterval& o, double t, uint32_t stream,
                                   WarningKind kind, std::string (*example)(), uint64_t count) {
  h.root_started(t);
  { h.interval_begun(stream, e, t, stream) } -> std::convertible_to<uint32_t>;
  h.interval_ended(stream, o, t);
  h.root_ended(t);
  h.problem(kind, example, count);
};

class IntervalTracker {
 public:
  enum class Root { Before, In, After };

  explicit IntervalTracker(int world_rank) : rank_(world_rank) {}

  Root root() const { return root_; }
  bool in_root() const { return root_ == Root::In; }
  double root_start() const { return root_start_; }
  double last_leave() const { return last_leave_; }
  uint64_t unbalanced() const { return unbalanced_; }

  // An MPI call (not a continuation). False: it lies outside the root and
  // does not count.
  template <IntervalHandler H>
  [[gnu::always_inline]] bool call(const FuncInfo& fi, double enter, double leave, H& h) {
    // The common call, inside the root and not MPI_Finalize: one test of
    // each (the switch below was a jump table on every call).
    if (root_ == Root::In && !(fi.role & kRoleFinalize)) [[likely]] {
      last_leave_ = std::max(last_leave_, leave);
      return true;
    }
    return call_at_root_edge(fi, enter, leave, h);
  }
  // What call() does for a call its caller knows is inside the root and not
  // MPI_Finalize (Rank::plain_calls).
  [[gnu::always_inline]] void plain_call(double leave) { last_leave_ = std::max(last_leave_, leave); }

 private:
  template <IntervalHandler H>
  [[gnu::noinline]] bool call_at_root_edge(const FuncInfo& fi, double enter, double leave, H& h) {
    switch (root_) {
      case Root::After:
        return false;
      case Root::Before:
        if (fi.role & kRoleInit) {
          start_root(leave, h);
          last_leave_ = leave;
          return false;
        }
        if (fi.role & kRolePreInit) return false;
        start_root(enter, h);
        break;
      case Root::In:
        break;
    }
    if (fi.role & kRoleFinalize) {
      end_root(enter, h);
      return false;
    }
    // (As `if (leave > last_leave_)`, a NaN included, without a branch.)
    last_leave_ = std::max(last_leave_, leave);
    return true;
  }

 public:
  template <IntervalHandler H>
  [[gnu::always_inline]] void marker(const Event& e, double enter, double leave, H& h) {
    if (root_ != Root::In) [[unlikely]] {
      if (root_ == Root::After) {
        marker_after_root(e, h);
        return;
      }
      start_root(enter, h);
    }
    if (leave > last_leave_) last_leave_ = leave;
    std::vector<OpenInterval>& stack = stack_of(e.stream);
    if (e.marker_begin) {
      if (stack.size() >= kMaxIntervalDepth) [[unlikely]] {
        begin_too_deep(e, h);
        return;
      }
      const uint32_t parent = stack.empty() ? kRootPayload : stack.back().payload;
      // (The handler's begin never touches the stacks: `stack` still holds.)
      const uint32_t payload = h.interval_begun(e.stream, e, leave, parent);
      stack.push_back(OpenInterval{e.interval_id, payload, leave});
      last_top_ = payload;
      return;
    }
    // The common end: of the innermost open execution.
    if (!stack.empty() && stack.back().id == e.interval_id) [[likely]] {
      const OpenInterval o = stack.back();
      stack.pop_back();
      last_top_ = top_of(stack);
      h.interval_ended(e.stream, o, enter);
      return;
    }
    end_not_innermost(stack, e, enter, h);
  }

  // The rank was alive until last_alive() (global ns; a run that did not end
  // cleanly): a root still open lasts at least until then. Asked only for an
  // open root, since the reader walks the rank's last chunk to answer.
  template <class LastAlive>
  void note_alive(LastAlive&& last_alive) {
    if (root_ != Root::In) return;
    const double t = last_alive();
    if (t > last_leave_) last_leave_ = t;
  }

  // The rank's events are exhausted: a root still open ends at its last leave.
  template <IntervalHandler H>
  void finish(H& h) {
    if (root_ == Root::In) end_root(last_leave_, h);
  }

  // Open executions per thread: stacks()[i] belongs to stream_ids()[i].
  const std::vector<std::vector<OpenInterval>>& stacks() const { return stacks_; }
  const std::vector<uint32_t>& stream_ids() const { return stream_ids_; }
  // The payload of the innermost execution open on a thread (kRootPayload:
  // none). Asked at every call: the thread of the last marker or call
  // answers from last_top_.
  uint32_t innermost(uint32_t stream) {
    if (stream == last_stream_) [[likely]] return last_top_;
    const int i = slot(stream);
    return i >= 0 ? last_top_ : kRootPayload;
  }

  // The same where stacks() holds one stack (it is always the one used last).
  uint32_t innermost_of_one_stack() const { return last_top_; }

  // The tracker's whole state, saved at a chunk's start by the window index
  // and restored to start decoding there.
  struct Saved {
    Root root = Root::Before;
    double root_start = 0, last_leave = 0;
    uint64_t unbalanced = 0;
    std::vector<uint32_t> stream_ids;
    std::vector<std::vector<OpenInterval>> stacks;
  };
  void save(Saved& out) const {
    out = Saved{root_, root_start_, last_leave_, unbalanced_, stream_ids_, stacks_};
  }
  void restore(const Saved& in) {
    root_ = in.root;
    root_start_ = in.root_start;
    last_leave_ = in.last_leave;
    unbalanced_ = in.unbalanced;
    stream_ids_ = in.stream_ids;
    stacks_ = in.stacks;
    last_stream_ = stream_ids_.empty() ? 0 : stream_ids_[0];
    last_slot_ = 0;
    if (stream_ids_.empty()) {
      stream_ids_.push_back(0);
      stacks_.emplace_back();
    }
    last_top_ = top_of(stacks_[0]);
  }
  // The analysis stops at time t (the end of a window): every open execution
  // and the root close there, nothing reported (what follows is not read).
  template <IntervalHandler H>
  void cut(double t, H& h) {
    if (root_ != Root::In) return;
    for (size_t s = 0; s < stacks_.size(); ++s)
      while (!stacks_[s].empty()) {
        const OpenInterval o = stacks_[s].back();
        stacks_[s].pop_back();
        h.interval_ended(stream_ids_[s], o, t);
      }
    last_top_ = kRootPayload;
    root_ = Root::After;
    h.root_ended(t);
  }

  // A warning's time: seconds from where the handler's times count from
  // (`time_origin()`, global ns: the analysis's is the trace's start, as every
  // report's times), or from 0 for a handler without one.
  template <class H>
  static std::string seconds(double ns, const H& h) {
    double origin = 0;
    if constexpr (requires { h.time_origin(); }) origin = h.time_origin();
    char b[48];
    std::snprintf(b, sizeof b, "%.6f s", (ns - origin) * 1e-9);
    return b;
  }

 private:
  template <class H>
  [[gnu::noinline, gnu::cold]] void marker_after_root(const Event& e, H& h) {
    ++unbalanced_;
    h.problem(WarningKind::MarkerAfterFinalize, [&] {
      return "rank " + std::to_string(rank_) + ": interval " + std::to_string(e.interval_id);
    }, 1);
  }
  template <class H>
  [[gnu::noinline, gnu::cold]] void begin_too_deep(const Event& e, H& h) {
    ++unbalanced_;
    h.problem(WarningKind::NestingTooDeep, [&] {
      return "rank " + std::to_string(rank_) + ": interval " + std::to_string(e.interval_id);
    }, 1);
  }
  // An end whose id is not the innermost open one's: it closes the innermost
  // with its id and everything opened inside it, or nothing when none is open.
  template <class H>
  [[gnu::noinline]] void end_not_innermost(std::vector<OpenInterval>& stack, const Event& e, double enter, H& h) {
    size_t i = stack.size();
    while (i > 0 && stack[i - 1].id != e.interval_id) --i;
    if (i == 0) {
      ++unbalanced_;
      h.problem(WarningKind::EndWithoutBegin, [&] {
        return "rank " + std::to_string(rank_) + ": end of interval " +
               std::to_string(e.interval_id) + " at " + seconds(enter, h);
      }, 1);
      return;
    }
    unbalanced_ += stack.size() - i;
    h.problem(WarningKind::IntervalsCrossing, [&] {
      return "rank " + std::to_string(rank_) + ": end of interval " +
             std::to_string(e.interval_id) + " while interval " +
             std::to_string(stack.back().id) + " is open, at " + seconds(enter, h);
    }, stack.size() - i);
    while (stack.size() >= i) {
      const OpenInterval o = stack.back();
      stack.pop_back();
      last_top_ = top_of(stack);
      h.interval_ended(e.stream, o, enter);
    }
  }
  // Once per rank each: out of line, so the per-call paths stay small.
  template <class H>
  [[gnu::noinline, gnu::cold]] void start_root(double t, H& h) {
    root_start_ = t;
    root_ = Root::In;
    h.root_started(t);
  }
  template <class H>
  [[gnu::noinline, gnu::cold]] void end_root(double t, H& h) {
    for (size_t s = 0; s < stacks_.size(); ++s) {
      auto& stack = stacks_[s];
      if (!stack.empty()) {
        unbalanced_ += stack.size();
        h.problem(WarningKind::BeginNeverClosed, [&] {
          return "rank " + std::to_string(rank_) + ": interval " + std::to_string(stack.back().id) +
                 " opened at " + seconds(stack.back().start, h);
        }, stack.size());
      }
      while (!stack.empty()) {
        const OpenInterval o = stack.back();
        stack.pop_back();
        h.interval_ended(stream_ids_[s], o, t);
      }
    }
    last_top_ = kRootPayload;
    root_ = Root::After;
    h.root_ended(t);
  }
  // The slot of a stream's stack (-1: none yet). Streams are few; a damaged
  // stream number costs a slot, never a table that large.
  int slot(uint32_t stream) {
    if (stream == last_stream_) return static_cast<int>(last_slot_);
    for (size_t i = 0; i < stream_ids_.size(); ++i)
      if (stream_ids_[i] == stream) {
        last_stream_ = stream;
        last_slot_ = static_cast<uint32_t>(i);
        last_top_ = top_of(stacks_[i]);
        return static_cast<int>(i);
      }
    return -1;
  }
  static uint32_t top_of(const std::vector<OpenInterval>& stack) {
    return stack.empty() ? kRootPayload : stack.back().payload;
  }
  std::vector<OpenInterval>& stack_of(uint32_t stream) {
    int i = slot(stream);
    if (i < 0) {
      stream_ids_.push_back(stream);
      stacks_.emplace_back();
      i = static_cast<int>(stacks_.size() - 1);
      last_stream_ = stream;
      last_slot_ = static_cast<uint32_t>(i);
      last_top_ = kRootPayload;
    }
    return stacks_[static_cast<size_t>(i)];
  }

  int rank_;
  Root root_ = Root::Before;
  double root_start_ = 0;
  double last_leave_ = -std::numeric_limits<double>::infinity();
  uint64_t unbalanced_ = 0;
  std::vector<std::vector<OpenInterval>> stacks_{1};
  std::vector<uint32_t> stream_ids_{0};
  // The thread whose stack was used last, its slot, and the payload on top
  // of that stack (kRootPayload when empty), kept as the stack changes.
  uint32_t last_stream_ = 0, last_slot_ = 0, last_top_ = kRootPayload;
};

}  // namespace prof::analysis::detail
