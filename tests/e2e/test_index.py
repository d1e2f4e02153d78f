"""The live index: `search`, `changes`, freshness, persistence, the CLI."""

import asyncio
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ERAS, FERRET, HttpServer, call, connect, run, shown
from mcp.shared.exceptions import MCPError


def paths(s):
    return shown(s)


@pytest.fixture(scope="module")
def searcher(tree):
    def search(args, extra=()):
        async def go():
            async with connect("stdio", "legacy", ["--root", str(tree), "--no-persist", *extra]) as c:
                return await call(c, "search", args)

        return run(go())

    return search


def test_search_by_name_extension_wildcard_and_path(searcher):
    _, s, text, _ = searcher({"query": "main"})
    assert "src/main.rs" in paths(s)
    # A ready, current index says nothing of itself; the text copy counts it.
    assert "index" not in s and " matches (index: " in text
    _, s, _, _ = searcher({"query": "ext:rs"})
    assert sorted(paths(s)) == ["src/lib.rs", "src/main.rs"]
    _, s, _, _ = searcher({"query": "*.txt", "path": "enc"})
    assert sorted(paths(s)) == sorted(f"enc/{n}" for n in ["utf8.txt", "utf8bom.txt", "utf16le.txt", "utf16be.txt", "gbk.txt", "latin1.txt", "empty.txt"])
    _, s, _, _ = searcher({"query": "src/ main"})
    assert paths(s) == ["src/main.rs"]
    _, s, _, _ = searcher({"query": "size:>10mb"})
    assert paths(s) == ["big/big.txt"]
    _, s, _, _ = searcher({"query": "lib | main", "sort": "size", "descending": True})
    assert paths(s) == ["src/lib.rs", "src/main.rs"]  # lib.rs is the larger


def test_hidden_and_ignored_entries_follow_the_rules(searcher):
    _, s, _, _ = searcher({"query": "env"})
    assert ".env" not in paths(s), "dotfiles are not indexed by default"
    _, s, _, _ = searcher({"query": "app.log"})
    assert s["total"] == 0, "gitignored files are not indexed by default"
    _, s, _, _ = searcher({"query": ".env"}, extra=("--hidden",))
    assert ".env" in paths(s), "names of sensitive files still appear when hidden files are indexed"


def test_kind_exclude_group_by_and_paging(searcher):
    _, s, _, _ = searcher({"query": "", "kind": "dir"})
    assert "src/" in paths(s) and all(r.endswith("/") for r in paths(s))
    _, s, _, _ = searcher({"query": "", "kind": "dir", "details": True})
    assert {r["kind"] for r in s["results"]} == {"dir"} and all("modified" in r for r in s["results"])
    _, s, _, _ = searcher({"query": "ext:txt", "exclude": ["enc/", "big"]})
    assert all(not p.startswith("enc/") and "big" not in p for p in paths(s))
    _, s, _, _ = searcher({"query": "", "group_by": "extension"})
    groups = {g["group"]: g["count"] for g in s["groups"]}
    assert groups["txt"] >= 10 and groups["rs"] == 2
    _, full, _, _ = searcher({"query": "", "sort": "path", "limit": 2000})
    _, p1, _, _ = searcher({"query": "", "sort": "path", "limit": 7})
    _, p2, _, _ = searcher({"query": "", "sort": "path", "limit": 7, "offset": 7})
    assert paths(p1) + paths(p2) == paths(full)[:14]
    assert p1["truncated"] and p1["next_offset"] == 7 and p1["total"] == full["total"]
    assert "truncated" not in full and "next_offset" not in full
    _, s, _, _ = searcher({"query": "", "limit": 0})
    assert s["results"] == [] and s["total"] == full["total"]


def test_empty_and_missing_are_told_apart(searcher):
    _, s, _, _ = searcher({"query": "nothing-matches-this", "path": "src"})
    assert s["total"] == 0 and "warning" not in s
    _, s, _, _ = searcher({"query": "x", "path": "no/such/folder"})
    assert s["total"] == 0 and "does not exist" in s["warning"]
    _, s, _, _ = searcher({"query": "x", "path": "build"})
    assert "not indexed" in s["warning"]
    is_error, s, _, _ = searcher({"query": "x", "path": "../outside"})
    assert is_error and s["error"]["code"] == "PATH_OUTSIDE_ROOT"


