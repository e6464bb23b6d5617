// Records one worker hands to another across a phase barrier.
//
// Why a container of our own: the writer appends in phase P, the reader reads
// in phase P+1 and clears, and the writer appends again in phase P+2 to the
// same memory. With ordinary stores each line written then needs an
// invalidation round trip to the reader's core (a read-for-ownership of a line
// the reader holds); on the 2-core VM that stalled the writer for about a
// third of the analysis time. Non-temporal stores write whole lines without
// reading them, so the writer never waits on the reader's cache. The reader
// still misses once per line, but in sequence, which the prefetcher hides.
//
// Invariants: T is trivially copyable and a multiple of 8 bytes; the writer
// calls publish() (a store fence: non-temporal stores are weakly ordered)
// before the barrier that hands the records over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace prof::analysis::detail {

template <class T>
class Mailbox {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0);

 public:
  Mailbox() = default;
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;
  ~Mailbox() { std::free(data_); }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  void clear() { size_ = 0; }

  void push_back(const T& x) {
    if (size_ == cap_) grow();
#if defined(__x86_64__)
    long long w[sizeof(T) / 8];
    std::memcpy(w, &x, sizeof(T));
    long long* to = reinterpret_cast<long long*>(data_ + size_);
    for (size_t i = 0; i < sizeof(T) / 8; ++i) _mm_stream_si64(to + i, w[i]);
#else
    std::memcpy(data_ + size_, &x, sizeof(T));
#endif
    ++size_;
  }

  // Makes this worker's appends visible before it arrives at the barrier.
  static void publish() {
#if defined(__x86_64__)
    _mm_sfence();
#endif
  }

 private:
  void grow() {
    const size_t cap = cap_ ? 2 * cap_ : 1024;
    void* d = std::realloc(data_, cap * sizeof(T));
    if (!d) throw std::bad_alloc();
    data_ = static_cast<T*>(d);
    cap_ = cap;
  }
  T* data_ = nullptr;
  size_t size_ = 0, cap_ = 0;
};

}  // namespace prof::analysis::detail
