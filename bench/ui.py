#!/usr/bin/env python3
"""The search page's benchmark (not a test), and its screenshot.

    .cache/venv/bin/python bench/ui.py measure [--entries 1000000] [--tree DIR] [--runs 3]
    .cache/venv/bin/python bench/ui.py screenshot docs/search-page.png

`measure` serves the synthetic tree (built once by `ferret-bench tree` with seed
42) with the release binary and measures, in headless Chromium (Debian's
`chromium` and `chromedriver`, through Selenium from the test venv):

- the page's transfer (every request the page makes, uncompressed) and whether
  any request leaves the page's own origin;
- keystroke to rendered rows: a fixed list of queries typed one character at a
  time, 150 ms apart; the page records each keystroke's time with the
  Performance API (`ferret:rows` measures, from the input event to the frame
  after rows answering it went in);
- Everything's JSON API: `/?search=Q&json=1&count=100` with the path, size and
  date columns, 50 times per query over one kept-alive connection.

`screenshot` serves this repository and saves a picture of the page with a
preview open. Figures go to docs/benchmarks.md by hand. Binds 127.0.0.1 only and
stops the server it starts.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

REPO = Path(__file__).resolve().parents[1]
# Another build: FERRET_UI_BIN=PATH (and FERRET_UI_BENCH=PATH for the tree).
FERRET = Path(os.environ.get("FERRET_UI_BIN", REPO / "target" / "release" / "ferret"))
BENCH = Path(os.environ.get("FERRET_UI_BENCH", REPO / "target" / "release" / "ferret-bench"))

# The end-to-end tests' browser and server helpers, on the release binary.
os.environ["FERRET_BIN"] = str(FERRET)
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from browser import Chromium  # noqa: E402
from conftest import HttpServer  # noqa: E402

# Typed a character at a time: what people type into Everything.
QUERIES = ["report", "invoice-", "zyzzyva", "alpha_model", "ext:pdf", "*.csv", "size:>4000", "dm:today"]
TYPING_INTERVAL_S = 0.150
API_RUNS = 50


def pct(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def wait_ready(server, timeout=300):
    """Wait until the index is built; its entries."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", "/ui/api/status")
        status = json.loads(conn.getresponse().read())
        conn.close()
        index = status["index"]
        if index["ready"] and not index["reconciling"]:
            print(f"serving {', '.join(r['path'] for r in status['roots'])}")
            return index["entries"]
        time.sleep(0.5)
    raise SystemExit("the index did not become ready")


def wait(driver, predicate, timeout=60):
    return WebDriverWait(driver, timeout, poll_frequency=0.02).until(lambda d: predicate(d))


def transfer(driver, base):
    entries = driver.execute_script(
        "return [performance.getEntriesByType('navigation')[0]].concat(performance.getEntriesByType('resource'))"
        ".map(e => [e.name, e.decodedBodySize || 0, e.transferSize || 0])"
    )
    foreign = [name for name, _, _ in entries if not name.startswith(base)]
    # The event stream's body grows for as long as it is open: count the page's files.
    files = [(n, size) for n, size, _ in entries if "/ui/api/" not in n]
    return sum(size for _, size in files), files, foreign


