#!/usr/bin/env python3
"""Draw a set of fuzzy queries from a synthetic tree, as bench/queries/fuzzy-1m.txt is.

    python3 bench/fuzzy_queries.py TREE [--groups 5] [--seed 7] > bench/queries/fuzzy-10m.txt

Each group is one file reached by a random descent (at least three folders
deep) and seven queries made from it, in this order: its name; the name
with one letter of the stem replaced (a typo); with one letter of the stem
dropped; its first 12 characters (a name's start); initials (the first
letter of each word of its last three folders, then the stem's first three
letters); its folder's name and the stem's words; two words from a fixed
list (a broad query). The queries for `ferret-bench fuzzy TREE --queries
FILE`, one a line. A tree made by `ferret-bench tree` with another size or
seed gives other names, so a set is drawn once for each tree.
"""

import argparse
import os
import random
import re

PAIRS = ["module alpha", "beta index", "module client", "readme schema", "readme module"]


def descend(root, rng):
    """A random file at least three folders below `root`, as a list of parts."""
    while True:
        path, parts = root, []
        for _ in range(40):
            entries = list(os.scandir(path))
            dirs = [e for e in entries if e.is_dir()]
            files = [e for e in entries if e.is_file()]
            if files and len(parts) >= 3 and (not dirs or rng.random() < 0.3):
                parts.append(rng.choice(files).name)
                break
            if not dirs:
                parts = None
                break
            d = rng.choice(dirs)
            parts.append(d.name)
            path = d.path
        if parts and len(parts) >= 4 and "." in parts[-1]:
            return parts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("--groups", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    for g in range(args.groups):
        parts = descend(args.tree, rng)
        name = parts[-1]
        stem, ext = name.rsplit(".", 1)
        i = rng.randrange(1, len(stem) - 1)
        typo = stem[:i] + rng.choice("aeiouxz") + stem[i + 1:] + "." + ext
        j = rng.randrange(1, len(stem) - 1)
        dropped = stem[:j] + stem[j + 1:] + "." + ext
        words = [w for d in parts[-4:-1] for w in re.split(r"[-_]", d) if w and not w.isdigit()]
        initials = "".join(w[0] for w in words) + stem[:3]
        stem_words = " ".join(w for w in re.split(r"[-_]", stem) if w)
        for q in [name, typo, dropped, name[:12], initials, f"{parts[-2]} {stem_words}",
                  PAIRS[g % len(PAIRS)]]:
            print(q)


if __name__ == "__main__":
    main()
