#!/usr/bin/env python3
"""Searches over this machine's own file system, beside plocate.

    python3 bench/root.py [--root /] [--content-index off,on] [--runs 30]

issue 24's target for a real machine: every query over MCP at most 1x
`plocate -l 50`, with the content index on as well as off. What is measured:

- The root is bind-mounted (not recursively) on a fresh mount point, so that
  both tools see one file system (no /proc, /sys, /dev) and nothing else.
- plocate's database is made by `updatedb` of that mount point with nothing
  pruned (no paths, file systems or bind mounts), as ferret indexes it all.
- For each `--content-index` mode, a fresh `ferret serve --stdio --hidden
  --no-ignore --no-persist` on the mount point; once its name index is ready
  (the content index, when on, still building beside it, as after a start),
  each query `--runs` times over MCP (`tools/call search`, limit 50), p50 and
  p99; plocate `-l 50` on the same query as a process (hyperfine -N), median.
- `ferret search` as a process on the snapshot `ferret index` saves.

Needs root (the bind mount), plocate and hyperfine (installed with apt-get
when missing). The mount is undone and every server stopped by its PID at
the end. Figures go to docs/benchmarks.md by hand.
"""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import index as ix  # noqa: E402

# label -> (ferret query, plocate arguments). plocate's `-b` matches the name
# alone, as ferret's words do; without it, the whole path (ferret's `/` terms).
QUERIES = [
    ("rare name", "sshd_config", ["-i", "-b", "sshd_config"]),
    ("no match", "zyzzyva", ["-i", "-b", "zyzzyva"]),
    ("common name", "test", ["-i", "-b", "test"]),
    ("common name", "index", ["-i", "-b", "index"]),
    ("two words", "test util", ["-i", "-b", "-A", "test", "util"]),
    ("extension", "ext:pdf", ["-i", "-b", "-r", r"\.pdf$"]),
    ("wildcard", "*.h", ["-b", "*.h"]),
    ("path term", "share/doc/", ["share/doc/"]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=Path("/"))
    ap.add_argument("--content-index", default="off,on")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--plocate-runs", type=int, default=10)
    args = ap.parse_args()
    ix.ensure_tools()
    print(f"machine: {ix.machine()}")
    mnt = Path(tempfile.mkdtemp(prefix="ferret-root-bench-"))
    state = Path(tempfile.mkdtemp(prefix="ferret-root-state-"))
    ix.sh(["mount", "--bind", str(args.root), str(mnt)])
    try:
        run(args, mnt, state)
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
        mnt.rmdir()
        shutil.rmtree(state, ignore_errors=True)


def run(args, mnt, state):
    db = state / "plocate.db"
    t = time.perf_counter()
    ix.sh(["updatedb", "-U", str(mnt), "-o", str(db), "-l", "0", "--prune-bind-mounts", "no",
           "--prunepaths", "", "--prunefs", "", "--prunenames", ""], stderr=subprocess.DEVNULL)
    print(f"updatedb of {args.root} (bind-mounted on {mnt}): {time.perf_counter() - t:.1f} s")
    located = {}
    for label, query, loc in QUERIES:
        ms = ix.process_ms(["plocate", "-d", str(db), "-l", "50", *loc], args.plocate_runs)
        n = subprocess.run(["plocate", "-d", str(db), "-c", *loc], capture_output=True, text=True).stdout.strip()
        located[query] = (ms, n)

    flags = ["--hidden", "--no-ignore"]
    for mode in args.content_index.split(","):
        s = ix.Server(mnt, ["--no-persist", "--content-index", mode, *flags], state / f"serve-{mode}")
        ready, entries = s.wait_ready()
        rss, hwm = s.memory()
        print(f"\n## content index {mode}: name index ready after {ready:.1f} s, {entries} entries; "
              f"resident {rss / 2**20:.0f} MiB ({rss / entries:.1f} bytes/entry), peak {hwm / 2**20:.0f} MiB")
        rows = []
        for label, query, _ in QUERIES:
            times, total = [], None
            for _ in range(args.runs):
                t = time.perf_counter()
                r = s.call("search", {"query": query, "limit": 50})
                times.append((time.perf_counter() - t) * 1000)
                total = r["structuredContent"]["total"]
            times.sort()
            rows.append((label, query, statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.99))], total))
        content = s.call("diagnostics", {})["structuredContent"].get("content_index") or {}
        s.close()
        print(f"(content index after the queries: {json.dumps(content)[:300]})")
        print(f"\n| query | matches (ferret / plocate) | MCP p50 | MCP p99 | plocate -l 50 | ratio |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for label, query, p50, p99, total in rows:
            pl, n = located[query]
            print(f"| {label} `{query}` | {total} / {n} | {p50:.2f} | {p99:.2f} | {pl:.2f} | {p50 / pl:.2f} |")

    # The command line, on the snapshot `ferret index` saves.
    ix.sh([str(ix.FERRET), "index", "--root", str(mnt), "--state-dir", str(state / "cli"), "--content-index", "off", *flags],
          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print("\n| `ferret search` as a process | ms |\n| --- | ---: |")
    for label, query, _ in QUERIES:
        cli = [str(ix.FERRET), "search", query, "--root", str(mnt), "--state-dir", str(state / "cli"), "--limit", "50", *flags]
        print(f"| {label} `{query}` | {ix.process_ms(cli, 10):.1f} |")


if __name__ == "__main__":
    main()
