#!/usr/bin/env python3
"""Measure ferret's document reading against issue 15's targets.

    python3 bench/documents.py [--bin target/release/ferret] [--docs 1000]

Needs the test venv (`./scripts/test` makes it: .cache/venv, with the
document writers) and a ferret binary (release by default: `cargo build
--release -p ferret`). Makes, in a temporary folder: a 500-page text PDF, a
corpus of 1,000 documents (PDF, DOCX, XLSX, ODT, PPTX in turn), a zip bomb
shaped like a DOCX and a PDF whose content stream inflates to 512 MB. Then:

1. `read` of the 500-page PDF: the first window (nothing cached), later
   windows (from the cache), over stdio through the official MCP SDK;
2. the time to extract the 1,000 documents: each one through ferret's
   extractor process, one after another (the work a first grep must do);
3. `grep` over the 1,000 documents with `documents: true`, first (empty
   cache) and second time;
4. the peak memory (max RSS) of the extractor on the bombs and on the PDF.

Prints the figures and whether each target is met; docs/benchmarks.md keeps
the results.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import documents  # noqa: E402  (the e2e tests' document writers)
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, get_default_environment  # noqa: E402

WORKER = "__ferret-extract-document"
LIMITS = [str(256 << 20), "32", str(64 << 20), str(160 << 20), str(64 << 20)]


def corpus(folder: Path, n: int) -> list[Path]:
    folder.mkdir(parents=True)
    made = []
    writers = [
        ("pdf", lambda p, i: documents.pdf_pages(p, pages=4, title=f"Doc {i}")),
        ("docx", lambda p, i: documents.docx(p)),
        ("xlsx", lambda p, i: documents.xlsx(p, rows=200)),
        ("odt", lambda p, i: documents.odt(p)),
        ("pptx", lambda p, i: documents.pptx(p)),
    ]
    templates = {}
    for ext, write in writers:
        t = folder / f"template.{ext}"
        write(t, 0)
        templates[ext] = t.read_bytes()
        t.unlink()
    for i in range(n):
        ext = writers[i % len(writers)][0]
        p = folder / f"d{i // 100:02d}" / f"doc{i:04d}.{ext}"
        p.parent.mkdir(exist_ok=True)
        # Distinct files (distinct inodes), the same content per format.
        p.write_bytes(templates[ext])
        made.append(p)
    return made


def extract_once(binary: Path, path: Path, fmt: str) -> float:
    t = time.perf_counter()
    with open(path, "rb") as f:
        subprocess.run([str(binary), WORKER, fmt, *LIMITS], stdin=f, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def peak_rss_mb(binary: Path, path: Path, fmt: str) -> tuple[float, str]:
    """Max RSS of one extractor run (a fresh Python child measures only it)."""
    code = (
        "import resource,subprocess,sys;"
        f"f=open({str(path)!r},'rb');"
        f"r=subprocess.run([{str(binary)!r},{WORKER!r},{fmt!r},*{LIMITS!r}],stdin=f,stdout=subprocess.PIPE);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode, (r.stdout[:300].decode('utf-8','replace').split(chr(10))+['',''])[1][:100] or 'no result: the extractor was stopped by its memory limit')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(" ", 2)
    return int(out[0]) / 1024, f"exit {out[1]}: {out[2].strip()}"


async def session(binary: Path, root: Path, state: Path, work):
    params = StdioServerParameters(
        command=str(binary),
        args=["serve", "--stdio", "--root", str(root), "--state-dir", str(state)],
        env={**get_default_environment(), "FERRET_LOG": "warn"},
    )
    async with Client(params, mode="legacy") as c:
        return await work(c)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "target" / "release" / "ferret"))
    ap.add_argument("--docs", type=int, default=1000)
    args = ap.parse_args()
    binary = Path(args.bin).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="ferret-docbench-"))
    try:
        t = time.perf_counter()
        big = tmp / "big"
        big.mkdir()
        documents.pdf_pages(big / "report.pdf")
        docs = corpus(tmp / "corpus", args.docs)
        hostile = tmp / "hostile"
        hostile.mkdir()
        documents.zip_bomb_docx(hostile / "bomb.docx")
        documents.pdf_stream_bomb(hostile / "bomb.pdf")
        print(f"made the documents in {time.perf_counter() - t:.1f} s ({tmp})")
        print(f"binary: {binary}; {os.cpu_count()} cores")

        # 1. The 500-page PDF.
        async def windows(c):
            t0 = time.perf_counter()
            first = await c.call_tool("read", {"path": "report.pdf", "max_lines": 200})
            first_s = time.perf_counter() - t0
            later = []
            for start in range(201, 2501, 200):
                t0 = time.perf_counter()
                r = await c.call_tool("read", {"path": "report.pdf", "start_line": start, "max_lines": 200})
                later.append(time.perf_counter() - t0)
                assert not r.is_error
            t0 = time.perf_counter()
            await c.call_tool("read", {"path": "report.pdf", "pages": "499-500"})
            later.append(time.perf_counter() - t0)
            return first_s, later, first.structured_content["total_lines"]

        first_s, later, lines = asyncio.run(session(binary, big, tmp / "state-big", windows))
        print(f"\n500-page PDF ({lines} lines): first window {ms(first_s)} (target <= 1000 ms: {'met' if first_s <= 1 else 'NOT met'})")
        print(
            f"  later windows from the cache: median {ms(statistics.median(later))}, max {ms(max(later))}"
            f" (target <= 50 ms: {'met' if max(later) <= 0.05 else 'NOT met'})"
        )

        # 2. Extracting the corpus, one document after another.
        t0 = time.perf_counter()
        for p in docs:
            extract_once(binary, p, {"pdf": "pdf", "docx": "docx", "xlsx": "xlsx", "odt": "odt", "pptx": "pptx"}[p.suffix[1:]])
        extract_s = time.perf_counter() - t0
        print(f"\nextracting {len(docs)} documents one after another: {extract_s:.2f} s")

        # 3. grep over the corpus, first and second time.
        async def greps(c):
            out = []
            for _ in range(2):
                t0 = time.perf_counter()
                r = await c.call_tool("grep", {"pattern": "penalty", "documents": True, "output": "count", "limit": 2000})
                out.append((time.perf_counter() - t0, r.structured_content))
            return out

        (g1, s1), (g2, s2) = asyncio.run(session(binary, tmp / "corpus", tmp / "state-corpus", greps))
        print(f"grep over {s1['files_scanned']} documents, first time: {g1:.2f} s = {g1 / extract_s:.2f}x the extraction time (target <= 3x: {'met' if g1 <= 3 * extract_s else 'NOT met'})")
        print(f"  second time: {ms(g2)} = {g2 / g1:.3f}x the first (target <= 0.1x: {'met' if g2 <= 0.1 * g1 else 'NOT met'}); {s2['total']} files matched both times" if s1["total"] == s2["total"] else "  totals differ!")

        # 4. Memory of one extraction.
        print("\npeak memory (max RSS) of one extraction (bound 256 MB):")
        for path, fmt in [(hostile / "bomb.docx", "docx"), (hostile / "bomb.pdf", "pdf"), (big / "report.pdf", "pdf"), (docs[2], "xlsx")]:
            rss, outcome = peak_rss_mb(binary, path, fmt)
            print(f"  {path.name:12} {rss:6.1f} MB  ({outcome})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
