// The pipeline of Fig. 2 of Kurnosov and Tokmasheva's NUMA MPI_Bcast paper
// (docs/references.md), over the segment of segment.h.
//
// Every process of a node numbers the uses of its communicator's queue the same
// way (the message size is the same everywhere), and so also knows which slots
// (or which inline notice) each use takes and which earlier use last held them:
// no agreement is needed per call. A message of at most kInlineBytes is one use
// of the next inline notice: the data travels in the notice's cache line. A
// larger one is a series of uses of at most s/q consecutive slots of the
// circular queue each; the root copies fragment after fragment into its own
// slots and stamps its children's notices with 1 + the use number (release);
// a process waits for its stamp (acquire), passes it on to its children and
// copies the fragment out of the root's slot. At the end of every use each
// process publishes `finished` = 1 + that use. Before the root reuses a slot or
// notice, every other process must have finished the use that last held it; the
// root remembers the least `finished` it has seen, so it reads the others'
// words only when that is not enough (once per ~s slots, or ~kInlineEntries
// small messages, when nobody lags). So a slot or notice is rewritten only after
// every reader of its previous contents is done, a reader copies only what the
// root finished writing, and a process waits only on words that one other
// process writes. No locks, no read-modify-write.
#include "prof/bcast/shm.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "prof/bcast/segment.h"
#include "prof/bcast/tree.h"
#include "prof/polite_wait.h"

namespace prof::bcast {

namespace {

Settings current = default_settings();
std::atomic<FallbackFn> fallback_hook{nullptr};
std::atomic<uint64_t> fallbacks{0};

// Spins briefly (the writer is usually a few hundred nanoseconds away), then
// gives the core away on every check, so that more processes than cores (and
// MPICH's own busy polling) still make progress. It never sleeps: the wait is
// inside the application's MPI_Bcast, and every check ends it as soon as the
// writer is there. While it yields it also moves MPI's own messages now and
// then: MPICH moves them only inside MPI calls, and the writer may be held
// by one that needs this process (an MPI_Ssend to it whose receive it posted
// before the broadcast, a nonblocking collective begun before it), as
// MPICH's own MPI_Bcast would move them. An Iprobe on the node's own
// communicator, which carries no message, moves every pending one and
// matches none.
template <class Ready>
void wait_until(Ready ready, MPI_Comm quiet_comm) {
  constexpr PoliteWait kFlagWait{256, std::chrono::nanoseconds::max(), {}, {}};
  constexpr unsigned kYieldsPerProgress = 8;
  unsigned yields = 0;
  wait_politely(ready, kFlagWait, [&] {
    if (++yields % kYieldsPerProgress != 0) return;
    int flag = 0;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, quiet_comm, &flag, MPI_STATUS_IGNORE);
  });
}

// One communicator's broadcast state, attached to it as an attribute (freed
// with it). node_of / local_of map a communicator rank to its node (its
// leader's rank among the leaders) and its rank inside the node.
struct CommState {
  bool native = true;
  int comm_size = 1, comm_rank = 0;
  MPI_Comm node_comm = MPI_COMM_NULL;
  MPI_Comm leader_comm = MPI_COMM_NULL;  // only for communicators spanning nodes, on leaders
  int node_rank = 0, node_size = 1, my_node = 0;
  std::vector<int> node_of, local_of;
  Settings settings;
  std::unique_ptr<Segment> segment;
  NotifyTrees trees;
  uint64_t uses = 0;                     // uses so far of this node's queue
  uint64_t next_slot = 0, next_inline = 0;
  std::vector<uint64_t> slot_held_by;    // per slot: 1 + the use that last held it (0: none)
  uint64_t inline_held_by[kInlineEntries] = {};
  uint64_t least_finished = 0;           // a lower bound of the others' `finished`
  std::vector<unsigned char> packed;     // one chunk of a non-contiguous message
  std::vector<unsigned char> element;    // one element of it, when it straddles chunks

