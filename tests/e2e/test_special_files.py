"""FIFOs, sockets and devices in a served tree: refused at once on every surface
that reads content, never waited on, and named in the refusal. Then a file
swapped for a FIFO thousands of times while it is read, grepped and stat'ed:
every call answers promptly, with the file's text or a refusal."""

from __future__ import annotations

import os
import socket
import stat
import time
from pathlib import Path

import httpx2 as httpx
import pytest
from conftest import HttpServer, call, connect, run
from mcp.shared.exceptions import MCPError
from test_escape_surfaces import Swapper

PROMPT = 5.0  # seconds: a FIFO waited on would hang far longer (forever)


@pytest.fixture
def specials(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "plain.txt").write_text("needle in a plain file\n")
    os.mkfifo(root / "pipe.txt")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(root / "sock.txt"))
    if os.geteuid() == 0:
        # A character device like /dev/zero: read, it would never end.
        os.mknod(root / "zero.txt", 0o644 | stat.S_IFCHR, os.makedev(1, 5))
    yield root
    listener.close()


def test_specials_are_refused_at_once_on_every_content_surface(specials):
    root = specials
    names = ["pipe.txt", "sock.txt"] + (["zero.txt"] if (root / "zero.txt").exists() else [])
    server = HttpServer(["--root", f"{root}:rw", "--no-persist"])
    try:

        async def go():
            out = []
            async with connect("http", "legacy", [], server) as c:
                for name in names:
                    started = time.monotonic()
                    out.append((name, "read", await call(c, "read", {"path": name}), time.monotonic() - started))
                    started = time.monotonic()
                    out.append((name, "stat", await call(c, "stat", {"paths": [name]}), time.monotonic() - started))
                    started = time.monotonic()
                    out.append((name, "write", await call(c, "write", {"path": name, "content": "x", "mode": "append"}), time.monotonic() - started))
                    started = time.monotonic()
                    try:
                        await c.read_resource(Path(os.path.realpath(root)).as_uri() + "/" + name)
                        out.append((name, "resource", None, time.monotonic() - started))
                    except MCPError as e:
                        out.append((name, "resource", e.error, time.monotonic() - started))
                started = time.monotonic()
                grep = await call(c, "grep", {"pattern": "needle"})
                return out, grep, time.monotonic() - started

        out, grep, grep_took = run(go())
        for name, surface, answer, took in out:
            assert took < PROMPT, (name, surface, took)
            if surface in ("read", "write"):
                is_error, s, _, _ = answer
                assert is_error and s["error"]["code"] == "IO_ERROR", (name, surface, s)
                message = s["error"]["message"]
                assert "not a regular file" in message, (name, surface, message)
                if surface == "read":
                    kind = {"pipe.txt": "FIFO", "sock.txt": "socket", "zero.txt": "device"}[name]
                    assert kind in message, (name, message)
            elif surface == "stat":
                _, s, _, _ = answer
                (entry,) = s["results"]
                assert entry.get("kind") == "other" or entry.get("error"), entry
                assert "lines" not in entry and "checksum" not in entry, entry
            else:
                # resources/read words an OS refusal as an internal error (-32603), with the code.
                assert answer is not None and answer.code in (-32602, -32603), (name, answer)
                assert "not a regular file" in answer.message, (name, answer)
        is_error, s, _, _ = grep
        assert grep_took < PROMPT and not is_error
        assert [m["path"] for m in s["matches"]] == ["plain.txt"], s
        with httpx.Client(base_url=server.base, headers=server.auth, timeout=PROMPT) as http:
            for name in names:
                r = http.get("/ui/api/preview", params={"path": name})
                assert r.status_code >= 400 and "not a regular file" in r.text, (name, r.status_code, r.text)
    finally:
        server.stop()


def test_a_file_swapped_for_a_fifo_never_hangs_a_reader(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "f.txt").write_text("the real text\n")
    os.mkfifo(root / "p.fifo")
    # Through a symlink too: that path resolves links first, then opens.
    os.symlink("f.txt", root / "link.txt")
    swapper = Swapper(root / "f.txt", root / "p.fifo")

    async def go():
        slowest = 0.0
        outcomes = set()
        async with connect("stdio", "2026-07-28", ["--root", str(root), "--no-persist"]) as c:
            swapper.start()
            for _ in range(120):
                for tool, args in [
                    ("read", {"path": "f.txt"}),
                    ("read", {"path": "link.txt"}),
                    ("stat", {"paths": ["f.txt", "link.txt"]}),
                    ("grep", {"pattern": "real", "path": "f.txt"}),
                ]:
                    started = time.monotonic()
                    is_error, s, _, _ = await call(c, tool, args)
                    slowest = max(slowest, time.monotonic() - started)
                    if tool == "read":
                        outcomes.add("text" if not is_error and s["text"] == "the real text\n" else s.get("error", {}).get("code", "?"))
        return slowest, outcomes

    try:
        slowest, outcomes = run(go())
    finally:
        swapper.stop.set()
        swapper.join(5)
    assert swapper.swaps > 1000, swapper.swaps
    assert slowest < PROMPT, f"a call took {slowest:.1f}s: something waited on the FIFO"
    assert outcomes <= {"text", "IO_ERROR", "NOT_FOUND"}, outcomes
    print(f"{swapper.swaps} swaps; slowest call {slowest * 1000:.0f} ms; reads saw {sorted(outcomes)}")
