"""Per-function facts for the PMPI wrappers: what each MPI function's record carries.

The prototypes come from MPICH's own headers (mpi_proto.h, mpio.h), parsed at build
time by generate_wrappers.py; this table says, by argument name, which argument is
the peer, the tag, the communicator, the byte count, the request, the status.
Functions absent from the table are wrapped too and recorded with no payload
(FuncKind Other). The large-count variants (`MPI_Send_c`) share their base
function's facts. The generator checks every named argument exists, so a header
change fails the build instead of recording garbage.

Byte counts are (count_arg, datatype_arg) pairs, or a special form:
  ('sum', counts_arg, datatype_arg)        sum of an array over the comm size
  ('sumw', counts_arg, datatypes_arg)      sum of counts[i] * size(types[i])
  ('sum_peers', ...), ('sumw_peers', ...)  the same over the ranks the arrays cover
                                           (an intercommunicator's remote group)
  ('each_peer', count_arg, datatype_arg)   count to every one of those ranks
  ('each_rank', count_arg, datatype_arg)   count for every rank of the comm
  ('sum_neighbors', ...), ('sumw_neighbors', ...), ('each_neighbor', ...)
                                           the same over a topology's outgoing neighbours
  ('own', counts_arg, datatype_arg)        this rank's entry of a per-rank array
  ('inplace', (a, ta), (b, tb))            (a, ta) unless sendbuf is MPI_IN_PLACE, then (b, tb)
  ('inplace_recv', (a, ta), (b, tb))       the same for recvbuf
"""

def _send(peer='dest', tag='tag', comm='comm', count='count', dtype='datatype'):
    return dict(kind='Send', peer=peer, tag=tag, comm=comm, bytes=(count, dtype),
                markers=[(peer, tag)])

def _isend(**kw):
    f = _send(**kw)
    f.update(kind='Isend', request='request')
    return f

FACTS = {}

for n in ['MPI_Send', 'MPI_Bsend', 'MPI_Ssend', 'MPI_Rsend']:
    FACTS[n] = _send()
for n in ['MPI_Isend', 'MPI_Ibsend', 'MPI_Issend', 'MPI_Irsend',
          'MPI_Send_init', 'MPI_Bsend_init', 'MPI_Ssend_init', 'MPI_Rsend_init']:
    FACTS[n] = _isend()
FACTS['MPI_Psend_init'] = dict(kind='Isend', peer='dest', tag='tag', comm='comm',
                               bytes=('partitions*count', 'datatype'), request='request',
                               markers=[('dest', 'tag')])

FACTS['MPI_Recv'] = dict(kind='Recv', peer='source', tag='tag', comm='comm',
                         bytes=('count', 'datatype'), status='status',
                         markers=[('source', 'tag')])
# Matched receives: communicator, source and tag come from the MPI_Message
# that the Mprobe/Improbe before them returned (the shim remembers it).
FACTS['MPI_Mrecv'] = dict(kind='Recv', status='status', bytes=('count', 'datatype'),
                          message='message')
for n in ['MPI_Irecv', 'MPI_Recv_init']:
    FACTS[n] = dict(kind='Irecv', peer='source', tag='tag', comm='comm',
                    bytes=('count', 'datatype'), request='request',
                    markers=[('source', 'tag')])
# MPICH names Precv_init's source argument `dest`.
FACTS['MPI_Precv_init'] = dict(kind='Irecv', peer='dest', tag='tag', comm='comm',
                               bytes=('partitions*count', 'datatype'), request='request',
                               markers=[('dest', 'tag')])
FACTS['MPI_Imrecv'] = dict(kind='Irecv', bytes=('count', 'datatype'), request='request',
                           message='message')

FACTS['MPI_Sendrecv'] = dict(kind='SendRecv', peer='dest', tag='sendtag', comm='comm',
                             bytes=('sendcount', 'sendtype'),
                             recv_peer='source', recv_tag='recvtag',
                             recv_bytes=('recvcount', 'recvtype'), status='status',
                             markers=[('dest', 'sendtag'), ('source', 'recvtag')])
FACTS['MPI_Sendrecv_replace'] = dict(kind='SendRecv', peer='dest', tag='sendtag', comm='comm',
                                     bytes=('count', 'datatype'),
                                     recv_peer='source', recv_tag='recvtag',
                                     recv_bytes=('count', 'datatype'), status='status',
                                     markers=[('dest', 'sendtag'), ('source', 'recvtag')])

for n in ['MPI_Probe', 'MPI_Iprobe']:
    FACTS[n] = dict(kind='Probe', peer='source', tag='tag', comm='comm', status='status',
                    markers=[('source', 'tag')], found='flag' if n == 'MPI_Iprobe' else None)
