// Stores that skip the caches (streaming, non-temporal), for the engine's
// records that another core reads later (Mailbox) or that land on lines long
// out of cache (ResultQueue). Such a store writes its line without first
// reading it (no read for ownership), so the writer never waits on the line's
// owner or on memory.
//
// Invariants: streamed stores are weakly ordered, so a writer calls
// streamed_fence() after its last streamed store and before whatever hands
// the records to another thread (a release store, a barrier, a thread's
// join). Off x86-64 the copies are plain memcpy and the fence does nothing:
// the synchronization that follows orders ordinary stores by itself.
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace prof::analysis::detail {

// Copies `bytes` (a multiple of 16) from `from` to `to`, both 16-byte aligned.
[[gnu::always_inline]] inline void stream_aligned(void* to, const void* from, size_t bytes) {
#if defined(__x86_64__)
  const auto* in = static_cast<const __m128i*>(from);
  auto* out = static_cast<__m128i*>(to);
  for (size_t i = 0; i < bytes / 16; ++i) _mm_stream_si128(out + i, _mm_load_si128(in + i));
#else
  std::memcpy(to, from, bytes);
#endif
}

// Copies one record, 8 bytes at a time from wherever it lies (the caller's
// record may be in registers or on its stack), into `to` (8-byte aligned).
template <class T>
[[gnu::always_inline]] inline void stream_words(T* to, const T& from) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0);
#if defined(__x86_64__)
  auto* out = reinterpret_cast<long long*>(to);
  for (size_t i = 0; i < sizeof(T) / 8; ++i) {
    long long word;
    std::memcpy(&word, reinterpret_cast<const char*>(&from) + 8 * i, 8);
    _mm_stream_si64(out + i, word);
  }
#else
  std::memcpy(to, &from, sizeof(T));
#endif
}

// Orders this thread's streamed stores before its later stores.
inline void streamed_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace prof::analysis::detail
