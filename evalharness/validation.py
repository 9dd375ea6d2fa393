"""Validation that runs: does each task of a pack work as its lists say? (``packs validate --run``)

For each task: build its environment and task images; grade the empty patch once (every
FAIL_TO_PASS must fail, PASS_TO_PASS are recorded); grade the gold patch ``reruns`` times (every
listed test must pass every time). The verdict (``decide``, pure) is one of:

- ``ok``: the gold patch resolves on every run and the empty patch fails every FAIL_TO_PASS;
- ``env_build_failed``: an image could not be built (the build log's tail is kept);
- ``no_recipe``: the task has no environment recipe (the reason says why);
- ``gold_does_not_apply``: the gold patch or test patch does not apply to the base;
- ``flaky``: a listed test changed status between gold runs (per-test pass rates kept);
- ``incomplete``: a run stopped part-way (timed out, or the engine failed under it): it shows neither that
  the FAIL_TO_PASS tests fail at base nor that the gold patch fails, so nothing is decided from it;
- ``gold_fails``: the gold patch does not resolve (the failing tests are named);
- ``empty_passes``: a FAIL_TO_PASS test passes without any fix (named);
- ``infra_error``: the engine failed; not the task's fault, validate again.

Reports are written to ``<pack>/validation/<instance_id>.json`` with a hash of everything the task's
verdict depends on (the task, its resolved environment, the grader version); a run skips tasks whose
current report is not ``ok``, and names each one with its reason. A Harbor pack is validated by
``sources/harbor/run/validate.py`` (oracle and no-op trials) into reports of the same place and verdicts.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from evalharness.errors import ImageBuildError, SandboxError, TaskError
from evalharness.packs import Pack, harbor_parts
from evalharness.types import Outcome, TaskSpec

VALIDATION_DIR = "validation"
VERDICTS = ("ok", "env_build_failed", "no_recipe", "gold_does_not_apply", "incomplete", "flaky", "gold_fails",
            "empty_passes", "infra_error")
NOT_RETRIED = (Outcome.PATCH_APPLY_FAILED.value, Outcome.TASK_ERROR.value)
"""Run outcomes a second run would repeat: a patch that does not apply."""
RETRIED = ("infra_error", "incomplete")
"""Verdicts a later validation runs again (a current report with another verdict is kept)."""
COMPLETE = (Outcome.RESOLVED.value, Outcome.UNRESOLVED.value)
"""The outcomes of a run whose session ended and whose results were read: the only runs whose per-test statuses
are evidence for discovery. A run that timed out, crashed, was judged tampered or reported no tests is not."""
STOPPED_PART_WAY = (Outcome.TESTS_TIMED_OUT.value, Outcome.SANDBOX_ERROR.value, Outcome.INFRA_ERROR.value)
"""Outcomes of a run that stopped for a reason outside the tests: validation (lists known) decides nothing from
it. A run whose tests crash or do not start is evidence there: every FAIL_TO_PASS test failed to pass."""
PASSING = ("passed", "xfail")
SCHEMA = 1
Log = Callable[[str], None]


@dataclass
class Run:
    """One graded run during validation: its outcome and the status of every listed test."""

    outcome: str
    tests: dict[str, str]
    seconds: float = 0.0
    reason: str = ""
    output_tail: str = ""
    """The end of the test command's output (what a reader needs to see why a run failed)."""
    all_tests: dict[str, str] = field(default_factory=dict)
    """Every test the run reported, listed or not (discovery reads it)."""
    retried_after: str = ""
    """The outcome of the run this one replaced (it stopped part-way), or ''."""


def complete(run: Run) -> bool:
    """Is ``run`` evidence about every test it ran (its session ended and its results were read)?"""
    return run.outcome in COMPLETE


def finished(run: Run) -> bool:
    """Did ``run`` end for a reason of the tests' own (not a timeout or an engine failure)?"""
    return run.outcome not in STOPPED_PART_WAY


