"""The report's plots as inline SVG text, made in Python (no plotting library, no network, crisp at any zoom).

Every mark that stands for trials is a link (``<a href="#...">``) to the page's view of those trials; every text is
escaped. A value that is None (NaN in the statistics) is left out of a plot and said so in its row, never drawn at
0. Scales are fixed where the quantity has a range: rates 0-100%, differences of rates -100 to +100 points.
"""

from __future__ import annotations

from html import escape
from typing import Any, Callable
from urllib.parse import quote

from evalharness.report.fmt import pct as _pct

ROW = 26
LABEL_W = 230
VALUE_W = 190
PLOT_W = 420
TOP = 30
BOTTOM = 34
INK, LIGHT, ACCENT, GOLD = "#1f4e79", "#9bb3c9", "#c0392b", "#b7950b"


def config_href(config: str) -> str:
    return "#trials/config/" + quote(config, safe="")


def _x(value: float, lo: float, hi: float) -> float:
    return LABEL_W + (min(max(value, lo), hi) - lo) / (hi - lo) * PLOT_W


def _label(text: str, limit: int = 34) -> str:
    return escape(text if len(text) <= limit else text[:limit - 1] + "…")


def _axis(lo: float, hi: float, ticks: list[float], y: float, caption: str, fmt: Callable[[float], str]) -> list[str]:
    parts = [f'<line x1="{LABEL_W}" y1="{y}" x2="{LABEL_W + PLOT_W}" y2="{y}" stroke="#888"/>']
    for t in ticks:
        x = _x(t, lo, hi)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{y}" stroke="#e3e7ec"/>')
        parts.append(f'<text x="{x:.1f}" y="{y + 14}" text-anchor="middle" class="tick">{escape(fmt(t))}</text>')
    parts.append(f'<text x="{LABEL_W + PLOT_W / 2}" y="{y + 29}" text-anchor="middle" class="cap">'
                 f'{escape(caption)}</text>')
    return parts


def _svg(kind: str, height: float, body: list[str], title: str) -> str:
    width = LABEL_W + PLOT_W + VALUE_W
    return (f'<svg class="plot" data-plot="{kind}" role="img" viewBox="0 0 {width} {height:.0f}" width="{width}" '
            f'height="{height:.0f}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
            + "".join(body) + "</svg>")


def interval_rows(rows: list[dict[str, Any]], *, lo: float, hi: float, ticks: list[float], caption: str,
                  fmt: Callable[[float], str], kind: str, title: str, zero: float | None = None) -> str:
    """One row per entry: label, point with whisker, value text; ``rows``: label, value, low, high, href, text,
    colour (optional)."""
    height = TOP + ROW * max(len(rows), 1) + BOTTOM
    axis_y = TOP + ROW * max(len(rows), 1)
    body = _axis(lo, hi, ticks, axis_y, caption, fmt)
    if zero is not None:
        z = _x(zero, lo, hi)
        body.append(f'<line x1="{z:.1f}" y1="{TOP - 6}" x2="{z:.1f}" y2="{axis_y}" stroke="#555" '
                    f'stroke-dasharray="3 3"/>')
    for i, r in enumerate(rows):
        y = TOP + ROW * i + ROW / 2
        colour = r.get("colour") or INK
        mark = [f'<text x="{LABEL_W - 8}" y="{y + 4}" text-anchor="end" class="lab">{_label(r["label"])}</text>']
        if r.get("value") is None:
            mark.append(f'<text x="{LABEL_W + 6}" y="{y + 4}" class="na">n/a</text>')
        else:
            if r.get("low") is not None and r.get("high") is not None:
                x1, x2 = _x(r["low"], lo, hi), _x(r["high"], lo, hi)
                mark.append(f'<line x1="{x1:.1f}" y1="{y}" x2="{x2:.1f}" y2="{y}" stroke="{colour}" '
                            f'stroke-width="2"/>')
                mark += [f'<line x1="{x:.1f}" y1="{y - 5}" x2="{x:.1f}" y2="{y + 5}" stroke="{colour}" '
                         f'stroke-width="2"/>' for x in (x1, x2)]
            mark.append(f'<circle cx="{_x(r["value"], lo, hi):.1f}" cy="{y}" r="5" fill="{colour}"/>')
        mark.append(f'<text x="{LABEL_W + PLOT_W + 10}" y="{y + 4}" class="val">{escape(r.get("text", ""))}</text>')
        inner = "".join(mark)
        body.append(f'<a href="{escape(r["href"])}" class="row">{inner}</a>' if r.get("href") else f"<g>{inner}</g>")
    return _svg(kind, height, body, title)


def forest_plot(scores: list[dict[str, Any]], level: float) -> str:
    """Resolve rate with its interval per configuration; each row links to the configuration's trials."""
    rows = [{"label": s["config"], "value": s.get("resolve_rate"), "low": s.get("ci_low"), "high": s.get("ci_high"),
             "href": config_href(s["config"]),
             "text": f"{_pct(s.get('resolve_rate'))} [{_pct(s.get('ci_low'))}, {_pct(s.get('ci_high'))}]"}
            for s in scores]
    return interval_rows(rows, lo=0, hi=1, ticks=[0, .25, .5, .75, 1], kind="forest",
                         caption=f"resolve rate ({int(round(level * 100))}% task-level interval)",
                         fmt=lambda t: f"{100 * t:.0f}%", title="Resolve rate per configuration")