def test_malformed_queries_are_invalid_params_with_the_position(tree):
    async def go():
        async with connect("stdio", "2026-07-28", ["--root", str(tree), "--no-persist"]) as c:
            errors = []
            for q in ["size:>1zb", "<unclosed", "bogusfn:x", "regex:(", "a |"]:
                with pytest.raises(MCPError) as info:
                    await c.call_tool("search", {"query": q})
                errors.append(info.value.error)
            return errors

    errors = run(go())
    assert all(e.code == -32602 for e in errors)
    assert "zb" in errors[0].message and "^" in errors[0].message and "size:>1gb" in errors[0].message


async def wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = await predicate()
        if result:
            return result
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_changes_on_disk_reach_search_and_the_journal(tmp_path):
    root = tmp_path / "live"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "a" / "keep.txt").write_text("keep\n")
    (root / "a" / "gone.txt").write_text("gone\n")

    async def go():
        async with connect("stdio", "legacy", ["--root", str(root), "--no-persist"]) as c:
            async def found(q):
                _, s, _, _ = await call(c, "search", {"query": q})
                return paths(s)

            await wait_for(lambda: found("keep"))
            (root / "a" / "fresh-file.md").write_text("new\n")
            assert await wait_for(lambda: found("fresh-file")) == ["a/fresh-file.md"]
            (root / "a" / "keep.txt").rename(root / "a" / "kept.txt")

            async def renamed():
                # Exactly the new name: before the rename is applied, a plain
                # search for `kept` answers `keep.txt` fuzzily.
                return await found("kept") == ["a/kept.txt"]

            await wait_for(renamed)
            (root / "a" / "kept.txt").rename(root / "b" / "kept.txt")

            async def moved():
                return await found("kept") == ["b/kept.txt"]

            await wait_for(moved)
            (root / "a" / "gone.txt").unlink()

            async def deleted():
                return await found("gone") == []

            await wait_for(deleted)
            # A new folder filled at once: everything in it is found.
            deep = root / "new" / "deeper"
            deep.mkdir(parents=True)
            for i in range(20):
                (deep / f"burst-{i}.txt").write_text("x")

            async def burst():
                return len(await found("burst-")) == 20

            await wait_for(burst)
            with open(root / "b" / "kept.txt", "a") as f:
                f.write("more\n")

            async def journal():
                _, s, _, _ = await call(c, "changes", {"since": "10m"})
                actions = {(ch["action"], ch["path"], ch.get("old_path")) for ch in s["changes"]}
                want = {
                    ("created", "a/fresh-file.md", None),
                    ("renamed", "a/kept.txt", "a/keep.txt"),
                    ("moved", "b/kept.txt", "a/kept.txt"),
                    ("deleted", "a/gone.txt", None),
                    ("modified", "b/kept.txt", None),
                }
                return s if want <= actions else None

            s = await wait_for(journal)
            assert all(ch["by"] == "external" for ch in s["changes"])
            assert all(ch["at"].endswith("Z") for ch in s["changes"])
            _, only, _, _ = await call(c, "changes", {"action": "deleted"})
            assert {ch["path"] for ch in only["changes"]} == {"a/gone.txt"}
            _, prefix, _, _ = await call(c, "changes", {"path": "b"})
            assert all(ch["path"].startswith("b/") or (ch.get("old_path") or "").startswith("b/") for ch in prefix["changes"])
            # `path` as every tool takes it: absolute inside the root, `./`,
            # a deleted file's own path; outside the root refused.
            for given in [str(root / "b"), "./b/", str(root / "a" / "gone.txt")]:
                _, same, _, _ = await call(c, "changes", {"path": given})
                want = prefix if "gone" not in given else only
                assert same["total"] == want["total"] > 0, (given, same, want)
            err, out, _, _ = await call(c, "changes", {"path": ".."})
            assert err and out["error"]["code"] == "PATH_OUTSIDE_ROOT", out
            _, future, _, _ = await call(c, "changes", {"since": "2099-01-01"})
            assert future["total"] == 0
            with pytest.raises(MCPError) as info:
                await c.call_tool("changes", {"since": "last tuesday"})
            assert info.value.error.code == -32602

    run(go())


