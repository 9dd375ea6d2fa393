"""The review page in a real headless Chromium, served by `evalharness review serve` as a real process: a reviewer
reviews five patches of a stored run (one of them gold, unmarked) with the keyboard only; the verdicts, reasons,
notes and times are in the store; then `evalharness report RUN --format json` shows merge rates with intervals
and the golden baseline.

Pins: a page that needed the mouse, a refused review that looked saved, a page that showed which patch was gold
or which configuration made it, and reviews that never reached the report.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser_support import Served, browser, need_chromium  # noqa: F401 (browser: the fixture)
from browser_support import keys as _keys, text as _text, wait_text as _wait_text
from review_run import SECRETS, make_run
from support import run_cli

from evalharness.review.sources import review_items

pytestmark = [pytest.mark.browser, pytest.mark.slow]
need_chromium()
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402


class ReviewServed(Served):
    """`evalharness review serve ARGS...` in a child process."""

    def __init__(self, args: list[str], cwd: Path):
        super().__init__(["review", "serve", *args], cwd)


def _on(driver):
    return sorted(b.get_attribute("data-key") for b in driver.find_elements(By.CSS_SELECTOR, "button.on"))


def _html_merge_section(browser, html: Path) -> str:
    """The HTML report's merge section as Chromium shows it (its plot drawn, no console errors)."""
    browser.get_log("browser")  # drained: the review page's refused save was logged (a 400, expected)
    browser.get(html.as_uri())
    section = browser.find_element(By.ID, "merge")
    assert section.find_elements(By.CSS_SELECTOR, "svg circle, svg rect, svg line")
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    return section.text


def test_a_reviewer_reviews_five_patches_with_the_keyboard_and_the_report_shows_merge_rates(browser, tmp_path):
    store, runs_dir, run_id = make_run(tmp_path)
    where = ["--runs-dir", str(runs_dir), "--sample", "4", "--gold", "1", "--seed", "3"]
    arm = {i.item_id: i for i in review_items(store, runs_dir, [run_id], sample=4, gold=1, seed=3)}
    assert sorted(i.arm for i in arm.values()) == ["agent"] * 4 + ["gold"]
    served = ReviewServed([run_id, "--reviewer", "ann", "--port", "0", *where], tmp_path)
    try:
        browser.get(served.url)
        _wait_text(browser, "progress", "you: 0 of 5 reviewed")
        page = browser.page_source
        assert all(s not in page for s in SECRETS) and "gold" not in page.lower().replace("gold patch", "")

        _keys(browser, Keys.ENTER)  # nothing chosen: refused, said so, nothing stored
        _wait_text(browser, "status", "not saved: verdict must be one of")
        assert store.reviews([run_id], latest=False) == []
        _keys(browser, "?")
        assert browser.find_element(By.ID, "help").is_displayed()
        _keys(browser, Keys.ESCAPE)
        assert not browser.find_element(By.ID, "help").is_displayed()

        plan = [("m",), ("r", "1", "4"), ("a", "3", "t", "rename <b>x</b>", Keys.ESCAPE), ("m",), ("r", "2")]
        shown = []
        for n, keys in enumerate(plan, 1):
            shown.append(_text(browser, "itemid"))
            assert browser.find_elements(By.CSS_SELECTOR, "#files .line.add span")  # the diff, highlighted
            assert browser.find_elements(By.CSS_SELECTOR, "#files span.k, #files span.nf, #files span.s1")
            assert "FAIL_TO_PASS:" in _text(browser, "tests")
            if keys == ("a", "3", "t", "rename <b>x</b>", Keys.ESCAPE):
                _keys(browser, "a", "r")  # a verdict can be changed before saving
                _keys(browser, "3", "3")  # a reason toggles on and off
            _keys(browser, *keys)
            if keys[0] == "r" and len(keys) == 3:
                assert _on(browser) == ["1", "4", "r"]
            _keys(browser, Keys.ENTER)
            _wait_text(browser, "progress", f"you: {n} of 5 reviewed")
        _wait_text(browser, "status", "you have reviewed every patch")
        assert sorted(shown) == sorted(arm)
        assert browser.find_elements(By.CSS_SELECTOR, "main b, main script") == []
        _keys(browser, "p")
        assert _text(browser, "itemid") == shown[3] and _text(browser, "saved") == "saved"
    finally:
        out = served.stop()
    assert "stopped: 5 of 5 patches reviewed by ann" in out and served.proc.returncode == 0

    got = {(r["arm"], r["trial_id"]): r for r in store.reviews([run_id])}
    want = dict(zip(shown, [("merge", []), ("reject", ["core_functionality", "tests"]),
                            ("merge_after_changes", ["code_quality"]), ("merge", []),
                            ("reject", ["breaks_other_code"])]))
    assert len(got) == 5
    for item_id, (verdict, reasons) in want.items():
        row = got[(arm[item_id].arm, arm[item_id].trial_id)]
        assert (row["reviewer"], row["verdict"], row["reasons"], row["source"]) == ("ann", verdict, reasons, "web")
        assert 0 < row["seconds"] < 120
    assert [r["note"] for r in got.values() if r["verdict"] == "merge_after_changes"] == ["rename <b>x</b>"]

    report = json.loads(run_cli("report", run_id, "--format", "json", "--runs-dir", str(runs_dir), cwd=tmp_path).stdout)
    rows = {r["config"]: r for r in report["merge"]}
    reviewed = {arm[i].config for i in shown if arm[i].arm == "agent"}
    assert set(rows) == reviewed
    gold_verdict = want[next(i for i in shown if arm[i].arm == "gold")][0]
    for config, row in rows.items():
        mine = [want[i][0] for i in shown if arm[i].config == config]
        assert row["n_reviews"] == len(mine) and row["merge_rate"] == pytest.approx(mine.count("merge") / len(mine))
        assert 0 <= row["ci_low"] <= row["merge_rate"] <= row["ci_high"] <= 1 and row["interval"]
        assert row["gold_n_reviews"] == 1 and row["gold_rate"] == (1.0 if gold_verdict == "merge" else 0.0)
        # one gold patch is one task: a baseline rate, but no task-level interval at n = 1 (said in the note)
        assert row["gold_n_tasks"] == 1 and row["gold_ci_low"] is None, row
        print(config, {k: row[k] for k in ("merge_rate", "ci_low", "ci_high", "interval", "gold_rate",
                                          "gold_interval", "normalised", "note")})

    html = tmp_path / "report.html"
    run_cli("report", run_id, "--format", "html", "-o", str(html), "--runs-dir", str(runs_dir), cwd=tmp_path)
    shown_text = _html_merge_section(browser, html)
    for config, row in rows.items():
        assert config in shown_text and f"{100 * row['merge_rate']:.1f}%" in shown_text
        assert f"[{100 * row['ci_low']:.1f}%, {100 * row['ci_high']:.1f}%]" in shown_text
    assert f"{100 * rows[next(iter(rows))]['gold_rate']:.1f}% n/a (1 tasks, 1 reviews)" in shown_text
