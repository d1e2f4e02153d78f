#!/usr/bin/env python3
"""The content index's first build beside one `rg` pass over the same tree.

    python3 bench/content_build.py TREE PATTERN [--rounds 7] NAME=BIN [NAME=BIN ...]

Each round starts every binary's `ferret serve --stdio` on TREE with a fresh
state directory, waits until its content index is ready and takes the
server's own `build_ms` (the build alone, not the name index before it),
then times one `rg --no-config --no-require-git -l -j CORES -e PATTERN` over
the tree (warm, as `bench/grep.py` does). Binaries take turns in every round,
so a loaded machine slows each alike. One build and one `rg` pass first warm
the page cache and are not counted. Prints each round (with the load
average), then medians and ranges, and each binary's median over `rg`'s
(issue 27's target: at most 2).
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
from grep import Server  # noqa: E402


def build_ms(binary, tree):
    state = tempfile.mkdtemp(prefix="ferret-content-build-")
    server = Server(binary, tree, [], state)
    try:
        ci = server.wait(True)["content_index"]
        if ci["state"] == "failed":
            raise SystemExit(f"{binary}: the content index failed: {ci.get('last_error')}")
        return ci["build_ms"]
    finally:
        server.close()
        shutil.rmtree(state, ignore_errors=True)


def rg_ms(rg, tree, pattern):
    started = time.perf_counter()
    subprocess.run([rg, "--no-config", "--no-require-git", "-l", "-j", str(os.cpu_count()), "-e", pattern, "."],
                   cwd=tree, stdout=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - started) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("pattern")
    ap.add_argument("bins", nargs="+", metavar="NAME=BIN")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    rg = shutil.which("rg")
    if not rg:
        raise SystemExit("rg is not installed (Debian: ripgrep)")
    bins = dict(b.split("=", 1) for b in args.bins)
    got = {name: [] for name in bins}
    rgs = []
    build_ms(next(iter(bins.values())), args.tree)
    rg_ms(rg, args.tree, args.pattern)
    for r in range(args.rounds):
        for name, binary in bins.items():
            got[name].append(build_ms(binary, args.tree))
        rgs.append(rg_ms(rg, args.tree, args.pattern))
        builds = ", ".join(f"{name} {v[-1]} ms" for name, v in got.items())
        print(f"round {r}: {builds}, rg {rgs[-1]:.0f} ms; load {os.getloadavg()[0]:.2f}", flush=True)
    rg_median = statistics.median(rgs)
    print(f"rg -l: median {rg_median:.0f} ms ({min(rgs):.0f}-{max(rgs):.0f})")
    for name, v in got.items():
        m = statistics.median(v)
        print(f"{name}: first build median {m:.0f} ms ({min(v)}-{max(v)}); {m / rg_median:.2f}x rg's median")


if __name__ == "__main__":
    main()
