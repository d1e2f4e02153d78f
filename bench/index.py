#!/usr/bin/env python3
"""The index benchmark: ferret as users wait for it, beside plocate and fd.

    python3 bench/index.py [--entries 1000000] [--tree DIR] [--real DIR ...]
                           [--real-args "--hidden --no-ignore"] [--runs 30]
                           [--storm 1000] [--no-in-process]

For the synthetic tree (built once with a fixed seed; `--entries 10000000` makes
a 10M one) and every `--real` folder:

- in-process (`ferret-bench index`): build, the store's heap part by part,
  snapshot save and load, query p50/p99, freshness, and freshness during a storm
  of `--storm` changes a second. Reported apart: no user waits for these.
- a fresh `ferret serve --stdio` process: time until its index is ready, and its
  resident memory then (VmRSS) and at its peak (VmHWM), per entry, from
  /proc/PID/status: everything the server holds (names, watches, journal).
- the MCP round trip: a connected client sends `tools/call search` (limit 50)
  as JSON-RPC lines over stdio and waits for the answer; p50 and p99.
- `ferret search` run as a process (it loads the saved snapshot each time).
- plocate `-l 50` (after `updatedb` of the same tree) and fd `--max-results 50`,
  run as processes, on the same queries.
- build: ferret's time to ready beside `fd -HI` listing the same tree.

Medians throughout (p99 where stated). FERRET_BIN and FERRET_BENCH_BIN point
at binaries built elsewhere (then nothing is built). Installs plocate, fd-find and hyperfine
with apt-get when missing. Figures go to docs/benchmarks.md by hand.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stdio_client import StdioServer  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BENCH = Path(os.environ.get("FERRET_BENCH_BIN", REPO / "target" / "release" / "ferret-bench"))
FERRET = Path(os.environ.get("FERRET_BIN", REPO / "target" / "release" / "ferret"))

# label -> (query, search arguments beyond the query, plocate args, fd args)
QUERIES = [
    ("rare substring", "zyzzyva", {}, ["-i", "-b", "zyzzyva"], ["-i", "zyzzyva"]),
    ("common substring", "report", {}, ["-i", "-b", "report"], ["-i", "report"]),
    ("extension", "ext:pdf", {}, ["-i", "-b", "-r", r"\.pdf$"], ["-e", "pdf", "."]),
    ("wildcard", "invoice-*.csv", {}, ["-b", "invoice-*.csv"], ["-g", "invoice-*.csv"]),
    ("path term", "/alpha_beta_", {}, ["/alpha_beta_"], ["-p", "/alpha_beta_"]),
    ("size function", "size:>4000", {}, None, ["--size", "+4000b", "-t", "f", "."]),
    ("date function", "dm:today", {}, None, ["--changed-within", "1d", "."]),
    ("sorted by date, limit 50", "ext:rs", {"sort": "modified", "descending": True}, None, None),
]


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def ensure_tools():
    want = [("plocate", "plocate"), ("fd-find", "fdfind"), ("hyperfine", "hyperfine")]
    missing = [pkg for pkg, exe in want if not shutil.which(exe)]
    if missing:
        print(f"installing {' '.join(missing)} with apt-get", file=sys.stderr)
        sh(["apt-get", "update", "-qq"])
        sh(["apt-get", "install", "-y", "-qq", *missing], stdout=subprocess.DEVNULL)


def process_ms(cmd, runs):
    """Median wall time of a command run as a process (hyperfine, no shell).
    A failing exit is accepted: plocate exits 1 when nothing matches."""
    out = Path(tempfile.mktemp(suffix=".json"))
    sh(
        ["hyperfine", "-N", "-i", "--warmup", "2", "--runs", str(runs), "--export-json", str(out), "--",
         " ".join(map(quote, cmd))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    data = json.loads(out.read_text())
    out.unlink()
    return statistics.median(data["results"][0]["times"]) * 1000


def quote(a):
    a = str(a)
    return "'" + a.replace("'", "'\\''") + "'" if any(c in a for c in " *$\\|;&()<>?\"'") else a


class Server(StdioServer):
    """`ferret serve --stdio` on one tree (see `stdio_client`)."""

    def __init__(self, root, extra, state, binary=FERRET):
        super().__init__([str(binary), "serve", "--stdio", "--root", str(root), *extra], state)

    def call(self, tool, args):
        return self.result(tool, args)

    def wait_ready(self):
        while True:
            d = self.call("diagnostics", {})["structuredContent"]["index"]
            if d["state"] == "ready":
                return time.perf_counter() - self.started, d["entries"]
            time.sleep(0.05)

    def memory(self):
        st = self.proc_status()
        return st["VmRSS"], st["VmHWM"]


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    return f"{platform.machine()}, {os.cpu_count()} cores ({cpu}), {platform.platform()}"


def round_trips(server, runs):
    out = {}
    for label, query, extra, _, _ in QUERIES:
        times = []
        total = None
        for _ in range(runs):
            t = time.perf_counter()
            r = server.call("search", {"query": query, "limit": 50, **extra})
            times.append((time.perf_counter() - t) * 1000)
            total = r["structuredContent"]["total"]
        times.sort()
        out[label] = (statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.99))], total)
    return out


def run_tree(tree: Path, label: str, args, extra):
    print(f"\n## {label}: {tree}\n")
    if not args.no_in_process:
        cmd = [str(BENCH), "index", str(tree), "--freshness", "210", "--storm", str(args.storm), *extra]
        print("$ " + " ".join(cmd[1:]).replace(str(REPO) + "/", ""))
        print(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)

    state = Path(tempfile.mkdtemp(prefix="ferret-bench-state-"))
    # A fresh server: time to ready, memory per entry. --no-persist so the time
    # is a full build, not a snapshot load; without the content index, whose
    # background build (measured by bench/grep.py) would share the cores and
    # the memory figure with the name index's.
    s = Server(tree, ["--no-persist", "--content-index", "off", *extra], state)
    ready, entries = s.wait_ready()
    time.sleep(1.0)
    rss, hwm = s.memory()
    print(f"ferret serve: ready after {ready:.2f} s with {entries} entries; resident {rss / 2**20:.1f} MiB "
          f"= {rss / entries:.1f} bytes/entry, peak {hwm / 2**20:.1f} MiB = {hwm / entries:.1f} bytes/entry "
          f"(peak/steady {hwm / rss:.2f})")
    trips = round_trips(s, args.runs)
    s.close()
    fd = shutil.which("fdfind") or shutil.which("fd")
    fd_list = process_ms([fd, "-HI", ".", str(tree)], 3)
    print(f"build: ferret {ready:.2f} s; fd -HI listing the same tree {fd_list / 1000:.2f} s; ratio {ready * 1000 / fd_list:.2f}")

    # The CLI reads the snapshot `ferret index` saves.
    sh([str(FERRET), "index", "--root", str(tree), "--state-dir", str(state), "--content-index", "off", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = state / "plocate.db"
    t = time.perf_counter()
    sh(["updatedb", "-U", str(tree), "-o", str(db), "-l", "0"], stderr=subprocess.DEVNULL)
    print(f"plocate updatedb: {time.perf_counter() - t:.2f} s")

    print("\nmedians in ms over the same queries, page of 50; ratio = ferret over MCP / plocate -l 50")
    print(f"{'query':<26} {'MCP p50':>8} {'MCP p99':>8} {'CLI':>7} {'plocate':>8} {'fd':>8} {'ratio':>6} {'total':>8}")
    for label, query, extra_args, loc, fda in QUERIES:
        p50, p99, total = trips[label]
        cli = [str(FERRET), "search", query, "--root", str(tree), "--state-dir", str(state), "--limit", "50", *extra]
        if extra_args.get("sort"):
            cli += ["--sort", extra_args["sort"], "--descending"]
        c = process_ms(cli, 5)
        pl = process_ms(["plocate", "-d", str(db), "-l", "50", *loc], 10) if loc else None
        f = process_ms([fd, "-H", "-I", "--max-results", "50", *fda, str(tree)], 3) if fda else None
        fmt = lambda v: f"{v:.2f}" if v is not None else "n/a"
        ratio = f"{p50 / pl:.2f}" if pl else "n/a"
        print(f"{label:<26} {p50:>8.2f} {p99:>8.2f} {c:>7.1f} {fmt(pl):>8} {fmt(f):>8} {ratio:>6} {total:>8}")
    shutil.rmtree(state, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--tree", type=Path)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--real", type=Path, action="append", default=[])
    ap.add_argument("--real-args", default="", help="flags for the real trees, e.g. '--hidden --no-ignore'")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--storm", type=int, default=1000)
    ap.add_argument("--no-in-process", action="store_true")
    ap.add_argument("--no-synthetic", action="store_true")
    args = ap.parse_args()
    if "FERRET_BIN" not in os.environ and "FERRET_BENCH_BIN" not in os.environ:
        sh(["cargo", "build", "--release", "-q", "-p", "ferret-bench", "-p", "ferret"], cwd=REPO)
    ensure_tools()
    print(f"machine: {machine()}")
    if not args.no_synthetic:
        tree = args.tree or Path(os.environ.get("TMPDIR", "/tmp")) / f"ferret-bench-tree-{args.entries}"
        marker = tree / f".made-{args.entries}-{args.seed}"
        if not marker.exists():
            shutil.rmtree(tree, ignore_errors=True)
            t = time.perf_counter()
            sh([str(BENCH), "tree", str(tree), "--entries", str(args.entries), "--seed", str(args.seed)])
            print(f"tree built in {time.perf_counter() - t:.1f} s")
            marker.touch()
        run_tree(tree, f"synthetic tree, {args.entries} entries, seed {args.seed}", args, [])
    for real in args.real:
        run_tree(real.resolve(), "real tree", args, args.real_args.split())


if __name__ == "__main__":
    main()
