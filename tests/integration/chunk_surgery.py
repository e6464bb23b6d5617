#!/usr/bin/env python3
"""Damages a rank file at chunk boundaries, as a copy cut short or a stretch
of disk lost would (missing_chunks.sh):

chunk_surgery.py FILE remove K   cuts out the K-th events chunk in file order
                                 (its header and payload), the chunks after
                                 it moved up to close the gap
chunk_surgery.py FILE cut-last   cuts the file where its last events chunk
                                 in file order starts

Prints what it did. Exit status 2 when the file has too few events chunks.
"""
import struct
import sys

path, op = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
chunks = []  # (offset, end, type, flags, stream, sequence) in file order
off = 64
while off + 32 <= len(data):
    magic, kind, flags, capacity, _used, _crc, stream, sequence = struct.unpack_from(
        "<IHHIIIHH", data, off)
    if magic != 0x4B4E4843:
        off += 8
        continue
    chunks.append((off, off + 32 + capacity, kind, flags, stream, sequence))
    off += 32 + capacity
events = [c for c in chunks if c[2] == 2]
if op == "remove":
    k = int(sys.argv[3])
    if k >= len(events) - 1:
        print(f"{path}: {len(events)} events chunks, none to remove at {k}")
        sys.exit(2)
    at, end = events[k][0], events[k + 1][0]
    open(path, "wb").write(data[:at] + data[end:])
    print(f"{path}: removed events chunk {k} (stream {events[k][4]}, number "
          f"{events[k][5]}), bytes {at}..{end}")
elif op == "cut-last":
    if len(events) < 2:
        print(f"{path}: {len(events)} events chunks, too few to cut one off")
        sys.exit(2)
    at = events[-1][0]
    open(path, "wb").write(data[:at])
    homes = sum(1 for c in events if c[3] & 2)
    print(f"{path}: cut at byte {at}, before its last events chunk (stream {events[-1][4]}, "
          f"number {events[-1][5]}); {len(events)} events chunks, {homes} home")
else:
    print(f"unknown operation {op}")
    sys.exit(2)
