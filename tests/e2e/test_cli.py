"""The binary's own behaviour: refusals at start, help, version, environment."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CAN_BE_NOBODY, FERRET, NOBODY_ENV, NOBODY_PREFIX, call, connect, nobody_tmpdir, run


def ferret(*args, env=None):
    return subprocess.run([str(FERRET), *args], capture_output=True, text=True, timeout=30, env=env)


def test_version_and_help_with_examples():
    v = ferret("--version")
    assert v.returncode == 0 and v.stdout.startswith("ferret ")
    h = ferret("serve", "--help")
    assert h.returncode == 0 and "Examples:" in h.stdout and "FERRET_ROOTS" in h.stdout


def test_missing_root_is_named_with_the_fix(tmp_path):
    p = ferret("serve", "--stdio", "--root", str(tmp_path / "absent"))
    assert p.returncode == 1
    assert str(tmp_path / "absent") in p.stderr and "does not exist" in p.stderr


def test_duplicate_root_names_are_refused(tmp_path):
    (tmp_path / "a" / "same").mkdir(parents=True)
    (tmp_path / "b" / "same").mkdir(parents=True)
    p = ferret("serve", "--stdio", "--root", str(tmp_path / "a" / "same"), "--root", str(tmp_path / "b" / "same"))
    assert p.returncode == 1 and "two roots are named `same`" in p.stderr and "--root" in p.stderr


def test_a_root_inside_another_is_refused_with_the_fix(tmp_path):
    # One inotify watch a folder: served twice, one copy would go stale
    # (search and grep missed a file made in it).
    (tmp_path / "outer" / "inner").mkdir(parents=True)
    p = ferret("serve", "--stdio", "--root", str(tmp_path / "outer"), "--root", str(tmp_path / "outer" / "inner"))
    assert p.returncode == 1, p.stderr
    assert "root `inner`" in p.stderr and "lies inside root `outer`" in p.stderr and "serve only one of them" in p.stderr


def test_unreadable_root_is_refused(tmp_path):
    """As an account that cannot read it (root reads everything, so the test
    switches to nobody when it runs as root: see test_permissions.py)."""
    locked = Path(nobody_tmpdir("ferret-locked-")) / "locked"
    locked.mkdir(mode=0o000)
    try:
        prefix = NOBODY_PREFIX if CAN_BE_NOBODY else []
        p = subprocess.run(
            [*prefix, str(FERRET), "serve", "--stdio", "--root", str(locked)],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            env=NOBODY_ENV,
        )
        assert p.returncode == 1 and "permission" in p.stderr.lower() and "chmod" in p.stderr, p.stderr
    finally:
        shutil.rmtree(locked.parent, ignore_errors=True)


def test_roots_can_come_from_the_environment(tree, tmp_path):
    other = tmp_path / "envroot"
    other.mkdir()
    (other / "e.txt").write_text("from env\n")

    async def go():
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        params = StdioServerParameters(
            command=str(FERRET), args=["serve", "--stdio"], env={"FERRET_ROOTS": f"t={tree},e={other}", "PATH": "/usr/bin:/bin"}
        )
        async with Client(params, mode="legacy") as c:
            return await call(c, "read", {"path": "e/e.txt"})

    _, s, _, _ = run(go())
    assert s["text"] == "from env\n"


def test_stdout_stays_clean_on_stdio(tree):
    """Logs go to stderr: stdout carries only JSON-RPC lines."""
    init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    p = subprocess.run(
        [str(FERRET), "serve", "--stdio", "--root", str(tree)],
        input=init,
        capture_output=True,
        text=True,
        timeout=30,
        env={"FERRET_LOG": "debug", "PATH": "/usr/bin:/bin"},
    )
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith('{"jsonrpc":"2.0","id":1,"result"')
    assert "serving root" in p.stderr


def test_plain_folders_are_taken_verbatim_and_named_apart(tmp_path):
    (tmp_path / "x" / "docs").mkdir(parents=True)
    (tmp_path / "y" / "docs").mkdir(parents=True)
    odd = tmp_path / "a,b:rw"
    odd.mkdir()
    (tmp_path / "x" / "docs" / "one.txt").write_text("one\n")
    (tmp_path / "y" / "docs" / "two.txt").write_text("two\n")
    (odd / "three.txt").write_text("three\n")

    async def go():
        args = ["--no-persist", "--", str(tmp_path / "x" / "docs"), str(tmp_path / "y" / "docs"), str(odd)]
        async with connect("stdio", "legacy", args) as c:
            listing = await call(c, "list", {"path": "."})
            read = await call(c, "read", {"path": "docs-2/two.txt"})
            odd_read = await call(c, "read", {"path": "a,b:rw/three.txt"})
            return listing[1], read[1], odd_read[1]

    listing, read, odd_read = run(go())
    assert sorted(listing["entries"]) == ["a,b:rw/", "docs-2/", "docs/"]
    assert read["text"] == "two\n" and odd_read["text"] == "three\n"


@pytest.mark.parametrize("value", ["1", "yes", "on", "true"])
def test_boolean_variables_take_the_usual_spellings(tmp_path, value):
    """FERRET_NO_PERSIST=1 (as MCP client configs write it) means yes: nothing
    is saved in the state directory."""
    (tmp_path / "root").mkdir()
    state = tmp_path / "state"
    init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    p = subprocess.run(
        [str(FERRET), "serve", "--stdio", "--root", str(tmp_path / "root"), "--state-dir", str(state)],
        input=init,
        capture_output=True,
        text=True,
        timeout=30,
        env={"FERRET_NO_PERSIST": value, "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 0, p.stderr
    assert '"result"' in p.stdout
    assert not state.exists() or not any(state.iterdir()), "nothing persisted"


def test_a_boolean_variable_that_is_not_one_is_named(tmp_path):
    p = ferret("serve", "--stdio", "--root", str(tmp_path), env={"FERRET_NO_PERSIST": "maybe", "PATH": "/usr/bin:/bin"})
    assert p.returncode == 2
    assert "FERRET_NO_PERSIST=maybe is not a boolean" in p.stderr and "1 or 0" in p.stderr


def test_a_client_that_closes_before_its_first_request_is_a_normal_end(tree):
    """A 2026-07-28 client that only probed, or a host checking the command."""
    p = subprocess.run([str(FERRET), "serve", "--stdio", "--no-persist", "--root", str(tree)], input="", capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "connection closed" not in p.stderr


def test_default_logs_never_show_what_the_caller_sent(tree):
    """At the default level (and at debug for ferret's own lines) the log has
    no argument a caller sent, even when the call is refused."""
    marker = "CALLER-ARGUMENT-NOT-FOR-LOGS"
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read", "arguments": {"path": 42, "start_line": marker}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read", "arguments": {"path": marker}}},
    ]
    for level in [None, "debug"]:
        env = {"PATH": "/usr/bin:/bin", **({"FERRET_LOG": level} if level else {})}
        p = subprocess.run(
            [str(FERRET), "serve", "--stdio", "--no-persist", "--root", str(tree)],
            input="".join(json.dumps(m) + "\n" for m in messages),
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
        )
        assert marker in p.stdout, "the caller is told what was wrong"
        assert marker not in p.stderr, (level, p.stderr)
