// A rank's queue of records that wait until the rank next settles (the
// collective results of Engine::queued_results_), optionally written with
// streaming stores.
//
// Why streaming: at thousands of ranks an instance's owner hands its results
// to every member in turn, one record into each of thousands of queues. Each
// record lands on a line that left the cache since the rank last settled, and
// an ordinary store first reads that line (a read for ownership); the owner
// stalls on one such read a member. A streaming store writes the record's
// line without reading it. With fewer ranks the queues' lines are still in
// cache when the next result comes, and there a streaming store would push
// them out to memory for the settling rank to read back: the writer chooses
// per push (Engine::stream_results_).
//
// Invariants: T is trivially copyable and whole 64-byte lines; records are
// written and read by one thread, or by another only after the writer called
// streamed_fence() and then synchronized with the reader (a barrier, a thread's join);
// the array is 64-aligned; the capacity grows by doubling from one record,
// as std::vector's does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#include "aligned_grow.h"
#include "streamed_stores.h"

namespace prof::analysis::detail {

template <class T>
class ResultQueue {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 64 == 0);  // whole lines

 public:
  ResultQueue() = default;
  ResultQueue(const ResultQueue&) = delete;
  ResultQueue& operator=(const ResultQueue&) = delete;
  ResultQueue(ResultQueue&& o) noexcept { swap(o); }
  ResultQueue& operator=(ResultQueue&& o) noexcept {
    ResultQueue gone(std::move(o));
    swap(gone);
    return *this;
  }
  ~ResultQueue() { std::free(data_); }

  // Appends x; `streamed`: with streaming stores, 8 bytes at a time. (Out of
  // line: the owner's step, inlined where instances complete, calls it once
  // a member and stays small.)
  [[gnu::noinline]] void push(const T& x, bool streamed) {
    if (size_ == cap_) [[unlikely]] grow();
    T* to = data_ + size_++;
    if (streamed) stream_words(to, x);
    else std::memcpy(to, &x, sizeof(T));
  }

  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  void clear() { size_ = 0; }

 private:
  void swap(ResultQueue& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(cap_, o.cap_);
  }
  // (64-aligned, so that each record is whole lines.)
  [[gnu::noinline]] void grow() {
    const size_t cap = cap_ ? 2 * cap_ : 1;
    data_ = grow_aligned64(data_, size_, cap);
    cap_ = cap;
  }
  T* data_ = nullptr;  // 64-aligned
  size_t size_ = 0, cap_ = 0;
};

}  // namespace prof::analysis::detail
