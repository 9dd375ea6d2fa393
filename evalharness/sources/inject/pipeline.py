"""`packs inject`: defects injected into a library, kept only when its own tests catch them (docs/injection.md).

1. **Sites.** Every mutation site of every library module of the base tree (read from the base task
   image, so it is exactly what tasks start from), ordered by ``select.spread`` with ``--seed``; test files,
   test helpers and pytest plugins (``gate.test_only_modules``) are never mutated.
2. **Pre-screen.** In one long-lived sandbox, the whole suite once per mutant, stopping at the first
   failure: survivors (no test fails), crashes and mutants that hang are dropped.
3. **Discover** (``Validator.discover``): the lists from fresh runs of the defect (empty patch) and the fix
   (gold patch, the defect's reverse); runs that did not complete, mutants that break most of the suite,
   flaky ones and duplicates (same failing tests, same change of code) are dropped (``gate``).
4. **Statement** from the failing tests and what they report (``statement.write_statement``), leak-checked,
   run-specific values masked.
5. **Validate** (``Validator.validate``): fresh runs again; kept only when the verdict is ``ok``, with the
   gate's results in ``metadata.gate``.

Stops when ``count`` tasks are kept or the sites run out; every mutant tried is in the report, and every
rejection is counted by reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time
import tomllib
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from evalharness.errors import ImageBuildError, SandboxError, TaskError, UserError
from evalharness.packs import Pack, PackSpec, find_manifest
from evalharness.sources.inject import gate, mutations, prescreen, select
from evalharness.sources.inject.js import mutants as js_mutants
from evalharness.sources.inject.js import steps as js_steps
from evalharness.sources.inject.statement import (CODE_SUFFIXES, Failure, Location, public_calls, run_values,
                                                  stable_messages, write_statement)
from evalharness.types import TaskSpec
from evalharness.validation import VALIDATION_DIR, Lists, candidate, discovery_json, load_report, report_path

REPORT = "injection-report.json"
PYTEST_PINS = ["pytest==8.3.5", "pluggy==1.7.0", "iniconfig==2.3.1", "packaging==26.4"]
TEST_COMMAND = ("python -m pytest -rA -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit_xml} "
                "{test_files}")
Log = Callable[[str], None]
REJECTIONS = {
    "survived": "no test fails with the defect (an equivalent mutant, or a gap in the tests)",
    "crashed": "the suite with the defect crashed or collected no tests",
    "hangs": "the suite with the defect ran past its time-out",
    "breaks_most": f"more than {gate.MOST:.0%} of the tests fail: the defect breaks the suite wholesale",
    "flaky": "a test changed status between discovery runs",
    "incomplete_run": "a discovery run timed out or died: no per-test evidence",
    "duplicate": "the same tests fail for the same change of code as an earlier mutant",
    "leak": "no failing test or message can be quoted without naming the mutated location",
    "run_values": "the statement would show run-specific values (addresses, temporary paths, ids)",
}
"""Why a mutant is rejected, by verdict (other verdicts are the shared validation's, e.g. ``gold_fails``)."""


def manifest_from_pack(source: Path, out: Path, name: str) -> dict:
    """The new pack's manifest: the environment, test command and timeouts of pack ``source``."""
    path = find_manifest(source)
    data = yaml.safe_load(path.read_text())
    PackSpec.model_validate(data)
    src = data["environment"]["source"]
    local = src.get("path") if src["kind"] == "path" else src.get("url") if src["kind"] == "git" else None
    if local and "://" not in local and not os.path.isabs(local):  # relative to the old pack: make it the new one's
        key = "path" if src["kind"] == "path" else "url"
        src[key] = os.path.relpath((path.parent / local).resolve(), out.resolve())
    keep = {k: v for k, v in data.items() if k in ("environment", "test_command", "log_parser", "timeouts", "bases")}
    return {"name": name, "version": 1, "description": f"Defects injected into {_library(data)} "
            "(evalharness packs inject).", **keep, "tasks": "tasks.jsonl"}


def manifest_from_repo(repo: str, out: Path, name: str, ref: str = "HEAD") -> dict:
    """A manifest for a local folder (its committed files) or a git URL, tested with pinned pytest."""
    local = Path(repo).expanduser()
    if local.exists():
        source = {"kind": "path", "path": os.path.relpath(local.resolve(), out.resolve())}
    else:
        source = {"kind": "git", "url": repo, "ref": ref}
    return {"name": name, "version": 1, "description": f"Defects injected into {repo} (evalharness packs inject).",
            "environment": {"base": "bookworm", "source": source, "pip": PYTEST_PINS, "setup": []},
            "tasks": "tasks.jsonl", "test_command": TEST_COMMAND, "log_parser": "junit",
            "timeouts": {"agent_s": 900, "tests_s": 300, "build_s": 900, "exec_s": 60}}


def _library(manifest: dict, named: str | None = None) -> str:
    """The library's name in statements, ids and logs: an sdist's name and version, else the name its own
    ``package.json`` or ``pyproject.toml`` gives (``named``), else its folder's (a clone is often just ``repo``)."""
    src = manifest["environment"]["source"]
    if src["kind"] == "pypi_sdist":
        return f"{src['name']} {src['version']}"
    return named or Path(str(src.get("path") or src.get("url"))).name.removesuffix(".git")


def id_prefix(library: str) -> str:
    """Task ids start with it: the library's name, lower case, ``@scope/name`` as ``scope-name``."""
    return library.split()[0].lower().replace("_", "-").lstrip("@").replace("/", "-")


def project_name(files: dict[str, bytes]) -> str | None:
    """The name the root ``package.json`` or ``pyproject.toml`` ([project] name) gives, None when neither does."""
    try:
        if "package.json" in files:
            name = json.loads(files["package.json"]).get("name")
        elif "pyproject.toml" in files:
            name = tomllib.loads(files["pyproject.toml"].decode()).get("project", {}).get("name")
        else:
            return None
    except (ValueError, AttributeError, UnicodeDecodeError):  # not JSON/TOML, or not a table: the folder's name
        return None
    return name.strip() if isinstance(name, str) and name.strip() else None


def output_pack(out: Path, manifest: dict) -> Pack:
    """Write ``out/pack.yaml`` (and an empty task file) and the Pack the validator writes reports into."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "pack.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    if not (out / "tasks.jsonl").exists():
        (out / "tasks.jsonl").write_text("")
    return Pack(spec=PackSpec.model_validate(manifest), tasks=[], root=out.resolve(), content_hash="")


@dataclass
class Mutant:
    site: mutations.Site
    defect_patch: str
    gold_patch: str
    screen: prescreen.Screen | None = None

    @property
    def instance_id(self) -> str:
        return hashlib.sha256(self.defect_patch.encode()).hexdigest()[:10]


@dataclass
class Injector:
    pack: Pack
    validator: object  # validation.Validator (its reruns are the validation's gold runs)
    images: object  # sandbox.images.ImageBuilder
    sandbox: Callable[..., object]  # (image, spec, task) -> a started-on-enter sandbox context manager
    count: int
    seed: int = 0
    discover_reruns: int = 1
    workers: int = 1
    max_tried: int | None = None
    language: str = "python"
    """``python`` (libcst mutation classes) or ``node`` (Stryker's mutators, ``js/``)."""
    log: Log = print
    entries: list[dict] = field(default_factory=list)
    kept: list[TaskSpec] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)
    """Modules left out as test code (path -> why), though they look like library modules."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _seen: dict[tuple, str] = field(default_factory=dict)
    _named: str | None = None
    """The name the base tree's package.json/pyproject.toml gives (read with the tree)."""
    _base_command: str = ""
    _limit: float = 0.0
    """The pre-screen's time limit for a mutant's suite (``prescreen.hang_limit`` of the last base timing)."""

    @property
    def library(self) -> str:
        return _library(self.pack.spec.model_dump(mode="json"), self._named)

    @property
    def prefix(self) -> str:
        return id_prefix(self.library)

    def run(self) -> dict:
        started = time.monotonic()
        base = candidate(instance_id=f"{self.prefix}-base", problem_statement="(the unmutated library)",
                         repo=self.prefix)
        spec = self.pack.spec_for(base)
        image = self.images.task_image(self.pack, base)
        with self.sandbox(image, spec, base) as box:
            files = prescreen.read_tree(box, spec.environment.workdir)
            self._named = project_name(files)
            order = self._order(files, box)
            self.log(f"{self.library}: {len(order)} mutation sites in {len({s.path for s in order})} modules")
            command = prescreen.suite_command(spec.test_command, log_parser=spec.log_parser)
            base_run = prescreen.run_suite(box, command, spec.timeouts.tests_s, spec.log_parser)
            passing = [t for t, s in base_run.statuses.items() if s == "passed"]
            if not passing:
                raise UserError(f"the test suite of {self.library} passes no test at base (exit {base_run.exit_code})",
                                f"command: {command}")
            self.log(f"base: {len(passing)} tests pass in {base_run.seconds:.1f} s")
            self._base_command, self._limit = command, prescreen.hang_limit(base_run.seconds)
            self._inject(box, spec, files, order, base_run)
        return self._finish(len(order), base_run, time.monotonic() - started)

    def _order(self, files: dict[str, bytes], box=None) -> list[mutations.Site]:
        rng = random.Random(self.seed)
        if self.language == "node":
            found = js_steps.sites(box, files, self.log)
            return select.spread(found, [lambda s: s.module, lambda s: s.function, lambda s: s.mutation], rng)
        found = []
        test_only = gate.test_only_modules(files)
        for path, source in mutations.iter_library_files(files):
            if path in test_only:
                self.excluded[path] = test_only[path]
                self.log(f"note: {path} never mutated: {test_only[path]}")
                continue
            try:
                found += mutations.sites(source, path)
            except Exception as e:  # libcst cannot parse it (Python 2 code, a template): skip the file
                self.log(f"note: {path} skipped: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
        return select.spread(found, [lambda s: s.module, lambda s: s.function, lambda s: s.mutation], rng)

    def _inject(self, box, spec, files, order, base_run) -> None:
        """Pre-screen in this thread while candidates are validated on ``workers`` others (``_Stream``)."""
        sources = {p: files[p].decode() for p in {s.path for s in order}}
        end = min(self.max_tried or len(order), len(order))
        position = 0
        stream = _Stream(self, files)
        try:
            while len(self.kept) < self.count:
                stream.submit(exhausted=position >= end)
                if position < end and stream.wants_more():
                    mutant = self._screen(box, spec, sources, order[position], base_run)
                    position += 1
                    stream.found(mutant)
                elif not stream.wait():
                    break  # nothing left to screen and nothing in flight
        finally:
            stream.close()
        for mutant in stream.queue + stream.deferred:
            self._entry(mutant)["verdict"] = "not_needed"
        for site in order[position:]:
            self.entries.append({**_site_json(site), "verdict": "not_tried"})

    def _screen(self, box, spec, sources, site, base_run) -> Mutant | None:
        original = sources[site.path]
        mutated = js_mutants.apply(original, site) if isinstance(site, js_mutants.JsSite) \
            else mutations.apply(original, site)
        mutant = Mutant(site, mutations.diff(site.path, original, mutated), mutations.diff(site.path, mutated, original))
        if self._previous(mutant) is not None:  # validated by an earlier, interrupted injection: resume it
            screen = prescreen.Screen("killed", seconds=0.0, reason="validated by an earlier injection (resumed)")
        else:
            limit, note = self._limit, ""
            run = self._run_mutant(box, spec, site.path, original, mutated, limit)
            if run.timed_out:
                run, limit, note = self._recheck_hang(box, spec, site.path, original, mutated, run, limit)
            screen = prescreen.screen(base_run, run, limit)
            screen.reason += note
        mutant.screen = screen
        entry = {**_site_json(site), "verdict": screen.verdict, "reason": screen.reason, "prescreen_s": screen.seconds}
        if screen.verdict == "killed":
            entry["verdict"] = "candidate"
        self.entries.append(entry)
        counts = Counter(e["verdict"] for e in self.entries)
        self.log(f"[tried {len(self.entries)}] {site.mutation} in {site.module}: {entry['verdict']} "
                 f"({screen.seconds:.1f} s; kept {len(self.kept)}/{self.count}; "
                 + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())) + ")")
        return mutant if entry["verdict"] == "candidate" else None

    def _run_mutant(self, box, spec, path: str, original: str, mutated: str, limit: float) -> prescreen.SuiteRun:
        """The suite once with ``mutated`` as ``path`` (stopped at its first failure where the runner can), within
        ``limit`` seconds; the original text is back afterwards."""
        workdir = spec.environment.workdir
        try:
            prescreen.write_source(box, workdir, path, mutated)
            return prescreen.run_suite(box, prescreen.suite_command(spec.test_command, first_failure=True,
                                                                   log_parser=spec.log_parser),
                                       limit, spec.log_parser)
        finally:
            prescreen.write_source(box, workdir, path, original)

    def _recheck_hang(self, box, spec, path, original, mutated, run,
                      had: float) -> tuple[prescreen.SuiteRun, float, str]:
        """A mutant's run that timed out is a hang only at the machine's current speed: re-time the base suite
        (later mutants get the limit it sets); when the machine has slowed (``prescreen.retry_limit``), the mutant
        runs once more within the new limit. ``had`` is the limit ``run`` had. The run to judge, its limit, and what
        the re-timing found."""
        now = prescreen.run_suite(box, self._base_command, spec.timeouts.tests_s, spec.log_parser)
        found = f"; the base suite re-timed took {now.seconds:.1f} s" + (" (timed out)" if now.timed_out else "")
        if now.timed_out:
            return run, had, found
        limit, self._limit = prescreen.retry_limit(run.seconds, now.seconds), prescreen.hang_limit(now.seconds)
        if limit is None:
            return run, had, found
        self.log(f"  the machine slowed (the base suite now takes {now.seconds:.1f} s): the mutant runs again "
                 f"within {limit:.0f} s")
        again = self._run_mutant(box, spec, path, original, mutated, limit)
        return again, limit, found + f"; run again within {limit:.0f} s"

    def _one(self, mutant: Mutant, files: dict[str, bytes]) -> None:
        t0 = time.monotonic()
        entry = self._entry(mutant)
        entry["instance_id"] = f"{self.prefix}-{mutant.instance_id}"
        task = candidate(instance_id=entry["instance_id"], problem_statement="(written after discovery)",
                         repo=self.prefix, version=self.pack.spec.environment.source.model_dump().get("version", ""),
                         defect_patch=mutant.defect_patch, patch=mutant.gold_patch,
                         created_at=time.strftime("%Y-%m-%d", time.gmtime()),
                         metadata={"origin": "injected", "mutation": mutant.site.mutation,
                                   "module": mutant.site.module, "path": mutant.site.path,
                                   "function": mutant.site.function,
                                   "line": mutant.site.line, "seed": self.seed})
        try:
            verdict, reason = self._check(mutant, task, files, entry)
        except SandboxError as e:  # the engine failed for this candidate: not its fault, and not the others'
            verdict, reason = "infra_error", str(e).splitlines()[0]
        entry.update(verdict=verdict, reason=reason, validate_s=round(time.monotonic() - t0, 1))
        if verdict != "ok":
            report_path(self.pack, task).unlink(missing_ok=True)
        self.log(f"  {entry['instance_id']} ({mutant.site.mutation}): {verdict} ({entry['validate_s']:.0f} s)"
                 + ("" if verdict == "ok" else f": {reason[:160]}") + f"; kept {len(self.kept)}/{self.count}")

    def _check(self, mutant: Mutant, task: TaskSpec, files: dict[str, bytes], entry: dict) -> tuple[str, str]:
        previous = self._previous(mutant)
        found = self._discover(task, previous, entry)
        if isinstance(found, tuple):
            return found
        lists = found
        f2p = sorted(lists.FAIL_TO_PASS)
        key = select.duplicate_key(set(f2p), mutations.hunk_code(mutant.defect_patch))
        with self._lock:
            if key in self._seen:
                entry["duplicate_of"] = self._seen[key]
                return "duplicate", f"the same tests fail for the same change of code as {self._seen[key]}"
            self._seen[key] = mutant.site.key
        messages = self._messages(task, f2p)
        failures = [Failure(t, messages.get(t, "")) for t in f2p]
        where = Location(mutant.site.path, mutant.site.function_name,
                         tuple(p for p in files if p.endswith(CODE_SUFFIXES)))
        statement = write_statement(failures, library=self.library, where=where, gold_patch=mutant.gold_patch,
                                    files=files)
        if statement is None:
            return "leak", "no failing test and message can be quoted without naming the mutated location"
        if run_values(statement):
            return "run_values", f"the statement shows run-specific values: {run_values(statement)[:3]}"
        calls = set().union(*(public_calls(f.test, files) for f in failures))
        checks = self._checks(mutant, lists)
        metadata = {**task.metadata, "test_calls_function": mutant.site.function_name in calls,
                    "gate": {c.name: {"passed": c.passed, "detail": c.detail} for c in checks}}
        task = task.model_copy(update={"FAIL_TO_PASS": lists.FAIL_TO_PASS, "PASS_TO_PASS": lists.PASS_TO_PASS,
                                       "problem_statement": statement, "metadata": metadata})
        entry["fail_to_pass"] = len(lists.FAIL_TO_PASS)
        report = ((load_report(self.pack, task) if previous else None)
                  or self.validator.validate(task, discovery=entry.get("discovery")))
        if report["verdict"] == "ok":
            with self._lock:
                if len(self.kept) >= self.count:
                    return "not_needed", "enough tasks were kept meanwhile"
                self.kept.append(task)
        return report["verdict"], report.get("reason", "")

    def _discover(self, task: TaskSpec, previous: Lists | None, entry: dict) -> Lists | tuple[str, str]:
        """The lists of ``task``, or (verdict, reason) when discovery makes no task: its runs did not complete
        (only complete runs are evidence), or the gate rejects its lists. The discovery runs are kept in
        ``entry["discovery"]`` (and so in the validation report), so a reader sees why a test was left out."""
        if previous is not None:
            return previous
        try:
            lists, base, gold = self.validator.discover(task, reruns=self.discover_reruns)
        except (TaskError, ImageBuildError) as e:
            return "env_build_failed", getattr(e, "reason", "") or str(e).splitlines()[0]
        except SandboxError as e:
            return "infra_error", str(e).splitlines()[0]
        entry["discovery"] = discovery_json(lists, base, gold)
        rejected = gate.runs_rejection([(r.outcome, r.seconds) for r in base], [(r.outcome, r.seconds) for r in gold])
        if rejected:
            return rejected
        if lists.verdict != "ok":
            return f"discovery_{lists.verdict}", lists.reason
        rejected = gate.lists_rejection(len(lists.FAIL_TO_PASS), len(lists.PASS_TO_PASS), sorted(lists.flaky))
        return rejected or lists

    def _checks(self, mutant: Mutant, lists: Lists) -> list[gate.Check]:
        """The gate results a kept task carries (deterministic: no timings, so a resumed run writes the same)."""
        f2p, total = len(lists.FAIL_TO_PASS), len(lists.FAIL_TO_PASS) + len(lists.PASS_TO_PASS)
        return [
            gate.Check("library_code", True, f"{mutant.site.path} is library code, not a test file, test helper "
                                             "or pytest plugin"),
            gate.Check("terminates", True, "not a constant condition; the pre-screen run finished in time (4x the "
                                           "base run + 10 s); every discovery run completed"),
            gate.Check("not_wholesale", True, f"{f2p} of {total} tests fail (at most {gate.MOST:.0%})"),
            gate.Check("stable", True, "no test changed status between discovery runs"),
            gate.Check("distinct", True, "no earlier mutant fails the same tests with the same change of code"),
            gate.Check("statement_no_location", True, "the statement names no file, line, or mutated function "
                                                      "the failing tests do not call"),
            gate.Check("statement_no_run_values", True, "no memory address, temporary path, process or object id "
                                                        "in the statement"),
        ]

    def _previous(self, mutant: Mutant) -> Lists | None:
        """The lists of this mutant's task from the ok validation report an earlier, interrupted injection
        into this pack left (its discovery is not repeated; its statement is written again, and the task is
        validated again unless the report is still current)."""
        path = self.pack.root / VALIDATION_DIR / f"{self.prefix}-{mutant.instance_id}.json"
        try:
            report = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            return None
        if report.get("verdict") != "ok":
            return None
        tests = report.get("tests", {})
        return Lists(sorted(t for t, v in tests.items() if v["list"] == "FAIL_TO_PASS"),
                     sorted(t for t, v in tests.items() if v["list"] == "PASS_TO_PASS"), reason="resumed")

    def _messages(self, task: TaskSpec, tests: list[str]) -> dict[str, str]:
        """What each failing test reports with the defect: its tests run twice in a sandbox of the task image,
        and what differs between the two runs (an address, a process id) masked."""
        spec = self.pack.spec_for(task)
        command = prescreen.suite_command(spec.test_command, tests=tests[:20], log_parser=spec.log_parser)
        with self.sandbox(self.images.task_image(self.pack, task), spec, task) as box:
            first, second = [prescreen.run_suite(box, command, spec.timeouts.tests_s, spec.log_parser)
                             for _ in range(2)]
        return stable_messages(first.messages, second.messages)

    def _entry(self, mutant: Mutant) -> dict:
        return next(e for e in self.entries if e["site"] == mutant.site.key)

    def _finish(self, sites: int, base_run, seconds: float) -> dict:
        out = self.pack.root
        kept = sorted(self.kept, key=lambda t: t.instance_id)
        (out / "tasks.jsonl").write_text("".join(json.dumps(t.model_dump(mode="json"), sort_keys=False) + "\n"
                                                 for t in kept))
        tried = [e for e in self.entries if e["verdict"] != "not_tried"]
        screened = [e["prescreen_s"] for e in tried if "prescreen_s" in e]
        validated = [e["validate_s"] for e in tried if "validate_s" in e]
        report = {"library": self.library, "seed": self.seed, "count": self.count, "sites": sites,
                  "base_tests_passing": sum(s == "passed" for s in base_run.statuses.values()),
                  "tried": len(tried), "kept": len(kept), "seconds": round(seconds, 1),
                  "prescreen_s_per_mutant": round(sum(screened) / len(screened), 2) if screened else None,
                  "validate_s_per_candidate": round(sum(validated) / len(validated), 1) if validated else None,
                  "by_verdict": dict(sorted(Counter(e["verdict"] for e in tried).items())),
                  "rejected_by_reason": rejected_by_reason(tried),
                  "excluded_modules": dict(sorted(self.excluded.items())),
                  "by_class": _by_class(tried),
                  "kept_by_module": dict(sorted(Counter(t.metadata["module"] for t in kept).items())),
                  "mutants": tried}
        (out / REPORT).write_text(json.dumps(report, indent=1) + "\n")
        return report


