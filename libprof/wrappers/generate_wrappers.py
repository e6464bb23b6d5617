#!/usr/bin/env python3
"""Generates every PMPI wrapper of libprof from MPICH's prototypes and our facts.

Inputs: MPICH's headers (the list of prototypes), the dynamic symbols of
libmpich.so (which functions really exist: a PMPI_ twin is needed),
mpi_function_facts.FACTS (what each record carries), and the record schema
(libprof/format/include/prof/record_schema.h: each kind's payload fields). The
wrappers hand each call's values to the runtime's record helpers, which encode
them field by field from that schema (format::encode_fields); here the schema
checks that every function's facts supply what its kind's fields need. Output: one C++ source with
an `extern "C"` wrapper per function, plus the function table (id, kind, name)
that the shim writes into every trace. Nothing here is hand-written per function.

Sends and receives (blocking and nonblocking) and the plain calls returning
an error code get two wrappers from the same text (gen_fast_pair): the exported fast one, whose
only real call is PMPI's, and the general one (prof_general_<name>) that the
fast one hands every rare case to by a tail call (runtime.h, "Call-free fast
wrappers").

Usage: generate_wrappers.py --header mpi_proto.h --header mpio.h
           --symbols libmpich.so --out wrappers.cpp --list wrapped.txt
           --weak-header pmpi_weak.h
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_function_facts import FACTS  # noqa: E402

PROTO_RE = re.compile(
    r'^([A-Za-z_][A-Za-z0-9_ \*]*?)\s*\b(MPI_[A-Za-z0-9_]+)\s*\(([^;]*?)\)\s*'
    r'(?:(?:MPICH|ROMIO)_[A-Z_]+(?:\([^)]*\))?\s*)*;', re.M)

SCHEMA_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'format', 'include',
                        'prof', 'record_schema.h')
# One X(Name, number, "name", Family, context_flags, fields...) per line.
SCHEMA_RE = re.compile(r'^\s*X\((\w+),\s*(\d+),\s*"(\w+)",\s*(\w+),\s*([^,)]+)((?:,\s*\w+)*)\)', re.M)


def read_schema(path=SCHEMA_H):
    """{kind name: [field, ...]} from PROF_RECORD_KINDS."""
    kinds = {}
    for m in SCHEMA_RE.finditer(open(path).read()):
        kinds[m.group(1)] = [f.strip() for f in m.group(6).split(',') if f.strip()]
    if 'Other' not in kinds or 'Send' not in kinds:
        raise SystemExit(f'{path}: cannot read PROF_RECORD_KINDS')
    return kinds


# Fields whose value only the call's arguments give (any one of these facts);
# the others may come from the status, a matched message or a default.
FIELD_FACTS = {'Request': ('request',), 'NewComm': ('newcomm',)}


def check_schema(name, facts, schema):
    kind = facts['kind']
    if kind not in schema:
        raise SystemExit(f'{name}: kind {kind} is not in {SCHEMA_H}')
    for field in schema[kind]:
        need = FIELD_FACTS.get(field)
        if need and not any(facts.get(k) for k in need):
            raise SystemExit(f'{name}: kind {kind} records {field}, facts give none of {need}')


# Functions the runtime implements itself (init/finalize bracket the recording,
# Abort must flush first, Pcontrol is variadic).
HAND_WRITTEN = {'MPI_Init', 'MPI_Init_thread', 'MPI_Finalize', 'MPI_Abort', 'MPI_Pcontrol'}


class Arg:
    def __init__(self, text):
        text = ' '.join(text.split())
        m = re.match(r'^(.*?)([A-Za-z_][A-Za-z0-9_]*)\s*((?:\[\s*\d*\s*\])*)$', text)
        if not m:
            raise SystemExit(f'cannot parse argument {text!r}')
        self.type = m.group(1).strip()
        self.name = m.group(2)
        self.array = bool(m.group(3))
        self.text = text

    def decl(self):
        return self.text


def parse_prototypes(headers):
    protos = {}
    for h in headers:
        src = open(h).read()
        src = re.sub(r'/\*.*?\*/', '', src, flags=re.S)
        for m in PROTO_RE.finditer(src):
            ret, name, args = m.group(1).strip(), m.group(2), ' '.join(m.group(3).split())
            if ret.startswith('typedef') or 'QMPI' in ret:
                continue
            arglist = [] if args in ('', 'void') else [a.strip() for a in args.split(',')]
            # First declaration wins: mpio.h repeats a few of mpi_proto.h's,
            # once with a typo (MPI_Type_create_darray's array_of_psizes).
            protos.setdefault(name, (ret, arglist))
    return protos


def exported_symbols(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', lib], check=True,
                         capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if len(line.split()) >= 3}


def wrapped_names(protos, syms):
    """The functions wrapped, in id order (id = position + 1): those MPICH
    declares and exports with a PMPI_ twin. The one place the ids are
    assigned (generate_fortran_wrappers.py names its functions by them too)."""
    return sorted(n for n in protos if n in syms and ('P' + n) in syms)


def facts_for(name):
    if name in FACTS:
        return FACTS[name]
    if name.endswith('_c') and name[:-2] in FACTS:
        return FACTS[name[:-2]]
    return None


def check_args(name, facts, argnames):
    """Every argument the facts name must exist in the prototype."""
    def need(a):
        if a is None or a in ('0',):
            return
        for part in a.split('*'):
            if part not in argnames:
                raise SystemExit(f'{name}: facts name argument {part!r}, prototype has {argnames}')

    for key in ('peer', 'tag', 'comm', 'request', 'status', 'recv_peer', 'recv_tag', 'count',
                'requests', 'statuses', 'index', 'outcount', 'indices', 'newcomm', 'root',
                'found', 'message'):
        need(facts.get(key))
    for key in ('bytes', 'recv_bytes'):
        walk_bytes(facts.get(key), need)
    for peer, tag in facts.get('markers', []):
        need(peer)
        need(tag)


# Byte-count forms taking (counts or count, datatype(s)); see mpi_function_facts.
ARRAY_FORMS = ('sum', 'sumw', 'sum_peers', 'sumw_peers', 'own', 'each_peer', 'each_rank',
               'sum_neighbors', 'sumw_neighbors', 'each_neighbor')
INPLACE_FORMS = {'inplace': 'sendbuf', 'inplace_recv': 'recvbuf'}


def walk_bytes(spec, fn):
    if spec is None:
        return
    if spec[0] in INPLACE_FORMS:
        fn(INPLACE_FORMS[spec[0]])
        walk_bytes(spec[1], fn)
        walk_bytes(spec[2], fn)
    elif spec[0] in ARRAY_FORMS:
        fn(spec[1])
        fn(spec[2])
    else:
        fn(spec[0])
        fn(spec[1])


def bytes_expr(spec, comm):
    """C++ expression for a byte count."""
    if spec is None:
        return '0'
    if spec[0] in INPLACE_FORMS:
        return (f'({INPLACE_FORMS[spec[0]]} == MPI_IN_PLACE ? {bytes_expr(spec[2], comm)} : '
                f'{bytes_expr(spec[1], comm)})')
    if spec[0] == 'sum':
        return f'prof::shim::sum_bytes({spec[1]}, {spec[2]}, {comm})'
    if spec[0] == 'sumw':
        return f'prof::shim::sumw_bytes({spec[1]}, {spec[2]}, {comm})'
    if spec[0] in ARRAY_FORMS[2:]:
        return f'prof_bytes::{spec[0]}({spec[1]}, {spec[2]}, {comm})'
    count = '*'.join(f'(uint64_t)({c})' for c in spec[0].split('*'))
    return f'prof::shim::type_bytes({count}, {spec[1]})'


# Helpers for the array forms, written into the generated file.
BYTES_HELPERS = r"""
namespace prof_bytes {
// The ranks a collective's per-rank arrays cover: the remote group of an
// intercommunicator (MPI_Alltoallv's sendcounts[i] goes to remote rank i).
inline int peers(MPI_Comm comm) {
  int inter = 0, n = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return 0;
  if ((inter ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n)) != MPI_SUCCESS) return 0;
  return n;
}
// The blocks a neighbour collective sends: one per outgoing neighbour of the
// topology (a Cartesian one has 2 per dimension, MPI_PROC_NULL ones included).
inline int out_neighbors(MPI_Comm comm) {
  int topo = MPI_UNDEFINED, n = 0, in = 0, weighted = 0, r = 0;
  if (PMPI_Topo_test(comm, &topo) != MPI_SUCCESS) return 0;
  if (topo == MPI_CART && PMPI_Cartdim_get(comm, &n) == MPI_SUCCESS) return 2 * n;
  if (topo == MPI_GRAPH && PMPI_Comm_rank(comm, &r) == MPI_SUCCESS &&
      PMPI_Graph_neighbors_count(comm, r, &n) == MPI_SUCCESS)
    return n;
  if (topo == MPI_DIST_GRAPH && PMPI_Dist_graph_neighbors_count(comm, &in, &n, &weighted) == MPI_SUCCESS)
    return n;
  return 0;
}
template <class Count>
uint64_t sum_n(const Count* counts, MPI_Datatype t, int n) {
  if (!counts) return 0;
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += static_cast<uint64_t>(counts[i]);
  return total * prof::shim::type_size(t);
}
template <class Count>
uint64_t sumw_n(const Count* counts, const MPI_Datatype* types, int n) {
  if (!counts || !types) return 0;
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += static_cast<uint64_t>(counts[i]) * prof::shim::type_size(types[i]);
  return total;
}
template <class Count>
uint64_t sum_peers(const Count* counts, MPI_Datatype t, MPI_Comm comm) {
  return sum_n(counts, t, peers(comm));
}
template <class Count>
uint64_t sumw_peers(const Count* counts, const MPI_Datatype* types, MPI_Comm comm) {
  return sumw_n(counts, types, peers(comm));
}
template <class Count>
uint64_t sum_neighbors(const Count* counts, MPI_Datatype t, MPI_Comm comm) {
  return sum_n(counts, t, out_neighbors(comm));
}
template <class Count>
uint64_t sumw_neighbors(const Count* counts, const MPI_Datatype* types, MPI_Comm comm) {
  return sumw_n(counts, types, out_neighbors(comm));
}
template <class Count>
uint64_t each_neighbor(Count count, MPI_Datatype t, MPI_Comm comm) {
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(out_neighbors(comm)) *
         prof::shim::type_size(t);
}
// The same count to every peer (MPI_Alltoall).
template <class Count>
uint64_t each_peer(Count count, MPI_Datatype t, MPI_Comm comm) {
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(peers(comm)) * prof::shim::type_size(t);
}
// The same count for every rank of the (local) group (MPI_Reduce_scatter_block).
template <class Count>
uint64_t each_rank(Count count, MPI_Datatype t, MPI_Comm comm) {
  int n = 0;
  if (PMPI_Comm_size(comm, &n) != MPI_SUCCESS) return 0;
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(n) * prof::shim::type_size(t);
}
// This rank's own entry of a per-rank array (an MPI_IN_PLACE contribution).
template <class Count>
uint64_t own(const Count* counts, MPI_Datatype t, MPI_Comm comm) {
  int r = -1;
  if (!counts || PMPI_Comm_rank(comm, &r) != MPI_SUCCESS || r < 0) return 0;
  return static_cast<uint64_t>(counts[r]) * prof::shim::type_size(t);
}
}  // namespace prof_bytes
"""


def call_args(args, substitute=None):
    substitute = substitute or {}
    return ', '.join(substitute.get(a.name, a.name) for a in args)


def in_flight_facts(kind, facts):
    """(peer, tag, comm, extra) of a call's in-flight slot (trace_format.h, InFlightSlot)."""
    def comm_of(c):
        return f'(uint32_t)({c})' if c else '0'
    if kind in ('Send', 'Recv', 'Probe', 'Isend', 'Irecv'):
        peer, tag, comm = facts.get('peer'), facts.get('tag'), facts.get('comm')
        if facts.get('message') and kind in ('Recv', 'Irecv'):
            peer, tag, comm = 'prof_msg.source', 'prof_msg.tag', 'prof_msg.comm'
        return [peer or '-1', tag or '-1', comm_of(comm), '0']
    if kind == 'SendRecv':
        return [facts['peer'], facts['recv_peer'], comm_of(facts['comm']), f'(uint32_t)({facts["recv_tag"]})']
    if kind in ('Collective', 'AllToAll', 'ICollective', 'IAllToAll'):
        return [facts.get('root') or '-1', '-1', comm_of(facts.get('comm')), '0']
    if kind == 'CommCreate':
        return ['-1', '-1', comm_of(facts.get('comm')), '0']
    if kind == 'Completion':
        if facts['form'] == 'one':
            return ['-1', '1', '0', '(uint32_t)prof_req']
        cnt = facts['count']
        return ['-1', f'(int32_t)({cnt})', '0', f'({cnt}) > 0 ? (uint32_t)prof_reqs[0] : 0u']
    return ['-1', '-1', '0', '0']


