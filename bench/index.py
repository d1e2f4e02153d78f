#!/usr/bin/env python3
"""The index benchmark: one command, reproducible.

    python3 bench/index.py [--entries 1000000] [--tree DIR] [--real DIR ...]

Builds a synthetic tree with a fixed seed (unless --tree names an existing one),
then runs `ferret-bench index` (in-process: build, snapshot, memory, query p50/p99,
freshness) and the same query set through plocate (after updatedb of the same tree)
and fd, printing medians and ratios. Installs plocate and fd-find with apt-get when
missing. Figures and the machine go to docs/benchmarks.md by hand.
"""

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "target" / "release" / "ferret-bench"

# label -> (plocate args or None, fd args ending with the pattern, or None)
EQUIVALENTS = {
    "rare substring": (["-i", "-b", "zyzzyva"], ["-i", "zyzzyva"]),
    "common substring": (["-i", "-b", "report"], ["-i", "report"]),
    "extension": (["-i", "-b", "-r", r"\.pdf$"], ["-e", "pdf", "."]),
    "wildcard": (["-b", "invoice-*.csv"], ["-g", "invoice-*.csv"]),
    "path term": (["/alpha_beta_"], ["-p", "/alpha_beta_"]),
    "size function": (None, ["--size", "+4000b", "-t", "f", "."]),
    "date function": (None, ["--changed-within", "1d", "."]),
    "sorted by date, limit 50": (None, None),
}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def ensure_tools():
    missing = [p for p, exe in [("plocate", "plocate"), ("fd-find", "fdfind")] if not shutil.which(exe) and not shutil.which("fd")]
    if missing:
        print(f"installing {' '.join(missing)} with apt-get", file=sys.stderr)
        sh(["apt-get", "update", "-qq"])
        sh(["apt-get", "install", "-y", "-qq", *missing], stdout=subprocess.DEVNULL)


def median_ms(cmd, runs=15):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def run_tree(tree: Path, label: str):
    print(f"\n## {label}: {tree}\n")
    out = subprocess.run([str(BENCH), "index", str(tree)], check=True, capture_output=True, text=True).stdout
    print(out)
    ferret_p50 = {}
    for line in out.splitlines():
        for name in EQUIVALENTS:
            if line.startswith(name + " ") or line.startswith(name + "\t") or line.startswith(name.ljust(26)):
                parts = line[26:].split()
                ferret_p50[name] = float(parts[0])
    db = Path(os.environ.get("TMPDIR", "/tmp")) / f"ferret-bench-plocate-{os.getpid()}.db"
    t = time.perf_counter()
    sh(["updatedb", "-U", str(tree), "-o", str(db), "-l", "0"], stderr=subprocess.DEVNULL)
    print(f"plocate updatedb: {time.perf_counter() - t:.2f} s")
    fd = shutil.which("fdfind") or shutil.which("fd")
    # ferret returns the first 50 in sorted order AND the total; plocate can do one
    # or the other: `-l 50` stops at 50 unsorted matches, `-c` counts them all.
    # fd walks the disk each time (`--max-results 50`).
    print("\nmedians in ms; ratio = other / ferret (above 1: ferret is faster)")
    print(f"{'query':<26} {'ferret':>8} {'plocate -l50':>13} {'plocate -c':>11} {'fd':>9}   ratios (-l50, -c, fd)")
    for name, (loc, fda) in EQUIVALENTS.items():
        f = ferret_p50.get(name)
        p50 = median_ms(["plocate", "-d", str(db), "-l", "50", *loc]) if loc else None
        pc = median_ms(["plocate", "-d", str(db), "-c", *loc], runs=5) if loc else None
        d = median_ms([fd, "-H", "-I", "--max-results", "50", *fda, str(tree)], runs=5) if fda else None
        fmt = lambda v: f"{v:.2f}" if v is not None else "n/a"
        ratio = lambda v: f"{v / f:.1f}x" if v is not None and f else "n/a"
        print(f"{name:<26} {fmt(f):>8} {fmt(p50):>13} {fmt(pc):>11} {fmt(d):>9}   {ratio(p50)}, {ratio(pc)}, {ratio(d)}")
    db.unlink(missing_ok=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--tree", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "ferret-bench-tree")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--real", type=Path, action="append", default=[])
    args = ap.parse_args()
    sh(["cargo", "build", "--release", "-q", "-p", "ferret-bench"], cwd=REPO)
    ensure_tools()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
    marker = args.tree / f".made-{args.entries}-{args.seed}"
    if not marker.exists():
        shutil.rmtree(args.tree, ignore_errors=True)
        t = time.perf_counter()
        sh([str(BENCH), "tree", str(args.tree), "--entries", str(args.entries), "--seed", str(args.seed)])
        print(f"tree built in {time.perf_counter() - t:.1f} s")
        marker.touch()
    subprocess.run(["find", str(args.tree), "-maxdepth", "0"], stdout=subprocess.DEVNULL)  # warm
    subprocess.run(["du", "-s", str(args.tree)], stdout=subprocess.DEVNULL)
    run_tree(args.tree, f"synthetic tree, {args.entries} entries, seed {args.seed}")
    for real in args.real:
        run_tree(real.resolve(), "real tree")


if __name__ == "__main__":
    main()