  ~CommState() {
    if (leader_comm != MPI_COMM_NULL) PMPI_Comm_free(&leader_comm);
    if (node_comm != MPI_COMM_NULL) PMPI_Comm_free(&node_comm);
  }
};

// The communicator of this thread's last broadcast and its state, valid while
// no state has been freed since (a freed communicator's handle can come back
// for a new one): saves MPI's attribute lookup on every call.
std::atomic<uint64_t> states_freed{0};
struct LastState {
  MPI_Comm comm = MPI_COMM_NULL;
  CommState* state = nullptr;
  uint64_t freed = 0;
};
// initial-exec: the shim is loaded at start-up (LD_PRELOAD), as runtime.cpp's tls_state.
thread_local LastState last_state __attribute__((tls_model("initial-exec")));

int delete_state(MPI_Comm, int, void* value, void*) {
  states_freed.fetch_add(1, std::memory_order_release);
  delete static_cast<CommState*>(value);
  return MPI_SUCCESS;
}

int state_keyval() {
  static const int keyval = [] {
    int k = MPI_KEYVAL_INVALID;
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &k, nullptr);
    return k;
  }();
  return keyval;
}

// Collective over comm (its first broadcast).
CommState* make_state(MPI_Comm comm) {
  auto st = std::make_unique<CommState>();
  st->settings = current;
  int inter = 0, size = 1, rank = 0;
  PMPI_Comm_test_inter(comm, &inter);
  PMPI_Comm_size(comm, &size);
  if (inter || size == 1) return st.release();
  PMPI_Comm_rank(comm, &rank);
  st->comm_size = size;
  st->comm_rank = rank;

  if (st->settings.test_nodes > 0) {
    int world_rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_split(comm, world_rank % st->settings.test_nodes, rank, &st->node_comm);
  } else {
    PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &st->node_comm);
  }
  PMPI_Comm_rank(st->node_comm, &st->node_rank);
  PMPI_Comm_size(st->node_comm, &st->node_size);
  if (st->node_size < size) {
    PMPI_Comm_split(comm, st->node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &st->leader_comm);
    if (st->leader_comm != MPI_COMM_NULL) PMPI_Comm_rank(st->leader_comm, &st->my_node);
    PMPI_Bcast(&st->my_node, 1, MPI_INT, 0, st->node_comm);
  }
  const int mine[2] = {st->my_node, st->node_rank};
  std::vector<int> all(2 * std::size_t(size));
  PMPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm);
  st->node_of.resize(size);
  st->local_of.resize(size);
  for (int i = 0; i < size; ++i) {
    st->node_of[i] = all[2 * i];
    st->local_of[i] = all[2 * i + 1];
  }

  std::string why;
  bool ok = true;
  if (st->node_size > 1) {
    st->segment = std::make_unique<Segment>();
    ok = st->segment->create(st->node_comm, st->settings, &why);
    st->trees = NotifyTrees(st->settings.tree, st->node_size, st->node_rank);
    st->slot_held_by.assign(std::size_t(st->settings.slots), 0);
  }
  // Every node must have its segment, or the whole communicator uses PMPI.
  int verdict[2] = {ok ? 1 : 0, why.empty() ? INT_MAX : rank};
  PMPI_Allreduce(MPI_IN_PLACE, verdict, 2, MPI_INT, MPI_MIN, comm);
  if (!verdict[0]) {
    static std::atomic<bool> told{false};  // one line per process, however many communicators
    if (verdict[1] == rank && !told.exchange(true))
      log_line("warning: shared-memory broadcast unavailable on a communicator of " + std::to_string(size) +
               " processes (" + why + "); it uses MPI's own MPI_Bcast");
    st->segment.reset();
    const uint64_t seen = fallbacks.fetch_add(1) + 1;
    if (FallbackFn fn = fallback_hook.load()) fn(seen);
    return st.release();
  }
  st->native = false;
  if (st->node_rank == 0 && st->segment)
    log_info("shared-memory broadcast ready: " + std::to_string(st->node_size) + " processes on this node (" +
             std::to_string(size) + " in the communicator), segment of " + std::to_string(st->segment->bytes()) +
             " bytes, f " + std::to_string(st->settings.fragment) + ", s " + std::to_string(st->settings.slots) +
             ", q " + std::to_string(st->settings.sets) + ", tree " + tree_name(st->settings.tree));
  return st.release();
}