def difference_plot(comparisons: list[dict[str, Any]], level: float) -> str:
    """Each paired difference (configuration minus reference) with its interval; rows link to the paired tasks."""
    def pts(x):
        return "n/a" if x is None else f"{100 * x:+.1f}"

    rows = [{"label": f"{c['config']} − {c['reference']}", "value": c.get("diff"), "low": c.get("ci_low"),
             "high": c.get("ci_high"), "href": f"#pair/{i}",
             "text": f"{pts(c.get('diff'))} pts [{pts(c.get('ci_low'))}, {pts(c.get('ci_high'))}]"}
            for i, c in enumerate(comparisons)]
    return interval_rows(rows, lo=-1, hi=1, ticks=[-1, -.5, 0, .5, 1], zero=0, kind="differences",
                         caption=f"difference in resolve rate, points ({int(round(level * 100))}% paired interval)",
                         fmt=lambda t: f"{100 * t:+.0f}", title="Paired differences against the reference")


def merge_plot(merge: list[dict[str, Any]], level: float) -> str:
    """Per reviewed configuration its merge rate and, beside it, the reviewers' golden baseline."""
    rows = []
    for m in merge:
        rows.append({"label": m["config"], "value": m.get("merge_rate"), "low": m.get("ci_low"),
                     "high": m.get("ci_high"), "href": config_href(m["config"]),
                     "text": f"merged {_pct(m.get('merge_rate'))} [{_pct(m.get('ci_low'))}, {_pct(m.get('ci_high'))}]"})
    if merge:
        g = merge[0]
        rows.append({"label": "gold patches (baseline)", "value": g.get("gold_rate"), "low": g.get("gold_ci_low"),
                     "high": g.get("gold_ci_high"), "colour": GOLD,
                     "text": f"merged {_pct(g.get('gold_rate'))} [{_pct(g.get('gold_ci_low'))}, "
                             f"{_pct(g.get('gold_ci_high'))}]"})
    return interval_rows(rows, lo=0, hi=1, ticks=[0, .25, .5, .75, 1], kind="merge",
                         caption=f"merge rate ({int(round(level * 100))}% task-level interval)",
                         fmt=lambda t: f"{100 * t:.0f}%", title="Merge rate per configuration and gold baseline")


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    for step in (1, 2, 2.5, 5):
        for power in range(-6, 7):
            top = step * 10.0 ** power
            if top >= value:
                return top
    return value


def cost_plot(scores: list[dict[str, Any]], level: float) -> str:
    """Resolve rate (y, with its interval as a whisker) against mean cost per trial (x), one point per
    configuration; configurations with no known cost are named under the plot."""
    known = [s for s in scores if s.get("mean_cost_usd") is not None and s.get("resolve_rate") is not None]
    unknown = [s["config"] for s in scores if s not in known]
    top = _nice_max(max([s["mean_cost_usd"] for s in known], default=0.0) * 1.05)
    left, width, height, pad = 70, 560, 300, 30
    total_h = height + pad * 2 + 30 + (16 if unknown else 0)

    def px(c):
        return left + c / top * width

    def py(r):
        return pad + (1 - r) * height

    body = [f'<rect x="{left}" y="{pad}" width="{width}" height="{height}" fill="none" stroke="#888"/>']
    for i in range(5):
        r, c = i / 4, top * i / 4
        body.append(f'<line x1="{left}" y1="{py(r):.1f}" x2="{left + width}" y2="{py(r):.1f}" stroke="#e3e7ec"/>'
                    f'<text x="{left - 6}" y="{py(r) + 4:.1f}" text-anchor="end" class="tick">{100 * r:.0f}%</text>'
                    f'<text x="{px(c):.1f}" y="{pad + height + 15}" text-anchor="middle" class="tick">'
                    f'${c:.4g}</text>')
    body.append(f'<text x="{left + width / 2}" y="{pad + height + 32}" text-anchor="middle" class="cap">'
                f'mean cost per trial, USD</text>')
    body.append(f'<text x="14" y="{pad + height / 2}" transform="rotate(-90 14 {pad + height / 2})" '
                f'text-anchor="middle" class="cap">resolve rate ({int(round(level * 100))}% interval)</text>')
    for s in known:
        x, y = px(s["mean_cost_usd"]), py(s["resolve_rate"])
        mark = []
        if s.get("ci_low") is not None and s.get("ci_high") is not None:
            mark.append(f'<line x1="{x:.1f}" y1="{py(s["ci_low"]):.1f}" x2="{x:.1f}" y2="{py(s["ci_high"]):.1f}" '
                        f'stroke="{LIGHT}" stroke-width="3"/>')
        mark.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{INK}"/>'
                    f'<text x="{x + 9:.1f}" y="{y - 7:.1f}" class="lab">{_label(s["config"], 28)}</text>')
        body.append(f'<a href="{escape(config_href(s["config"]))}" class="row">{"".join(mark)}</a>')
    if unknown:
        body.append(f'<text x="{left}" y="{total_h - 6}" class="na">cost unknown, not drawn: '
                    f'{escape(", ".join(unknown))}</text>')
    return (f'<svg class="plot" data-plot="cost" role="img" viewBox="0 0 {left + width + 200} {total_h}" '
            f'width="{left + width + 200}" height="{total_h}" xmlns="http://www.w3.org/2000/svg">'
            f'<title>Resolve rate against cost per trial</title>' + "".join(body) + "</svg>")
