"""Names that are not UTF-8 (a Latin-1 `caf\\xe9.txt`, a folder `d\\xff`):
shown with each odd byte as `%XX` (`caf%E9.txt`) and every tool reaches
them by that shown path, as docs/tools.md says ("Paths"). Before, they were
shown with U+FFFD and no tool could read, list, grep or edit them by it.

A name that is UTF-8 and reads like an escape (`tw%E9in.txt` written with a
literal `%`) stays what it was: taken as written when it exists, and a new
file is never given a name that is not UTF-8.
"""

from __future__ import annotations

import os
from pathlib import Path

from conftest import call, connect, run, shown

MARK = "marker-5f3a"


def make(root: Path) -> Path:
    root.mkdir()
    b = os.fsencode(root)
    (Path(os.fsdecode(b + b"/caf\xe9.txt"))).write_bytes(f"a latin-1 name: {MARK}\n".encode())
    os.mkdir(b + b"/d\xff")
    Path(os.fsdecode(b + b"/d\xff/inner.txt")).write_bytes(f"inside {MARK}\n".encode())
    (root / "100%.txt").write_text("percent\n")
    Path(os.fsdecode(b + b"/tw\xe9in.txt")).write_bytes(b"escaped twin\n")
    (root / "tw%E9in.txt").write_text("literal twin\n")
    Path(os.fsdecode(b + b"/d\xff/z\xe9.txt")).write_bytes(b"zed\n")
    # An absolute link to that folder: names below it are found by the
    # folder's real path (decided on the path as typed, an edit there
    # missed the file and a write made a second one beside it).
    os.symlink(os.path.realpath(os.fsdecode(b + b"/d\xff")), root / "abs")
    Path(os.fsdecode(b + b"/m\xe9.py")).write_bytes(b"def latin_fn():\n    return 1\n")
    (root / "box").mkdir()
    Path(os.fsdecode(b + b"/box/x\xe9.txt")).write_bytes(b"in a box\n")
    return root


