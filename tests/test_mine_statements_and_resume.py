"""`packs mine` without Docker: a leaking statement is dropped or rewritten through the model layer (the scripted
model server, on the wire), and a second run keeps finished candidates and examines infra errors again.

Pins: a miner that sent a statement quoting the fix to the agent because no model was given, that kept a
rewrite that still leaked, or that counted an engine failure as the candidate's final verdict.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from evalharness.errors import SandboxError
from evalharness.models import ScriptedModelServer, reply
from evalharness.sources import mine as m

FIX_LINE = "raise ValueError('n must be a positive integer')"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd), "PATH": "/usr/bin:/bin"}).stdout.strip()


def commit_all(repo: Path, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path) -> Path:
    repo = tmp_path / "chunks"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "root", {"chunks.py": "def chunk(n):\n    return [n]\n",
                              "test_chunks.py": "from chunks import chunk\n\n\ndef test_one():\n    assert chunk(1) == [1]\n"})
    commit_all(repo, f"chunk(0) loops; now it does {FIX_LINE}", {
        "chunks.py": f"def chunk(n):\n    if n < 1:\n        {FIX_LINE}\n    return [n]\n",
        "test_chunks.py": "import pytest\nfrom chunks import chunk\n\n\ndef test_one():\n    assert chunk(1) == [1]\n\n\n"
                          "def test_zero():\n    with pytest.raises(ValueError):\n        chunk(0)\n"})
    commit_all(repo, "Docs only", {"README.md": "chunks\n"})
    return repo


class RecordingValidator:
    """Stands in for validation.Validator's Docker side: records the task, then the engine fails."""

    def __init__(self):
        self.tasks = []

    def discover(self, task, *, reruns):
        self.tasks.append(task)
        raise SandboxError("engine gone (as a daemon dying mid-run would)")


def miner(tmp_path: Path, repo: Path, **kwargs) -> m.Miner:
    out = tmp_path / "pack"
    out.mkdir(exist_ok=True)
    history = m.History(str(repo))
    m.write_manifest(out, "pack", history, history.tip("main"), m.source_url(str(repo), out))
    return m.Miner(m.load_mining_pack(out), history, kwargs.pop("validator", None), **kwargs)


def test_a_statement_quoting_the_fix_is_dropped_as_leak_without_a_model(tmp_path, repo):
    mined = miner(tmp_path, repo)  # no validator: reaching Docker would fail the test
    leaky = mined.history.commits("main", None, None)[1]
    entry, task = mined.examine(leaky)
    assert (entry["verdict"], task) == ("leak", None)
    assert "gold_code" in entry["reason"] and any("positive integer" in leak for leak in entry["leaks"])
    assert entry["files"] == {"test": ["test_chunks.py"], "source": ["chunks.py"], "dropped": []}


def test_a_leaking_rewrite_is_rewritten_again_and_the_clean_one_reaches_discovery(tmp_path, repo):
    clean = "Calling chunk(0) never returns. I expected an error for a size below one."
    with ScriptedModelServer([reply(f"chunk(0) hangs; it should {FIX_LINE}"), reply(clean)]) as server:
        validator = RecordingValidator()
        mined = miner(tmp_path, repo, validator=validator, rewriter=m.model_rewriter(server.endpoint("rewriter")))
        entry, task = mined.examine(mined.history.commits("main", None, None)[1])
        requests = server.requests
    assert [r.path for r in requests] == ["/v1/chat/completions"] * 2
    assert "chunk(0) loops" in requests[0].prompt and "test_zero" in requests[0].prompt
    assert "gave the fix away" in requests[1].prompt and "positive integer" in requests[1].prompt
    assert [t.problem_statement for t in validator.tasks] == [clean]
    assert entry["rewritten"] == 2 and task is None
    assert entry["verdict"] == "infra_error" and "engine gone" in entry["reason"]  # not the candidate's fault


def test_a_rewrite_that_still_leaks_drops_the_candidate(tmp_path, repo):
    leaky = f"it should {FIX_LINE}"
    with ScriptedModelServer([reply(leaky), reply(leaky)]) as server:
        mined = miner(tmp_path, repo, rewriter=m.model_rewriter(server.endpoint("rewriter")))
        entry, _ = mined.examine(mined.history.commits("main", None, None)[1])
    assert entry["verdict"] == "leak" and entry["rewritten"] == 2


class CountingMiner:
    """A miner whose examination is scripted per commit subject (the Docker side is validation's own tests')."""

    def __init__(self, pack, verdicts):
        self.pack, self.verdicts, self.examined = pack, verdicts, []

    def examine(self, commit):
        self.examined.append(commit.subject)
        verdict = self.verdicts[commit.subject]
        return {"commit": commit.sha, "instance_id": f"chunks-{commit.sha[:12]}", "verdict": verdict,
                "reason": verdict, "seconds": 1.0, "examined": True}, None


def test_a_second_run_keeps_finished_candidates_and_examines_infra_errors_again(tmp_path, repo):
    first = miner(tmp_path, repo)
    commits = first.history.commits("main", None, None)
    out = first.pack.root
    script = CountingMiner(first.pack, {"Docs only": "no_tests_touched", commits[1].subject: "infra_error",
                                        "root": "no_parent"})
    lines: list[str] = []
    report = m.mine(out, first.history, commits, script, workers=2, log=lines.append)
    assert sorted(script.examined) == sorted(c.subject for c in commits)
    assert [c["verdict"] for c in report["candidates"]] == ["no_tests_touched", "infra_error", "no_parent"]
    assert report["totals"]["by_verdict"] == {"no_tests_touched": 1, "no_parent": 1, "infra_error": 1}

    again = CountingMiner(first.pack, {commits[1].subject: "gold_fails"})
    report = m.mine(out, first.history, commits, again, log=lines.append)
    assert again.examined == [commits[1].subject]
    assert "2 commit(s) already examined" in "\n".join(lines)
    saved = json.loads((out / m.REPORT).read_text())
    assert saved == report and [c["verdict"] for c in saved["candidates"]] == ["no_tests_touched", "gold_fails",
                                                                               "no_parent"]
    assert (out / "tasks.jsonl").read_text() == ""
