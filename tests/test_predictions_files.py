"""Predictions files without Docker: the three formats read the same, a malformed file is one error
naming the file and the line, the SWE-bench report puts each task in exactly one list, the harness
tries git apply, git apply --reject and patch in turn and undoes each failed attempt, and the matrix
holds a trial only for submitted instances.

Pins issue 8 item 6: grading SWE-bench predictions with the hardened grader.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from evalharness.errors import HarnessError
from evalharness.harness.predictions import APPLY_COMMANDS, RESET, PredictionsHarness
from evalharness.predictions import (Predictions, PredictionsError, check_pack, instance_report, read_predictions,
                                     swebench_report)
from evalharness.runner import RunConfig, _matrix
from evalharness.trial import PATCH_APPLY_FAILED
from evalharness.types import Budget, ExecResult, ModelEndpoint
from support import TINYPACK, run_cli

SWEBENCH_KEYS = {"total_instances", "submitted_instances", "completed_instances", "resolved_instances",
                 "unresolved_instances", "empty_patch_instances", "error_instances", "completed_ids",
                 "incomplete_ids", "empty_patch_ids", "submitted_ids", "resolved_ids", "unresolved_ids",
                 "error_ids", "schema_version"}

RECORDS = [{"instance_id": "tiny-clamp", "model_name_or_path": "org/m", "model_patch": "diff --git a/x b/x\n"},
           {"instance_id": "tiny-mean", "model_name_or_path": "org/m", "model_patch": None}]


def test_jsonl_json_list_mapping_and_folder_read_the_same(tmp_path):
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS) + "\n")
    (tmp_path / "p.json").write_text(json.dumps(RECORDS, indent=2))
    (tmp_path / "swe-agent.json").write_text(json.dumps({r["instance_id"]: r for r in RECORDS}))
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "tiny-clamp.diff").write_text("diff --git a/x b/x\n")
    (folder / "tiny-mean.diff").write_text("")
    (folder / "notes.txt").write_text("not a prediction")
    expected = {"tiny-clamp": "diff --git a/x b/x\n", "tiny-mean": ""}
    for name in ("p.jsonl", "p.json", "swe-agent.json"):
        got = read_predictions(tmp_path / name)
        assert (got.model, got.patches) == ("org/m", expected), name
    assert read_predictions(tmp_path / "p.json").where["tiny-mean"] == "item 2 (line 7)"
    got = read_predictions(folder)
    assert (got.model, got.patches) == ("my-model", expected)
    assert read_predictions(folder, model_name="other").model == "other"
    assert read_predictions(tmp_path / "p.jsonl", model_name="renamed").model == "renamed"


@pytest.mark.parametrize("name, text, message", [
    ("bad.jsonl", json.dumps(RECORDS[0]) + "\n{\"instance_id\": \"a\",, }\n",
     "predictions file {path} line 2: not valid JSON\n  Expecting property name enclosed in double quotes at column 21"),
    ("bad.json", '[\n  {"instance_id": "a"}\n  {"instance_id": "b"}\n]',
     "predictions file {path} line 3: not valid JSON\n  Expecting ',' delimiter at column 3"),
    ("bad.jsonl", json.dumps(RECORDS[0]) + "\n" + json.dumps({"instance_id": "tiny-mean", "model_name_or_path": "org/m"}),
     "predictions file {path} line 2 (instance tiny-mean) is invalid\n  model_patch: Field required"),
    ("bad.json", json.dumps([RECORDS[0], {"model_patch": "", "model_name_or_path": "org/m"}]),
     "predictions file {path} item 2 (line 1) is invalid\n  instance_id: Field required"),
    ("bad.jsonl", json.dumps(RECORDS[0]) + "\n" + json.dumps({**RECORDS[0], "model_patch": 7}),
     "predictions file {path} line 2 (instance tiny-clamp) is invalid\n  model_patch: Input should be a valid string (got 7)"),
    ("bad.jsonl", json.dumps(RECORDS[0]) + "\n" + json.dumps(RECORDS[0]),
     "predictions file {path} line 2 (instance tiny-clamp): instance_id: duplicate of line 1\n"
     "  give one prediction per instance"),
    ("bad.jsonl", json.dumps(RECORDS[0]) + "\n" + json.dumps({**RECORDS[1], "model_name_or_path": "org/n"}),
     "predictions file {path} line 2 (instance tiny-mean): model_name_or_path 'org/n' differs from 'org/m' (line 1)\n"
     "  one file is one configuration: split the file, or name it with --model-name"),
    ("bad.jsonl", json.dumps({"instance_id": "a", "model_patch": ""}),
     "predictions file {path} line 1 (instance a): model_name_or_path is missing\n"
     "  every prediction names its model, or name the file with --model-name"),
    ("bad.jsonl", "[1, 2]", "predictions file {path} item 1 (line 1): expected a JSON object, got a number"),
    ("bad.json", '"x"', "predictions file {path}: expected JSON Lines of predictions, a JSON list of them, or a JSON "
                        "object of them by instance id; got a string"),
    ("bad.jsonl", "\n\n", "predictions file {path} holds no predictions"),
])
def test_a_malformed_file_is_one_error_naming_the_file_and_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(PredictionsError) as e:
        read_predictions(path)
    assert str(e.value) == message.format(path=path)


def test_an_empty_folder_and_a_missing_model_name_are_errors(tmp_path):
    with pytest.raises(PredictionsError, match="holds no <instance_id>.diff files"):
        read_predictions(tmp_path)
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"instance_id": "a", "model_patch": ""}))
    assert read_predictions(path, model_name="m").model == "m"


def _preds(model, patches, source="p.jsonl"):
    from pathlib import Path

    return Predictions(Path(source), model, patches)


def test_unknown_instance_ids_are_an_error_or_with_the_flag_a_counted_warning(tinypack):
    preds = _preds("m", {"tiny-clamp": "x", "nope-1": "y", "nope-2": ""})
    with pytest.raises(PredictionsError) as e:
        check_pack([preds], tinypack, skip_unknown=False)
    assert str(e.value) == ("predictions p.jsonl: 2 instance id(s) are not tasks of pack tinypack: nope-1, nope-2\n"
                            "  check --pack, or pass --skip-unknown-ids to grade the others")
    assert check_pack([preds], tinypack, skip_unknown=True) == [
        "predictions p.jsonl: 2 instance id(s) not in pack tinypack skipped: nope-1, nope-2"]


def test_two_files_with_one_model_name_are_an_error(tinypack):
    for other in ("org/m", "org__m"):  # the same label, or the same run folder name
        with pytest.raises(PredictionsError, match="have the same model name"):
            check_pack([_preds("org/m", {}, "a.jsonl"), _preds(other, {}, "b.jsonl")], tinypack, skip_unknown=False)


def _row(task, outcome, infra=False):
    return {"task_id": task, "harness": "predictions", "model": "m", "outcome": outcome,
            "resolved": outcome == "resolved", "infra": infra}


def test_the_swebench_report_puts_each_task_in_exactly_one_list(tinypack):
    tasks = [t.instance_id for t in tinypack.tasks]
    assert len(tasks) == 2
    fake = SimpleNamespace(name="tinypack", tasks=[SimpleNamespace(instance_id=i) for i in
                                                   tasks + ["t-apply", "t-infra", "t-broken", "t-empty", "t-lost",
                                                            "t-absent"]])
    preds = _preds("m", {tasks[0]: "p", tasks[1]: "p", "t-apply": "p", "t-infra": "p", "t-broken": "p",
                         "t-empty": "  \n", "t-lost": "p", "elsewhere": "p"})
    rows = [_row(tasks[0], "resolved"), _row(tasks[1], "tampered"), _row("t-apply", "patch_apply_failed"),
            _row("t-infra", "sandbox_error", infra=True), _row("t-broken", "task_error"), _row("t-empty", "no_patch"),
            {**_row(tasks[0], "unresolved"), "model": "other"}]
    report = swebench_report(preds, fake, rows, run_id="r1")
    assert SWEBENCH_KEYS <= set(report) and report["schema_version"] == 2
    assert report["total_instances"] == 8 and report["submitted_instances"] == 7
    assert report["resolved_ids"] == [tasks[0]]
    assert report["unresolved_ids"] == [tasks[1]]  # tampered counts against
    assert report["completed_ids"] == sorted([tasks[0], tasks[1]])
    assert report["error_ids"] == ["t-apply", "t-infra", "t-lost"]  # never unresolved; not applying: as SWE-bench
    assert report["patch_apply_failed_ids"] == ["t-apply"] and "never completed" in report["counting"]
    assert report["task_error_ids"] == ["t-broken"] and report["task_error_instances"] == 1
    assert report["empty_patch_ids"] == ["t-empty"] and report["empty_patch_instances"] == 1
    assert report["incomplete_ids"] == ["t-absent"] and report["unknown_ids"] == ["elsewhere"]
    assert report["outcomes"]["t-lost"] == "not recorded" and report["config"] == "predictions/m"
    parts = ["completed_ids", "error_ids", "task_error_ids", "empty_patch_ids"]
    assert sorted(sum((report[k] for k in parts), [])) == report["submitted_ids"]


def test_each_graded_prediction_gets_swebench_s_per_instance_report(tinypack):
    """Issue 27: grade-predictions wrote no per-instance report.json (shape: SWE-bench's evaluation logs)."""
    clamp = tinypack.task("tiny-clamp")
    f2p, p2p = clamp.FAIL_TO_PASS, clamp.PASS_TO_PASS
    tests = {f2p[0]: "failed", **{t: "passed" for t in p2p[1:]}, p2p[0]: "xfail"}
    row = _row("tiny-clamp", "unresolved")
    report = instance_report(clamp, row, tests)
    body = report["tiny-clamp"]
    assert list(body) == ["patch_is_None", "patch_exists", "patch_successfully_applied", "resolved", "tests_status"]
    assert (body["patch_successfully_applied"], body["resolved"]) == (True, False)
    assert body["tests_status"]["FAIL_TO_PASS"] == {"success": [], "failure": f2p}
    assert body["tests_status"]["PASS_TO_PASS"] == {"success": p2p[1:], "failure": [p2p[0]]}  # xfail: not allowed
    allowed = clamp.model_copy(update={"metadata": {"xfail_at_base": [p2p[0]]}})
    assert instance_report(allowed, row, tests)["tiny-clamp"]["tests_status"]["PASS_TO_PASS"]["failure"] == []
    assert set(body["tests_status"]) == {"FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL"}
    assert instance_report(clamp, _row("tiny-clamp", "patch_apply_failed"), None) == {"tiny-clamp": {
        "patch_is_None": False, "patch_exists": True, "patch_successfully_applied": False, "resolved": False}}
    for no_report in (_row("tiny-clamp", "no_patch"), _row("tiny-clamp", "sandbox_error", infra=True),
                      _row("tiny-clamp", "task_error")):
        assert instance_report(clamp, no_report, None) is None


class FakeSandbox:
    workdir = "/testbed"

    def __init__(self, codes):
        self.codes, self.commands, self.files = list(codes), [], {}

    def write_file(self, path, content):
        self.files[path] = content

    def exec(self, command, **kw):
        self.commands.append(command)
        return ExecResult(exit_code=0 if command == RESET else self.codes.pop(0),
                          output="error: patch failed: x.py:3\n" if command.startswith("git apply --verbose /") else "")


def _harness(tmp_path, patches):
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"instance_id": i, "model_name_or_path": "m", "model_patch": p}) + "\n"
                            for i, p in patches.items()))
    return PredictionsHarness(files={"m": str(path)})


