"""A small pack for the labelling tests, with findings in a store: one task's statement holds HTML that would
run script if the page ever put task text in as HTML."""

from __future__ import annotations

import json
from pathlib import Path

from evalharness.audit.findings import Finding
from evalharness.store import Store

HOSTILE = ('Parsing fails on <b>bold</b> input.\n<script>window.__injected = "script"; document.title = "pwned"'
           '</script><img src="x" onerror="window.__injected = &quot;img&quot;">\nExpected: parse("<b>") == "b"')
TASK_IDS = ["calc-add", "calc-div", "html-parse", "str-pad", "time-fmt"]


def _patch(path: str, old: str, new: str) -> str:
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,3 @@\n def f():\n"
            f"-    {old}\n+    {new}\n     return x\n")


def make_pack(root: Path, task_ids: list[str] = TASK_IDS) -> Path:
    """A pack folder under ``root`` with the tasks ``task_ids`` (``html-parse`` has the ``HOSTILE`` statement)."""
    pack = root / "label-demo"
    pack.mkdir(parents=True)
    (pack / "pack.yaml").write_text(
        "name: label-demo\nversion: 1\nenvironment:\n  source: {kind: path, path: src}\n"
        "test_command: python -m pytest -rA {test_files}\nlog_parser: pytest\n")
    rows = []
    for n, task_id in enumerate(task_ids):
        statement = HOSTILE if task_id == "html-parse" else f"{task_id}: the function returns the wrong value (#{n})."
        rows.append({"instance_id": task_id, "problem_statement": statement,
                     "patch": _patch(f"src/{task_id}.py", f"x = {n}", f"x = {n + 1}"),
                     "test_patch": _patch(f"tests/test_{task_id}.py", "assert True", f"assert f() == {n + 1}"),
                     "FAIL_TO_PASS": [f"tests/test_{task_id}.py::test_value"],
                     "PASS_TO_PASS": [f"tests/test_{task_id}.py::test_other"]})
    (pack / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return pack


def add_findings(store: Store, pack: str = "label-demo") -> None:
    """A probe finding per task (``html-parse`` flagged, with an HTML-like reason) and an investigator verdict."""
    for task_id in TASK_IDS:
        flagged = task_id == "html-parse"
        store.record_finding(pack, Finding(task_id, "underspecified", "underspecified", flagged, 2 if flagged else 0,
                                           "tests require <b> handling" if flagged else "",
                                           {"missing": ["<script>alert(1)</script>"] if flagged else []}))
    store.record_finding(pack, Finding("html-parse", "investigator", "overly_strict", True, 3,
                                       "the test pins one error message", {"diff": _patch("a.py", "x", "y")}, seed=1))
