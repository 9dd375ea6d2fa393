"""Attacks on the HTML report by the agent being graded, through what it controls: its patch (text, file names,
bytes, size), its test output, its trajectory. The report is built with the real CLI (`evalharness report RUN
--format html`) from a fabricated stored run, then read as HTML and opened in a real headless Chromium.

Pins: trial text that ends its data block or runs as script, a patch that makes the page fetch something, bytes
that break the embedded JSON, a giant file that bloats the page, and a trial folder that makes the report embed
files from outside it.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser_support import chromium as open_chromium, need_chromium
from report_runs import make_run
from support import run_cli

PWN = "window.__pwned=1;document.title='pwned'"
PAYLOADS = [
    f"</script><script>{PWN}</script>", f"</SCRIPT ><script>{PWN}</script>", f"<!--<script>{PWN}</script>",
    f"<img src=x onerror=\"{PWN}\">", f"<svg onload=\"{PWN}\"><script>{PWN}</script></svg>",
    f"<a href=\"javascript:{PWN}\">x</a>", "<link rel=stylesheet href=http://127.0.0.1:9/x.css>",
    "<style>*{background:url(http://127.0.0.1:9/bg)}</style>", "]]> \u2028\u2029 \ufeff \"'\\ {{ }} ${x}",
]
HOSTILE = "\n".join(PAYLOADS)
EVIL_PATH = "x\" onerror=\"" + PWN + "\".py"


def _patch() -> str:
    lines = "\n".join("+" + p for p in HOSTILE.split("\n"))
    return (f"diff --git a/{EVIL_PATH} b/{EVIL_PATH}\n--- a/{EVIL_PATH}\n+++ b/{EVIL_PATH}\n@@ -0,0 +1,9 @@\n"
            f"{lines}\n+nul\x00byte\n")


@pytest.fixture
def hostile_run(tmp_path):
    """Two configurations; trial (0, 1, 0) carries the payloads in every file the agent controls."""
    store, runs_dir = make_run(tmp_path, configs=["a/m", "b/m"])
    [row] = [r for r in store.trial_rows(["r1"]) if r["trial_id"] == "toy/t1/a__m/seed-0"]
    folder = runs_dir / row["detail"]
    (folder / "patch.diff").write_bytes(_patch().encode() + b"bad\xff\xfeutf8\n")
    (folder / "test_output.txt").write_bytes(HOSTILE.encode() + b"\x00\xff\n")
    (folder / "trajectory.json").write_text(json.dumps({"format": "evalharness.trajectory/1", "steps": [
        {"index": 0, "kind": "model", "content": HOSTILE + "\ud800 lone surrogate", "tool_calls": [{"x": HOSTILE}]},
        {"index": 1, "kind": "command", "command": HOSTILE, "exit_code": 0, "output": HOSTILE}]}))
    return store, runs_dir, folder


def _build(tmp_path: Path, runs_dir: Path, name: str = "report.html") -> tuple[Path, str]:
    page = tmp_path / name
    run_cli("report", "r1", "--format", "html", "-o", str(page), "--runs-dir", str(runs_dir), cwd=tmp_path)
    return page, page.read_text()


def _chunks(page: str) -> list[dict]:
    blocks = re.findall(r'<script type="application/octet-stream" id="chunk-(\d+)">(.*?)</script>', page, re.S)
    return [d for _, b in blocks for d in json.loads(gzip.decompress(base64.b64decode(b)))]


class _Elements(HTMLParser):
    """Every start tag and its attributes, as a browser's tokenizer sees the page."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _text_of(detail: dict) -> str:
    return json.dumps(detail, ensure_ascii=False)


# --- the HTML as built --------------------------------------------------------------------------------------------

def test_no_payload_becomes_an_element_and_every_script_block_is_ours(hostile_run, tmp_path):
    store, runs_dir, _ = hostile_run
    _, page = _build(tmp_path, runs_dir)
    parser = _Elements()
    parser.feed(page)
    scripts = [a for t, a in parser.tags if t == "script"]
    assert [a.get("type") for a in scripts] == ["application/json", "application/octet-stream", None]
    assert not [t for t, a in parser.tags if t in ("iframe", "object", "embed", "img")
                or t == "link" and a.get("href") != "data:,"]  # the page's own empty icon
    assert not [a for t, a in parser.tags if any(k.startswith("on") for k in a)]
    assert not re.search(r"(src|href)\s*=\s*[\"']?\s*(javascript:|https?://)", page, re.I)
    assert "pwned" not in page  # outside the compressed chunks the payloads are nowhere
    [hostile] = [d for d in _chunks(page) if EVIL_PATH in d["patch"]["text"]]
    for payload in PAYLOADS:
        assert payload in hostile["patch"]["text"] and payload in hostile["test_output"]["text"]
    assert "nul\x00byte" in hostile["patch"]["text"] and "bad\ufffd\ufffdutf8" in hostile["patch"]["text"]
    steps = hostile["trajectory"]["steps"]
    assert PAYLOADS[0] in steps[0]["thought"] and PAYLOADS[0] in steps[1]["command"]


