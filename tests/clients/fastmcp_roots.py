"""A cell of the real-client suite: fastmcp's Client, offering one MCP root,
starts ferret with no --root in another folder (run.mjs judges).

Argument: JSON {command, args, cwd, root}. Prints one JSON report: the paths a
`search` for `readme` gave, and where diagnostics says the roots came from.
"""

import asyncio
import json
import sys
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport


async def main(spec):
    transport = StdioTransport(spec["command"], spec["args"], cwd=spec["cwd"])
    # The handshake era: the 2026-07-28 revision has no roots.
    async with Client(transport, mode="legacy", roots=[Path(spec["root"]).as_uri()], timeout=30) as client:
        found = await client.call_tool("search", {"query": "readme"})
        diagnostics = await client.call_tool("diagnostics", {})
    results = (found.structured_content or {}).get("results", [])
    print(json.dumps({
        "found": [r if isinstance(r, str) else r["path"] for r in results],
        "roots_from": (diagnostics.structured_content or {}).get("roots_from"),
    }))


asyncio.run(main(json.loads(sys.argv[1])))
