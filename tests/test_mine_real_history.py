"""`packs mine` on a real history: one hour of python-humanize's (two squash-merged fixes), in Docker.

Pins: a miner whose environment detection, statements or discovery only worked on repositories built
in a test. The window holds two commits that change `src/humanize/` and `tests/`; both must become
validated tasks whose statements are their commit messages without the `(#N)` suffix.
"""

from __future__ import annotations

import json

import pytest

from support import SHARED, run_cli

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.long]  # default tier: test_mine_end_to_end.py

HUMANIZE = SHARED / "research-data" / "mining-repos" / "python-humanize__humanize.git"


@pytest.mark.skipif(not HUMANIZE.is_dir(), reason=f"needs the shared mining repositories ({HUMANIZE} is absent)")
def test_an_hour_of_humanize_gives_two_validated_tasks(tmp_path, base_image):
    out = tmp_path / "humanize"
    done = run_cli("packs", "mine", "--repo", str(HUMANIZE), "--out", str(out), "--since", "2026-06-30T15:00:00Z",
                   "--until", "2026-06-30T16:00:00Z", "--discover-reruns", "1", "--reruns", "2", "-j", "2",
                   cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "mining-report.json").read_text())
    assert [(c["commit"][:10], c["verdict"]) for c in report["candidates"]] == [("823ad6096e", "ok"),
                                                                                 ("7574e0cc37", "ok")]
    tasks = {t["instance_id"]: t for t in map(json.loads, (out / "tasks.jsonl").read_text().splitlines())}
    first = tasks["python-humanize__humanize-823ad6096e1e"]
    assert first["problem_statement"].startswith("Fix `naturalsize()` rounding rollover at unit boundaries")
    assert "(#3" not in first["problem_statement"].splitlines()[0]
    assert first["FAIL_TO_PASS"] and all(t.startswith("tests/") for t in first["FAIL_TO_PASS"] + first["PASS_TO_PASS"])
    assert "src/humanize/" in first["patch"] and "tests/" not in first["patch"]
    assert first["created_at"] == "2026-06-30T15:36:42+00:00"
