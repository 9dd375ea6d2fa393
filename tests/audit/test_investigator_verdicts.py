"""The investigator's pure decisions, without Docker: the verdict schema, what a seed's answer becomes
(ok, invalid, error), the ensemble of seeds, and the prompt and files an investigation is given.

Pins: an answer that failed the schema (severity 7, a family nobody defined, "yes" for true) taken
as a verdict or crashing the audit; an ensemble that averaged seeds away (OpenAI kept the most
severe) or lost how many seeds agreed; a prompt with a placeholder left unfilled.
"""

from __future__ import annotations

import json
import re

import pytest

from evalharness.audit.findings import FAMILIES, Finding
from evalharness.audit.investigator import (AUDIT_DIR, PROMPT_PATH, VERDICT_FILE, Investigation, audit_files,
                                            for_investigation, judge, load_prompt, prompt_for)
from evalharness.audit.verdicts import ENSEMBLE_SEED, VerdictError, ensemble, parse_verdict
from evalharness.errors import UserError
from evalharness.harness.minimal import PROMPTS, MinimalHarness
from evalharness.types import AgentResult, TaskSpec

GOOD = {"broken": True, "family": "underspecified", "severity": 2, "evidence": "test_x wants 'empty'"}


def test_a_verdict_matching_the_schema_is_read_with_or_without_one_fence():
    assert parse_verdict(json.dumps(GOOD)).model_dump() == GOOD
    fenced = parse_verdict("```json\n" + json.dumps({"broken": False, "severity": 0, "evidence": "fine"}) + "\n```")
    assert (fenced.broken, fenced.family, fenced.severity) == (False, None, 0)


@pytest.mark.parametrize("text, says", [
    ("{broken: true}", "not JSON"),
    ("", "empty"),
    ("[1, 2]", "JSON list, not an object"),
    ('Here is my verdict: {"broken": false, "severity": 0, "evidence": "x"}', "not JSON"),
    (json.dumps({**GOOD, "family": "typo_family"}), "family"),
    (json.dumps({**GOOD, "severity": 7}), "severity: Input should be less than or equal to 3"),
    (json.dumps({**GOOD, "severity": -1}), "severity"),
    (json.dumps({**GOOD, "broken": "yes"}), "broken: Input should be a valid boolean"),
    (json.dumps({**GOOD, "severity": "2"}), "severity: Input should be a valid integer"),
    (json.dumps({**GOOD, "evidence": ""}), "evidence"),
    (json.dumps({**GOOD, "confidence": 0.9}), "confidence: Extra inputs are not permitted"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "severity"}), "severity: Field required"),
    (json.dumps({**GOOD, "family": None}), "a broken verdict names its family"),
    (json.dumps({**GOOD, "severity": 1}), "broken is true but severity is 1"),
    (json.dumps({"broken": False, "severity": 3, "evidence": "x"}), "broken is false but severity is 3"),
])
def test_a_malformed_verdict_is_refused_with_what_is_wrong(text, says):
    with pytest.raises(VerdictError) as caught:
        parse_verdict(text)
    assert says in str(caught.value)


def _seen(raw, exit_status="submitted", error=None):
    return Investigation(AgentResult(exit_status=exit_status, error=error), raw, [], "" if raw is not None else
                         f"no verdict: {VERDICT_FILE} was not written")


def test_a_valid_verdict_is_an_ok_finding_whatever_ended_the_harness():
    for status in ("submitted", "budget_exhausted", "error"):
        finding = judge("t", 3, _seen(json.dumps(GOOD), status), {"harness": "minimal"}, "h")
        assert (finding.status, finding.flagged, finding.family, finding.severity, finding.seed) == (
            "ok", True, "underspecified", 2, 3)
        assert finding.probe == "investigator" and finding.reason == GOOD["evidence"]
        assert finding.evidence["verdict"] == GOOD and finding.evidence["harness"] == "minimal"


def test_a_clean_verdict_flags_nothing_and_keeps_its_minor_note():
    finding = judge("t", 1, _seen(json.dumps({"broken": False, "severity": 1, "evidence": "a nit",
                                              "family": "overly_strict"})), {}, "h")
    assert (finding.status, finding.flagged, finding.severity, finding.family) == ("ok", False, 1, "overly_strict")


