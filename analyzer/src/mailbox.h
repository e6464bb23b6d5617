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
// A box's staging lines are allocated at its first record: a process holds a
// box for each pair of its workers and the job's, most of which stay empty,
// and staging in place took 8 records a box, about 7 KB a pair of workers.
// publish() sets the staging aside, so the first record after it takes the
// same rare path as the very first, which also tells the box's owner
// (FirstRecordNotes) that the box holds records again: the owner then
// visits the boxes written in a phase, not all of them, at no cost to the
// records that follow.
//
// Invariants: T is trivially copyable and a multiple of 8 bytes; the writer
// calls publish() on each box it wrote before the barrier that hands the
// records over (it flushes the staged records and fences the streamed stores);
// the reader reads and clears only after that barrier; staged_ > 0 only with
// stage_ set; stage_ and spare_ are never both set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "aligned_grow.h"
#include "streamed_stores.h"

namespace prof::analysis::detail {

// Who hears of a box's first record after each publish(): `id` is what the
// box was given with it (Mailbox::set_notes).
class FirstRecordNotes {
 public:
  virtual void first_record(uint32_t id) = 0;

 protected:
  ~FirstRecordNotes() = default;
};

template <class T>
class Mailbox {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0);
  // Records are staged with ordinary stores and streamed out kStage at a time:
  // kStage * sizeof(T) is a multiple of 64, so every flush writes whole lines
  // of a 64-aligned array, and loading the staged records long after they were
  // stored avoids the store-forwarding stall of streaming a record the caller
  // has just assembled on the stack.
  static constexpr size_t kStage = 8;
  // for_each()'s distance: 16 lines (512 B and 2 KiB measured the same).
  static constexpr size_t kReadAheadBytes = 1024;

 public:
  Mailbox() = default;
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;
  ~Mailbox() {
    std::free(data_);
    std::free(stage_);
    std::free(spare_);
  }
  // The first record after each publish() calls notes->first_record(id).
  void set_notes(FirstRecordNotes* notes, uint32_t id) {
    notes_ = notes;
    id_ = id;
  }

  // Reader side (after the barrier): the records published.
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  // f(record) for each record published, in order, each step asking for
  // the line kReadAheadBytes on. The records were streamed past the caches
  // (flush), and the reader's work on each (a rank's channels, spans and
  // instances, scattered over the heap) keeps the hardware prefetcher from
  // following the box: without the hint a record's first load was the
  // costliest line of the loop ("Choices the measurements decided" in
  // docs/performance.md). A hint past the box's end is ignored; it does not
  // fault.
  template <class F>
  [[gnu::always_inline]] void for_each(F&& f) const {
    for (const T* record = data_, *last = data_ + size_; record != last; ++record) {
      __builtin_prefetch(reinterpret_cast<const char*>(record) + kReadAheadBytes);
      f(*record);
    }
  }
  void clear() { size_ = 0; }
  // Empties the box and frees its memory (a box emptied into another buffer
  // that would otherwise hold its records twice).
  void release() {
    std::free(data_);
    data_ = nullptr;
    size_ = cap_ = 0;
    std::free(spare_);
    spare_ = nullptr;
  }

  // Reader side, before reading: n records appended and published at once,
  // for the caller to fill (records from another process's worker: no
  // staging, as no one reads the box meanwhile).
  T* extend_published(size_t n) {
    if (size_ + n > cap_) grow(size_ + n);
    T* at = data_ + size_;
    size_ += n;
    return at;
  }

  // Writer side.
  void push_back(const T& x) {
    if (!stage_) [[unlikely]]
      begin_staging();
    stage_[staged_++] = x;
    if (staged_ == kStage) flush(kStage);
  }
  // Appends the record fill(T&) writes into its staging slot, field by field.
  // (A record assembled on the stack and pushed is copied with 16-byte loads
  // across its narrower stores just made, which the store buffer cannot
  // forward: a stall per record.)
  template <class Fill>
  [[gnu::always_inline]] void emplace_with(Fill&& fill) {
    if (!stage_) [[unlikely]]
      begin_staging();
    fill(stage_[staged_]);
    if (++staged_ == kStage) flush(kStage);
  }
  // Hands what was pushed to the reader: call before the barrier.
  void publish() {
    if (staged_) flush(staged_);
    if (stage_) {
      spare_ = stage_;
      stage_ = nullptr;
    }
    streamed_fence();
  }

 private:
  [[gnu::noinline]] void flush(size_t n) {
    if (size_ + n > cap_) grow(size_ + n);
    T* to = data_ + size_;
    if (n == kStage) stream_aligned(to, stage_, kStage * sizeof(T));
    else std::memcpy(to, stage_, n * sizeof(T));
    size_ += n;
    staged_ = 0;
  }
  // The first record since the box was made or last published.
  [[gnu::noinline]] void begin_staging() {
    if (spare_) {
      stage_ = spare_;
      spare_ = nullptr;
    } else {
      stage_ = static_cast<T*>(std::aligned_alloc(64, kStage * sizeof(T)));  // kStage * sizeof(T): a multiple of 64
      if (!stage_) throw std::bad_alloc();
    }
    if (notes_) notes_->first_record(id_);
  }
  // From one staging's worth, doubling: a box between two workers that
  // rarely meet (a collective's owner and a member, among many workers)
  // stays small, and with many workers most pairs are such.
  static constexpr size_t kFirstCapacity = kStage;
  void grow(size_t need) {
    size_t cap = cap_ ? 2 * cap_ : kFirstCapacity;
    while (cap < need) cap *= 2;
    data_ = grow_aligned64(data_, size_, cap);  // cap * sizeof(T): a multiple of 64
    cap_ = cap;
  }
  T* data_ = nullptr;  // 64-aligned
  size_t size_ = 0, cap_ = 0;
  T* stage_ = nullptr;  // 64-aligned, kStage records: set from the first record to publish()
  T* spare_ = nullptr;  // the staging set aside by publish()
  FirstRecordNotes* notes_ = nullptr;
  uint32_t staged_ = 0;
  uint32_t id_ = 0;
};

}  // namespace prof::analysis::detail
