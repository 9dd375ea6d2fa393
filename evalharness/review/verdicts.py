"""The one check every review passes, from the page or a file, before it reaches the store.

A review gives a verdict (``codes.VERDICTS``), reasons (``codes.REASONS``: at least one for ``reject`` and
``merge_after_changes``, none for ``merge``), an optional note of at most ``NOTE_MAX`` characters, the seconds the
reviewer spent (a non-negative number; the page measures it) and a reviewer (the server's own on the page, the
row's in a file). Files may also give ``reviewed_at`` (ISO 8601). ``check`` names what is wrong in a
``ReviewError`` and returns the fields ``Store.record_reviews`` takes.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from evalharness.review.codes import REASONS, VERDICTS

NOTE_MAX = 4000
REVIEWER_MAX = 120
SECONDS_MAX = 10**7
NEEDS_REASON = frozenset({"reject", "merge_after_changes"})


class ReviewError(ValueError):
    """A review that cannot be stored; the message is the reason, for a person to read."""


def check(raw: dict[str, Any], *, reviewer: str | None) -> dict[str, Any]:
    """``raw`` checked; ``reviewer`` (the server's) overrides ``raw["reviewer"]``."""
    who = (reviewer if reviewer is not None else _text(raw.get("reviewer"), "reviewer")).strip()
    if not who:
        raise ReviewError("no reviewer named")
    if len(who) > REVIEWER_MAX:
        raise ReviewError(f"reviewer name longer than {REVIEWER_MAX} characters")
    verdict = _text(raw.get("verdict"), "verdict").strip()
    if verdict not in VERDICTS:
        raise ReviewError(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict or 'nothing'!r}")
    reasons = reasons_of(raw.get("reasons"))
    if verdict in NEEDS_REASON and not reasons:
        raise ReviewError(f"a {verdict} verdict needs at least one reason ({', '.join(REASONS)})")
    if verdict == "merge" and reasons:
        raise ReviewError("a merge verdict gives no reasons (they say why a patch is not merged as is)")
    note = _text(raw.get("note"), "note")
    if len(note) > NOTE_MAX:
        raise ReviewError(f"note longer than {NOTE_MAX} characters")
    out = {"reviewer": who, "verdict": verdict, "reasons": reasons, "note": note,
           "seconds": _seconds(raw.get("seconds"))}
    when = _time(raw.get("reviewed_at"))
    if when is not None:
        out["reviewed_at"] = when
    return out


def reasons_of(value: Any) -> list[str]:
    """Reason codes from a list, JSON list text, or text separated by ``;`` or ``,``; each known, none twice."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                raise ReviewError(f"reasons: not a valid JSON list: {text!r}") from None
        else:
            value = [part.strip() for part in re.split(r"[;,]", text) if part.strip()]
    if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
        raise ReviewError(f"reasons must be a list of reason codes, got {value!r}")
    unknown = sorted(set(value) - set(REASONS))
    if unknown:
        raise ReviewError(f"unknown reason {', '.join(unknown)}; reasons are {', '.join(REASONS)}")
    return sorted(set(value), key=list(REASONS).index)


def _text(value: Any, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReviewError(f"{name} must be text, got {type(value).__name__} {value!r}")
    return value


def _seconds(value: Any) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ReviewError(f"seconds must be a number, got {value!r}")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ReviewError(f"seconds must be a number, got {value!r}") from None
    if not 0 <= seconds < SECONDS_MAX:
        raise ReviewError(f"seconds must be a non-negative number below {SECONDS_MAX}, got {value!r}")
    return seconds


def _time(value: Any) -> datetime | None:
    from evalharness.audit.labels import as_utc

    text = _text(value, "reviewed_at").strip()
    if not text:
        return None
    try:
        return as_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        raise ReviewError(f"reviewed_at must be an ISO 8601 time, got {text!r}") from None
