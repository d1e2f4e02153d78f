#!/usr/bin/env python3
"""What an agent's model reads: the bytes a tool result puts in its context.

Runs a fixed set of agent steps (orient, find a file by name twice, grep a
symbol, read a 200-line window, list a folder, a missing file) on a real tree
(the source of the rmcp crate ferret is built on, copied from cargo's registry:
pinned by Cargo.lock, there after any build) against ferret and, where they can
do the step, the official filesystem server and emperor-folder, all over stdio
through the official Python SDK.

For each step it counts two figures:
  structured  what hosts that hand the model structuredContent (as JSON) show,
              e.g. Claude Code: the compact JSON of structuredContent when a
              success has it, else (and for every failure) the text blocks;
  text        what hosts that show the text content show: the text blocks.

    python3 bench/context.py                       # ferret and the filesystem server
    python3 bench/context.py --ferret OLD --label before   # another ferret binary
    python3 bench/context.py --emperor PATH        # also emperor-folder (cargo install emperor-folder@0.1.3)

Then, ferret alone, the bytes to find and read one function: a grep for its
definition plus a read of its file (as without symbols), against `symbols` by
name plus `read` with `symbol` (issue 28's target: <= 0.3x).

Installs @modelcontextprotocol/server-filesystem (pinned) with npm into
.cache/bench/. Prints a table and writes JSON next to it (--out).
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FS_PACKAGE = "@modelcontextprotocol/server-filesystem@2026.8.31"
RMCP = "rmcp-3.11.0"

# Each step: what an agent wants, and how each server is asked for it
# (None: that server has no tool for it). Paths for the filesystem servers are
# absolute ({root}), as they want them; ferret takes paths relative to its root.
STEPS = [
    ("orient: list the top folder",
     ("list", {"path": "."}),
     ("list_directory", {"path": "{root}"}),
     ("list", {"path": "."})),
    ("find by name: *streamable_http*",
     ("search", {"query": "*streamable_http*"}),
     ("search_files", {"path": "{root}", "pattern": "**/*streamable_http*"}),
     ("list", {"recursive": True, "glob": "**/*streamable_http*"})),
    ("find by name: *task*",
     ("search", {"query": "*task*"}),
     ("search_files", {"path": "{root}", "pattern": "**/*task*"}),
     ("list", {"recursive": True, "glob": "**/*task*"})),
    ("grep a symbol: fn serve_with_ct",
     ("grep", {"pattern": "fn serve_with_ct"}),
     None,
     ("search", {"pattern": "fn serve_with_ct"})),
    ("read 200 lines of src/service.rs",
     ("read", {"path": "src/service.rs", "max_lines": 200}),
     ("read_text_file", {"path": "{root}/src/service.rs", "head": 200}),
     ("read", {"path": "src/service.rs", "end_line": 200})),
    ("list a folder: tests/ (107 entries)",
     ("list", {"path": "tests"}),
     ("list_directory", {"path": "{root}/tests"}),
     ("list", {"path": "tests"})),
    ("a missing file",
     ("read", {"path": "src/missing.rs"}),
     ("read_text_file", {"path": "{root}/src/missing.rs"}),
     ("read", {"path": "src/missing.rs"})),
]

# Find and read one function (ferret only): as an agent does it without
# symbols (grep for the definition, then read the file it is in), and with
# them (symbols by name, then read exactly that definition).
FIND_AND_READ = {
    "grep + read the file": [
        ("grep", {"pattern": "fn serve_with_ct"}),
        ("read", {"path": "src/service/server.rs"}),
    ],
    "symbols + read symbol": [
        ("symbols", {"query": "serve_with_ct"}),
        ("read", {"path": "src/service/server.rs", "symbol": "serve_with_ct"}),
    ],
}


def real_tree(work: Path) -> Path:
    found = sorted(glob.glob(os.path.expanduser(f"~/.cargo/registry/src/*/{RMCP}")))
    if not found:
        sys.exit(f"{RMCP} is not in cargo's registry: build ferret first (cargo build -p ferret)")
    root = work / RMCP
    shutil.copytree(found[-1], root, symlinks=True)
    return root


def filesystem_server() -> list[str]:
    prefix = REPO / ".cache" / "bench" / "npm"
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
    if not entry.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--ignore-scripts", FS_PACKAGE], check=True)
    return ["node", str(entry)]


def shown_bytes(result) -> tuple[int, int]:
    """(structured, text): the bytes each kind of host puts before the model."""
    text = "".join(b.text for b in result.content if getattr(b, "type", "") == "text")
    text_bytes = len(text.encode())
    if result.structured_content is not None and not result.is_error:
        structured = json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
        return len(structured.encode()), text_bytes
    return text_bytes, text_bytes


async def run_server(command: list[str], calls, root: Path, env=None):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, get_default_environment

    params = StdioServerParameters(command=command[0], args=command[1:], env={**get_default_environment(), **(env or {})})
    out = []
    async with Client(params, mode="legacy") as client:
        for call in calls:
            if call is None:
                out.append(None)
                continue
            name, args = call
            args = json.loads(json.dumps(args).replace("{root}", str(root)))
            result = await client.call_tool(name, args)
            out.append(shown_bytes(result))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ferret", default=str(REPO / "target" / "release" / "ferret"))
    ap.add_argument("--label", default="ferret")
    ap.add_argument("--emperor", help="an emperor-folder binary (cargo install emperor-folder)")
    ap.add_argument("--out", default=str(REPO / ".cache" / "bench" / "context.json"))
    args = ap.parse_args()
    if not Path(args.ferret).exists():
        sys.exit(f"{args.ferret} is missing: cargo build --release -p ferret, or pass --ferret")
    with tempfile.TemporaryDirectory(prefix="ferret-context-") as tmp:
        work = Path(tmp)
        root = real_tree(work)
        ferret = [args.ferret, "serve", "--stdio", "--no-persist", "--root", str(root)]
        servers = {args.label: (ferret, 1), "server-filesystem": (filesystem_server() + [str(root)], 2)}
        if args.emperor:
            servers["emperor-folder"] = ([args.emperor, "serve", "--stdio", "--root", str(root)], 3)
        figures = {}
        for name, (command, column) in servers.items():
            figures[name] = asyncio.run(run_server(command, [s[column] for s in STEPS], root, {"XDG_STATE_HOME": str(work / "state")}))
        find_and_read = {way: asyncio.run(run_server(ferret, calls, root, {"XDG_STATE_HOME": str(work / "state")}))
                         for way, calls in FIND_AND_READ.items()}
    names = list(figures)
    width = max(len(s[0]) for s in STEPS)
    print(f"{'step':{width}}  " + "  ".join(f"{n:>24}" for n in names))
    print(f"{'':{width}}  " + "  ".join(f"{'structured / text':>24}" for _ in names))
    totals = {n: [0, 0] for n in names}
    common = {n: [0, 0] for n in names}
    for i, step in enumerate(STEPS):
        cells = []
        everyone = all(figures[n][i] is not None for n in names)
        for n in names:
            f = figures[n][i]
            if f is None:
                cells.append(f"{'n/a':>24}")
                continue
            cells.append(f"{f[0]:>11,} / {f[1]:>10,}")
            for k in range(2):
                totals[n][k] += f[k]
                if everyone:
                    common[n][k] += f[k]
        print(f"{step[0]:{width}}  " + "  ".join(cells))
    print(f"{'total':{width}}  " + "  ".join(f"{t[0]:>11,} / {t[1]:>10,}" for t in totals.values()))
    print(f"{'steps every server can do':{width}}  " + "  ".join(f"{t[0]:>11,} / {t[1]:>10,}" for t in common.values()))
    base = common["server-filesystem"]
    for n in names:
        if n != "server-filesystem":
            print(f"{n} / server-filesystem on the same steps: structured {common[n][0] / base[0]:.2f}x, text {common[n][1] / base[1]:.2f}x")
    print("\nfind and read one function (serve_with_ct in src/service/server.rs), ferret:")
    ways = {}
    for way, calls in FIND_AND_READ.items():
        got = find_and_read[way]
        ways[way] = [sum(f[k] for f in got) for k in range(2)]
        print(f"  {way:<24} structured {ways[way][0]:>9,}  text {ways[way][1]:>9,}  ({' + '.join(f'{f[0]:,}' for f in got)})")
    a, b = ways["grep + read the file"], ways["symbols + read symbol"]
    print(f"  with symbols / without: structured {b[0] / a[0]:.2f}x, text {b[1] / a[1]:.2f}x (target <= 0.3x)")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"steps": [s[0] for s in STEPS], "figures": figures, "find_and_read": ways}, indent=1))


if __name__ == "__main__":
    main()
