#!/usr/bin/env python3
"""Generates libprof's Fortran wrappers: the application's call site for calls in flight.

MPICH's Fortran bindings (libmpifort: mpi_recv_ and its aliases mpi_recv,
mpi_recv__, MPI_RECV) call the C MPI functions, which libprof's C wrappers
record; the in-flight slot then holds a return address inside libmpifort.
For every MPI function whose calls the trace records with their arguments (every
kind of the facts table: messages, requests, collectives, communicators) and
every other one that can block (BLOCKING_OTHER), this writes one wrapper per name libmpifort exports for it: it keeps the
application's return address in the thread's binding-site word for the
duration of the call (binding_site.h), calls libmpifort's definition of the same
name (dlsym RTLD_NEXT, resolved once) and records nothing itself: the C
wrapper below it records the call once, as before. For that call it lends
the C wrapper the site cache entry of its binding site (binding_site.h,
by the C function's id), so the C wrapper's fast path serves it.

Calling convention (gfortran, `use mpi` / mpif.h): every argument by
reference, the C function's arguments in order, then ierror, then one hidden
length (size_t) per CHARACTER argument. So a wrapper takes the C prototype's
arguments as pointers, one more for ierror, and a size_t per `char *`
argument; --module (MPICH's mpi_base.mod) checks that count for every routine
it declares. The wrapper passes them on untouched and never reads them.
Not covered: the mpi_f08 bindings (mpi_recv_f08ts_ and kin: MPICH 4.0's call
PMPI_* directly, so the shim records none of their calls to begin with), the
large-count (_c) functions (no Fortran binding of their own), and functions
that cannot block (their C wrapper's site stays in libmpifort; they are never
in flight for long).

Usage: generate_fortran_wrappers.py --header mpi_proto.h --header mpio.h
           --symbols libmpich.so --fortran-symbols libmpifort.so
           [--module mpi_base.mod] --out fortran_wrappers.cpp
"""
import argparse
import gzip
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generate_wrappers import (HAND_WRITTEN, Arg, exported_symbols, parse_prototypes,  # noqa: E402
                               wrapped_names)
from mpi_function_facts import FACTS  # noqa: E402

# Functions without recorded arguments (no facts) that can wait: file I/O and
# its collectives, one-sided synchronization and window creation, connecting.
BLOCKING_OTHER = [re.compile(p) for p in (
    r'^MPI_File_(open|close|delete|sync|set_size|preallocate|set_view|set_atomicity|seek_shared)$',
    r'^MPI_File_(read|write)(_at)?(_all)?(_begin|_end)?$',
    r'^MPI_File_(read|write)_(shared|ordered|ordered_begin|ordered_end)$',
    r'^MPI_Win_(fence|start|complete|post|wait|test|lock|unlock|lock_all|unlock_all|flush|'
    r'flush_all|flush_local|flush_local_all|sync|create|allocate|allocate_shared|'
    r'create_dynamic|free)$',
    r'^MPI_Comm_(accept|connect|disconnect)$',
)]


def keeps_site(name):
    """Whether a Fortran call of name gets its program's line as its site: the
    calls a user looks for in the call-site profile (a message posted, a
    collective, a wait: every function of the facts table) and those that can
    be in flight for long."""
    if name in HAND_WRITTEN or name.endswith('_c'):
        return False
    return name in FACTS or any(p.match(name) for p in BLOCKING_OTHER)


def binding_names(name):
    """The names MPICH exports a Fortran binding under: mpi_recv_, mpi_recv__, mpi_recv, MPI_RECV."""
    low = name.lower()
    return [low + '_', low + '__', low, name.upper()]


def is_string(arg):
    """A CHARACTER argument in Fortran (a hidden length follows the argument list)."""
    return not arg.array and re.fullmatch(r'(const\s+)?char\s*\*', arg.type) is not None


