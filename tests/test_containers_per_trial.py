"""Containers a trial starts, counted from the engine's own events through the real CLI: an `oracle` trial (a
patch to grade) starts at most two (agent, grader), a `null` trial (an empty change) exactly one (the agent),
and a second run on the same task images starts no task-check container (the verdict is cached per image).

Pins: every trial started three containers (task check, agent, grader), even with an empty patch, and every run
checked every task again (issue 22).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter

import pytest
from support import QUICKSTART, run_cli

from evalharness.sandbox.engine import LABEL_ROLE, LABEL_RUN, LABEL_TRIAL

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASKS = ("boltons-mathutils-ceil-exact-match", "boltons-strutils-parse-int-list")
_MARKER = "evalharness.test-marker"


class ContainerCreates:
    """Every container the engine creates while open, as the engine reports it (``create`` events, streamed live:
    the engine keeps only a short backlog, and other tests create containers meanwhile)."""

    def __init__(self, client, image: str):
        self.client, self.image, self.events = client, image, []
        self._lock = threading.Lock()

    def __enter__(self) -> "ContainerCreates":
        self._stream = self.client.events(since=int(time.time()) - 1, decode=True,
                                          filters={"type": "container", "event": "create"})
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        try:
            for event in self._stream:
                with self._lock:
                    self.events.append(event.get("Actor", {}).get("Attributes", {}))
        except Exception:  # noqa: BLE001 - closing the stream ends the read
            pass

    def settle(self, timeout: float = 60) -> None:
        """Wait until the stream has delivered everything created so far: a marker container created now is
        seen after every earlier one (the engine sends events in order)."""
        marker = uuid.uuid4().hex
        box = self.client.containers.create(self.image, ["true"], labels={_MARKER: marker}, network_mode="none")
        box.remove()
        deadline = time.monotonic() + timeout
        while not any(e.get(_MARKER) == marker for e in self.snapshot()):
            assert time.monotonic() < deadline, "the engine's event stream never delivered the marker container"
            self._thread.join(0.05)

    def snapshot(self) -> list[dict]:
        with self._lock:
            return list(self.events)

    def of_run(self, run_id: str) -> list[dict]:
        self.settle()
        return [e for e in self.snapshot() if e.get(LABEL_RUN) == run_id]

    def __exit__(self, *exc) -> None:
        self._stream.close()
        self._thread.join(5)


def _run(tmp_path, cache, *harnesses: str):
    args = ["run", "-p", str(QUICKSTART), *[a for h in harnesses for a in ("-H", h)],
            *[a for t in TASKS for a in ("--task", t)], "-j", "2", "--format", "json"]
    done = run_cli(*args, cwd=tmp_path, env={"EVALHARNESS_CACHE_DIR": str(cache)})
    run_id = next(line.split()[1].rstrip(":") for line in done.stderr.splitlines() if line.startswith("run "))
    report = json.loads(done.stdout)
    return run_id, {s["config"]: s for s in report["scores"]}


def _per_trial(events: list[dict]) -> dict[str, Counter]:
    trials: dict[str, Counter] = {}
    for e in events:
        trials.setdefault(e[LABEL_TRIAL], Counter())[e[LABEL_ROLE]] += 1
    return trials


def test_an_empty_patch_starts_no_grader_and_a_checked_image_is_not_checked_again(tmp_path, docker_client,
                                                                                    base_image):
    cache = tmp_path / "cache"
    with ContainerCreates(docker_client, base_image) as creates:
        first, scores = _run(tmp_path, cache, "oracle", "null")
        trials = _per_trial(creates.of_run(first))
        assert scores["oracle/none"]["resolve_rate"] == 1.0 and scores["null/none"]["resolve_rate"] == 0.0
        for task in TASKS:
            oracle, null = (trials.pop(f"quickstart/{task}/{h}/none/seed-0") for h in ("oracle", "null"))
            assert oracle == Counter(agent=1, grader=1), (task, oracle)  # at most two: agent and grader
            assert null == Counter(agent=1), (task, null)  # an empty change: the agent's container only
        # what is left is the task checks: one per task, the cache being empty
        assert trials == {f"quickstart/{task}/check": Counter(check=1) for task in TASKS}, trials
        assert len(list((cache / "task-checks").glob("*.json"))) == len(TASKS)

        second, scores = _run(tmp_path, cache, "oracle", "null")
        again = _per_trial(creates.of_run(second))
        assert scores["oracle/none"]["resolve_rate"] == 1.0
        assert not [t for t in again if t.endswith("/check")], again  # the verdicts came from the cache
        assert sum(sum(c.values()) for c in again.values()) == 3 * len(TASKS), again  # 2 per oracle, 1 per null

    folder = tmp_path / "runs" / first / "quickstart" / TASKS[0] / "null" / "none" / "seed-0"
    result = json.loads((folder / "result.json").read_text())
    assert result["outcome"] == "no_patch" and result["grade"] is None and "grade_s" not in result["timings"]
    assert (folder / "patch.diff").read_bytes() == b"" and not (folder / "test_output.txt").exists()
    # the run folder still re-grades without Docker: the empty changes are decided again from patch.diff
    regraded = run_cli("grade", first, cwd=tmp_path)
    assert f"re-graded {2 * len(TASKS)} trial(s): {2 * len(TASKS)} unchanged, 0 changed" in regraded.stdout
