"""A scripted model for the harness tests that plays one conversation per trial (`from harness_scripts import ...`).

``TrialScript`` is a callable script for ``ScriptedModelServer``. It tells trials apart by what
is on the wire, so trials running at the same time never share a cursor:
- the harness, by its tools and prompt (``harness_of``);
- the task, by the first line of its problem statement;
- the seed, by the ``seed`` the harness sends;
- the turn, by the number of model replies already in the conversation (``turn_of``).
Each turn may list several replies: a repeated request for the same turn (a retry after an
HTTP error) gets the next one.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from typing import Callable

from evalharness.models import ModelRequest, Reply, bash, reply, tool_call

MINIMAL, MINI = "minimal", "mini-swe-agent"
MINIMAL_TEXT, MINI_TEXT = "minimal-text", "mini-text"
PRICES = {"input_cost_per_token": 2.5e-06, "output_cost_per_token": 1e-05}
"""Per-token prices registered on the endpoint (gpt-4o's list prices, any values would do)."""


def harness_of(request: ModelRequest) -> str:
    tools = [t.get("function", {}).get("name") for t in request.body.get("tools") or []]
    if "submit" in tools:
        return MINIMAL
    if tools:
        return MINI
    return MINIMAL_TEXT if "SUBMIT_FINAL_ANSWER" in request.prompt else MINI_TEXT


def turn_of(request: ModelRequest) -> int:
    """Model replies so far: assistant messages, plus format errors whose rejected reply was dropped
    from the conversation (mini-swe-agent keeps only its "Format error" / "Tool call error" message)."""
    turns, previous = 0, None
    for message in request.body.get("messages", []):
        rejected = str(message.get("content") or "").lstrip().startswith(("Format error", "Tool call error"))
        if message.get("role") == "assistant" or (rejected and previous != "assistant"):
            turns += 1
        previous = message.get("role")
    return turns


def tokens(turn: int) -> dict[str, int]:
    """Token counts the scripted model reports for a turn (fixed, so costs are known in advance)."""
    return {"input_tokens": 1000 + 100 * turn, "output_tokens": 40 + 5 * turn}


def submit(harness: str) -> Reply:
    if harness == MINIMAL:
        return reply("Done.", tool_call("submit"))
    if harness == MINIMAL_TEXT:
        return reply("The fix is in place.\nSUBMIT_FINAL_ANSWER")
    return command(harness, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")


def command(harness: str, cmd: str) -> Reply:
    """A reply running ``cmd`` in the harness's own action format."""
    if harness in (MINIMAL, MINI):
        return bash(cmd, text="Running a command.")
    fence = "bash" if harness == MINIMAL_TEXT else "mswea_bash_command"
    return reply(f"THOUGHT: running a command.\n\n```{fence}\n{cmd}\n```")


def git_apply(patch: str) -> str:
    """A command writing ``patch`` with a heredoc and applying it."""
    body = patch if patch.endswith("\n") else patch + "\n"
    return f"cat > /tmp/fix.diff <<'EVALHARNESS_EOF'\n{body}EVALHARNESS_EOF\ngit apply /tmp/fix.diff"


def python_edit(patch: str) -> str:
    """A command making the patch's change with a Python string replacement per hunk (no git apply)."""
    edits = []
    for block in re.split(r"^diff --git ", patch, flags=re.M)[1:]:
        path = re.search(r"^\+\+\+ [ab]/(\S+)", block, re.M).group(1)
        for hunk in re.split(r"^@@[^\n]*\n", block, flags=re.M)[1:]:
            lines = [ln for ln in hunk.splitlines(keepends=True) if ln[:1] in (" ", "-", "+")]
            old = "".join(ln[1:] for ln in lines if ln[0] in " -")
            new = "".join(ln[1:] for ln in lines if ln[0] in " +")
            edits.append((path, old, new))
    body = "import pathlib\n" + "".join(
        f"p = pathlib.Path({p!r}); s = p.read_text(); assert {o!r} in s; p.write_text(s.replace({o!r}, {n!r}, 1))\n"
        for p, o, n in edits)
    return f"python3 - <<'EVALHARNESS_EOF'\n{body}EVALHARNESS_EOF"


Plan = Callable[[str], list[list[Reply]]]
"""harness -> turns, each a list of replies for that turn's successive requests."""


def solve(fix: Callable[[str], str], patch: str) -> Plan:
    return lambda h: [[command(h, "git status --short && ls")], [command(h, fix(patch))], [submit(h)]]


def give_up() -> Plan:
    return lambda h: [[command(h, "ls")], [submit(h)]]


class TrialScript:
    """The callable script: ``plans[(harness, task_id)]`` (or ``plans[task_id]``) gives the conversation."""

    def __init__(self, tasks: list, plans: dict, *, token_counts: Callable[[int], dict] = tokens):
        self._titles = {t.instance_id: t.problem_statement.splitlines()[0] for t in tasks}
        self._plans, self._tokens = plans, token_counts
        self._attempts: dict[tuple, int] = defaultdict(int)
        self._lock = threading.Lock()

    def key(self, request: ModelRequest) -> tuple[str, str, object, int]:
        found = [tid for tid, title in self._titles.items() if title in request.prompt]
        if len(found) != 1:
            raise LookupError(f"request matches tasks {found}")
        return harness_of(request), found[0], request.body.get("seed"), turn_of(request)

    def __call__(self, request: ModelRequest) -> Reply:
        harness, task, seed, turn = self.key(request)
        plan = self._plans.get((harness, task)) or self._plans[task]
        turns = plan(harness)
        if turn >= len(turns):
            raise LookupError(f"{harness}/{task}: no reply scripted for turn {turn}")
        with self._lock:
            attempt = self._attempts[(harness, task, seed, turn)]
            self._attempts[(harness, task, seed, turn)] += 1
        chosen = turns[turn][min(attempt, len(turns[turn]) - 1)]
        if chosen.error is None and chosen.input_tokens is None:
            chosen = chosen.model_copy(update=self._tokens(turn))
        return chosen


def run_in_process(tmp_path, pack, harnesses: list[str], endpoint, **config) -> tuple[list[dict], object]:
    """Run a pack through the Python API; return (the trials' database rows, the RunSummary)."""
    import sqlite3

    from evalharness.runner import RunConfig, run

    runs = tmp_path / "runs"
    summary = run(RunConfig(pack=str(pack), harnesses=harnesses, models=[endpoint], **config), runs_dir=runs)
    db = sqlite3.connect(runs / "evalharness.db")
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("select * from trials where run_id = ?", (summary.run_id,))]
    db.close()
    return rows, summary


def by_harness(rows: list[dict]) -> dict[str, dict]:
    """One row per harness (for runs of one task and one seed)."""
    out = {r["harness"]: r for r in rows}
    assert len(out) == len(rows), "expected one trial per harness"
    return out
