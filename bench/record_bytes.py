#!/usr/bin/env python3
"""Where a rank file's event bytes go: records and bytes by function and form.

Usage: bench/record_bytes.py TRACE_DIR/rank-00000.prof

Walks every events chunk's records (docs/trace-format.md: a record's first
word is func | flags << 16 | payload words << 24 | short time << 31) without
decoding payloads, and prints, per function, the records, their bytes, the
bytes per record, and how many were payload repeats (format 6: kLongTime on a
record with no payload words), short-time headers and long times. Snapshots
(function 0xFFFD) are listed as such. Names come from the file's F lines.
"""
import struct
import sys
from collections import defaultdict

CHUNK_MAGIC = 0x4B4E4843
DEFINITIONS, EVENTS = 1, 2
SEALED = 1
LONG_TIME = 1
SNAPSHOT, MARKER = 0xFFFD, 0xFFFE


def main(path):
    data = open(path, "rb").read()
    version = struct.unpack_from("<I", data, 8)[0]
    names = {SNAPSHOT: "(snapshot)", MARKER: "(marker)"}
    stats = defaultdict(lambda: [0, 0, 0, 0, 0])  # records, bytes, repeats, short, long
    off = 64
    while off + 32 <= len(data):
        magic, ctype, flags, capacity, used = struct.unpack_from("<IHHII", data, off)
        if magic != CHUNK_MAGIC:  # zeros between chunks (8-byte aligned)
            off += 8
            continue
        payload = data[off + 32: off + 32 + capacity]
        if ctype == DEFINITIONS and flags & SEALED:
            for line in payload[:used].decode("utf-8", "replace").splitlines():
                f = line.split("\t")
                if len(f) >= 4 and f[0] == "F":
                    names[int(f[1])] = f[3]
        elif ctype == EVENTS:
            end = used if flags & SEALED else len(payload)
            at = 0
            while at + 8 <= end:
                w0 = struct.unpack_from("<I", payload, at)[0]
                if w0 == 0:
                    break
                func, rflags = w0 & 0xFFFF, (w0 >> 16) & 0xFF
                words, short = (w0 >> 24) & 0x7F, w0 >> 31
                size = (3 - short + words) * 4
                s = stats[func]
                s[0] += 1
                s[1] += size
                repeat = version >= 6 and rflags & LONG_TIME and words == 0
                s[2] += bool(repeat)
                s[3] += short
                s[4] += bool(rflags & LONG_TIME and not repeat)
                at += size
        off += 32 + capacity
    total_records = sum(s[0] for f, s in stats.items() if f != SNAPSHOT)
    total_bytes = sum(s[1] for s in stats.values())
    print(f"format {version}: {total_records} records (snapshots apart), {total_bytes} event bytes, "
          f"{total_bytes / max(total_records, 1):.2f} bytes a record")
    print(f"{'function':24} {'records':>10} {'bytes':>12} {'share':>6} {'B/rec':>6} "
          f"{'repeats':>8} {'short':>8} {'long':>6}")
    for func, s in sorted(stats.items(), key=lambda kv: -kv[1][1]):
        print(f"{names.get(func, str(func)):24} {s[0]:10} {s[1]:12} {100 * s[1] / total_bytes:5.1f}% "
              f"{s[1] / s[0]:6.2f} {s[2]:8} {s[3]:8} {s[4]:6}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: record_bytes.py RANK_FILE")
    main(sys.argv[1])
