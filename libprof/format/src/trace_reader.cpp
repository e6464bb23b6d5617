// RankTrace: open (map + index + definitions) and the event cursors.
//
// Indexing walks the chunk headers once: Definitions chunks are parsed (and
// their CRC checked), Events chunks are remembered per stream as [payload
// offset, decodable length, base_time] or salvaged (unsealed / truncated:
// records are walked by their length words up to the first zero word). A
// sealed events chunk's CRC is checked lazily, by the first cursor to enter it
// (open then reads little more than the chunk headers; the events are read
// once). A cursor reads each chunk with pread() into a buffer of its own that
// it reuses (mapped pages of a file in the page cache cost a fault each, and
// under a hypervisor that was 3x the CRC and copy together), checks the CRC
// there, then decodes one record at a time, with no allocation and no lookups
// beyond a flat function-kind table. Chunks above kReadChunkMax (and files
// that are not regular) are decoded from the mapping instead, whose pages are
// dropped from the process when the cursor leaves them. Either way the memory
// held is one chunk per cursor (flat RSS).
//
// Robustness rules (the input may be anything, a fuzzer included):
//   - every length read from the file is checked against the bytes that remain
//     before it is used (for a pointer or an allocation);
//   - every loop advances by at least 4 bytes (records) or 8 bytes (chunk walk);
//   - damage is counted in ReadStats and described in warnings, capped per kind
//     so a hostile file cannot produce millions of strings.
//
// Semantics beyond trace_reader.h:
//   - kContinuation records (a Completion/RequestOp call with more entries than
//     one record holds, split by the writer) are merged into the Event of the
//     record before them, so one MPI call is one Event; a continuation without
//     its first part (lost to damage) is delivered alone, flagged kContinuation.
//   - a sealed chunk at the end of the file missing only its alignment padding
//     (< 8 bytes after `used`) is complete, not truncated: the shim appends
//     definition text without its padding, and a killed process leaves that.
//   - MPI_COMM_WORLD / MPI_COMM_SELF, when not defined, get the global ids the
//     shim gives them (1, and rank << 32 | 2).
//   - crc_mismatches of events chunks (and their warnings) are counted when a
//     cursor first enters the chunk, once per chunk whichever cursor or thread
//     gets there; event_bytes() includes chunks whose CRC has not been checked.
//   - stats().events counts every event any cursor decoded; bad_records,
//     backwards_timestamps and their warnings are counted once per stream, by
//     the first cursor to reach the stream's end (a second pass adds nothing).
//   - Cursors of one RankTrace may run on different threads; a cursor must not
//     outlive its RankTrace.
//
// Definition numbers: decimal, or hexadecimal with a 0x prefix, wherever a
// number is expected; the S address and the L bias are hexadecimal with or
// without the 0x prefix (TraceWriter writes 0x-prefixed hex for handles,
// addresses and biases, decimal for everything else).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "prof/trace_reader.h"

namespace prof::trace {

namespace {

using format::ChunkHeader;
using format::FileHeader;

constexpr uint32_t kCommWorld = 0x44000000u;
constexpr uint32_t kCommSelf = 0x44000001u;
// Implicit MPI_COMM_WORLD ranks are materialized only up to this size.
constexpr int32_t kMaxImplicitWorld = 1 << 22;
// Warnings per category and trace (the count in ReadStats stays exact).
constexpr int kWarnCap = 20;
constexpr uint16_t kNoKind = 0xFFFF;
// Most Completion entries one record can hold.
constexpr size_t kCompletionMax = format::kMaxCompletionEntries;

inline uint32_t ld32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t ld64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

std::string fmt_off(const std::string& path, uint64_t off, const std::string& what) {
  return path + ": offset " + std::to_string(off) + ": " + what;
}

// ---- number parsing for definition lines ----------------------------------
bool parse_u64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && p == s.data() + s.size();
}
bool parse_hex_u64(std::string_view s, uint64_t* out) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return ec == std::errc() && p == s.data() + s.size();
}
bool parse_i64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  bool neg = false;
  if (s[0] == '-') {
    neg = true;
    s.remove_prefix(1);
  }
  uint64_t u;
  if (!parse_u64(s, &u)) return false;
  if (neg) {
    if (u > uint64_t{1} << 63) return false;
    *out = static_cast<int64_t>(0 - u);
  } else {
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(u);
  }
  return true;
}
bool parse_i32(std::string_view s, int32_t* out) {
  int64_t v;
  if (!parse_i64(s, &v) || v < INT32_MIN || v > INT32_MAX) return false;
  *out = static_cast<int32_t>(v);
  return true;
}
bool parse_u32(std::string_view s, uint32_t* out) {
  uint64_t v;
  if (!parse_u64(s, &v) || v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}
bool parse_double(std::string_view s, double* out) {
  if (s.empty()) return false;
  if (s[0] == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}
bool parse_rank_list(std::string_view s, std::vector<int32_t>* out) {
  out->clear();
  if (s.empty()) return true;
  size_t start = 0;
  for (;;) {
    size_t comma = s.find(',', start);
    std::string_view item = s.substr(start, comma == std::string_view::npos ? s.npos : comma - start);
    int32_t r;
    if (!parse_i32(item, &r)) return false;
    out->push_back(r);
    if (comma == std::string_view::npos) return true;
    start = comma + 1;
  }
}

// ---- the mapped file -------------------------------------------------------
struct Mapping {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  void* map = nullptr;
  int fd = -1;               // kept open with the mapping, for pread of chunks
  std::vector<uint8_t> buf;  // fallback when mmap is not possible
  ~Mapping() {
    if (map) ::munmap(map, size);
    if (fd >= 0) ::close(fd);
  }
};

// Larger events chunks are decoded from the mapping, not copied into a
// cursor's buffer (the shim writes at most PROF_BUFFER_MB, 1 MiB by default).
constexpr uint32_t kReadChunkMax = 16u << 20;

#ifdef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;  // Linux 5.14 uapi value
#endif

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
  void reserve(size_t n) {
    if (n <= size_) return;
    reset();
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t bytes = (n + page - 1) / page * page;
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      (void)::madvise(m, bytes, kMadvPopulateWrite);  // older kernels: faulted as used
      data_ = static_cast<uint8_t*>(m);
      size_ = bytes;
      mapped_ = true;
    } else {
      data_ = new uint8_t[n];
      size_ = n;
      mapped_ = false;
    }
  }

 private:
  void reset() {
    if (data_) {
      if (mapped_) ::munmap(data_, size_);
      else delete[] data_;
    }
    data_ = nullptr;
    size_ = 0;
  }
  void swap(ChunkBuffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(mapped_, o.mapped_);
  }
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

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
  static constexpr uint32_t kNoCheck = UINT32_MAX;
};

struct StreamIndex {
  uint32_t id = 0;
  std::vector<ChunkRef> chunks;
};

// Walks the records of an unsealed/truncated events payload by their length
// words: stops at a zero first word or a record that does not fit.
// Returns the salvaged length; *records gets the record count.
uint32_t salvage_records(const uint8_t* p, uint64_t avail, uint64_t* records) {
  avail &= ~uint64_t{3};
  uint64_t pos = 0, n = 0;
  while (avail - pos >= 8) {
    const uint32_t w0 = ld32(p + pos);
    if (w0 == 0) break;
    const uint64_t bytes = uint64_t{format::record_words(w0)} * 4;
    if (bytes > avail - pos) break;
    pos += bytes;
    ++n;
  }
  *records = n;
  return static_cast<uint32_t>(pos);
}

// A sealed chunk at the end of the file whose used bytes are all there and
// only its alignment padding (< 8 bytes) is not: a writer that appends the text
// of a chunk but not its padding leaves this when it is killed. Nothing is lost.
bool only_padding_missing(const ChunkHeader& h, uint64_t avail) {
  return (h.flags & format::kChunkSealed) && h.used <= avail && h.capacity - avail < 8;
}

