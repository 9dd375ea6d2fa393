"""The quickstart pack exported as Harbor tasks keeps evalharness's oracle and null verdicts when run the way
Harbor runs a task: the environment image built from the exported Dockerfile, a container with no network,
solution/ copied to /solution and solve.sh run as the agent (the oracle) or nothing (null); then, in separate
mode (the default), the work tree copied into a fresh container of the verifier image (tests/Dockerfile) and
``bash /tests/test.sh`` run from it; in shared mode, tests/ copied to /tests in the agent's container after the
agent. Reward 1 exactly for the oracle.

Pins: an exported image whose work tree is empty (the task tier packs it; evalharness rebuilds it when a
sandbox starts, Harbor never does), a verifier that rewards a task with no fix, and reward files the agent
wrote counted in shared mode.
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
    """Per task, the environment image and the verifier image from the exported Dockerfiles. The environment
    tier's layers are those of evalharness's own quickstart image (the same lines), shared by all eight, and the
    verifier image adds two COPY lines; the images are kept, so a later run builds nothing."""
    tags = {}
    for task in TASKS:
        for part in ("environment", "tests"):
            tag = f"evalharness-test/harbor-export-{part}:{task}"
            docker_client.images.build(path=str(exported / task / part), tag=tag, network_mode="host",
                                       rm=True, forcerm=True, labels=LABELS)
            tags[task, part] = tag
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


def _start(docker_client, tag: str):
    container = docker_client.containers.run(tag, ["sleep", "600"], detach=True, network_mode="none", labels=LABELS)
    _run(container, ["mkdir", "-m", "777", "-p", "/logs/verifier", "/logs/agent"], user="root")
    return container


def _verify(container, workdir: str, user: str) -> tuple[str, dict]:
    _run(container, ["bash", "/tests/test.sh"], user=user, workdir=workdir)
    reward = _run(container, ["cat", "/logs/verifier/reward.txt"], user="root").strip()
    verdict = json.loads(_run(container, ["cat", "/logs/verifier/verdict.json"], user="root"))
    verdict["files"] = sorted(_run(container, ["ls", "/logs/verifier"], user="root").split())
    return reward, verdict


def _harbor_trial(docker_client, images, task_dir: Path, *, solve: bool, forge: bool = False) -> tuple[str, dict]:
    """Harbor's steps for the task's verifier mode. ``forge``: the agent writes reward files of 1 into
    /logs/verifier (made writable to it, as a mount may be)."""
    config = tomllib.loads((task_dir / "task.toml").read_text())
    workdir, agent_user = config["environment"]["workdir"], config["agent"]["user"]
    agent = _start(docker_client, images[task_dir.name, "environment"])
    verifier = None
    try:
        if forge:
            _run(agent, ["sh", "-c", "echo 1 > /logs/verifier/reward.txt; echo '{\"reward\": 1}' > "
                         "/logs/verifier/reward.json"], user=agent_user)
        if solve:
            _put(agent, task_dir / "solution", "/solution")
            _run(agent, ["bash", "/solution/solve.sh"], user=agent_user, workdir=workdir)
        if config["verifier"]["environment_mode"] == "shared":
            _put(agent, task_dir / "tests", "/tests")
            return _verify(agent, workdir, config["verifier"]["user"])
        assert config["artifacts"] == [workdir]
        tree, _ = agent.get_archive(workdir)  # Harbor: artifacts collected, the target emptied, then uploaded
        verifier = _start(docker_client, images[task_dir.name, "tests"])
        _run(verifier, ["find", workdir, "-mindepth", "1", "-delete"], user="root")
        verifier.put_archive(str(Path(workdir).parent), b"".join(tree))
        return _verify(verifier, workdir, config["verifier"]["user"])
    finally:
        for container in (agent, verifier):
            if container is not None:
                container.remove(force=True)


@pytest.mark.parametrize("task", TASKS)
def test_the_exported_verifier_keeps_the_oracle_and_null_verdicts(task, exported, images, docker_client):
    reward, verdict = _harbor_trial(docker_client, images, exported / task, solve=True)
    assert (reward, verdict["outcome"]) == ("1", "resolved"), verdict
    reward, verdict = _harbor_trial(docker_client, images, exported / task, solve=False)
    assert (reward, verdict["outcome"]) == ("0", "unresolved"), verdict
    fail_to_pass = json.loads((exported / task / "tests" / "config.json").read_text())["FAIL_TO_PASS"]
    assert any(verdict["tests"][t] != "passed" for t in fail_to_pass)


def test_in_shared_mode_reward_files_the_agent_wrote_do_not_count(exported, images, docker_client, tmp_path):
    task = TASKS[0]
    run_cli("packs", "export", "harbor", str(QUICKSTART), "--out", str(tmp_path), "--task", task, "--verifier",
            "shared", "--force", *(["--ca-bundle", str(HOST_CA_BUNDLE)] if HOST_CA_BUNDLE.is_file() else []), cwd=REPO)
    same = (tmp_path / task / "environment" / "Dockerfile", exported / task / "environment" / "Dockerfile")
    assert same[0].read_text() == same[1].read_text()  # so the environment image built above is this task's
    reward, verdict = _harbor_trial(docker_client, images, tmp_path / task, solve=False, forge=True)
    assert (reward, verdict["outcome"]) == ("0", "unresolved"), verdict
    assert "reward.json" not in verdict["files"]  # Harbor would read it if reward.txt were ever missing