@pytest.mark.parametrize("era", ERAS)
def test_a_change_just_before_the_call_is_answered_as_it_now_is(tmp_path, era):
    # No waiting between the change and the call: `search` and `changes` pass
    # the watcher's barrier first. (Before they did, the watcher's 5 ms batch
    # window made an immediate search miss nearly every one of these.)
    root = tmp_path / "live"
    (root / "a").mkdir(parents=True)
    (root / "a" / "seed.txt").write_text("x\n")

    async def go():
        async with connect("stdio", era, ["--root", str(root), "--no-persist"]) as c:
            async def found(q):
                _, s, _, _ = await call(c, "search", {"query": q})
                return paths(s)

            await wait_for(lambda: found("seed"))
            for i in range(10):
                (root / "a" / f"made-{i}.md").write_text("new\n")
                assert await found(f"made-{i}.md") == [f"a/made-{i}.md"], i
                (root / "a" / f"made-{i}.md").rename(root / "a" / f"renamed-{i}.md")
                assert await found(f"renamed-{i}.md") == [f"a/renamed-{i}.md"], i
                (root / "a" / f"renamed-{i}.md").unlink()
                assert await found(f"renamed-{i}.md") == [], i
                (root / "new" / str(i)).mkdir(parents=True)
                (root / "new" / str(i) / "inside.rs").write_text("fn x() {}\n")
                assert f"new/{i}/inside.rs" in await found("inside.rs"), i
                (root / "a" / f"journalled-{i}.md").write_text("j\n")
                _, s, _, _ = await call(c, "changes", {"name": f"journalled-{i}"})
                assert [(ch["action"], ch["path"]) for ch in s["changes"]] == [("created", f"a/journalled-{i}.md")], i

    run(go())


def _on_disk(root):
    out = set()
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        out.update(os.path.normpath(os.path.join(rel, d)) + "/" for d in dirs)
        out.update(os.path.normpath(os.path.join(rel, f)) for f in files)
    return out


def _random_change(root, rng, step):
    """One change of a random kind, at once: files and folders made, removed,
    renamed and moved (folders with what they hold), a file replaced by a
    folder, a name changed only in case."""
    every = _on_disk(root)
    files = [p for p in every if not p.endswith("/")]
    dirs = [p.rstrip("/") for p in every if p.endswith("/")]
    kind = rng.choice(["file", "folder", "rm", "rmtree", "mv", "mvdir", "swap", "case"])
    at = root / rng.choice(dirs + ["."])
    try:
        if kind == "file":
            (at / f"n{step}.txt").write_text("x")
        elif kind == "folder":
            (at / f"m{step}").mkdir()
            (at / f"m{step}" / "inner.txt").write_text("y")
        elif kind == "rm" and files:
            os.unlink(root / rng.choice(files))
        elif kind == "rmtree" and dirs:
            shutil.rmtree(root / rng.choice(dirs))
        elif kind == "mv" and files:
            os.rename(root / rng.choice(files), at / f"r{step}.txt")
        elif kind == "mvdir" and dirs:
            moved = root / rng.choice(dirs)
            if moved != at and moved not in at.parents:
                os.rename(moved, at / f"D{step}")
        elif kind == "swap" and files:
            f = root / rng.choice(files)
            os.unlink(f)
            f.mkdir()
            (f / "was_a_file.txt").write_text("z")
        elif kind == "case" and files:
            f = root / rng.choice(files)
            os.rename(f, f.parent / f.name.upper())
    except OSError:
        pass  # raced with nothing: a name taken, say; the disk is what counts