bool header_sane(const ChunkHeader& h) {
  if (h.magic != format::kChunkMagic) return false;
  if (h.capacity % 8 != 0) return false;
  if (h.flags & ~uint16_t{format::kChunkSealed}) return false;
  if ((h.flags & format::kChunkSealed) && h.used > h.capacity) return false;
  return true;
}
// Stricter, for resynchronizing inside garbage: a known chunk type too.
bool header_sane_strict(const ChunkHeader& h) {
  return header_sane(h) && (h.type == uint16_t(format::ChunkType::Definitions) ||
                            h.type == uint16_t(format::ChunkType::Events));
}

// What the decoder needs per function id: its kind, the least payload words a
// record needs for it by need_index(flags), and the flags that refer to the
// chunk's context for it (kSameComm, kPackedRequest where the kind has them).
struct FuncInfo {
  uint16_t kind = 0xFFFF;  // kNoKind: undefined
  uint8_t context_flags = 0;
  uint8_t need[16] = {};
};
// kWidePeerTag, kWideBytes, kSameComm, kPackedRequest as bits 0..3.
inline unsigned need_index(uint32_t flags) {
  return ((flags >> 1) & 3u) | ((flags >> 3) & 4u) | ((flags >> 4) & 8u);
}
constexpr uint8_t kNeverEnough = 0xFF;  // more than a record holds: a bad record

// Payload words per FuncKind (kinds 0..14): PeerTags, Bytes, plain words.
struct KindLayout {
  uint8_t peer_tags, bytes, words;
};
constexpr KindLayout kLayout[15] = {
    {0, 0, 0},  // Other
    {1, 1, 1},  // Send: PeerTag Comm Bytes
    {1, 1, 1},  // Recv
    {2, 2, 1},  // SendRecv: PeerTag Bytes PeerTag Bytes Comm
    {1, 1, 2},  // Isend: PeerTag Comm Bytes Request
    {1, 1, 2},  // Irecv
    {0, 0, 0},  // Completion: entries, checked separately
    {0, 0, 0},  // RequestOp: any number of words
    {0, 1, 2},  // Collective: Comm Root Bytes
    {0, 1, 3},  // ICollective: Comm Root Bytes Request
    {0, 0, 2},  // CommCreate: Comm NewComm
    {1, 1, 1},  // Probe
    {0, 0, 2},  // Marker: IntervalId CallSite
    {0, 1, 2},  // AllToAll
    {0, 1, 3},  // IAllToAll
};

FuncInfo func_info(FuncKind kind) {
  FuncInfo f;
  f.kind = static_cast<uint16_t>(kind);
  const bool comm = format::kind_has_comm(kind), request = format::kind_has_request(kind);
  f.context_flags = uint8_t((comm ? format::kSameComm : 0) | (request ? format::kPackedRequest : 0));
  const unsigned k = static_cast<unsigned>(kind);
  if (k < 15) {
    const KindLayout& L = kLayout[k];
    for (unsigned w = 0; w < 16; ++w) {
      const unsigned pt = (w & 1) ? 2 : 1, by = (w & 2) ? 2 : 1;
      unsigned need = L.peer_tags * pt + L.bytes * by + L.words;
      if ((w & 4) && comm) need -= 1;  // no Comm word
      if ((w & 8) && request) {
        if (w & 2) need = kNeverEnough;  // packed bytes are 16 bits: never wide
        else need -= 1;                  // Bytes and Request in one word
      }
      f.need[w] = static_cast<uint8_t>(need);
    }
  }
  return f;
}
static_assert(format::kWidePeerTag == 2 && format::kWideBytes == 4 && format::kSameComm == 32 &&
              format::kPackedRequest == 128);

}  // namespace

// ===========================================================================
struct RankTrace::Impl {
  std::string path;
  Mapping map;
  FileHeader header{};

  std::map<std::string, std::string> meta;
  std::vector<FunctionDef> functions;
  std::vector<int32_t> function_index;  // id -> index into functions, -1
  std::vector<FuncInfo> kinds;          // id -> kind and payload needs
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
  std::vector<LoadObject> load_objects;
  std::vector<ClockSyncDef> clock_syncs;
  std::string end_reason;

  double ns_per_tick = 1.0;
  uint64_t epoch = 0;   // M epoch_ticks: the origin of the ns conversions (see clock.h)
  uint64_t origin = 0;  // first event's enter (local time zero)
  bool have_init = false, have_final = false;
  double init_t = 0, init_off = 0, final_t = 0, final_off = 0;

  std::vector<StreamIndex> streams;  // ordered by stream id
  // Lazy CRC state per sealed events chunk: 0 unchecked, 1 good, 2 bad.
  std::unique_ptr<std::atomic<uint8_t>[]> crc_state;
  uint32_t crc_checks = 0;
  mutable int crc_warned = 0;  // lazy CRC warnings (under mu)
  std::map<uint32_t, StreamIndex> building;  // during index()
  uint64_t event_bytes = 0;

  mutable std::mutex mu;  // guards stats, warnings, reported after open
  mutable ReadStats stats;
  mutable std::vector<std::string> warnings;
  mutable std::vector<bool> reported;  // per stream: decode damage accounted
  std::map<std::string, int> warn_counts;

  // Open-time warnings, capped per category.
  void warn(const char* category, std::string msg) {
    int& n = warn_counts[category];
    if (++n <= kWarnCap) warnings.push_back(std::move(msg));
  }
  void finish_warnings() {
    for (auto& [cat, n] : warn_counts)
      if (n > kWarnCap)
        warnings.push_back(path + ": " + std::to_string(n - kWarnCap) + " more '" + cat +
                           "' warnings not shown");
  }

  bool map_file(std::string* error);
  void index();
  void events_chunk(const ChunkHeader& h, uint64_t off, uint64_t avail, uint64_t* resume);
  void definitions_chunk(const ChunkHeader& h, uint64_t off, uint64_t avail, uint64_t* resume);
  void parse_definitions(std::string_view text, uint64_t off, bool complete_lines_only);
  void parse_line(std::string_view line, uint64_t off);
  void finish_definitions();
  uint64_t resync(uint64_t from) const;

  const CommDef* comm_at(uint32_t handle, uint64_t t) const;
  double offset_ns(uint64_t t) const;

