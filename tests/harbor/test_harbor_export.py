"""`packs export harbor` (pure: no Docker): every exported directory loads as a Harbor task with nothing unknown,
carries the pack's timeouts, provenance and test lists, and its verifier decides exactly as the grader does.

Pins: a Harbor task name the registry refuses (Harbor's org/name rule, no '..'), and a shipped verifier that
drifts from ``grading.grade.decide`` (a test whose JUnit status and printed summary disagree counted as passing).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from evalharness.errors import UserError
from evalharness.grading.grade import decide
from evalharness.packs import load_pack
from evalharness.sources.harbor.export.render import NAME_PATTERN, harbor_name
from evalharness.sources.harbor.model import HarborTask
from evalharness.types import TaskSpec
from support import QUICKSTART, REPO, SHARED, TINYPACK, run_cli

LITE = SHARED / "research-data" / "swebench-lite" / "swe-bench-lite.json"
VERIFY = REPO / "evalharness" / "data" / "eh_harbor_verify.py"


def _export(pack: Path, out: Path, *args: str):
    return run_cli("packs", "export", "harbor", str(pack), "--out", str(out), *args, cwd=REPO, timeout=300)


def test_quickstart_exports_as_harbor_tasks_with_its_timeouts_provenance_and_tests(tmp_path):
    pack = load_pack(QUICKSTART)
    done = _export(QUICKSTART, tmp_path / "out")
    assert "8 Harbor task directories" in done.stdout
    for task in pack.tasks:
        folder = tmp_path / "out" / task.instance_id
        loaded = HarborTask.load(folder)
        assert loaded.unknown_fields() == []
        assert NAME_PATTERN.match(loaded.name) and ".." not in loaded.name
        config = loaded.config
        assert config.schema_version == "1.4"
        assert config.environment.network() == "no-network"
        assert config.agent.timeout_sec == pack.spec.timeouts.agent_s and config.agent.user == "agent"
        assert config.verifier.timeout_sec > pack.spec.timeouts.tests_s and config.verifier.separate
        assert config.artifacts == ["/testbed"]  # the work tree: what Harbor copies into the verifier's container
        verifier_image = loaded.verifier_dockerfile.read_text()
        assert verifier_image.startswith(loaded.dockerfile.read_text())
        assert verifier_image.endswith("COPY config.json test.patch test.sh verify.py /tests/\nCOPY lib /tests/lib\n")
        assert config.metadata["evalharness_pack_content_hash"] == pack.content_hash
        assert loaded.instruction.strip() == task.problem_statement.strip()
        assert (folder / "solution" / "gold.patch").read_text() == task.patch
        assert loaded.solve_script is not None and loaded.test_script is not None
        verifier = json.loads((folder / "tests" / "config.json").read_text())
        assert (verifier["FAIL_TO_PASS"], verifier["PASS_TO_PASS"]) == (task.FAIL_TO_PASS, task.PASS_TO_PASS)
        assert verifier["restore"] == task.test_files and verifier["tests_s"] == pack.spec.timeouts.tests_s
        dockerfile = loaded.dockerfile.read_text()
        assert dockerfile.splitlines()[3].startswith("FROM evalharness/base:bookworm-")
        assert "boltons==26.2.0" in dockerfile and "evalharness-rebuild-tree /testbed agent:agent" in dockerfile
        assert (folder / "environment" / "prepare_task.sh").stat().st_mode & 0o111
    assert "**separate** mode" in (tmp_path / "out" / "README.md").read_text()


def test_the_shipped_parsers_import_on_their_own(tmp_path):
    """The verifier ships evalharness's parsers without the package: every module they import travels with them."""
    _export(TINYPACK, tmp_path / "out")
    folder = next(p for p in (tmp_path / "out").iterdir() if p.is_dir())
    code = "import sys; sys.path.insert(0, 'lib'); from evalharness.grading.parsers import PARSERS; print(sorted(PARSERS))"
    done = subprocess.run([sys.executable, "-I", "-c", code], cwd=folder / "tests", capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "'junit'" in done.stdout and "'tap_json'" in done.stdout


def test_a_shared_verifier_runs_in_the_agents_container(tmp_path):
    _export(QUICKSTART, tmp_path / "out", "--verifier", "shared", "--task", "boltons-strutils-parse-int-list")
    loaded = HarborTask.load(tmp_path / "out" / "boltons-strutils-parse-int-list")
    assert loaded.unknown_fields() == [] and loaded.config.verifier.environment_mode == "shared"
    assert loaded.config.artifacts == [] and not (loaded.tests_dir / "Dockerfile").exists()
    assert "**shared** mode" in (tmp_path / "out" / "README.md").read_text()


def test_the_official_base_replaces_the_local_one_and_a_path_source_travels(tmp_path):
    _export(TINYPACK, tmp_path / "out", "--base", "official")
    for folder in sorted((tmp_path / "out").iterdir()):
        if folder.is_dir():
            dockerfile = (folder / "environment" / "Dockerfile").read_text()
            assert "FROM debian:bookworm-slim" in dockerfile and "FROM evalharness/" not in dockerfile
            assert "ADD source.tar /testbed/" in dockerfile and (folder / "environment" / "source.tar").is_file()
            assert "official" not in (tmp_path / "out" / "README.md").read_text().split("## What")[0]


def test_harbor_names_follow_harbors_rule():
    assert harbor_name("quickstart", "boltons-x.y_z") == "evalharness/quickstart__boltons-x.y_z"
    for pack, task in [("_pack", "t"), ("a..b", "t"), ("p", "a..b"), ("p", "t/u")]:
        with pytest.raises(UserError, match="not a valid Harbor task name"):
            harbor_name(pack, task)


def test_unknown_tasks_and_a_full_folder_are_user_errors(tmp_path):
    done = run_cli("packs", "export", "harbor", str(QUICKSTART), "--out", str(tmp_path / "a"), "--task", "nope",
                   cwd=REPO, check=False)
    assert done.returncode == 1 and "has no task 'nope'" in done.stderr
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "keep.txt").write_text("x")
    done = run_cli("packs", "export", "harbor", str(QUICKSTART), "--out", str(tmp_path / "b"), cwd=REPO, check=False)
    assert done.returncode == 1 and "is not empty" in done.stderr
    one = "boltons-strutils-parse-int-list"
    _export(QUICKSTART, tmp_path / "b", "--task", one, "--force")
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["README.md", one, "keep.txt"]


