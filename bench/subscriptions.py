#!/usr/bin/env python3
"""How long from a write on disk to the subscriber's notification.

    .cache/venv/bin/python bench/subscriptions.py [--bin target/release/ferret] [--files 50] [--rounds 5]

Starts `ferret serve --stdio` on a fresh folder of files, subscribes to every file
through the official Python SDK (`subscriptions/listen`, 2026-07-28, and
`resources/subscribe`, handshake era), writes the files one at a time and times
each write until its `notifications/resources/updated` arrives. Prints p50, p95
and max per era. The latency is the watcher's batch (5 ms), the hub's coalescing
window (40 ms) and the trip through stdio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import ResourceUpdatedNotification

REPO = Path(__file__).resolve().parents[1]
warnings.filterwarnings("ignore")


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


async def listen_era(binary: str, root: Path, files: list[Path], rounds: int) -> list[float]:
    params = StdioServerParameters(command=binary, args=["serve", "--stdio", "--root", str(root), "--no-persist"])
    latencies = []
    async with Client(params, mode="auto") as c:
        uris = [f.as_uri() for f in files]
        async with c.listen(resource_subscriptions=uris) as sub:
            await asyncio.sleep(0.5)
            for r in range(rounds):
                for f in files:
                    started = time.perf_counter()
                    f.write_text(f"round {r}\n")
                    while True:
                        event = await asyncio.wait_for(sub.__anext__(), 10)
                        if event.uri == f.as_uri():
                            break
                    latencies.append((time.perf_counter() - started) * 1000)
                    await asyncio.sleep(0.06)  # past the coalescing window: one change at a time
    return latencies


async def handshake_era(binary: str, root: Path, files: list[Path], rounds: int) -> list[float]:
    arrived: asyncio.Queue[str] = asyncio.Queue()

    async def handler(message):
        if isinstance(message, ResourceUpdatedNotification):
            arrived.put_nowait(message.params.uri)

    params = StdioServerParameters(command=binary, args=["serve", "--stdio", "--root", str(root), "--no-persist"])
    latencies = []
    async with Client(params, mode="legacy", message_handler=handler) as c:
        for f in files:
            await c.subscribe_resource(f.as_uri())
        await asyncio.sleep(0.5)
        for r in range(rounds):
            for f in files:
                started = time.perf_counter()
                f.write_text(f"again {r}\n")
                while await asyncio.wait_for(arrived.get(), 10) != f.as_uri():
                    pass
                latencies.append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(0.06)
    return latencies


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "target" / "release" / "ferret"))
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores; ferret {args.bin}; {args.files} files x {args.rounds} rounds per era")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(os.path.realpath(tmp))
        files = []
        for i in range(args.files):
            d = root / f"d{i % 5}"
            d.mkdir(exist_ok=True)
            f = d / f"f{i}.txt"
            f.write_text("start\n")
            files.append(f)
        for era, run in [("2026-07-28 subscriptions/listen", listen_era), ("handshake resources/subscribe", handshake_era)]:
            lat = asyncio.run(run(args.bin, root, files, args.rounds))
            print(
                f"{era:34} write → notification (ms): p50 {statistics.median(lat):6.1f}  "
                f"p95 {percentile(lat, 0.95):6.1f}  max {max(lat):6.1f}  (n={len(lat)})"
            )


if __name__ == "__main__":
    main()
