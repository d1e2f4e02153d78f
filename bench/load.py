#!/usr/bin/env python3
"""Load, soak and replicas: ferret over stateless HTTP under a real load
generator (wrk), and two replicas behind nginx with one killed halfway.

    python3 bench/load.py [load] [soak] [replicas] [--entries 200000] [--soak-minutes 10]
                          [--seconds 60] [--connections 16] [--grep-connections 4]

With no phase named, runs all three. Builds the release binary, a synthetic
tree with a fixed seed (/tmp/ferret-bench-load-<entries>, kept for the next
run), and installs wrk and nginx with apt-get when they are missing. Every
request is a 2026-07-28 `tools/call` (stateless: no session, any replica can
answer) carrying the token ferret keeps; the mix of cheap calls is `search` /
`read` / `stat` in equal parts, over random names and files of the tree.

- load: the cheap mix at full speed for --seconds; then the same mix while
  --grep-connections more connections run whole-tree greps back to back (a
  pattern the content index cannot narrow, so every file is read; at
  least that many greps always in flight: heavier than one grep in twelve
  requests); the cheap calls' latency is measured by their own wrk.
- soak: a warm-up minute, then the mix with the greps for --soak-minutes;
  throughput, errors, p50/p99 per minute, and ferret's resident memory
  sampled every 5 s (each minute's median and peak; growth is the last
  minute's against the first's, since one reading lands anywhere in the
  swing the greps in flight make).
- replicas: two `ferret serve` on the same roots (each its own state folder,
  one token) behind nginx, which retries read-only calls (told by the
  `Mcp-Name` header) on the other replica when one fails; the cheap mix for
  20 s with both, 20 s during which one is SIGKILLed at 10 s, 20 s on the
  survivor: failed requests, and the survivor's latency before and after.

Binds only 127.0.0.1, stops every process it started by its pid. Prints a
summary and writes it as JSON to --out (default target/bench-load.json);
figures go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FERRET = REPO / "target" / "release" / "ferret"
SEED = 7
PROTOCOL = "2026-07-28"


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def ensure_tools():
    missing = [pkg for pkg, exe in [("wrk", "wrk"), ("nginx", "nginx")] if not shutil.which(exe)]
    if missing:
        print(f"installing {' '.join(missing)} with apt-get", file=sys.stderr)
        sh(["apt-get", "update", "-qq"])
        sh(["apt-get", "install", "-y", "-qq", *missing], stdout=subprocess.DEVNULL)


def build():
    sh(["cargo", "build", "--release", "-q", "-p", "ferret"], cwd=REPO)


WORDS = "alpha beta gamma delta report invoice notes draft final summary budget plan data log".split()


def make_tree(entries: int) -> tuple[Path, list[str]]:
    """About `entries` entries: folders of 19 small text files each (so a
    whole-tree grep reads every one), names from a fixed seed."""
    tree = Path(f"/tmp/ferret-bench-load-{entries}")
    listing = tree.with_suffix(".files")
    if listing.exists():
        return tree, listing.read_text().splitlines()
    rng = random.Random(SEED)
    if tree.exists():
        shutil.rmtree(tree)
    folders = max(1, entries // 20)
    files = []
    for f in range(folders):
        top = f"{WORDS[f % len(WORDS)]}-{f // len(WORDS) % 50:02d}"
        folder = tree / top / f"d{f:05d}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(19):
            name = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{f:05d}-{i:02d}.txt"
            line = " ".join(rng.choice(WORDS) for _ in range(12))
            (folder / name).write_text(f"{line}\n" * rng.randint(1, 6))
            files.append(f"{top}/d{f:05d}/{name}")
    listing.write_text("\n".join(files) + "\n")
    return tree, files


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ferret:
    """`ferret serve` over HTTP on a loopback port, stopped by its pid."""

    def __init__(self, tree: Path, token_file: Path, state: Path, port: int | None = None, env: dict | None = None, extra: list | None = None):
        self.port = port or free_port()
        self.proc = subprocess.Popen(
            [str(FERRET), "serve", "--root", str(tree), "--bind", f"127.0.0.1:{self.port}", "--state-dir", str(state), "--token-file", str(token_file), *(extra or [])],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "FERRET_LOG": "warn", **(env or {})},
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if "listening on" in line:
                break
            if self.proc.poll() is not None:
                raise RuntimeError("ferret did not start")
        # Drain stderr so the pipe never blocks the server.
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def call_body(tool: str, args: dict) -> str:
    """A stateless (2026-07-28) tools/call request."""
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": args,
                "_meta": {"io.modelcontextprotocol/protocolVersion": PROTOCOL, "io.modelcontextprotocol/clientCapabilities": {}},
            },
        }
    )


def call(port: int, token: str, tool: str, args: dict) -> dict:
    """One stateless tools/call, as the wrk scripts send it (urllib: no deps)."""
    import urllib.request

    body = call_body(tool, args).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=body, headers=headers(token, tool), method="POST")
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def headers(token: str, tool: str) -> dict:
    return {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }


def wait_ready(port: int, token: str, entries_at_least: int):
    deadline = time.time() + 600
    while time.time() < deadline:
        d = call(port, token, "diagnostics", {})["result"]["structuredContent"]
        content = (d.get("content_index") or {}).get("state", "ready")
        if d["index"]["state"].startswith("ready") and d["index"]["entries"] >= entries_at_least and content in ("ready", "failed"):
            return d
        time.sleep(0.5)
    raise RuntimeError("the index did not get ready")


def lua_script(path: Path, token: str, requests: list[tuple[str, dict]]):
    """A wrk script cycling through `requests` (tool, arguments), counting
    answers that are tool errors or JSON-RPC errors as failures."""
    entries = []
    for tool, args in requests:
        body = call_body(tool, args)
        entries.append("{%s, %s}" % (json.dumps(tool), json.dumps(body)))
    path.write_text(
        """
