"""`list` and `stat`."""

import pytest
from conftest import call, connect, run


@pytest.fixture(scope="module")
def tool(tree):
    def invoke(name, args, roots=None):
        async def go():
            async with connect("stdio", "legacy", roots or ["--root", str(tree)]) as c:
                return await call(c, name, args)

        return run(go())

    return invoke


def paths(s):
    """Entries as list shows them: named from the listed folder, folders with a
    trailing `/` (with `details`, objects that carry that name)."""
    return [e if isinstance(e, str) else e["name"] for e in s["entries"]]


def test_list_hides_dotfiles_and_gitignored_entries_by_default(tool):
    is_error, s, text, _ = tool("list", {})
    assert not is_error
    listed = paths(s)
    assert "README.md" in listed and "src/" in listed
    for hidden in [".env", ".hidden_note", ".git/", ".ssh/", "app.log", "build/"]:
        assert hidden not in listed
    assert s["skipped"]["hidden"] >= 5 and s["skipped"]["ignored"] == 2
    assert s["summary"].startswith(f"{s['total']} entries")
    assert s["count"] == len(s["entries"]) and "truncated" not in s and "next_offset" not in s
    assert "d " in text and "src/ (2 entries)" in text, "the text copy has kinds and counts"
    _, s, _, _ = tool("list", {"details": True})
    src = next(e for e in s["entries"] if e["name"] == "src/")
    assert src["kind"] == "dir" and src["children"] == 2 and src["modified"]


def test_list_can_include_hidden_and_ignored(tool):
    _, s, _, _ = tool("list", {"hidden": True, "ignored": True})
    listed = paths(s)
    for name in [".env", ".hidden_note", "app.log", "build/", ".gitignore"]:
        assert name in listed


def test_depth_glob_kind_sort_and_paging(tool):
    _, s, _, _ = tool("list", {"depth": 2, "glob": "*.rs"})
    assert paths(s) == ["src/lib.rs", "src/main.rs"]
    _, s, _, _ = tool("list", {"path": "src", "glob": "src/m*.rs"})
    assert s["path"] == "src" and paths(s) == ["main.rs"]
    _, s, _, _ = tool("list", {"kind": "dir"})
    assert all(e.endswith("/") for e in paths(s)) and "src/" in paths(s)
    # Sorting by size shows the sizes.
    _, s, _, _ = tool("list", {"path": "enc", "sort": "size", "descending": True})
    sizes = [e["size"] for e in s["entries"]]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == 0
    _, all_, _, _ = tool("list", {"depth": 3})
    _, page1, _, _ = tool("list", {"depth": 3, "limit": 4})
    _, page2, _, _ = tool("list", {"depth": 3, "limit": 4, "offset": page1["next_offset"]})
    assert page1["truncated"] and page1["next_offset"] == 4 and page1["total"] == all_["total"]
    assert paths(page1) + paths(page2) == paths(all_)[:8]
    _, s, _, _ = tool("list", {"limit": 0})
    assert s["entries"] == [] and s["total"] > 0 and s["truncated"] is True


def test_list_of_a_file_or_missing_folder(tool):
    is_error, s, _, _ = tool("list", {"path": "README.md"})
    assert is_error and s["error"]["code"] == "NOT_DIRECTORY" and s["suggested_tool"] == "read"
    is_error, s, _, _ = tool("list", {"path": "nope"})
    assert is_error and s["error"]["code"] == "NOT_FOUND"


def test_several_roots_form_a_virtual_top_folder(tool, tree, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "hello.txt").write_text("hi\n")
    roots = ["--root", f"main={tree}", "--root", f"other={other}"]
    _, s, _, _ = tool("list", {}, roots)
    assert paths(s) == ["main/", "other/"]
    _, s, _, _ = tool("list", {"path": "other"}, roots)
    assert paths(s) == ["hello.txt"]
    # A search below one root holds only its entries, in relevance order
    # and by name (a root was taken to restrict nothing: main's .txt too).
    for args in [{"query": "ext:txt", "path": "other"}, {"query": "txt", "path": "other"}, {"query": "txt", "path": "other", "sort": "name"}]:
        _, s, _, _ = tool("search", args, roots)
        found = [r if isinstance(r, str) else r["path"] for r in s["results"]]
        assert found == ["other/hello.txt"], (args, s)
    _, s, _, _ = tool("read", {"path": "other/hello.txt"}, roots)
    assert s["text"] == "hi\n" and s["path"] == "other/hello.txt"
    is_error, s, _, _ = tool("read", {"path": "main/../other/hello.txt"}, roots)
    assert is_error and s["error"]["code"] == "PATH_OUTSIDE_ROOT"


def test_stat_several_paths_with_per_path_errors(tool):
    is_error, s, text, _ = tool(
        "stat", {"paths": ["README.md", "src", "img/pixel.png", "missing", "links/in_file", "links/dangling", "big/big.txt"]}
    )
    assert not is_error
    r = {x["path"]: x for x in s["results"]}
    assert r["README.md"]["kind"] == "file" and r["README.md"]["lines"] == 3
    assert r["README.md"]["encoding"] == "utf-8" and r["README.md"]["checksum"].startswith("sha256:")
    assert r["README.md"]["readonly"] is True  # the server is read-only
    assert r["src"]["kind"] == "dir"
    assert r["img/pixel.png"]["image"] == {"format": "png", "width": 3, "height": 2}
    assert r["missing"]["error"]["code"] == "NOT_FOUND"
    assert r["links/in_file"]["kind"] == "symlink" and r["links/in_file"]["symlink_target"] == "README.md"
    assert r["links/dangling"]["kind"] == "symlink" and "symlink_target" not in r["links/dangling"]
    big = r["big/big.txt"]
    assert big["size"] > 20_000_000 and "checksum" not in big and big["encoding"] == "utf-8"
    assert s["errors"] == 1


def test_stat_checksum_matches_read(tool, tree):
    # read carries the checksum where it can be used: a writable root.
    writable = ["--root", f"{tree}:rw"]
    _, st, _, _ = tool("stat", {"paths": "notes/crlf.txt"}, writable)
    _, rd, _, _ = tool("read", {"path": "notes/crlf.txt"}, writable)
    assert st["results"][0]["checksum"] == rd["checksum"]
    assert st["results"][0]["line_endings"] == "crlf" and st["results"][0]["lines"] == 3
