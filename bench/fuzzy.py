#!/usr/bin/env python3
"""Finding the file meant, measured like an editor: retrieval and latency.

    python3 bench/fuzzy.py --real DIR [--targets 300] [--seed 7]
                           [--latency-tree DIR ...] [--runs 20]

From a real tree, pick `--targets` files at random (fixed seed) and derive one
query of each kind from each file's own name, the way people and agents guess:

- typo: one letter of the name replaced by another;
- dropped: one letter left out;
- partial: the first 60% of the name's stem;
- initials: the first letter of each word of the name (`UserProfileCard` ->
  `upc`, `auth_middleware` -> `am`), for names of two words or more;
- path: the parent folder's name, `/`, and half of the stem.

Each query goes to ferret's fuzzy search (`search` with `fuzzy: true`, over MCP
on stdio), to ferret's plain search (the default relevance order), and to
`fzf --filter` over the tree's list of paths (Debian's fzf). Reported per kind:
how often the intended file is first, and among the first five.

`--latency-tree` folders (for example 100k- and 1M-entry synthetic trees made
by `ferret-bench tree`) get the p50 of fuzzy searches over MCP, with a query set
derived the same way from names in that tree.
"""

import argparse
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index import FERRET, Server, sh  # noqa: E402

KINDS = ["typo", "dropped", "partial", "initials", "path"]


def words_of(stem):
    parts = re.split(r"[_\-. ]+", stem)
    out = []
    for p in parts:
        out += re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", p) or ([p] if p else [])
    return [w for w in out if w]


def derive(rel, rng):
    name = rel.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name[1:] else name
    q = {}
    letters = [i for i, c in enumerate(name) if c.isalpha()]
    if len(stem) >= 5 and letters:
        i = rng.choice([i for i in letters if i < len(stem)] or letters)
        c = rng.choice([x for x in "etaoinsrhl" if x != name[i].lower()])
        q["typo"] = name[:i] + c + name[i + 1 :]
        j = rng.choice([i for i in letters if 0 < i < len(stem)] or letters)
        q["dropped"] = name[:j] + name[j + 1 :]
    if len(stem) >= 5:
        q["partial"] = stem[: max(3, int(len(stem) * 0.6))]
    ws = words_of(stem)
    if len(ws) >= 2:
        q["initials"] = "".join(w[0] for w in ws).lower()
    if "/" in rel and len(stem) >= 4:
        parent = rel.rsplit("/", 2)[-2]
        q["path"] = f"{parent}/{stem[: max(2, len(stem) // 2)]}"
    return q


def fzf_top(paths_file, query, n=5):
    r = subprocess.run(["fzf", "--filter", query], stdin=open(paths_file), capture_output=True, text=True)
    return r.stdout.splitlines()[:n]


def ferret_top(server, query, fuzzy, n=5):
    args = {"query": query, "limit": n}
    if fuzzy:
        args["fuzzy"] = True
    r = server.call("search", args)
    s = r.get("structuredContent", {})
    if r.get("isError"):
        return []
    return [p if isinstance(p, str) else p.get("path") for p in s.get("results", [])]


_answers = {}


def answers(server, paths_file, query):
    if query not in _answers:
        _answers[query] = [
            (who, [p.rstrip("/") for p in top])
            for who, top in [
                ("fuzzy", ferret_top(server, query, True)),
                ("plain", ferret_top(server, query, False)),
                ("fzf", fzf_top(paths_file, query)),
            ]
        ]
    return _answers[query]


