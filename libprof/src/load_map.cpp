// The process's load map and call sites: the objects loaded (path, address,
// GNU build id) for the start definitions, and the address ranges of the MPI
// libraries and the shim, so that a call site is the application's first
// frame outside them (Fortran and other bindings call through MPI).
//
// Invariant: Runtime::mpi_ranges is filled once, at MPI_Init, before
// recording starts; afterwards it is only read.
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

#include "prof/bcast/segment.h"
#include "prof/bcast/shm.h"
#include "prof/definition_lines.h"
#include "prof/settings.h"
#include "run_facts.h"
#include "trace_file.h"

namespace prof::shim {

namespace {

std::string read_file(const char* path) {
  std::string s;
  FILE* f = std::fopen(path, "rb");
  if (!f) return s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

}  // namespace

std::string exe_path() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

std::string command_line() {
  std::string raw = read_file("/proc/self/cmdline");
  for (char& c : raw)
    if (c == '\0') c = ' ';
  while (!raw.empty() && raw.back() == ' ') raw.pop_back();
  for (char& c : raw)
    if (c == '\t' || c == '\n') c = ' ';
  return raw;
}

namespace {

// The GNU build id of a loaded object, hex ("" when it has none), read from
// its note segment in memory: the analysis compares it with the file it
// resolves call sites in, so a binary rebuilt after the run is noticed.
std::string loaded_build_id(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* at = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = at + ph.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, at, sizeof note);
      const unsigned char* name = at + sizeof note;
      const unsigned char* desc = name + ((note.n_namesz + 3) & ~3u);
      const unsigned char* next = desc + ((note.n_descsz + 3) & ~3u);
      if (next > end) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static const char digits[] = "0123456789abcdef";
        std::string hex;
        for (unsigned k = 0; k < note.n_descsz; ++k) {
          hex += digits[desc[k] >> 4];
          hex += digits[desc[k] & 15];
        }
        return hex;
      }
      at = next;
    }
  }
  return {};
}

}  // namespace

int collect_load_map(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
  std::string path = info->dlpi_name ? info->dlpi_name : "";
  if (path.empty()) path = exe_path();  // the main program
  *out += format::definition_line::load_object(info->dlpi_addr, path);
  if (const std::string id = loaded_build_id(info); !id.empty())
    *out += format::definition_line::build_id(info->dlpi_addr, id);
  const bool mpi = path.find("libmpi") != std::string::npos ||
                   path.find("libprof.so") != std::string::npos ||
                   path.find("libmpich") != std::string::npos;
  if (mpi && rt) {
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const auto& ph = info->dlpi_phdr[i];
      if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
        rt->mpi_ranges.emplace_back(info->dlpi_addr + ph.p_vaddr,
                                    info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
    }
  }
  return 0;
}

namespace {

bool in_mpi_libraries(uintptr_t a) {
  for (const auto& [lo, hi] : rt->mpi_ranges)
    if (a >= lo && a < hi) return true;
  return false;
}

}  // namespace

// The application's frame for a call that reached us: the return address when
// the application called directly, else (Fortran and other bindings call
// through the MPI libraries) the first frame on the stack outside them.
uintptr_t first_frame_outside_mpi(uintptr_t return_address) {
  if (!in_mpi_libraries(return_address)) return return_address;
  void* frames[32];
  const int n = backtrace(frames, 32);
  // The walk starts in libprof.so, one of the MPI libraries here. Frames
  // before the first of those are whatever stands between us and the
  // unwinder (a sanitizer's interceptor of backtrace), not the application.
  bool in_mpi = false;
  for (int i = 0; i < n; ++i) {
    const auto a = reinterpret_cast<uintptr_t>(frames[i]);
    if (in_mpi_libraries(a)) in_mpi = true;
    else if (in_mpi) return a;
  }
  return return_address;
}

}  // namespace prof::shim
