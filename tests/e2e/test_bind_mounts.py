"""A folder at two paths inside a root: a bind mount.

inotify watches a folder once, whatever path it was reached by: a change
made in it is heard at one of its paths only, and the index held the other
as it was at the walk (a file deleted through one path stayed in the index
at the other; a file made there was never found there). ferret must notice
the folder's second path (the same device and inode), say so in
`diagnostics` and `ferret doctor`, read both paths again every
`--rescan-every`, and never answer a grep from an index that cannot have
heard the change.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import call, connect, diagnostics_when_walked, doctor_checks, run, search_until, shown


@pytest.fixture
def bound(tmp_path: Path):
    root = tmp_path / "r"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "a" / "old.txt").write_text("old file\n")
    if os.geteuid() != 0 or subprocess.run(
        ["mount", "--bind", str(root / "a"), str(root / "b")], capture_output=True
    ).returncode != 0:
        pytest.skip("needs root and mount --bind")
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(root / "b")], capture_output=True)


def serve(root: Path, rescan_every: str):
    return connect("stdio", "legacy", ["--no-persist", "--rescan-every", rescan_every, "--root", str(root)])


async def total_until(c, query: str, total: int, timeout: float = 20.0) -> dict:
    """The `search` answer (in path order) once it counts `total` matches, or
    the last one at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        _, s, _, _ = await call(c, "search", {"query": query, "sort": "path"})
        if s["total"] == total or time.monotonic() > deadline:
            return s
        await asyncio.sleep(0.2)


def test_both_paths_are_named_and_read_again(bound):
    root = bound
    token = f"bound-token-{os.getpid()}"

    async def go():
        async with serve(root, "1s") as c:
            s = await search_until(c, "old.txt", ["a/old.txt", "b/old.txt"], timeout=20)
            d = await diagnostics_when_walked(c)
            assert sorted(d["index"]["network_folders"]) == ["a (bind mount)", "b (bind mount)"], d["index"]
            # Made through one path: a grep at once finds it at both (the
            # index cannot vouch for itself here, so files are read).
            (root / "a" / "new.txt").write_text(f"{token}\n")
            e, g, _, _ = await call(c, "grep", {"pattern": token, "output": "files"})
            assert not e and sorted(g["files"]) == ["a/new.txt", "b/new.txt"], g
            # The rescans bring the index to both paths, made and deleted.
            s = await search_until(c, "new.txt", ["a/new.txt", "b/new.txt"], timeout=20)
            assert sorted(shown(s)) == ["a/new.txt", "b/new.txt"], f"a path never heard of the file: {s}"
            (root / "b" / "old.txt").unlink()
            s = await total_until(c, "old.txt", 0)
            assert s["total"] == 0, f"a deleted file stayed at one of its paths: {s}"

    run(go())


def test_grep_uses_the_content_index_outside_the_bound_folders(bound):
    # Only the bound folders' files are read whatever the content index
    # holds (and their changed folders listed); it judges the rest.
    root = bound
    token = f"outside-token-{os.getpid()}"
    (root / "c").mkdir()
    (root / "c" / "outside.txt").write_text(f"{token}\n")
    (root / "c" / "other.txt").write_text("nothing here\n")

    async def go():
        async with serve(root, "1h") as c:
            d = await diagnostics_when_walked(c)
            assert sorted(d["index"]["network_folders"]) == ["a (bind mount)", "b (bind mount)"], d["index"]
            deadline = time.monotonic() + 30
            while True:
                e, g, _, _ = await call(c, "grep", {"pattern": token, "output": "files", "path": "c"})
                if g["content_index"].get("used") or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            assert not e and g["files"] == ["c/outside.txt"], g
            # A folder no bind touches: the index answers for every file.
            assert g["content_index"]["used"] and "not_indexed" not in g["content_index"], g
            assert g["files_scanned"] == 1, g
            # The whole tree: made through one path, found at both at once
            # (no rescan comes within the hour), the rest judged by the index.
            (root / "a" / "new.txt").write_text(f"{token}\n")
            e, g, _, _ = await call(c, "grep", {"pattern": token, "output": "files"})
            assert not e and sorted(g["files"]) == ["a/new.txt", "b/new.txt", "c/outside.txt"], g
            ci = g["content_index"]
            assert ci["used"] and ci["not_indexed"] >= 3, g
            # c/other.txt was never read.
            assert g["files_scanned"] == 5, g

    run(go())


