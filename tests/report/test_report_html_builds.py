"""The HTML report as built in Python (no browser): every plot is there as inline SVG, every number links to its
trials, each trial's files are embedded (and decode to what the folder holds), hostile text cannot leave its
element, missing values and missing files are said so, and nothing is fetched from the network.

Pins: a patch holding ``</script>`` that ended the page's data block and ran; a NaN drawn as 0%; a report that
loaded a font or a script from a CDN; a 10,000-trial page with one DOM section per trial.
"""

from __future__ import annotations

import base64
import gzip
import json
import re

import pytest
from report_runs import HOSTILE, make_run

from evalharness.report.assemble import assemble
from evalharness.report.build import build_report
from evalharness.report.html import CHUNK, safe_json
from evalharness.report.plots import cost_plot, forest_plot
from evalharness.report.render import render
from evalharness.report.trials import OUTPUT_TAIL, PATCH_LIMIT, trial_details


def _index(page: str) -> dict:
    raw = re.search(r'<script type="application/json" id="index">(.*?)</script>', page, re.S).group(1)
    return json.loads(raw)


def _chunks(page: str) -> list[list[dict]]:
    blocks = re.findall(r'<script type="application/octet-stream" id="chunk-(\d+)">(.*?)</script>', page, re.S)
    assert [int(n) for n, _ in blocks] == list(range(len(blocks)))
    return [json.loads(gzip.decompress(base64.b64decode(b))) for _, b in blocks]


@pytest.fixture
def two_configs(tmp_path):
    store, runs_dir = make_run(tmp_path, configs=["a/m", "b/m"], hostile_trial=(0, 1, 0))
    report, frame = assemble(store, ["r1"], runs_dir)
    return report, frame, render(report, "html")


def test_every_plot_is_inline_svg_and_nothing_is_fetched(two_configs):
    _, _, page = two_configs
    for kind in ("forest", "differences", "cost"):
        assert f'data-plot="{kind}"' in page
    assert '<table class="heat">' in page and 'data-plot="merge"' not in page  # nobody reviewed these trials
    assert not re.search(r'(src|href)="(https?:)?//', page)  # no CDN, font or script from elsewhere
    assert "<link rel=\"stylesheet\"" not in page and "@import" not in page


def test_numbers_link_to_their_trials(two_configs):
    report, frame, page = two_configs
    assert '<a href="#trials/config/a%2Fm">' in page  # the rate in the headline table and the forest row
    assert '<a href="#pair/0">' in page  # a comparison row to its paired tasks
    assert '<a href="#trials/cell/a%2Fm/t1">' in page  # a heatmap cell to its task x configuration trials
    index = _index(page)
    assert len(index["trials"]) == len(frame) == 16
    rows = [dict(zip(index["fields"], t)) for t in index["trials"]]
    assert {r["config"] for r in rows} == {"a/m", "b/m"}
    assert rows[0]["detail"] == "r1/toy/t0/a__m/seed-0"
    assert index["comparisons"] == [{"config": "b/m", "reference": "a/m", **{
        k: report["comparisons"][0][k] for k in ("diff", "ci_low", "ci_high")}}]