def test_the_harness_falls_back_like_swebench_and_undoes_failed_attempts(tmp_path, tinypack):
    task = tinypack.tasks[0]
    harness = _harness(tmp_path, {task.instance_id: "diff --git a/x.py b/x.py"})
    model = ModelEndpoint(name="m")
    run = lambda box: harness.run(task, box, model, seed=0, budget=Budget())  # noqa: E731
    box = FakeSandbox([1, 1, 0])
    result = run(box)
    assert result.exit_status == "submitted" and result.usage.cost_usd is None
    assert box.files["/tmp/evalharness-prediction.diff"] == b"diff --git a/x.py b/x.py\n"  # a final newline added
    assert [c.split(" /tmp")[0] for c in box.commands] == [APPLY_COMMANDS[0], RESET, APPLY_COMMANDS[1], RESET,
                                                           APPLY_COMMANDS[2]]
    assert "--fuzz=5" in APPLY_COMMANDS[2] and "--batch" in APPLY_COMMANDS[2]
    box = FakeSandbox([1, 1, 1])
    result = run(box)
    assert result.exit_status == PATCH_APPLY_FAILED and result.patch == "diff --git a/x.py b/x.py"
    assert result.error.endswith("error: patch failed: x.py:3") and box.commands[-1] == RESET
    assert harness.covers(task, model) and not harness.covers(tinypack.tasks[1], model)
    assert not harness.covers(task, ModelEndpoint(name="other"))
    with pytest.raises(HarnessError):
        harness.run(tinypack.tasks[1], FakeSandbox([]), model, seed=0, budget=Budget())
    assert set(harness.config()["files"]["m"]) == {"path", "sha256", "source"}


