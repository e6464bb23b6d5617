// TraceDir: every rank-*.prof file of a directory, checked to belong to one run.
//
// The run is what most readable files agree on (run_id, then world_size; a tie
// goes to the value of the lowest-ranked file). A file that cannot be opened,
// or disagrees with the run, or repeats a rank already taken, or has a rank
// outside [0, world_size), is skipped with a warning; each missing rank gets a
// warning (the first 100, then a count).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "prof/definition_lines.h"
#include "prof/trace_reader.h"
#include "reader_internal.h"

namespace prof::trace {
namespace {
using format::hex;
std::string rank_file_name(int r) {
  char b[64];
  std::snprintf(b, sizeof b, format::kRankFilePattern, r);
  return b;
}
template <class T, class Get>
T majority(const std::vector<std::unique_ptr<RankTrace>>& files, Get get) {
  std::map<T, size_t> count;
  for (const auto& f : files) ++count[get(*f)];
  // files are sorted by rank: the first file holding a top value breaks ties.
  size_t best = 0;
  for (const auto& [v, n] : count) best = std::max(best, n);
  for (const auto& f : files)
    if (count[get(*f)] == best) return get(*f);
  return T{};
}
}  // namespace

bool TraceDir::list(const std::string& dir, Files* files, std::vector<std::string>* errors) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    errors->push_back(dir + ": not a trace directory" +
                      (ec ? ": " + ec.message() : std::string(" (missing or not a directory)")));
    return false;
  }
  fs::directory_iterator it(dir, ec);
  if (ec) {
    errors->push_back(dir + ": cannot read trace directory: " + ec.message());
    return false;
  }
  std::vector<std::string> found;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    std::string name = it->path().filename().string();
    if (format::is_rank_file_name(name)) found.push_back(std::move(name));
  }
  if (ec) {
    errors->push_back(dir + ": cannot read trace directory: " + ec.message());
    return false;
  }
  std::sort(found.begin(), found.end());
  if (found.empty()) {
    errors->push_back(dir + ": no rank-*.prof files");
    return false;
  }
  files->names = std::move(found);
  files->traces.resize(files->names.size());
  files->open_errors.resize(files->names.size());
  return true;
}

