"""`audit report` when a kappa is degenerate (a rater gave one answer to every task): the report says so, with no
kappa and no interval, and no statsmodels RuntimeWarning reaches the user (issue 27: one did, beside a kappa of
0.00 [0.00, 0.00] that read as a measurement). The decision itself is pinned in ``cohen_kappa`` without the CLI."""

from __future__ import annotations

import json
import math
import warnings

from label_pack import make_pack
from support import run_cli

from evalharness.audit.findings import Finding
from evalharness.stats.agreement import cohen_kappa, fleiss
from evalharness.store import Store

TASKS = [f"task-{n:02d}" for n in range(32)]


def test_a_rater_with_one_answer_only_is_degenerate_with_no_kappa_and_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one_sided = cohen_kappa([[29, 1], [0, 0]], min_n=30, raters=("alice", "bob"))
        both_sides = cohen_kappa([[15, 0], [1, 14]], min_n=30)
        assert math.isnan(fleiss([[3, 0], [3, 0], [3, 0]]))
    assert one_sided.degenerate and math.isnan(one_sided.kappa) and math.isnan(one_sided.ci_low)
    assert one_sided.note.startswith("kappa degenerate: alice gave one answer to all 30 items")
    assert one_sided.raw_agreement == 29 / 30
    assert not both_sides.degenerate and 0.8 < both_sides.kappa < 1 and both_sides.ci_low < both_sides.kappa


def test_audit_report_says_degenerate_and_leaks_no_warning(tmp_path):
    pack = make_pack(tmp_path, TASKS)
    store = Store(f"sqlite:///{tmp_path / 'runs' / 'evalharness.db'}")
    for n, task_id in enumerate(TASKS):
        store.record_finding("label-demo", Finding(task_id, "leak", "solution_leak", n < 4, 2 if n < 4 else 0, "x"))
    rows = [f"{t},alice,false,,0," for t in TASKS]  # alice calls every task clean
    rows += [f"{t},bob,{'true' if n % 3 == 0 else 'false'},{'validity' if n % 3 == 0 else ''},"
             f"{2 if n % 3 == 0 else 0}," for n, t in enumerate(TASKS)]
    (tmp_path / "labels.csv").write_text("task_id,annotator,broken,family,severity,note\n" + "\n".join(rows) + "\n")
    run_cli("audit", "label", "import", str(pack), "labels.csv", cwd=tmp_path)
    for fmt in ("table", "md", "json"):
        done = run_cli("audit", "report", str(pack), "--format", fmt, cwd=tmp_path)
        assert "Warning" not in done.stderr and "invalid value" not in done.stderr, done.stderr
        if fmt != "json":
            assert "kappa degenerate: alice gave one answer to all 32 items" in done.stdout, fmt
    report = json.loads(done.stdout)
    kappa = report["among_humans"]["kappa"]
    assert kappa["degenerate"] is True and kappa["kappa"] != kappa["kappa"]  # NaN: no kappa, by rule