@pytest.mark.parametrize("seed", [1, 2])
def test_every_search_after_random_changes_answers_the_disk_as_it_is(tmp_path, seed):
    # Each change is followed at once by a search of everything: its answer
    # must be the disk's tree exactly. (Before search passed the watcher's
    # barrier, 194 of 200 such answers differed.)
    root = tmp_path / "r"
    for i in range(4):
        (root / f"d{i}").mkdir(parents=True)
        for j in range(4):
            (root / f"d{i}" / f"f{j}.txt").write_text("w\n")
    rng = random.Random(seed)

    async def go():
        async with connect("stdio", "legacy", ["--root", str(root), "--no-persist", "--content-index", "off"]) as c:
            async def everything():
                _, s, _, _ = await call(c, "search", {"query": "", "sort": "path", "limit": 2000})
                return set(paths(s))

            await wait_for(everything)
            wrong = []
            for step in range(250):
                _random_change(root, rng, step)
                got, want = await everything(), _on_disk(root)
                if got != want:
                    wrong.append((step, sorted(want - got)[:3], sorted(got - want)[:3]))
            assert not wrong, f"{len(wrong)} of 250 answers differ from the disk: {wrong[:5]}"

    run(go())


def test_the_index_survives_a_restart_and_reconciles(tmp_path):
    root = tmp_path / "persist"
    state = tmp_path / "state"
    root.mkdir()
    (root / "before.txt").write_text("1\n")
    (root / "doomed.txt").write_text("2\n")
    args = ["--root", str(root), "--state-dir", str(state)]
    server = HttpServer(args)
    try:
        async def first():
            async with connect("http", "legacy", [], server) as c:
                return await wait_for(lambda: _search(c, "before"))

        run(first())
    finally:
        server.stop()
    snaps = list(state.glob("*.snap"))
    assert len(snaps) == 1, "the snapshot is written on SIGTERM"
    # Change the disk while ferret is down.
    (root / "doomed.txt").unlink()
    (root / "while-down.txt").write_text("3\n")
    server = HttpServer(args)
    try:
        async def second():
            async with connect("http", "legacy", [], server) as c:
                _, diag, _, _ = await call(c, "diagnostics", {})
                assert diag["index"]["loaded_from_snapshot"] is True
                await wait_for(lambda: _search(c, "while-down"))

                async def doomed_gone():
                    return not await _search(c, "doomed")

                await wait_for(doomed_gone)
                _, s, _, _ = await call(c, "changes", {})
                found = {(ch["action"], ch["path"]) for ch in s["changes"]}
                assert ("created", "while-down.txt") in found and ("deleted", "doomed.txt") in found

        run(second())
    finally:
        server.stop()


async def _search(c, q):
    _, s, _, _ = await call(c, "search", {"query": q})
    return paths(s)


