"""The threaded executor's decisions, without Docker: every trial is handed to the driver once; a lost engine's
trial goes to another engine and is not recorded as a failure; with every engine lost, what was not run is an
infrastructure failure (a resume runs it), never dropped; the driver ignores a second result for one trial.

Pins issue 13: a stopped engine's trials would have been stored as sandbox errors, or lost.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from evalharness.executors import threads
from evalharness.executors.threads import Slot, ThreadedExecutor
from evalharness.executors.work import Finished, NodeContext
from evalharness.runconfig import RunConfig
from evalharness.trial import Trial, TrialOutput
from evalharness.types import AgentResult, Outcome


class Engine:
    """A client whose engine answers its ping (docker-py's low-level calls) while ``up``."""

    def __init__(self, up=True):
        self.up = up
        self.api = self

    def _url(self, path):
        return path

    def _get(self, url, timeout=None):
        assert url == "/_ping" and timeout == threads.PING_TIMEOUT_S
        if not self.up:
            raise ConnectionError("engine gone")
        return "OK"

    def _result(self, response):
        return response


def _node(name: str, engine: Engine) -> NodeContext:
    ctx = SimpleNamespace(client=engine, name=name)
    return NodeContext(ctx, checker=None, node=name)


def _trials(tinypack, n):
    harness = SimpleNamespace(name="h", config=lambda: {})
    return [Trial(tinypack.tasks[0], harness, None, seed) for seed in range(n)]


def _out(outcome: Outcome) -> TrialOutput:
    now = datetime.now(timezone.utc)
    return TrialOutput(outcome, outcome.value, AgentResult(), None, now, now)


def _run(slots, trials, behaviour, pack="tinypack"):
    """Run with ``behaviour(node_name, trial) -> Outcome``; the Finished handed to the driver, in order."""
    handed: list[Finished] = []

    def fake_attempt(ctx, config, trial, stop, checker):
        return _out(behaviour(ctx.name, trial)), 1

    executor = ThreadedExecutor(slots, "r", RunConfig(pack="p", harnesses=["h"]), pack, log=lambda m: None)
    original = threads.attempt
    threads.attempt = fake_attempt
    try:
        executor.run(trials, handed.append, threading.Event())
    finally:
        threads.attempt = original
    return handed


def test_every_trial_is_handed_to_the_driver_once(tinypack):
    trials = _trials(tinypack, 12)
    a, b = Engine(), Engine()
    handed = _run([Slot(_node("a", a), 2), Slot(_node("b", b), 2)], trials, lambda n, t: Outcome.RESOLVED)
    ids = [f.trial_id for f in handed]
    assert sorted(ids) == sorted(t.trial_id("tinypack") for t in trials) and len(set(ids)) == 12


def test_a_lost_engines_trial_runs_on_another_and_is_not_a_failure(tinypack):
    trials = _trials(tinypack, 10)
    a, b = Engine(), Engine()
    ran_on_b = []
    gate = threading.Event()

    def behaviour(node, trial):
        if node == "a":
            gate.wait(5)  # a waits until b has taken two trials, so b surely runs some
            return Outcome.RESOLVED
        ran_on_b.append(trial)
        if len(ran_on_b) == 2:  # b dies during its second trial
            b.up = False
            gate.set()
            return Outcome.SANDBOX_ERROR
        return Outcome.RESOLVED

    slots = [Slot(_node("a", a), 1), Slot(_node("b", b), 1)]
    handed = _run(slots, trials, behaviour)
    assert sorted(f.trial_id for f in handed) == sorted(t.trial_id("tinypack") for t in trials)
    assert {f.out.outcome for f in handed} == {Outcome.RESOLVED}
    assert slots[1].lost == "engine b stopped answering"
    rescheduled = ran_on_b[1].trial_id("tinypack")
    assert [f.node for f in handed if f.trial_id == rescheduled] == ["a"]


def test_an_infra_failure_on_an_engine_that_still_answers_is_recorded_as_such(tinypack):
    trials = _trials(tinypack, 4)
    a, b = Engine(), Engine()
    slots = [Slot(_node("a", a), 1), Slot(_node("b", b), 1)]
    handed = _run(slots, trials, lambda n, t: Outcome.SANDBOX_ERROR if t.seed == 2 else Outcome.RESOLVED)
    by_seed = {int(f.trial_id.rsplit("-", 1)[1]): f.out.outcome for f in handed}
    assert by_seed[2] is Outcome.SANDBOX_ERROR and len(handed) == 4  # not rescheduled forever, not hidden
    assert [s.lost for s in slots] == [None, None] and "not run" not in str([f.out.reason for f in handed])


def test_with_every_engine_lost_the_rest_is_infrastructure_never_dropped(tinypack):
    trials = _trials(tinypack, 6)
    a, b = Engine(), Engine()

    def behaviour(node, trial):
        (a if node == "a" else b).up = False
        return Outcome.SANDBOX_ERROR

    handed = _run([Slot(_node("a", a), 1), Slot(_node("b", b), 1)], trials, behaviour)
    assert sorted(f.trial_id for f in handed) == sorted(t.trial_id("tinypack") for t in trials)
    assert all(f.out.outcome.is_infra for f in handed)
    assert any("not run:" in f.out.reason and "stopped answering" in f.out.reason for f in handed)


def test_one_engine_alone_records_its_failures_rather_than_waiting_for_another(tinypack):
    trials = _trials(tinypack, 3)
    a = Engine()

    def behaviour(node, trial):
        a.up = False
        return Outcome.SANDBOX_ERROR

    handed = _run([Slot(_node("a", a), 1)], trials, behaviour)
    assert len(handed) == 3 and all(f.out.outcome is Outcome.SANDBOX_ERROR for f in handed)


def test_the_driver_records_a_trial_once_whatever_comes_back(tmp_path, tinypack, monkeypatch):
    from evalharness import runner

    recorded = []
    monkeypatch.setattr(runner, "_record", lambda *a, **k: recorded.append(a[4].trial_id("tinypack")))
    trial = _trials(tinypack, 1)[0]
    tid = trial.trial_id("tinypack")

    class Twice:
        name = "twice"
        images_built: list = []

        def run(self, todo, done, stop):
            done(Finished(tid, _out(Outcome.RESOLVED), 1, "a"))
            done(Finished(tid, _out(Outcome.UNRESOLVED), 1, "b"))  # a late answer from a lost node
            done(Finished(tid, None, 1, "c"))  # stopped mid-trial: nothing to record

    summary = runner.RunSummary("r", tmp_path, total=1, skipped=0)
    events = []
    runner._execute(Twice(), store=None, pack=tinypack, todo=[trial], run_dir=tmp_path, summary=summary,
                    progress=lambda e, d: events.append((e, d)))
    assert recorded == [tid] and summary.counts == {"resolved": 1} and summary.nodes == {"a": 1}
    assert any("second result" in d.get("message", "") for e, d in events if e == "log")


@pytest.mark.parametrize("n", [1, 7])
def test_stop_leaves_nothing_running(tinypack, n):
    trials = _trials(tinypack, n)
    stop = threading.Event()
    stop.set()
    executor = ThreadedExecutor([Slot(_node("a", Engine()), 2)], "r", RunConfig(pack="p", harnesses=["h"]),
                                "tinypack", log=lambda m: None)
    handed = []
    original = threads.attempt
    threads.attempt = lambda *a: (_ for _ in ()).throw(AssertionError("ran after stop"))
    try:
        executor.run(trials, handed.append, stop)  # returns: nothing runs, nothing is made up
    finally:
        threads.attempt = original
    assert handed == [] and not any(t.is_alive() for t in executor._threads)
