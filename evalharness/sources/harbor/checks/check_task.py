"""Static checks of task.toml and the instruction: ``task-fields`` and ``instruction-timeout`` (pure)."""

from __future__ import annotations

import re

from evalharness.sources.harbor.checks.findings import Evidence, StaticFinding, evidence, toml_line
from evalharness.sources.harbor.model import HarborTask

REQUIRED_METADATA = ("author_name", "author_email", "difficulty_explanation", "solution_explanation",
                     "verification_explanation", "tags", "expert_time_estimate_hours")
"""The Terminal-Bench-3 template's reviewer metadata; with a classification: ``category`` (the template) or
``domain`` + ``field`` + ``subfield`` (its later forks)."""
_UNITS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hr": 3600, "hour": 3600}
_LIMIT = re.compile(r"\b(?:you have|time limit(?: of| is)?|within)\s+(\d+(?:\.\d+)?)\s*"
                    r"(seconds?|secs?|minutes?|mins?|hours?|hrs?)\b", re.IGNORECASE)


def task_fields(task: HarborTask) -> list[StaticFinding]:
    """The template's metadata is there and not empty (authors may come from ``[task].authors``, the time
    estimate in TB2's ``expert_time_estimate_min``)."""
    meta, identity = task.config.metadata, task.config.task

    def has(key: str) -> bool:
        value = meta.get(key)
        return value is not None and value != "" and value != []

    authors = identity.authors if identity else []
    alternatives = {"author_name": any(a.name for a in authors), "author_email": any(a.email for a in authors),
                    "expert_time_estimate_hours": has("expert_time_estimate_min")}
    missing = [k for k in REQUIRED_METADATA if not has(k) and not alternatives.get(k)]
    if not has("category") and not all(has(k) for k in ("domain", "field", "subfield")):
        missing.append("category (or domain, field and subfield)")
    if not missing:
        return []
    return [StaticFinding("task-fields", 1, f"[metadata] lacks {', '.join(missing)}: reviewers of a template "
                          "benchmark read these to judge the task", (toml_line(task, None, "metadata"),))]


def instruction_timeout(task: HarborTask) -> list[StaticFinding]:
    """A time limit the instruction states is the agent's real one (``[agent] timeout_sec``): an agent told
    the wrong budget plans for it, which a score then measures."""
    timeout = task.config.agent.timeout_sec
    path = task.root / "instruction.md"
    found = []
    for number, raw in enumerate(task.instruction.splitlines(), 1):
        for match in _LIMIT.finditer(raw):
            stated = float(match.group(1)) * _UNITS[_unit(match.group(2))]
            if timeout is not None and abs(stated - timeout) < 1:
                continue
            actual = f"[agent] timeout_sec = {timeout:g} s" if timeout is not None else \
                "task.toml sets no [agent] timeout_sec (the runner's default applies)"
            found.append(StaticFinding("instruction-timeout", 2, f"the instruction gives the agent {stated:g} s but "
                                       f"{actual}", (evidence(task, path, number), toml_line(task, "timeout_sec", "agent"))))
    return found


def _unit(word: str) -> str:
    word = word.lower().rstrip("s") or "s"
    return {"sec": "sec", "second": "second", "min": "min", "minute": "minute", "hr": "hr", "hour": "hour"}.get(word, word)
