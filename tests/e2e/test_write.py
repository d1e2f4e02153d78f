"""Write tools: `write`, `edit`, `manage`: atomic, checksum-guarded, off by default.

Every test builds its own small tree (never the shared fixture tree) and talks to
the real binary through the official MCP client, in both eras.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import HttpServer, call, connect, run, shown
from mcp.shared.exceptions import MCPError

ERAS = ["legacy", "2026-07-28"]
TEMP_PREFIX = ".ferret-tmp-"


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def temps(root: Path) -> list[Path]:
    return [p for p in root.rglob(TEMP_PREFIX + "*")]


def err(s) -> dict:
    return s["error"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.rs").write_text('fn main() {\n    println!("hi");\n}\n')
    (root / "notes").mkdir()
    (root / "notes" / "todo.md").write_text("- one\n- two\n- three\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("OUTSIDE\n")
    return root


def serve(era: str, *args: str):
    return connect("stdio", era, ["--no-persist", *args])


@pytest.mark.parametrize("era", ERAS)
def test_write_tools_are_listed_only_when_writing_is_enabled(work, era):
    async def go():
        async with serve(era, "--root", str(work)) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert not names & {"write", "edit", "manage"}
            with pytest.raises(MCPError):
                await c.call_tool("write", {"path": "x.txt", "content": "x"})
            assert (await call(c, "diagnostics", {}))[1]["roots"][0]["writable"] is False
        async with serve(era, "--root", str(work), "--writable") as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            for name in ["write", "edit", "manage"]:
                t = tools[name]
                a = t.annotations
                assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (False, True, False, False)
                assert t.title and t.output_schema and len(t.description) < 200
            _, d, _, _ = await call(c, "diagnostics", {})
            assert d["roots"][0]["writable"] is True and d["writing"].startswith("enabled")
        async with serve(era, "--root", f"{work}:rw") as c:
            assert "write" in {t.name for t in (await c.list_tools()).tools}

    run(go())


@pytest.mark.parametrize("era", ERAS)
def test_read_only_root_of_a_multi_root_server(work, tmp_path, era):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("doc\n")

    async def go():
        async with serve(era, "--root", f"code={work}:rw", "--root", f"docs={docs}") as c:
            e, s, text, _ = await call(c, "write", {"path": "docs/new.md", "content": "x"})
            assert e and err(s)["code"] == "READ_ONLY"
            assert "--writable" in err(s)["hint"] and ":rw" in err(s)["hint"]
            e, s, _, _ = await call(c, "edit", {"path": "docs/a.md", "edits": [{"old_text": "doc", "new_text": "x"}]})
            assert e and err(s)["code"] == "READ_ONLY"
            e, s, _, _ = await call(c, "manage", {"op": "move", "path": "code/notes/todo.md", "to": "docs/todo.md"})
            assert e and err(s)["code"] == "READ_ONLY"
            e, s, _, _ = await call(c, "write", {"path": "code/new.md", "content": "x"})
            assert not e and s["path"] == "code/new.md"
            # Copying out of a read-only root into a writable one is fine.
            e, s, _, _ = await call(c, "manage", {"op": "copy", "path": "docs/a.md", "to": "code/a.md"})
            assert not e, s
            _, d, _, _ = await call(c, "diagnostics", {})
            assert {r["name"]: r["writable"] for r in d["roots"]} == {"code": True, "docs": False}

    run(go())
    assert not (docs / "new.md").exists() and (docs / "a.md").read_text() == "doc\n"
    assert (work / "todo.md").exists() is False and (work / "a.md").read_text() == "doc\n"


@pytest.mark.parametrize("era", ERAS)
def test_create_overwrite_append(work, era):
    async def go():
        async with serve(era, "--root", str(work), "--writable") as c:
            e, s, _, _ = await call(c, "write", {"path": "new/deep/file.txt", "content": "hello\n"})
            assert not e and s["bytes_written"] == 6 and s["checksum"] == sha(b"hello\n") and s["created"]
            assert "diff" not in s
            _, r, _, _ = await call(c, "read", {"path": "new/deep/file.txt"})
            assert r["checksum"] == s["checksum"]
            e, s, _, _ = await call(c, "write", {"path": "new/deep/file.txt", "content": "again\n"})
            assert e and err(s)["code"] == "ALREADY_EXISTS"
            e, s, _, _ = await call(c, "write", {"path": "new/deep/file.txt", "content": "x", "mode": "overwrite", "expected_checksum": sha(b"other")})
            assert e and err(s)["code"] == "CHECKSUM_MISMATCH" and "read" in err(s)["hint"]
            e, s, text, _ = await call(c, "write", {"path": "new/deep/file.txt", "content": "hello\nworld\n", "mode": "overwrite", "expected_checksum": r["checksum"]})
            assert not e and s["bytes_written"] == 12 and "created" not in s
            assert "+world" in s["diff"] and "--- a/new/deep/file.txt" in s["diff"] and "+world" in text
            e, s, _, _ = await call(c, "write", {"path": "new/deep/file.txt", "content": "tail\n", "mode": "append"})
            assert not e and s["bytes_written"] == 5 and s["checksum"] == sha(b"hello\nworld\ntail\n")
            e, s, _, _ = await call(c, "write", {"path": "nope/x.txt", "content": "x", "create_dirs": False})
            assert e and err(s)["code"] == "NOT_FOUND"
            e, s, _, _ = await call(c, "write", {"path": "src", "content": "x", "mode": "overwrite"})
            assert e and err(s)["code"] == "IS_DIRECTORY"
            with pytest.raises(MCPError) as info:
                await c.call_tool("write", {"path": "a.txt", "content": "x", "mode": "replace"})
            assert "mode" in str(info.value) and "replace" in str(info.value)
            with pytest.raises(MCPError) as info:
                await c.call_tool("write", {"path": "a.txt", "content": 5})
            assert "content" in str(info.value)

    run(go())
    assert (work / "new/deep/file.txt").read_bytes() == b"hello\nworld\ntail\n"
    assert not (work / "nope").exists() and temps(work) == []


@pytest.mark.parametrize("era", ERAS)
def test_dry_run_touches_nothing(work, era):
    todo = work / "notes" / "todo.md"
    before = (todo.read_bytes(), todo.stat().st_mtime_ns)

    async def go():
        async with serve(era, "--root", str(work), "--writable") as c:
            e, s, _, _ = await call(c, "write", {"path": "notes/todo.md", "content": "- zero\n", "mode": "overwrite", "dry_run": True})
            assert not e and s["dry_run"] and "+- zero" in s["diff"] and s["checksum"] == sha(b"- zero\n")
            e, s, _, _ = await call(c, "edit", {"path": "notes/todo.md", "edits": [{"old_text": "- two", "new_text": "- 2"}], "dry_run": True})
            assert not e and s["dry_run"] and "+- 2" in s["diff"] and s["replacements"] == 1
            e, s, text, _ = await call(c, "write", {"path": "fresh/new.txt", "content": "x", "dry_run": True})
            # Nothing was written, and the answer does not read as if it was.
            assert not e and s["would_create"] and s["would_write"] == 1 and s["dry_run"]
            assert "bytes_written" not in s and "created" not in s
            assert text.startswith("dry run, nothing written: would create fresh/new.txt")
            for args in [
                {"op": "delete", "path": "notes", "recursive": True},
                {"op": "move", "path": "notes/todo.md", "to": "moved.md"},
                {"op": "copy", "path": "src", "to": "src2", "recursive": True},
                {"op": "mkdir", "path": "made/here"},
            ]:
                e, s, text, _ = await call(c, "manage", {**args, "dry_run": True})
                assert not e and s["dry_run"] and text.startswith("dry run"), (args, s)
            # A dry run still validates: errors are the real ones.
            e, s, _, _ = await call(c, "manage", {"op": "delete", "path": "notes", "dry_run": True})
            assert e and err(s)["code"] == "DIRECTORY_NOT_EMPTY"

    run(go())
    assert (todo.read_bytes(), todo.stat().st_mtime_ns) == before
    for p in ["fresh", "moved.md", "src2", "made"]:
        assert not (work / p).exists()
    assert temps(work) == []


@pytest.mark.parametrize("era", ERAS)
def test_edit_keeps_encoding_bom_and_line_endings(work, era):
    u16 = work / "u16.txt"
    u16.write_bytes(b"\xff\xfe" + "Grüße aus UTF-16\r\nzweite Zeile\r\n".encode("utf-16-le"))
    gbk = work / "gbk.txt"
    gbk_text = "第一行：中文编码检测需要足够长的文本。\n第二行：这是一段用于测试的简体中文内容。\n"
    gbk.write_bytes(gbk_text.encode("gbk"))
    crlf = work / "crlf.txt"
    crlf.write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    bom = work / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfone\ntwo\n")

    async def go():
        async with serve(era, "--root", str(work), "--writable") as c:
            e, s, _, _ = await call(c, "edit", {"path": "u16.txt", "edits": [{"old_text": "Grüße aus UTF-16\nzweite", "new_text": "Hallo\nzweite"}]})
            assert not e and s["encoding"] == "utf-16le" and s["line_endings"] == "crlf", s
            e, s, _, _ = await call(c, "edit", {"path": "gbk.txt", "edits": [{"old_text": "第二行", "new_text": "第2行"}]})
            assert not e and s["encoding"] == "gbk", s
            _, r, _, _ = await call(c, "read", {"path": "crlf.txt"})
            e, s, _, _ = await call(c, "edit", {
                "path": "crlf.txt",
                "expected_checksum": r["checksum"],
                "edits": [
                    {"old_text": "beta\ngamma\n", "new_text": "beta\nBETA\ngamma\n"},
                    {"lines": "1", "action": "insert_before", "content": "zero"},
                    {"lines": "5", "action": "replace", "content": "GAMMA\n"},
                ],
            })
            assert not e and s["replacements"] == 3 and s["checksum"] == sha(b"zero\r\nalpha\r\nbeta\r\nBETA\r\nGAMMA\r\n"), s
            e, s, _, _ = await call(c, "edit", {"path": "bom.txt", "edits": [{"old_text": "two", "new_text": "deux"}]})
            assert not e and s["encoding"] == "utf-8-bom"
            # Characters the legacy encoding cannot hold are refused, not mangled.
            e, s, _, _ = await call(c, "edit", {"path": "gbk.txt", "edits": [{"old_text": "第一行", "new_text": "☃ snowman ᚠ"}]})
            assert e and "gbk" in err(s)["message"]

    run(go())
    assert u16.read_bytes() == b"\xff\xfe" + "Hallo\r\nzweite Zeile\r\n".encode("utf-16-le")
    assert gbk.read_bytes() == gbk_text.replace("第二行", "第2行").encode("gbk")
    assert crlf.read_bytes() == b"zero\r\nalpha\r\nbeta\r\nBETA\r\nGAMMA\r\n"
    assert bom.read_bytes() == b"\xef\xbb\xbfone\ndeux\n"


@pytest.mark.parametrize("era", ERAS)
def test_no_match_not_unique_and_all_or_nothing(work, era):
    f = work / "list.txt"
    f.write_text("apple = 1\nbanana = 2\ncherry = 3\nbanana = 4\n")
    before = f.read_bytes()

    async def go():
        async with serve(era, "--root", str(work), "--writable") as c:
            e, s, text, _ = await call(c, "edit", {"path": "list.txt", "edits": [{"old_text": "cherri = 3", "new_text": "x"}]})
            assert e and err(s)["code"] == "NO_MATCH"
            assert {"line": 3, "text": "cherry = 3"} in err(s)["nearest"]
            assert "3: cherry = 3" in text
            e, s, text, _ = await call(c, "edit", {"path": "list.txt", "edits": [{"old_text": "banana", "new_text": "kiwi"}]})
            assert e and err(s)["code"] == "NOT_UNIQUE" and err(s)["count"] == 2 and "2 times" in text
            assert err(s)["lines"] == [2, 4]
            # The first edit is fine, the second fails: nothing is written.
            e, s, _, _ = await call(c, "edit", {"path": "list.txt", "edits": [
                {"old_text": "apple", "new_text": "APPLE"},
                {"old_text": "durian", "new_text": "x"},
            ]})
            assert e and err(s)["code"] == "NO_MATCH" and err(s)["edit"] == 2
            e, s, _, _ = await call(c, "edit", {"path": "list.txt", "edits": [{"old_text": "banana", "new_text": "kiwi", "replace_all": True}]})
            assert not e and s["replacements"] == 2
            with pytest.raises(MCPError) as info:
                await c.call_tool("edit", {"path": "list.txt", "edits": [{"lines": "1-2", "action": "delete"}]})
            assert "expected_checksum" in str(info.value)
            e, s, _, _ = await call(c, "edit", {"path": "bin.dat", "edits": [{"old_text": "a", "new_text": "b"}]})
            assert e and err(s)["code"] == "BINARY_CONTENT"

    (work / "bin.dat").write_bytes(b"a\x00\x01binary")
    run(go())
    assert f.read_bytes() == before.replace(b"banana", b"kiwi")


@pytest.mark.parametrize("era", ERAS)
def test_checksum_mismatch_after_an_external_change(work, era):
    f = work / "notes" / "todo.md"

    async def go():
        async with serve(era, "--root", str(work), "--writable") as c:
            _, r, _, _ = await call(c, "read", {"path": "notes/todo.md"})
            f.write_text("- one\n- two (changed by someone else)\n- three\n")
            e, s, _, _ = await call(c, "edit", {"path": "notes/todo.md", "expected_checksum": r["checksum"], "edits": [{"old_text": "- one", "new_text": "- 1"}]})
            assert e and err(s)["code"] == "CHECKSUM_MISMATCH"
            assert "read" in err(s)["hint"] and err(s)["current_checksum"] == sha(f.read_bytes())
            e, s, _, _ = await call(c, "write", {"path": "notes/todo.md", "content": "x", "mode": "overwrite", "expected_checksum": r["checksum"]})
            assert e and err(s)["code"] == "CHECKSUM_MISMATCH"

    run(go())
    assert "someone else" in f.read_text()


@pytest.mark.parametrize("era", ERAS)
def test_mode_is_kept_and_hard_links_are_broken(work, era):
    f = work / "script.sh"
    f.write_text("echo one\n")
    os.chmod(f, 0o640)
    other = work / "hardlink.sh"
    os.link(f, other)

    async def go():
        async with serve(era, "--root", str(work), "--writable") as c:
            e, s, _, _ = await call(c, "edit", {"path": "script.sh", "edits": [{"old_text": "one", "new_text": "two"}]})
            assert not e
            assert f.stat().st_mode & 0o7777 == 0o640
            e, s, _, _ = await call(c, "write", {"path": "script.sh", "content": "echo three\n", "mode": "overwrite"})
            assert not e and f.stat().st_mode & 0o7777 == 0o640
            e, s, _, _ = await call(c, "write", {"path": "script.sh", "content": "echo four\n", "mode": "append"})
            assert not e and f.stat().st_mode & 0o7777 == 0o640

    run(go())
    assert f.read_text() == "echo three\necho four\n"
    # The rename gives the path a new inode: the other name keeps the old content.
    assert other.read_text() == "echo one\n"


@pytest.mark.parametrize("era", ERAS)
def test_sensitive_files_are_refused(work, era):
    (work / ".env").write_text("API_KEY=secret\n")
    (work / "keys").mkdir()
    (work / "keys" / "id_rsa").write_text("PRIVATE\n")

    async def go():
        async with serve(era, "--root", str(work), "--writable") as c:
            for tool, args in [
                ("write", {"path": ".env", "content": "x", "mode": "overwrite"}),
                ("write", {"path": "new.pem", "content": "x"}),
                ("write", {"path": ".ssh/config", "content": "x"}),
                ("edit", {"path": "keys/id_rsa", "edits": [{"old_text": "PRIVATE", "new_text": "x"}]}),
                ("manage", {"op": "copy", "path": ".env", "to": "env-copy.txt"}),
                ("manage", {"op": "move", "path": "notes/todo.md", "to": "server.key"}),
                ("manage", {"op": "delete", "path": ".env"}),
                ("manage", {"op": "delete", "path": "keys", "recursive": True}),
                ("manage", {"op": "move", "path": "keys", "to": "elsewhere"}),
            ]:
                e, s, _, _ = await call(c, tool, args)
                assert e and err(s)["code"] == "PATH_DENIED", (tool, args, s)

    run(go())
    assert (work / ".env").read_text() == "API_KEY=secret\n" and (work / "keys" / "id_rsa").exists()
    assert not (work / "env-copy.txt").exists() and not (work / "server.key").exists()


@pytest.mark.parametrize("era", ERAS)
def test_symlinks_are_written_through_only_inside_the_root(work, era):
    os.symlink("notes/todo.md", work / "link_in")
    os.symlink("../outside/secret.txt", work / "link_out")
    os.symlink(str(work.parent / "outside"), work / "dir_out")
    secret = work.parent / "outside" / "secret.txt"

    async def go():
        async with serve(era, "--root", str(work), "--writable") as c:
            e, s, _, _ = await call(c, "write", {"path": "link_in", "content": "via link\n", "mode": "overwrite"})
            assert not e and s["real_path"] == "notes/todo.md"
            for tool, args in [
                ("write", {"path": "link_out", "content": "pwned\n", "mode": "overwrite"}),
                ("write", {"path": "dir_out/new.txt", "content": "pwned\n"}),
                ("edit", {"path": "link_out", "edits": [{"old_text": "OUTSIDE", "new_text": "pwned"}]}),
                ("manage", {"op": "copy", "path": "link_out", "to": "copied.txt"}),
                ("manage", {"op": "copy", "path": "notes/todo.md", "to": "dir_out/x.txt"}),
                ("manage", {"op": "move", "path": "src/main.rs", "to": "../main.rs"}),
                ("manage", {"op": "copy", "path": "src/main.rs", "to": "src/../../main.rs"}),
                ("write", {"path": str(work.parent / "outside" / "abs.txt"), "content": "x"}),
            ]:
                e, s, _, _ = await call(c, tool, args)
                assert e and err(s)["code"] == "PATH_OUTSIDE_ROOT", (tool, args, s)

    run(go())
    assert (work / "link_in").is_symlink() and (work / "notes" / "todo.md").read_text() == "via link\n"
    assert secret.read_text() == "OUTSIDE\n"
    assert sorted(p.name for p in (work.parent / "outside").iterdir()) == ["secret.txt"]
    assert not (work.parent / "main.rs").exists()


@pytest.mark.parametrize("era", ERAS)
def test_manage_move_copy_delete_mkdir_across_roots(work, tmp_path, era):
    other = tmp_path / "other"
    other.mkdir()

    async def go():
        async with serve(era, "--root", f"a={work}:rw", "--root", f"b={other}:rw") as c:
            e, s, _, _ = await call(c, "manage", {"op": "mkdir", "path": "a/x/y/z"})
            assert not e and s["created"]
            e, s, _, _ = await call(c, "manage", {"op": "mkdir", "path": "a/x/y/z"})
            assert not e and "created" not in s
            e, s, _, _ = await call(c, "manage", {"op": "delete", "path": "a/x"})
            assert e and err(s)["code"] == "DIRECTORY_NOT_EMPTY"
            e, s, _, _ = await call(c, "manage", {"op": "delete", "path": "a/x", "recursive": True})
            assert not e and s["entries"] == 2
            for root_path in ["a", "b", ".", str(work)]:
                e, s, _, _ = await call(c, "manage", {"op": "delete", "path": root_path, "recursive": True})
                assert e, root_path
            e, s, _, _ = await call(c, "manage", {"op": "copy", "path": "a/src", "to": "b/src-copy"})
            assert e and err(s)["code"] == "IS_DIRECTORY"
            e, s, _, _ = await call(c, "manage", {"op": "copy", "path": "a/src", "to": "b/src-copy", "recursive": True})
            assert not e and s["to"] == "b/src-copy"
            e, s, _, _ = await call(c, "manage", {"op": "copy", "path": "a/notes/todo.md", "to": "b/src-copy/main.rs"})
            assert e and err(s)["code"] == "ALREADY_EXISTS"
            e, s, _, _ = await call(c, "manage", {"op": "move", "path": "a/notes/todo.md", "to": "b/moved/todo.md"})
            assert not e and s["path"] == "a/notes/todo.md" and s["to"] == "b/moved/todo.md"
            e, s, _, _ = await call(c, "manage", {"op": "move", "path": "b/moved", "to": "a/notes/back"})
            assert not e
            e, s, _, _ = await call(c, "manage", {"op": "move", "path": "a/src/main.rs", "to": "a/notes/back/todo.md"})
            assert e and err(s)["code"] == "ALREADY_EXISTS"
            e, s, _, _ = await call(c, "manage", {"op": "move", "path": "a/src/main.rs", "to": "a/notes/back/todo.md", "overwrite": True})
            assert not e and s["replaced"]
            e, s, _, _ = await call(c, "manage", {"op": "delete", "path": "a/missing.txt"})
            assert e and err(s)["code"] == "NOT_FOUND"
            with pytest.raises(MCPError):
                await c.call_tool("manage", {"op": "move", "path": "a/src"})
            with pytest.raises(MCPError):
                await c.call_tool("manage", {"op": "rename", "path": "a/src", "to": "a/x"})

    run(go())
    assert (other / "src-copy" / "main.rs").read_text().startswith("fn main")
    assert (work / "notes" / "back" / "todo.md").read_text().startswith("fn main")
    assert not (work / "src" / "main.rs").exists() and not (other / "moved").exists()
    assert work.exists() and other.exists()


@pytest.mark.parametrize("era", ERAS)
def test_changes_show_ferret_as_the_author(work, era):
    async def go():
        async with serve(era, "--root", str(work), "--writable") as c:
            await call(c, "write", {"path": "journal/new.txt", "content": "x\n"})
            await call(c, "edit", {"path": "notes/todo.md", "edits": [{"old_text": "- two", "new_text": "- 2"}]})
            await call(c, "manage", {"op": "move", "path": "src/main.rs", "to": "src/app.rs"})
            await call(c, "manage", {"op": "delete", "path": "journal/new.txt"})
            _, s, _, _ = await call(c, "changes", {"since": "10m"})
            mine = {(ch["action"], ch["path"], ch.get("old_path")) for ch in s["changes"] if ch["by"] == "ferret"}
            assert ("created", "journal/new.txt", None) in mine
            assert ("created", "journal", None) in mine
            assert ("modified", "notes/todo.md", None) in mine
            assert ("renamed", "src/app.rs", "src/main.rs") in mine
            assert ("deleted", "journal/new.txt", None) in mine
            # The watcher reports the same changes. Another program's change after
            # them is a marker: the watcher applies events in order, so once the
            # marker is journalled (as external) every echo before it has been
            # sifted, however slow the machine. None of them may be external.
            (work / "marker.txt").write_text("not ferret\n")
            deadline = time.monotonic() + 30
            while True:
                _, s, _, _ = await call(c, "changes", {"since": "10m"})
                external = [ch for ch in s["changes"] if ch["by"] == "external"]
                if any(ch["path"] == "marker.txt" for ch in external) or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)
            assert ("created", "marker.txt") in [(ch["action"], ch["path"]) for ch in external], s["changes"]
            echoed = [ch for ch in external if ch["path"] != "marker.txt"]
            assert echoed == [], sorted((ch["at"], ch["by"], ch["action"], ch["path"]) for ch in s["changes"])

    run(go())


# --- Crash safety -------------------------------------------------------------------

def test_sigkill_during_many_large_overwrites_leaves_whole_files(tmp_path):
    """Overwrites of 2-4 MB files by eight writers that never pause, SIGKILL once
    twenty are confirmed: every file holds exactly one of its two known
    contents. The writers go on until the server dies, so the kill lands with
    writes in flight however fast the machine (a fixed batch of 40 could all be
    done before the kill on a fast one). A SIGKILLed write can leave its own
    `.ferret-tmp-*` file (nothing can remove it once the process is gone); such
    leftovers are allowed only up to the number of writes that were in flight,
    and they are dotfiles, so `list` does not show them."""
    root = tmp_path / "crash"
    root.mkdir()
    n, writers, most = 20, 8, 2000
    contents = {}
    for i in range(n):
        size = (2 << 20) + i * (2 << 20) // n
        a = (f"file {i} version A line\n" * (size // 24 + 1))[:size]
        b = (f"file {i} version B line\n" * (size // 24 + 1))[:size + 777]
        contents[i] = (a.encode(), b.encode())
        (root / f"f{i:02}.txt").write_bytes(contents[i][0])
    server = HttpServer(["--root", str(root), "--writable", "--no-persist", "--max-request-bytes", "16M"])
    done: list[int] = []
    cut: list[int] = []  # writes under way when the server died
    asked = iter(range(most))

    async def go():
        async with connect("http", "legacy", [], server) as c:
            async def writer():
                for k in asked:
                    i, version = k % n, (k // n + 1) % 2  # first B for every file, then A, ...
                    text = contents[i][version].decode()
                    try:
                        e, _, _, _ = await call(c, "write", {"path": f"f{i:02}.txt", "content": text, "mode": "overwrite"})
                    except Exception:  # the server was killed under this call
                        cut.append(k)
                        return
                    if not e:
                        done.append(k)

            tasks = [asyncio.create_task(writer()) for _ in range(writers)]
            while len(done) < n and not all(t.done() for t in tasks):
                await asyncio.sleep(0.005)
            server.proc.kill()
            server.proc.wait()
            await asyncio.wait(tasks, timeout=30)
            for t in tasks:
                t.cancel()

    try:
        run(go())
    except BaseException:  # the client may complain about the dead server
        pass
    finally:
        server.stop()
    assert len(done) >= n, f"only {len(done)} writes confirmed before the kill"
    assert len(done) < most, "every write was done before the kill"
    for i in range(n):
        data = (root / f"f{i:02}.txt").read_bytes()
        assert data in contents[i], f"f{i:02}.txt is a mix ({len(data)} bytes)"
    leftovers = temps(root)
    print(f"\n{len(done)} writes confirmed before SIGKILL, {len(cut)} cut short; {len(leftovers)} temp files left")
    assert len(leftovers) <= writers
    assert all(p.name.startswith(TEMP_PREFIX) for p in leftovers)

    async def listing():
        async with connect("stdio", "legacy", ["--root", str(root), "--no-persist"]) as c:
            _, s, _, _ = await call(c, "list", {"path": "."})
            return shown(s, "entries")

    assert not any(TEMP_PREFIX in p for p in run(listing()))


# --- Disk full, and a move across file systems ----------------------------------------

@pytest.fixture
def tiny_tmpfs(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.parametrize("era", ERAS)
def test_disk_full_keeps_the_old_content_and_no_temp_file(tiny_tmpfs, tmp_path, era):
    """A real ENOSPC: a 1 MiB tmpfs root holding a 600 KB file cannot take a
    700 KB replacement next to it (the temp file is written before the rename)."""
    old = b"old line\n" * (600_000 // 9)
    (tiny_tmpfs / "big.txt").write_bytes(old)
    (tiny_tmpfs / "small.txt").write_text("small\n")
    disk = tmp_path / "disk"
    disk.mkdir()
    (disk / "here.txt").write_text("here\n")
    (disk / "tree" / "inner").mkdir(parents=True)
    (disk / "tree" / "inner" / "leaf.txt").write_text("leaf\n")
    os.chmod(disk / "tree" / "inner" / "leaf.txt", 0o600)
    os.symlink("inner/leaf.txt", disk / "tree" / "link")

    async def go():
        async with serve(era, "--root", f"t={tiny_tmpfs}:rw", "--root", f"d={disk}:rw") as c:
            e, s, text, _ = await call(c, "write", {"path": "t/big.txt", "content": "new line\n" * (700_000 // 9), "mode": "overwrite"})
            assert e and err(s)["code"] == "IO_ERROR", s
            assert "space" in err(s)["message"].lower()
            # Roots on different file systems: a move is a copy then a delete.
            e, s, _, _ = await call(c, "manage", {"op": "move", "path": "t/small.txt", "to": "d/small.txt"})
            assert not e, s
            e, s, _, _ = await call(c, "manage", {"op": "move", "path": "d/here.txt", "to": "t/sub/here.txt"})
            assert not e, s
            e, s, _, _ = await call(c, "manage", {"op": "move", "path": "d/tree", "to": "t/tree"})
            assert not e and s["kind"] == "dir" and s["entries"] == 3, s

    run(go())
    assert (tiny_tmpfs / "big.txt").read_bytes() == old
    assert temps(tiny_tmpfs) == [] and temps(disk) == []
    assert (disk / "small.txt").read_text() == "small\n" and not (tiny_tmpfs / "small.txt").exists()
    assert (tiny_tmpfs / "sub" / "here.txt").read_text() == "here\n" and not (disk / "here.txt").exists()
    moved = tiny_tmpfs / "tree"
    assert (moved / "inner" / "leaf.txt").read_text() == "leaf\n" and not (disk / "tree").exists()
    assert (moved / "inner" / "leaf.txt").stat().st_mode & 0o777 == 0o600
    assert os.readlink(moved / "link") == "inner/leaf.txt"


def test_writable_from_the_environment(work):
    os.environ["FERRET_WRITABLE"] = "true"
    try:
        server = HttpServer(["--root", str(work), "--no-persist"])
    finally:
        del os.environ["FERRET_WRITABLE"]

    async def go():
        async with connect("http", "2026-07-28", [], server) as c:
            return {t.name for t in (await c.list_tools()).tools}

    try:
        assert {"write", "edit", "manage"} <= run(go())
    finally:
        server.stop()


def test_temporary_files_left_by_killed_writes_are_removed_at_start(work, tmp_path):
    """What a write killed before its rename leaves (`.ferret-tmp-`, the
    writer's process id, `-` and 16 hex digits, older than the process) is
    removed once the index has walked the roots, through the root's handle, in
    writable roots only, when the writer no longer runs; other names, newer
    files, a running writer's files and read-only roots are left alone, and
    diagnostics counts both."""
    docs = tmp_path / "docs"
    docs.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead, alive = gone.pid, os.getpid()
    hour_ago = time.time() - 3600
    planted = {
        work / "src" / f".ferret-tmp-{dead}-0123456789abcdef": True,
        work / "notes" / f".ferret-tmp-{dead}-fedcba9876543210": True,
        # Not a name ferret makes.
        work / ".ferret-tmp-notours": False,
        work / "src" / f".ferret-tmp-{dead}-0123456789abcdef.bak": False,
        # Newer than the process: not from an earlier run.
        work / "notes" / f".ferret-tmp-{dead}-00000000000000aa": False,
        # Its writer still runs (this test): a write in flight, whatever its age.
        work / "notes" / f".ferret-tmp-{alive}-2222222222222222": False,
        # A read-only root: ferret never wrote there.
        docs / f".ferret-tmp-{dead}-1111111111111111": False,
    }
    for p, old in planted.items():
        p.write_text("half a write")
        t = time.time() + 86400 if p.name.endswith("00aa") else hour_ago
        os.utime(p, (t, t))

    async def go():
        async with serve("legacy", "--root", f"code={work}:rw", "--root", f"docs={docs}") as c:
            deadline = time.monotonic() + 20
            while True:
                _, d, _, _ = await call(c, "diagnostics", {})
                if d.get("stale_temp_files") is not None:
                    return d["stale_temp_files"]
                assert time.monotonic() < deadline, "the start-up sweep never reported"
                await asyncio.sleep(0.1)

    swept = run(go())
    assert swept == {"removed": 2, "kept": 5}, swept
    for p, removed in planted.items():
        assert p.exists() is not removed, p
