"""What an audit says about one task: findings (pure data; ``docs/audit.md``).

A probe looks at one task and returns one ``Finding``: whether it flags the task as defective, in
which defect family, how severe (0-3, OpenAI's SWE-bench Verified rubric: 0 no issue, 1 minor, 2
serious, 3 the task cannot be solved fairly), why, and the evidence (commands, outputs, diffs,
rates) a reader needs to check it. A probe that cannot decide says so with ``status``:

- ``ok``: the probe ran; ``flagged`` is its answer;
- ``skipped``: the probe had nothing to go on (no stored runs, no validation report, no Docker);
  the reason names what is missing. Never counted as "not flagged" in precision and recall;
- ``error``: the machine failed (engine, build); not the task's fault, audit again;
- ``invalid``: an investigator's answer did not match the verdict schema (kept, with the raw text).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

FAMILIES = ("validity", "too_weak_tests", "overly_strict", "underspecified", "solution_leak",
            "universal_failure", "environment")
"""Defect families. ``validity``: the task does not work as its lists say (gold fails, empty passes,
flaky); ``too_weak_tests``: incomplete fixes pass; ``overly_strict``: correct fixes fail (tests bound to
one implementation); ``underspecified``: the tests require what the statement never says;
``solution_leak``: the statement gives the fix away; ``universal_failure``: nothing solves it;
``environment``: the tests need the network, the clock or the host."""
STATUSES = ("ok", "skipped", "error", "invalid")
SEVERITIES = (0, 1, 2, 3)


@dataclass
class Finding:
    task_id: str
    probe: str
    """The probe's name (``validity``, ``mutants``, ``strict_literals``, ``underspecified``, ``leak``,
    ``universal``, ``environment``, ``agents``, ``investigator``)."""
    family: str | None
    """One of ``FAMILIES``: the family the probe looks for (an investigator names the family it found). None
    only where nothing is flagged and no family applies: an investigator's clean verdict, or a seed that gave no
    verdict (the investigator looks for every family, so it has none of its own)."""
    flagged: bool
    severity: int = 0
    reason: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    status: str = "ok"
    seed: int = 0
    """Investigator seed (0 for deterministic probes)."""
    inputs_hash: str = ""
    """Hash of everything the finding depends on; a resumed audit keeps findings whose hash still matches."""

    def __post_init__(self) -> None:
        if self.family is None and self.flagged:
            raise ValueError("a finding that flags a task names its family")
        if self.family is not None and self.family not in FAMILIES:
            raise ValueError(f"family {self.family!r} is not one of {', '.join(FAMILIES)}")
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {', '.join(STATUSES)}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not 0-3")
        if self.flagged and self.status != "ok":
            raise ValueError("only a finding with status ok can flag a task")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Finding":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def inputs_hash(*parts: Any) -> str:
    """A stable hash of JSON-able parts (task fields, probe version, settings)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
