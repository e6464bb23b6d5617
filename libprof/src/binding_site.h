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
// The site's index (format 7) reaches the C wrapper the same way a C call's
// does, through the thread's site cache (runtime.h, site_cache_hit), keyed
// by the C wrapper's return address: the binding's, one for every Fortran
// call of the function. So for the binding's call the wrapper lends that
// cache entry: when its own site is in the thread's binding cache (its first
// call from this line resolved it), it stores the key the C wrapper will
// probe (binding_call_keys, learned by resolve_call_site) with the site's
// first word, and removes the key when the binding returns. The C wrappers
// then take their fast paths for a Fortran call as for a C one, unchanged.
//
// Invariants: only the owning thread writes its word; it is stored before the
// C wrapper's release store of the slot's enter and cleared after the call
// returned, so a reader that sees a call in flight sees the site of the
// binding around it. The outermost binding's site wins (a binding calling
// another keeps the application's). A lent cache entry exists only while
// its binding's call runs and the binding-site word holds its site, so it
// gives what resolve_call_site would: the first word of (binding site,
// function). A learned key that is not the binding's return address
// (another MPI library's binding calling from two places) costs a miss, the
// rare path's lookup, never a wrong site. A C site whose key shares the
// lent entry's index loses its entry, and finds it again by the rare path.
#pragma once

#include "runtime.h"

namespace prof::shim {

// The real binding `name` (the next definition after libprof.so: libmpifort's),
// resolved once per wrapper. Never null: a missing one is fatal, with its name.
void* resolve_binding(const char* name);

// The C wrapper's site key (site_func) for a call from each function's
// binding, by function id: the return address the last call through a
// binding resolved (resolve_call_site). 0 until then.
extern uint64_t binding_call_keys[format::kRepeatFuncs] __attribute__((visibility("hidden")));

// The binding's call site for the duration of one Fortran call of the C
// function `kFunc` (its id), and its cache entry lent (above).
template <uint16_t kFunc>
class BindingSiteScope {
  static_assert(kFunc != 0 && kFunc < format::kRepeatFuncs);

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
#ifndef PROF_NO_IN_FLIGHT
    // resolve_call_site's binding cache key: the site with the function id.
    const uint64_t key = site_func(kFunc, return_address);
    const size_t i = site_cache_index(key);
    if (__builtin_expect(ts->binding_keys[i] != key, 0)) return;  // resolved by the C wrapper's miss
    const uint64_t call_key = __atomic_load_n(&binding_call_keys[kFunc], __ATOMIC_RELAXED);
    const size_t lent = site_cache_index(call_key);
    ts->site_keys[lent] = call_key;
    ts->site_words[lent] = ts->binding_words[i];
    lent_ = &ts->site_keys[lent];
#endif
  }
  __attribute__((always_inline)) ~BindingSiteScope() {
    if (lent_) *lent_ = 0;
    if (word_) __atomic_store_n(word_, 0, __ATOMIC_RELAXED);
  }
  BindingSiteScope(const BindingSiteScope&) = delete;
  BindingSiteScope& operator=(const BindingSiteScope&) = delete;

 private:
  uint64_t* word_ = nullptr;
  uint64_t* lent_ = nullptr;
};

}  // namespace prof::shim
