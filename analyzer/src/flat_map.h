// A small open-addressing hash map for the analyzer's hot paths (channels,
// requests, collective instances), where std::unordered_map's node allocation
// per insert costs more than the work itself.
//
// Linear probing over a power-of-two table, at most 1/2 full; erase uses
// backward-shift deletion, so there are no tombstones and lookups stay short
// whatever the churn. Keys and values must be default-constructible and movable.
// References are invalidated by any insertion (rehash) or erase.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace prof::analysis::detail {

inline uint64_t mix64(uint64_t x) {
  // splitmix64 finalizer: good avalanche for structured keys.
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

template <class K>
struct FlatHash {
  uint64_t operator()(const K& k) const { return mix64(static_cast<uint64_t>(k)); }
};

template <class K, class V, class H = FlatHash<K>>
class FlatMap {
 public:
  struct Slot {
    K key{};
    V value{};
    bool used = false;
  };

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  V* find(const K& k) { return const_cast<V*>(std::as_const(*this).find(k)); }
  const V* find(const K& k) const {
    if (size_ == 0) return nullptr;
    for (size_t i = index(k);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == k) return &s.value;
    }
  }

  // The value for k, default-constructed when new.
  V& operator[](const K& k) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    for (size_t i = index(k);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.used) {
        s.used = true;
        s.key = k;
        s.value = V{};
        ++size_;
        return s.value;
      }
      if (s.key == k) return s.value;
    }
  }

  bool erase(const K& k) {
    if (size_ == 0) return false;
    size_t i = index(k);
    for (;; i = (i + 1) & mask_) {
      if (!slots_[i].used) return false;
      if (slots_[i].key == k) break;
    }
    // Backward shift: move later members of the probe run into the hole.
    size_t hole = i;
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      Slot& s = slots_[j];
      if (!s.used) break;
      const size_t home = index(s.key);
      // s may move to the hole if its home is not in (hole, j] cyclically.
      const bool between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
      if (!between) {
        slots_[hole].key = std::move(s.key);
        slots_[hole].value = std::move(s.value);
        hole = j;
      }
    }
    slots_[hole].used = false;
    slots_[hole].key = K{};
    slots_[hole].value = V{};
    --size_;
    return true;
  }

  template <class F>
  void for_each(F&& f) {
    for (Slot& s : slots_)
      if (s.used) f(s.key, s.value);
  }

  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.used) f(s.key, s.value);
  }

  // Erases every entry for which pred(key, value) is true.
  template <class P>
  void erase_if(P&& pred) {
    std::vector<K> doomed;
    for (Slot& s : slots_)
      if (s.used && pred(s.key, s.value)) doomed.push_back(s.key);
    for (const K& k : doomed) erase(k);
  }

  void clear() {
    slots_.clear();
    size_ = 0;
    mask_ = 0;
  }

 private:
  size_t index(const K& k) const { return static_cast<size_t>(H{}(k)) & mask_; }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t n = old.empty() ? 16 : old.size() * 2;
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    size_ = 0;
    for (Slot& s : old)
      if (s.used) (*this)[s.key] = std::move(s.value);
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
  size_t mask_ = 0;
};

// A FIFO that keeps its storage between uses (a channel empties and refills
// all the time).
//
// Algorithm: a ring over a power-of-two array; push writes at head + count,
// pop advances head, and a full ring doubles, copying its items once in
// order. Nothing is moved while it stays: the queue of a channel whose sends
// run a phase ahead of their receives holds thousands, and moving the live
// half down every time the head passed half of it cost a copy of each item.
// Invariants: count <= capacity (a power of two, or 0); the items, oldest
// first, are at (head + i) & (capacity - 1) for i < count.
template <class T>
class Fifo {
 public:
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  // (Inline in the decode loop: a call cost more than the push.)
  [[gnu::always_inline]] void push(const T& v) {
    if (count_ == capacity_) [[unlikely]] grow();
    items_[(head_ + count_) & (capacity_ - 1)] = v;
    ++count_;
  }
  T& front() { return items_[head_]; }
  [[gnu::always_inline]] T pop() {  // (in the decode loop, at every match)
    const T v = items_[head_];
    head_ = (head_ + 1) & (capacity_ - 1);
    --count_;
    return v;
  }
  // Removes the last element equal by `match` (a cancelled send); false if none.
  template <class P>
  bool remove_last_if(P&& match) {
    const size_t mask = capacity_ - 1;
    for (size_t i = count_; i-- > 0;) {
      if (match(items_[(head_ + i) & mask])) {
        for (size_t j = i + 1; j < count_; ++j) items_[(head_ + j - 1) & mask] = items_[(head_ + j) & mask];
        --count_;
        return true;
      }
    }
    return false;
  }

 private:
  [[gnu::noinline]] void grow() {
    const size_t capacity = capacity_ == 0 ? 8 : capacity_ * 2;
    std::unique_ptr<T[]> next(new T[capacity]);
    for (size_t i = 0; i < count_; ++i) next[i] = items_[(head_ + i) & (capacity_ - 1)];
    items_ = std::move(next);
    capacity_ = capacity;
    head_ = 0;
  }

  // The ring and its capacity, apart: a vector's size() divides by the item's
  // size (a multiply for a 40-byte item) at every push and pop.
  std::unique_ptr<T[]> items_;
  size_t capacity_ = 0;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace prof::analysis::detail
