"""Labels and machine-readable output through the CLI, no Docker: `runs` lists names, tags, harnesses and
models and filters by them, as a table or one JSON document; a bad `--tag` is a usage error naming it, a
bad name a user error; a resume keeps the run's labels and refuses others; `report --format json` and the
end-of-run report print only the document on stdout.

Pins: `run --format json` printed `HTML report: PATH` after the JSON, so `| python -m json.tool` failed;
and runs could not be named or tagged.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner
from support import QUICKSTART, run_cli

from evalharness.cli import _print_report, cli
from evalharness.store import Store, database_url

CONFIG = {"run": {"harnesses": ["oracle", "harnesses/mine.py"],  # as given; "harnesses": by name (sorted)
                  "models": [{"name": "openai/gpt-4o"}, {"name": "anthropic/claude-sonnet-4-5"}]},
          "harnesses": {"oracle": {}, "mine": {}}}


def _trial(run_id: str, task: str, resolved: bool) -> dict:
    now = datetime.now(timezone.utc)
    return dict(run_id=run_id, trial_id=f"p/{task}/oracle/none/seed-0", pack="p", task_id=task, harness="oracle",
                model="none", seed=0, outcome="resolved" if resolved else "unresolved", resolved=resolved,
                infra=False, reason="", attempts=1, cost_usd=0.0, input_tokens=0, output_tokens=0, cached_tokens=0,
                calls=0, duration_s=1.0, started_at=now, finished_at=now, repo="", detail="")


@pytest.fixture
def runs_dir(tmp_path):
    store = Store(database_url(tmp_path / "runs" / "evalharness.db"))
    store.create_run("r1", pack="p", pack_hash="0" * 64, version="t", git_commit=None, config=CONFIG,
                     name="nightly", tags={"model": "gpt", "env": "ci"})
    store.create_run("r2", pack="p", pack_hash="0" * 64, version="t", git_commit=None, config={},
                     name="nightly", tags={"model": "claude"})
    store.create_run("r3", pack="p", pack_hash="0" * 64, version="t", git_commit=None, config={})
    for run_id in ("r1", "r2", "r3"):
        store.set_status(run_id, "completed")
    store.record_trial(_trial("r1", "t1", True))
    store.record_trial(_trial("r1", "t2", False))
    return tmp_path / "runs"


def _invoke(*args: str, code: int = 0):
    done = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert done.exit_code == code, (done.stdout, done.stderr)
    return done


def test_runs_table_shows_labels_harnesses_and_models_newest_first(runs_dir):
    lines = _invoke("runs", "--runs-dir", str(runs_dir)).stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["r3", "r2", "r1"]
    assert lines[2].startswith("r1  completed   p")
    assert lines[2].endswith("trials=2 resolved=1 name=nightly tags=env=ci,model=gpt harnesses=mine,oracle "
                             "models=openai/gpt-4o,anthropic/claude-sonnet-4-5")
    assert lines[0].endswith("trials=0 resolved=0 name=- tags=- harnesses=- models=-")


def test_runs_filters_by_name_and_tags_as_one_json_document(runs_dir):
    done = _invoke("runs", "--runs-dir", str(runs_dir), "--name", "nightly", "--tag", "model=gpt", "--format", "json")
    [r1] = json.loads(done.stdout)
    assert {k: r1[k] for k in ("run_id", "name", "tags", "status", "pack", "trials", "resolved")} == {
        "run_id": "r1", "name": "nightly", "tags": {"env": "ci", "model": "gpt"}, "status": "completed", "pack": "p",
        "trials": 2, "resolved": 1}
    assert r1["harnesses"] == ["mine", "oracle"] and r1["models"] == ["openai/gpt-4o", "anthropic/claude-sonnet-4-5"]
    assert datetime.fromisoformat(r1["created_at"]) and done.stderr == ""
    named = json.loads(_invoke("runs", "--runs-dir", str(runs_dir), "--name", "nightly", "--format", "json").stdout)
    assert [r["run_id"] for r in named] == ["r2", "r1"]
    both = _invoke("runs", "--runs-dir", str(runs_dir), "--tag", "model=gpt", "--tag", "env=ci").stdout
    assert [line.split()[0] for line in both.splitlines()] == ["r1"]
    assert json.loads(_invoke("runs", "--runs-dir", str(runs_dir), "--tag", "env=prod", "--format",
                              "json").stdout) == []
    assert _invoke("runs", "--runs-dir", str(runs_dir), "--name", "nope").stdout == ""


@pytest.mark.parametrize("command", ["run", "runs"])
@pytest.mark.parametrize("tag, message", [
    ("novalue", "'novalue' is not KEY=VALUE"),
    ("bad key=v", "'bad key=v' is not KEY=VALUE"),
    ("=v", "'=v' is not KEY=VALUE"),
])
def test_a_bad_tag_is_a_usage_error_naming_it(tmp_path, command, tag, message):
    args = ["-p", str(QUICKSTART), "-H", "oracle"] if command == "run" else []
    done = _invoke(command, *args, "--tag", tag, "--runs-dir", str(tmp_path / "runs"), code=2)
    assert message in done.stderr and "--tag" in done.stderr and done.stdout == ""
    assert not (tmp_path / "runs").exists()  # nothing was started


def test_a_tag_given_twice_with_two_values_is_refused(tmp_path):
    done = _invoke("run", "-p", str(QUICKSTART), "-H", "oracle", "--tag", "a=1", "--tag", "a=2", code=2)
    assert "tag 'a' is given twice (a=1, a=2)" in done.stderr


def _fails(*args: str, cwd) -> str:
    """A user error through the real entry point: exit 1, one `error:` on stderr, nothing on stdout."""
    done = run_cli(*args, cwd=cwd, check=False)
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    return done.stderr


def test_a_blank_name_is_a_user_error_before_anything_runs(tmp_path):
    stderr = _fails("run", "-p", str(QUICKSTART), "-H", "oracle", "--name", " ", "--runs-dir", "runs", cwd=tmp_path)
    assert "error: a run name is 1-200 characters" in stderr and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("given, message", [
    (["--name", "other"], "run r1 has name 'nightly'; a resume cannot change that (given: name 'other')"),
    (["--tag", "model=gpt"], "run r1 has tags env=ci, model=gpt; a resume cannot change that (given: tags model=gpt)"),
])
def test_a_resume_refuses_other_labels(runs_dir, given, message):
    assert message in _fails("run", "--resume", "r1", *given, "--runs-dir", str(runs_dir), cwd=runs_dir)
    [r1] = Store(database_url(runs_dir / "evalharness.db")).find_runs(name="nightly", tags={"model": "gpt"})
    assert r1["tags"] == {"env": "ci", "model": "gpt"}  # unchanged


def test_a_resume_of_an_unlabelled_run_refuses_new_labels(runs_dir):
    stderr = _fails("run", "--resume", "r3", "--tag", "a=b", "--runs-dir", str(runs_dir), cwd=runs_dir)
    assert "run r3 has no tags; a resume cannot change that (given: tags a=b)" in stderr


def test_report_json_and_the_end_of_run_report_are_the_document_alone(runs_dir, tmp_path, capsys):
    done = _invoke("report", "r1", "--format", "json", "--runs-dir", str(runs_dir))
    assert json.loads(done.stdout)["runs"][0]["run_id"] == "r1"
    for fmt in ("json", "table", "md", "html"):
        _print_report(["r1"], fmt, runs_dir, None, tmp_path / "reports")
        captured = capsys.readouterr()
        assert "HTML report:" not in captured.out
        assert captured.err.splitlines() == [f"HTML report: {tmp_path / 'reports' / 'r1.html'}"]
        if fmt == "json":
            assert json.loads(captured.out)["scores"][0]["n_trials"] == 2
    written = _invoke("report", "r1", "--format", "json", "-o", str(tmp_path / "r1.json"), "--runs-dir", str(runs_dir))
    assert written.stdout == "" and f"wrote {tmp_path / 'r1.json'}" in written.stderr
    assert json.loads((tmp_path / "r1.json").read_text())["runs"][0]["run_id"] == "r1"
