#!/usr/bin/env python3
"""The grep benchmark: `ferret grep` against ripgrep on the same files.

    python3 bench/grep.py [--files 20000] [--runs 5] [--tree DIR] [--bin PATH]

Builds a seeded synthetic tree of text files (source-like lines, a .gitignore'd
folder that both tools skip), snapshots ferret's index once (`ferret index`), then
times, warm cache, each pattern with `ferret grep` (CLI: loads the index snapshot,
takes candidates from it, searches in-process) and `rg` with the same settings
(.gitignore respected outside git too, as the index does; hidden files skipped), full scan and with an
index filter (`ext:rs` for ferret, `-g '*.rs'` for rg). Prints medians and the ratio
ferret/rg. Installs ripgrep with apt-get when missing. Figures go to
docs/benchmarks.md by hand.

    python3 bench/grep.py --mcp [--files 20000] [--real DIR ...] [--runs 5]

The content index, over MCP (`--mcp`): for the seeded tree (unless
`--no-synthetic`) and every `--real` folder, two `ferret serve --stdio`
servers, one with the content index (built fresh in an empty state directory)
and one with `--content-index off`, each asked `grep` with `output: files` as
a client asks (JSON-RPC lines over stdio), beside `rg -l` with the same
settings. Every pattern's full set of matching files is read from all three
(ferret's pages of 2,000) and compared; the timed call is the first page (the
answer's `total` counts every file, so the whole tree is searched either way).
With `--against OLD_BIN`, a third server from another build (with the
content index) answers the same calls, call by call in turn with the first,
so that both see the same load on a shared machine: the column `against`.
Also: the index's first build (its own `build_ms`) beside one full `rg` pass
(the rare pattern), its size on disk beside the text it holds, and the
servers' anonymous resident memory (`RssAnon`: heap, not the mapped index
file) with the index and without it.
"""

import argparse
import json
import os
import platform
import random
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

WORDS = (
    "alpha beta gamma delta epsilon config value result error handler request response "
    "buffer stream parse token index search match files folder cache thread worker pool "
    "return struct impl trait async await println format string vector option some none"
).split()
EXTS = ["rs", "py", "md", "txt", "js", "toml"]

PATTERNS = {
    "rare literal": ["zyzzyva_marker"],
    "common literal": ["error"],
    "regex with classes": [r"[A-Z][a-z]+Handler\d{2}"],
    "case-insensitive": ["-i", "REQUEST"],
}


def build_tree(root: Path, files: int, seed: int = 42) -> None:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / ".gitignore").write_text("target/\n")
    for i in range(files):
        d = root / f"pkg{i % 50:02d}" / f"mod{i % 7}"
        if i % 40 == 0:
            d = root / "target" / f"out{i % 5}"
        d.mkdir(parents=True, exist_ok=True)
        ext = EXTS[i % len(EXTS)]
        lines = []
        for n in range(rng.randint(20, 400)):
            words = rng.choices(WORDS, k=rng.randint(3, 14))
            if rng.random() < 0.01:
                words.append(f"{rng.choice(['Request', 'Stream', 'Error'])}Handler{rng.randint(10, 99)}")
            if rng.random() < 0.0005:
                words.append("zyzzyva_marker")
            lines.append("    " * rng.randint(0, 3) + " ".join(words))
        (d / f"file{i:05d}.{ext}").write_text("\n".join(lines) + "\n")


def ensure_rg() -> str:
    rg = shutil.which("rg")
    if not rg:
        print("installing ripgrep with apt-get", file=sys.stderr)
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "ripgrep"], check=True, stdout=subprocess.DEVNULL)
        rg = shutil.which("rg")
    return rg


def timed(cmd, env, runs):
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - t)
        out = p.stdout
    return statistics.median(times), out


# Patterns for the content index, per tree: label -> grep arguments (MCP) and
# the same for rg. The seeded tree's come from its generator; a real tree's
# are given with --pattern LABEL=TEXT (literal), --regex LABEL=RE.
MCP_SEEDED = [
    ("selective literal", {"pattern": "zyzzyva_marker", "literal": True}),
    ("common literal", {"pattern": "error", "literal": True}),
    ("regex, literal of 7", {"pattern": r"[A-Z][a-z]+Handler\d{2}"}),
    ("case-insensitive", {"pattern": "REQUEST", "literal": True, "case_insensitive": True}),
    ("whole word", {"pattern": "pool", "literal": True, "whole_word": True}),
    ("unnarrowable", {"pattern": r"zy.", "output": "files"}),
]


