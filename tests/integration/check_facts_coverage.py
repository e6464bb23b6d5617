#!/usr/bin/env python3
"""Every MPI function whose arguments the shim records (a FACTS entry in
libprof/wrappers/mpi_function_facts.py) must be called by some logged
integration program, so a wrong peer, root, byte count or communicator in its
facts fails a trace check instead of passing unseen. The large-count variants
(MPI_Send_c) share their base function's facts and generated code path, so the
base name is what must be called.

    check_facts_coverage.py FACTS_DIR PROGRAM_DIR

Lists the uncalled functions and exits 1 when there are any.
"""
import os
import re
import sys


def strip_comments(text, fortran):
    if fortran:
        return re.sub(r'!.*', '', text)
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'//.*', '', text)


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: check_facts_coverage.py FACTS_DIR PROGRAM_DIR')
    facts_dir, program_dir = sys.argv[1], sys.argv[2]
    sys.path.insert(0, facts_dir)
    from mpi_function_facts import FACTS

    called = set()
    sources = 0
    for root, _, files in os.walk(program_dir):
        for name in files:
            ext = os.path.splitext(name)[1].lower()
            if ext not in ('.c', '.f90'):
                continue
            sources += 1
            with open(os.path.join(root, name), errors='replace') as f:
                text = strip_comments(f.read(), ext == '.f90')
            # A call: the name followed by its argument list (C: MPI_Send(,
            # Fortran: call MPI_SEND(, any case); a name logged as a string
            # ("MPI_Send") is not a call.
            for m in re.finditer(r'\b(MPI_[A-Za-z0-9_]+)\s*\(', text, flags=re.I):
                name_called = m.group(1)
                if ext == '.f90':
                    name_called = 'MPI_' + name_called[4:].capitalize()
                called.add(name_called)
                if name_called.endswith('_c'):
                    called.add(name_called[:-2])
    if sources == 0:
        sys.exit(f'check_facts_coverage: no test programs (*.c, *.f90) under {program_dir}')

    missing = sorted(n for n in FACTS if n not in called)
    print(f'{len(FACTS)} functions with recorded arguments; {len(FACTS) - len(missing)} called by '
          f'the {sources} programs under {program_dir}')
    if missing:
        print(f'FAIL: {len(missing)} never called by a logged test program (add a call with its '
              f'expectation line to tests/integration):')
        for n in missing:
            print(f'  {n} ({FACTS[n]["kind"]})')
        sys.exit(1)
    print('PASS')


if __name__ == '__main__':
    main()
