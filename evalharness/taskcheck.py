"""Is the task itself sound? Its image builds and its gold patches apply: once per task image, not per trial or run.

The check runs ``git apply --check`` of the task's ``patch`` and ``test_patch`` in a throwaway
container from the task image (network none, labelled with the run so ``sandbox gc`` finds it).
The gold patch is written only there, never into an image an agent runs in. A task that fails
raises TaskError for every one of its trials; engine failures raise SandboxError (retried).

The verdict is cached on disk (``CheckCache``, ``default_cache_dir()/task-checks/<key>.json``), keyed by the
task image's content id as the engine names it and the hashes of the gold and test patches (``check_key``):
a later run on the same image starts no check container. Only definitive verdicts are kept (the patches apply,
or one does not); an engine failure or a timeout decides nothing and is never cached. Clearing the cache is
deleting the folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path

from evalharness.errors import SandboxError, TaskError
from evalharness.packs import Pack
from evalharness.sandbox.base import Limits
from evalharness.sandbox.docker import _DOCKER_ERRORS, DockerSandbox
from evalharness.types import TaskSpec
from evalharness.validation import invalid_reason

_PATCH_DIR = "/tmp/evalharness-check"
CHECK_VERSION = 1
"""What the check does (the command, its options); part of every cache key, bumped when the check changes."""
CACHE_ENV = "EVALHARNESS_CACHE_DIR"


def default_cache_dir(env: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """``$EVALHARNESS_CACHE_DIR``, else ``$XDG_CACHE_HOME/evalharness``, else ``~/.cache/evalharness`` (pure given
    ``env`` and ``home``; an empty variable counts as unset)."""
    env = os.environ if env is None else env
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "evalharness"
    return (home if home is not None else Path.home()) / ".cache" / "evalharness"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def check_key(image_id: str, patch: str, test_patch: str, *, workdir: str) -> str:
    """Pure: what a check's verdict depends on, hashed: the image's content id (``sha256:...`` from the engine,
    never a tag), the gold and test patches, the work tree they apply in, and the check itself (CHECK_VERSION)."""
    if not image_id:
        raise ValueError("a task check is keyed by the image's content id; none given")
    parts = {"version": CHECK_VERSION, "image_id": image_id, "patch": _sha256(patch),
             "test_patch": _sha256(test_patch), "workdir": workdir}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


class CheckCache:
    """Task-check verdicts on disk, one JSON file per key (``<root>/task-checks/<key>.json``), written atomically.

    A verdict is the list of problems found (empty: the gold patches apply). A file that is missing, unreadable,
    corrupt or about another key reads as no verdict (the check runs again); a cache that cannot be written is
    skipped. Nothing here raises for the cache's sake.
    """

    def __init__(self, root: Path | str):
        self.dir = Path(root) / "task-checks"

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def get(self, key: str) -> list[str] | None:
        try:
            data = json.loads(self.path(key).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("key") != key or data.get("version") != CHECK_VERSION:
            return None
        problems = data.get("problems")
        if not isinstance(problems, list) or not all(isinstance(p, str) for p in problems):
            return None
        return problems

    def put(self, key: str, problems: list[str], **about: str) -> bool:
        """Keep a definitive verdict; False when it could not be written (a read-only or full disk)."""
        record = {"key": key, "problems": list(problems), "version": CHECK_VERSION,
                  "checked_at": datetime.now(timezone.utc).isoformat(), **about}
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=self.dir)
            try:
                with os.fdopen(fd, "w") as out:
                    json.dump(record, out, indent=2, sort_keys=True)
                os.replace(tmp, self.path(key))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            return False
        return True

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold ``key`` against other processes (two runs on one machine check an image once); best effort:
        where no lock file can be made, nothing is held."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            handle = open(self.dir / f"{key}.lock", "a")  # noqa: SIM115 - closed below
        except OSError:
            yield
            return
        try:
            with contextlib.suppress(OSError):
                fcntl.flock(handle, fcntl.LOCK_EX)
            yield
        finally:
            handle.close()  # releases the lock


def patch_problems(apply_check: Callable[[str, bytes], tuple[int, str]], task: TaskSpec) -> list[str]:
    """One line per gold patch of ``task`` that does not apply; ``apply_check(name, patch)`` -> (exit code, output)."""
    problems = []
    for field in ("patch", "test_patch"):
        text = getattr(task, field)
        if not text.strip():
            continue
        code, output = apply_check(f"{field}.diff", text.encode())
        if code != 0:
            first = next((line.strip() for line in output.splitlines() if line.strip()), f"git apply exited {code}")
            problems.append(f"gold {field} does not apply to the task's base: {first}")
    return problems


class TaskChecker:
    """Checks each task of a run once (threads share the result); remembers what it found. With a ``cache``,
    a task image checked before (by any run on this machine) is not checked again."""

    def __init__(self, client, pack: Pack, run_id: str, limits: Limits, task_image: Callable[[TaskSpec], str], *,
                 include_invalid: bool = False, cache: CheckCache | None = None):
        self.client, self.pack, self.run_id, self.limits = client, pack, run_id, limits
        self.include_invalid = include_invalid
        self.task_image = task_image
        self.cache = cache
        self._found: dict[str, TaskError | None] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def check(self, task: TaskSpec) -> None:
        """Raise TaskError when ``task`` is broken (image recipe or gold patches); SandboxError on engine failures."""
        with self._guard:
            lock = self._locks.setdefault(task.instance_id, threading.Lock())
        with lock:
            if task.instance_id not in self._found and (problem := self._known_problem(task)) is not None:
                self._found[task.instance_id] = TaskError(f"task {task.instance_id}: {problem}", reason=problem)
            if task.instance_id not in self._found:
                image = self.task_image(task)  # TaskError or ImageBuildError propagate; a retry builds again
                problems = self._cached_apply_checks(task, image)
                self._found[task.instance_id] = (TaskError(f"task {task.instance_id}: {problems[0]}",
                                                           reason="; ".join(problems)) if problems else None)
            found = self._found[task.instance_id]
        if found is not None:
            raise found

    def _known_problem(self, task: TaskSpec) -> str | None:
        """A reason known without Docker: no environment recipe, or a validation report that is not ok."""
        problem = self.pack.recipe_problem(task)
        if problem is None and not self.include_invalid:
            problem = invalid_reason(self.pack, task)
        return problem

    def _cached_apply_checks(self, task: TaskSpec, image: str) -> list[str]:
        """The apply checks' problems, from the cache when this image and these patches were checked before."""
        if self.cache is None or not (task.patch.strip() or task.test_patch.strip()):
            return self._apply_checks(task, image)
        try:
            image_id = self.client.images.get(image).id
        except _DOCKER_ERRORS as e:
            raise SandboxError(f"could not read the id of {image}: {e}") from e
        key = check_key(image_id, task.patch, task.test_patch, workdir=self.pack.spec_for(task).environment.workdir)
        with self.cache.lock(key):
            problems = self.cache.get(key)
            if problems is None:
                problems = self._apply_checks(task, image)  # SandboxError (engine, timeout) propagates: not kept
                self.cache.put(key, problems, task=task.instance_id, pack=self.pack.name, image=image,
                               image_id=image_id)
        return problems

    def _apply_checks(self, task: TaskSpec, image: str) -> list[str]:
        if not (task.patch.strip() or task.test_patch.strip()):
            return []
        spec = self.pack.spec_for(task)
        with DockerSandbox(self.client, image, run_id=self.run_id, trial=f"{self.pack.name}/{task.instance_id}/check",
                           role="check", limits=self.limits, workdir=spec.environment.workdir,
                           default_timeout=spec.timeouts.exec_s) as sandbox:
            sandbox.start()

            def apply_check(name: str, patch: bytes) -> tuple[int, str]:
                path = f"{_PATCH_DIR}/{name}"
                sandbox.write_file(path, patch)
                done = sandbox.exec(f"git apply --check --whitespace=nowarn {path}", timeout=spec.timeouts.exec_s)
                if done.timed_out:  # decides nothing about the task: the machine's, retried, never cached
                    raise SandboxError(f"git apply --check of {name} timed out after {spec.timeouts.exec_s:g} s")
                return done.exit_code, done.output

            return patch_problems(apply_check, task)
