"""What the tests in a real headless Chromium share: the skip when Chromium or selenium is missing, the driver,
an `evalharness ... serve` command in a child process that a Ctrl-C stops, and keyboard and text helpers.

A test module calls ``webdriver = need_chromium()`` before importing selenium, then uses the ``browser`` fixture
(import it into the module) or ``chromium(tmp_path, ...)`` for other options.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import EVALHARNESS

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


def need_chromium():
    """Skip the calling test module unless Debian's chromium, chromium-driver and selenium are installed;
    returns ``selenium.webdriver``."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("needs Debian's chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver); "
                    "scripts/setup installs them", allow_module_level=True)
    return pytest.importorskip("selenium.webdriver", reason="needs selenium (the dev extra: pip install -e '.[dev]')")


@contextlib.contextmanager
def chromium(tmp_path: Path, *, page_load_timeout: int = 30, console_log: bool = False) -> Iterator:
    """A headless Chromium with its own profile under ``tmp_path``; ``console_log`` keeps the browser console."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1400,1000"):
        options.add_argument(arg)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(page_load_timeout)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path) as driver:
        yield driver


def ctrl_c_reaches_it() -> None:
    """A shell starts background jobs with SIGINT ignored (`nohup pytest &`), and children inherit that:
    the server would never see the test's Ctrl-C. Give it the default disposition, unblocked."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class Served:
    """`evalharness ARGS...` (a serve command) in a child process; ``url`` is the address it printed."""

    def __init__(self, args: list[str], cwd: Path):
        self.proc = subprocess.Popen([*EVALHARNESS, *args], cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # a hang can be dumped
                                     preexec_fn=ctrl_c_reaches_it)
        self.lines: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=lambda: [self.lines.put(line) for line in self.proc.stdout], daemon=True)
        self.reader.start()
        self.url = self._address()

    def _address(self) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    raise AssertionError(f"serve exited {self.proc.returncode}: {self.proc.stderr.read()}") from None
                continue
            if "http://127.0.0.1:" in line:
                return line[line.index("http://"):].split()[0]
        raise AssertionError("serve printed no address within 60 s")

    def stop(self) -> str:
        """Ctrl-C, as a person stops it; returns what it printed after the address."""
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # say where it hangs: faulthandler dumps every thread on SIGABRT
            self.proc.send_signal(signal.SIGABRT)
            _, err = self.proc.communicate(timeout=30)
            raise AssertionError(f"serve did not stop within 30 s of Ctrl-C; its threads:\n{err[-6000:]}") from None
        self.reader.join(timeout=30)  # the last lines are read once the pipe closes
        out = []
        while not self.lines.empty():
            out.append(self.lines.get())
        return "".join(out)

    def kill(self) -> None:
        """For a test's cleanup: a server still running is killed and reaped."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def keys(driver, *pressed) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(*pressed).perform()


def text(driver, element_id: str) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, element_id).get_property("textContent")


def wait_text(driver, element_id: str, expected: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 15).until(lambda d: expected in text(d, element_id),
                                    f"#{element_id} never showed {expected!r} (it shows {text(driver, element_id)!r})")
