"""Escape attempts and secrets against every tool: none may succeed.

Each attempt goes through the real binary and the official client. A response
passes when it carries the expected refusal and nothing from outside the root
or from a sensitive file appears anywhere in it.
"""

import pytest
from conftest import ENV_SECRET, OUTSIDE_SECRET, all_text, call, connect, run, shown


def outside_attempts(tree):
    base = tree.parent
    return [
        "..",
        "../outside/secret.txt",
        "src/../../outside/secret.txt",
        "src/..",
        "./../root-evil/x.txt",
        "..\\outside\\secret.txt",
        "src\\..\\..\\outside\\secret.txt",
        "/etc/passwd",
        str(base / "outside" / "secret.txt"),
        str(base / "root-evil" / "x.txt"),  # sibling whose name starts with the root's
        str(tree) + "/../outside/secret.txt",
        "C:\\Windows\\win.ini",
        "\\\\server\\share\\secret.txt",
        "README.md\x00.txt",
        "links/out_file",
        "links/out_dir",
        "links/out_dir/secret.txt",
        "links/abs_out",
        "links/abs_out_dir/secret.txt",
        "links/etc_passwd",
    ]


SENSITIVE = [".env", ".env.local", "id_rsa", "certs/server.pem", ".ssh/config", ".git/objects/ab/cdef", "cfg/credentials.json", "links/to_env"]


def assert_nothing_leaked(result):
    dump = all_text(result)
    assert OUTSIDE_SECRET not in dump
    assert ENV_SECRET not in dump and "sk-never-leak" not in dump
    assert "root:x:0:0" not in dump


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_no_tool_escapes_the_root(tree, era):
    attempts = outside_attempts(tree)

    async def go():
        outcomes = []
        async with connect("stdio", era, ["--root", str(tree)]) as c:
            for p in attempts:
                for tool, args in [
                    ("read", {"path": p}),
                    ("list", {"path": p}),
                    ("list", {"path": p, "depth": 3, "hidden": True, "ignored": True}),
                    ("stat", {"paths": [p]}),
                ]:
                    outcomes.append((tool, p, await call(c, tool, args)))
        return outcomes

    for tool, p, (is_error, s, text, result) in run(go()):
        assert_nothing_leaked(result)
        code = s["results"][0]["error"]["code"] if tool == "stat" else s["error"]["code"]
        assert is_error or tool == "stat", (tool, p, s)
        assert code == "PATH_OUTSIDE_ROOT", (tool, p, code)


def test_walks_never_enter_links_that_lead_out(tree):
    async def go():
        async with connect("stdio", "legacy", ["--root", str(tree)]) as c:
            return await call(c, "list", {"depth": 10, "hidden": True, "ignored": True, "limit": 2000})

    is_error, s, text, result = run(go())
    assert not is_error
    assert_nothing_leaked(result)
    listed = set(shown(s, "entries"))
    for bad in ["links/out_file", "links/out_dir", "links/abs_out", "links/abs_out_dir", "links/etc_passwd"]:
        assert bad not in listed
    assert s["skipped"]["outside_root"] == 5
    for good in ["links/in_file", "links/in_dir", "links/abs_in", "links/dangling"]:
        assert good in listed
    # In-root directory links are listed but never descended into (no loops, no duplicates).
    assert not any(p.startswith("links/in_dir/") for p in listed)


def test_sensitive_files_are_refused_by_every_tool(tree):
    async def go():
        out = []
        async with connect("stdio", "2026-07-28", ["--root", str(tree)]) as c:
            for p in SENSITIVE:
                out.append(("read", p, await call(c, "read", {"path": p})))
                out.append(("stat", p, await call(c, "stat", {"paths": [p]})))
        return out

    for tool, p, (is_error, s, text, result) in run(go()):
        assert_nothing_leaked(result)
        code = s["results"][0]["error"]["code"] if tool == "stat" else s["error"]["code"]
        assert code == "PATH_DENIED", (tool, p, s)


def test_harmless_neighbours_of_secrets_are_readable(tree):
    async def go():
        async with connect("stdio", "legacy", ["--root", str(tree)]) as c:
            return [await call(c, "read", {"path": p}) for p in [".env.example", "id_rsa.pub"]]

    for is_error, s, _, _ in run(go()):
        assert not is_error and s["text"]


def test_operator_deny_patterns_add_to_the_builtin_list(tree):
    async def go():
        async with connect("stdio", "legacy", ["--root", str(tree), "--deny", "*.md"]) as c:
            return await call(c, "read", {"path": "README.md"}), await call(c, "read", {"path": ".env"})

    (e1, s1, _, _), (e2, s2, _, _) = run(go())
    assert s1["error"]["code"] == "PATH_DENIED" and s2["error"]["code"] == "PATH_DENIED"


def test_dangling_and_looping_links_fail_cleanly(tree):
    async def go():
        async with connect("stdio", "legacy", ["--root", str(tree)]) as c:
            return [await call(c, "read", {"path": p}) for p in ["links/dangling", "links/loop_a"]]

    (e1, s1, _, _), (e2, s2, _, _) = run(go())
    assert e1 and s1["error"]["code"] == "NOT_FOUND"
    assert e2 and s2["error"]["code"] in ("IO_ERROR", "NOT_FOUND")
