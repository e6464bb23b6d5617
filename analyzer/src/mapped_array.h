// MappedArray<T>: a growable array of trivially copyable T in its own anonymous
// mapping, for the timeline's per-row lists of 10^6-10^7 entries.
//
// Why not std::vector: a vector grows by allocating twice the room and copying,
// then shrink_to_fit copies once more, so each byte of a long list is written
// three times and its pages are faulted in about three times over. Under a
// hypervisor a page fault costs microseconds, and at 10^8 events that was most
// of the timeline build's system time. Here growth is mremap(), which moves
// page tables and copies nothing, and shrinking gives the tail's pages back in
// place: each page is faulted in once. Lists under kMapFrom bytes live on the
// heap (realloc: copying them is cheap), so a trace of thousands of rows does
// not spend thousands of mappings (vm.max_map_count) on short lists.
// A mapping's pages are made present kPopulateBytes at a time ahead of
// push_back (madvise MADV_POPULATE_WRITE: one kernel entry for 512 pages
// instead of a fault each, about a third less system time), never past what
// the list is about to use, so the list's memory is what it holds plus at most
// one step.
//
// Invariants: data_ is null, a heap block of capacity_bytes_ (mapped_ false,
// capacity_bytes_ < kMapFrom), or a mapping of capacity_bytes_ (a whole
// number of pages); elements [0, size_) are live; size_ <= ready_ <=
// capacity(): push_back writes up to ready_ without a call, then populates
// the next step, or grows. Iterators are plain pointers (sorted
// searches, remove_if and sort work as on a vector).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

// ThreadSanitizer intercepts mmap and munmap but not mremap: an address
// range that a move left, mapped again later, would keep its old accesses,
// and the new owner's writes would be reported as races with them. Its
// builds grow a mapping by a copy instead (tests/analyzer/sanitize.sh).
#if defined(__SANITIZE_THREAD__)
#define PROF_MAPPED_ARRAY_COPIES 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PROF_MAPPED_ARRAY_COPIES 1
#endif
#endif
#ifndef PROF_MAPPED_ARRAY_COPIES
#define PROF_MAPPED_ARRAY_COPIES 0
#endif

namespace prof::analysis::detail {

template <class T>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  MappedArray() = default;
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;
  MappedArray(MappedArray&& o) noexcept { swap(o); }
  MappedArray& operator=(MappedArray&& o) noexcept {
    if (this != &o) {
      release();
      swap(o);
    }
    return *this;
  }
  ~MappedArray() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_bytes_ / sizeof(T); }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void push_back(const T& v) {
    if (size_ == ready_) make_room();
    data_[size_++] = v;
  }
  template <class... A>
  T& emplace_back(A&&... args) {
    push_back(T{std::forward<A>(args)...});
    return back();
  }
  // Grows with value-initialized elements, or drops the tail.
  void resize(size_t n) {
    const size_t before = size_;
    resize_for_overwrite(n);
    if (n > before) std::memset(static_cast<void*>(data_ + before), 0, (n - before) * sizeof(T));
  }
  // Grows to n elements without writing the new ones (the caller writes each
  // before reading it), or drops the tail. The new pages of a mapping fault
  // in as they are first written, so threads that each write a part of the
  // list share that work.
  void resize_for_overwrite(size_t n) {
    if (n > capacity()) grow(n);
    ready_ = std::max(ready_, n);
    size_ = n;
  }
  void erase(T* first, T* last) {  // the remove_if idiom: [first, last) is a tail
    if (first == last) return;
    std::memmove(static_cast<void*>(first), last, static_cast<size_t>(end() - last) * sizeof(T));
    size_ -= static_cast<size_t>(last - first);
  }
  void clear() { size_ = 0; }
  // Gives the room past the last element back.
  void shrink_to_fit() {
    if (size_ == 0) {
      release();
      return;
    }
    if (!mapped_) {
      const size_t bytes = size_ * sizeof(T);
      if (bytes == capacity_bytes_) return;
      if (void* p = std::realloc(data_, bytes)) {
        data_ = static_cast<T*>(p);
        capacity_bytes_ = bytes;
      }
      return;
    }
    const size_t bytes = round_up(size_ * sizeof(T));
    if (bytes == capacity_bytes_) return;
    if (::munmap(reinterpret_cast<char*>(data_) + bytes, capacity_bytes_ - bytes) != 0) return;
    capacity_bytes_ = bytes;
    ready_ = std::min(ready_, capacity());
  }

 private:
  static size_t page() {
    static const size_t bytes = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    return bytes;
  }
  static size_t round_up(size_t bytes) { return (bytes + page() - 1) / page() * page(); }
  // push_back's slow path: the next populated step, or growth.
  void make_room() {
    if (ready_ == capacity()) grow(size_ + 1);
    if (!mapped_) {
      ready_ = capacity();
      return;
    }
    const size_t from = ready_ * sizeof(T) / page() * page();
    const size_t to = std::min(capacity_bytes_, from + kPopulateBytes);
    // Where the kernel lacks MADV_POPULATE_WRITE (before 5.14) the pages
    // fault in one by one as before.
    ::madvise(reinterpret_cast<char*>(data_) + from, to - from, kMadvPopulateWrite);
    ready_ = to == capacity_bytes_ ? capacity() : to / sizeof(T);
  }
  void grow(size_t at_least) {
    size_t bytes = capacity_bytes_ ? capacity_bytes_ : 16 * sizeof(T);
    while (bytes < at_least * sizeof(T)) bytes *= 2;
    if (!mapped_ && bytes < kMapFrom) {
      void* p = std::realloc(data_, bytes);
      if (!p) throw std::bad_alloc();
      data_ = static_cast<T*>(p);
      capacity_bytes_ = bytes;
      ready_ = capacity();
      return;
    }
    bytes = round_up(bytes);
    void* p = mapped_ ? moved(bytes) : ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    if (!mapped_ && data_) {  // from the heap: the one copy
      std::memcpy(p, data_, size_ * sizeof(T));
      std::free(data_);
    }
    data_ = static_cast<T*>(p);
    capacity_bytes_ = bytes;
    if (!mapped_) ready_ = size_;  // the copied part is present
    mapped_ = true;
  }
  // The mapping grown to `bytes`, moved where it does not fit in place, or
  // MAP_FAILED (the old one then stays).
  void* moved(size_t bytes) {
#if PROF_MAPPED_ARRAY_COPIES
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return p;
    std::memcpy(p, data_, capacity_bytes_);
    ::munmap(data_, capacity_bytes_);
    return p;
#else
    return ::mremap(data_, capacity_bytes_, bytes, MREMAP_MAYMOVE);
#endif
  }
  void release() {
    if (data_) {
      if (mapped_) ::munmap(data_, capacity_bytes_);
      else std::free(data_);
    }
    data_ = nullptr;
    size_ = 0;
    ready_ = 0;
    capacity_bytes_ = 0;
    mapped_ = false;
  }
  void swap(MappedArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(ready_, o.ready_);
    std::swap(capacity_bytes_, o.capacity_bytes_);
    std::swap(mapped_, o.mapped_);
  }

  static constexpr size_t kMapFrom = size_t{1} << 20;
  static constexpr size_t kPopulateBytes = size_t{2} << 20;
#ifdef MADV_POPULATE_WRITE
  static constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
  static constexpr int kMadvPopulateWrite = 23;  // Linux 5.14's value; older kernels answer EINVAL
#endif
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t ready_ = 0;
  size_t capacity_bytes_ = 0;
  bool mapped_ = false;
};

}  // namespace prof::analysis::detail
