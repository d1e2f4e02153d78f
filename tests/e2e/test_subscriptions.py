"""Resource subscriptions, driven by the index's watcher: resources/subscribe in
the handshake era, subscriptions/listen in the stateless 2026-07-28 era."""

import asyncio
import json
import os
import warnings
from pathlib import Path

import httpx2 as httpx
import pytest
from conftest import connect, run
from mcp.shared.exceptions import MCPError
from mcp.types import ResourceUpdatedNotification

warnings.filterwarnings("ignore", message=".*resources/subscribe is removed.*")
warnings.filterwarnings("ignore", message=".*resources/unsubscribe is removed.*")


def make_tree(tmp_path: Path) -> Path:
    root = tmp_path / "watched"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("first\n")
    (root / "docs" / "b.md").write_text("other\n")
    (root / "top.txt").write_text("top\n")
    return Path(os.path.realpath(root))


def uri(root: Path, rel: str) -> str:
    return (root / rel).as_uri() + ("/" if (root / rel).is_dir() else "")


class Updates:
    """Collects notifications/resources/updated from a handshake-era connection."""

    def __init__(self):
        self.uris: list[str] = []
        self.event = asyncio.Event()

    async def __call__(self, message):
        if isinstance(message, ResourceUpdatedNotification):
            self.uris.append(message.params.uri)
            self.event.set()

    async def wait_for(self, target: str, timeout: float = 5.0):
        deadline = asyncio.get_running_loop().time() + timeout
        while target not in self.uris:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise AssertionError(f"no update for {target}; got {self.uris}")
            self.event.clear()
            try:
                await asyncio.wait_for(self.event.wait(), left)
            except TimeoutError:
                pass


def legacy_subscription_round(transport, root, http=None, extra=()):
    async def go():
        updates = Updates()
        async with connect(transport, "legacy", ["--root", str(root), "--no-persist", *extra], http, message_handler=updates) as c:
            assert c.server_capabilities.resources.subscribe is True
            a, docs = uri(root, "docs/a.md"), uri(root, "docs")
            await c.subscribe_resource(a)
            await c.subscribe_resource(docs)
            await asyncio.sleep(0.3)
            (root / "docs" / "a.md").write_text("second\n")
            await updates.wait_for(a)
            (root / "docs" / "new.md").write_text("new\n")
            await updates.wait_for(docs)
            await c.unsubscribe_resource(a)
            await c.unsubscribe_resource(docs)
            updates.uris.clear()
            (root / "docs" / "a.md").write_text("third, unheard\n")
            (root / "top.txt").write_text("never subscribed\n")
            await asyncio.sleep(1.0)
            return updates.uris

    return run(go())


def test_stdio_handshake_subscribe_notifies_on_change(tmp_path):
    root = make_tree(tmp_path)
    assert legacy_subscription_round("stdio", root) == [], "nothing after unsubscribe"


def test_http_sessions_let_handshake_clients_subscribe(tmp_path, start_http):
    root = make_tree(tmp_path)
    server = start_http("--root", str(root), "--no-persist", "--http-sessions")
    assert legacy_subscription_round("http", root, server) == []