def incomplete_reason(runs: dict[str, list[Run]], evidence: Callable[[Run], bool] = complete) -> str | None:
    """Why some of ``runs`` (by side: base/empty, gold) are no evidence, or None when all are (pure)."""
    bad = [(side, i, r) for side, rs in runs.items() for i, r in enumerate(rs) if not evidence(r)]
    if not bad:
        return None
    side, i, run = bad[0]
    total = sum(len(rs) for rs in runs.values())
    return (f"{len(bad)} of {total} run(s) did not complete, so none of their test statuses are evidence: "
            f"{side} run {i + 1} ended {run.outcome}" + (f" ({run.reason})" if run.reason else ""))


@dataclass
class Verdict:
    verdict: str
    reason: str
    tests: dict[str, dict] = field(default_factory=dict)
    """Per listed test: its list, status at base, and pass rate over the gold runs."""


def decide(task: TaskSpec, empty: Run | None, gold: list[Run]) -> Verdict:
    """The verdict of a task from its empty-patch run and its gold runs (pure; see the module doc)."""
    f2p, p2p = list(task.FAIL_TO_PASS), list(task.PASS_TO_PASS)
    tests: dict[str, dict] = {}
    for kind, names in (("FAIL_TO_PASS", f2p), ("PASS_TO_PASS", p2p)):
        for name in names:
            statuses = [r.tests.get(name, "missing") for r in gold]
            tests[name] = {"list": kind, "base": empty.tests.get(name, "missing") if empty else None,
                           "gold_pass_rate": (sum(s in PASSING for s in statuses) / len(statuses)) if statuses else None,
                           "gold": statuses}
    if any(r.outcome == Outcome.PATCH_APPLY_FAILED.value for r in gold):
        return Verdict("gold_does_not_apply", "the gold patch does not apply to the task's base", tests)
    if any(r.outcome == Outcome.TASK_ERROR.value for r in [*gold, *([empty] if empty else [])]):
        reason = next(r.reason for r in [*gold, *([empty] if empty else [])] if r.outcome == Outcome.TASK_ERROR.value)
        return Verdict("gold_does_not_apply", reason, tests)
    if empty is None:
        return Verdict("gold_fails", "no empty-patch run", tests)
    unfinished = incomplete_reason({"empty-patch": [empty], "gold": gold}, finished)
    if unfinished:
        return Verdict("incomplete", unfinished, tests)
    flaky = {n: t["gold_pass_rate"] for n, t in tests.items() if t["gold_pass_rate"] not in (None, 0.0, 1.0)}
    if flaky:
        shown = ", ".join(f"{n} ({rate:.0%})" for n, rate in sorted(flaky.items())[:5])
        return Verdict("flaky", f"{len(flaky)} listed test(s) pass on only some gold runs: {shown}", tests)
    if not gold or any(r.outcome != Outcome.RESOLVED.value for r in gold):
        failing = sorted(n for n, t in tests.items() if t["gold_pass_rate"] != 1.0)
        outcome = next((r for r in gold if r.outcome != Outcome.RESOLVED.value), None)
        what = f"{outcome.outcome}: {outcome.reason}" if outcome else "no gold run"
        names = ", ".join(failing[:5]) + (f" and {len(failing) - 5} more" if len(failing) > 5 else "")
        return Verdict("gold_fails", f"the gold patch does not resolve ({what})" + (f"; not passing: {names}"
                                                                                      if failing else ""), tests)
    passing_at_base = sorted(n for n in f2p if tests[n]["base"] in PASSING)
    if passing_at_base:
        names = ", ".join(passing_at_base[:5]) + (f" and {len(passing_at_base) - 5} more"
                                                  if len(passing_at_base) > 5 else "")
        return Verdict("empty_passes", f"{len(passing_at_base)} FAIL_TO_PASS test(s) pass with no fix: {names}", tests)
    return Verdict("ok", f"gold resolves on {len(gold)}/{len(gold)} runs; the empty patch fails every FAIL_TO_PASS",
                   tests)