def test_an_empty_prediction_applies_nothing(tmp_path, tinypack):
    task = tinypack.tasks[0]
    box = FakeSandbox([])
    result = _harness(tmp_path, {task.instance_id: ""}).run(task, box, ModelEndpoint(name="m"), seed=0, budget=Budget())
    assert result.patch == "" and result.exit_status == "submitted" and box.commands == []


def test_the_matrix_holds_trials_only_for_submitted_instances(tmp_path, tinypack):
    task = tinypack.tasks[0]
    harness_file = tmp_path / "h.yaml"
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"instance_id": task.instance_id, "model_name_or_path": "one", "model_patch": ""}))
    both = tmp_path / "both.jsonl"
    both.write_text("".join(json.dumps({"instance_id": t.instance_id, "model_name_or_path": "both", "model_patch": ""})
                            + "\n" for t in tinypack.tasks))
    harness_file.write_text(json.dumps({"kind": "predictions", "name": "predictions",
                                        "files": {"one": str(one), "both": str(both)}}))
    config = RunConfig(pack=str(TINYPACK), harnesses=[str(harness_file)],
                       models=[ModelEndpoint(name="one"), ModelEndpoint(name="both")])
    trials = _matrix(tinypack, config)
    assert sorted(t.trial_id("tinypack") for t in trials) == sorted(
        [f"tinypack/{task.instance_id}/predictions/one/seed-0"]
        + [f"tinypack/{t.instance_id}/predictions/both/seed-0" for t in tinypack.tasks])


