// open_trace_block (exchange.h): a process of an MPI job opens its block's
// rank files only and learns the other ranks from their holders.
//
// Algorithm
//   1. Every process lists the directory (names only, no file opened or
//      even stat'ed) and tells the others whether it could; process 0's
//      listing goes to all, so every process cuts the same blocks from it:
//      contiguous in name order, of equal counts of files (cut_blocks, the
//      engine's rule). A process that cannot list ends the job.
//   2. Each process opens the files of its block and sends every other
//      process a description of each (RankTrace::describe: to process 0 all
//      the report reads; to the others what their pass asks of another's
//      rank, without the functions and call sites, whose registry numbers
//      process 0 sends them, Engine::setup) or the error that kept it from
//      opening. The others' become stand-ins.
//   3. TraceDir::assemble checks the whole as TraceDir::open does; its
//      inputs are the same on every process, so its answer is.
// The engine then gives each process's workers the ranks of its block
// (TraceDir::holder), so no process decodes or even opens another's file.
#include <algorithm>
#include <stdexcept>

#include "block_cut.h"
#include "prof/analysis/exchange.h"
#include "wire.h"

namespace prof::analysis {

using detail::WireIn;
using detail::WireOut;

trace::TraceDir open_trace_block(const std::string& dir, Exchange& ex) {
  const int procs = ex.size(), me = ex.rank();
  const auto P = static_cast<size_t>(procs);
  trace::TraceDir::Files files;
  std::vector<std::string> errors;
  const bool listed = trace::TraceDir::list(dir, &files, &errors);

  // 1. Whether each could list the directory; process 0's listing.
  {
    WireOut mine;
    mine.put<uint8_t>(listed);
    if (!listed) {
      mine.put<uint64_t>(errors.size());
      for (const std::string& e : errors) mine.put_str(e);
    } else if (me == 0) {
      mine.put<uint64_t>(files.names.size());
      for (const std::string& name : files.names) mine.put_str(name);
    }
    std::vector<std::string> out(P, mine.buf);
    out[static_cast<size_t>(me)].clear();
    const std::vector<std::string> in = ex.all_to_all(out);
    std::vector<std::string> others;
    for (int p = 0; p < procs; ++p) {
      if (p == me) continue;
      WireIn r(in[static_cast<size_t>(p)]);
      if (!r.get<uint8_t>()) {
        for (auto n = r.get<uint64_t>(); n-- > 0;) others.push_back("process " + std::to_string(p) + ": " + r.get_str());
      } else if (p == 0 && listed) {
        trace::TraceDir::Files zero;
        for (auto n = r.get<uint64_t>(); n-- > 0;) zero.names.push_back(r.get_str());
        zero.traces.resize(zero.names.size());
        zero.open_errors.resize(zero.names.size());
        files = std::move(zero);
      }
    }
    trace::TraceDir td;
    if (!listed) td.errors = std::move(errors);
    else if (!others.empty()) td.errors = std::move(others);
    if (!td.errors.empty()) return td;
  }

  // 2. This process's block opened; descriptions of it to the others.
  const size_t n = files.names.size();
  // (Weighed by count: a file's size also counts the chunk space reserved and
  // never used, as a killed rank's last chunk, and its events are known only
  // once it is opened.)
  const std::vector<uint64_t> weights(n, 1);
  const std::vector<unsigned> part = detail::cut_blocks(weights, static_cast<unsigned>(procs));
  files.holder.assign(part.begin(), part.end());
  const auto lo = static_cast<size_t>(std::lower_bound(part.begin(), part.end(), static_cast<unsigned>(me)) - part.begin());
  const auto hi = static_cast<size_t>(std::upper_bound(part.begin(), part.end(), static_cast<unsigned>(me)) - part.begin());
  // (A description carries the rank's last moment alive, a walk over its
  // last chunk: done by the threads that open the files, not one rank after
  // another below.)
  trace::TraceDir::open_files(dir, files, lo, hi, true);
  {
    WireOut to_zero, to_others;
    for (size_t i = lo; i < hi; ++i)
      for (const bool zero : {true, false}) {
        if (zero ? me == 0 : procs == 2 && me == 1) continue;  // (nobody to send it to)
        WireOut& o = zero ? to_zero : to_others;
        o.put<uint32_t>(static_cast<uint32_t>(i));
        o.put<uint8_t>(files.traces[i] != nullptr);
        using For = trace::RankTrace::DescriptionFor;
        o.put_str(files.traces[i] ? files.traces[i]->describe(zero ? For::kReport : For::kPass) : files.open_errors[i]);
      }
    std::vector<std::string> out(P);
    for (int p = 0; p < procs; ++p)
      if (p != me) out[static_cast<size_t>(p)] = p == 0 ? to_zero.buf : to_others.buf;
    std::string().swap(to_zero.buf);
    std::string().swap(to_others.buf);
    std::vector<std::string> in = ex.all_to_all(out);
    std::vector<std::string>().swap(out);
    trace::StandInShare share;  // (the ranks' identical function tables, once)
    for (int p = 0; p < procs; ++p) {
      if (p == me) continue;
      WireIn r(in[static_cast<size_t>(p)]);
      while (!r.done()) {
        const auto i = r.get<uint32_t>();
        const bool opened = r.get<uint8_t>();
        std::string what = r.get_str();
        if (i >= n || part[i] != static_cast<unsigned>(p))
          throw std::runtime_error("distributed analysis: process " + std::to_string(p) +
                                   " described a rank file outside its block");
        if (opened) files.traces[i] = trace::RankTrace::stand_in(what, &files.open_errors[i], &share);
        else files.open_errors[i] = std::move(what);
      }
      std::string().swap(in[static_cast<size_t>(p)]);  // (read)
    }
  }
  // 3.
  return trace::TraceDir::assemble(dir, std::move(files));
}

}  // namespace prof::analysis
