"""Permission errors, as an account that meets them: ferret runs as `nobody`
(setpriv; the tests run as root, which reads and writes everything). Each
refusal has its code and says what to do, and the rest keeps working: other
files are read, greps skip and count what they cannot open, the index
follows changes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import httpx2 as httpx
import pytest
from conftest import FERRET, NOBODY_ENV, NOBODY_PREFIX, as_nobody, as_nobody_only, call, nobody_tmpdir, run, search_until, shown
from mcp import Client

pytestmark = as_nobody_only

NOBODY = 65534
SECRET = "ONLY-ROOT-MAY-READ-THIS"


@pytest.fixture
def place():
    """A tree nobody owns, with a file and a folder only root may read, a
    folder nobody may read but not enter, and a folder root owns that nobody
    may read but not write."""
    base = nobody_tmpdir("ferret-perm-")
    root = base / "root"
    (root / "open").mkdir(parents=True)
    (root / "open" / "a.txt").write_text("needle in a readable file\n")
    (root / "open" / "b.txt").write_text("another readable needle\n")
    (root / "locked").mkdir()
    (root / "locked" / "inside.txt").write_text(SECRET + " needle\n")
    (root / "secret.txt").write_text(SECRET + " needle\n")
    (root / "readonly.txt").write_text("do not change me\n")
    (root / "theirs").mkdir()
    (root / "theirs" / "file.txt").write_text("owned by root\n")
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(root)], check=True)
    for p in [root / "secret.txt", root / "locked", root / "locked" / "inside.txt", root / "theirs", root / "theirs" / "file.txt"]:
        os.chown(p, 0, 0)
    os.chmod(root / "secret.txt", 0o600)
    os.chmod(root / "locked", 0o700)
    os.chmod(root / "theirs", 0o755)
    os.chmod(root / "readonly.txt", 0o444)
    yield root
    shutil.rmtree(base, ignore_errors=True)


def nobody_can(*argv: str) -> bool:
    return subprocess.run([*NOBODY_PREFIX, *argv], capture_output=True).returncode == 0


def test_unreadable_files_and_folders_are_refused_with_their_code_and_skipped(place):
    root = place
    assert not nobody_can("cat", str(root / "secret.txt")) and not nobody_can("ls", str(root / "locked"))

    async def go():
        async with Client(as_nobody("serve", "--stdio", "--root", str(root), "--no-persist"), mode="legacy") as c:
            out = {
                "read": await call(c, "read", {"path": "secret.txt"}),
                "list": await call(c, "list", {"path": "locked"}),
                "stat": await call(c, "stat", {"paths": ["secret.txt", "open/a.txt"]}),
                "grep": await call(c, "grep", {"pattern": "needle"}),
                "readable": await call(c, "read", {"path": "open/a.txt"}),
            }
            resource = f"file://{root}/secret.txt"
            try:
                await c.read_resource(resource)
                out["resource"] = None
            except Exception as e:  # the SDK raises the JSON-RPC error
                out["resource"] = e
            # The index carries on past what it cannot read.
            (root / "open" / "later.txt").write_text("x")
            os.chown(root / "open" / "later.txt", NOBODY, NOBODY)
            out["search"] = await search_until(c, "later.txt", ["open/later.txt"])
            return out

    out = run(go())
    is_error, s, text, _ = out["read"]
    assert is_error and s["error"]["code"] == "IO_ERROR" and "permission denied" in s["error"]["message"], s
    assert "permissions" in s["error"]["hint"] and SECRET not in text
    is_error, s, _, _ = out["list"]
    assert is_error and s["error"]["code"] == "IO_ERROR" and "permission denied" in s["error"]["message"].lower(), s
    _, s, _, _ = out["stat"]
    secret, readable = s["results"]
    # Its name and size are no secret (the folder is readable); its content is.
    assert secret.get("kind") == "file" or secret.get("error", {}).get("code") == "IO_ERROR", secret
    assert "checksum" not in secret and "lines" not in secret, secret
    assert readable["kind"] == "file" and readable["lines"] == 1
    is_error, s, text, _ = out["grep"]
    assert not is_error, s
    assert sorted(m["path"] for m in s["matches"]) == ["open/a.txt", "open/b.txt"], s
    assert s["skipped"]["unreadable"] >= 1 and SECRET not in text, s["skipped"]
    assert not out["readable"][0]
    assert out["resource"] is not None and SECRET not in str(out["resource"])
    assert shown(out["search"]) == ["open/later.txt"]


def test_a_root_that_cannot_be_read_is_refused_at_start_with_the_fix(place):
    locked = place / "locked"
    p = subprocess.run([*NOBODY_PREFIX, str(FERRET), "serve", "--stdio", "--root", str(locked)], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, env=NOBODY_ENV)
    assert p.returncode == 1, p.stderr
    assert "cannot be" in p.stderr and "permission" in p.stderr.lower() and "chmod" in p.stderr, p.stderr
    doctor = subprocess.run(
        [*NOBODY_PREFIX, str(FERRET), "doctor", "--stdio", "--root", str(locked), "--no-persist"], capture_output=True, text=True, timeout=60, env=NOBODY_ENV
    )
    assert doctor.returncode == 1 and re.search(r"FAIL +root", doctor.stdout) and "fix:" in doctor.stdout, doctor.stdout


def test_a_writable_root_that_cannot_be_written(place):
    """Served :rw, but the account may not write there: every write fails with
    its code and message, nothing is left behind, and doctor says so first."""
    root = place
    theirs = root / "theirs"
    assert not nobody_can("touch", str(theirs / "probe"))

    async def go():
        args = ["serve", "--stdio", "--root", f"{root}:rw", "--no-persist"]
        async with Client(as_nobody(*args), mode="legacy") as c:
            return {
                "create": await call(c, "write", {"path": "theirs/new.txt", "content": "x"}),
                "overwrite": await call(c, "write", {"path": "theirs/file.txt", "content": "x", "mode": "overwrite"}),
                "edit": await call(c, "edit", {"path": "theirs/file.txt", "edits": [{"old_text": "owned", "new_text": "taken"}]}),
                "mkdir": await call(c, "manage", {"op": "mkdir", "path": "theirs/sub"}),
                "delete": await call(c, "manage", {"op": "delete", "path": "theirs/file.txt"}),
                "readonly": await call(c, "write", {"path": "readonly.txt", "content": "changed", "mode": "overwrite"}),
                "readonly_edit": await call(c, "edit", {"path": "readonly.txt", "edits": [{"old_text": "do not", "new_text": "do"}]}),
                "allowed": await call(c, "write", {"path": "open/new.txt", "content": "fine"}),
            }

    out = run(go())
    for what in ["create", "overwrite", "edit", "mkdir", "delete", "readonly", "readonly_edit"]:
        is_error, s, _, _ = out[what]
        assert is_error and s["error"]["code"] == "IO_ERROR", (what, s)
        assert "permission denied" in s["error"]["message"].lower() or "read-only" in s["error"]["message"], (what, s)
        assert s["error"].get("hint"), (what, s)
    assert sorted(p.name for p in theirs.iterdir()) == ["file.txt"], "nothing created, no .ferret-tmp-* left"
    assert (theirs / "file.txt").read_text() == "owned by root\n"
    assert (root / "readonly.txt").read_text() == "do not change me\n", "a file without write permission is not replaced"
    assert not out["allowed"][0] and (root / "open" / "new.txt").read_text() == "fine"
    doctor = subprocess.run(
        [*NOBODY_PREFIX, str(FERRET), "doctor", "--stdio", "--root", f"{theirs}:rw", "--no-persist"], capture_output=True, text=True, timeout=60, env=NOBODY_ENV
    )
    assert doctor.returncode == 1 and "cannot be written" in doctor.stdout and "chmod u+w" in doctor.stdout, doctor.stdout


def test_the_page_refuses_what_nobody_cannot_read(place):
    """The search page runs as the same account: its preview says why."""
    root = place
    state = root.parent / "state"
    state.mkdir()
    os.chown(state, NOBODY, NOBODY)
    proc = subprocess.Popen(
        [*NOBODY_PREFIX, str(FERRET), "serve", "--root", str(root), "--state-dir", str(state), "--bind", "127.0.0.1:0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=NOBODY_ENV,
    )
    try:
        base = None
        for _ in range(50):
            line = proc.stderr.readline()
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+)/mcp", line)
            if m:
                base = m.group(1)
                break
        assert base, "ferret did not start as nobody"
        token = subprocess.run([*NOBODY_PREFIX, str(FERRET), "token", "--state-dir", str(state)], capture_output=True, text=True, check=True, env=NOBODY_ENV).stdout.strip()
        auth = {"Authorization": f"Bearer {token}"}
        r = httpx.get(f"{base}/ui/api/preview", params={"path": "secret.txt"}, headers=auth, timeout=10)
        assert r.status_code >= 400 and SECRET not in r.text, r.text
        assert "permission denied" in r.text.lower(), r.text
        r = httpx.get(f"{base}/ui/api/preview", params={"path": "open/a.txt"}, headers=auth, timeout=10)
        assert r.status_code == 200 and "needle" in r.text
    finally:
        proc.terminate()
        proc.wait(timeout=10)
