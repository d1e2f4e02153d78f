"""Prompts that embed real data from the index, the journal and the files, and
completion of their arguments."""

import asyncio
import os
from pathlib import Path

import pytest
from conftest import call, connect, run
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference

PROMPTS = ["orient", "recent_changes", "find_symbol"]


def text_of(result) -> str:
    return "\n".join(m.content.text for m in result.messages)


def test_prompts_are_listed_with_their_arguments(session):
    async def go():
        async with session() as c:
            return (await c.list_prompts()).prompts

    prompts = run(go())
    assert [p.name for p in prompts] == PROMPTS
    for p in prompts:
        assert p.title and p.description
    args = {p.name: {a.name: a.required for a in p.arguments} for p in prompts}
    assert args == {
        "orient": {"path": False},
        "recent_changes": {"since": True, "path": False},
        "find_symbol": {"name": True, "path": False},
    }


def test_orient_embeds_the_folders_real_figures(session, tree):
    async def go():
        async with session() as c:
            return text_of(await c.get_prompt("orient", {})), text_of(await c.get_prompt("orient", {"path": "src"}))

    whole, src = run(go())
    assert "Folder: ." in whole
    assert "  src/  2 entries" in whole, whole
    assert "README.md" in whole
    # Two .rs files in the fixture, both in src/.
    assert "      2  rs" in whole
    assert "Folder: src" in src and "Below it: 2 files" in src
    assert "<<ferret-data" in whole, "the data is framed"


def test_recent_changes_lists_what_just_changed(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    (root / "old.txt").write_text("old\n")
    args = ["--root", str(root), "--no-persist"]

    async def go():
        async with connect("stdio", "legacy", args) as c:
            await call(c, "search", {"query": ""})  # the first build is done
            (root / "fresh.md").write_text("new\n")
            for _ in range(50):
                _, s, _, _ = await call(c, "changes", {"name": "fresh"})
                if s["total"]:
                    break
                await asyncio.sleep(0.1)
            text = text_of(await c.get_prompt("recent_changes", {"since": "1h"}))
            none = text_of(await c.get_prompt("recent_changes", {"since": "1h", "path": "elsewhere"}))
            return text, none

    text, none = run(go())
    assert "created  fresh.md" in text, text
    assert "1 created" in text
    assert "0 changes" in none


def test_find_symbol_tells_definitions_from_uses(tmp_path):
    root = tmp_path / "code"
    (root / "src").mkdir(parents=True)
    (root / "src" / "lib.rs").write_text("pub fn add_numbers(a: i32, b: i32) -> i32 {\n    a + b\n}\n")
    (root / "src" / "main.rs").write_text("fn main() {\n    let x = add_numbers(1, 2);\n    println!(\"{}\", add_numbers(x, 3));\n}\n")
    (root / "notes.md").write_text("add_numbers_v2 is not the same word\n")

    async def go():
        async with connect("stdio", "2026-07-28", ["--root", str(root), "--no-persist", "--symbols-early", "off"]) as c:
            # Before any `symbols` call the table is not built (a first
            # build of a big tree takes minutes; the prompt has seconds).
            before = text_of(await c.get_prompt("find_symbol", {"name": "add_numbers"}))
            await c.call_tool("symbols", {"query": "add_numbers"})
            return before, text_of(await c.get_prompt("find_symbol", {"name": "add_numbers"}))

    before, text = run(go())
    assert "Probably defined (1):\n  src/lib.rs:1: pub fn add_numbers" in before, before
    assert "3 lines in 2 files" in text, text
    # From the symbols table: the definition with its lines and kind.
    assert "Defined (1):\n  src/lib.rs:1-3: function add_numbers" in text, text
    assert "`read` a definition with `symbol`" in text
    assert "src/main.rs: lines 2, 3" in text
    assert "notes.md" not in text, "whole words only"


def test_find_symbol_tells_definitions_by_their_look_where_no_grammar_reads(tmp_path):
    root = tmp_path / "code"
    root.mkdir()
    (root / "tool.rb").write_text("def add_numbers(a, b)\n  a + b\nend\nprint(add_numbers(1, 2))\n")

    async def go():
        async with connect("stdio", "2026-07-28", ["--root", str(root), "--no-persist"]) as c:
            return text_of(await c.get_prompt("find_symbol", {"name": "add_numbers"}))

    text = run(go())
    assert "Probably defined (1):\n  tool.rb:1: def add_numbers" in text, text
    assert "tool.rb: lines 4" in text, text


@pytest.mark.parametrize(
    "name,args,needle",
    [
        ("no_such_prompt", {}, "no prompt"),
        ("recent_changes", {}, "needs the argument `since`"),
        ("recent_changes", {"since": "yesterday-ish"}, "is not a time"),
        ("orient", {"path": "../outside"}, "`path`"),
        ("orient", {"path": "README.md"}, "not an indexed folder"),
        ("orient", {"colour": "red"}, "no argument `colour`"),
        ("find_symbol", {"name": "x"}, "2 to 200 characters"),
    ],
)
def test_bad_prompt_arguments_are_invalid_params(tree, name, args, needle):
    async def go():
        async with connect("stdio", "legacy", ["--root", str(tree)]) as c:
            with pytest.raises(MCPError) as info:
                await c.get_prompt(name, args)
            return info.value.error

    error = run(go())
    assert error.code == -32602 and needle in error.message, error


def test_prompt_arguments_complete(session):
    async def go():
        async with session() as c:
            folder = await c.complete(PromptReference(type="ref/prompt", name="orient"), {"name": "path", "value": "s"})
            since = await c.complete(PromptReference(type="ref/prompt", name="recent_changes"), {"name": "since", "value": "1"})
            with pytest.raises(MCPError) as info:
                await c.complete(PromptReference(type="ref/prompt", name="nope"), {"name": "path", "value": ""})
            return folder.completion.values, since.completion.values, info.value.error.code

    folder, since, code = run(go())
    assert folder[0] == "src/", "names that start with the text come first"
    assert all(v.endswith("/") for v in folder), "folders only"
    assert since == ["15m", "1h", "1w"]
    assert code == -32602


def test_orient_counts_match_the_disk(tmp_path):
    root = tmp_path / "count"
    for i in range(7):
        d = root / f"d{i}"
        d.mkdir(parents=True)
        for j in range(i):
            (d / f"f{j}.txt").write_bytes(b"x" * 10)

    async def go():
        async with connect("stdio", "legacy", ["--root", str(root), "--no-persist"]) as c:
            return text_of(await c.get_prompt("orient", {}))

    text = run(go())
    files = sum(range(7))
    assert f"Below it: {files} files ({files * 10}B), 7 folders" in text, text
    assert f"{files:>7}  txt" in text
    assert os.path.isdir(Path(root))
