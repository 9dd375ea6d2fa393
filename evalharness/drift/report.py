"""`drift report`: one self-contained HTML page (inline SVG, no scripts, nothing fetched at view time).

Per stream: the daily resolve rate with the baseline rate p0 and the baseline window, the CUSUM
statistic against its threshold, alarm days (red) and outage days (grey bands), and the day table.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from jinja2 import Environment, PackageLoader

from evalharness.drift.run import summarise
from evalharness.drift.state import alarm_days, stream_state
from evalharness.drift.tables import DriftTables

__all__ = ["render_report", "svg_series"]

W, H, PAD = 860, 200, 40


def _x(day: str, first: int, span: int) -> float:
    return PAD + (date.fromisoformat(day).toordinal() - first) / max(span, 1) * (W - 2 * PAD)


def _y(value: float, top: float) -> float:
    return H - PAD + (0 - value) / (top or 1) * (H - 2 * PAD)


def svg_series(points: list[tuple[str, float]], *, top: float, all_days: list[str], lines: dict[str, float],
               alarms: list[str], outages: list[str], label: str, band: tuple[str, str] | None = None) -> str:
    """One inline SVG chart: a polyline of ``points`` (day, value) on a day axis, horizontal ``lines``."""
    if not all_days:
        return ""
    first = date.fromisoformat(all_days[0]).toordinal()
    span = date.fromisoformat(all_days[-1]).toordinal() - first
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" role="img" aria-label="{label}">',
             f'<rect x="{PAD}" y="{PAD}" width="{W - 2 * PAD}" height="{H - 2 * PAD}" fill="#fafbfc" stroke="#ccc"/>']
    step = (W - 2 * PAD) / max(span, 1)
    if band:
        x0, x1 = _x(band[0], first, span), _x(band[1], first, span)
        parts.append(f'<rect x="{x0:.1f}" y="{PAD}" width="{max(x1 - x0, 1):.1f}" height="{H - 2 * PAD}" '
                     'fill="#e8f0fb"><title>baseline window</title></rect>')
    for d in outages:
        parts.append(f'<rect class="outage" x="{_x(d, first, span) - step / 2:.1f}" y="{PAD}" '
                     f'width="{max(step, 2):.1f}" '
                     f'height="{H - 2 * PAD}" fill="#bbb" opacity="0.6"><title>outage {d}</title></rect>')
    for name, value in lines.items():
        y = _y(value, top)
        parts.append(f'<line x1="{PAD}" x2="{W - PAD}" y1="{y:.1f}" y2="{y:.1f}" stroke="#888" stroke-dasharray="4 3"/>'
                     f'<text x="{W - PAD + 3}" y="{y + 4:.1f}" font-size="10">{name}</text>')
    if points:
        path = " ".join(f"{_x(d, first, span):.1f},{_y(v, top):.1f}" for d, v in points)
        parts.append(f'<polyline fill="none" stroke="#1f4e79" stroke-width="1.5" points="{path}"/>')
        parts += [f'<circle cx="{_x(d, first, span):.1f}" cy="{_y(v, top):.1f}" r="2" fill="#1f4e79">'
                  f'<title>{d}: {v:.3g}</title></circle>' for d, v in points]
    for d in alarms:
        x = _x(d, first, span)
        parts.append(f'<line class="alarm" x1="{x:.1f}" x2="{x:.1f}" y1="{PAD}" y2="{H - PAD}" stroke="#c62828" '
                     f'stroke-width="2"><title>alarm {d}</title></line>')
    parts.append(f'<text x="{PAD}" y="{H - 8}" font-size="11">{all_days[0]}</text>'
                 f'<text x="{W - PAD}" y="{H - 8}" font-size="11" text-anchor="end">{all_days[-1]}</text>'
                 f'<text x="{PAD}" y="{PAD - 8}" font-size="12">{label}</text></svg>')
    return "".join(parts)


def _stream_view(tables: DriftTables, name: str) -> dict[str, Any]:
    state = stream_state(tables, name)
    summary = summarise(state)
    days = [d["day"] for d in state.days]
    outages = [d["day"] for d in state.days if d["status"] == "outage"]
    alarms = alarm_days(state.report)
    rates = [(d["day"], d["resolved"] / d["usable"]) for d in state.days
             if d["status"] in ("ok", "partial") and d["usable"]]
    b = summary["baseline"]
    lines = {"p0": b["p0"]} if b.get("p0") is not None else {}
    band = (b["first_day"], b["last_day"]) if b["state"] == "frozen" else None
    rate_svg = svg_series(rates, top=1.0, all_days=days, lines=lines, alarms=alarms, outages=outages,
                          label="daily resolve rate (line: baseline p0; blue band: baseline days)", band=band)
    cusum_svg = ""
    if state.report is not None:
        path = list(zip(state.report.days, state.report.statistic))
        threshold = summary["threshold"] or 0.0
        top = max([threshold * 1.2, *[v for _, v in path], 1e-9])
        cusum_svg = svg_series(path, top=top, all_days=days, lines={"threshold": threshold}, alarms=alarms,
                               outages=outages, label="CUSUM statistic against its threshold")
    return {"name": name, "summary": summary, "rate_svg": rate_svg, "cusum_svg": cusum_svg,
            "days": list(reversed(state.days)), "alerts": tables.alerts(name)}


def render_report(tables: DriftTables) -> str:
    env = Environment(loader=PackageLoader("evalharness.drift", "templates"), autoescape=True)
    streams = [_stream_view(tables, name) for name in tables.streams()]
    return env.get_template("drift.html.j2").render(streams=streams)