for n in ['MPI_Mprobe', 'MPI_Improbe']:
    FACTS[n] = dict(kind='Probe', peer='source', tag='tag', comm='comm', status='status',
                    markers=[('source', 'tag')], found='flag' if n == 'MPI_Improbe' else None,
                    message='message')

# Completions: (form, count arg, requests arg, statuses arg, extra)
FACTS['MPI_Wait'] = dict(kind='Completion', form='one', request='request', status='status')
FACTS['MPI_Test'] = dict(kind='Completion', form='one', request='request', status='status',
                         found='flag')
FACTS['MPI_Waitall'] = dict(kind='Completion', form='all', count='count',
                            requests='array_of_requests', statuses='array_of_statuses')
FACTS['MPI_Testall'] = dict(kind='Completion', form='all', count='count',
                            requests='array_of_requests', statuses='array_of_statuses',
                            found='flag')
FACTS['MPI_Waitany'] = dict(kind='Completion', form='any', count='count',
                            requests='array_of_requests', index='indx', status='status')
FACTS['MPI_Testany'] = dict(kind='Completion', form='any', count='count',
                            requests='array_of_requests', index='indx', status='status',
                            found='flag')
FACTS['MPI_Waitsome'] = dict(kind='Completion', form='some', count='incount',
                             requests='array_of_requests', outcount='outcount',
                             indices='array_of_indices', statuses='array_of_statuses')
FACTS['MPI_Testsome'] = dict(kind='Completion', form='some', count='incount',
                             requests='array_of_requests', outcount='outcount',
                             indices='array_of_indices', statuses='array_of_statuses')

FACTS['MPI_Start'] = dict(kind='RequestOp', request='request')
FACTS['MPI_Cancel'] = dict(kind='RequestOp', request='request')
FACTS['MPI_Request_free'] = dict(kind='RequestOp', request='request')
FACTS['MPI_Startall'] = dict(kind='RequestOp', count='count', requests='array_of_requests')

# Collectives. wait: the kind of the wait state of a member that waits in it
# (docs/metrics.md, "Wait states by kind"): 'barrier', 'nxn' (every member waits
# for the last to enter), 'one_to_all' (non-roots wait for the root), 'all_to_one'
# (the root waits for the last member); none: counted as another collective wait.
# bytes: what this rank contributes (sends into the operation);
# Scatter(v): what it receives, the mirror of Gather(v). With MPI_IN_PLACE the
# contribution is the rank's own block of the receive (Scatter: send) buffer.
_COLL = {
    'MPI_Barrier': dict(bytes=None, wait='barrier'),
    'MPI_Bcast': dict(wait='one_to_all', root='root', bytes=('count', 'datatype')),
    'MPI_Reduce': dict(wait='all_to_one', root='root', bytes=('count', 'datatype')),
    'MPI_Allreduce': dict(wait='nxn', bytes=('count', 'datatype')),
    'MPI_Scan': dict(wait='nxn', bytes=('count', 'datatype')),
    'MPI_Exscan': dict(wait='nxn', bytes=('count', 'datatype')),
    'MPI_Reduce_scatter_block': dict(wait='nxn', bytes=('each_rank', 'recvcount', 'datatype')),
    'MPI_Reduce_scatter': dict(wait='nxn', bytes=('sum', 'recvcounts', 'datatype')),
    'MPI_Gather': dict(wait='all_to_one', root='root', bytes=('inplace', ('sendcount', 'sendtype'),
                                           ('recvcount', 'recvtype'))),
    'MPI_Gatherv': dict(wait='all_to_one', root='root', bytes=('inplace', ('sendcount', 'sendtype'),
                                            ('own', 'recvcounts', 'recvtype'))),
    'MPI_Scatter': dict(wait='one_to_all', root='root', bytes=('inplace_recv', ('recvcount', 'recvtype'),
                                            ('sendcount', 'sendtype'))),
    'MPI_Scatterv': dict(wait='one_to_all', root='root', bytes=('inplace_recv', ('recvcount', 'recvtype'),
                                             ('own', 'sendcounts', 'sendtype'))),
    'MPI_Allgather': dict(wait='nxn', bytes=('inplace', ('sendcount', 'sendtype'),
                                 ('recvcount', 'recvtype'))),
    'MPI_Allgatherv': dict(wait='nxn', bytes=('inplace', ('sendcount', 'sendtype'),
                                  ('own', 'recvcounts', 'recvtype'))),
    'MPI_Neighbor_allgather': dict(bytes=('sendcount', 'sendtype')),
    'MPI_Neighbor_allgatherv': dict(bytes=('sendcount', 'sendtype')),
    'MPI_Neighbor_alltoall': dict(bytes=('each_neighbor', 'sendcount', 'sendtype')),
    'MPI_Neighbor_alltoallv': dict(bytes=('sum_neighbors', 'sendcounts', 'sendtype')),
    'MPI_Neighbor_alltoallw': dict(bytes=('sumw_neighbors', 'sendcounts', 'sendtypes')),
    'MPI_Alltoall': dict(wait='nxn', bytes=('inplace', ('each_peer', 'sendcount', 'sendtype'),
                                ('each_peer', 'recvcount', 'recvtype')), alltoall=True),
    'MPI_Alltoallv': dict(wait='nxn', bytes=('inplace', ('sum_peers', 'sendcounts', 'sendtype'),
                                 ('sum_peers', 'recvcounts', 'recvtype')), alltoall=True),
    'MPI_Alltoallw': dict(wait='nxn', bytes=('inplace', ('sumw_peers', 'sendcounts', 'sendtypes'),
                                 ('sumw_peers', 'recvcounts', 'recvtypes')), alltoall=True),
}
for base, f in _COLL.items():
    kind = 'AllToAll' if f.get('alltoall') else 'Collective'
    FACTS[base] = dict(kind=kind, comm='comm', root=f.get('root'), bytes=f['bytes'],
                       wait=f.get('wait'))
    # Nonblocking (MPI_Ibcast) and persistent (MPI_Bcast_init) forms.
    nb = 'MPI_I' + base[4].lower() + base[5:]
    for n in [nb, base + '_init']:
        FACTS[n] = dict(kind='I' + kind, comm='comm', root=f.get('root'), bytes=f['bytes'],
                        request='request', wait=f.get('wait'))