def rg_args(call):
    out = []
    if call.get("literal"):
        out.append("-F")
    if call.get("case_insensitive"):
        out.append("-i")
    if call.get("whole_word"):
        out.append("-w")
    return out + ["-e", call["pattern"]]


class Server(StdioServer):
    """`ferret serve --stdio` on one tree (see `stdio_client`)."""

    def __init__(self, binary, root, extra, state, prefix=()):
        """`prefix`: a command the server runs under (`perf record ...`)."""
        super().__init__([*prefix, binary, "serve", "--stdio", "--root", str(root), "--state-dir", str(state), *extra],
                         state)

    def call(self, tool, args):
        r = self.result(tool, args)
        if r.get("isError"):
            raise SystemExit(f"{tool} {args}: {r['structuredContent']}")
        return r["structuredContent"]

    def diagnostics(self):
        return self.call("diagnostics", {})

    def wait(self, content):
        """Until the name index (and the content index, when on) is ready,
        a loaded content index is checked against the disk, and the symbols
        table built in the background is done (its parsing would share the
        cores with the timed calls)."""
        while True:
            d = self.diagnostics()
            ci = d.get("content_index")
            checked = ci and ci["state"] in ("ready", "failed") and not ci.get("unverified_files")
            symbols = str(d.get("symbols", {}).get("state", ""))
            quiet = not symbols.startswith(("building", "busy"))
            if d["index"]["state"] == "ready" and (not content or checked) and quiet:
                return d
            time.sleep(0.1)

    def memory(self):
        return self.proc_status()

    def files(self, call):
        """Every matching file (all pages)."""
        out, offset = [], 0
        while True:
            r = self.call("grep", {**call, "output": "files", "limit": 2000, "offset": offset})
            out += r.get("files", [])
            if not r.get("next_offset"):
                return out, r
            offset = r["next_offset"]


def rg_files(rg, tree, call):
    cmd = [rg, "--no-config", "--no-require-git", "-l", "-j", str(os.cpu_count()), *rg_args(call), "."]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tree)
    return [l[2:] if l.startswith("./") else l for l in p.stdout.decode("utf-8", "replace").splitlines()]


