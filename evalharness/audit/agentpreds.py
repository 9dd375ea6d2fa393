"""Real agents' predictions with their official verdicts, as audit evidence (pure; ``docs/audit.md``).

A predictions file is JSONL, one prediction a line: ``instance_id``, ``model_patch`` (or ``patch``) and the
verdict ``resolved`` (or ``official_resolved``: true, false, or null when never graded); ``model_name_or_path``
names the agent. ``load_predictions`` reads it with a clear error per bad line.

``regions`` says where a patch changes code: per file, the innermost ``def``/``class`` around each changed base
line (``<module>`` outside any), read from the code at base; the whole file (``*``) when the base cannot be read
or the file is not Python. ``covers`` says whether an agent's patch changes every region the gold patch does.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evalharness.audit.patchparts import FilePatch, PatchUnsupported, parse_patch
from evalharness.errors import UserError
from evalharness.grading.suspicious import is_test_path

WHOLE_FILE = "*"
Read = Callable[[str], "str | None"]
"""The file at a path at base (None when it cannot be read)."""


@dataclass(frozen=True)
class Prediction:
    task_id: str
    agent: str
    patch: str
    resolved: bool | None
    """The official verdict; None when the prediction was never graded."""

    @property
    def usable(self) -> bool:
        """A patch and a true/false verdict: evidence either way."""
        return bool(self.patch.strip()) and self.resolved is not None


def parse_prediction(data: object, where: str) -> Prediction:
    if not isinstance(data, dict):
        raise UserError(f"{where}: a prediction must be a JSON object, not {type(data).__name__}")
    task_id = data.get("instance_id")
    if not isinstance(task_id, str) or not task_id:
        raise UserError(f"{where}: no instance_id", "each line needs instance_id, model_patch and resolved")
    patch = data.get("model_patch", data.get("patch"))
    if patch is None:
        patch = ""
    if not isinstance(patch, str):
        raise UserError(f"{where}: model_patch of {task_id} is not a string")
    key = "resolved" if "resolved" in data else "official_resolved" if "official_resolved" in data else None
    if key is None:
        raise UserError(f"{where}: {task_id} has no verdict",
                        "give resolved (or official_resolved): true, false, or null when never graded")
    verdict = data[key]
    if verdict is not None and not isinstance(verdict, bool):
        raise UserError(f"{where}: {key} of {task_id} is {verdict!r}; expected true, false or null")
    agent = str(data.get("model_name_or_path") or data.get("agent") or "agent")
    return Prediction(task_id, agent, patch, verdict)


def load_predictions(path: Path) -> dict[str, list[Prediction]]:
    """Predictions by task id, in file order."""
    out: dict[str, list[Prediction]] = {}
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise UserError(f"cannot read predictions {path}: {e}") from e
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{n}: not JSON: {e}") from e
        p = parse_prediction(data, f"{path}:{n}")
        out.setdefault(p.task_id, []).append(p)
    return out


def changed_base_lines(fp: FilePatch) -> list[int]:
    """The base lines a file's hunks remove, and for a pure insertion the base line it follows (1 at the top)."""
    lines: list[int] = []
    for hunk in fp.hunks:
        at = hunk.old_start if hunk.old_len else hunk.old_start + 1  # git numbers an empty old side one lower
        for op, _ in hunk.lines:
            if op == "-":
                lines.append(at)
            elif op == "+":
                lines.append(max(1, at - 1))
            if op != "+":
                at += 1
    return sorted(set(lines))


def scopes(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every def and class, decorators included; [] if unparsable."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out: list[tuple[int, int, str]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out.append((first, child.end_lineno or child.lineno, name))
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def innermost(found: list[tuple[int, int, str]], line: int) -> str:
    inside = [s for s in found if s[0] <= line <= s[1]]
    return min(inside, key=lambda s: s[1] - s[0])[2] if inside else "<module>"


def regions(patch: str, read: Read, *, code_only: bool = True) -> set[tuple[str, str]]:
    """(path, scope) of every change of ``patch``; test files left out when ``code_only``. PatchUnsupported if the
    patch cannot be taken apart."""
    out: set[tuple[str, str]] = set()
    for fp in parse_patch(patch):
        path = fp.path
        if code_only and is_test_path(path):
            continue
        base = read(path) if fp.old_path and path.endswith(".py") else None
        found = scopes(base) if base else []
        if not found and base is None:
            out.add((path, WHOLE_FILE))
            continue
        out.update((path, innermost(found, line)) for line in changed_base_lines(fp))
    return out


def covers(agent: set[tuple[str, str]], gold: set[tuple[str, str]]) -> bool:
    """Does the agent change every gold region (a whole-file gold region: any change to that file)?"""
    files = {path for path, _ in agent}
    return bool(gold) and all((path in files) if scope == WHOLE_FILE else ((path, scope) in agent or
                                                                         (path, WHOLE_FILE) in agent)
                              for path, scope in gold)


def near_misses(gold_patch: str, predictions: list[Prediction], read: Read) -> tuple[list[dict], list[str]]:
    """The failing predictions that change every gold region (with their regions), and the gold regions."""
    try:
        gold = regions(gold_patch, read)
    except PatchUnsupported:
        return [], []
    hits = []
    for p in predictions:
        if not p.usable or p.resolved:
            continue
        try:
            theirs = regions(p.patch, read)
        except PatchUnsupported:
            continue
        if covers(theirs, gold):
            hits.append({"agent": p.agent, "regions": sorted(f"{a}::{b}" for a, b in theirs)})
    return hits, sorted(f"{a}::{b}" for a, b in gold)
