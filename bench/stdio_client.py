"""A minimal MCP client over stdio for the benchmarks: `ferret serve --stdio`
spoken to as a client would, one JSON-RPC line at a time (no SDK, so what is
timed is ferret and the pipe, not a client library)."""

import json
import os
import subprocess
import time
from pathlib import Path


class StdioServer:
    def __init__(self, argv, state):
        env = dict(os.environ, XDG_STATE_HOME=str(state), FERRET_LOG="warn")
        self.started = time.perf_counter()
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.next_id = 1
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        self.notify("notifications/initialized")

    def notify(self, method):
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "method": method}) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method, params):
        i = self.next_id
        self.next_id += 1
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit("ferret closed the connection")
            m = json.loads(line)
            if m.get("id") == i:
                return m

    def result(self, tool, args):
        """The `tools/call` result as it came (`isError` included)."""
        return self.request("tools/call", {"name": tool, "arguments": args})["result"]

    def proc_status(self):
        """/proc/PID/status in bytes for the memory lines (VmRSS, VmHWM, RssAnon, RssFile)."""
        st = dict(l.split(":", 1) for l in Path(f"/proc/{self.p.pid}/status").read_text().splitlines() if ":" in l)
        return {k: int(st[k].split()[0]) * 1024 for k in ("VmRSS", "RssAnon", "RssFile", "VmHWM") if k in st}

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
