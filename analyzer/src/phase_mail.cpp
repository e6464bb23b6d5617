// The mailboxes between workers (PhaseMail, phase_mail.h).
#include <stdexcept>
#include <type_traits>

#include "engine.h"

namespace prof::analysis::detail {

namespace {
// A box to another process is emptied into the stream and freed: it would
// otherwise hold a second copy of what crosses, at the phase's end, when the
// process holds the most (the writer grows it again in its next phase).
template <class T>
void pack_box(WireOut& out, Mailbox<T>& box) {
  out.put_array(box.begin(), box.size());
  box.release();
}
template <class T>
size_t packed_bytes(const Mailbox<T>& box) {
  return WireOut::array_bytes<T>(box.size());
}
template <class T>
void unpack_box(WireIn& in, Mailbox<T>& box) {
  size_t n;
  const char* at = in.get_array<T>(&n);
  if (n) std::memcpy(box.extend_published(n), at, n * sizeof(T));
}
}  // namespace

void PhaseMail::resize(unsigned workers, unsigned local_lo, unsigned local_hi) {
  if (local_lo > local_hi || local_hi > workers) throw std::logic_error("PhaseMail::resize: local workers beyond the job's");
  workers_ = workers;
  local_lo_ = local_lo;
  local_n_ = local_hi - local_lo;
  each_family(*this, [&](auto& family) {
    using Family = std::remove_reference_t<decltype(family)>;
    using T = std::remove_cv_t<std::remove_reference_t<decltype(*family[0].v.begin())>>;
    family = Family(local_n_ * local_source_stride<T>() + (workers - local_n_) * remote_source_stride<T>());
  });
}

size_t PhaseMail::remote_box(size_t local_stride, size_t remote_stride, int parity, unsigned src, unsigned dst) const {
  if (dst - local_lo_ >= local_n_ || src >= workers_)
    throw std::logic_error("PhaseMail: a box between two other processes' workers");
  const unsigned remote = src < local_lo_ ? src : src - local_n_;  // among the other processes' workers
  return local_n_ * local_stride + remote * remote_stride + static_cast<size_t>(parity) * local_n_ + (dst - local_lo_);
}

bool PhaseMail::empty() const {
  bool empty = true;
  each_family(*this, [&](const auto& family) {
    for (const auto& b : family) empty = empty && b.v.empty();
  });
  return empty;
}

void PhaseMail::publish(int parity, unsigned w) {
  for (unsigned d = 0; d < workers_; ++d) {
    each_plain_box(parity, w, d, [](auto& box) { box.publish(); });
    coll_box(parity, w, d).publish();
    result_box(parity, w, d).publish();
  }
}

void PhaseMail::pack(WireOut& out, int parity, unsigned src_lo, unsigned src_hi, unsigned dst_lo, unsigned dst_hi,
                     bool results_only, const std::vector<std::unique_ptr<RankTrace>>& traces) {
  // The stream's size first: grown by doubling, it held up to twice what
  // crosses.
  size_t bytes = 0;
  for (unsigned o = src_lo; o < src_hi; ++o)
    for (unsigned d = dst_lo; d < dst_hi; ++d) {
      if (!results_only) {
        each_plain_box(parity, o, d, [&](auto& box) { bytes += packed_bytes(box); });
        bytes += packed_bytes(coll_box(parity, o, d));
      }
      bytes += packed_bytes(result_box(parity, o, d));
    }
  out.buf.reserve(out.buf.size() + bytes);
  for (unsigned o = src_lo; o < src_hi; ++o)
    for (unsigned d = dst_lo; d < dst_hi; ++d) {
      if (!results_only) {
        each_plain_box(parity, o, d, [&](auto& box) { pack_box(out, box); });
        auto& box = coll_box(parity, o, d);
        out.put<uint64_t>(box.size());
        for (CollRec c : box) {
          const auto& defs = traces[static_cast<size_t>(c.rank)]->comms();
          c.def = reinterpret_cast<const CommDef*>(c.def ? static_cast<uintptr_t>(c.def - defs.data()) + 1 : 0);
          out.put(c);
        }
        box.release();
      }
      pack_box(out, result_box(parity, o, d));
    }
}

void PhaseMail::unpack(WireIn& in, int parity, unsigned src_lo, unsigned src_hi, unsigned dst_lo, unsigned dst_hi,
                       bool results_only, const std::vector<std::unique_ptr<RankTrace>>& traces) {
  for (unsigned o = src_lo; o < src_hi; ++o)
    for (unsigned d = dst_lo; d < dst_hi; ++d) {
      if (!results_only) {
        each_plain_box(parity, o, d, [&](auto& box) { unpack_box(in, box); });
        auto& box = coll_box(parity, o, d);
        size_t n;
        const char* at = in.get_array<CollRec>(&n);
        if (n) {
          CollRec* calls = box.extend_published(n);
          std::memcpy(calls, at, n * sizeof(CollRec));
          for (CollRec* c = calls; c != calls + n; ++c) {
            const auto index = reinterpret_cast<uintptr_t>(c->def);
            c->def = index ? &traces[static_cast<size_t>(c->rank)]->comms()[index - 1] : nullptr;
          }
        }
      }
      unpack_box(in, result_box(parity, o, d));
    }
}

}  // namespace prof::analysis::detail
