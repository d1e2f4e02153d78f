"""Faults, each with the data checked afterwards: a full disk under a write,
under the snapshot and under the journal (small tmpfs mounts); a read-only
state folder; the journal damaged while ferret runs; SIGKILL while the
snapshot is saved; the inotify watch limit reached (a user namespace with its
own small limit, so nothing else on the machine is touched); the event queue
overflowed by a storm of 100,000 creates.

"Checked afterwards" means what a user would check: files hold their old
content or their new content, never a mix, and no temporary file is left; the
snapshot on disk is the last good one and the next start loads it; the index
ends equal to a fresh walk of the tree, to the entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from conftest import FERRET, HttpServer, call, connect, run
from mcp import Client
from mcp.client.stdio import StdioServerParameters, get_default_environment

IS_ROOT = os.geteuid() == 0


@contextlib.contextmanager
def tmpfs(where: Path, size: str, read_only: bool = False):
    """A small tmpfs at `where` (a fresh folder), unmounted afterwards."""
    if not IS_ROOT:
        pytest.skip("mounting a small tmpfs needs root")
    where.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remount(where: Path, option: str):
    subprocess.run(["mount", "-o", f"remount,{option}", str(where)], check=True)


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill `disk` until at most `leave` bytes are free; returns the filler."""
    filler = disk / "filler"
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with open(filler, "wb") as f:
        remaining = max(0, free - leave)
        chunk = b"\0" * (1 << 20)
        try:
            while remaining > 0:
                n = f.write(chunk[: min(len(chunk), remaining)])
                remaining -= n
            f.flush()
            os.fsync(f.fileno())
        except OSError:
            pass  # full a little early: all the better
    return filler


def free_bytes(disk: Path) -> int:
    st = os.statvfs(disk)
    return st.f_bavail * st.f_frsize


def fresh_walk(root: Path) -> set[str]:
    """Every entry below `root` as ferret shows it (folders end in `/`), hidden ones left out."""
    seen = set()
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel = Path(here).relative_to(root)
        for d in dirs:
            seen.add(f"{(rel / d).as_posix()}/".removeprefix("./"))
        for f in files:
            if not f.startswith("."):
                seen.add((rel / f).as_posix().removeprefix("./"))
    return seen


async def indexed(c) -> set[str]:
    """Every entry the index holds, paged out of `search`."""
    out: set[str] = set()
    offset = 0
    while True:
        _, s, _, _ = await call(c, "search", {"query": "", "sort": "path", "offset": offset, "limit": 2000})
        out.update(s["results"])
        offset += len(s["results"])
        if not s.get("truncated") or not s["results"]:
            return out


async def diagnostics(c) -> dict:
    return (await call(c, "diagnostics", {}))[1]


async def settle(c, root: Path, within: float = 60) -> dict:
    """Wait until the index is ready and holds exactly what a fresh walk finds."""
    expected = fresh_walk(root)
    deadline = time.monotonic() + within
    while True:
        d = await diagnostics(c)
        if d["index"]["state"].startswith("ready") and d["index"]["entries"] == len(expected):
            got = await indexed(c)
            if got == expected:
                return d
        if time.monotonic() > deadline:
            got = await indexed(c)
            missing, extra = sorted(expected - got)[:5], sorted(got - expected)[:5]
            raise AssertionError(f"index != fresh walk: {len(expected - got)} missing {missing}, {len(got - expected)} extra {extra}; {d['index']}")
        await asyncio.sleep(0.1)


def make_tree(root: Path, folders: int, files_per_folder: int) -> Path:
    for d in range(folders):
        sub = root / f"d{d:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        for f in range(files_per_folder):
            (sub / f"f{f:04d}.txt").write_text(f"{d} {f}\n")
    return root


def leftovers(folder: Path, pattern: str) -> list[str]:
    return sorted(p.name for p in folder.rglob(pattern))


# ---- a full disk ----------------------------------------------------------------


