"""A run folder is enough to grade again without Docker, and a changed verdict is reported.

Pins: a parser fix that silently changed historical results because old logs were not kept.
"""

from __future__ import annotations

import pytest
from support import TINYPACK, run_cli

pytestmark = pytest.mark.docker


def test_regrade_agrees_then_catches_a_changed_verdict(tmp_path, base_image):
    run_cli("run", "-p", str(TINYPACK), "-H", "oracle", "-H", "null", "--format", "json", cwd=tmp_path)
    run_id = next(p.name for p in (tmp_path / "runs").iterdir() if p.is_dir())
    same = run_cli("grade", run_id, cwd=tmp_path)
    assert "re-graded 4 trial(s): 4 unchanged, 0 changed" in same.stdout
    records = next((tmp_path / "runs" / run_id).glob("tinypack/tiny-clamp/oracle/none/seed-0/results.jsonl"))
    original = records.read_bytes()
    # the stored records now report a different test: the required one is missing
    records.write_bytes(original.replace(b"::test_clamp_high_edge", b"::test_renamed")
                        .replace(b'"name":"test_clamp_high_edge"', b'"name":"test_renamed"'))
    changed = run_cli("grade", run_id, cwd=tmp_path, check=False)
    assert changed.returncode == 1
    assert "tinypack/tiny-clamp/oracle/none/seed-0: resolved -> unresolved" in changed.stdout
    # a record without the run's nonce is caught on re-grading too
    records.write_bytes(original + b'{"t": "report", "id": "x", "when": "call", "outcome": "passed"}\n')
    forged = run_cli("grade", run_id, cwd=tmp_path, check=False)
    assert "tinypack/tiny-clamp/oracle/none/seed-0: resolved -> tampered" in forged.stdout
    records.write_bytes(original)
    assert "4 unchanged" in run_cli("grade", run_id, cwd=tmp_path).stdout
