// Growing an array that lives on 64-byte lines (the mailboxes' and the
// result queues' records, written with streaming stores whole lines at a
// time): a new 64-aligned block, the records kept, the old block freed.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>

namespace prof::analysis::detail {

// `data` (64-aligned or null) holding `used` records, moved to a block of
// room for `cap` records (cap * sizeof(T) a multiple of 64); the new block.
template <class T>
T* grow_aligned64(T* data, size_t used, size_t cap) {
  void* d = std::aligned_alloc(64, cap * sizeof(T));
  if (!d) throw std::bad_alloc();
  if (used) std::memcpy(d, data, used * sizeof(T));
  std::free(data);
  return static_cast<T*>(d);
}

}  // namespace prof::analysis::detail
