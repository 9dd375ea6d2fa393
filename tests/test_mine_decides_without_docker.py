"""`packs mine` decides without Docker: candidate selection, the test/source split, statements, verdicts.

Pins: a miner that put a changelog edit into the gold patch, took a merge's "Merge pull request #N from
x/y" line as the statement, or counted an engine failure against a candidate would make tasks that are
wrong in ways no oracle run shows. Every rule has a case on each side.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evalharness.sources import mine_rules as rules
from evalharness.sources.mine import Commit, History, first_candidates


@pytest.mark.parametrize("path, kind", [
    ("tests/test_more.py", "test"), ("src/pkg/tests/data.json", "test"), ("test_lib.py", "test"),
    ("pkg/util_test.py", "test"), ("conftest.py", "test"), ("testing/helpers.py", "test"),
    ("more_itertools/more.py", "source"), ("src/humanize/locale/fr/LC_MESSAGES/humanize.po", "source"),
    ("more_itertools/more.pyi", "source"), ("lib.py", "source"), ("pkg/testimony.py", "source"),
    ("docs/api.rst", "doc"), ("CHANGES.rst", "doc"), ("README.md", "doc"), ("docs/conf.py", "doc"),
    ("pyproject.toml", "meta"), ("setup.py", "meta"), ("tox.ini", "meta"), (".github/workflows/ci.yml", "meta"),
    ("requirements/testing.txt", "meta"), ("requirements-dev.txt", "meta"), ("scripts/release.py", "meta"),
    (".pre-commit-config.yaml", "meta"),
])
def test_each_path_has_one_kind(path, kind):
    assert rules.classify_path(path) == kind


@pytest.mark.parametrize("path, kind", [
    ("test/functions/diff.js", "test"), ("test/fixtures/range-parse.js", "test"), ("tests/is-matching.test.ts", "test"),
    ("src/a.spec.tsx", "test"), ("src/__tests__/x.js", "test"), ("tap-snapshots/test/bin/semver.js.test.cjs", "test"),
    ("classes/range.js", "source"), ("src/is-matching.ts", "source"), ("index.js", "source"), ("bin/semver.js", "source"),
    ("package.json", "meta"), ("package-lock.json", "meta"), ("tsconfig.json", "meta"), ("jest.config.cjs", "meta"),
    (".eslintrc.local.js", "meta"), ("vitest.config.ts", "meta"), (".github/workflows/ci.yml", "meta"),
    ("benchmarks/bench-diff.js", "meta"), ("README.md", "doc"), ("CHANGELOG.md", "doc"), ("docs/roadmap.md", "doc"),
])
def test_each_node_path_has_one_kind(path, kind):
    assert rules.classify_path(path, "node") == kind


def test_a_node_candidate_needs_javascript_or_typescript_library_code():
    split = rules.split_change(["functions/diff.js", "test/functions/diff.js", "package.json", "README.md"], "node")
    assert (split.verdict, split.test, split.source, split.dropped) == (
        None, ["test/functions/diff.js"], ["functions/diff.js"], ["README.md", "package.json"])
    assert rules.split_change(["src/types.d.ts", "tests/a.test.ts"], "node").verdict == "no_library_code"
    assert rules.split_change(["functions/diff.js", "README.md"], "node").verdict == "no_tests_touched"
    assert rules.split_change(["functions/diff.js", "test/functions/diff.js"]).verdict == "no_library_code"  # Python's
    fixtures = rules.split_change(["classes/range.js", "test/fixtures/range-parse.js"], "node")
    assert fixtures.verdict == "no_runnable_tests" and "no_runnable_tests" in rules.NOT_CANDIDATES
    assert rules.split_change(["classes/range.js", "test/fixtures/range-parse.js", "test/classes/range.js"],
                              "node").verdict is None


def test_a_candidate_changes_tests_and_library_code_and_the_rest_is_dropped():
    split = rules.split_change(["more_itertools/more.py", "tests/test_more.py", "docs/api.rst", "pyproject.toml"])
    assert split.verdict is None
    assert (split.test, split.source, split.dropped) == (["tests/test_more.py"], ["more_itertools/more.py"],
                                                         ["docs/api.rst", "pyproject.toml"])
    assert rules.split_change(["more_itertools/more.py", "docs/api.rst"]).verdict == "no_tests_touched"
    assert rules.split_change(["tests/test_more.py", "docs/api.rst"]).verdict == "no_library_code"
    assert rules.split_change(["tests/test_more.py", "more_itertools/more.pyi"]).verdict == "no_library_code"
    assert rules.split_change(["tests/test_more.py", "more_itertools/more.pyi", "more_itertools/more.py"]).verdict is None


def test_merge_lines_pr_suffixes_trailers_and_comments_are_not_the_statement():
    merge = "Merge pull request #1223 from someone/chunked-negative\n\nchunked: reject a negative n\n"
    assert rules.clean_message(merge) == "chunked: reject a negative n"
    squash = ("Fix `naturalsize()` rounding at unit boundaries (#310)\n\n<!-- template -->\nIt showed 1000 kB.\n\n"
              "Co-authored-by: A <a@example.org>\nSigned-off-by: B <b@example.org>\n")
    assert rules.clean_message(squash) == "Fix `naturalsize()` rounding at unit boundaries\n\nIt showed 1000 kB."
    assert rules.clean_message("Merge branch 'feature/x'\n") == ""
    assert rules.clean_message("Plain commit about Merge pull request handling") == \
        "Plain commit about Merge pull request handling"


def test_the_pull_request_number_comes_from_a_merge_line_or_a_squash_suffix():
    assert rules.pr_number("Merge pull request #12 from a/b\n\nTitle") == 12
    assert rules.pr_number("Title (#345)\n\nbody") == 345
    assert rules.pr_number("Title mentioning #345 in the middle") is None


EXPORT = rules.read_export([
    {"number": 10, "title": "intword(0) crashes", "body": "Calling it raises ZeroDivisionError."},
    {"number": 11, "title": "Handle zero in intword", "body": "Fixes #10\n\nSmall change.", "pull_request": {}},
    {"number": 12, "title": "Speed up intcomma", "body": "No issue.", "pull_request": {}},
    {"title": "a record without a number is ignored"},
])


def test_the_statement_prefers_the_closed_issue_then_the_pr_then_the_message():
    closed = rules.statement_for("Merge pull request #11 from a/b\n\nHandle zero", is_merge=True, export=EXPORT)
    assert (closed.source, closed.text) == ("issue #10", "intword(0) crashes\n\nCalling it raises ZeroDivisionError.")
    pr = rules.statement_for("Speed up intcomma (#12)", is_merge=False, export=EXPORT)
    assert (pr.source, pr.text) == ("pr #12", "Speed up intcomma\n\nNo issue.")
    unknown = rules.statement_for("Merge pull request #99 from a/b\n\nSomething else", is_merge=True, export=EXPORT)
    assert (unknown.source, unknown.text) == ("merge message", "Something else")
    plain = rules.statement_for("Fix windowed for n=0", is_merge=False)
    assert (plain.source, plain.text) == ("commit message", "Fix windowed for n=0")
    bare = rules.statement_for("Merge branch 'x'", is_merge=True, merged_messages=["Fix a\n", "Merge branch 'y'"])
    assert (bare.source, bare.text) == ("merged commits", "Fix a")
    assert rules.statement_for("Merge branch 'x'", is_merge=True, merged_messages=[]).source == "none"


def test_public_names_are_what_tests_call_exports_and_dunders_but_not_private_names():
    test_patch = ("--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1,2 +1,3 @@\n import humanize\n"
                  "+    assert humanize.naturalsize(1) == '1 Byte'\n-    old_removed_name()\n")
    base = {"pkg/more.py": "__all__ = ['chunked', 'windowed']\ndef _helper(): pass\ndef __eq__(self): pass\n",
            "pkg/__init__.py": "from .more import (\n    chunked,\n    _private,\n)\nfrom .x import spam as eggs\n"}
    names = rules.public_names(test_patch, base)
    assert {"humanize", "naturalsize", "chunked", "windowed", "spam", "eggs", "__eq__"} <= names
    assert not {"_helper", "_private", "old_removed_name", "as"} & names


def test_discovery_without_a_task_is_named_by_what_the_runs_show():
    flaky = {"t.py::a": {"base": 0.5, "gold": 1.0}}
    assert rules.discovery_verdict("no_tests_ran", "r", {}, ["task_error"], ["passed"])[0] == \
        "test_patch_does_not_apply"
    assert rules.discovery_verdict("no_tests_ran", "r", {}, ["resolved"], ["patch_apply_failed"])[0] == \
        "gold_does_not_apply"
    verdict, reason = rules.discovery_verdict("nothing_fails_at_base", "r", flaky, ["resolved"], ["resolved"])
    assert verdict == "flaky" and "t.py::a (base 50%, gold 100%)" in reason
    assert rules.discovery_verdict("nothing_fails_at_base", "r", {}, ["resolved"], ["resolved"]) == \
        ("nothing_fails_at_base", "r")
    assert rules.discovery_verdict("gold_fails_everything", "r", {}, ["unresolved"], ["unresolved"])[0] == "gold_fails"
    assert rules.discovery_verdict("no_tests_ran", "r", {}, ["unresolved"], ["unresolved"])[0] == "no_tests_ran"
    assert rules.discovery_verdict("incomplete_run", "r", {}, ["tests_timed_out"], ["resolved"]) == \
        ("incomplete_run", "r")


def test_validation_verdicts_map_onto_report_verdicts_and_infra_errors_are_retried():
    assert rules.VALIDATION_VERDICTS["ok"] == "ok" and rules.VALIDATION_VERDICTS["no_recipe"] == "env_build_failed"
    assert set(rules.VALIDATION_VERDICTS.values()) <= set(rules.VERDICTS)
    assert rules.RETRIED == ("infra_error", "incomplete_run", "coverage_unmeasured") and "ok" not in rules.RETRIED


def test_totals_count_candidates_apart_from_commits_that_are_not_candidates():
    entries = [{"verdict": "ok", "seconds": 10, "examined": True}, {"verdict": "leak", "seconds": 0},
               {"verdict": "no_tests_touched", "seconds": 0}, {"verdict": "gold_fails", "seconds": 30, "examined": True}]
    totals = rules.counts(entries)
    assert (totals["commits"], totals["candidates"], totals["validated"]) == (4, 3, 1)
    assert totals["yield"] == pytest.approx(1 / 3) and totals["seconds_per_examined_candidate"] == 20
    assert rules.counts([{"verdict": "no_library_code", "seconds": 0}])["yield"] is None


def test_instance_ids_are_stable_and_valid():
    assert rules.instance_id("more-itertools__more-itertools.git", "2fe1b2eeb9d75f99") == \
        "more-itertools__more-itertools-2fe1b2eeb9d7"
    assert rules.instance_id("my repo!", "abcdef0123456789") == "my-repo-abcdef012345"


def commit(sha: str, paths: list[str], parent: str | None = "p") -> Commit:
    return Commit(sha, parent, "2024-01-01T00:00:00+00:00", "s", "s", False, paths)


def test_max_stops_before_the_next_candidate_and_counts_only_candidates():
    commits = [commit("a", ["lib.py", "test_a.py"]), commit("b", ["README.md"]), commit("c", ["lib.py", "test_c.py"]),
               commit("d", ["lib.py", "test_d.py"]), commit("e", ["lib.py", "test_e.py"], parent=None)]
    assert [c.sha for c in first_candidates(commits, 2)] == ["a", "b", "c"]
    assert [c.sha for c in first_candidates(commits, 1)] == ["a", "b"]
    assert [c.sha for c in first_candidates(commits, 9)] == ["a", "b", "c", "d", "e"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd), "PATH": "/usr/bin:/bin",
                               "GIT_COMMITTER_DATE": "2024-05-01T12:00:00+00:00"}).stdout.strip()


def test_history_walks_first_parent_with_merges_and_diffs_end_in_a_newline(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "lib.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "root")
    git(repo, "checkout", "-qb", "feature")
    (repo / "lib.py").write_text("x = 2\n")
    (repo / "test_lib.py").write_text("def test_x():\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "side commit")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "feature", "-m", "Merge pull request #7 from a/feature\n\nMake x two")
    history = History(str(repo))
    commits = history.commits(history.tip("main"), None, None)
    assert [c.subject for c in commits] == ["Merge pull request #7 from a/feature", "root"]
    merge = commits[0]
    assert merge.is_merge and merge.paths == ["lib.py", "test_lib.py"] and merge.merged_messages == ["side commit\n"]
    assert merge.date == "2024-05-01T12:00:00+00:00" and commits[1].parent is None
    diff = history.diff(merge.parent, merge.sha, ["lib.py"])
    assert diff.startswith("diff --git a/lib.py b/lib.py") and diff.endswith("+x = 2\n")
    assert history.diff(merge.parent, merge.sha, []) == ""
