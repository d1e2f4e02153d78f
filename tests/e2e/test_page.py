"""The search page in a real browser, and Everything's JSON API over real HTTP.

Headless Chromium (Debian's `chromium` and `chromium-driver`, which
`scripts/test` installs) is driven through Selenium against the real binary:
typing, sorting, the preview and its highlights, the live journal, refusals.
`evil.test` is mapped to 127.0.0.1 inside the browser, so a page loaded under
that name is exactly what a DNS-rebinding attack looks like to ferret.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx2 as httpx
import pytest
from browser import Chromium
import documents
from conftest import HttpServer, png_bytes
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

SECRET = "API_KEY=sk-page-must-never-show-this"
SIZES = {"small.txt": 10, "medium.txt": 2_000, "large.txt": 300_000, "tiny.txt": 1}


def build(root: Path) -> Path:
    def w(rel: str, data: bytes | str):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode() if isinstance(data, str) else data)

    w("reports/report-2025.md", "# Report 2025\n\nrevenue grew\n")
    w("reports/report-2026.md", "# Report 2026\n\n" + "".join(f"line {i}\n" for i in range(3, 80)) + "the Needle is here\n")
    w("archive/annual-report.pdf", b"%PDF-1.4\n" + bytes(range(256)) * 4)
    w("notes/todo.txt", "buy milk\nwrite the report\n")
    for name, size in SIZES.items():
        w(f"sizes/{name}", b"x" * size)
    w("img/pixel.png", png_bytes(4, 3))
    (root / "papers").mkdir()
    documents.pdf_pages(root / "papers" / "quarterly.pdf", pages=3)
    w(".env", SECRET + "\n")
    w("cfg/credentials.json", '{"token": "%s"}\n' % SECRET)
    return root


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = build(tmp_path_factory.mktemp("page") / "site")
    root.mkdir(exist_ok=True)
    server = HttpServer(["--root", str(root), "--no-persist"])
    yield root, server
    server.stop()


@pytest.fixture(scope="module")
def browser():
    try:
        # A name that resolves to this machine: a page under it is a rebinding attack.
        chromium = Chromium(extra_flags=("--host-resolver-rules=MAP evil.test 127.0.0.1",))
    except RuntimeError as e:
        pytest.fail(str(e))
    yield chromium.driver
    chromium.quit()


def wait(driver, predicate, timeout=10, what="the page"):
    # Rows are replaced as answers arrive: an element found a moment ago may be gone.
    w = WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=[StaleElementReferenceException])
    return w.until(lambda d: predicate(d), message=f"waiting for {what}")


def names(driver) -> list[str]:
    """The names in the result rows, read in one go."""
    return driver.execute_script("return Array.from(document.querySelectorAll('#rows tr .name'), e => e.textContent)")


def sign_in(driver, server):
    """Open the link ferret prints on a terminal (`/?token=…`): it sets the cookie."""
    if server.token:
        driver.get(f"{server.base}/?token={server.token}")


def open_page(driver, server, path="/"):
    sign_in(driver, server)
    driver.get(server.base + path)
    wait(driver, lambda d: "ready" in d.find_element(By.ID, "index-state").text, what="the index status line")


def type_query(driver, text: str, box="q"):
    q = driver.find_element(By.ID, box)
    q.clear()
    for ch in text:
        q.send_keys(ch)


def preview(driver, query: str, expected: list[str]):
    """Search, check the rows, preview the first with Enter."""
    type_query(driver, query)
    wait(driver, lambda d: names(d) == expected, what=f"the rows {expected}")
    driver.find_element(By.ID, "q").send_keys(Keys.ENTER)
    wait(driver, lambda d: d.find_element(By.ID, "preview").is_displayed(), what="the preview")


def test_typing_answers_with_the_right_rows_and_the_total(site, browser):
    root, server = site
    open_page(browser, server)
    type_query(browser, "report")
    reports = ["annual-report.pdf", "report-2025.md", "report-2026.md", "reports"]
    wait(browser, lambda d: sorted(names(d)) == reports, what="the reports and their folder")
    assert browser.find_element(By.ID, "result-state").text.startswith("4 results")
    # The typed word is highlighted in every name. Waited for: the answer to
    # a shorter prefix has the same rows, and the rows are redrawn when the
    # answer to "report" lands.
    wait(
        browser,
        lambda d: [m.text for m in d.find_elements(By.CSS_SELECTOR, "#rows tr .name mark")] == ["report"] * 4,
        what="'report' marked in every name",
    )
    # Everything syntax: an extension, and a term that does not parse says where.
    type_query(browser, "report ext:md")
    wait(browser, lambda d: sorted(names(d)) == ["report-2025.md", "report-2026.md"], what="only the .md reports")
    type_query(browser, "size:>1zb")
    err = wait(browser, lambda d: d.find_element(By.ID, "error").is_displayed() and d.find_element(By.ID, "error").text, what="the query error")
    assert "zb" in err and "size:>1gb" in err


def test_fuzzy_and_match_case_each_turn_the_other_off(site, browser):
    # Fuzzy letters match in either case and inside words (the API refuses
    # the two together): pressing one lets the other go, and the guess
    # answers with no error.
    _, server = site
    open_page(browser, server)
    pressed = lambda d, id: d.find_element(By.ID, id).get_attribute("aria-pressed") == "true"
    browser.find_element(By.ID, "opt-case").click()
    browser.find_element(By.ID, "opt-ww").click()
    assert pressed(browser, "opt-case") and pressed(browser, "opt-ww")
    wait(browser, lambda d: d.find_element(By.ID, "opt-fuzzy").is_displayed(), what="the fuzzy toggle")
    browser.find_element(By.ID, "opt-fuzzy").click()
    assert pressed(browser, "opt-fuzzy")
    assert not pressed(browser, "opt-case") and not pressed(browser, "opt-ww")
    type_query(browser, "rprt2026")
    wait(browser, lambda d: names(d)[:1] == ["report-2026.md"], what="the fuzzy guess")
    assert not browser.find_element(By.ID, "error").is_displayed()
    browser.find_element(By.ID, "opt-case").click()
    assert pressed(browser, "opt-case") and not pressed(browser, "opt-fuzzy")


def test_a_typo_with_no_toggle_answers_with_the_fuzzy_matches(site, browser):
    # No name holds `rprt2026`: the page shows the fuzzy matches, best fit
    # first, and says so; a word some name holds answers as typed.
    _, server = site
    open_page(browser, server)
    type_query(browser, "rprt2026")
    wait(browser, lambda d: names(d)[:1] == ["report-2026.md"], what="the fuzzy match")
    assert "fuzzy" in browser.find_element(By.ID, "result-state").text
    type_query(browser, "report")
    wait(browser, lambda d: sorted(names(d)) == ["annual-report.pdf", "report-2025.md", "report-2026.md", "reports"], what="the reports")
    assert "fuzzy" not in browser.find_element(By.ID, "result-state").text


def test_columns_sort_by_size(site, browser):
    _, server = site
    open_page(browser, server)
    type_query(browser, "in:sizes")
    by_name = sorted(SIZES)
    wait(browser, lambda d: names(d) == by_name, what="the sizes by name")
    header = browser.find_element(By.CSS_SELECTOR, 'th[data-sort="size"] button')
    header.click()
    largest_first = sorted(SIZES, key=SIZES.get, reverse=True)
    wait(browser, lambda d: names(d) == largest_first, what="largest first")
    assert browser.find_element(By.CSS_SELECTOR, 'th[data-sort="size"]').get_attribute("aria-sort") == "descending"
    header.click()
    wait(browser, lambda d: names(d) == largest_first[::-1], what="smallest first")
    browser.find_element(By.CSS_SELECTOR, 'th[data-sort="name"] button').click()
    wait(browser, lambda d: names(d) == by_name, what="back to names")


def test_keys_open_a_preview_with_line_numbers_and_highlights(site, browser):
    _, server = site
    open_page(browser, server)
    preview(browser, "todo", ["todo.txt"])
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#preview-body .line")) == 2, what="two lines")
    lines = browser.find_elements(By.CSS_SELECTOR, "#preview-body .line")
    assert [l.find_element(By.CSS_SELECTOR, ".ln").text for l in lines] == ["1", "2"]
    assert lines[1].find_element(By.CSS_SELECTOR, ".tx").text == "write the report"
    # Esc goes back; `/` focuses the box again.
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    wait(browser, lambda d: not d.find_element(By.ID, "preview").is_displayed(), what="the preview to close")
    # The query's words are highlighted in the text.
    preview(browser, "report 2026", ["report-2026.md"])
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#preview-body mark"), what="a highlight")
    first_line = browser.find_elements(By.CSS_SELECTOR, "#preview-body .line")[0]
    assert [m.text for m in first_line.find_elements(By.CSS_SELECTOR, "mark")] == ["Report", "2026"]
    browser.find_element(By.ID, "preview-close").click()
    # ↓ moves the selection, Enter previews that row.
    type_query(browser, "report")
    wait(browser, lambda d: len(names(d)) == 4, what="four rows")
    browser.find_element(By.ID, "q").send_keys(Keys.ARROW_DOWN)
    second = browser.find_elements(By.CSS_SELECTOR, "#rows tr")[1]
    assert second.get_attribute("aria-selected") == "true"
    browser.find_element(By.ID, "q").send_keys(Keys.ENTER)
    wait(browser, lambda d: d.find_element(By.ID, "preview-name").text.endswith(second.find_element(By.CSS_SELECTOR, ".name").text), what="the second row's preview")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    browser.find_element(By.TAG_NAME, "body").click()
    browser.find_element(By.TAG_NAME, "body").send_keys("/")
    assert browser.switch_to.active_element.get_attribute("id") == "q"


def test_grep_mode_finds_text_and_the_preview_marks_it(site, browser):
    _, server = site
    open_page(browser, server)
    browser.find_element(By.ID, "mode-grep").click()
    type_query(browser, "ext:md")
    type_query(browser, "needle", box="pattern")
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#grep-results .gline:not(.ctx) mark"), what="a grep match")
    match = browser.find_element(By.CSS_SELECTOR, "#grep-results .gline:not(.ctx)")
    assert match.find_element(By.CSS_SELECTOR, ".ln").text == "80"
    assert match.find_element(By.CSS_SELECTOR, "mark").text == "Needle"
    assert browser.find_elements(By.CSS_SELECTOR, "#grep-results .gline.ctx"), "context lines around the match"
    match.click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#preview-body .line.target mark"), what="the match highlighted in the preview")
    target = browser.find_element(By.CSS_SELECTOR, "#preview-body .line.target")
    assert target.find_element(By.CSS_SELECTOR, ".ln").text == "80"
    assert target.find_element(By.CSS_SELECTOR, "mark").text == "Needle"
    browser.find_element(By.ID, "preview-close").click()
    browser.find_element(By.ID, "mode-grep").click()


def test_images_binaries_and_folders_in_the_preview(site, browser):
    _, server = site
    open_page(browser, server)
    preview(browser, "pixel.png", ["pixel.png"])
    img = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#preview-body img"), what="the image")[0]
    wait(browser, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) == 4, what="the image to load")
    preview(browser, "annual-report", ["annual-report.pdf"])
    note = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#preview-body .preview-note"), what="the binary note")[0]
    assert "Binary file" in note.text and "not shown" in note.text
    # A document previews as its text, as `read` gives it.
    preview(browser, "quarterly", ["quarterly.pdf"])
    wait(browser, lambda d: "PDF" in d.find_element(By.ID, "preview-meta").text, what="the document's format")
    assert "3 pages" in browser.find_element(By.ID, "preview-meta").text
    marks = browser.find_elements(By.CSS_SELECTOR, "#preview-body .line mark")
    assert marks and marks[0].text == "quarterly", "the query's word highlighted in the document's text"
    preview(browser, "folder: sizes", ["sizes"])
    wait(browser, lambda d: sorted(e.text for e in d.find_elements(By.CSS_SELECTOR, "#preview-body .listing li .name")) == sorted(SIZES), what="the listing")
    browser.find_element(By.ID, "preview-close").click()


def test_a_secret_is_refused_and_never_reaches_the_page(site, browser):
    _, server = site
    open_page(browser, server)
    preview(browser, "credentials", ["credentials.json"])
    refusal = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#preview-body .refused"), what="the refusal")[0]
    assert "PATH_DENIED" in refusal.text
    assert SECRET not in browser.page_source
    browser.find_element(By.ID, "preview-close").click()


def test_a_file_created_on_disk_appears_in_the_journal(site, browser):
    root, server = site
    open_page(browser, server)
    browser.find_element(By.ID, "show-journal").click()
    wait(browser, lambda d: d.find_element(By.ID, "journal-state").text == "live", what="the event stream")
    (root / "notes" / "fresh-from-disk.txt").write_text("new\n")
    item = wait(browser, lambda d: [li for li in d.find_elements(By.CSS_SELECTOR, "#journal-list li") if "fresh-from-disk.txt" in li.text], what="the new file in the journal")[0]
    assert item.find_element(By.CSS_SELECTOR, ".act").text.lower() == "created"
    wait(browser, lambda d: "fresh-from-disk.txt" in d.find_element(By.ID, "index-state").text, what="the status line's last change")
    # The action filter keeps only what it names.
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, "journal-action")).select_by_value("deleted")
    wait(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, '#journal-list li[data-action="created"]'), what="created rows filtered out")
    (root / "notes" / "fresh-from-disk.txt").unlink()
    wait(browser, lambda d: [li for li in d.find_elements(By.CSS_SELECTOR, '#journal-list li[data-action="deleted"]') if "fresh-from-disk.txt" in li.text], what="the deletion")
    Select(browser.find_element(By.ID, "journal-action")).select_by_value("any")
    browser.find_element(By.ID, "journal-close").click()


def test_the_settings_dialog_shows_each_setting_and_where_it_came_from(site, browser):
    root, server = site
    open_page(browser, server)
    browser.find_element(By.ID, "show-settings").click()
    rows = wait(
        browser,
        lambda d: {
            tr.find_elements(By.TAG_NAME, "td")[0].text: [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in d.find_elements(By.CSS_SELECTOR, "#settings-rows tr")
        }
        or None,
        what="the settings rows",
    )
    assert rows["root"][1] == str(root) and rows["root"][2] == "command line"
    assert rows["no-persist"][1:] == ["true", "command line"]
    assert rows["max-file-bytes"][1:] == ["10M", "default"]
    # The token is never shown, only that it is set.
    assert server.token not in browser.page_source
    assert "configuration file" in browser.find_element(By.ID, "settings-file").text.lower()
    browser.find_element(By.CSS_SELECTOR, "#settings form button").click()


def test_a_foreign_host_is_refused_in_the_browser(site, browser):
    _, server = site
    browser.get(f"http://evil.test:{server.port}/")
    assert "FORBIDDEN_HOST" in browser.page_source
    assert "Search names" not in browser.page_source
    # The API under that name answers nothing either.
    browser.get(f"http://evil.test:{server.port}/ui/api/search?q=report")
    assert "FORBIDDEN_HOST" in browser.page_source and "report-2025" not in browser.page_source


def test_the_page_loads_only_itself_and_fits_400_px(site, browser):
    _, server = site
    open_page(browser, server)
    type_query(browser, "report")
    wait(browser, lambda d: len(names(d)) == 4, what="rows")
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => [e.name, e.transferSize || e.encodedBodySize]);"
    )
    assert resources and all(name.startswith(server.base + "/") for name, _ in resources), resources
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 400, "height": 800, "deviceScaleFactor": 1, "mobile": True})
    try:
        browser.refresh()
        wait(browser, lambda d: "ready" in d.find_element(By.ID, "index-state").text, what="the page at 400 px")
        type_query(browser, "report")
        wait(browser, lambda d: len(names(d)) == 4, what="rows at 400 px")
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= 400, f"the page is {width} px wide at a 400 px viewport"
        box = browser.find_element(By.ID, "q").rect
        assert box["width"] >= 300, box
        browser.find_element(By.ID, "q").send_keys(Keys.ENTER)
        pane = wait(browser, lambda d: d.find_element(By.ID, "preview").is_displayed() and d.find_element(By.ID, "preview"), what="the preview at 400 px")
        assert pane.rect["width"] == 400, "the preview covers the results on a narrow screen"
        browser.find_element(By.ID, "preview-close").click()
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_light_and_dark_themes(site, browser):
    _, server = site
    background = "return getComputedStyle(document.body).backgroundColor"
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        open_page(browser, server)
        browser.execute_script("localStorage.removeItem('ferret-theme')")
        browser.refresh()
        dark = browser.execute_script(background)
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
        light = browser.execute_script(background)
        assert dark != light, (dark, light)
        # The button overrides the system's choice: auto -> light -> dark.
        theme = browser.find_element(By.ID, "theme")
        theme.click()
        theme.click()
        assert browser.execute_script("return document.documentElement.dataset.theme") == "dark"
        assert browser.execute_script(background) == dark
        theme.click()
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_a_token_is_asked_for_once_and_kept_in_an_httponly_cookie(site, browser, start_http):
    root, _ = site
    server = start_http("--root", str(root), "--no-persist", "--token", "page-t0ken")
    browser.delete_all_cookies()
    browser.get(server.base + "/")
    dialog = wait(browser, lambda d: d.find_element(By.ID, "login").is_displayed() and d.find_element(By.ID, "login"), what="the sign-in form")
    field = dialog.find_element(By.NAME, "token")
    field.send_keys("wrong")
    field.submit()
    wait(browser, lambda d: d.find_element(By.ID, "login-wrong").is_displayed(), what="the wrong-token message")
    field = browser.find_element(By.NAME, "token")
    field.send_keys("page-t0ken")
    field.submit()
    wait(browser, lambda d: "ready" in d.find_element(By.ID, "index-state").text, what="the page after sign-in")
    type_query(browser, "todo")
    wait(browser, lambda d: names(d) == ["todo.txt"], what="a search after sign-in")
    assert browser.execute_script("return document.cookie") == "", "the cookie is HttpOnly"
    cookie = next(c for c in browser.get_cookies() if c["name"].startswith("ferret_"))
    assert cookie["httpOnly"] and cookie.get("sameSite") == "Strict" and "page-t0ken" not in cookie["value"]


# ---- Everything's JSON API over real HTTP ------------------------------------


def test_everything_json_api(site):
    root, server = site
    r = httpx.get(
        server.base + "/",
        params={"search": "report file:", "json": 1, "path_column": 1, "size_column": 1, "date_modified_column": 1, "sort": "size", "ascending": 0, "count": 2},
        headers=server.auth,
        timeout=10,
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["totalResults"] == 3 and len(body["results"]) == 2
    first = body["results"][0]
    pdf = root / "archive" / "annual-report.pdf"
    assert first == {
        "type": "file",
        "name": "annual-report.pdf",
        "path": str(pdf.parent.resolve()),
        "size": str(pdf.stat().st_size),
        "date_modified": str((int(pdf.stat().st_mtime) + 11_644_473_600) * 10_000_000),
    }
    folders = httpx.get(server.base + "/", params={"s": "folder:", "j": 1, "c": 100}, headers=server.auth, timeout=10).json()
    assert {"type": "folder", "name": "reports"} in folders["results"]


def test_everything_json_api_answers_a_change_made_just_before(site):
    root, server = site

    made = root / "notes" / "made-just-now.txt"
    # One connection kept open: the request arrives within the watcher's
    # 5 ms batch, as a script's would.
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=10) as http:

        def total(name):
            return http.get("/", params={"search": name, "json": 1}).json()["totalResults"]

        total("warm")
        try:
            for i in range(20):
                made.write_text("x\n")
                assert total("made-just-now") == 1, i
                made.unlink()
                assert total("made-just-now") == 0, i
        finally:
            made.unlink(missing_ok=True)


def test_no_ui_leaves_slash_to_mcp_and_downloads_need_their_flag(site, start_http):
    root, server = site
    download = {"path": "notes/todo.txt"}
    assert httpx.get(server.base + "/ui/api/download", params=download, timeout=5).status_code == 401, "no token"
    assert httpx.get(server.base + "/ui/api/download", params=download, headers=server.auth, timeout=5).status_code == 403
    off = start_http("--root", str(root), "--no-persist", "--no-ui")
    auth = off.auth
    assert httpx.get(off.base + "/", headers=auth, timeout=5).status_code == 405, "GET / is MCP's again (stateless: 405)"
    assert httpx.get(off.base + "/", params={"search": "x", "json": 1}, headers=auth, timeout=5).status_code == 405
    assert httpx.get(off.base + "/ui/app.js", headers=auth, timeout=5).status_code == 404
    on = start_http("--root", str(root), "--no-persist", "--ui-downloads")
    r = httpx.get(on.base + "/ui/api/download", params=download, headers=on.auth, timeout=5)
    assert r.status_code == 200 and r.content == (root / "notes" / "todo.txt").read_bytes()
    assert "attachment" in r.headers["content-disposition"]
    r = httpx.get(on.base + "/ui/api/download", params={"path": ".env"}, headers=on.auth, timeout=5)
    assert r.status_code == 403 and SECRET not in r.text


def test_an_open_page_does_not_hold_up_a_graceful_stop(site):
    root, _ = site
    server = HttpServer(["--root", str(root), "--no-persist", "--shutdown-grace", "30s"])
    try:
        with httpx.stream("GET", server.base + "/ui/api/events", headers=server.auth, timeout=10) as events:
            first = next(events.iter_lines())
            assert first.startswith("event: ")
            started = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            server.proc.wait(timeout=10)
        assert server.proc.returncode == 0
        assert time.monotonic() - started < 5, "the event stream ended with the server, not after the 30 s grace"
    finally:
        server.stop()
