"""Flagged trials are counted per configuration in every report format and in `compare`, and a
configuration with tampered trials gets a warning line naming where to look.

Pins: touched_test_files / touched_test_config existed only in each trial's result.json; the run's
summary and every report format showed a configuration that rewrote its tests exactly like an honest one.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner

from evalharness.cli import _print_report, cli
from evalharness.stats import FLAG_NAMES
from evalharness.store import Store, database_url

# config a: 4 tasks x 2 seeds; t0 tampered on both seeds, t1/t2 resolved after touching tests, t3 touched config
FLAGGED = {("t0", 0): ("tampered", ["tampered"]), ("t0", 1): ("tampered", ["tampered", "touched_tests"]),
           ("t1", 0): ("resolved", ["touched_tests"]), ("t2", 1): ("resolved", ["touched_tests"]),
           ("t3", 0): ("unresolved", ["touched_config"])}


def _record(store: Store, run_id: str, harness: str, flagged: dict) -> None:
    now = datetime.now(timezone.utc)
    for t in range(4):
        for seed in range(2):
            outcome, flags = flagged.get((f"t{t}", seed), ("resolved" if seed == 0 else "unresolved", []))
            store.record_trial(dict(
                run_id=run_id, trial_id=f"toy/t{t}/{harness}/m/seed-{seed}", pack="toy", task_id=f"t{t}",
                harness=harness, model="m", seed=seed, outcome=outcome, resolved=outcome == "resolved",
                infra=False, reason="", attempts=1, cost_usd=0.01, input_tokens=100, output_tokens=10,
                cached_tokens=0, calls=1, duration_s=1.0, started_at=now, finished_at=now, repo="",
                detail=f"{run_id}/toy/t{t}/{harness}/m/seed-{seed}", flags=flags))


@pytest.fixture
def runs_dir(tmp_path):
    store = Store(database_url(tmp_path / "runs" / "evalharness.db"))
    store.create_run("both", pack="toy", pack_hash="0" * 64, version="t", git_commit=None, config={})
    _record(store, "both", "a", FLAGGED)
    _record(store, "both", "b", {})
    return tmp_path / "runs"


def _invoke(*args: str) -> str:
    done = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.stdout


WARNING = ("a/m: 2 of 8 trials tampered: counted as not resolved; see `evalharness show both/toy/t0/a/m/seed-0` "
           "and 1 more under flagged trials")
CELL_A = "tampered 2, touched_tests 3, touched_config 1"


def test_json_has_every_count_per_configuration(runs_dir):
    report = json.loads(_invoke("report", "both", "--format", "json", "--runs-dir", str(runs_dir)))
    zeros = dict.fromkeys(FLAG_NAMES, 0)
    assert report["flags"] == {
        "a/m": {"n_trials": 8, "n_flagged": 5, "counts": {**zeros, "tampered": 2, "touched_tests": 3,
                                                          "touched_config": 1}},
        "b/m": {"n_trials": 8, "n_flagged": 0, "counts": zeros}}
    assert report["flag_warnings"] == [WARNING]
    assert [(t["trial"], t["flags"]) for t in report["flagged_trials"]] == [
        ("both/toy/t0/a/m/seed-0", ["tampered"]), ("both/toy/t0/a/m/seed-1", ["tampered", "touched_tests"]),
        ("both/toy/t1/a/m/seed-0", ["touched_tests"]), ("both/toy/t2/a/m/seed-1", ["touched_tests"]),
        ("both/toy/t3/a/m/seed-0", ["touched_config"])]


def test_markdown_shows_a_flags_column_the_warning_and_the_trials(runs_dir):
    md = _invoke("report", "both", "--format", "md", "--runs-dir", str(runs_dir))
    assert "| tokens/trial | flags |" in md
    rows = {line.split(" | ")[0]: line for line in md.splitlines()
            if line.startswith(("| a/m", "| b/m")) and "%" in line}  # the score table's rows
    assert rows["| a/m"].endswith(f"| {CELL_A} |") and rows["| b/m"].endswith("| none |")
    assert f"> **warning**, {WARNING}" in md
    assert "## Flagged trials" in md and "| both/toy/t0/a/m/seed-1 | a/m | tampered | tampered, touched_tests |" in md


def test_table_and_html_show_the_counts_and_the_warning(runs_dir, tmp_path):
    table = _invoke("report", "both", "--format", "table", "--runs-dir", str(runs_dir))
    assert f"WARNING, {WARNING}" in table
    assert "Flagged trials" in table and "both/toy/t3/a/m/seed-0" in table
    assert "touched_config 1" in " ".join(table.split())  # the cell may wrap; its words stay in order
    out = tmp_path / "r.html"
    done = CliRunner().invoke(cli, ["report", "both", "--format", "html", "-o", str(out), "--runs-dir", str(runs_dir)])
    assert done.exit_code == 0 and f"warning: {WARNING}" in done.stderr
    html = out.read_text()
    assert f'<p class="warning">Warning, {WARNING}</p>' in html
    assert f"<td>{CELL_A}</td>" in html and "<td>none</td>" in html
    assert "<h2>Flagged trials</h2>" in html


def test_compare_shows_the_flags_of_both_sides(runs_dir):
    md = _invoke("compare", "both", "--a", "a/m", "--b", "b/m", "--format", "md", "--runs-dir", str(runs_dir))
    assert f"| flags A | {CELL_A} |" in md and "| flags B | none |" in md
    assert "| WARNING | A (a/m): 2 of 8 trials tampered: counted as not resolved" in md
    swapped = _invoke("compare", "both", "--a", "b/m", "--b", "a/m", "--format", "md", "--runs-dir", str(runs_dir))
    assert "| flags A | none |" in swapped and "| WARNING | B (a/m): 2 of 8" in swapped


def test_plan_still_works_with_flags_in_the_frame(runs_dir):
    _invoke("plan", "both", "--runs-dir", str(runs_dir), "--format", "md")


def test_end_of_run_summary_warns_whatever_the_format(runs_dir, tmp_path, capsys):
    _print_report(["both"], "json", runs_dir, None, tmp_path / "reports")
    captured = capsys.readouterr()
    assert json.loads(captured.out)["flags"]["a/m"]["counts"]["tampered"] == 2  # stdout: the document alone
    assert captured.err.strip().splitlines() == [f"HTML report: {tmp_path / 'reports' / 'both.html'}",
                                                 f"warning: {WARNING}"]


def test_a_clean_run_has_no_warning_and_no_flagged_section(tmp_path):
    store = Store(database_url(tmp_path / "runs" / "evalharness.db"))
    store.create_run("clean", pack="toy", pack_hash="0" * 64, version="t", git_commit=None, config={})
    _record(store, "clean", "b", {})
    md = _invoke("report", "clean", "--format", "md", "--runs-dir", str(tmp_path / "runs"))
    assert "warning" not in md and "## Flagged trials" not in md
    assert json.loads(_invoke("report", "clean", "--format", "json", "--runs-dir", str(tmp_path / "runs")))[
        "flags"]["b/m"]["counts"] == dict.fromkeys(FLAG_NAMES, 0)
