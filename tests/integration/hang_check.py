#!/usr/bin/env python3
"""Checks what hang.sh's run left: trace, reports and stderr (see hang.sh)."""
import json
import os
import re
import sys

case, out, kill_time = sys.argv[1], sys.argv[2], float(sys.argv[3])
program = sys.argv[4] if len(sys.argv) > 4 else 'integ_hang'
term = case.startswith('deadlock_term')  # deadlock_term, deadlock_term_fortran, deadlock_term_split
split = case == 'deadlock_term_split'  # ranks 0 and 1 on a pair in reversed order
fails = []


def fail(msg):
    fails.append(msg)
    print('FAIL: ' + msg)


def read(name):
    with open(os.path.join(out, name), errors='replace') as f:
        return f.read()


# What each rank said it was entering: function, file, line, wall time.
calls = {}
for r in range(3):
    for line in read(f'info/info-{r}').splitlines():
        if line.startswith('call '):
            func, file, lineno, wall = line.split()[1:5]
            calls[r] = dict(function=func, file=file, line=int(lineno), wall=float(wall))

try:
    report = json.loads(read('report.json'))
except (OSError, ValueError) as e:
    print('FAIL: no JSON report: %s\n%s' % (e, read('analyze.err')))
    sys.exit(1)
text = read('report.txt')
run_end = report['run_end']
ends = {e['rank']: e for e in run_end['ranks']}
if run_end['complete']:
    fail('run_end.complete is true')

deadlock = case.startswith('deadlock')
flight_ranks = [0, 1, 2] if deadlock else [0, 2]
for r in flight_ranks:
    e = ends.get(r)
    want = calls[r]
    f = e and e['in_flight']
    if not f:
        fail(f'rank {r}: no call in flight ({e})')
        continue
    if f['function'] != want['function']:
        fail(f"rank {r}: in flight {f['function']}, expected {want['function']}")
    if not f['file'].endswith(want['file']) or f['line'] != want['line']:
        fail(f"rank {r}: call site {f['file']}:{f['line']}, expected {want['file']}:{want['line']}")
    if want['function'] == 'MPI_Recv':
        if f.get('peer') != 1 - r or f.get('tag') != 7 or f.get('waiting_for') != [1 - r]:
            fail(f'rank {r}: peer/tag/waiting_for {f}')
    if want['function'] == 'MPI_Barrier' and f.get('waiting_for') != [0, 1]:
        fail(f'rank {r}: barrier waiting_for {f.get("waiting_for")}, expected [0, 1]')
    if want['function'] == 'MPI_Allreduce' and f.get('waiting_for') != [1]:
        fail(f'rank {r}: allreduce waiting_for {f.get("waiting_for")}, expected [1]')
    # Every call hang.c leaves in flight is on MPI_COMM_WORLD, which reports
    # number 0, but for the split case's pair.
    if split and r < 2:
        other = (ends.get(1 - r) or {}).get('in_flight') or {}
        if f.get('comm') in (0, None) or f.get('comm') != other.get('comm'):
            fail(f"rank {r}: communicator {f.get('comm')}, expected the pair's, not MPI_COMM_WORLD")
    elif f.get('comm') != 0:
        fail(f"rank {r}: communicator {f.get('comm')}, expected 0 (MPI_COMM_WORLD)")
    # The wait runs to the last moment alive: the kill, within 0.5 s.
    waited = e['last_alive'] - f['entered']
    if deadlock:
        truth = kill_time - want['wall']
        if abs(waited - truth) > 0.5:
            fail(f'rank {r}: in flight {waited:.3f} s to last_alive, but {truth:.3f} s to the kill')

if deadlock:
    if run_end['wait_cycles'] != [[0, 1]]:
        fail(f"wait_cycles {run_end['wait_cycles']}, expected [[0, 1]]")
    want = 'Deadlock: ranks 0 and 1 wait for each other in MPI_Recv (%s:%d)' % (
        calls[0]['file'], calls[0]['line'])
    if not any(l.endswith(want) or want.split(' (')[0] in l and (':%d)' % calls[0]['line']) in l
               for l in text.splitlines()):
        fail('text report lacks "%s"' % want)
    # SIGTERM: the first rank to die says so; hydra may SIGKILL the others
    # before their handlers run ("killed": they said nothing).
    said = [ends[r]['ended_by'] for r in range(3)]
    if term:
        if 'signal SIGTERM' not in said or set(said) - {'signal SIGTERM', 'killed'}:
            fail(f'ended by {said}, expected signal SIGTERM (or killed after the first)')
    elif said != ['killed'] * 3:
        fail(f'ended by {said}, expected killed')
