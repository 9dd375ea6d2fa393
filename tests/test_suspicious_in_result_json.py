"""result.json records the grader's suspicious-code findings once, at its top level (``suspicious``), with secrets
taken out of the quoted lines like everything else stored; the flag goes with the trial's flags (issue 23).

Pins: the quoted lines stored twice (top level and inside ``grade``), one copy unredacted.
"""

from __future__ import annotations

from datetime import datetime, timezone
from types import SimpleNamespace

from evalharness.grading.grade import GradeResult
from evalharness.grading.suspicious import scan_patch
from evalharness.trial import Trial, TrialOutput, redact_output, trial_files
from evalharness.types import AgentResult, Flag, ModelEndpoint, Outcome

SECRET = "sk-test-0123456789abcdef0123"
PATCH = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1,2 @@\n x = 1\n"
         f"+key = os.environ['PYTEST_CURRENT_TEST'] or '{SECRET}'\n").encode()


def test_result_json_holds_the_findings_once_and_redacted(tinypack):
    grade = GradeResult(Outcome.RESOLVED, "all required tests pass", flags={Flag.SUSPICIOUS_CODE.value})
    grade.suspicious = [f.to_dict() for f in scan_patch(PATCH)]  # what grade() records (GradeResult.suspicious)
    now = datetime.now(timezone.utc)
    out = TrialOutput(Outcome.RESOLVED, "ok", AgentResult(), grade, now, now, flags=sorted(grade.flags), patch=PATCH,
                      suspicious=grade.suspicious)
    out = redact_output(out, [SECRET])
    trial = Trial(tinypack.tasks[0], SimpleNamespace(name="h", config=lambda: {}), ModelEndpoint(name="openai/m"), 0)
    result = trial_files(trial, out, 1, {})["result.json"]
    assert result["flags"] == ["suspicious_code"]
    [found] = result["suspicious"]
    assert (found["path"], found["line"], found["category"]) == ("m.py", 2, "pytest_env")
    assert SECRET not in found["text"] and "PYTEST_CURRENT_TEST" in found["text"]
    assert "suspicious" not in result["grade"]


def test_an_ungraded_trial_has_no_findings(tinypack):
    now = datetime.now(timezone.utc)
    out = TrialOutput(Outcome.NO_PATCH, "empty", AgentResult(), None, now, now)
    trial = Trial(tinypack.tasks[0], SimpleNamespace(name="h", config=lambda: {}), None, 0)
    assert trial_files(trial, out, 1, {})["result.json"]["suspicious"] == []
