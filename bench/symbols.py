#!/usr/bin/env python3
"""The symbols benchmark: ferret's `symbols` tool and `read`'s `outline` and
`symbol` modes against Universal Ctags, and their speed, over MCP.

    python3 bench/symbols.py [--bin PATH] [--sample 300] [--seed 7]
                             [--json /tmp/ferret-symbols-bench.json]
                             [--skip-accuracy] [--skip-speed] [--tree50k DIR]
                             [--corpus LABEL=LANG:DIR ...]

Accuracy, on code nobody here wrote (by default: six crates from the cargo
registry, anyio and pydantic from the project's venv, zod's and ajv's
TypeScript sources from .cache/clients/node_modules (their top-level `const`s
apart: zod's are a corpus of their own, as they outnumber the rest 2 to 1),
and tree-sitter's C library from the cargo registry (SQLite's amalgamation,
9.6 MB, is over ferret's 8 MiB a file); `--corpus` replaces the list). For each
corpus: `ctags --output-format=json --fields=+neKZ -R .` in its folder
(Debian's universal-ctags; installed with apt-get when missing), its tags kept
only in files whose extension ferret reads and only of the kinds in KEEP below
(definitions ferret covers: no fields, members that are not methods,
variables, enumerators, parameters, locals, imports, prototypes), anonymous
names dropped. One `ferret serve --stdio --root DIR --no-persist` on the
folder, then, for a seeded sample of at most `--sample` definitions:

  (a) `symbols {query: NAME, limit: 5}`: a hit is a result in the same file on
      ctags' line ±1, or whose lines contain it. Also with the container
      (`Scope::name`, ctags' `scope` field's last part) where ctags gives one.
  (b) `read {path, symbol: NAME}`: right when the symbol it reads starts on
      ctags' line ±1 and, where ctags gives an `end` (C, Python), the window
      ends on ctags' end (the window may start higher: ferret includes the
      comments, attributes and decorators above). NOT_UNIQUE is counted
      apart, and asked again as an agent would: qualified (`Scope::name`)
      where ctags has a scope, else (or when still ambiguous) by the line of
      the candidate on ctags' line (`symbol` with `start_line`).
  (c) `read {path, outline: true}` (every page) of every file with a kept
      definition: the share of ctags' definitions it lists (same name, ctags'
      line ±1 or within the symbol's lines); the median over files and the
      share of files at >= 90%.

Every miss is classified (not in ferret's outline of the file at all / in
it but on other lines / ranked below 5 / other) with examples.

Speed (unless `--skip-speed`): a tree of 50,000 real source files (every source
file of the cargo registry, then .cache, then /usr, hard-linked, else copied,
into a temporary folder, or `--tree50k DIR` as it is): the first `symbols`
call with `--symbols-early off` (which builds the table: every file parsed,
on all cores) and the p50 of 20 later calls with varied names; then with the
table built in the background and saved (`--symbols-early on`, a state
folder): the time until it is built, its file's size, and after a restart
the first call and the time until the table is read back and checked; extraction in MB/s (source bytes over
the first call); `read outline` p50 of 30 calls on the registry's .rs file
nearest 5,000 lines. Every server is stopped by its PID when done; the
temporary tree is removed.

Prints a summary table and writes every figure as JSON to `--json`.
"""

import argparse
import glob
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stdio_client import StdioServer  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HOME = Path.home()
REGISTRY = next(iter(sorted(glob.glob(str(HOME / ".cargo/registry/src/*")))), str(HOME / ".cargo/registry/src"))
SITE = REPO / ".cache/venv/lib/python3.11/site-packages"
NODE = REPO / ".cache/clients/node_modules"

# ferret's extensions (ferret-symbols' Lang::extensions) and ctags' language for each.
EXT_LANG = {
    "rs": "Rust", "py": "Python", "pyi": "Python", "js": "JavaScript", "jsx": "JavaScript",
    "mjs": "JavaScript", "cjs": "JavaScript", "ts": "TypeScript", "mts": "TypeScript",
    "cts": "TypeScript", "tsx": "TypeScript", "go": "Go", "java": "Java", "c": "C",
    "cc": "C++", "cpp": "C++", "cxx": "C++", "c++": "C++", "hpp": "C++", "hh": "C++",
    "hxx": "C++", "h++": "C++", "h": "C++",
}

