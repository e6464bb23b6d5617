// Items made on several threads and used in their order on the calling
// thread, as a loop would make and use them in turn (delay_analysis.cpp: the
// root causes' charges, added to sums whose bytes depend on their order).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

namespace prof::analysis::detail {

// Makes items 0..count-1 (make(scratch, i, out)) on `threads` threads, each
// with a scratch of its own (new_scratch()), and hands each to use(i, out) on
// the calling thread in the order of i, as a loop that made and used them in
// turn would. The calling thread makes items too while the next to use is
// not ready; at most `ahead` items a thread are made and not yet used (their
// outs in a ring of slots: item i's slot is free once item i - slots is
// used). Threads that cannot be started leave their share to the others. An
// exception, from make or use, stops the work and is thrown here once every
// thread has stopped (the lowest item's, where several failed).
template <class Out, class NewScratch, class Make, class Use>
inline void made_in_order(size_t count, unsigned threads, size_t ahead, NewScratch&& new_scratch, Make&& make,
                          Use&& use) {
  auto own_scratch = new_scratch();
  if (threads <= 1 || count <= 1) {
    Out out;
    for (size_t i = 0; i < count; ++i) {
      make(*own_scratch, i, out);
      use(i, out);
    }
    return;
  }
  struct Slot {
    Out out;
    bool ready = false;
  };
  std::vector<Slot> slots(ahead * threads);
  std::mutex mu;
  std::condition_variable changed;
  size_t taken = 0, used = 0;  // items taken to be made, items used (under mu)
  bool stop = false;
  std::exception_ptr failure;
  size_t failed_item = SIZE_MAX;
  // (Under mu.)
  const auto fail = [&](size_t item) {
    if (item < failed_item) {
      failure = std::current_exception();
      failed_item = item;
    }
    stop = true;
  };
  const auto may_take = [&] { return taken < count && taken < used + slots.size(); };
  // Makes the item taken; false once the work stops.
  const auto make_one = [&](auto& scratch, std::unique_lock<std::mutex>& lock) {
    const size_t i = taken++;
    lock.unlock();
    Slot& slot = slots[i % slots.size()];
    try {
      make(scratch, i, slot.out);
    } catch (...) {
      lock.lock();
      fail(i);
      changed.notify_all();
      return false;
    }
    lock.lock();
    slot.ready = true;
    changed.notify_all();
    return true;
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back([&] {
        std::unique_lock<std::mutex> lock(mu);
        std::unique_ptr<std::remove_reference_t<decltype(*own_scratch)>> scratch;
        try {
          lock.unlock();
          scratch = new_scratch();
          lock.lock();
        } catch (...) {
          lock.lock();
          fail(0);
          changed.notify_all();
          return;
        }
        for (;;) {
          changed.wait(lock, [&] { return stop || taken >= count || may_take(); });
          if (stop || taken >= count) return;
          if (!make_one(*scratch, lock)) return;
        }
      });
    } catch (const std::system_error&) {
      break;  // (the threads started, and this one, make them all)
    }
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    for (size_t i = 0; i < count && !stop;) {
      Slot& slot = slots[i % slots.size()];
      if (slot.ready) {
        lock.unlock();
        try {
          use(i, slot.out);
        } catch (...) {
          lock.lock();
          fail(i);
          changed.notify_all();
          break;
        }
        lock.lock();
        slot.ready = false;
        ++used;
        ++i;
        changed.notify_all();
      } else if (may_take()) {
        make_one(*own_scratch, lock);
      } else {
        changed.wait(lock, [&] { return stop || slot.ready || may_take(); });
      }
    }
    stop = true;
    changed.notify_all();
  }
  for (std::thread& t : helpers) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace prof::analysis::detail
