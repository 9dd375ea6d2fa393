"""`evalharness audit` through the CLI where no engine is needed: --no-docker runs the pure probes and writes
the audit, Docker probes say skipped (never clean), bad input is one clear error, `audit report` renders it."""

from __future__ import annotations

import json

from support import QUICKSTART, run_cli


def test_a_no_docker_audit_writes_findings_and_a_report(tmp_path):
    done = run_cli("audit", str(QUICKSTART), "--no-docker", "--probe", "leak", "--probe", "mutants", cwd=tmp_path)
    assert "[8/8]" in done.stderr
    audit = json.loads((tmp_path / "audits" / "quickstart" / "audit.json").read_text())
    assert audit["per_probe"]["leak"]["status"] == {"ok": 8}
    assert audit["per_probe"]["mutants"]["status"] == {"skipped": 8}  # no engine: not a clean bill
    assert audit["flagged"] == 0 and audit["broken_fraction"]["method"] == "flag-share"
    html = run_cli("audit", "report", str(QUICKSTART), "--format", "html", "-o", str(tmp_path / "a.html"),
                   cwd=tmp_path)
    assert "wrote" in html.stdout and "boltons-strutils-parse-int-list" in (tmp_path / "a.html").read_text()
    md = run_cli("audit", "report", str(QUICKSTART), "--format", "md", cwd=tmp_path).stdout
    assert "## Probes" in md and "| leak |" in md


def test_bad_input_is_one_clear_error(tmp_path):
    probe = run_cli("audit", str(QUICKSTART), "--no-docker", "--probe", "nosuch", cwd=tmp_path, check=False)
    assert probe.returncode == 1 and "no probe nosuch" in probe.stderr
    task = run_cli("audit", str(QUICKSTART), "--no-docker", "--task", "nope", cwd=tmp_path, check=False)
    assert task.returncode == 1 and "no task nope" in task.stderr
    model = run_cli("audit", str(QUICKSTART), "--no-docker", "-m", "openai/x", cwd=tmp_path, check=False)
    assert model.returncode == 1 and "--investigator" in model.stderr
    report = run_cli("audit", "report", str(QUICKSTART), cwd=tmp_path, check=False)
    assert report.returncode == 1 and "error:" in report.stderr
    runs = run_cli("audit", str(QUICKSTART), "--no-docker", "--runs", "nope", cwd=tmp_path, check=False)
    assert runs.returncode == 1 and "no run 'nope'" in runs.stderr


def test_a_report_with_two_labels_says_too_few_labels_in_every_format(tmp_path):
    """Two labelled tasks once gave kappa 1.00 [1.00, 1.00]; below the documented minimum there is no kappa."""
    from evalharness.packs import load_pack

    ids = [t.instance_id for t in load_pack(QUICKSTART).tasks][:2]
    run_cli("audit", str(QUICKSTART), "--no-docker", "--probe", "leak", cwd=tmp_path)
    (tmp_path / "labels.csv").write_text("task_id,annotator,broken,family,severity,note\n"
                                         f"{ids[0]},alice,false,,0,\n{ids[1]},alice,false,,0,\n")
    run_cli("audit", "label", "import", str(QUICKSTART), "labels.csv", cwd=tmp_path)
    out = {fmt: run_cli("audit", "report", str(QUICKSTART), "--format", fmt, cwd=tmp_path).stdout
           for fmt in ("table", "md", "html")}
    for fmt, text in out.items():
        assert "too few labels: 2 < 30" in text.replace("&lt;", "<") and "overall flag" in text, fmt
        assert "1.00 [1.00, 1.00]" not in text and "nan" not in text.lower().replace("nano", ""), fmt
    assert "| overall flag (any probe, severity >= 2) | 0 | 8 | of 8 tasks | 100.0% | too few labels" in out["md"]
    report = json.loads(run_cli("audit", "report", str(QUICKSTART), "--format", "json", cwd=tmp_path).stdout)
    vs = report["pipeline_vs_humans"]
    assert vs["too_few"] is True and vs["kappa"] != vs["kappa"]  # NaN: no kappa
    assert vs["n"] == 2 and vs["always_broken"] == 0.0 and report["min_agreement_n"] == 30


def test_the_mutants_cap_is_set_from_the_command_line(tmp_path):
    """Issue 27: the cap (12 mutants per task, each one grading run) could not be set from the CLI."""
    from evalharness.audit.mutants import DEFAULT_CAP
    from evalharness.packs import load_pack

    task = load_pack(QUICKSTART).tasks[0].instance_id
    run_cli("audit", str(QUICKSTART), "--no-docker", "--probe", "mutants", "--task", task, "--mutants-cap", "3",
            cwd=tmp_path)
    found = json.loads((tmp_path / "audits" / "quickstart" / "findings" / f"{task}.json").read_text())["findings"]
    [mutants] = [f for f in found if f["probe"] == "mutants"]
    assert mutants["evidence"]["cap"] == 3 and mutants["status"] == "skipped"  # no engine: skipped, cap kept
    refused = run_cli("audit", str(QUICKSTART), "--no-docker", "--mutants-cap", "0", cwd=tmp_path, check=False)
    assert refused.returncode == 2 and "--mutants-cap" in refused.stderr
    helped = run_cli("audit", "run", "--help", cwd=tmp_path).stdout
    assert f"each one grading run [default: {DEFAULT_CAP}]" in " ".join(helped.split())
