"""A stream's numbers for `drift run --format json`, `drift status` and `drift report` (from a StreamState).

Two kinds of alarm are kept apart:
- ``alarm_days``: the drift alarms recorded when a `drift run` raised them (drift_alerts), keyed by the
  day they were raised and never moved: what was alerted stays as it was;
- ``detector_alarm_days``: where the detector alarms on the stored days as they are now. A later result
  (a re-run of an old outage day, a backfilled day) can move these; when they differ from the recorded
  ones, ``reevaluation`` says so beside them, never in their place.
The baseline's warnings (short or degenerate, from its ``note``) and its promised delays are here too.
"""

from __future__ import annotations

from typing import Any

from evalharness.drift.state import StreamState, alarm_days, last_statistic

__all__ = ["summarise", "recorded_days", "reevaluation"]


def recorded_days(state: StreamState, kind: str) -> list[str]:
    """The days an alert of ``kind`` was raised for, as recorded."""
    return sorted({a["day"] for a in state.recorded if a["kind"] == kind})


def reevaluation(recorded: list[str], detector: list[str], monitored: list[str]) -> str | None:
    """A sentence when the detector, on the stored days as they are now, alarms elsewhere than the
    recorded alarms of the same monitored stretch; None when they agree."""
    if not monitored:
        return None
    recorded_here = [d for d in recorded if d >= monitored[0]]
    if recorded_here == detector:
        return None
    now = ", ".join(detector) or "no day"
    raised = ", ".join(recorded_here) or "none"
    return (f"re-evaluated on the stored days as they are now, the detector alarms on {now}; "
            f"the alarms raised (recorded as sent): {raised}")


def summarise(state: StreamState) -> dict[str, Any]:
    """The numbers `drift run --format json` and `drift status` show for a stream."""
    report, baseline = state.report, state.baseline
    counts: dict[str, int] = {}
    for d in state.days:
        counts[d["status"]] = counts.get(d["status"], 0) + 1
    outages = sorted({d["day"] for d in state.days if d["status"] == "outage"} | set(recorded_days(state, "outage")))
    alarms, detector = recorded_days(state, "drift"), alarm_days(report)
    out: dict[str, Any] = {
        "days": len(state.days), "day_counts": counts,
        "baseline": {"state": "collecting", "have": state.baseline_have, "need": state.baseline_need}
        if state.collecting else _baseline_summary(state),
        "statistic": last_statistic(state), "threshold": _num(getattr(baseline, "threshold", None)),
        "p_always_valid": _num(getattr(report, "p_always_valid", None)),
        "e_value": _num(getattr(report, "e_value", None)),
        "alarm_days": alarms, "last_alarm": alarms[-1] if alarms else None,
        "detector_alarm_days": detector, "reevaluation": reevaluation(alarms, detector, state.monitored),
        "change_day": getattr(report, "change_day", None),
        "last_outage": outages[-1] if outages else None, "monitored_days": len(state.monitored),
        "notes": [n["message"] for n in state.notes],
    }
    out["warnings"] = warnings(out["baseline"])
    if out["threshold"] is None and report is not None:
        out["threshold"] = _num(report.threshold)
    return out


def warnings(baseline: dict[str, Any]) -> list[str]:
    """The frozen baseline's warnings (short, degenerate: freeze_baseline's note), one per item."""
    parts, depth, current = [], 0, ""
    for ch in baseline.get("note") or "":
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == ";" and depth == 0:  # freeze_baseline joins its notes with "; " (a note may hold one in brackets)
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p.strip() for p in [*parts, current] if p.strip()]


def _baseline_summary(state: StreamState) -> dict[str, Any]:
    from evalharness.stats.intervals import wilson_interval

    b, epoch = state.baseline, state.epoch
    names = ("p0", "threshold", "reference", "delay_days", "delay_days_95", "false_alarms_per_year",
             "trials_per_day", "n_trials")
    fields = {k: _num(getattr(b, k, None)) for k in names}
    low, high = wilson_interval(b.successes, b.n_trials)  # the baseline rate's 95% interval (Wilson)
    return {"state": "frozen", "first_day": epoch["first_day"], "last_day": epoch["last_day"],
            "method": getattr(b, "method", None), "note": getattr(b, "note", ""), **fields,
            "p0_low": _num(low), "p0_high": _num(high), "delta": epoch["settings"].get("delta")}


def _num(x: Any) -> float | None:
    try:
        value = float(x)
    except (TypeError, ValueError):
        return None
    return value if value == value else None  # NaN -> None (JSON has no NaN)
