"""Mine tasks from a repository's history (``packs mine``): first-parent commits that change library code
and tests become candidates; each is discovered, validated and kept only when ``validation`` says ``ok``.

Per commit (newest first, deterministic):

1. **Select** (pure, ``mine_rules.split_change``): base = first parent; test files -> hidden ``test_patch``,
   library files -> gold ``patch``, docs and packaging left out.
2. **Statement** (``mine_rules.statement_for``): the export's issue or PR text, else the commit or merge
   message; optionally rewritten by a model (``--rewrite-model``) so it reads as a report.
3. **Leak check** (``evalharness.sources.leak``): a statement that gives the fix away is rewritten (with a
   model) or the candidate is dropped as ``leak``.
3b. **Quality gate** (``evalharness.quality``, pure): the gold patch (size, generated files, data) before
   the statement is made, the final statement (changelog, CI note, bare title, unseen commit) after; a
   failed check is the candidate's verdict, and a kept task carries every check in ``metadata.gate``.
4. **Discover** (``Validator.discover``): FAIL_TO_PASS / PASS_TO_PASS from runs at base and with the gold patch.
5. **Validate** (``Validator.validate``): fresh runs; the task is kept only if the verdict is ``ok``.
6. **Coverage gate** (``quality.measure``, one diagnostic run with the gold patch): a validated task whose
   FAIL_TO_PASS tests execute none of the changed lines (``f2p_misses_change``) or whose changed modules no
   PASS_TO_PASS test executes (``no_p2p_guard``) is rejected; a kept task carries ``metadata.gate.coverage``.

Every commit gets an entry in ``PACK/mining/<id>.json`` (resumable: finished entries are kept, ``infra_error``
ones are examined again) and in ``PACK/mining-report.json``; kept tasks go to ``PACK/tasks.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

import git

from evalharness.errors import HarnessError, ImageBuildError, SandboxError, TaskError, UserError
from evalharness.packs import Pack, load_spec
from evalharness.quality import gate as quality
from evalharness.sources import mine_rules as rules
from evalharness.types import TaskSpec

SCHEMA = 1
MINING_DIR = "mining"
REPORT = "mining-report.json"
Log = Callable[[str], None]


@dataclass
class Commit:
    """One first-parent commit, as the miner reads it."""

    sha: str
    parent: str | None
    date: str
    subject: str
    message: str
    is_merge: bool
    paths: list[str]
    merged_messages: list[str] = field(default_factory=list)


class History:
    """A repository's first-parent history, read with gitpython (a local path, or a URL cloned bare to a temp dir)."""

    def __init__(self, repo: str):
        self.url = repo
        local = Path(repo).expanduser()
        self._tmp = None
        if local.exists():
            self.path = local.resolve()
        else:
            self._tmp = tempfile.TemporaryDirectory(prefix="evalharness-mine-")
            try:
                git.Repo.clone_from(repo, self._tmp.name, bare=True)
            except git.GitCommandError as e:
                raise UserError(f"cannot clone {repo}", str(e).strip().splitlines()[-1]) from e
            self.path = Path(self._tmp.name)
        try:
            self.repo = git.Repo(self.path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as e:
            raise UserError(f"{repo} is not a git repository") from e
        self.name = Path(repo.rstrip("/")).name.removesuffix(".git")

    def tip(self, ref: str) -> str:
        try:
            return self.repo.commit(ref).hexsha
        except (git.BadName, ValueError) as e:
            raise UserError(f"{self.url}: {ref!r} is not a commit") from e

    def commits(self, ref: str, since: str | None, until: str | None) -> list[Commit]:
        kwargs = {k: v for k, v in (("since", since), ("until", until)) if v}
        out = []
        for c in self.repo.iter_commits(ref, first_parent=True, **kwargs):
            parent = c.parents[0].hexsha if c.parents else None
            paths = self._git("diff", "--name-only", "-z", "--no-renames", parent, c.hexsha).split("\0") if parent else []
            merged = []
            if len(c.parents) > 1:
                merged = [m for m in self._git("log", "--no-merges", "--format=%B%x00", f"{parent}..{c.hexsha}")
                          .split("\0") if m.strip()]
            out.append(Commit(c.hexsha, parent, c.committed_datetime.isoformat(), c.summary if isinstance(c.summary, str)
                              else c.summary.decode(errors="replace"), c.message if isinstance(c.message, str)
                              else c.message.decode(errors="replace"), len(c.parents) > 1, [p for p in paths if p],
                              merged))
        return out

    def diff(self, parent: str, commit: str, paths: list[str]) -> str:
        return self._git("diff", "--binary", "--no-renames", "--no-color", parent, commit, "--", *paths) if paths else ""

    def files(self, commit: str) -> list[str]:
        return [p for p in self._git("ls-tree", "-r", "-z", "--name-only", commit).split("\0") if p]

    def show(self, commit: str, path: str) -> str | None:
        try:
            return self._git("show", f"{commit}:{path}")
        except git.GitCommandError:
            return None

    def _git(self, *args: str) -> str:
        return self.repo.git.execute(["git", *args], strip_newline_in_stdout=False)


def first_candidates(commits: list[Commit], limit: int, language: str = "python") -> list[Commit]:
    """The newest commits up to (not past) the ``limit``-th candidate (``--max``); later non-candidates are cut too."""
    kept, found = [], 0
    for commit in commits:
        is_candidate = commit.parent is not None and rules.split_change(commit.paths, language).verdict is None
        if is_candidate and found >= limit:
            break
        found += is_candidate
        kept.append(commit)
    return kept


def write_manifest(out: Path, name: str, history: History, ref: str, url: str, *, python: str | None = None,
                   pip: list[str] | None = None, setup: list[str] | None = None,
                   test_command: str | None = None, language: str = "python") -> Path:
    """``out/pack.yaml`` for the pack being mined: the environment ``packs new`` detects at ``ref``
    (``scaffold.detect``, or the language module's: one detection for both commands), with the command
    line's replacements."""
    from evalharness.sources import scaffold

    if language != "python":
        return _write_language_manifest(out, name, history, ref, url, language, python=python, pip=pip, setup=setup,
                                        test_command=test_command)
    found = scaffold.detect(history.files(ref), lambda path: history.show(ref, path))
    if python:
        base = next((b for b, v in scaffold.BASES if v == python), None)
        if base is None:
            raise UserError(f"--python {python}: no built-in base ships it",
                            "built-in: " + ", ".join(f"{v} ({b})" for b, v in scaffold.BASES))
        found.python, found.base = scaffold.Choice(python, "given with --python"), base
    if pip:
        found.pip = scaffold.Choice(list(pip), "given with --pip")
    if setup:
        found.install = scaffold.Choice(list(setup), "given with --setup")
    text = scaffold.render_manifest(name, found, url=url, ref=ref, where=f"the history of {history.name}")
    text = text.replace("`evalharness packs new`", "`evalharness packs mine`", 1)
    text = _with_test_command(text, test_command)
    text = _with_task_setup(text, found.install.value)
    path = out / "pack.yaml"
    path.write_text(text)
    return path


def _with_test_command(text: str, test_command: str | None) -> str:
    if not test_command:
        return text
    lines = [f"test_command: {json.dumps(test_command)}  # given with --test-command"
             if line.startswith("test_command:") else line for line in text.splitlines()]
    return "\n".join(lines) + "\n"


def _write_language_manifest(out: Path, name: str, history: History, ref: str, url: str, language: str, *,
                             python: str | None, pip: list[str] | None, setup: list[str] | None,
                             test_command: str | None) -> Path:
    """A non-Python pack's ``pack.yaml`` from its language module (``docs/languages.md``); its ``task_setup``
    already re-installs the dependencies at each task's base commit where they differ."""
    from dataclasses import replace

    from evalharness.languages.base import Choice
    from evalharness.languages.registry import get

    if python or pip:
        raise UserError(f"--python and --pip are for Python projects; this one is {language}",
                        "give --setup and --test-command, or edit pack.yaml")
    module = get(language)
    found = module.detect(history.files(ref), lambda path: history.show(ref, path))
    if setup:
        found = replace(found, install=Choice(list(setup), "given with --setup"),
                        task_setup=Choice((found.task_setup.value[0], list(setup)), found.task_setup.reason))
    text = module.render_manifest(name, found, url=url, ref=ref, where=f"the history of {history.name}")
    text = _with_test_command(text.replace("`evalharness packs new`", "`evalharness packs mine`", 1), test_command)
    path = out / "pack.yaml"
    path.write_text(text)
    return path


def _with_task_setup(text: str, setup: list[str]) -> str:
    """``pack.yaml`` text with ``environment.task_setup`` after ``setup`` (``mine_env.task_setup``: each task's
    environment at its own base commit), when the environment installs the project."""
    from evalharness.sources.mine_env import task_setup

    chosen = task_setup(list(setup))
    if not chosen.steps:
        return text
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  setup:")) + 1
    lines[at:at] = [f"  # {chosen.reason}", "  task_setup: [" + ", ".join(json.dumps(s) for s in chosen.steps) + "]"]
    return "\n".join(lines) + "\n"


def source_url(repo: str, out: Path) -> str:
    """A local repository as a path relative to the pack folder (as git sources take it), else the URL."""
    local = Path(repo).expanduser()
    return os.path.relpath(local.resolve(), out.resolve()) if local.exists() else repo


@dataclass
class Miner:
    """Examines candidates of one pack: statement, leak check, discovery, validation (``validator`` runs Docker)."""

    pack: Pack
    history: History
    validator: object  # validation.Validator
    discover_reruns: int = 2
    export: dict[int, dict] = field(default_factory=dict)
    rewriter: Callable[..., str] | None = None
    """(statement, test_patch, leaks) -> a rewritten statement (``--rewrite-model``)."""
    thresholds: quality.Thresholds = quality.DEFAULT
    """The quality gate's thresholds (``--max-gold-bytes``)."""
    coverage: bool = True
    """Run the coverage gate after validation (``--no-coverage`` turns it off)."""
    language: str = "python"
    """The project's language (``languages.registry``): how changed paths are sorted into tests and library."""

    def examine(self, commit: Commit) -> tuple[dict, TaskSpec | None]:
        started = time.monotonic()
        entry = {"commit": commit.sha, "date": commit.date, "subject": commit.subject[:200],
                 "kind": "merge" if commit.is_merge else "commit",
                 "instance_id": rules.instance_id(self.history.name, commit.sha)}
        task, entry = self._examine(commit, entry)
        entry["seconds"] = round(time.monotonic() - started, 1)
        return entry, task

    def _examine(self, commit: Commit, entry: dict) -> tuple[TaskSpec | None, dict]:
        if commit.parent is None:
            return None, {**entry, "verdict": "no_parent", "reason": rules.VERDICTS["no_parent"]}
        split = rules.split_change(commit.paths, self.language)
        entry["files"] = {"test": split.test, "source": split.source, "dropped": split.dropped}
        if split.verdict:
            return None, {**entry, "verdict": split.verdict, "reason": rules.VERDICTS[split.verdict]}
        statement = rules.statement_for(commit.message, is_merge=commit.is_merge,
                                        merged_messages=commit.merged_messages, export=self.export)
        entry["statement_source"] = statement.source
        if statement.messages:
            entry["squashed_messages"] = statement.messages
        if not statement.text:
            return None, {**entry, "verdict": "no_statement", "reason": rules.VERDICTS["no_statement"]}
        gold = self.history.diff(commit.parent, commit.sha, split.source)
        test_patch = self.history.diff(commit.parent, commit.sha, split.test)
        rejected = self._gate(None, gold, test_patch, entry)
        if rejected:
            return None, rejected
        try:
            text, leaks = self._statement(statement.text, gold, test_patch, commit, entry)
        except HarnessError as e:  # the rewrite model failed: not the candidate's fault
            return None, {**entry, "verdict": "infra_error", "reason": f"rewrite model: {str(e).splitlines()[0]}"}
        if leaks:
            return None, {**entry, "verdict": "leak", "reason": f"{len(leaks)} leak(s): " + "; ".join(leaks)[:300],
                          "leaks": leaks}
        rejected = self._gate(text, gold, test_patch, entry)
        if rejected:
            return None, rejected
        from evalharness.validation import candidate, discovery_json

        entry["examined"] = True
        task = candidate(instance_id=entry["instance_id"], repo=self.history.name, base_commit=commit.parent,
                         problem_statement=text, patch=gold, test_patch=test_patch, created_at=commit.date,
                         metadata={"origin": "mined", "commit": commit.sha,
                                   "statement_source": entry["statement_source"], "gate": entry["gate"],
                                   **({"squashed_messages": entry["squashed_messages"]}
                                      if "squashed_messages" in entry else {})})
        try:
            lists, base, with_gold = self.validator.discover(task, reruns=self.discover_reruns)
        except TaskError as e:
            return None, {**entry, "verdict": "env_build_failed", "reason": e.reason[:500]}
        except ImageBuildError as e:
            kind = "infra_error" if e.kind == "transient" else "env_build_failed"
            return None, {**entry, "verdict": kind, "reason": (e.reason or str(e).splitlines()[0])[:500]}
        except SandboxError as e:
            return None, {**entry, "verdict": "infra_error", "reason": str(e).splitlines()[0][:500]}
        entry["discovery"] = discovery_json(lists, base, with_gold)
        if lists.verdict != "ok":
            verdict, reason = rules.discovery_verdict(lists.verdict, lists.reason, lists.flaky,
                                                      [r.outcome for r in base], [r.outcome for r in with_gold])
            return None, {**entry, "verdict": verdict, "reason": reason}
        task = task.model_copy(update={"FAIL_TO_PASS": lists.FAIL_TO_PASS, "PASS_TO_PASS": lists.PASS_TO_PASS})
        task = TaskSpec.model_validate(task.model_dump())
        report = self.validator.validate(task, discovery=entry["discovery"])
        verdict = rules.VALIDATION_VERDICTS.get(report["verdict"], report["verdict"])
        entry = {**entry, "verdict": verdict, "reason": report["reason"][:500]}
        if verdict == "flaky":
            entry["flaky"] = {n: t["gold_pass_rate"] for n, t in report.get("tests", {}).items()
                              if t.get("gold_pass_rate") not in (None, 0.0, 1.0)}
        if verdict == "ok" and self.coverage:
            return self._coverage(task, entry)
        return (task if verdict == "ok" else None), entry

    def _coverage(self, task: TaskSpec, entry: dict) -> tuple[TaskSpec | None, dict]:
        """The coverage gate on a validated task (``quality.measure``): its checks and details added to
        ``entry["gate"]`` and the task's ``metadata.gate``; the first failed check is the verdict."""
        from evalharness.quality.measure import coverage_for

        try:
            result = coverage_for(self.validator, task, self.thresholds)
        except (TaskError, ImageBuildError, SandboxError) as e:
            return None, {**entry, "verdict": "infra_error", "reason": f"coverage run: {str(e).splitlines()[0]}"[:500]}
        checks = entry["gate"]["checks"] + [c.to_json() for c in result.checks]
        entry["gate"] = {"passed": all(c["passed"] for c in checks), "checks": checks, "coverage": result.details}
        if not result.passed:
            failed = [c for c in result.checks if not c.passed]
            reason = "; ".join(f"{c.name}: {c.reason}" for c in failed)
            return None, {**entry, "verdict": result.verdict, "reason": reason[:500]}
        from evalharness.quality.packgate import restamp_validation

        kept = task.model_copy(update={"metadata": {**task.metadata, "gate": entry["gate"]}})
        restamp_validation(self.pack, task, kept)  # the report validated the same task, gate results aside
        return kept, entry

    def _gate(self, statement: str | None, gold: str, test_patch: str, entry: dict) -> dict | None:
        """The gate's checks of the gold patch (no statement) or of the final statement, added to
        ``entry["gate"]``; the rejected entry when one fails (its name is the verdict), else None."""
        from evalharness.sources.leak import names_tests_use

        gate = quality.run_gate(statement, None if statement is not None else gold, project=self.history.name,
                                names=names_tests_use(test_patch), squashed=entry.get("squashed_messages", 0),
                                pinned=(gold, test_patch) if statement is not None else None,
                                thresholds=self.thresholds)
        checks = entry.setdefault("gate", {"passed": True, "checks": []})["checks"] + gate.to_json()["checks"]
        entry["gate"] = {"passed": all(c["passed"] for c in checks), "checks": checks}
        if gate.passed:
            return None
        return {**entry, "verdict": gate.failed[0].name, "reason": gate.summary()[:500]}

    def _statement(self, text: str, gold: str, test_patch: str, commit: Commit, entry: dict) -> tuple[str, list]:
        """The statement to use and its leaks (empty when clean): rewritten first when a model is given."""
        files = self.history.files(commit.parent)
        if self.rewriter is not None:
            text = self.rewriter(text, test_patch, [])
            entry["rewritten"] = 1
        leaks = self._leaks(text, commit, gold, test_patch, files)
        if leaks and self.rewriter is not None:
            text = self.rewriter(text, test_patch, leaks)
            entry["rewritten"] = 2
            leaks = self._leaks(text, commit, gold, test_patch, files)
        return text, leaks

    def _leaks(self, text: str, commit: Commit, gold: str, test_patch: str, files: list[str]) -> list[str]:
        """The leak check's findings; the public API (``mine_rules.public_names``) is what a reporter may name."""
        from evalharness.sources.leak import check_statement, names_tests_use

        split = rules.split_change(commit.paths, self.language)
        inits = sorted({str(PurePosixPath(p).parent / "__init__.py") for p in split.source})
        sources = {p: self.history.show(commit.parent, p) or "" for p in [*split.source, *inits]
                   if p.endswith(".py") and p in set(files)}
        allowed = names_tests_use(test_patch) | rules.public_names(test_patch, sources)
        found = check_statement(text, gold_patch=gold, repo_files=files, test_patch=test_patch, allowed=allowed)
        return [str(leak) for leak in found]


def mine(out: Path, history: History, commits: list[Commit], miner: Miner, *, workers: int = 1,
         log: Log = print) -> dict:
    """Examine every commit not finished in an earlier run; write entries, tasks.jsonl and the report."""
    folder = out / MINING_DIR
    folder.mkdir(parents=True, exist_ok=True)
    env_hash = environment_hash(miner.pack)
    entries: dict[str, dict] = {}
    tasks: dict[str, TaskSpec] = {}
    todo = []
    for commit in commits:
        kept = _load_entry(folder, rules.instance_id(history.name, commit.sha), env_hash)
        if kept is None:
            todo.append(commit)
        else:
            entries[commit.sha] = kept["entry"]
            if kept.get("task"):
                tasks[commit.sha] = TaskSpec.model_validate(kept["task"])
    if entries:
        log(f"{len(entries)} commit(s) already examined (kept; infra errors are examined again)")
    lock = threading.Lock()
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="eh-mine")
    try:
        futures = {pool.submit(miner.examine, c): c for c in todo}
        for future in as_completed(futures):
            commit = futures[future]
            entry, task = future.result()
            with lock:
                entries[commit.sha] = entry
                if task is not None:
                    tasks[commit.sha] = task
                _write_json(folder / f"{entry['instance_id']}.json",
                            {"schema": SCHEMA, "environment_hash": env_hash, "entry": entry,
                             "task": task.model_dump(mode="json") if task else None})
                if entry.get("examined"):  # the pack as it stands so far: usable while mining goes on
                    _write_outputs(out, history, commits, entries, tasks, miner)
                    total = rules.counts(list(entries.values()))
                    log(f"[{len(entries)}/{len(commits)}] {commit.sha[:10]} {entry['verdict']} ({entry['seconds']:.0f} s)"
                        + ("" if entry["verdict"] == "ok" else f": {entry['reason'][:160]}")
                        + f" | validated {total['validated']}/{total['candidates']} candidates")
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        _write_outputs(out, history, commits, entries, tasks, miner)
        raise
    pool.shutdown()
    return _write_outputs(out, history, commits, entries, tasks, miner)