# The ctags kinds kept, per ctags language (`ctags --list-kinds-full=LANG`).
# Rust's `variable` is a `static` (ctags 5.9 tags no `const` items); Python's
# `member` is a method (`def` in a class); TypeScript's `constant` is a
# `const` and is kept only at the top level (no ctags scope).
KEEP = {
    "Rust": {"function", "method", "struct", "enum", "interface", "typedef", "module", "macro", "variable"},
    "Python": {"class", "function", "member"},
    "TypeScript": {"class", "function", "generator", "method", "enum", "interface", "alias", "namespace", "constant"},
    "JavaScript": {"class", "function", "generator", "method", "constant"},
    "C": {"function", "macro", "struct", "enum", "typedef", "union"},
    "C++": {"function", "macro", "struct", "enum", "typedef", "union", "class", "namespace"},
}
TOP_LEVEL_ONLY = {("TypeScript", "constant"), ("JavaScript", "constant")}
ANONYMOUS = re.compile(r"^(__anon|AnonymousFunction|anon[A-Z0-9_])")

CRATES = ["regex-syntax", "serde_core", "tokio", "hashbrown", "clap_builder", "syn"]


def newest(prefix):
    """The registry's folder for crate `prefix` (the highest version, by name)."""
    found = [p for p in glob.glob(f"{REGISTRY}/{prefix}-[0-9]*") if re.fullmatch(re.escape(prefix) + r"-\d.*", os.path.basename(p))]
    return sorted(found, key=lambda p: [int(x) if x.isdigit() else 0 for x in re.split(r"[.-]", os.path.basename(p)[len(prefix) + 1:])])[-1] if found else None


def default_corpora():
    out = []
    for c in CRATES:
        d = newest(c)
        if d:
            out.append((os.path.basename(d), "rust", d))
    for p in ("anyio", "pydantic"):
        if (SITE / p).is_dir():
            out.append((p, "python", str(SITE / p)))
    for p in ("zod/src", "ajv/lib"):
        if (NODE / p).is_dir():
            out.append((p, "typescript", str(NODE / p), "no-constants"))
    if (NODE / "zod/src").is_dir():
        out.append(("zod/src top-level consts", "typescript", str(NODE / "zod/src"), "constants"))
    # tree-sitter's C library (the crate holds lib/src as src/): the oldest
    # version in the registry (0.25 here).
    ts_versions = sorted(glob.glob(f"{REGISTRY}/tree-sitter-0.*"))
    if ts_versions and os.path.isdir(os.path.join(ts_versions[0], "src")):
        out.append((os.path.basename(ts_versions[0]) + "/src", "c", os.path.join(ts_versions[0], "src")))
    return out


def ensure_ctags():
    ctags = shutil.which("ctags")
    if ctags and b"Universal Ctags" in subprocess.run([ctags, "--version"], capture_output=True).stdout:
        return ctags
    subprocess.run(["apt-get", "install", "-y", "universal-ctags"], check=True, stdout=subprocess.DEVNULL)
    return shutil.which("ctags")


def ext_of(path):
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[1].lower() if "." in name else None


TOP_CONST = re.compile(r"^/\^(export\s+)?(declare\s+)?(const|let|var)\s+([\w$]+)")


def ctags_defs(ctags, root, only="all"):
    """ctags' definitions in `root` of the kept kinds: dicts with path
    (relative), name, kind, line, end (or None), scope (or None), lang."""
    cmd = [ctags, "--output-format=json", "--fields=+neKZ", "-R", "-f", "-", "."]
    p = subprocess.run(cmd, cwd=root, capture_output=True)
    out = []
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        try:
            t = json.loads(line)
        except json.JSONDecodeError:
            continue
        if t.get("_type") != "tag":
            continue
        path = t["path"][2:] if t["path"].startswith("./") else t["path"]
        if any(part.startswith(".") for part in path.split("/")[:-1]):
            continue
        lang = EXT_LANG.get(ext_of(path) or "")
        if not lang or t["kind"] not in KEEP.get(lang, ()):
            continue
        if (lang, t["kind"]) in TOP_LEVEL_ONLY and t.get("scope"):
            continue
        if ANONYMOUS.match(t["name"]):
            continue
        if (only == "constants") != (t["kind"] == "constant") and only != "all":
            continue
        # ctags calls every TypeScript `const` a constant, the locals of a
        # function or a test's callback too; a module's own are the ones
        # that start a line (ferret's top-level bindings). And it names a
        # type annotation's namespace as one (`export const X: core.Y = …`
        # gives `core`): only the name the line declares is kept.
        if lang in ("TypeScript", "JavaScript") and t["kind"] == "constant":
            m = TOP_CONST.match(t.get("pattern", ""))
            if not m or m.group(4) != t["name"]:
                continue
        out.append({"path": path, "name": t["name"], "kind": t["kind"], "line": t["line"],
                    "end": t.get("end"), "scope": t.get("scope"), "lang": lang})
    # ctags may say the same thing twice (a typedef and its struct are two).
    seen, uniq = set(), []
    for d in out:
        k = (d["path"], d["name"], d["kind"], d["line"])
        if k not in seen:
            seen.add(k)
            uniq.append(d)
    return uniq, " ".join(cmd)