else:
    if run_end['wait_cycles']:
        fail(f"wait_cycles {run_end['wait_cycles']}, expected none")
    want = 'abort' if case == 'abort' else 'signal SIGSEGV'
    if ends[1]['ended_by'] != want:
        fail(f"rank 1 ended by {ends[1]['ended_by']}, expected {want}")
    if ends[1]['in_flight'] is not None:
        fail(f"rank 1 was in no call, report says {ends[1]['in_flight']}")
if 'Where each rank was when the run ended' not in text:
    fail('text report lacks its section "Where each rank was when the run ended"')

# Interval 1: the calls in flight are calls, their time runs to the last
# moment alive, and the interval closes there.
node = next((i for i in report['intervals'] if i['id'] == 1), None)
if not node:
    fail('no interval 1')
else:
    counted = node['calls']
    for func in set(calls[r]['function'] for r in flight_ranks):
        n = sum(1 for r in flight_ranks if calls[r]['function'] == func)
        if counted.get(func) != n:
            fail(f'interval 1 counts {counted.get(func)} {func}, expected {n}')
    per_rank = {p['rank']: p for p in node['per_rank']}
    for r in flight_ranks:
        e, f = ends[r], ends[r]['in_flight']
        if not f or r not in per_rank:
            continue
        p = per_rank[r]
        waited = e['last_alive'] - f['entered']
        if abs(p['mpi_time'] - waited) > 0.05 or (deadlock and p['mpi_time'] < 0.9):
            fail(f"rank {r}: interval 1 MPI time {p['mpi_time']:.3f}, in flight {waited:.3f}")
        if abs(p['time'] - waited) > 0.05:
            fail(f"rank {r}: interval 1 lasts {p['time']:.3f} s, to last alive {waited:.3f}")

# Chrome export: a slice for each call in flight, at its call site (rank r's
# first thread is track r).
chrome = read('chrome.json')
n = len(re.findall(r'"in_flight":true', chrome))
if n != len(flight_ranks):
    fail(f'Chrome export has {n} in-flight slices, expected {len(flight_ranks)}')
events = json.loads(chrome)
events = events['traceEvents'] if isinstance(events, dict) else events
for r in flight_ranks:
    want = calls[r]
    sites = [e['args'].get('site', '') for e in events
             if e.get('tid') == r and e.get('args', {}).get('in_flight')]
    if not any(s.endswith('%s:%d' % (want['file'], want['line'])) for s in sites):
        fail(f"Chrome export: rank {r}'s call in flight at {sites}, expected {want['file']}:{want['line']}")

# prof-dump: each call in flight, at its line.
dump = read('dump.txt')
for r in flight_ranks:
    want = calls[r]
    pat = re.compile(r'^r%d .* %s .*in_flight site=0x[0-9a-f]+ \(.*%s:%d\)$' %
                     (r, want['function'], re.escape(want['file']), want['line']), re.M)
    if not pat.search(dump):
        fail(f'prof-dump shows no {want["function"]} in flight on rank {r} at line {want["line"]}')

# PROF_HANG_WARN: one line per hanging call, naming call, site and peer.
stderr = read('stderr')
warns = [l for l in stderr.splitlines() if 'PROF_HANG_WARN' in l]
if term:
    for r in range(3):
        mine = [l for l in warns if l.startswith(f'libprof: rank {r} ')]
        func = calls[r]['function']
        # The site: file:line (addr2line, while the job runs), then the
        # executable and the offset of the call's return address.
        site = (re.escape(calls[r]['file']) + ':' + str(calls[r]['line']) + r' \([^)]*' + re.escape(program) +
                r'\+0x[0-9a-f]+\)')
        if len(mine) != 1 or func not in mine[0] or not re.search(site, mine[0]):
            fail(f'rank {r}: PROF_HANG_WARN lines {mine}, expected one naming {func} and its site '
                 f'{calls[r]["file"]}:{calls[r]["line"]}')
        elif func == 'MPI_Recv' and not split and f'peer {1 - r}, tag 7, MPI_COMM_WORLD' not in mine[0]:
            fail(f'rank {r}: the warning does not name peer {1 - r}: {mine[0]}')
        elif func == 'MPI_Recv' and split and not re.search(
                r'peer %d \(world rank %d\), tag 7, communicator \d+' % (r, 1 - r), mine[0]):
            # The pair's rank r is world rank 1 - r.
            fail(f'rank {r}: the warning does not name peer {r} (world rank {1 - r}) of the pair: {mine[0]}')
elif warns:
    fail(f'PROF_HANG_WARN is off, yet: {warns}')

print(text[text.find('---Where each rank'):])
print('%d failure(s)' % len(fails))
sys.exit(1 if fails else 0)
