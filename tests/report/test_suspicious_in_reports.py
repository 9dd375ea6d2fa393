"""A trial flagged ``suspicious_code`` shows its quoted lines (path:line, why, the line) in every report format, on
the console after a report or a run, in `compare`, in `show`, and in the HTML report's trial view (issue 23).

Pins: a flag counted in a cell but its lines only in each trial's result.json, where nobody reads them before the
number is used.
"""

from __future__ import annotations

import base64
import gzip
import json
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner
from report_runs import write_trial

from evalharness.cli import _print_report, cli
from evalharness.grading.suspicious import scan_patch
from evalharness.report.html import CHUNK
from evalharness.store import Store, database_url

SUSPICIOUS = "both/toy/t1/a/m/seed-0"
LINE = "frame = sys._getframe(1)  # `tick` | pipe </script><script>window.__injected=1</script>"
PATCH = ("diff --git a/src/t1.py b/src/t1.py\n--- a/src/t1.py\n+++ b/src/t1.py\n@@ -5,1 +5,3 @@\n def f():\n"
         f"+    {LINE}\n+    return frame.f_locals['expected']\n")
FINDINGS = [f.to_dict() for f in scan_patch(PATCH.encode())]
WARNING = ("a/m: 2 of 4 trials add suspicious code (test runner internals, frames, gc, /proc, ...): read the quoted "
           f"lines before the number is used; see `evalharness show {SUSPICIOUS}` and 1 more under flagged trials")


@pytest.fixture
def runs_dir(tmp_path):
    """Configuration a: t1 flagged with findings in its result.json, t2 flagged with none readable; b clean."""
    runs = tmp_path / "runs"
    store = Store(database_url(runs / "evalharness.db"))
    store.create_run("both", pack="toy", pack_hash="0" * 64, version="t", git_commit=None, config={})
    now = datetime.now(timezone.utc)
    for harness in ("a", "b"):
        for t in range(4):
            detail = f"both/toy/t{t}/{harness}/m/seed-0"
            write_trial(runs / detail, task=f"t{t}", outcome="resolved")
            flags = ["suspicious_code"] if harness == "a" and t in (1, 2) else []
            if detail == SUSPICIOUS:
                result = json.loads((runs / detail / "result.json").read_text())
                (runs / detail / "result.json").write_text(json.dumps({**result, "flags": flags,
                                                                       "suspicious": FINDINGS}))
                (runs / detail / "patch.diff").write_text(PATCH)
            store.record_trial(dict(
                run_id="both", trial_id=f"toy/t{t}/{harness}/m/seed-0", pack="toy", task_id=f"t{t}",
                harness=harness, model="m", seed=0, outcome="resolved", resolved=True, infra=False, reason="",
                attempts=1, cost_usd=0.01, input_tokens=100, output_tokens=10, cached_tokens=0, calls=1,
                duration_s=1.0, started_at=now, finished_at=now, repo="", detail=detail, flags=flags))
    store.set_status("both", "completed")
    return runs


def _invoke(*args: str):
    done = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done


def test_the_findings_are_what_the_scanner_says():
    assert [(f["path"], f["line"], f["category"]) for f in FINDINGS] == [("src/t1.py", 6, "frames"),
                                                                         ("src/t1.py", 7, "frames")]


def test_json_holds_every_finding_of_each_flagged_trial_and_the_warning(runs_dir):
    report = json.loads(_invoke("report", "both", "--format", "json", "--runs-dir", str(runs_dir)).stdout)
    assert report["flags"]["a/m"]["counts"]["suspicious_code"] == 2
    assert WARNING in report["flag_warnings"]
    by_trial = {t["trial"]: t for t in report["flagged_trials"]}
    assert by_trial[SUSPICIOUS]["suspicious"] == [{k: f[k] for k in ("path", "line", "text", "category", "reason")}
                                                  for f in FINDINGS]
    assert by_trial[SUSPICIOUS]["suspicious"][0]["text"] == LINE
    assert by_trial["both/toy/t2/a/m/seed-0"]["suspicious"] == []