def fold(name):
    return "".join(c for c in name.lower() if c.isalnum())


class Server(StdioServer):
    """`ferret serve --stdio --root DIR --no-persist` (see `stdio_client`)."""

    def __init__(self, binary, root, state, persist=False, early=False):
        self.argv = [binary, "serve", "--stdio", "--root", str(root), "--max-response-bytes", "64M",
                     "--symbols-early", "on" if early else "off"]
        if not persist:
            self.argv.append("--no-persist")
        super().__init__(self.argv, state)

    def call(self, tool, args):
        """(structuredContent, isError)."""
        r = self.result(tool, args)
        return r.get("structuredContent") or {}, bool(r.get("isError"))

    def wait(self):
        while True:
            d, _ = self.call("diagnostics", {})
            if d.get("index", {}).get("state") == "ready":
                return d
            time.sleep(0.1)

    def built(self):
        """The diagnostics' `symbols` once the background build is done."""
        while True:
            d, _ = self.call("diagnostics", {})
            sy = d.get("symbols", {})
            if sy.get("background", {}).get("state") == "done" and sy.get("state") == "ready":
                return sy
            time.sleep(0.1)

    def stop(self):
        """Stopped by its PID: stdin closed, then SIGKILL to that PID if it lingers."""
        self.close()


def error_code(sc):
    e = sc.get("error")
    if isinstance(e, dict):
        return e.get("code")
    return sc.get("code") or (e if isinstance(e, str) else None)


class Paths:
    """ferret's paths as it shows them, to and from paths relative to the root."""

    def __init__(self, shown_sample, rel_sample):
        self.prefix = ""
        if shown_sample and rel_sample and shown_sample.endswith(rel_sample):
            self.prefix = shown_sample[: len(shown_sample) - len(rel_sample)]

    def rel(self, shown):
        return shown[len(self.prefix):] if self.prefix and shown.startswith(self.prefix) else shown

    def shown(self, rel):
        return self.prefix + rel


def near(sym_line, sym_end, line):
    return abs(sym_line - line) <= 1 or (sym_line <= line <= (sym_end or sym_line))


def outline_all(server, shown):
    """Every symbol of the file's outline (every page), or an error code."""
    syms, start = [], 1
    while True:
        args = {"path": shown, "outline": True}
        if start > 1:
            args["start_line"] = start
        sc, err = server.call("read", args)
        if err:
            return None, error_code(sc) or str(sc)[:120], sc
        syms += sc.get("symbols", [])
        nxt = sc.get("next_start_line")
        if not nxt or nxt <= start:
            return syms, None, sc
        start = nxt


def short(s):
    c = f" in {s['container']}" if s.get("container") else ""
    return f"{s.get('kind')} {s.get('name')}{c} {s.get('line')}-{s.get('end_line')}"