  // Whether a chunk's records may be decoded: checks a sealed chunk's CRC the
  // first time any cursor asks, counting and describing a mismatch once.
  // `data` holds the chunk's c.len payload bytes.
  bool verify(const ChunkRef& c, const uint8_t* data) const {
    if (c.check == ChunkRef::kNoCheck) return true;
    std::atomic<uint8_t>& st = crc_state[c.check];
    uint8_t s = st.load(std::memory_order_acquire);
    if (s == 0) {
      const bool good = format::crc32c(data, c.len) == c.crc;
      s = good ? 1 : 2;
      uint8_t expect = 0;
      if (st.compare_exchange_strong(expect, s, std::memory_order_acq_rel) && !good) {
        std::lock_guard<std::mutex> lock(mu);
        ++stats.crc_mismatches;
        if (++crc_warned <= kWarnCap)
          warnings.push_back(fmt_off(path, c.header_off,
                                     "CRC mismatch in events chunk at offset " +
                                         std::to_string(c.header_off) + " (stream " +
                                         std::to_string(c.stream) + "): " +
                                         std::to_string(c.len) + " payload bytes skipped"));
        else if (crc_warned == kWarnCap + 1)
          warnings.push_back(path + ": more events-chunk CRC warnings not shown "
                                    "(crc_mismatches counts them all)");
      }
    }
    return s == 1;
  }
  // n bytes at file offset `off` (within the file) into `to`. Chunk headers are
  // read so during the index, not through the mapping: a fault there maps its
  // neighbours too, and the RSS of opening grew with the file (30 MB for 10^8
  // events a rank).
  void read_at(uint64_t off, void* to, size_t n) const {
    if (map.fd >= 0 &&
        ::pread(map.fd, to, n, static_cast<off_t>(off)) == static_cast<ssize_t>(n))
      return;
    std::memcpy(to, map.data + off, n);
  }
  // The payload of events chunk c: read into `buf` (grown as needed) when the
  // file can be read so, else (or if the read fails) in the mapping. Sets
  // *copied to whether it is in `buf`.
  const uint8_t* chunk_payload(const ChunkRef& c, ChunkBuffer& buf, bool* copied) const {
    *copied = false;
    if (map.fd < 0 || c.len > kReadChunkMax) return map.data + c.payload_off;
    if (buf.size() < c.len) buf.reserve(std::max<size_t>(c.len, buf.size() * 2));
    size_t got = 0;
    while (got < c.len) {
      const ssize_t n = ::pread(map.fd, buf.data() + got, c.len - got,
                                static_cast<off_t>(c.payload_off + got));
      if (n > 0) {
        got += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        return map.data + c.payload_off;  // the mapping still has it
      }
    }
    *copied = true;
    return buf.data();
  }
  // Buffers of cursors that ended, for the next cursor (their pages are
  // populated already): the first cursor of a stream reuses the buffer the
  // index checked the first chunks in.
  mutable std::mutex pool_mu;
  mutable std::vector<ChunkBuffer> pool;
  ChunkBuffer take_buffer() const {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (pool.empty()) return {};
    ChunkBuffer b = std::move(pool.back());
    pool.pop_back();
    return b;
  }
  void give_buffer(ChunkBuffer&& b) const {
    if (!b.data()) return;
    std::lock_guard<std::mutex> lock(pool_mu);
    if (pool.size() < 4) pool.push_back(std::move(b));
  }
  // Drops the pages wholly inside a chunk from this process (the file and the
  // page cache keep them; a later read faults them back in).
  void release(const ChunkRef& c) const {
    if (!map.map) return;
    const uint64_t page = page_size();
    const uint64_t lo = (c.header_off + page - 1) & ~(page - 1);
    const uint64_t hi = std::min(c.end_off, map.size) & ~(page - 1);
    if (hi > lo)
      ::madvise(const_cast<uint8_t*>(map.data) + lo, hi - lo, MADV_DONTNEED);
  }
  static uint64_t page_size() {
    static const uint64_t p = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    return p;
  }
};

bool RankTrace::Impl::map_file(std::string* error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    *error = path + ": cannot stat: " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    *error = path + ": is a directory, not a trace file";
    ::close(fd);
    return false;
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    void* m = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      map.map = m;
      map.size = static_cast<uint64_t>(st.st_size);
      map.data = static_cast<const uint8_t*>(m);
      map.fd = fd;
      ::madvise(m, map.size, MADV_SEQUENTIAL);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
      return true;
    }
  }
  // Fallback: read it (pipes, special files, mmap refused).
  for (;;) {
    uint8_t tmp[65536];
    ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = path + ": cannot read: " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    map.buf.insert(map.buf.end(), tmp, tmp + n);
  }
  ::close(fd);
  map.data = map.buf.data();
  map.size = map.buf.size();
  return true;
}

uint64_t RankTrace::Impl::resync(uint64_t from) const {
  const uint64_t size = map.size;
  from = format::align8(from);
  for (uint64_t o = from; o <= size && size - o >= sizeof(ChunkHeader); o += 8) {
    if (ld32(map.data + o) != format::kChunkMagic) continue;
    ChunkHeader h;
    std::memcpy(&h, map.data + o, sizeof h);
    if (header_sane_strict(h)) return o;
  }
  return size;
}

void RankTrace::Impl::index() {
  const uint64_t size = map.size;
  const uint8_t* d = map.data;
  uint64_t off = sizeof(FileHeader);
  if (header.header_size != sizeof(FileHeader)) {
    if (header.header_size > sizeof(FileHeader) && header.header_size % 8 == 0 &&
        header.header_size <= size) {
      off = header.header_size;  // a later version's bigger header
    } else {
      warn("header", fmt_off(path, 12, "implausible header_size " +
                                           std::to_string(header.header_size) +
                                           "; chunks read from offset 64"));
    }
  }

  while (off < size) {
    if (size - off < sizeof(ChunkHeader)) {
      bool zero = true;
      for (uint64_t o = off; o < size; ++o) zero = zero && d[o] == 0;
      if (!zero) {
        ++stats.truncated_chunks;
        warn("truncated", fmt_off(path, off, "truncated chunk header (" +
                                                 std::to_string(size - off) +
                                                 " bytes at the end of the file)"));
      }
      break;
    }
    ChunkHeader h;
    read_at(off, &h, sizeof h);
    if (!header_sane(h)) {
      if (h.magic != format::kChunkMagic && ld64(d + off) == 0) {  // zero padding
        off += 8;
        continue;
      }
      ++stats.bad_chunk_headers;
      const uint64_t next = resync(off + 8);
      std::string what = h.magic != format::kChunkMagic ? "bad chunk header (garbage)"
                                                        : "implausible chunk header";
      if (next < size)
        what += "; skipped " + std::to_string(next - off) + " bytes to the chunk at offset " +
                std::to_string(next);
      else
        what += "; no further chunk found (" + std::to_string(size - off) + " bytes skipped)";
      warn("bad chunk header", fmt_off(path, off, what));
      off = next;
      continue;
    }
    ++stats.chunks;
    const uint64_t payload = off + sizeof(ChunkHeader);
    const uint64_t avail = size - payload;
    uint64_t resume = payload + h.capacity;  // where the walk goes on
    if (h.type == uint16_t(format::ChunkType::Events)) {
      ++stats.event_chunks;
      events_chunk(h, off, avail, &resume);
    } else if (h.type == uint16_t(format::ChunkType::Definitions)) {
      definitions_chunk(h, off, avail, &resume);
    } else {
      ++stats.unknown_chunk_types;
      warn("unknown chunk type", fmt_off(path, off, "unknown chunk type " +
                                                         std::to_string(h.type) + " skipped"));
      if (h.capacity > avail) {
        ++stats.truncated_chunks;
        warn("truncated", fmt_off(path, off, "chunk claims " + std::to_string(h.capacity) +
                                                 " payload bytes but only " +
                                                 std::to_string(avail) + " remain"));
        resume = resync(payload);
      }
    }
    off = resume;
  }

  streams.reserve(building.size());
  for (auto& [id, s] : building) streams.push_back(std::move(s));
  building.clear();
  reported.assign(streams.size(), false);
  crc_state = std::make_unique<std::atomic<uint8_t>[]>(crc_checks);
  for (uint32_t i = 0; i < crc_checks; ++i) crc_state[i].store(0, std::memory_order_relaxed);

  // Local time zero: the earliest first record of any stream.
  bool have_origin = false;
  ChunkBuffer buf;
  for (const auto& s : streams) {
    for (const auto& c : s.chunks) {
      if (c.len < 8) continue;
      bool copied;
      const uint8_t* p = chunk_payload(c, buf, &copied);
      if (!verify(c, p)) continue;
      const uint32_t w0 = ld32(p);
      if (w0 == 0 || uint64_t{format::record_words(w0)} * 4 > c.len) continue;
      uint64_t t;
      if (format::record_short_time(w0)) {
        t = c.base_time + (ld32(p + 4) & 0xFFFFu);
      } else if ((w0 >> 16) & format::kLongTime) {
        if (format::record_payload_words(w0) < 4) continue;
        t = c.base_time + ld64(p + 12);
      } else {
        t = c.base_time + ld32(p + 4);
      }
      if (!have_origin || t < origin) origin = t;
      have_origin = true;
      break;
    }
  }
  if (!have_origin) {
    for (const auto& s : streams)
      if (!s.chunks.empty() && (!have_origin || s.chunks.front().base_time < origin)) {
        origin = s.chunks.front().base_time;
        have_origin = true;
      }
  }
  // Definitions (and salvaged chunks) were read through the mapping: cursors
  // read what they need, so nothing needs to stay resident.
  give_buffer(std::move(buf));
  if (map.map) ::madvise(map.map, map.size, MADV_DONTNEED);
}

