"""Resources: the roots in resources/list, every file through a file:// template,
read with the same confinement, denylist, decoding and limits as the `read` tool."""

import base64
import json
import os
from pathlib import Path

import pytest
from conftest import BIG_LINE_COUNT, ENV_SECRET, OUTSIDE_SECRET, run
from mcp.shared.exceptions import MCPError
from mcp.types import ResourceTemplateReference


def root_uri(tree: Path) -> str:
    return Path(os.path.realpath(tree)).as_uri() + "/"


def not_found_code(era: str) -> int:
    # -32002 before 2026-07-28; the stateless era folds it into -32602.
    return -32602 if era == "2026-07-28" else -32002


def test_roots_and_templates_are_listed(session, tree):
    async def go():
        async with session() as c:
            return (await c.list_resources()).resources, (await c.list_resource_templates()).resource_templates

    resources, templates = run(go())
    assert [(r.uri, r.name, r.mime_type) for r in resources] == [(root_uri(tree), "root", "inode/directory")]
    assert [t.uri_template for t in templates] == [root_uri(tree) + "{+path}"]
    assert templates[0].name and templates[0].description


def test_files_read_with_the_read_tools_decoding(session, tree):
    base = root_uri(tree)

    async def go():
        async with session() as c:
            out = {}
            for rel in ["README.md", "enc/utf16le.txt", "enc/gbk.txt", "notes/crlf.txt", "img/pixel.png", "src"]:
                out[rel] = (await c.read_resource(base + rel)).contents
            return out

    got = run(go())
    readme = got["README.md"][0]
    assert readme.text == (tree / "README.md").read_text()
    assert readme.mime_type == "text/markdown"
    assert readme.meta["ferret"]["checksum"].startswith("sha256:")
    assert got["enc/utf16le.txt"][0].text.startswith("Grüße aus UTF-16")
    assert got["enc/utf16le.txt"][0].meta["ferret"]["encoding"] == "utf-16le"
    assert got["enc/gbk.txt"][0].text.startswith("第一行")
    assert got["notes/crlf.txt"][0].text == "first\r\nsecond\r\nthird\r\n", "line endings are kept"
    png = got["img/pixel.png"][0]
    assert png.mime_type == "image/png"
    assert base64.b64decode(png.blob) == (tree / "img/pixel.png").read_bytes()
    assert got["src"][0].text == "lib.rs\nmain.rs\n", "a folder reads as its listing"


def test_a_huge_file_is_cut_at_a_line_and_says_where_read_continues(session, tree):
    async def go():
        async with session() as c:
            return (await c.read_resource(root_uri(tree) + "big/big.txt")).contents[0]

    big = run(go())
    meta = big.meta["ferret"]
    assert meta["truncated"] is True
    assert len(big.text.encode()) <= 128 * 1024 and big.text.endswith("\n")
    lines = big.text.count("\n")
    assert meta["next_start_line"] == lines + 1 < BIG_LINE_COUNT
    assert "read" in meta["hint"]


ESCAPES = [
    "../outside/secret.txt",
    "%2e%2e/outside/secret.txt",
    "links/out_file",
    "links/abs_out",
    "links/etc_passwd",
    "links/out_dir/secret.txt",
]


def test_escapes_are_not_found_and_never_read(session, tree):
    base = root_uri(tree)
    outside = Path(os.path.realpath(tree)).parent / "outside" / "secret.txt"
    uris = [base + e for e in ESCAPES] + [
        outside.as_uri(),
        "file:///etc/passwd",
        root_uri(tree).rstrip("/") + "-evil/x.txt",
        "file://evil.example" + str(Path(os.path.realpath(tree)) / "README.md"),
        "https://example.com/README.md",
    ]

    async def go():
        async with session() as c:
            errors = []
            for uri in uris:
                with pytest.raises(MCPError) as info:
                    await c.read_resource(uri)
                errors.append((uri, info.value.error))
            return errors

    for uri, error in run(go()):
        assert error.code == not_found_code(session.era), (uri, error)
        assert error.data["uri"] == uri
        assert OUTSIDE_SECRET not in str(error)


def test_secrets_and_binaries_are_refused_with_a_reason(session, tree):
    base = root_uri(tree)

    async def go():
        async with session() as c:
            out = {}
            for rel in [".env", "id_rsa", "links/to_env", "cfg/credentials.json", "bin/prog", "nowhere.txt"]:
                with pytest.raises(MCPError) as info:
                    await c.read_resource(base + rel)
                out[rel] = info.value.error
            return out

    errors = run(go())
    for rel in [".env", "id_rsa", "links/to_env", "cfg/credentials.json"]:
        assert errors[rel].code == -32602 and errors[rel].data["code"] == "PATH_DENIED", rel
        assert ENV_SECRET not in str(errors[rel])
    assert errors["bin/prog"].data["code"] == "BINARY_CONTENT"
    assert errors["nowhere.txt"].code == not_found_code(session.era)
    assert errors["nowhere.txt"].data["code"] == "NOT_FOUND"


def test_template_paths_complete_from_the_index(session, tree):
    async def go():
        async with session() as c:
            ref = ResourceTemplateReference(type="ref/resource", uri=root_uri(tree) + "{+path}")
            top = await c.complete(ref, {"name": "path", "value": "s"})
            deep = await c.complete(ref, {"name": "path", "value": "enc/utf"})
            with pytest.raises(MCPError) as info:
                await c.complete(
                    ResourceTemplateReference(type="ref/resource", uri="file:///elsewhere/{+path}"),
                    {"name": "path", "value": ""},
                )
            return top.completion, deep.completion, info.value.error

    top, deep, error = run(go())
    assert "src/" in top.values
    assert deep.values == ["enc/utf16be.txt", "enc/utf16le.txt", "enc/utf8.txt", "enc/utf8bom.txt"]
    assert deep.total == 4 and deep.has_more is False
    assert error.code == -32602


def test_search_and_grep_answers_link_the_files_they_name(session, tree):
    """resource_link items: the file's URI (readable as a resource), name, MIME
    type, size and lastModified; none for folders or secrets; a few at most."""

    async def go():
        async with session() as c:
            search = await c.call_tool("search", {"query": "ext:rs"})
            everything = await c.call_tool("search", {"query": "", "limit": 100})
            grep = await c.call_tool("grep", {"pattern": "fn", "output": "files"})
            first = next(b for b in grep.content if b.type == "resource_link")
            read = await c.read_resource(first.uri)
            return search, everything, grep, read

    search, everything, grep, read = run(go())
    links = [b for b in search.content if b.type == "resource_link"]
    assert sorted(link.name for link in links) == ["lib.rs", "main.rs"]
    main = next(link for link in links if link.name == "main.rs")
    real = Path(os.path.realpath(tree)) / "src" / "main.rs"
    assert main.uri == real.as_uri() and main.size == real.stat().st_size
    assert main.mime_type == "text/rust" or main.mime_type.startswith("text/")
    assert main.annotations.last_modified.endswith("Z")
    # Files only, never a secret, and at most ten however many were found.
    many = [b for b in everything.content if b.type == "resource_link"]
    assert 0 < len(many) <= 10
    assert not any(b.name in (".env", "id_rsa", "server.pem") or b.uri.endswith("/") for b in many)
    # The structured answer is what it was: links are content items only.
    assert "links" not in json.dumps(search.structured_content)
    assert {b.name for b in grep.content if b.type == "resource_link"} == {"lib.rs", "main.rs"}
    assert "fn" in read.contents[0].text