def accuracy(args, ctags, label, lang, root, only="all"):
    defs, cmd = ctags_defs(ctags, root, only)
    files = sorted({d["path"] for d in defs})
    kinds = Counter(d["kind"] for d in defs)
    src_files = sum(1 for dp, dn, fn in os.walk(root) for f in fn
                    if EXT_LANG.get(ext_of(f) or "") and not any(x.startswith(".") for x in os.path.relpath(dp, root).split(os.sep) if x != "."))
    print(f"\n## {label} ({lang}): {root}\n{src_files} source files, {len(files)} with kept definitions, {len(defs)} kept ctags definitions "
          f"({', '.join(f'{k} {n}' for k, n in kinds.most_common())})", flush=True)
    rng = random.Random(f"{args.seed}:{label}")
    sample = defs if len(defs) <= args.sample else rng.sample(defs, args.sample)
    state = Path(tempfile.mkdtemp(prefix="ferret-symbols-bench-"))
    server = Server(args.bin, root, state)
    try:
        server.wait()
        # The first call builds the table; it also tells how ferret shows paths.
        t = time.perf_counter()
        probe, _ = server.call("symbols", {"query": sample[0]["name"], "limit": 50})
        build_ms = (time.perf_counter() - t) * 1000
        paths = Paths(None, None)
        for r in probe.get("results", []):
            for d in defs:
                if d["name"] == r["name"] and r["path"].endswith(d["path"]):
                    paths = Paths(r["path"], d["path"])
                    break
            if paths.prefix:
                break
        if not paths.prefix:
            # One root: ferret may show paths bare; check with a file's outline.
            _, e, _ = outline_all(server, files[0])
            if e:
                paths.prefix = os.path.basename(root.rstrip("/")) + "/"
        # The outlines, of every file with a kept definition (c), also used to
        # classify the misses of (a) and (b).
        outlines, outline_err = {}, Counter()
        for f in files:
            syms, e, _ = outline_all(server, paths.shown(f))
            if e:
                outline_err[e] += 1
                outlines[f] = None
            else:
                outlines[f] = syms
        by_file = defaultdict(list)
        for d in defs:
            by_file[d["path"]].append(d)
        per_file, listed_all, listed_kind, c_miss = [], 0, Counter(), []
        for f, ds in by_file.items():
            syms = outlines.get(f) or []
            n = 0
            for d in ds:
                if any((s["name"] == d["name"] or fold(s["name"]) == fold(d["name"])) and near(s["line"], s.get("end_line"), d["line"]) for s in syms):
                    n += 1
                    listed_kind[d["kind"]] += 1
                else:
                    c_miss.append(d)
            listed_all += n
            per_file.append(n / len(ds))
        # (a) and (b) on the sample.
        a_hit, a_hit_named, a_q_hit, a_q_asked, a_rank = 0, 0, 0, 0, Counter()
        a_kind, b_kind, n_kind = Counter(), Counter(), Counter()
        b_ok, b_exact, b_unique_ok, b_not_unique, b_nu_resolved, b_nu_asked, b_not_found, b_other = 0, 0, 0, 0, 0, 0, 0, Counter()
        b_start_higher, b_end_checked, b_end_ok = 0, 0, 0
        a_misses, b_misses = [], []
        # A name ctags finds more than 5 times cannot have every one in a
        # top 5 by name alone: (a) is also given over the others.
        name_count = Counter(fold(d["name"]) for d in defs)
        a_few_n, a_few_hit = 0, 0
        # The most a ranking by name alone can expect: a name ctags finds k
        # times puts the one meant in its top 5 at best 5 times in k, when
        # nothing tells which of them is meant.
        a_ceiling = sum(min(1.0, 5 / name_count[fold(d["name"])]) for d in sample)
        for d in sample:
            n_kind[d["kind"]] += 1
            few = name_count[fold(d["name"])] <= 5
            a_few_n += few
            shown = paths.shown(d["path"])
            sc, err = server.call("symbols", {"query": d["name"], "limit": 5})
            res = sc.get("results", []) if not err else []
            rank = next((i for i, r in enumerate(res) if paths.rel(r["path"]) == d["path"] and near(r["line"], r.get("end_line"), d["line"])), None)
            if rank is not None:
                a_hit += 1
                a_few_hit += few
                a_kind[d["kind"]] += 1
                a_rank[rank + 1] += 1
                if fold(res[rank]["name"]) == fold(d["name"]):
                    a_hit_named += 1
            else:
                a_misses.append((d, res, sc.get("total")))
            if d["scope"]:
                a_q_asked += 1
                sep = "." if d["lang"] in ("Python", "TypeScript", "JavaScript") else "::"
                q = d["scope"].replace("::", ".").split(".")[-1] + sep + d["name"]
                sc2, err2 = server.call("symbols", {"query": q, "limit": 5})
                if not err2 and any(paths.rel(r["path"]) == d["path"] and near(r["line"], r.get("end_line"), d["line"]) for r in sc2.get("results", [])):
                    a_q_hit += 1
            # (b)
            sc, err = server.call("read", {"path": shown, "symbol": d["name"]})
            code = error_code(sc) if err else None
            counted_unique = True
            if code == "NOT_UNIQUE":
                # As an agent would: qualify the name where ctags gives a
                # scope; else (or when that is still ambiguous) take the
                # candidate it means from the list and ask for it by its
                # line, as the error's hint says.
                b_not_unique += 1
                b_nu_asked += 1
                counted_unique = False
                candidates = sc.get("candidates", [])
                if d["scope"]:
                    q = d["scope"].replace("::", ".").split(".")[-1] + "::" + d["name"]
                    sc, err = server.call("read", {"path": shown, "symbol": q})
                    code = error_code(sc) if err else None
                if code in ("NOT_UNIQUE", "NOT_FOUND"):
                    pick = next((c for c in candidates if near(c["line"], c.get("end_line"), d["line"])), None)
                    if pick is None:
                        b_misses.append((d, "NOT_UNIQUE, no candidate on ctags' line", [short(c) for c in candidates][:4]))
                        continue
                    sc, err = server.call("read", {"path": shown, "symbol": d["name"], "start_line": pick["line"]})
                    code = error_code(sc) if err else None
            if err:
                if code == "NOT_FOUND":
                    b_not_found += 1
                else:
                    b_other[code or "?"] += 1
                b_misses.append((d, code or str(sc)[:100], [short(s) for s in sc.get("near_symbols", sc.get("candidates", []))][:3]))
                continue
            s = sc.get("symbol", {})
            start_ok = abs(s.get("line", -99) - d["line"]) <= 1 and sc.get("start_line", 1 << 30) <= d["line"]
            end_ok = True
            if d["end"]:
                b_end_checked += 1
                end_ok = sc.get("end_line") == d["end"]
                b_end_ok += end_ok
            if start_ok and end_ok:
                b_ok += 1
                b_kind[d["kind"]] += 1
                if counted_unique:
                    b_unique_ok += 1
                else:
                    b_nu_resolved += 1
                if s.get("line") == d["line"] and (not d["end"] or s.get("end_line") == d["end"]):
                    b_exact += 1
                if sc.get("start_line", 0) < s.get("line", 0):
                    b_start_higher += 1
            else:
                b_misses.append((d, f"read {sc.get('start_line')}-{sc.get('end_line')}, symbol {short(s)}", []))
        diag, _ = server.call("diagnostics", {})
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)

    def classify(d):
        syms = outlines.get(d["path"])
        if syms is None:
            return "file refused/unparsed"
        same = [s for s in syms if s["name"] == d["name"] or fold(s["name"]) == fold(d["name"])]
        if not same:
            at = [s for s in syms if abs(s["line"] - d["line"]) <= 1]
            return "not extracted" + (" (other name on that line)" if at else "")
        if not any(near(s["line"], s.get("end_line"), d["line"]) for s in same):
            return "extracted on other lines"
        return "extracted, but not in top 5"

    a_class = Counter(classify(d) for d, _, _ in a_misses)
    c_class = Counter((classify(d), d["kind"]) for d in c_miss)
    n = len(sample)
    out = {
        "label": label, "lang": lang, "root": root, "kinds_filter": only, "ctags_command": f"cd {root} && {cmd}",
        "source_files": src_files, "files_with_definitions": len(files), "definitions": len(defs),
        "kinds": dict(kinds), "sampled": n, "first_symbols_call_ms": round(build_ms, 1),
        "table": diag.get("symbols"),
        "a_top5": a_hit / n, "a_top5_hits": a_hit, "a_ceiling": a_ceiling / n, "a_ceiling_hits": a_ceiling,
        "a_top5_few": (a_few_hit / a_few_n) if a_few_n else None, "a_few_asked": a_few_n, "a_top5_name_checked": a_hit_named / n,
        "a_rank": dict(sorted(a_rank.items())),
        "a_qualified_top5": (a_q_hit / a_q_asked) if a_q_asked else None, "a_qualified_asked": a_q_asked,
        "a_by_kind": {k: f"{a_kind[k]}/{n_kind[k]}" for k in n_kind},
        "a_miss_classes": dict(a_class),
        "b_right": b_ok / n, "b_right_n": b_ok, "b_exact_lines": b_exact / n,
        "b_right_first_ask": b_unique_ok / n,
        "b_not_unique": b_not_unique, "b_not_unique_qualified": b_nu_asked, "b_not_unique_resolved": b_nu_resolved,
        "b_not_found": b_not_found, "b_other_errors": dict(b_other),
        "b_end_checked": b_end_checked, "b_end_ok": b_end_ok, "b_window_starts_above_symbol": b_start_higher,
        "b_by_kind": {k: f"{b_kind[k]}/{n_kind[k]}" for k in n_kind},
        "c_files": len(per_file), "c_median": statistics.median(per_file) if per_file else None,
        "c_files_at_90": sum(1 for x in per_file if x >= 0.9) / len(per_file) if per_file else None,
        "c_pooled": listed_all / len(defs) if defs else None,
        "c_by_kind": {k: f"{listed_kind[k]}/{kinds[k]}" for k in kinds},
        "c_outline_errors": dict(outline_err),
        "c_miss_classes": {f"{a} / {k}": v for (a, k), v in c_class.most_common()},
        "examples_a": [
            {"file": d["path"], "name": d["name"], "ctags": f"{d['kind']} line {d['line']}" + (f"-{d['end']}" if d["end"] else "") + (f" scope {d['scope']}" if d["scope"] else ""),
             "class": classify(d), "ferret_top5": [f"{paths.rel(r['path'])}:{short(r)} ({r.get('match')})" for r in res], "total": tot}
            for d, res, tot in a_misses[:40]],
        "examples_b": [
            {"file": d["path"], "name": d["name"], "ctags": f"{d['kind']} line {d['line']}" + (f"-{d['end']}" if d["end"] else ""), "ferret": what, "more": more}
            for d, what, more in b_misses[:40]],
        "examples_c": [
            {"file": d["path"], "name": d["name"], "ctags": f"{d['kind']} line {d['line']}" + (f"-{d['end']}" if d["end"] else "") + (f" scope {d['scope']}" if d["scope"] else ""),
             "class": classify(d),
             "ferret_near": [short(s) for s in (outlines.get(d["path"]) or []) if abs(s["line"] - d["line"]) <= 2][:3]}
            for d in rng.sample(c_miss, min(40, len(c_miss)))],
    }
    print(f"ferret paths shown as {paths.prefix!r}+relative; table {out['table']}; first symbols call {build_ms:.0f} ms")
    print(f"(a) top5 {a_hit}/{n} = {out['a_top5']:.1%} (ceiling by name alone {out['a_ceiling']:.1%}; name also equal: {out['a_top5_name_checked']:.1%}); "
          f"names ctags finds <= 5 times: {a_few_hit}/{a_few_n}; ranks {out['a_rank']}; "
          f"qualified {a_q_hit}/{a_q_asked}; misses: {dict(a_class)}")
    print(f"(b) right {b_ok}/{n} = {out['b_right']:.1%} (first ask {out['b_right_first_ask']:.1%}, exact lines {out['b_exact_lines']:.1%}); "
          f"NOT_UNIQUE {b_not_unique} (asked again qualified or by line, then right {b_nu_resolved}); NOT_FOUND {b_not_found}; other {dict(b_other)}; "
          f"end checked {b_end_checked}, right {b_end_ok}")
    print(f"(c) files {len(per_file)}: median {out['c_median']:.1%}, files >= 90% {out['c_files_at_90']:.1%}, pooled {out['c_pooled']:.1%}; "
          f"by kind {out['c_by_kind']}; outline errors {dict(outline_err)}")
    return out


