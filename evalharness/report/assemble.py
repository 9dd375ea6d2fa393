"""A stored run's report, assembled from the store and the run folders: the one entry point the CLI calls
(``report``, and ``run`` at its end).

``assemble`` builds the report's content (``build.build_report``) and adds what only the store knows: the audit
section when the runs' pack was audited, and the merge reviews (``report["merge"]``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from evalharness.report.build import build_report
from evalharness.report.data import reviews_frame, trials_frame
from evalharness.store import Store


def assemble(store: Store, run_ids: list[str], runs_dir: Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """The report of ``run_ids`` and the trials frame it was built from."""
    frame = trials_frame(store, list(run_ids))
    report = build_report(frame, [store.get_run(r) for r in run_ids])
    report["audit"] = _audit_of(store, frame)
    report["runs_dir"] = str(runs_dir)
    reviews = reviews_frame(store, list(run_ids))
    report["n_reviews"] = int(len(reviews))
    return report, frame


def _audit_of(store: Store, frame: pd.DataFrame):
    """The audit of the runs' pack when one is stored (the report's audit section), else None."""
    from evalharness.report.audit import audit_section

    return audit_section(store, sorted(set(frame["pack"])), frame) if len(frame) else None
