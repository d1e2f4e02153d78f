#!/usr/bin/env python3
"""Time `grep` calls (output: files) on one server, pattern by pattern.

    python3 bench/grep_calls.py [--calls 30] BIN TREE PATTERN[:i] ...

Starts `BIN serve --stdio` on TREE with a fresh state directory, waits until
the name index and the content index are ready (every loaded file checked),
then makes each call `--calls` times in a row and prints the median, the
files found and the files read (`files_scanned`). `:i` after a pattern asks
for a case-insensitive search. Run two builds in turn to compare them; set
`PERF_DELAY_MS` to run the server under `perf record --call-graph dwarf`
(into perf.grep), starting that long after it does.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stdio_client import StdioServer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("tree")
    ap.add_argument("patterns", nargs="+")
    ap.add_argument("--calls", type=int, default=30)
    args = ap.parse_args()
    state = tempfile.mkdtemp(prefix="ferret-grep-calls-")
    argv = [args.bin, "serve", "--stdio", "--root", args.tree, "--state-dir", state]
    if os.environ.get("PERF_DELAY_MS"):
        argv = ["perf", "record", "-F", "4000", "--call-graph", "dwarf,16384", "-o", "perf.grep",
                "--delay", os.environ["PERF_DELAY_MS"], *argv]
    server = StdioServer(argv, state)
    try:
        while True:
            d = server.result("diagnostics", {})["structuredContent"]
            ci = d.get("content_index")
            if (d["index"]["state"] == "ready" and ci and ci["state"] == "ready"
                    and not ci.get("unverified_files")):
                break
            time.sleep(0.2)
        for p in args.patterns:
            text, _, flag = p.rpartition(":") if p.endswith(":i") else (p, "", "")
            call = {"pattern": text, "output": "files", "limit": 2000}
            if flag == "i":
                call["case_insensitive"] = True
            times = []
            for _ in range(args.calls):
                started = time.perf_counter()
                r = server.result("grep", call)
                times.append((time.perf_counter() - started) * 1000)
            sc = r["structuredContent"]
            print(f"{p}: median {statistics.median(times):.1f} ms, {len(sc.get('files', []))} files, "
                  f"{sc.get('files_scanned')} read", flush=True)
    finally:
        server.p.stdin.close()
        server.p.wait()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
