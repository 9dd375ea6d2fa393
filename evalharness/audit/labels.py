"""Human labels: the labelling queue of a pack, each annotator's order, and the one rule a label must pass.

A *queue item* is what an annotator judges a task on: its statement, tests (the test patch and the
FAIL_TO_PASS ids), gold patch, the probes' findings as evidence and the investigator's verdicts (findings of
probe ``investigator``). Each annotator sees the queue in their own order (a shuffle seeded by their name:
the same every time for them, different between annotators, so that no task is always judged first or
tired). A *label* says broken or clean, a severity 0-3 (OpenAI's rubric: 0 no issue, 1 minor, 2 serious,
3 the task cannot be solved fairly), the defect family when broken, and a free note. ``parse_label`` is the
one check every label passes, whether it comes from the web page (``labelserve``) or a file
(``labelfiles``); a label it refuses names the reason and is never stored.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Container, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from evalharness.audit.findings import FAMILIES
from evalharness.types import TaskSpec

INVESTIGATOR = "investigator"
"""The probe name of investigator-agent findings: shown as verdicts, apart from the probes' evidence."""
NOTE_MAX = 4000
ANNOTATOR_MAX = 120
_TRUE = {"true", "1", "yes", "y", "broken"}
_FALSE = {"false", "0", "no", "n", "clean"}
_FINDING_FIELDS = ("probe", "seed", "family", "flagged", "severity", "status", "reason", "evidence")


class LabelError(ValueError):
    """A label that cannot be stored; the message is the reason, for a person to read."""


@dataclass
class QueueItem:
    task_id: str
    statement: str
    test_patch: str
    gold_patch: str
    fail_to_pass: list[str]
    pass_to_pass: int
    """How many PASS_TO_PASS tests guard against regressions (their ids are rarely worth reading)."""
    evidence: list[dict[str, Any]] = field(default_factory=list)
    """The deterministic probes' findings (probe, family, flagged, severity, status, reason, evidence)."""
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    """The investigator agents' findings, one per seed."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Label:
    task_id: str
    annotator: str
    broken: bool
    severity: int
    family: str | None = None
    note: str = ""
    labelled_at: datetime | None = None
    """When it was given (files carry it; the web page leaves it to the store's clock)."""
    seconds: float | None = None
    """How long the annotator looked at the task before saving."""


def build_queue(tasks: Iterable[TaskSpec], findings: list[dict[str, Any]], *,
                hide_findings: bool = False) -> list[QueueItem]:
    """One item per task, in pack order; ``findings`` are ``Store.findings(pack)`` rows. ``hide_findings``
    leaves evidence and verdicts out, for a labelling pass independent of the pipeline it will judge."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for row in findings:
        by_task.setdefault(row["task_id"], []).append({k: row[k] for k in _FINDING_FIELDS if k in row})
    items = []
    for task in tasks:
        rows = [] if hide_findings else by_task.get(task.instance_id, [])
        items.append(QueueItem(
            task_id=task.instance_id, statement=task.problem_statement, test_patch=task.test_patch,
            gold_patch=task.patch, fail_to_pass=list(task.FAIL_TO_PASS), pass_to_pass=len(task.PASS_TO_PASS),
            evidence=[r for r in rows if r["probe"] != INVESTIGATOR],
            verdicts=[r for r in rows if r["probe"] == INVESTIGATOR]))
    return items


def annotator_order(task_ids: Iterable[str], annotator: str) -> list[str]:
    """``task_ids`` shuffled by a seed derived from the annotator's name: deterministic per annotator,
    independent of the order the ids come in."""
    seed = int.from_bytes(hashlib.sha256(f"label-order:{annotator.strip()}".encode()).digest()[:8], "big")
    ids = sorted(set(task_ids))
    random.Random(seed).shuffle(ids)
    return ids


def parse_label(raw: Mapping[str, Any], task_ids: Container[str], *, annotator: str | None = None) -> Label:
    """Check one label. ``annotator`` (the web page's, fixed by the server) overrides ``raw["annotator"]``.

    Rules: the task is in the pack; an annotator is named; ``broken`` is a yes/no; severity is 0-3; a broken
    task names its family (one of ``FAMILIES``) and has severity 1-3; a clean task has severity 0-2 (3 means it
    cannot be solved fairly); a family given is a known one; the note is at most ``NOTE_MAX`` characters;
    ``seconds`` is a non-negative number; ``labelled_at`` an ISO 8601 time."""
    task_id = _text(raw.get("task_id"))
    if not task_id:
        raise LabelError("no task_id")
    if task_id not in task_ids:
        raise LabelError(f"unknown task {task_id!r}: not in the pack")
    who = (annotator if annotator is not None else _text(raw.get("annotator"))).strip()
    if not who:
        raise LabelError("no annotator named")
    if len(who) > ANNOTATOR_MAX:
        raise LabelError(f"annotator name longer than {ANNOTATOR_MAX} characters")
    broken = _yes_no(raw.get("broken"))
    severity = _severity(raw.get("severity"))
    family = _text(raw.get("family")).strip() or None
    if family is not None and family not in FAMILIES:
        raise LabelError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")
    if broken and family is None:
        raise LabelError("a broken task needs a family")
    if broken and severity == 0:
        raise LabelError("a broken task has severity 1-3, got 0")
    if not broken and severity == 3:
        raise LabelError("a clean task has severity 0-2; severity 3 means it cannot be solved fairly")
    note = _text(raw.get("note"))
    if len(note) > NOTE_MAX:
        raise LabelError(f"note longer than {NOTE_MAX} characters")
    return Label(task_id=task_id, annotator=who, broken=broken, severity=severity, family=family, note=note,
                 labelled_at=_time(raw.get("labelled_at")), seconds=_seconds(raw.get("seconds")))


def is_blank(raw: Mapping[str, Any]) -> bool:
    """A row of an exported queue nobody labelled: no broken, severity, family or note given."""
    return all(raw.get(k) is None or (isinstance(raw.get(k), str) and not raw[k].strip())
               for k in ("broken", "severity", "family", "note"))


def as_utc(value: datetime) -> datetime:
    """Stored times are UTC; SQLite gives them back without a zone."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise LabelError(f"expected text, got {type(value).__name__} {value!r}")
    return value


def _yes_no(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    if value is None or value == "":
        raise LabelError("broken is missing (true/false, broken/clean)")
    raise LabelError(f"broken must be true/false (or broken/clean), got {value!r}")


def _severity(value: Any) -> int:
    if isinstance(value, str) and value.strip() in ("0", "1", "2", "3"):
        return int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3:
        return value
    if value is None or value == "":
        raise LabelError("severity is missing (0-3)")
    raise LabelError(f"severity must be 0-3, got {value!r}")


def _seconds(value: Any) -> float | None:
    if value is None or value == "":
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise LabelError(f"seconds must be a number, got {value!r}") from None
    if isinstance(value, bool) or not seconds >= 0 or seconds == float("inf"):
        raise LabelError(f"seconds must be a non-negative number, got {value!r}")
    return seconds


def _time(value: Any) -> datetime | None:
    text = _text(value).strip()
    if not text:
        return None
    try:
        return as_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        raise LabelError(f"labelled_at must be an ISO 8601 time, got {text!r}") from None