def test_every_tool_reaches_a_name_that_is_not_utf8(tmp_path):
    root = make(tmp_path / "r")
    raw = os.fsencode(root)

    async def go():
        async with connect("stdio", "legacy", ["--no-persist", "--writable", "--root", str(root)]) as c:
            e, s, _, _ = await call(c, "search", {"query": "caf"})
            assert not e and shown(s) == ["caf%E9.txt"], s
            e, s, _, _ = await call(c, "search", {"query": "inner"})
            assert not e and shown(s) == ["d%FF/inner.txt"], s
            # A name typed as it is shown finds it; so does its twin
            # written with a literal `%` (both show alike).
            e, s, _, _ = await call(c, "search", {"query": "caf%E9.txt"})
            assert not e and shown(s) == ["caf%E9.txt"], s
            e, s, _, _ = await call(c, "search", {"query": "tw%E9in"})
            assert not e and shown(s) == ["tw%E9in.txt", "tw%E9in.txt"], s
            # A folder or a path typed as shown: `in:`, `parent:`, a path term.
            for query in ["in:d%FF", "parent:d%FF", "d%FF/", "d%FF/in"]:
                e, s, _, _ = await call(c, "search", {"query": query})
                assert not e and "d%FF/inner.txt" in shown(s) and "caf%E9.txt" not in shown(s), (query, s)

            e, s, _, _ = await call(c, "read", {"path": "caf%E9.txt"})
            assert not e and s["text"] == f"a latin-1 name: {MARK}\n", s
            e, s, _, _ = await call(c, "read", {"path": "d%FF/inner.txt"})
            assert not e and s["text"] == f"inside {MARK}\n", s
            # A `%` in a UTF-8 name is itself; the name as written wins.
            e, s, _, _ = await call(c, "read", {"path": "100%.txt"})
            assert not e and s["text"] == "percent\n", s
            e, s, _, _ = await call(c, "read", {"path": "tw%E9in.txt"})
            assert not e and s["text"] == "literal twin\n", s

            e, s, _, _ = await call(c, "list", {"path": "."})
            assert not e, s
            assert {"caf%E9.txt", "d%FF/", "100%.txt", "tw%E9in.txt"} <= set(shown(s, "entries")), s
            e, s, _, _ = await call(c, "list", {"path": "d%FF", "details": True})
            assert not e and [x["name"] for x in s["entries"]] == ["inner.txt", "z%E9.txt"], s
            e, s, _, _ = await call(c, "stat", {"paths": ["d%FF/inner.txt", "caf%E9.txt"]})
            assert not e and all("error" not in r for r in s["results"]), s

            # Definitions in such a file: found by name, read by name.
            e, s, _, _ = await call(c, "symbols", {"query": "latin_fn"})
            assert not e and [(r["path"], r["line"]) for r in s["results"]] == [("m%E9.py", 1)], s
            e, s, _, _ = await call(c, "read", {"path": "m%E9.py", "symbol": "latin_fn"})
            assert not e and s["text"] == "def latin_fn():\n    return 1\n", s
            e, s, _, _ = await call(c, "read", {"path": "m%E9.py", "outline": True})
            assert not e and [x["name"] for x in s["symbols"]] == ["latin_fn"], s

            e, s, _, _ = await call(c, "grep", {"pattern": MARK, "output": "files"})
            assert not e and sorted(s["files"]) == ["caf%E9.txt", "d%FF/inner.txt"], s
            e, s, _, _ = await call(c, "grep", {"pattern": MARK, "output": "files", "filter": "in:d%FF"})
            assert not e and s["files"] == ["d%FF/inner.txt"], s

            e, s, _, _ = await call(
                c, "edit", {"path": "caf%E9.txt", "edits": [{"old_text": "latin-1", "new_text": "legacy"}]}
            )
            assert not e and s["path"] == "caf%E9.txt", s
            e, s, _, _ = await call(c, "edit", {"path": "abs/z%E9.txt", "edits": [{"old_text": "zed", "new_text": "zee"}]})
            assert not e, s
            # A new file is named as written, never with the bytes an
            # escape would stand for.
            e, s, _, _ = await call(c, "write", {"path": "new%E9.txt", "content": "new\n"})
            assert not e, s
            # Folders holding such names are copied, moved and deleted whole.
            e, s, _, _ = await call(c, "manage", {"op": "copy", "path": "box", "to": "box2", "recursive": True})
            assert not e and s["entries"] == 1, s
            e, s, _, _ = await call(c, "manage", {"op": "move", "path": "box2", "to": "box3"})
            assert not e, s
            e, s, _, _ = await call(c, "read", {"path": "box3/x%E9.txt"})
            assert not e and s["text"] == "in a box\n", s
            e, s, _, _ = await call(c, "manage", {"op": "delete", "path": "box3", "recursive": True})
            assert not e and s["entries"] == 1, s
            e, s, _, _ = await call(c, "manage", {"op": "move", "path": "tw%E9in.txt", "to": "twin.txt"})
            assert not e, s

    run(go())
    assert Path(os.fsdecode(raw + b"/caf\xe9.txt")).read_bytes() == f"a legacy name: {MARK}\n".encode()
    names = set(os.listdir(raw))
    assert b"new%E9.txt" in names and b"new\xe9.txt" not in names and b"caf%E9.txt" not in names, names
    # The literal twin was moved (the name as written first); the escaped
    # one stays, as does the box, whose copy was moved and then deleted.
    assert b"twin.txt" in names and b"tw\xe9in.txt" in names and b"tw%E9in.txt" not in names, names
    assert b"box3" not in names and b"box2" not in names
    assert os.listdir(raw + b"/box") == [b"x\xe9.txt"]
    assert sorted(os.listdir(raw + b"/d\xff")) == [b"inner.txt", b"z\xe9.txt"]
    assert Path(os.fsdecode(raw + b"/d\xff/z\xe9.txt")).read_bytes() == b"zee\n"
