#!/usr/bin/env python3
"""The time of each plain `search` of a query set over MCP on stdio, slowest
first, and the median: what a ranking change costs on a real tree.

    python3 bench/search_times.py TREE bench/queries/python3.11.json [FERRET_BINARY]

Each query of the set (a bench/retrieval.py --dump file) is asked once with
`limit: 5`, as bench/retrieval.py asks it, after the index is built
(`--no-persist --content-index off`). The binary defaults to the debug build.
"""

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index import REPO, Server  # noqa: E402


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    tree, queries = Path(sys.argv[1]), Path(sys.argv[2])
    binary = Path(sys.argv[3]) if len(sys.argv) > 3 else REPO / "target" / "debug" / "ferret"
    state = Path(tempfile.mkdtemp(prefix="ferret-search-times-"))
    server = Server(tree, ["--no-persist", "--content-index", "off", "--state-dir", str(state)], state, binary)
    try:
        server.wait_ready()
        times = []
        for q in json.loads(queries.read_text())["queries"]:
            started = time.perf_counter()
            server.request("tools/call", {"name": "search", "arguments": {"query": q["query"], "limit": 5}})
            times.append((time.perf_counter() - started, q["query"]))
    finally:
        server.close()
        shutil.rmtree(state, ignore_errors=True)
    times.sort(reverse=True)
    for t, q in times[:5]:
        print(f"{t * 1000:8.1f} ms  {q!r}")
    print(f"median {statistics.median(t for t, _ in times) * 1000:.1f} ms over {len(times)} calls ({binary})")


if __name__ == "__main__":
    main()