void TraceDir::open_files(const std::string& dir, Files& files, size_t lo, size_t hi, bool with_ends) {
  namespace fs = std::filesystem;
  // Files are opened in parallel (indexing is per file); results keep name order.
  // Bad input is an open error, never an exception; what does throw (memory
  // running out) goes to the caller once every thread is done, as it would
  // from one thread, instead of ending the process from a pool thread.
  std::atomic<size_t> next{lo};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto work = [&] {
    try {
      for (size_t i; (i = next.fetch_add(1)) < hi;) {
        files.traces[i] = RankTrace::open((fs::path(dir) / files.names[i]).string(), &files.open_errors[i]);
        const RankTrace* t = files.traces[i].get();
        if (!with_ends || !t) continue;
        t->in_flight();
        if (t->heartbeat() != 0) t->last_alive();
      }
    } catch (...) {
      next = hi;  // (the others stop at their next file)
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  const size_t n = std::min<size_t>(hi - std::min(lo, hi), std::max(1u, std::thread::hardware_concurrency()));
  reader::reserve_descriptors(hi - std::min(lo, hi));
  std::vector<std::thread> pool;
  try {
    for (size_t k = 1; k < n; ++k) pool.emplace_back(work);
  } catch (const std::system_error&) {
    // (No more threads to be had: those started and this one do the rest.)
  }
  work();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

TraceDir TraceDir::open(const std::string& dir) {
  Files files;
  TraceDir td;
  if (!list(dir, &files, &td.errors)) return td;
  open_files(dir, files, 0, files.names.size());
  return assemble(dir, std::move(files));
}

TraceDir TraceDir::assemble(const std::string& dir, Files&& files) {
  namespace fs = std::filesystem;
  TraceDir td;
  const std::vector<std::string>& names = files.names;
  std::vector<std::unique_ptr<RankTrace>>& slots = files.traces;
  const std::vector<std::string>& errs = files.open_errors;
  std::map<const RankTrace*, int> held_by;
  if (!files.holder.empty())
    for (size_t i = 0; i < names.size(); ++i)
      if (slots[i]) held_by[slots[i].get()] = files.holder[i];
  std::vector<std::unique_ptr<RankTrace>> opened;
  for (size_t i = 0; i < names.size(); ++i) {
    if (slots[i]) opened.push_back(std::move(slots[i]));
    else td.warnings.push_back(errs[i] + " (rank file skipped)");
  }
  if (opened.empty()) {
    td.errors.push_back(dir + ": none of the " + std::to_string(names.size()) +
                        " rank files is readable");
    return td;
  }
  // Order by rank; a file named after its rank comes first among equals.
  auto named_right = [](const RankTrace& t) {
    return fs::path(t.path()).filename().string() == rank_file_name(t.rank());
  };
  std::stable_sort(opened.begin(), opened.end(), [&](const auto& a, const auto& b) {
    if (a->rank() != b->rank()) return a->rank() < b->rank();
    return named_right(*a) && !named_right(*b);
  });

  const uint64_t run_id =
      majority<uint64_t>(opened, [](const RankTrace& t) { return t.header().run_id; });
  std::vector<std::unique_ptr<RankTrace>> same_run;
  for (auto& t : opened) {
    if (t->header().run_id != run_id) {
      td.warnings.push_back(t->path() + ": run_id " + hex(t->header().run_id) +
                            " differs from the run's " + hex(run_id) +
                            ": foreign rank file skipped");
      continue;
    }
    same_run.push_back(std::move(t));
  }
  const int32_t world =
      majority<int32_t>(same_run, [](const RankTrace& t) { return t.header().world_size; });
  td.world_size = world;
  const RankTrace* prev = nullptr;
  for (auto& t : same_run) {
    if (t->header().world_size != world) {
      td.warnings.push_back(t->path() + ": world_size " +
                            std::to_string(t->header().world_size) + " differs from the run's " +
                            std::to_string(world) + ": rank file skipped");
      continue;
    }
    if (t->rank() < 0 || t->rank() >= world) {
      td.warnings.push_back(t->path() + ": rank " + std::to_string(t->rank()) +
                            " outside the world of " + std::to_string(world) +
                            ": rank file skipped");
      continue;
    }
    if (prev && prev->rank() == t->rank()) {
      td.warnings.push_back(t->path() + ": duplicate rank " + std::to_string(t->rank()) +
                            " (already read from " + prev->path() + "): rank file skipped");
      continue;
    }
    if (!held_by.empty()) td.holder.push_back(held_by[t.get()]);
    td.ranks.push_back(std::move(t));
    prev = td.ranks.back().get();
  }

  // Missing ranks (walking the gaps: bounded even for an absurd world_size).
  uint64_t missing = 0;
  int32_t expect = 0;
  auto gap = [&](int32_t upto) {
    for (int32_t r = expect; r < upto; ++r) {
      if (++missing > 100) {
        missing += static_cast<uint64_t>(upto - r - 1);
        break;
      }
      td.warnings.push_back(dir + ": rank " + std::to_string(r) + " missing (no readable " +
                            rank_file_name(r) + " of this run)");
    }
  };
  for (const auto& t : td.ranks) {
    gap(t->rank());
    expect = t->rank() + 1;
  }
  if (world > 0) gap(world);
  if (missing > 100)
    td.warnings.push_back(dir + ": " + std::to_string(missing - 100) +
                          " more missing ranks not listed (" + std::to_string(missing) +
                          " missing in all)");
  if (td.ranks.empty()) td.errors.push_back(dir + ": no usable rank file");
  return td;
}

}  // namespace prof::trace
