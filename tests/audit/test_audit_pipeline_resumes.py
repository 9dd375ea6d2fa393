"""The audit pipeline without Docker: findings stored and written, a resumed audit reruns only what changed,
a crashing probe is an error finding (not a stop), investigator seeds resume one by one."""

import json
from pathlib import Path

import pandas as pd

from evalharness.audit.context import AuditContext
from evalharness.audit.findings import Finding
from evalharness.audit.pipeline import Auditor, Investigator
from evalharness.packs import load_pack
from evalharness.store import Store

QUICKSTART = Path(__file__).resolve().parents[2] / "tasks" / "quickstart"


class Counting:
    """A probe that flags the tasks named in ``flag`` and counts its calls."""

    def __init__(self, name="count", needs="task", flag=(), version=1, crash=()):
        self.name, self.family, self.rule, self.version, self.needs = name, "underspecified", "test", version, needs
        self.flag, self.crash, self.calls = set(flag), set(crash), []

    def run(self, task, ctx):
        self.calls.append(task.instance_id)
        if task.instance_id in self.crash:
            raise KeyError("boom")
        hit = task.instance_id in self.flag
        return Finding(task.instance_id, self.name, self.family, hit, 2 if hit else 0, "planted" if hit else "")


def _setup(tmp_path):
    pack = load_pack(QUICKSTART)
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    return pack, store, pack.tasks[:3]


def test_findings_are_stored_and_written_and_a_second_audit_reruns_nothing(tmp_path):
    pack, store, tasks = _setup(tmp_path)
    probe = Counting(flag={tasks[0].instance_id})
    Auditor(pack, store, AuditContext(pack), [probe], out_dir=tmp_path / "audits").run(tasks, log=lambda _: None)
    assert sorted(probe.calls) == sorted(t.instance_id for t in tasks)
    rows = store.findings(pack.name)
    assert [(r["task_id"], r["flagged"]) for r in rows if r["flagged"]] == [(tasks[0].instance_id, True)]
    written = json.loads((tmp_path / "audits" / pack.name / "findings" / f"{tasks[0].instance_id}.json").read_text())
    assert written["findings"][0]["reason"] == "planted"
    again = Counting(flag={tasks[0].instance_id})
    Auditor(pack, store, AuditContext(pack), [again], out_dir=tmp_path / "audits").run(tasks, log=lambda _: None)
    assert again.calls == []
    forced = Counting()
    Auditor(pack, store, AuditContext(pack), [forced], out_dir=tmp_path / "audits", force=True).run(tasks[:1])
    assert forced.calls == [tasks[0].instance_id]


def test_a_new_probe_version_or_new_runs_make_the_probe_run_again(tmp_path):
    pack, store, tasks = _setup(tmp_path)
    Auditor(pack, store, AuditContext(pack), [Counting()], out_dir=tmp_path).run(tasks, log=lambda _: None)
    bumped = Counting(version=2)
    Auditor(pack, store, AuditContext(pack), [bumped], out_dir=tmp_path).run(tasks, log=lambda _: None)
    assert len(bumped.calls) == 3
    runs = Counting(name="runs", needs="runs")
    Auditor(pack, store, AuditContext(pack), [runs], out_dir=tmp_path).run(tasks, log=lambda _: None)
    trials = pd.DataFrame([{"run_id": "r1", "task_id": tasks[0].instance_id, "harness": "h", "model": "m",
                            "seed": 0, "outcome": "unresolved", "infra": False}])
    later = Counting(name="runs", needs="runs")
    Auditor(pack, store, AuditContext(pack, trials=trials), [later], out_dir=tmp_path).run(tasks, log=lambda _: None)
    assert later.calls == [tasks[0].instance_id]  # only the task whose stored runs changed


def test_a_crashing_probe_becomes_an_error_finding_that_reruns_next_time(tmp_path):
    pack, store, tasks = _setup(tmp_path)
    lines = []
    crash = Counting(crash={tasks[1].instance_id})
    done = Auditor(pack, store, AuditContext(pack), [crash], out_dir=tmp_path).run(tasks, log=lines.append)
    [err] = [f for f in done[tasks[1].instance_id] if f.status == "error"]
    assert "KeyError" in err.reason and "traceback" in err.evidence
    assert len(lines) == 3 and any("1 error" in line for line in lines)
    fixed = Counting()
    Auditor(pack, store, AuditContext(pack), [fixed], out_dir=tmp_path).run(tasks, log=lambda _: None)
    assert fixed.calls == [tasks[1].instance_id]


