"""The index run as an unprivileged user (root reads every folder, so these
cases only exist for other users): unreadable folders are counted in
`diagnostics`, skipped, and the rest of the tree is indexed and followed."""

import os
import shutil
import subprocess
import time

from conftest import SETPRIV, as_nobody, as_nobody_only, call, nobody_tmpdir, run, search_until, shown
from mcp import Client

pytestmark = as_nobody_only


def test_unreadable_folders_are_counted_skipped_and_the_rest_followed():
    base = nobody_tmpdir("ferret-nobody-")
    try:
        root = base / "root"
        (root / "open" / "deeper").mkdir(parents=True)
        (root / "open" / "seen.txt").write_text("x")
        (root / "open" / "deeper" / "also.txt").write_text("x")
        (root / "locked" / "inner").mkdir(parents=True)
        (root / "locked" / "hidden-from-nobody.txt").write_text("x")
        (root / "noexec").mkdir()
        (root / "noexec" / "unlisted.txt").write_text("x")
        subprocess.run(["chown", "-R", "nobody:nogroup", str(root)], check=True)
        os.chmod(root / "locked", 0o000)
        # Readable but not searchable: listed, yet nothing in it can be described.
        os.chmod(root / "noexec", 0o644)
        assert subprocess.run(
            [SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "ls", str(root / "locked")],
            capture_output=True,
        ).returncode != 0, "nobody must not read the locked folder"

        async def go():
            target = as_nobody("serve", "--stdio", "--root", str(root), "--no-persist")
            async with Client(target, mode="legacy") as c:
                _, d, _, _ = await call(c, "diagnostics", {})
                deadline = time.time() + 30
                while d["index"]["state"] != "ready" and time.time() < deadline:
                    time.sleep(0.1)
                    _, d, _, _ = await call(c, "diagnostics", {})
                assert d["index"]["unreadable_folders"] == 1, d["index"]
                _, s, _, _ = await call(c, "search", {"query": "txt"})
                found = shown(s)
                assert "open/seen.txt" in found and "open/deeper/also.txt" in found
                assert not any("hidden-from-nobody" in p for p in found)
                assert not any("unlisted" in p for p in found)
                _, s, _, _ = await call(c, "search", {"query": "folder:"})
                assert {"locked/", "noexec/", "open/"} <= set(shown(s)), s
                # The index carries on: a file created now is found.
                (root / "open" / "later.txt").write_text("x")
                os.chown(root / "open" / "later.txt", 65534, 65534)
                s = await search_until(c, "later.txt", ["open/later.txt"])
                assert shown(s) == ["open/later.txt"]
                is_error, r, _, _ = await call(c, "read", {"path": "locked/hidden-from-nobody.txt"})
                # spec/tools.md: a permission error is IO_ERROR with the OS's words.
                assert is_error and r["error"]["code"] == "IO_ERROR", r
                assert "permission denied" in r["error"]["message"], r

        run(go())
    finally:
        os.chmod(base / "root" / "locked", 0o755)
        shutil.rmtree(base, ignore_errors=True)