# ---------------------------------------------------------------------------
# Speed


def gather_sources(limit):
    """(source path, name in the tree): the registry's source files, then
    .cache's, then /usr's, sorted, until `limit`."""
    out = []
    for tag, base in (("registry", REGISTRY), ("cache", str(REPO / ".cache")), ("usr", "/usr")):
        for dp, dn, fn in os.walk(base):
            dn[:] = sorted(d for d in dn if not d.startswith(".") or (dp == str(REPO) and d == ".cache"))
            for f in sorted(fn):
                if not EXT_LANG.get(ext_of(f) or "") or f.startswith("."):
                    continue
                p = os.path.join(dp, f)
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                out.append((p, os.path.join(tag, os.path.relpath(p, base))))
                if len(out) >= limit:
                    return out
    return out


def make_tree(dest, limit):
    linked = copied = size = 0
    srcs = gather_sources(limit)
    for src, rel in srcs:
        d = dest / rel
        d.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, d)
            linked += 1
        except OSError:
            shutil.copy2(src, d)
            copied += 1
        size += os.path.getsize(d)
    return {"files": len(srcs), "bytes": size, "hard_linked": linked, "copied": copied,
            "by_part": dict(Counter(rel.split("/")[0] for _, rel in srcs)),
            "by_ext": dict(Counter(ext_of(rel) for _, rel in srcs).most_common(12))}


