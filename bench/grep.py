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
"""

import argparse
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tree")
    ap.add_argument("--bin", default=str(REPO / "target" / "release" / "ferret"))
    args = ap.parse_args()
    rg = ensure_rg()
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