def test_disk_full_while_writing_leaves_every_file_whole(tmp_path):
    with tmpfs(tmp_path / "disk", "2m") as disk:
        root = disk / "root"
        root.mkdir()
        original = "original line\n" * 200 + "the end\n"
        (root / "keep.txt").write_text(original)
        (root / "large.bin").write_bytes(os.urandom(256 * 1024))
        filler = fill(disk, leave=32 * 1024)
        big = "x" * (256 * 1024)

        async def go():
            async with connect("stdio", "legacy", ["--root", f"{root}:rw", "--no-persist"]) as c:
                created = await call(c, "write", {"path": "new.txt", "content": big})
                overwritten = await call(c, "write", {"path": "keep.txt", "content": big, "mode": "overwrite"})
                edited = await call(c, "edit", {"path": "keep.txt", "edits": [{"old_text": "the end\n", "new_text": big}]})
                copied = await call(c, "manage", {"op": "copy", "path": "large.bin", "to": "copy.bin"})
                after = [p.name for p in root.iterdir()]
                content = (root / "keep.txt").read_text()
                filler.unlink()
                retried = await call(c, "write", {"path": "new.txt", "content": big})
                return created, overwritten, edited, copied, after, content, retried

        created, overwritten, edited, copied, after, content, retried = run(go())
        for what, (is_error, s, _, _) in [("create", created), ("overwrite", overwritten), ("edit", edited), ("copy", copied)]:
            assert is_error and s["error"]["code"] == "IO_ERROR", (what, s)
            assert "No space left on device" in s["error"]["message"], (what, s)
            assert "left as it was and no temporary file remains" in s["error"]["message"], (what, s)
            assert "free space" in s["error"]["hint"], (what, s)
        assert sorted(after) == ["keep.txt", "large.bin"], "no half-written file, no .ferret-tmp-*"
        assert content == original, "the old content is intact"
        assert not retried[0] and (root / "new.txt").read_text() == big, "with room again, the write lands whole"


def test_disk_full_under_the_snapshot_and_the_journal(tmp_path):
    """The state folder fills up while ferret runs: the index stays right, the
    snapshot on disk stays the last good one (no temporary file left), the
    journal stays a sound database, and the next start loads that snapshot."""
    root = make_tree(tmp_path / "root", 20, 50)
    with tmpfs(tmp_path / "state", "4m") as state:
        args = ["--root", str(root), "--state-dir", str(state)]

        async def session(then=None):
            server = HttpServer(args)
            try:
                async with connect("http", "legacy", [], server) as c:
                    d = await settle(c, root)
                    if then:
                        await then(c)
                        d = await settle(c, root)
                    return d, await call(c, "changes", {"limit": 1})
            finally:
                server.stop()

        first, _ = run(session())
        (snap,) = state.glob("*.snap")
        good = snap.read_bytes()
        filler = fill(state)

        async def churn(c):
            for d in range(20):
                (root / f"d{d:03d}" / "late.txt").write_text("late\n")
            for i in range(300):
                (root / f"new{i:03d}.txt").write_text("x")

        second, changes = run(session(churn))
        assert snap.read_bytes() == good, "the full disk left the last good snapshot as it was"
        assert leftovers(state, "*.tmp*") == [], "no half-written snapshot is left behind"
        journal = next(state.glob("*.journal.sqlite"))
        with sqlite3.connect(journal) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "the journal is still a sound database"
        assert not changes[0], "changes still answers"
        filler.unlink()

        async def check(c):
            return None

        third, _ = run(session(check))
        assert third["index"]["loaded_from_snapshot"], third["index"]
        assert third["index"]["entries"] == len(fresh_walk(root))