def test_a_bound_folder_renamed_above_stays_unheard(tmp_path):
    # `mv d e` with `d/b` bound to `a`: the listed folder moves with its
    # parent, so a change heard at `a` still leaves `e/b` read from the disk.
    root = tmp_path / "r"
    (root / "a").mkdir(parents=True)
    (root / "d" / "b").mkdir(parents=True)
    (root / "c").mkdir()
    (root / "a" / "old.txt").write_text("old file\n")
    (root / "c" / "x.txt").write_text("nothing\n")
    if os.geteuid() != 0 or subprocess.run(
        ["mount", "--bind", str(root / "a"), str(root / "d" / "b")], capture_output=True
    ).returncode != 0:
        pytest.skip("needs root and mount --bind")
    token = f"renamed-token-{os.getpid()}"

    async def go():
        async with serve(root, "1h") as c:
            d = await diagnostics_when_walked(c)
            assert sorted(d["index"]["network_folders"]) == ["a (bind mount)", "d/b (bind mount)"], d["index"]
            os.rename(root / "d", root / "e")
            await search_until(c, "old.txt", ["a/old.txt", "e/b/old.txt"], timeout=20)
            d = (await call(c, "diagnostics", {}))[1]
            assert sorted(d["index"]["network_folders"]) == ["a (bind mount)", "e/b (bind mount)"], d["index"]
            deadline = time.monotonic() + 30
            while True:
                e, g, _, _ = await call(c, "grep", {"pattern": "nothing", "output": "files", "path": "c"})
                if g["content_index"].get("used") or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            assert g["content_index"].get("used"), g
            (root / "a" / "old.txt").write_text(f"old file {token}\n")
            (root / "a" / "new1.txt").write_text(f"{token}\n")
            (root / "e" / "b" / "new2.txt").write_text(f"{token}\n")
            e, g, _, _ = await call(c, "grep", {"pattern": token, "output": "files"})
            want = sorted(f"{top}/{n}" for top in ("a", "e/b") for n in ("old.txt", "new1.txt", "new2.txt"))
            assert not e and sorted(g["files"]) == want, g

    try:
        run(go())
    finally:
        subprocess.run(["umount", "-l", str(root / "e" / "b")], capture_output=True)
        subprocess.run(["umount", "-l", str(root / "d" / "b")], capture_output=True)


def test_a_mount_made_while_serving_is_read_before_the_next_answer(tmp_path):
    # A mount makes no inotify event: the folder it covers is read again
    # once the mount table changes, before a search or grep asked after it
    # passes the watcher's barrier; a bind mount is then named as such.
    root = tmp_path / "r"
    for d in ("a", "c", "m"):
        (root / d).mkdir(parents=True)
    (root / "a" / "old.txt").write_text("old file\n")
    (root / "m" / "under.txt").write_text("hidden by the mount\n")
    token = f"mounted-token-{os.getpid()}"
    mounted: list[Path] = []

    def mount(*args: str, at: Path) -> None:
        if os.geteuid() != 0 or subprocess.run(["mount", *args, str(at)], capture_output=True).returncode != 0:
            pytest.skip("needs root, mount --bind and tmpfs")
        mounted.append(at)

    async def go():
        async with serve(root, "1h") as c:
            d = await diagnostics_when_walked(c)
            assert d["index"]["network_folders"] == [], d["index"]
            # A file system over a folder: its files at once, the covered
            # ones gone, and what is made there later heard.
            mount("-t", "tmpfs", "ferret-test", at=root / "m")
            (root / "m" / "on.txt").write_text(f"{token}\n")
            _, s, _, _ = await call(c, "search", {"query": "m/", "sort": "path"})
            assert shown(s) == ["m/", "m/on.txt"], s
            (root / "m" / "later.txt").write_text("later\n")
            s = await search_until(c, "later.txt", ["m/later.txt"], timeout=10)
            assert shown(s) == ["m/later.txt"], s
            # A bind mount: both paths named, and a grep at once finds a
            # file made through one path at both.
            mount("--bind", str(root / "a"), at=root / "c")
            (root / "a" / "new.txt").write_text(f"{token}\n")
            e, g, _, _ = await call(c, "grep", {"pattern": token, "output": "files"})
            assert not e and sorted(g["files"]) == ["a/new.txt", "c/new.txt", "m/on.txt"], g
            d = (await call(c, "diagnostics", {}))[1]
            assert sorted(d["index"]["network_folders"]) == ["a (bind mount)", "c (bind mount)"], d["index"]
            # Undone: neither path is listed any more, and the index answers
            # for every file again.
            subprocess.run(["umount", str(root / "c")], check=True)
            mounted.remove(root / "c")
            deadline = time.monotonic() + 20
            while True:
                # (Until the content index has read the files made above.)
                e, g, _, _ = await call(c, "grep", {"pattern": token, "output": "files"})
                assert not e and sorted(g["files"]) == ["a/new.txt", "m/on.txt"], g
                if "not_indexed" not in g["content_index"] or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            assert g["content_index"]["used"] and "not_indexed" not in g["content_index"], g
            d = (await call(c, "diagnostics", {}))[1]
            assert d["index"]["network_folders"] == [], d["index"]
            # A file mounted over a file: a write through either path is
            # heard at neither, so the folder holding it is read from the
            # disk, and the index judges the rest.
            (root / "s").mkdir()
            (root / "s" / "f.txt").write_text("plain\n")
            mount("--bind", str(root / "a" / "old.txt"), at=root / "s" / "f.txt")
            (root / "a" / "old.txt").write_text(f"old file {token}\n")
            e, g, _, _ = await call(c, "grep", {"pattern": token, "output": "files"})
            assert not e and sorted(g["files"]) == ["a/new.txt", "a/old.txt", "m/on.txt", "s/f.txt"], g
            assert g["content_index"].get("used"), g
            d = (await call(c, "diagnostics", {}))[1]
            assert d["index"]["network_folders"] == ["s (a file mounted in it)"], d["index"]

    try:
        run(go())
    finally:
        for at in reversed(mounted):
            subprocess.run(["umount", "-l", str(at)], capture_output=True)