local requests = {%s}
local token = %s
local counter = 0
failed = 0 -- a global: done() reads it from each thread
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  counter = math.random(#requests)
end

function request()
  counter = counter %% #requests + 1
  local r = requests[counter]
  return wrk.format("POST", "/mcp", {
    ["Authorization"] = "Bearer " .. token,
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "%s",
    ["Mcp-Method"] = "tools/call",
    ["Mcp-Name"] = r[1],
  }, r[2])
end

function response(status, headers, body)
  if status ~= 200 or string.find(body, '"isError":true', 1, true) or string.find(body, '"error":{', 1, true) then
    failed = failed + 1
  end
end

function done(summary, latency, requests)
  local f = 0
  for _, t in ipairs(threads) do f = f + (t:get("failed") or 0) end
  io.write(string.format("FERRET failed=%%d requests=%%d p50_us=%%d p90_us=%%d p99_us=%%d max_us=%%d socket_errors=%%d non2xx=%%d\\n",
    f, summary.requests, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.errors.status))
end
"""
        % (",\n".join(entries), json.dumps(token), PROTOCOL)
    )


def cheap_requests(files: list[str], n: int = 3000) -> list[tuple[str, dict]]:
    rng = random.Random(SEED + 1)
    out = []
    for i in range(n):
        f = rng.choice(files)
        kind = i % 3
        if kind == 0:
            out.append(("search", {"query": f.rsplit("/", 1)[1].split("-", 2)[2].removesuffix(".txt"), "limit": 20}))
        elif kind == 1:
            out.append(("read", {"path": f}))
        else:
            out.append(("stat", {"paths": [f]}))
    return out


def grep_requests(n: int = 50) -> list[tuple[str, dict]]:
    rng = random.Random(SEED + 2)
    # A pattern found nowhere and with no 3-character literal, so that the
    # content index cannot narrow it either: every file of the tree is read.
    return [("grep", {"pattern": f"[0-9]{{{rng.randrange(30, 60)}}}", "timeout_ms": 120000}) for _ in range(n)]


def wrk(port: int, script: Path, seconds: float, connections: int, threads: int = 1) -> subprocess.Popen:
    return subprocess.Popen(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{int(seconds)}s", "--timeout", "120s", "-s", str(script), f"http://127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def result(proc: subprocess.Popen, seconds: float) -> dict:
    out = proc.communicate()[0]
    m = re.search(r"FERRET (.*)", out)
    if not m:
        raise RuntimeError(f"wrk said:\n{out}")
    fields = dict(kv.split("=") for kv in m.group(1).split())
    r = {k: int(v) for k, v in fields.items()}
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    r["rps"] = float(rps.group(1)) if rps else r["requests"] / seconds
    r["errors"] = r["failed"] + r["socket_errors"]
    return r


def show(label: str, r: dict):
    print(
        f"{label:<44} {r['rps']:>9.0f} req/s  p50 {r['p50_us'] / 1000:>7.2f} ms  p99 {r['p99_us'] / 1000:>8.2f} ms  "
        f"max {r['max_us'] / 1000:>8.1f} ms  errors {r['errors']} of {r['requests']}"
    )


def phase_load(port, scripts, seconds, connections, grep_connections) -> dict:
    print(f"\n## load: {seconds:.0f} s each, {connections} connections for the cheap mix")
    cheap = result(wrk(port, scripts["cheap"], seconds, connections, threads=2), seconds)
    show("search/read/stat", cheap)
    greps = wrk(port, scripts["grep"], seconds, grep_connections)
    mixed = result(wrk(port, scripts["cheap"], seconds, connections, threads=2), seconds)
    grep = result(greps, seconds)
    show(f"search/read/stat, with {grep_connections} greps in flight", mixed)
    show("  the whole-tree greps themselves", grep)
    return {"cheap": cheap, "cheap_with_greps": mixed, "greps": grep}


def phase_soak(server: Ferret, port, scripts, minutes, connections, grep_connections) -> dict:
    """The mix with greps for `minutes`, after one minute of the same mix as a
    warm-up (caches, thread pools and allocator arenas reach their working
    size in it); resident memory sampled every 5 s throughout."""
    print(f"\n## soak: 1 minute of warm-up, then {minutes} minutes, the mix with {grep_connections} greps in flight")
    samples: list[tuple[float, int]] = []
    stop = threading.Event()
    began = time.time()

    def sample():
        while not stop.wait(5):
            samples.append((time.time() - began, server.rss_kib()))

    sampler = threading.Thread(target=sample, daemon=True)
    rss_ready = server.rss_kib()
    sampler.start()
    greps = wrk(port, scripts["grep"], 60, grep_connections)
    warm = result(wrk(port, scripts["cheap"], 60, connections, threads=2), 60)
    result(greps, 60)
    show("warm-up minute", warm)
    rss_start = server.rss_kib()
    minutes_out = []
    bounds = []
    for minute in range(minutes):
        bounds.append(time.time() - began)
        greps = wrk(port, scripts["grep"], 60, grep_connections)
        cheap = result(wrk(port, scripts["cheap"], 60, connections, threads=2), 60)
        grep = result(greps, 60)
        cheap["rss_kib"] = server.rss_kib()
        cheap["greps"] = grep["requests"]
        cheap["grep_errors"] = grep["errors"]
        minutes_out.append(cheap)
        show(f"minute {minute + 1} (rss {cheap['rss_kib'] / 1024:.0f} MiB, {grep['requests']} greps)", cheap)
    stop.set()
    rss_end = server.rss_kib()
    peak = max(k for _, k in samples) if samples else rss_end
    # Resident memory swings with the greps in flight (each holds its
    # candidates), so one reading lands anywhere in a swing: each soak
    # minute is summed up by the median and the peak of its 5 s samples,
    # and growth is the last minute's against the first's.
    bounds.append(time.time() - began)
    per_minute = []
    for minute in range(minutes):
        lo, hi = bounds[minute], bounds[minute + 1]
        ks = sorted(k for t, k in samples if lo <= t < hi) or [rss_end]
        per_minute.append({"median_kib": ks[len(ks) // 2], "peak_kib": ks[-1]})
    for i, m in enumerate(per_minute):
        minutes_out[i]["rss_median_kib"] = m["median_kib"]
        minutes_out[i]["rss_peak_kib"] = m["peak_kib"]
    first, last = per_minute[0], per_minute[-1]
    growth_median = (last["median_kib"] - first["median_kib"]) / first["median_kib"] * 100
    growth_peak = (last["peak_kib"] - first["peak_kib"]) / first["peak_kib"] * 100
    growth_reading = (rss_end - rss_start) / rss_start * 100
    print(
        f"resident memory: {rss_ready / 1024:.1f} MiB when ready; soak minute 1 median {first['median_kib'] / 1024:.1f} "
        f"(peak {first['peak_kib'] / 1024:.1f}), minute {minutes} median {last['median_kib'] / 1024:.1f} (peak {last['peak_kib'] / 1024:.1f}): "
        f"{growth_median:+.1f}% by the median, {growth_peak:+.1f}% by the peak; single readings {rss_start / 1024:.1f} after "
        f"the warm-up and {rss_end / 1024:.1f} at the end ({growth_reading:+.1f}%); peak of the run {peak / 1024:.1f}"
    )
    total = sum(m["requests"] for m in minutes_out)
    errors = sum(m["errors"] + m["grep_errors"] for m in minutes_out)
    print(f"requests: {total} cheap calls, {sum(m['greps'] for m in minutes_out)} greps, {errors} errors")
    return {
        "warm_up": warm,
        "minutes": minutes_out,
        "rss_ready_kib": rss_ready,
        "rss_start_kib": rss_start,
        "rss_end_kib": rss_end,
        "rss_peak_kib": peak,
        "rss_samples": samples,
        "rss_per_minute": per_minute,
    }


NGINX_CONF = """
worker_processes 1;
error_log {prefix}/error.log warn;
pid {prefix}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {prefix}/body;
  proxy_temp_path {prefix}/proxy;
  fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi;
  scgi_temp_path {prefix}/scgi;
  upstream ferret {{
    server 127.0.0.1:{a} max_fails=1 fail_timeout=30s;
    server 127.0.0.1:{b} max_fails=1 fail_timeout=30s;
    keepalive 64;
  }}
  # Calls that change nothing may be sent again to the other replica; the
  # 2026-07-28 protocol names the tool in a header, so nginx can tell.
  map $http_mcp_name $read_only {{
    default 0;
    search 1; read 1; list 1; stat 1; grep 1; changes 1; diagnostics 1; locate 1;
  }}
  server {{
    listen 127.0.0.1:{port};
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host $http_host;
    proxy_read_timeout 120s;
    location = /mcp {{
      if ($read_only) {{ rewrite ^ /retryable last; }}
      proxy_next_upstream off;
      proxy_pass http://ferret;
    }}
    location = /retryable {{
      internal;
      proxy_next_upstream error timeout http_502 http_503 non_idempotent;
      proxy_next_upstream_tries 2;
      proxy_pass http://ferret/mcp;
    }}
    location = /health {{ proxy_pass http://ferret; }}
  }}
}}
"""


def phase_replicas(tree, token, token_file, scripts, connections, entries) -> dict:
    print("\n## replicas: two ferrets behind nginx, one SIGKILLed halfway")
    work = Path(tempfile.mkdtemp(prefix="ferret-replicas-"))
    # nginx's workers drop root: let them reach their temporary folders here
    # (the token is not in it: that file stays in the 0700 folder of main()).
    os.chmod(work, 0o755)
    a = Ferret(tree, token_file, work / "state-a")
    b = Ferret(tree, token_file, work / "state-b")
    port = free_port()
    (work / "nginx.conf").write_text(NGINX_CONF.format(prefix=work, a=a.port, b=b.port, port=port))
    nginx = subprocess.Popen(["nginx", "-p", str(work), "-e", str(work / "error.log"), "-c", str(work / "nginx.conf"), "-g", "daemon off;"])
    try:
        for r in (a, b):
            wait_ready(r.port, token, entries)
        time.sleep(1)
        both = result(wrk(port, scripts["cheap"], 20, connections, threads=2), 20)
        show("both replicas", both)
        during = wrk(port, scripts["cheap"], 20, connections, threads=2)
        time.sleep(10)
        b.kill()
        killed_at = time.time()
        during = result(during, 20)
        show("one SIGKILLed at 10 s", during)
        survivor = result(wrk(port, scripts["cheap"], 20, connections, threads=2), 20)
        show("the survivor alone", survivor)
        direct = result(wrk(a.port, scripts["cheap"], 20, connections, threads=2), 20)
        show("the survivor, without nginx", direct)
        return {"both": both, "during_kill": during, "survivor": survivor, "survivor_direct": direct, "killed_at": killed_at}
    finally:
        nginx.send_signal(signal.SIGQUIT)
        nginx.wait(timeout=30)
        for r in (a, b):
            r.stop()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("phases", nargs="*", help="load, soak, replicas (default: all three)")
    ap.add_argument("--entries", type=int, default=200_000)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--soak-minutes", type=int, default=10)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--grep-connections", type=int, default=4)
    ap.add_argument("--out", type=Path, default=REPO / "target" / "bench-load.json")
    ap.add_argument("--ferret", type=Path, help="this binary instead of building target/release/ferret")
    ap.add_argument("--ferret-env", action="append", default=[], metavar="NAME=VALUE", help="set in ferret's environment (repeatable), e.g. MALLOC_ARENA_MAX=2")
    ap.add_argument("--serve-arg", action="append", default=[], metavar="ARG", help="one more `ferret serve` argument (repeatable), e.g. --content-index=off")
    args = ap.parse_args()
    args.phases = args.phases or ["load", "soak", "replicas"]
    if unknown := set(args.phases) - {"load", "soak", "replicas"}:
        ap.error(f"unknown phase {', '.join(sorted(unknown))}: choose load, soak or replicas")
    ensure_tools()
    global FERRET
    if args.ferret:
        FERRET = args.ferret.resolve()
    else:
        build()
    tree, files = make_tree(args.entries)
    work = Path(tempfile.mkdtemp(prefix="ferret-load-"))
    token = subprocess.run([str(FERRET), "token", "--state-dir", str(work / "state")], capture_output=True, text=True, check=True).stdout.strip()
    token_file = work / "state" / "token"
    scripts = {"cheap": work / "cheap.lua", "grep": work / "grep.lua"}
    lua_script(scripts["cheap"], token, cheap_requests(files))
    lua_script(scripts["grep"], token, grep_requests())
    cores = os.cpu_count()
    print(f"ferret {FERRET}, tree {tree} ({len(files)} files), {cores} cores, wrk on the same machine")
    out = {"entries": args.entries, "files": len(files), "cores": cores}
    try:
        if "load" in args.phases or "soak" in args.phases:
            server = Ferret(tree, token_file, work / "state", env=dict(e.split("=", 1) for e in args.ferret_env), extra=args.serve_arg)
            try:
                d = wait_ready(server.port, token, len(files))
                out["index_entries"] = d["index"]["entries"]
                print(f"index ready: {d['index']['entries']} entries")
                if "load" in args.phases:
                    out["load"] = phase_load(server.port, scripts, args.seconds, args.connections, args.grep_connections)
                if "soak" in args.phases:
                    out["soak"] = phase_soak(server, server.port, scripts, args.soak_minutes, args.connections, args.grep_connections)
            finally:
                server.stop()
        if "replicas" in args.phases:
            out["replicas"] = phase_replicas(tree, token, token_file, scripts, args.connections, len(files))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    print(f"\nwritten {args.out}")


if __name__ == "__main__":
    main()
