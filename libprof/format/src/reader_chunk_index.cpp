// The chunk index: RankTrace::open walks the chunk headers once. Definitions
// chunks are checked (CRC) and parsed; events chunks are remembered per stream
// as [payload offset, decodable length, base_time], or salvaged when unsealed
// or truncated (records walked by their length words up to the first zero
// word). A sealed events chunk's CRC is checked lazily, by the first cursor to
// enter it (verify()), so open reads little more than the chunk headers and
// the events are read once.
//
// Salvage rules beyond the format:
//   - a sealed chunk at the end of the file missing only its alignment padding
//     (< 8 bytes after `used`) is complete, not truncated: the shim appends
//     definition text without its padding, and a killed process leaves that.
//   - garbage where a chunk header should be is skipped to the next plausible
//     header (magic, known type, sane lengths) on an 8-byte boundary.
#include <sys/mman.h>

#include <algorithm>

#include "reader_internal.h"

namespace prof::trace {

namespace reader {

uint32_t salvage_records(const uint8_t* p, uint64_t avail, uint64_t* records) {
  avail &= ~uint64_t{3};
  uint64_t pos = 0, n = 0;
  while (avail - pos >= 8) {
    const uint32_t w0 = load32(p + pos);
    if (w0 == 0) break;
    const uint64_t bytes = uint64_t{format::record_words(w0)} * 4;
    if (bytes > avail - pos) break;
    pos += bytes;
    ++n;
  }
  *records = n;
  return static_cast<uint32_t>(pos);
}

namespace {
// A sealed chunk at the end of the file whose used bytes are all there and
// only its alignment padding (< 8 bytes) is not: a writer that appends the text
// of a chunk but not its padding leaves this when it is killed. Nothing is lost.
bool only_padding_missing(const ChunkHeader& h, uint64_t avail) {
  return (h.flags & format::kChunkSealed) && h.used <= avail && h.capacity - avail < 8;
}

bool header_sane(const ChunkHeader& h) {
  if (h.magic != format::kChunkMagic) return false;
  if (h.capacity % 8 != 0) return false;
  if (h.flags & ~uint16_t{format::kChunkSealed | format::kChunkHome}) return false;
  if ((h.flags & format::kChunkSealed) && h.used > h.capacity) return false;
  return true;
}
// Stricter, for resynchronizing inside garbage: a known chunk type too.
bool header_sane_strict(const ChunkHeader& h) {
  return header_sane(h) && (h.type == uint16_t(format::ChunkType::Definitions) ||
                            h.type == uint16_t(format::ChunkType::Events) ||
                            h.type == uint16_t(format::ChunkType::Live));
}
}  // namespace

}  // namespace reader

using reader::at_offset;
using reader::load32;
using reader::load64;

uint64_t RankTrace::Impl::resync(uint64_t from) const {
  const uint64_t size = map.size;
  from = format::align8(from);
  for (uint64_t o = from; o <= size && size - o >= sizeof(ChunkHeader); o += 8) {
    if (load32(map.data + o) != format::kChunkMagic) continue;
    ChunkHeader h;
    std::memcpy(&h, map.data + o, sizeof h);
    if (reader::header_sane_strict(h)) return o;
  }
  return size;
}

// The first offset from `off` (8-aligned, a zero word there) that does not
// hold a zero 64-bit word, or the last whole word's end. Read a block at a
// time like the headers (the padding before an aligned chunk runs to a few
// pages): one pread per word cost more than the rest of opening a trace.
uint64_t RankTrace::Impl::skip_zero_words(uint64_t off) const {
  uint64_t words[512];
  while (map.size - off >= 8) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof words, (map.size - off) & ~uint64_t{7}));
    read_at(off, words, n);
    size_t zeros = 0;
    while (zeros < n / 8 && words[zeros] == 0) ++zeros;
    off += zeros * 8;
    if (zeros < n / 8) break;
  }
  return off;
}

