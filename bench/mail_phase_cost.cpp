// What one phase's mail costs a process of an MPI job (docs/performance.md,
// "The mailboxes' layout and size"): a process of L workers in a job of W,
// each local worker writing to a few destinations, as in a phase of a trace
// whose collectives span the job (every member to its instance's owner, each
// owner's results to every worker). Times, per phase, the bookkeeping the
// engine does with PhaseMail: publish, the phase's emptiness, packing for each
// other process and each local reader's sources (the records themselves are
// few and the same either way), against a visit of every box a process holds,
// the floor of an engine that looks at each pair of its workers and the job's.
// Prints both, in microseconds a phase, and the bytes packed a phase.
// Usage: mail_phase_cost [WORKERS [LOCAL [OWNERS [PHASES]]]]  (3200 32 25 50)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "phase_mail.h"

using namespace prof::analysis::detail;

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Every box of a process, each family and parity: what a phase's publish,
// emptiness test, packing and reading touch when they visit every pair.
size_t visit_every_box(PhaseMail& mail, unsigned workers, unsigned lo, unsigned hi) {
  size_t records = 0;
  const auto visit = [&](unsigned s, unsigned d) {
    for (int p : {0, 1}) {
      records += mail.send_box(p, s, d).size() + mail.bare_send_box(p, s, d).size() +
                 mail.cancel_box(p, s, d).size() + mail.late_box(p, s, d).size() + mail.coll_box(p, s, d).size();
    }
    for (int p : {0, 1, PhaseMail::kEarlyResults}) records += mail.result_box(p, s, d).size();
  };
  for (unsigned s = lo; s < hi; ++s)
    for (unsigned d = 0; d < workers; ++d) visit(s, d);
  for (unsigned s = 0; s < workers; ++s)
    if (s < lo || s >= hi)
      for (unsigned d = lo; d < hi; ++d) visit(s, d);
  return records;
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned workers = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 3200;
  const unsigned local = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 32;
  const unsigned owners = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 25;
  const int phases = argc > 4 ? std::atoi(argv[4]) : 50;
  if (local == 0 || workers < 2 * local || workers % local != 0 || owners == 0 || phases <= 0) {
    std::fprintf(stderr, "usage: %s [WORKERS [LOCAL [OWNERS [PHASES]]]]: WORKERS a multiple of LOCAL, at least two processes\n",
                 argv[0]);
    return 2;
  }
  const unsigned procs = workers / local;
  const unsigned lo = local, hi = 2 * local;  // the second process
  PhaseMail mail;
  mail.resize(workers, lo, hi);
  const std::vector<std::unique_ptr<prof::trace::RankTrace>> no_traces;  // (no collective calls are packed)
  std::vector<unsigned> sources;
  // (The boxes' pages touched once first: the figures are a phase's, not the
  // first touches'.)
  size_t records = visit_every_box(mail, workers, lo, hi);
  std::vector<double> noted_us, every_us;
  size_t packed = 0;
  for (int phase = 0; phase < phases; ++phase) {
    const int parity = phase & 1;
    // This phase's owners: spread over the job, one of them local.
    std::vector<unsigned> phase_owners;
    for (unsigned k = 0; k < owners; ++k) phase_owners.push_back((lo + k * (workers / owners) + phase) % workers);
    const double t0 = now_us();
    for (unsigned s = lo; s < hi; ++s) {
      mail.start_phase(parity, s);
      for (unsigned o : phase_owners)
        if (o != s) mail.late_box(parity, s, o).push_back(LateRecvRec{});  // a member's record to its owner
    }
    for (unsigned o : phase_owners)
      if (o >= lo && o < hi)
        for (unsigned d = 0; d < workers; ++d)
          if (d != o) mail.result_box(parity, o, d).push_back(ResultRec{});  // the owner's results
    for (unsigned s = lo; s < hi; ++s) mail.publish(parity, s);
    const bool empty = mail.empty(parity);
    for (unsigned p = 0; p < procs; ++p) {
      if (p == 1) continue;
      WireOut out;
      mail.pack(out, parity, lo, hi, p * local, (p + 1) * local, false, no_traces);
      packed += out.buf.size();
    }
    for (unsigned d = lo; d < hi; ++d) {
      mail.take_sources(parity, d, sources);
      for (unsigned s : sources) {
        records += mail.late_box(parity, s, d).size() + mail.result_box(parity, s, d).size();
        mail.late_box(parity, s, d).clear();
        mail.result_box(parity, s, d).clear();
      }
    }
    const double t1 = now_us();
    records += visit_every_box(mail, workers, lo, hi) + (empty ? 1 : 0);
    every_us.push_back(now_us() - t1);
    noted_us.push_back(t1 - t0);
  }
  const auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  std::printf("workers %u, %u a process, %u owners a phase, %d phases (records %zu)\n", workers, local, owners, phases,
              records);
  std::printf("noted pairs: %.1f us a phase (median), %.0f bytes packed a phase\n", median(noted_us),
              static_cast<double>(packed) / phases);
  std::printf("every box visited once: %.1f us a phase (median)\n", median(every_us));
  return 0;
}
