// MirroredRing<T>: a queue of trivially copyable records (pushed at the back,
// dropped from the front) whose live records are always one contiguous array,
// and are never moved while they stay: for the sets of instants' spans and
// contexts (instants.h), which wait about a phase between decoding and the
// sweep, more than the L2 cache holds, and which the sweep sorts, searches and
// walks as arrays.
//
// Why not a vector compacted now and then: moving the live part to the front
// wrote every record a second time and read it back from its new place a
// phase later, each a cache miss per line.
//
// Algorithm
//   The buffer is N bytes (a whole number of pages, a power of two) of one
//   memfd mapped twice, back to back, so that base + N + i and base + i are
//   the same byte. Records are pushed at `end` and dropped at `begin`; when
//   dropping moves `begin` past base + N, both pointers step back by N: the
//   same bytes, seen through the first mapping. A record that straddles the
//   seam is whole in either view. When the buffer fills, a buffer of 2N is
//   made and the live records are copied once.
//   While N is below kMirrorFromBytes, and where the double mapping cannot be
//   made (memfd or mmap refused, the process's limit on mappings), the buffer
//   is N bytes of heap. drop_front only advances `begin`; a push that finds
//   no room at the buffer's end moves the live records to its start where
//   at least a quarter of the buffer lies before them, and otherwise grows
//   it. The rings are dropped from once a phase, by a sweep, and hold about
//   two phases' records before it, so moving them at every drop copied each
//   record once or twice (a sweep keeps what the watermark holds back); at
//   a quarter, a move makes room for at least N/4 pushes. The buffer grows
//   only where more than 3N/4 are live: a buffer of 2N moved only once begin
//   passed N held four to eight times its contents, most of the memory of an
//   analysis of 16384 ranks.
//
// Invariants
//   - Mirrored: base <= begin < base + N and end - begin <= N bytes
//     (capacity() records), so end <= base + 2N. Heap: base <= begin <= end
//     <= base + N.
//   - room_end is where push_back stops: begin + N mirrored, base + N heap.
//   - Pointers to records stay valid until the next push_back or
//     drop_front.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace prof::analysis::detail {

// The untyped buffer: its bytes and how it was made (mirrored_ring.cpp).
struct RingMemory {
  std::byte* base = nullptr;
  size_t bytes = 0;       // N: one view; a mirrored area is 2N
  bool mirrored = false;  // false: N bytes of heap

  // At least `min_bytes`, rounded up to a power of two (and to whole pages
  // when mirrored).
  static RingMemory make(size_t min_bytes, bool allow_mirror);
  void release();
};

template <class T>
class MirroredRing {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  static_assert(alignof(T) <= 64);  // the buffer is page-aligned; N is a multiple of alignof(T)

 public:
  // A trace of many ranks has eight rings a rank, most of them short: a heap
  // buffer of 256 bytes each, not pages (a page each was 57 KB a rank,
  // half the memory of a 4096-rank analysis).
  static constexpr size_t kFirstBytes = 256;
  // Views smaller than this are heap buffers: a short ring (a 10 ms window's
  // reach 64-128 KiB; a rank of a wide run) costs no memfd, mappings and
  // shared-memory faults at each doubling, and the copies drop_front makes stay in
  // the L2 cache. The rings of a long analysis outgrow it in its first phases.
  static constexpr size_t kMirrorFromBytes = 256 * 1024;

  // allow_mirror false: always the heap buffer (tests compare the two).
  explicit MirroredRing(bool allow_mirror = true) : allow_mirror_(allow_mirror) {}
  MirroredRing(const MirroredRing&) = delete;
  MirroredRing& operator=(const MirroredRing&) = delete;
  MirroredRing(MirroredRing&& o) noexcept { swap(o); }
  MirroredRing& operator=(MirroredRing&& o) noexcept {
    if (this != &o) {
      memory_.release();
      memory_ = RingMemory{};
      begin_ = end_ = room_end_ = nullptr;
      capacity_ = 0;
      swap(o);
    }
    return *this;
  }
  ~MirroredRing() { memory_.release(); }

