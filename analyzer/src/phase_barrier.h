// The phases' barrier of the analysis engine (engine.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace prof::analysis::detail {

// A barrier for the phases: the last to arrive runs `done`, then releases the
// others. Waiters spin briefly, then yield, and only then sleep: a phase takes
// well under a millisecond, and std::barrier's sleep and wake-up cost about
// 4% of the analysis of 10^8 events on two cores. Yielding keeps a waiter
// from starving a worker that shares its core.
template <class F>
class PhaseBarrier {
 public:
  PhaseBarrier(unsigned n, F done) : n_(n), done_(std::move(done)) {}
  // True for the caller that arrived last (and ran `done`).
  bool arrive_and_wait() {
    const uint32_t gen = gen_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      done_();
      arrived_.store(0, std::memory_order_relaxed);
      gen_.store(gen + 1, std::memory_order_release);
      gen_.notify_all();
      return true;
    }
    for (int i = 0; i < 2000; ++i) {
      if (gen_.load(std::memory_order_acquire) != gen) return false;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    for (int i = 0; i < 200; ++i) {
      if (gen_.load(std::memory_order_acquire) != gen) return false;
      std::this_thread::yield();
    }
    while (gen_.load(std::memory_order_acquire) == gen) gen_.wait(gen, std::memory_order_acquire);
    return false;
  }

 private:
  const unsigned n_;
  F done_;
  alignas(64) std::atomic<uint32_t> arrived_{0};
  alignas(64) std::atomic<uint32_t> gen_{0};
};

}  // namespace prof::analysis::detail
