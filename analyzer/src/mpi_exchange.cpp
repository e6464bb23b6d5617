// prof::analysis::Exchange over MPI_COMM_WORLD (mpi_exchange.h).
#include "mpi_exchange.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "prof/polite_wait.h"

namespace prof::analyze_cli {

namespace {

// The MPI functions used, from the library loaded at run time (only a job's
// processes load it). MPICH's handles and datatypes are constants, so the
// header gives them without the library.
struct Mpi {
  decltype(&MPI_Init_thread) init_thread;
  decltype(&MPI_Comm_rank) comm_rank;
  decltype(&MPI_Comm_size) comm_size;
  decltype(&MPI_Ialltoall) ialltoall;
  decltype(&MPI_Ialltoallw_c) ialltoallw_c;
  decltype(&MPI_Ibcast) ibcast;
  decltype(&MPI_Test) test;
  decltype(&MPI_Finalize) finalize;
  decltype(&MPI_Abort) abort;
};
Mpi mpi;

template <class F>
void load(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f) throw std::runtime_error(std::string("the MPI library has no ") + name);
}

void load_mpi() {
  void* lib = dlopen(PROF_MPI_C_LIBRARY, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) throw std::runtime_error(std::string("cannot load the MPI library: ") + dlerror());
  load(lib, "MPI_Init_thread", mpi.init_thread);
  load(lib, "MPI_Comm_rank", mpi.comm_rank);
  load(lib, "MPI_Comm_size", mpi.comm_size);
  load(lib, "MPI_Ialltoall", mpi.ialltoall);
  load(lib, "MPI_Ialltoallw_c", mpi.ialltoallw_c);
  load(lib, "MPI_Ibcast", mpi.ibcast);
  load(lib, "MPI_Test", mpi.test);
  load(lib, "MPI_Finalize", mpi.finalize);
  load(lib, "MPI_Abort", mpi.abort);
}

// The standard error this process was started with (a process other than 0
// speaks on it only to end the job: quiet_unless_first).
int own_stderr = STDERR_FILENO;

// Waits for a nonblocking collective without taking a core from the
// processes that share it (prof/polite_wait.h). Yields up to 50 ms, then
// sleeps 1 ms between tests (a process waiting while process 0 writes the
// reports; at most 2% more on such a wait). Sleeping sooner, after about
// 0.3 ms of yields, made a job of two processes on two cores take 1.3x the
// wall: a sleep overshoots, and a phase has four waits.
void wait_for(MPI_Request* request) {
  constexpr PoliteWait kExchangeWait{64, std::chrono::milliseconds(50), std::chrono::milliseconds(1),
                                     std::chrono::milliseconds(1)};
  wait_politely(
      [&] {
        int done = 0;
        mpi.test(request, &done, MPI_STATUS_IGNORE);
        return done != 0;
      },
      kExchangeWait);
}

// One all-to-all of byte buffers: the sizes first, then the bytes
// (MPI_Alltoallw_c: buffers may pass 2 GiB), each sent from its own buffer
// and received into its own string (absolute addresses from MPI_BOTTOM), so
// no buffer is copied: at the end of a job the figures process 0 gathers are
// the largest message, and a copy on each side was as large as them.
class MpiExchange final : public analysis::Exchange {
 public:
  MpiExchange() {
    mpi.comm_rank(MPI_COMM_WORLD, &rank_);
    mpi.comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  [[noreturn]] void abort_job(const std::string& message) override {
    const std::string line = "prof-analyze: error: process " + std::to_string(rank_) + ": " + message + "\n";
    static_cast<void>(::write(own_stderr, line.data(), line.size()));
    // (Time for the launcher to forward the line: hydra, told of the abort,
    // may end the processes before it drains their pipes.)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    mpi.abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);  // (MPI_Abort returned: the launcher sees this process fail)
  }
  std::vector<std::string> all_to_all(const std::vector<std::string>& out) override {
    const auto n = static_cast<size_t>(size_);
    std::vector<long long> send_sizes(n), recv_sizes(n);
    for (size_t p = 0; p < n; ++p) send_sizes[p] = static_cast<long long>(out[p].size());
    MPI_Request request = MPI_REQUEST_NULL;
    mpi.ialltoall(send_sizes.data(), 1, MPI_LONG_LONG, recv_sizes.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD, &request);
    wait_for(&request);
    std::vector<std::string> in(n);
    std::vector<MPI_Count> sc(n), rc(n);
    std::vector<MPI_Aint> sd(n), rd(n);
    const std::vector<MPI_Datatype> bytes(n, MPI_BYTE);
    for (size_t p = 0; p < n; ++p) {
      sc[p] = send_sizes[p];
      sd[p] = reinterpret_cast<MPI_Aint>(out[p].data());
      in[p].resize(static_cast<size_t>(recv_sizes[p]));
      rc[p] = recv_sizes[p];
      rd[p] = reinterpret_cast<MPI_Aint>(in[p].data());
    }
    mpi.ialltoallw_c(MPI_BOTTOM, sc.data(), sd.data(), bytes.data(), MPI_BOTTOM, rc.data(), rd.data(), bytes.data(),
                     MPI_COMM_WORLD, &request);
    wait_for(&request);
    return in;
  }

 private:
  int rank_ = 0, size_ = 1;
};

bool set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

// The launcher's variable that gives the job's process count (MPICH's hydra,
// Open MPI), null where none is set.
const char* launcher_size_variable() {
  for (const char* size : {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE"})
    if (set(size)) return size;
  return nullptr;
}

}  // namespace

bool launched_as_mpi_job() {
  // One process of one (mpiexec -n 1) is the plain command.
  if (const char* size = launcher_size_variable()) return std::strcmp(std::getenv(size), "1") != 0;
  return set("PMIX_RANK") || set("PMI_RANK");
}

unsigned cores_per_process() {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (const char* local : {"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
    if (!set(local)) continue;
    char* end = nullptr;
    const unsigned long processes = std::strtoul(std::getenv(local), &end, 10);
    if (*end == '\0' && processes > 0) return std::max(1u, cores / static_cast<unsigned>(std::min<unsigned long>(processes, cores)));
  }
  return cores;
}

std::unique_ptr<analysis::Exchange> start_mpi(int* argc, char*** argv) {
  // Any worker thread of a process may run the phase end that exchanges.
  int provided = 0;
  load_mpi();
  mpi.init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  if (provided < MPI_THREAD_SERIALIZED) {
    mpi.finalize();
    throw std::runtime_error("the MPI library does not allow calls from several threads (MPI_THREAD_SERIALIZED)");
  }
  auto exchange = std::make_unique<MpiExchange>();
  // A launcher of another MPI (Open MPI's mpirun starting a build on MPICH)
  // leaves the library a singleton: each process would analyze the whole
  // trace and write the same outputs.
  if (const char* size = launcher_size_variable(); size && exchange->size() == 1) {
    const std::string launched = std::getenv(size);
    mpi.finalize();
    throw std::runtime_error("started as one of " + launched + " processes (" + size + "), but the MPI library (" +
                             PROF_MPI_C_LIBRARY + ") sees 1: launch the job with that library's mpiexec");
  }
  return exchange;
}

void quiet_unless_first(const analysis::Exchange& ex) {
  if (ex.rank() == 0) return;
  const int null = ::open("/dev/null", O_WRONLY);
  if (null < 0) return;
  own_stderr = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  if (own_stderr < 0) own_stderr = null;  // (nowhere to speak: the launcher still sees the job fail)
  ::dup2(null, STDOUT_FILENO);
  ::dup2(null, STDERR_FILENO);
  if (own_stderr != null) ::close(null);
}

int finish_mpi(analysis::Exchange&, int status) {
  // (The others wait here while process 0 writes the reports, and so reach
  // MPI_Finalize, which may poll as it waits, together with it.)
  MPI_Request request = MPI_REQUEST_NULL;
  mpi.ibcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD, &request);
  wait_for(&request);
  mpi.finalize();
  return status;
}

}  // namespace prof::analyze_cli
