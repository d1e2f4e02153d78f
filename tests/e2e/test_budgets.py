"""Every answer fits what the client shows at once: its structured content as
JSON and its text, each at most `--max-response-chars` characters (40,000 by
default, lowered to MAX_MCP_OUTPUT_TOKENS x 3 when that is set), and an answer
cut to fit says how to go on. The sizes are those issue 26 measured with
Claude Code: a default `read` of a 6 MB log, grep with limit 2000 over 20,000
matching lines, list of a 30,000-entry folder and search with limit 2000 and
details."""

from __future__ import annotations

import json

import pytest
from conftest import FERRET, STATE_HOME, call, run
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, get_default_environment


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    root = tmp_path_factory.mktemp("budgets") / "big"
    (root / "logs").mkdir(parents=True)
    line = "2026-12-02T04:00:00Z INFO request served path=/api/v1/items status=200 ms=12 \"quoted\"\n"
    with open(root / "logs" / "app.log", "w") as f:
        for i in range(6_000_000 // len(line)):
            f.write(f"{i:07} {line}")
    with open(root / "matches.txt", "w") as f:
        for i in range(20_000):
            f.write(f"needle number {i} with some text around it to make the line longer\n")
    folder = root / "many"
    folder.mkdir()
    for i in range(30_000):
        (folder / f"entry_{i:05}.dat").write_bytes(b"")
    return root


def serve(root, *args: str, env: dict | None = None):
    target = StdioServerParameters(
        command=str(FERRET),
        args=["serve", "--stdio", "--no-persist", "--root", str(root), *args],
        env={**get_default_environment(), "XDG_STATE_HOME": STATE_HOME, **(env or {})},
    )
    return Client(target, mode="legacy")


def shown(raw) -> tuple[int, int]:
    structured = len(json.dumps(raw.structured_content, ensure_ascii=False, separators=(",", ":"))) if raw.structured_content else 0
    text = sum(len(getattr(b, "text", "")) for b in raw.content)
    return structured, text


CALLS = [
    ("read", {"path": "logs/app.log"}, "next_start_line"),
    ("grep", {"pattern": "needle number", "limit": 2000}, None),
    ("list", {"path": "many", "limit": 2000, "details": True}, "next_offset"),
    ("search", {"query": "entry_", "limit": 2000, "details": True}, "next_offset"),
]


def answers(root, budget_env=None, *args):
    async def go():
        got = []
        async with serve(root, *args, env=budget_env) as c:
            for tool, a, _ in CALLS:
                e, s, _, raw = await call(c, tool, a)
                got.append((tool, e, s, shown(raw)))
        return got

    return run(go())


def says_how_to_go_on(tool, s, cont):
    if tool == "grep":
        return s.get("truncated") is True or s.get("next_offset") is not None
    return s.get("truncated") is True and s.get(cont) is not None


def test_default_answers_fit_40000_characters_and_say_how_to_go_on(big):
    for (tool, e, s, (structured, text)), (_, _, cont) in zip(answers(big), CALLS):
        print(f"{tool}: structured {structured}, text {text}")
        assert not e, (tool, s)
        assert structured <= 40_000 and text <= 40_000, (tool, structured, text)
        # Not cut to nothing: most of the budget is used.
        assert max(structured, text) > 20_000, (tool, structured, text)
        assert says_how_to_go_on(tool, s, cont), (tool, {k: v for k, v in s.items() if k not in ("text", "results", "entries", "matches")})


def test_max_mcp_output_tokens_lowers_the_budget(big):
    for tool, e, s, (structured, text) in answers(big, {"MAX_MCP_OUTPUT_TOKENS": "3000"}):
        assert not e, (tool, s)
        assert structured <= 9_000 and text <= 9_000, (tool, structured, text)


def test_the_flag_sets_the_budget_and_diagnostics_shows_it(big):
    async def go():
        async with serve(big, "--max-response-chars", "12000") as c:
            _, d, _, _ = await call(c, "diagnostics", {})
            assert d["limits"]["max_response_chars"] == 12_000
            e, s, _, raw = await call(c, "read", {"path": "logs/app.log", "start_line": 1000})
            assert not e and max(shown(raw)) <= 12_000 and s["start_line"] == 1000 and s["next_start_line"] > 1000, s["next_start_line"]
            # Paging on from where it stopped covers the file without a gap.
            e, s2, _, _ = await call(c, "read", {"path": "logs/app.log", "start_line": s["next_start_line"]})
            assert not e and s2["start_line"] == s["next_start_line"]

    run(go())
