"""Headless Chromium for the search page's tests and its benchmark (bench/ui.py).

Debian's `chromium` and `chromium-driver` (scripts/test installs them) driven by
Selenium, with a fresh profile and nothing that reaches the network on its own.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = os.environ.get("FERRET_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("FERRET_CHROMEDRIVER", "/usr/bin/chromedriver")


class Chromium:
    """A headless browser; `driver` is Selenium's. Close it with `quit()`."""

    def __init__(self, width: int = 1280, height: int = 800, extra_flags: tuple[str, ...] = ()):
        missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
        if missing:
            raise RuntimeError(f"{', '.join(missing)} missing: apt-get install chromium chromium-driver (scripts/test does)")
        self.profile = tempfile.mkdtemp(prefix="ferret-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={self.profile}",
            f"--window-size={width},{height}",
            *extra_flags,
        ]:
            options.add_argument(flag)
        # The driver path is given, so Selenium Manager never looks for one online.
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_page_load_timeout(20)

    def quit(self):
        self.driver.quit()
        shutil.rmtree(self.profile, ignore_errors=True)