def _write_outputs(out: Path, history: History, commits: list[Commit], entries: dict, tasks: dict,
                   miner: Miner) -> dict:
    ordered = [entries[c.sha] for c in commits if c.sha in entries]
    kept = [tasks[c.sha] for c in commits if c.sha in tasks]
    (out / "tasks.jsonl").write_text("".join(json.dumps(t.model_dump(mode="json", exclude_defaults=True),
                                                        sort_keys=True) + "\n" for t in kept))
    report = {"schema": SCHEMA, "repo": history.url, "pack": miner.pack.name, "commits_in_range": len(commits),
              "totals": rules.counts(ordered), "verdicts": rules.VERDICTS, "candidates": ordered}
    _write_json(out / REPORT, report)
    return report


def environment_hash(pack: Pack) -> str:
    spec = pack.spec.model_dump(mode="json", exclude={"description", "name", "version"})
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def _load_entry(folder: Path, instance: str, env_hash: str) -> dict | None:
    path = folder / f"{instance}.json"
    try:
        saved = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if saved.get("environment_hash") != env_hash or saved["entry"]["verdict"] in rules.RETRIED + rules.GATED:
        return None
    if saved.get("task") and "gate" not in saved["entry"]:
        return None  # validated before the quality gate existed: examined again, so the task carries its gate
    return saved


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def load_mining_pack(out: Path) -> Pack:
    """The pack being mined into (its manifest, no tasks needed yet), as the validator takes it."""
    spec = load_spec(out / "pack.yaml")
    return Pack(spec=spec, tasks=[], root=out.resolve(), content_hash="mining")


