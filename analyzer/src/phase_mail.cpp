// The mailboxes between workers (PhaseMail, phase_mail.h).
#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

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
  const size_t rows = static_cast<size_t>(kNotedParities) * local_n_;
  written_.assign(rows * workers_, 0);
  incoming_.assign(rows * workers_, 0);
  written_lists_.assign(rows, {});
  if (written_.size() > UINT32_MAX) throw std::length_error("PhaseMail: too many pairs of workers");
  // A local source's boxes tell their first record in a phase.
  each_family(*this, [&](auto& family) {
    using T = std::remove_cv_t<std::remove_reference_t<decltype(*family[0].v.begin())>>;
    for (int parity = 0; parity < static_cast<int>(kParities<T>); ++parity)
      for (unsigned src = local_lo_; src < local_lo_ + local_n_; ++src)
        for (unsigned dst = 0; dst < workers_; ++dst)
          box_at(family, parity, src, dst)->v.set_notes(
              this, static_cast<uint32_t>(written_row(parity, src) + dst - written_.data()));
  });
}

size_t PhaseMail::remote_box(size_t local_stride, size_t remote_stride, int parity, unsigned src, unsigned dst) const {
  if (dst - local_lo_ >= local_n_ || src >= workers_)
    throw std::logic_error("PhaseMail: a box between two other processes' workers");
  const unsigned remote = src < local_lo_ ? src : src - local_n_;  // among the other processes' workers
  return local_n_ * local_stride + remote * remote_stride + static_cast<size_t>(parity) * local_n_ + (dst - local_lo_);
}

void PhaseMail::first_record(uint32_t id) {
  if (written_[id]) return;  // (another family's box of the pair)
  written_[id] = 1;
  const size_t row = id / workers_;  // parity * local_n_ + local source
  const int parity = static_cast<int>(row / local_n_);
  const unsigned src = local_lo_ + static_cast<unsigned>(row % local_n_), dst = id % workers_;
  written_list(parity, src).push_back(dst);
  if (local(dst)) incoming(parity, dst, src) = 1;
}

void PhaseMail::start_phase(int parity, unsigned src) {
  for (int q : {parity, kEarlyResults}) {
    uint8_t* row = written_row(q, src);
    auto& list = written_list(q, src);
    for (unsigned d : list) row[d] = 0;
    list.clear();
  }
}

void PhaseMail::take_sources(int parity, unsigned dst, std::vector<unsigned>& sources) {
  sources.clear();
  uint8_t* row = &incoming(parity, dst, 0);
  // (A word of 8 sources at a time: most are 0.)
  unsigned s = 0;
  for (; s + 8 <= workers_; s += 8) {
    uint64_t word;
    std::memcpy(&word, row + s, 8);
    if (word == 0) continue;
    for (unsigned k = 0; k < 8; ++k)
      if (row[s + k]) {
        sources.push_back(s + k);
        row[s + k] = 0;
      }
  }
  for (; s < workers_; ++s)
    if (row[s]) {
      sources.push_back(s);
      row[s] = 0;
    }
}

bool PhaseMail::empty(int parity) const {
  for (unsigned w = local_lo_; w < local_lo_ + local_n_; ++w)
    if (!written_list(parity, w).empty()) return false;
  return true;
}

void PhaseMail::publish(int parity, unsigned w) {
  // (In order: pack() takes each other process's range of them.)
  auto& list = written_list(parity, w);
  std::sort(list.begin(), list.end());
  for (unsigned d : list) {
    each_plain_box(parity, w, d, [](auto& box) { box.publish(); });
    coll_box(parity, w, d).publish();
    result_box(parity, w, d).publish();
  }
}

void PhaseMail::publish_early(unsigned w) {
  auto& list = written_list(kEarlyResults, w);
  std::sort(list.begin(), list.end());
  for (unsigned d : list) result_box(kEarlyResults, w, d).publish();
}

// The stream to one process: the number of pairs, then each pair written in
// the phase with a record for it (source, destination, then its boxes' arrays
// in each_plain_box's order, the collective calls', the results'; the
// results' alone with results_only). Pairs with nothing take no bytes: at
// thousands of workers nearly all are such.
void PhaseMail::pack(WireOut& out, int parity, unsigned src_lo, unsigned src_hi, unsigned dst_lo, unsigned dst_hi,
                     bool results_only, const std::vector<std::unique_ptr<RankTrace>>& traces) {
  // The pairs with records, and the stream's size first: grown by doubling,
  // it held up to twice what crosses.
  std::vector<std::pair<unsigned, unsigned>> pairs;
  size_t bytes = sizeof(uint64_t);
  for (unsigned o = src_lo; o < src_hi; ++o) {
    const auto& list = written_list(parity, o);  // (in order: published)
    for (auto it = std::lower_bound(list.begin(), list.end(), dst_lo); it != list.end() && *it < dst_hi; ++it) {
      const unsigned d = *it;
      size_t records = result_box(parity, o, d).size();
      size_t pair_bytes = 2 * sizeof(uint32_t) + packed_bytes(result_box(parity, o, d));
      if (!results_only) {
        each_plain_box(parity, o, d, [&](auto& box) {
          records += box.size();
          pair_bytes += packed_bytes(box);
        });
        records += coll_box(parity, o, d).size();
        pair_bytes += packed_bytes(coll_box(parity, o, d));
      }
      if (records == 0) continue;
      pairs.emplace_back(o, d);
      bytes += pair_bytes;
    }
  }
  out.buf.reserve(out.buf.size() + bytes);
  out.put<uint64_t>(pairs.size());
  for (const auto& [o, d] : pairs) {
    out.put<uint32_t>(o);
    out.put<uint32_t>(d);
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
  const uint64_t pairs = in.get<uint64_t>();
  for (uint64_t i = 0; i < pairs; ++i) {
    const unsigned o = in.get<uint32_t>(), d = in.get<uint32_t>();
    if (o < src_lo || o >= src_hi || d < dst_lo || d >= dst_hi || !local(d))
      throw std::runtime_error("distributed analysis: a mailbox outside the processes that exchange it");
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
    incoming(parity, d, o) = 1;
  }
}

}  // namespace prof::analysis::detail
