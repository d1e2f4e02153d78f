"""`symbols`, and `read` with `outline` or `symbol`: definitions found by name
across the roots, a file's outline, one definition's lines, through the real
binary and the official SDK, both eras and both transports; kept fresh as
files change; secrets, binaries and bad input refused or bounded."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import ERAS, call, connect, run
from mcp.shared.exceptions import MCPError

RUST = """//! The store.
use std::collections::HashMap;

/// Where entries live.
#[derive(Debug, Default)]
pub struct Store {
    map: HashMap<String, u32>,
}

impl Store {
    /// Puts one in.
    pub fn insert_entry(&mut self, k: &str, v: u32) {
        self.map.insert(k.into(), v);
    }

    pub fn get(&self, k: &str) -> Option<u32> {
        self.map.get(k).copied()
    }
}

pub fn parse_query(text: &str) -> usize {
    text.len()
}
"""

PYTHON = '''import os


class Widget:
    """A widget."""

    @property
    def render(self):
        return 1


def parseQuery(text):
    return text


def get(x):
    return x
'''

GO = """package main

type Server struct{}

func (s *Server) Get() int { return 1 }
"""


def make_tree(base: Path) -> Path:
    root = base / "symtree"
    (root / "src").mkdir(parents=True)
    (root / "py").mkdir()
    (root / "src" / "store.rs").write_text(RUST)
    (root / "py" / "widget.py").write_text(PYTHON)
    (root / "main.go").write_text(GO)
    (root / "src" / "names.rs").write_text("pub fn gasnet() {}\n\npub fn get_symbol_name() {}\n")
    (root / "notes.md").write_text("parse_query is described here\n")
    # Sensitive by name: never read, even though it is Python.
    (root / "secrets.py").write_text("def leaked_secret_fn():\n    pass\n")
    # Binary with a source extension.
    (root / "blob.rs").write_bytes(b"fn hidden_in_binary() {}\x00\x01\x02" * 10)
    # Does not parse: conflict markers; what can be read is still read.
    (root / "conflict.rs").write_text("fn before_conflict() {}\n<<<<<<< HEAD\nfn ours() {}\n=======\nfn theirs( {}\n>>>>>>> x\n")
    return root


@pytest.fixture
def symtree(tmp_path):
    return make_tree(tmp_path)


def serve_args(root: Path) -> list[str]:
    return ["--root", str(root), "--no-persist", "--deny", "secrets.py"]


def names(s):
    return [(r["path"], r["name"], r["kind"], r["line"]) for r in s["results"]]


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ERAS)
def test_symbols_finds_definitions_by_name(symtree, transport, era, start_http):
    http = start_http(*serve_args(symtree)) if transport == "http" else None

    async def go():
        async with connect(transport, era, [] if http else serve_args(symtree), http) as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            assert "symbols" in tools
            err, s, text, _ = await call(c, "symbols", {"query": "parse_query"})
            assert not err, text
            # The exact name first, then the same name in another case; the
            # Markdown file that mentions it is not a definition.
            assert names(s)[:2] == [
                ("src/store.rs", "parse_query", "function", 21),
                ("py/widget.py", "parseQuery", "function", 12),
            ], s
            assert s["results"][0]["end_line"] == 23 and s["results"][0]["match"] == "exact"
            assert s["results"][1]["match"] == "folded"
            assert all(r["path"] != "notes.md" for r in s["results"])
            assert "src/store.rs:21-23 function parse_query" in text
            # A container qualifies; kind and path narrow.
            _, s, _, _ = await call(c, "symbols", {"query": "Store::get"})
            assert names(s) == [("src/store.rs", "get", "method", 16)], s
            assert s["results"][0]["container"] == "Store"
            _, s, _, _ = await call(c, "symbols", {"query": "get", "kind": "method"})
            # `get` in Rust and Python, `Get` in Go: only the methods.
            assert {(r["path"], r.get("container")) for r in s["results"] if r["match"] in ("exact", "folded")} == {
                ("src/store.rs", "Store"),
                ("main.go", "Server"),
            }, s
            _, s, _, _ = await call(c, "symbols", {"query": "get", "path": "py"})
            assert {r["path"] for r in s["results"]} == {"py/widget.py"}, s
            # A file as the scope; a path not there, or outside the root, refused.
            _, one, _, _ = await call(c, "symbols", {"query": "get", "path": "src/store.rs"})
            assert {r["path"] for r in one["results"]} == {"src/store.rs"}, one
            err, bad, _, _ = await call(c, "symbols", {"query": "get", "path": "nowhere"})
            assert err and bad["error"]["code"] == "NOT_FOUND", bad
            err, bad, _, _ = await call(c, "symbols", {"query": "get", "path": "../x"})
            assert err and bad["error"]["code"] == "PATH_OUTSIDE_ROOT", bad
            assert (s["results"][0]["name"], s["results"][0]["match"]) == ("get", "exact"), s
            # Fuzzy: letters in order.
            _, s, _, _ = await call(c, "symbols", {"query": "insentry"})
            assert s["results"][0]["name"] == "insert_entry" and s["results"][0]["match"] == "fuzzy", s
            # A guess of the words' initials: the name they start, not a
            # compact run of the letters (`gasnet`).
            _, s, _, _ = await call(c, "symbols", {"query": "gsn"})
            assert [(r["name"], r["match"]) for r in s["results"][:2]] == [
                ("get_symbol_name", "fuzzy"),
                ("gasnet", "fuzzy"),
            ], s
            # Sensitive and binary files are never read.
            for hidden in ("leaked_secret_fn", "hidden_in_binary"):
                _, s, _, raw = await call(c, "symbols", {"query": hidden})
                assert not any(r["name"] == hidden for r in s["results"]), s
            # A file that does not parse still gives what it can.
            _, s, _, _ = await call(c, "symbols", {"query": "before_conflict"})
            assert names(s)[0][:2] == ("conflict.rs", "before_conflict"), s
            # Paging.
            _, s, _, _ = await call(c, "symbols", {"query": "e", "limit": 2})
            assert s["count"] == 2 and s["next_offset"] == 2 and s["total"] > 2, s
            # Bad arguments are protocol errors that name the fix.
            with pytest.raises(MCPError) as raised:
                await c.call_tool("symbols", {"query": "x", "kind": "gizmo"})
            assert "kind" in raised.value.error.message

    run(go())


def test_read_outline_and_symbol(symtree):
    async def go():
        async with connect("stdio", "legacy", serve_args(symtree)) as c:
            err, s, text, _ = await call(c, "read", {"path": "src/store.rs", "outline": True})
            assert not err, text
            got = [(x["name"], x["kind"], x["line"], x["end_line"], x.get("container")) for x in s["symbols"]]
            assert got == [
                ("Store", "struct", 6, 8, None),
                ("insert_entry", "method", 12, 14, "Store"),
                ("get", "method", 16, 18, "Store"),
                ("parse_query", "function", 21, 23, None),
            ], got
            assert s["total"] == 4 and "text" not in s
            # From a line on, and paged by the budget's count.
            _, s, _, _ = await call(c, "read", {"path": "src/store.rs", "outline": True, "start_line": 15})
            assert [x["name"] for x in s["symbols"]] == ["get", "parse_query"]
            # A page cut among one line's definitions (a minified file)
            # goes on after that line and says how many were left out,
            # instead of answering the same page again.
            (symtree / "min.js").write_text(
                "".join(f"function f{i}(){{return {i}}};" for i in range(3000)) + "\nfunction tail(){}\n"
            )
            err, s, text, _ = await call(c, "read", {"path": "min.js", "outline": True})
            assert not err, text
            assert s["total"] == 3001 and 0 < s["count"] < 3000, (s["count"], s["total"])
            assert s["left_out_on_line"] == {"line": 1, "count": 3000 - s["count"]}, s["left_out_on_line"]
            assert s["next_start_line"] == 2 and "symbols" in text, text[-300:]
            _, s, _, _ = await call(c, "read", {"path": "min.js", "outline": True, "start_line": 2})
            assert [x["name"] for x in s["symbols"]] == ["tail"] and "next_start_line" not in s, s
            # One definition, with its doc comment and attributes.
            err, s, text, _ = await call(c, "read", {"path": "src/store.rs", "symbol": "Store"})
            assert not err, text
            assert s["start_line"] == 4 and s["end_line"] == 8, s
            assert s["text"].startswith("/// Where entries live.\n#[derive(Debug, Default)]\npub struct Store {")
            assert s["symbol"] == {"name": "Store", "kind": "struct", "line": 6, "end_line": 8}
            _, s, _, _ = await call(c, "read", {"path": "py/widget.py", "symbol": "Widget.render"})
            assert s["start_line"] == 7 and s["end_line"] == 9 and s["text"].startswith("    @property"), s
            # Case and separators do not count when the exact name is absent.
            _, s, _, _ = await call(c, "read", {"path": "py/widget.py", "symbol": "parse_query"})
            assert s["start_line"] == 12 and s["text"].startswith("def parseQuery"), s
            # A name defined twice is NOT_UNIQUE, with the candidates.
            (symtree / "src" / "two.rs").write_text("struct A;\nimpl A { fn new() {} }\nstruct B;\nimpl B { fn new() {} }\n")
            err, s, text, _ = await call(c, "read", {"path": "src/two.rs", "symbol": "new"})
            assert err and s["error"]["code"] == "NOT_UNIQUE", s
            assert [(x["container"], x["line"]) for x in s["candidates"]] == [("A", 2), ("B", 4)]
            _, s, _, _ = await call(c, "read", {"path": "src/two.rs", "symbol": "B::new"})
            assert s["start_line"] == 4 and s["end_line"] == 4
            # Or one candidate by its line, as NOT_UNIQUE's hint says.
            assert "start_line" in text, text
            _, s, _, _ = await call(c, "read", {"path": "src/two.rs", "symbol": "new", "start_line": 2})
            assert s["start_line"] == 2 and s["symbol"]["container"] == "A", s
            err, s, text, _ = await call(c, "read", {"path": "src/two.rs", "symbol": "new", "start_line": 3})
            assert err and s["error"]["code"] == "NOT_FOUND" and len(s["candidates"]) == 2, s
            # A missing name is NOT_FOUND with the names near it.
            err, s, text, _ = await call(c, "read", {"path": "src/store.rs", "symbol": "insert_entri"})
            assert err and s["error"]["code"] == "NOT_FOUND"
            assert s["near_symbols"][0]["name"] == "insert_entry", s
            # Not source, sensitive, binary: refused as read refuses them.
            err, s, _, _ = await call(c, "read", {"path": "notes.md", "outline": True})
            assert err and s["error"]["code"] == "NO_MATCH"
            # So does `symbols` with such a file as its `path`, not an empty list.
            err, s, _, _ = await call(c, "symbols", {"query": "parse_query", "path": "notes.md"})
            assert err and s["error"]["code"] == "NO_MATCH", s
            err, s, _, _ = await call(c, "read", {"path": "secrets.py", "outline": True})
            assert err and s["error"]["code"] == "PATH_DENIED"
            err, s, _, _ = await call(c, "read", {"path": "blob.rs", "outline": True})
            assert err and s["error"]["code"] == "BINARY_CONTENT"
            err, s, _, _ = await call(c, "read", {"path": "../x.rs", "outline": True})
            assert err
            # symbol with a window is a protocol error.
            with pytest.raises(MCPError) as raised:
                await c.call_tool("read", {"path": "src/store.rs", "symbol": "get", "max_lines": 3})
            assert "symbol" in raised.value.error.message

    run(go())


def test_an_outline_is_never_older_than_the_file(symtree):
    """Once the table holds a file, `read outline` is answered from it; a
    write that keeps the size and puts the modification time back (`cp -p`,
    `touch -d`) must still be seen."""
    store = symtree / "src" / "store.rs"

    async def outline(c):
        err, s, text, _ = await call(c, "read", {"path": "src/store.rs", "outline": True})
        assert not err, text
        return [(x["name"], x["line"]) for x in s["symbols"]]

    async def go():
        async with connect("stdio", "legacy", serve_args(symtree)) as c:
            # Built, then read again once settled (2 s after the writes).
            await call(c, "symbols", {"query": "get"})
            await asyncio.sleep(2.5)
            _, s, _, _ = await call(c, "symbols", {"query": "get"})
            assert ("src/store.rs", "get", "method", 16) in names(s), s
            want = [("Store", 6), ("insert_entry", 12), ("get", 16), ("parse_query", 21)]
            assert await outline(c) == want
            before = store.stat()
            store.write_text(RUST.replace("fn get(", "fn got("))
            os.utime(store, ns=(before.st_atime_ns, before.st_mtime_ns))
            after = store.stat()
            assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
            assert await outline(c) == [("Store", 6), ("insert_entry", 12), ("got", 16), ("parse_query", 21)]
            err, s, text, _ = await call(c, "read", {"path": "src/store.rs", "symbol": "got"})
            assert not err and s["start_line"] == 16, text

    run(go())


def test_symbols_follow_files_as_they_change(symtree):
    async def go():
        async with connect("stdio", "legacy", serve_args(symtree)) as c:
            _, s, _, _ = await call(c, "symbols", {"query": "parse_query"})
            assert names(s)[0][1] == "parse_query"
            # A new file is found on the very next call; a changed one says
            # what it says now; a removed one is gone.
            (symtree / "src" / "fresh.rs").write_text("pub fn brand_new_function() {}\n")
            _, s, _, _ = await call(c, "symbols", {"query": "brand_new_function"})
            assert names(s) == [("src/fresh.rs", "brand_new_function", "function", 1)], s
            (symtree / "src" / "fresh.rs").write_text("\n\npub fn brand_new_function() {}\npub fn second_one() {}\n")
            _, s, _, _ = await call(c, "symbols", {"query": "brand_new_function"})
            assert names(s) == [("src/fresh.rs", "brand_new_function", "function", 3)], s
            # Same size, same second: still seen.
            p = symtree / "src" / "fresh.rs"
            p.write_text(p.read_text().replace("second_one", "second_two"))
            _, s, _, _ = await call(c, "symbols", {"query": "second_two"})
            assert names(s) and names(s)[0][1] == "second_two", s
            p.unlink()
            _, s, _, _ = await call(c, "symbols", {"query": "brand_new_function"})
            assert all(r["path"] != "src/fresh.rs" for r in s["results"]), s
            # Folders: one moved in whole (its files never named one by one),
            # renamed, then removed.
            outside = symtree.parent / "outside-pkg"
            (outside / "inner").mkdir(parents=True)
            (outside / "inner" / "moved.py").write_text("def moved_in_whole():\n    pass\n")
            os.rename(outside, symtree / "pkg")
            _, s, _, _ = await call(c, "symbols", {"query": "moved_in_whole"})
            assert names(s) == [("pkg/inner/moved.py", "moved_in_whole", "function", 1)], s
            os.rename(symtree / "pkg", symtree / "pkg2")
            _, s, _, _ = await call(c, "symbols", {"query": "moved_in_whole"})
            assert names(s) == [("pkg2/inner/moved.py", "moved_in_whole", "function", 1)], s
            shutil.rmtree(symtree / "pkg2")
            _, s, _, _ = await call(c, "symbols", {"query": "moved_in_whole"})
            assert all(not r["path"].startswith("pkg") for r in s["results"]), s
            _, d, _, _ = await call(c, "diagnostics", {})
            sy = d["symbols"]
            assert sy["state"] == "ready" and sy["files"] >= 4 and sy["symbols"] >= 8, sy
            assert sy["unreadable"] >= 1, sy  # the binary one

    run(go())


def test_bad_input_is_bounded(tmp_path):
    root = tmp_path / "bad"
    root.mkdir()
    # 12 MB of minified JavaScript: over the parse bound, skipped and counted.
    (root / "huge.min.js").write_text("var a=1;" * (12 * 1024 * 1024 // 8))
    # Deeply nested code.
    (root / "deep.py").write_text("x = " + "[" * 20000 + "]" * 20000 + "\n\ndef after_deep():\n    pass\n")
    # Not UTF-8.
    (root / "latin1.py").write_bytes(b"# caf\xe9\ndef latin_one():\n    pass\n")
    # Names in Latin-1 and in UTF-16: read as `read` decodes them.
    (root / "latin_names.py").write_bytes("def café_fn():\n    pass\n".encode("latin-1"))
    (root / "wide.py").write_bytes("def wide_fn():\n    pass\n".encode("utf-16"))
    # A symlink loop.
    os.symlink("loop", root / "loop")
    os.symlink(".", root / "self.rs")

    async def go():
        async with connect("stdio", "legacy", ["--root", str(root), "--no-persist"]) as c:
            started = time.monotonic()
            _, s, text, _ = await call(c, "symbols", {"query": "latin_one"})
            assert names(s) == [("latin1.py", "latin_one", "function", 2)], text
            _, s, text, _ = await call(c, "symbols", {"query": "café_fn"})
            assert names(s)[:1] == [("latin_names.py", "café_fn", "function", 1)], text
            _, s, text, _ = await call(c, "symbols", {"query": "wide_fn"})
            assert names(s)[:1] == [("wide.py", "wide_fn", "function", 1)], text
            err, s, text, _ = await call(c, "read", {"path": "latin_names.py", "symbol": "café_fn"})
            assert not err and s["start_line"] == 1 and s["end_line"] == 2, text
            _, s, _, _ = await call(c, "symbols", {"query": "after_deep"})
            assert [r["name"] for r in s["results"]][:1] == ["after_deep"], s
            assert time.monotonic() - started < 30
            _, d, _, _ = await call(c, "diagnostics", {})
            assert d["symbols"]["unreadable"] + d["symbols"]["skipped_too_large"] >= 1, d["symbols"]
            err, s, _, _ = await call(c, "read", {"path": "huge.min.js", "outline": True})
            assert err and s["error"]["code"] == "TOO_LARGE", s

    run(go())


async def symbols_built(c, timeout=60.0):
    """The diagnostics' `symbols` once the background build is done."""
    deadline = time.monotonic() + timeout
    while True:
        _, d, _, _ = await call(c, "diagnostics", {})
        sy = d["symbols"]
        if sy.get("background", {}).get("state") == "done" and sy["state"] == "ready":
            return sy
        assert time.monotonic() < deadline, sy
        await asyncio.sleep(0.1)


