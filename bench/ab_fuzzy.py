#!/usr/bin/env python3
"""Two or more builds of ferret side by side on `search` with `fuzzy: true`.

    python3 bench/ab_fuzzy.py TREE BIN[,BIN...] [--rounds 3] [--runs 10] [--queries "q1;q2"]

Starts one `ferret serve --stdio --no-persist --content-index off` per build
on TREE, waits until each index answers, then for each round and query times
RUNS fuzzy round trips (limit 50) on each server in turn, the order reversed
every other round (a loaded machine slows each alike), and prints each
build's median. The default queries are five of bench/queries/fuzzy-1m.txt
(a name's start, a dropped letter's word, two words, initials, a typo).
Every server is stopped when done.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stdio_client import StdioServer  # noqa: E402

DEFAULT = "archive-modu;beta-data;module alpha;psnacparc;aochive-module-66316.md"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("bins")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--queries", default=DEFAULT)
    a = ap.parse_args()
    bins = a.bins.split(",")
    queries = a.queries.split(";")
    servers = [StdioServer([b, "serve", "--stdio", "--no-persist", "--content-index", "off",
                            "--root", a.tree], tempfile.mkdtemp()) for b in bins]
    try:
        for s in servers:
            while "building" in json.dumps(s.result("search", {"query": "zyzzyva"})):
                time.sleep(0.5)
        times = {(b, q): [] for b in bins for q in queries}
        for rnd in range(a.rounds):
            for q in queries:
                pairs = list(zip(bins, servers))
                for b, s in pairs if rnd % 2 == 0 else pairs[::-1]:
                    for _ in range(a.runs):
                        t = time.perf_counter()
                        s.result("search", {"query": q, "fuzzy": True})
                        times[(b, q)].append((time.perf_counter() - t) * 1000)
        for q in queries:
            print(f"{q:28}", "  ".join(f"{b}: {statistics.median(times[(b, q)]):.2f}" for b in bins))
    finally:
        for s in servers:
            s.close()


if __name__ == "__main__":
    main()
