"""`drift report`: one self-contained HTML page (inline SVG, no scripts, nothing fetched at view time).

Per stream: the baseline's warnings (short, degenerate) and promised detection delay; the daily resolve
rate with the baseline rate p0 and the baseline window, the CUSUM statistic against its threshold, each
chart with its y-axis values; the alarms raised (red lines, as recorded) and, dashed, where the detector
alarms on the stored days as they are now when that differs; outage days (grey bands); the alerts as
raised, the notes of later runs, and the day table.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from jinja2 import Environment, PackageLoader

from evalharness.drift.state import stream_state
from evalharness.drift.summary import summarise
from evalharness.drift.tables import DriftTables

__all__ = ["render_report", "svg_series", "y_ticks"]

W, H = 860, 200
LEFT, RIGHT, TOP, BOTTOM = 48, 70, 30, 30
"""Margins: LEFT holds the y-axis values, RIGHT the horizontal lines' labels ("threshold" at 10 px)."""
CHAR_W = 0.62
"""A conservative width of one character, in font sizes (sans-serif digits and lower case are narrower)."""


def _x(day: str, first: int, span: int) -> float:
    return LEFT + (date.fromisoformat(day).toordinal() - first) / max(span, 1) * (W - LEFT - RIGHT)


def _y(value: float, top: float) -> float:
    return H - BOTTOM - value / (top or 1) * (H - TOP - BOTTOM)


def y_ticks(top: float) -> list[float]:
    """Round values from 0 to ``top`` (3 to 6 of them): steps of 1, 2, 2.5 or 5 times a power of ten."""
    import math

    if top <= 0:
        return [0.0]
    raw = top / 4
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [round(i * step, 10) for i in range(int(top / step + 1e-9) + 1)]


def _tick_label(value: float, percent: bool) -> str:
    return f"{100 * value:.0f}%" if percent else f"{value:g}"


def _text(x: float, y: float, text: str, size: int, anchor: str = "start", cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return (f'<text{klass} x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}">{text}</text>')


def _frame(label: str, top: float, percent: bool) -> list[str]:
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
             f'aria-label="{label}">',
             f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" fill="#fafbfc" '
             'stroke="#ccc"/>']
    for value in y_ticks(top):
        y = _y(value, top)
        parts.append(f'<line x1="{LEFT - 4}" x2="{LEFT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#888"/>'
                     + _text(LEFT - 6, y + 3.5, _tick_label(value, percent), 10, "end", "ytick"))
    return parts


def svg_series(points: list[tuple[str, float]], *, top: float, all_days: list[str], lines: dict[str, float],
               alarms: list[str], outages: list[str], label: str, band: tuple[str, str] | None = None,
               percent: bool = False, detector_alarms: list[str] = ()) -> str:
    """One inline SVG chart: a polyline of ``points`` (day, value) on a day axis, y-axis values, horizontal
    ``lines`` labelled at the right, alarm days (red; ``detector_alarms`` dashed) and outage days (grey)."""
    if not all_days:
        return ""
    first = date.fromisoformat(all_days[0]).toordinal()
    span = date.fromisoformat(all_days[-1]).toordinal() - first
    parts = _frame(label, top, percent)
    step = (W - LEFT - RIGHT) / max(span, 1)
    if band:
        x0, x1 = _x(band[0], first, span), _x(band[1], first, span)
        parts.append(f'<rect x="{x0:.1f}" y="{TOP}" width="{max(x1 - x0, 1):.1f}" height="{H - TOP - BOTTOM}" '
                     'fill="#e8f0fb"><title>baseline window</title></rect>')
    for d in outages:
        parts.append(f'<rect class="outage" x="{_x(d, first, span) - step / 2:.1f}" y="{TOP}" '
                     f'width="{max(step, 2):.1f}" height="{H - TOP - BOTTOM}" fill="#bbb" opacity="0.6">'
                     f'<title>outage {d}</title></rect>')
    for name, value in lines.items():
        y = _y(value, top)
        parts.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#888" '
                     f'stroke-dasharray="4 3"/>' + _text(W - RIGHT + 4, y + 4, name, 10, cls="line-label"))
    if points:
        path = " ".join(f"{_x(d, first, span):.1f},{_y(v, top):.1f}" for d, v in points)
        parts.append(f'<polyline fill="none" stroke="#1f4e79" stroke-width="1.5" points="{path}"/>')
        parts += [f'<circle cx="{_x(d, first, span):.1f}" cy="{_y(v, top):.1f}" r="2" fill="#1f4e79">'
                  f'<title>{d}: {_tick_label(v, percent) if percent else f"{v:.3g}"}</title></circle>'
                  for d, v in points]
    parts += _alarm_lines(alarms, detector_alarms, first, span)
    parts += [_text(LEFT, H - 10, all_days[0], 11), _text(W - RIGHT, H - 10, all_days[-1], 11, "end"),
              _text(LEFT, TOP - 10, label, 12), "</svg>"]
    return "".join(parts)


def _alarm_lines(alarms: list[str], detector: list[str], first: int, span: int) -> list[str]:
    """Red lines on the alarms raised; dashed ones where only the detector, on today's data, alarms."""
    out = []
    for d in alarms:
        x = _x(d, first, span)
        out.append(f'<line class="alarm" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#c62828" '
                   f'stroke-width="2"><title>alarm raised for {d}</title></line>')
    for d in (d for d in detector if d not in alarms):
        x = _x(d, first, span)
        out.append(f'<line class="alarm-reevaluated" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{H - BOTTOM}" '
                   f'stroke="#c62828" stroke-width="1.5" stroke-dasharray="3 3"><title>re-evaluated: the detector '
                   f'alarms on {d} on the stored days as they are now (no alarm was raised for it)</title></line>')
    return out


def _stream_view(tables: DriftTables, name: str) -> dict[str, Any]:
    state = stream_state(tables, name)
    summary = summarise(state)
    days = [d["day"] for d in state.days]
    outages = [d["day"] for d in state.days if d["status"] == "outage"]
    alarms, detector = summary["alarm_days"], summary["detector_alarm_days"]
    rates = [(d["day"], d["resolved"] / d["usable"]) for d in state.days
             if d["status"] in ("ok", "partial") and d["usable"]]
    b = summary["baseline"]
    lines = {"p0": b["p0"]} if b.get("p0") is not None else {}
    band = (b["first_day"], b["last_day"]) if b["state"] == "frozen" else None
    rate_svg = svg_series(rates, top=1.0, all_days=days, lines=lines, alarms=alarms, outages=outages, percent=True,
                          label="daily resolve rate (line: baseline p0; blue band: baseline days)", band=band,
                          detector_alarms=detector)
    cusum_svg = ""
    if state.report is not None:
        path = list(zip(state.report.days, state.report.statistic))
        threshold = summary["threshold"] or 0.0
        top = max([threshold * 1.2, *[v for _, v in path], 1e-9])
        cusum_svg = svg_series(path, top=top, all_days=days, lines={"threshold": threshold}, alarms=alarms,
                               outages=outages, label="CUSUM statistic against its threshold",
                               detector_alarms=detector)
    return {"name": name, "summary": summary, "rate_svg": rate_svg, "cusum_svg": cusum_svg,
            "days": list(reversed(state.days)), "alerts": state.recorded, "notes": state.notes}


def render_report(tables: DriftTables) -> str:
    env = Environment(loader=PackageLoader("evalharness.drift", "templates"), autoescape=True)
    streams = [_stream_view(tables, name) for name in tables.streams()]
    return env.get_template("drift.html.j2").render(streams=streams)