def tree_stats(tree):
    files = size = parsed_bytes = 0
    for dp, dn, fn in os.walk(tree):
        for f in fn:
            p = os.path.join(dp, f)
            if os.path.islink(p):
                continue
            files += 1
            s = os.path.getsize(p)
            size += s
            if EXT_LANG.get(ext_of(f) or "") and s <= 8 << 20:
                parsed_bytes += s
    return files, size, parsed_bytes


def nearest_5000_line_file():
    best = None
    for dp, dn, fn in os.walk(REGISTRY):
        for f in fn:
            if f.endswith(".rs"):
                p = os.path.join(dp, f)
                try:
                    n = sum(1 for _ in open(p, "rb"))
                except OSError:
                    continue
                if best is None or abs(n - 5000) < abs(best[1] - 5000):
                    best = (p, n)
    return best


def speed(args):
    work = None
    if args.tree50k:
        tree = Path(args.tree50k).resolve()
        made = None
    else:
        work = Path(tempfile.mkdtemp(prefix="ferret-symbols-50k-"))
        tree = work / "tree"
        t = time.perf_counter()
        made = make_tree(tree, 50_000)
        print(f"\n## speed: made {tree} in {time.perf_counter() - t:.1f} s: {made}", flush=True)
    files, size, parsed_bytes = tree_stats(tree)
    state = Path(tempfile.mkdtemp(prefix="ferret-symbols-bench-"))
    names = ["Parser", "new", "parse_args", "HashMap", "read_to_end", "Visitor", "serialize", "spawn_blocking",
             "LinkedList", "sqlite3_open", "ts_parser_parse", "Request", "Path", "urlopen", "defaultdict",
             "ZodString", "TreeCursor", "from_str", "Error", "json_loads", "Interval", "with_capacity"]
    out = {"tree": str(tree), "tree_made": made, "files": files, "bytes": size, "source_bytes_parsed_at_most": parsed_bytes}
    server = Server(args.bin, tree, state)
    try:
        t = time.perf_counter()
        d = server.wait()
        out["index_ready_s"] = round(time.perf_counter() - t, 2)
        out["index"] = {k: d["index"].get(k) for k in ("state", "files", "folders") if k in d["index"]}
        t = time.perf_counter()
        first, err = server.call("symbols", {"query": "Parser"})
        out["first_call_ms"] = round((time.perf_counter() - t) * 1000, 1)
        if err:
            raise SystemExit(f"symbols: {first}")
        diag, _ = server.call("diagnostics", {})
        out["table"] = diag.get("symbols")
        times = []
        for q in names[1:21]:
            t = time.perf_counter()
            server.call("symbols", {"query": q})
            times.append((time.perf_counter() - t) * 1000)
        out["later_calls_ms"] = [round(x, 1) for x in times]
        out["later_p50_ms"] = round(statistics.median(times), 1)
        out["later_max_ms"] = round(max(times), 1)
        out["mb_per_s"] = round(parsed_bytes / 1e6 / (out["first_call_ms"] / 1000), 2)
        out["cores"] = os.cpu_count()
        out["rss"] = server.proc_status()
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
    # Built in the background and saved, then read back after a restart.
    state = Path(tempfile.mkdtemp(prefix="ferret-symbols-bench-"))
    try:
        early = {}
        t = time.perf_counter()
        server = Server(args.bin, tree, state, persist=True, early=True)
        try:
            server.wait()
            early["index_ready_s"] = round(time.perf_counter() - t, 2)
            sy = server.built()
            early["built_s"] = round(time.perf_counter() - t, 2)
            early["background_ms"] = sy["background"].get("ms")
            early["table_bytes"] = os.path.getsize(sy["saved_to"])
            early["rss_built"] = server.proc_status()
        finally:
            t = time.perf_counter()
            server.stop()
            early["stop_s"] = round(time.perf_counter() - t, 2)
        t = time.perf_counter()
        server = Server(args.bin, tree, state, persist=True, early=True)
        try:
            server.wait()
            early["restart_index_ready_s"] = round(time.perf_counter() - t, 2)
            c = time.perf_counter()
            _, err = server.call("symbols", {"query": "Parser"})
            early["restart_first_call_ms"] = round((time.perf_counter() - c) * 1000, 1)
            sy = server.built()
            early["restart_built_s"] = round(time.perf_counter() - t, 2)
            early["restart_read_back_files"] = sy.get("read_back_files")
            early["restart_background_ms"] = sy["background"].get("ms")
            early["rss_restarted"] = server.proc_status()
        finally:
            server.stop()
        out["early"] = early
    finally:
        shutil.rmtree(state, ignore_errors=True)
        if work:
            shutil.rmtree(work, ignore_errors=True)
    # read outline of a ~5,000-line file.
    path, lines = nearest_5000_line_file()
    root = os.path.dirname(path)
    state = Path(tempfile.mkdtemp(prefix="ferret-symbols-bench-"))
    server = Server(args.bin, root, state)
    try:
        server.wait()
        name = os.path.basename(path)
        sc, err = server.call("read", {"path": name, "outline": True})
        if err:
            name = os.path.basename(root) + "/" + name
            sc, err = server.call("read", {"path": name, "outline": True})
        times = []
        for _ in range(30):
            t = time.perf_counter()
            server.call("read", {"path": name, "outline": True})
            times.append((time.perf_counter() - t) * 1000)
        out["outline"] = {"file": path, "lines": lines, "bytes": os.path.getsize(path), "total": sc.get("total"),
                          "count": sc.get("count"), "error": sc if err else None,
                          "p50_ms": round(statistics.median(times), 2), "max_ms": round(max(times), 2)}
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=str(REPO / "target" / "release" / "ferret"))
    ap.add_argument("--sample", type=int, default=300, help="definitions asked per corpus (seeded sample)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", default="/tmp/ferret-symbols-bench.json")
    ap.add_argument("--skip-accuracy", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--tree50k", help="a tree to time instead of the hard-linked 50,000 files")
    ap.add_argument("--corpus", action="append", default=[], help="LABEL=LANG:DIR (replaces the default corpora)")
    args = ap.parse_args()
    ctags = ensure_ctags()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    report = {"machine": f"{platform.machine()}, {os.cpu_count()} cores ({cpu}), {platform.platform()}",
              "ferret": subprocess.run([args.bin, "--version"], capture_output=True, text=True).stdout.strip(),
              "ctags": subprocess.run([ctags, "--version"], capture_output=True, text=True).stdout.splitlines()[0],
              "command": " ".join([sys.executable, *sys.argv]), "sample": args.sample, "seed": args.seed,
              "keep_kinds": {k: sorted(v) for k, v in KEEP.items()}}
    print(f"machine: {report['machine']}\nferret: {report['ferret']}\nctags: {report['ctags']}")
    corpora = default_corpora()
    if args.corpus:
        corpora = []
        for spec in args.corpus:
            label, _, rest = spec.partition("=")
            lang, _, d = rest.partition(":")
            corpora.append((label, lang, d))
    if not args.skip_accuracy:
        report["corpora"] = [accuracy(args, ctags, *c) for c in corpora]
    if not args.skip_speed:
        report["speed"] = speed(args)
    Path(args.json).write_text(json.dumps(report, indent=1))
    summary(report)
    print(f"\nJSON: {args.json}")


def summary(r):
    print("\n# Summary\n")
    if r.get("corpora"):
        print(f"{'corpus':<26}{'files':>6}{'defs':>7}{'asked':>6}{'(a)top5':>9}{'ceil.':>7}{'<=5x':>7}{'qual.':>7}{'(b)read':>9}{'!uniq':>6}{'(c)med':>8}{'>=90%':>7}{'pooled':>8}")
        for c in r["corpora"]:
            q = f"{c['a_qualified_top5']:.0%}" if c["a_qualified_top5"] is not None else "-"
            few = f"{c['a_top5_few']:.0%}" if c.get("a_top5_few") is not None else "-"
            print(f"{c['label']:<26}{c['source_files']:>6}{c['definitions']:>7}{c['sampled']:>6}{c['a_top5']:>9.1%}{c['a_ceiling']:>7.1%}{few:>7}{q:>7}"
                  f"{c['b_right']:>9.1%}{c['b_not_unique']:>6}{c['c_median']:>8.1%}{c['c_files_at_90']:>7.1%}{c['c_pooled']:>8.1%}")
        tot = lambda k: sum(c[k] for c in r["corpora"])  # noqa: E731
        n = tot("sampled")
        few_n = sum(c.get("a_few_asked", 0) for c in r["corpora"])
        few_hit = sum(round((c.get("a_top5_few") or 0) * c.get("a_few_asked", 0)) for c in r["corpora"])
        few = f"{few_hit / few_n:.0%}" if few_n else "-"
        q_n = sum(c.get("a_qualified_asked") or 0 for c in r["corpora"])
        q_hit = sum(round((c.get("a_qualified_top5") or 0) * (c.get("a_qualified_asked") or 0)) for c in r["corpora"])
        qual = f"{q_hit / q_n:.0%}" if q_n else "-"
        print(f"{'all (pooled)':<26}{tot('source_files'):>6}{tot('definitions'):>7}{n:>6}{tot('a_top5_hits') / n:>9.1%}{tot('a_ceiling_hits') / n:>7.1%}{few:>7}{qual:>7}"
              f"{tot('b_right_n') / n:>9.1%}{tot('b_not_unique'):>6}")
        print("targets: (a) >= 90% in the top 5 (ceil.: the most a ranking by name alone can expect; <=5x: over names ctags finds at most 5 times;"
              " qual.: asked as Scope::name where ctags gives a scope); (b) >= 90% read exactly; (c) >= 90% listed per file")
    s = r.get("speed")
    if s:
        print(f"\nspeed, {s['cores']} cores: tree {s['files']} files, {s['bytes'] / 2**20:.0f} MiB "
              f"({s['source_bytes_parsed_at_most'] / 2**20:.0f} MiB source <= 8 MiB a file); table {s['table']}")
        print(f"  symbols first call (builds the table): {s['first_call_ms'] / 1000:.2f} s -> {s['mb_per_s']} MB/s on {s['cores']} cores")
        print(f"  symbols later calls: p50 {s['later_p50_ms']} ms, max {s['later_max_ms']} ms (20 names)")
        e = s.get("early")
        if e:
            print(f"  built in the background: ready {e['built_s']} s after start (index {e['index_ready_s']} s; build {e['background_ms']} ms), "
                  f"saved table {e['table_bytes'] / 2**20:.1f} MiB, stop {e['stop_s']} s")
            print(f"  after a restart: index {e['restart_index_ready_s']} s, first symbols call {e['restart_first_call_ms']} ms, "
                  f"table read back and checked {e['restart_built_s']} s after start ({e['restart_read_back_files']} files read back)")
        o = s["outline"]
        print(f"  read outline {o['file']} ({o['lines']} lines, {o['total']} definitions): p50 {o['p50_ms']} ms, max {o['max_ms']} ms (target <= 20 ms)")


if __name__ == "__main__":
    main()
