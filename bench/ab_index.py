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
    ap.add_argument("queries", help="queries separated by ';'")
    ap.add_argument("bins", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--by-name", action="store_true")
    args = ap.parse_args()
    env = dict(os.environ, FERRET_BENCH_QUERIES=args.queries, FERRET_BENCH_RUNS=str(args.runs))
    if args.by_name:
        env["FERRET_BENCH_BY_NAME"] = "1"
    seen = defaultdict(list)
    for _ in range(args.rounds):
        for b in args.bins:
            out = subprocess.run(
                [b, "index", args.tree, "--freshness", "0", "--storm", "0"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            for line in out.splitlines():
                m = re.match(r"`(.*?)`\s+([\d.]+)", line)
                if m:
                    seen[(m.group(1), b)].append(float(m.group(2)))
    for (query, b), p50s in sorted(seen.items()):
        print(f"{query:20} {b:50} median p50 {statistics.median(p50s):9.3f} ms  {sorted(p50s)}")


if __name__ == "__main__":
    main()
