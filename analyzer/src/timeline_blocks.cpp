// The timeline layer (timeline.h): where a row's blocks of calls are kept.
//
// A block is packed into its build thread's stage (BlockStage,
// timeline_impl.h); a full stage, and the last one, is kept in memory while
// TimelineOptions::memory_bytes allows, else appended to an unlinked spill
// file and reused. Queries unpack a block from memory or read it back from
// the file (through the page cache).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "timeline_impl.h"

namespace prof::analysis::timeline_detail {

bool Impl::spill(const uint8_t* data, size_t size, uint64_t* offset) {
  uint64_t at;
  {
    // Only the file's room is taken under the lock: threads write their
    // ranges at the same time.
    std::lock_guard lock(spill_mutex);
    if (spill_fd < 0) {
      std::string dir = options.spill_dir;
      if (dir.empty()) {
        const char* tmp = std::getenv("TMPDIR");
        dir = tmp && *tmp ? tmp : "/tmp";
      }
      std::string path = dir + "/prof-timeline-XXXXXX";
      spill_fd = mkstemp(path.data());
      if (spill_fd < 0) return false;
      unlink(path.c_str());  // gone with the last descriptor
    }
    at = spill_end;
    spill_end += size;
    // The file's blocks are reserved ahead, kSpillReserve at a time, so
    // the writes below allocate none (where the file system cannot
    // reserve, they allocate as before).
    while (spill_reserved < spill_end) {
      if (fallocate(spill_fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(spill_reserved),
                    static_cast<off_t>(kSpillReserve)) != 0)
        spill_reserved = UINT64_MAX;
      else
        spill_reserved += kSpillReserve;
    }
  }
  // Written kSpillPiece at a time. With the reservation, the kernel's
  // copy into the page cache took about a third of the system time of one
  // write per 4 MiB stage (ext4, 0.74 GB: docs/design/timeline.md, the
  // spill file).
  const char* p = reinterpret_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    const size_t piece = std::min(size - done, kSpillPiece);
    const ssize_t n = pwrite(spill_fd, p + done, piece, static_cast<off_t>(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  *offset = at;
  return true;
}

BlockStage::~BlockStage() {
  if (buffer && blocks.empty()) ::munmap(buffer, kStageBytes);
}

Impl::~Impl() {
  for (const auto& [address, bytes] : kept_stages) ::munmap(address, bytes);
}

void Impl::retire(BlockStage& stage) {
  if (stage.blocks.empty()) return;
  // Kept while the budget allows, the threads taking their share of it a
  // stage at a time.
  bool keep = false;
  uint64_t kept = memory_used.load(std::memory_order_relaxed);
  while (kept + stage.used <= options.memory_bytes)
    if (memory_used.compare_exchange_weak(kept, kept + stage.used, std::memory_order_relaxed)) {
      keep = true;
      break;
    }
  uint64_t base = 0;
  if (!keep && !spill(stage.buffer, stage.used, &base)) {  // no room on disk: memory it is
    std::lock_guard lock(warnings_mutex);
    if (!spill_failed) warning_list.push_back("timeline: cannot write the spill file; records stay in memory");
    spill_failed = true;
    memory_used.fetch_add(stage.used, std::memory_order_relaxed);
    keep = true;
  }
  if (keep) {
    // The blocks stay where they are; the buffer is the timeline's, less
    // its pages never written.
    static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t bytes = (stage.used + page - 1) / page * page;
    if (bytes < BlockStage::kStageBytes) ::munmap(stage.buffer + bytes, BlockStage::kStageBytes - bytes);
    std::lock_guard lock(kept_mutex);
    kept_stages.emplace_back(stage.buffer, bytes);
    stage.buffer = nullptr;
  } else {
    for (const auto& [row, b] : stage.blocks) {
      std::unique_lock lock(row->mutex);
      BlockInfo& info = row->blocks[b];
      info.file_offset = base + static_cast<uint64_t>(info.memory - stage.buffer);
      info.memory = nullptr;
    }
  }
  stage.blocks.clear();
  stage.used = 0;
}

const uint8_t* Impl::packed_block(const Row& row, size_t b, std::vector<uint8_t>& scratch) const {
  const BlockInfo& info = row.blocks[b];
  if (info.memory) return info.memory;
  scratch.resize(info.packed_bytes);
  size_t done = 0;
  while (done < scratch.size()) {
    const ssize_t n = pread(spill_fd, scratch.data() + done, scratch.size() - done,
                            static_cast<off_t>(info.file_offset + done));
    if (n <= 0) return nullptr;  // (cannot happen short of a disk error)
    done += static_cast<size_t>(n);
  }
  return scratch.data();
}

const Record* Impl::block_records(const Row& row, size_t b, std::vector<Record>& buffer) const {
  const BlockInfo& info = row.blocks[b];
  buffer.resize(info.count);
  thread_local std::vector<uint8_t> bytes;
  if (const uint8_t* p = packed_block(row, b, bytes))
    packing::unpack(p, info.count, buffer.data());
  else
    std::fill(buffer.begin(), buffer.end(), Record{});
  return buffer.data();
}

void Impl::block_times(const Row& row, size_t b, int64_t* enter, uint32_t* duration) const {
  const BlockInfo& info = row.blocks[b];
  thread_local std::vector<uint8_t> bytes;
  if (const uint8_t* p = packed_block(row, b, bytes)) {
    packing::unpack_times(p, info.count, enter, duration);
  } else {
    std::fill(enter, enter + info.count, 0);
    std::fill(duration, duration + info.count, 0);
  }
}

// Publishes a row's pending records as one block, packed into the stage
// (caller: the row's builder).
void Impl::publish(Row& row, BlockStage& stage) {
  if (!row.pending || row.pending->size == 0) return;
  const CallColumns& calls = *row.pending;
  const uint32_t count = calls.size;
  BlockInfo info;
  info.count = count;
  info.first_enter = calls.enter[0];
  const packing::PackPlan plan = packing::plan_packing(calls);
  info.packed_bytes = static_cast<uint32_t>(plan.bytes);
  // (A packed block is at most kHeaderBytes + 64 KiB: it fits a stage.)
  if (stage.used + plan.bytes > BlockStage::kStageBytes) retire(stage);
  if (!stage.buffer) {
    void* p = ::mmap(nullptr, BlockStage::kStageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    stage.buffer = static_cast<uint8_t*>(p);
  }
  info.memory = stage.buffer + stage.used;
  packing::write_packed(calls, plan, stage.buffer + stage.used);
  stage.used += plan.bytes;
  // The stage's entry for the block must not fail to be added once the row
  // lists it (the stage places its blocks when retired): room for it first.
  if (stage.blocks.size() == stage.blocks.capacity()) stage.blocks.reserve(2 * stage.blocks.size() + 64);
  std::unique_lock lock(row.mutex);
  for (const auto& [index, value] : row.pending_durations) row.big_durations[index] = value;
  for (const auto& [index, value] : row.pending_bytes) row.big_bytes[index] = value;
  const uint64_t first_index = row.count;
  const int64_t block_leave = row.pyramid.add_calls(
      calls, first_index,
      [&](uint32_t j) {
        if (!(calls.flags(j) & kDurationOverflow)) return uint64_t{calls.duration[j]};
        const auto it = row.big_durations.find(first_index + j);
        return it != row.big_durations.end() ? it->second : uint64_t{calls.duration[j]};
      },
      row.has_published_leave, row.published_leave);
  const int64_t max_leave = row.blocks.empty() ? block_leave : std::max(block_leave, row.blocks.back().max_leave);
  info.max_leave = max_leave;
  row.blocks.push_back(std::move(info));
  stage.blocks.emplace_back(&row, row.blocks.size() - 1);
  row.count += count;
  lock.unlock();
  row.pending->size = 0;
  row.pending->max_leave = 0;
  row.pending_durations.clear();
  row.pending_bytes.clear();
  int64_t seen = last_leave.load(std::memory_order_relaxed);
  while (max_leave > seen && !last_leave.compare_exchange_weak(seen, max_leave)) {}
  events_built.fetch_add(count, std::memory_order_relaxed);
}

}  // namespace prof::analysis::timeline_detail