@pytest.mark.skipif(not LITE.is_file(), reason=f"{LITE} absent (shared research data)")
def test_an_imported_swebench_pack_exports_with_each_tasks_recipe(tmp_path):
    records = json.loads(LITE.read_text())
    chosen = [next(r for r in records if r["repo"] == repo) for repo in ("django/django", "sympy/sympy")]
    (tmp_path / "part.json").write_text(json.dumps(chosen))
    run_cli("packs", "import", "swebench", str(tmp_path / "part.json"), "--out", str(tmp_path / "pack"), cwd=REPO)
    _export(tmp_path / "pack", tmp_path / "out")
    for record in chosen:
        folder = tmp_path / "out" / record["instance_id"]
        assert HarborTask.load(folder).unknown_fields() == []
        verifier = json.loads((folder / "tests" / "config.json").read_text())
        assert verifier["log_parser"] == record["repo"].split("/")[0]
        assert (folder / "tests" / "test.patch").read_text() == record["test_patch"]
        assert set(verifier["restore"]) >= {p for p in verifier["test_files"]}
        dockerfile = (folder / "environment" / "Dockerfile").read_text()
        assert f"checkout -q {record['environment_setup_commit']}" in dockerfile
        assert f"evalharness-prepare-task {record['base_commit']}" in dockerfile
        assert tomllib.loads((folder / "task.toml").read_text())["metadata"]["repo"] == record["repo"]


