"""An investigator's verdict: the schema it must match, its finding, and the ensemble of seeds (pure).

The verdict is one JSON object (``docs/audit.md``, "Investigator verdicts"): ``broken`` (bool),
``family`` (one of ``FAMILIES``, required when broken), ``severity`` (0-3, OpenAI's rubric) and
``evidence`` (text). ``broken`` is true exactly when the severity is 2 or 3: a verdict that says
otherwise contradicts itself and is invalid, as is any other field, a string where a number or a
boolean belongs, or text around the JSON (one enclosing Markdown fence is tolerated).

Several seeds are ensembled as OpenAI did: the most severe verdict wins; the agreement between
seeds (how many flag, which families, the fraction that agree with the winner) is kept beside it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evalharness.audit.findings import FAMILIES, Finding, inputs_hash

PROBE = "investigator"
ENSEMBLE_SEED = -1
"""The seed under which the ensemble of a task's seeds is stored (per-seed findings carry their seed)."""
UNNAMED_FAMILY = None
"""``Finding.family`` of a finding that flags nothing and names no family: a clean verdict, or a seed without
one. Never ``validity`` or another family, which would count a clean answer under a defect it never named."""
_FENCE = re.compile(r"^```[A-Za-z]*\n(.*)\n```$", re.DOTALL)


class Verdict(BaseModel):
    """What an investigator answers about one task."""

    model_config = ConfigDict(extra="forbid", strict=True)

    broken: bool
    """Is the task unfair (severity 2 or 3)?"""
    family: Literal[FAMILIES] | None = None  # type: ignore[valid-type]
    """The defect family found; required when broken."""
    severity: int = Field(ge=0, le=3)
    """0 no issue, 1 minor, 2 serious, 3 cannot be solved fairly."""
    evidence: str = Field(min_length=1)
    """What the investigator found, and the commands that showed it."""

    @model_validator(mode="after")
    def _consistent(self) -> "Verdict":
        if self.broken and self.family is None:
            raise ValueError(f"a broken verdict names its family (one of {', '.join(FAMILIES)})")
        if self.broken != (self.severity >= 2):
            raise ValueError(f"broken is {str(self.broken).lower()} but severity is {self.severity}: "
                             "broken means severity 2 or 3")
        return self


class VerdictError(ValueError):
    """The investigator's answer is missing or does not match the verdict schema."""


def parse_verdict(text: str) -> Verdict:
    """The verdict in ``text`` (a JSON object), or VerdictError saying what is wrong with it."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        raise VerdictError("the verdict is empty")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise VerdictError(f"the verdict is not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if not isinstance(data, dict):
        raise VerdictError(f"the verdict is a JSON {type(data).__name__}, not an object")
    try:
        return Verdict.model_validate(data)
    except ValidationError as e:
        raise VerdictError("; ".join(_problem(err) for err in e.errors())) from None


def _problem(err: dict[str, Any]) -> str:
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else err["msg"]


def verdict_finding(task_id: str, seed: int, verdict: Verdict, evidence: dict[str, Any], hash_: str) -> Finding:
    """An ok finding: flagged when the verdict says broken, in the family it names."""
    return Finding(task_id, PROBE, verdict.family or UNNAMED_FAMILY, verdict.broken, verdict.severity,
                   verdict.evidence, {**evidence, "verdict": verdict.model_dump()}, "ok", seed, hash_)


def failed_finding(task_id: str, seed: int, status: str, reason: str, evidence: dict[str, Any],
                   hash_: str) -> Finding:
    """An ``invalid`` (no verdict matching the schema) or ``error`` (the machine failed) finding."""
    return Finding(task_id, PROBE, UNNAMED_FAMILY, False, 0, reason, evidence, status, seed, hash_)


def ensemble(findings: list[Finding]) -> Finding:
    """One finding for a task from its seeds' findings: the most severe ok verdict wins (a flag beats
    no flag, then higher severity, then the family more seeds named, then the earlier seed).

    Evidence: per-status counts, how many ok seeds flag, the families they name, ``agreement`` (the
    fraction of ok seeds whose flag equals the winner's) and ``family_agreement`` (of flagging seeds,
    the fraction naming the winner's family). With no ok seed the ensemble is ``invalid`` when every
    seed was, else ``error`` (audit again).
    """
    if not findings:
        raise ValueError("no findings to ensemble")
    task_ids = {f.task_id for f in findings}
    if len(task_ids) != 1:
        raise ValueError(f"findings of several tasks: {sorted(task_ids)}")
    ok = [f for f in findings if f.status == "ok"]
    flagging = [f for f in ok if f.flagged]
    families = Counter(f.family for f in flagging)
    evidence: dict[str, Any] = {
        "seeds": [f.seed for f in findings], "statuses": dict(Counter(f.status for f in findings)),
        "ok": len(ok), "flagged": len(flagging), "families": dict(families),
        "per_seed": [{"seed": f.seed, "status": f.status, "flagged": f.flagged, "family": f.family,
                      "severity": f.severity, "reason": f.reason[:300]} for f in findings]}
    hash_ = inputs_hash(sorted((f.seed, f.inputs_hash) for f in findings))
    task_id = findings[0].task_id
    if not ok:
        status = "invalid" if all(f.status == "invalid" for f in findings) else "error"
        reason = f"no seed gave a valid verdict ({_counts(evidence['statuses'])})"
        return Finding(task_id, PROBE, UNNAMED_FAMILY, False, 0, reason, evidence, status, ENSEMBLE_SEED, hash_)
    order = {id(f): i for i, f in enumerate(ok)}
    winner = max(ok, key=lambda f: (f.flagged, f.severity, families[f.family] if f.flagged else 0, -order[id(f)]))
    evidence.update(agreement=sum(f.flagged == winner.flagged for f in ok) / len(ok), winner_seed=winner.seed,
                    family_agreement=families[winner.family] / len(flagging) if flagging else None)
    reason = f"{len(flagging)} of {len(ok)} valid seeds flag the task"
    if len(ok) < len(findings):
        reason += f" ({_counts(evidence['statuses'])})"
    return Finding(task_id, PROBE, winner.family, winner.flagged, winner.severity, f"{reason}: {winner.reason}",
                   evidence, "ok", ENSEMBLE_SEED, hash_)


def _counts(statuses: dict[str, int]) -> str:
    return ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
