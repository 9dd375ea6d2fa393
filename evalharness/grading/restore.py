"""When the graded tree cannot be built: the task's failure or the patch's, told apart without trusting the patch.

The graded tree is the base commit, the paths of the patch the grader applies, the paths it restores to base,
the task's ``test_patch`` and a canary test file (``grade._TREE_SCRIPT``; its steps exit 20-24). When a step
fails, the grader builds the same tree again with no patch at all (``PROBE_SCRIPT``): a work tree freshly
rebuilt from the image exactly as the sandbox's own was, an index at the base commit, then the very same
steps. What the patch wrote cannot reach the probe: its tree, index and work tree are new.

``decide_tree_failure`` (pure) decides:

- the probe fails too: the task's tests cannot be set up over its base commit in its own environment whatever
  the patch: ``task_error``, named with git's message (left out of every rate, named at the end of the run);
- the probe succeeds: the tree fails only with the patch, so the patch cannot be combined with the task's
  tests: ``patch_apply_failed`` with the flag ``restore_failed``: the agent's outcome, in its rate;
- the probe itself cannot run (no rebuild in the image, no room): the grader cannot tell: infrastructure
  (retried), never a verdict on the agent and never a task error on a guess.

Pins (issue 23): on SWE-bench Lite pytest-dev__pytest-5103, -5221 and -5227 the graded tree failed with
``Entry 'scripts/setup-coverage-vars.bat' not uptodate. Cannot merge.`` (a tree checked out with the
repository's CRLF attribute, compared by the grader's neutral git) and every patch, the gold one included,
was stored ``unresolved``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalharness.sandbox.base import BASE_GIT, REBUILD_TREE, SEED_TAR
from evalharness.types import Flag, Outcome

TREE_STEPS: dict[int, str] = {
    20: "the task's test_patch does not apply",
    21: "git cannot write the graded tree",
    22: "git cannot check the graded tree out over the base commit",
    23: "the restored paths cannot be put back in the index",
    24: "the canary test file cannot be written",
}
"""``grade._TREE_SCRIPT``'s exit codes: the step of the graded tree that failed."""

PROBE_ROOT = "/tmp/evalharness-probe"
"""Where the probe rebuilds the work tree (root's, in the grading sandbox's /tmp; nothing of the agent runs there)."""
PROBE_CANNOT_RUN = {78: "the probe's work tree could not be rebuilt",
                    79: "the image has no way to rebuild its work tree",
                    71: "the base commit is missing from the image"}


def probe_tree(workdir: str) -> str:
    """Where the probe's work tree is (its path inside ``PROBE_ROOT`` is the sandbox's own)."""
    return PROBE_ROOT + workdir


PROBE_PRELUDE = r"""
set -u
x=$1 base=$2 work=$3; shift 3
t=""" + PROBE_ROOT + r"""$work
mkdir -m 0700 """ + PROBE_ROOT + r""" 2>"$x/err" || exit 78
if [ -f """ + SEED_TAR + r""" ]; then
  tar -C """ + PROBE_ROOT + " -xpf " + SEED_TAR + r""" --numeric-owner 2>"$x/err" || exit 78
elif [ -x """ + REBUILD_TREE + r""" ] && [ -d """ + BASE_GIT + r""" ]; then
  """ + REBUILD_TREE + r""" "$t" 1000:1000 >"$x/err" 2>&1 || exit 78
else exit 79; fi
env $EH_GITENV git "$@" read-tree "$base" 2>"$x/err" || exit 71
: > "$x/reset" || exit 78
set -- "$x" "$base" "$t" "$@"
"""
"""A fresh work tree rebuilt as the sandbox start rebuilds it, an index at base; then ``grade._TREE_SCRIPT``
follows with the probe's tree, an index of its own and no restored paths (an empty ``reset`` file)."""


@dataclass(frozen=True)
class TreeFailure:
    outcome: Outcome
    reason: str
    flags: frozenset[str] = field(default_factory=frozenset)


def decide_tree_failure(code: int, message: str, probe_code: int, probe_message: str) -> TreeFailure:
    """Pure: a graded tree that failed at step ``code`` (git's ``message``), and the same tree built with no
    patch (the probe exited ``probe_code``: 0 built, 20-24 failed at that step, else it could not run).

    Raises ValueError for a ``code`` that is not a step of the graded tree."""
    if code not in TREE_STEPS:
        raise ValueError(f"exit {code} is not a step of the graded tree")
    said = _short(message)
    if probe_code == 0:
        return TreeFailure(Outcome.PATCH_APPLY_FAILED,
                           f"the patch cannot be combined with the task's tests: {TREE_STEPS[code]}"
                           f"{': ' + said if said else ''} (without the patch the graded tree builds)",
                           frozenset({Flag.RESTORE_FAILED.value}))
    if probe_code in TREE_STEPS:
        probe_said = _short(probe_message)
        return TreeFailure(Outcome.TASK_ERROR,
                           f"the task's graded tree cannot be built even with no patch: {TREE_STEPS[probe_code]}"
                           f"{': ' + probe_said if probe_said else ''}",
                           frozenset({Flag.RESTORE_FAILED.value}))
    why = PROBE_CANNOT_RUN.get(probe_code, f"the probe exited {probe_code}")
    return TreeFailure(Outcome.SANDBOX_ERROR,
                       f"the graded tree failed ({TREE_STEPS[code]}{': ' + said if said else ''}) and the grader "
                       f"could not build it without the patch to tell whose failure it is: {why}"
                       f"{': ' + _short(probe_message) if probe_message.strip() else ''}")


def _short(message: str, limit: int = 300) -> str:
    """git's message on one line, its head and its tail when long (a long path must not hide why it failed)."""
    text = " ".join(message.split())
    half = (limit - 5) // 2
    return text if len(text) <= limit else f"{text[:half]} ... {text[-half:]}"
