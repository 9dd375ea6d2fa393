"""Test harness: the oracle, but slow, and failing on purpose for tasks named in EH_TEST_FAIL_TASKS."""

import os
import time

from evalharness.errors import HarnessError
from evalharness.harness.builtin import OracleHarness


class SlowOracle(OracleHarness):
    name = "slow-oracle"

    def config(self):
        return {"kind": "slow-oracle", "sleep": os.environ.get("EH_TEST_SLEEP", "1")}

    def run(self, task, sandbox, model, *, seed, budget):
        sandbox.exec("sleep " + os.environ.get("EH_TEST_SLEEP", "1"))
        if task.instance_id in os.environ.get("EH_TEST_FAIL_TASKS", "").split(","):
            raise HarnessError(f"failing {task.instance_id} on purpose")
        return super().run(task, sandbox, model, seed=seed, budget=budget)
