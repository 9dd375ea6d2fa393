"""`evalharness run` with a bad option value: one error line naming the option, exit 1, no traceback,
and nothing started (no run folder, no database row).

Pins: `--disk abc` ended in a pydantic ValidationError traceback.
"""

from __future__ import annotations

import pytest
from support import QUICKSTART, run_cli


@pytest.mark.parametrize("option, value, named", [("--disk", "abc", "--disk"), ("--disk", "0", "--disk"),
                                                  ("--max-cost", "-1", "--max-cost")])
def test_a_bad_value_is_named_and_nothing_starts(tmp_path, option, value, named):
    done = run_cli("run", "--pack", str(QUICKSTART), "--harness", "oracle", option, value, "--runs-dir",
                   str(tmp_path / "runs"), cwd=tmp_path, check=False)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and f"error: invalid run options: {named}:" in done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
