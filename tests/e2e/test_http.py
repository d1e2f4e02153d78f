"""Streamable HTTP hardening and the stateless era's wire rules, checked raw."""

import json
import os
import subprocess

import httpx2 as httpx  # the HTTP client the mcp SDK itself depends on
import pytest
from conftest import FERRET, call, connect, run

MODERN = "2026-07-28"
ACCEPT = "application/json, text/event-stream"


def modern_request(method, params=None, id=1, version=MODERN):
    params = dict(params or {})
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def modern_headers(method, name=None, version=MODERN):
    h = {"Accept": ACCEPT, "Content-Type": "application/json", "MCP-Protocol-Version": version, "Mcp-Method": method}
    if name:
        h["Mcp-Name"] = name
    return h


def initialize_body():
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }


def post(server, body, headers, url=None):
    """POST to `server`'s MCP endpoint (or `url`) with its token."""
    return httpx.post(url or server.url, content=json.dumps(body), headers={**server.auth, **headers}, timeout=10)


def test_health_answers_for_probes_without_a_token_but_checks_the_host(http_server):
    r = httpx.get(http_server.base + "/health", timeout=5)
    # That ferret is up, nothing more: no version, no roots, without a token.
    assert r.status_code == 200 and r.json() == {"status": "ok", "name": "ferret"}
    # A DNS-rebinding page cannot probe it either.
    r = httpx.get(http_server.base + "/health", headers={"Host": "evil.example.com"}, timeout=5)
    assert r.status_code == 403 and "FORBIDDEN_HOST" in r.text and "version" not in r.text
    r = httpx.get(http_server.base + "/health", headers={"Origin": "http://evil.example.com"}, timeout=5)
    assert r.status_code == 403


def test_mcp_is_served_at_both_paths_without_sessions(http_server):
    for path in ["/mcp", "/"]:
        r = post(http_server, initialize_body(), {"Accept": ACCEPT, "Content-Type": "application/json"}, url=http_server.base + path)
        assert r.status_code == 200, r.text
        assert "mcp-session-id" not in {k.lower() for k in r.headers}
        assert r.json()["result"]["serverInfo"]["name"] == "ferret"


def test_foreign_host_and_origin_are_forbidden(http_server):
    base = {"Accept": ACCEPT, "Content-Type": "application/json"}
    bad_host = post(http_server, initialize_body(), {**base, "Host": "evil.example.com"})
    assert bad_host.status_code == 403
    bad_origin = post(http_server, initialize_body(), {**base, "Origin": "http://evil.example.com"})
    assert bad_origin.status_code == 403
    rebinding = post(http_server, initialize_body(), {**base, "Host": "evil.example.com", "Origin": "http://evil.example.com"})
    assert rebinding.status_code == 403
    good = post(
        http_server,
        initialize_body(),
        {**base, "Host": f"localhost:{http_server.port}", "Origin": f"http://localhost:{http_server.port}"},
    )
    assert good.status_code == 200


def test_get_and_delete_are_not_allowed_when_stateless(http_server):
    auth = http_server.auth
    assert httpx.get(http_server.url, headers={"Accept": "text/event-stream", **auth}, timeout=5).status_code == 405
    assert httpx.delete(http_server.url, headers=auth, timeout=5).status_code == 405


def test_oversized_bodies_are_refused(http_server):
    body = modern_request("tools/call", {"name": "read", "arguments": {"path": "x" * (2 << 20)}})
    r = post(http_server, body, modern_headers("tools/call", "read"))
    assert r.status_code == 413