def rejected_by_reason(entries: list[dict]) -> dict:
    """Rejected mutants counted by verdict, most first, each with why (every verdict but ``ok`` and
    ``not_needed``: a validated candidate left over once enough tasks were kept is not rejected)."""
    counts = Counter(e["verdict"] for e in entries if e["verdict"] not in ("ok", "not_needed", "not_tried"))
    return {v: {"count": n, "why": REJECTIONS.get(v) or next(e.get("reason", "") for e in entries
                                                             if e["verdict"] == v)}
            for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}


def _by_class(entries: list[dict]) -> dict:
    table: dict[str, Counter] = {}
    for e in entries:
        table.setdefault(e["mutation"], Counter())[e["verdict"]] += 1
    return {name: {"tried": sum(c.values()), "kept": c.get("ok", 0), **dict(sorted(c.items()))}
            for name, c in sorted(table.items())}


class _Stream:
    """Candidates validated on ``workers`` threads while the pre-screen goes on: it keeps at most ``workers``
    waiting and pauses while the kept and in-flight ones would reach ``count``. They are validated in the order
    they were found (the sites' order, spread over modules and functions), except that one in a function that
    already had a candidate validated waits until the sites run out; so the same seed keeps the same tasks
    whatever the timing."""

    def __init__(self, injector: "Injector", files: dict[str, bytes]):
        self.injector, self.files = injector, files
        self.queue: list[Mutant] = []
        self.deferred: list[Mutant] = []
        self.pending: set = set()
        self.functions: set[tuple[str, str]] = set()
        self.pool = ThreadPoolExecutor(max_workers=max(1, injector.workers), thread_name_prefix="eh-inject")

    def found(self, mutant: Mutant | None) -> None:
        if mutant is None:
            return
        function = (mutant.site.path, mutant.site.function)
        (self.deferred if function in self.functions else self.queue).append(mutant)
        self.functions.add(function)
        self._reap({f for f in self.pending if f.done()})

    def _room(self) -> bool:
        inj = self.injector
        return len(inj.kept) + len(self.pending) < inj.count

    def wants_more(self) -> bool:
        return len(self.queue) < self.injector.workers and self._room()

    def submit(self, exhausted: bool) -> None:
        if exhausted:
            self.queue, self.deferred = self.queue + self.deferred, []
        while self.queue and len(self.pending) < self.injector.workers and self._room():
            self.pending.add(self.pool.submit(self.injector._one, self.queue.pop(0), self.files))

    def wait(self) -> bool:
        """Wait for a validation to end; False when none is in flight."""
        if not self.pending:
            return False
        done, _ = wait(self.pending, return_when=FIRST_COMPLETED)
        self._reap(done)
        return True

    def _reap(self, done: set) -> None:
        self.pending -= done
        for future in done:
            future.result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _site_json(site: mutations.Site) -> dict:
    return {"site": site.key, "mutation": site.mutation, "path": site.path, "module": site.module,
            "function": site.function, "line": site.line, "before": site.before, "after": site.after}


def summary_lines(report: dict) -> list[str]:
    lines = [f"{report['library']}: {report['kept']} task(s) kept of {report['tried']} mutant(s) tried "
             f"({report['sites']} sites; {report['seconds']:.0f} s)",
             "  verdicts: " + ", ".join(f"{v} {n}" for v, n in report["by_verdict"].items()),
             "  kept by class: " + ", ".join(f"{c} {v['kept']}/{v['tried']}" for c, v in report["by_class"].items()),
             "  kept by module: " + ", ".join(f"{m} {n}" for m, n in report["kept_by_module"].items())]
    lines += [f"  rejected: {v} {r['count']} ({r['why']})" for v, r in report.get("rejected_by_reason", {}).items()]
    lines += [f"  never mutated: {p} ({why})" for p, why in report.get("excluded_modules", {}).items()]
    return lines
