// What the reader's files share (not installed): the rank file's index and
// definitions (RankTrace::Impl), the chunk references cursors walk, the
// decoder's per-function table, and the small helpers for loads and warnings.
//
// Robustness rules (the input may be anything, a fuzzer included):
//   - every length read from the file is checked against the bytes that remain
//     before it is used (for a pointer or an allocation);
//   - every loop advances by at least 4 bytes (records) or 8 bytes (chunk walk);
//   - damage is counted in ReadStats and described in warnings, capped per kind
//     so a hostile file cannot produce millions of strings.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "prof/trace_reader.h"

// The files: reader_numbers.cpp (definition numbers), reader_file.cpp (the
// mapping, pread into chunk buffers), reader_chunk_index.cpp (the chunk walk,
// salvage, lazy CRC checks), reader_definitions.cpp (definition lines, time
// conversion, RankTrace's accessors), reader_cursor.h/.cpp (one stream's
// decoder), reader_merge.cpp (the k-way merge of a rank's streams) and
// reader_seek.cpp (chunk times, seek by time).
namespace prof::trace::reader {

using format::ChunkHeader;
using format::FileHeader;

// Warnings per category and trace (the count in ReadStats stays exact).
inline constexpr int kWarnCap = 20;
inline constexpr uint16_t kNoKind = 0xFFFF;
// Most Completion entries one record can hold.
inline constexpr size_t kCompletionMax = format::kMaxCompletionEntries;
// Larger events chunks are decoded from the mapping, not copied into a
// cursor's buffer (the shim writes at most PROF_BUFFER_MB, 1 MiB by default).
inline constexpr uint32_t kReadChunkMax = 16u << 20;
// A cursor decodes its first chunks in the mapping, unless it holds a buffer
// they fit in, and reads the chunks after them into a buffer: a short read (a
// window, a seek) maps the page cache's pages in, a fault per 16 pages,
// instead of populating a fresh buffer and copying into it (a 10 ms window
// reads 2-3 chunks a rank), and a long read pays for its buffer once.
inline constexpr unsigned kMappedChunks = 4;
// A cursor that lends its chunk buffer back between visits
// (MergedCursor::BetweenVisits::kLendChunkBuffers) reads chunks up to this
// size into it and reads the chunk again at its next visit: copying a small
// chunk (15 KB at 16384 ranks: 0.65x the wall) costs less than the system
// call that drops a mapped chunk's pages (a TLB shootdown of every thread)
// and the faults that map them again; the bound keeps a visit's copy small.
// Larger chunks stay mapped.
inline constexpr uint32_t kLentChunkMax = 64u << 10;
// A file up to this size is read whole at open, into the opening thread's
// scratch, and indexed there; it is mapped only once a cursor needs it. Its
// index (the chunk headers, the definitions, the first events chunk's CRC)
// covers most of such a file anyway, and through the mapping each file
// cost a mapping's faults, a pread per chunk header and a MADV_DONTNEED
// whose TLB shootdown interrupted the other threads (opening 4096 files of
// 55 KB: a third of the opening's CPU, docs/performance.md).
inline constexpr uint64_t kReadWholeAtOpen = 256u << 10;

inline uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// "FILE: offset N: what", the form of every warning and error.
inline std::string at_offset(const std::string& path, uint64_t offset, const std::string& what) {
  return path + ": offset " + std::to_string(offset) + ": " + what;
}

// ---- definition numbers (reader_numbers.cpp) -------------------------------
// Decimal, or hexadecimal with a 0x prefix, wherever a number is expected;
// parse_hex_u64 takes hexadecimal with or without the prefix.
bool parse_u64(std::string_view s, uint64_t* out);
bool parse_hex_u64(std::string_view s, uint64_t* out);
bool parse_i64(std::string_view s, int64_t* out);
bool parse_i32(std::string_view s, int32_t* out);
bool parse_u32(std::string_view s, uint32_t* out);
bool parse_double(std::string_view s, double* out);
bool parse_rank_list(std::string_view s, std::vector<int32_t>* out);

// ---- the file (reader_file.cpp) --------------------------------------------
// Files RankTrace::open opened (RankTrace::files_opened).
extern std::atomic<uint64_t> files_opened;
// Grows the process's descriptor table, before threads open `files` rank
// files, to hold the descriptors they will keep. Grown descriptor by
// descriptor, the table doubles several times, and each doubling while
// threads share the table waits for an RCU grace period (Linux's
// expand_fdtable): opening 4096 files from two threads waited for seven
// (docs/performance.md, "Many ranks").
void reserve_descriptors(size_t files);
// The file's bytes: mapped, or (mmap refused) read into `contents`. `size` is
// the size at open and stays so; `data` is null while the mapping is given
// back (RankTrace::Impl::pin_map maps it again).
struct Mapping {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  void* map = nullptr;
  int fd = -1;                    // kept open with the mapping, for pread of chunks
  std::vector<uint8_t> contents;  // fallback when mmap is not possible
  // `data` is the opening thread's copy of a small file (kReadWholeAtOpen),
  // valid until open() has indexed it; nothing is mapped yet.
  bool opening_copy = false;
  ~Mapping();
};

// File mappings the reader holds in this process, over every RankTrace, and
// the most it keeps (set_mapping_budget): Linux refuses a process more than
// vm.max_map_count mappings (65,530 by default), one a rank file at most.
extern std::atomic<int> mappings_held;
int mapping_budget_now();

// Memory a chunk is read into: anonymous pages populated in one call, not
// zeroed by the library and faulted one by one (under the VM's hypervisor a
// fault costs microseconds; analysing 10^6 events spent 15% of its time
// there). Falls back to operator new where mmap fails.
class ChunkBuffer {
 public:
  ChunkBuffer() = default;
  ChunkBuffer(ChunkBuffer&& o) noexcept { swap(o); }
  ChunkBuffer& operator=(ChunkBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  ~ChunkBuffer() { reset(); }

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // At least n bytes; the contents are not kept.
  void reserve(size_t n);

 private:
  void reset();
  void swap(ChunkBuffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(mapped_, o.mapped_);
  }
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

// ---- the chunk index (reader_chunk_index.cpp) ------------------------------
struct ChunkRef {
  uint64_t header_off = 0;   // file offset of the chunk header (for warnings)
  uint64_t payload_off = 0;  // file offset of the payload
  uint32_t len = 0;          // bytes to decode (used, or salvaged length)
  uint64_t end_off = 0;      // end of the chunk's reserved space, within the file
  bool sealed = false;
  uint64_t base_time = 0;
  uint32_t crc = 0;              // sealed: expected CRC of the `len` bytes
  uint32_t check = kNoCheck;     // sealed: index of its lazy CRC state
  uint32_t stream = 0;
  uint16_t sequence = 0;         // format 8: its number in the stream (ChunkHeader::sequence)
  bool home = false;             // format 5: its stream's home chunk, the newest
  // Data of its stream was lost right after its `len` bytes (the file ends in
  // it), or may have been lost right before it (a stretch of the file was
  // skipped): a reader that numbers calls across chunks cannot go past it.
  bool cut = false;
  bool lost_before = false;
  static constexpr uint32_t kNoCheck = UINT32_MAX;
};

struct StreamIndex {
  uint32_t id = 0;
  std::vector<ChunkRef> chunks;
};

// Walks the records of an unsealed/truncated events payload by their length
// words: stops at a zero first word or a record that does not fit.
// Returns the salvaged length; *records gets the record count.
uint32_t salvage_records(const uint8_t* p, uint64_t avail, uint64_t* records);

// ---- the decoder's function table (reader_definitions.cpp) -----------------
// What the decoder needs per function id: its kind, the least payload words a
// record needs for it by its flags byte (a row of a table built once per
// kind, so the check is one indexed load), and the flags that refer to the
// chunk's context for it (kSameComm, kPackedRequest where the kind has them).
struct FuncInfo {
  uint16_t kind = kNoKind;  // kNoKind: undefined
  uint8_t context_flags = 0;
  bool repeats = false;  // format::kind_repeats
  const uint8_t* need = nullptr;  // [256], by the record's flags (func_info, undefined_func_info)
};
FuncInfo func_info(FuncKind kind);
// An id no F line defines: kNoKind, and more words needed than a record holds.
FuncInfo undefined_func_info();

}  // namespace prof::trace::reader

namespace prof::trace {

// A file's function definitions once read, shared by every file of the
// process that defines the same ones (RankTrace::Impl::share_functions): the
// files of one run define the same functions, and libprof's define each of
// the 620 ids the shim wraps, 70 KB a rank when each keeps its own. A
// stand-in's, shared through StandInShare by its description's bytes (a
// hash of the definitions would cost each of 10^5 stand-ins its 620 names),
// carries no kinds (it decodes nothing).
struct FunctionTable {
  std::vector<FunctionDef> functions;
  std::vector<int32_t> function_index;  // id -> index into functions, -1
  std::vector<reader::FuncInfo> kinds;  // id -> kind and payload needs
};

struct RankTrace::Impl {
  using ChunkHeader = format::ChunkHeader;
  using ChunkRef = reader::ChunkRef;
  using ChunkBuffer = reader::ChunkBuffer;

