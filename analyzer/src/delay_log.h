// What the streaming pass keeps of one rank for the two analyses that run
// after it, on the whole run (docs/metrics.md, "Root causes" and "Critical
// path"): delay_analysis.cpp and critical_path.cpp.
//
// Both look back in time (since two ranks last synchronized; backward from
// the run's end), which one forward pass cannot do without keeping history:
// so each rank logs, in its own worker,
//   - contexts: from which instant which execution context (local node, or a
//     Combo of threads; kNoContext after the root ended) was open;
//   - syncs: the leave of each call that synchronized it with another rank:
//     a matched send or receive (the peer), a collective (its communicator);
//   - waits: each wait state with a partner (Engine::credit_partner): where
//     it waited, on whom, from when to when (the partner's arrival).
// The logs grow with markers, point-to-point and collective calls (12 or 24
// bytes each, in pages: PagedLog), not only with what is in flight, so their
// full pages wait in a temporary file during the pass (LogSpill), mapped
// back after it: Options::delay_analysis turns the logs and the analyses
// off. The syncs go once the root causes are charged, the rest once the
// critical path is walked (DelayResults).
//
// Invariants: a rank's log is written only by its worker; with several
// processes it travels to process 0 with the rank's other figures
// (Engine::gather_at_root), so the analyses see the same logs either way.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "log_spill.h"
#include "prof/trace_reader.h"

namespace prof::analysis::detail {

// An append-only log of trivially copyable records, in pages of a fixed
// number of entries each (a power of two: the spill's choice, LogSpill::
// page_shift_for, else kDefaultPageShift), allocated as the log reaches them.
//
// A vector that doubles holds, at each reallocation, its old buffer and one
// twice as large (and is a quarter empty on average after): at 16384 ranks
// the logs of a run peaked at 1.5 times their content. Here appending never
// moves what is written, so a log costs its entries, at most one page not
// yet full, and a slot a page; entry i is two reads away (its page, then
// the entry), through a View that an analysis keeps next to its other
// figures of the rank.
//
// With a LogSpill (spill_to), each page that fills goes to the spill's file
// and its buffer takes the next entries: the log holds one page in memory
// whatever its length, and a file offset for each page before it, until
// map_back() turns the offsets into addresses in the spill's mapping.
//
// Invariants: pages_[k] holds entries [k << shift_, (k + 1) << shift_) of
// those written; every page but the last is full, and tail_ points into the
// last one (nullptr while the log is empty). With a spill, the last page is
// the only one on the heap; the others are offsets (Slot::offset) until
// map_back(), addresses in the mapping (Slot::page) after; nothing is
// appended after map_back(). shift_ changes only while the log is empty.
template <class T>
class PagedLog {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  // 16 entries: 192 bytes a page of 12-byte records, the size of a log
  // without a spill, and of a spilled one at thousands of ranks (LogSpill::
  // page_shift_for).
  static constexpr unsigned kDefaultPageShift = 4;
  // (So every page in the spill's file is aligned for its entries.)
  static_assert(((sizeof(T) << kDefaultPageShift) % 8) == 0 && alignof(T) <= 8);

  // A page: its address, or, spilled and not yet mapped back, its offset in
  // the spill's file.
  union Slot {
    T* page;
    uint64_t offset;
  };
  static_assert(sizeof(Slot) == sizeof(T*));

  // What the searches read: entry i of n (two words: an analysis keeps a
  // rank's views on one cache line).
  struct View {
    const Slot* pages = nullptr;
    uint64_t n : 58 = 0;
    uint64_t shift : 6 = kDefaultPageShift;
    const T& operator[](size_t i) const { return pages[i >> shift].page[i & ((size_t{1} << shift) - 1)]; }
    // The first entry of the page that holds entry i.
    const T* page_of(size_t i) const { return pages[i >> shift].page; }
    size_t size() const { return n; }
    size_t page_entries() const { return size_t{1} << shift; }
  };
  static_assert(sizeof(View) == 16);

