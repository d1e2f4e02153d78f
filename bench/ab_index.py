#!/usr/bin/env python3
"""In-process query times of two (or more) ferret-bench builds, alternated.

    python3 bench/ab_index.py TREE "report;/alpha_beta_;main" BENCH_BIN [BENCH_BIN ...]
                              [--rounds 3] [--runs 40] [--by-name]

On a machine whose speed wanders (other work on it, a shared VM), one run of
each build after the other says little; this runs every build `--rounds`
times in turn (`ferret-bench index TREE` with FERRET_BENCH_QUERIES, each
query `--runs` times) and prints, per query and build, the median of the
p50s and every p50 seen. `--by-name` times the name order instead of
relevance (FERRET_BENCH_BY_NAME=1). Each round builds the index again, so
a 10M tree takes minutes a round.

    python3 bench/ab_index.py TREE --fuzzy bench/queries/fuzzy-1m.txt BENCH_BIN [BENCH_BIN ...]

times fuzzy search instead (`ferret-bench fuzzy`, one query a line in the
file; QUERIES is then left out), each query `--runs` times a round.
"""

import argparse
import os
import re
import statistics
import subprocess
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("queries", nargs="?", help="queries separated by ';'")
    ap.add_argument("bins", nargs="+")
    ap.add_argument("--fuzzy", metavar="FILE", help="time fuzzy search of FILE's queries")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--by-name", action="store_true")
    args = ap.parse_args()
    if args.fuzzy and args.queries:
        # The first "query" was a build.
        args.bins.insert(0, args.queries)
    env = dict(os.environ, FERRET_BENCH_QUERIES=args.queries or "", FERRET_BENCH_RUNS=str(args.runs))
    if args.by_name:
        env["FERRET_BENCH_BY_NAME"] = "1"
    seen = defaultdict(list)
    for _ in range(args.rounds):
        for b in args.bins:
            if args.fuzzy:
                cmd = [b, "fuzzy", args.tree, "--queries", args.fuzzy, "--runs", str(args.runs)]
            else:
                cmd = [b, "index", args.tree, "--freshness", "0", "--storm", "0"]
            out = subprocess.run(
                cmd,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            for line in out.splitlines():
                if args.fuzzy:
                    # p50, max, total, the query.
                    m = re.match(r"\s*([\d.]+)\s+[\d.]+\s+\d+\s+(.+)$", line)
                    if m:
                        seen[(m.group(2), b)].append(float(m.group(1)))
                    m = re.match(r"all \d+ calls: p50 ([\d.]+) ms", line)
                    if m:
                        seen[("(every call)", b)].append(float(m.group(1)))
                    continue
                m = re.match(r"`(.*?)`\s+([\d.]+)", line)
                if m:
                    seen[(m.group(1), b)].append(float(m.group(2)))
    for (query, b), p50s in sorted(seen.items()):
        print(f"{query:20} {b:50} median p50 {statistics.median(p50s):9.3f} ms  {sorted(p50s)}")


if __name__ == "__main__":
    main()
