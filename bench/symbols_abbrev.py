#!/usr/bin/env python3
"""Symbols asked by abbreviation (issue 28's "fuzzy like search"): for
definitions Universal Ctags finds, the `symbols` tool is asked the initials
of the name's words (`gsn` for `get_symbol_name`, names of three words or
more) and the first two letters of each word (`gesyna`, two words or more).
A hit: a result in the top 1 / top 5 has the name asked for (case and
separators left out; a name defined several times counts wherever it is).

    python3 bench/symbols_abbrev.py --bin target/release/ferret [--per 150] [--misses 20]
    python3 bench/symbols_abbrev.py --bin BIN --times DIR   # the fuzzy pass's cost

`--times DIR` instead times `symbols` over MCP on DIR (the table built
first): names a definition has, guesses and a name none has (the fuzzy and
typo pass over every distinct name), median of 9 calls each.

The corpora are bench/symbols.py's (tokio, clap_builder, syn from the cargo
registry; pydantic from the venv; zod/src from the test clients)."""
import argparse
import random
import shutil
import statistics
import time
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import symbols as S  # noqa: E402
from retrieval import words_of  # noqa: E402


def words(name):
    """A name's words, lowercased (split as bench/retrieval.py splits them)."""
    return [w.lower() for w in words_of(name)]


def queries(defs, rng, per):
    out = []
    for kind in ("initials", "starts"):
        pool = [d for d in defs if len(words(d["name"])) >= (3 if kind == "initials" else 2)
                and not any(w.isdigit() for w in words(d["name"]))]
        for d in rng.sample(pool, min(per, len(pool))):
            ws = words(d["name"])
            q = "".join(w[0] for w in ws) if kind == "initials" else "".join(w[:2] for w in ws)
            out.append((kind, q, d))
    return out


TIMED = ["ts_parser_parse", "gsn", "tpurea", "rbf", "json_loads", "HashMap", "new", "qzxwvk",
         "trnsition", "poll_read_priv"]


def times(binary, root):
    state = Path(tempfile.mkdtemp(prefix="ferret-symbols-abbrev-"))
    s = S.Server(binary, root, state)
    try:
        s.wait()
        s.call("symbols", {"query": "x_build", "limit": 5})
        for q in TIMED:
            ms = []
            for _ in range(9):
                t = time.perf_counter()
                s.call("symbols", {"query": q, "limit": 20})
                ms.append((time.perf_counter() - t) * 1000)
            print(f"{q:18} {statistics.median(ms):7.1f} ms")
    finally:
        s.stop()
        shutil.rmtree(state, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--per", type=int, default=150, help="queries of each kind per corpus")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--misses", type=int, default=0, help="list this many misses per corpus")
    ap.add_argument("--times", metavar="DIR", help="time symbols on DIR instead")
    args = ap.parse_args()
    if args.times:
        return times(args.bin, args.times)
    ctags = S.ensure_ctags()
    corpora = [(c, S.newest(c)) for c in ("tokio", "clap_builder", "syn")]
    corpora += [("pydantic", str(S.SITE / "pydantic")), ("zod/src", str(S.NODE / "zod/src"))]
    tot = {}
    for label, root in corpora:
        if not root or not Path(root).is_dir():
            print(f"{label}: not on this machine, left out")
            continue
        defs, _ = S.ctags_defs(ctags, root)
        qs = queries(defs, random.Random(f"{args.seed}:{label}"), args.per)
        state = Path(tempfile.mkdtemp(prefix="ferret-symbols-abbrev-"))
        s = S.Server(args.bin, root, state)
        shown = 0
        try:
            s.wait()
            for kind, q, d in qs:
                sc, err = s.call("symbols", {"query": q, "limit": 5})
                res = sc.get("results", []) if not err else []
                hit1 = bool(res) and S.fold(res[0]["name"]) == S.fold(d["name"])
                hit5 = any(S.fold(r["name"]) == S.fold(d["name"]) for r in res)
                t = tot.setdefault((label, kind), [0, 0, 0])
                t[0] += 1
                t[1] += hit1
                t[2] += hit5
                if not hit1 and shown < args.misses:
                    shown += 1
                    print(f"  {label} {kind} {q}: want {d['name']}, got {[r['name'] for r in res[:3]]}")
        finally:
            s.stop()
            shutil.rmtree(state, ignore_errors=True)
    for (label, kind), (n, h1, h5) in tot.items():
        print(f"{label:14} {kind:9} {n:4} asked  top-1 {100 * h1 / n:5.1f}%  top-5 {100 * h5 / n:5.1f}%")
    for kind in ("initials", "starts"):
        rows = [v for k, v in tot.items() if k[1] == kind]
        n, h1, h5 = (sum(r[i] for r in rows) for i in range(3))
        if n:
            print(f"{'all':14} {kind:9} {n:4} asked  top-1 {100 * h1 / n:5.1f}%  top-5 {100 * h5 / n:5.1f}%")


if __name__ == "__main__":
    main()
