"""ferret.toml changed while ferret runs (issue 26, item 5): read again on
SIGHUP and when the file changes, served without a restart; the roots that
did not change keep their index (carried over, not walked again); a bad file
keeps the running settings and says why in the log and in `diagnostics`; the
search page shows every setting and where it came from.

The first test prints its figures (time from SIGHUP until a new root's file
is found by `search`, and until a removed root is refused) beside the
targets: 5 s and "at once". bench/settings.py measures the same on larger
trees."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from pathlib import Path

from conftest import call, connect, run, shown


def tree(base: Path, name: str, files: int, word: str) -> Path:
    root = base / name
    for i in range(files):
        d = root / f"d{i % 20:02d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{word}-{i:05d}.txt").write_text(f"{word} number {i}\n")
    return root


def write_config(path: Path, text: str) -> None:
    """Replace the file as editors do (a new file renamed over the old)."""
    fresh = path.with_suffix(".new")
    fresh.write_text(text)
    os.replace(fresh, path)


def roots_line(*roots: Path) -> str:
    return "root = [" + ", ".join(f'"{r.name}={r}"' for r in roots) + "]\n"


def diagnostics(server) -> dict:
    async def go():
        async with connect("http", "legacy", [], server) as c:
            return (await call(c, "diagnostics", {}))[1]

    return run(go())


def page_settings(server) -> dict:
    with urllib.request.urlopen(f"{server.base}/ui/api/settings", timeout=10) as r:
        return json.loads(r.read())


def wait_for(what: str, check, timeout: float = 10.0):
    deadline = time.time() + timeout
    while True:
        got = check()
        if got or time.time() >= deadline:
            assert got, f"timed out waiting for {what}"
            return got
        time.sleep(0.05)


def stderr_of(server) -> str:
    server.stop()
    return server.proc.stderr.read()


def test_roots_added_and_removed_on_sighup_keep_the_other_roots_indexes(tmp_path, start_http):
    keep = tree(tmp_path, "keep", 2000, "alpha")
    also = tree(tmp_path, "also", 300, "bravo")
    gone = tree(tmp_path, "gone", 200, "charlie")
    new = tree(tmp_path, "new", 50, "delta")
    config = tmp_path / "ferret.toml"
    write_config(config, roots_line(keep, also, gone))
    server = start_http("--config", str(config), "--no-token", "--state-dir", str(tmp_path / "state"))

    # Both indexes built (a content index still building is built anew for
    # the new settings: there is nothing whole to take over yet).
    before = wait_for(
        "the first build",
        lambda: (d := diagnostics(server))["index"]["state"] == "ready" and d["content_index"]["state"] == "ready" and d,
    )
    assert before["settings"]["file"] == str(config)
    assert before["index"]["carried"] is None

    async def measure():
        async with connect("http", "legacy", [], server) as c:
            # The index is built; the content index too (grep narrows).
            _, s, _, _ = await call(c, "search", {"query": "alpha-00042.txt"})
            assert shown(s) == ["keep/d02/alpha-00042.txt"]
            write_config(config, roots_line(keep, also, new))
            sent = time.monotonic()
            server.proc.send_signal(signal.SIGHUP)
            refused_at = found_at = None
            while (refused_at is None or found_at is None) and time.monotonic() - sent < 30:
                if refused_at is None:
                    error, _, _, _ = await call(c, "read", {"path": "gone/d00/charlie-00000.txt"})
                    if error:
                        refused_at = time.monotonic() - sent
                if found_at is None:
                    _, s, _, _ = await call(c, "search", {"query": "delta-00007.txt"})
                    if shown(s) == ["new/d07/delta-00007.txt"]:
                        found_at = time.monotonic() - sent
            # The kept roots answer as before; the removed one is gone from
            # searches too.
            _, s, _, _ = await call(c, "search", {"query": "alpha-00042.txt"})
            assert shown(s) == ["keep/d02/alpha-00042.txt"]
            _, s, _, _ = await call(c, "search", {"query": "charlie"})
            assert shown(s) == []
            error, _, text, _ = await call(c, "grep", {"pattern": "bravo number 17$"})
            assert not error and "also/d17/bravo-00017.txt" in text
            return refused_at, found_at

    refused_at, found_at = run(measure())
    # (The reload is recorded once its stack is served; the content index
    # counts what it kept once it has read the new root.)
    after = wait_for(
        "the reload's record and the content index to have read the new root",
        lambda: (d := diagnostics(server))["settings"]["last_reload"]
        and d["content_index"]["carried_files"] is not None
        and d,
    )
    reload = after["settings"]["last_reload"]
    carried = after["index"]["carried"]
    content = after["content_index"]
    print(
        f"\nsettings live: SIGHUP -> removed root refused {refused_at * 1000:.0f} ms (target: at once), "
        f"new root's file found by search {found_at * 1000:.0f} ms (target <= 5000 ms); "
        f"ferret's own count {reload['ms']} ms ({reload['cause']}); "
        f"kept roots {carried['roots']} carried over ({carried['entries']} entries in {carried['ms']} ms, not walked), "
        f"walked {carried['walked']}; content index: {content['carried_files']} files taken over, not read again"
    )
    assert found_at is not None and found_at <= 5.0
    # Both from the moment the new settings are served (the read is tried
    # before the search in each round).
    assert refused_at is not None and refused_at <= found_at + 0.5
    assert reload["applied"] and reload["changed"] == ["root"]
    assert reload["roots_added"] == ["new"] and reload["roots_removed"] == ["gone"]
    assert reload["roots_kept"] == ["keep", "also"]
    # Untouched: the kept roots were copied from the running index (no walk:
    # the last index walked only the new root), their files not read again.
    assert carried["roots"] == ["keep", "also"] and carried["walked"] == ["new"]
    assert carried["entries"] == 2000 + 300 + 2 * 20
    assert content["carried_files"] == 2000 + 300
    log = stderr_of(server)
    assert "ferret.toml read again: the new settings are served" in log
    assert "alpha number" not in log and "delta number" not in log
    # At exit ferret saved the index it served then: a restart with the new
    # file loads it.
    again = start_http("--config", str(config), "--no-token", "--state-dir", str(tmp_path / "state"))
    d = diagnostics(again)
    assert d["index"]["loaded_from_snapshot"] and d["index"]["entries"] == 2000 + 300 + 50 + 3 * 20


def test_a_bad_file_keeps_the_running_settings_and_the_file_is_read_when_it_changes(tmp_path, start_http):
    root = tree(tmp_path, "docs", 30, "echo")
    (root / "d00" / "token.secret").write_text("hunter2\n")
    config = tmp_path / "ferret.toml"
    write_config(config, roots_line(root))
    server = start_http("--config", str(config), "--no-token", "--state-dir", str(tmp_path / "state"))
    wait_for("the first build", lambda: diagnostics(server)["index"]["state"] == "ready")

    async def read_secret():
        async with connect("http", "legacy", [], server) as c:
            return await call(c, "read", {"path": "d00/token.secret"})

    assert not run(read_secret())[0]
    # A file that does not parse: nothing changes, the log and diagnostics say why.
    write_config(config, roots_line(root) + 'deny = ["*.secret"\n')
    server.proc.send_signal(signal.SIGHUP)
    reload = wait_for(
        "the refused reload",
        lambda: (r := diagnostics(server)["settings"]["last_reload"]) and not r["applied"] and r,
    )
    assert "line 2" in reload["error"] and str(config) in reload["error"], reload
    assert not run(read_secret())[0], "the running settings are kept"
    # Fixed, and not signalled: the change is noticed, the deny rule applies,
    # the index is kept as it is (same roots and index settings).
    write_config(config, roots_line(root) + 'deny = ["*.secret"]\nmax-line-chars = 120\nbind = "127.0.0.1:1"\n')
    reload = wait_for(
        "the change to be read",
        lambda: (r := diagnostics(server)["settings"]["last_reload"]) and r["applied"] and r,
    )
    assert reload["cause"] == "the file changed"
    assert sorted(reload["changed"]) == ["deny", "max-line-chars"]
    assert reload["restart_needed"] == []
    error, s, text, _ = run(read_secret())
    assert error and "hunter2" not in text
    d = diagnostics(server)
    assert d["rules"]["extra_deny_patterns"] == ["*.secret"]
    assert d["limits"]["max_line_chars"] == 120
    assert d["index"]["carried"] is None, "the running index was kept, not made again"
    log = stderr_of(server)
    assert "ferret.toml not applied, the running settings are kept" in log and "line 2" in log
    assert "hunter2" not in log


def test_the_page_shows_every_setting_and_where_it_came_from(tmp_path, start_http, monkeypatch):
    root = tree(tmp_path, "notes", 5, "foxtrot")
    config = tmp_path / "ferret.toml"
    write_config(config, roots_line(root) + "max-image-bytes = \"2M\"\n")
    monkeypatch.setenv("FERRET_MAX_LINE_CHARS", "777")
    server = start_http("--config", str(config), "--no-token", "--state-dir", str(tmp_path / "state"))
    rows = {r["key"]: r for r in page_settings(server)["effective"]}
    assert rows["root"]["source"] == f"file ({config} line 1)" and str(root) in rows["root"]["value"]
    assert rows["max-image-bytes"] == {"key": "max-image-bytes", "value": "2M", "source": f"file ({config} line 2)"}
    assert rows["max-line-chars"]["source"] == "environment (FERRET_MAX_LINE_CHARS)"
    assert rows["bind"]["source"] == "command line"
    assert rows["max-file-bytes"]["source"] == "default"
    assert "token" in rows and "config" not in rows
    # A setting only a restart changes: served as it was, named as such.
    write_config(config, roots_line(root) + "max-image-bytes = \"3M\"\nmax-request-bytes = \"2M\"\n")
    server.proc.send_signal(signal.SIGHUP)
    page = wait_for(
        "the reload",
        lambda: (p := page_settings(server))["last_reload"] and p["last_reload"]["changed"] and p,
    )
    assert page["last_reload"]["restart_needed"] == ["max-request-bytes"]
    rows = {r["key"]: r for r in page["effective"]}
    assert rows["max-image-bytes"]["value"] == "3M"
    assert rows["max-request-bytes"]["value"] == "1M"
    assert "takes a restart" in rows["max-request-bytes"]["source"] and "2M" in rows["max-request-bytes"]["source"]
    assert diagnostics(server)["limits"]["max_image_bytes"] == 3 << 20
    # Read again: still one note, naming what the file says now.
    write_config(config, roots_line(root) + "max-image-bytes = \"4M\"\nmax-request-bytes = \"3M\"\n")
    server.proc.send_signal(signal.SIGHUP)
    wait_for("the second reload", lambda: diagnostics(server)["limits"]["max_image_bytes"] == 4 << 20)
    source = {r["key"]: r for r in page_settings(server)["effective"]}["max-request-bytes"]["source"]
    assert source == "default (now `3M`, which takes a restart)", source


def test_locate_roots_and_policy_change_live_and_a_locate_root_added_later_takes_a_restart(tmp_path, start_http):
    root = tree(tmp_path, "served", 3, "golf")
    elsewhere = tree(tmp_path, "elsewhere", 3, "hotel")
    further = tree(tmp_path, "further", 3, "india")
    config = tmp_path / "ferret.toml"
    base = roots_line(root) + f'locate-root = ["{elsewhere}"]\n'
    write_config(config, base + 'locate = "deny"\n')
    server = start_http("--config", str(config), "--no-token", "--state-dir", str(tmp_path / "state"))

    async def locate(query):
        async with connect("http", "legacy", [], server) as c:
            return await call(c, "locate", {"query": query})

    error, s, _, _ = run(locate("hotel-00001"))
    assert error and s["error"]["code"] == "LOCATE_DISABLED"
    # The policy, then the locate roots, changed in place.
    write_config(config, base + 'locate = "allow"\n')
    server.proc.send_signal(signal.SIGHUP)
    wait_for("locate allowed", lambda: not run(locate("hotel-00001"))[0])
    write_config(config, roots_line(root) + f'locate-root = ["{elsewhere}", "{further}"]\nlocate = "allow"\n')
    server.proc.send_signal(signal.SIGHUP)
    wait_for("the second locate root", lambda: (r := run(locate("india-00002")))[1].get("results") and r)
    # Without locate roots: listed at start, it says they were removed.
    write_config(config, roots_line(root) + 'locate = "allow"\n')
    server.proc.send_signal(signal.SIGHUP)
    _, s, _, _ = wait_for("locate without roots", lambda: (r := run(locate("hotel")))[0] and r)
    assert s["error"]["code"] == "LOCATE_DISABLED" and "removed from ferret.toml" in s["error"]["message"]
    # A server started without locate roots does not list locate: adding
    # them takes a restart, and nothing of the file is applied.
    other_config = tmp_path / "other.toml"
    write_config(other_config, roots_line(root))
    plain = start_http("--config", str(other_config), "--no-token", "--state-dir", str(tmp_path / "state2"))
    write_config(other_config, roots_line(root) + f'locate-root = ["{elsewhere}"]\nmax-line-chars = 99\n')
    plain.proc.send_signal(signal.SIGHUP)
    reload = wait_for("the refused reload", lambda: (r := diagnostics(plain)["settings"]["last_reload"]) and r)
    assert not reload["applied"] and "restart ferret" in reload["error"], reload
    assert diagnostics(plain)["limits"]["max_line_chars"] == 2000
