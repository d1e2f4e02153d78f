"""`read {path, outline: true}` timed over MCP (stdio), p50 of N calls: first
with no symbols table (each call parses the file), then once a `symbols` call
has built the table and the file has settled in it (answered from the table).

    python3 bench/outline.py BINARY ROOT FILE [--calls 30]

FILE is relative to ROOT. The server runs with `--no-persist` and
`--content-index off`, and is stopped by its PID when done.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stdio_client import StdioServer  # noqa: E402


def timed(server, path, calls):
    times, total = [], None
    for _ in range(calls):
        t = time.perf_counter()
        s = server.result("read", {"path": path, "outline": True})
        times.append((time.perf_counter() - t) * 1000)
        total = (s.get("structuredContent") or {}).get("total")
    return statistics.median(times), max(times), total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("root")
    ap.add_argument("file")
    ap.add_argument("--calls", type=int, default=30)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ferret-outline-") as state:
        argv = [a.binary, "serve", "--stdio", "--root", a.root, "--no-persist", "--content-index", "off"]
        server = StdioServer(argv, Path(state))
        try:
            p50, worst, total = timed(server, a.file, a.calls)
            print(f"parsed each call:   p50 {p50:.2f} ms, max {worst:.2f} ms ({total} definitions)")
            t = time.perf_counter()
            server.result("symbols", {"query": "main"})
            print(f"first symbols call (builds the table): {time.perf_counter() - t:.2f} s")
            # A file read in the second it last changed is not settled:
            # wait, and let a call read what is unsettled again.
            time.sleep(2.5)
            server.result("symbols", {"query": "main"})
            p50, worst, total = timed(server, a.file, a.calls)
            print(f"from the table:     p50 {p50:.2f} ms, max {worst:.2f} ms ({total} definitions)")
        finally:
            server.close()


if __name__ == "__main__":
    main()
