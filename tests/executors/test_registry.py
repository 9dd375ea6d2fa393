"""`--registry`: an image built once is pushed, and an engine that lacks it pulls it instead of building it, the
base image included; without the registry answering, images are built as before.

Pins issue 13: every node built every image itself.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from registry import Registry
from second_engine import SecondEngine
from support import REPO, run_cli

from evalharness.sandbox.images import registry_ref

QUICKSTART = REPO / "tasks" / "quickstart"
TASK = "boltons-setutils-indexedset-removed-slot"


def test_the_registry_name_of_an_image():
    assert registry_ref("127.0.0.1:5000", "evalharness/task.q:ab12") == "127.0.0.1:5000/evalharness/task.q:ab12"
    assert registry_ref("reg.example:443/team/", "evalharness/base:bookworm-1") == \
        "reg.example:443/team/evalharness/base:bookworm-1"


@pytest.fixture
def registry(tmp_path):
    found = Registry(tmp_path / "registry").start()
    yield found
    found.stop()


@pytest.fixture
def empty_engine():
    """A third real engine with nothing in it: not even the base image."""
    root = Path(tempfile.mkdtemp(prefix="eh3-", dir="/tmp"))
    engine = SecondEngine(root).start()
    yield engine
    engine.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.docker
@pytest.mark.slow
def test_built_once_pushed_then_pulled_by_an_engine_that_has_nothing(tmp_path, registry, empty_engine, base_image):
    first = run_cli("run", "-p", str(QUICKSTART), "-H", "oracle", "--task", TASK, "--registry", registry.address,
                    "--format", "json", cwd=tmp_path, timeout=900)
    assert json.loads(first.stdout)["runs"][0]["status"] == "completed"
    names = registry.catalog()
    assert {"evalharness/base", "evalharness/env.quickstart", "evalharness/task.quickstart"} <= set(names), names
    second = run_cli("run", "-p", str(QUICKSTART), "-H", "oracle", "--task", TASK, "--registry", registry.address,
                     "--docker-host", f"{empty_engine.url}#1", "--format", "json", cwd=tmp_path, timeout=900)
    run_id = json.loads(second.stdout)["runs"][0]["run_id"]
    with sqlite3.connect(tmp_path / "runs" / "evalharness.db") as conn:
        assert conn.execute("select outcome from trials where run_id = ?", (run_id,)).fetchall() == [("resolved",)]
    flat = " ".join(second.stderr.split())
    assert "0 image(s) built" in flat, flat
    assert f"pulled base image {base_image} from {registry.address}" in flat
    assert "pulled evalharness/task.quickstart:" in flat
    tags = {t for image in empty_engine.client().images.list() for t in image.tags}
    assert base_image in tags and any(t.startswith("evalharness/task.quickstart:") for t in tags)
