// The collectives prof-bench measures (see collective.h).
#include "collective.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "prof/bcast/shm.h"

namespace prof::bench {

bool parse_op(std::string_view name, Op* out) {
  static constexpr Op kAll[] = {Op::Bcast, Op::Allreduce, Op::Reduce,
                                Op::Gather, Op::Alltoall, Op::Barrier};
  for (Op op : kAll) {
    if (name == op_name(op)) {
      *out = op;
      return true;
    }
  }
  return false;
}

const char* op_name(Op op) {
  switch (op) {
    case Op::Bcast: return "bcast";
    case Op::Allreduce: return "allreduce";
    case Op::Reduce: return "reduce";
    case Op::Gather: return "gather";
    case Op::Alltoall: return "alltoall";
    case Op::Barrier: return "barrier";
  }
  return "?";
}

bool op_has_root(Op op) { return op == Op::Bcast || op == Op::Reduce || op == Op::Gather; }

void Collective::FreeDeleter::operator()(unsigned char* p) const { std::free(p); }

Collective::Buffer Collective::allocate(std::size_t bytes) {
  // Page-aligned, and never empty, so that a 0-byte operation gets a valid pointer.
  const std::size_t rounded = (bytes + 4095) / 4096 * 4096 + 4096;
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(4096, rounded));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);  // touch every page before the timing
  return Buffer(p);
}

Collective::Collective(Op op, std::size_t bytes, MPI_Comm comm, BcastImpl bcast)
    : op_(op), bcast_(bcast), bytes_(op == Op::Barrier ? 0 : bytes), comm_(comm) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
  const std::size_t all = bytes_ * std::size_t(size_);
  switch (op_) {
    case Op::Bcast: send_bytes_ = bytes_; break;
    case Op::Allreduce:
    case Op::Reduce: send_bytes_ = recv_bytes_ = bytes_; break;
    case Op::Gather: send_bytes_ = bytes_; recv_bytes_ = all; break;
    case Op::Alltoall: send_bytes_ = recv_bytes_ = all; break;
    case Op::Barrier: break;
  }
  send_ = allocate(send_bytes_);
  recv_ = allocate(recv_bytes_);
  // The shared-memory broadcast makes its segment at a communicator's first
  // broadcast (milliseconds): done here, not inside the warm-up that sizes the slots.
  if (op_ == Op::Bcast && bcast_ == BcastImpl::Shm)
    prof::bcast::shm_bcast(send_.get(), 0, MPI_BYTE, 0, comm_);
}

void Collective::run(int root) {
  const int count = static_cast<int>(bytes_);
  unsigned char* send = send_.get();
  unsigned char* recv = recv_.get();
  switch (op_) {
    case Op::Bcast:
      if (bcast_ == BcastImpl::Shm &&
          prof::bcast::shm_bcast(send, count, MPI_BYTE, root, comm_) != prof::bcast::kUseNative)
        break;
      PMPI_Bcast(send, count, MPI_BYTE, root, comm_);
      break;
    case Op::Allreduce:
      MPI_Allreduce(send, recv, count, MPI_UNSIGNED_CHAR, MPI_SUM, comm_);
      break;
    case Op::Reduce:
      MPI_Reduce(send, recv, count, MPI_UNSIGNED_CHAR, MPI_SUM, root, comm_);
      break;
    case Op::Gather: MPI_Gather(send, count, MPI_BYTE, recv, count, MPI_BYTE, root, comm_); break;
    case Op::Alltoall: MPI_Alltoall(send, count, MPI_BYTE, recv, count, MPI_BYTE, comm_); break;
    case Op::Barrier: MPI_Barrier(comm_); break;
  }
}

void Collective::rewrite(int root, unsigned run) {
  if (op_ == Op::Barrier || (op_ == Op::Bcast && rank_ != root)) return;
  std::memset(send_.get(), int(run * 131u + 7u) & 0xff, send_bytes_);
}

}  // namespace prof::bench