void RankTrace::Impl::events_chunk(const ChunkHeader& h, uint64_t off, uint64_t avail,
                                   uint64_t* resume) {
  const uint64_t payload = off + sizeof(ChunkHeader);
  const uint8_t* p = map.data + payload;
  const bool sealed = h.flags & format::kChunkSealed;
  const bool truncated = h.capacity > avail && !only_padding_missing(h, avail);
  const std::string where = " (stream " + std::to_string(h.stream) + ")";
  ChunkRef ref;
  ref.header_off = off;
  ref.payload_off = payload;
  ref.base_time = h.base_time;
  ref.sealed = sealed;
  ref.stream = h.stream;
  ref.end_off = payload + std::min<uint64_t>(h.capacity, avail);

  if (sealed && h.used <= avail) {
    // The CRC is checked when a cursor enters the chunk (verify()).
    ref.len = h.used;
    ref.crc = h.crc32;
    ref.check = crc_checks++;
    if (truncated) {
      // The used bytes are all there; only the reserved tail is cut.
      ++stats.truncated_chunks;
      warn("truncated", fmt_off(path, off, "chunk claims " + std::to_string(h.capacity) +
                                               " payload bytes but only " +
                                               std::to_string(avail) +
                                               " remain; its sealed data is intact"));
      *resume = resync(payload + h.used);
    }
  } else {
    const uint64_t room = truncated ? avail : h.capacity;
    uint64_t records = 0;
    ref.len = salvage_records(p, room, &records);
    ref.sealed = false;
    if (!sealed) ++stats.unsealed_chunks;
    if (truncated) ++stats.truncated_chunks;
    std::string what;
    if (!sealed)
      what = "unsealed chunk at offset " + std::to_string(off) + where +
             ": process ended without sealing; ";
    if (truncated)
      what += "chunk claims " + std::to_string(h.capacity) + " payload bytes but only " +
              std::to_string(avail) + " remain (file truncated); ";
    what += std::to_string(records) + " records salvaged";
    warn(truncated ? "truncated" : "unsealed", fmt_off(path, off, what));
    if (truncated) *resume = resync(payload + ref.len);
  }
  event_bytes += ref.len;
  if (ref.len == 0) return;
  auto& s = building[h.stream];
  s.id = h.stream;
  s.chunks.push_back(ref);
}

void RankTrace::Impl::definitions_chunk(const ChunkHeader& h, uint64_t off, uint64_t avail,
                                        uint64_t* resume) {
  const uint64_t payload = off + sizeof(ChunkHeader);
  const char* p = reinterpret_cast<const char*>(map.data + payload);
  const bool sealed = h.flags & format::kChunkSealed;
  const bool truncated = h.capacity > avail && !only_padding_missing(h, avail);
  if (truncated) {
    ++stats.truncated_chunks;
    *resume = resync(payload + std::min<uint64_t>(avail, sealed ? h.used : avail));
  }
  if (sealed && h.used <= avail) {
    if (format::crc32c(p, h.used) != h.crc32) {
      ++stats.crc_mismatches;
      warn("crc", fmt_off(path, off, "CRC mismatch in definitions chunk at offset " +
                                         std::to_string(off) + ": skipped"));
      return;
    }
    if (truncated)
      warn("truncated", fmt_off(path, off, "chunk claims " + std::to_string(h.capacity) +
                                               " payload bytes but only " +
                                               std::to_string(avail) +
                                               " remain; its sealed data is intact"));
    parse_definitions(std::string_view(p, h.used), payload, false);
    return;
  }
  // Unsealed or cut: the text up to the first NUL, complete lines only.
  const uint64_t room = truncated ? avail : h.capacity;
  const void* nul = std::memchr(p, 0, room);
  const uint64_t n = nul ? static_cast<uint64_t>(static_cast<const char*>(nul) - p) : room;
  if (!sealed) ++stats.unsealed_chunks;
  std::string what = sealed ? "" : "unsealed definitions chunk at offset " + std::to_string(off) + "; ";
  if (truncated)
    what += "chunk claims " + std::to_string(h.capacity) + " payload bytes but only " +
            std::to_string(avail) + " remain (file truncated); ";
  what += "complete lines read";
  warn(truncated ? "truncated" : "unsealed", fmt_off(path, off, what));
  parse_definitions(std::string_view(p, n), payload, true);
}

void RankTrace::Impl::parse_definitions(std::string_view text, uint64_t off,
                                        bool complete_lines_only) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      if (complete_lines_only) break;
      nl = text.size();
    }
    std::string_view line = text.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) parse_line(line, off + pos);
    pos = nl + 1;
  }
}

void RankTrace::Impl::parse_line(std::string_view line, uint64_t off) {
  // Fields: up to 8 split on TAB; the last keeps any further TABs.
  std::array<std::string_view, 8> f{};
  size_t nf = 0, pos = 0;
  while (nf < f.size()) {
    size_t tab = line.find('\t', pos);
    if (tab == std::string_view::npos || nf == f.size() - 1) {
      f[nf++] = line.substr(pos);
      break;
    }
    f[nf++] = line.substr(pos, tab - pos);
    pos = tab + 1;
  }
  bool ok = false;
  const std::string_view tag = f[0];
  // The rest of the line after field k (values may contain TABs).
  auto rest_after = [&](size_t k) {
    size_t p = 0;
    for (size_t i = 0; i < k; ++i) p = line.find('\t', p) + 1;
    return line.substr(p);
  };
  if (tag.size() != 1) {
    return;  // unknown (future) tag: skipped
  }
  switch (tag[0]) {
    case 'M':
      if (nf >= 3 && !f[1].empty()) {
        meta[std::string(f[1])] = std::string(rest_after(2));
        ok = true;
      }
      break;
    case 'F': {
      uint32_t id, kind;
      if (nf >= 4 && parse_u32(f[1], &id) && id >= 1 && id <= 0xFFFF && parse_u32(f[2], &kind) &&
          kind < 0xFFFF) {
        FunctionDef def{static_cast<uint16_t>(id), static_cast<FuncKind>(kind),
                        std::string(rest_after(3))};
        if (id == format::kMarkerFuncId) def.kind = FuncKind::Marker;
        if (id >= function_index.size()) {
          function_index.resize(id + 1, -1);
          kinds.resize(id + 1);
        }
        if (function_index[id] >= 0) {
          functions[function_index[id]] = def;
        } else {
          function_index[id] = static_cast<int32_t>(functions.size());
          functions.push_back(def);
        }
        kinds[id] = func_info(def.kind);
        ok = true;
      }
      break;
    }
    case 'C': {
      CommDef c;
      uint32_t size;
      if (nf >= 7 && parse_u32(f[1], &c.handle) && parse_u64(f[2], &c.global_id) &&
          parse_u64(f[3], &c.time) && parse_u32(f[4], &size) && (f[5] == "0" || f[5] == "1") &&
          parse_rank_list(f[6], &c.ranks) && c.ranks.size() == size &&
          (nf < 8 || parse_rank_list(f[7], &c.remote_ranks))) {
        c.inter = f[5] == "1";
        comms.push_back(std::move(c));
        ok = true;
      }
      break;
    }
    case 'S': {
      CallSiteDef s;
      if (nf >= 3 && parse_u32(f[1], &s.id) && parse_hex_u64(f[2], &s.address)) {
        ok = true;
        if (nf >= 4) s.file = std::string(f[3]);
        if (nf >= 5 && !f[4].empty()) {
          int32_t l = 0;
          ok = parse_i32(f[4], &l);
          s.line = l;
        }
        if (ok) {
          auto it = callsite_index.find(s.id);
          if (it != callsite_index.end()) {
            callsites[it->second] = std::move(s);
          } else {
            callsite_index.emplace(s.id, callsites.size());
            callsites.push_back(std::move(s));
          }
        }
      }
      break;
    }
    case 'L': {
      LoadObject o;
      if (nf >= 3 && parse_hex_u64(f[1], &o.bias)) {
        o.path = std::string(rest_after(2));
        load_objects.push_back(std::move(o));
        ok = true;
      }
      break;
    }
    case 'K': {
      ClockSyncDef k;
      if (nf >= 4 && !f[1].empty() && parse_u64(f[2], &k.local_ticks) &&
          parse_double(f[3], &k.offset_ns) && std::isfinite(k.offset_ns) &&
          (nf < 5 || f[4].empty() || (parse_double(f[4], &k.rtt_ns) && std::isfinite(k.rtt_ns)))) {
        k.phase = std::string(f[1]);
        clock_syncs.push_back(std::move(k));
        ok = true;
      }
      break;
    }
    case 'E':
      if (nf >= 2) {
        end_reason = std::string(rest_after(1));
        ok = true;
      }
      break;
    default:
      return;  // unknown tag: skipped
  }
  if (!ok) {
    ++stats.bad_definitions;
    std::string shown(line.substr(0, 100));
    for (char& ch : shown)
      if (ch == '\t') ch = ' ';
      else if (static_cast<unsigned char>(ch) < 32) ch = '?';
    warn("definition", fmt_off(path, off, "malformed definition line: " + shown));
  }
}

