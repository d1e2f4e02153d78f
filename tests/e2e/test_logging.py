"""MCP logging: logging/setLevel per connection (handshake era), _meta logLevel per
request (2026-07-28), and never a message nobody asked for."""

import json

import httpx2 as httpx
import pytest
from conftest import connect, run


class Messages:
    def __init__(self):
        self.items = []

    async def __call__(self, params):
        self.items.append((params.level, params.logger, params.data))

    def texts(self):
        return [d for _, _, d in self.items]


GREP = {"pattern": "text", "output": "files"}  # the fixture's binaries are skipped


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_no_message_without_opting_in(tree, http_server, transport, era):
    log = Messages()

    async def go():
        async with connect(transport, era, ["--root", str(tree)], http_server, logging_callback=log) as c:
            await c.call_tool("grep", GREP)
            await c.call_tool("read", {"path": "missing.txt"})
            await c.read_resource(tree.resolve().as_uri() + "/README.md")

    run(go())
    assert log.items == []


def test_set_level_governs_a_handshake_connection(tree):
    log = Messages()

    async def go():
        async with connect("stdio", "legacy", ["--root", str(tree)], logging_callback=log) as c:
            await c.set_logging_level("info")
            await c.call_tool("grep", GREP)
            await c.call_tool("read", {"path": "missing.txt"})
            at_info = list(log.items)
            await c.set_logging_level("debug")
            await c.call_tool("stat", {"paths": "README.md"})
            return at_info

    at_info = run(go())
    texts = [d for _, _, d in at_info]
    assert any(t.startswith("`grep` skipped files:") and "binary" in t for t in texts), texts
    assert any(t.startswith("`read` failed: NOT_FOUND") for t in texts), texts
    assert all(level != "debug" for level, _, _ in at_info), "nothing below the level asked for"
    assert all(logger == "ferret" for _, logger, _ in at_info)
    assert any(t.startswith("`stat` answered in") for t in log.texts()), log.texts()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_log_level_in_meta_opts_one_request_in(tree, http_server, transport):
    log = Messages()

    async def go():
        async with connect(transport, "2026-07-28", ["--root", str(tree)], http_server, logging_callback=log, log_level="warning") as c:
            await c.call_tool("read", {"path": "missing.txt"})
            await c.call_tool("grep", GREP)

    run(go())
    texts = log.texts()
    assert any(t.startswith("`read` failed: NOT_FOUND") for t in texts), texts
    assert not any("skipped files" in t for t in texts), "info is below warning"


def test_a_malformed_log_level_is_invalid_params(http_server):
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "diagnostics",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/logLevel": "loud",
            },
        },
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "diagnostics",
    }
    r = httpx.post(http_server.url, content=json.dumps(body), headers={**headers, **http_server.auth}, timeout=10)
    error = r.json()["error"]
    assert error["code"] == -32602 and "logLevel" in error["message"], error


def test_stateless_handshake_http_offers_no_set_level(http_server):
    async def go():
        async with connect("http", "legacy", [], http_server) as c:
            return c.server_capabilities.logging

    assert run(go()) is None, "a one-request connection cannot remember a level"


def test_set_level_is_gone_in_the_stateless_era(tree):
    """2026-07-28 removed logging/setLevel: -32601, even on stdio."""
    import subprocess

    from conftest import FERRET

    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "logging/setLevel",
        "params": {
            "level": "debug",
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    p = subprocess.run(
        [str(FERRET), "serve", "--stdio", "--root", str(tree), "--no-persist"],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    answer = json.loads(p.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["error"]["code"] == -32601, answer
