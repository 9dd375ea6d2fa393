"""SWE-bench predictions graded end to end on the built-in pack (real Docker, through the CLI): gold
predictions resolve every task, empty ones none, a gold patch that also breaks a PASS_TO_PASS test is
unresolved, one that needs fuzz applies through GNU patch, one that does not apply is
patch_apply_failed; the report JSON has the SWE-bench keys and counts; `compare` pairs two files of
one command, or two commands; a resume writes the same reports.

Pins issue 8 item 6: predictions made elsewhere are graded by the same hardened grader as agents.
"""

from __future__ import annotations

import json

import pytest
from support import QUICKSTART, run_cli

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SWEBENCH_KEYS = {"total_instances", "submitted_instances", "completed_instances", "resolved_instances",
                 "unresolved_instances", "empty_patch_instances", "error_instances", "completed_ids",
                 "incomplete_ids", "empty_patch_ids", "submitted_ids", "resolved_ids", "unresolved_ids",
                 "error_ids", "schema_version"}
MATH, STR, CACHE, URL = ("boltons-mathutils-ceil-exact-match", "boltons-strutils-parse-int-list",
                         "boltons-cacheutils-lru-max-size", "boltons-urlutils-navigate-dot-segments")


@pytest.fixture(scope="module")
def gold():
    return {r["instance_id"]: r["patch"] for r in map(json.loads, (QUICKSTART / "tasks.jsonl").read_text().splitlines())}


def _breaks_clamp(sandbox_factory, gold) -> str:
    """The gold patch of the ceil task plus a change that breaks clamp(), which PASS_TO_PASS tests use."""
    from evalharness.packs import load_pack

    pack = load_pack(QUICKSTART)
    box = sandbox_factory(pack, pack.task(MATH))
    box.write_file("/tmp/gold.diff", gold[MATH])
    done = box.exec("git apply /tmp/gold.diff && sed -i 's/return min(max(x, lower), upper)/return max(x, lower)/' "
                    "boltons/mathutils.py && git diff")
    assert done.exit_code == 0 and "+    return max(x, lower)" in done.output, done.output
    return done.output


def _jsonl(path, model, patches):
    path.write_text("".join(json.dumps({"instance_id": i, "model_name_or_path": model, "model_patch": p}) + "\n"
                            for i, p in patches.items()))
    return path


def _run_id(stderr: str) -> str:
    return stderr.split("HTML report: reports/")[1].split(".html")[0]


