#!/usr/bin/env python3
"""Never stale on a real tree: grep right after each change, over MCP.

    python3 bench/freshness.py SOURCE [--changes 90] [--seed 7]

SOURCE (a real source tree, such as the cargo registry's sources) is copied
to a temporary folder and served as users run ferret (`serve --stdio`,
defaults: the content index on). Once the content index is built, each round
makes one change in the copy (a file created in a folder made for it, as
`fresh_N/new_N.rs`, or in an existing folder; a file rewritten with a new
token; renamed; deleted) and at once, with no wait, greps for the token the
change added or removed (`literal`, `output: files`). An answer is stale when
its files differ from what is on disk. Prints the count of stale answers, the
content index's use, and the median grep time. Issue 25.
"""

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index import FERRET, machine  # noqa: E402
from stdio_client import StdioServer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source", type=Path)
    ap.add_argument("--changes", type=int, default=90)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="ferret-fresh-"))
    tree = work / "tree"
    shutil.copytree(args.source, tree, symlinks=True)
    files = [p for p in tree.rglob("*.rs") if p.is_file() and not p.is_symlink()]
    folders = sorted({p.parent for p in files})
    server = StdioServer([str(FERRET), "serve", "--stdio", "--root", str(tree)], work / "state")
    try:
        deadline = time.time() + 600
        while True:
            d = server.result("diagnostics", {}).get("structuredContent", {})
            ci = d.get("content_index", {})
            if d.get("index", {}).get("state", "").startswith("ready") and ci.get("state") == "ready":
                break
            if time.time() > deadline:
                sys.exit(f"the content index never got ready: {json.dumps(ci)[:300]}")
            time.sleep(0.5)
        tokens = {}  # path -> token it holds
        stale, times, used = [], [], 0
        for n in range(args.changes):
            kind = ["create-new-folder", "create", "rewrite", "rename", "delete"][n % 5]
            token = f"freshtok{n}x{rng.randrange(1 << 30):08x}"
            if kind == "create-new-folder":
                p = tree / f"fresh_{n}" / f"new_{n}.rs"
                p.parent.mkdir()
                p.write_text(f"const T: &str = \"{token}\";\n")
                tokens[p] = token
                want = {p}
            elif kind == "create":
                p = rng.choice(folders) / f"added_{n}.rs"
                p.write_text(f"const T: &str = \"{token}\";\n")
                tokens[p] = token
                want = {p}
            elif kind == "rewrite":
                p = rng.choice(list(tokens))
                old = tokens[p]
                p.write_text(f"const T: &str = \"{token}\";\n")
                tokens[p] = token
                # The old token is gone: grep for it, nothing must come back.
                token, want = old, set()
            elif kind == "rename":
                p = rng.choice(list(tokens))
                q = rng.choice(folders) / f"moved_{n}.rs"
                p.rename(q)
                tokens[q] = tokens.pop(p)
                token, want = tokens[q], {q}
            else:
                p = rng.choice(list(tokens))
                token = tokens.pop(p)
                p.unlink()
                want = set()
            t = time.perf_counter()
            r = server.result("grep", {"pattern": token, "literal": True, "output": "files"})
            times.append((time.perf_counter() - t) * 1000)
            s = r.get("structuredContent", {})
            got = {tree / f for f in s.get("files", [])}
            used += bool(s.get("content_index", {}).get("used"))
            if got != want:
                stale.append((n, kind, sorted(map(str, want)), sorted(map(str, got))))
        print(f"## freshness on a copy of {args.source} ({len(files)} .rs files, {len(folders)} folders)")
        print(f"ferret: {FERRET}; machine: {machine()}")
        print(f"{args.changes} changes, each grepped at once: {len(stale)} stale answers; "
              f"content index used for {used}; grep p50 {statistics.median(times):.1f} ms")
        for s in stale[:20]:
            print("stale:", s)
    finally:
        server.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