def test_a_50_mb_patch_and_giant_lines_are_cut_and_said_so(hostile_run, tmp_path):
    store, runs_dir, folder = hostile_run
    (folder / "patch.diff").write_text("+" + "x" * 1_000_000 + "\n" + "+y = 1\n" * 7_000_000)  # ~50 MB
    (folder / "test_output.txt").write_text("z" * 10_000_000)  # one 10 MB line
    began = time.monotonic()
    _, page = _build(tmp_path, runs_dir)
    took = time.monotonic() - began
    assert took < 120 and len(page) < 2_000_000, (took, len(page))
    [big] = [d for d in _chunks(page) if d["patch"]["size"] > 40_000_000]
    assert big["patch"]["cut"] > 40_000_000 and len(big["patch"]["text"]) == 20_000
    assert big["test_output"]["cut"] == 10_000_000 - len(big["test_output"]["text"])


def test_symlinked_trial_files_are_not_embedded(hostile_run, tmp_path):
    store, runs_dir, folder = hostile_run
    (runs_dir / ".review-secret").write_text("5ec2e7" * 10)
    (folder / "test_output.txt").unlink()
    (folder / "test_output.txt").symlink_to("/etc/passwd")
    (folder / "trial.log").unlink()
    (folder / "trial.log").symlink_to(runs_dir / ".review-secret")
    _, page = _build(tmp_path, runs_dir)
    text = "".join(_text_of(d) for d in _chunks(page))
    assert "root:" not in text and "5ec2e7" not in text


def test_a_trial_detail_with_dotdot_is_not_read(hostile_run, tmp_path):
    store, runs_dir, _ = hostile_run
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "patch.diff").write_text("+OUTSIDE-THE-RUNS-FOLDER\n")
    from sqlalchemy import text

    with store.engine.begin() as conn:
        conn.execute(text("UPDATE trials SET detail = '../outside' WHERE run_id = 'r1' AND trial_id = :t"),
                     {"t": "toy/t0/a__m/seed-0"})
    _, page = _build(tmp_path, runs_dir)
    assert "OUTSIDE-THE-RUNS-FOLDER" not in "".join(_text_of(d) for d in _chunks(page))


# --- in Chromium --------------------------------------------------------------------------------------------------

@pytest.fixture
def chromium(tmp_path):
    need_chromium()
    with open_chromium(tmp_path, page_load_timeout=60, console_log=True) as driver:
        yield driver


def _wait(driver, script: str, what: str, timeout: float = 20) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(script), what)


@pytest.mark.browser
@pytest.mark.slow
def test_opening_every_trial_runs_nothing_fetches_nothing_and_logs_no_error(hostile_run, tmp_path, chromium):
    store, runs_dir, _ = hostile_run
    page, _ = _build(tmp_path, runs_dir)
    chromium.get(page.as_uri())
    _wait(chromium, "return document.documentElement.dataset.ready === '1'", "the page's script never got ready")
    n = chromium.execute_script("return JSON.parse(document.getElementById('index').textContent).trials.length")
    assert n == 16
    hostile_seen = False
    for i in range(n):
        chromium.execute_script(f"location.hash = '#trial/{i}'")
        _wait(chromium, f"return document.documentElement.dataset.trial === '{i}'", f"trial {i} never showed")
        assert chromium.execute_script("return window.__pwned") is None and chromium.title != "pwned"
        assert chromium.find_elements("css selector", "#view-body script, #view-body img, #view-body svg, "
                                                      "#view-body iframe, #view-body style, #view-body link") == []
        hrefs = chromium.execute_script(
            "return [...document.querySelectorAll('#view-body a')].map(a => a.getAttribute('href'))")
        assert all(h.startswith("#") for h in hrefs), hrefs
        # the text holds a lone surrogate, which WebDriver cannot hand back: compare in the page
        shown = chromium.execute_script(
            "const t = document.getElementById('view-body').textContent;"
            "return t.includes(arguments[0]) ? arguments[1].filter(p => !t.includes(p)) : null",
            EVIL_PATH, PAYLOADS)
        if shown is not None:
            hostile_seen = True
            assert shown == [], shown
    assert hostile_seen
    resources = chromium.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(r.startswith(("file:", "data:")) for r in resources), resources
    errors = [e for e in chromium.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
