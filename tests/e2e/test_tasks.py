"""Long calls as MCP tasks (io.modelcontextprotocol/tasks, SEP-2663), on the wire.

The Python SDK does not speak the tasks extension, so these tests send the
2026-07-28 JSON-RPC themselves: over stateless HTTP (every request its own
connection, so a task outlives the request that started it) and over stdio,
in both eras. `--task-after 0` makes every eligible call from a client that
declares the extension a task at once; the big tree makes the greps long.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import time
from pathlib import Path

import httpx2 as httpx
import pytest
from conftest import BIG_FILES, FERRET, STATE_HOME

MODERN = "2026-07-28"
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
SLOW_GREP = {"pattern": r"\w+o\w+", "output": "count"}
ids = itertools.count(1)


def meta(caps, name="e2e-tasks"):
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"},
    }


class Http:
    """A 2026-07-28 client over stateless HTTP, declaring `caps` on every request."""

    def __init__(self, server, caps=TASKS, name="e2e-tasks"):
        self.url, self.caps, self.name = server.url, caps, name
        # The token ferret generated, as a configured client sends it.
        self.auth = server.auth

    def send(self, method, params):
        body = {"jsonrpc": "2.0", "id": next(ids), "method": method, "params": {**params, "_meta": meta(self.caps, self.name)}}
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": method,
            **self.auth,
        }
        routed = params.get("name", params.get("taskId"))
        if routed:
            headers["Mcp-Name"] = routed
        r = httpx.post(self.url, content=json.dumps(body), headers=headers, timeout=120)
        return r.status_code, r.json()


class Stdio:
    """ferret over stdio, spoken to line by line; `legacy` does the handshake."""

    def __init__(self, root, legacy=False, caps=TASKS, *extra):
        self.caps, self.legacy = caps, legacy
        self.proc = subprocess.Popen(
            [str(FERRET), "serve", "--stdio", "--root", str(root), "--no-persist", "--task-after", "0", *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "XDG_STATE_HOME": STATE_HOME},
        )
        if legacy:
            self.send("initialize", {"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "e2e", "version": "1"}})
            self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
            self.proc.stdin.flush()

    def send(self, method, params):
        id = next(ids)
        if not self.legacy:
            params = {**params, "_meta": meta(self.caps)}
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            assert line, "ferret closed stdout"
            message = json.loads(line)
            if message.get("id") == id:
                return 200, message

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def call(client, tool, args):
    status, body = client.send("tools/call", {"name": tool, "arguments": args})
    assert status == 200 and "result" in body, body
    return body["result"]


def get(client, task_id):
    status, body = client.send("tasks/get", {"taskId": task_id})
    assert status == 200 and "result" in body, body
    return body["result"]


def settle(client, task_id, timeout=120, seen=None):
    """Poll tasks/get (as the task suggests) until the task ends."""
    deadline = time.monotonic() + timeout
    while True:
        task = get(client, task_id)
        if seen is not None and task.get("statusMessage"):
            seen.append(task["statusMessage"])
        if task["status"] in ("completed", "failed", "cancelled"):
            return task
        assert time.monotonic() < deadline, f"task still {task['status']} after {timeout} s"
        time.sleep(min(task.get("pollIntervalMs", 500), 200) / 1000)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def tasks_server(big_tree, start_http):
    # Without the content index: these tests watch grep's own work (its
    # progress, its stop, the CPU it leaves idle), not a background build.
    return start_http(
        "--root", str(big_tree), "--no-persist", "--task-after", "0", "--content-index", "off"
    )


def test_a_long_grep_answers_as_a_task_and_its_result_is_kept(tasks_server):
    client = Http(tasks_server)
    created = call(client, "grep", SLOW_GREP)
    assert created["resultType"] == "task", created
    assert created["status"] == "working" and "result" not in created
    assert isinstance(created["ttlMs"], int) and created["ttlMs"] >= 600_000
    assert isinstance(created["pollIntervalMs"], int) and created["pollIntervalMs"] > 0
    # Durable before the answer: the next request finds it.
    assert get(client, created["taskId"])["taskId"] == created["taskId"]
    seen = []
    done = settle(client, created["taskId"], seen=seen)
    assert done["status"] == "completed" and done["resultType"] == "complete"
    assert any("files scanned" in m for m in seen), seen
    result = done["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["files_scanned"] == BIG_FILES
    # The same answer a client without tasks gets, and it is still there later.
    plain = call(Http(tasks_server, caps={}), "grep", SLOW_GREP)
    assert plain["resultType"] == "complete"
    assert plain["structuredContent"]["total"] == result["structuredContent"]["total"]
    assert get(client, created["taskId"])["result"] == result


def test_tasks_cancel_stops_the_work_and_keeps_the_partial_result(tasks_server):
    client = Http(tasks_server)
    task_id = call(client, "grep", SLOW_GREP)["taskId"]
    # Cancel once it is under way: a file scanned ("0 files scanned", before
    # the candidates are counted, is not under way).
    while not re.match(r"[1-9]\d* of \d+ files scanned", get(client, task_id).get("statusMessage") or ""):
        time.sleep(0.02)
    status, ack = client.send("tasks/cancel", {"taskId": task_id})
    assert status == 200 and ack["result"] == {"resultType": "complete"}
    cancelled_at = time.monotonic()
    done = settle(client, task_id, timeout=10)
    stopped_after = time.monotonic() - cancelled_at
    # The call's own answer to a cancellation: CANCELLED, with what it had found.
    assert done["status"] == "completed", done
    s = done["result"]["structuredContent"]
    assert done["result"]["isError"] is True and s["error"]["code"] == "CANCELLED"
    assert 0 < s["files_scanned"] < BIG_FILES and s["count"] > 0, s
    assert "tasks/cancel" in done["statusMessage"]
    assert stopped_after < 5, f"took {stopped_after:.2f} s to stop"
    # The workers have really stopped: the server is idle again.
    pid = tasks_server.proc.pid
    before = cpu_seconds(pid)
    time.sleep(0.5)
    assert cpu_seconds(pid) - before < 0.25
    # Cancelling an ended task changes nothing.
    assert client.send("tasks/cancel", {"taskId": task_id})[1]["result"] == {"resultType": "complete"}
    assert get(client, task_id)["status"] == "completed"


def test_clients_without_the_extension_get_todays_answers(tasks_server):
    plain = Http(tasks_server, caps={})
    result = call(plain, "grep", {"pattern": "needle", "output": "count", "limit": 5})
    assert result["resultType"] == "complete" and "taskId" not in result
    status, body = plain.send("tasks/get", {"taskId": "anything"})
    assert status == 400 and body["error"]["code"] == -32021
    assert body["error"]["data"]["requiredCapabilities"]["extensions"] == TASKS["extensions"]


def test_an_unknown_task_says_what_happened(tasks_server):
    status, body = Http(tasks_server).send("tasks/get", {"taskId": "no-such-task"})
    assert body["error"]["code"] == -32602
    assert "restarted" in body["error"]["message"] and "call the tool again" in body["error"]["message"]


def test_quick_calls_answer_at_once_even_with_the_extension(tree, start_http):
    # The default --task-after (1 s): only what is still running then becomes a task.
    server = start_http("--root", str(tree), "--no-persist")
    client = Http(server)
    for tool, args in [("search", {"query": "ext:rs"}), ("grep", {"pattern": "fn"}), ("list", {"depth": 3})]:
        assert call(client, tool, args)["resultType"] == "complete", tool


def test_a_restart_forgets_tasks(big_tree, start_http):
    server = start_http("--root", str(big_tree), "--no-persist", "--task-after", "0")
    task_id = call(Http(server), "grep", SLOW_GREP)["taskId"]
    server.stop()
    again = start_http("--root", str(big_tree), "--no-persist", "--task-after", "0")
    status, body = Http(again).send("tasks/get", {"taskId": task_id})
    assert body["error"]["code"] == -32602 and "restarted" in body["error"]["message"]


def test_a_client_has_at_most_eight_tasks_running(tasks_server):
    client = Http(tasks_server, name="greedy")
    running = [call(client, "grep", SLOW_GREP) for _ in range(8)]
    assert all(r["resultType"] == "task" for r in running)
    try:
        # The ninth runs as an ordinary call (its timeout keeps it short).
        ninth = call(client, "grep", {**SLOW_GREP, "timeout_ms": 200})
        assert ninth["resultType"] == "complete" and "taskId" not in ninth
        # Another client still gets tasks.
        other = call(Http(tasks_server, name="polite"), "grep", {**SLOW_GREP, "timeout_ms": 200})
        assert other["resultType"] == "task"
    finally:
        for r in running:
            client.send("tasks/cancel", {"taskId": r["taskId"]})
    for r in running:
        assert settle(client, r["taskId"], timeout=30)["status"] == "completed"


@pytest.mark.parametrize("legacy", [False, True], ids=["2026-07-28", "handshake"])
def test_tasks_over_stdio(big_tree, legacy):
    client = Stdio(big_tree, legacy)
    try:
        created = call(client, "list", {"depth": 5, "limit": 10})
        assert created.get("resultType") == "task", created
        done = settle(client, created["taskId"])
        assert done["status"] == "completed"
        assert done["result"]["structuredContent"]["entries"], done
        # A search too: the same runner.
        found = call(client, "search", {"query": "f0001"})
        assert settle(client, found["taskId"])["result"]["structuredContent"]["results"] == ["d1/f0001.txt"]
    finally:
        client.close()


def test_a_folder_copy_runs_as_a_task(big_tree, tmp_path, start_http):
    work = tmp_path / "w"
    (work / "src").mkdir(parents=True)
    for i in range(50):
        (work / "src" / f"f{i}.txt").write_text(f"file {i}\n")
    server = start_http("--root", f"{work}:rw", "--no-persist", "--task-after", "0")
    client = Http(server)
    created = call(client, "manage", {"op": "copy", "path": "src", "to": "copy", "recursive": True})
    assert created["resultType"] == "task"
    done = settle(client, created["taskId"])
    assert done["result"]["isError"] is False, done
    assert sorted(p.name for p in (work / "copy").iterdir()) == sorted(f"f{i}.txt" for i in range(50))


def test_a_cancelled_folder_copy_finishes_and_says_the_cancel_came_too_late(tmp_path, start_http):
    # A copy is never stopped half-way: cancelled, it runs to its end, and
    # its answer must say so. CANCELLED ("run it again") would send the agent
    # into ALREADY_EXISTS for a copy that is whole.
    work = tmp_path / "w"
    (work / "src").mkdir(parents=True)
    names = [f"f{i:04d}.txt" for i in range(5000)]
    for name in names:
        (work / "src" / name).write_text(f"{name}\n")
    server = start_http("--root", f"{work}:rw", "--no-persist", "--task-after", "0")
    client = Http(server)
    args = {"op": "copy", "path": "src", "to": "copy", "recursive": True}
    task_id = call(client, "manage", args)["taskId"]
    # Cancelled while it copies: entries copied, most still to go (each
    # file is written, synced and renamed; 1000 once went by in the quarter
    # second before the first progress report, so 5000).
    while True:
        task = get(client, task_id)
        assert task["status"] == "working", task
        copied = re.match(r"(\d+) of 5000 entries copied", task.get("statusMessage") or "")
        if copied and int(copied.group(1)) > 0:
            break
        time.sleep(0.01)
    assert int(copied.group(1)) < 2500, task
    status, ack = client.send("tasks/cancel", {"taskId": task_id})
    assert status == 200 and ack["result"] == {"resultType": "complete"}
    done = settle(client, task_id)
    assert done["status"] == "completed", done
    result, s = done["result"], done["result"]["structuredContent"]
    assert result["isError"] is False and "error" not in s, s
    assert s["op"] == "copy" and s["entries"] == 5000, s
    assert "too late" in s["cancel"] and "whole" in s["cancel"], s
    assert result["content"][0]["text"].startswith("not cancelled: "), result["content"][0]
    assert done["statusMessage"].endswith("tasks/cancel came too late: it ran to its end"), done
    assert sorted(p.name for p in (work / "copy").iterdir()) == names
    assert all((work / "copy" / n).read_text() == f"{n}\n" for n in names)
