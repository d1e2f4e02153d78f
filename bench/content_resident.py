#!/usr/bin/env python3
"""The content index's resident memory after a restart, beside the text it holds.

    python3 bench/content_resident.py [--bin PATH] [--runs 3] TREE

Two `ferret serve --stdio` servers on TREE, one with the content index and one
with `--content-index off`, each in a state directory of its own: both build
and save their state once, then are started again on it (the way a server
runs most of its life: the index loaded, not built), and once both are ready
their anonymous resident memory (`RssAnon`: heap, not the mapped index file)
is compared. Prints, per run, the difference and its share of the indexed
text (issue 27's target: at most 0.05).
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grep import Server  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("--bin", default=str(REPO / "target" / "release" / "ferret"))
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    extra = ["--max-response-bytes", "64M"]
    off_args = [*extra, "--content-index", "off"]
    on_state = tempfile.mkdtemp(prefix="ferret-resident-on-")
    off_state = tempfile.mkdtemp(prefix="ferret-resident-off-")
    first = Server(args.bin, args.tree, extra, on_state)
    text = first.wait(True)["content_index"]["indexed_bytes"]
    first.close()
    first = Server(args.bin, args.tree, off_args, off_state)
    first.wait(False)
    first.close()
    print(f"{args.tree}: {text / 2**20:.0f} MiB of text indexed")
    for run in range(args.runs):
        on = Server(args.bin, args.tree, extra, on_state)
        on.wait(True)
        off = Server(args.bin, args.tree, off_args, off_state)
        off.wait(False)
        time.sleep(2)
        a, b = on.memory(), off.memory()
        on.close()
        off.close()
        diff = a["RssAnon"] - b["RssAnon"]
        print(
            f"run {run}: RssAnon {a['RssAnon'] / 2**20:.1f} MiB with the index, {b['RssAnon'] / 2**20:.1f} without: "
            f"+{diff / 2**20:.1f} MiB = {diff / text:.3f} of the text; VmRSS {a['VmRSS'] / 2**20:.1f} / {b['VmRSS'] / 2**20:.1f} MiB"
        )


if __name__ == "__main__":
    main()
