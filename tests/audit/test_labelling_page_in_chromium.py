"""The labelling page in a real headless Chromium, served by `evalharness audit label serve` as a real process:
an annotator labels three tasks with the keyboard only and the labels (annotator, broken, family, severity, time)
are in the store; a second annotator, served at the same time from the same store, sees none of them. A task's
findings show flagged first (highest severity first, an investigator verdict among the probes), a line each, with
the raw evidence folded away until `x`.

Pins: a page that needed the mouse, a statement's `<script>` that ran instead of showing, a refused label that
looked saved, a second annotator whose page or progress count gave away the first one's labels, and a flagged
finding shown below clean ones or buried in its raw evidence.
"""

from __future__ import annotations

import json
import urllib.request
from datetime import datetime, timezone

import pytest
from browser_support import Served, browser, need_chromium  # noqa: F401 (browser: the fixture)
from browser_support import keys as _keys, text as _text, wait_text as _wait_text
from label_pack import HOSTILE, add_findings, make_pack

from evalharness.audit.findings import Finding
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
    store = Store(f"sqlite:///{db}")
    add_findings(store)
    store.record_finding("label-demo", Finding("html-parse", "leak", "solution_leak", False, 0, LONG_REASON))
    store.record_finding("label-demo", Finding("html-parse", "mutants", "too_weak_tests", False, 0,
                                               "no Docker: nothing graded", status="skipped"))
    started: list[Served] = []

    def start(annotator):
        started.append(Served(["audit", "label", "serve", str(pack), "--annotator", annotator, "--db", str(db),
                                "--port", "0"], tmp_path))
        return started[-1]

    yield start, db
    for s in started:
        s.kill()


LONG_REASON = "no run of the gold patch's code in the statement; " + "compared runs of five tokens and more, " * 9


def _on(driver):
    return sorted(b.get_property("textContent").split()[0] for b in driver.find_elements(By.CSS_SELECTOR, "button.on"))


def _findings_flagged_first_a_line_each_evidence_folded(browser):
    rows = browser.find_elements(By.CSS_SELECTOR, "#findings .finding")
    lines = [r.find_element(By.CSS_SELECTOR, ".oneline") for r in rows]
    shown = [line.get_property("textContent") for line in lines]
    assert shown[:2] == ["investigator, seed 1 flags overly strict, severity 3: the test pins one error message",
                         "underspecified flags underspecified, severity 2: tests require <b> handling"]
    assert shown[2].startswith("leak no defect: no run of the gold patch's code") and shown[2].endswith("…")
    assert shown[3] == "mutants skipped: no Docker: nothing graded"
    assert [r.get_attribute("class") for r in rows] == ["finding flagged"] * 2 + ["finding clean", "finding other"]
    assert _text(browser, "findings-line") == "2 of 4 findings flag a defect (highest severity 3)"
    height = browser.execute_script("return parseFloat(getComputedStyle(arguments[0]).lineHeight)", lines[0])
    assert all(line.size["height"] <= height + 1 for line in lines)  # each one line on the screen
    assert browser.execute_script("return $('gold').getBoundingClientRect().right <= window.innerWidth")  # no overflow
    details = browser.find_elements(By.CSS_SELECTOR, "#findings details")
    raw = browser.find_element(By.XPATH, "//*[@id='findings']//div[@class='code'][contains(., 'alert(1)')]")
    assert len(details) == 4 and not any(d.get_property("open") for d in details) and not raw.is_displayed()
    assert raw.get_property("textContent") == '[\n  "<script>alert(1)</script>"\n]'  # as text, never as HTML
    _keys(browser, "x")
    assert all(d.get_property("open") for d in details) and raw.is_displayed()
    _keys(browser, "x")
    assert not any(d.get_property("open") for d in details)


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
    _findings_flagged_first_a_line_each_evidence_folded(browser)
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
