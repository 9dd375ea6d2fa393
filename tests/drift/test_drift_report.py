"""What `drift status` and `drift report` show beyond the numbers: the baseline's warnings and promised delay,
and charts that can be read (y-axis values; labels inside the picture).

The newcomer's case (issue 27): the table and the HTML page left out that the baseline was short or degenerate
and the promised detection delay (only the JSON had them); the charts had no y-axis values and the
"threshold" label was cut off at the right edge. Pins: each of those, on a real store through the real CLI
(no Docker: the days are stored), and the chart geometry on the SVG itself.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
import yaml
from drift_support import cli, store_day

from evalharness.drift.config import parse_config
from evalharness.drift.report import CHAR_W, svg_series, y_ticks
from evalharness.drift.state import freeze_if_due, settings_of
from evalharness.drift.tables import DriftTables
from evalharness.store import Store, database_url

NS = "{http://www.w3.org/2000/svg}"
DAYS = [f"2026-01-{i:02d}" for i in range(1, 11)]


def _texts(svg: str) -> list[ET.Element]:
    return list(ET.fromstring(svg).iter(f"{NS}text"))


def _extent(text: ET.Element) -> tuple[float, float]:
    """The horizontal extent of a text element, at a conservative character width."""
    x, width = float(text.get("x")), CHAR_W * float(text.get("font-size")) * len(text.text)
    anchor = text.get("text-anchor", "start")
    start = x - width if anchor == "end" else x - width / 2 if anchor == "middle" else x
    return start, start + width


def _cusum_chart() -> str:
    points = [(d, v) for d, v in zip(DAYS, [0, 0.5, 1.5, 2.5, 3.5, 4.6, 0, 0, 1, 2])]
    return svg_series(points, top=4.6 * 1.2, all_days=DAYS, lines={"threshold": 4.5}, alarms=["2026-01-06"],
                      outages=["2026-01-08"], label="CUSUM statistic against its threshold")


def test_every_label_is_inside_the_picture_the_threshold_label_too():
    svg = _cusum_chart()
    root = ET.fromstring(svg)
    _, _, width, height = (float(v) for v in root.get("viewBox").split())
    for text in _texts(svg):
        start, end = _extent(text)
        assert 0 <= start and end <= width, f"{text.text!r} spans {start:.0f}-{end:.0f}, outside 0-{width:.0f}"
        assert 0 < float(text.get("y")) <= height
    assert "threshold" in [t.text for t in _texts(svg)]


def test_the_y_axis_has_values_at_the_heights_they_name():
    svg = svg_series([("2026-01-01", 0.5), ("2026-01-10", 1.0)], top=1.0, all_days=DAYS, lines={"p0": 0.5},
                     alarms=[], outages=[], label="rate", percent=True)
    ticks = {t.text: float(t.get("y")) for t in _texts(svg) if t.get("class") == "ytick"}
    assert list(ticks) == ["0%", "25%", "50%", "75%", "100%"]
    circles = {c.find(f"{NS}title").text: float(c.get("cy")) for c in ET.fromstring(svg).iter(f"{NS}circle")}
    # a point of value 0.5 sits at the height of the "50%" label (the label's baseline is 3.5 below its tick)
    assert ticks["50%"] - 3.5 == pytest.approx(circles["2026-01-01: 50%"])
    assert ticks["100%"] - 3.5 == pytest.approx(circles["2026-01-10: 100%"])
    assert ticks["100%"] < ticks["50%"] < ticks["0%"]  # up is more
    cusum = [t.text for t in _texts(_cusum_chart()) if t.get("class") == "ytick"]
    assert cusum == ["0", "2", "4"]


@pytest.mark.parametrize("top,ticks", [(1.0, [0, 0.25, 0.5, 0.75, 1.0]), (5.4, [0, 2, 4]), (12, [0, 5, 10]),
                                       (0.03, [0, 0.01, 0.02, 0.03]), (0, [0])])
def test_y_ticks_are_round_and_within_the_top(top, ticks):
    assert y_ticks(top) == pytest.approx(ticks)


@pytest.fixture
def degenerate_short(tmp_path):
    """A frozen 10-day baseline of a two-task panel where one task always passes and the other never: short
    (10 days x 2 trials, under the documented minimum) and degenerate."""
    stream = {"name": "s", "pack": "no-pack-needed", "harness": "h", "tasks": ["a", "b"], "baseline_days": 10,
              "short_baseline": True}
    (tmp_path / "drift.yaml").write_text(yaml.safe_dump({"store": "runs/evalharness.db", "streams": [stream]}))
    tables = DriftTables(Store(database_url(tmp_path / "runs" / "evalharness.db")))
    tables.new_epoch("s", "2026-01-01", settings_of(parse_config({"streams": [stream]}, "d").streams[0]))
    for i in range(1, 13):
        store_day(tables, f"2026-01-{i:02d}", [("a", True, False), ("b", False, False)], 2)
    assert freeze_if_due(tables, "s")
    baseline = tables.epoch("s")["baseline"]
    assert "short baseline" in baseline["note"] and "degenerate baseline" in baseline["note"], baseline["note"]
    return tmp_path, baseline


def test_status_table_shows_the_baseline_warnings_and_the_promised_delay(degenerate_short):
    home, baseline = degenerate_short
    done = cli(home, "drift", "status", "--config", "drift.yaml")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^s: warning: short baseline \(10 days, 20 trials;[^\n]*\)", done.stdout, re.M), done.stdout
    assert re.search(r"^s: warning: degenerate baseline", done.stdout, re.M)
    assert "promised delay" in done.stdout
    assert f"10-pt drop: {baseline['delay_days']:.1f} d (95%: {baseline['delay_days_95']:.1f})" in done.stdout


def test_report_shows_the_baseline_warnings_and_the_promised_delay(degenerate_short):
    home, baseline = degenerate_short
    assert cli(home, "drift", "report", "--config", "drift.yaml", "-o", "r.html").returncode == 0
    html = (home / "r.html").read_text()
    assert html.count('class="warning baseline-warning"') == 2
    assert "Warning: short baseline (10 days, 20 trials; " in html and "Warning: degenerate baseline" in html
    assert (f"Promised detection delay of a drop of 10 points: median {baseline['delay_days']:.1f} days, "
            f"95th percentile {baseline['delay_days_95']:.1f} days") in html


def test_reevaluation_speaks_only_when_the_detector_disagrees_with_the_alarms_raised():
    from evalharness.drift.summary import reevaluation, warnings

    monitored = ["2026-02-01", "2026-02-02", "2026-02-03"]
    assert reevaluation(["2026-02-03"], ["2026-02-03"], monitored) is None
    assert reevaluation(["2025-12-01", "2026-02-03"], ["2026-02-03"], monitored) is None  # an older epoch's alarm
    moved = reevaluation(["2026-02-03"], ["2026-02-02"], monitored)
    assert "detector alarms on 2026-02-02" in moved and "recorded as sent): 2026-02-03" in moved
    assert "detector alarms on no day" in reevaluation(["2026-02-03"], [], monitored)
    assert reevaluation([], [], []) is None
    assert warnings({"note": "short baseline (3 days; want more); degenerate baseline: x"}) == [
        "short baseline (3 days; want more)", "degenerate baseline: x"]
    assert warnings({"state": "collecting"}) == []
