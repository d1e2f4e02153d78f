"""Reaching ferret on another machine, as README's "Another machine" says:
stdio over SSH (the client's command is `ssh host ferret serve --stdio …`),
against a local sshd from Debian's openssh-server; and Streamable HTTP behind
TLS, through nginx from Debian with a generated certificate, `--allowed-host`
and the token. Both bind only 127.0.0.1; every process started is stopped by
its pid."""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

import httpx2
import pytest
from conftest import FERRET, HttpServer, call, run
from mcp import Client
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.client.streamable_http import streamable_http_client

SSHD = "/usr/sbin/sshd"
NGINX = "/usr/sbin/nginx"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, what: str):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"{what} exited: {proc.stderr.read() if proc.stderr else ''}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"{what} never listened on {port}")


def stop(proc: subprocess.Popen):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def served(tmp_path) -> Path:
    root = tmp_path / "remote-root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "far_away.rs").write_text("fn far_away() {}\n")
    return root


@pytest.fixture
def sshd(tmp_path):
    """A local sshd on 127.0.0.1 that lets this account in with a key made for
    the test; yields the ssh command line that reaches it."""
    assert os.path.exists(SSHD), "scripts/test installs Debian's openssh-server"
    d = tmp_path / "ssh"
    d.mkdir(mode=0o700)
    for key in ("host", "user"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True)
    shutil.copy(d / "user.pub", d / "authorized_keys")
    os.chmod(d / "authorized_keys", 0o600)
    port = free_port()
    config = d / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host'}\nPidFile {d / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\nPermitUserEnvironment no\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE, text=True)
    try:
        wait_port(port, proc, "sshd")
        yield [
            "ssh", "-i", str(d / "user"), "-p", str(port), "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=no", "-o", f"UserKnownHostsFile={d / 'known_hosts'}",
            "-o", "LogLevel=ERROR", f"{getpass.getuser()}@127.0.0.1",
        ]
    finally:
        stop(proc)


def test_stdio_over_ssh(sshd, served):
    """The client's command is ssh; ferret runs on the far side and speaks MCP
    over the SSH channel's stdin and stdout, its logs on the channel's stderr."""
    target = StdioServerParameters(
        command=sshd[0],
        args=[*sshd[1:], str(FERRET), "serve", "--stdio", "--no-persist", "--root", str(served)],
        env=get_default_environment(),
    )

    async def go():
        async with Client(target, mode="legacy") as c:
            e, s, _, _ = await call(c, "search", {"query": "far_away"})
            assert not e and s["results"] == ["src/far_away.rs"], s
            e, s, _, _ = await call(c, "read", {"path": "src/far_away.rs"})
            assert not e and s["text"] == "fn far_away() {}\n", s
            e, s, _, _ = await call(c, "read", {"path": "../ssh/user"})
            assert e, "nothing outside the root, over SSH too"

    run(go())


@pytest.fixture
def nginx_tls(tmp_path, served):
    """ferret over HTTP on 127.0.0.1, behind nginx terminating TLS with a
    certificate made for `localhost`; yields (https URL, token, CA file)."""
    assert os.path.exists(NGINX), "scripts/test installs Debian's nginx"
    d = tmp_path / "tls"
    d.mkdir()
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost", "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem")],
        check=True, capture_output=True,
    )
    port = free_port()
    ferret = HttpServer(["--root", str(served), "--no-persist", "--allowed-host", f"localhost:{port}"])
    (d / "logs").mkdir()
    conf = d / "nginx.conf"
    conf.write_text(f"""
worker_processes 1;
error_log {d / 'logs' / 'error.log'};
pid {d / 'nginx.pid'};
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {d / 'body'};
    proxy_temp_path {d / 'proxy'};
    fastcgi_temp_path {d / 'fastcgi'};
    uwsgi_temp_path {d / 'uwsgi'};
    scgi_temp_path {d / 'scgi'};
    server {{
        listen 127.0.0.1:{port} ssl;
        server_name localhost;
        ssl_certificate {d / 'cert.pem'};
        ssl_certificate_key {d / 'key.pem'};
        location / {{
            proxy_pass http://127.0.0.1:{ferret.port};
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 300s;
        }}
    }}
}}
""")
    proc = subprocess.Popen([NGINX, "-p", str(d), "-c", str(conf), "-g", "daemon off;"], stderr=subprocess.PIPE, text=True)
    try:
        wait_port(port, proc, "nginx")
        yield f"https://localhost:{port}/mcp", ferret.token, ssl.create_default_context(cafile=str(d / "cert.pem"))
    finally:
        stop(proc)
        ferret.stop()


def test_http_behind_tls(nginx_tls):
    """Through nginx over TLS: the token gets in, the certificate is checked,
    a wrong token and a plain-HTTP client do not."""
    url, token, ca = nginx_tls

    async def go(headers, verify=ca):
        async with httpx2.AsyncClient(headers=headers, verify=verify, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as c:
                return await call(c, "search", {"query": "far_away"})

    e, s, _, _ = run(go({"Authorization": f"Bearer {token}"}))
    assert not e and s["results"] == ["src/far_away.rs"], s
    # A wrong token: refused by ferret, behind the proxy as in front of it.
    r = httpx2.post(url, headers={"Authorization": "Bearer wrong", "Content-Type": "application/json",
                                  "Accept": "application/json, text/event-stream"},
                    content=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', verify=ca)
    assert r.status_code == 401, r.status_code
    # Without the CA the certificate is not trusted: no silent plain fallback.
    with pytest.raises(Exception):
        httpx2.get(url, verify=True)