void RankTrace::Impl::index() {
  const uint64_t size = map.size;
  const uint8_t* d = map.data;
  uint64_t off = sizeof(format::FileHeader);
  if (header.header_size != sizeof(format::FileHeader)) {
    if (header.header_size > sizeof(format::FileHeader) && header.header_size % 8 == 0 &&
        header.header_size <= size) {
      off = header.header_size;  // a later version's bigger header
    } else {
      warn("header", at_offset(path, 12, "implausible header_size " +
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
        warn("truncated", at_offset(path, off, "truncated chunk header (" +
                                                 std::to_string(size - off) +
                                                 " bytes at the end of the file)"));
      }
      break;
    }
    ChunkHeader h;
    read_at(off, &h, sizeof h);
    if (!reader::header_sane(h)) {
      if (h.magic != format::kChunkMagic && load64(d + off) == 0) {  // zero padding
        off = skip_zero_words(off);
        continue;
      }
      ++stats.bad_chunk_headers;
      skipped_at.push_back(off);
      const uint64_t next = resync(off + 8);
      std::string what = h.magic != format::kChunkMagic ? "bad chunk header (garbage)"
                                                        : "implausible chunk header";
      if (next < size)
        what += "; skipped " + std::to_string(next - off) + " bytes to the chunk at offset " +
                std::to_string(next);
      else
        what += "; no further chunk found (" + std::to_string(size - off) + " bytes skipped)";
      warn("bad chunk header", at_offset(path, off, what));
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
    } else if (h.type == uint16_t(format::ChunkType::Live) &&
               header.version >= format::kFirstLiveVersion) {
      live_chunk(h, off, avail);
    } else {
      ++stats.unknown_chunk_types;
      warn("unknown chunk type", at_offset(path, off, "unknown chunk type " +
                                                         std::to_string(h.type) + " skipped"));
      if (h.capacity > avail) {
        ++stats.truncated_chunks;
        warn("truncated", at_offset(path, off, "chunk claims " + std::to_string(h.capacity) +
                                                 " payload bytes but only " +
                                                 std::to_string(avail) + " remain"));
        skipped_at.push_back(off);
        resume = resync(payload);
      }
    }
    off = resume;
  }

  if (header.version >= format::kFirstHomeVersion) order_home_chunks();
  if (header.version >= format::kFirstSequenceVersion) check_sequences();
  drop_empty_chunks();
  mark_losses();
  streams.reserve(building.size());
  for (auto& [id, s] : building) streams.push_back(std::move(s));
  building.clear();
  reported.assign(streams.size(), false);
  times.resize(streams.size());
  for (size_t i = 0; i < streams.size(); ++i) times[i].resize(streams[i].chunks.size());
  crc_state = std::make_unique<std::atomic<uint8_t>[]>(crc_checks);
  for (uint32_t i = 0; i < crc_checks; ++i) crc_state[i].store(0, std::memory_order_relaxed);

  // Local time zero: the earliest first record of any stream.
  // (Its first chunks read in the mapping: a fault per 16 pages, where a
  // buffer would be populated for a chunk or two.)
  bool have_origin = false;
  for (const auto& s : streams) {
    for (const auto& c : s.chunks) {
      if (c.len < 8) continue;
      const uint8_t* p = map.data + c.payload_off;
      if (!verify(c, p)) continue;
      uint32_t w0 = load32(p);
      uint32_t len = c.len;
      // The snapshot opening a format-3 chunk is no event (its times are 0).
      if (header.version >= format::kFirstSnapshotVersion &&
          (w0 & 0xFFFFu) == format::kSnapshotFuncId &&
          uint64_t{format::record_words(w0)} * 4 + 8 <= len) {
        const uint32_t skip = format::record_words(w0) * 4;
        p += skip;
        len -= skip;
        w0 = load32(p);
      }
      if (w0 == 0 || uint64_t{format::record_words(w0)} * 4 > len) continue;
      uint64_t t;
      if (format::record_short_time(w0)) {
        t = c.base_time + (load32(p + 4) & 0xFFFFu);
      } else if ((w0 >> 16) & format::kLongTime) {
        if (format::record_payload_words(w0) < 4) continue;
        t = c.base_time + load64(p + 12);
      } else {
        t = c.base_time + load32(p + 4);
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
  // Definitions, salvaged chunks and the first chunks were read through the
  // mapping: cursors read what they need, so nothing needs to stay resident.
  // (A small file's were read in its opening copy: nothing is mapped.)
  if (map.map) ::madvise(map.map, map.size, MADV_DONTNEED);
}

// The Live chunk: the heartbeat and the slots of threads inside a call. Only
// what the chunk and the file hold is read; a second Live chunk is ignored.
void RankTrace::Impl::live_chunk(const ChunkHeader& h, uint64_t off, uint64_t avail) {
  const uint64_t payload = off + sizeof(ChunkHeader);
  if (h.capacity > avail) {
    // The file ends inside it (a copy cut short, a full disk): what remains
    // of it cannot be told from what was never written, so none is used.
    ++stats.truncated_chunks;
    warn("truncated", at_offset(path, off, "live chunk cut: the file ends " + std::to_string(avail) +
                                               " bytes into its " + std::to_string(h.capacity) +
                                               "; its heartbeat and calls in flight are not used"));
    return;
  }
  const uint64_t room = h.capacity;
  if (room < sizeof(format::LiveHeader)) {
    warn("live", at_offset(path, off, "live chunk too short for its header"));
    return;
  }
  if (heartbeat != 0 || !live_slots.empty()) {
    warn("live", at_offset(path, off, "second live chunk ignored"));
    return;
  }
  format::LiveHeader lh;
  std::memcpy(&lh, map.data + payload, sizeof lh);
  heartbeat = lh.heartbeat;
  if (lh.slot_bytes < sizeof(format::InFlightSlot)) {
    if (lh.slot_count) warn("live", at_offset(path, off, "live chunk: implausible slot size"));
    return;
  }
  const uint64_t fit = (room - sizeof lh) / lh.slot_bytes;
  const uint64_t n = std::min<uint64_t>(lh.slot_count, fit);
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t* at = map.data + payload + sizeof lh + i * lh.slot_bytes;
    format::LiveSlot slot{};
    std::memcpy(&slot.slot, at, sizeof slot.slot);
    // The binding's site, where the stride has room for it (format::LiveSlot).
    if (lh.slot_bytes >= format::kBindingSiteOffset + sizeof slot.binding_site)
      std::memcpy(&slot.binding_site, at + format::kBindingSiteOffset, sizeof slot.binding_site);
    if (slot.slot.enter != 0) live_slots.emplace_back(static_cast<uint32_t>(i), slot);
    if (header.version >= format::kFirstHomeVersion &&
        lh.slot_bytes >= format::kHomeCopyOffset + sizeof slot.home_copy) {
      uint64_t copy;
      std::memcpy(&copy, at + format::kHomeCopyOffset, sizeof copy);
      if (copy != 0) home_copies.emplace_back(static_cast<uint32_t>(i), copy);
    }
    if (header.version >= format::kFirstSequenceVersion &&
        lh.slot_bytes >= format::kChunkCountOffset + sizeof slot.chunks) {
      uint32_t count;
      std::memcpy(&count, at + format::kChunkCountOffset, sizeof count);
      if (count != 0) chunk_counts.emplace_back(static_cast<uint32_t>(i), count);
    }
  }
}

// Format 5: a stream's home chunk is its newest, so it goes after the
// stream's other chunks, which lie in file order. A process that ended while
// a thread copied its home out left the copy's state in the thread's slot:
// copying (the copy at that offset may be partial; the home has every
// record) or copied (the copy is whole; the home may be half emptied). The
// chunk that may not be whole is dropped, so each record is read once.
void RankTrace::Impl::order_home_chunks() {
  for (const auto& [stream, word] : home_copies) {
    auto it = building.find(stream);
    if (it == building.end()) continue;
    const uint64_t at = word & ~format::kHomeCopyStateMask;
    const uint64_t state = word & format::kHomeCopyStateMask;
    auto& chunks = it->second.chunks;
    for (auto c = chunks.begin(); c != chunks.end();) {
      const bool drop = state == format::kHomeCopying ? !c->home && c->header_off == at
                                                       : state == format::kHomeCopied && c->home;
      if (drop) {
        event_bytes -= c->len;
        c = chunks.erase(c);
      } else {
        ++c;
      }
    }
  }
  for (auto& [id, s] : building)
    std::stable_partition(s.chunks.begin(), s.chunks.end(),
                          [](const ChunkRef& c) { return !c.home; });
}

// Format 8: in stream order a stream's chunks are numbered 0, 1, 2, ...
// (modulo 2^16). A number skipped is a chunk the file lost: the chunk after
// the jump follows lost data. A stream whose Live slot counts more chunks
// than the stream has lost its newest ones: its last chunk is cut. (A
// stream with a count and no chunk at all is in no stream list: counted and
// described only.)
void RankTrace::Impl::check_sequences() {
  std::map<uint32_t, uint32_t> counted(chunk_counts.begin(), chunk_counts.end());
  auto describe = [&](uint32_t stream, uint64_t at, uint64_t missing, const std::string& where) {
    stats.missing_chunks += missing;
    warn("missing chunks", at_offset(path, at, std::to_string(missing) + " events chunk" +
                                                   (missing == 1 ? "" : "s") + " of stream " +
                                                   std::to_string(stream) + " missing " + where));
  };
  for (auto& [id, s] : building) {
    uint64_t found = 0;  // chunks of the stream so far, the missing ones included
    for (ChunkRef& c : s.chunks) {
      const uint16_t gap = static_cast<uint16_t>(c.sequence - static_cast<uint16_t>(found));
      if (gap != 0) {
        c.lost_before = true;
        describe(id, c.header_off, gap,
                 "before this chunk (numbered " + std::to_string(c.sequence) + ", expected " +
                     std::to_string(static_cast<uint16_t>(found)) + ")");
      }
      found += uint64_t{gap} + 1;
    }
    auto it = counted.find(id);
    if (it == counted.end()) continue;
    if (it->second > found && !s.chunks.empty()) {
      s.chunks.back().cut = true;
      describe(id, s.chunks.back().header_off, it->second - found,
               "after this chunk, the stream's last in the file (its live slot counts " +
                   std::to_string(it->second) + ")");
    }
    counted.erase(it);
  }
  for (const auto& [id, count] : counted)
    describe(id, 0, count, "(its live slot counts " + std::to_string(count) +
                               "; none is in the file)");
}

void RankTrace::Impl::drop_empty_chunks() {
  for (auto& [id, s] : building) {
    std::vector<ChunkRef> kept;
    kept.reserve(s.chunks.size());
    bool lost = false;  // before the next chunk kept
    for (ChunkRef& c : s.chunks) {
      if (c.len == 0 && !c.cut) {
        lost |= c.lost_before;
        continue;
      }
      c.lost_before |= lost;
      lost = false;
      kept.push_back(c);
    }
    if (lost && !kept.empty()) kept.back().cut = true;
    s.chunks = std::move(kept);
  }
  std::erase_if(building, [](const auto& entry) { return entry.second.chunks.empty(); });
}

// A stretch skipped at offset X may have held any stream's chunks: in each
// stream, the first chunk after X in the file (else its home chunk, the
// newest, wherever it lies) may follow lost data.
void RankTrace::Impl::mark_losses() {
  for (const uint64_t at : skipped_at)
    for (auto& [id, s] : building) {
      bool marked = false;
      for (ChunkRef& c : s.chunks)
        if (!c.home && c.header_off > at) {
          c.lost_before = marked = true;
          break;
        }
      if (!marked && !s.chunks.empty() && s.chunks.back().home) s.chunks.back().lost_before = true;
    }
}

void RankTrace::Impl::events_chunk(const ChunkHeader& h, uint64_t off, uint64_t avail,
                                   uint64_t* resume) {
  const uint64_t payload = off + sizeof(ChunkHeader);
  const uint8_t* p = map.data + payload;
  const bool sealed = h.flags & format::kChunkSealed;
  const bool truncated = h.capacity > avail && !reader::only_padding_missing(h, avail);
  const std::string where = " (stream " + std::to_string(h.stream) + ")";
  ChunkRef ref;
  ref.header_off = off;
  ref.payload_off = payload;
  ref.base_time = h.base_time;
  ref.sealed = sealed;
  ref.stream = h.stream;
  ref.sequence = h.sequence;
  ref.home = h.flags & format::kChunkHome;
  ref.end_off = payload + std::min<uint64_t>(h.capacity, avail);

  if (sealed && h.used <= avail) {
    // The CRC is checked when a cursor enters the chunk (verify()).
    ref.len = h.used;
    ref.crc = h.crc32;
    ref.check = crc_checks++;
    if (truncated) {
      // The used bytes are all there; only the reserved tail is cut.
      ++stats.truncated_chunks;
      warn("truncated", at_offset(path, off, "chunk claims " + std::to_string(h.capacity) +
                                               " payload bytes but only " +
                                               std::to_string(avail) +
                                               " remain; its sealed data is intact"));
      *resume = resync(payload + h.used);
    }
  } else {
    const uint64_t room = truncated ? avail : h.capacity;
    uint64_t records = 0;
    ref.len = reader::salvage_records(p, room, &records);
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
    warn(truncated ? "truncated" : "unsealed", at_offset(path, off, what));
    if (truncated) {
      ref.cut = true;
      *resume = resync(payload + ref.len);
    }
  }
  event_bytes += ref.len;
  // (One with nothing to decode stays until its number is checked:
  // drop_empty_chunks.)
  auto& s = building[h.stream];
  s.id = h.stream;
  s.chunks.push_back(ref);
}

void RankTrace::Impl::definitions_chunk(const ChunkHeader& h, uint64_t off, uint64_t avail,
                                        uint64_t* resume) {
  const uint64_t payload = off + sizeof(ChunkHeader);
  const char* p = reinterpret_cast<const char*>(map.data + payload);
  const bool sealed = h.flags & format::kChunkSealed;
  const bool truncated = h.capacity > avail && !reader::only_padding_missing(h, avail);
  if (truncated) {
    ++stats.truncated_chunks;
    skipped_at.push_back(off);
    *resume = resync(payload + std::min<uint64_t>(avail, sealed ? h.used : avail));
  }
  if (sealed && h.used <= avail) {
    if (format::crc32c(p, h.used) != h.crc32) {
      ++stats.crc_mismatches;
      warn("crc", at_offset(path, off, "CRC mismatch in definitions chunk at offset " +
                                         std::to_string(off) + ": skipped"));
      return;
    }
    if (truncated)
      warn("truncated", at_offset(path, off, "chunk claims " + std::to_string(h.capacity) +
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
  warn(truncated ? "truncated" : "unsealed", at_offset(path, off, what));
  parse_definitions(std::string_view(p, n), payload, true);
}

bool RankTrace::Impl::verify(const ChunkRef& c, const uint8_t* data) const {
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
      if (++crc_warned <= reader::kWarnCap)
        warnings.push_back(at_offset(path, c.header_off,
                                   "CRC mismatch in events chunk at offset " +
                                       std::to_string(c.header_off) + " (stream " +
                                       std::to_string(c.stream) + "): " +
                                       std::to_string(c.len) + " payload bytes skipped"));
      else if (crc_warned == reader::kWarnCap + 1)
        warnings.push_back(path + ": more events-chunk CRC warnings not shown "
                                  "(crc_mismatches counts them all)");
    }
  }
  return s == 1;
}

}  // namespace prof::trace