// The communicator's state, made at its first broadcast (collective), or
// null when that first broadcast names a root MPICH would refuse: then only
// the processes that call it with that root may be there, and MPICH's
// broadcast refuses it without communicating.
CommState* state_for(MPI_Comm comm, int root) {
  if (last_state.comm == comm && last_state.freed == states_freed.load(std::memory_order_acquire))
    return last_state.state;
  const uint64_t freed = states_freed.load(std::memory_order_acquire);
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, state_keyval(), &value, &found);
  CommState* st = static_cast<CommState*>(value);
  if (!found) {
    int inter = 0, size = 0;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_size(comm, &size);
    if (!inter && (root < 0 || root >= size)) return nullptr;
    st = make_state(comm);
    PMPI_Comm_set_attr(comm, state_keyval(), st);
  }
  last_state = {comm, st, freed};
  return st;
}

// The size of a predefined type whose elements abut, from a table of the
// common ones (no MPI call); 0 for any other type.
MPI_Count known_contiguous_size(MPI_Datatype type) {
  static const struct {
    MPI_Datatype type;
    MPI_Count size;
  } kKnown[] = {
      {MPI_BYTE, 1},           {MPI_CHAR, 1},           {MPI_UNSIGNED_CHAR, 1},
      {MPI_SIGNED_CHAR, 1},    {MPI_INT8_T, 1},         {MPI_UINT8_T, 1},
      {MPI_C_BOOL, sizeof(bool)},                       {MPI_SHORT, sizeof(short)},
      {MPI_UNSIGNED_SHORT, sizeof(short)},              {MPI_INT16_T, 2},
      {MPI_UINT16_T, 2},       {MPI_INT, sizeof(int)},  {MPI_UNSIGNED, sizeof(unsigned)},
      {MPI_INT32_T, 4},        {MPI_UINT32_T, 4},       {MPI_FLOAT, sizeof(float)},
      {MPI_LONG, sizeof(long)},                         {MPI_UNSIGNED_LONG, sizeof(long)},
      {MPI_LONG_LONG, sizeof(long long)},               {MPI_UNSIGNED_LONG_LONG, sizeof(long long)},
      {MPI_INT64_T, 8},        {MPI_UINT64_T, 8},       {MPI_DOUBLE, sizeof(double)},
      {MPI_C_DOUBLE_COMPLEX, 2 * sizeof(double)},       {MPI_AINT, sizeof(MPI_Aint)},
      {MPI_OFFSET, sizeof(MPI_Offset)},                 {MPI_COUNT, sizeof(MPI_Count)},
  };
  for (const auto& known : kKnown)
    if (known.type == type) return known.size;
  return 0;
}

// Other predefined types whose elements abut (not MPI_DOUBLE_INT and the like)
// are copied in place too; everything else is packed chunk by chunk.
bool is_contiguous(MPI_Datatype type, MPI_Count type_size) {
  MPI_Count num_integers = 0, num_addresses = 0, num_large = 0, num_types = 0;
  int combiner = 0;
  if (PMPI_Type_get_envelope_c(type, &num_integers, &num_addresses, &num_large, &num_types, &combiner) !=
          MPI_SUCCESS ||
      combiner != MPI_COMBINER_NAMED)
    return false;
  MPI_Count lb = 0, extent = 0;
  PMPI_Type_get_extent_c(type, &lb, &extent);
  return lb == 0 && extent == type_size;
}

