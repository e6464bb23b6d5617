#!/usr/bin/env python3
"""Puts trace files in the page cache as a read from storage brings them in,
so that a benchmark times the analysis in the same state whoever wrote the
trace and whenever (docs/performance.md, "The page cache's state").

A trace kept in the page cache for hours reads slower than the same bytes
fresh in it, read back from storage or just written: the synthetic 10^8
events, the exchange trace and 2x10^7 events over 4 ranks, kept since the
morning, took 1.03x, 1.05x and 1.03x the wall of their copies read back
(the kernel's walk of the page cache three times as long). The kept state
drifts and cannot be set up again at will; the read state can.

For each file: the dirty pages written back (a sync first), the file's pages
dropped (posix_fadvise DONTNEED), then the whole file read in 1 MiB reads.
Prints one line: the files and bytes read.

Usage: bench/as_read.py PATH...   (files, or directories searched for files)
"""
import os
import sys


def files_under(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                for name in sorted(names):
                    yield os.path.join(root, name)
        elif os.path.isfile(path):
            yield path
        else:
            sys.exit(f"as_read.py: {path}: no such file or directory")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    os.sync()  # (dirty pages are not dropped: written back first)
    files = total = 0
    buf = bytearray(1 << 20)
    for path in files_under(sys.argv[1:]):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            while True:
                n = os.readv(fd, [buf])
                if n == 0:
                    break
                total += n
        finally:
            os.close(fd)
        files += 1
    print(f"as_read.py: {files} files, {total / 1e6:.1f} MB read back into the page cache")


if __name__ == "__main__":
    main()