def test_gold_empty_and_mixed_predictions_graded_in_one_run_then_compared(tmp_path, base_image, gold,
                                                                          sandbox_factory):
    _jsonl(tmp_path / "gold.jsonl", "org/gold", gold)
    (tmp_path / "empty.json").write_text(json.dumps(
        [{"instance_id": i, "model_name_or_path": "empty", "model_patch": ""} for i in gold], indent=2))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / f"{MATH}.diff").write_text(_breaks_clamp(sandbox_factory, gold))
    # a context line changed: git apply refuses it, patch --fuzz applies it
    fuzzy = gold[STR].replace("         # Range\n", "         # a range\n")
    assert fuzzy != gold[STR]
    (mixed / f"{STR}.diff").write_text(fuzzy)
    # a removed line that is not in the file: nothing applies it
    lines = gold[CACHE].splitlines(keepends=True)
    first_minus = next(i for i, line in enumerate(lines) if line.startswith("-") and not line.startswith("---"))
    lines[first_minus] = "-this line is not in the file\n"
    (mixed / f"{CACHE}.diff").write_text("".join(lines))
    (mixed / f"{URL}.diff").write_text("")

    done = run_cli("grade-predictions", "-p", str(QUICKSTART), "-P", "gold.jsonl", "-P", "empty.json", "-P", "mixed",
                   "-j", "4", "--format", "json", "--report-json", "out/gold.json", "--report-json", "out/empty.json",
                   "--report-json", "out/mixed.json", cwd=tmp_path)
    reports = {name: json.loads((tmp_path / "out" / f"{name}.json").read_text()) for name in ("gold", "empty", "mixed")}
    for report in reports.values():
        assert SWEBENCH_KEYS <= set(report) and report["schema_version"] == 2 and report["total_instances"] == 8
    g, e, m = reports["gold"], reports["empty"], reports["mixed"]
    assert (g["submitted_instances"], g["completed_instances"], g["resolved_instances"]) == (8, 8, 8)
    assert g["resolved_ids"] == sorted(gold) and g["error_ids"] == g["unresolved_ids"] == g["incomplete_ids"] == []
    assert (e["submitted_instances"], e["resolved_instances"], e["empty_patch_instances"]) == (8, 0, 8)
    assert e["completed_ids"] == [] and set(e["outcomes"].values()) == {"no_patch"}
    assert m["submitted_ids"] == sorted([MATH, STR, CACHE, URL]) and m["submitted_instances"] == 4
    assert m["resolved_ids"] == [STR]
    assert m["unresolved_ids"] == [MATH] and m["completed_instances"] == 2
    assert m["empty_patch_ids"] == [URL] and m["error_ids"] == m["patch_apply_failed_ids"] == [CACHE]  # as SWE-bench
    assert m["incomplete_ids"] == sorted(set(gold) - {MATH, STR, CACHE, URL})
    assert m["outcomes"] == {MATH: "unresolved", STR: "resolved", CACHE: "patch_apply_failed", URL: "no_patch"}
    assert m["config"] == "predictions/mixed" and g["config"] == "predictions/org/gold"

    run_id = g["run_id"]
    scores = {s["config"]: s for s in json.loads(done.stdout)["scores"]}  # stdout is the JSON document alone
    assert scores["predictions/org/gold"]["resolve_rate"] == 1.0 and scores["predictions/org/gold"]["n_trials"] == 8
    assert scores["predictions/empty"]["resolve_rate"] == 0.0
    assert scores["predictions/mixed"]["n_trials"] == 4  # not submitted: no trial
    assert "predictions/mixed: 1 of 8 instances resolved (4 submitted, 2 completed" in done.stderr
    assert "predictions/mixed: 4 of 8 instances not submitted (no trial)" in done.stderr

    trials = tmp_path / "runs" / run_id / "quickstart"
    broke = json.loads((trials / MATH / "predictions" / "mixed" / "seed-0" / "result.json").read_text())
    assert broke["outcome"] == "unresolved" and "test_clamp" in broke["reason"]
    fuzzed = trials / STR / "predictions" / "mixed" / "seed-0"
    steps = json.loads((fuzzed / "trajectory.json").read_text())["steps"]
    assert [s["exit_code"] for s in steps if s["kind"] == "command" and "prediction.diff" in s["command"]] == [1, 1, 0]
    graded = (fuzzed / "patch.diff").read_text()
    assert graded.count("diff --git") == 1 and ".rej" not in graded and ".orig" not in graded
    failed = trials / CACHE / "predictions" / "mixed" / "seed-0"
    result = json.loads((failed / "result.json").read_text())
    assert result["outcome"] == "patch_apply_failed" and result["reason"].startswith("the prediction does not apply")
    assert result["grade"] is None and "this line is not in the file" in (failed / "patch.diff").read_text()

    # SWE-bench's per-instance report.json: each graded prediction, none for an empty one
    logs = tmp_path / "runs" / run_id / "run_evaluation"
    assert m["instance_reports"] == str(logs / "mixed") and m["instance_reports_written"] == 3
    assert sorted(p.name for p in (logs / "mixed").iterdir()) == sorted([MATH, STR, CACHE])
    each = {i: json.loads((logs / "mixed" / i / "report.json").read_text())[i] for i in (MATH, STR, CACHE)}
    assert (each[STR]["resolved"], each[MATH]["resolved"]) == (True, False)
    assert any("test_clamp" in t for t in each[MATH]["tests_status"]["PASS_TO_PASS"]["failure"])
    assert each[CACHE] == {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": False,
                           "resolved": False}
    assert len(list((logs / "org__gold").iterdir())) == 8 and not (logs / "empty").exists()

    compared = run_cli("compare", run_id, "--a", "predictions/org/gold", "--b", "predictions/empty", cwd=tmp_path)
    assert "shared tasks" in compared.stdout and "+100.0%" in compared.stdout
    planned = run_cli("plan", run_id, "--a", "predictions/org/gold", "--b", "predictions/mixed", cwd=tmp_path)
    assert "tasks" in planned.stdout
    table = run_cli("report", run_id, cwd=tmp_path).stdout
    assert "predictions/mixed" in table


def test_two_commands_compare_as_two_runs_and_a_resume_rewrites_the_reports(tmp_path, base_image, gold):
    some = {i: gold[i] for i in (MATH, STR, URL)}
    (tmp_path / "gold.json").write_text(json.dumps(
        [{"instance_id": i, "model_name_or_path": "gold", "model_patch": p} for i, p in some.items()]))
    empty = tmp_path / "nothing"
    empty.mkdir()
    for i in some:
        (empty / f"{i}.diff").write_text("")
    first = run_cli("grade-predictions", "-p", str(QUICKSTART), "-P", "gold.json", "-j", "3", cwd=tmp_path)
    second = run_cli("grade-predictions", "-p", str(QUICKSTART), "-P", "nothing", "--model-name", "null-model",
                     "-j", "3", cwd=tmp_path)
    run_a, run_b = _run_id(first.stderr), _run_id(second.stderr)  # the HTML report's path is on stderr
    assert run_a != run_b
    compared = run_cli("compare", run_a, run_b, cwd=tmp_path).stdout
    assert "predictions/gold" in compared and "predictions/null-model" in compared and "+100.0%" in compared
    assert [line.split()[-2] for line in compared.splitlines() if "shared tasks" in line] == ["3"]

    report = tmp_path / "runs" / run_b / f"null-model.{run_b}.json"
    before = json.loads(report.read_text())
    assert (before["empty_patch_instances"], before["submitted_instances"], before["resolved_instances"]) == (3, 3, 0)
    report.unlink()
    again = run_cli("grade-predictions", "--resume", run_b, cwd=tmp_path)
    assert "0 trials run" in again.stderr and json.loads(report.read_text()) == before
    assert before["predictions"] == str(empty)