// The packed form of `count` elements of a non-contiguous datatype, produced
// (root) or consumed (the others) one chunk at a time, so a broadcast of any
// size holds one chunk and at most one element besides the user's buffer.
// Element i lies at buffer + i * extent; whole elements go straight between the
// chunk and the buffer with MPI_Pack/MPI_Unpack; an element that straddles two
// chunks goes through `element`. Root and readers may use different datatypes
// of the same signature: each side cuts its own elements, the packed bytes
// (MPICH's homogeneous packing is the raw data) are the same. MPICH's
// MPI_Pack and MPI_Unpack refuse a null buffer, which MPI_BOTTOM is (with a
// datatype of absolute addresses): elements from there travel as a message
// from this process to itself on the node's own communicator, which carries
// nothing else, sent as the datatype and received as MPI_PACKED (or back).
class ElementStream {
 public:
  ElementStream(unsigned char* buffer, MPI_Count count, MPI_Datatype type, MPI_Count type_size, MPI_Comm comm,
                MPI_Comm quiet_comm, int quiet_rank, std::vector<unsigned char>* element)
      : buffer_(buffer), count_(count), type_(type), size_(std::size_t(type_size)), comm_(comm),
        quiet_comm_(quiet_comm), quiet_rank_(quiet_rank), element_(element) {
    MPI_Count lb = 0;
    PMPI_Type_get_extent_c(type, &lb, &extent_);
  }

  // The root: the next `len` packed bytes into `out`.
  void pack(unsigned char* out, std::size_t len) {
    std::size_t filled = 0;
    while (filled < len) {
      if (held_ < size_ && held_ > 0) {  // the rest of a straddling element
        const std::size_t n = std::min(size_ - held_, len - filled);
        std::memcpy(out + filled, element_->data() + held_, n);
        held_ += n, filled += n;
        if (held_ == size_) held_ = 0;
        continue;
      }
      const MPI_Count whole = std::min<MPI_Count>(MPI_Count((len - filled) / size_), count_ - next_);
      if (whole > 0) {
        pack_elements(whole, out + filled);
        next_ += whole, filled += std::size_t(whole) * size_;
      } else {  // this element straddles the chunk's end
        element_->resize(size_);
        pack_elements(1, element_->data());
        ++next_;
        const std::size_t n = len - filled;
        std::memcpy(out + filled, element_->data(), n);
        held_ = n, filled += n;
      }
    }
  }

  // The others: `len` packed bytes from `in` into the buffer.
  void unpack(const unsigned char* in, std::size_t len) {
    std::size_t used = 0;
    while (used < len) {
      if (held_ > 0) {  // completing a straddling element
        const std::size_t n = std::min(size_ - held_, len - used);
        std::memcpy(element_->data() + held_, in + used, n);
        held_ += n, used += n;
        if (held_ == size_) {
          unpack_elements(element_->data(), 1);
          ++next_, held_ = 0;
        }
        continue;
      }
      const MPI_Count whole = std::min<MPI_Count>(MPI_Count((len - used) / size_), count_ - next_);
      if (whole > 0) {
        unpack_elements(in + used, whole);
        next_ += whole, used += std::size_t(whole) * size_;
      } else {
        element_->resize(size_);
        const std::size_t n = len - used;
        std::memcpy(element_->data(), in + used, n);
        held_ = n, used += n;
      }
    }
  }

 private:
  static constexpr int kTag = 0;

  // (In integers: MPI_BOTTOM's first element lies at address 0.)
  unsigned char* at(MPI_Count i) const {
    return reinterpret_cast<unsigned char*>(reinterpret_cast<uintptr_t>(buffer_) + uintptr_t(i * extent_));
  }

  // `n` elements from the next one into `out`, packed.
  void pack_elements(MPI_Count n, unsigned char* out) const {
    const MPI_Count bytes = n * MPI_Count(size_);
    if (unsigned char* from = at(next_)) {
      MPI_Count position = 0;
      PMPI_Pack_c(from, n, type_, out, bytes, &position, comm_);
    } else {
      PMPI_Sendrecv_c(MPI_BOTTOM, n, type_, quiet_rank_, kTag, out, bytes, MPI_PACKED, quiet_rank_, kTag,
                      quiet_comm_, MPI_STATUS_IGNORE);
    }
  }