  PagedLog() = default;
  PagedLog(const PagedLog&) = delete;
  PagedLog& operator=(const PagedLog&) = delete;
  PagedLog(PagedLog&& o) noexcept { take(o); }
  PagedLog& operator=(PagedLog&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~PagedLog() { release(); }

  // Full pages go to `spill`, through its writer `writer`, from now on, in
  // pages of the spill's size (set while the log is empty; the log is
  // written by one thread at a time).
  void spill_to(LogSpill* spill, unsigned writer = 0) {
    writer_ = spill ? &spill->writer(writer) : nullptr;
    shift_ = static_cast<uint8_t>(spill ? spill->page_shift() : kDefaultPageShift);
  }

  // (Through tail_, not the page table: a rank's state is out of cache at
  // each visit at thousands of ranks, and the table would be one more miss.)
  void push_back(const T& v) {
    if (tail_ == page_end_) [[unlikely]] add_page();
    *tail_++ = v;
  }
  size_t size() const { return (size_t{pages_n_} << shift_) - static_cast<size_t>(page_end_ - tail_); }
  size_t page_entries() const { return size_t{1} << shift_; }
  size_t page_bytes() const { return sizeof(T) << shift_; }
  bool empty() const { return tail_ == nullptr; }
  // Reading takes every page in memory or mapped: without a spill, or after
  // map_back(); writing through operator[], every page in memory (the
  // mapping is read-only: a spilled log is rewritten through Copy).
  T& operator[](size_t i) { return pages_[i >> shift_].page[i & (page_entries() - 1)]; }
  const T& operator[](size_t i) const { return pages_[i >> shift_].page[i & (page_entries() - 1)]; }
  const T& front() const { return pages_[0].page[0]; }
  const T& back() const { return tail_[-1]; }
  View view() const { return View{pages_, size(), shift_}; }
  // The spilled pages' offsets become addresses in the spill's mapping, which
  // starts at `base` (LogSpill::map()).
  void map_back(char* base) {
    if (!writer_) return;
    for (uint32_t k = 0; k + 1 < pages_n_; ++k) pages_[k].page = reinterpret_cast<T*>(base + pages_[k].offset);
  }
  // Whether its entries lie partly in the spill's file, mapped back.
  bool spilled() const { return writer_ && writer_->spill->mapping() && pages_n_ > 1; }
  // A spilled log, mapped back, is written again in a new order, entry by
  // entry (put), at the end of the spill's file (its spilled pages' part, in
  // one piece: LogSpill::reserve_copy) and in its last page (the rest); at
  // finish() the log reads the new order. Reading the log while its copy is
  // written reads the old order.
  class Copy {
   public:
    explicit Copy(PagedLog& log)
        : log_(log), in_file_(size_t{log.pages_n_ - 1} << log.shift_),
          at_(log.writer_->spill->reserve_copy(in_file_ * sizeof(T))), tail_(log.page_entries()) {
      buffer_.reserve(std::min(kBufferEntries, in_file_));
    }
    void put(const T& e) {
      if (put_ < in_file_) {
        buffer_.push_back(e);
        if (buffer_.size() == kBufferEntries) flush();
      } else {
        tail_[put_ - in_file_] = e;
      }
      ++put_;
    }
    void finish() {
      flush();
      char* const base = log_.writer_->spill->mapping();
      const size_t page_bytes = log_.page_bytes();
      for (uint32_t k = 0; k + 1 < log_.pages_n_; ++k)
        log_.pages_[k].page = reinterpret_cast<T*>(base + at_ + uint64_t{k} * page_bytes);
      std::copy(tail_.begin(), tail_.begin() + static_cast<ptrdiff_t>(put_ - in_file_),
                log_.pages_[log_.pages_n_ - 1].page);
    }

   private:
    static constexpr size_t kBufferEntries = (size_t{64} << 10) / sizeof(T);  // 64 KB a write
    void flush() {
      if (buffer_.empty()) return;
      log_.writer_->spill->write_copy(buffer_.data(), buffer_.size() * sizeof(T), at_ + written_ * sizeof(T));
      written_ += buffer_.size();
      buffer_.clear();
    }
    PagedLog& log_;
    size_t in_file_;
    uint64_t at_;
    std::vector<T> buffer_;
    size_t written_ = 0, put_ = 0;
    std::vector<T> tail_;  // the entries for the last page
  };
  // Gives the pages back (the log is empty after; spilled pages stay in the
  // spill's file).
  void release() {
    if (writer_) {
      if (pages_n_) ::operator delete(pages_[pages_n_ - 1].page);
    } else {
      for (uint32_t k = 0; k < pages_n_; ++k) ::operator delete(pages_[k].page);
    }
    ::operator delete(pages_);
    pages_ = nullptr;
    pages_n_ = 0;
    table_shift_ = 0;
    tail_ = page_end_ = nullptr;
  }
  // The heap the log holds: its pages and their table.
  size_t heap_bytes() const {
    const size_t pages = writer_ ? std::min<size_t>(pages_n_, 1) : pages_n_;
    return pages * page_bytes() + table_slots() * sizeof(Slot);
  }
  // The bytes of its entries, wherever they are.
  size_t entry_bytes() const { return size() * sizeof(T); }

  // Calls f(entry) on each entry in order.
  template <class F>
  void for_each(F&& f) const {
    for (size_t k = 0, left = size(); left > 0; ++k) {
      const size_t n = std::min(left, page_entries());
      for (size_t i = 0; i < n; ++i) f(pages_[k].page[i]);
      left -= n;
    }
  }
  // The entries in a vector (a sort works on the copy).
  std::vector<T> to_vector() const {
    std::vector<T> v;
    v.reserve(size());
    for_each([&v](const T& e) { v.push_back(e); });
    return v;
  }

 private:
  void take(PagedLog& o) {
    pages_ = std::exchange(o.pages_, nullptr);
    pages_n_ = std::exchange(o.pages_n_, 0);
    table_shift_ = std::exchange(o.table_shift_, 0);
    tail_ = std::exchange(o.tail_, nullptr);
    page_end_ = std::exchange(o.page_end_, nullptr);
    writer_ = std::exchange(o.writer_, nullptr);
    shift_ = std::exchange(o.shift_, static_cast<uint8_t>(kDefaultPageShift));
  }
  void add_page() {
    if (pages_n_ == table_slots()) {
      const uint32_t cap = pages_n_ ? pages_n_ * 2 : 4;
      Slot* table = static_cast<Slot*>(::operator new(cap * sizeof(Slot)));
      if (pages_n_) std::memcpy(table, pages_, pages_n_ * sizeof(Slot));
      ::operator delete(pages_);
      pages_ = table;
      table_shift_ = static_cast<uint8_t>(std::countr_zero(cap) - 1);
    }
    T* p;
    if (writer_ && pages_n_) {
      // The full page to the file; its buffer takes the next entries.
      p = pages_[pages_n_ - 1].page;
      pages_[pages_n_ - 1].offset = writer_->spill->append(*writer_, p, page_bytes());
    } else {
      // (Raw memory: no constructor runs on a page about to be written.)
      p = static_cast<T*>(::operator new(page_bytes()));
    }
    pages_[pages_n_++].page = p;
    tail_ = p;
    page_end_ = p + page_entries();
  }
  // The page table's slots: none, or 4, 8, 16, ... (2 << table_shift_).
  size_t table_slots() const { return pages_ ? size_t{2} << table_shift_ : 0; }
  Slot* pages_ = nullptr;  // table_slots() slots, pages_n_ used
  uint32_t pages_n_ = 0;
  uint8_t table_shift_ = 0;
  uint8_t shift_ = kDefaultPageShift;  // log2 of a page's entries
  T* tail_ = nullptr;      // the next entry to write, in the last page
  T* page_end_ = nullptr;  // the last page's end
  LogSpill::Writer* writer_ = nullptr;  // where full pages go: a spill's writer (null: they stay in memory)
};
static_assert(sizeof(PagedLog<double>) == 40);

// The entries a nearly sorted log's sort bounds at a time (emit_sorted).
inline constexpr size_t kSortGranule = 1024;

// What a log's sort knows of its order (sort_log, emit_sorted): nothing
// (NoOrder: a stable sort of a copy), or that it is nearly in order by a key
// (NearlyBy): entries come in time order but for those whose figures
// arrived late, a phase or so.
//   - key_of(e): the primary key of the sort's `less` (less(x, y) implies
//     key_of(x) <= key_of(y));
//   - least, where known: the least key of each kSortGranule entries (null:
//     a pass over the log from its end finds them).
struct NoOrder {};
template <class KeyOf>
struct NearlyBy {
  KeyOf key_of;
  const std::vector<double>* least = nullptr;
};
template <class KeyOf>
NearlyBy<KeyOf> nearly_by(KeyOf key_of) {
  return NearlyBy<KeyOf>{key_of};
}

struct DelayLog {
  // Packed to 4 bytes: 12 bytes an entry rather than 16 (the searches read
  // the members by value, never through a pointer to them).
#pragma pack(push, 4)
  struct Context {
    double t;
    uint32_t context;
  };
  struct Sync {
    double leave;
    // >= 0: the world rank of a send's or receive's peer; < 0: a collective
    // on communicator comms[~with].
    int32_t with;
    bool collective() const { return with < 0; }
    uint32_t comm() const { return static_cast<uint32_t>(~with); }
  };
#pragma pack(pop)
  static_assert(sizeof(Context) == 12 && sizeof(Sync) == 12);
  // Walks the contexts of `c` (a PagedLog's View) from context k while they
  // start before b, calling f(context, lo, hi) for each that is in force
  // over a part [lo, hi) of [a, b) (hi > lo; kNoContext included); returns
  // the index of the first context not walked. The entries are read a page
  // at a time, each once. (The times copied first: std::max and std::min
  // take references, and a packed entry's double may be misaligned.)
  template <class Contexts, class F>
  static size_t for_each_in_force(const Contexts& c, size_t k, double a, double b, F&& f) {
    const size_t n = c.size();
    if (k >= n) return k;
    const size_t mask = c.page_entries() - 1;
    const Context* e = c.page_of(k) + (k & mask);
    Context cur = *e;
    while (cur.t < b) {
      const bool last = k + 1 == n;
      Context next{};
      if (!last) {
        e = ((k + 1) & mask) ? e + 1 : c.page_of(k + 1);
        next = *e;
      }
      const double from = cur.t, to = last ? b : double{next.t};
      const double lo = std::max(a, from), hi = std::min(b, to);
      if (hi > lo) f(cur.context, lo, hi);
      ++k;
      if (last) break;
      cur = next;
    }
    return k;
  }
  struct Wait {
    double from, to;  // to: the partner's arrival (enter, or a receive's issue)
    int32_t partner;  // world rank
    uint32_t node;    // local node of the waiting call
  };
  static_assert(sizeof(Wait) == 24);
  struct Comm {
    uint64_t gid = 0;
    // World ranks, sorted. The communicator's own list where that is sorted
    // (shared with its definition, and MPI_COMM_WORLD's with every rank's):
    // a copy each was 64 KB a rank at 16384 ranks.
    trace::RankList members;
  };
  PagedLog<Context> contexts;
  PagedLog<Sync> syncs;
  PagedLog<Wait> waits;
  // The pass logs contexts and syncs through log_context and log_sync, which
  // note whether each came in time order: the sort then knows a log in
  // order without reading it (on 10^8 events over 4 ranks, 22.5 M entries a
  // rank read back from the spill's file). Entries appended otherwise (a
  // log received from another process) leave the order unknown.
  void log_context(double t, uint32_t context) {
    contexts_order_.note(!contexts.empty() && t < contexts.back().t);
    contexts.push_back(Context{t, context});
  }
  void log_sync(const Sync& s) {
    syncs_order_.note(!syncs.empty() && s.leave < syncs.back().leave);
    syncs.push_back(s);
  }
  // Whether every context (sync) is known to have come in time order.
  bool contexts_known_in_order() const { return contexts_order_.known_for(contexts.size()); }
  bool syncs_known_in_order() const { return syncs_order_.known_for(syncs.size()); }
  // The pass logs waits through log_wait, which notes the least `to` of each
  // kSortGranule waits: the sort's bound on the entries still to come
  // (emit_sorted), known without a pass over the log from its end.
  void log_wait(const Wait& w) {
    if (!wait_bounds_) [[unlikely]]
      wait_bounds_ = std::make_unique<WaitBounds>();
    WaitBounds& b = *wait_bounds_;
    if (b.noted % kSortGranule == 0) b.least_to.push_back(w.to);
    else b.least_to.back() = std::min(b.least_to.back(), w.to);
    ++b.noted;
    waits.push_back(w);
  }
  // Each granule's least `to`, when every wait came through log_wait (else
  // null: a log received from another process).
  const std::vector<double>* waits_least_to() const {
    return wait_bounds_ && wait_bounds_->noted == waits.size() ? &wait_bounds_->least_to : nullptr;
  }
  // The order sort_log's waits are nearly in (by `to` first).
  struct WaitTo {
    double operator()(const Wait& w) const { return w.to; }
  };
  NearlyBy<WaitTo> wait_sort_order() const { return NearlyBy<WaitTo>{WaitTo{}, waits_least_to()}; }
  std::vector<Comm> comms;
  uint32_t last_comm = UINT32_MAX;  // the communicator found last (index)