def test_stateless_era_answers_discover_with_cache_hints(http_server):
    r = post(http_server, modern_request("server/discover"), modern_headers("server/discover"))
    assert r.status_code == 200
    result = r.json()["result"]
    assert result["resultType"] == "complete"
    assert MODERN in result["supportedVersions"] and "2025-11-25" in result["supportedVersions"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "ferret"
    assert "ttlMs" in result and "cacheScope" in result
    r = post(http_server, modern_request("tools/list"), modern_headers("tools/list"))
    listed = r.json()["result"]
    assert listed["resultType"] == "complete" and "ttlMs" in listed and "cacheScope" in listed
    r = post(
        http_server,
        modern_request("tools/call", {"name": "stat", "arguments": {"paths": "README.md"}}),
        modern_headers("tools/call", "stat"),
    )
    assert r.json()["result"]["resultType"] == "complete"


def test_stateless_era_error_codes(http_server):
    server = http_server
    # Header and body disagree on the method.
    r = post(server, modern_request("tools/list"), modern_headers("tools/call"))
    assert (r.status_code, r.json()["error"]["code"]) == (400, -32020)
    # Mcp-Name disagrees with the tool called.
    r = post(server, modern_request("tools/call", {"name": "read", "arguments": {"path": "README.md"}}), modern_headers("tools/call", "list"))
    assert (r.status_code, r.json()["error"]["code"]) == (400, -32020)
    # Base64-encoded header values are decoded before comparing.
    r = post(
        server,
        modern_request("tools/call", {"name": "stat", "arguments": {"paths": "README.md"}}),
        modern_headers("tools/call", "=?base64?c3RhdA==?="),
    )
    assert r.status_code == 200, r.text
    # Unsupported version.
    r = post(server, modern_request("tools/list", version="1900-01-01"), modern_headers("tools/list", version="1900-01-01"))
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["code"] == -32022 and err["data"]["requested"] == "1900-01-01" and MODERN in err["data"]["supported"]
    # Required _meta fields missing.
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}}
    r = post(server, body, modern_headers("tools/list"))
    assert (r.status_code, r.json()["error"]["code"]) == (400, -32602)
    # Methods removed in the stateless era.
    for method in ["initialize", "ping", "logging/setLevel", "resources/subscribe"]:
        r = post(server, modern_request(method), modern_headers(method))
        assert (r.status_code, r.json()["error"]["code"]) == (404, -32601), method
        # The message says the revision removed it (not just the method's name).
        assert "removed" in r.json()["error"]["message"] and method in r.json()["error"]["message"], r.text
    r = post(server, modern_request("tools/frobnicate"), modern_headers("tools/frobnicate"))
    assert (r.status_code, r.json()["error"]["code"]) == (404, -32601)


def test_stdio_removed_methods_say_so_in_the_stateless_era(tree):
    requests = "".join(json.dumps(m) + "\n" for m in [modern_request("server/discover"), modern_request("logging/setLevel", {"level": "info"}, id=2)])
    p = subprocess.run(
        [str(FERRET), "serve", "--stdio", "--no-persist", "--root", str(tree)], input=requests, capture_output=True, text=True, timeout=30
    )
    answer = json.loads(p.stdout.splitlines()[1])
    assert answer["error"]["code"] == -32601
    assert "removed" in answer["error"]["message"] and "logLevel" in answer["error"]["message"]
    assert p.returncode == 0


def test_a_session_ended_with_delete_answers_204(tree, start_http):
    server = start_http("--root", str(tree), "--no-persist", "--http-sessions")
    r = post(server, initialize_body(), {"Accept": ACCEPT, "Content-Type": "application/json"})
    session = r.headers["mcp-session-id"]
    headers = {"mcp-session-id": session, "MCP-Protocol-Version": "2025-06-18", **server.auth}
    r = httpx.delete(server.url, headers=headers, timeout=5)
    assert r.status_code == 204, (r.status_code, r.text)


def raw_post(url, headers):
    """A POST carrying only `headers`: no token unless they hold one."""
    return httpx.post(url, content=json.dumps(initialize_body()), headers=headers, timeout=10)


def test_a_token_is_required_when_configured(tree, start_http):
    server = start_http("--root", str(tree), "--token", "s3cret-token")
    headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
    assert raw_post(server.url, headers).status_code == 401
    assert raw_post(server.url, {**headers, "Authorization": "Bearer wrong"}).status_code == 401
    r = raw_post(server.url, {**headers, "Authorization": "Bearer s3cret-token"})
    assert r.status_code == 200
    assert httpx.get(server.base + "/health", timeout=5).status_code == 200


