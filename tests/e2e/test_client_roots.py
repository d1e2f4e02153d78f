"""`ferret serve --stdio` with no root: the client's roots (MCP roots, in the
handshake era), else the folder it starts in; roots added and dropped while
serving; never `/`. Over HTTP roots still come only from the operator."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import warnings
from pathlib import Path

import pytest
from conftest import FERRET, STATE_HOME, call, run
from mcp import types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, get_default_environment


def project(base: Path, name: str, marker: str) -> Path:
    root = base / name
    (root / "src").mkdir(parents=True)
    (root / "src" / f"{marker}.rs").write_text(f"fn {marker}() {{}}\n")
    (root / "README.md").write_text(f"# {name}\n")
    return root


def uri(path: Path) -> str:
    return path.resolve().as_uri() + "/"


def stdio(cwd: Path, *args: str, era: str = "legacy", roots: list[Path] | None = None, state: str = STATE_HOME, **options):
    """A client of `ferret serve --stdio` started in `cwd`; with `roots`, the
    client declares the roots capability and answers `roots/list` with
    whatever the list holds when asked (the caller may change it)."""
    target = StdioServerParameters(
        command=str(FERRET),
        args=["serve", "--stdio", *args],
        env={**get_default_environment(), "XDG_STATE_HOME": state},
        cwd=str(cwd),
    )
    if roots is not None:
        async def list_roots(_context) -> types.ListRootsResult:
            return types.ListRootsResult(roots=[types.Root(uri=uri(p)) for p in roots])

        options["list_roots_callback"] = list_roots
    return Client(target, mode=era, **options)


async def found(c, name: str) -> list[str]:
    e, s, _, _ = await call(c, "search", {"query": name})
    assert not e, s
    return [h if isinstance(h, str) else h["path"] for h in s["results"]]


async def until(check, what: str, within: float = 10.0):
    deadline = time.monotonic() + within
    while True:
        got = await check()
        if got:
            return got
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_with_no_root_and_no_client_roots_the_folder_it_starts_in_is_served(tmp_path, era):
    here = project(tmp_path, "here", "started_here")

    async def go():
        async with stdio(here, era=era) as c:
            assert await found(c, "started_here") == ["src/started_here.rs"]
            _, d, _, _ = await call(c, "diagnostics", {})
            assert d["roots_from"] == "current folder", d["roots_from"]
            assert [r["path"] for r in d["roots"]] == [str(here.resolve())]
            # Confined as any root: nothing above the folder.
            e, s, _, _ = await call(c, "read", {"path": "../outside.txt"})
            assert e and s["error"]["code"] in ("PATH_OUTSIDE_ROOT", "NOT_FOUND"), s

    (tmp_path / "outside.txt").write_text("not served\n")
    run(go())


def test_the_clients_roots_are_served_not_the_folder_it_starts_in(tmp_path):
    here = project(tmp_path, "here", "started_here")
    alpha = project(tmp_path, "alpha", "alpha_marker")
    beta = project(tmp_path, "beta", "beta_marker")

    async def go():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with stdio(here, roots=[alpha, beta]) as c:
                assert await found(c, "alpha_marker") == ["alpha/src/alpha_marker.rs"]
                assert await found(c, "beta_marker") == ["beta/src/beta_marker.rs"]
                assert await found(c, "started_here") == []
                _, d, _, _ = await call(c, "diagnostics", {})
                assert d["roots_from"] == "client"
                assert sorted(r["name"] for r in d["roots"]) == ["alpha", "beta"]
                assert all(not r["writable"] for r in d["roots"])
                tools = {t.name for t in (await c.list_tools()).tools}
                assert "write" not in tools

    run(go())


def test_a_client_folder_inside_another_it_names_is_served_once(tmp_path):
    # A workspace of nested folders: the inner one is served under the outer
    # one (two copies would share one inotify watch, and one go stale).
    here = project(tmp_path, "here", "started_here")
    alpha = project(tmp_path, "alpha", "alpha_marker")
    inner = alpha / "src"

    async def go():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with stdio(here, roots=[inner, alpha]) as c:
                _, d, _, _ = await call(c, "diagnostics", {})
                assert [r["name"] for r in d["roots"]] == ["alpha"], d["roots"]
                assert await found(c, "alpha_marker") == ["src/alpha_marker.rs"]
                (inner / "made_later.rs").write_text("x\n")
                assert await found(c, "made_later") == ["src/made_later.rs"]

    run(go())


def test_roots_added_and_dropped_while_serving(tmp_path):
    """A `roots/list_changed` adds the new folder (searchable within 5 s) and
    drops the old one at once: a read there is refused from the first call
    after the change is served, and grep finds nothing in it."""
    here = project(tmp_path, "here", "started_here")
    alpha = project(tmp_path, "alpha", "alpha_marker")
    beta = project(tmp_path, "beta", "beta_marker")
    listed = [alpha]

    async def go():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with stdio(here, roots=listed) as c:
                assert await found(c, "alpha_marker") == ["src/alpha_marker.rs"]
                listed[:] = [beta]
                await c.send_roots_list_changed()
                started = time.monotonic()
                # The very next call: the dropped folder is gone.
                e, s, _, _ = await call(c, "read", {"path": "src/alpha_marker.rs"})
                assert e and s["error"]["code"] == "NOT_FOUND", s
                got = await until(lambda: found(c, "beta_marker"), "the new root never became searchable", 5)
                took = time.monotonic() - started
                assert got == ["src/beta_marker.rs"]
                print(f"new root searchable after {took:.2f} s")
                assert await found(c, "alpha_marker") == []
                e, g, text, _ = await call(c, "grep", {"pattern": "fn alpha_marker", "literal": True})
                assert not e and "alpha_marker" not in str(g) and "alpha_marker" not in text, g
                # Both at once: named after their folders, below a virtual top.
                listed[:] = [alpha, beta]
                await c.send_roots_list_changed()
                await until(lambda: found(c, "alpha_marker"), "alpha never came back", 5)
                assert sorted(await found(c, "marker")) == ["alpha/src/alpha_marker.rs", "beta/src/beta_marker.rs"]

    run(go())


def test_a_roots_list_naming_no_folder_serves_the_folder_it_starts_in(tmp_path):
    """As the Inspector does: roots offered, none named (or none usable)."""
    here = project(tmp_path, "here", "started_here")

    async def go():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with stdio(here, roots=[]) as c:
                assert await found(c, "started_here") == ["src/started_here.rs"]
                e, d, _, _ = await call(c, "diagnostics", {})
                assert not e and d["roots_from"] == "current folder", d

    run(go())


def test_started_in_slash_by_a_client_naming_no_folder_serves_nothing(tmp_path):
    async def go():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with stdio(Path("/"), roots=[]) as c:
                e, s, _, _ = await call(c, "search", {"query": "passwd"})
                assert e and s["error"]["code"] == "NO_ROOTS", s
                e, d, _, _ = await call(c, "diagnostics", {})
                assert not e and d["roots"] == [], d

    run(go())


def test_no_client_roots_serves_the_current_folder_whatever_the_client_offers(tmp_path):
    here = project(tmp_path, "here", "started_here")
    alpha = project(tmp_path, "alpha", "alpha_marker")

    async def go():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with stdio(here, "--no-client-roots", roots=[alpha]) as c:
                assert await found(c, "started_here") == ["src/started_here.rs"]
                assert await found(c, "alpha_marker") == []

    run(go())


def test_started_in_slash_with_no_root_serves_nothing(tmp_path):
    async def go():
        async with stdio(Path("/")) as c:
            e, s, _, _ = await call(c, "search", {"query": "passwd"})
            assert e and s["error"]["code"] == "NO_ROOTS", s
            assert "`/`" in s["error"]["message"] and "--root" in s["error"]["hint"]

    run(go())


def test_writable_client_roots_are_written_through_the_root(tmp_path):
    here = project(tmp_path, "here", "started_here")

    async def go():
        async with stdio(here, "--writable") as c:
            e, s, _, _ = await call(c, "write", {"path": "notes.txt", "content": "hello\n"})
            assert not e, s
            e, s, _, _ = await call(c, "write", {"path": "../escape.txt", "content": "no\n"})
            assert e, s

    run(go())
    assert (here / "notes.txt").read_text() == "hello\n"
    assert not (tmp_path / "escape.txt").exists()


def test_reopening_the_same_folder_loads_its_saved_index(tmp_path):
    here = project(tmp_path, "here", "started_here")
    state = tmp_path / "state"
    state.mkdir()

    async def once():
        async with stdio(here, state=str(state)) as c:
            await until(lambda: found(c, "started_here"), "never found")
            _, d, _, _ = await call(c, "diagnostics", {})
            return d["index"]["loaded_from_snapshot"]

    assert run(once()) is False
    assert run(once()) is True


def test_over_http_a_root_is_still_required(tmp_path):
    p = subprocess.run([str(FERRET), "serve", "--bind", "127.0.0.1:0"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=30,
                       env={**os.environ, "XDG_STATE_HOME": STATE_HOME})
    assert p.returncode != 0 and "no root given" in p.stderr and "--root" in p.stderr, p.stderr


def test_a_subscription_is_still_heard_after_the_roots_change(tmp_path):
    """Subscriptions are kept across a change of roots: the hub follows the
    new index. With two roots before and after, a kept root's paths are shown
    the same way, so its subscription still hears its file."""
    from test_subscriptions import Updates

    here = project(tmp_path, "here", "started_here")
    alpha = project(tmp_path, "alpha", "alpha_marker")
    beta = project(tmp_path, "beta", "beta_marker")
    gamma = project(tmp_path, "gamma", "gamma_marker")
    listed = [alpha, beta]
    updates = Updates()
    watched = (alpha / "src" / "alpha_marker.rs").resolve().as_uri()

    async def go():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with stdio(here, roots=listed, message_handler=updates) as c:
                assert await found(c, "alpha_marker") == ["alpha/src/alpha_marker.rs"]
                await c.subscribe_resource(watched)
                listed[:] = [alpha, gamma]
                await c.send_roots_list_changed()
                await until(lambda: found(c, "gamma_marker"), "gamma never became searchable", 5)
                await asyncio.sleep(0.3)
                (alpha / "src" / "alpha_marker.rs").write_text("fn alpha_marker() { changed }\n")
                await updates.wait_for(watched)

    run(go())