  static Sync sync_with_peer(double leave, int32_t peer) { return Sync{leave, peer}; }
  static Sync sync_on_comm(double leave, uint32_t comm) { return Sync{leave, ~static_cast<int32_t>(comm)}; }
  // An entry of each log (LogSpill::page_shift_for).
  static constexpr size_t kEntryBytes = sizeof(Context) + sizeof(Sync) + sizeof(Wait);
  // The heap the three logs hold.
  size_t heap_bytes() const { return contexts.heap_bytes() + syncs.heap_bytes() + waits.heap_bytes(); }
  // Their entries' bytes, wherever they are.
  size_t entry_bytes() const { return contexts.entry_bytes() + syncs.entry_bytes() + waits.entry_bytes(); }
  // Full pages of the three logs go to `spill`, through its writer `writer`
  // (PagedLog::spill_to).
  void spill_to(LogSpill* spill, unsigned writer = 0) {
    contexts.spill_to(spill, writer);
    syncs.spill_to(spill, writer);
    waits.spill_to(spill, writer);
  }
  // After LogSpill::map(), at `base` (PagedLog::map_back).
  void map_back(char* base) {
    contexts.map_back(base);
    syncs.map_back(base);
    waits.map_back(base);
  }

 private:
  // How many entries were noted (the low 63 bits), and whether one came
  // before the entry before it (the top bit): one word, as a Rank holds two
  // at every rank, set in one add and one or (a note an event with --json,
  // where two bit-fields would each be read, masked and written).
  struct Order {
    uint64_t bits = 0;
    void note(bool before_last) { bits = (bits + 1) | (uint64_t{before_last} << 63); }
    bool known_for(size_t entries) const { return bits == entries; }  // (the top bit clear, the count equal)
  };
  static_assert(sizeof(Order) == 8);
  Order contexts_order_, syncs_order_;
  struct WaitBounds {
    std::vector<double> least_to;  // of waits [g * kSortGranule, (g + 1) * kSortGranule)
    size_t noted = 0;
  };
  std::unique_ptr<WaitBounds> wait_bounds_;  // (a word at every rank until its first wait)