  std::string path;
  // Mapped at open; given back when no cursor decodes in it and the process
  // holds more mappings than its budget, and mapped again when one needs it
  // (pin_map). Guarded by map_mu where it changes; a holder of a pin reads it
  // freely (it cannot change while pinned).
  mutable reader::Mapping map;
  mutable std::mutex map_mu;
  mutable int map_users = 0;  // pins: open while it indexes, cursors decoding in the mapping
  format::FileHeader header{};

  std::map<std::string, std::string> meta;
  std::map<std::string, std::string> environment;   // V lines
  std::map<std::string, ProfSetting> settings;      // P lines
  // While the definitions are read: the functions, each id's index into
  // them and its kind. Once read, they move into `function_table`, which the
  // accessors below read (a stand-in's comes from its description).
  std::vector<FunctionDef> functions;
  std::vector<int32_t> function_index;  // id -> index into functions, -1
  std::vector<reader::FuncInfo> kinds;  // id -> kind and payload needs
  std::shared_ptr<const FunctionTable> function_table;
  const std::vector<FunctionDef>& function_defs() const {
    return function_table ? function_table->functions : functions;
  }
  const std::vector<int32_t>& function_ids() const {
    return function_table ? function_table->function_index : function_index;
  }
  const std::vector<reader::FuncInfo>& function_kinds() const {
    return function_table ? function_table->kinds : kinds;
  }
  // Moves the definitions read into a table shared with the process's other
  // files that define the same (after finish_definitions).
  void share_functions();
  void release_own_functions();
  std::vector<CommDef> comms;
  struct CommKey {
    uint32_t handle;
    uint64_t time;
    uint32_t order;  // definition order, later wins on equal time
    uint32_t index;
  };
  std::vector<CommKey> comm_keys;  // sorted by (handle, time, order)
  std::vector<CallSiteDef> callsites;
  std::unordered_map<uint32_t, size_t> callsite_index;
  // A definitions (format 7): the CallSiteDef id of each record func field
  // (site index << kSiteShift | function id), 0 where none is defined.
  std::vector<uint32_t> call_site_ids;
  std::vector<LoadObject> load_objects;
  std::vector<ClockSyncDef> clock_syncs;
  std::string end_reason;
  // The Live chunk (format 4): its heartbeat and its slots in use, by stream id.
  uint64_t heartbeat = 0;
  std::vector<std::pair<uint32_t, format::LiveSlot>> live_slots;  // binding_site 0 when the stride lacks it
  // Format 5: the slots' non-zero home_copy words, by stream id (a home chunk
  // was being copied out when the process ended).
  std::vector<std::pair<uint32_t, uint64_t>> home_copies;
  // Format 8: the slots' non-zero chunk counts (LiveSlot::chunks), by stream id.
  std::vector<std::pair<uint32_t, uint32_t>> chunk_counts;
  // in_flight() and last_alive(), computed once (they need the chunk times).
  mutable std::once_flag live_once;
  mutable std::vector<InFlightCall> in_flight;
  mutable uint64_t last_alive = 0;
  void compute_live() const;
  // A call's site as its function's A definitions give it: its index and
  // CallSiteDef id (0 and 0: none), and the highest index the function has.
  struct SiteOfCall {
    uint8_t index = 0;
    uint32_t id = 0;
    uint32_t last_index = 0;
  };
  SiteOfCall site_of_call(uint16_t func, uint64_t address) const;
  // Defines the site of each live slot that no record defined (at open);
  // live_sites: whether the calls in flight have sites (as the shim records
  // them: format 7 on, PROF_CALLSITES not 0).
  void define_live_sites();
  bool live_sites = false;
  // The in-flight call of stream `stream_index`, if any.
  const InFlightCall* in_flight_of(size_t stream_index) const;

