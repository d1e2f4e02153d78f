"""Folders inotify cannot hear: network and FUSE file systems.

A change made on another machine through NFS, SMB or sshfs reaches this
machine's inotify as nothing at all. The same holds for any FUSE mount whose
backing files change behind it, which is how this test makes one without a
network: `bindfs` (Debian's package, which ./scripts/test installs) mirrors a
folder, ferret serves the mirror, and files are created in the backing folder.
inotify on the mirror hears none of it; ferret must notice the FUSE file
system (statfs), say so in `diagnostics` and `ferret doctor`, read the folder
again every `--rescan-every`, and never answer a grep from an index that
cannot have heard the change.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import call, connect, diagnostics_when_walked, doctor_checks, run, search_until, shown

pytestmark = pytest.mark.skipif(
    shutil.which("bindfs") is None or not os.path.exists("/dev/fuse") or os.geteuid() != 0,
    reason="needs bindfs, /dev/fuse and root to mount a FUSE mirror",
)


@pytest.fixture
def mirror(tmp_path: Path):
    backing = tmp_path / "backing"
    mount = tmp_path / "mirror"
    backing.mkdir()
    mount.mkdir()
    (backing / "old.txt").write_text("old file\n")
    subprocess.run(["bindfs", "--no-allow-other", str(backing), str(mount)], check=True)
    try:
        yield backing, mount
    finally:
        # bindfs comes with fuse's fusermount or fuse3's fusermount3; as root,
        # umount does it too.
        for cmd in (["fusermount", "-u"], ["fusermount3", "-u"], ["umount"]):
            if shutil.which(cmd[0]) and subprocess.run([*cmd, str(mount)], capture_output=True).returncode == 0:
                break


def serve(mount: Path, rescan_every: str):
    return connect("stdio", "legacy", ["--no-persist", "--rescan-every", rescan_every, "--root", str(mount)])


def made_behind(backing: Path, token: str) -> None:
    """A file made in the backing folder: inotify on the mirror hears nothing."""
    (backing / "sub").mkdir()
    (backing / "sub" / "from_elsewhere.txt").write_text(f"{token}\n")


def test_a_grep_at_once_finds_what_inotify_never_heard(mirror):
    backing, mount = mirror
    token = f"remote-token-{os.getpid()}"

    async def go():
        # No rescan for an hour: only the grep's own listing can find it.
        async with serve(mount, "1h") as c:
            s = await search_until(c, "old.txt", ["old.txt"], timeout=20)
            assert shown(s) == ["old.txt"], s
            # The walk finds the mount's file system; under load the first
            # answers can come before the walk's last folder is counted.
            d = await diagnostics_when_walked(c)
            assert d["index"]["network_folders"] == [". (fuse)"], d["index"]
            assert shown(s) == ["old.txt"], s
            made_behind(backing, token)
            # The index cannot vouch for itself here, so the changed folders
            # are listed and the file is read.
            e, g, _, _ = await call(c, "grep", {"pattern": token, "output": "files"})
            assert not e and g["files"] == ["sub/from_elsewhere.txt"], g
            # ...while the index itself has not heard of it.
            _, s, _, _ = await call(c, "search", {"query": "from_elsewhere.txt", "sort": "name"})
            assert s["total"] == 0, s

    run(go())


def test_a_fuse_mount_is_read_again_every_rescan(mirror):
    backing, mount = mirror

    async def go():
        async with serve(mount, "1s") as c:
            await search_until(c, "old.txt", ["old.txt"], timeout=20)
            made_behind(backing, "x")
            s = await search_until(c, "from_elsewhere.txt", ["sub/from_elsewhere.txt"], timeout=20)
            assert shown(s) == ["sub/from_elsewhere.txt"], f"the rescan never found the file: {s}"

    run(go())


def test_doctor_warns_of_a_fuse_mount(mirror, tmp_path):
    _, mount = mirror
    checks = doctor_checks("--root", str(mount), "--state-dir", str(tmp_path / "state"))
    net = checks["network file systems"]
    assert net["status"] == "warn", net
    assert f"{mount} (fuse)" in net["message"] and "--rescan-every" in net["message"], net


def test_a_network_folder_stays_named_when_a_bind_mount_around_it_is_undone(tmp_path):
    # The folders at two paths are asked of the whole index anew each time;
    # a network folder inside one is named only when a walk enters it, so
    # it must never be dropped for being inside.
    root = tmp_path / "r"
    backing = tmp_path / "backing"
    (root / "a" / "n").mkdir(parents=True)
    (root / "c").mkdir()
    backing.mkdir()
    (backing / "old.txt").write_text("old file\n")
    subprocess.run(["bindfs", "--no-allow-other", str(backing), str(root / "a" / "n")], check=True)
    token = f"nested-token-{os.getpid()}"

    async def go():
        async with serve(root, "1h") as c:
            d = await diagnostics_when_walked(c)
            assert d["index"]["network_folders"] == ["a/n (fuse)"], d["index"]
            if os.geteuid() != 0 or subprocess.run(
                ["mount", "--bind", str(root / "a"), str(root / "c")], capture_output=True
            ).returncode != 0:
                pytest.skip("needs mount --bind")
            try:
                await call(c, "search", {"query": "old.txt"})
                d = (await call(c, "diagnostics", {}))[1]
                assert set(d["index"]["network_folders"]) >= {"a (bind mount)", "c (bind mount)"}, d["index"]
            finally:
                subprocess.run(["umount", str(root / "c")], check=True)
            await call(c, "search", {"query": "old.txt"})
            d = (await call(c, "diagnostics", {}))[1]
            assert d["index"]["network_folders"] == ["a/n (fuse)"], d["index"]
            made_behind(backing, token)
            e, g, _, _ = await call(c, "grep", {"pattern": token, "output": "files"})
            assert not e and g["files"] == ["a/n/sub/from_elsewhere.txt"], g

    try:
        run(go())
    finally:
        subprocess.run(["umount", "-l", str(root / "c")], capture_output=True)
        for cmd in (["fusermount", "-u"], ["fusermount3", "-u"], ["umount"]):
            if shutil.which(cmd[0]) and subprocess.run([*cmd, str(root / "a" / "n")], capture_output=True).returncode == 0:
                break
