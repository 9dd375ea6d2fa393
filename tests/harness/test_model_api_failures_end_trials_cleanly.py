"""Model API failures in both harnesses: 429 and 500 are retried and the trial goes on to resolve;
a 401 ends only that trial, as harness_error with a message naming the key, while the run's
other trials resolve; a server that never answers ends the trial at the endpoint timeout, as
model_unavailable (infrastructure: the endpoint's failure, not the agent's).

Pins: mini-swe-agent's own retry loop (10 attempts, waits up to a minute) stacked on ours and
turned a refused key into minutes of retries per trial, and a hung endpoint that held a worker
until the run's wall budget.
"""

from __future__ import annotations

import pytest
from harness_scripts import (
    MINI,
    MINIMAL,
    PRICES,
    TrialScript,
    by_harness,
    command,
    git_apply,
    run_in_process,
    solve,
    submit,
    tokens,
)
from support import TINYPACK

from evalharness.models import ScriptedModelServer, hang, http_error

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_rate_limits_and_server_errors_are_retried_and_the_trial_resolves(tmp_path, base_image, tinypack):
    patch = next(t.patch for t in tinypack.tasks if t.instance_id == "tiny-clamp")

    def flaky(harness: str) -> list:
        return [[http_error(429, retry_after=0.2), http_error(500), command(harness, git_apply(patch))],
                [submit(harness)]]

    with ScriptedModelServer(TrialScript(tinypack.tasks, {"tiny-clamp": flaky})) as server:
        rows, _ = run_in_process(tmp_path, TINYPACK, [MINIMAL, MINI], server.endpoint("scripted-gpt", **PRICES),
                                 tasks=["tiny-clamp"], workers=1)
        statuses = [r.status for r in server.requests]
    assert statuses == [429, 500, 200, 200] * 2  # one harness after the other; no retry of a success
    billed = sum(tokens(t)["input_tokens"] for t in range(2))
    for harness, row in by_harness(rows).items():
        assert row["outcome"] == "resolved", (harness, row["reason"])
        assert (row["calls"], row["input_tokens"]) == (2, billed)  # failed attempts are not billed


def test_a_refused_key_ends_that_trial_and_the_run_goes_on(tmp_path, base_image, tinypack):
    patch = next(t.patch for t in tinypack.tasks if t.instance_id == "tiny-mean-empty")
    plans = {"tiny-clamp": lambda h: [[http_error(401)]], "tiny-mean-empty": solve(git_apply, patch)}
    with ScriptedModelServer(TrialScript(tinypack.tasks, plans)) as server:
        rows, summary = run_in_process(tmp_path, TINYPACK, [MINIMAL, MINI], server.endpoint("scripted-gpt", **PRICES))
        refused = [r for r in server.requests if r.status == 401]
    assert len(refused) == 2  # one request per harness: an auth error is never retried
    for harness in (MINIMAL, MINI):
        outcome = {r["task_id"]: r for r in rows if r["harness"] == harness}
        assert outcome["tiny-mean-empty"]["outcome"] == "resolved"
        failed = outcome["tiny-clamp"]
        assert failed["outcome"] == "harness_error" and failed["calls"] == 0
        assert "401" in failed["reason"] and "the API key was refused" in failed["reason"], failed["reason"]
    assert summary.counts == {"resolved": 2, "harness_error": 2}


def test_a_server_that_never_answers_ends_the_trial_at_the_timeout(tmp_path, base_image, tinypack):
    plans = {"tiny-clamp": lambda h: [[hang(60, then="too late")]]}
    with ScriptedModelServer(TrialScript(tinypack.tasks, plans)) as server:
        endpoint = server.endpoint("scripted-gpt", timeout_s=2, num_retries=1, **PRICES)
        rows, _ = run_in_process(tmp_path, TINYPACK, [MINIMAL, MINI], endpoint, tasks=["tiny-clamp"])
        attempts = len(server.requests)
    assert attempts == 4  # two per harness: the first try and one retry, each cut at 2 s
    for harness, row in by_harness(rows).items():
        assert (row["outcome"], row["infra"]) == ("model_unavailable", 1), (harness, row["reason"])  # the endpoint's
        assert row["reason"].startswith(f"model endpoint unavailable: timed out from {endpoint.api_base} after 2 "
                                        "attempts"), row["reason"]
        assert "still failing after 2 attempts: timeout" in row["reason"], row["reason"]
