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
from grep import Server  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("tree")
    ap.add_argument("patterns", nargs="+")
    ap.add_argument("--calls", type=int, default=30)
    args = ap.parse_args()
    state = tempfile.mkdtemp(prefix="ferret-grep-calls-")
    prefix = ()
    if os.environ.get("PERF_DELAY_MS"):
        prefix = ("perf", "record", "-F", "4000", "--call-graph", "dwarf,16384", "-o", "perf.grep",
                  "--delay", os.environ["PERF_DELAY_MS"])
    server = Server(args.bin, args.tree, [], state, prefix)
    try:
        server.wait(True)
        for p in args.patterns:
            text, ci = (p[:-2], True) if p.endswith(":i") else (p, False)
            call = {"pattern": text, "output": "files", "limit": 2000}
            if ci:
                call["case_insensitive"] = True
            times = []
            for _ in range(args.calls):
                started = time.perf_counter()
                r = server.call("grep", call)
                times.append((time.perf_counter() - started) * 1000)
            print(f"{p}: median {statistics.median(times):.1f} ms, {len(r.get('files', []))} files, "
                  f"{r.get('files_scanned')} read", flush=True)
    finally:
        server.close()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
