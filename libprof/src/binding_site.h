// The application's call site for MPI calls made through a language binding
// (Fortran), for the calls in flight: what the generated Fortran wrappers
// (fortran_wrappers.cpp, from generate_fortran_wrappers.py) call.
//
// MPICH's Fortran bindings (libmpifort's mpi_recv_ and its aliases) call the
// C MPI_Recv, which the C wrapper records; its return address then lies in
// libmpifort. A Fortran wrapper of the same name stands in front of the
// binding: it stores its own return address (the .f90 line) in the thread's
// binding_site word, beside its in-flight slot (format::LiveSlot), calls the
// binding, and clears the word. Readers (the analyzer's run_end, the heartbeat's
// PROF_HANG_WARN) prefer that word to the slot's site while the C call is in
// flight. The C wrappers never read or write it: C calls pay nothing.
//
// Invariants: only the owning thread writes its word; it is stored before the
// C wrapper's release store of the slot's enter and cleared after the call
// returned, so a reader that sees a call in flight sees the site of the
// binding around it. The outermost binding's site wins (a binding calling
// another keeps the application's).
#pragma once

#include "runtime.h"

namespace prof::shim {

// The real binding `name` (the next definition after libprof.so: libmpifort's),
// resolved once per wrapper. Never null: a missing one is fatal, with its name.
void* resolve_binding(const char* name);

// The binding's call site for the duration of one Fortran call.
class BindingSiteScope {
 public:
  __attribute__((always_inline)) explicit BindingSiteScope(void* return_address) {
    if (!g.recording) return;  // before MPI_Init or after MPI_Finalize: nothing in flight
    ThreadState* ts = tls_state;
    if (__builtin_expect(!attached(ts), 0)) ts = attach_thread();
    if (ts == nullptr) return;
    uint64_t* const word = &reinterpret_cast<format::LiveSlot*>(ts->slot)->binding_site;
    if (__atomic_load_n(word, __ATOMIC_RELAXED) != 0) return;  // an outer binding's
    __atomic_store_n(word, reinterpret_cast<uint64_t>(return_address), __ATOMIC_RELAXED);
    word_ = word;
  }
  __attribute__((always_inline)) ~BindingSiteScope() {
    if (word_) __atomic_store_n(word_, 0, __ATOMIC_RELAXED);
  }
  BindingSiteScope(const BindingSiteScope&) = delete;
  BindingSiteScope& operator=(const BindingSiteScope&) = delete;

 private:
  uint64_t* word_ = nullptr;
};

}  // namespace prof::shim