def test_markdown_quotes_each_line_as_code_with_its_path_and_line(runs_dir):
    md = _invoke("report", "both", "--format", "md", "--runs-dir", str(runs_dir)).stdout
    assert f"> **warning**, {WARNING}" in md
    assert "## Suspicious code: added lines to read before the number is used" in md
    quoted = "``" + LINE.replace("|", "\\|") + "``"  # a code span longer than the line's own backtick run
    assert f"| {SUSPICIOUS} | src/t1.py:6 | frames: sys._getframe | {quoted} |" in md
    assert f"| {SUSPICIOUS} | src/t1.py:7 | frames: f_locals | ``return frame.f_locals['expected']`` |" not in md
    assert "`return frame.f_locals['expected']`" in md
    assert "no quoted patch line for 1 trial(s) flagged suspicious_code" in md
    assert "both/toy/t2/a/m/seed-0" in md.split("no quoted patch line")[1]


def test_the_table_shows_the_lines(runs_dir):
    table = " ".join(_invoke("report", "both", "--format", "table", "--runs-dir", str(runs_dir)).stdout.split())
    assert "Suspicious code: added lines to read before the number is used" in table
    assert "src/t1.py:6" in table and "sys._getframe(1)" in table and "src/t1.py:7" in table


def test_html_quotes_the_lines_escaped_links_the_trial_and_its_view_has_them(runs_dir, tmp_path):
    out = tmp_path / "r.html"
    done = _invoke("report", "both", "--format", "html", "-o", str(out), "--runs-dir", str(runs_dir))
    assert f"warning: {WARNING}" in done.stderr
    assert f"  {SUSPICIOUS}: src/t1.py:6 [frames] {LINE}" in done.stderr  # the console quotes the lines too
    html = out.read_text()
    assert '<section id="suspicious">' in html and '<a href="#suspicious">suspicious code</a>' in html
    assert "<td>src/t1.py:6</td>" in html
    assert "window.__injected" in html and "</script><script>window.__injected" not in html
    assert "<td>frame = sys._getframe(1)  # `tick` | pipe &lt;/script&gt;&lt;script&gt;" in html
    index = json.loads(html.split('<script type="application/json" id="index">')[1].split("</script>")[0])
    position = [t[index["fields"].index("detail")] for t in index["trials"]].index(SUSPICIOUS)
    assert f'<a href="#trial/{position}">{SUSPICIOUS}</a>' in html
    chunk = html.split(f'id="chunk-{position // CHUNK}">')[1].split("</script>")[0]
    details = json.loads(gzip.decompress(base64.b64decode(chunk)))[position % CHUNK]  # what the trial view reads
    assert details["result"]["suspicious"][0]["text"] == LINE


def test_the_trial_view_data_carries_the_findings(runs_dir):
    from evalharness.report.trials import trial_details

    details = trial_details(runs_dir, SUSPICIOUS)
    assert [(f["path"], f["line"], f["text"]) for f in details["result"]["suspicious"]] == [
        ("src/t1.py", 6, LINE), ("src/t1.py", 7, "return frame.f_locals['expected']")]
    assert trial_details(runs_dir, "both/toy/t0/a/m/seed-0")["result"]["suspicious"] == []


def test_end_of_run_summary_warns_and_quotes(runs_dir, tmp_path, capsys):
    _print_report(["both"], "json", runs_dir, None, tmp_path / "reports")
    err = capsys.readouterr().err.splitlines()
    assert err[1:] == [f"warning: {WARNING}", f"  {SUSPICIOUS}: src/t1.py:6 [frames] {LINE}",
                       f"  {SUSPICIOUS}: src/t1.py:7 [frames] return frame.f_locals['expected']"]


def test_compare_warns_of_the_side_with_suspicious_code(runs_dir):
    md = _invoke("compare", "both", "--a", "a/m", "--b", "b/m", "--format", "md", "--runs-dir",
                 str(runs_dir)).stdout
    assert "| WARNING | A (a/m): 2 of 4 trials add suspicious code: read the lines `evalharness report` quotes" in md
    assert "B (b/m)" not in md


def test_show_prints_the_lines(runs_dir):
    out = _invoke("show", str(runs_dir / SUSPICIOUS), "--runs-dir", str(runs_dir)).stdout
    assert "suspicious code: 2 added lines to read" in out and "src/t1.py:6" in out and "sys._getframe(1)" in out


def test_a_report_without_suspicious_trials_has_no_section(tmp_path):
    from report_runs import make_run

    _, runs = make_run(tmp_path, configs=["h/m"], tasks=2, seeds=1)
    md = _invoke("report", "r1", "--format", "md", "--runs-dir", str(runs)).stdout
    assert "Suspicious code" not in md and "suspicious code" not in md
