"""What operators touch: ferret doctor, ferret.toml and `ferret config`, log
formats, completions and the man page."""

import asyncio
import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import httpx2 as httpx
import pytest
from conftest import FERRET, STATE_HOME, call, connect, run


def ferret(*args, env=None, timeout=60):
    return subprocess.run([str(FERRET), *args], capture_output=True, text=True, timeout=timeout, env=env)


def clean_env(**extra):
    """The environment without any FERRET_* setting of the caller, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FERRET_")}
    env["XDG_CONFIG_HOME"] = env.get("XDG_CONFIG_HOME_FOR_TESTS", "/nonexistent-config-home")
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def doctor_json(*args, env=None):
    p = ferret("doctor", "--json", *args, env=env or clean_env())
    return p, json.loads(p.stdout)


def by_check(doc):
    return {c["check"]: c for c in doc["checks"]}


def test_doctor_passes_a_healthy_setup_and_prints_a_client_config(tmp_path):
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.rs").write_text("fn main() {}\n")
    port = free_port()
    p, doc = doctor_json("--root", str(root), "--state-dir", str(tmp_path / "state"), "--bind", f"127.0.0.1:{port}")
    assert p.returncode == 0, p.stdout + p.stderr
    checks = by_check(doc)
    assert doc["ok"] is True
    for name in ["root proj", "state dir", "snapshot", "journal", "index", "free space", "inotify", "http", "tools/list"]:
        assert checks[name]["status"] == "ok", (name, checks[name])
    assert "2 entries (2 folders)" in checks["index"]["message"], checks["index"]
    assert f"127.0.0.1:{port} is free" in checks["http"]["message"]
    assert f"search page and Everything's JSON API at http://127.0.0.1:{port}/" in checks["page"]["message"]
    assert "6656 bytes for 8 tools" in checks["tools/list"]["message"]
    server = doc["client_config"]["claude_desktop_config.json"]["mcpServers"]["ferret"]
    assert server["args"][:4] == ["serve", "--stdio", "--root", str(root)]
    assert Path(server["command"]).name == "ferret"
    assert server["args"][4:] == ["--state-dir", str(tmp_path / "state")]
    # The pasted configuration really starts a working server.

    async def go():
        async with connect("stdio", "legacy", server["args"][2:]) as c:
            return await call(c, "read", {"path": "src/main.rs"})

    assert run(go())[2].count("fn main() {}") == 1

    text = ferret("doctor", "--root", str(root), "--no-persist", "--bind", f"127.0.0.1:{port}", env=clean_env())
    assert text.returncode == 0
    assert text.stdout.splitlines()[0].startswith("ferret ") and "doctor" in text.stdout.splitlines()[0]
    assert any(line.startswith("ok    root proj") for line in text.stdout.splitlines()), text.stdout
    assert "claude mcp add ferret --" in text.stdout


def test_doctor_counts_the_hard_linked_files_every_grep_reads(tmp_path):
    # A write through another hard link is heard by no watcher of this one:
    # the content index never answers for such files, and doctor says how
    # many every grep then reads.
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("text\n")
    (root / "alone.txt").write_text("text\n")
    os.link(root / "a.txt", tmp_path / "outside.txt")
    state = ["--root", str(root), "--state-dir", str(tmp_path / "state")]
    made = ferret("index", *state, env=clean_env(), timeout=120)
    assert made.returncode == 0, made.stderr
    p, doc = doctor_json(*state)
    message = by_check(doc)["content index"]["message"]
    assert "usable: 1 of 2 files indexed" in message, message
    assert "1 file with more than one hard link is read by every grep" in message, message


def test_doctors_http_configurations_carry_the_token_that_serve_uses(tmp_path, start_http):
    """The printed Claude Code command and VS Code entry reach a server started
    with the same flags: they carry the token serve generates and keeps."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    state = tmp_path / "state"
    p, doc = doctor_json("--root", str(root), "--state-dir", str(state), "--bind", f"127.0.0.1:{free_port()}")
    assert p.returncode == 0, p.stdout + p.stderr
    token = (state / "token").read_text().strip()
    assert by_check(doc)["token"]["status"] == "ok" and str(state / "token") in by_check(doc)["token"]["message"]
    http = doc["client_config"]["http"]
    assert http["claude_code"].endswith(f"--header 'Authorization: Bearer {token}'"), http["claude_code"]
    vscode = http["vscode_mcp.json"]["servers"]["ferret"]
    assert vscode["headers"] == {"Authorization": f"Bearer {token}"}
    server = start_http("--root", str(root), "--state-dir", str(state))
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **vscode["headers"]}
    r = httpx.post(server.url, content=json.dumps(body), headers=headers, timeout=10)
    assert r.status_code == 200, r.text
    # --no-token is reported as the risk it is; stdio needs no token at all.
    _, open_doc = doctor_json("--root", str(root), "--state-dir", str(state), "--no-token", "--bind", f"127.0.0.1:{free_port()}")
    assert by_check(open_doc)["token"]["status"] == "warn"
    assert "Authorization" not in json.dumps(open_doc["client_config"])
    _, stdio_doc = doctor_json("--stdio", "--root", str(root), "--state-dir", str(state))
    assert "token" not in by_check(stdio_doc) and "http" not in stdio_doc["client_config"]


