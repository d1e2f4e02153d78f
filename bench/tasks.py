#!/usr/bin/env python3
"""Long work as MCP tasks, and the tail of a huge file: the two targets of issue 14.

    python3 bench/tasks.py [--bin target/release/ferret] [--runs 10] [--gib 1]

1. How soon a cancelled task stops. A release `ferret serve` on loopback HTTP
   with `--task-after 0` (every eligible call from a client that declares the
   tasks extension is a task at once), 2026-07-28 JSON-RPC sent by hand. For a
   grep whose every line matches (300 files of 1 MiB) and a deep list (30,330
   entries), each run starts the call as a task, lets it work (100 ms, 10 ms),
   sends tasks/cancel and polls tasks/get back to back: the figure is the time
   from sending tasks/cancel to the first tasks/get that no longer says
   `working`, as a client sees it (round trips included). The work must really
   have been stopped: its partial result says CANCELLED with less than all of
   it done. (A folder copy is not in it: ferret never stops a copy half-way.)
2. How long `read {start_line: -100}` of a 1 GiB text file takes, as the
   round trip of the call, warm (page cache) and cold (the file's pages
   dropped with posix_fadvise, nothing else's), beside a read of its first
   lines, which counts all its lines on the way (the streaming count).

Target: a cancelled task stops within 100 ms; the tail in <= 50 ms. Prints a
table; figures go to docs/benchmarks.md by hand. Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODERN = "2026-07-28"
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
LINE = b"the quick brown fox jumps over the lazy dog 0123456789\n"


class Server:
    def __init__(self, binary: str, root: Path, *extra: str):
        self.proc = subprocess.Popen(
            [binary, "serve", "--root", str(root), "--bind", "127.0.0.1:0", "--no-persist", *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+/mcp)", line)
            if m:
                self.url = m.group(1)
                break
        else:
            self.stop()
            raise SystemExit("ferret did not start")
        self.ids = 0

    def send(self, method: str, params: dict, caps=TASKS) -> dict:
        self.ids += 1
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": "bench-tasks", "version": "1"},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": {**params, "_meta": meta}}).encode()
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": method,
        }
        routed = params.get("name", params.get("taskId"))
        if routed:
            headers["Mcp-Name"] = routed
        with urllib.request.urlopen(urllib.request.Request(self.url, body, headers), timeout=600) as r:
            answer = json.loads(r.read())
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer["result"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def big_tree(base: Path) -> Path:
    root = base / "work"
    chunk = (LINE * 19_500)[: 1 << 20]
    for i in range(300):
        d = root / "big" / f"d{i % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:04d}.txt").write_bytes(chunk)
    for i in range(30_000):
        d = root / "many" / f"a{i % 30}" / f"b{i % 300}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"n{i}.txt").write_bytes(b"x\n")
    return root


def cancel_runs(server: Server, tool: str, args: dict, runs: int, after: float, partial):
    """Stop times of `runs` calls cancelled `after` seconds into their work;
    `partial(structured)` says the answer holds less than all of the work."""
    stops = []
    for _ in range(runs):
        created = server.send("tools/call", {"name": tool, "arguments": args})
        assert created.get("resultType") == "task", created
        task_id = created["taskId"]
        time.sleep(after)
        sent = time.perf_counter()
        server.send("tasks/cancel", {"taskId": task_id})
        while True:
            task = server.send("tasks/get", {"taskId": task_id})
            if task["status"] != "working":
                break
        stops.append(time.perf_counter() - sent)
        s = task["result"]["structuredContent"]
        assert task["result"]["isError"] and s["error"]["code"] == "CANCELLED", s
        assert partial(s), f"{tool} had finished before the cancel: {json.dumps(s)[:300]}"
    return stops


def huge_file(base: Path, gib: float) -> Path:
    path = base / "huge" / "huge.log"
    path.parent.mkdir(parents=True)
    line = b"2026-12-01T12:00:00.000Z INFO request served in 12 ms, path=/api/v1/items, status=200\n"
    block = line * (4 * 1024 * 1024 // len(line))
    with open(path, "wb") as f:
        written = 0
        while written < gib * (1 << 30):
            f.write(block)
            written += len(block)
    return path


def drop_cache(path: Path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def timed_read(server: Server, args: dict, runs: int, before=None):
    times, last = [], None
    for _ in range(runs):
        if before:
            before()
        t = time.perf_counter()
        last = server.send("tools/call", {"name": "read", "arguments": args}, caps={})
        times.append(time.perf_counter() - t)
    return times, last


def ms(xs):
    return f"{statistics.median(xs) * 1000:7.1f} {max(xs) * 1000:7.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "target" / "release" / "ferret"))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--gib", type=float, default=1.0)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ferret-tasks-bench-"))
    try:
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}")
        root = big_tree(base)
        print(f"\ncancel → stopped, ms (median, max of {args.runs}; from sending tasks/cancel to tasks/get not `working`)")
        server = Server(args.bin, root, "--task-after", "0")
        try:
            server.send("tools/call", {"name": "grep", "arguments": {"pattern": "x", "path": "big", "limit": 1}}, caps={})
            grep = cancel_runs(
                server, "grep", {"pattern": r"\w+o\w+", "output": "count", "path": "big"}, args.runs, 0.1,
                lambda s: 0 < s["files_scanned"] < 300,
            )
            print(f"  grep, every line matching, 300 x 1 MiB   {ms(grep)}")
            walk = cancel_runs(
                server, "list", {"path": "many", "depth": 64, "limit": 10}, args.runs, 0.01,
                lambda s: s.get("walk_capped") is True,
            )
            print(f"  list, depth 64 over 30,330 entries       {ms(walk)}")
        finally:
            server.stop()
        huge = huge_file(base, args.gib)
        size = huge.stat().st_size
        server = Server(args.bin, huge.parent)
        try:
            print(f"\nread of a {size / (1 << 30):.2f} GiB file, ms (median, max of {args.runs}; the call's round trip)")
            tail = {"path": "huge.log", "start_line": -100}
            warm, last = timed_read(server, tail, args.runs)
            s = last["structuredContent"]
            assert (s["start_line"], s["end_line"]) == (-100, -1) and s["text"].count("\n") == 100, s
            print(f"  tail (start_line -100), warm             {ms(warm)}")
            cold, _ = timed_read(server, tail, args.runs, before=lambda: drop_cache(huge))
            print(f"  tail (start_line -100), cold             {ms(cold)}")
            head, last = timed_read(server, {"path": "huge.log", "max_lines": 100}, max(3, args.runs // 3))
            counted = last["structuredContent"].get("total_lines")
            per_100mb = statistics.median(head) / (size / 100e6) * 1000
            print(f"  first 100 lines + line count, warm       {ms(head)}  ({counted} lines; {per_100mb:.1f} ms per 100 MB)")
        finally:
            server.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
