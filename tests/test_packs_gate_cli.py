"""`packs gate` without Docker (the pure checks) through the real CLI, on a copy of the quickstart pack: a table
and a report per task, tasks.jsonl rewritten only with --write, a rejected task left out only with --drop.

The coverage side needs Docker: tests/test_coverage_gate_docker.py.
"""

from __future__ import annotations

import json
import shutil

from support import QUICKSTART, run_cli


def _pack(tmp_path):
    pack = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, pack)
    return pack


def test_gate_prints_a_table_and_writes_a_report_and_leaves_tasks_as_they_are(tmp_path):
    pack = _pack(tmp_path)
    before = (pack / "tasks.jsonl").read_bytes()
    ids = [json.loads(line)["instance_id"] for line in before.decode().splitlines()]
    done = run_cli("packs", "gate", str(pack), cwd=tmp_path)
    assert f"[{len(ids)}/{len(ids)}]" in done.stdout and done.stdout.count(" pass ") == len(ids)
    assert (pack / "tasks.jsonl").read_bytes() == before
    report = json.loads((pack / "gate-report.json").read_text())
    assert [t["instance_id"] for t in report["tasks"]] == ids and report["totals"]["passed"] == len(ids)
    assert report["coverage"] is False
    assert {c["name"] for c in report["tasks"][0]["gate"]["checks"]} >= {"gold_too_large", "bare_title"}


def test_a_rejected_task_is_reported_and_dropped_only_with_write_and_drop(tmp_path):
    pack = _pack(tmp_path)
    ids = [json.loads(line)["instance_id"] for line in (pack / "tasks.jsonl").read_text().splitlines()]
    done = run_cli("packs", "gate", str(pack), "--max-gold-bytes", "1", cwd=tmp_path, check=False)
    assert done.returncode == 1 and f"0/{len(ids)} passed, {len(ids)} rejected (gold_too_large {len(ids)})" \
        in done.stdout
    assert len((pack / "tasks.jsonl").read_text().splitlines()) == len(ids)

    only = run_cli("packs", "gate", str(pack), "--task", ids[0], "--max-gold-bytes", "1", "--write", cwd=tmp_path,
                   check=False)
    assert only.returncode == 1
    tasks = [json.loads(line) for line in (pack / "tasks.jsonl").read_text().splitlines()]
    assert len(tasks) == len(ids) and tasks[0]["metadata"]["gate"]["passed"] is False
    assert "gate" not in tasks[1].get("metadata", {})  # not gated this time: left as it was

    run_cli("packs", "gate", str(pack), "--task", ids[0], "--max-gold-bytes", "1", "--write", "--drop",
            cwd=tmp_path, check=False)
    assert [json.loads(line)["instance_id"] for line in (pack / "tasks.jsonl").read_text().splitlines()] == ids[1:]
    assert len((pack / "tasks.jsonl.bak").read_text().splitlines()) == len(ids)


def test_bad_requests_get_a_clear_error(tmp_path):
    pack = _pack(tmp_path)
    done = run_cli("packs", "gate", str(pack), "--drop", cwd=tmp_path, check=False)
    assert done.returncode == 1 and "--drop needs --write" in done.stderr
    done = run_cli("packs", "gate", str(pack), "--task", "nope", cwd=tmp_path, check=False)
    assert done.returncode == 1 and "no task nope" in done.stderr


def test_a_mined_task_recorded_as_a_squash_of_three_messages_is_rejected(tmp_path):
    pack = _pack(tmp_path)
    lines = (pack / "tasks.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["metadata"] = {**first.get("metadata", {}), "statement_source": "merged commits", "squashed_messages": 3}
    (pack / "tasks.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    done = run_cli("packs", "gate", str(pack), cwd=tmp_path, check=False)
    assert done.returncode == 1 and f"{len(lines) - 1}/{len(lines)} passed, 1 rejected (squashed_branch 1)" \
        in done.stdout, done.stdout
