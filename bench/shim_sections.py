#!/usr/bin/env python3
"""A wrapper's own instructions before and after its forwarded PMPI call.

From a callgrind profile made with --dump-instr=yes --compress-pos=no
--compress-strings=no, and the library's disassembly (objdump): each executed
instruction of the wrapper MPI_X is counted before the call to PMPI_X or
after it. The straight code up to the call is before it, from the call to the
first `ret` after it; blocks laid out past that `ret` belong to the side
their closing jump returns to. Only the wrapper's own instructions count (not
its out-of-line callees such as MPI_X.cold: the rare paths).

Why the split: in a 0-byte ping-pong, a hop's critical path is the receiver's
MPI_Recv after its call, then its reply's MPI_Send before its call; the other
halves overlap the message in flight.

Usage: shim_sections.py CALLGRIND_OUT LIBPROF_SO FUNCTION...
Prints per function: calls, instructions per call before and after the call.
"""
import re
import subprocess
import sys


def own_costs(path, functions):
    cost = {f: {} for f in functions}
    fn = None
    after_calls = False
    with open(path, errors='replace') as f:
        for line in f:
            if line.startswith('fn='):
                fn = line[3:].strip()
                continue
            if line.startswith('calls='):
                after_calls = True  # the next cost line is the callee's, inclusive
                continue
            if not line.startswith('0x'):
                continue
            if after_calls:
                after_calls = False
                continue
            if fn in cost:
                parts = line.split()  # instruction address, line, Ir
                address = int(parts[0], 16)
                cost[fn][address] = cost[fn].get(address, 0) + (int(parts[2]) if len(parts) > 2 else 0)
    return cost


def sides(disassembly, function):
    body = re.search(r'<%s>:\n(.*?)\n\n' % re.escape(function), disassembly, re.S)
    if not body:
        sys.exit(f'shim_sections.py: {function} not in the library')
    lines = body.group(1).splitlines()
    addresses = [int(l.split(':')[0], 16) for l in lines]
    forwarded = re.compile(r'call\s+\S+ <P%s@plt>' % re.escape(function))
    call_at = next(i for i, l in enumerate(lines) if forwarded.search(l))
    side = {}
    i = 0
    while i < len(lines):
        side[addresses[i]] = 'before' if i <= call_at else 'after'
        if i > call_at and re.search(r'\tret', lines[i]):
            break
        i += 1
    block = []
    for j in range(i + 1, len(lines)):
        block.append(addresses[j])
        jump = re.search(r'\tjmp\s+([0-9a-f]+)', lines[j])
        if jump or re.search(r'\tret|\tjmp', lines[j]):
            s = 'before' if jump and int(jump.group(1), 16) <= addresses[call_at] else 'after'
            for a in block:
                side[a] = s
            block = []
    for a in block:
        side[a] = 'after'
    return side, addresses[0]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    path, library, functions = sys.argv[1], sys.argv[2], sys.argv[3:]
    disassembly = subprocess.run(['objdump', '-d', '--no-show-raw-insn', library],
                                 capture_output=True, text=True, check=True).stdout
    costs = own_costs(path, functions)
    for function in functions:
        side, entry = sides(disassembly, function)
        calls = costs[function].get(entry, 0)
        if not calls:
            continue
        before = sum(c for a, c in costs[function].items() if side.get(a) == 'before')
        after = sum(c for a, c in costs[function].items() if side.get(a) == 'after')
        print(f'{function:<16} calls {calls:>8}  own instructions per call: before the call '
              f'{before / calls:6.1f}, after it {after / calls:6.1f}')


if __name__ == '__main__':
    main()
