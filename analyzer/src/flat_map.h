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

// A map from sequence numbers (a rank's hold tokens) to values, for keys
// that are made in increasing order and mostly erased soon after: the
// MPI_Isends in flight, a phase or two of them.
//
// Algorithm: a ring of power-of-two capacity holds the window [lo, lo + cap)
// of keys, key k in slot k & (cap - 1), so consecutive keys are neighbours in
// memory. A hash table spreads them over the whole table instead: at a phase
// of Isends (over a megabyte of entries) each lookup missed the caches, and
// this table's lookups were 45% of the analysis of a message-heavy trace while
// being a few per cent of its instructions. A key past the window slides it
// forward; keys the window leaves behind while still live (a send never
// received) move to a FlatMap of stragglers, which is empty in the common case.
// The ring doubles instead when more than half of it is live.
// Invariants: every live key below lo is in the stragglers, every other one in
// its ring slot; a free slot's key is kFree; live_ counts the ring's entries.
template <class V>
class SequenceMap {
 public:
  size_t size() const { return live_ + stragglers_.size(); }

  V* find(uint64_t k) {
    if (k - lo_ < ring_.size()) {
      Slot& s = ring_[k & (ring_.size() - 1)];
      return s.key == k ? &s.value : nullptr;
    }
    return stragglers_.empty() ? nullptr : stragglers_.find(k);
  }

  // The value for k, default-constructed when new.
  V& operator[](uint64_t k) {
    if (k < lo_) [[unlikely]] return stragglers_[k];
    if (k - lo_ >= ring_.size()) [[unlikely]] reach(k);
    Slot& s = ring_[k & (ring_.size() - 1)];
    if (s.key != k) {
      s.key = k;
      s.value = V{};
      ++live_;
    }
    return s.value;
  }

  void erase(uint64_t k) {
    if (k - lo_ < ring_.size()) {
      Slot& s = ring_[k & (ring_.size() - 1)];
      if (s.key == k) {
        s.key = kFree;
        --live_;
      }
    } else if (!stragglers_.empty()) {
      stragglers_.erase(k);
    }
  }

 private:
  static constexpr uint64_t kFree = UINT64_MAX;
  struct Slot {
    uint64_t key = kFree;
    V value{};
  };

  // Makes the window reach key k (>= lo_): doubles the ring while more than
  // half of it is live, else slides lo_ up to k - cap + 1, moving the live
  // keys it passes to the stragglers.
  [[gnu::noinline]] void reach(uint64_t k) {
    if (ring_.empty()) {
      ring_.assign(kFirstCapacity, Slot{});
      lo_ = k;
      return;
    }
    while (k - lo_ >= ring_.size() && live_ * 2 > ring_.size()) grow();
    if (k - lo_ < ring_.size()) return;
    const uint64_t lo = k - ring_.size() + 1;
    const uint64_t passed = std::min<uint64_t>(lo - lo_, ring_.size());
    for (uint64_t i = 0; i < passed && live_ > 0; ++i) {
      Slot& s = ring_[(lo_ + i) & (ring_.size() - 1)];
      if (s.key == kFree) continue;
      if (s.key < lo) {
        stragglers_[s.key] = std::move(s.value);
        s.key = kFree;
        --live_;
      }
    }
    lo_ = lo;
  }
  void grow() {
    std::vector<Slot> next(ring_.size() * 2);
    for (Slot& s : ring_)
      if (s.key != kFree) next[s.key & (next.size() - 1)] = std::move(s);
    ring_ = std::move(next);
  }

  // Small: every rank has one, whether it sends with MPI_Isend or not (64
  // slots are 3 KB); it doubles as it fills.
  static constexpr size_t kFirstCapacity = 4;
  std::vector<Slot> ring_;  // its size is the capacity (a power of two, or 0)
  uint64_t lo_ = 0;
  size_t live_ = 0;
  FlatMap<uint64_t, V> stragglers_;
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
  void push(const T& v) {
    if (count_ == items_.size()) [[unlikely]] grow();
    items_[(head_ + count_) & (items_.size() - 1)] = v;
    ++count_;
  }
  T& front() { return items_[head_]; }
  T pop() {
    const T v = items_[head_];
    head_ = (head_ + 1) & (items_.size() - 1);
    --count_;
    return v;
  }
  // Removes the last element equal by `match` (a cancelled send); false if none.
  template <class P>
  bool remove_last_if(P&& match) {
    const size_t mask = items_.size() - 1;
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
    std::vector<T> next(items_.empty() ? 8 : items_.size() * 2);
    for (size_t i = 0; i < count_; ++i) next[i] = items_[(head_ + i) & (items_.size() - 1)];
    items_ = std::move(next);
    head_ = 0;
  }

  std::vector<T> items_;  // the ring; its size is the capacity
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace prof::analysis::detail
