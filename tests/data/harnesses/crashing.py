"""Test harness: kills its own container (a crashed sandbox) on the attempts listed in a counter file."""

import os
from pathlib import Path

import docker

from evalharness.harness.builtin import OracleHarness


class CrashingOracle(OracleHarness):
    name = "crashing-oracle"

    def run(self, task, sandbox, model, *, seed, budget):
        counter = Path(os.environ["EH_TEST_COUNTER"]) / f"{task.instance_id}-{seed}"
        attempt = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(attempt))
        if attempt <= int(os.environ.get("EH_TEST_CRASHES", "1")):
            docker.from_env().containers.get(sandbox.id).kill()
        return super().run(task, sandbox, model, seed=seed, budget=budget)
