"""`packs import swebench`: real SWE-bench Lite records become a pack, byte for byte the same every time.

Pins: the real Lite file (a JSON array) was rejected as "line 1: not valid JSON"; converted by hand,
all 300 tasks "validated" as one pack with one environment and nothing warned.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalharness.errors import UserError
from evalharness.packs import load_pack
from evalharness.sources.swebench import builtin_tables, import_swebench
from support import SHARED, run_cli

LITE = SHARED / "research-data" / "swebench-lite" / "swe-bench-lite.json"
MIRRORS = SHARED / "research-data" / "swebench-repos"
OFFLINE_REPOS = {"sympy/sympy", "pytest-dev/pytest", "sphinx-doc/sphinx", "psf/requests", "pylint-dev/pylint",
                 "pydata/xarray", "mwaskom/seaborn", "pallets/flask"}


def lite() -> list[dict]:
    if not LITE.is_file():
        pytest.skip(f"SWE-bench Lite records not found at {LITE} (see ../shared/research-data/SOURCES.md)")
    return json.loads(LITE.read_text())


def test_all_300_lite_records_import_with_one_command_and_every_task_is_accounted_for(tmp_path):
    records = lite()
    out = tmp_path / "lite"
    done = run_cli("packs", "import", "swebench", str(LITE), "--out", str(out), cwd=tmp_path)
    assert "300 tasks of 12 repositories" in done.stdout
    pack = load_pack(out)
    assert len(pack.tasks) == len(records) == 300
    report = json.loads((out / "import-report.json").read_text())
    without = report["without_recipe"]
    assert report["tasks"] == 300 and report["with_recipe"] + len(without) == 300
    for task in pack.tasks:  # every task: a recipe (an environment to build) or a reason, never neither
        problem = pack.recipe_problem(task)
        assert (problem is None) == (task.instance_id not in without)
        if problem is None:
            spec = pack.spec_for(task)
            assert spec.environment is not None and spec.test_command and spec.log_parser
    # every task of the 8 repositories with offline mirrors has a recipe
    offline = [t for t in pack.tasks if t.repo in OFFLINE_REPOS]
    assert len(offline) == 134  # SOURCES.md says 140; its own table sums to 134 (77+17+16+6+6+5+4+3)
    assert [t.instance_id for t in offline if t.instance_id in without] == []


def test_fields_survive_import_exactly(tmp_path):
    records = {r["instance_id"]: r for r in lite()}
    pack = load_pack(import_swebench(str(LITE), tmp_path / "p") and tmp_path / "p")
    for task in pack.tasks:
        record = records[task.instance_id]
        assert task.FAIL_TO_PASS == json.loads(record["FAIL_TO_PASS"])  # JSON-encoded strings in the file
        assert task.PASS_TO_PASS == json.loads(record["PASS_TO_PASS"])
        for name in ("repo", "base_commit", "patch", "test_patch", "problem_statement", "hints_text", "version",
                     "environment_setup_commit", "created_at"):
            assert getattr(task, name) == record[name], (task.instance_id, name)


def test_import_is_deterministic_and_loads_jsonl_and_parquet_the_same(tmp_path):
    records = lite()[:40]
    array = tmp_path / "part.json"
    array.write_text(json.dumps(records))
    lines = tmp_path / "part.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in records))
    parquet = tmp_path / "part.parquet"
    import pandas as pd

    pd.DataFrame(records).to_parquet(parquet)
    packs = {}
    for source in (array, lines, parquet):
        for attempt in range(2 if source is array else 1):
            out = tmp_path / f"{source.suffix[1:]}-{attempt}"
            import_swebench(str(source), out, name="part")
            packs[(source.suffix, attempt)] = out
    first = (packs[(".json", 0)] / "tasks.jsonl").read_bytes()
    assert (packs[(".json", 1)] / "tasks.jsonl").read_bytes() == first
    assert (packs[(".json", 1)] / "pack.yaml").read_bytes() == (packs[(".json", 0)] / "pack.yaml").read_bytes()
    assert (packs[(".jsonl", 0)] / "tasks.jsonl").read_bytes() == first
    assert (packs[(".parquet", 0)] / "tasks.jsonl").read_bytes() == first
    recipes = sorted(p.name for p in (packs[(".json", 0)] / "recipes").iterdir())
    assert recipes == sorted(p.name for p in (packs[(".parquet", 0)] / "recipes").iterdir())


def test_extra_fields_of_other_exports_go_to_metadata(tmp_path):
    record = dict(lite()[0], difficulty="15 min - 1 hour", FAIL_TO_PASS=["a (b.C)"], PASS_TO_PASS=[])
    source = tmp_path / "verified.jsonl"
    source.write_text(json.dumps(record) + "\n")
    pack = load_pack(import_swebench(str(source), tmp_path / "v") and tmp_path / "v")
    assert pack.tasks[0].metadata["difficulty"] == "15 min - 1 hour"
    assert pack.tasks[0].FAIL_TO_PASS == ["a (b.C)"]  # lists, not only JSON strings


def test_bad_records_are_named_and_nothing_is_written(tmp_path):
    records = lite()[:5]
    records[1] = {k: v for k, v in records[1].items() if k != "base_commit"}
    records[3] = dict(records[3], FAIL_TO_PASS="[not json")
    records.append(dict(records[0]))
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(records))
    with pytest.raises(UserError) as err:
        import_swebench(str(source), tmp_path / "bad")
    text = str(err.value) + (err.value.hint or "")
    assert "3 of 6 records" in text
    assert f"record 1 ({records[1]['instance_id']}): missing base_commit" in text
    assert f"record 3 ({records[3]['instance_id']}): FAIL_TO_PASS" in text
    assert f"record 5 ({records[0]['instance_id']}): duplicate of record 0" in text
    assert not (tmp_path / "bad").exists()


def test_unknown_sources_and_a_full_folder_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        import_swebench(str(tmp_path / "nothing.json"), tmp_path / "out")
    odd = tmp_path / "records.csv"
    odd.write_text("a,b\n")
    with pytest.raises(UserError, match="unknown file type"):
        import_swebench(str(odd), tmp_path / "out")
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty"):
        import_swebench(str(odd), full)
    assert (full / "keep.txt").read_text() == "mine"


def test_user_tables_replace_builtin_ones_and_add_repositories(tmp_path):
    records = [r for r in lite() if r["repo"] in ("sympy/sympy", "django/django")][:60]
    source = tmp_path / "some.json"
    source.write_text(json.dumps(records))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "sympy.yaml").write_text(
        "repo: sympy/sympy\nurl: https://example.invalid/sympy.git\n"
        "defaults: {python: '3.11', test_command: 'bin/test {test_files}', log_parser: sympy}\n"
        "versions: {'1.1': {}}\nunsupported: {'1.0': too old for us}\n")
    pack = load_pack(import_swebench(str(source), tmp_path / "p", recipes=mine) and tmp_path / "p")
    sympy = [t for t in pack.tasks if t.repo == "sympy/sympy"]
    assert sympy
    for task in sympy:
        problem = pack.recipe_problem(task)
        if task.version == "1.1":
            assert problem is None and pack.spec_for(task).environment.python == "3.11"
        elif task.version == "1.0":
            assert problem == "too old for us"
        else:
            assert problem.startswith("no recipe for sympy/sympy version")


def test_builtin_tables_load_and_attribute_their_facts():
    from evalharness.packs import load_tables

    tables = load_tables(builtin_tables())
    assert "sympy/sympy" in tables
    for table in tables.values():
        assert table.source, f"{table.repo}: say where the facts come from"
        for version in table.versions:
            recipe = table.recipe(version)
            assert not isinstance(recipe, str), f"{table.repo} {version}: {recipe}"
            assert recipe.python in (None, "3.9", "3.11", "3.13"), f"{table.repo} {version}: no base ships it"


def test_mirror_is_used_when_it_holds_the_repository(tmp_path, monkeypatch):
    records = [r for r in lite() if r["repo"] == "sympy/sympy"][:3]
    source = tmp_path / "s.json"
    source.write_text(json.dumps(records))
    if not MIRRORS.is_dir():
        pytest.skip(f"mirrors not found at {MIRRORS}")
    pack = load_pack(import_swebench(str(source), tmp_path / "p", repo_mirror=MIRRORS) and tmp_path / "p")
    task = pack.tasks[0]
    assert pack.spec_for(task).environment.source.url == str(MIRRORS.resolve() / "sympy__sympy.git")
    assert pack.spec_for(task).environment.source.ref == task.environment_setup_commit
    monkeypatch.setenv("EVALHARNESS_REPO_MIRROR", str(tmp_path / "elsewhere"))
    fresh = load_pack(tmp_path / "p")
    assert fresh.spec_for(task).environment.source.url == "https://github.com/sympy/sympy.git"


def test_a_hub_name_that_cannot_be_reached_is_a_user_error_with_a_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # as on a machine without the hub; fails fast instead of retrying
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(UserError) as err:
        import_swebench("princeton-nlp/SWE-bench_Lite", tmp_path / "out")
    assert "cannot load princeton-nlp/SWE-bench_Lite" in err.value.message
    assert "download the dataset and give the file" in (err.value.hint or "")
    assert not (tmp_path / "out").exists()


def test_django_labels_from_test_files_name_the_modules_of_the_listed_tests():
    """{test_modules}: Django's runner takes dotted labels; each listed test's module must be among them."""
    import re

    from evalharness.grading.grade import test_modules
    from evalharness.sources.swebench import to_task

    checked = 0
    for record in lite():
        if record["repo"] != "django/django":
            continue
        task = to_task(record)
        labels = test_modules(task.test_files)
        for test in task.FAIL_TO_PASS:
            match = re.match(r"^\w+ \(([\w.]+)\)$", test)
            if match:
                module = match.group(1).rsplit(".", 1)[0]
                assert any(module == label or module.startswith(label + ".") for label in labels), (test, labels)
                checked += 1
    assert checked > 100


def test_a_hand_converted_benchmark_in_a_one_environment_pack_gets_a_warning(tmp_path, tinypack_copy):
    records = [r for r in lite() if r["repo"] in ("sympy/sympy", "psf/requests")][:20]
    (tinypack_copy / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = run_cli("packs", "validate", str(tinypack_copy), cwd=tmp_path)
    assert "warning:" in done.stderr and "(repo, version) pairs but the pack has one environment" in done.stderr