def test_the_table_is_built_before_the_first_call_and_read_back_after_a_restart(symtree, tmp_path):
    state = tmp_path / "state"
    args = ["--root", str(symtree), "--state-dir", str(state), "--symbols-early", "on", "--deny", "secrets.py"]

    async def first():
        async with connect("stdio", "legacy", args) as c:
            sy = await symbols_built(c)
            # Built with no `symbols` call, and saved where the index is.
            assert sy["files"] >= 5 and sy["symbols"] >= 8 and sy.get("read_back_files") is None, sy
            assert sy["background"]["files_total"] == sy["background"]["files_done"] >= 5, sy
            saved = Path(sy["saved_to"])
            assert saved.parent == state and saved.is_file(), sy
            assert sy["unsaved_changes"] is False, sy
            _, s, _, _ = await call(c, "symbols", {"query": "parse_query"})
            assert names(s)[0] == ("src/store.rs", "parse_query", "function", 21), s
            # The binary and the sensitive files are not read.
            assert sy["unreadable"] == 2, sy
            return saved, sy["files"]

    saved, files = run(first())
    assert saved.stat().st_mode & 0o777 == 0o600
    # While ferret is down: a file changes, one is added, one is removed.
    (symtree / "main.go").write_text(GO + "\nfunc AddedWhileDown() {}\n")
    (symtree / "src" / "later.rs").write_text("pub fn written_while_down() {}\n")
    (symtree / "conflict.rs").unlink()

    async def second():
        async with connect("stdio", "legacy", args) as c:
            sy = await symbols_built(c)
            # The saved table was read back (the unreadable files aside,
            # which are tried again), and only what moved parsed again.
            assert sy["read_back_files"] == files - 2, sy
            _, s, _, _ = await call(c, "symbols", {"query": "AddedWhileDown"})
            assert names(s)[:1] == [("main.go", "AddedWhileDown", "function", 7)], s
            _, s, _, _ = await call(c, "symbols", {"query": "written_while_down"})
            assert names(s)[:1] == [("src/later.rs", "written_while_down", "function", 1)], s
            _, s, _, _ = await call(c, "symbols", {"query": "before_conflict"})
            assert all(r["path"] != "conflict.rs" for r in s["results"]), s
            _, s, _, _ = await call(c, "symbols", {"query": "Store::get"})
            assert names(s) == [("src/store.rs", "get", "method", 16)], s
            for hidden in ("leaked_secret_fn", "hidden_in_binary"):
                _, s, _, _ = await call(c, "symbols", {"query": hidden})
                assert not any(r["name"] == hidden for r in s["results"]), s

    run(second())
    # A damaged table is discarded and built again, never trusted.
    saved.write_bytes(saved.read_bytes()[:-9] + b"damaged!!")

    async def third():
        async with connect("stdio", "legacy", args) as c:
            sy = await symbols_built(c)
            assert sy.get("read_back_files") is None and sy["files"] >= 5, sy
            _, s, _, _ = await call(c, "symbols", {"query": "AddedWhileDown"})
            assert names(s)[:1] == [("main.go", "AddedWhileDown", "function", 7)], s

    run(third())
    # Other sensitive patterns: another table, so what is now sensitive is
    # never answered from the saved one.
    (symtree / "extra.py").write_text("def now_hidden_fn():\n    pass\n")

    async def fourth(deny):
        async with connect("stdio", "legacy", args[:-2] + deny) as c:
            await symbols_built(c)
            _, s, _, _ = await call(c, "symbols", {"query": "now_hidden_fn"})
            return [r["name"] for r in s["results"]], (await call(c, "diagnostics", {}))[1]["symbols"]

    found, _ = run(fourth(["--deny", "secrets.py"]))
    assert found[:1] == ["now_hidden_fn"]
    found, sy = run(fourth(["--deny", "secrets.py", "--deny", "extra.py"]))
    assert "now_hidden_fn" not in found and sy.get("read_back_files") is None, sy