@dataclass
class Lists:
    """A task's test lists as discovered from runs at base (no fix) and with the gold patch."""

    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    flaky: dict[str, dict[str, float]] = field(default_factory=dict)
    """Tests left out because their status changed between runs of one side: pass rates at base and with gold."""
    broken_by_gold: list[str] = field(default_factory=list)
    """Tests that pass at base on every run and fail with the gold patch on every run (left out)."""
    verdict: str = "ok"
    """``ok``, or why no task can be made: ``no_tests_ran``, ``incomplete_run`` (a run timed out, crashed or
    stopped part-way: no per-test evidence), ``gold_fails_everything`` (no test passes with the gold patch),
    ``nothing_fails_at_base`` (no test goes from failing to passing)."""
    reason: str = ""


def discover(base: list[Run], gold: list[Run]) -> Lists:
    """Pure: FAIL_TO_PASS and PASS_TO_PASS from runs at base and with the gold patch.

    FAIL_TO_PASS: passes on every gold run and on no base run (failed, errored, an expected failure, or absent
    at base, as a test the test patch adds is). PASS_TO_PASS: passes on every run of both sides. A test that passes on some runs
    of one side and not on others is flaky and left out of both lists; so is a test the gold patch breaks.
    Only complete runs are evidence: when any run timed out, crashed or stopped part-way, no list is made
    (``incomplete_run``; ``Validator.discover`` retries such a run once first).
    """
    if not gold or not base:
        return Lists([], [], verdict="no_tests_ran", reason="discovery needs at least one run of each side")
    unfinished = incomplete_reason({"base": base, "gold": gold})
    if unfinished:
        return Lists([], [], verdict="incomplete_run", reason=unfinished)
    names = sorted({n for r in [*base, *gold] for n in r.all_tests})
    if not names:
        return Lists([], [], verdict="no_tests_ran", reason="no run reported any test" + why_no_tests([*gold, *base]))

    def rate(runs: list[Run], name: str) -> float:
        return sum(r.all_tests.get(name) == "passed" for r in runs) / len(runs)  # an xfail is not a pass here

    f2p, p2p, broken, flaky = [], [], [], {}
    for name in names:
        at_base, with_gold = rate(base, name), rate(gold, name)
        if at_base not in (0.0, 1.0) or with_gold not in (0.0, 1.0):
            flaky[name] = {"base": at_base, "gold": with_gold}
        elif with_gold == 1.0:
            (p2p if at_base == 1.0 else f2p).append(name)
        elif at_base == 1.0:
            broken.append(name)
    lists = Lists(f2p, p2p, flaky, broken)
    if not f2p and not p2p:
        lists.verdict, lists.reason = "gold_fails_everything", f"no test passes on every gold run ({len(names)} ran)"
    elif not f2p:
        lists.verdict, lists.reason = "nothing_fails_at_base", (f"every test that passes with the gold patch also "
                                                                f"passes at base ({len(p2p)} tests)")
    else:
        lists.reason = f"{len(f2p)} FAIL_TO_PASS, {len(p2p)} PASS_TO_PASS" + (f", {len(flaky)} flaky left out"
                                                                              if flaky else "")
    return lists


