#!/usr/bin/env python3
"""Fuzzy search latency over MCP: how long `search` with `fuzzy: true` takes.

    python3 bench/fuzzy.py --latency-tree DIR [--latency-tree DIR ...] [--runs 20] [--seed 7]

Each `--latency-tree` folder (for example 100k- and 1M-entry synthetic trees
made by `ferret-bench tree`) gets the p50 and p95 of fuzzy searches over MCP on
stdio, with 40 queries derived from 40 of its files as bench/retrieval.py
derives them (which measures whether the file meant comes first).
"""

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index import FERRET, REPO, Server, sh  # noqa: E402
from retrieval import queries_for  # noqa: E402


def sampled_files(tree, k, rng):
    """`k` files below `tree` (relative paths), drawn evenly by a walk of the
    disk: at a million entries, paging the index's whole list over MCP would
    take longer than the measurement."""
    sample, seen = [], 0
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for f in files:
            if f.startswith("."):
                continue
            seen += 1
            rel = os.path.relpath(os.path.join(folder, f), tree)
            if len(sample) < k:
                sample.append(rel)
            elif (j := rng.randrange(seen)) < k:
                sample[j] = rel
    return sample


def latency(tree, runs, seed):
    rng = random.Random(seed)
    state = Path(tempfile.mkdtemp(prefix="ferret-fuzzy-bench-"))
    server = Server(tree, ["--no-persist"], state)
    _, entries = server.wait_ready()
    sample = sampled_files(tree, 40, rng)
    queries = [q for rel in sample for q in queries_for(rel, rng).values()][:40]
    times = []
    for _ in range(max(1, runs // 10)):
        for q in queries:
            t = time.perf_counter()
            server.call("search", {"query": q, "fuzzy": True, "limit": 50})
            times.append((time.perf_counter() - t) * 1000)
    server.close()
    shutil.rmtree(state, ignore_errors=True)
    times.sort()
    print(f"fuzzy search over MCP on {tree} ({entries} entries): p50 {statistics.median(times):.1f} ms, "
          f"p95 {times[int(len(times) * 0.95)]:.1f} ms over {len(times)} calls")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency-tree", type=Path, action="append", default=[])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if not FERRET.exists():
        sh(["cargo", "build", "--release", "-q", "-p", "ferret"], cwd=REPO)
    for tree in args.latency_tree:
        latency(tree.resolve(), args.runs, args.seed)


if __name__ == "__main__":
    main()