def retrieval(tree, targets, seed):
    files = subprocess.run(["fdfind", "--type", "f", ".", "."], cwd=tree, capture_output=True, text=True).stdout.splitlines()
    files = sorted(f.removeprefix("./") for f in files if f)
    print(f"\n## retrieval on {tree}: {len(files)} files, {targets} targets, seed {seed}\n")
    rng = random.Random(seed)
    sample = rng.sample(files, min(targets, len(files)))
    counts = {}
    for f in files:
        b = f.rsplit("/", 1)[-1]
        counts[b] = counts.get(b, 0) + 1
    paths_file = Path(tempfile.mktemp(suffix=".txt"))
    paths_file.write_text("\n".join(files) + "\n")
    state = Path(tempfile.mkdtemp(prefix="ferret-fuzzy-bench-"))
    server = Server(tree, ["--no-persist"], state)
    server.wait_ready()
    tally = {k: {"n": 0, "fuzzy": [0, 0], "plain": [0, 0], "fzf": [0, 0]} for k in KINDS + ["unique"]}
    for rel in sample:
        unique = counts[rel.rsplit("/", 1)[-1]] == 1
        for kind, query in derive(rel, rng).items():
          for kind in [kind] + (["unique"] if unique else []):
            t = tally[kind]
            t["n"] += 1
            for who, top in answers(server, paths_file, query):
                t[who][0] += int(bool(top) and top[0] == rel)
                t[who][1] += int(rel in top)
    server.close()
    shutil.rmtree(state, ignore_errors=True)
    paths_file.unlink()
    pct = lambda a, n: f"{100 * a / n:5.1f}%" if n else "  n/a"
    print(f"{'kind':<10} {'queries':>7}   {'ferret fuzzy top1/top5':>23}   {'fzf --filter top1/top5':>23}   {'ferret plain top1/top5':>23}")
    all_n = 0
    sums = {w: [0, 0] for w in ("fuzzy", "plain", "fzf")}
    for kind in KINDS:
        t = tally[kind]
        n = t["n"]
        all_n += n
        for w in sums:
            sums[w][0] += t[w][0]
            sums[w][1] += t[w][1]
        row = "   ".join(f"{pct(t[w][0], n):>11} {pct(t[w][1], n):>11}" for w in ("fuzzy", "fzf", "plain"))
        print(f"{kind:<10} {n:>7}   {row}")
    row = "   ".join(f"{pct(sums[w][0], all_n):>11} {pct(sums[w][1], all_n):>11}" for w in ("fuzzy", "fzf", "plain"))
    print(f"{'all':<10} {all_n:>7}   {row}")
    t = tally["unique"]
    row = "   ".join(f"{pct(t[w][0], t['n']):>11} {pct(t[w][1], t['n']):>11}" for w in ("fuzzy", "fzf", "plain"))
    print(f"{'(unique names)':<10} {t['n']:>3}   {row}")


def latency(tree, runs, seed):
    rng = random.Random(seed)
    names = sorted(subprocess.run(["fdfind", "--type", "f", ".", "."], cwd=tree, capture_output=True, text=True).stdout.splitlines())
    sample = rng.sample(names, min(40, len(names)))
    queries = [q for rel in sample for q in derive(rel.removeprefix("./"), rng).values()][:40]
    state = Path(tempfile.mkdtemp(prefix="ferret-fuzzy-bench-"))
    server = Server(tree, ["--no-persist"], state)
    _, entries = server.wait_ready()
    times = []
    for _ in range(max(1, runs // 10)):
        for q in queries:
            t = time.perf_counter()
            server.call("search", {"query": q, "fuzzy": True, "limit": 50})
            times.append((time.perf_counter() - t) * 1000)
    server.close()
    shutil.rmtree(state, ignore_errors=True)
    times.sort()
    print(f"fuzzy search over MCP on {tree} ({entries} entries): p50 {statistics.median(times):.1f} ms, "
          f"p95 {times[int(len(times) * 0.95)]:.1f} ms over {len(times)} calls")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--real", type=Path, action="append", default=[])
    ap.add_argument("--targets", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--latency-tree", type=Path, action="append", default=[])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    if not FERRET.exists():
        sh(["cargo", "build", "--release", "-q", "-p", "ferret"], cwd=FERRET.parents[2])
    for tool, pkg in [("fzf", "fzf"), ("fdfind", "fd-find")]:
        if not shutil.which(tool):
            sh(["apt-get", "install", "-y", "-qq", pkg], stdout=subprocess.DEVNULL)
    for tree in args.real:
        retrieval(tree.resolve(), args.targets, args.seed)
    for tree in args.latency_tree:
        latency(tree.resolve(), args.runs, args.seed)


if __name__ == "__main__":
    main()