# Kinds whose record repeats the in-flight slot's peer, tag and communicator.
P2P_FROM_SLOT = ('Send', 'Recv', 'Isend', 'Irecv')


def gen_wrapper(fid, name, ret, args, facts, head=None):
    """The general wrapper: every case of the call. `head`: its first line
    (default: the exported definition of `name`)."""
    argnames = [a.name for a in args]
    kind = facts['kind'] if facts else 'Other'
    if facts:
        check_args(name, facts, argnames)
    decl = ', '.join(a.decl() for a in args) or 'void'
    pname = (facts or {}).get('callfn', 'P' + name)  # the call the wrapper makes
    out = [head or f'extern "C" PROF_EXPORT {ret} {name}({decl}) {{']

    # Interval markers: swallowed, the call done as a PROC_NULL operation, unrecorded.
    markers = facts.get('markers', []) if facts else []
    for peer, tag in markers:
        sub = {peer: 'MPI_PROC_NULL', tag: '0'}
        out.append(f'  if (__builtin_expect(prof::shim::is_marker_tag({tag}), 0)) {{')
        out.append(f'    prof::shim::on_raw_marker({tag}, __builtin_return_address(0));')
        out.append(f'    return {pname}({call_args(args, sub)});')
        out.append('  }')

    out.append('  prof::shim::ThreadState* ts = prof::shim::call_begin();')
    out.append(f'  if (!ts) return {pname}({call_args(args)});')

    sub = {}
    pre = []
    if kind in ('Recv', 'Probe', 'SendRecv') or (kind == 'Completion' and facts['form'] in ('one', 'any')):
        st = facts['status']
        pre.append(f'  MPI_Status prof_status_local;')
        pre.append(f'  MPI_Status* prof_status = {st} == MPI_STATUS_IGNORE ? &prof_status_local : {st};')
        # A completion may leave the status unfilled (send and collective
        # requests): an empty status then, not stack garbage, in the record.
        # A receive, probe or sendrecv fills it whenever the record reads it
        # (the call succeeded, and a probe found a message).
        if kind == 'Completion':
            pre.append('  prof::shim::clear_statuses(prof_status, 1);')
        sub[st] = 'prof_status'
    if kind == 'Completion':
        form = facts['form']
        if form == 'one':
            pre.append(f'  const MPI_Request prof_req = *{facts["request"]};')
        else:
            cnt, reqs = facts['count'], facts['requests']
            pre.append(f'  const MPI_Request* prof_reqs = ts->save_requests({reqs}, {cnt});')
            if form in ('all', 'some'):
                sts = facts['statuses']
                pre.append(f'  MPI_Status* prof_statuses = {sts} == MPI_STATUSES_IGNORE ? '
                           f'ts->scratch_statuses({cnt}) : {sts};')
                pre.append(f'  prof::shim::clear_statuses(prof_statuses, {cnt});')
                sub[sts] = 'prof_statuses'
    if kind == 'RequestOp':
        if 'requests' in facts:
            pre.append(f'  const MPI_Request* prof_reqs = ts->save_requests({facts["requests"]}, {facts["count"]});')
        else:
            pre.append(f'  const MPI_Request prof_req = *{facts["request"]};')
    if facts and facts.get('message') and kind in ('Recv', 'Irecv'):
        # The matched message's communicator, source and tag (from its Mprobe).
        pre.append(f'  const prof::shim::MessageInfo prof_msg = prof::shim::take_message(*{facts["message"]});')
    out += pre

    # Point-to-point kinds read their peer, tag, communicator and enter time
    # back from the in-flight slot after the call and compute their bytes
    # before it, so fewer values stay live across MPI's call (fewer stack
    # spills; 1 to 3 instructions a call).
    from_slot = kind in P2P_FROM_SLOT
    if from_slot:
        comm = 'prof_msg.comm' if facts.get('message') else facts.get('comm')
        if not comm:
            raise SystemExit(f'{name}: a {kind} needs a communicator')
        # A blocking send's bytes after the call: its entry lies on the
        # message's critical path, its return does not (a ping-pong's hop is
        # the receiver's return, then its reply's entry).
        if kind not in ('Recv', 'Send'):
            out.append(f'  const uint64_t prof_bytes = {bytes_expr(facts["bytes"], comm)};')

    if kind in ('Other', 'RequestOp'):
        out.append(f'  prof::format::InFlightSlot* const prof_slot = '
                   f'prof::shim::call_enter_plain(ts, {fid}, __builtin_return_address(0));')
    else:
        out.append(f'  prof::format::InFlightSlot* const prof_slot = '
                   f'prof::shim::call_enter(ts, {fid}, __builtin_return_address(0), '
                   f'{", ".join(in_flight_facts(kind, facts))});')
    out.append('  const uint64_t t0 = prof::shim::now();')
    out.append('  prof::shim::call_entered(prof_slot, t0);')
    out.append(f'  const {ret} rc = {pname}({call_args(args, sub)});')
    out.append('  const uint64_t t1 = prof::shim::now();')
    rc_ok = 'rc == MPI_SUCCESS' if ret == 'int' else 'true'
    rec = f'ts, {fid}, prof_t0, t1, {rc_ok}'
    if not from_slot:
        # The enter time read back from the slot too: one register fewer
        # kept across MPI's call.
        out.append('  const uint64_t prof_t0 = prof::shim::entered_time(ts, t0);')
    else:
        # What call_enter stored (in_flight_facts: the record's own values).
        slot_peer, slot_tag, slot_comm = in_flight_facts(kind, facts)[:3]
        out.append(f'  const prof::shim::EnteredCall prof_in = prof::shim::entered_call(ts, '
                   f'{{t0, {slot_peer}, {slot_tag}, {slot_comm}}});')
        rec = f'ts, {fid}, prof_in.t0, t1, {rc_ok}'
        peer, tag, comm = 'prof_in.peer', 'prof_in.tag', '(MPI_Comm)prof_in.comm'
        flags = '0'
        if kind in ('Recv', 'Irecv') and facts.get('peer') and not facts.get('message'):
            flags = (f'(uint8_t)(({peer} == MPI_ANY_SOURCE ? prof::format::kAnySource : 0) | '
                     f'({tag} == MPI_ANY_TAG ? prof::format::kAnyTag : 0))')

    if kind == 'Other':
        out.append(f'  prof::shim::record_plain({rec});')
    elif kind == 'Send':
        out.append(f'  prof::shim::record_p2p({rec}, prof::format::FuncKind::Send, {peer}, '
                   f'{tag}, {comm}, {bytes_expr(facts["bytes"], facts["comm"])}, 0);')
    elif kind in ('Isend', 'Irecv'):
        out.append(f'  prof::shim::record_p2p_start({rec}, prof::format::FuncKind::{kind}, '
                   f'{peer}, {tag}, {comm}, prof_bytes, {flags}, *{facts["request"]});')
    elif kind == 'Recv':
        out.append(f'  prof::shim::record_recv({rec}, {peer}, {tag}, {comm}, prof_status, {flags});')
    elif kind == 'Probe':
        peer, tag, comm = facts['peer'], facts['tag'], facts['comm']
        found = f'*{facts["found"]}' if facts.get('found') else '1'
        flags = (f'(uint8_t)(({peer} == MPI_ANY_SOURCE ? prof::format::kAnySource : 0) | '
                 f'({tag} == MPI_ANY_TAG ? prof::format::kAnyTag : 0))')
        out.append(f'  prof::shim::record_probe({rec}, {peer}, {tag}, {comm}, prof_status, '
                   f'{found}, {flags});')
        if facts.get('message'):
            out.append(f'  if (rc == MPI_SUCCESS && {found}) '
                       f'prof::shim::remember_message(*{facts["message"]}, {comm}, prof_status);')
    elif kind == 'SendRecv':
        comm = facts['comm']
        out.append(f'  prof::shim::record_sendrecv({rec}, {facts["peer"]}, {facts["tag"]}, '
                   f'{bytes_expr(facts["bytes"], comm)}, {facts["recv_peer"]}, '
                   f'{facts["recv_tag"]}, {comm}, prof_status);')
    elif kind == 'Completion':
        form = facts['form']
        found = f'*{facts["found"]}' if facts.get('found') else '1'
        if form == 'one':
            out.append(f'  prof::shim::record_completion_one({rec}, prof_req, prof_status, {found});')
        elif form == 'all':
            out.append(f'  prof::shim::record_completion_all({rec}, prof_reqs, {facts["count"]}, '
                       f'prof_statuses, {found});')
        elif form == 'any':
            out.append(f'  prof::shim::record_completion_any({rec}, prof_reqs, {facts["count"]}, '
                       f'*{facts["index"]}, prof_status, {found});')
        elif form == 'some':
            out.append(f'  prof::shim::record_completion_some({rec}, prof_reqs, '
                       f'*{facts["outcount"]}, {facts["indices"]}, prof_statuses);')
    elif kind == 'RequestOp':
        if 'requests' in facts:
            out.append(f'  prof::shim::record_requests({rec}, prof_reqs, {facts["count"]});')
        else:
            out.append(f'  prof::shim::record_requests({rec}, &prof_req, 1);')
    elif kind == 'ICollective' and 'newcomm' in facts:
        out.append(f'  prof::shim::record_comm_idup({rec}, {facts["comm"]}, *{facts["newcomm"]}, '
                   f'*{facts["request"]});')
    elif kind in ('Collective', 'AllToAll', 'ICollective', 'IAllToAll'):
        comm = facts['comm']
        root = facts.get('root') or '-1'
        request = f'*{facts["request"]}' if facts.get('request') else 'MPI_REQUEST_NULL'
        out.append(f'  prof::shim::record_collective({rec}, prof::format::FuncKind::{kind}, '
                   f'{comm}, {root}, {bytes_expr(facts["bytes"], comm)}, {request});')
    elif kind == 'CommCreate':
        parent = facts.get('comm') or 'MPI_COMM_NULL'
        out.append(f'  prof::shim::record_comm_create({rec}, {parent}, *{facts["newcomm"]});')
    else:
        raise SystemExit(f'{name}: unknown kind {kind}')

    out.append('  prof::shim::call_done(ts);')
    out.append('  prof::shim::call_end(ts);')
    out.append('  return rc;')
    out.append('}')
    return '\n'.join(out) + '\n'