def test_each_trial_decodes_to_its_folder(two_configs):
    report, _, page = two_configs
    chunks = _chunks(page)
    flat = [d for c in chunks for d in c]
    assert len(chunks) == -(-16 // CHUNK) and len(flat) == 16
    for trial, details in zip(report["trials"], flat):
        task = trial["task_id"]
        assert details["patch"]["text"].startswith(f"diff --git a/src/{task}.py")
        assert details["result"]["grade"]["tests"] == {"passed": 1, "failed": 1}
        assert details["result"]["grade"]["failing"] == ["t::b"]
        assert [s["kind"] for s in details["trajectory"]["steps"]] == ["model", "command"]
        assert details["trajectory"]["steps"][1]["output"].count("characters cut by the report") == 1


def test_hostile_text_stays_inside_its_element(two_configs):
    _, _, page = two_configs
    assert HOSTILE not in page and "</script><script>" not in page
    assert page.count("<script") == page.count("</script>")
    assert "window.__injected" not in page.replace(HOSTILE, "")  # nowhere in the page's own code
    hostile = [d for c in _chunks(page) for d in c if HOSTILE in d["patch"]["text"]]
    assert len(hostile) == 1  # still there, as data, for the page to show as text
    assert HOSTILE in hostile[0]["test_output"]["text"] and HOSTILE in hostile[0]["result"]["reason"]
    assert json.loads(safe_json({"p": HOSTILE}))["p"] == HOSTILE and "<" not in safe_json({"p": HOSTILE})


def test_missing_files_and_folders_are_said_so(tmp_path):
    store, runs_dir = make_run(tmp_path, configs=["a/m"], tasks=1, seeds=1)
    folder = runs_dir / "r1/toy/t0/a__m/seed-0"
    (folder / "patch.diff").unlink()
    (folder / "trajectory.json").write_text("{not json")
    details = trial_details(runs_dir, "r1/toy/t0/a__m/seed-0")
    assert details["patch"] == {"missing": "patch.diff is missing from the trial folder"}
    assert details["trajectory"]["missing"].startswith("trajectory.json is not valid JSON")
    assert "not found" in trial_details(runs_dir, "r1/nowhere")["missing"]
    assert "names no trial folder" in trial_details(runs_dir, None)["missing"]


def test_big_texts_are_cut_and_the_cut_is_counted(tmp_path):
    store, runs_dir = make_run(tmp_path, configs=["a/m"], tasks=1, seeds=1)
    folder = runs_dir / "r1/toy/t0/a__m/seed-0"
    (folder / "patch.diff").write_text("+" * (PATCH_LIMIT + 123))
    (folder / "test_output.txt").write_text("head\n" + "y" * (OUTPUT_TAIL * 3) + "\nLAST LINE")
    details = trial_details(runs_dir, "r1/toy/t0/a__m/seed-0")
    assert len(details["patch"]["text"]) == PATCH_LIMIT and details["patch"]["cut"] == 123
    out = details["test_output"]
    assert out["text"].endswith("LAST LINE") and len(out["text"]) == OUTPUT_TAIL and out["where"] == "start"


def test_one_configuration_has_no_comparison_and_nan_is_never_drawn(tmp_path):
    store, runs_dir = make_run(tmp_path, configs=["only/m"], cost=None)
    report, _, = assemble(store, ["r1"], runs_dir)
    page = render(report, "html")
    assert 'data-plot="forest"' in page and 'data-plot="cost"' in page
    assert 'data-plot="differences"' not in page and "#pair/" not in page
    assert "cost unknown, not drawn: only/m" in page  # the cost plot says why its point is missing
    assert "nan" not in page.lower().replace("nano", "")
    nan_score = [{"config": "x/m", "resolve_rate": None, "ci_low": None, "ci_high": None, "mean_cost_usd": None}]
    svg = forest_plot(nan_score, 0.95)
    assert ">n/a<" in svg and "<circle" not in svg
    assert "<circle" not in cost_plot(nan_score, 0.95)


def test_many_configurations_each_get_a_row(tmp_path):
    configs = [f"h{i}/m" for i in range(12)]
    store, runs_dir = make_run(tmp_path, configs=configs, tasks=3, seeds=1, solved=lambda c, t, s: t < c % 4)
    report, _ = assemble(store, ["r1"], runs_dir)
    page = render(report, "html")
    forest = re.search(r'<svg[^>]*data-plot="forest".*?</svg>', page, re.S).group(0)
    assert forest.count("<circle") == 12 and all(f"#trials/config/h{i}%2Fm" in forest for i in range(12))
    diffs = re.search(r'<svg[^>]*data-plot="differences".*?</svg>', page, re.S).group(0)
    assert all(f'href="#pair/{i}"' in diffs for i in range(11))
    assert page.count('<a href="#trials/cell/') == 12 * 3


def test_the_other_formats_still_render(two_configs):
    report, _, _ = two_configs
    assert "| a/m |" in render(report, "md")
    assert "a/m" in render(report, "table")
    assert json.loads(render(report, "json"))["trials"][0]["detail"] == "r1/toy/t0/a__m/seed-0"


def test_a_report_built_without_the_store_renders(tmp_path):
    """build_report alone (no trial index, no runs folder) still gives a page: the plots, no trial data."""
    store, runs_dir = make_run(tmp_path, configs=["a/m", "b/m"])
    _, frame = assemble(store, ["r1"], runs_dir)
    report = build_report(frame, [store.get_run("r1")])
    page = render(report, "html")
    assert 'data-plot="forest"' in page and _chunks(page) == [] and _index(page)["trials"] == []


def test_a_drift_day_gets_its_section(tmp_path):
    store, runs_dir = make_run(tmp_path, configs=["a/m"], tasks=2, seeds=1, name="drift:nightly:2026-12-01")
    report, _ = assemble(store, ["r1"], runs_dir)
    assert report["drift"] == [{"run_id": "r1", "stream": "nightly", "day": "2026-12-01", "n_trials": 2,
                                "n_resolved": 1}]
    page = render(report, "html")
    assert '<section id="drift">' in page and "<td>nightly</td>" in page and "evalharness drift report" in page
    other, other_runs = make_run(tmp_path / "plain", configs=["a/m"], tasks=1, seeds=1)
    plain, _ = assemble(other, ["r1"], other_runs)
    assert plain["drift"] == [] and '<section id="drift">' not in render(plain, "html")
