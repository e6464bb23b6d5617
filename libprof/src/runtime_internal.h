// The shim runtime's private state and the functions its files share
// (runtime.h holds what the generated wrappers use). One Runtime per
// recording process, created at MPI_Init (start.cpp) and never freed, so that
// the end paths (exit, signals, the heartbeat thread) can always reach it.
//
// Files: runtime.cpp (globals, messages, definitions, reaching the MPI
// library), start.cpp (set-up at MPI_Init), entry_points.cpp (MPI_Init,
// MPI_Finalize, MPI_Abort, MPI_Pcontrol), thread_chunks.cpp (threads and
// their chunks, the end definition), heartbeat.cpp (heartbeat and hang
// watch), process_end.cpp (exit, fatal signals, fork), comm_definitions.cpp,
// markers.cpp, record_general.cpp (records off the inline hot path),
// load_map.cpp (loaded objects, call sites).
#pragma once

#include <signal.h>
#include <link.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "prof/definition_lines.h"
#include "prof/settings.h"
#include "runtime.h"
#include "trace_file.h"

namespace prof::shim {

// What the shim takes from the clock package (prof/clock.h).
using clock::polite_wait;
using clock::set_test_nodes;
using clock::sync_scheme_name;
using clock::synchronize_clocks;
using clock::SyncResult;

// What the shim takes from the settings package (prof/settings.h).
using settings::Config;
using settings::read_config;

struct Runtime {
  Config cfg;
  TraceFile file;
  int rank = 0;
  int size = 1;
  std::string dir;
  std::mutex threads_mu;            // guards threads (attach, seal-all)
  std::vector<ThreadState*> threads;
  std::atomic<uint32_t> next_stream{0};
  std::mutex defs_mu;               // guards the maps below (cold paths)
  std::unordered_map<uintptr_t, uint32_t> callsite_by_address;
  std::unordered_map<std::string, uint32_t> callsite_by_file_line;
  uint32_t next_callsite = 1;
  // MPI calls' sites (resolve_call_site): the slot's site key -> its func-field
  // bits, and how many sites each function has (format::kSiteIndexes at most).
  std::unordered_map<uint64_t, uint16_t> call_site_bits;
  uint8_t sites_of_function[format::kRepeatFuncs] = {};
  uint32_t next_comm_seq = format::kFirstCreatedCommCounter;  // for the comm ids it leads
  std::unordered_map<uint32_t, uint64_t> comm_gid;  // handle -> global id of its latest definition
  std::unordered_map<uint64_t, uint64_t> idups_of;  // parent global id -> MPI_Comm_idup calls on it
  // With PROF_HANG_WARN only: the world ranks of each defined communicator's
  // group (and remote group), so a warning names a peer by its world rank.
  struct CommMembers {
    std::vector<int32_t> local, remote;
  };
  std::unordered_map<uint32_t, CommMembers> comm_members;  // handle -> its latest definition's
  std::atomic<bool> ended{false};
  // What could not be stored (full disk, failed write): written at the end.
  std::atomic<uint64_t> records_lost{0};
  std::atomic<uint64_t> definitions_lost{0};
  std::atomic<bool> loss_told{false};  // one message per rank
  bool forked_child = false;           // this process is a fork of the rank: writes nothing
  // Address ranges of the MPI libraries and of ourselves: call sites are the
  // first frame outside them.
  std::vector<std::pair<uintptr_t, uintptr_t>> mpi_ranges;
  // The clock syncs' private communicator, made by the first and freed after
  // the last: one duplication a run, not one a sync.
  MPI_Comm sync_comm = MPI_COMM_NULL;
  struct sigaction old_actions[32];
};
extern Runtime* rt;  // created at MPI_Init when recording; never freed

// Messages (runtime.cpp): one line each on stderr, at or above PROF_LOG_LEVEL.
enum Level { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };
extern int log_level;
void say(int level, const std::string& text);
std::string error_text(int error);
void tell_loss(const char* what);
// Writes definition lines as one chunk (cold path).
void define(const std::string& text);

// load_map.cpp
std::string exe_path();
std::string command_line();
int collect_load_map(dl_phdr_info* info, size_t, void* data);
uintptr_t first_frame_outside_mpi(uintptr_t return_address);

// thread_chunks.cpp
extern pthread_key_t thread_exit_key;
void on_thread_exit(void* p);
void map_first_or_next(ThreadState* ts);
void register_thread(ThreadState* ts);
void write_end(const char* reason);
void close_trace();

// heartbeat.cpp
void start_heartbeat();
void stop_heartbeat();
void forget_heartbeat();  // in a fork's child: the thread stayed in the parent

// process_end.cpp
void on_exit_without_finalize();
void on_fork_child();
void install_signal_handlers();

// comm_definitions.cpp
void define_comm(MPI_Comm comm, uint64_t time);
void define_idup(MPI_Comm parent, MPI_Comm newcomm, uint64_t time);

// start.cpp
// Sets up the recording, MPI_Init's record last: from `entered` (raw ticks)
// to the set-up's end, where the call returns to the program.
void start_recording(const Config& cfg, std::vector<std::string> errors, uint16_t init_id,
                     uint64_t entered, int provided, void* init_return_address);

// markers.cpp
uint32_t callsite_id_for_address(uintptr_t address, std::string* lines = nullptr);
void record_marker(uint16_t id, bool begin, uint32_t callsite);

}  // namespace prof::shim
