#!/usr/bin/env python3
"""The symbols table's memory in a served process: for each tree, one
`ferret serve --stdio --root TREE --no-persist --content-index off` with
`--symbols-early on`, read once `diagnostics` says the background build is
`done`, and one with `--symbols-early off` once the index is ready (and as
long again, so both have lived alike), then /proc/PID/status of each.

    python3 bench/symbols_memory.py --bin PATH [--tree LABEL=DIR ...] [--json OUT]

The table's cost is the difference of the two resident sizes (VmRSS; the
anonymous part, RssAnon, beside it), over the files and definitions the
table holds (`diagnostics`' `symbols.files` and `symbols.symbols`). Every
server is stopped by its PID (stdin closed).
"""

import argparse
import glob
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stdio_client import StdioServer  # noqa: E402

HOME = Path.home()
REGISTRY = next(iter(sorted(glob.glob(str(HOME / ".cargo/registry/src/*")))), str(HOME / ".cargo/registry/src"))
DEFAULT_TREES = [
    ("python3.11", "/root/.pyenv/versions/3.11.7/lib/python3.11"),
    ("registry", REGISTRY),
    ("synthetic-1m", "/tmp/ferret-bench-tree-1m"),
]


def diagnostics(s):
    return s.result("diagnostics", {}).get("structuredContent") or {}


def serve(binary, tree, early):
    argv = [binary, "serve", "--stdio", "--root", tree, "--no-persist", "--content-index", "off",
            "--symbols-early", "on" if early else "off"]
    s = StdioServer(argv, "/tmp/ferret-symbols-memory-state")
    t = time.perf_counter()
    try:
        while diagnostics(s).get("index", {}).get("state") != "ready":
            time.sleep(0.2)
        ready = time.perf_counter() - t
        sy = {}
        if early:
            while True:
                sy = diagnostics(s).get("symbols", {})
                if sy.get("background", {}).get("state") == "done" and sy.get("state") == "ready":
                    break
                time.sleep(0.2)
        else:
            time.sleep(max(2.0, ready))
        took = time.perf_counter() - t
        return {"status": s.proc_status(), "symbols": sy, "ready_s": round(ready, 2), "s": round(took, 1)}
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tree", action="append", default=[], help="LABEL=DIR (replaces the default trees)")
    ap.add_argument("--json", default="/tmp/ferret-symbols-memory.json")
    args = ap.parse_args()
    trees = [tuple(t.split("=", 1)) for t in args.tree] or DEFAULT_TREES
    out = {}
    mib = 1 << 20
    print("| tree | files held | definitions | RSS off | RSS on | table (on − off) | a file | a definition | build |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, tree in trees:
        off = serve(args.bin, tree, False)
        on = serve(args.bin, tree, True)
        sy = on["symbols"]
        files, defs = sy.get("files", 0), sy.get("symbols", 0)
        diff = on["status"]["VmRSS"] - off["status"]["VmRSS"]
        row = {"off": off, "on": on, "files": files, "symbols": defs, "table_rss": diff,
               "per_file": round(diff / max(files, 1)), "per_symbol": round(diff / max(defs, 1))}
        out[label] = row
        print(f"| {label} | {files:,} | {defs:,} | {off['status']['VmRSS'] / mib:.0f} MiB | "
              f"{on['status']['VmRSS'] / mib:.0f} MiB | {diff / mib:.0f} MiB | {row['per_file']:,} B | "
              f"{row['per_symbol']:,} B | {sy.get('background', {}).get('ms', 0) / 1000:.1f} s |", flush=True)
    Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
