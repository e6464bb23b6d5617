// When a call waits for a partner (docs/metrics.md, "Waiting (PotentSync)"
// and "Wait states by kind"): the one definition that the analysis (global
// ns, double) and the timeline (ns from the trace's start, int64_t) both
// apply, so a rule is changed in one place.
//
// Each rule gives the waiting as [from, to); it is empty when to <= from.
// The rules take the instants a matched pair of calls gives and compute
// nothing else: matching the calls is the caller's.
#pragma once

#include <algorithm>

namespace prof::analysis::detail {

template <class T>
struct WaitSpan {
  T from, to;
  bool waits() const { return to > from; }
  T length() const { return to > from ? to - from : T{0}; }
};

// A late sender: a matched receive waits from its issue (the enter of the
// call that posted it: MPI_Recv, MPI_Sendrecv, MPI_Irecv, a persistent
// receive's MPI_Start) until its send enters, and no later than the leave of
// the call that completes it.
template <class T>
constexpr WaitSpan<T> late_sender_wait(T issue, T send_enter, T recv_leave) {
  return {issue, std::min(send_enter, recv_leave)};
}

// A late receiver: a blocking send, or the call that completes a
// nonblocking or persistent send, that entered before its receive was
// issued and left after it waited from its enter to the issue; one that
// left before could complete without the receive (buffered) and did not.
template <class T>
constexpr WaitSpan<T> late_receiver_wait(T send_enter, T send_leave, T recv_issue) {
  const bool waited = recv_issue > send_enter && send_leave > recv_issue;
  return {send_enter, waited ? recv_issue : send_enter};
}

// A member of a collective instance waits from its enter until the last
// member enters, and no later than its own leave.
template <class T>
constexpr WaitSpan<T> collective_wait(T enter, T leave, T last_enter) {
  return {enter, last_enter < enter ? enter : (last_enter > leave ? leave : last_enter)};
}

// Of a collective member's wait, the part before its root entered (a
// non-root of a one-to-all instance: Late Root; the rest waits on the other
// members) ends at this instant.
template <class T>
constexpr T late_root_end(const WaitSpan<T>& wait, T root_enter) {
  return root_enter < wait.from ? wait.from : (root_enter > wait.to ? wait.to : root_enter);
}

}  // namespace prof::analysis::detail