def test_a_first_call_on_a_big_tree_answers_from_the_files_holding_the_name(tmp_path):
    """With more source files to parse than a call parses itself (2,000), the
    first `symbols` call parses only the files that hold the name as typed,
    says its answer is partial, and leaves the rest to a background build;
    once that is done the answers are whole (folded spellings included)."""
    root = tmp_path / "big"
    for d in range(30):
        (root / f"m{d:02}").mkdir(parents=True)
        for i in range(70):
            (root / f"m{d:02}" / f"f{i:02}.rs").write_text(f"pub fn filler_{d}_{i}() {{}}\n")
    (root / "m07" / "wanted.rs").write_text("/// Here.\npub fn needle_fn() -> u32 {\n    7\n}\n")
    # The same name, spelled otherwise: no text holds `needle_fn` here.
    (root / "m08" / "other.rs").write_text("pub struct NeedleFn;\n")
    (root / "m09" / "caller.rs").write_text("fn call_it() { needle_fn(); }\n")
    args = ["--root", str(root), "--no-persist"]

    async def go():
        async with connect("stdio", "legacy", args) as c:
            _, s, text, _ = await call(c, "symbols", {"query": "needle_fn"})
            # The definition, from the two files that hold the name.
            assert names(s)[:1] == [("m07/wanted.rs", "needle_fn", "function", 2)], s
            assert s["partial"] == {"files_holding_name": 2, "files_parsed": 2, "source_files": 2103}, s
            assert "partial:" in text and "m08/other.rs" not in text
            # Read exactly, from the file alone.
            _, r, _, _ = await call(c, "read", {"path": "m07/wanted.rs", "symbol": "needle_fn"})
            assert (r["start_line"], r["end_line"]) == (1, 4), r
            sy = await symbols_built(c)
            assert sy["files"] == 2103, sy
            _, s, text, _ = await call(c, "symbols", {"query": "needle_fn"})
            assert "partial" not in s and "partial:" not in text, s
            found = {(p, n) for p, n, _, _ in names(s)}
            assert {("m07/wanted.rs", "needle_fn"), ("m08/other.rs", "NeedleFn")} <= found, s
            _, s, _, _ = await call(c, "symbols", {"query": "filler_29_69"})
            assert names(s)[:1] == [("m29/f69.rs", "filler_29_69", "function", 1)], s

    run(go())
