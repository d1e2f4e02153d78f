"""One cell of the real-client suite through fastmcp's Client (run.mjs judges).

Argument: JSON {url + token | command+args, mode, cases}. Calls every case as a user of
fastmcp would (`call_tool`, which raises ToolError with the text a failing tool
sent, or MCPError for a malformed call) and prints one JSON report: the era
negotiated, what the client showed per call, and every error fastmcp logged
while parsing structured content against a tool's output schema.
"""

import asyncio
import json
import logging
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from mcp.shared.exceptions import MCPError


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


async def main(spec):
    parse_errors = Collect()
    logging.getLogger().addHandler(parse_errors)
    logging.getLogger("fastmcp").addHandler(parse_errors)
    target = spec["url"] if "url" in spec else StdioTransport(spec["command"], spec["args"])
    calls = []
    # A bearer token as fastmcp takes one (`auth=`), for HTTP.
    auth = spec.get("token")
    async with Client(target, mode="legacy" if spec["mode"] == "legacy" else spec["mode"], timeout=30, auth=auth) as client:
        version = client.protocol_version
        await client.list_tools()
        for index, case in enumerate(spec["cases"]):
            for phase in ("ok", "error"):
                try:
                    result = await client.call_tool(case["tool"], case[phase])
                    text = "\n".join(getattr(b, "text", "") for b in result.content)
                    seen = {"isError": result.is_error, "structured": result.structured_content, "text": text}
                except ToolError as e:
                    # What a fastmcp user sees of a failing tool: the error's text.
                    seen = {"isError": True, "text": str(e)}
                except MCPError as e:
                    seen = {"rpc": {"code": e.error.code, "message": e.error.message}}
                if seen.get("structured") is None:
                    seen.pop("structured", None)
                calls.append({"index": index, "phase": phase, "seen": seen})
    print(json.dumps({"version": str(version), "calls": calls, "parse_errors": parse_errors.messages}))


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