  double ns_per_tick = 1.0;
  uint64_t epoch = 0;   // M epoch_ticks: the origin of the ns conversions (see clock.h)
  uint64_t origin = 0;  // first event's enter (local time zero)
  bool have_init = false, have_final = false;
  double init_t = 0, init_off = 0, final_t = 0, final_off = 0;

  std::vector<reader::StreamIndex> streams;  // ordered by stream id
  size_t indexed_chunks(size_t s) const { return s < streams.size() ? streams[s].chunks.size() : 0; }
  // A stand-in (reader_stand_in.cpp): no file, no streams indexed; the file's
  // chunks per stream and its size as its holder counted them.
  bool stand_in = false;
  std::vector<uint32_t> stand_in_chunks;
  uint64_t stand_in_file_bytes = 0;
  // Lazy CRC state per sealed events chunk: 0 unchecked, 1 good, 2 bad.
  std::unique_ptr<std::atomic<uint8_t>[]> crc_state;
  uint32_t crc_checks = 0;
  mutable int crc_warned = 0;  // lazy CRC warnings (under mu)
  std::map<uint32_t, reader::StreamIndex> building;  // during index()
  uint64_t event_bytes = 0;

  mutable std::mutex mu;  // guards stats, warnings, reported after open
  mutable ReadStats stats;
  mutable std::vector<std::string> warnings;
  mutable std::vector<bool> reported;  // per stream: decode damage accounted
  std::map<std::string, int> warn_counts;

