"""First calls on hostile trees: every tool answers its first call, with the
right answer, on trees built to stall a server.

Shapes: a chain of 600 nested folders and one of 2,000 (its bottom file's
path is 4,010 bytes, just under PATH_MAX), a folder of 50,000 entries, FIFOs and sockets
where files are expected, symlink loops, and a root deleted while served.
Each server is started on the shape just made (the folders' times are all
within the last seconds, which is what once made the first grep list every
folder again) and every tool is called once at once; a grep for the needle
must find it without running out of a generous `timeout_ms` (the 1 s target
and the figures are in docs/benchmarks.md, "freshness and first calls", from
this test's own printed timings; not asserted here).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from conftest import call, connect, run, shown

NEEDLE = "needle-7c1e0f"
# Generous: a behaviour check (the call does not stall), not a timing target.
GREP_TIMEOUT_MS = 8000


def chain(root: Path, depth: int) -> str:
    """`depth` nested folders `d/d/…` with needle.txt at the bottom, made with
    descriptors (a 2,000-deep path is longer than PATH_MAX); the bottom file's
    path below the root."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        f = os.open("needle.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(f, f"the {NEEDLE} at the bottom\n".encode())
        os.close(f)
    finally:
        os.close(fd)
    return "d/" * depth + "needle.txt"


def remove_chain(root: Path) -> None:
    # Python's rmtree recurses once a level; rm does not.
    subprocess.run(["rm", "-rf", str(root / "d")], check=True)


async def first_calls(c, needle_path: str | None, expect_grep: list[str]):
    """Every read-only tool once; the grep must find exactly `expect_grep`."""
    started = time.monotonic()
    e, s, _, _ = await call(
        c,
        "grep",
        {"pattern": "needle-[a-z0-9]+", "output": "files", "timeout_ms": GREP_TIMEOUT_MS},
    )
    assert not e, s
    assert sorted(s.get("files", [])) == sorted(expect_grep), s
    grep_s = time.monotonic() - started
    e, s, _, _ = await call(c, "search", {"query": "needle.txt"})
    assert not e, s
    if needle_path is not None:
        assert shown(s) == [needle_path], s
    e, s, _, _ = await call(c, "list", {"path": "."})
    assert not e, s
    e, s, _, _ = await call(c, "stat", {"paths": ["."]})
    assert not e, s
    e, s, _, _ = await call(c, "changes", {})
    assert not e, s
    e, s, _, _ = await call(c, "diagnostics", {})
    assert not e, s
    return grep_s


def serve(root: Path):
    return connect("stdio", "legacy", ["--no-persist", "--root", str(root)])


@pytest.mark.parametrize("depth", [600, 2000])
def test_a_deep_folder_chain(tmp_path, depth):
    root = tmp_path / "r"
    root.mkdir()
    (root / "README.md").write_text("a deep chain below\n")
    bottom = chain(root, depth)

    async def go():
        async with serve(root) as c:
            took = await first_calls(c, bottom, [bottom])
            # The file at the bottom reads like any other.
            e, s, text, _ = await call(c, "read", {"path": bottom})
            assert not e and NEEDLE in text, s
            return took

    try:
        took = run(go())
        print(f"{depth} deep: first grep {took:.3f} s")
    finally:
        remove_chain(root)


def test_a_folder_of_fifty_thousand_entries(tmp_path):
    root = tmp_path / "r"
    big = root / "big"
    big.mkdir(parents=True)
    for i in range(50_000):
        (big / f"f{i:05}").touch()
    (big / "f49999").write_text(f"{NEEDLE}\n")

    async def go():
        async with serve(root) as c:
            await first_calls(c, None, ["big/f49999"])
            e, s, _, _ = await call(c, "list", {"path": "big", "limit": 10})
            assert not e and s.get("truncated") and len(s["entries"]) == 10, s

    run(go())


def test_fifos_sockets_and_symlink_loops(tmp_path):
    root = tmp_path / "r"
    (root / "src").mkdir(parents=True)
    (root / "src" / "real.txt").write_text(f"{NEEDLE}\n")
    for i in range(50):
        os.mkfifo(root / "src" / f"pipe{i}.txt")
    socks = []
    for i in range(20):
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(root / "src" / f"sock{i}.txt"))
        socks.append(s)
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.symlink(".", root / "src" / "self")
    os.symlink("..", root / "src" / "up")

    async def go():
        async with serve(root) as c:
            await first_calls(c, None, ["src/real.txt"])
            for p, said in [("src/pipe0.txt", "FIFO"), ("src/sock0.txt", "socket"), ("loop_a", "symlink loop")]:
                e, s, _, _ = await call(c, "read", {"path": p})
                assert e and s["error"]["code"] == "IO_ERROR" and said in s["error"]["message"], s
            e, s, text, _ = await call(c, "read", {"path": "src/self/real.txt"})
            assert not e and NEEDLE in text, s

    try:
        run(go())
    finally:
        for s in socks:
            s.close()


def test_a_root_deleted_while_served(tmp_path):
    root = tmp_path / "r"
    (root / "a").mkdir(parents=True)
    (root / "a" / "x.txt").write_text(f"{NEEDLE}\n")

    async def go():
        async with serve(root) as c:
            e, s, _, _ = await call(c, "search", {"query": "x.txt"})
            assert shown(s) == ["a/x.txt"], s
            shutil.rmtree(root)
            started = time.monotonic()
            e, s, _, _ = await call(
                c, "grep", {"pattern": NEEDLE, "output": "files", "timeout_ms": GREP_TIMEOUT_MS}
            )
            # Nothing is there to find, and every tool says so: never a hang,
            # never the deleted file's text or name.
            assert not e and s["files"] == [] and s["total"] == 0, s
            e, s, _, _ = await call(c, "search", {"query": "x.txt"})
            assert not e and shown(s) == [], s
            e, s, _, _ = await call(c, "list", {"path": "."})
            assert not e and s["entries"] == [], s
            e, s, _, _ = await call(c, "read", {"path": "a/x.txt"})
            assert e and s["error"]["code"] == "NOT_FOUND", s
            e, s, _, _ = await call(c, "stat", {"paths": ["a"]})
            assert s["results"][0]["error"]["code"] == "NOT_FOUND", s
            e, s, _, _ = await call(c, "diagnostics", {})
            assert s["index"]["missing_roots"], s
            return time.monotonic() - started

    run(go())
