// Communicator definitions (C lines): each communicator a rank takes part in
// gets a global id its members agree on, (world rank of its leader, the
// leader's counter), broadcast once at creation; MPI_Comm_idup's are named
// without communication, from the parent's id and how many idups of it came
// before (MPI orders collective calls on a communicator alike everywhere).
//
// Invariant: Runtime::comm_gid maps a handle to the id of its latest
// definition, and (with PROF_HANG_WARN) Runtime::comm_members to that
// definition's world ranks, both under defs_mu.
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

std::vector<int32_t> world_ranks(MPI_Group group) {
  int n = 0;
  PMPI_Group_size(group, &n);
  std::vector<int> in(size_t(n > 0 ? n : 0)), out(size_t(n > 0 ? n : 0));
  for (int i = 0; i < n; ++i) in[size_t(i)] = i;
  MPI_Group world;
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  if (n > 0) PMPI_Group_translate_ranks(group, n, in.data(), world, out.data());
  PMPI_Group_free(&world);
  return std::vector<int32_t>(out.begin(), out.end());
}

// The C line of `handle` (global id `id`, from raw `time` on), with the groups
// of `members` (the communicator itself, or the parent it duplicates).
void write_comm_definition(MPI_Comm handle, MPI_Comm members, uint64_t id, uint64_t time) {
  int inter = 0;
  PMPI_Comm_test_inter(members, &inter);
  MPI_Group local;
  PMPI_Comm_group(members, &local);
  int size = 0;
  PMPI_Group_size(local, &size);
  std::vector<int32_t> remote;
  if (inter) {
    MPI_Group rg;
    PMPI_Comm_remote_group(members, &rg);
    remote = world_ranks(rg);
    PMPI_Group_free(&rg);
  }
  const std::vector<int32_t> ranks = world_ranks(local);
  PMPI_Group_free(&local);
  {
    std::lock_guard<std::mutex> lock(rt->defs_mu);
    rt->comm_gid[uint32_t(handle)] = id;
    if (rt->cfg.hang_warn_seconds > 0) rt->comm_members[uint32_t(handle)] = {ranks, remote};
  }
  define(format::definition_line::comm(uint32_t(handle), id, time, uint64_t(size), inter != 0,
                                       ranks, remote));
}

}  // namespace

void define_comm(MPI_Comm comm, uint64_t time) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  // A global id its members agree on: (world rank of the leader, its counter).
  uint64_t id = 0;
  MPI_Comm intra = comm;
  if (inter) PMPI_Intercomm_merge(comm, 0, &intra);
  int r = 0;
  PMPI_Comm_rank(intra, &r);
  if (r == 0) {
    std::lock_guard<std::mutex> lock(rt->defs_mu);
    id = (uint64_t(uint32_t(rt->rank)) << 32) | rt->next_comm_seq++;
  }
  PMPI_Bcast(&id, 1, MPI_UINT64_T, 0, intra);
  if (inter) PMPI_Comm_free(&intra);
  write_comm_definition(comm, comm, id, time);
}

// MPI_Comm_idup: the new communicator may not be used (not even asked for its
// group) until the request completes, and no member may block for the others
// inside a Wait or Test. But MPI orders the collective calls on the parent the
// same on every member, so (parent's global id, how many idups of it came
// before) names the new communicator alike everywhere, with no communication;
// its groups are the parent's. The top bit keeps these ids apart from the
// leader-counter ids (rank << 32 | n) and from MPI_COMM_WORLD's 1.
void define_idup(MPI_Comm parent, MPI_Comm newcomm, uint64_t time) {
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(rt->defs_mu);
    auto it = rt->comm_gid.find(uint32_t(parent));
    if (it == rt->comm_gid.end()) return;  // parent not defined: nothing to name it by
    const uint64_t n = ++rt->idups_of[it->second];
    uint64_t x = it->second * 0x9E3779B97F4A7C15ull + n;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    id = x | (uint64_t{1} << 63);
  }
  write_comm_definition(newcomm, parent, id, time);
}

}  // namespace prof::shim
