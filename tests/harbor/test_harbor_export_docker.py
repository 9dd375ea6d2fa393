"""The quickstart pack exported as Harbor tasks keeps evalharness's oracle and null verdicts when run the way
Harbor runs a task: the environment image built from the exported Dockerfile, a container with no network,
solution/ copied to /solution and solve.sh run as the agent (the oracle) or nothing (null), then tests/ copied
to /tests after the agent and ``bash /tests/test.sh`` run from the work tree: reward 1 exactly for the oracle.

Pins: an exported image whose work tree is empty (the task tier packs it; evalharness rebuilds it when a
sandbox starts, Harbor never does), and a verifier that rewards a task with no fix.
"""

from __future__ import annotations

import io
import json
import tarfile
import tomllib
from pathlib import Path

import pytest

from evalharness.packs import load_pack
from evalharness.sandbox.images import HOST_CA_BUNDLE
from support import QUICKSTART, REPO, run_cli

pytestmark = [pytest.mark.docker, pytest.mark.slow]
TASKS = [t.instance_id for t in load_pack(QUICKSTART).tasks]
LABELS = {"evalharness.test": "harbor-export"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory, base_image) -> Path:
    out = tmp_path_factory.mktemp("harbor") / "quickstart"
    ca = ["--ca-bundle", str(HOST_CA_BUNDLE)] if HOST_CA_BUNDLE.is_file() else []
    run_cli("packs", "export", "harbor", str(QUICKSTART), "--out", str(out), *ca, cwd=REPO, timeout=300)
    return out


@pytest.fixture(scope="module")
def images(exported, docker_client):
    """One image per task from its exported Dockerfile. The environment tier's layers are those evalharness's own
    quickstart image has (the same lines), shared by all eight; the images are kept, so a later run builds nothing."""
    tags = {}
    for task in TASKS:
        tag = f"evalharness-test/harbor-export:{task}"
        docker_client.images.build(path=str(exported / task / "environment"), tag=tag, network_mode="host",
                                   rm=True, forcerm=True, labels=LABELS)
        tags[task] = tag
    return tags


def _put(container, folder: Path, target: str) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(folder, arcname=target.lstrip("/"))
    container.put_archive("/", buf.getvalue())


def _run(container, argv: list[str], *, user: str, workdir: str = "/") -> str:
    code, out = container.exec_run(argv, user=user, workdir=workdir)
    assert code == 0, f"{argv} exited {code}: {out.decode(errors='replace')[-2000:]}"
    return out.decode(errors="replace")


def _harbor_trial(docker_client, tag: str, task_dir: Path, *, solve: bool, forge: bool = False) -> tuple[str, dict]:
    """Harbor's shared-mode steps: agent phase, then /tests copied in and test.sh run from the work tree.
    ``forge``: the agent writes reward files of 1 into /logs/verifier (made writable to it, as a mount may be)."""
    config = tomllib.loads((task_dir / "task.toml").read_text())
    workdir, agent_user = config["environment"]["workdir"], config["agent"]["user"]
    container = docker_client.containers.run(tag, ["sleep", "600"], detach=True, network_mode="none", labels=LABELS)
    try:
        _run(container, ["mkdir", "-m", "777", "-p", "/logs/verifier", "/logs/agent"], user="root")
        if forge:
            _run(container, ["sh", "-c", "echo 1 > /logs/verifier/reward.txt; echo '{\"reward\": 1}' > "
                             "/logs/verifier/reward.json"], user=agent_user)
        if solve:
            _put(container, task_dir / "solution", "/solution")
            _run(container, ["bash", "/solution/solve.sh"], user=agent_user, workdir=workdir)
        _put(container, task_dir / "tests", "/tests")
        _run(container, ["bash", "/tests/test.sh"], user=config["verifier"]["user"], workdir=workdir)
        reward = _run(container, ["cat", "/logs/verifier/reward.txt"], user="root").strip()
        verdict = json.loads(_run(container, ["cat", "/logs/verifier/verdict.json"], user="root"))
        verdict["files"] = sorted(_run(container, ["ls", "/logs/verifier"], user="root").split())
        return reward, verdict
    finally:
        container.remove(force=True)


@pytest.mark.parametrize("task", TASKS)
def test_the_exported_verifier_keeps_the_oracle_and_null_verdicts(task, exported, images, docker_client):
    reward, verdict = _harbor_trial(docker_client, images[task], exported / task, solve=True)
    assert (reward, verdict["outcome"]) == ("1", "resolved"), verdict
    reward, verdict = _harbor_trial(docker_client, images[task], exported / task, solve=False)
    assert (reward, verdict["outcome"]) == ("0", "unresolved"), verdict
    fail_to_pass = json.loads((exported / task / "tests" / "config.json").read_text())["FAIL_TO_PASS"]
    assert any(verdict["tests"][t] != "passed" for t in fail_to_pass)


def test_reward_files_the_agent_wrote_do_not_count(exported, images, docker_client):
    task = TASKS[0]
    reward, verdict = _harbor_trial(docker_client, images[task], exported / task, solve=False, forge=True)
    assert (reward, verdict["outcome"]) == ("0", "unresolved"), verdict
    assert "reward.json" not in verdict["files"]  # Harbor would read it if reward.txt were ever missing
