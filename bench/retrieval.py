#!/usr/bin/env python3
"""Retrieval: is the file an agent means first (top-1) or among the first five
(top-5), for queries typed the way agents type them? Issue 24.

    python3 bench/retrieval.py TREE [--per-kind 200] [--seed 7]
                               [--only fzf,plain,fuzzy] [--dump FILE | --queries FILE]
                               [--misses 15] [--json] [--ferret BIN]

The tree's files are listed from ferret's own index (`search file:`, so every
system ranks the same candidates: the files ferret holds, ignore rules
applied), shuffled with the seed, and each file in that order gives one query
of every kind it allows, until every kind has `--per-kind` queries. The kinds,
for `tokio-util-0.7.20/src/codec/decoder.rs` (words: split at `-`, `_`, `.`,
spaces, camelCase and digits; a folder's trailing version such as `-0.7.20`
dropped; skipped as folders nobody types: `src`, which nearly every package
has, and folders without a letter, such as botocore's `2016-11-15`):

- exact: the name, `decoder.rs`;
- typo: one letter of the stem replaced by another (one of `etaoinsrhl`),
  such as `dacoder.rs` (stems of five letters or more);
- dropped: one letter of the stem after the first left out, such as
  `decder.rs` (likewise);
- prefix: the stem's first 60%, at least three letters, `deco` (likewise);
- initials: the first letter of every word (numbers left out) of the last
  three folders, then the stem's first three letters or digits, `tucdec`
  (tokio-util, codec, dec);
- folder+words: the nearest folder, then the stem's words, `codec decoder`;
- reordered: a word of the stem (three letters or more), then another word of
  a folder above it (likewise), the other order than the path's: such as
  `decoder tokio`, or `len tracing` for
  `tracing-subscriber-0.3.23/tests/same_len_filters.rs`.

Where a kind picks (a letter, a word), a generator seeded with the seed and
the file's path picks, so a file's queries do not depend on the others.

Queries are lower-case except exact, typo and dropped (the name as written).
A last row scores the queries for files whose name no other file has: where
hundreds of packages each have a `Cargo.toml`, no system can know which one
`Cargo.toml` means.
Files in `__pycache__` are never targets (compiled bytecode is named after its
source; nobody asks for it by name), though they stay candidates.

The systems: `fzf --filter QUERY --scheme=path` over the list of paths
relative to the root (fzf), ferret's `search` with no flags, as agents call
it (plain), and `search` with `fuzzy: true` (fuzzy), over MCP on stdio, with
`limit: 5`. ferret runs `serve --stdio --no-persist --content-index off` with
its state dir in a temporary folder. Its binary: `--ferret`, else FERRET_BIN,
else the debug build `cargo build -p ferret` gives (accuracy does not depend
on speed); the output names it. fzf is installed with apt-get when missing.

`--dump FILE` writes the query set (JSON) and `--queries FILE` runs a dumped
set instead of drawing one, so runs stay comparable when the tree changes
(bench/queries/ holds the sets docs/benchmarks.md was measured with);
`--only plain` reruns ferret plain alone after a ranking change (a short
plain answer's `close` names, one letter off its word, count after its
results: the agent reads them in that order); `--misses N`
lists queries that fzf answers first and ferret plain does not, a spread over
the kinds; `--json` prints everything (per query too) as one JSON object.
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index import REPO, Server, machine, sh  # noqa: E402

KINDS = ["exact", "typo", "dropped", "prefix", "initials", "folder+words", "reordered"]
SYSTEMS = ["fzf", "plain", "fuzzy"]
SKIPPED_FOLDERS = {"src"}
NOT_TARGETS = {"__pycache__"}
VERSION = re.compile(r"-v?\d+(\.\d+)+\S*$")
TOP = 5


def words_of(text):
    """The words of a name: split at `-`, `_`, `.` and spaces, then at camelCase and digits."""
    out = []
    for p in re.split(r"[_\-. ]+", text):
        out += re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", p) or ([p] if p else [])
    return [w for w in out if w]


def folder_name(name):
    """A folder as people type it: without a trailing version (`tokio-util-0.7.20`)."""
    return VERSION.sub("", name) or name


def folders_of(rel):
    """The folders above a file people would type, outermost first, versions
    dropped: not `src`, nor one without a letter (`2016-11-15`)."""
    return [folder_name(f) for f in rel.split("/")[:-1] if f not in SKIPPED_FOLDERS and re.search("[A-Za-z]", f)]


def stem_of(name):
    return name.rsplit(".", 1)[0] if "." in name[1:] else name


def queries_for(rel, rng):
    """Every kind of query this file allows, as {kind: query}."""
    name = rel.rsplit("/", 1)[-1]
    stem = stem_of(name)
    q = {"exact": name}
    letters = [i for i, c in enumerate(stem) if c.isalpha()]
    if len(stem) >= 5 and letters:
        i = rng.choice(letters)
        c = rng.choice([x for x in "etaoinsrhl" if x != name[i].lower()])
        q["typo"] = name[:i] + c + name[i + 1 :]
        j = rng.choice([i for i in letters if i > 0] or letters)
        q["dropped"] = name[:j] + name[j + 1 :]
        q["prefix"] = stem[: max(3, int(len(stem) * 0.6))].lower()
    folders = folders_of(rel)
    stem_words = [w.lower() for w in words_of(stem)]
    initials = "".join(w[0] for f in folders[-3:] for w in words_of(f) if not w.isdigit()).lower()
    if initials and stem_words:
        q["initials"] = initials + re.sub("[^A-Za-z0-9]", "", stem)[:3].lower()
    if folders and stem_words:
        q["folder+words"] = " ".join([folders[-1].lower(), *stem_words])
    long_stem = [w for w in stem_words if len(w) >= 3 and not w.isdigit()]
    folder_words = sorted({w.lower() for f in folders for w in words_of(f) if len(w) >= 3 and not w.isdigit()})
    if long_stem:
        first = rng.choice(long_stem)
        others = [w for w in folder_words if w != first]
        if others:
            q["reordered"] = f"{first} {rng.choice(others)}"
    return q


def draw(files, per_kind, seed):
    """Query sets of `per_kind` per kind, from files in seeded order."""
    order = [f for f in files if not NOT_TARGETS & set(f.split("/")[:-1])]
    random.Random(seed).shuffle(order)
    names = Counter(f.rsplit("/", 1)[-1] for f in files)
    out = {k: [] for k in KINDS}
    for rel in order:
        if all(len(v) >= per_kind for v in out.values()):
            break
        for kind, query in queries_for(rel, random.Random(f"{seed}:{rel}")).items():
            if len(out[kind]) < per_kind:
                unique = names[rel.rsplit("/", 1)[-1]] == 1
                out[kind].append({"kind": kind, "query": query, "want": rel, "unique": unique})
    return [q for k in KINDS for q in out[k]]


def indexed_files(server):
    """The files the index holds, relative to the root, in path order."""
    files, offset = [], 0
    while True:
        s = server.call("search", {"query": "file:", "sort": "path", "limit": 2000, "offset": offset})["structuredContent"]
        files += s["results"]
        if "next_offset" not in s:
            return files
        offset = s["next_offset"]


def ferret_top(server, query, fuzzy):
    """The first paths `search` gives (folders without their `/`), or an error."""
    args = {"query": query, "limit": TOP, **({"fuzzy": True} if fuzzy else {})}
    m = server.request("tools/call", {"name": "search", "arguments": args})
    if "error" in m:
        return [], m["error"].get("message", "error")
    r = m["result"]
    s = r.get("structuredContent", {})
    if r.get("isError"):
        return [], s.get("error", {}).get("message", "error")
    # A short plain answer names what is one letter off its word after its
    # matches (`close`), shown to the agent in that order.
    shown = s.get("results", []) + s.get("close", [])
    return [(p if isinstance(p, str) else p["path"]).rstrip("/") for p in shown][:TOP], None


def fzf_top(paths_file, query):
    with open(paths_file) as f:
        r = subprocess.run(["fzf", "--filter", query, "--scheme=path"], stdin=f, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        return [], r.stderr.strip() or f"fzf exited {r.returncode}"
    return r.stdout.splitlines()[:TOP], None


def ferret_binary(given):
    """The binary to run, and how it was chosen."""
    if given:
        return Path(given), "given"
    if os.environ.get("FERRET_BIN"):
        return Path(os.environ["FERRET_BIN"]), "FERRET_BIN"
    out = subprocess.run(["cargo", "build", "-q", "-p", "ferret", "--message-format=json"],
                         cwd=REPO, check=True, stdout=subprocess.PIPE, text=True).stdout
    exe = [m["executable"] for m in map(json.loads, out.splitlines())
           if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "ferret"]
    return Path(exe[-1]), "built by cargo build -p ferret (debug) from " + git_head()


def git_head():
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "crates", "Cargo.toml", "Cargo.lock"],
                           cwd=REPO, capture_output=True, text=True).stdout
    return sha + (" with uncommitted changes to crates/" if dirty.strip() else "")


def run(args):
    tree = args.tree.resolve()
    only = args.only.split(",")
    if unknown := set(only) - set(SYSTEMS):
        raise SystemExit(f"--only takes {','.join(SYSTEMS)}; not {','.join(sorted(unknown))}")
    if "fzf" in only and not shutil.which("fzf"):
        sh(["apt-get", "install", "-y", "-qq", "fzf"], stdout=subprocess.DEVNULL)
    binary, how = ferret_binary(args.ferret)
    if not binary.is_file():
        raise SystemExit(f"no ferret binary at {binary}: build one (cargo build -p ferret) or name it with --ferret")
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    state = Path(tempfile.mkdtemp(prefix="ferret-retrieval-"))
    server = Server(tree, ["--no-persist", "--content-index", "off", "--state-dir", str(state)], state, binary)
    try:
        _, entries = server.wait_ready()
        files = indexed_files(server)
        seed = args.seed
        if args.queries:
            dumped = json.loads(args.queries.read_text())
            seed = dumped["seed"]
            queries = [{k: q[k] for k in ("kind", "query", "want", "unique")} for q in dumped["queries"]]
        else:
            queries = draw(files, args.per_kind, seed)
            if args.dump:
                head = json.dumps({"tree": str(tree), "seed": seed, "per_kind": args.per_kind})[:-1]
                args.dump.write_text(head + ', "queries": [\n' + ",\n".join(map(json.dumps, queries)) + "\n]}\n")
        paths_file = state / "paths.txt"
        paths_file.write_text("".join(f + "\n" for f in files))
        ask = {"fzf": lambda q: fzf_top(paths_file, q),
               "plain": lambda q: ferret_top(server, q, False),
               "fuzzy": lambda q: ferret_top(server, q, True)}
        started = time.perf_counter()
        for q in queries:
            q["top"], q["errors"] = {}, {}
            for who in only:
                q["top"][who], err = ask[who](q["query"])
                if err:
                    q["errors"][who] = err
        seconds = time.perf_counter() - started
    finally:
        server.close()
        shutil.rmtree(state, ignore_errors=True)
    fzf_version = subprocess.run(["fzf", "--version"], capture_output=True, text=True).stdout.strip() if "fzf" in only else None
    return {
        "tree": str(tree), "files": len(files), "entries": entries, "seed": seed,
        "queries_from": str(args.queries) if args.queries else f"drawn, {args.per_kind} per kind",
        "binary": str(binary), "binary_from": how, "version": version, "fzf": fzf_version,
        "machine": machine(), "seconds": round(seconds, 1),
        "gone": sorted({q["want"] for q in queries} - set(files)),
        "scores": score(queries, only), "ceiling": ceiling(queries, files), "misses": misses(queries, args.misses) if {"fzf", "plain"} <= set(only) else [],
        "queries": queries,
    }


def ceiling(queries, files):
    """The most any system that is not told which file is meant can expect,
    per kind: top-1 and top-5 counts (expected, so fractional). A query
    cannot tell the wanted file from the other files that could have been
    drawn with the same query (those `draw` may draw): for exact names,
    prefixes, initials and folder+words (made the same way from every file),
    the files whose own query is this one; for a typo or a dropped letter,
    the files of the same name; for reordered words (a word of the name and
    one of the folders, each picked at random), the files with the first
    word in their name and the second in their folders, each as likely as
    its chance to have been given this pair. The best a system can do is to
    put the likeliest first: top-1 is the largest share, top-5 the five
    largest."""
    drawable = [f for f in files if not NOT_TARGETS & set(f.split("/")[:-1])]
    made = Counter()
    for f in drawable:
        for kind, q in queries_for(f, random.Random(0)).items():
            if kind in ("exact", "prefix", "initials", "folder+words"):
                made[(kind, q)] += 1
    by_name = Counter(f.rsplit("/", 1)[-1] for f in drawable)
    words = []
    for f in drawable:
        stem = stem_of(f.rsplit("/", 1)[-1])
        long_stem = {w.lower() for w in words_of(stem) if len(w) >= 3 and not w.isdigit()}
        folder = {w.lower() for g in folders_of(f) for w in words_of(g) if len(w) >= 3 and not w.isdigit()}
        words.append((long_stem, folder))

    def shares(q):
        """The chances, among the files alike, that each was the one drawn."""
        if q["kind"] in ("typo", "dropped"):
            return [1.0] * max(1, by_name[q["want"].rsplit("/", 1)[-1]])
        if q["kind"] == "reordered":
            first, second = q["query"].split()[0], q["query"].split()[-1]
            w = [1 / (len(a) * len(b - {first})) for a, b in words if first in a and second in b and second != first]
            return w or [1.0]
        return [1.0] * max(1, made[(q["kind"], q["query"])])

    out = {}
    for kind in KINDS + ["all", "unique"]:
        qs = [q for q in queries if kind == "all" or kind == q["kind"] or (kind == "unique" and q["unique"])]
        top1 = top5 = 0.0
        for q in qs:
            w = sorted(shares(q), reverse=True)
            top1 += w[0] / sum(w)
            top5 += sum(w[:TOP]) / sum(w)
        out[kind] = {"n": len(qs), "top1": top1, "top5": top5}
    return out


def score(queries, only):
    """Per system, per kind, overall and over the files whose name no other
    file has ("unique"): queries, top-1 and top-5 hits, answers with no
    result at all (a match missing, not a ranking), errors."""
    out = {}
    for who in only:
        rows = {}
        for kind in KINDS + ["all", "unique"]:
            qs = [q for q in queries if kind == "all" or kind == q["kind"] or (kind == "unique" and q["unique"])]
            rows[kind] = {"n": len(qs),
                          "top1": sum(bool(q["top"][who]) and q["top"][who][0] == q["want"] for q in qs),
                          "top5": sum(q["want"] in q["top"][who] for q in qs),
                          "empty": sum(not q["top"][who] for q in qs),
                          "errors": sum(who in q["errors"] for q in qs)}
        out[who] = rows
    return out


def misses(queries, n):
    """Up to n queries fzf puts first and ferret plain does not, round-robin over
    the kinds, each for another file; in a kind, those where plain put another
    file first (ranking) before those it found nothing for (matching), and
    files whose name is unique before the others (fzf's tie-break can be luck)."""
    by_kind = {k: sorted((q for q in queries if q["kind"] == k and q["top"]["fzf"][:1] == [q["want"]]
                          and q["top"]["plain"][:1] != [q["want"]]),
                         key=lambda q: (not q["top"]["plain"], not q["unique"]))
               for k in KINDS}
    out, wanted = [], set()
    while len(out) < n and any(by_kind.values()):
        for k in KINDS:
            while by_kind[k] and by_kind[k][0]["want"] in wanted:
                by_kind[k].pop(0)
            if by_kind[k] and len(out) < n:
                q = by_kind[k].pop(0)
                wanted.add(q["want"])
                out.append({"kind": k, "query": q["query"], "want": q["want"],
                            "plain_first": (q["top"]["plain"] or [None])[0], "plain_error": q["errors"].get("plain")})
    return out


def show(r):
    pct = lambda a, n: f"{100 * a / n:.1f}%" if n else "n/a"
    print(f"## retrieval on {r['tree']}: {r['files']} files ({r['entries']} entries), seed {r['seed']}, queries {r['queries_from']}")
    print(f"ferret: {r['binary']} ({r['version']}; {r['binary_from']})")
    if r["fzf"]:
        print(f"fzf: {r['fzf']}")
    print(f"machine: {r['machine']}; {r['seconds']} s of queries\n")
    if r["gone"]:
        print(f"{len(r['gone'])} wanted files are no longer in the tree (their queries count as misses)\n")
    who = list(r["scores"])
    print("| kind | queries | " + " | ".join(f"{w} top-1 | {w} top-5" for w in who) + " | ceiling top-1 | top-5 |")
    print("| --- | ---: | " + " | ".join("---: | ---:" for _ in who) + " | ---: | ---: |")
    for kind in KINDS + ["all", "unique"]:
        n = r["scores"][who[0]][kind]["n"]
        cells = " | ".join(f"{pct(r['scores'][w][kind]['top1'], n)} | {pct(r['scores'][w][kind]['top5'], n)}" for w in who)
        c = r["ceiling"][kind]
        print(f"| {kind if kind != 'unique' else 'all, name unique in the tree'} | {n} | {cells} | {pct(c['top1'], n)} | {pct(c['top5'], n)} |")
    print("\n(ceiling: the most a system not told which file is meant can expect, among the files the query cannot tell apart; see `ceiling`)")
    a = {w: r["scores"][w]["all"] for w in who}
    print("\nno result at all: " + ", ".join(f"{w} {a[w]['empty']} of {a[w]['n']}" for w in who))
    errors = {w: a[w]["errors"] for w in who if a[w]["errors"]}
    if errors:
        print("\nerrors (counted as misses): " + ", ".join(f"{w} {n}" for w, n in errors.items()))
    if r["misses"]:
        print("\nfzf first, ferret plain not:\n")
        print("| kind | query | wanted | ferret plain's first |")
        print("| --- | --- | --- | --- |")
        for m in r["misses"]:
            first = f"`{m['plain_first']}`" if m["plain_first"] else ("error: " + m["plain_error"] if m["plain_error"] else "nothing")
            print(f"| {m['kind']} | `{m['query']}` | `{m['want']}` | {first} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("--per-kind", type=int, default=200, help="queries of each kind (default 200)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", default=",".join(SYSTEMS), help="systems to run, comma-separated: fzf,plain,fuzzy")
    given = ap.add_mutually_exclusive_group()
    given.add_argument("--dump", type=Path, help="write the query set drawn to this file (JSON)")
    given.add_argument("--queries", type=Path, help="run the query set a --dump wrote instead of drawing one")
    ap.add_argument("--misses", type=int, default=15, help="how many fzf-first, plain-not examples to list")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON object")
    ap.add_argument("--ferret", help="the ferret binary (default: FERRET_BIN, else the debug build)")
    args = ap.parse_args()
    r = run(args)
    if args.json:
        json.dump(r, sys.stdout, indent=1)
        print()
    else:
        show(r)


if __name__ == "__main__":
    main()