  // Open-time warnings, capped per category.
  void warn(const char* category, std::string msg) {
    int& n = warn_counts[category];
    if (++n <= reader::kWarnCap) warnings.push_back(std::move(msg));
  }
  void finish_warnings() {
    for (auto& [category, n] : warn_counts)
      if (n > reader::kWarnCap)
        warnings.push_back(path + ": " + std::to_string(n - reader::kWarnCap) + " more '" +
                           category + "' warnings not shown");
  }

  // reader_file.cpp
  // Opens the file, pinned (open() unpins it once indexed): mapped, or
  // read whole where it is small (Mapping::opening_copy).
  bool map_file(std::string* error);
  // The mapping's start, mapped again if it was given back (reopened by its
  // path; a file that cannot be, or is shorter than it was, reads as zeros
  // past what remains: its chunks fail their checks); one pin more.
  const uint8_t* pin_map() const;
  // One pin less; with none left and the process over its budget, the
  // mapping is given back (an opening copy always is).
  void unpin_map() const;
  // A cursor leaves chunk c, the last of its stream: its pin goes, and where
  // it was the only one the mapping goes too (mapped again by a later
  // pin_map), else c's pages and those it shares with its neighbours.
  void leave_stream_end(const ChunkRef& c) const;
  // n bytes at file offset `off` (within the file) into `to`.
  void read_at(uint64_t off, void* to, size_t n) const;
  // The payload of events chunk c: read into `buf` (grown as needed) when the
  // file can be read so, else (or if the read fails) in the mapping; also in
  // the mapping when `map_unless_fits` and `buf` is smaller than it
  // (kMappedChunks). Sets *copied to whether it is in `buf`; if not, the
  // mapping is pinned (the caller unpins it when it leaves the chunk).
  // `open_to_read`: a file whose descriptor is not kept (past the budget)
  // is opened for the read and closed again, not mapped.
  const uint8_t* chunk_payload(const ChunkRef& c, ChunkBuffer& buf, bool map_unless_fits, bool* copied,
                               bool open_to_read = false) const;
  // Buffers of cursors that ended, for the next cursor (their pages are
  // populated already).
  mutable std::mutex pool_mu;
  mutable std::vector<ChunkBuffer> pool;
  ChunkBuffer take_buffer() const;
  // The calling thread's spare chunk buffers, shared by its cursors that
  // lend theirs back between visits (a worker visits one rank at a time).
  static ChunkBuffer take_thread_buffer();
  static void give_thread_buffer(ChunkBuffer&& b);
  void give_buffer(ChunkBuffer&& b) const;
  // Drops the pages wholly inside a chunk from this process (the file and the
  // page cache keep them; a later read faults them back in). `with_edges`:
  // also the pages it shares with its neighbours (a cursor set aside between
  // uses; leaving a chunk keeps them, the next chunk starts in one).
  void release(const ChunkRef& c, bool with_edges = false) const;