def fast_kind(name, ret, facts):
    """The fast wrapper's form for this function (runtime.h, "Call-free fast
    wrappers"), or None: blocking and nonblocking sends and receives with
    their arguments' peer, tag and communicator (not matched receives), and
    plain calls returning an MPI error code."""
    if ret != 'int' or name in HAND_WRITTEN:
        return None
    if not facts:
        return 'Other'
    if facts.get('callfn') or facts.get('message'):
        return None
    if facts['kind'] == 'Other':
        return 'Other'
    if facts['kind'] in ('Send', 'Recv') and all(facts.get(k) for k in ('peer', 'tag', 'comm')):
        return facts['kind']
    if facts['kind'] in ('Isend', 'Irecv') and all(facts.get(k) for k in ('peer', 'tag', 'comm', 'request')):
        return facts['kind']
    return None


def gen_fast_pair(fid, name, ret, args, facts, kind):
    """The fast wrapper, exported as `name`, and the general one it hands
    every rare case to by a tail call (prof_general_<name>, hidden). Builds
    with PROF_NO_IN_FLIGHT (no slot to carry the facts) export the general
    wrapper itself."""
    decl = ', '.join(a.decl() for a in args) or 'void'
    general = f'prof_general_{name}'
    out = ['#ifndef PROF_NO_IN_FLIGHT']
    out.append(gen_wrapper(fid, name, ret, args, facts,
                           head=f'extern "C" [[gnu::noinline]] {ret} {general}({decl}) {{').rstrip('\n'))
    out.append(f'extern "C" PROF_EXPORT {ret} {name}({decl}) {{')
    out.append('  prof::shim::ThreadState* const ts = prof::shim::fast_begin();')
    leave = f'return {general}({call_args(args)});'
    pname = 'P' + name
    sub = {}
    entered = None
    timed = None
    if kind == 'Send':
        # Only what decides the path stays before the call; the message's
        # size is taken and tested after it (fast_finish_send).
        count, dtype = facts['bytes']
        count = '*'.join(f'(uint64_t)({c})' for c in count.split('*'))
        peer, tag, comm = facts['peer'], facts['tag'], facts['comm']
        out.append(f'  if (__builtin_expect(ts == nullptr || prof::shim::fast_send_entry_misfit({peer}, {tag}, '
                   f'{dtype}) != 0, 0))')
        out.append(f'    {leave}')
        out.append(f'  prof::shim::fast_send_enter(ts, {count}, {dtype});')
        slot = f'{peer}, {tag}, (uint32_t)({comm})'
        finish = 'prof::shim::fast_finish_send({fid}, rc)'
    elif kind in ('Isend', 'Irecv'):
        count, dtype = facts['bytes']
        count = '*'.join(f'(uint64_t)({c})' for c in count.split('*'))
        peer, tag, comm = facts['peer'], facts['tag'], facts['comm']
        out.append(f'  const uint64_t prof_bytes = prof::shim::fast_bytes({count}, {dtype});')
        out.append(f'  if (__builtin_expect(ts == nullptr || prof::shim::fast_send_misfit({peer}, {tag}, '
                   f'{count}, {dtype}, prof_bytes) != 0, 0))')
        out.append(f'    {leave}')
        # A site the thread's cache does not hold goes to the general
        # wrapper, which resolves it (fast_keep_site).
        out.append(f'  const uint64_t prof_site = prof::shim::site_func({fid}, __builtin_return_address(0));')
        out.append(f'  if (__builtin_expect(!prof::shim::site_cache_hit(ts, prof_site), 0)) {leave}')
        out.append('  prof::shim::fast_keep_site(ts, prof_site);')
        slot = f'{peer}, {tag}, (uint32_t)({comm}), (uint32_t)prof_bytes'
        finish = (f'prof::shim::fast_finish_start<prof::format::FuncKind::{kind}>({{fid}}, rc, '
                  f'{facts["request"]})')
    elif kind == 'Recv':
        peer, tag, comm, st = facts['peer'], facts['tag'], facts['comm'], facts['status']
        # A site the thread's cache does not hold goes to the general
        # wrapper, which resolves it (fast_keep_site).
        out.append(f'  if (__builtin_expect(ts == nullptr, 0)) {leave}')
        out.append(f'  const uint64_t prof_site = prof::shim::site_func({fid}, __builtin_return_address(0));')
        out.append(f'  if (__builtin_expect(!prof::shim::site_cache_hit(ts, prof_site), 0)) {leave}')
        out.append('  prof::format::InFlightSlot* const prof_slot = prof::shim::fast_recv_site(ts, prof_site);')
        out.append(f'  if (__builtin_expect(prof::shim::fast_tag_misfit({tag}) != 0, 0)) {leave}')
        out.append(f'  if (__builtin_expect(!prof::shim::fast_recv_room(ts), 0)) {leave}')
        sub[st] = 'prof_status'
        slot = f'{peer}, {tag}, (uint32_t)({comm})'
        # The record's words known before the call go into the chunk now,
        # off the hop's critical path (fast_recv_enter).
        entered = (f'  prof::shim::fast_recv_enter(ts, prof_slot, {peer}, {tag}, '
                   f'(uint32_t)({comm}));')
        timed = '  prof::shim::fast_recv_timed(ts, prof_slot, prof_t0);'
        finish = 'prof::shim::fast_finish_recv({fid}, rc, prof_status)'
    else:
        out.append(f'  if (__builtin_expect(ts == nullptr, 0)) {leave}')
        slot = None
        finish = 'prof::shim::fast_finish_plain({fid}, rc)'
    out.append('  prof::shim::fast_enter(ts);')
    if kind == 'Send':
        out.append(f'  const uint64_t prof_site = prof::shim::site_func({fid}, __builtin_return_address(0));')
        out.append(f'  prof::format::InFlightSlot* const prof_slot = prof::shim::fast_call_enter(ts, prof_site, '
                   f'{slot});')
    elif kind == 'Recv':
        out.append(f'  prof::shim::fast_call_facts(prof_slot, {slot});')
    elif kind in ('Isend', 'Irecv'):
        out.append(f'  prof::format::InFlightSlot* const prof_slot = prof::shim::call_enter_keyed(ts, prof_site, '
                   f'{slot});')
    elif slot:
        out.append(f'  prof::format::InFlightSlot* const prof_slot = prof::shim::call_enter(ts, {fid}, '
                   f'__builtin_return_address(0), {slot});')
    else:
        out.append(f'  prof::format::InFlightSlot* const prof_slot = '
                   f'prof::shim::call_enter_plain(ts, {fid}, __builtin_return_address(0));')
    if entered:
        out.append(entered)
    if kind == 'Recv':
        st = facts['status']
        out.append(f'  MPI_Status* const prof_status = {st} == MPI_STATUS_IGNORE ? &ts->ignored_status : {st};')
    if timed:
        out.append('  const uint64_t prof_t0 = prof::shim::fast_now();')
        out.append('  prof::shim::call_entered(prof_slot, prof_t0);')
        out.append(timed)
    else:
        out.append('  prof::shim::call_entered(prof_slot, prof::shim::fast_now());')
    out.append(f'  const int rc = {pname}({call_args(args, sub)});')
    out.append(f'  return {finish.format(fid=fid)};')
    out.append('}')
    out.append('#else')
    out.append(gen_wrapper(fid, name, ret, args, facts).rstrip('\n'))
    out.append('#endif')
    return '\n'.join(out) + '\n'

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--header', action='append', required=True)
    ap.add_argument('--symbols', required=True, help='libmpich.so')
    ap.add_argument('--out', required=True)
    ap.add_argument('--list', required=True, help='names of wrapped functions, one a line')
    ap.add_argument('--weak-header', required=True,
                    help='header declaring every PMPI_ function weak (docs/design/shim-hot-path.md)')
    a = ap.parse_args()

    protos = parse_prototypes(a.header)
    syms = exported_symbols(a.symbols)
    names = wrapped_names(protos, syms)
    missing_facts = [n for n in FACTS if n not in protos]
    if missing_facts:
        raise SystemExit(f'facts for functions MPICH does not declare: {missing_facts}')

    schema = read_schema()
    for n, f in FACTS.items():
        check_schema(n, f, schema)

    body = []
    table = []
    for i, name in enumerate(names):
        fid = i + 1
        ret, arglist = protos[name]
        facts = facts_for(name)
        kind = facts['kind'] if facts else 'Other'
        table.append(f'  {{{fid}, prof::format::FuncKind::{kind}, "{name}"}},')
        if name in HAND_WRITTEN:
            body.append(f'// {name}: hand-written in entry_points.cpp (id {fid})\n')
            continue
        args = [Arg(x) for x in arglist]
        fast = fast_kind(name, ret, facts)
        if fast:
            body.append(gen_fast_pair(fid, name, ret, args, facts, fast))
        else:
            body.append(gen_wrapper(fid, name, ret, args, facts))

    ids = {n: i + 1 for i, n in enumerate(names)}
    with open(a.out, 'w') as f:
        f.write('// Generated by libprof/wrappers/generate_wrappers.py. Do not edit.\n')
        f.write('#include "runtime.h"\n#include "substitutions.h"\n\n')
        f.write('namespace prof::shim {\n')
        f.write('const FunctionInfo kFunctions[] = {\n' + '\n'.join(table) + '\n};\n')
        f.write(f'const size_t kFunctionCount = {len(names)};\n')
        for special in sorted(HAND_WRITTEN):
            f.write(f'const uint16_t kId_{special} = {ids[special]};\n')
        f.write('}  // namespace prof::shim\n')
        f.write(BYTES_HELPERS + '\n')
        f.write('\n'.join(body))
    with open(a.list, 'w') as f:
        f.write('\n'.join(names) + '\n')
    # libprof.so does not need libmpich.so: the application brings it. Weak
    # references let a process that never loads it (mpiexec, a shell) bind
    # them to nothing, even under LD_BIND_NOW; lazily bound calls in a rank
    # find libmpich's definitions as before.
    with open(a.weak_header, 'w') as f:
        f.write('// Generated by libprof/wrappers/generate_wrappers.py. Do not edit.\n'
                '// Force-included into the shim\'s sources: every PMPI_ reference is weak.\n')
        f.write(''.join(f'#pragma weak P{n}\n' for n in sorted(protos) if 'P' + n in syms))


if __name__ == '__main__':
    main()
