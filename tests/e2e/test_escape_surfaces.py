"""The escape suite on every surface besides read/list/stat (test_escapes.py):
`search`, `grep`, `changes`, `completion/complete`, `locate`, resources and
subscriptions, the search page's API and Everything's JSON API. Then the race:
a folder swapped for a symlink that leads out (`renameat2` RENAME_EXCHANGE,
thousands of times) while every surface is called on the path through it.

A surface passes when no answer carries anything from outside the root (the
outside file's text, its name under a path inside the root, `/etc/passwd`) or
from a secret, and the refusals carry their codes.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import threading
import time
from pathlib import Path

import httpx2 as httpx
import pytest
from conftest import ENV_SECRET, OUTSIDE_SECRET, HttpServer, all_text, call, connect, run, shown
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference, ResourceTemplateReference
from test_escapes import outside_attempts

LEAKS = [OUTSIDE_SECRET, ENV_SECRET, "sk-never-leak", "root:x:0:0"]


def leaked(text: str) -> list[str]:
    return [s for s in LEAKS if s in text]


def uri_of(root: Path, rel: str) -> str:
    return Path(os.path.realpath(root)).as_uri() + "/" + rel


@pytest.fixture(scope="module")
def server(tree):
    s = HttpServer(["--root", str(tree), "--no-persist", "--ui-downloads"])
    yield s
    s.stop()


def escaping_uris(tree: Path) -> list[str]:
    real = Path(os.path.realpath(tree))
    outside = real.parent / "outside"
    return [
        outside.as_uri() + "/secret.txt",
        real.as_uri() + "/../outside/secret.txt",
        real.as_uri() + "/%2e%2e/outside/secret.txt",
        real.as_uri() + "/src/%2E%2E/%2E%2E/outside/secret.txt",
        real.as_uri() + "/links/out_file",
        real.as_uri() + "/links/out_dir/secret.txt",
        real.as_uri() + "/links/abs_out_dir/secret.txt",
        real.as_uri() + "/links/etc_passwd",
        real.as_uri() + "/.env",
        real.as_uri() + "/links/to_env",
        "file://evil.example" + str(real) + "/README.md",
        "file:///etc/passwd",
        (real.parent / "root-evil").as_uri() + "/x.txt",
    ]


def test_search_grep_and_changes_never_reach_outside(tree, server):
    attempts = outside_attempts(tree)

    async def go():
        out = []
        async with connect("http", "2026-07-28", [], server) as c:
            # Make a change outside the root: it must never show in `changes`.
            (tree.parent / "outside" / "new-outside.txt").write_text(OUTSIDE_SECRET)
            for p in attempts:
                out.append(("search", p, await call(c, "search", {"query": "", "path": p, "limit": 2000})))
                out.append(("grep", p, await call(c, "grep", {"pattern": "SECRET|sk-never|root:x", "path": p})))
                out.append(("changes", p, await call(c, "changes", {"path": p, "limit": 2000})))
            for args in [
                {"query": "secret"},
                {"query": "passwd"},
                {"query": "x.txt"},
                {"query": ".*", "regex": True, "match_path": True, "limit": 2000},
                {"query": "outside", "match_path": True},
                {"query": "content:TOP-SECRET"},
            ]:
                out.append(("search", json.dumps(args), await call(c, "search", args)))
            for args in [
                {"pattern": "TOP-SECRET|sk-never-leak|root:x:0:0"},
                {"pattern": "TOP-SECRET", "filter": "links/", "path": "links"},
                {"pattern": "sk-never", "glob": "**/.env*"},
                {"pattern": "SECRET", "documents": True},
            ]:
                out.append(("grep", json.dumps(args), await call(c, "grep", args)))
            await asyncio.sleep(0.5)
            out.append(("changes", "all", await call(c, "changes", {"limit": 2000})))
        return out

    for surface, attempt, (is_error, s, text, result) in run(go()):
        dump = all_text(result)
        assert not leaked(dump), (surface, attempt, leaked(dump))
        if is_error:
            assert s["error"]["code"] in ("PATH_OUTSIDE_ROOT", "NOT_FOUND", "NOT_DIRECTORY"), (surface, attempt, s)
        if surface == "search" and not is_error:
            for p in shown(s):
                assert not p.startswith(("links/out_dir/", "links/abs_out_dir/")), (attempt, p)
                assert "new-outside" not in p and "root-evil" not in p, (attempt, p)
        if surface == "grep" and not is_error:
            assert s.get("total", 0) == 0, (attempt, s)
        if surface == "changes" and not is_error:
            assert not any("new-outside" in e["path"] for e in s["changes"]), (attempt, s)


def test_completion_offers_nothing_outside(tree, server):
    values = ["..", "../", "../outside/", "/", "/etc/", "links/out_dir/", "links/abs_out_dir/", "links/out_dir/s", str(tree.parent) + "/", ".ssh/", "src/../../"]

    async def go():
        out = []
        async with connect("http", "legacy", [], server) as c:
            template = ResourceTemplateReference(type="ref/resource", uri=uri_of(tree, "{+path}"))
            orient = PromptReference(type="ref/prompt", name="orient")
            for v in values:
                for ref in (template, orient):
                    try:
                        done = await c.complete(ref, {"name": "path", "value": v})
                        out.append((v, done.completion.values))
                    except MCPError as e:
                        out.append((v, e.error))
        return out

    for value, got in run(go()):
        if isinstance(got, list):
            for completed in got:
                assert not completed.startswith(("links/out_dir/", "links/abs_out_dir/", "/", "..")), (value, completed)
                assert "secret.txt" not in completed and "passwd" not in completed, (value, completed)
        else:
            assert got.code == -32602, (value, got)


def test_resources_and_subscriptions_refuse_every_escape(tree):
    uris = escaping_uris(tree)

    async def go():
        out = []
        async with connect("stdio", "legacy", ["--root", str(tree), "--no-persist"]) as c:
            for u in uris:
                try:
                    r = await c.read_resource(u)
                    out.append(("read", u, json.dumps(r.model_dump(mode="json"))))
                except MCPError as e:
                    out.append(("read", u, e.error))
                try:
                    await c.subscribe_resource(u)
                    out.append(("subscribe", u, "accepted"))
                except MCPError as e:
                    out.append(("subscribe", u, e.error))
        async with connect("stdio", "2026-07-28", ["--root", str(tree), "--no-persist"]) as c:
            async with c.listen(resource_subscriptions=uris) as sub:
                honored = sub.honored.resource_subscriptions or []
                (tree.parent / "outside" / "secret.txt").write_text(OUTSIDE_SECRET + " again\n")
                events = []
                try:
                    async with asyncio.timeout(1.5):
                        async for event in sub:
                            events.append(event.uri)
                except TimeoutError:
                    pass
        return out, honored, events

    out, honored, events = run(go())
    real = Path(os.path.realpath(tree)).as_uri() + "/"
    # A subscription names an entry of the index, and hears only of that entry
    # (a secret's or a symlink's own changes; never their content, never what a
    # link points at). What lies outside the root, lexically, is refused.
    in_root = [u for u in uris if u.startswith(real) and ".." not in u and "%2" not in u.lower()]
    for op, u, got in out:
        if isinstance(got, str):
            assert not leaked(got), (op, u, leaked(got))
            assert op == "subscribe", (u, "an escaping URI was read")
            assert u in in_root, (u, "a subscription to a URI outside the root was accepted")
        else:
            assert got.code in (-32602, -32002), (op, u, got)
            assert not leaked(str(got.data)), (op, u)
    assert set(honored) <= set(in_root), sorted(set(honored) - set(in_root))
    assert events == [], "no notification about anything outside"


def test_locate_lists_only_its_roots_never_through_links(tmp_path):
    places = tmp_path / "places"
    served, located, outside = places / "served", places / "located", places / "outside"
    for d in (served, located / "q", outside):
        d.mkdir(parents=True)
    (outside / "outside-only.txt").write_text(OUTSIDE_SECRET)
    (located / "q" / "report.txt").write_text(OUTSIDE_SECRET)
    os.symlink("../outside", located / "link_out")
    os.symlink(str(outside), located / "abs_link_out")
    args = ["--root", str(served), "--locate-root", str(located), "--locate", "allow", "--no-persist"]

    async def go():
        out = []
        async with connect("stdio", "2026-07-28", args) as c:
            for q in [{"query": "outside-only"}, {"query": "report"}, {"query": "txt", "limit": 2000}]:
                out.append((q, await call(c, "locate", q)))
            for p in [str(outside), "/etc", str(located / "link_out"), "..", str(located) + "/../outside"]:
                out.append((p, await call(c, "locate", {"query": "txt", "path": p})))
            out.append(("read", await call(c, "read", {"path": str(located / "q" / "report.txt")})))
        return out

    real_located = os.path.realpath(located)
    answers = run(go())
    for q, (is_error, s, text, result) in answers:
        assert not leaked(all_text(result)), (q, s)
        if not is_error and "results" in s:
            for p in shown(s):
                assert p.startswith(real_located) and "outside-only" not in p, (q, p)
                assert "/link_out/" not in p and "/abs_link_out/" not in p, (q, p)
    is_error, s, _, _ = answers[-1][1]
    assert is_error and s["error"]["code"] == "PATH_OUTSIDE_ROOT", "a located file is never read"


def page_attempts(tree: Path) -> list[tuple[str, dict]]:
    calls = []
    for p in outside_attempts(tree) + [".env", "links/to_env", "cfg/credentials.json"]:
        calls += [
            ("/ui/api/preview", {"path": p}),
            ("/ui/api/image", {"path": p}),
            ("/ui/api/download", {"path": p}),
        ]
    calls += [
        ("/ui/api/search", {"q": "secret"}),
        ("/ui/api/search", {"q": ".*", "regex": "1", "path": "1", "limit": "1000"}),
        ("/ui/api/grep", {"pattern": "TOP-SECRET|sk-never-leak|root:x:0:0"}),
        ("/ui/api/grep", {"pattern": "SECRET", "filter": "links/"}),
        ("/", {"search": "secret", "json": "1", "path_column": "1"}),
        ("/", {"s": "outside", "p": "1", "j": "1", "path_column": "1"}),
        ("/", {"s": ".*", "r": "1", "j": "1", "c": "10000", "path_column": "1"}),
        ("/", {"s": "passwd", "j": "1", "path_column": "1"}),
    ]
    return calls


def test_the_page_and_everythings_api_never_reach_outside(tree, server):
    outside = str(Path(os.path.realpath(tree)).parent / "outside")
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=20) as http:
        for route, params in page_attempts(tree):
            r = http.get(route, params=params)
            assert not leaked(r.text), (route, params, leaked(r.text))
            if route in ("/ui/api/preview", "/ui/api/image", "/ui/api/download"):
                assert r.status_code in (400, 403, 404, 415), (route, params, r.status_code, r.text[:300])
            if r.headers.get("content-type", "").startswith("application/json") and r.status_code == 200:
                body = r.json()
                paths = [x.get("path", "") for x in body.get("results", body.get("rows", []))] if isinstance(body, dict) else []
                assert not [p for p in paths if p.startswith(outside) or "/links/out_dir" in p], (route, params, paths[:5])


# ---- the swap race ---------------------------------------------------------------

RENAME_EXCHANGE = 2
AT_FDCWD = -100


class Swapper(threading.Thread):
    """Exchanges `a` and `b` (a folder and a symlink leading out) atomically,
    as fast as it can, until stopped."""

    def __init__(self, a: Path, b: Path):
        super().__init__(daemon=True)
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.a, self.b = os.fsencode(a), os.fsencode(b)
        self.stop = threading.Event()
        self.swaps = 0

    def run(self):
        while not self.stop.is_set():
            if self.libc.renameat2(AT_FDCWD, self.a, AT_FDCWD, self.b, RENAME_EXCHANGE) != 0:
                raise OSError(ctypes.get_errno(), "renameat2")
            self.swaps += 1


def race_tree(base: Path) -> tuple[Path, Path]:
    root, outside = base / "root", base / "outside"
    (root / "race" / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "race" / "d" / "inside.txt").write_text("inside the root\n")
    (root / "race" / "d" / "same.txt").write_text("inside the root\n")
    (outside / "secret.txt").write_text(OUTSIDE_SECRET + "\n")
    (outside / "same.txt").write_text(OUTSIDE_SECRET + "\n")
    # Source with a definition: `symbols` and read's outline must never name it.
    (root / "race" / "d" / "same.py").write_text("def inside_def_fn():\n    pass\n")
    (outside / "same.py").write_text("def outside_def_fn():\n    pass\n")
    os.symlink("../../outside", root / "race" / "l")
    return root, outside


def test_a_folder_swapped_for_a_symlink_leaks_on_no_surface(tmp_path):
    root, _ = race_tree(tmp_path)
    # A locate root with the same trap.
    located = tmp_path / "located"
    (located / "d").mkdir(parents=True)
    (located / "d" / "inside.txt").write_text("located\n")
    os.symlink("../outside", located / "l")
    server = HttpServer(["--root", str(root), "--locate-root", str(located), "--locate", "allow", "--no-persist"])
    swapper = Swapper(root / "race" / "d", root / "race" / "l")
    located_swapper = Swapper(located / "d", located / "l")
    rounds = 25
    through = "race/d"
    tools = [
        ("read", {"path": f"{through}/same.txt"}),
        ("read", {"path": f"{through}/secret.txt"}),
        ("list", {"path": through, "depth": 2}),
        ("stat", {"paths": [f"{through}/same.txt", f"{through}/secret.txt"]}),
        ("grep", {"pattern": "TOP-SECRET", "path": through}),
        ("grep", {"pattern": "TOP-SECRET"}),
        ("search", {"query": "", "path": through}),
        ("search", {"query": "secret"}),
        ("changes", {"path": through}),
        ("symbols", {"query": "outside_def_fn", "path": through}),
        ("symbols", {"query": "def_fn"}),
        ("read", {"path": f"{through}/same.py", "outline": True}),
        ("read", {"path": f"{through}/same.py", "symbol": "outside_def_fn"}),
        ("locate", {"query": "secret"}),
        ("locate", {"query": "txt", "path": str(located / "d")}),
    ]
    pages = [
        ("/ui/api/preview", {"path": f"{through}/same.txt"}),
        ("/ui/api/preview", {"path": through}),
        ("/ui/api/grep", {"pattern": "TOP-SECRET"}),
        ("/ui/api/search", {"q": "secret"}),
        ("/", {"search": "secret", "json": "1", "path_column": "1"}),
    ]
    names_seen_outside = []
    try:

        async def go():
            answers = []
            async with connect("http", "2026-07-28", [], server) as c:
                template = ResourceTemplateReference(type="ref/resource", uri=uri_of(root, "{+path}"))
                swapper.start()
                located_swapper.start()
                with httpx.Client(base_url=server.base, headers=server.auth, timeout=20) as http:
                    for _ in range(rounds):
                        for tool, args in tools:
                            answers.append((tool, args, all_text((await call(c, tool, args))[3])))
                        try:
                            r = await c.read_resource(uri_of(root, f"{through}/same.txt"))
                            answers.append(("resource", through, json.dumps(r.model_dump(mode="json"))))
                        except MCPError as e:
                            answers.append(("resource", through, str(e.error)))
                        done = await c.complete(template, {"name": "path", "value": f"{through}/"})
                        answers.append(("complete", through, json.dumps(done.completion.values)))
                        for route, params in pages:
                            answers.append((route, params, http.get(route, params=params).text))
            return answers

        answers = run(go())
    finally:
        for s in (swapper, located_swapper):
            s.stop.set()
            s.join(5)
        server.stop()
    assert swapper.swaps > 1000 and located_swapper.swaps > 1000, "the race did not run"
    # Surfaces that list names (a refusal may quote the path it was asked).
    listing = {"list", "search", "changes", "complete", "locate", "/ui/api/search", "/"}
    for surface, args, text in answers:
        assert not leaked(text), (surface, args, leaked(text))
        # A definition outside, named as found (a refusal may quote the name asked).
        assert "function outside_def_fn" not in text, (surface, args, text)
        if surface in listing and ("race/d/secret.txt" in text or "located/d/secret.txt" in text):
            names_seen_outside.append((surface, args))
    assert names_seen_outside == [], f"an outside name seen through the swapped folder: {names_seen_outside[:3]}"
    print(f"{swapper.swaps} swaps, {len(answers)} answers, nothing from outside")


def test_subscriptions_made_during_the_swap_race_hear_nothing_from_outside(tmp_path):
    """Handshake-era subscriptions sent while `race/d` is swapped with a
    symlink that leads out: whatever each one resolved to, none of them hears
    of a change outside the root, and the one to the file inside still works."""
    from test_subscriptions import Updates

    root, outside = race_tree(tmp_path)
    swapper = Swapper(root / "race" / "d", root / "race" / "l")
    uris = [uri_of(root, "race/d/same.txt"), uri_of(root, "race/d/secret.txt"), uri_of(root, "race/d/")]

    async def go():
        updates = Updates()
        refusals = []
        async with connect("stdio", "legacy", ["--root", str(root), "--no-persist"], message_handler=updates) as c:
            await call(c, "diagnostics", {})
            swapper.start()
            rounds = 0
            try:
                while rounds < 100 or swapper.swaps < 2000:
                    for u in uris:
                        try:
                            await c.subscribe_resource(u)
                        except MCPError as e:
                            refusals.append(str(e.error))
                    rounds += 1
                    if rounds > 5000:
                        break
            finally:
                swapper.stop.set()
                swapper.join(5)
            if (root / "race" / "d").is_symlink():  # put the folder back in its place
                os.rename(root / "race" / "d", root / "race" / "tmp")
                os.rename(root / "race" / "l", root / "race" / "d")
                os.rename(root / "race" / "tmp", root / "race" / "l")
            await asyncio.sleep(1.5)  # the swaps' own events (inside the root) settle
            before = list(updates.uris)
            updates.uris.clear()
            for name in ("same.txt", "secret.txt"):
                (outside / name).write_text(OUTSIDE_SECRET + " changed\n")
            await asyncio.sleep(2)
            from_outside = list(updates.uris)
            (root / "race" / "d" / "same.txt").write_text("inside the root, changed\n")
            await updates.wait_for(uris[0], timeout=15)
            return before, from_outside, refusals

    before, from_outside, refusals = run(go())
    assert swapper.swaps > 1000, "the race did not run"
    assert from_outside == [], f"a subscription heard of a change outside the root: {from_outside}"
    for text in refusals:
        assert not leaked(text), leaked(text)
    print(f"{swapper.swaps} swaps, {len(before)} notifications from the swaps themselves, {len(refusals)} refusals")
