#!/usr/bin/env python3
"""Instructions the shim adds per MPI call, from callgrind profiles of one rank.

For each wrapper (a function MPI_X of libprof.so, or a Fortran wrapper
mpi_x_ in front of MPICH's binding) called by the program:
its own instructions plus those of everything it calls except the forwarded
PMPI_X (the call the application asked for, also where a part the wrapper
hands a rare case to makes it; for a Fortran wrapper, the binding of its
name in the MPI library, with the C wrapper it calls), the dynamic linker's first
resolution of a symbol (also where a part the wrapper calls binds one), chunk
switches (next_chunk: one per chunk of 64 KiB and up, so its share per call
depends on how many calls a run makes; printed apart, per call, also where a
cold part or the general encoder calls it: its share by the caller's part of
that function's instructions) and the first sight of each call site
(resolve_call_site: once per site, function and thread, so its share per call
depends on how many calls a run makes; printed apart likewise). That is what
the application pays for the shim on each call once the run's sites are
known, independent of the machine's load and of how long MPI polls. The call
count is the number of times the wrapper was called.

Usage: shim_instructions.py CALLGRIND_OUT [FUNCTION ...]
Prints one line per wrapper: name, calls, shim instructions per call, and
the largest callees (by instructions per call) that are not the forwarded call.
"""
import re
import sys
from collections import defaultdict

DYNAMIC_LINKER = re.compile(r'ld-linux|/ld-2\.|ld\.so')


def parse(path):
    names = {'ob': {}, 'fl': {}, 'fn': {}}
    kind_of = {'ob': 'ob', 'cob': 'ob', 'fl': 'fl', 'fi': 'fl', 'fe': 'fl', 'cfi': 'fl',
               'cfl': 'fl', 'fn': 'fn', 'cfn': 'fn'}
    self_cost = defaultdict(int)                 # (ob, fn) -> Ir
    calls = defaultdict(lambda: defaultdict(lambda: [0, 0]))  # caller -> callee -> [count, Ir]
    called = defaultdict(int)                    # (ob, fn) -> times called
    ob = fn = cob = cfn = None
    pending_call = None
    spec = re.compile(r'^(ob|fl|fi|fe|fn|cob|cfi|cfl|cfn)=\((\d+)\)(?: (.*))?$')
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            m = spec.match(line)
            if m:
                key, ident, name = m.group(1), m.group(2), m.group(3)
                table = names[kind_of[key]]
                if name is not None:
                    table[ident] = name
                name = table.get(ident, ident)
                if key == 'ob':
                    ob = name
                    cob = None
                elif key == 'fn':
                    fn = name
                    cob = None
                elif key == 'cob':
                    cob = name
                elif key == 'cfn':
                    cfn = name
                continue
            if line.startswith('calls='):
                pending_call = int(line[6:].split()[0])
                continue
            if not line or not (line[0].isdigit() or line[0] in '+-*'):
                continue
            parts = line.split()
            cost = int(parts[1]) if len(parts) > 1 else 0
            if pending_call is not None:
                callee = (cob or ob, cfn)
                entry = calls[(ob, fn)][callee]
                entry[0] += pending_call
                entry[1] += cost
                called[callee] += pending_call
                pending_call = None
                cob = None
            else:
                self_cost[(ob, fn)] += cost
    return self_cost, calls, called


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    self_cost, calls, called = parse(sys.argv[1])
    wanted = set(sys.argv[2:])
    # Inclusive instructions of each function over all its calls, to share a
    # nested chunk switch (a wrapper's cold part or general encoder calling
    # next_chunk) among its callers in proportion.
    inclusive = defaultdict(int)
    for callees in calls.values():
        for callee, (count, ir) in callees.items():
            inclusive[callee] += ir

    def nested(func, match, depth=0):
        # Instructions of the callees `match` accepts (by object and
        # function) inside all of func's calls.
        total = 0
        for callee, (count, ir) in calls.get(func, {}).items():
            if callee[1] and match(callee):
                total += ir
            elif depth < 4 and inclusive[callee]:
                total += nested(callee, match, depth + 1) * ir / inclusive[callee]
        return total

    rows = []
    for (ob, fn), n in called.items():
        if not ob or not ob.endswith('libprof.so') or not fn or not fn.upper().startswith('MPI_'):
            continue
        if wanted and fn not in wanted:
            continue
        # A Fortran wrapper (mpi_send_, MPI_SEND: one case throughout, unlike
        # every C name) calls outside libprof only the binding, which MPICH
        # exports under several names: whichever callgrind shows.
        fortran = fn in (fn.lower(), fn.upper())
        total = self_cost[(ob, fn)]
        switches = 0
        sites = 0
        extra = []
        for (cob, cfn), (count, ir) in calls[(ob, fn)].items():
            if cfn == 'P' + fn or (fortran and cob != ob) or (cob and DYNAMIC_LINKER.search(cob)):
                continue
            if 'next_chunk' in cfn:
                switches += ir
                continue
            if 'resolve_call_site' in cfn:
                sites += ir
                continue
            share = ir / inclusive[(cob, cfn)] if inclusive[(cob, cfn)] else 0
            nested_switches = nested((cob, cfn), lambda c: 'next_chunk' in c[1]) * share
            nested_sites = nested((cob, cfn), lambda c: 'resolve_call_site' in c[1]) * share
            # The forwarded call made by a part the wrapper hands a rare case to
            # (prof_general_MPI_X): the application's, not the shim's; and the
            # dynamic linker binding a symbol for that part.
            nested_forwarded = nested((cob, cfn), lambda c, p='P' + fn: c[1] == p) * share
            nested_linker = nested((cob, cfn), lambda c: bool(c[0] and DYNAMIC_LINKER.search(c[0]))) * share
            switches += nested_switches
            sites += nested_sites
            own = ir - nested_switches - nested_sites - nested_forwarded - nested_linker
            total += own
            extra.append((own / n, cfn.split('(')[0]))
        extra.sort(reverse=True)
        rows.append((fn, n, total / n, self_cost[(ob, fn)] / n, extra[:3], switches / n, sites / n))
    rows.sort()
    for fn, n, per_call, own, extra, switches, sites in rows:
        more = ', '.join(f'{name} {ir:.1f}' for ir, name in extra)
        print(f'{fn:<16} calls {n:>8}  shim instructions per call {per_call:7.1f}'
              f'  (wrapper {own:.1f}{"; " + more if more else ""})'
              f'{f"  + chunk switches {switches:.1f}" if switches else ""}'
              f'{f"  + first sight of sites {sites:.1f}" if sites else ""}')


if __name__ == '__main__':
    main()