void RankTrace::Impl::finish_definitions() {
  // Implicit MPI_COMM_WORLD / MPI_COMM_SELF.
  bool have_world = false, have_self = false;
  for (const auto& c : comms) {
    have_world = have_world || c.handle == kCommWorld;
    have_self = have_self || c.handle == kCommSelf;
  }
  if (!have_world) {
    CommDef w;
    w.handle = kCommWorld;
    w.global_id = 1;  // as the shim defines it
    if (header.world_size > 0 && header.world_size <= kMaxImplicitWorld) {
      w.ranks.resize(static_cast<size_t>(header.world_size));
      for (int32_t i = 0; i < header.world_size; ++i) w.ranks[i] = i;
    } else {
      warn("header", fmt_off(path, 28, "implausible world_size " +
                                           std::to_string(header.world_size)));
    }
    comms.push_back(std::move(w));
  }
  if (!have_self) {
    CommDef s;
    s.handle = kCommSelf;
    s.global_id = (uint64_t{static_cast<uint32_t>(header.rank)} << 32) | 2;  // as the shim
    s.ranks = {header.rank};
    comms.push_back(std::move(s));
  }
  comm_keys.clear();
  for (uint32_t i = 0; i < comms.size(); ++i)
    comm_keys.push_back({comms[i].handle, comms[i].time, i, i});
  std::sort(comm_keys.begin(), comm_keys.end(), [](const CommKey& a, const CommKey& b) {
    if (a.handle != b.handle) return a.handle < b.handle;
    if (a.time != b.time) return a.time < b.time;
    return a.order < b.order;
  });

  // ns_per_tick.
  if (auto it = meta.find("ns_per_tick"); it != meta.end()) {
    double v;
    if (parse_double(it->second, &v) && std::isfinite(v) && v > 0) {
      ns_per_tick = v;
    } else {
      ++stats.bad_definitions;
      warn("definition", path + ": bad ns_per_tick '" + it->second.substr(0, 40) +
                             "': using 1.0");
    }
  }
  // The timer's epoch: ns are (ticks - epoch) * ns_per_tick, as the shim's
  // clock sync measured them (a refined rate then moves times by (t - epoch) *
  // error, not by t * error on raw TSC values of ~1e14).
  if (auto it = meta.find("epoch_ticks"); it != meta.end()) {
    uint64_t v;
    if (parse_u64(it->second, &v)) {
      epoch = v;
    } else {
      ++stats.bad_definitions;
      warn("definition", path + ": bad epoch_ticks '" + it->second.substr(0, 40) + "': using 0");
    }
  }
  // Clock sync: the last init and the last final.
  for (const auto& k : clock_syncs) {
    if (k.phase == "init") {
      have_init = true;
      init_t = static_cast<double>(k.local_ticks);
      init_off = k.offset_ns;
    } else if (k.phase == "final") {
      have_final = true;
      final_t = static_cast<double>(k.local_ticks);
      final_off = k.offset_ns;
    }
  }
}

const CommDef* RankTrace::Impl::comm_at(uint32_t handle, uint64_t t) const {
  auto lo = std::lower_bound(comm_keys.begin(), comm_keys.end(), handle,
                             [](const CommKey& k, uint32_t h) { return k.handle < h; });
  if (lo == comm_keys.end() || lo->handle != handle) return nullptr;
  auto hi = std::upper_bound(lo, comm_keys.end(), handle,
                             [](uint32_t h, const CommKey& k) { return h < k.handle; });
  // Last entry with time <= t (entries sorted by time, then definition order).
  auto it = std::upper_bound(lo, hi, t, [](uint64_t tt, const CommKey& k) { return tt < k.time; });
  if (it == lo) return &comms[lo->index];  // t precedes every definition: the earliest
  return &comms[(it - 1)->index];
}

double RankTrace::Impl::offset_ns(uint64_t t) const {
  if (have_init && have_final) {
    // As prof::shim::interpolate_offset (libprof/src/clock.h).
    const double tt = static_cast<double>(t);
    if (final_t <= init_t) return init_off;
    return init_off + (final_off - init_off) * (tt - init_t) / (final_t - init_t);
  }
  if (have_init) return init_off;
  if (have_final) return final_off;
  return 0.0;
}

// ===========================================================================
// RankTrace public API

