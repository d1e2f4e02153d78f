#!/usr/bin/env python3
"""Two or more builds of ferret side by side over MCP, and plocate beside them.

    python3 bench/ab_mcp.py TREE "q1;q2" NAME=BIN[@VAR=VALUE,...] ... \
        [--rounds 3] [--runs 30] [--plocate DB]

Starts one `ferret serve --stdio --no-persist --content-index off` per build
on TREE (VAR=VALUE pairs go to that server's environment, e.g.
`GLIBC_TUNABLES=glibc.malloc.trim_threshold=2097152`), waits until each index
is ready, then for each round and query times RUNS `tools/call search`
round trips (limit 50) on each server in turn (the order reversed every
other round, so a loaded machine slows each alike) and prints each median.
With `--plocate DB` (an `updatedb -U TREE -o DB -l 0`), `plocate -d DB -l 50`
runs as a process in the same round for the queries it can answer, and
each build's median over plocate's is printed (issue 24's target: at most
0.5). Prints each server's memory when ready and after the calls
(`VmRSS`, `RssAnon`, `VmHWM`). Every server is stopped when done.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import index as ix  # noqa: E402

# The plocate arguments of the queries bench/index.py compares.
PLOCATE = {query: loc for _, query, _, loc, _ in ix.QUERIES if loc}


def memory(server):
    st = server.proc_status()
    mib = 1 << 20
    return f"VmRSS {st['VmRSS'] / mib:.1f} MiB, RssAnon {st.get('RssAnon', 0) / mib:.1f}, VmHWM {st['VmHWM'] / mib:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("queries")
    ap.add_argument("builds", nargs="+", metavar="NAME=BIN[@VAR=VALUE,...]")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--plocate", metavar="DB")
    args = ap.parse_args()
    queries = [q for q in args.queries.split(";") if q]
    servers = []
    try:
        for spec in args.builds:
            name, rest = spec.split("=", 1)
            binary, _, env = rest.partition("@")
            extra = dict(e.split("=", 1) for e in env.split(",")) if env else {}
            state = tempfile.mkdtemp(prefix="ferret-ab-mcp-")
            saved = dict(os.environ)
            os.environ.update(extra)
            try:
                server = ix.Server(args.tree, ["--no-persist", "--content-index", "off"], state, binary=binary)
            finally:
                os.environ.clear()
                os.environ.update(saved)
            servers.append((name, server, state))
        for name, server, _ in servers:
            server.wait_ready()
        time.sleep(1)
        for name, server, _ in servers:
            print(f"{name} ready: {memory(server)}")
        medians = {}
        for r in range(args.rounds):
            order = servers if r % 2 == 0 else servers[::-1]
            for q in queries:
                for name, server, _ in order:
                    times = []
                    for _ in range(args.runs):
                        t = time.perf_counter()
                        server.result("search", {"query": q, "limit": 50})
                        times.append((time.perf_counter() - t) * 1000)
                    medians.setdefault((name, q), []).append(statistics.median(times))
                if args.plocate and q in PLOCATE:
                    times = []
                    for _ in range(args.runs):
                        t = time.perf_counter()
                        subprocess.run(["plocate", "-d", args.plocate, "-l", "50", *PLOCATE[q]],
                                       stdout=subprocess.DEVNULL, check=False)
                        times.append((time.perf_counter() - t) * 1000)
                    medians.setdefault(("plocate", q), []).append(statistics.median(times))
            print(f"round {r} done, load {os.getloadavg()[0]:.2f}", flush=True)
        print("\nmedian round trip of each round (ms); with plocate, each build's over plocate's")
        for q in queries:
            row = [f"{q:<16}"]
            for name, _, _ in servers:
                row.append(f"{name}: " + "/".join(f"{x:.2f}" for x in medians[(name, q)]))
            if ("plocate", q) in medians:
                p = medians[("plocate", q)]
                row.append("plocate: " + "/".join(f"{x:.2f}" for x in p))
                for name, _, _ in servers:
                    ratios = [m / pl for m, pl in zip(medians[(name, q)], p)]
                    row.append(f"{name}/plocate: " + "/".join(f"{x:.2f}" for x in ratios)
                               + f" (median {statistics.median(ratios):.2f})")
            print("  ".join(row))
        for name, server, _ in servers:
            print(f"{name} after the calls: {memory(server)}")
    finally:
        for _, server, state in servers:
            server.close()
            shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