def candidate(**fields) -> TaskSpec:
    """A task whose lists are not known yet (discovery finds them): every other field is checked as usual."""
    lists = {k: fields.pop(k, []) for k in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    task = TaskSpec.model_validate({**fields, "FAIL_TO_PASS": ["(to be discovered)"]})
    return task.model_copy(update=lists)


NETWORK_SIGNS = ("Temporary failure in name resolution", "Name or service not known", "Network is unreachable",
                 "No address associated with hostname", "socket.gaierror", "[Errno -2]", "[Errno -3]", "[Errno 101]",
                 "Failed to establish a new connection", "Max retries exceeded with url", "nodename nor servname")
"""What a test prints when it needs the network (sandboxes have none, as on an air-gapped machine)."""


def why_no_tests(runs: list[Run], lines: int = 3) -> str:
    """What the runs' output says when no test was reported (pure): a likely cause, else the last lines of the
    first run that printed something (a collection error, "no tests ran", a wrong path), else that none did."""
    cause = likely_cause([r.output_tail for r in runs])
    if cause:
        return f": {cause}"
    printed = next((r.output_tail for r in runs if r.output_tail.strip()), "")
    if not printed:
        return ": the test command printed nothing"
    last = [line.strip() for line in printed.strip().splitlines() if line.strip()][-lines:]
    return f"; the output ends: {' | '.join(last)[:400]}"


def likely_cause(outputs: list[str], outcomes: list[str] = ()) -> str | None:
    """A short cause for a gold run that failed, read from its output and outcome (pure): only what they show."""
    if Outcome.TESTS_TIMED_OUT.value in outcomes:
        return ("the test run timed out: a slow or overloaded machine (other work on its cores) or a hanging "
                "test; validate the task again alone (--task ID --force -j 1) before calling it broken")
    text = "\n".join(outputs)
    hits = sorted({sign for sign in NETWORK_SIGNS if sign in text})
    if hits:
        return f"needs the network (sandboxes have none): the output shows {hits[0]!r}"
    if "ModuleNotFoundError: No module named" in text:
        name = text.split("ModuleNotFoundError: No module named", 1)[1].split("\n", 1)[0].strip()
        return f"a module the environment lacks: {name}"
    return None


HARBOR_VALIDATION = 1
"""How a Harbor task is validated (sources/harbor/run/validate.py); part of its reports' hash."""


def task_hash(pack: Pack, task: TaskSpec) -> str:
    """What a task's verdict depends on: the task itself, its resolved environment and test command (for a
    Harbor task: its directory, the pack's overlays and base map, and how it is validated)."""
    if pack.spec.harbor is not None:
        tree = hashlib.sha256(b"\0".join(harbor_parts(pack.root, pack.spec.harbor, [task]))).hexdigest()
        parts = [task.model_dump(mode="json"), "harbor", HARBOR_VALIDATION, tree]
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]
    spec = pack.spec_for(task) if pack.recipe_problem(task) is None else None
    parts = [task.model_dump(mode="json"), spec.model_dump(mode="json", exclude={"description", "name"}) if spec else None]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def report_path(pack: Pack, task: TaskSpec) -> Path:
    return pack.root / VALIDATION_DIR / f"{task.instance_id}.json"


def load_report(pack: Pack, task: TaskSpec) -> dict | None:
    """The task's validation report, or None when there is none or it is stale (the task changed)."""
    path = report_path(pack, task)
    if not path.is_file():
        return None
    try:
        report = json.loads(path.read_text())
    except json.JSONDecodeError:
        return None
    return report if report.get("task_hash") == task_hash(pack, task) else None


def invalid_reason(pack: Pack, task: TaskSpec) -> str | None:
    """Why a run should skip ``task`` (its current validation report is not ok), else None."""
    report = load_report(pack, task)
    if report is None or report["verdict"] in ("ok", "infra_error"):
        return None
    return f"validation: {report['verdict']}: {report['reason']}"


