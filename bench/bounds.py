#!/usr/bin/env python3
"""What the worst queries each route accepts cost, and what an abandoned one
keeps costing (issue 25, item 5). Not a test.

    python3 bench/bounds.py [--bin target/release/ferret] [--tree DIR] [--runs 3]

Serves a tree made for it (20,000 empty files of 200-character names,
`a` * 191 + five digits + `.txt`, in 20 folders: the worst case for substring
terms, since every name holds the first byte of every term everywhere) with
`ferret serve --bind 127.0.0.1:0 --no-token` and sends, on each route, the
queries that cost most within the query language's limits
(docs/query-syntax.md, "Limits"): the most terms, the most regexes, the
largest regexes, the most fuzzy words. For each it reports the server's CPU
time (utime + stime of the whole process, from /proc/PID/stat, so every
thread counts) and the wall time of the request, medians of `--runs`.

Then the same worst queries are sent and abandoned: the client closes its
connection after 200 ms, and the CPU the server spends from then on (over
the next 2 s) is reported.

Routes: MCP `search` and `grep` (Streamable HTTP, stateless era, one POST),
the page's `/ui/api/search` and Contents filter (`/ui/api/grep`), and
Everything's `/?search=…&json=1`. Binds 127.0.0.1 only and stops the server
it starts.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")
MODERN = "2026-07-28"


def make_tree(root: Path):
    n = 0
    for d in range(20):
        folder = root / f"d{d:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        for _ in range(1000):
            p = folder / ("a" * 191 + f"{n:05d}.txt")
            if not p.exists():
                p.touch()
            n += 1
    return n


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the whole line; here 12 and 13.
    return (int(fields[11]) + int(fields[12])) / TICK


class Server:
    def __init__(self, binary: Path, tree: Path, state: Path):
        env = dict(os.environ, XDG_STATE_HOME=str(state), FERRET_LOG="warn")
        self.p = subprocess.Popen(
            [str(binary), "serve", "--bind", "127.0.0.1:0", "--no-token", "--root", str(tree), "--content-index", "off", "--no-persist"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.time() + 60
        self.port = None
        while time.time() < deadline:
            line = self.p.stderr.readline()
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/mcp", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.stop()
            raise SystemExit("ferret did not start")
        while True:
            status, body = self.get("/ui/api/status")
            index = json.loads(body)["index"]
            if index["ready"] and not index["reconciling"]:
                self.entries = index["entries"]
                break
            time.sleep(0.2)

    def get(self, path: str, timeout=600):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, body

    def mcp(self, tool: str, arguments: dict, timeout=600):
        params = {
            "name": tool,
            "arguments": arguments,
            "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": tool,
        }
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request("POST", "/mcp", body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def ors(n: int, fmt: str, sep="|") -> str:
    return sep.join(fmt.format(i=i) for i in range(n))


# The worst name queries within the limits: 256 terms, 16 regexes, the
# largest regexes the size limit lets through, 8 fuzzy words of 64 letters.
NAME_QUERIES = {
    # Terms no name holds, whose first letter every name holds everywhere.
    "256 OR terms": ors(256, "ax{i}"),
    "256 ANDed terms": " ".join(["a"] * 255 + ["ax"]),
    # `regex:` counts as a term of its own: 16 × 2 + 224 = 256.
    "16 regexes + 224 OR terms": ors(16, "regex:ax{i}") + "|" + ors(224, "bx{i}"),
    "256 in: terms": ors(256, "in:d{i:02d}/x"),
    "256 path terms": ors(256, "d{i}/ax"),
    "128 whole-word terms": ors(128, "ww:ax{i}"),
    "256 wildcard terms": ors(256, "*a*ax{i}*"),
    "16 path globs + 240 terms": ors(16, "d{i}/*x*") + "|" + ors(240, "cx{i}"),
    "one glob of 2,000 stars": "*a" * 2000 + "x",
    # Nested repetitions defeat the regex engine's DFA: the CPU budget's case.
    "16 costly regexes": ors(16, 'regex:"(?:a?){{150}}a{{150}}z{i}"'),
    "4,096 characters": "a" * 4095 + "x",
}
FUZZY_QUERY = " ".join(("ab" * 32) for _ in range(8))


def routes(server: Server, query: str, fuzzy=False):
    q = urllib.parse.quote(query)
    yield "MCP search", lambda: server.mcp("search", {"query": query, "limit": 50, "fuzzy": fuzzy} if fuzzy else {"query": query, "limit": 50})
    yield "page search", lambda: server.get(f"/ui/api/search?q={q}&limit=50" + ("&fuzzy=1" if fuzzy else ""))
    if not fuzzy:
        yield "Everything JSON", lambda: server.get(f"/?search={q}&json=1&count=50")
        yield "page Contents filter", lambda: server.get(f"/ui/api/grep?pattern=zzz&filter={q}")
        yield "MCP grep filter", lambda: server.mcp("grep", {"pattern": "zzz", "filter": query, "timeout_ms": 5000})


def classify(status: int, body: bytes) -> str:
    """What came back: refused before any work (a limit), stopped part-way
    (the search CPU budget, a grep's timeout), or an answer."""
    try:
        m = json.loads(body)
    except ValueError:
        return f"HTTP {status}"
    text = json.dumps(m)
    if "search time" in text:
        return "stopped: search time"
    if status == 400 or m.get("error", {}).get("code") == -32602:
        return "refused: limit"
    result = m.get("result", {})
    if result.get("isError"):
        return "error: " + result.get("structuredContent", {}).get("error", {}).get("code", "?")
    if m.get("stopped") or result.get("structuredContent", {}).get("error", {}).get("code") == "TIMEOUT":
        return "stopped: timeout"
    return "answered"


def measure(server: Server, send, runs: int):
    cpus, walls, status, body = [], [], None, b""
    for _ in range(runs):
        before = cpu_seconds(server.p.pid)
        t = time.perf_counter()
        status, body = send()
        walls.append(time.perf_counter() - t)
        # Threads still finishing count too.
        time.sleep(0.05)
        cpus.append(cpu_seconds(server.p.pid) - before)
    return statistics.median(cpus), statistics.median(walls), classify(status, body)


def abandoned(server: Server, path: str, method="GET", body=None, headers=None):
    """Send, close after 200 ms, and return the CPU seconds spent from the
    close over the next 2 s."""
    s = socket.create_connection(("127.0.0.1", server.port))
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
    for k, v in (headers or {}).items():
        head += f"{k}: {v}\r\n"
    data = body.encode() if body else b""
    if data:
        head += f"Content-Length: {len(data)}\r\n"
    s.sendall((head + "\r\n").encode() + data)
    time.sleep(0.2)
    s.close()
    at_close = cpu_seconds(server.p.pid)
    time.sleep(2.0)
    return cpu_seconds(server.p.pid) - at_close


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "target" / "release" / "ferret"))
    ap.add_argument("--tree", default="/tmp/ferret-bounds-tree")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    tree = Path(args.tree)
    files = make_tree(tree)
    state = Path("/tmp/ferret-bounds-state")
    state.mkdir(exist_ok=True)
    server = Server(Path(args.bin), tree, state)
    try:
        print(f"{platform.node()}: {os.cpu_count()} cores; {files} files, {server.entries} entries indexed")
        print(f"{'query':<28} {'route':<22} {'CPU s':>7} {'wall s':>7}  answer")
        worst = {}
        cases = [(name, q, False) for name, q in NAME_QUERIES.items()] + [("8 fuzzy words of 64", FUZZY_QUERY, True)]
        for name, query, fuzzy in cases:
            for route, send in routes(server, query, fuzzy):
                cpu, wall, answer = measure(server, send, args.runs)
                print(f"{name:<28} {route:<22} {cpu:7.2f} {wall:7.2f}  {answer}", flush=True)
                if answer != "refused: limit":
                    worst[route] = max(worst.get(route, 0.0), cpu)
        print("worst CPU per route of what was not refused at once:", json.dumps({k: round(v, 2) for k, v in worst.items()}))
        # Past the limits: refused, at once.
        too_many = ors(3000, "a{i}")
        for route, send in routes(server, too_many):
            cpu, wall, answer = measure(server, send, 1)
            print(f"{'3000 OR terms (too many)':<28} {route:<22} {cpu:7.2f} {wall:7.2f}  {answer}")
        # Abandoned: CPU after the client went away, for the costliest query.
        q = urllib.parse.quote(NAME_QUERIES["16 costly regexes"])
        for label, path in [
            ("page search", f"/ui/api/search?q={q}&sort=name"),
            ("Everything JSON", f"/?search={q}&json=1"),
            ("page Contents filter", f"/ui/api/grep?pattern=zzz&filter={q}"),
        ]:
            print(f"abandoned {label:<24} CPU after close {abandoned(server, path):.2f} s")
        params = {
            "name": "search",
            "arguments": {"query": NAME_QUERIES["16 costly regexes"]},
            "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": "search",
        }
        print(f"abandoned {'MCP search':<24} CPU after close {abandoned(server, '/mcp', 'POST', body, headers):.2f} s")
        params["name"] = "grep"
        params["arguments"] = {"pattern": "zzz", "filter": NAME_QUERIES["16 costly regexes"], "timeout_ms": 60000}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        headers["Mcp-Name"] = "grep"
        print(f"abandoned {'MCP grep filter':<24} CPU after close {abandoned(server, '/mcp', 'POST', body, headers):.2f} s")
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
