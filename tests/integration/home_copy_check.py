#!/usr/bin/env python3
"""Checks one rank file of sequence.c under the shim (home_copy.sh).

home_copy_check.py PROF_DUMP RANK_FILE MIN_ROUNDS EXACT_ROUNDS|- COPY_STATE|- MIN_COPIES

- the reader reports no damage beyond an unsealed chunk (no CRC mismatch,
  bad record or backwards timestamp);
- the sends, and the receives, carry consecutive tags from 0 (round % 32000):
  no record read twice, none lost before the last one read;
- at least MIN_ROUNDS rounds were read (and exactly EXACT_ROUNDS when given);
- the file is format 5 and holds one home chunk and at least MIN_COPIES
  events chunks after it (its copies; a partial one counts when its header
  was written);
- COPY_STATE (copying, copied or none; -: any): what the Live slot of stream
  0 says about a copy in progress (a process killed inside one leaves it).
"""
import os
import re
import struct
import subprocess
import sys

dump, path, min_rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
exact = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] != "-" else None
want_state = sys.argv[5] if sys.argv[5] != "-" else None
min_copies = int(sys.argv[6])
fails = []
if not os.path.isfile(path):
    print(f"FAIL: no file {path}")
    sys.exit(1)

out = subprocess.run([dump, path, "--stats"], capture_output=True, text=True)
# Exit status 3 (and one line saying so) exactly when records were lost.
lost_meta = re.search(r"^meta records_lost=(\d+)$", out.stdout, re.M)
want_status = 3 if lost_meta and lost_meta.group(1) != "0" else 0
if out.returncode != want_status:
    fails.append(f"prof-dump exit status {out.returncode}, expected {want_status}: {out.stderr[:300]}")
if want_status == 3 and "records lost when recording" not in out.stderr:
    fails.append(f"prof-dump does not say records were lost: {out.stderr[:300]}")
stats = dict(re.findall(r"(\w+)=(\d+)", next((l for l in out.stdout.splitlines()
                                              if l.startswith("stats ")), "")))
for key in ("crc_mismatches", "bad_records", "backwards_timestamps", "bad_chunk_headers"):
    if stats.get(key, "0") != "0":
        fails.append(f"{key}={stats.get(key)}")
for func in ("MPI_Send", "MPI_Recv"):
    tags = [int(t) for t in re.findall(rf" {func} peer=.*? tag=(\d+)", out.stdout)]
    wrong = next((i for i, t in enumerate(tags) if t != i % 32000), None)
    if wrong is not None:
        fails.append(f"{func} #{wrong} has tag {tags[wrong]}, expected {wrong % 32000} "
                     f"(tags around it: {tags[max(0, wrong - 3):wrong + 3]})")
    if len(tags) < min_rounds or (exact is not None and len(tags) != exact):
        fails.append(f"{len(tags)} {func} records, expected "
                     f"{exact if exact is not None else 'at least %d' % min_rounds}")
    print(f"{path}: {len(tags)} {func} records with consecutive tags")

data = open(path, "rb").read()
version = struct.unpack_from("<I", data, 8)[0]
homes = copies = 0
home_at = None
copy_word = None
off = 64
while off + 32 <= len(data):
    magic, kind, flags, capacity = struct.unpack_from("<IHHI", data, off)
    if magic != 0x4B4E4843:
        off += 8
        continue
    if kind == 2 and flags & 2:
        homes += 1
        home_at = off
    elif kind == 2 and home_at is not None:
        copies += 1  # written after the home: its copies
    if kind == 3:  # Live: LiveHeader (32 bytes), then slot 0; home_copy at byte 32 of it
        copy_word = struct.unpack_from("<Q", data, off + 32 + 32 + 32)[0]
    off += 32 + capacity
print(f"{path}: format {version}, {homes} home chunk(s), {copies} events chunk(s) "
      f"after it, slot 0's home_copy {copy_word:#x}")
if version < 5 or homes != 1 or copies < min_copies:
    fails.append(f"expected a format-5 file with one home chunk and at least {min_copies} "
                 "chunks after it")
state = {0: "none", 1: "copying", 2: "copied"}.get((copy_word or 0) & 7, "other")
if want_state and state != want_state:
    fails.append(f"slot 0 says '{state}', expected '{want_state}'")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
