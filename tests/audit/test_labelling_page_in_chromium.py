"""The labelling page in a real headless Chromium, served by `evalharness audit label serve` as a real process:
an annotator labels three tasks with the keyboard only and the labels (annotator, broken, family, severity, time)
are in the store; a second annotator, served at the same time from the same store, sees none of them.

Pins: a page that needed the mouse, a statement's `<script>` that ran instead of showing, a refused label that
looked saved, and a second annotator whose page or progress count gave away the first one's labels.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest
from label_pack import HOSTILE, add_findings, make_pack
from support import EVALHARNESS

from evalharness.audit.labels import annotator_order
from evalharness.store import Store

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
pytestmark = [pytest.mark.browser, pytest.mark.slow]
if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
    pytest.skip("needs Debian's chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver); "
                "scripts/setup installs them", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (the dev extra: pip install -e '.[dev]')")
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def _ctrl_c_reaches_it() -> None:
    """A shell starts background jobs with SIGINT ignored (`nohup pytest &`), and children inherit that:
    the server would never see the test's Ctrl-C. Give it the default disposition, unblocked."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class Served:
    """`evalharness audit label serve` in a child process; ``url`` is the address it printed."""

    def __init__(self, pack: Path, db: Path, annotator: str, cwd: Path):
        self.proc = subprocess.Popen([*EVALHARNESS, "audit", "label", "serve", str(pack), "--annotator", annotator,
                                      "--db", str(db), "--port", "0"], cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # a hang can be dumped
                                     preexec_fn=_ctrl_c_reaches_it)
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


@pytest.fixture
def browser(tmp_path):
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1400,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture
def served(tmp_path):
    pack = make_pack(tmp_path)
    db = tmp_path / "labels.db"
    add_findings(Store(f"sqlite:///{db}"))
    started: list[Served] = []

    def start(annotator):
        started.append(Served(pack, db, annotator, tmp_path))
        return started[-1]

    yield start, db
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait(timeout=30)


def _keys(driver, *keys):
    ActionChains(driver).send_keys(*keys).perform()


def _text(driver, element_id):
    return driver.find_element(By.ID, element_id).get_property("textContent")


def _wait_text(driver, element_id, expected):
    WebDriverWait(driver, 15).until(lambda d: expected in _text(d, element_id),
                                    f"#{element_id} never showed {expected!r} (it shows {_text(driver, element_id)!r})")


def _on(driver):
    return sorted(b.get_property("textContent").split()[0] for b in driver.find_elements(By.CSS_SELECTOR, "button.on"))


def test_an_annotator_labels_three_tasks_with_the_keyboard_and_a_second_sees_none_of_it(browser, served):
    start, db = served
    alice = start("alice")
    started = datetime.now(timezone.utc)
    order = annotator_order(["calc-add", "calc-div", "html-parse", "str-pad", "time-fmt"], "alice")
    browser.get(alice.url)
    _wait_text(browser, "progress", "you: 0 of 5 labelled")
    assert _text(browser, "taskid") == order[0]

    _keys(browser, Keys.ENTER)  # nothing chosen: the server refuses it, the page says so, nothing is stored
    _wait_text(browser, "status", "not saved: broken is missing")
    assert Store(f"sqlite:///{db}").labels("label-demo", latest=False) == []

    _keys(browser, "?")
    assert browser.find_element(By.ID, "help").is_displayed()
    _keys(browser, Keys.ESCAPE)
    assert not browser.find_element(By.ID, "help").is_displayed()

    _keys(browser, "b", "u", "2")
    assert _on(browser) == ["2", "broken", "underspecified"]
    _keys(browser, Keys.ENTER)
    _wait_text(browser, "progress", "you: 1 of 5 labelled")
    assert _text(browser, "taskid") == order[1] == "html-parse"

    # the hostile statement shows as text; neither its <script> nor its <img onerror> ran
    assert _text(browser, "statement") == HOSTILE
    assert browser.find_elements(By.CSS_SELECTOR, "main script, main img, main b") == []
    assert browser.execute_script("return window.__injected") is None and "pwned" not in browser.title
    assert "<script>alert(1)</script>" in _text(browser, "evidence")
    assert "investigator, seed 1" in _text(browser, "verdicts")
    added = [e.get_property("textContent") for e in browser.find_elements(By.CSS_SELECTOR, "#gold .add")]
    removed = [e.get_property("textContent") for e in browser.find_elements(By.CSS_SELECTOR, "#gold .del")]
    assert added == ["+    x = 3"] and removed == ["-    x = 2"]

    _keys(browser, "c", Keys.ENTER)
    _wait_text(browser, "progress", "you: 2 of 5 labelled")
    assert _text(browser, "taskid") == order[2]
    _keys(browser, "b", "s", "3", "t", "zebra <b>one</b> message", Keys.ESCAPE, Keys.ENTER)
    _wait_text(browser, "progress", "you: 3 of 5 labelled")

    _keys(browser, "p")  # back to the third task: the page shows the label just saved
    assert _text(browser, "taskid") == order[2]
    assert _on(browser) == ["3", "broken", "overly"] and _text(browser, "saved") == "saved"

    labels = {r["task_id"]: r for r in Store(f"sqlite:///{db}").labels("label-demo")}
    got = {t: (r["annotator"], r["broken"], r["family"], r["severity"], r["note"], r["source"])
           for t, r in labels.items()}
    assert got == {order[0]: ("alice", True, "underspecified", 2, "", "web"),
                   order[1]: ("alice", False, None, 0, "", "web"),
                   order[2]: ("alice", True, "overly_strict", 3, "zebra <b>one</b> message", "web")}
    for r in labels.values():
        when = r["labelled_at"].replace(tzinfo=timezone.utc)
        assert started <= when <= datetime.now(timezone.utc) and r["seconds"] > 0

    bob = start("bob")  # at the same time, on the same store
    browser.get(bob.url)
    _wait_text(browser, "progress", "you: 0 of 5 labelled")
    seen = set()
    for _ in range(5):
        seen.add(_text(browser, "taskid"))
        assert _on(browser) == [] and _text(browser, "saved") == "not labelled yet"
        _keys(browser, "n")
    assert len(seen) == 5
    assert "alice" not in browser.page_source and "zebra" not in browser.page_source
    with urllib.request.urlopen(bob.url + "api/queue", timeout=10) as response:
        raw = response.read().decode()
    assert "alice" not in raw and "zebra" not in raw and json.loads(raw)["labels"] == {}

    _keys(browser, "c", "1", Keys.ENTER)
    _wait_text(browser, "progress", "you: 1 of 5 labelled")
    browser.get(alice.url)  # alice's count is hers alone: bob's label does not show in it
    _wait_text(browser, "progress", "you: 3 of 5 labelled")
    assert sorted({r["annotator"] for r in Store(f"sqlite:///{db}").labels("label-demo")}) == ["alice", "bob"]

    assert "stopped: 3 of 5 tasks labelled by alice" in alice.stop() and alice.proc.returncode == 0
    assert "stopped: 1 of 5 tasks labelled by bob" in bob.stop() and bob.proc.returncode == 0