 public:
  // The index of communicator `gid` in `comms`; its members (world ranks:
  // `local`, and `remote` for an intercommunicator) are read the first time.
  uint32_t comm_index(uint64_t gid, const trace::RankList& local, const trace::RankList* remote) {
    if (last_comm < comms.size() && comms[last_comm].gid == gid) return last_comm;
    for (uint32_t i = 0; i < comms.size(); ++i)
      if (comms[i].gid == gid) return last_comm = i;
    Comm c;
    c.gid = gid;
    if (remote == nullptr && std::is_sorted(local.begin(), local.end())) {
      c.members = local;
    } else {
      std::vector<int32_t> m(local.begin(), local.end());
      if (remote) m.insert(m.end(), remote->begin(), remote->end());
      std::sort(m.begin(), m.end());
      c.members = trace::RankList(std::move(m));
    }
    comms.push_back(std::move(c));
    return last_comm = static_cast<uint32_t>(comms.size() - 1);
  }
};

// The partition point of a sorted log for a predicate true on a prefix of
// it (the entries before some instant), found from `hint` (where a search
// of the same log ended last): galloping towards it, steps 1, 2, 4, ...
// until a probe passes it, then a binary search between the last two
// probes. The place a binary search of the whole log finds, in about
// 2 log2(distance) probes: where successive instants are close, a few
// entries next to the last ones are read instead of a path through the log
// (a miss each on a log out of cache), and a far one costs at most twice
// the probes of a binary search.
// `log` is indexed: a pointer, or a PagedLog's View.
// (Inlined by hand: with a View's page size read at run time GCC no longer
// inlines it, and each search becomes a call.)
template <class Log, class Before>
[[gnu::always_inline]] inline size_t partition_near(const Log& log, size_t n, size_t hint, Before before) {
  hint = std::min(hint, n);
  size_t lo = 0, hi = n;  // the answer is in [lo, hi]
  size_t step = 1;
  if (hint < n && before(log[hint])) {
    lo = hint + 1;
    while (lo < n) {
      const size_t probe = std::min(n - 1, lo + step - 1);
      if (!before(log[probe])) {
        hi = probe;
        break;
      }
      lo = probe + 1;
      step *= 2;
    }
  } else {
    hi = hint;
    while (hi > 0) {
      const size_t probe = hi > step ? hi - step : 0;
      if (before(log[probe])) {
        lo = probe + 1;
        break;
      }
      hi = probe;
      step *= 2;
    }
  }
  while (lo < hi) {  // (std::partition_point's search, on indices)
    const size_t mid = lo + (hi - lo) / 2;
    if (before(log[mid])) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
template <class T, class Before>
size_t partition_near(const std::vector<T>& log, size_t hint, Before before) {
  return partition_near(log.data(), log.size(), hint, before);
}

// partition_near on a PagedLog's View, for searches that mostly move a few
// entries (a rank's searches in the root causes: 1 to 15 entries in most,
// by the sync or context a wait moves on): a walk of up to kPagedWalk
// entries within the hint's page, entry after entry through one pointer, in
// either direction; a search that goes further gallops from where the walk
// stopped. The same place as partition_near's (the log's one partition
// point), in fewer reads where the move is short: the gallop and the binary
// search after it read about 2 log2(distance) + 2 entries, each through the
// page table; and at most kPagedWalk more where it is long (a page holds up
// to 4096 entries).
inline constexpr size_t kPagedWalk = 64;
template <class View, class Before>
[[gnu::always_inline]] inline size_t partition_near_paged(const View& log, size_t hint, Before before) {
  const size_t n = log.size();
  hint = std::min(hint, n);
  const size_t mask = log.page_entries() - 1;
  if (hint < n) {
    const auto* page = log.page_of(hint);
    if (before(page[hint & mask])) {
      const size_t end = std::min({n, (hint | mask) + 1, hint + kPagedWalk});
      for (size_t i = hint + 1; i < end; ++i)
        if (!before(page[i & mask])) return i;
      return end == n ? n : partition_near(log, n, end, before);
    }
  }
  if (hint == 0) return 0;
  // (log[hint], if any, lies past the point: the walk goes back.)
  const auto* page = log.page_of(hint - 1);
  const size_t start = std::max((hint - 1) & ~mask, hint > kPagedWalk ? hint - kPagedWalk : size_t{0});
  for (size_t i = hint; i > start; --i)
    if (before(page[(i - 1) & mask])) return i;
  return start == 0 ? 0 : partition_near(log, n, start, before);
}

struct NoteNothing {
  void operator()(size_t) const {}
};

// Calls emit(entry) on the n entries of `log` in a stable sort's order,
// [0, first_out) in order already. A log nearly in order by a key (`order`)
// comes in runs in order of a few hundred entries, each starting a little
// before the last one ended. It is sorted a block at a time into a pending
// buffer, and what no later entry can precede leaves it:
//   - the least key from each granule of kSortGranule entries on (suffix
//     minima, from order.least or a pass from the log's end);
//   - each block (whole granules, at least as many entries as are pending,
//     so each entry is moved a bounded number of times) is sorted stably
//     and merged after the pending entries (std::inplace_merge keeps the
//     earlier entry first where they tie), then the pending entries whose
//     key is below the least key still to come are emitted: every later
//     entry comes after them in a stable sort too.
// Invariants: pending is sorted, holds entries of smaller index than every
// entry not yet read, and none of it precedes an entry emitted. It holds
// about the log's disorder (the entries a late run reaches back over) plus
// a block, where setting aside every entry below the running maximum held
// over half the log (the waits of 10^8 synthetic events: 2.5 M to 4.4 M of
// a rank's 5 M), sorted at once. Linear in the log for a bounded disorder;
// a log in no order degrades to a merge sort of doubling blocks.
// With order.least known, read(bytes) hears of the bytes read as the blocks
// are (the resident budget: each byte is read once, so what goes is behind
// the reads).
template <class T, class Less, class Order, class Emit, class Read = NoteNothing>
void emit_sorted(const PagedLog<T>& log, size_t n, size_t first_out, Less less, const Order& order, Emit&& emit,
                 Read read = {}) {
  if (first_out >= n) {
    for (size_t i = 0; i < n; ++i) emit(log[i]);
    return;
  }
  if constexpr (std::is_same_v<Order, NoOrder>) {
    std::vector<T> v = log.to_vector();
    std::stable_sort(v.begin(), v.end(), less);
    for (const T& e : v) emit(e);
  } else {
    constexpr size_t kGranule = kSortGranule;
    const size_t granules = (n + kGranule - 1) / kGranule;
    const std::vector<double>* known = order.least && order.least->size() == granules ? order.least : nullptr;
    std::vector<double> least_key_from(granules);  // the least key of granules [g, granules)
    for (size_t g = granules; g-- > 0;) {
      double least;
      if (known) {
        least = (*known)[g];
      } else {
        size_t i = g * kGranule;
        least = order.key_of(log[i]);
        for (const size_t end = std::min(n, i + kGranule); ++i < end;) least = std::min(least, order.key_of(log[i]));
      }
      least_key_from[g] = g + 1 < granules ? std::min(least, least_key_from[g + 1]) : least;
    }
    std::vector<T> pending;
    size_t next = 0;  // the first entry not yet read
    while (next < n) {
      const size_t want = std::max(kGranule, pending.size());
      const size_t end = std::min(n, (next + want + kGranule - 1) / kGranule * kGranule);
      const size_t old = pending.size();
      for (size_t i = next; i < end; ++i) pending.push_back(log[i]);
      if (known) read((end - next) * sizeof(T));
      next = end;
      const auto block = pending.begin() + static_cast<ptrdiff_t>(old);
      if (!std::is_sorted(block, pending.end(), less)) std::stable_sort(block, pending.end(), less);
      if (old > 0 && less(*block, block[-1])) std::inplace_merge(pending.begin(), block, pending.end(), less);
      // (All of them at the end.)
      auto out = pending.end();
      if (next < n) {
        const double least = least_key_from[next / kGranule];
        out = std::partition_point(pending.begin(), pending.end(),
                                   [&order, least](const T& e) { return order.key_of(e) < least; });
      }
      for (auto it = pending.begin(); it != out; ++it) emit(*it);
      pending.erase(pending.begin(), out);
    }
  }
}

// Sorts a paged log stably (one rank's at a time: emit_sorted);
// `known_in_order`: it is in order (not read to find out). A log in the
// spill's file that is in order stays where it lies; one that is not is
// written sorted at the file's end (PagedLog::Copy; log_spill.h says why).
// A log in memory
// (a page at most, when there is a spill) is sorted into a vector and
// copied back.
// `order` and `read`: as emit_sorted's (read hears only of a spilled log).
template <class T, class Less, class Order, class Read = NoteNothing>
void sort_log(PagedLog<T>& log, Less less, const Order& order, bool known_in_order = false, Read read = {}) {
  const size_t n = log.size();
  size_t first_out = known_in_order ? n : 1;
  while (first_out < n && !less(log[first_out], log[first_out - 1])) ++first_out;
  if (log.spilled()) {
    if (first_out >= n) return;
    typename PagedLog<T>::Copy copy(log);
    emit_sorted(log, n, first_out, less, order, [&copy](const T& e) { copy.put(e); }, read);
    copy.finish();
    return;
  }
  if (first_out >= n) return;
  std::vector<T> sorted;
  sorted.reserve(n);
  emit_sorted(log, n, first_out, less, order, [&sorted](const T& e) { sorted.push_back(e); });
  for (size_t i = 0; i < n; ++i) log[i] = sorted[i];
}

}  // namespace prof::analysis::detail
