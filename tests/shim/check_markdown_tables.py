#!/usr/bin/env python3
"""Checks that every row of every Markdown table in a file has as many cells
as its header row: an unescaped `|` inside a cell would split it.

Usage: check_markdown_tables.py FILE.md
"""
import re
import sys

# A cell boundary: a `|` not escaped by a backslash.
BOUNDARY = re.compile(r"(?<!\\)\|")


def cells(line):
    return len(BOUNDARY.split(line.strip().strip("|")))


def main(path):
    bad = 0
    header = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.lstrip().startswith("|"):
                header = None
                continue
            if header is None:
                header = cells(line)
                continue
            if cells(line) != header:
                print(f"{path}:{number}: {cells(line)} cells, the header has {header}: {line.rstrip()}")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
