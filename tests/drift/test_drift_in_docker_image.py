"""The project's Dockerfile runs `drift run` against the host's engine, with drift.yaml and the store mounted.

Pins: a cron image that runs `evalharness run` but not `drift run` (a template left out of the
installed package, a lock or store path that only works outside the container).
The image build shares Docker's layer cache with tests/test_dockerfile.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_dockerfile import _context  # noqa: E402

from evalharness.sandbox.images import build_image  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.slow]

CONFIG = """store: runs/evalharness.db
runs_dir: runs
streams:
  - name: oracle-qs
    pack: /opt/evalharness-src/tasks/quickstart
    harness: oracle
    tasks: [boltons-strutils-parse-int-list]
    baseline_days: 2
    short_baseline: true
"""


def test_the_image_runs_a_drift_day_and_a_second_one_adds_nothing(docker_client, base_image, tmp_path):
    tag = "evalharness/drift-self-test:latest"
    ctx = _context()
    ctx.dockerfile = ctx.dockerfile.replace("ARG BASE=python:3.11-slim-bookworm", f"ARG BASE={base_image}")
    build_image(docker_client, tag, ctx, timeout=1800)
    (tmp_path / "drift.yaml").write_text(CONFIG)
    volumes = {"/var/run/docker.sock": {"bind": "/var/run/docker.sock", "mode": "rw"},
               str(tmp_path): {"bind": "/work", "mode": "rw"}}

    def drift(*args: str) -> dict:
        out = docker_client.containers.run(tag, ["drift", *args, "--config", "/work/drift.yaml", "--format", "json"],
                                           remove=True, network_mode="none", volumes=volumes, stderr=False)
        return json.loads(out.decode())

    first = drift("run", "--day", "2026-01-01")
    assert first["exit_code"] == 0 and first["streams"][0]["status"]["resolved"] == 1
    again = drift("run", "--day", "2026-01-01")
    assert again["streams"][0]["trials_run"] == 0 and again["streams"][0]["action"].startswith("unchanged")
    status = drift("status")
    assert status["streams"][0]["baseline"] == {"state": "collecting", "have": 1, "need": 2}
    assert (tmp_path / "runs" / "drift-alerts" / "2026-01-01.json").is_file()
    report = docker_client.containers.run(tag, ["drift", "report", "--config", "/work/drift.yaml", "-o",
                                                "/work/drift.html"], remove=True, network_mode="none",
                                          volumes=volumes)
    assert report == b"" and "<svg" in (tmp_path / "drift.html").read_text()
