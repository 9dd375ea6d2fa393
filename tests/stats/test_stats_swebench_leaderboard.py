"""Real data: per-task outcomes of four models on the 500 SWE-bench Verified tasks.

Source: SWE-bench/swe-bench.github.io, data/info_for_leaderboard.json (CC BY-NC 4.0; read in
place from /work/shared, never copied into this repository). Pins the worked example of
docs/statistics.md: every number there is recomputed here with scipy/statsmodels directly.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from evalharness.stats import compare, score, score_table

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
DATA = SHARED / "research-data" / "swebench-site" / "info_for_leaderboard.json"

pytestmark = pytest.mark.skipif(
    not DATA.is_file(), reason=f"SWE-bench leaderboard data not found at {DATA} (needs the shared research data)")


@pytest.fixture(scope="module")
def leaderboard() -> pd.DataFrame:
    raw = json.loads(DATA.read_text())
    rows = [{"task_id": task, "model": model, "harness": "swebench-site", "config": f"swebench-site/{model}",
             "seed": 0, "resolved": bool(r["resolved"]), "infra": False, "cost_usd": float(r["cost"]),
             "total_tokens": np.nan, "repo": task.split("__")[0]}
            for model, tasks in raw.items() for task, r in tasks.items()]
    return pd.DataFrame(rows)


def _vector(df, model):
    return df.loc[df["model"] == model].set_index("task_id").sort_index()


def test_structure(leaderboard):
    counts = leaderboard.groupby("model")["task_id"].nunique()
    assert set(counts.index) == {"gpt-5", "gpt-5-mini", "sonnet-4", "sonnet-4-5"} and (counts == 500).all()


def test_paired_sonnet_4_5_vs_gpt_5_against_scipy(leaderboard):
    a, b = _vector(leaderboard, "sonnet-4-5"), _vector(leaderboard, "gpt-5")
    c = compare(a.reset_index(), b.reset_index())
    ya, yb = a["resolved"].astype(float), b["resolved"].astype(float)
    ref = stats.ttest_rel(ya, yb)
    ci = ref.confidence_interval(0.95)
    assert c.n_shared == 500 and c.dropped == {}
    assert (c.rate_a, c.rate_b) == pytest.approx((353 / 500, 325 / 500))
    assert c.diff == pytest.approx(0.056)
    assert (c.t, c.p_t) == pytest.approx((ref.statistic, ref.pvalue), rel=1e-10)
    assert (c.ci_low, c.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-10)
    both_b = int(((ya == 1) & (yb == 0)).sum()), int(((ya == 0) & (yb == 1)).sum())
    assert (c.mcnemar_b, c.mcnemar_c) == both_b
    table = [[int(((ya == 1) & (yb == 1)).sum()), both_b[0]], [both_b[1], int(((ya == 0) & (yb == 0)).sum())]]
    assert c.p_mcnemar == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-10)
    assert c.p_mcnemar == pytest.approx(stats.binomtest(both_b[0], sum(both_b), 0.5).pvalue, rel=1e-10)
    d = (ya - yb).to_numpy()
    exact = stats.binomtest(int((d > 0).sum()), int((d != 0).sum()), 0.5).pvalue  # sign flips of +-1 values
    assert c.p_signflip == pytest.approx(exact, rel=1e-9)
    assert c.cost_per_resolved_a == pytest.approx(a["cost_usd"].sum() / a["resolved"].sum())


def test_scores_against_scipy(leaderboard):
    table = score_table(leaderboard).set_index("model")
    for model, part in leaderboard.groupby("model"):
        y = part["resolved"].astype(float)
        lo, hi = stats.t.interval(0.95, len(y) - 1, loc=y.mean(), scale=stats.sem(y))
        row = table.loc[model]
        assert row["interval"] == "t" and (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi), rel=1e-10)
    part = leaderboard.loc[leaderboard["model"] == "sonnet-4-5"].sort_values("task_id")
    s = score(part, cluster="repo")
    fit = sm.OLS(part["resolved"].astype(float).to_numpy(), np.ones(500)).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(part["repo"])[0]})
    assert s.n_clusters == 12 and s.df == 11 and s.se == pytest.approx(float(fit.bse[0]), rel=1e-10)
