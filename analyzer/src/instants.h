// Measures of sets of instants, per rank (spec/metrics.md): PotentSync,
// SendRecv, CollectiveAll and AllToAll always, and on ranks with several
// threads MPI time and Time of Start too, are the lengths of unions of time
// spans, each instant counted once, and each instant counts in the interval
// executions open on the rank at that instant.
//
// Algorithm
//   Spans arrive out of order (a receive's wait is known once its send is
//   matched, a collective call's once every member has called), so a rank
//   buffers them and sweeps them up to a watermark before which nothing can
//   arrive any more: the decoding frontier of every rank and the oldest hold
//   (a receive issued and not yet matched, a collective call whose instance
//   is not complete; see HoldQueue). The sweep cuts time at every span end and
//   classifies each stretch by priority: waiting (PotentSync) first, then a
//   receive's transfer (SendRecv), then collective, then all-to-all; MPI and
//   Start time on their own. A stretch is split again where the rank's context
//   (the interval executions open on it) changes, and each piece is credited to
//   the context in force.
//
// Invariants
//   - Contexts are appended in time order (a later append at an earlier time is
//     clamped to the last one: markers of different threads are decoded by
//     enter, their effect starts at leave, a few ns apart at most).
//   - Everything before the watermark has been credited exactly once; spans and
//     contexts after it are kept. Memory holds what lies after the oldest hold:
//     a receive that is never matched holds the watermark back to the end.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace prof::analysis::detail {

enum SpanKind : uint8_t {
  kWaitSpan = 0,      // PotentSync: a receive issued before its send, a late collective member
  kRecvCallSpan,      // inside a call that completes a receive
  kCollCallSpan,      // inside a collective call (not all-to-all)
  kAllToAllCallSpan,  // inside an all-to-all call
  kMpiCallSpan,       // inside any MPI call (ranks with several threads)
  kStartCallSpan,     // inside a call that starts an operation (ranks with several threads)
  kSpanKinds,
};

// What one stretch of time was, after priorities: at most one communication
// class, and whether it was MPI / Start time.
struct StretchClass {
  int8_t comm = -1;  // kWaitSpan, kRecvCallSpan, kCollCallSpan, kAllToAllCallSpan or -1
  bool mpi = false, start = false;
};

inline constexpr uint32_t kNoContext = UINT32_MAX;

// Holds on a rank's watermark, created in time order and released in any
// order. Tokens are sequence numbers; the ring keeps those from the oldest
// unreleased one on.
class HoldQueue {
 public:
  static constexpr uint64_t kNone = UINT64_MAX;

  uint64_t add(double t) {
    if (count_ == ring_.size()) grow();
    ring_[(head_ + count_) & (ring_.size() - 1)] = Slot{t, false};
    ++count_;
    return base_ + count_ - 1;
  }
  void release(uint64_t token) {
    if (token == kNone || token < base_ || token >= base_ + count_) return;
    ring_[(head_ + (token - base_)) & (ring_.size() - 1)].released = true;
    while (count_ > 0 && ring_[head_].released) {
      head_ = (head_ + 1) & (ring_.size() - 1);
      --count_;
      ++base_;
    }
  }
  // The time of the oldest hold still in force (+inf when none).
  double oldest() const {
    return count_ ? ring_[head_].t : std::numeric_limits<double>::infinity();
  }

 private:
  struct Slot {
    double t;
    bool released;
  };
  void grow() {
    std::vector<Slot> next(ring_.empty() ? 64 : ring_.size() * 2);
    for (size_t i = 0; i < count_; ++i) next[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_.swap(next);
    head_ = 0;
  }
  std::vector<Slot> ring_;
  size_t head_ = 0, count_ = 0;
  uint64_t base_ = 0;  // token of ring_[head_]
};

class InstantSets {
 public:
  InstantSets() { contexts_.push_back(Context{-kInf, kNoContext}); }

  void add(double from, double to, SpanKind kind) {
    if (to > from) spans_.push_back(Span{from, to, kind});
  }
  // From time t on, the rank's open executions are those of `context`.
  void set_context(double t, uint32_t context) {
    Context& last = contexts_.back();
    if (t <= last.from) {
      if (contexts_.size() - first_ > 1 && contexts_[contexts_.size() - 2].context == context) {
        contexts_.pop_back();  // back to what it was: no zero-length context
      } else {
        last.context = context;
      }
      return;
    }
    if (last.context != context) contexts_.push_back(Context{t, context});
  }
  bool empty() const { return spans_.empty(); }

  // Credits every instant before `upto`: credit(context, StretchClass, length)
  // for each piece of a stretch, contexts other than kNoContext only.
  template <class F>
  void sweep(double upto, F&& credit) {
    if (!spans_.empty()) sweep_spans(upto, credit);
    // Drop contexts that ended before the watermark (keep the one in force).
    size_t keep = first_;
    while (keep + 1 < contexts_.size() && contexts_[keep + 1].from <= upto) ++keep;
    first_ = keep;
    if (first_ > 1024 && first_ * 2 > contexts_.size()) {
      contexts_.erase(contexts_.begin(), contexts_.begin() + static_cast<std::ptrdiff_t>(first_));
      first_ = 0;
    }
  }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  struct Span {
    double from, to;
    SpanKind kind;
  };
  struct Point {
    double t;
    int8_t delta;
    SpanKind kind;
  };
  struct Context {
    double from;  // in force from here to the next one's `from`
    uint32_t context;
  };

  static StretchClass classify(const int (&count)[kSpanKinds]) {
    StretchClass c;
    for (int k = kWaitSpan; k <= kAllToAllCallSpan; ++k)
      if (count[k] > 0) {
        c.comm = static_cast<int8_t>(k);
        break;
      }
    c.mpi = count[kMpiCallSpan] > 0;
    c.start = count[kStartCallSpan] > 0;
    return c;
  }

  template <class F>
  void sweep_spans(double upto, F& credit) {
    points_.clear();
    kept_.clear();
    for (const Span& s : spans_) {
      if (s.from >= upto) {
        kept_.push_back(s);
        continue;
      }
      double end = s.to;
      if (end > upto) {
        kept_.push_back(Span{upto, end, s.kind});
        end = upto;
      }
      points_.push_back(Point{s.from, 1, s.kind});
      points_.push_back(Point{end, -1, s.kind});
    }
    spans_.swap(kept_);
    if (points_.empty()) return;
    std::sort(points_.begin(), points_.end(), [](const Point& a, const Point& b) { return a.t < b.t; });
    // The context in force at the first point.
    size_t ci = first_;
    while (ci + 1 < contexts_.size() && contexts_[ci + 1].from <= points_.front().t) ++ci;
    int count[kSpanKinds] = {};
    double prev = points_.front().t;
    for (const Point& p : points_) {
      if (p.t > prev) {
        const StretchClass c = classify(count);
        if (c.comm >= 0 || c.mpi || c.start) {
          // Split [prev, p.t) at context changes.
          double a = prev;
          while (a < p.t) {
            while (ci + 1 < contexts_.size() && contexts_[ci + 1].from <= a) ++ci;
            const double b = ci + 1 < contexts_.size() ? std::min(p.t, contexts_[ci + 1].from) : p.t;
            if (contexts_[ci].context != kNoContext) credit(contexts_[ci].context, c, b - a);
            a = b;
          }
        }
        prev = p.t;
      }
      count[p.kind] += p.delta;
    }
  }

  std::vector<Span> spans_, kept_;
  std::vector<Point> points_;
  std::vector<Context> contexts_;
  size_t first_ = 0;  // contexts before it are dropped
};

}  // namespace prof::analysis::detail