def _verifier():
    spec = importlib.util.spec_from_file_location("eh_harbor_verify", VERIFY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _junit(cases: dict[str, str]) -> str:
    rows = []
    for node, status in cases.items():
        path, name = node.split("::")
        inner = {"passed": "", "failed": "<failure message='x'/>", "xfail": "<skipped type='pytest.xfail'/>"}[status]
        rows.append(f"<testcase classname='{path[:-3].replace('/', '.')}' name='{name}' file='{path}'>{inner}</testcase>")
    return f"<testsuites><testsuite>{''.join(rows)}</testsuite></testsuites>"


def _summary(cases: dict[str, str]) -> str:
    word = {"passed": "PASSED", "failed": "FAILED", "xfail": "XFAIL"}
    return "\n".join(f"{word[s]} {t}" for t, s in cases.items())


@pytest.mark.parametrize("statuses, printed, exit_code, junit", [
    ({"f": "passed", "p": "passed", "x": "xfail"}, None, 0, True),      # resolved (x is XFAIL at base)
    ({"f": "failed", "p": "passed", "x": "xfail"}, None, 1, True),      # a FAIL_TO_PASS test fails
    ({"f": "passed", "p": "passed", "x": "xfail"}, None, 1, True),      # exit code disagrees with the results
    ({"f": "passed", "p": "passed", "x": "xfail"}, {"f": "failed"}, 0, True),  # JUnit rewritten after the summary
    ({"f": "passed", "p": "passed", "x": "xfail"}, None, 2, False),     # no JUnit XML written
])
def test_the_shipped_verifier_decides_as_the_grader(statuses, printed, exit_code, junit):
    ids = {"f": "tests/test_a.py::test_f", "p": "tests/test_a.py::test_p", "x": "tests/test_a.py::test_x"}
    cases = {ids[k]: v for k, v in statuses.items()}
    log = _summary({**cases, **{ids[k]: v for k, v in (printed or {}).items()}})
    xml = _junit(cases) if junit else None
    task = TaskSpec(instance_id="t", problem_statement="p", FAIL_TO_PASS=[ids["f"]], PASS_TO_PASS=[ids["p"], ids["x"]],
                    metadata={"xfail_at_base": [ids["x"]]})
    config = {"log_parser": "junit", "FAIL_TO_PASS": task.FAIL_TO_PASS, "PASS_TO_PASS": task.PASS_TO_PASS,
              "xfail_at_base": [ids["x"]]}
    outcome, reason, tests = decide(task, "junit", exit_code=exit_code, log=log, junit_xml=xml, patch_applied=True)
    assert _verifier().decide(config, exit_code, log, xml) == (outcome.value, reason, tests)


def test_a_pack_from_a_local_repository_ships_it_as_a_bundle(tmp_path):
    """A mined pack's source is a local git repository: the engine that builds cannot see it, so it travels."""
    import subprocess

    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "lib.py").write_text("def f():\n    return 1\n")
    (repo / "tests" / "test_lib.py").write_text("from lib import f\n\ndef test_f():\n    assert f() == 1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    base = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "pack.yaml").write_text(
        "name: mined\nversion: 1\nenvironment:\n  source: {kind: git, url: ../repo, ref: main}\n  pip: [pytest==8.3.5]\n"
        "tasks: tasks.jsonl\ntest_command: python -m pytest -rA --junitxml={junit_xml} {test_files}\nlog_parser: junit\n")
    task = {"instance_id": "mined-1", "problem_statement": "f is wrong", "base_commit": base,
            "FAIL_TO_PASS": ["tests/test_lib.py::test_f"], "patch": "", "test_patch": ""}
    (pack / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    done = _export(pack, tmp_path / "out")
    assert "1 Harbor task directories" in done.stdout and "no gold patch" in done.stderr
    folder = tmp_path / "out" / "mined-1"
    assert HarborTask.load(folder).solve_script is None
    assert (folder / "environment" / "source.bundle").read_bytes()[:20].find(b"git bundle") > 0
    dockerfile = (folder / "environment" / "Dockerfile").read_text()
    assert "COPY source.bundle" in dockerfile and f"evalharness-prepare-task {base}" in dockerfile
    assert "mined-1" in (tmp_path / "out" / "README.md").read_text().split("## Without a solution")[1]