def test_doctor_warns_of_a_folder_at_two_paths(bound, tmp_path):
    root = bound
    checks = doctor_checks("--root", str(root), "--state-dir", str(tmp_path / "state"))
    two = checks["folders at two paths"]
    assert two["status"] == "warn", two
    assert f"{root / 'a'}, {root / 'b'}" in two["message"] and "--rescan-every" in two["message"], two
    assert "network file systems" not in checks, checks


def test_a_folder_bound_into_another_root_is_found_once_built(tmp_path):
    # No one walk sees both paths: each root is walked apart (and a restart
    # compares a big tree part by part), so the built index is looked at.
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "a").mkdir(parents=True)
    second.mkdir()
    (first / "a" / "old.txt").write_text("old file\n")
    if os.geteuid() != 0 or subprocess.run(
        ["mount", "--bind", str(first / "a"), str(second)], capture_output=True
    ).returncode != 0:
        pytest.skip("needs root and mount --bind")

    async def go():
        args = ["--no-persist", "--rescan-every", "1s", "--root", f"one={first}", "--root", f"two={second}"]
        async with connect("stdio", "legacy", args) as c:
            d = await diagnostics_when_walked(c)
            folders = d["index"]["network_folders"]
            assert len(folders) == 2 and all(f.endswith("(bind mount)") for f in folders), d["index"]
            (first / "a" / "new.txt").write_text("new\n")
            s = await total_until(c, "new.txt", 2)
            assert s["total"] == 2, f"one root never heard of the file: {s}"

    try:
        run(go())
    finally:
        subprocess.run(["umount", "-l", str(second)], capture_output=True)


def test_a_restart_from_the_snapshot_names_both_paths_again(bound, tmp_path):
    # The list is not saved: a restart compares the loaded index with the
    # disk (root by root, a big tree part by part) and must find them again.
    root = bound
    args = ["--state-dir", str(tmp_path / "state"), "--rescan-every", "1h", "--root", str(root)]

    async def go():
        for start in ("fresh", "from the snapshot"):
            async with connect("stdio", "legacy", args) as c:
                await search_until(c, "old.txt", ["a/old.txt", "b/old.txt"], timeout=20)
                d = await diagnostics_when_walked(c)
                assert d["index"]["loaded_from_snapshot"] == (start != "fresh"), (start, d["index"])
                assert sorted(d["index"]["network_folders"]) == ["a (bind mount)", "b (bind mount)"], (start, d["index"])

    run(go())
