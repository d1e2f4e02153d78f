#!/usr/bin/env python3
"""A `ferret serve`'s resident memory by mapping, and its search latency, at
a moment of its life: once the index is ready, or later (after the periodic
snapshot, written 5 minutes after a change, whose arrays a server then reads
in place).

    python3 bench/serve_memory.py BIN ROOT [--persist] [--settle SECONDS]
                                  [--queries 'report;zyzzyva'] [--runs 30]

One `serve --stdio --content-index off` process on ROOT (`--no-persist`
unless `--persist`, which gives it a fresh state directory of its own: a
first start, which builds the index and saves it). After it says the index
is ready it waits `--settle` seconds, then asks each query `--runs` times
over MCP (limit 50) and prints each query's first call and median (ms),
then VmRSS, RssAnon, RssFile and VmHWM (MiB, and bytes an entry) and the
largest mappings (`/proc/PID/smaps`: the binary, libc, the snapshot file,
anonymous memory).
"""

from __future__ import annotations

import argparse
import collections
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stdio_client import StdioServer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bin")
    ap.add_argument("root")
    ap.add_argument("--persist", action="store_true", help="a fresh state directory instead of --no-persist")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds to wait once the index is ready")
    ap.add_argument("--queries", default="", help="queries separated by `;`, asked after the wait")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()

    state = tempfile.mkdtemp(prefix="ferret-serve-memory-")
    argv = [args.bin, "serve", "--stdio", "--root", args.root, "--content-index", "off"]
    if not args.persist:
        argv.append("--no-persist")
    s = StdioServer(argv, state)
    try:
        while True:
            d = s.result("diagnostics", {})["structuredContent"]["index"]
            if d["state"] == "ready":
                entries = d["entries"]
                break
            time.sleep(0.05)
        ready = time.perf_counter() - s.started
        time.sleep(args.settle)
        for q in filter(None, args.queries.split(";")):
            times = []
            for _ in range(args.runs):
                t = time.perf_counter()
                s.result("search", {"query": q, "limit": 50})
                times.append((time.perf_counter() - t) * 1000)
            print(f"{q:>16}: first {times[0]:7.2f} ms, median {statistics.median(times):6.2f} ms")
        st = s.proc_status()
        mib = {k: v / 2**20 for k, v in st.items()}
        per = {k: v / entries for k, v in st.items()}
        print(f"{entries} entries, ready after {ready:.1f} s, measured {args.settle:.0f} s later "
              f"({'persisted' if args.persist else '--no-persist'})")
        print("  ".join(f"{k} {mib[k]:.1f} MiB ({per[k]:.1f} B/entry)" for k in ("VmRSS", "RssAnon", "RssFile", "VmHWM")))
        rss, anon = collections.Counter(), collections.Counter()
        where = "[anon]"
        for line in Path(f"/proc/{s.p.pid}/smaps").read_text().splitlines():
            m = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$", line)
            if m:
                where = m.group(1) or "[anon]"
            elif line.startswith("Rss:"):
                rss[where] += int(line.split()[1])
            elif line.startswith("Anonymous:"):
                anon[where] += int(line.split()[1])
        for where, kib in rss.most_common(6):
            print(f"  {kib / 1024:7.1f} MiB resident ({anon[where] / 1024:.1f} anonymous)  {where}")
    finally:
        s.close()


if __name__ == "__main__":
    main()