@dataclass
class Validator:
    """Runs validation for tasks of a pack, several at once, writing one report per task."""

    pack: Pack
    images: object  # sandbox.images.ImageBuilder
    sandbox: Callable[..., object]  # (image, spec, task, role) -> a started-on-enter Sandbox context manager
    grade: Callable[..., object]  # grading.grade.grade
    reruns: int = 3
    log: Log = print
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def validate(self, task: TaskSpec, *, discovery: dict | None = None) -> dict:
        """Validate ``task`` and write its report; ``discovery`` (``discovery_json``: the runs its lists were
        discovered from) is kept in the report, so a reader sees why a test was left out."""
        started = time.monotonic()
        report: dict = {"schema": SCHEMA, "instance_id": task.instance_id, "task_hash": task_hash(self.pack, task),
                        "environment": self.pack.environment_key(task), "reruns": self.reruns,
                        **({"discovery": discovery} if discovery is not None else {})}
        problem = self.pack.recipe_problem(task)
        if problem is not None:
            return self._write(task, {**report, "verdict": "no_recipe", "reason": problem}, started)
        spec = self.pack.spec_for(task)
        try:
            env_image = self.images.env_image(self.pack, task)
            image = self.images.task_image(self.pack, task)
            report.update(env_image=env_image, image=image, env_build_s=self.images.durations.get(env_image),
                          task_build_s=self.images.durations.get(image))
        except TaskError as e:
            tail = getattr(e.__cause__, "log_tail", "") or ""
            return self._write(task, {**report, "verdict": "env_build_failed", "reason": e.reason,
                                      "build_log_tail": tail[-4000:]}, started)
        except ImageBuildError as e:
            verdict = "env_build_failed" if e.kind != "transient" else "infra_error"
            return self._write(task, {**report, "verdict": verdict, "reason": e.reason or str(e).splitlines()[0],
                                      "build_log_tail": e.log_tail[-4000:]}, started)
        try:
            empty = self._runs(image, spec, task, b"", 1, finished, "empty patch")[0]
            gold = self._runs(image, spec, task, task.patch.encode(), self.reruns, finished, "gold patch")
        except SandboxError as e:
            return self._write(task, {**report, "verdict": "infra_error", "reason": str(e).splitlines()[0]}, started)
        verdict = decide(task, empty, gold)
        if verdict.verdict in ("gold_fails", "flaky", "incomplete"):
            failed = ([r for r in [empty, *gold] if not finished(r)] if verdict.verdict == "incomplete" else
                      [r for r in gold if r.outcome != Outcome.RESOLVED.value])
            cause = likely_cause([r.output_tail for r in failed], [r.outcome for r in failed])
            if cause:
                report["cause"] = cause
                verdict.reason = f"{verdict.reason} [{cause}]"
        report.update(verdict=verdict.verdict, reason=verdict.reason, tests=verdict.tests,
                      runs={"empty": _run_json(empty), "gold": [_run_json(r) for r in gold]})
        return self._write(task, report, started)

    def discover(self, task: TaskSpec, *, reruns: int = 2) -> tuple[Lists, list[Run], list[Run]]:
        """Run ``task`` (lists may be empty) ``reruns`` times at base and with its gold patch and discover its
        lists (``discover``). Raises TaskError/ImageBuildError when its images cannot be built and
        SandboxError when the engine fails; the caller validates the task made from the lists as usual."""
        image = self.images.task_image(self.pack, task)
        spec = self.pack.spec_for(task)
        base = self._runs(image, spec, task, b"", reruns, complete, "discovery at base")
        gold = self._runs(image, spec, task, task.patch.encode(), reruns, complete, "discovery with the gold patch")
        return discover(base, gold), base, gold

    def _runs(self, image: str, spec, task: TaskSpec, patch: bytes, n: int, evidence: Callable[[Run], bool],
              what: str = "run") -> list[Run]:
        """``n`` graded runs of ``patch``; a run that is no ``evidence`` (it timed out or stopped part-way) is run
        once more in its place, and the retry kept whatever it shows (the decision then names it). Each run
        ends with a progress line (a slow task's runs take minutes each)."""
        runs = []
        for i in range(n):
            run = self._grade(image, spec, task, patch)
            if not evidence(run) and run.outcome not in NOT_RETRIED:
                self.log(f"  {task.instance_id}: {what}, run {i + 1}/{n}: {run.outcome} ({run.seconds:.0f} s), "
                         "run again")
                retry = self._grade(image, spec, task, patch)
                retry.retried_after = f"{run.outcome}: {run.reason}"
                run = retry
            self.log(f"  {task.instance_id}: {what}, run {i + 1}/{n}: {run.outcome} ({run.seconds:.0f} s)")
            runs.append(run)
        return runs

    def _grade(self, image: str, spec, task: TaskSpec, patch: bytes) -> Run:
        t0 = time.monotonic()
        for attempt in range(2):
            try:
                with self.sandbox(image, spec, task) as box:
                    result = self.grade(task, spec, patch, box)
                break
            except SandboxError:
                if attempt == 1:
                    raise
        return Run(result.outcome.value, dict(result.tests), round(time.monotonic() - t0, 1), result.reason,
                   (result.test_output or "")[-3000:], dict(result.all_tests))

    def _write(self, task: TaskSpec, report: dict, started: float) -> dict:
        return write_report(self.pack, task, report, started)


