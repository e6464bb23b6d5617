// Markers: begin and end of a user's interval (markers.h), raw (a tagged
// message the application sends to MPI_PROC_NULL) or through prof_marker_at
// with an explicit file and line. Each becomes a marker record and updates the
// thread's open intervals, which every new chunk starts with. And the call
// sites of markers and of every MPI call (resolve_call_site: a thread's cache
// missed).
//
// Invariant: call sites get ids once each (by address or by file:line),
// under defs_mu; an MPI call's site index is defined before any record
// carries it.
#include "runtime_internal.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "binding_site.h"
#include "prof/bcast/segment.h"
#include "prof/bcast/shm.h"
#include "prof/definition_lines.h"
#include "prof/settings.h"
#include "run_facts.h"
#include "trace_file.h"

namespace prof::shim {

// The id of the call site at `address`; a new one's S line is written, or
// appended to *lines when given (to go out with other definitions).
uint32_t callsite_id_for_address(uintptr_t address, std::string* lines) {
  std::lock_guard<std::mutex> lock(rt->defs_mu);
  auto [it, inserted] = rt->callsite_by_address.try_emplace(address, rt->next_callsite);
  if (inserted) {
    ++rt->next_callsite;
    std::string line = format::definition_line::callsite(it->second, address, "", 0);
    if (lines) *lines += line;
    else define(line);
  }
  return it->second;
}

// The call's site as the rank's table has it; a site seen for the first time
// takes its function's next index and is defined (S line, A line) before
// any record carries it. Sites past a function's kSiteIndexes-th get 0, and
// so do all with PROF_CALLSITES=0.
// A call through a Fortran binding (the slot's binding_site set) is the
// binding's call site: its return address, inside the binding, is held by
// the thread's first cache only while a Fortran wrapper lends it
// (binding_site.h; the fast paths take a hit there as the call's site), so
// such a call is looked up here, in the second cache, by the binding site,
// and its return address is kept as the key the next call's lends.
uint32_t resolve_call_site(ThreadState* ts) {
  const uint64_t return_key = ts->slot->site_func;
  const uint64_t binding =
      reinterpret_cast<const format::LiveSlot*>(ts->slot)->binding_site & format::kSiteMask;
  const uint64_t key = binding ? (return_key & ~format::kSiteMask) | binding : return_key;
  const size_t i = site_cache_index(key);
  const uint16_t func = uint16_t(key >> 48);
  if (binding) {
    const size_t r = site_cache_index(return_key);
    if (ts->site_keys[r] == return_key) ts->site_keys[r] = 0;
    if (func < format::kRepeatFuncs)
      __atomic_store_n(&binding_call_keys[func], return_key, __ATOMIC_RELAXED);
    if (ts->binding_keys[i] == key) return ts->binding_words[i];
  }
  const uintptr_t address = uintptr_t(key & format::kSiteMask);
  uint32_t bits = 0;
  // PROF_CALLSITES=0: every site reads 0 (unknown), cached like any other,
  // so the hot path stays as it is and nothing is defined.
  if (rt && rt->cfg.callsites && address != 0 && func < format::kRepeatFuncs) {
    std::lock_guard<std::mutex> lock(rt->defs_mu);
    auto [it, inserted] = rt->call_site_bits.try_emplace(key, 0);
    if (inserted && rt->sites_of_function[func] < format::kSiteIndexes) {
      const uint32_t index = ++rt->sites_of_function[func];
      auto [site, new_site] = rt->callsite_by_address.try_emplace(address, rt->next_callsite);
      std::string lines;
      if (new_site) {
        ++rt->next_callsite;
        lines = format::definition_line::callsite(site->second, address, "", 0);
      }
      lines += format::definition_line::call_site_index(func, index, site->second);
      define(lines);
      it->second = uint16_t(index << format::kSiteShift);
    }
    bits = it->second;
  }
  const format::FuncKind kind =
      func >= 1 && func <= kFunctionCount ? kFunctions[func - 1].kind : format::FuncKind::Marker;
  const uint32_t word = site_first_word(kind, func, bits);
  if (binding) {
    ts->binding_keys[i] = key;
    ts->binding_words[i] = word;
  } else {
    ts->site_keys[i] = key;
    ts->site_words[i] = word;
  }
  return word;
}

void record_marker(uint16_t id, bool begin, uint32_t callsite) {
  ThreadState* ts = call_begin();
  if (!ts) return;
  const uint64_t t = now();
  Rec r(ts, t, t, true, begin ? format::kMarkerBegin : 0, 12);
  r.enc().word(id);
  r.enc().word(callsite);
  r.commit(format::kMarkerFuncId, false);  // never below kRepeatFuncs
  format::apply_marker(ts->open_intervals, begin, id, callsite, t);
  call_end(ts);
}

void on_raw_marker(int tag, void* return_address) {
  if (!g.recording || !rt) return;
  ThreadState* ts = tls_state;
  if (attached(ts) && ts->in_call) return;  // our own traffic or MPI calling MPI
  const format::MarkerTag m = format::decode_marker_tag(tag);
  const uintptr_t site = first_frame_outside_mpi(reinterpret_cast<uintptr_t>(return_address));
  record_marker(m.id, m.begin, callsite_id_for_address(site));
}

}  // namespace prof::shim

using namespace prof::shim;

// ---------------------------------------------------------------------------
// Hand-written entry points.
extern "C" {

// markers.h: explicit file and line, weakly referenced by the application.
PROF_EXPORT void prof_marker_at(int id, int begin, const char* file,
                                                            int line) {
  if (!g.recording || !rt) return;
  // A marker's id is 16 bits in the record: one outside them would be taken
  // for another interval's, so it is not recorded, and said once.
  if (id < 0 || id > 0xFFFF) {
    static std::atomic<bool> told{false};
    if (!told.exchange(true))
      say(kWarn, "rank " + std::to_string(rt->rank) + ": interval id " + std::to_string(id) + " at " +
                     (file ? file : "?") + ":" + std::to_string(line) +
                     " is outside 0..65535; markers with such ids are not recorded");
    return;
  }
  uint32_t site;
  {
    std::lock_guard<std::mutex> lock(rt->defs_mu);
    std::string key = std::string(file ? file : "") + ":" + std::to_string(line);
    auto [it, inserted] = rt->callsite_by_file_line.try_emplace(key, rt->next_callsite);
    if (inserted) {
      ++rt->next_callsite;
      define(prof::format::definition_line::callsite(it->second, 0, file ? file : "", uint32_t(line)));
    }
    site = it->second;
  }
  record_marker(uint16_t(id), begin != 0, site);
}

}  // extern "C"