  // `n` packed elements from `in` into the buffer from the next one on.
  void unpack_elements(const unsigned char* in, MPI_Count n) const {
    const MPI_Count bytes = n * MPI_Count(size_);
    if (unsigned char* to = at(next_)) {
      MPI_Count position = 0;
      PMPI_Unpack_c(in, bytes, &position, to, n, type_, comm_);
    } else {
      PMPI_Sendrecv_c(in, bytes, MPI_PACKED, quiet_rank_, kTag, MPI_BOTTOM, n, type_, quiet_rank_, kTag,
                      quiet_comm_, MPI_STATUS_IGNORE);
    }
  }

  unsigned char* buffer_;
  MPI_Count count_;
  MPI_Datatype type_;
  std::size_t size_;
  MPI_Comm comm_;
  MPI_Comm quiet_comm_;
  int quiet_rank_;
  std::vector<unsigned char>* element_;
  MPI_Count extent_ = 0;
  MPI_Count next_ = 0;     // the next element not yet (un)packed whole
  std::size_t held_ = 0;   // bytes of a straddling element already moved
};

// Whether MPICH's MPI_Bcast takes these arguments (a datatype committed, a
// null buffer only with a datatype of absolute addresses, ...): asked of its
// MPI_Bcast on a communicator of this process alone, which checks them as on
// any other and moves nothing. One it refuses goes to MPICH's MPI_Bcast on
// the application's communicator, which refuses it there, through that
// communicator's error handler.
bool mpich_accepts(void* buffer, MPI_Count count, MPI_Datatype datatype) {
  static const MPI_Comm alone = [] {
    MPI_Comm comm = MPI_COMM_NULL;
    PMPI_Comm_dup(MPI_COMM_SELF, &comm);
    PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    return comm;
  }();
  return PMPI_Bcast_c(buffer, count, datatype, 0, alone) == MPI_SUCCESS;
}

// At the root, before it rewrites a slot or notice last held by use
// `held_by` - 1: every other process of the node has finished that use.
void wait_released(CommState* st, uint64_t held_by) {
  if (st->least_finished >= held_by) return;
  uint64_t least = UINT64_MAX;
  for (int i = 0; i < st->node_size; ++i) {
    if (i == st->node_rank) continue;
    const std::atomic<uint64_t>& finished = st->segment->finished(i);
    uint64_t seen = 0;
    wait_until(
        [&] {
          seen = finished.load(std::memory_order_acquire);
          return seen >= held_by;
        },
        st->node_comm);
    least = std::min(least, seen);
  }
  st->least_finished = least;
}

// A message of at most kInlineBytes: one use of the next inline notice.
void inline_bcast(CommState* st, unsigned char* data, std::size_t total, int root) {
  const Segment& seg = *st->segment;
  const int me = st->node_rank;
  const uint64_t use = st->uses++;
  const int entry = int(st->next_inline++ % kInlineEntries);
  const uint64_t held_by = st->inline_held_by[entry];
  st->inline_held_by[entry] = use + 1;
  const unsigned char* from = data;
  if (me == root) {
    wait_released(st, held_by);
  } else {
    const Notice& mine = seg.inline_notice(me, entry);
    wait_until([&] { return mine.tag.load(std::memory_order_acquire) == use + 1; }, st->node_comm);
    from = mine.data;
  }
  for (int c : st->trees.children(root)) {
    Notice& theirs = seg.inline_notice(c, entry);
    std::memcpy(theirs.data, from, total);
    theirs.tag.store(use + 1, std::memory_order_release);
  }
  if (me != root) std::memcpy(data, from, total);
  seg.finished(me).store(use + 1, std::memory_order_release);
}