def summary_lines(report: dict) -> list[str]:
    t = report["totals"]
    lines = [f"{report['pack']}: {t['validated']} task(s) validated of {t['candidates']} candidate(s) "
             f"({t['commits']} commits examined"
             + (f", yield {t['yield']:.0%}" if t["yield"] is not None else "")
             + (f", {t['seconds_per_examined_candidate']:.0f} s per candidate run in Docker"
                if t["seconds_per_examined_candidate"] is not None else "") + ")"]
    lines += [f"  {n:4d} {v}: {rules.VERDICTS[v]}" for v, n in t["by_verdict"].items()]
    return lines


REWRITE_SYSTEM = (
    "You turn the description of a code change into the issue a user of the library would have filed before "
    "the change existed: what they tried, what happened, what they expected. Write from the outside: no file "
    "paths, no line numbers, no code from the fix, no names of private functions or variables, no description "
    "of how to fix it. Public names a user calls are fine. Reply with the issue text only.")


def model_rewriter(endpoint) -> Callable[[str, str, list], str]:
    """A rewriter through the model layer (litellm client): (statement, test_patch, leaks) -> statement."""
    from evalharness.models.client import ModelClient

    client = ModelClient(endpoint)

    def rewrite(statement: str, test_patch: str, leaks: list) -> str:
        ask = f"Change description:\n{statement}\n\nTests that check the change (the reporter has not seen them):\n" \
              f"{test_patch[:6000]}"
        if leaks:
            ask += "\n\nYour last version gave the fix away; leave these out: " + "; ".join(leaks)[:2000]
        message, _ = client.complete([{"role": "system", "content": REWRITE_SYSTEM}, {"role": "user", "content": ask}])
        return (message.get("content") or "").strip() or statement

    return rewrite
