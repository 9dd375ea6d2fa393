"""Hand-written tasks of a backlog pack: ``packs add-task`` (``docs/backlog.md``).

A task is declared by its base commit, a statement, the hidden tests (a test patch, or test files
taken from a later commit) and optionally a gold fix (a commit or a patch file). Its lists come
from the shared discovery path (``validation.Validator.discover``) unless given; its statement
passes the leak check (``sources.leak``) or the task is refused with the leaks named, and the task
passes the quality gate (``gate_task``: ``evalharness/quality/``) or is refused with the failed checks named.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from evalharness.errors import UserError
from evalharness.packs import find_manifest, load_spec
from evalharness.quality.gate import DEFAULT, Gate, Thresholds, run_gate
from evalharness.sources.leak import Leak, check_statement, names_tests_use
from evalharness.sources.scaffold import Repository
from evalharness.types import TaskSpec
from evalharness.validation import candidate


@dataclass
class Declared:
    """What the user gave for one task, before any git or Docker work."""

    base: str
    statement: str
    test_patch: str = ""
    """A diff of test files (``--test-patch``); else ``tests`` are diffed from base to ``tests_from``."""
    tests: tuple[str, ...] = ()
    tests_from: str = ""
    gold: str = ""
    """A commit, or the path of a patch file."""
    instance_id: str = ""
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()
    created_at: str = ""
    allowed: tuple[str, ...] = ()


def build_task(repository: Repository, declared: Declared, *, pack_name: str, default_ref: str,
               existing: list[str]) -> tuple[TaskSpec, list[Leak]]:
    """The candidate task (lists as given, possibly empty) and the leaks its statement has."""
    base = repository.commit(declared.base)
    patch, gold_commit = _gold(repository, declared.gold, base)
    test_patch = declared.test_patch or _tests_patch(repository, base, declared, gold_commit or default_ref)
    if not test_patch.strip():
        raise UserError("the task has no hidden tests", "give --test-patch FILE, or --tests PATH with files that "
                        "differ between the base and --tests-from (default: the gold commit)")
    if gold_commit:
        patch = _without(repository, base, gold_commit, _paths(test_patch))
    tests_at = repository.commit(declared.tests_from or gold_commit or default_ref) if declared.tests else base
    texts = [repository.read(tests_at, path) or "" for path in _paths(test_patch)]
    allowed = names_tests_use(test_patch, texts) | set(declared.allowed)
    leaks = check_statement(declared.statement, gold_patch=patch, repo_files=repository.files(base),
                            allowed=allowed, test_patch=test_patch)
    task = candidate(instance_id=declared.instance_id or _next_id(pack_name, existing), repo=pack_name,
                     base_commit=base, problem_statement=declared.statement, patch=patch, test_patch=test_patch,
                     created_at=declared.created_at or _created_at(repository, gold_commit),
                     FAIL_TO_PASS=list(declared.fail_to_pass), PASS_TO_PASS=list(declared.pass_to_pass),
                     metadata={"origin": "hand-written"})
    if task.instance_id in existing:
        raise UserError(f"task {task.instance_id} is already in the pack", "give another --id")
    return task, leaks


def gate_task(task: TaskSpec, allowed: set[str] = frozenset(), thresholds: Thresholds = DEFAULT) -> Gate:
    """The quality gate of a hand-written task: its statement (names the tests use count as code), its gold patch
    and the messages its tests pin."""
    names = names_tests_use(task.test_patch) | set(allowed)
    pinned = (task.patch, task.test_patch) if task.patch and task.test_patch else None
    return run_gate(task.problem_statement, task.patch or None, project=task.repo, names=names, pinned=pinned,
                    thresholds=thresholds)


def _gold(repository: Repository, gold: str, base: str) -> tuple[str, str]:
    """(the gold patch, the gold commit): a patch file is read as is; a commit is diffed later, without tests."""
    if not gold:
        return "", ""
    if Path(gold).is_file():
        return Path(gold).read_text(), ""
    commit = repository.commit(gold)
    if commit == base:
        raise UserError(f"--gold {gold} is the base commit itself", "give the commit that fixes the task")
    return "", commit


def _tests_patch(repository: Repository, base: str, declared: Declared, default: str) -> str:
    if not declared.tests:
        return ""
    source = repository.commit(declared.tests_from or default)
    return repository.git("diff", "--no-color", "--no-ext-diff", "--full-index", base, source, "--",
                          *declared.tests) or ""


def _without(repository: Repository, base: str, commit: str, paths: list[str]) -> str:
    """The change from ``base`` to ``commit`` without the test patch's files (they are the hidden tests)."""
    excluded = [f":(exclude){p}" for p in paths]
    diff = repository.git("diff", "--no-color", "--no-ext-diff", "--full-index", base, commit, "--", ".",
                          *excluded) or ""
    if not diff.strip():
        raise UserError(f"the gold commit {commit[:12]} changes nothing but the test files",
                        "the gold fix must change code the tests exercise")
    return diff


def _paths(patch: str) -> list[str]:
    return sorted({m for m in re.findall(r"^(?:\+\+\+ b/|--- a/)(.+)$", patch, re.M)})


def _created_at(repository: Repository, gold_commit: str) -> str:
    """When the fix became known: the gold commit's committer date, else now (a fix not yet committed)."""
    if gold_commit:
        return (repository.git("show", "-s", "--format=%cI", gold_commit) or "").strip()
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def _next_id(pack_name: str, existing: list[str]) -> str:
    n = len(existing) + 1
    while f"{pack_name}-{n}" in existing:
        n += 1
    return f"{pack_name}-{n}"


# --- the pack's task file ----------------------------------------------------------------------

def pack_task_file(pack: Path) -> tuple[Path, object]:
    """(the task file, the manifest) of the pack folder ``pack``; the task file may be empty."""
    manifest = find_manifest(pack)
    spec = load_spec(manifest)
    return (manifest.parent / spec.tasks), spec


def existing_ids(tasks_file: Path) -> list[str]:
    if not tasks_file.is_file():
        return []
    return [json.loads(line)["instance_id"] for line in tasks_file.read_text().splitlines() if line.strip()]


def append_task(tasks_file: Path, task: TaskSpec) -> None:
    """Add one line to the task file (written whole to a temporary file, then moved over it)."""
    old = tasks_file.read_text() if tasks_file.is_file() else ""
    line = json.dumps(task.model_dump(mode="json", exclude_defaults=True), sort_keys=False)
    tmp = tasks_file.with_suffix(tasks_file.suffix + ".tmp")
    tmp.write_text(old + ("" if not old or old.endswith("\n") else "\n") + line + "\n")
    tmp.replace(tasks_file)
