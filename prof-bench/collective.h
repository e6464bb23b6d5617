// The collectives prof-bench measures, with their buffers.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace prof::bench {

enum class Op { Bcast, Allreduce, Reduce, Gather, Alltoall, Barrier };

// Accepts bcast, allreduce, reduce, gather, alltoall, barrier.
bool parse_op(std::string_view name, Op* out);
const char* op_name(Op op);
// Whether the operation has a root (and so --root applies).
bool op_has_root(Op op);

// One operation at one message size on `comm`. `bytes` is the block each rank
// contributes (bcast: the message; gather, alltoall: per rank; allreduce,
// reduce: unsigned chars summed).
// Broadcast implementations: MPICH's (PMPI_Bcast, whatever shim is preloaded)
// or the shared-memory one the shim uses for PROF_BCAST=shm (prof/bcast/shm.h),
// called directly.
enum class BcastImpl { Native, Shm };

class Collective {
 public:
  Collective(Op op, std::size_t bytes, MPI_Comm comm, BcastImpl bcast = BcastImpl::Native);
  void run(int root);
  // Writes a new pattern into every buffer this rank sends from (bcast: the
  // root's), so that no run reads what the previous one left in caches.
  void rewrite(int root, unsigned run);
  Op op() const { return op_; }
  std::size_t bytes() const { return bytes_; }

 private:
  struct FreeDeleter {
    void operator()(unsigned char* p) const;
  };
  using Buffer = std::unique_ptr<unsigned char, FreeDeleter>;
  static Buffer allocate(std::size_t bytes);

  Op op_;
  BcastImpl bcast_;
  std::size_t bytes_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::size_t send_bytes_ = 0, recv_bytes_ = 0;
  Buffer send_, recv_;
};

}  // namespace prof::bench