def mcp_tree(tree: Path, label: str, patterns, args, rg):
    size = 0
    count = 0
    for dirpath, _, names in os.walk(tree):
        for n in names:
            try:
                st = os.lstat(os.path.join(dirpath, n))
            except OSError:
                continue
            if not os.path.islink(os.path.join(dirpath, n)):
                size += st.st_size
                count += 1
    print(f"\n## {label}: {tree}: {count} files, {size / 2**20:.0f} MiB\n")
    state_on = Path(tempfile.mkdtemp(prefix="ferret-grep-bench-on-"))
    state_off = Path(tempfile.mkdtemp(prefix="ferret-grep-bench-off-"))
    extra = ["--max-response-bytes", "64M"]
    on = Server(args.bin, tree, extra, state_on)
    d = on.wait(True)
    ci = d["content_index"]
    time.sleep(1.0)
    mem_on = on.memory()
    off = Server(args.bin, tree, [*extra, "--content-index", "off"], state_off)
    off.wait(False)
    old, state_old = None, None
    if args.against:
        state_old = Path(tempfile.mkdtemp(prefix="ferret-grep-bench-against-"))
        old = Server(args.against, tree, extra, state_old)
        old.wait(True)
    time.sleep(1.0)
    mem_off = off.memory()
    # One full rg pass (a pattern with few matches), warm.
    rare = patterns[0][1]
    rg_cmd = [rg, "--no-config", "--no-require-git", "-l", "-j", str(os.cpu_count()), *rg_args(rare), "."]
    subprocess.run(rg_cmd, stdout=subprocess.DEVNULL, cwd=tree)
    rg_pass = statistics.median(timed_in(rg_cmd, tree, 3))
    text = ci["indexed_bytes"]
    print(f"content index: {ci['state']}, {ci['indexed_files']} of {ci['files']} files, {text / 2**20:.0f} MiB of text; "
          f"not indexed: {ci.get('not_indexed')}")
    print(f"first build: {ci['build_ms'] / 1000:.2f} s; one rg pass {rg_pass:.2f} s; ratio {ci['build_ms'] / 1000 / rg_pass:.2f}")
    print(f"on disk: {ci['size_bytes'] / 2**20:.1f} MiB = {ci['size_bytes'] / max(text, 1):.3f} of the indexed text")
    extra_anon = mem_on["RssAnon"] - mem_off["RssAnon"]
    print(f"memory: RssAnon {mem_on['RssAnon'] / 2**20:.1f} MiB with the index, {mem_off['RssAnon'] / 2**20:.1f} MiB without: "
          f"+{extra_anon / 2**20:.1f} MiB = {extra_anon / max(text, 1):.3f} of the text; mapped file pages {mem_on['RssFile'] / 2**20:.1f} MiB; "
          f"peak (VmHWM) {mem_on['VmHWM'] / 2**20:.1f} MiB with, {mem_off['VmHWM'] / 2**20:.1f} MiB without")
    print(f"\n{args.runs} runs, warm, medians in ms; ratio = ferret with the index over MCP / rg -l")
    if old:
        print(f"against: {args.against}, timed call by call in turn with the index column")
    print(f"{'pattern':<22}{'index':>8}{'against' if old else '':>8}{'no index':>10}{'rg -l':>8}{'ratio':>7}{'no idx/rg':>10}{'cands':>8}{'read':>8}{'files':>8}  same")
    for name, call in patterns:
        got_on, r_on = on.files(call)
        got_off, _ = off.files(call)
        got_rg = rg_files(rg, tree, call)
        same_ferret = sorted(got_on) == sorted(got_off)
        same_rg = set(got_on) == set(got_rg)
        page = {**call, "output": "files", "limit": 2000}
        if old:
            got_old, _ = old.files(call)
            same_ferret = same_ferret and sorted(got_old) == sorted(got_on)
            t_on, t_old = timed_calls([on, old], page, args.runs)
        else:
            t_on, t_old = timed_call(on, page, args.runs), None
        t_off = timed_call(off, page, args.runs)
        cmd = [rg, "--no-config", "--no-require-git", "-l", "-j", str(os.cpu_count()), *rg_args(call), "."]
        t_rg = statistics.median(timed_in(cmd, tree, args.runs)) * 1000
        used = r_on.get("content_index", {})
        cands = used.get("candidates", "-") if used.get("used") else "-"
        print(f"{name:<22}{t_on:>8.1f}{f'{t_old:.1f}' if old else '':>8}{t_off:>10.1f}{t_rg:>8.1f}{t_on / t_rg:>7.3f}{t_off / t_rg:>10.2f}{cands!s:>8}"
              f"{r_on.get('files_scanned', 0):>8}{len(got_on):>8}  "
              f"{'index=scan' if same_ferret else 'INDEX DIFFERS FROM SCAN'}, "
              f"{'=rg' if same_rg else f'rg {len(got_rg)} ({len(set(got_rg) - set(got_on))} only rg, {len(set(got_on) - set(got_rg))} only ferret)'}"
              + ("" if used.get("used") else f"  (not used: {used.get('not_used')})"))
        if not same_ferret:
            print(f"    only with the index: {sorted(set(got_on) - set(got_off))[:5]}; only without: {sorted(set(got_off) - set(got_on))[:5]}")
    on.close()
    off.close()
    if old:
        old.close()
        shutil.rmtree(state_old, ignore_errors=True)
    shutil.rmtree(state_on, ignore_errors=True)
    shutil.rmtree(state_off, ignore_errors=True)


def timed_in(cmd, cwd, runs):
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
        out.append(time.perf_counter() - t)
    return out