def test_doctor_fails_with_the_fix_for_each_problem(tmp_path):
    root = tmp_path / "ok"
    root.mkdir()
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        p, doc = doctor_json(
            "--root", str(root),
            "--root", str(tmp_path / "missing"),
            "--root", "/proc/sys/fs:rw",  # readable, and no file can be created in it, even by root
            "--bind", f"127.0.0.1:{port}",
            "--no-persist",
        )
    finally:
        busy.close()
    assert p.returncode == 1 and doc["ok"] is False
    checks = by_check(doc)
    missing = checks[f"root {tmp_path / 'missing'}"]
    assert missing["status"] == "FAIL" and "does not exist" in missing["message"] and "--root" in missing["fix"]
    fs = checks["root fs"]
    assert fs["status"] == "FAIL" and "probe file" in fs["message"] and "read-only" in fs["fix"]
    http = checks["http"]
    assert http["status"] == "FAIL" and str(port) in http["message"] and "--bind" in http["fix"]
    assert checks["root ok"]["status"] == "ok"


def test_doctor_finds_a_damaged_journal_and_snapshot(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    state = tmp_path / "state"
    built = ferret("index", "--root", str(root), "--state-dir", str(state), env=clean_env())
    assert built.returncode == 0, built.stderr
    _, doc = doctor_json("--root", str(root), "--state-dir", str(state), "--stdio")
    checks = by_check(doc)
    assert checks["snapshot"]["status"] == "ok" and "1 entries" in checks["snapshot"]["message"]
    assert checks["journal"]["status"] == "ok" and "integrity check passed" in checks["journal"]["message"]
    (journal,) = state.glob("*.journal.sqlite")
    (snapshot,) = state.glob("*.snap")
    journal.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4096)
    snapshot.write_bytes(b"garbage")
    p, doc = doctor_json("--root", str(root), "--state-dir", str(state), "--stdio")
    checks = by_check(doc)
    assert p.returncode == 1
    assert checks["journal"]["status"] == "FAIL" and "mv" in checks["journal"]["fix"]
    assert checks["snapshot"]["status"] == "warn" and "rebuilt" in checks["snapshot"]["message"]


def test_config_file_precedence_flags_then_environment_then_file(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "which.txt").write_text(f"I am {d.name}\n")
    config = tmp_path / "ferret.toml"
    config.write_text(f'root = ["{a}"]\nmax-line-chars = 300\nhidden = true\nbind = "127.0.0.1:{free_port()}"\n')
    shown = ferret("config", "--config", str(config), "--max-line-chars", "900", env=clean_env(FERRET_HIDDEN="false"))
    assert shown.returncode == 0, shown.stderr
    rows = {line.split("=")[0].strip(): line for line in shown.stdout.splitlines() if not line.startswith("#")}
    assert f"file ({config} line 1)" in rows["root"] and str(a) in rows["root"]
    assert "900" in rows["max-line-chars"] and "command line" in rows["max-line-chars"]
    assert "false" in rows["hidden"] and "environment (FERRET_HIDDEN)" in rows["hidden"]
    assert "default" in rows["max-file-bytes"]

    async def serving(extra_env):
        env = clean_env(FERRET_CONFIG=str(config), XDG_STATE_HOME=STATE_HOME, **extra_env)
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        params = StdioServerParameters(command=str(FERRET), args=["serve", "--stdio", "--no-persist"], env=env)
        async with Client(params, mode="legacy") as c:
            return await call(c, "read", {"path": "which.txt"})

    assert "I am a" in run(serving({}))[2], "the file's root"
    assert "I am b" in run(serving({"FERRET_ROOTS": str(b)}))[2], "the environment beats the file"


@pytest.mark.parametrize(
    "text,needle",
    [
        ('root = "/tmp"\nmax-file-byte = "1M"\n', "line 2: unknown key `max-file-byte` (did you mean `max-file-bytes`?)"),
        ('root = "/tmp"\n\nmax-file-bytes = "lots"\n', "line 3: `max-file-bytes` = \"lots\" is not valid"),
        ('locate = "sometimes"\n', "line 1: `locate` = \"sometimes\" is not valid"),
        ("root = [\n", "line 1"),
        ("[serve]\nroot = '/tmp'\n", "line 1: `serve` must be a string"),
    ],
)
def test_bad_config_files_name_the_key_and_the_line(tmp_path, text, needle):
    config = tmp_path / "ferret.toml"
    config.write_text(text)
    p = ferret("serve", "--stdio", "--config", str(config), env=clean_env())
    assert p.returncode == 2 and needle in p.stderr, p.stderr
    assert str(config) in p.stderr


