"""A model that never submits is stopped by the trial's budget (steps, cost, tokens), in both harnesses:
the outcome is budget_exhausted, the patch so far is kept but not graded, and the spend
overshoots the cap by at most the one call that crossed it.

Pins: an agent loop that checked the cost limit only after executing the next command, so a
runaway agent overspent by a whole step per trial, and a budget-ended trial whose usage was
recorded as zero because the exception carried none.
"""

from __future__ import annotations

import json

import pytest
from harness_scripts import MINI, MINIMAL, PRICES, TrialScript, by_harness, command, run_in_process, tokens
from support import TINYPACK

from evalharness.models import ScriptedModelServer
from evalharness.types import Budget

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _cost(turn: int) -> float:
    t = tokens(turn)
    return t["input_tokens"] * PRICES["input_cost_per_token"] + t["output_tokens"] * PRICES["output_cost_per_token"]


def _never_submits(harness: str) -> list:
    return [[command(harness, "echo '# still thinking' >> calc/__init__.py")]] * 50


@pytest.mark.parametrize(("budget", "which", "calls"), [
    (Budget(max_steps=4), "max_steps", 4),
    # 0.0029 + 0.0032 + 0.0035 = 0.0096 < 0.01 after three calls; the fourth crosses the cap
    (Budget(max_cost_usd=0.01), "max_cost_usd", 4),
    # 1040 + 1145 = 2185 < 3000 after two calls; the third crosses the cap
    (Budget(max_tokens=3000), "max_tokens", 3),
])
def test_a_model_that_never_submits_stops_at_the_budget(tmp_path, base_image, tinypack, budget, which, calls):
    script = TrialScript(tinypack.tasks, {"tiny-clamp": _never_submits})
    with ScriptedModelServer(script) as server:
        rows, summary = run_in_process(tmp_path, TINYPACK, [MINIMAL, MINI], server.endpoint("scripted-gpt", **PRICES),
                                       budget=budget, tasks=["tiny-clamp"])
    for harness, row in by_harness(rows).items():
        assert (row["outcome"], row["calls"]) == ("budget_exhausted", calls), (harness, row["reason"])
        assert which in row["reason"]
        assert row["cost_usd"] == pytest.approx(sum(_cost(t) for t in range(calls)), rel=1e-12)
        if budget.max_cost_usd is not None:  # crossed by the last call, not before
            assert row["cost_usd"] - _cost(calls - 1) < budget.max_cost_usd <= row["cost_usd"]
        folder = summary.run_dir.parent / row["detail"]
        assert "# still thinking" in (folder / "patch.diff").read_text()  # kept, for the record
        result = json.loads((folder / "result.json").read_text())
        assert result["grade"] is None and result["exit_status"] == "budget_exhausted"
        steps = json.loads((folder / "trajectory.json").read_text())["steps"]
        assert [s["kind"] for s in steps].count("model") == calls
