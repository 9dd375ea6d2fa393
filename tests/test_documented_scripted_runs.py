"""The scripted runs the docs show run as written: every fenced bash block of README.md and docs/model-server.md
that starts the scripted model server and a run, and the example of `evalharness model-server --help`, through
the real CLI, the real server and real Docker; each exits 0 and resolves every trial, as the docs say.

Pins (issue 27): the --help example paired a script matching an instance_id no harness sends with the
quickstart pack; run as written every trial was harness_error and the run still exited 0. The server line is
started by the test (on a free port, waiting for its announcement, stopped at the end): the equivalent of
"in one shell"; every other line runs in bash as written, `evalharness` being this checkout's CLI. And a script
that matches nothing (every trial harness_error) makes the run exit 4, as the docs say, never 0.
"""

from __future__ import annotations

import re
import shlex
import socket
import sqlite3
import subprocess

import pytest

from support import EVALHARNESS, REPO, run_cli

pytestmark = pytest.mark.docker

PORT = "8765"
DOCS = [REPO / "README.md", REPO / "docs" / "model-server.md"]


def _blocks(text: str) -> list[list[str]]:
    """The command lines (continuations joined, comments kept) of each fenced bash block that starts a
    scripted server and a run."""
    out = []
    for body in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        lines = [line.strip() for line in body.replace("\\\n", " ").splitlines() if line.strip()]
        if any("model-server --script" in line for line in lines) and any(" run " in f" {line} " for line in lines):
            out.append(lines)
    return out


def _help_block() -> list[str]:
    helped = run_cli("model-server", "--help", cwd=REPO).stdout
    return [line.strip() for line in helped.splitlines() if line.strip().startswith("evalharness ")]


def documented() -> list[tuple[str, list[str]]]:
    found = [(f"{path.name}#{n}", block) for path in DOCS for n, block in enumerate(_blocks(path.read_text()))]
    return [*found, ("model-server --help", _help_block())]


def test_the_docs_show_a_scripted_run_in_each_place():
    names = [name for name, _ in documented()]
    assert [n for n in names if n.startswith("README")] and [n for n in names if n.startswith("model-server.md")]


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _shell(line: str, port: str) -> str:
    command = line.split(" #", 1)[0].strip().removesuffix("&").strip().replace(PORT, port)
    return re.sub(r"^(\.venv/bin/)?evalharness ", " ".join(map(shlex.quote, EVALHARNESS)) + " ", command)


@pytest.mark.parametrize("name, block", documented(), ids=[name for name, _ in documented()])
def test_a_documented_scripted_run_resolves_every_trial_and_exits_0(name, block, tmp_path, base_image):
    for folder in ("tests", "tasks"):  # the paths the docs give, relative to the repository, without writing in it
        (tmp_path / folder).symlink_to(REPO / folder)
    [serve] = [line for line in block if "model-server --script" in line]
    rest = [line for line in block if line is not serve]
    assert rest and PORT in serve and all(PORT in line for line in rest if "--api-base" in line), block
    port = _free_port()
    server = subprocess.Popen(shlex.split(_shell(serve, port)), cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        announced = server.stdout.readline()
        assert f"127.0.0.1:{port}" in announced, announced
        done = subprocess.run(["bash", "-euc", "\n".join(_shell(line, port) for line in rest)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=900)
    finally:
        server.terminate()
        server.wait(timeout=30)  # a hang guard, not a timing
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with sqlite3.connect(tmp_path / "runs" / "evalharness.db") as db:
        outcomes = [row[0] for row in db.execute("select outcome from trials")]
    assert outcomes == ["resolved", "resolved"], (outcomes, done.stderr[-3000:])


def test_a_script_that_matches_nothing_makes_the_run_exit_4_naming_the_configuration(tmp_path, base_image):
    """Issue 27: every trial harness_error (the model server answers 400: no scenario matches) and exit 0."""
    from evalharness.models import ScriptedModelServer

    script = {"scenarios": [{"name": "never", "prompt": "no statement says this", "replies": ["x"]}]}
    with ScriptedModelServer(script) as server:
        done = run_cli("run", "-p", str(REPO / "tests" / "data" / "tinypack"), "-H", "minimal", "-m",
                       "openai/scripted", "--api-base", f"{server.url}/v1", cwd=tmp_path, check=False)
    assert done.returncode == 4, done.stderr[-3000:]
    assert "error: every trial of minimal/openai/scripted in run" in done.stderr
    assert "is harness_error" in done.stderr and "first error:" in done.stderr
    with sqlite3.connect(tmp_path / "runs" / "evalharness.db") as db:
        assert [row[0] for row in db.execute("select outcome from trials")] == ["harness_error"] * 2