def test_cli_user_errors_exit_1_and_usage_errors_exit_2(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(RECORDS[0]) + "\nnot json\n")
    done = run_cli("grade-predictions", "-p", str(TINYPACK), "-P", str(bad), cwd=tmp_path, check=False)
    assert done.returncode == 1
    assert done.stderr == f"error: predictions file {bad} line 2: not valid JSON\n  Expecting value at column 1\n"
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text(json.dumps({**RECORDS[0], "instance_id": "boltons-x"}))
    done = run_cli("grade-predictions", "-p", str(TINYPACK), "-P", str(unknown), cwd=tmp_path, check=False)
    assert done.returncode == 1 and "1 instance id(s) are not tasks of pack tinypack: boltons-x" in done.stderr
    done = run_cli("grade-predictions", "-p", str(TINYPACK), "-P", str(tmp_path / "absent.jsonl"), cwd=tmp_path,
                   check=False)
    assert done.returncode == 2 and "does not exist" in done.stderr
    done = run_cli("grade-predictions", "-p", str(TINYPACK), "-P", str(bad), "--model-name", "a", "--model-name", "b",
                   cwd=tmp_path, check=False)
    assert done.returncode == 2 and "give --model-name once per --predictions (1)" in done.stderr
    done = run_cli("grade-predictions", "-P", str(bad), cwd=tmp_path, check=False)
    assert done.returncode == 2 and "give --pack" in done.stderr
    assert not (tmp_path / "runs").exists()  # nothing was started