def test_stateless_http_says_how_to_subscribe_in_the_handshake_era(tmp_path, start_http):
    root = make_tree(tmp_path)
    server = start_http("--root", str(root), "--no-persist")

    async def go():
        async with connect("http", "legacy", [], server) as c:
            caps = c.server_capabilities
            with pytest.raises(MCPError) as info:
                await c.subscribe_resource(uri(root, "top.txt"))
            return caps, info.value.error

    caps, error = run(go())
    assert not caps.resources.subscribe, "a one-request connection does not offer subscribe"
    assert caps.logging is None
    assert error.code == -32601 and "--http-sessions" in error.message


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_listen_delivers_only_what_was_asked(tmp_path, transport, start_http):
    root = make_tree(tmp_path)
    server = start_http("--root", str(root), "--no-persist") if transport == "http" else None
    a, docs = uri(root, "docs/a.md"), uri(root, "docs")

    async def go():
        # "auto" discovers first, so the advertised capabilities are the server's own.
        async with connect(transport, "auto", ["--root", str(root), "--no-persist"], server) as c:
            assert c.protocol_version == "2026-07-28"
            assert c.server_capabilities.resources.subscribe is True
            async with c.listen(resource_subscriptions=[a, docs, "file:///etc/passwd"]) as sub:
                honored = sorted(sub.honored.resource_subscriptions or [])
                await asyncio.sleep(0.3)
                (root / "top.txt").write_text("not subscribed\n")
                (root / "docs" / "a.md").write_text("changed\n")
                events = []

                async def collect():
                    async for event in sub:
                        events.append(event.uri)
                        if a in events and docs in events:
                            return

                (root / "docs" / "c.md").write_text("created in a watched folder\n")
                await asyncio.wait_for(collect(), 10)
                return honored, events

    honored, events = run(go())
    assert honored == sorted([a, docs]), "a URI outside the roots is not acknowledged"
    assert set(events) == {a, docs}, events


def test_listen_wire_ack_first_and_subscription_id_on_every_notification(tmp_path, start_http):
    """The raw stream: acknowledgement first, then only the subscribed URI, each
    notification tagged with the listen request's id."""
    root = make_tree(tmp_path)
    server = start_http("--root", str(root), "--no-persist")
    a = uri(root, "docs/a.md")
    body = {
        "jsonrpc": "2.0",
        "id": "listen-7",
        "method": "subscriptions/listen",
        "params": {
            "notifications": {"resourceSubscriptions": [a], "toolsListChanged": True},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "subscriptions/listen",
    }
    messages = []
    with httpx.stream("POST", server.url, content=json.dumps(body), headers={**headers, **server.auth}, timeout=10) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line.startswith("data:") or not line[5:].strip():
                continue
            msg = json.loads(line[5:])
            messages.append(msg)
            if len(messages) == 1:
                (root / "docs" / "b.md").write_text("not subscribed\n")
                (root / "docs" / "a.md").write_text("subscribed\n")
            if msg.get("method") == "notifications/resources/updated":
                break
    ack, update = messages[0], messages[-1]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-7"
    honored = ack["params"]["notifications"]
    assert honored.get("resourceSubscriptions") == [a]
    assert not honored.get("toolsListChanged"), "ferret's lists never change, so that is not honored"
    assert update["params"]["uri"] == a
    assert update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-7"
    for m in messages:
        assert "id" not in m or m.get("method") is None, "no request on a listen stream"
        if m.get("method") == "notifications/resources/updated":
            assert m["params"]["uri"] == a


def test_a_change_right_after_ferrets_own_write_is_heard_and_journalled(tmp_path):
    """ferret's own write is recognised by what it left on disk, not by a time
    window: another program writing the same file half a second later is
    heard by subscribers and journalled as external."""
    root = make_tree(tmp_path)

    async def go():
        updates = Updates()
        args = ["--root", f"{root}:rw", "--state-dir", str(tmp_path / "state")]
        async with connect("stdio", "legacy", args, message_handler=updates) as c:
            a = uri(root, "docs/a.md")
            await c.subscribe_resource(a)
            await asyncio.sleep(0.3)
            result = await c.call_tool("write", {"path": "docs/a.md", "content": "by ferret\n", "mode": "overwrite"})
            assert not result.is_error
            await updates.wait_for(a)
            await asyncio.sleep(0.5)
            updates.uris.clear()
            (root / "docs" / "a.md").write_text("by someone else\n")
            await updates.wait_for(a)
            await asyncio.sleep(0.5)
            changes = (await c.call_tool("changes", {"path": "docs/a.md"})).structured_content["changes"]
            return [(ch["action"], ch["by"]) for ch in changes]

    assert run(go()) == [("modified", "external"), ("modified", "ferret")]
