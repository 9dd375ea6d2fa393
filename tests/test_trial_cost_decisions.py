"""Pure decisions that spare a trial its containers: no grader for an empty change, one task check per image.

Pins: every trial started three containers (task check, agent, grader), even one whose change was empty and
one whose task image had been checked by the run before (issue 22). Neither saving may charge a failure to
the wrong side: an agent or infrastructure failure keeps its outcome; an engine failure or a timeout is never
remembered as a task's verdict.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from evalharness.errors import SandboxError, TaskError
from evalharness.grading.extract import Extracted
from evalharness.models.unavailable import MODEL_UNAVAILABLE
from evalharness.taskcheck import CHECK_VERSION, CheckCache, TaskChecker, check_key, default_cache_dir
from evalharness.trial import EMPTY_CHANGE, PATCH_APPLY_FAILED, ungraded_outcome
from evalharness.types import AgentResult, Flag, Outcome

PATCH = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
DONE = AgentResult(exit_status="submitted")


# ---- ungraded_outcome: which trials need no grading container -------------------------------------------

def test_an_empty_change_from_a_finished_agent_is_no_patch_without_a_grader():
    decided = ungraded_outcome(Extracted(b""), DONE)
    assert decided is not None and decided.outcome is Outcome.NO_PATCH and decided.reason == EMPTY_CHANGE
    assert decided.flags == ()
    # the agent's own word does not matter when it finished: an empty change is an empty change
    for status in ("submitted", "format_error", "exit_1"):
        assert ungraded_outcome(Extracted(b""), AgentResult(exit_status=status)).outcome is Outcome.NO_PATCH


def test_a_real_change_is_graded():
    assert ungraded_outcome(Extracted(PATCH.encode()), DONE) is None
    assert ungraded_outcome(Extracted(b" \n"), DONE).outcome is Outcome.NO_PATCH  # whitespace: empty, as grade() says


def test_an_empty_change_from_an_agent_that_set_up_its_own_git_keeps_the_flag():
    decided = ungraded_outcome(Extracted(b"", agent_git=("config diff.external",)), DONE)
    assert decided.outcome is Outcome.NO_PATCH and decided.flags == (Flag.TOUCHED_CONFIG.value,)


@pytest.mark.parametrize(("agent", "outcome"), [
    (AgentResult(exit_status="budget_exhausted", budget_exhausted="max_steps"), Outcome.BUDGET_EXHAUSTED),
    (AgentResult(exit_status="error", error="boom"), Outcome.HARNESS_ERROR),
    (AgentResult(exit_status=MODEL_UNAVAILABLE, error="endpoint down"), Outcome.MODEL_UNAVAILABLE),
    (AgentResult(exit_status=PATCH_APPLY_FAILED, error="does not apply"), Outcome.PATCH_APPLY_FAILED),
])
def test_a_failed_agent_keeps_its_outcome_never_no_patch(agent, outcome):
    """An agent that did not finish has no change derived (None) or an empty one: its own outcome either way."""
    for extracted in (None, Extracted(b"")):
        decided = ungraded_outcome(extracted, agent)
        assert decided is not None and decided.outcome is outcome, (extracted, agent)
    assert ungraded_outcome(None, AgentResult(exit_status="error", error="boom")).reason == "boom"
    # infrastructure stays infrastructure (left out of the rate), the agent's failures count in it
    assert ungraded_outcome(None, AgentResult(exit_status=MODEL_UNAVAILABLE)).outcome.is_infra


def test_a_change_over_the_cap_or_rejected_is_the_agents_outcome_with_its_flag():
    big = ungraded_outcome(Extracted(b"", Outcome.PATCH_TOO_LARGE, "too big"), DONE)
    assert (big.outcome, big.reason, big.flags) == (Outcome.PATCH_TOO_LARGE, "too big", (Flag.PATCH_TOO_LARGE.value,))
    bad = ungraded_outcome(Extracted(b"", Outcome.PATCH_REJECTED, "unreadable"), DONE)
    assert (bad.outcome, bad.flags) == (Outcome.PATCH_REJECTED, (Flag.PATCH_REJECTED.value,))


def test_no_derived_change_from_a_finished_agent_is_graded_as_before():
    assert ungraded_outcome(None, DONE) is None


# ---- check_key: what the task check's verdict depends on ------------------------------------------------

KEY = dict(image_id="sha256:" + "1" * 64, patch=PATCH, test_patch="diff --git a/t.py b/t.py\n", workdir="/testbed")


def test_the_key_is_stable_and_changes_with_everything_the_check_depends_on():
    key = check_key(KEY["image_id"], KEY["patch"], KEY["test_patch"], workdir=KEY["workdir"])
    assert key == check_key(KEY["image_id"], KEY["patch"], KEY["test_patch"], workdir=KEY["workdir"])
    for field, other in (("image_id", "sha256:" + "2" * 64), ("patch", PATCH + "+c\n"),
                         ("test_patch", "diff --git a/u.py b/u.py\n"), ("workdir", "/src")):
        changed = {**KEY, field: other}
        assert check_key(changed["image_id"], changed["patch"], changed["test_patch"],
                         workdir=changed["workdir"]) != key, field
    # the two patches are not interchangeable
    assert check_key(KEY["image_id"], KEY["test_patch"], KEY["patch"], workdir="/testbed") != key


def test_the_key_needs_the_images_content_id():
    with pytest.raises(ValueError):
        check_key("", PATCH, "", workdir="/testbed")


# ---- CheckCache: definitive verdicts on disk ------------------------------------------------------------

def test_a_verdict_is_kept_atomically_and_read_back(tmp_path):
    cache = CheckCache(tmp_path)
    assert cache.get("k1") is None
    assert cache.put("k1", [], task="t") and cache.get("k1") == []
    assert cache.put("k2", ["gold patch does not apply"]) and cache.get("k2") == ["gold patch does not apply"]
    assert cache.path("k1") == tmp_path / "task-checks" / "k1.json"
    assert json.loads(cache.path("k1").read_text())["version"] == CHECK_VERSION
    assert not list((tmp_path / "task-checks").glob("*.tmp"))  # nothing half-written left behind


@pytest.mark.parametrize("content", ["", "{not json", "[]", '{"key": "k", "problems": "x"}',
                                     '{"key": "other", "problems": [], "version": 1}',
                                     '{"key": "k", "problems": [1], "version": 1}',
                                     '{"key": "k", "problems": [], "version": 999}', "\udcff"])
def test_a_corrupt_or_foreign_file_reads_as_no_verdict(tmp_path, content):
    cache = CheckCache(tmp_path)
    cache.dir.mkdir(parents=True)
    cache.path("k").write_bytes(content.encode("utf-8", "surrogateescape"))
    assert cache.get("k") is None


def test_an_unwritable_cache_is_skipped_not_a_crash(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = CheckCache(blocker)  # task-checks/ cannot be made under a file
    assert cache.put("k", []) is False and cache.get("k") is None
    with cache.lock("k"):
        pass


def test_the_cache_folder_follows_the_environment():
    home = Path("/home/u")
    assert default_cache_dir({}, home) == home / ".cache" / "evalharness"
    assert default_cache_dir({"XDG_CACHE_HOME": "/x"}, home) == Path("/x/evalharness")
    assert default_cache_dir({"XDG_CACHE_HOME": "/x", "EVALHARNESS_CACHE_DIR": "/e"}, home) == Path("/e")
    assert default_cache_dir({"EVALHARNESS_CACHE_DIR": "/e"}, home) == Path("/e")
    assert default_cache_dir({"EVALHARNESS_CACHE_DIR": "", "XDG_CACHE_HOME": ""}, home) == home / ".cache/evalharness"


def test_the_test_session_never_uses_the_users_cache():
    assert default_cache_dir() != Path.home() / ".cache" / "evalharness"


# ---- TaskChecker with a cache: a checked image is not checked again; infrastructure is not remembered ----

class _Images:
    def __init__(self, ids):
        self.ids = ids

    def get(self, tag):
        return SimpleNamespace(id=self.ids[tag])


class _Checker(TaskChecker):
    """The real checker with the container part replaced by a script of verdicts (problems, or an exception)."""

    def __init__(self, cache, verdicts, image_ids=None):
        pack = SimpleNamespace(name="p", recipe_problem=lambda task: None,
                               spec_for=lambda task: SimpleNamespace(environment=SimpleNamespace(workdir="/testbed")))
        client = SimpleNamespace(images=_Images(image_ids or {"img:1": "sha256:aaa"}))
        super().__init__(client, pack, "run", None, lambda task: "img:1", include_invalid=True, cache=cache)
        self.verdicts, self.containers = list(verdicts), 0

    def _apply_checks(self, task, image):
        self.containers += 1
        verdict = self.verdicts.pop(0)
        if isinstance(verdict, Exception):
            raise verdict
        return verdict


TASK = SimpleNamespace(instance_id="t1", patch=PATCH, test_patch="")


def test_a_second_run_on_the_same_image_starts_no_check_container(tmp_path):
    first = _Checker(CheckCache(tmp_path), [[]])
    first.check(TASK)
    again = _Checker(CheckCache(tmp_path), [])  # a new run: nothing in memory, the verdict on disk
    again.check(TASK)
    assert (first.containers, again.containers) == (1, 0)


def test_a_broken_task_is_remembered_too(tmp_path):
    first = _Checker(CheckCache(tmp_path), [["gold patch does not apply to the task's base: x"]])
    with pytest.raises(TaskError):
        first.check(TASK)
    again = _Checker(CheckCache(tmp_path), [])
    with pytest.raises(TaskError, match="does not apply"):
        again.check(TASK)
    assert again.containers == 0


def test_an_engine_failure_or_timeout_is_not_remembered(tmp_path):
    failing = _Checker(CheckCache(tmp_path), [SandboxError("engine down"), SandboxError("timed out")])
    for _ in range(2):
        with pytest.raises(SandboxError):
            failing.check(TASK)
    assert not list((tmp_path / "task-checks").glob("*.json"))
    later = _Checker(CheckCache(tmp_path), [[]])
    later.check(TASK)
    assert later.containers == 1  # checked for real, not read from a cached failure


def test_a_rebuilt_image_or_a_changed_patch_is_checked_again(tmp_path):
    _Checker(CheckCache(tmp_path), [[]]).check(TASK)
    rebuilt = _Checker(CheckCache(tmp_path), [[]], image_ids={"img:1": "sha256:bbb"})
    rebuilt.check(TASK)
    changed = _Checker(CheckCache(tmp_path), [[]])
    changed.check(SimpleNamespace(instance_id="t1", patch=PATCH + "+more\n", test_patch=""))
    assert (rebuilt.containers, changed.containers) == (1, 1)


def test_a_corrupt_cache_file_means_checking_again(tmp_path):
    first = _Checker(CheckCache(tmp_path), [[]])
    first.check(TASK)
    (cached,) = (tmp_path / "task-checks").glob("*.json")
    cached.write_text("{truncated")
    again = _Checker(CheckCache(tmp_path), [[]])
    again.check(TASK)
    assert again.containers == 1 and json.loads(cached.read_text())["problems"] == []