def test_a_corrupt_snapshot_is_discarded_not_fatal(tmp_path):
    root = tmp_path / "r"
    state = tmp_path / "state"
    root.mkdir()
    (root / "file.txt").write_text("x")
    subprocess.run([str(FERRET), "index", "--root", str(root), "--state-dir", str(state)], check=True, capture_output=True, timeout=60)
    snap = next(state.glob("*.snap"))
    data = bytearray(snap.read_bytes())
    data[len(data) // 2] ^= 0xFF
    snap.write_bytes(bytes(data[: len(data) - 7]))
    p = subprocess.run(
        [str(FERRET), "search", "file", "--root", str(root), "--state-dir", str(state)], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0 and p.stdout.strip() == "file.txt"
    assert "discarded" in p.stderr


def test_cli_index_and_search(tmp_path, tree):
    state = tmp_path / "state"
    p = subprocess.run([str(FERRET), "index", "--root", str(tree), "--state-dir", str(state)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "indexed" in p.stderr
    p = subprocess.run(
        [str(FERRET), "search", "ext:rs", "--root", str(tree), "--state-dir", str(state), "--sort", "path"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.stdout.splitlines() == ["src/lib.rs", "src/main.rs"]
    p = subprocess.run(
        [str(FERRET), "search", "size:>1zb", "--root", str(tree), "--state-dir", str(state)], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 1 and "zb" in p.stderr


def test_cli_search_answers_as_the_search_tool(tmp_path):
    """`ferret search` with no --sort answers as the tool answers an agent:
    best match first, fuzzy matches when no name holds every word, close
    names beside a short answer; the notes on stderr, matches on stdout."""
    root = tmp_path / "r"
    state = tmp_path / "state"
    for rel in [
        "tokio-util/src/codec/decoder.rs",
        "tokio-util/src/codec/encoder.rs",
        "tokio-util/src/io/reader.rs",
        "http/src/status.rs",
        "tokio/src/runtime/stats.rs",
        "docs/astats_notes.md",
        "docs/zz_stats_notes.md",
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    subprocess.run([str(FERRET), "index", "--root", str(root), "--state-dir", str(state)], check=True, capture_output=True, timeout=60)

    def search(*args):
        return subprocess.run(
            [str(FERRET), "search", *args, "--root", str(root), "--state-dir", str(state)], capture_output=True, text=True, timeout=60
        )

    # No name holds all three words: the fuzzy matches answer, and say so.
    p = search("tokio codec decoder")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "tokio-util/src/codec/decoder.rs"
    assert "fuzzy matches" in p.stderr
    # Initials across folders, as the tool takes them.
    p = search("tucdec")
    assert p.returncode == 0 and p.stdout.splitlines()[0] == "tokio-util/src/codec/decoder.rs", (p.stdout, p.stderr)
    # Relevance by default: the name that is the word first, not name order.
    p = search("stats")
    assert p.stdout.splitlines()[0] == "tokio/src/runtime/stats.rs", p.stdout
    p = search("stats", "--sort", "name")
    assert p.stdout.splitlines() == ["docs/astats_notes.md", "tokio/src/runtime/stats.rs", "docs/zz_stats_notes.md"], p.stdout
    assert "fuzzy" not in p.stderr
    # A short answer names what is one letter off, on stderr only.
    p = search("stats.rs")
    assert "http/src/status.rs" in p.stderr and "not matches" in p.stderr
    assert "http/src/status.rs" not in p.stdout
    # Nothing at all: exit status 1, nothing on stdout.
    p = search("qqzzxxvv")
    assert p.returncode == 1 and p.stdout == ""
    p = search("stats", "--sort", "sideways")
    assert p.returncode != 0 and "unknown sort" in p.stderr and "relevance" in p.stderr
    # `--path` takes a folder as the tool's `path` does.
    p = search("rs", "--path", "tokio-util/src/codec")
    assert sorted(p.stdout.splitlines()) == ["tokio-util/src/codec/decoder.rs", "tokio-util/src/codec/encoder.rs"], p.stdout


def test_odd_trees_do_not_break_the_index(tmp_path):
    root = tmp_path / "odd"
    root.mkdir()
    name = os.fsencode(str(root)) + b"/caf\xe9-latin1.txt"
    with open(name, "wb") as f:
        f.write(b"x")
    (root / "locked").mkdir()
    (root / "locked" / "inside.txt").write_text("x")
    os.chmod(root / "locked", 0)
    os.symlink(".", root / "self-loop")
    try:
        async def go():
            async with connect("stdio", "legacy", ["--root", str(root), "--no-persist"]) as c:
                _, s, _, _ = await call(c, "search", {"query": "latin1"})
                return s

        s = run(go())
        assert [p.startswith("caf") and p.endswith("-latin1.txt") for p in paths(s)] == [True]
    finally:
        os.chmod(root / "locked", 0o755)


def test_a_root_deleted_while_served_is_reported_not_fatal(tmp_path):
    root = tmp_path / "vanishing"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("x")

    async def go():
        async with connect("stdio", "legacy", ["--root", str(root), "--no-persist"]) as c:
            await wait_for(lambda: _search(c, "a.txt"))
            import shutil

            shutil.rmtree(root)

            async def gone():
                _, d, _, _ = await call(c, "diagnostics", {})
                return d["index"]["missing_roots"] == ["vanishing"]

            await wait_for(gone)

            async def emptied():
                return await _search(c, "a.txt") == []

            await wait_for(emptied)
            is_error, s, _, _ = await call(c, "read", {"path": "sub/a.txt"})
            assert is_error and s["error"]["code"] == "NOT_FOUND"

    run(go())
