"""`evalharness audit PACK --no-docker` completes on the whole imported SWE-bench Lite pack (300 tasks, 2 of them
without an environment recipe), through the CLI: it once stopped at task 152 on astropy__astropy-6938."""

from __future__ import annotations

import json

import pytest

from support import SHARED, run_cli

LITE = SHARED / "research-data" / "swebench-lite" / "swe-bench-lite.json"
MIRRORS = SHARED / "research-data" / "swebench-repos"


@pytest.mark.long  # about 4 minutes on 2 shared cores (git grep over the mirrors for 134 tasks)
@pytest.mark.slow
def test_a_no_docker_audit_of_all_of_swebench_lite_completes(tmp_path):
    if not LITE.is_file() or not MIRRORS.is_dir():
        pytest.skip(f"SWE-bench Lite records or mirrors not found under {SHARED} (see research-data/SOURCES.md)")
    run_cli("packs", "import", "swebench", str(LITE), "--out", "lite", "--repo-mirror", str(MIRRORS), cwd=tmp_path)
    report = json.loads((tmp_path / "lite" / "import-report.json").read_text())
    done = run_cli("audit", "lite", "--no-docker", "--workers", "2", cwd=tmp_path, timeout=1500)
    assert "[300/300]" in done.stderr and "error:" not in done.stderr
    audit = json.loads((tmp_path / "audits" / "lite" / "audit.json").read_text())
    assert audit["tasks"] == 300 and audit["audited"] == 300
    without = audit["no_environment"]
    assert len(without) == 2 and "astropy__astropy-6938" in without
    assert all("astropy 1.3" in reason for reason in without.values())
    assert set(without) == set(report["without_recipe"])  # exactly the tasks the import found no recipe for
    findings = json.loads((tmp_path / "audits" / "lite" / "findings" / "astropy__astropy-6938.json").read_text())
    status = {f["probe"]: f["status"] for f in findings["findings"]}
    assert status["validity"] == status["mutants"] == "skipped" and status["leak"] == status["strict_literals"] == "ok"
    assert audit["per_probe"]["leak"]["status"] == {"ok": 300}