  T* begin() { return begin_; }
  T* end() { return end_; }
  const T* begin() const { return begin_; }
  const T* end() const { return end_; }
  size_t size() const { return static_cast<size_t>(end_ - begin_); }
  bool empty() const { return end_ == begin_; }
  size_t capacity() const { return capacity_; }
  bool mirrored() const { return memory_.mirrored; }
  // Bytes of memory the buffer holds (N: a mirrored one is mapped twice).
  size_t reserved_bytes() const { return memory_.base ? memory_.bytes : 0; }
  T& operator[](size_t i) { return begin_[i]; }
  const T& operator[](size_t i) const { return begin_[i]; }
  T& front() { return *begin_; }
  T& back() { return end_[-1]; }
  const T& back() const { return end_[-1]; }

  [[gnu::always_inline]] void push_back(const T& v) {
    if (end_ == room_end_) [[unlikely]] make_room();
    std::memcpy(static_cast<void*>(end_), &v, sizeof(T));
    ++end_;
  }
  void pop_back() { --end_; }
  // Drops the first n records (n <= size()).
  void drop_front(size_t n) {
    if (n == 0) return;  // (an empty ring may have no buffer yet)
    begin_ += n;
    if (!memory_.mirrored) {
      if (begin_ == end_) begin_ = end_ = reinterpret_cast<T*>(memory_.base);  // (nothing to move)
    } else {
      room_end_ += n;
      if (bytes_from_base(begin_) >= memory_.bytes) [[unlikely]] step_back();
    }
  }
  void clear() { drop_front(size()); }

 private:
  size_t bytes_from_base(const T* p) const {
    return static_cast<size_t>(reinterpret_cast<const std::byte*>(p) - memory_.base);
  }
  static T* shifted(T* p, std::ptrdiff_t bytes) {
    return reinterpret_cast<T*>(reinterpret_cast<std::byte*>(p) + bytes);
  }
  // begin_ entered the second view: look at the same records through the first.
  [[gnu::noinline]] void step_back() {
    const auto n = static_cast<std::ptrdiff_t>(memory_.bytes);
    begin_ = shifted(begin_, -n);
    end_ = shifted(end_, -n);
    room_end_ = shifted(room_end_, -n);
  }
  // No room at room_end_: a heap buffer with a quarter or more free before
  // its records moves them to its start; otherwise the buffer doubles.
  [[gnu::noinline]] void make_room() {
    T* const base = reinterpret_cast<T*>(memory_.base);
    const size_t free_before = static_cast<size_t>(begin_ - base);  // (0 without a buffer)
    if (!memory_.mirrored && free_before > 0 && free_before >= capacity_ / 4) {
      const size_t live = size();
      std::memmove(static_cast<void*>(base), static_cast<const void*>(begin_), live * sizeof(T));
      begin_ = base;
      end_ = base + live;
      return;
    }
    grow();
  }
  [[gnu::noinline, gnu::cold]] void grow() {
    const size_t live = size();
    const size_t bytes = memory_.bytes ? memory_.bytes * 2 : kFirstBytes;
    RingMemory next = RingMemory::make(bytes, allow_mirror_ && bytes >= kMirrorFromBytes);
    if (live) std::memcpy(static_cast<void*>(next.base), static_cast<const void*>(begin_), live * sizeof(T));
    memory_.release();
    memory_ = next;
    begin_ = reinterpret_cast<T*>(memory_.base);
    end_ = begin_ + live;
    capacity_ = memory_.bytes / sizeof(T);
    room_end_ = begin_ + capacity_;
  }
  void swap(MirroredRing& o) noexcept {
    std::swap(memory_, o.memory_);
    std::swap(begin_, o.begin_);
    std::swap(end_, o.end_);
    std::swap(capacity_, o.capacity_);
    std::swap(room_end_, o.room_end_);
    std::swap(allow_mirror_, o.allow_mirror_);
  }

  RingMemory memory_;
  T* begin_ = nullptr;
  T* end_ = nullptr;
  size_t capacity_ = 0;  // records that fit in one view (N / sizeof(T))
  T* room_end_ = nullptr;      // push_back's limit (Invariants)
  bool allow_mirror_ = true;
};

}  // namespace prof::analysis::detail
