"""Graceful shutdown: on SIGINT/SIGTERM ferret stops accepting, lets the calls in
flight finish within the grace period, saves the snapshot and the journal, and
exits 0; a second signal exits at once."""

import json
import signal
import subprocess
import threading
import time

import httpx2 as httpx
from conftest import FERRET, HttpServer

GREP = {"name": "grep", "arguments": {"pattern": r"o\w", "output": "count"}}


def modern_call(id=1):
    """The slow grep as a 2026-07-28 request that asks for progress: its first
    progress notification says that the call is under way."""
    params = dict(GREP)
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "progressToken": id,
    }
    body = {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "grep",
    }
    return body, headers


def is_progress(line: str) -> bool:
    return '"notifications/progress"' in line


def call_in_background(server):
    """POST the slow grep from a thread and return once the server reports
    progress on it, so that a signal sent next finds it in flight (a fixed
    sleep does not, on a loaded machine). Returns (thread, box with the outcome)."""
    box = {}
    under_way = threading.Event()

    def go():
        body, headers = modern_call()
        try:
            with httpx.stream("POST", server.url, content=json.dumps(body), headers={**headers, **server.auth}, timeout=60) as r:
                box["status"] = r.status_code
                lines = []
                for line in r.iter_lines():
                    lines.append(line)
                    if is_progress(line):
                        under_way.set()
                box["body"] = "\n".join(lines)
        except Exception as e:  # the connection may be cut by a second signal
            box["error"] = repr(e)
        finally:
            under_way.set()

    t = threading.Thread(target=go)
    t.start()
    assert under_way.wait(30), "no progress from the grep within 30 s"
    return t, box


def result_of(text):
    """The JSON-RPC message of a JSON or single-event SSE body."""
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            msg = json.loads(line[5:])
            if "id" in msg:
                return msg
    return json.loads(text)


def test_http_lets_the_call_in_flight_finish_then_saves_and_exits_0(big_tree, tmp_path):
    state = tmp_path / "state"
    # A grace period no loaded machine runs out of: the bound has its own test.
    server = HttpServer(["--root", str(big_tree), "--state-dir", str(state), "--shutdown-grace", "120s"])
    try:
        thread, box = call_in_background(server)
        server.proc.send_signal(signal.SIGTERM)
        thread.join(30)
        code = server.proc.wait(timeout=20)
    finally:
        server.stop()
    assert box.get("status") == 200 and "body" in box, box
    msg = result_of(box["body"])
    result = msg["result"]
    assert not result.get("isError"), result
    assert result["structuredContent"]["total"] > 0
    assert code == 0
    assert list(state.glob("*.snap")), "the snapshot was saved on the way out"
    (journal,) = state.glob("*.journal.sqlite")
    wal = journal.with_name(journal.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0, "the journal was flushed into its file"
    # Stopped accepting: nothing listens on the port any more.
    try:
        httpx.get(server.base + "/health", timeout=2)
        raise AssertionError("still answering after shutdown")
    except httpx.HTTPError:
        pass


def test_a_second_signal_exits_at_once(big_tree, tmp_path):
    server = HttpServer(["--root", str(big_tree), "--no-persist", "--shutdown-grace", "60s"])
    try:
        thread, box = call_in_background(server)
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.1)
        sent = time.monotonic()
        server.proc.send_signal(signal.SIGINT)
        code = server.proc.wait(timeout=10)
        elapsed = time.monotonic() - sent
        thread.join(30)
    finally:
        server.stop()
    assert code == 130 and elapsed < 2, (code, elapsed)
    assert "again" in server.proc.stderr.read()


def test_the_grace_period_bounds_the_wait(big_tree):
    server = HttpServer(["--root", str(big_tree), "--no-persist", "--shutdown-grace", "0s"])
    try:
        thread, box = call_in_background(server)
        sent = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(timeout=10)
        elapsed = time.monotonic() - sent
        thread.join(30)
    finally:
        server.stop()
    assert code == 0 and elapsed < 1.5, (code, elapsed)
    assert "grace period ran out" in server.proc.stderr.read()


def test_stdio_answers_the_call_in_flight_then_exits_0(big_tree, tmp_path):
    state = tmp_path / "state"
    proc = subprocess.Popen(
        [str(FERRET), "serve", "--stdio", "--root", str(big_tree), "--state-dir", str(state), "--shutdown-grace", "120s"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        body, _ = modern_call(id=7)
        proc.stdin.write(json.dumps(body) + "\n")
        proc.stdin.flush()
        for line in proc.stdout:  # the grep is under way once it reports progress
            if is_progress(line):
                break
        proc.send_signal(signal.SIGINT)
        answer = None
        for line in proc.stdout:
            msg = json.loads(line)
            if msg.get("id") == 7:
                answer = msg
                break
        code = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert answer is not None and not answer["result"].get("isError"), answer
    assert answer["result"]["structuredContent"]["total"] > 0
    assert code == 0
    assert list(state.glob("*.snap"))
