"""The labelling page in a real headless Chromium, served by `evalharness audit label serve` as a real process:
an annotator labels three tasks with the keyboard only and the labels (annotator, broken, family, severity, time)
are in the store; a second annotator, served at the same time from the same store, sees none of them.

Pins: a page that needed the mouse, a statement's `<script>` that ran instead of showing, a refused label that
looked saved, and a second annotator whose page or progress count gave away the first one's labels.
"""

from __future__ import annotations

import json
import urllib.request
from datetime import datetime, timezone

import pytest
from browser_support import Served, browser, need_chromium  # noqa: F401 (browser: the fixture)
from browser_support import keys as _keys, text as _text, wait_text as _wait_text
from label_pack import HOSTILE, add_findings, make_pack

from evalharness.audit.labels import annotator_order
from evalharness.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]
need_chromium()
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402


@pytest.fixture
def served(tmp_path):
    pack = make_pack(tmp_path)
    db = tmp_path / "labels.db"
    add_findings(Store(f"sqlite:///{db}"))
    started: list[Served] = []

    def start(annotator):
        started.append(Served(["audit", "label", "serve", str(pack), "--annotator", annotator, "--db", str(db),
                                "--port", "0"], tmp_path))
        return started[-1]

    yield start, db
    for s in started:
        s.kill()


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
