"""The HTML report of a real two-configuration run (the quickstart pack, oracle and null, two seeds, real Docker)
in a real headless Chromium: every plot is drawn, the console stays free of errors, a click from a
configuration's rate reaches a trial's patch, and hostile text in a trial's test output shows as text. The test
saves its own screenshot of the report to reports/report-two-configs.png (committed).

Pins: a report whose plots did not render, a script error that left the trial views dead, a click that led
nowhere, a test output that ran as script.
"""

from __future__ import annotations

import json

import pytest
from browser_support import chromium, need_chromium
from report_runs import HOSTILE
from support import QUICKSTART, REPO, run_cli

SCREENSHOT = REPO / "reports" / "report-two-configs.png"
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.docker]
need_chromium()
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path, page_load_timeout=60, console_log=True) as driver:
        yield driver


@pytest.fixture
def report_page(tmp_path, base_image):
    """The quickstart run's HTML report, with hostile text appended to one null trial's test output."""
    run_cli("run", "--pack", str(QUICKSTART), "--harness", "oracle", "--harness", "null", "--seeds", "2",
            "--workers", "2", "--format", "json", cwd=tmp_path)
    runs = tmp_path / "runs"
    run_id = next(p.name for p in runs.iterdir() if p.is_dir())
    hostile = runs / run_id / "quickstart" / "boltons-strutils-parse-int-list" / "null" / "none" / "seed-0"
    with (hostile / "test_output.txt").open("a") as out:
        out.write(f"\n{HOSTILE}\n")
    page = tmp_path / "report.html"
    run_cli("report", run_id, "--format", "html", "-o", str(page), "--runs-dir", str(runs), cwd=tmp_path)
    return page


def _errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def _wait(driver, script: str, what: str, timeout: float = 15):
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(script), what)


def test_the_report_renders_and_a_rate_leads_to_a_patch(browser, report_page):
    browser.get(report_page.as_uri())
    _wait(browser, "return document.documentElement.dataset.ready === '1'", "the page's script never got ready")
    for kind in ("forest", "differences", "cost"):
        svg = browser.find_element(By.CSS_SELECTOR, f'svg[data-plot="{kind}"]')
        assert svg.is_displayed() and svg.size["height"] > 60, kind
        assert len(svg.find_elements(By.CSS_SELECTOR, "circle")) >= 1, f"{kind} has no point"
    heat = browser.find_element(By.CSS_SELECTOR, "table.heat")
    assert heat.is_displayed() and len(heat.find_elements(By.CSS_SELECTOR, "tbody tr")) == 8
    assert _errors(browser) == []

    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(height + 40, 4200))
    SCREENSHOT.parent.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT)) and SCREENSHOT.stat().st_size > 20_000
    browser.set_window_size(1400, 1000)

    rate = browser.find_element(By.CSS_SELECTOR, 'table.headline a[href="#trials/config/oracle%2Fnone"]')
    assert rate.text == "100.0%"
    rate.click()
    view = browser.find_element(By.ID, "view")
    _wait(browser, "return !document.getElementById('view').hidden", "the configuration's trials never opened")
    rows = view.find_elements(By.CSS_SELECTOR, "table.trials tbody tr")
    assert len(rows) == 16 and "16 trials, 16 usable, 16 resolved" in view.text
    rows[0].find_element(By.CSS_SELECTOR, "a").click()
    _wait(browser, "return document.documentElement.dataset.trial !== undefined", "the trial never rendered")
    patch = browser.find_element(By.ID, "patch")
    assert patch.is_displayed() and patch.text.startswith("diff --git a/boltons/")
    assert browser.find_elements(By.CSS_SELECTOR, "#patch div.add") and "Trajectory" in view.text
    assert "all 14 required tests pass" in view.text or "required tests pass" in view.text

    # the hostile test output, opened from its heatmap cell: shown as text, nothing ran
    browser.execute_script("location.hash = arguments[0]",
                           "#trials/cell/null%2Fnone/boltons-strutils-parse-int-list")
    _wait(browser, "return document.querySelectorAll('#view table.trials tbody tr').length === 2",
          "the cell's two trials never listed")
    browser.find_element(By.CSS_SELECTOR, "#view table.trials tbody tr a").click()
    _wait(browser, "return (document.getElementById('test-output') || {}).textContent?.includes('onerror')",
          "the hostile test output never showed")
    assert HOSTILE in browser.find_element(By.ID, "test-output").get_property("textContent")
    assert browser.execute_script("return window.__injected") is None
    assert browser.find_elements(By.CSS_SELECTOR, "#view script, #view img") == []
    assert _errors(browser) == []
    browser.back()  # the views are history entries
    _wait(browser, "return location.hash.startsWith('#trials/cell/')", "back did not return to the cell")
    index = json.loads(browser.execute_script("return document.getElementById('index').textContent"))
    assert len(index["trials"]) == 32

    # a comparison row leads to its paired tasks, and each of those to its cells; Esc closes the view
    browser.execute_script("document.getElementById('view').hidden = true; location.hash = ''")
    browser.find_element(By.CSS_SELECTOR, '#differences table a[href="#pair/0"]').click()
    _wait(browser, "return document.querySelectorAll('#view tbody tr').length === 8", "the paired tasks never listed")
    assert "oracle/none − null/none: paired tasks" in view.text and "8 shared tasks" in view.text
    assert len(view.find_elements(By.CSS_SELECTOR, 'tbody a[href^="#trials/cell/oracle%2Fnone/"]')) == 8
    browser.find_element(By.TAG_NAME, "body").send_keys("\ue00c")  # Escape
    _wait(browser, "return document.getElementById('view').hidden", "Esc did not close the view")
    assert _errors(browser) == []