  // reader_chunk_index.cpp
  void index();
  void events_chunk(const ChunkHeader& h, uint64_t off, uint64_t avail, uint64_t* resume);
  void definitions_chunk(const ChunkHeader& h, uint64_t off, uint64_t avail, uint64_t* resume);
  void live_chunk(const ChunkHeader& h, uint64_t off, uint64_t avail);
  void order_home_chunks();
  // Format 8: counts and describes the chunks missing from each stream (a
  // jump in the sequence numbers, fewer chunks than its Live slot counts),
  // marking the chunk after a jump lost_before and a stream's last chunk cut.
  void check_sequences();
  // Drops the events chunks with nothing to decode, handing their marks of
  // lost data to their neighbours.
  void drop_empty_chunks();
  // Marks, in each stream, the chunk after a stretch of the file that was
  // skipped (a bad header, a cut chunk of another kind): lost_before.
  void mark_losses();
  std::vector<uint64_t> skipped_at;  // file offsets where a stretch was skipped
  uint64_t resync(uint64_t from) const;
  uint64_t skip_zero_words(uint64_t off) const;
  // Whether a chunk's records may be decoded: checks a sealed chunk's CRC the
  // first time any cursor asks, counting and describing a mismatch once.
  // `data` holds the chunk's c.len payload bytes.
  bool verify(const ChunkRef& c, const uint8_t* data) const;

  // reader_seek.cpp: the times of events chunks, read once each when first
  // asked for (RankTrace::chunks, seeks).
  struct ChunkTimes {
    bool known = false;
    bool damaged = false;
    bool has_snapshot = false;
    uint64_t events = 0, first_enter = 0, last_enter = 0, last_leave = 0;
  };
  mutable std::mutex times_mu;
  mutable std::vector<std::vector<ChunkTimes>> times;  // per stream, per chunk
  ChunkTimes chunk_times(size_t stream_index, size_t chunk_index) const;

  // reader_definitions.cpp
  void parse_definitions(std::string_view text, uint64_t off, bool complete_lines_only);
  void parse_line(std::string_view line, uint64_t off);
  void finish_definitions();
  const CommDef* comm_at(uint32_t handle, uint64_t t) const;
  double offset_ns(uint64_t t) const;
};

}  // namespace prof::trace
