"""Derive the patch from a sandbox's work tree: data the grader makes, not text the agent writes.

The agent owns its container, its work tree and the work tree's ``.git``: its git configuration
(``diff.external``, textconv, filters, attributes, hooks, replace refs) would shape any diff made
with that repository. So the diff is made by root, after every agent process is killed, with a git
that nothing in the work tree configures: a fresh, root-only git directory under the grader's
scratch space (``/run/evalharness-grader/priv``, which the agent can neither list nor enter) whose objects
borrow the image's read-only copy of the base commit (``/opt/evalharness/base.git``), no system or
global configuration, and ``info/attributes`` overriding every in-tree ``.gitattributes``. Only the
work tree's files are read; ``.git`` inside it is never looked at. The patch is bytes end to end
(``--binary``, no re-encoding) and a change over the cap is an outcome, never a cut.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from evalharness.grading.surface import GIT_SAFE_CONFIG, INFO_ATTRIBUTES, sandbox_git_env
from evalharness.sandbox.base import BASE_GIT, GRADER_DIR, Sandbox
from evalharness.types import Outcome

BASE_OBJECTS = f"{BASE_GIT}/objects"
EXTRACT_TIMEOUT_S = 300.0

SCRATCH_GIT = r"""
mkdir -m 0700 -p "$x/home" && env -u GIT_WORK_TREE git init -q --bare --template= "$GIT_DIR" || exit 70
mkdir -p "$GIT_DIR/info" "$GIT_DIR/objects/info"
echo "$EH_BASE_OBJECTS" > "$GIT_DIR/objects/info/alternates"
printf '%s' "$EH_ATTRIBUTES" > "$GIT_DIR/info/attributes"
"""
"""The grader's scratch git in ``$x/g`` (GIT_DIR): no template, the base objects borrowed, attributes neutral."""

_SCRIPT = r"""
set -u
x=$1 base=$2
shift 3
""" + SCRATCH_GIT + r"""
fail() { echo "$1" >&2; cat "$x/err" >&2; exit "$2"; }
git "$@" read-tree "$base" 2>"$x/err" || fail "the base commit is missing from the image" 71
git "$@" add -A 2>"$x/err" || fail "git could not read the work tree" 72
# a changed file larger than the cap makes the change too large, before any diff holds it in memory
biggest=$(git "$@" diff --cached --raw --no-renames --no-abbrev "$base" 2>"$x/err" | awk '$4 !~ /^0+$/ {print $4}' \
  | git "$@" cat-file --batch-check='%(objectsize)' 2>>"$x/err" | sort -n | tail -1)
if [ -n "$biggest" ] && [ "$biggest" -gt "$EH_CAP" ]; then echo "$biggest"; exit 0; fi
git "$@" diff --cached --binary --full-index --no-color --no-ext-diff --no-textconv --no-renames "$base" \
    >"$x/patch" 2>"$x/err" || fail "git could not write the change" 73
size=$(stat -c %s "$x/patch")
g="$GIT_WORK_TREE/.git"
if [ -d "$g" ] && [ ! -L "$g" ]; then
  if [ -f "$g/config" ] && [ ! -L "$g/config" ]; then
    git config -f "$g/config" --name-only --get-regexp \
      '^(diff\.|filter\.|merge\.|alias\.|include|core\.(attributesfile|hookspath|fsmonitor|excludesfile|pager|gitproxy|sshcommand|worktree))' \
      2>/dev/null | sed 's/^/config /' | head -20
  fi
  [ -d "$g/hooks" ] && ls -A "$g/hooks" 2>/dev/null | grep -v '\.sample$' | sed 's/^/hook /' | head -20
  [ -e "$g/info/attributes" ] && echo "file info/attributes"
fi
echo "$size"
"""


@dataclass(frozen=True)
class Extracted:
    """The derived patch, or why there is none to grade."""

    patch: bytes
    outcome: Outcome | None = None
    """None when ``patch`` is the whole change; else PATCH_TOO_LARGE or PATCH_REJECTED."""
    reason: str = ""
    size: int = 0
    agent_git: tuple[str, ...] = ()
    """What the agent set up in its own ``.git`` to shape diffs (configuration keys, hooks): ignored here, flagged."""

    @property
    def text(self) -> str:
        """For people and models (undecodable bytes replaced); grading uses ``patch``."""
        return self.patch.decode("utf-8", errors="replace")


def extract_patch(sandbox: Sandbox, *, max_bytes: int | None = None, kill_agent: bool = True) -> Extracted:
    """The change of ``sandbox``'s work tree against the base commit (see the module docstring).

    Agent-caused trouble (an unreadable tree, a change over the cap, a scratch space it filled) is
    an outcome with a reason; only an engine failure raises (SandboxError).
    """
    cap = max_bytes if max_bytes is not None else getattr(getattr(sandbox, "limits", None), "max_patch_bytes",
                                                          8 * 1024 * 1024)
    if kill_agent and hasattr(sandbox, "kill_agent_processes"):
        sandbox.kill_agent_processes()
    base = sandbox.base_commit()
    x = f"{GRADER_DIR}/priv/extract-{secrets.token_hex(6)}"
    env = {**sandbox_git_env(f"{x}/home"), "GIT_DIR": f"{x}/g", "GIT_WORK_TREE": sandbox.workdir,
           "GIT_INDEX_FILE": f"{x}/index", "EH_ATTRIBUTES": INFO_ATTRIBUTES.decode(),
           "EH_BASE_OBJECTS": BASE_OBJECTS, "EH_CAP": str(cap)}
    argv = ["env", *[f"{k}={v}" for k, v in env.items()], "sh", "-c", _SCRIPT, "sh", x, base, str(cap),
            *GIT_SAFE_CONFIG]
    try:
        code, out, timed_out = sandbox.exec_bytes(argv, timeout=EXTRACT_TIMEOUT_S, max_bytes=64 * 1024)
        if timed_out:
            return Extracted(b"", Outcome.PATCH_TOO_LARGE,
                             f"reading the work tree took longer than {EXTRACT_TIMEOUT_S:g} s")
        if code != 0:
            return _failed(sandbox, x, code, out)
        lines = out.decode(errors="replace").splitlines()
        size, agent_git = int(lines[-1]), tuple(line for line in lines[:-1] if line.strip())
        if size > cap:
            return Extracted(b"", Outcome.PATCH_TOO_LARGE,
                             f"the change is {size} bytes, over the cap of {cap} bytes", size, agent_git)
        patch = sandbox.read_file(f"{x}/patch", max_bytes=cap)
        return Extracted(patch, size=size, agent_git=agent_git)
    finally:
        sandbox.exec_bytes(["rm", "-rf", x], timeout=60)


def _failed(sandbox: Sandbox, x: str, code: int, out: bytes) -> Extracted:
    try:
        err = sandbox.read_file(f"{x}/err", max_bytes=4000).decode(errors="replace").strip()
    except (FileNotFoundError, Exception):  # noqa: BLE001 - the reason is what matters here
        err = out.decode(errors="replace").strip()
    if "No space left" in err or "unable to write" in err or code == 137:
        return Extracted(b"", Outcome.PATCH_TOO_LARGE,
                         f"the change does not fit the grader's scratch space: {err[-300:]}")
    if code in (70, 71):  # the grader's own set-up: never the agent's doing
        from evalharness.errors import SandboxError

        raise SandboxError(f"the grader could not set up its git in the sandbox (exit {code}): {err[-300:]}")
    return Extracted(b"", Outcome.PATCH_REJECTED, f"the work tree could not be read as a change (exit {code}): "
                     f"{err[-300:]}")