def test_a_clean_verdict_naming_no_family_and_a_seed_without_verdict_carry_no_family():
    """Issue 27: a clean verdict was stored under `validity`, counting a clean answer under a defect."""
    clean = judge("t", 0, _seen(json.dumps({"broken": False, "severity": 0, "evidence": "fine"})), {}, "h")
    assert (clean.status, clean.flagged, clean.family) == ("ok", False, None)
    assert judge("t", 0, _seen(None), {}, "h").family is None
    assert ensemble([clean]).family is None
    with pytest.raises(ValueError, match="names its family"):
        Finding("t", "investigator", None, True, 2, "flags without a family")


@pytest.mark.parametrize("raw", ["not json at all", json.dumps({**GOOD, "family": "nope", "severity": 7})])
def test_a_malformed_verdict_is_recorded_invalid_with_its_raw_text_and_error(raw):
    finding = judge("t", 2, _seen(raw), {"raw": raw}, "h")
    assert (finding.status, finding.flagged, finding.seed) == ("invalid", False, 2)
    assert finding.reason.startswith("invalid verdict: ")
    assert finding.evidence["raw"] == raw and finding.evidence["verdict_problem"] == finding.reason


def test_no_verdict_is_invalid_unless_the_harness_failed_which_is_an_error():
    missing = judge("t", 1, _seen(None), {}, "h")
    assert missing.status == "invalid" and VERDICT_FILE in missing.reason
    failed = judge("t", 1, _seen(None, "error", "ModelAPIError: 500 from the endpoint"), {}, "h")
    assert failed.status == "error" and "ModelAPIError" in failed.reason


def _f(seed, flagged, severity, family="validity", status="ok", task="t"):
    return Finding(task, "investigator", family, flagged, severity, f"seed {seed} says so", status=status, seed=seed,
                   inputs_hash=f"h{seed}")


def test_two_seeds_that_disagree_ensemble_to_the_most_severe_with_agreement_one_half():
    out = ensemble([_f(1, False, 0), _f(2, True, 3, "overly_strict")])
    assert (out.flagged, out.family, out.severity, out.status, out.seed) == (True, "overly_strict", 3, "ok",
                                                                             ENSEMBLE_SEED)
    assert out.evidence["agreement"] == 0.5 and out.evidence["flagged"] == 1 and out.evidence["ok"] == 2
    assert out.evidence["families"] == {"overly_strict": 1} and out.evidence["winner_seed"] == 2
    assert out.reason.startswith("1 of 2 valid seeds flag the task: seed 2 says so")


def test_the_most_severe_wins_then_the_family_most_seeds_named():
    out = ensemble([_f(1, True, 2, "underspecified"), _f(2, True, 3, "too_weak_tests"),
                    _f(3, True, 2, "underspecified"), _f(4, False, 1)])
    assert (out.family, out.severity) == ("too_weak_tests", 3)
    assert out.evidence["agreement"] == 0.75 and out.evidence["family_agreement"] == pytest.approx(1 / 3)
    tie = ensemble([_f(1, True, 2, "validity"), _f(2, True, 2, "environment"), _f(3, True, 2, "environment")])
    assert tie.family == "environment" and tie.evidence["family_agreement"] == pytest.approx(2 / 3)


def test_all_seeds_clean_ensemble_to_not_flagged_with_full_agreement():
    out = ensemble([_f(1, False, 0), _f(2, False, 1)])
    assert (out.flagged, out.severity, out.evidence["agreement"], out.evidence["family_agreement"]) == (
        False, 1, 1.0, None)


def test_invalid_and_error_seeds_are_counted_not_crashed_on():
    out = ensemble([_f(1, False, 0, status="invalid"), _f(2, True, 2, "solution_leak"),
                    _f(3, False, 0, status="error")])
    assert (out.status, out.flagged, out.family) == ("ok", True, "solution_leak")
    assert out.evidence["statuses"] == {"invalid": 1, "ok": 1, "error": 1} and out.evidence["agreement"] == 1.0
    assert "1 error, 1 invalid, 1 ok" in out.reason


def test_no_valid_seed_is_invalid_when_all_were_invalid_else_an_error():
    all_invalid = ensemble([_f(1, False, 0, status="invalid"), _f(2, False, 0, status="invalid")])
    assert (all_invalid.status, all_invalid.flagged) == ("invalid", False)
    assert all_invalid.reason == "no seed gave a valid verdict (2 invalid)"
    assert ensemble([_f(1, False, 0, status="invalid"), _f(2, False, 0, status="error")]).status == "error"


