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
    junit = next((tmp_path / "runs" / run_id).glob("tinypack/tiny-clamp/oracle/none/seed-0/junit.xml"))
    # the stored XML now reports a different test: the required one is missing
    junit.write_text(junit.read_text().replace('name="test_clamp_high_edge" ', 'name="test_renamed" ', 1))
    changed = run_cli("grade", run_id, cwd=tmp_path, check=False)
    assert changed.returncode == 1
    assert "tinypack/tiny-clamp/oracle/none/seed-0: resolved -> unresolved" in changed.stdout
    # the text parser reads the same logs and agrees with the stored verdicts
    text = run_cli("grade", run_id, "--log-parser", "pytest", cwd=tmp_path, check=False)
    assert "4 unchanged" in text.stdout