def test_http_needs_the_generated_token_by_default(tree, start_http, tmp_path):
    """No token flag at all: ferret makes one, keeps it 0600 in the state folder,
    refuses requests without it, names the way to get it, and keeps it across
    restarts; `ferret token` prints the same one."""
    state = tmp_path / "state"
    args = ["--root", str(tree), "--state-dir", str(state)]
    server = start_http(*args)
    kept = state / "token"
    assert kept.stat().st_mode & 0o777 == 0o600
    token = kept.read_text().strip()
    assert len(token) >= 43 and server.token == token, "ferret token prints the kept one"
    headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
    refused = raw_post(server.url, headers)
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert "ferret token" in refused.text and token not in refused.text
    assert raw_post(server.url, {**headers, "Authorization": f"Bearer {token}x"}).status_code == 401
    assert raw_post(server.url, {**headers, "Authorization": f"Bearer {token}"}).status_code == 200
    # Everything's JSON API and the page's API want it too.
    assert httpx.get(server.base + "/?search=&json=1", timeout=5).status_code == 401
    assert httpx.get(server.base + "/?search=&json=1", headers=server.auth, timeout=5).status_code == 200
    server.stop()
    again = start_http(*args)
    assert again.token == token, "kept across restarts"
    assert raw_post(again.url, {**headers, "Authorization": f"Bearer {token}"}).status_code == 200
    # Not on stderr when stderr is not a terminal (a log file, a service manager).
    again.stop()
    assert token not in again.proc.stderr.read()


def test_token_file_env_and_no_token(tree, start_http, tmp_path):
    headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
    secret = tmp_path / "secret"
    secret.write_text("from-a-file-0123456789\n")
    secret.chmod(0o600)
    server = start_http("--root", str(tree), "--no-persist", "--token-file", str(secret))
    assert server.token == "from-a-file-0123456789"
    assert raw_post(server.url, {**headers, "Authorization": "Bearer from-a-file-0123456789"}).status_code == 200
    assert raw_post(server.url, headers).status_code == 401
    # --no-token: loopback without a token, said at start.
    open_server = start_http("--root", str(tree), "--no-persist", "--no-token")
    assert raw_post(open_server.url, headers).status_code == 200
    # FERRET_TOKEN, as client configurations set it.
    p = subprocess.run(
        [str(FERRET), "token", "--root", str(tree)],
        capture_output=True,
        text=True,
        timeout=20,
        env={**os.environ, "FERRET_TOKEN": "from-the-env"},
    )
    assert p.returncode == 0 and p.stdout.strip() == "from-the-env"
    # A file that is not there is named with the fix.
    p = subprocess.run(
        [str(FERRET), "serve", "--root", str(tree), "--bind", "127.0.0.1:0", "--token-file", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert p.returncode == 1 and "--token-file" in p.stderr and "nope" in p.stderr


def test_non_loopback_binds_are_refused_without_hosts_and_token(tree):
    p = subprocess.run(
        [str(FERRET), "serve", "--root", str(tree), "--bind", "0.0.0.0:0"], capture_output=True, text=True, timeout=20
    )
    assert p.returncode == 1 and "--allowed-host" in p.stderr
    p = subprocess.run(
        [str(FERRET), "serve", "--root", str(tree), "--bind", "0.0.0.0:0", "--allowed-host", "files.lan"],
        capture_output=True,
        text=True,
        timeout=20,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 1 and "FERRET_TOKEN" in p.stderr
    p = subprocess.run(
        [str(FERRET), "serve", "--root", str(tree), "--bind", "0.0.0.0:0", "--allowed-host", "files.lan", "--no-token"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert p.returncode == 1 and "--no-token" in p.stderr and "loopback" in p.stderr


@pytest.mark.parametrize("era", ["legacy", MODERN])
def test_sdk_client_over_http_reads_and_lists(http_server, era):
    async def go():
        async with connect("http", era, [], http_server) as c:
            return await call(c, "list", {"path": "src"}), await call(c, "read", {"path": "enc/utf16le.txt"})

    (e1, s1, _, _), (e2, s2, _, _) = run(go())
    assert s1["entries"] == ["lib.rs", "main.rs"]
    assert s2["encoding"] == "utf-16le"