def timed_call(server, call, runs):
    server.call("grep", call)  # warm-up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        server.call("grep", call)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def timed_calls(servers, call, runs):
    """Medians of the same call on each server, asked in turn, call by call."""
    for server in servers:
        server.call("grep", call)  # warm-up
    times = [[] for _ in servers]
    for _ in range(runs):
        for server, out in zip(servers, times):
            t = time.perf_counter()
            server.call("grep", call)
            out.append((time.perf_counter() - t) * 1000)
    return [statistics.median(t) for t in times]


def mcp_main(args, rg):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores ({cpu}), {platform.platform()}")
    if not args.no_synthetic:
        work = Path(tempfile.mkdtemp(prefix="ferret-grep-bench-"))
        tree = work / "tree"
        build_tree(tree, args.files)
        mcp_tree(tree, f"seeded tree ({args.files} files, seed 42)", MCP_SEEDED, args, rg)
        shutil.rmtree(work, ignore_errors=True)
    real_patterns = []
    for spec in args.pattern:
        label, _, text = spec.partition("=")
        real_patterns.append((label, {"pattern": text, "literal": True}))
    for spec in args.regex:
        label, _, text = spec.partition("=")
        real_patterns.append((label, {"pattern": text}))
    for spec in args.icase:
        label, _, text = spec.partition("=")
        real_patterns.append((label, {"pattern": text, "literal": True, "case_insensitive": True}))
    for real in args.real:
        mcp_tree(Path(real).resolve(), "real tree", real_patterns or MCP_SEEDED, args, rg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tree")
    ap.add_argument("--bin", default=str(REPO / "target" / "release" / "ferret"))
    ap.add_argument("--mcp", action="store_true", help="the content index over MCP (see above)")
    ap.add_argument("--real", action="append", default=[], help="a real tree for --mcp")
    ap.add_argument("--against", help="with --mcp: another build's binary, timed in turn with --bin")
    ap.add_argument("--no-synthetic", action="store_true", help="with --mcp: only the --real trees")
    ap.add_argument("--pattern", action="append", default=[], help="LABEL=LITERAL for the real trees (the first: a selective one)")
    ap.add_argument("--regex", action="append", default=[], help="LABEL=REGEX for the real trees")
    ap.add_argument("--icase", action="append", default=[], help="LABEL=LITERAL, case-insensitive, for the real trees")
    args = ap.parse_args()
    rg = ensure_rg()
    if args.mcp:
        mcp_main(args, rg)
        return
    work = Path(tempfile.mkdtemp(prefix="ferret-grep-bench-"))
    tree = Path(args.tree) if args.tree else work / "tree"
    if not args.tree or not tree.exists():
        t = time.perf_counter()
        build_tree(tree, args.files)
        print(f"built {args.files} files in {time.perf_counter() - t:.1f}s at {tree}", file=sys.stderr)
    env = {**os.environ, "XDG_STATE_HOME": str(work / "state")}
    subprocess.run([args.bin, "index", "--root", str(tree)], check=True, env=env, stderr=subprocess.DEVNULL)
    size = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}")
    print(f"tree: {args.files} files, {size / 1e6:.0f} MB; {args.runs} runs, warm cache, medians")
    print(f"{'pattern':<22}{'scope':<10}{'ferret ms':>10}{'rg ms':>9}{'ratio':>7}{'lines f/rg':>16}")
    for label, pat in PATTERNS.items():
        for scope in ["all", "ext:rs"]:
            fcmd = [args.bin, "grep", *pat, "--root", str(tree), "--limit", "100000000"]
            rcmd = [rg, "--no-config", "--no-require-git", "-n", "--no-heading", "-j", str(os.cpu_count()), *pat]
            if scope != "all":
                fcmd += ["--filter", scope]
                rcmd += ["-g", "*.rs"]
            rcmd.append(".")
            # warm-up
            subprocess.run(fcmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            subprocess.run(rcmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tree)
            f, fo = timed(fcmd, env, args.runs)
            t0 = time.perf_counter()
            r_times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                ro = subprocess.run(rcmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tree).stdout
                r_times.append(time.perf_counter() - t0)
            r = statistics.median(r_times)
            fl, rl = fo.count(b"\n"), ro.count(b"\n")
            print(f"{label:<22}{scope:<10}{f * 1000:>10.0f}{r * 1000:>9.0f}{f / r:>7.2f}{fl:>8}/{rl:<7}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
