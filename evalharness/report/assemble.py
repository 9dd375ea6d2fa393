"""A stored run's report, assembled from the store and the run folders: the one entry point the CLI calls
(``report``, and ``run`` at its end).

``assemble`` builds the report's content (``build.build_report``) and adds what only the store knows: the audit
section when the runs' pack was audited, and the merge reviews: ``frame["merged"]`` (per trial the share of its
reviewers who would merge it, NaN when unreviewed) and ``report["merge"]`` (one row per reviewed configuration,
``stats.merge.merge_table``), both only when reviews exist; the quoted lines of each trial flagged
``suspicious_code``, read from its result.json (``report.suspicious``); the trial index (``report["trials"]``,
every trial with its folder: what the HTML report links to), the drift days among the runs
(``report["drift"]``) and, for packs with rewards between 0 and 1, the mean-reward section (``report["rewards"]``,
``report.rewards``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from evalharness.report.build import build_report, clean_row
from evalharness.report.data import reviews_frame, trials_frame
from evalharness.report.rewards import reward_section
from evalharness.report.suspicious import attach_findings
from evalharness.report.trials import trial_index
from evalharness.stats.merge import merge_table, merged_column
from evalharness.store import Store


def assemble(store: Store, run_ids: list[str], runs_dir: Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """The report of ``run_ids`` and the trials frame it was built from."""
    frame = trials_frame(store, list(run_ids))
    runs = [store.get_run(r) for r in run_ids]
    report = build_report(frame, runs)
    report["rewards"] = reward_section(frame, report["level"]) if len(frame) else None
    report["audit"] = _audit_of(store, frame)
    report["runs_dir"] = str(runs_dir)
    attach_findings(report, runs_dir)
    reviews = reviews_frame(store, list(run_ids))
    report["n_reviews"] = int(len(reviews))
    report["merge"] = []
    if len(reviews) and len(frame):
        frame["merged"], report["merge"] = merge_section(frame, reviews, report["level"])
    report["trials"] = trial_index(frame)
    report["drift"] = drift_runs(runs, frame)
    return report, frame


def drift_runs(runs: list[dict[str, Any]], frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The runs that are days of a drift stream (named ``drift:STREAM:DAY``, evalharness/drift/run.py)."""
    out = []
    for run in runs:
        run_id, name = run["run_id"], str(run.get("name") or "")
        if not name.startswith("drift:"):
            continue
        _, stream, day = (name.split(":", 2) + ["", ""])[:3]
        part = frame[frame["run_id"] == run_id]
        out.append({"run_id": run_id, "stream": stream, "day": day, "n_trials": int(len(part)),
                    "n_resolved": int(part["resolved"].sum()) if len(part) else 0})
    return out


def merge_section(frame: pd.DataFrame, reviews: pd.DataFrame, level: float) -> tuple[pd.Series, list[dict]]:
    """(the trials' ``merged`` column, the merge table's rows with NaN as None)."""
    merged = merged_column(frame, reviews)
    rows = merge_table(frame.assign(merged=merged), reviews, level=level)
    return merged, [clean_row(row) for row in rows]


def _audit_of(store: Store, frame: pd.DataFrame):
    """The audit of the runs' pack when one is stored (the report's audit section), else None."""
    from evalharness.report.audit import audit_section

    return audit_section(store, sorted(set(frame["pack"])), frame) if len(frame) else None
