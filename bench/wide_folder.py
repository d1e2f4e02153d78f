#!/usr/bin/env python3
"""Issue 24's bad input at scale: one folder of a million entries, and the
queries no one should have to type, over MCP.

    python3 bench/wide_folder.py [--entries 1000000] [--dir /tmp/ferret-wide] [--bin BIN] [--keep]

Makes (once; kept with --keep) a root holding `big/`, a folder of `--entries`
empty files named from a fixed list of words (`alpha_report-000017.md`), plus
names that differ only in case (`README.md`, `readme.md`, `ReadMe.md`) or in
Unicode normalisation (`café.txt` composed and decomposed), and one file with
text in it. Then a fresh `ferret serve --stdio --no-persist` on the root, and
for every call: its time over MCP (the median of `--runs`), whether it failed
(and with which code), `total` and the first result. Calls: `search` with one
character, 2,000 characters, punctuation only, `*` alone, a lone surrogate,
names differing in case and normalisation, plain and `fuzzy: true`; `list` of
the folder sorted by name and by date, at its start and its end; `grep` in it;
completion of names in it; a file made and removed in it while served,
asked for at once (freshness); the folder renamed, searched and grepped at
once, and renamed back and grepped at once; and
a storm of 100,000 files made and removed, searched at once and 5 s later. Prints a Markdown table; figures go to
docs/benchmarks.md by hand. The server is stopped by its PID at the end.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stdio_client import StdioServer  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WORDS = ["alpha", "beta", "report", "invoice", "cache", "module", "readme", "config", "image", "backup"]
EXTS = ["md", "rs", "txt", "json", "csv", "png"]
SPECIAL = ["README.md", "readme.md", "ReadMe.md", unicodedata.normalize("NFC", "café.txt"),
           unicodedata.normalize("NFD", "café-notes.txt"), "naïve.md"]
NEEDLE = "zebra_quantum_needle"


def name_of(i):
    a = WORDS[i % len(WORDS)]
    b = WORDS[(i // len(WORDS)) % len(WORDS)]
    return f"{a}_{b}-{i:07}.{EXTS[i % len(EXTS)]}"


def make_tree(root: Path, entries: int):
    big = root / "big"
    marker = root / f".made-{entries}"
    if marker.exists():
        return
    if root.exists():
        shutil.rmtree(root)
    big.mkdir(parents=True)
    t = time.perf_counter()
    fd = os.open(big, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(entries - len(SPECIAL) - 1):
            os.close(os.open(name_of(i), os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    for n in SPECIAL:
        (big / n).write_text("x\n")
    (big / "needle.txt").write_text(f"one line with {NEEDLE} in it\n")
    marker.touch()
    print(f"made {entries} entries in {root}/big in {time.perf_counter() - t:.1f} s", file=sys.stderr)


def calls():
    """(label, tool, arguments); the search ones twice, plain and fuzzy."""
    searches = [
        ("one character", "a"),
        ("one digit", "7"),
        ("2,000 characters, one word", "report" * 333 + "ab"),
        ("2,000 characters, words", " ".join(["alpha report"] * 166)),
        ("punctuation only", "!!!"),
        ("dots and dashes", ".-_"),
        ("`*` alone", "*"),
        ("`**` and `?`", "** ?"),
        ("a lone surrogate", "rep\udcffort"),
        ("an exact name", "alpha_report-0000020.txt"),
        ("a typo", "alpah_report-0000020.txt"),
        ("initials", "arep20"),
        ("case: `readme.md`", "readme.md"),
        ("case: `README.MD`", "README.MD"),
        ("normalisation: `café` composed", unicodedata.normalize("NFC", "café")),
        ("normalisation: `café` decomposed", unicodedata.normalize("NFD", "café")),
        ("no accent: `cafe`", "cafe"),
        ("no match", "zyzzyva"),
    ]
    out = []
    for label, q in searches:
        out.append((label, "search", {"query": q, "limit": 50}))
        out.append((label + ", fuzzy", "search", {"query": q, "limit": 50, "fuzzy": True}))
    out += [
        ("search by name order, under big/", "search", {"query": "", "path": "big", "sort": "name", "limit": 50}),
        ("search newest first, under big/", "search", {"query": "", "path": "big", "sort": "modified", "descending": True, "limit": 50}),
        ("search, last page", "search", {"query": "", "path": "big", "sort": "name", "offset": 999_000, "limit": 50}),
        ("list big/, first page", "list", {"path": "big", "limit": 50}),
        ("list big/ by date", "list", {"path": "big", "sort": "modified", "descending": True, "limit": 50}),
        ("list big/, far page", "list", {"path": "big", "offset": 999_000, "limit": 50}),
        ("list big/, glob", "list", {"path": "big", "glob": "*needle*", "limit": 50}),
        ("list big/, folders only", "list", {"path": "big", "kind": "dir", "limit": 50}),
        ("grep in big/", "grep", {"pattern": NEEDLE, "path": "big"}),
        ("stat big/", "stat", {"paths": ["big"]}),
    ]
    return out


def summary(r):
    s = r.get("structuredContent") or {}
    if r.get("isError"):
        code = (s.get("error") or {}).get("code") or json.dumps(s)[:80]
        return "error", code, ""
    total = s.get("total", s.get("count", ""))
    first = ""
    for key in ("results", "entries", "matches", "files"):
        v = s.get(key)
        if isinstance(v, list) and v:
            first = v[0] if isinstance(v[0], str) else json.dumps(v[0])[:70]
            break
    if s.get("fuzzy"):
        first += " (fuzzy fallback)"
    if s.get("walk_capped"):
        first += " (walk capped)"
    if s.get("index"):
        first += f" (index: {json.dumps(s['index'])})"
    return "ok", total, first


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ferret-wide"))
    ap.add_argument("--bin", default=os.environ.get("FERRET_BIN", str(REPO / "target/release/ferret")))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the tree for the next run")
    ap.add_argument("--server-arg", action="append", default=[])
    args = ap.parse_args()
    make_tree(args.dir, args.entries)
    state = Path(tempfile.mkdtemp(prefix="ferret-wide-state-"))
    s = StdioServer([args.bin, "serve", "--stdio", "--root", str(args.dir), "--no-persist", *args.server_arg], state)
    try:
        while True:
            d = s.result("diagnostics", {})["structuredContent"]["index"]
            if d["state"] == "ready":
                break
            time.sleep(0.1)
        ready = time.perf_counter() - s.started
        st = s.proc_status()
        print(f"ferret: {args.bin}; {d['entries']} entries ready after {ready:.1f} s; "
              f"resident {st['VmRSS'] / 2**20:.0f} MiB, peak {st['VmHWM'] / 2**20:.0f} MiB\n")
        print("| call | p50 ms | max ms | answer | total | first |")
        print("| --- | ---: | ---: | --- | ---: | --- |")
        def timed(method, params):
            """One request: its answer (a JSON-RPC error as an isError result) and ms."""
            t = time.perf_counter()
            r = s.request(method, params)
            took = (time.perf_counter() - t) * 1000
            if "error" in r:
                e = r["error"]
                return {"isError": True, "structuredContent": {"error": {"code": f"JSON-RPC {e['code']}: {e['message'][:60]}"}}}, took
            return r["result"], took

        def at_once(label, tool, a):
            r, took = timed("tools/call", {"name": tool, "arguments": a})
            ok, total, first = summary(r)
            print(f"| {label} | {took:.1f} | | {ok} | {total} | {first} |")

        for label, tool, a in calls():
            times = []
            for _ in range(args.runs):
                r, took = timed("tools/call", {"name": tool, "arguments": a})
                times.append(took)
            ok, total, first = summary(r)
            print(f"| {label} | {statistics.median(times):.1f} | {max(times):.1f} | {ok} | {total} | {first} |", flush=True)
        # Completion of names inside the folder.
        template = Path(os.path.realpath(args.dir)).as_uri() + "/{+path}"
        for value in ["big/needle", "big/", "big/alpha_re", "big/arep2"]:
            times = []
            for _ in range(args.runs):
                r, took = timed("completion/complete", {
                    "ref": {"type": "ref/resource", "uri": template},
                    "argument": {"name": "path", "value": value}})
                times.append(took)
            c = r.get("completion") or {}
            print(f"| completion of `{value}` | {statistics.median(times):.1f} | {max(times):.1f} | "
                  f"{'error' if r.get('isError') else 'ok'} | {c.get('total')} | {c.get('values', [])[:1]} |")
        # Freshness: a file made in the folder, asked for at once, then removed
        # (`total` should be 1, then 0).
        fresh = args.dir / "big" / "fresh_zebra_file.md"
        fresh.write_text(f"{NEEDLE} fresh\n")
        at_once("a file made, searched at once", "search", {"query": "fresh_zebra_file", "limit": 5})
        at_once("the same, grep at once", "grep", {"pattern": f"{NEEDLE} fresh", "path": "big"})
        fresh.unlink()
        at_once("removed, searched at once", "search", {"query": "fresh_zebra_file", "limit": 5})
        # The folder renamed in one go (the index's orders are rebuilt after
        # it), asked at once, twice, then once the rebuild is done.
        os.rename(args.dir / "big", args.dir / "big2")
        at_once("`big/` renamed: `report` at once", "search", {"query": "report", "limit": 50})
        at_once("and again at once", "search", {"query": "report", "limit": 50})
        at_once("and `grep` in it at once", "grep", {"pattern": NEEDLE, "path": "big2"})
        time.sleep(3)
        at_once("and 3 s later", "search", {"query": "report", "limit": 50})
        at_once("and `grep` 3 s later", "grep", {"pattern": NEEDLE, "path": "big2"})
        # Back, `grep` first (the content index carries a folder renamed
        # over to its new path, or reads every file below it again).
        os.rename(args.dir / "big2", args.dir / "big")
        at_once("renamed back: `grep` at once", "grep", {"pattern": NEEDLE, "path": "big"})
        time.sleep(3)
        # A storm: 100,000 files made, then removed, at once (the kernel's
        # queue overflows: the answers say so until the roots are read again).
        fd = os.open(args.dir / "big", os.O_RDONLY | os.O_DIRECTORY)
        try:
            for i in range(100_000):
                os.close(os.open(f"storm_{i}.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
            at_once("100,000 made: `storm_` at once", "search", {"query": "storm_", "limit": 0})
            time.sleep(5)
            at_once("and 5 s later", "search", {"query": "storm_", "limit": 0})
            for i in range(100_000):
                os.unlink(f"storm_{i}.txt", dir_fd=fd)
            at_once("removed: `storm_` at once", "search", {"query": "storm_", "limit": 0})
            time.sleep(5)
            at_once("and 5 s later", "search", {"query": "storm_", "limit": 0})
        finally:
            for i in range(100_000):
                try:
                    os.unlink(f"storm_{i}.txt", dir_fd=fd)
                except FileNotFoundError:
                    pass
            os.close(fd)
        st = s.proc_status()
        print(f"\nafter the calls: resident {st['VmRSS'] / 2**20:.0f} MiB, peak {st['VmHWM'] / 2**20:.0f} MiB")
    finally:
        s.close()
        shutil.rmtree(state, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