def test_investigator_seeds_are_stored_one_by_one_and_only_missing_seeds_run(tmp_path):
    pack, store, tasks = _setup(tmp_path)
    asked = []

    def run(task, ctx, seeds):
        asked.append((task.instance_id, list(seeds)))
        return [Finding(task.instance_id, "investigator", "overly_strict" if s == 1 else None, s == 1,
                        3 if s == 1 else 0, seed=s, status="ok") for s in seeds]

    Auditor(pack, store, AuditContext(pack), [], out_dir=tmp_path,
            investigator=Investigator(run, seeds=2, config={"m": 1})).run(tasks[:1], log=lambda _: None)
    assert asked == [(tasks[0].instance_id, [0, 1])]  # seeds count from 0, as a run's do
    stored = [(r["seed"], r["flagged"], r["family"]) for r in store.findings(pack.name)]
    assert stored == [(-1, True, "overly_strict"), (0, False, None), (1, True, "overly_strict")]  # ensemble: seed -1
    [combined] = [r for r in store.findings(pack.name) if r["seed"] == -1]
    assert combined["evidence"]["agreement"] == 0.5
    asked.clear()
    Auditor(pack, store, AuditContext(pack), [], out_dir=tmp_path,
            investigator=Investigator(run, seeds=3, config={"m": 1})).run(tasks[:1], log=lambda _: None)
    assert asked == [(tasks[0].instance_id, [2])]


def test_a_skipped_finding_is_asked_again_an_answered_one_is_kept(tmp_path):
    pack, store, tasks = _setup(tmp_path)

    class Skipping(Counting):
        def run(self, task, ctx):
            self.calls.append(task.instance_id)
            return Finding(task.instance_id, self.name, self.family, False, status="skipped", reason="nothing")

    Auditor(pack, store, AuditContext(pack), [Skipping(), Counting(name="answers")], out_dir=tmp_path).run(
        tasks, log=lambda _: None)
    skipping, answering = Skipping(), Counting(name="answers")
    Auditor(pack, store, AuditContext(pack), [skipping, answering], out_dir=tmp_path).run(tasks, log=lambda _: None)
    assert len(skipping.calls) == 3 and answering.calls == []


def test_a_stale_seed_of_an_older_investigator_is_forgotten_a_current_one_kept(tmp_path):
    """Investigator seeds once counted from 1: a resumed audit (seeds 0..K-1) must not keep an old seed K's flag."""
    pack, store, tasks = _setup(tmp_path)
    task = tasks[0].instance_id
    store.record_finding(pack.name, Finding(task, "investigator", "validity", True, 3, "an old flag", seed=2,
                                            inputs_hash="made-by-an-older-configuration"))

    def run(task, ctx, seeds):
        return [Finding(task.instance_id, "investigator", None, False, 0, seed=s) for s in seeds]

    Auditor(pack, store, AuditContext(pack), [], out_dir=tmp_path,
            investigator=Investigator(run, seeds=2, config={"m": 1})).run(tasks[:1], log=lambda _: None)
    rows = {r["seed"]: r for r in store.findings(pack.name)}
    assert sorted(rows) == [-1, 0, 1] and not any(r["flagged"] for r in rows.values())
    written = json.loads((tmp_path / pack.name / "findings" / f"{task}.json").read_text())["findings"]
    assert sorted(f["seed"] for f in written) == [-1, 0, 1]
    Auditor(pack, store, AuditContext(pack), [], out_dir=tmp_path,  # seeds 0-2 now, then a smaller --seeds:
            investigator=Investigator(run, seeds=3, config={"m": 1})).run(tasks[:1], log=lambda _: None)
    Auditor(pack, store, AuditContext(pack), [], out_dir=tmp_path,  # seed 2 is current, so kept
            investigator=Investigator(run, seeds=2, config={"m": 1})).run(tasks[:1], log=lambda _: None)
    assert sorted(r["seed"] for r in store.findings(pack.name)) == [-1, 0, 1, 2]