RankTrace::RankTrace(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RankTrace::~RankTrace() = default;

std::unique_ptr<RankTrace> RankTrace::open(const std::string& path, std::string* error) {
  std::string scratch;
  if (!error) error = &scratch;
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  if (!impl->map_file(error)) return nullptr;
  const uint64_t size = impl->map.size;
  if (size == 0) {
    *error = fmt_off(path, 0, "empty file (0 bytes): not a prof trace");
    return nullptr;
  }
  if (size < sizeof(FileHeader)) {
    *error = fmt_off(path, 0, "file too short for a header (" + std::to_string(size) +
                                  " bytes): not a prof trace");
    return nullptr;
  }
  std::memcpy(&impl->header, impl->map.data, sizeof(FileHeader));
  if (std::memcmp(impl->header.magic, format::kFileMagic, sizeof format::kFileMagic) != 0) {
    *error = fmt_off(path, 0, "not a prof trace (bad magic)");
    return nullptr;
  }
  if (impl->header.version < format::kOldestFormatVersion ||
      impl->header.version > format::kFormatVersion) {
    *error = fmt_off(path, 8, "unsupported format version " +
                                  std::to_string(impl->header.version) + " (this reader reads " +
                                  std::to_string(format::kOldestFormatVersion) + " to " +
                                  std::to_string(format::kFormatVersion) + ")");
    return nullptr;
  }
  impl->index();
  impl->finish_definitions();
  impl->finish_warnings();
  return std::unique_ptr<RankTrace>(new RankTrace(std::move(impl)));
}

const std::string& RankTrace::path() const { return impl_->path; }
const format::FileHeader& RankTrace::header() const { return impl_->header; }
const std::map<std::string, std::string>& RankTrace::meta() const { return impl_->meta; }
const FunctionDef* RankTrace::function(uint16_t id) const {
  if (id >= impl_->function_index.size() || impl_->function_index[id] < 0) return nullptr;
  return &impl_->functions[impl_->function_index[id]];
}
const std::vector<FunctionDef>& RankTrace::functions() const { return impl_->functions; }
const std::vector<CommDef>& RankTrace::comms() const { return impl_->comms; }
const std::vector<CallSiteDef>& RankTrace::callsites() const { return impl_->callsites; }
const CallSiteDef* RankTrace::callsite(uint32_t id) const {
  auto it = impl_->callsite_index.find(id);
  return it == impl_->callsite_index.end() ? nullptr : &impl_->callsites[it->second];
}
const std::vector<LoadObject>& RankTrace::load_objects() const { return impl_->load_objects; }
const std::vector<ClockSyncDef>& RankTrace::clock_syncs() const { return impl_->clock_syncs; }
const std::string& RankTrace::end_reason() const { return impl_->end_reason; }

const CommDef* RankTrace::comm_at(uint32_t handle, uint64_t t) const {
  return impl_->comm_at(handle, t);
}

int32_t RankTrace::world_rank(uint32_t handle, uint64_t t, int32_t rank) const {
  if (rank < 0) return rank;
  const CommDef* c = impl_->comm_at(handle, t);
  if (!c) return -1;
  const auto& group = c->inter ? c->remote_ranks : c->ranks;
  if (static_cast<size_t>(rank) >= group.size()) return -1;
  return group[static_cast<size_t>(rank)];
}

double RankTrace::ns_per_tick() const { return impl_->ns_per_tick; }
double RankTrace::to_local_ns(uint64_t ticks) const {
  return static_cast<double>(static_cast<int64_t>(ticks - impl_->origin)) * impl_->ns_per_tick;
}
double RankTrace::to_global_ns(uint64_t ticks) const {
  return static_cast<double>(static_cast<int64_t>(ticks - impl_->epoch)) * impl_->ns_per_tick +
         impl_->offset_ns(ticks);
}

size_t RankTrace::stream_count() const { return impl_->streams.size(); }
uint64_t RankTrace::event_bytes() const { return impl_->event_bytes; }

const ReadStats& RankTrace::stats() const { return impl_->stats; }
const std::vector<std::string>& RankTrace::warnings() const { return impl_->warnings; }

// ===========================================================================
// Cursor
//
// Two steps per event: prepare() walks to the next record that will decode
// (crossing chunk ends, counting and skipping bad records, chaining their
// times) and computes its enter time; decode() fills the Event from it. The
// merged cursor compares prepared enter times and decodes straight into the
// caller's Event; prepare() never touches the entry buffers an Event points to.

struct RankTrace::Cursor::Impl {
  const RankTrace::Impl* rt = nullptr;
  size_t stream_index = 0;
  const ChunkRef* chunk = nullptr;      // next chunk to enter
  const ChunkRef* current = nullptr;    // chunk being decoded
  const ChunkRef* chunks_end = nullptr;
  const uint8_t* data = nullptr;        // current chunk's payload (buffer or mapping)
  bool copied = false;                  // data is in `buffer` (else: in the mapping)
  ChunkBuffer buffer;                   // chunks read with pread, reused
  const uint8_t* p = nullptr;           // next record
  const uint8_t* end = nullptr;         // end of the current chunk's records
  uint64_t chain = 0;                   // previous enter in the chunk (base_time first)
  // The chunk's context (format::ChunkContext): the last full Comm and Request
  // high half decoded, and which of kSameComm / kPackedRequest may refer to them.
  uint32_t cx_comm = 0, cx_request_high = 0;
  uint8_t cx_avail = 0;
  uint64_t last_enter = 0;              // previous event's enter in the stream
  bool have_last = false;
  bool finished = false;
  const FuncInfo* kinds = nullptr;
  size_t nkinds = 0;
  FuncInfo marker_info = func_info(FuncKind::Marker);
  uint32_t stream_id = 0;

  // A record that will decode: found by scan(), decoded by fill().
  struct Prepared {
    const uint8_t* rec;  // its header
    const uint8_t* pay;  // its payload after the long-time words
    uint32_t avail;      // payload words at `pay`
    uint16_t kind;
    uint8_t context_flags;  // flag bits that are encoding, not meaning, for this kind
    uint64_t enter, dur;
  };
  bool ready = false;  // `prepared` holds the next record (merged cursor)
  Prepared prepared{};

  uint64_t events = 0, bad_records = 0, backwards = 0;
  int bad_warnings = 0;
  std::vector<std::string> warnings;

  // Entry buffers for Completion / RequestOp events (grown only by calls merged
  // from continuation records, so steady state allocates nothing).
  std::vector<Completion> comp = std::vector<Completion>(kCompletionMax);
  std::vector<uint32_t> reqs = std::vector<uint32_t>(format::kMaxPayloadWords);

  ~Impl() {
    leave_chunk();
    flush();
    if (rt) rt->give_buffer(std::move(buffer));
  }

  void leave_chunk() {
    if (current && !copied) rt->release(*current);
    current = nullptr;
  }
  // Enters the next chunk whose CRC holds (a sealed chunk is checked before
  // any of its records is decoded; a bad one is skipped).
  bool next_chunk() {
    leave_chunk();
    while (chunk != chunks_end) {
      const ChunkRef* c = chunk++;
      data = rt->chunk_payload(*c, buffer, &copied);
      if (!rt->verify(*c, data)) {
        if (!copied) rt->release(*c);
        continue;
      }
      current = c;
      p = data;
      end = p + c->len;
      chain = c->base_time;
      cx_avail = 0;
      return true;
    }
    p = end;
    return false;
  }

  void bad(const uint8_t* at, const std::string& what) {
    ++bad_records;
    if (++bad_warnings <= kWarnCap)
      warnings.push_back(fmt_off(rt->path, current->payload_off + static_cast<uint64_t>(at - data),
                                 "bad record (stream " + std::to_string(stream_id) + "): " + what));
  }

  // Adds this cursor's counts to the trace's statistics: events always, decode
  // damage once per stream (the first cursor to reach the stream's end).
  void flush() {
    if (!rt) return;
    std::lock_guard<std::mutex> lock(rt->mu);
    rt->stats.events += events;
    events = 0;
    if (finished && stream_index < rt->reported.size() && !rt->reported[stream_index]) {
      rt->reported[stream_index] = true;
      rt->stats.bad_records += bad_records;
      rt->stats.backwards_timestamps += backwards;
      for (auto& w : warnings) rt->warnings.push_back(std::move(w));
      if (bad_warnings > kWarnCap)
        rt->warnings.push_back(rt->path + ": stream " + std::to_string(stream_id) + ": " +
                               std::to_string(bad_warnings - kWarnCap) +
                               " more bad-record warnings not shown");
    }
    bad_records = backwards = 0;
    warnings.clear();
    bad_warnings = 0;
  }

  [[gnu::always_inline]] inline bool scan(Prepared& r);
  [[gnu::always_inline]] inline void fill(Event& e, const Prepared& r);
  [[gnu::noinline, gnu::cold]] void bad_record(const uint8_t* at, int why, uint32_t detail);
  [[gnu::noinline, gnu::cold]] bool chunk_end();

  bool prepare() {
    if (!ready) ready = scan(prepared);
    return ready;
  }
  void decode(Event& e) {
    ready = false;
    fill(e, prepared);
  }

  // Decodes the completion entries of a payload of `words` words at q (a
  // bitmap word, then per entry Request and, when its bit is set, PeerTag
  // Bytes) into comp[at...]; returns how many. A cut entry ends the list.
  size_t completions(const uint8_t* q, size_t words, uint8_t flags, size_t at) {
    if (words == 0) return 0;
    if (comp.size() < at + kCompletionMax)
      comp.resize(std::max(at + kCompletionMax, comp.size() * 2));
    const bool wpt = flags & format::kWidePeerTag, wb = flags & format::kWideBytes;
    const size_t status_words = (wpt ? 2 : 1) + (wb ? 2 : 1);
    const uint32_t bitmap = ld32(q);
    q += 4;
    size_t left = words - 1, i = 0;
    for (; i < kCompletionMax && left > 0; ++i) {
      Completion& k = comp[at + i];
      const bool has = (bitmap >> i) & 1u;
      if (left < 1 + (has ? status_words : 0)) break;
      left -= 1 + (has ? status_words : 0);
      k.request = ld32(q);
      q += 4;
      if (!has) {  // no status: what an untouched MPI status says
        k.source = format::kAnySourceRank;
        k.tag = format::kAnyTagValue;
        k.bytes = 0;
        k.cancelled = false;
        continue;
      }
      if (wpt) {
        k.source = static_cast<int32_t>(ld32(q));
        k.tag = static_cast<int32_t>(ld32(q + 4));
        q += 8;
      } else {
        const uint32_t w = ld32(q);
        k.source = format::packed_peer(w);
        k.tag = format::packed_tag(w);
        q += 4;
      }
      if (wb) {
        const uint64_t b = ld64(q);
        q += 8;
        k.cancelled = (b & format::kCancelledBit64) != 0;
        k.bytes = b & ~format::kCancelledBit64;
      } else {
        const uint32_t b = ld32(q);
        q += 4;
        k.cancelled = (b & format::kCancelledBit32) != 0;
        k.bytes = b & ~uint32_t(format::kCancelledBit32);
      }
    }
    return i;
  }

  // Whether a continuation record may follow (cheap test before absorbing).
  bool may_continue() const {
    return end - p < 8 || (ld32(p) & (uint32_t{format::kContinuation} << 16)) != 0;
  }

  // After a Completion/RequestOp record holding n entries: absorbs the
  // kContinuation records of the same function that follow (the rest of one
  // call too large for a record), possibly in the next chunk. Returns the total.
  size_t absorb_continuations(uint16_t func, bool is_completion, size_t n) {
    for (;;) {
      size_t left = static_cast<size_t>(end - p);
      if (left == 0) {
        if (!next_chunk()) return n;
        continue;
      }
      if (left < 8) return n;  // prepare() reports it
      const uint32_t w0 = ld32(p);
      const uint32_t pw = format::record_payload_words(w0);
      const uint8_t flags = static_cast<uint8_t>(w0 >> 16);
      const size_t nbytes = size_t{format::record_words(w0)} * 4;
      if (w0 == 0 || nbytes > left || static_cast<uint16_t>(w0) != func ||
          !(flags & format::kContinuation))
        return n;
      const uint8_t* q = p + 4 * format::record_header_words(w0);
      size_t words = pw;
      uint64_t dt;
      if (format::record_short_time(w0)) {
        dt = ld32(p + 4) & 0xFFFFu;
      } else if (flags & format::kLongTime) {
        if (pw < 4) return n;  // bad: prepare() reports it
        dt = ld64(q);
        q += 16;
        words -= 4;
      } else {
        dt = ld32(p + 4);
      }
      chain += dt;
      p += nbytes;
      if (is_completion) {
        n += completions(q, words, flags, n);
      } else {
        if (reqs.size() < n + words) reqs.resize(std::max(n + words, reqs.size() * 2));
        std::memcpy(reqs.data() + n, q, words * 4);
        n += words;
      }
    }
  }
};

void RankTrace::Cursor::Impl::bad_record(const uint8_t* at, int why, uint32_t detail) {
  switch (why) {
    case 0: bad(at, "trailing bytes shorter than a record header"); break;
    case 1: bad(at, "zero record header inside a sealed chunk"); break;
    case 2:
      bad(at, "record of " + std::to_string(detail) + " bytes overruns its chunk");
      break;
    case 3: bad(at, "long-time record without its time words"); break;
    case 4: bad(at, "unknown function id " + std::to_string(detail)); break;
    case 6:
      bad(at, "function " + std::to_string(detail) +
                  " refers to a communicator or request not given earlier in its chunk");
      break;
    default:
      bad(at, "payload too short for function " + std::to_string(detail));
      break;
  }
}

// The current chunk has fewer than 8 bytes left: reports a partial record,
// enters the next chunk; false (and the stream's accounting) at the end.
bool RankTrace::Cursor::Impl::chunk_end() {
  if (p != end) {
    bad_record(p, 0, 0);
    p = end;
  }
  if (next_chunk()) return true;
  if (!finished) {
    finished = true;
    flush();
  }
  return false;
}

inline bool RankTrace::Cursor::Impl::scan(Prepared& out) {
  using namespace format;
  for (;;) {
    const uint8_t* r = p;
    const size_t left = static_cast<size_t>(end - r);
    if (left < 8) [[unlikely]] {
      if (!chunk_end()) return false;
      continue;
    }
    const uint32_t w0 = ld32(r);
    const size_t nbytes = size_t{record_words(w0)} * 4;
    if (w0 == 0 || nbytes > left) [[unlikely]] {
      bad_record(r, w0 == 0 ? 1 : 2, static_cast<uint32_t>(nbytes));
      p = end;
      continue;
    }
    p = r + nbytes;
    const uint32_t func = w0 & 0xFFFFu;
    const uint32_t flags = (w0 >> 16) & 0xFFu;
    const uint8_t* q = r + 4 * record_header_words(w0);
    uint32_t words = record_payload_words(w0);
    uint64_t dt, d;
    if (record_short_time(w0)) [[likely]] {
      const uint32_t w1 = ld32(r + 4);
      dt = w1 & 0xFFFFu;
      d = w1 >> 16;
    } else if (flags & kLongTime) [[unlikely]] {
      if (words < 4) {
        bad_record(r, 3, 0);
        continue;
      }
      dt = ld64(q);
      d = ld64(q + 8);
      q += 16;
      words -= 4;
    } else {
      dt = ld32(r + 4);
      d = ld32(r + 8);
    }
    chain += dt;  // a signed (backwards) dt wraps correctly
    // A pointer into the table, not a copy: a copy went through the stack in
    // pieces and the indexed byte load of `need` stalled on store forwarding.
    static const FuncInfo kUndefined{};
    const FuncInfo& fi = func < nkinds ? kinds[func]
                         : func == kMarkerFuncId ? marker_info
                                                 : kUndefined;
    if (fi.kind == kNoKind) [[unlikely]] {
      bad_record(r, 4, func);
      continue;
    }
    if (words < fi.need[need_index(flags)]) [[unlikely]] {
      bad_record(r, 5, func);
      continue;
    }
    if (flags & fi.context_flags & ~cx_avail) [[unlikely]] {
      bad_record(r, 6, func);
      continue;
    }
    out.rec = r;
    out.pay = q;
    out.avail = words;
    out.kind = fi.kind;
    out.context_flags = fi.context_flags;
    out.enter = chain;
    out.dur = d;
    return true;
  }
}

inline void RankTrace::Cursor::Impl::fill(Event& e, const Prepared& r) {
  using namespace format;
  const uint32_t w0 = ld32(r.rec);
  const uint16_t func = static_cast<uint16_t>(w0);
  const uint8_t flags = static_cast<uint8_t>(w0 >> 16);
  const uint8_t* q = r.pay;
  const uint64_t enter = r.enter;

  e = Event{};
  e.enter = enter;
  e.leave = enter + r.dur;
  e.func = func;
  e.kind = static_cast<FuncKind>(r.kind);
  e.flags = flags & ~r.context_flags;  // kSameComm / kPackedRequest say nothing of the call
  e.stream = stream_id;

  const bool wpt = flags & kWidePeerTag, wb = flags & kWideBytes;
  auto peer_tag = [&](int32_t& peer, int32_t& tag) __attribute__((always_inline)) {
    const uint32_t w = ld32(q);
    if (wpt) {
      peer = static_cast<int32_t>(w);
      tag = static_cast<int32_t>(ld32(q + 4));
      q += 8;
    } else {
      peer = packed_peer(w);
      tag = packed_tag(w);
      q += 4;
    }
  };
  auto bytes = [&]() __attribute__((always_inline)) -> uint64_t {
    if (wb) {
      const uint64_t v = ld64(q);
      q += 8;
      return v;
    }
    const uint32_t v = ld32(q);
    q += 4;
    return v;
  };
  auto word = [&]() __attribute__((always_inline)) -> uint32_t {
    const uint32_t v = ld32(q);
    q += 4;
    return v;
  };
  auto comm = [&]() __attribute__((always_inline)) -> uint32_t {
    if (flags & kSameComm) return cx_comm;
    cx_comm = word();
    cx_avail |= kSameComm;
    return cx_comm;
  };
  auto bytes_request = [&](uint64_t& n, uint32_t& request) __attribute__((always_inline)) {
    if (flags & kPackedRequest) {
      const uint32_t w = word();
      n = w & 0xFFFFu;
      request = (cx_request_high << 16) | (w >> 16);
      return;
    }
    n = bytes();
    request = word();
    cx_request_high = request >> 16;
    cx_avail |= kPackedRequest;
  };

  switch (static_cast<FuncKind>(r.kind)) {
    case FuncKind::Other:
      break;
    case FuncKind::Send:
    case FuncKind::Recv:
    case FuncKind::Probe:
      peer_tag(e.peer, e.tag);
      e.comm = comm();
      e.bytes = bytes();
      break;
    case FuncKind::Isend:
    case FuncKind::Irecv:
      peer_tag(e.peer, e.tag);
      e.comm = comm();
      bytes_request(e.bytes, e.request);
      break;
    case FuncKind::SendRecv:
      peer_tag(e.peer, e.tag);
      e.bytes = bytes();
      peer_tag(e.recv_peer, e.recv_tag);
      e.recv_bytes = bytes();
      e.comm = comm();
      break;
    case FuncKind::Completion: {
      const size_t n = completions(q, r.avail, flags, 0);
      const size_t total = (flags & kContinuation) || !may_continue() ? n
                                                                     : absorb_continuations(func, true, n);
      e.completions = std::span<const Completion>(comp.data(), total);
      break;
    }
    case FuncKind::RequestOp: {
      std::memcpy(reqs.data(), q, size_t{r.avail} * 4);
      const size_t total = (flags & kContinuation) || !may_continue()
                               ? r.avail
                               : absorb_continuations(func, false, r.avail);
      e.requests = std::span<const uint32_t>(reqs.data(), total);
      break;
    }
    case FuncKind::Collective:
    case FuncKind::AllToAll:
      e.comm = comm();
      e.root = static_cast<int32_t>(word());
      e.bytes = bytes();
      break;
    case FuncKind::ICollective:
    case FuncKind::IAllToAll:
      e.comm = comm();
      e.root = static_cast<int32_t>(word());
      bytes_request(e.bytes, e.request);
      break;
    case FuncKind::CommCreate:
      e.comm = word();
      e.new_comm = word();
      break;
    case FuncKind::Marker:
      e.interval_id = word();
      e.callsite = word();
      e.marker_begin = (flags & kMarkerBegin) != 0;
      break;
    default:
      break;  // unknown kind: payload skipped
  }
  backwards += (enter < last_enter) & have_last;
  last_enter = enter;
  have_last = true;
  ++events;
}

RankTrace::Cursor::Cursor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RankTrace::Cursor::Cursor(Cursor&&) noexcept = default;
RankTrace::Cursor::~Cursor() = default;

RankTrace::Cursor RankTrace::stream(size_t index) const {
  auto c = std::make_unique<Cursor::Impl>();
  c->rt = impl_.get();
  c->stream_index = index;
  c->kinds = impl_->kinds.data();
  c->buffer = impl_->take_buffer();
  c->nkinds = impl_->kinds.size();
  if (index < impl_->streams.size()) {
    const auto& s = impl_->streams[index];
    c->chunk = s.chunks.data();
    c->chunks_end = s.chunks.data() + s.chunks.size();
    c->stream_id = s.id;
  }
  return Cursor(std::move(c));
}

bool RankTrace::Cursor::next(Event& e) {
  if (!impl_) [[unlikely]] return false;
  Impl& c = *impl_;
  if (c.ready) [[unlikely]] {  // never, unless shared with a merge
    c.decode(e);
    return true;
  }
  Impl::Prepared r;
  if (!c.scan(r)) return false;
  c.fill(e, r);
  return true;
}

// ===========================================================================
// MergedCursor: k-way merge by enter time (ties: lower stream index first).
// Every live stream has its next record prepared (enter time known, nothing
// decoded); the earliest is decoded straight into the caller's Event and its
// stream prepared again. Up to kLinearMax live streams (the usual case: a few
// threads) the earliest is found by a branch-free scan over a compact key
// array; beyond that, by a binary heap of (key, stream).

namespace {
constexpr size_t kLinearMax = 16;
}

struct RankTrace::MergedCursor::Impl {
  std::vector<std::unique_ptr<Cursor::Impl>> cursors;
  // Live streams in increasing stream index, and their prepared enter times.
  std::vector<uint32_t> live;
  std::vector<uint64_t> keys;
  struct Node {
    uint64_t key;
    uint32_t index;
  };
  std::vector<Node> heap;  // when more than kLinearMax streams
  bool use_heap = false;
  bool started = false;

  static bool less(const Node& a, const Node& b) {
    return a.key < b.key || (a.key == b.key && a.index < b.index);
  }
  void sift_down(size_t i) {
    const size_t n = heap.size();
    for (;;) {
      size_t l = 2 * i + 1, m = i;
      if (l < n && less(heap[l], heap[m])) m = l;
      if (l + 1 < n && less(heap[l + 1], heap[m])) m = l + 1;
      if (m == i) return;
      std::swap(heap[i], heap[m]);
      i = m;
    }
  }
  void start() {
    started = true;
    for (uint32_t i = 0; i < cursors.size(); ++i)
      if (cursors[i]->prepare()) {
        live.push_back(i);
        keys.push_back(cursors[i]->prepared.enter);
      }
    use_heap = live.size() > kLinearMax;
    if (use_heap) {
      for (size_t j = 0; j < live.size(); ++j) heap.push_back({keys[j], live[j]});
      for (size_t i = heap.size() / 2; i-- > 0;) sift_down(i);
    }
  }
};

RankTrace::MergedCursor::MergedCursor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RankTrace::MergedCursor::MergedCursor(MergedCursor&&) noexcept = default;
RankTrace::MergedCursor::~MergedCursor() = default;

RankTrace::MergedCursor RankTrace::events() const {
  auto m = std::make_unique<MergedCursor::Impl>();
  const size_t n = stream_count();
  m->cursors.reserve(n);
  for (size_t i = 0; i < n; ++i) m->cursors.push_back(std::move(stream(i).impl_));
  return MergedCursor(std::move(m));
}

bool RankTrace::MergedCursor::next(Event& e) {
  if (!impl_) return false;
  Impl& m = *impl_;
  if (m.cursors.size() == 1) {
    Cursor::Impl& c = *m.cursors[0];
    Cursor::Impl::Prepared r;
    if (!c.scan(r)) return false;
    c.fill(e, r);
    return true;
  }
  if (!m.started) m.start();

  if (m.use_heap) {
    if (m.heap.empty()) return false;
    Impl::Node& top = m.heap[0];
    Cursor::Impl& c = *m.cursors[top.index];
    c.decode(e);
    if (c.prepare()) {
      top.key = c.prepared.enter;
    } else {
      m.heap[0] = m.heap.back();
      m.heap.pop_back();
    }
    if (!m.heap.empty()) m.sift_down(0);
    return true;
  }

  const size_t n = m.keys.size();
  if (n == 0) return false;
  const uint64_t* k = m.keys.data();
  size_t best = 0;
  uint64_t best_key = k[0];
  for (size_t j = 1; j < n; ++j) {
    const bool lt = k[j] < best_key;  // strict: the lower stream index wins ties
    best = lt ? j : best;
    best_key = lt ? k[j] : best_key;
  }
  Cursor::Impl& c = *m.cursors[m.live[best]];
  c.decode(e);
  if (c.prepare()) {
    m.keys[best] = c.prepared.enter;
  } else {  // keep `live` in stream order
    m.live.erase(m.live.begin() + static_cast<ptrdiff_t>(best));
    m.keys.erase(m.keys.begin() + static_cast<ptrdiff_t>(best));
  }
  return true;
}

}  // namespace prof::trace