def write_report(pack: Pack, task: TaskSpec, report: dict, started: float) -> dict:
    """Write ``report`` (its ``seconds`` since ``started``) atomically to the task's report path; return it."""
    report["seconds"] = round(time.monotonic() - started, 1)
    path = report_path(pack, task)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return report


def _run_json(run: Run, *, tail: bool | None = None) -> dict:
    """A run as a report keeps it; its output tail by default when it did not resolve."""
    tail = run.outcome != Outcome.RESOLVED.value if tail is None else tail
    return {"outcome": run.outcome, "reason": run.reason, "seconds": run.seconds,
            **({"retried_after": run.retried_after} if run.retried_after else {}),
            **({"output_tail": run.output_tail} if tail else {})}


def discovery_json(lists: Lists, base: list[Run], gold: list[Run]) -> dict:
    """What a validation report keeps of the discovery runs: each run's outcome, and why tests were left out."""
    return {"verdict": lists.verdict, "reason": lists.reason, "FAIL_TO_PASS": len(lists.FAIL_TO_PASS),
            "PASS_TO_PASS": len(lists.PASS_TO_PASS), "flaky": lists.flaky, "broken_by_gold": lists.broken_by_gold,
            "runs": {side: [_run_json(r, tail=not complete(r) or not r.all_tests) for r in runs]
                     for side, runs in (("base", base), ("gold", gold))}}


def validate_pack(validator: Validator, tasks: list[TaskSpec], *, workers: int = 2, force: bool = False,
                  log: Log = print) -> dict[str, dict]:
    """Validate ``tasks`` (those with a current report are kept unless ``force``); a line per task as it ends."""
    reports: dict[str, dict] = {}
    todo = []
    for task in tasks:
        current = None if force else load_report(validator.pack, task)
        if current is not None and current["verdict"] not in RETRIED:
            reports[task.instance_id] = current
        else:
            todo.append(task)
    if reports:
        log(f"{len(reports)} task(s) already validated (current reports kept; --force validates them again)")
    done = len(reports)
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="eh-validate")
    try:
        futures = {pool.submit(validator.validate, t): t for t in todo}
        for future in as_completed(futures):
            task = futures[future]
            report = future.result()
            reports[task.instance_id] = report
            done += 1
            log(f"[{done}/{len(tasks)}] {task.instance_id}: {report['verdict']} ({report['seconds']:.0f} s)"
                + ("" if report["verdict"] == "ok" else f": {report['reason'][:200]}"))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)  # the caller removes the containers; running ones then end
        raise
    pool.shutdown()
    return reports


def summary(reports: dict[str, dict]) -> dict:
    counts = Counter(r["verdict"] for r in reports.values())
    return {"tasks": len(reports), "by_verdict": {v: counts.get(v, 0) for v in VERDICTS if counts.get(v)},
            "ok_fraction": counts.get("ok", 0) / len(reports) if reports else 0.0}
