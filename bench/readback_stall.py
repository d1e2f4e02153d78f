#!/usr/bin/env python3
"""How long a search waits while a server reads its index back in place
after a periodic snapshot (issue 24's latency, not a timed test).

    python3 bench/readback_stall.py BIN TREE [--after 330] [--query report]

Starts `BIN serve --stdio --root TREE --content-index off` with a fresh state
directory (persisted: the first build counts as a change, so the first
periodic snapshot is written five minutes after it), waits until the index
is ready, then asks `search QUERY` (limit 50) over and over until `--after`
seconds have passed since the index was ready and the status names a
snapshot, and prints the calls' median, their slowest five with when each
was asked (seconds from the snapshot's time in the status, which is set when
the file is written, just before the read-back) and the server's minor
page faults during each (any thread's: the watcher's too), and the server's own
read-back line (`FERRET_LOG=ferret_index=debug`, kept in a file beside the
state). The server is stopped when done.

With `--touch S`, a thread creates a file in TREE every S seconds while the
calls are asked (`ferret-stall-touch-N.txt`, removed at the end), so that
changes come while the snapshot is written: each search waits for the
watcher to have applied the changes before it (up to 250 ms, then answers
`behind`), and a change that needs the store while the save reads it waits
for the save. The calls that answered `behind` are counted.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bin")
    ap.add_argument("tree")
    ap.add_argument("--after", type=float, default=330.0, help="seconds to keep asking after the index is ready")
    ap.add_argument("--query", default="report")
    ap.add_argument("--touch", type=float, default=0.0, help="create a file in TREE every S seconds meanwhile")
    args = ap.parse_args()
    touched = []
    stop_touching = threading.Event()

    def touch():
        k = 0
        while not stop_touching.wait(args.touch):
            path = Path(args.tree) / f"ferret-stall-touch-{k}.txt"
            path.write_text("touched\n")
            touched.append(path)
            k += 1

    state = Path(tempfile.mkdtemp(prefix="ferret-readback-"))
    log = state / "server.log"
    env = dict(os.environ, XDG_STATE_HOME=str(state), FERRET_LOG="ferret_index=debug")
    argv = [args.bin, "serve", "--stdio", "--root", args.tree, "--content-index", "off"]
    with open(log, "wb") as err:
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)
    next_id = [1]

    def request(method, params=None):
        i = next_id[0]
        next_id[0] += 1
        msg = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            msg["params"] = params
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()
        while True:
            line = p.stdout.readline()
            if not line:
                raise SystemExit("ferret closed the connection")
            m = json.loads(line)
            if m.get("id") == i:
                return m

    def faults():
        # The server's minor page faults so far (field 10 of /proc/PID/stat).
        with open(f"/proc/{p.pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[7])

    def call(tool, arguments):
        return request("tools/call", {"name": tool, "arguments": arguments})["result"]

    try:
        request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "bench", "version": "1"}})
        p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        p.stdin.flush()
        while call("diagnostics", {})["structuredContent"]["index"]["state"] != "ready":
            time.sleep(0.1)
        ready = time.time()
        if args.touch > 0:
            threading.Thread(target=touch, daemon=True).start()
        behind = 0
        calls = []  # (wall time asked, ms)
        snapshot = None
        while time.time() - ready < args.after or snapshot is None:
            for _ in range(50):
                t0 = time.time()
                f0 = faults()
                c0 = time.perf_counter()
                r = call("search", {"query": args.query, "limit": 50})
                ms = (time.perf_counter() - c0) * 1000
                behind += bool(((r.get("structuredContent") or {}).get("index") or {}).get("behind"))
                calls.append((t0, ms, faults() - f0))
            if snapshot is None:
                last = call("diagnostics", {})["structuredContent"]["index"].get("last_snapshot")
                if last:
                    snapshot = datetime.fromisoformat(last.replace("Z", "+00:00")).timestamp()
            if time.time() - ready > args.after + 300:
                break
        times = [ms for _, ms, _ in calls]
        print(f"{args.bin}: {len(calls)} calls of `{args.query}`, median {statistics.median(times):.2f} ms, "
              f"max {max(times):.2f} ms" + (f", {behind} answered behind, {len(touched)} files created" if args.touch else ""))
        print(f"  the server's minor page faults during a call: median {statistics.median(c[2] for c in calls)}")
        for t0, ms, flt in sorted(calls, key=lambda c: -c[1])[:5]:
            rel = f"{t0 - snapshot:+.2f} s from the snapshot" if snapshot else "no snapshot"
            print(f"  {ms:8.2f} ms  {rel}  ({flt} minor faults in the server meanwhile)")
    finally:
        stop_touching.set()
        for path in touched:
            path.unlink(missing_ok=True)
        p.stdin.close()
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    for line in log.read_text(errors="replace").splitlines():
        if "read in place" in line or "snapshot written" in line:
            print("  server:", line.strip()[:300])


if __name__ == "__main__":
    sys.exit(main())