def test_an_explicit_config_that_is_missing_is_an_error(tmp_path):
    p = ferret("config", "--config", str(tmp_path / "nope.toml"), env=clean_env())
    assert p.returncode == 2 and "cannot read the configuration file" in p.stderr


def test_the_default_config_location_is_read(tmp_path):
    home = tmp_path / "xdg"
    (home / "ferret").mkdir(parents=True)
    (home / "ferret" / "ferret.toml").write_text(f'root = "{tmp_path}"\n')
    p = ferret("config", env=clean_env(XDG_CONFIG_HOME=str(home)))
    assert p.returncode == 0 and f"# configuration file: {home / 'ferret' / 'ferret.toml'}" in p.stdout


def test_json_logs_record_tool_calls_without_contents(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    (root / "secret-ish.txt").write_text("CONTENT-MARKER-NOT-FOR-LOGS\n")
    log = tmp_path / "ferret.log"

    async def go():
        env = clean_env(XDG_STATE_HOME=STATE_HOME, FERRET_LOG="debug")
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        params = StdioServerParameters(
            command=str(FERRET),
            args=["serve", "--stdio", "--root", str(root), "--no-persist", "--log-format", "json", "--log-file", str(log)],
            env=env,
        )
        async with Client(params, mode="legacy") as c:
            await call(c, "read", {"path": "secret-ish.txt"})
            await call(c, "read", {"path": "absent.txt"})

    run(go())
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines, "logs went to the file"
    calls = [line for line in lines if line.get("fields", {}).get("message") == "tool call"]
    assert [c["fields"]["outcome"] for c in calls] == ["ok", "NOT_FOUND"], calls
    assert all(c["level"] == "DEBUG" and c["fields"]["tool"] == "read" and "ms" in c["fields"] for c in calls)
    assert "CONTENT-MARKER-NOT-FOR-LOGS" not in log.read_text()


def test_completions_and_man_page_come_from_the_flags():
    bash = ferret("completions", "bash")
    assert bash.returncode == 0 and "serve" in bash.stdout and "--root" in bash.stdout
    syntax = subprocess.run(["bash", "-n"], input=bash.stdout, text=True, capture_output=True)
    assert syntax.returncode == 0, syntax.stderr
    for shell in ["zsh", "fish"]:
        out = ferret("completions", shell)
        assert out.returncode == 0 and "locate-root" in out.stdout, shell
    man = ferret("man")
    assert man.returncode == 0 and man.stdout.startswith(".ie") and ".TH ferret 1" in man.stdout
    assert '.SH "FERRET-SERVE"' in man.stdout and '.SH "FERRET-DOCTOR"' in man.stdout
    assert "\\-\\-root" in man.stdout
    if shutil.which("man"):
        rendered = subprocess.run(["man", "-l", "-"], input=man.stdout, text=True, capture_output=True, env={**os.environ, "MANWIDTH": "100"})
        assert rendered.returncode == 0 and "ferret" in rendered.stdout


def test_ferret_index_takes_the_rules_serve_takes_so_serve_loads_what_it_built(tmp_path):
    # `ferret index` reads --deny and --max-file-bytes, from its flags or
    # the configuration file, as `serve` does; the content index's file is
    # chosen by them, so `serve` with the same rules loads it instead of
    # rebuilding, and one built with other rules is another file.
    root = tmp_path / "r"
    (root / "src").mkdir(parents=True)
    for i in range(20):
        (root / "src" / f"m{i:02}.rs").write_text(f"fn module_{i}() {{}}\n")
    (root / "keys.secret").write_text("NOT-FOR-THE-INDEX\n")
    state = tmp_path / "state"
    config = tmp_path / "ferret.toml"
    config.write_text('deny = ["*.secret"]\nmax-file-bytes = "1M"\n')
    built = ferret("index", "--config", str(config), "--root", str(root), "--state-dir", str(state), env=clean_env(), timeout=120)
    assert built.returncode == 0, built.stderr
    (saved,) = state.glob("content-*.idx")
    assert f"saved {saved}" in built.stderr, built.stderr

    async def content_index_of_serve():
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        # The same rules, on serve's command line this time.
        args = ["serve", "--stdio", "--root", str(root), "--state-dir", str(state), "--deny", "*.secret", "--max-file-bytes", "1M"]
        async with Client(StdioServerParameters(command=str(FERRET), args=args, env=clean_env()), mode="legacy") as c:
            for _ in range(600):
                status = (await call(c, "diagnostics", {}))[1]["content_index"]
                if status["state"] == "ready":
                    return status
                await asyncio.sleep(0.05)
            raise AssertionError(f"the content index is not ready: {status}")

    status = run(content_index_of_serve())
    assert status["loaded_from_disk"] is True and status["path"] == str(saved), status
    assert list(state.glob("content-*.idx")) == [saved], "serve built no index of its own"
    # Without the rules (no configuration file): another file.
    plain = ferret("index", "--root", str(root), "--state-dir", str(state), env=clean_env(), timeout=120)
    assert plain.returncode == 0, plain.stderr
    assert len(list(state.glob("content-*.idx"))) == 2
