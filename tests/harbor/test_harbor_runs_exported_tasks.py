"""Harbor's own CLI (harbor 0.26.0 from PyPI) runs the exported quickstart pack against the local engine: the
oracle agent gets reward 1 on every task, the nop agent 0 — the verdicts evalharness gives its oracle and null —
with the verifier in Harbor's separate mode (the export's default): the work tree copied by Harbor into a fresh
container of tests/Dockerfile.

Long: eight Harbor trials per agent. Needs ``EVALHARNESS_HARBOR_VENV`` (made by ``scripts/harbor-setup DIR``:
harbor needs Python >= 3.12, and Harbor calls ``docker compose``). The default-tier test of the same guarantee,
with Harbor's steps played by the test itself, is ``test_harbor_export_docker.py``.

One change to each exported task, for this engine only (docs/task-format.md, "Exporting to Harbor"): Harbor's
docker environment enforces ``network_mode = "no-network"`` only through an egress-control sidecar whose image
(alpine) it pulls from Docker Hub, and otherwise refuses the task; and Docker Compose builds on the default
bridge network, which an engine started with ``--bridge=none`` lacks. So the copy says ``public`` and adds a
docker-compose.yaml to environment/ and tests/ that runs each container with ``network_mode: none`` and builds
with the host's network: the task still runs with no network at all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from evalharness.packs import load_pack
from evalharness.sandbox.images import HOST_CA_BUNDLE
from support import QUICKSTART, REPO, run_cli

VENV = os.environ.get("EVALHARNESS_HARBOR_VENV", "")
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.long,
              pytest.mark.skipif(not (VENV and (Path(VENV) / "bin" / "harbor").is_file()),
                                 reason="EVALHARNESS_HARBOR_VENV is not a venv with harbor: scripts/harbor-setup DIR")]
OFFLINE_COMPOSE = "services:\n  main:\n    network_mode: none\n    build:\n      network: host\n"


def _for_this_engine(exported: Path, out: Path) -> Path:
    shutil.copytree(exported, out)
    for toml in out.glob("*/task.toml"):
        text = toml.read_text()
        assert 'network_mode = "no-network"' in text
        toml.write_text(text.replace('network_mode = "no-network"', 'network_mode = "public"'))
        for part in ("environment", "tests"):  # the agent's container, and the separate verifier's
            (toml.parent / part / "docker-compose.yaml").write_text(OFFLINE_COMPOSE)
    return out


def _harbor(agent: str, dataset: Path, jobs: Path) -> dict[str, float]:
    env = {**os.environ, "DOCKER_CONFIG": str(Path(VENV) / "docker-config")}
    done = subprocess.run([str(Path(VENV) / "bin" / "harbor"), "run", "-p", str(dataset), "-a", agent, "-o", str(jobs),
                           "--job-name", agent, "-n", "2"], cwd=jobs.parent, env=env, capture_output=True, text=True,
                          timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rewards = {}
    for result in (jobs / agent).glob("*/result.json"):
        trial = json.loads(result.read_text())
        assert trial["exception_info"] is None, trial["exception_info"]
        assert trial["verifier_environment_mode"] == "separate"
        rewards[trial["task_name"]] = trial["verifier_result"]["rewards"]["reward"]
    return rewards


def test_harbor_runs_the_exported_quickstart_with_evalharness_verdicts(tmp_path, base_image):
    ca = ["--ca-bundle", str(HOST_CA_BUNDLE)] if HOST_CA_BUNDLE.is_file() else []
    run_cli("packs", "export", "harbor", str(QUICKSTART), "--out", str(tmp_path / "export"), *ca, cwd=REPO, timeout=300)
    dataset = _for_this_engine(tmp_path / "export", tmp_path / "dataset")
    names = {f"evalharness/quickstart__{t.instance_id}" for t in load_pack(QUICKSTART).tasks}
    assert _harbor("oracle", dataset, tmp_path / "jobs") == dict.fromkeys(names, 1.0)
    assert _harbor("nop", dataset, tmp_path / "jobs") == dict.fromkeys(names, 0.0)
