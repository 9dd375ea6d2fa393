"""`evalharness audit` on the built-in pack, through the CLI and real Docker: validated, run by two stored
configurations, audited with every probe (the two that read only added test lines say skipped: the pack's
tests sit at base); it names no defect, the report gains an audit section, and a
second audit runs nothing again.

Pins: an audit of a pack known to be sound must not invent defects (a false alarm on every task would make
the broken fraction meaningless), and a resumed audit must not repeat hours of mutant grading.
"""

from __future__ import annotations

import json
import shutil

import pytest
from support import QUICKSTART, run_cli

from evalharness.store import Store, database_url

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_the_quickstart_pack_audits_clean(tmp_path, base_image):
    pack = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, pack, ignore=shutil.ignore_patterns("validation"))
    run_cli("packs", "validate", str(pack), "--run", "--reruns", "1", cwd=tmp_path)
    run_cli("run", "--pack", str(pack), "-H", "oracle", "-H", "null", "--seeds", "3", "-j", "2", "--format", "json",
            cwd=tmp_path)
    run_id = next(p.name for p in (tmp_path / "runs").iterdir() if p.is_dir())

    done = run_cli("audit", str(pack), "--runs", run_id, "-j", "2", cwd=tmp_path)
    audit = json.loads((tmp_path / "audits" / "quickstart" / "audit.json").read_text())
    flagged = {t: f["reasons"] for t, f in audit["per_task"].items() if f["flagged"]}
    assert flagged == {}, f"the quickstart pack is sound, the audit says otherwise: {flagged}"
    assert audit["audited"] == audit["tasks"] == 8
    statuses = {p: s["status"] for p, s in audit["per_probe"].items()}
    for probe in ("validity", "leak", "environment", "universal", "mutants"):
        assert statuses.get(probe) == {"ok": 8}, f"{probe}: {statuses.get(probe)}"
    for probe in ("underspecified", "strict_literals"):  # injected bugs: the tests sit at base, no test patch
        assert statuses.get(probe) == {"skipped": 8}, f"{probe}: {statuses.get(probe)}"
    assert "[8/8]" in done.stderr
    assert (tmp_path / "audits" / "quickstart" / "audit.html").read_text().startswith("<!doctype html>")
    assert len(list((tmp_path / "audits" / "quickstart" / "findings").glob("*.json"))) == 8

    report = run_cli("report", run_id, cwd=tmp_path).stdout
    assert "Audit of quickstart" in report and "clean tasks" in report

    store = Store(database_url(tmp_path / "runs" / "evalharness.db"))
    def settled():  # skipped findings are asked again by design (cheap); the others must be kept
        return {(r["task_id"], r["probe"]): r["created_at"] for r in store.findings("quickstart")
                if r["status"] != "skipped"}

    before = settled()
    run_cli("audit", str(pack), "--runs", run_id, cwd=tmp_path)
    assert settled() == before and len(before) == 8 * 5  # every answered finding kept: nothing ran again
    stored = json.loads((tmp_path / "audits" / "quickstart" / "audit.json").read_text())
    assert stored["per_task"] == audit["per_task"]