def test_a_read_only_state_folder_keeps_serving_in_memory(tmp_path):
    root = make_tree(tmp_path / "root", 3, 3)
    with tmpfs(tmp_path / "state", "1m") as state:
        remount(state, "ro")

        async def go():
            async with connect("stdio", "legacy", ["--root", str(root), "--state-dir", str(state)]) as c:
                d = await settle(c, root)
                (root / "d000" / "fresh.txt").write_text("x")
                await settle(c, root)
                _, ch, _, _ = await call(c, "changes", {})
                return d, ch

        d, ch = run(go())
        assert "unusable" in (d["index"]["journal_error"] or ""), d["index"]
        # The create and the write may land in one batch or two (a loaded
        # machine): one change or two, both of the new file.
        paths = [e["path"] for e in ch["changes"]]
        assert paths and set(paths) == {"d000/fresh.txt"}, ("changes are kept in memory", ch)
        # HTTP needs its token kept there: refused at start, with the ways out.
        p = subprocess.run(
            [str(FERRET), "serve", "--root", str(root), "--state-dir", str(state), "--bind", "127.0.0.1:0"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert p.returncode == 1, p.stderr
        for fix in ["--state-dir", "--token-file", "--no-token"]:
            assert fix in p.stderr, p.stderr
        doctor = subprocess.run([str(FERRET), "doctor", "--stdio", "--root", str(root), "--state-dir", str(state)], capture_output=True, text=True, timeout=60)
        assert doctor.returncode == 1 and "FAIL  state dir" in doctor.stdout and "--state-dir" in doctor.stdout


# ---- the journal damaged, the snapshot interrupted ---------------------------------


def damage(journal: Path):
    """Another program writes over the journal: garbage for the database, its
    write-ahead log cut to nothing."""
    size = max(journal.stat().st_size, 64 * 1024)
    with open(journal, "r+b") as f:
        f.write(os.urandom(size))
    wal = journal.with_name(journal.name + "-wal")
    if wal.exists():
        os.truncate(wal, 0)


def sqlite_says_sound(path: Path) -> bool:
    """SQLite's own verdict on a database file, read as it lies (immutable:
    nothing replayed, nothing written)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?immutable=1", uri=True)) as db:
            return db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    except sqlite3.DatabaseError:
        return False


def test_the_journal_damaged_while_ferret_runs(tmp_path):
    root = make_tree(tmp_path / "root", 5, 10)
    state = tmp_path / "state"
    args = ["--root", str(root), "--state-dir", str(state)]

    async def serve_and(then):
        server = HttpServer(args)
        try:
            async with connect("http", "legacy", [], server) as c:
                await settle(c, root)
                return await then(c)
        finally:
            server.stop()
            assert server.proc.returncode == 0, "a damaged journal does not crash the shutdown"

    async def damaged_while_running(c):
        for i in range(50):
            (root / "d000" / f"before{i}.txt").write_text("x")
        await settle(c, root)
        damage(next(state.glob("*.journal.sqlite")))
        for i in range(50):
            (root / "d001" / f"after{i}.txt").write_text("x")
        d = await settle(c, root)
        return d, await call(c, "changes", {"limit": 2000}), await call(c, "read", {"path": "d001/after0.txt"})

    d, (ch_error, ch, _, _), (read_error, _, _, _) = run(serve_and(damaged_while_running))
    assert d["index"]["entries"] == len(fresh_walk(root)), "the index carries on"
    assert not read_error, "files are still served"
    # changes answers from what SQLite holds (its page cache, and the
    # write-ahead log it goes on writing): every creation, before the damage
    # and after it.
    assert not ch_error, ch
    created = {f"d000/before{i}.txt" for i in range(50)} | {f"d001/after{i}.txt" for i in range(50)}
    assert created <= {e["path"] for e in ch["changes"]}, sorted(created - {e["path"] for e in ch["changes"]})
    # At the stop SQLite writes back the pages it holds, over some or all of
    # the damage: doctor's verdict on the file is SQLite's own integrity
    # check of it, and a damaged one comes with the fix.
    doctor = subprocess.run([str(FERRET), "doctor", "--stdio", *args], capture_output=True, text=True, timeout=60)
    verdict = "ok" if sqlite_says_sound(next(state.glob("*.journal.sqlite"))) else "FAIL"
    assert re.search(rf"^{verdict} +journal", doctor.stdout, re.M), doctor.stdout
    if verdict == "FAIL":
        assert "mv " in doctor.stdout, doctor.stdout

    # Damaged for certain now: the next start says so, keeps changes in
    # memory, and serves; doctor's fix (move it aside) gives a new journal.
    journal = next(state.glob("*.journal.sqlite"))
    damage(journal)

    async def restarted(c):
        (root / "d002" / "later.txt").write_text("x")
        await settle(c, root)
        return await diagnostics(c), await call(c, "changes", {})

    d, (ch_error, ch, _, _) = run(serve_and(restarted))
    assert d["index"]["journal_error"], "the restart says the journal could not be used"
    # One file written since the restart: its creation, and (when the watcher
    # read the write in a later batch than the creation, as on a loaded
    # machine) a modification after it; nothing from before the restart.
    assert not ch_error and {e["path"] for e in ch["changes"]} == {"d002/later.txt"}, ch
    assert "created" in [e["action"] for e in ch["changes"]], ch
    doctor = subprocess.run([str(FERRET), "doctor", "--stdio", *args], capture_output=True, text=True, timeout=60)
    assert "FAIL  journal" in doctor.stdout, doctor.stdout
    fix = next(line for line in doctor.stdout.splitlines() if "fix: move it aside" in line)
    subprocess.run(fix.split("(", 1)[1].split(")", 1)[0], shell=True, check=True)
    d, _ = run(serve_and(restarted))
    assert d["index"]["journal_error"] is None, d["index"]


class Creations:
    """Wake on files created in one folder (inotify, as ferret itself)."""

    IN_CREATE, IN_MOVED_TO = 0x100, 0x80

    def __init__(self, folder: Path):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(0)
        assert self.libc.inotify_add_watch(self.fd, str(folder).encode(), self.IN_CREATE | self.IN_MOVED_TO) >= 0

    def next_name(self) -> str:
        buf = os.read(self.fd, 4096)
        length = int.from_bytes(buf[12:16], "little")
        return buf[16 : 16 + length].rstrip(b"\0").decode()

    def close(self):
        os.close(self.fd)


def test_sigkill_while_the_snapshot_is_saved_keeps_the_last_good_one(tmp_path):
    """SIGKILL the moment the stop's snapshot save creates its temporary file.
    The save (write and fsync of a few MB) may still win the race on a loaded
    machine, so each round checks which happened: a killed save leaves its
    temporary file, and then the snapshot must be the last good one; a save
    that finished first is the new good one, and the next round tries again."""
    root = make_tree(tmp_path / "root", 100, 400)  # 40,000 files: a few MB of snapshot
    state = tmp_path / "state"
    args = ["--root", str(root), "--state-dir", str(state)]

    async def settled_on(server):
        async with connect("http", "legacy", [], server) as c:
            return await settle(c, root, within=120)

    first = HttpServer(args)
    try:
        run(settled_on(first))
    finally:
        first.stop()
    (snap,) = state.glob("*.snap")

    interrupted = None
    for attempt in range(8):
        good = snap.read_bytes()
        server = HttpServer(args)
        try:
            run(settled_on(server))
            for d in range(100):
                (root / f"d{d:03d}" / f"extra{attempt}.txt").write_text("x")
            run(settled_on(server))
            watch = Creations(state)
            server.proc.send_signal(signal.SIGTERM)  # the stop writes the snapshot
            name = watch.next_name()
            server.proc.kill()  # the moment its temporary file appears
            server.proc.wait(timeout=10)
            watch.close()
        finally:
            server.stop()
        snapshot_tmp = snap.with_suffix(f".tmp{server.proc.pid}").name
        assert name == snapshot_tmp, f"the first file the stop creates is the snapshot's temporary one ({name})"
        if (state / snapshot_tmp).exists():
            interrupted = attempt
            break
        # The save won the race: what it wrote is whole, the last good one now.
    assert interrupted is not None, "the kill never landed during the save in 8 rounds"
    assert snap.read_bytes() == good, "the killed save did not touch the last good snapshot"

    third = HttpServer(args)
    try:
        d = run(settled_on(third))
    finally:
        third.stop()
    assert d["index"]["loaded_from_snapshot"], d["index"]
    assert d["index"]["snapshot_error"] is None
    print(f"killed mid-save in round {interrupted + 1}")


# ---- inotify's limits -------------------------------------------------------------------

UNSHARE = shutil.which("unshare")


def in_namespace_with_watch_limit(limit: int, *ferret_args: str) -> StdioServerParameters:
    """ferret started in a user namespace of its own whose inotify watch limit
    is `limit`: the kernel's real ENOSPC, without touching the machine's limit."""
    script = f'echo {limit} > /proc/sys/user/max_inotify_watches && exec "$0" "$@"'
    return StdioServerParameters(
        command=UNSHARE,
        args=["--user", "--map-root-user", "sh", "-c", script, str(FERRET), *ferret_args],
        env={**get_default_environment(), "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]},
    )


def test_the_watch_limit_reached_degrades_to_rescans_and_misses_nothing(tmp_path):
    if UNSHARE is None or subprocess.run([UNSHARE, "--user", "--map-root-user", "true"], capture_output=True).returncode != 0:
        pytest.skip("user namespaces are not available here")
    root = make_tree(tmp_path / "root", 120, 2)
    target = in_namespace_with_watch_limit(40, "serve", "--stdio", "--root", str(root), "--no-persist", "--rescan-every", "1s")

    async def go():
        async with Client(target, mode="legacy") as c:
            d = await settle(c, root)
            # Deep in the tree, past the first 40 folders watched.
            for n in (119, 80, 60):
                (root / f"d{n:03d}" / "new-while-degraded.txt").write_text("x")
            (root / "d100" / "f0000.txt").unlink()
            return d, await settle(c, root, within=20)

    before, after = run(go())
    assert before["index"]["watch_limit_reached"], before["index"]
    assert "degraded" in before["index"]["watcher"] and "40" in before["index"]["watcher"], before["index"]["watcher"]
    assert after["index"]["entries"] == len(fresh_walk(root))


def test_a_storm_of_100000_creates_overflows_the_queue_and_misses_nothing(tmp_path):
    """ferret is stopped (SIGSTOP) while 100,000 files are created, so the
    kernel's event queue (max_queued_events, 16,384 here) overflows for sure;
    once it runs again the overflow is answered with a rescan."""
    root = make_tree(tmp_path / "root", 100, 1)
    server = HttpServer(["--root", str(root), "--no-persist"])
    try:

        async def go():
            async with connect("http", "legacy", [], server) as c:
                before = await settle(c, root)
                started = time.time()
                server.proc.send_signal(signal.SIGSTOP)
                try:
                    for d in range(100):
                        folder = root / f"d{d:03d}"
                        for f in range(1000):
                            with open(folder / f"storm{f:04d}", "wb"):
                                pass
                finally:
                    server.proc.send_signal(signal.SIGCONT)
                # At once: the answer holds every create, or says it may not
                # (the queue overflowed, so the index reads the disk again).
                _, early, _, _ = await call(c, "search", {"query": "storm", "limit": 0})
                after = await settle(c, root, within=120)
                _, created, _, _ = await call(c, "changes", {"action": "created", "since": str(int(started)), "limit": 0})
                return before, after, created, early

        before, after, created, early = run(go())
    finally:
        server.stop()
    print("search at once after the storm:", early)
    told = early.get("index", {})
    assert early["total"] == 100_000 or told.get("reconciling") or told.get("behind"), early
    assert after["index"]["overflow_rescans"] > before["index"]["overflow_rescans"], after["index"]
    assert after["index"]["entries"] == 100 + 100 + 100_000
    assert created["total"] == 100_000, "every create is in the journal: none missed"