def measure(args):
    tree = Path(args.tree)
    if not tree.exists():
        print(f"building the synthetic tree {tree} ({args.entries} entries, seed 42)", file=sys.stderr)
        subprocess.run([str(BENCH), "tree", str(tree), "--entries", str(args.entries), "--seed", "42"], check=True)
    # --no-token: one user on loopback, and the page and API measured without the sign-in.
    server = HttpServer(["--root", str(tree), "--no-persist", "--no-token"] + args.server_arg)
    try:
        started = time.time()
        entries = wait_ready(server)
        print(f"index ready: {entries} entries in {time.time() - started:.1f} s (built at start, --no-persist)")
        chromium = Chromium()
        driver = chromium.driver
        try:
            driver.get(server.base + "/")
            wait(driver, lambda d: "ready" in d.find_element(By.ID, "index-state").text)
            wait(driver, lambda d: "results" in d.find_element(By.ID, "result-state").text)
            size, files, foreign = transfer(driver, server.base)
            print(f"\npage transfer: {size} bytes uncompressed over {len(files)} files; foreign requests: {len(foreign)}")
            for name, n in files:
                print(f"  {n:>7}  {name[len(server.base):]}")
            box = driver.find_element(By.ID, "q")
            per_query = {q: [] for q in QUERIES}
            missed = 0
            errors = 0
            short, longer = [], []  # by the length of the query the rows answered
            for run in range(args.runs):
                for q in QUERIES:
                    # Start from an empty box and let its (everything) search settle.
                    box.send_keys(Keys.CONTROL, "a")
                    box.send_keys(Keys.BACKSPACE)
                    wait(driver, lambda d: d.execute_script("return document.getElementById('q').value === ''"))
                    time.sleep(0.8)
                    driver.execute_script("performance.clearMeasures('ferret:rows')")
                    for ch in q:
                        box.send_keys(ch)
                        time.sleep(TYPING_INTERVAL_S)
                    try:
                        wait(driver, lambda d: d.execute_script("return performance.getEntriesByName('ferret:rows').length") >= len(q), timeout=15)
                    except TimeoutException:
                        pass  # counted below as unmeasured
                    got = driver.execute_script(
                        "return performance.getEntriesByName('ferret:rows').map(e => [e.duration, e.detail.error, e.detail.q])"
                    )
                    missed += max(0, len(q) - len(got))
                    per_query[q].extend(d for d, _, _ in got)
                    errors += sum(1 for _, e, _ in got if e)
                    for d, _, text in got:
                        (short if len(text) <= 2 else longer).append(d)
            all_ms = [d for v in per_query.values() for d in v]
            print(
                f"\nkeystroke to rendered rows, {args.runs} runs, {len(all_ms)} keystrokes ({missed} unmeasured; "
                f"{errors} answered by the query's error while it was half typed, e.g. `size:>`), typed {TYPING_INTERVAL_S * 1000:.0f} ms apart:"
            )
            print(f"{'query':<14} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
            for q, v in per_query.items():
                print(f"{q:<14} {pct(v, 50):>8.1f} {pct(v, 95):>8.1f} {max(v):>8.1f}")
            print(f"{'all':<14} {pct(all_ms, 50):>8.1f} {pct(all_ms, 95):>8.1f} {max(all_ms):>8.1f}   target p95 <= 50 ms: {'met' if pct(all_ms, 95) <= 50 else 'NOT met'}")
            print(f"{'1-2 chars':<14} {pct(short, 50):>8.1f} {pct(short, 95):>8.1f} {max(short):>8.1f}   ({len(short)} keystrokes)")
            print(f"{'3+ chars':<14} {pct(longer, 50):>8.1f} {pct(longer, 95):>8.1f} {max(longer):>8.1f}   ({len(longer)} keystrokes)")
        finally:
            chromium.quit()

        print(f"\nEverything JSON API, count=100 with path, size and date columns, {API_RUNS} runs, one kept-alive connection:")
        print(f"{'query':<14} {'p50 ms':>8} {'p95 ms':>8} {'results':>9}")
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        p50s = []
        for q in QUERIES:
            path = "/?" + urllib.parse.urlencode(
                {"search": q, "json": 1, "count": 100, "path_column": 1, "size_column": 1, "date_modified_column": 1}
            )
            times = []
            total = 0
            for i in range(API_RUNS + 3):
                t = time.perf_counter()
                conn.request("GET", path)
                body = conn.getresponse().read()
                if i >= 3:  # the first runs warm caches
                    times.append((time.perf_counter() - t) * 1000)
                total = json.loads(body)["totalResults"]
            p50s.append(pct(times, 50))
            print(f"{q:<14} {pct(times, 50):>8.2f} {pct(times, 95):>8.2f} {total:>9}")
        conn.close()
        met = sum(1 for p in p50s if p <= 5)
        print(f"target p50 <= 5 ms: met for {met} of {len(p50s)} queries")
        print(f"\nmachine: {os.cpu_count()} cores, {platform.platform()}; chromium: {chromium_version()}")
    finally:
        server.stop()


def chromium_version():
    try:
        return subprocess.run(["/usr/bin/chromium", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"


def screenshot(args):
    server = HttpServer(["--root", str(REPO), "--no-persist", "--no-token"])
    try:
        wait_ready(server)
        chromium = Chromium(1280, 760)
        driver = chromium.driver
        try:
            driver.get(server.base + "/")
            wait(driver, lambda d: "ready" in d.find_element(By.ID, "index-state").text)
            box = driver.find_element(By.ID, "q")
            for ch in "search ext:rs":
                box.send_keys(ch)
            wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#rows tr"))
            time.sleep(0.5)
            box.send_keys(Keys.ENTER)
            wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#preview-body mark"))
            time.sleep(0.5)
            driver.save_screenshot(args.path)
            print(f"saved {args.path}")
        finally:
            chromium.quit()
    finally:
        server.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--entries", type=int, default=1_000_000)
    m.add_argument("--tree", default="/tmp/ferret-bench-tree")
    m.add_argument("--runs", type=int, default=3)
    # `--server-arg=--content-index --server-arg=off`: no content index
    # building beside the measurement (the page never asks it).
    m.add_argument("--server-arg", action="append", default=[])
    s = sub.add_parser("screenshot")
    s.add_argument("path")
    args = p.parse_args()
    for exe in [FERRET] + ([BENCH] if args.command == "measure" else []):
        if not exe.exists():
            raise SystemExit(f"{exe} is missing: cargo build --release -p ferret -p ferret-bench")
    if args.command == "measure":
        measure(args)
    else:
        screenshot(args)


if __name__ == "__main__":
    main()