def module_arities(path):
    """{routine: visible argument count} for the routines a gfortran module declares."""
    text = gzip.open(path, 'rt').read()
    entry = re.compile(r"\d+ '(mpi_\w+)' '\w+' '' \d+ \(\(PROCEDURE[^)]*\)\s+\(\)\s+"
                       r"\((?:[^()]|\(\))*\)\s+\d+\s+\d+\s+\(([\d\s]*)\)")
    found = {m.group(1): len(m.group(2).split()) for m in entry.finditer(text)}
    if 'mpi_barrier' not in found:
        raise SystemExit(f'{path}: cannot read its procedures (no mpi_barrier)')
    return found


def gen_wrapper(symbol, pointers, strings, fid):
    params = [f'void* a{i}' for i in range(pointers)] + [f'size_t len{i}' for i in range(strings)]
    names = [f'a{i}' for i in range(pointers)] + [f'len{i}' for i in range(strings)]
    types = ['void*'] * pointers + ['size_t'] * strings
    return (f'extern "C" PROF_EXPORT void {symbol}({", ".join(params)}) {{\n'
            f'  using Binding = void (*)({", ".join(types)});\n'
            f'  static Binding binding = nullptr;\n'
            f'  Binding fn = __atomic_load_n(&binding, __ATOMIC_RELAXED);\n'
            f'  if (__builtin_expect(fn == nullptr, 0)) {{\n'
            f'    fn = reinterpret_cast<Binding>(prof::shim::resolve_binding("{symbol}"));\n'
            f'    __atomic_store_n(&binding, fn, __ATOMIC_RELAXED);\n'
            f'  }}\n'
            f'  const prof::shim::BindingSiteScope<{fid}> site(__builtin_return_address(0));\n'
            f'  fn({", ".join(names)});\n'
            f'}}\n')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--header', action='append', required=True)
    ap.add_argument('--symbols', required=True, help='libmpich.so')
    ap.add_argument('--fortran-symbols', required=True, help='libmpifort.so')
    ap.add_argument('--module', help="MPICH's mpi_base.mod: checks the argument counts")
    ap.add_argument('--out', required=True)
    ap.add_argument('--list', help='names of the wrapped Fortran symbols, one a line')
    a = ap.parse_args()

    protos = parse_prototypes(a.header)
    c_syms = exported_symbols(a.symbols)
    f_syms = exported_symbols(a.fortran_symbols)
    arities = module_arities(a.module) if a.module else {}
    missing = [p.pattern for p in BLOCKING_OTHER
               if not any(p.match(n) for n in protos if n in c_syms)]
    if missing:
        raise SystemExit(f'no MPI function matches {missing}')

    # The C function's id (generate_wrappers.py's): the binding's site is
    # lent to its C wrapper's cache by it (binding_site.h).
    ids = {n: i + 1 for i, n in enumerate(wrapped_names(protos, c_syms))}
    body, wrapped = [], []
    for name in sorted(n for n in ids if keeps_site(n)):
        args = [Arg(x) for x in protos[name][1]]
        pointers = len(args) + 1  # ierror
        strings = sum(1 for x in args if is_string(x))
        declared = arities.get(name.lower())
        if declared is not None and declared != pointers:
            raise SystemExit(f'{name}: {a.module} declares {declared} arguments, '
                             f'the C prototype gives {pointers} with ierror')
        for symbol in binding_names(name):
            if symbol in f_syms:
                body.append(gen_wrapper(symbol, pointers, strings, ids[name]))
                wrapped.append(symbol)
    if 'mpi_recv_' not in wrapped or 'mpi_barrier_' not in wrapped:
        raise SystemExit(f'{a.fortran_symbols}: no mpi_recv_ or mpi_barrier_ to wrap')

    with open(a.out, 'w') as f:
        f.write('// Generated by libprof/wrappers/generate_fortran_wrappers.py. Do not edit.\n')
        f.write('// Each wrapper keeps the application\'s call site while MPICH\'s Fortran\n'
                '// binding of the same name runs (binding_site.h); it records nothing.\n')
        f.write('#include <cstddef>\n\n#include "binding_site.h"\n\n')
        f.write('\n'.join(body))
    if a.list:
        with open(a.list, 'w') as f:
            f.write('\n'.join(wrapped) + '\n')


if __name__ == '__main__':
    main()