def test_the_ensemble_hash_follows_its_seeds_and_one_task_only_is_ensembled():
    a, b = ensemble([_f(1, False, 0), _f(2, True, 2)]), ensemble([_f(2, True, 2), _f(1, False, 0)])
    assert a.inputs_hash == b.inputs_hash
    changed = _f(2, True, 2)
    changed.inputs_hash = "other"
    assert ensemble([_f(1, False, 0), changed]).inputs_hash != a.inputs_hash
    with pytest.raises(ValueError, match="several tasks"):
        ensemble([_f(1, False, 0), _f(2, False, 0, task="u")])
    with pytest.raises(ValueError, match="no findings"):
        ensemble([])


TASK = TaskSpec(instance_id="pkg-1", problem_statement="mean([]) raises ZeroDivisionError {not_a_placeholder}",
                patch="diff --git a/m.py b/m.py\n", test_patch="diff --git a/tests/test_m.py b/tests/test_m.py\n",
                FAIL_TO_PASS=["tests/test_m.py::test_empty"], PASS_TO_PASS=["tests/test_m.py::test_one"])


def test_the_prompt_kept_in_audits_has_every_placeholder_filled():
    prompt = prompt_for(TASK, PROMPT_PATH.read_text(), "/testbed")
    left = set(re.findall(r"\{([a-z_]+)\}", prompt)) - {"not_a_placeholder"}
    assert left == set()
    assert prompt.rstrip().endswith(TASK.problem_statement)
    assert VERDICT_FILE in prompt and f"{AUDIT_DIR}/gold.patch" in prompt and "`/testbed`" in prompt
    assert all(f"`{family}`" in prompt for family in FAMILIES)


def test_a_task_without_a_test_patch_is_told_so_never_to_apply_an_empty_file():
    with_tests = prompt_for(TASK, PROMPT_PATH.read_text(), "/testbed")
    assert f"git apply {AUDIT_DIR}/test.patch" in with_tests
    prompt = prompt_for(TASK.model_copy(update={"test_patch": ""}), PROMPT_PATH.read_text(), "/testbed")
    assert "test.patch" in prompt and f"git apply {AUDIT_DIR}/test.patch" not in prompt
    assert "no test patch: this task's tests are already in the repository" in prompt
    assert not set(re.findall(r"\{([a-z_]+)\}", prompt)) - {"not_a_placeholder"}


def test_the_audit_folder_holds_statement_tests_gold_patch_and_the_test_command():
    files = audit_files(TASK, "python -m pytest tests/test_m.py")
    assert sorted(files) == [f"{AUDIT_DIR}/{n}" for n in
                             ("gold.patch", "run_tests.sh", "statement.md", "task.json", "test.patch")]
    listing = json.loads(files[f"{AUDIT_DIR}/task.json"])
    assert listing["FAIL_TO_PASS"] == TASK.FAIL_TO_PASS and listing["test_files"] == ["tests/test_m.py"]
    assert files[f"{AUDIT_DIR}/gold.patch"].decode() == TASK.patch
    assert files[f"{AUDIT_DIR}/run_tests.sh"].decode().endswith("python -m pytest tests/test_m.py\n")


def test_minimal_runs_with_its_audit_system_prompt_unless_another_was_chosen():
    default = MinimalHarness()
    switched = for_investigation(default)
    assert switched.prompt_variant == "audit" and default.prompt_variant == "default"
    assert "not asked to fix" in PROMPTS["audit"]
    terse = MinimalHarness(prompt_variant="terse")
    assert for_investigation(terse) is terse


def test_a_prompt_that_cannot_be_read_or_never_names_the_verdict_file_is_refused(tmp_path):
    assert "{verdict_file}" in load_prompt()
    with pytest.raises(UserError, match="cannot read the investigation prompt"):
        load_prompt(tmp_path / "missing.md")
    (tmp_path / "vague.md").write_text("Tell me whether {instance_id} is broken.")
    with pytest.raises(UserError, match="never says where the verdict goes"):
        load_prompt(tmp_path / "vague.md")
