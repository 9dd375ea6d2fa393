"""Recording decisions, tested where they are made, without Docker: an internal error is ours and
not the agent's, an engine failure is retried and every attempt's spend is kept, a resume refuses
a changed pack, and a failed grading container is retried with the same patch.

Pins issue 7: a trial whose agent phase failed twice was re-run, billed again, and stored with 0
calls; the mutants "record internal errors as agent failures", "let a resume accept a changed
pack" and "drop the grading-container retry" survived the whole suite.
"""

from __future__ import annotations

import shutil
import threading
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from evalharness import runner, trial as trial_mod
from evalharness.errors import SandboxError, UserError
from evalharness.grading.grade import GradeResult
from evalharness.packs import load_pack
from evalharness.executors import work
from evalharness.executors.work import attempt, with_failed_attempts
from evalharness.runner import RunConfig
from evalharness.store import Store, database_url
from evalharness.trial import Trial, TrialOutput
from evalharness.types import AgentResult, ModelEndpoint, Outcome, Usage

from support import TINYPACK


class Checker:
    def check(self, task):
        return None


@pytest.fixture
def one_trial(tinypack):
    harness = SimpleNamespace(name="h", config=lambda: {})
    return Trial(tinypack.tasks[0], harness, ModelEndpoint(name="openai/m"), 0)


def _run(monkeypatch, tinypack, trial, attempts_behaviour, retries=2):
    recorded = []
    calls = iter(attempts_behaviour)

    def fake_run_trial(ctx, t):
        step = next(calls)
        if isinstance(step, BaseException):
            raise step
        return step

    monkeypatch.setattr(work, "run_trial", fake_run_trial)
    ctx = SimpleNamespace(pack=tinypack)
    config = RunConfig(pack="p", harnesses=["h"], infra_retries=retries, retry_backoff_s=0)
    out, attempts = attempt(ctx, config, trial, threading.Event(), Checker())
    recorded.append((out, attempts))
    return out.outcome, recorded


def _done(usage: Usage) -> TrialOutput:
    now = datetime.now(timezone.utc)
    return TrialOutput(Outcome.UNRESOLVED, "1 of 5 required tests not passing", AgentResult(usage=usage), None, now, now)


def test_an_internal_error_is_recorded_as_ours_never_as_the_agents(monkeypatch, tinypack, one_trial):
    outcome, recorded = _run(monkeypatch, tinypack, one_trial, [KeyError("bug in evalharness")])
    assert outcome is Outcome.INFRA_ERROR and outcome.is_infra and not outcome.counts_in_rate
    out, attempts = recorded[0]
    assert "internal error in evalharness" in out.reason and attempts == 1


def test_an_engine_failure_is_retried_and_every_attempts_spend_is_kept(monkeypatch, tinypack, one_trial):
    first = SandboxError("container vanished")
    first.usage = Usage(input_tokens=100, output_tokens=10, calls=2, cost_usd=0.02)
    outcome, recorded = _run(monkeypatch, tinypack, one_trial,
                             [first, _done(Usage(input_tokens=50, output_tokens=5, calls=1, cost_usd=0.01))])
    out, attempts = recorded[0]
    assert outcome is Outcome.UNRESOLVED and attempts == 2
    assert out.agent.usage.calls == 3 and out.agent.usage.input_tokens == 150
    assert out.agent.usage.cost_usd == pytest.approx(0.03)
    assert out.log[0].startswith("attempt 1: SandboxError: container vanished")


def test_a_persistent_engine_failure_is_infrastructure_with_its_spend(monkeypatch, tinypack, one_trial):
    errors = []
    for _ in range(3):
        e = SandboxError("engine down")
        e.usage = Usage(calls=1, cost_usd=0.01)
        errors.append(e)
    outcome, recorded = _run(monkeypatch, tinypack, one_trial, errors)
    out, attempts = recorded[0]
    assert outcome is Outcome.SANDBOX_ERROR and attempts == 3
    assert out.agent.usage.calls == 3 and out.agent.usage.cost_usd is None  # unknown stays unknown, never 0


def test_with_failed_attempts_leaves_a_clean_trial_alone():
    out = _done(Usage(calls=1, cost_usd=0.5))
    assert with_failed_attempts(out, Usage(), []) is out


def test_resume_refuses_a_changed_pack_before_touching_docker(tmp_path):
    pack_dir = tmp_path / "tinypack"
    shutil.copytree(TINYPACK, pack_dir)
    pack = load_pack(pack_dir)
    store = Store(database_url(tmp_path / "db.sqlite"))
    config = RunConfig(pack=str(pack_dir), harnesses=["oracle"])
    store.create_run("r1", pack=pack.name, pack_hash=pack.content_hash, version="t", git_commit=None,
                     config={"run": config.model_dump(mode="json"), "harnesses": {"oracle": {"kind": "oracle"}}})
    tasks = pack_dir / "tasks.jsonl"
    tasks.write_text(tasks.read_text().replace('"problem_statement": "', '"problem_statement": "Edited. ', 1))
    with pytest.raises(UserError, match="changed since run r1 started"):
        runner.run(resume="r1", runs_dir=tmp_path, db=str(tmp_path / "db.sqlite"))


def test_a_failed_grading_container_is_retried_with_the_same_patch(monkeypatch, tinypack):
    starts, graded = [], []

    class FlakySandbox:
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def start(self):
            starts.append(1)
            if len(starts) == 1:
                raise SandboxError("the engine dropped the container")

    def fake_grade(task, spec, patch, sandbox):
        graded.append(patch)
        return GradeResult(Outcome.RESOLVED, "all pass")

    monkeypatch.setattr(trial_mod, "DockerSandbox", FlakySandbox)
    monkeypatch.setattr(trial_mod, "grade", fake_grade)
    monkeypatch.setattr(trial_mod.time, "sleep", lambda s: None)
    ctx = SimpleNamespace(pack=tinypack, client=None, run_id="r", limits=None)
    t = Trial(tinypack.tasks[0], SimpleNamespace(name="h"), None, 0)
    log: list[str] = []
    result = trial_mod._grade_with_retries(ctx, t, "img", b"the patch", log)
    assert result.outcome is Outcome.RESOLVED and len(starts) == 2 and graded == [b"the patch"]
    assert "grading attempt 1 failed" in log[0]