# Substituted implementations (LLNL wrap's {{callfn}}): the wrapper records the call
# as usual, on both its paths, but calls this function (declared in
# libprof/src/substitutions.h, same arguments; the _c twin shares it by overload)
# instead of the PMPI one.
FACTS['MPI_Bcast']['callfn'] = 'prof::shim::bcast_call'

# Communicator creation: the new communicator gets a definition (membership).
# `over_parent`: every member of the parent communicator calls it, in the same
# order as its collectives (MPI_Comm_create_group is called by the group's
# members only; the *_from_group(s) calls have no parent).
for n, parent, new in [
        ('MPI_Comm_dup', 'comm', 'newcomm'), ('MPI_Comm_dup_with_info', 'comm', 'newcomm'),
        ('MPI_Comm_split', 'comm', 'newcomm'), ('MPI_Comm_split_type', 'comm', 'newcomm'),
        ('MPI_Comm_create', 'comm', 'newcomm'), ('MPI_Comm_create_group', 'comm', 'newcomm'),
        ('MPI_Cart_create', 'comm_old', 'comm_cart'), ('MPI_Cart_sub', 'comm', 'newcomm'),
        ('MPI_Graph_create', 'comm_old', 'comm_graph'),
        ('MPI_Dist_graph_create', 'comm_old', 'comm_dist_graph'),
        ('MPI_Dist_graph_create_adjacent', 'comm_old', 'comm_dist_graph'),
        ('MPI_Intercomm_create', 'local_comm', 'newintercomm'),
        ('MPI_Intercomm_merge', 'intercomm', 'newintracomm'),
        ('MPI_Comm_create_from_group', None, 'newcomm'),
        ('MPI_Intercomm_create_from_groups', None, 'newintercomm')]:
    FACTS[n] = dict(kind='CommCreate', comm=parent, newcomm=new,
                    over_parent=n not in ('MPI_Comm_create_group', 'MPI_Comm_create_from_group',
                                          'MPI_Intercomm_create_from_groups'))
# MPI_Comm_idup: a nonblocking collective on the parent that also names a new
# communicator (defined without communication: comm_definitions.cpp, define_idup).
for n in ['MPI_Comm_idup', 'MPI_Comm_idup_with_info']:
    FACTS[n] = dict(kind='ICollective', comm='comm', root=None, bytes=None, request='request',
                    newcomm='newcomm')

# What the analysis must know of a function beyond its record's kind (the
# generated prof/function_roles.h turns these into FunctionRole bits; a kind of
# Isend, Irecv, ICollective or IAllToAll adds 'starts_op', or 'persistent_init'
# for a name ending in _init, and a collective's `wait` adds its wait kind).
ROLES = {
    'MPI_Init': ['init'],
    'MPI_Init_thread': ['init'],
    'MPI_Finalize': ['finalize'],
    # Callable before MPI_Init (and after MPI_Finalize).
    'MPI_Initialized': ['pre_init'],
    'MPI_Finalized': ['pre_init'],
    'MPI_Get_version': ['pre_init'],
    'MPI_Get_library_version': ['pre_init'],
    'MPI_Wtime': ['pre_init'],
    'MPI_Wtick': ['pre_init'],
    'MPI_Start': ['start', 'starts_op'],
    'MPI_Startall': ['start', 'starts_op'],
    'MPI_Request_free': ['free'],
    'MPI_Grequest_start': ['grequest_start'],
}
