"""A malformed pack gets one clear error naming the file, the line or task, and the field; nothing runs.

Pins: a typo in a pack used to surface as a KeyError deep inside a worker thread.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalharness.errors import TaskPackError
from evalharness.packs import load_pack

from support import run_cli


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_tiny_pack_is_valid(tinypack_copy):
    pack = load_pack(tinypack_copy)
    assert [t.instance_id for t in pack.tasks] == ["tiny-clamp", "tiny-mean-empty"]
    assert len(pack.content_hash) == 64


def test_missing_field_names_file_line_task_and_field(tinypack_copy):
    tasks = tinypack_copy / "tasks.jsonl"
    rows = _lines(tasks)
    del rows[1]["FAIL_TO_PASS"]
    _write(tasks, rows)
    with pytest.raises(TaskPackError) as err:
        load_pack(tinypack_copy)
    text = str(err.value)
    assert str(tasks) in text and "line 2" in text and "tiny-mean-empty" in text
    assert "FAIL_TO_PASS: Field required" in text


def test_an_empty_task_file_says_how_to_add_tasks(tinypack_copy):
    (tinypack_copy / "tasks.jsonl").write_text("")
    with pytest.raises(TaskPackError) as err:
        load_pack(tinypack_copy)
    assert "holds no tasks" in str(err.value) and "packs add-task" in err.value.hint


def test_bad_json_line_names_the_line(tinypack_copy):
    tasks = tinypack_copy / "tasks.jsonl"
    tasks.write_text(tasks.read_text() + '{"instance_id": "broken", \n')
    with pytest.raises(TaskPackError) as err:
        load_pack(tinypack_copy)
    assert f"{tasks} line 3: not valid JSON" in str(err.value)


def test_unknown_log_parser_lists_known_ones(tinypack_copy):
    """The pack is plain data; the grader owns the parser names and checks them (validate, run)."""
    from evalharness.grading.parsers import check_names

    manifest = tinypack_copy / "pack.yaml"
    manifest.write_text(manifest.read_text().replace("log_parser: junit", "log_parser: nosuchparser"))
    pack = load_pack(tinypack_copy)
    with pytest.raises(TaskPackError) as err:
        check_names(pack.log_parsers(), f"task pack {manifest}")
    text = str(err.value)
    assert str(manifest) in text and "log_parser" in text and "nosuchparser" in text and "junit" in text
    done = run_cli("packs", "validate", str(tinypack_copy), cwd=tinypack_copy, check=False)
    assert done.returncode == 1 and "nosuchparser" in done.stderr and "junit" in done.stderr


def test_packs_do_not_import_the_grader():
    import ast

    tree = ast.parse((Path(__file__).resolve().parents[1] / "evalharness" / "packs.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not any(m.startswith("evalharness.grading") for m in imported)


def test_negative_timeout_names_the_field_and_value(tinypack_copy):
    manifest = tinypack_copy / "pack.yaml"
    manifest.write_text(manifest.read_text().replace("tests_s: 60", "tests_s: -5"))
    with pytest.raises(TaskPackError) as err:
        load_pack(tinypack_copy)
    assert "timeouts.tests_s: Input should be greater than 0 (got -5)" in str(err.value)


def test_duplicate_ids_and_unknown_fields_are_rejected(tinypack_copy):
    tasks = tinypack_copy / "tasks.jsonl"
    rows = _lines(tasks)
    _write(tasks, [rows[0], rows[0]])
    with pytest.raises(TaskPackError, match="duplicate of line 1"):
        load_pack(tinypack_copy)
    _write(tasks, [{**rows[0], "FAIL_TO_PAS": []}])
    with pytest.raises(TaskPackError, match="FAIL_TO_PAS: Extra inputs are not permitted"):
        load_pack(tinypack_copy)


def test_swebench_string_encoded_test_lists_are_accepted(tinypack_copy):
    tasks = tinypack_copy / "tasks.jsonl"
    rows = _lines(tasks)
    rows[0]["FAIL_TO_PASS"] = json.dumps(rows[0]["FAIL_TO_PASS"])
    _write(tasks, rows)
    assert load_pack(tinypack_copy).tasks[0].FAIL_TO_PASS == ["tests/test_calc.py::test_clamp_high_edge"]


def test_cli_prints_one_error_block_without_traceback_and_runs_nothing(tinypack_copy, tmp_path):
    manifest = tinypack_copy / "pack.yaml"
    manifest.write_text(manifest.read_text().replace("tests_s: 60", "tests_s: -5"))
    done = run_cli("run", "--pack", str(tinypack_copy), "--harness", "oracle", cwd=tmp_path, check=False)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: task pack {manifest} is invalid")
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()