// The broadcast among the processes of one node, `root` a node rank.
void node_bcast(CommState* st, unsigned char* data, std::size_t total, int root) {
  if (st->node_size < 2 || total == 0) return;
  if (total <= kInlineBytes) return inline_bcast(st, data, total, root);
  const Segment& seg = *st->segment;
  const Settings& cfg = st->settings;
  const int me = st->node_rank;
  const int per_use = cfg.slots / cfg.sets;
  const std::vector<int>& children = st->trees.children(root);
  const std::size_t fragment = cfg.fragment;
  std::size_t done = 0;
  while (done < total) {
    const uint64_t use = st->uses++;
    for (int j = 0; j < per_use && done < total; ++j) {
      const int slot = int(st->next_slot++ % uint64_t(cfg.slots));
      const uint64_t held_by = st->slot_held_by[slot];
      st->slot_held_by[slot] = use + 1;
      const std::size_t len = std::min(fragment, total - done);
      unsigned char* shared = seg.buffer(root, slot);
      if (me == root) {
        wait_released(st, held_by);
        std::memcpy(shared, data + done, len);
        for (int c : children) seg.slot_notice(c, slot).tag.store(use + 1, std::memory_order_release);
      } else {
        const Notice& mine = seg.slot_notice(me, slot);
        wait_until([&] { return mine.tag.load(std::memory_order_acquire) == use + 1; }, st->node_comm);
        for (int c : children) seg.slot_notice(c, slot).tag.store(use + 1, std::memory_order_release);
        std::memcpy(data + done, shared, len);
      }
      done += len;
    }
    seg.finished(me).store(use + 1, std::memory_order_release);
  }
}

}  // namespace

void configure(const Settings& settings) { current = settings; }
void set_fallback_hook(FallbackFn fn) { fallback_hook.store(fn); }
const Settings& settings() { return current; }

bool uses_native(MPI_Comm comm) {
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, state_keyval(), &value, &found);
  return found && static_cast<CommState*>(value)->native;
}

int shm_bcast(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  // What MPI would reject, it rejects itself (its message, its error handler).
  if (comm == MPI_COMM_NULL || count < 0 || datatype == MPI_DATATYPE_NULL) return kUseNative;
  MPI_Count type_size = known_contiguous_size(datatype);
  const bool contiguous = type_size != 0;
  if (contiguous && buffer == nullptr && count > 0) return kUseNative;
  if (!contiguous &&
      (PMPI_Type_size_c(datatype, &type_size) != MPI_SUCCESS || !mpich_accepts(buffer, count, datatype)))
    return kUseNative;

  // Intercommunicators and size-1 communicators get a native state at once (no
  // collective).
  CommState* st = state_for(comm, root);
  if (!st || st->native || root < 0 || root >= st->comm_size) return kUseNative;
  const std::size_t total = std::size_t(count) * std::size_t(type_size);
  if (total == 0) return MPI_SUCCESS;
  const int rank = st->comm_rank;

  // Every process cuts the message into the same chunks of at most one queue
  // (a whole number of uses, so chunking never changes which slots a use takes).
  const std::size_t chunk = std::min(total, std::size_t(st->settings.slots) * st->settings.fragment);
  const bool packed = !contiguous && !is_contiguous(datatype, type_size);
  std::optional<ElementStream> stream;
  if (packed) {
    st->packed.resize(chunk);
    stream.emplace(static_cast<unsigned char*>(buffer), count, datatype, type_size, comm, st->node_comm, st->node_rank,
                   &st->element);
  }
  const int root_node = st->node_of[root];
  for (std::size_t offset = 0; offset < total; offset += chunk) {
    const std::size_t len = std::min(chunk, total - offset);
    unsigned char* data = packed ? st->packed.data() : static_cast<unsigned char*>(buffer) + offset;
    if (packed && rank == root) stream->pack(data, len);
    if (st->my_node == root_node) node_bcast(st, data, len, st->local_of[root]);
    if (st->leader_comm != MPI_COMM_NULL)
      PMPI_Bcast_c(data, MPI_Count(len), MPI_BYTE, root_node, st->leader_comm);
    if (st->my_node != root_node) node_bcast(st, data, len, 0);
    if (packed && rank != root) stream->unpack(data, len);
  }
  return MPI_SUCCESS;
}

}  // namespace prof::bcast
