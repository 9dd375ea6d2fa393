"""`packs import harbor` through the CLI (no container runs): every shared task imported or listed with its reason,
dataset manifests, fields not honoured named, the pack's hash covering task files, overlays and base map."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalharness.packs import load_pack
from support import REPO, SHARED, run_cli

TASKS = SHARED / "research-data" / "harbor" / "tasks"
OVERLAYS = REPO / "tasks" / "harbor-overlays"
needs_tasks = pytest.mark.skipif(not TASKS.is_dir(), reason=f"{TASKS} absent (shared research data)")
UNSUPPORTED = {"cookbook-mcp-tools": "docker-compose", "cookbook-multi-container": "docker-compose",
               "cookbook-multi-step": "multi-step", "swebenchpro-v2-PARTIAL-vuls-457a3a96": "docker_image",
               "tb3tpl-fail-static-gpu-types": "GPUs"}


@needs_tasks
def test_every_shared_task_imports_or_is_named_with_its_reason(tmp_path):
    out = tmp_path / "hb"
    done = run_cli("packs", "import", "harbor", str(TASKS), "--out", str(out), "--overlays", str(OVERLAYS),
                   "--base-map", str(OVERLAYS / "base-map.yaml"), cwd=tmp_path)
    report = json.loads((out / "import-report.json").read_text())
    assert set(report["skipped"]) == set(UNSUPPORTED)
    for task, word in UNSUPPORTED.items():
        assert word in report["skipped"][task] and f"not imported: {task}: " in done.stdout
    assert len(report["imported"]) == 16 and set(report["imported"]) | set(UNSUPPORTED) == {p.name for p in TASKS.iterdir()}
    assert "environment.network (public)" in " ".join(report["ignored_fields"]["tb3tpl-fail-static-pip-pinning"])
    pack = load_pack(out)
    assert pack.spec.kind == "harbor" and len(pack.tasks) == 16
    assert (out / "overlays" / "cookbook-simple-task" / "10-offline-verifier.patch").is_file()
    assert (out / "harbor-tasks" / "cookbook-simple-task" / "tests" / "test.sh").read_bytes() \
        == (TASKS / "cookbook-simple-task" / "tests" / "test.sh").read_bytes()  # the task copied as published


@needs_tasks
def test_without_the_map_and_overlays_the_reasons_name_the_base_and_the_registry_copy(tmp_path):
    done = run_cli("packs", "import", "harbor", str(TASKS), "--out", str(tmp_path / "hb"), cwd=tmp_path)
    assert "not imported: cookbook-simple-task: environment/Dockerfile: base image ubuntu:24.04 cannot be pulled" \
        in done.stdout
    assert "COPY --from=ghcr.io/astral-sh/uv:0.8.15 reads a registry image" in done.stdout
    assert "tb3tpl-fail-static-pip-pinning" in json.loads((tmp_path / "hb" / "import-report.json").read_text())["imported"]


@needs_tasks
def test_a_dataset_manifest_imports_the_tasks_beside_it_and_names_the_absent(tmp_path):
    src = tmp_path / "ds"
    shutil.copytree(TASKS / "tb3tpl-fail-static-pip-pinning", src / "tb3tpl-fail-static-pip-pinning")
    (src / "dataset.toml").write_text('[dataset]\nname = "d"\n[[tasks]]\nname = "org/tb3tpl-fail-static-pip-pinning"\n'
                                      '[[tasks]]\nname = "org/elsewhere"\n')
    done = run_cli("packs", "import", "harbor", str(src / "dataset.toml"), "--out", str(tmp_path / "hb"), cwd=tmp_path)
    assert "not imported: org/elsewhere: not present beside dataset.toml" in done.stdout
    assert [t.instance_id for t in load_pack(tmp_path / "hb").tasks] == ["tb3tpl-fail-static-pip-pinning"]


@needs_tasks
def test_the_hash_covers_task_files_overlays_and_the_base_map(tmp_path):
    out = tmp_path / "hb"
    run_cli("packs", "import", "harbor", str(TASKS / "cookbook-simple-task"), "--out", str(out), "--overlays",
            str(OVERLAYS), "--base-map", str(OVERLAYS / "base-map.yaml"), cwd=tmp_path)
    first = load_pack(out).content_hash
    report = _report_hash(out)  # a validation report's: stale once the task, its overlays or the base map change
    for path in (out / "overlays" / "cookbook-simple-task" / "10-offline-verifier.patch", out / "base-map.yaml",
                 out / "harbor-tasks" / "cookbook-simple-task" / "tests" / "test_state.py"):
        before = path.read_bytes()
        path.write_bytes(before + b"\n")
        assert load_pack(out).content_hash != first, path
        assert _report_hash(out) != report, path
        path.write_bytes(before)
    assert load_pack(out).content_hash == first and _report_hash(out) == report


def _report_hash(pack_dir) -> str:
    from evalharness.validation import task_hash

    pack = load_pack(pack_dir)
    return task_hash(pack, pack.tasks[0])


def test_bad_input_is_named(tmp_path):
    done = run_cli("packs", "import", "harbor", str(tmp_path), "--out", str(tmp_path / "o"), cwd=tmp_path, check=False)
    assert done.returncode != 0 and "not a Harbor task directory" in done.stderr
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "task.toml").write_text("[environment]\ncpus = 'many'\n")
    (tmp_path / "t" / "instruction.md").write_text("x")
    done = run_cli("packs", "import", "harbor", str(tmp_path / "t"), "--out", str(tmp_path / "o"), cwd=tmp_path,
                   check=False)
    assert done.returncode != 0 and "environment.cpus" in done.stderr
