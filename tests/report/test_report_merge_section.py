"""Merge acceptance in every report: reviews stored for a run give ``frame["merged"]``, ``report["merge"]`` (JSON
clean) and the merge table, plot and column in the HTML, Markdown and table reports, next to the resolve rate.

Pins: a report that dropped the reviews it had, a NaN that reached the JSON, a merge rate shown without the
golden baseline it is read against.
"""

from __future__ import annotations

import json
import math

from report_runs import make_run

from evalharness.report.assemble import assemble
from evalharness.report.render import render


def _review(trial: dict, reviewer: str, verdict: str, reasons=()) -> dict:
    return {"pack": "toy", "task_id": trial["task_id"], "arm": "agent", "run_id": trial["run_id"],
            "trial_id": trial["trial_id"], "reviewer": reviewer, "verdict": verdict, "reasons": list(reasons),
            "seconds": 30.0, "source": "test"}


def _gold(task: str, reviewer: str, verdict: str) -> dict:
    return {"pack": "toy", "task_id": task, "arm": "gold", "reviewer": reviewer, "verdict": verdict,
            "reasons": [] if verdict == "merge" else ["code_quality"], "seconds": 20.0, "source": "test"}


def test_reviews_reach_every_format(tmp_path):
    store, runs_dir = make_run(tmp_path, configs=["a/m", "b/m"], tasks=4, seeds=1, solved=lambda c, t, s: t < 3)
    report, frame = assemble(store, ["r1"], runs_dir)
    assert report["merge"] == [] and "merged" not in frame
    a = [t for t in report["trials"] if t["config"] == "a/m"]
    rows = [_review(a[0], "ann", "merge"), _review(a[1], "ann", "reject", ["tests", "code_quality"]),
            _review(a[2], "ann", "merge_after_changes", ["code_quality"]), _review(a[0], "bob", "merge"),
            *[_gold(f"t{t}", "ann", "merge" if t else "reject") for t in range(4)]]
    store.record_reviews(rows)

    report, frame = assemble(store, ["r1"], runs_dir)
    merged = frame.set_index("trial_id")["merged"]
    assert merged[a[0]["trial_id"]] == 1.0 and merged[a[1]["trial_id"]] == 0.0 and merged[a[2]["trial_id"]] == 0.0
    assert math.isnan(merged[a[3]["trial_id"]])  # not reviewed
    (m,) = report["merge"]  # b/m has no reviewed trial: no row
    assert m["config"] == "a/m" and m["n_reviewed_trials"] == 3 and m["n_reviews"] == 4
    assert abs(m["merge_rate"] - 1 / 3) < 1e-9 and m["gold_rate"] == 0.75
    assert m["resolved_rejected"] == 2 and m["rejected_reasons"] == {"code_quality": 2, "tests": 1}
    text = render(report, "json")
    assert "NaN" not in text and json.loads(text)["merge"][0]["config"] == "a/m"
    assert [t["merged"] for t in json.loads(text)["trials"] if t["config"] == "a/m"] == [1.0, 0.0, 0.0, None]

    page = render(report, "html")
    assert 'data-plot="merge"' in page and "gold patches (baseline)" in page
    assert "33.3%" in page and "75.0%" in page and "code quality 2, tests missing or wrong 1" in page
    md = render(report, "md")
    assert "## Merge acceptance (human review)" in md and "| cost/resolved | merge rate |" in md
    assert "not reviewed" in md  # b/m's merge cell in the score table
    table = render(report, "table")
    assert "Merge acceptance (human review)" in table and "33.3% [6.1%, 79.2%]" in table
