"""The `pinned_message` check: tests that demand, word for word, a message only the gold patch writes.

Pins: node-semver's mined task "Warn when defaulting to --inc=patch in CLI" was kept although its tap snapshot
demands one exact warning sentence the statement never gives (BENCHMARKS.md, "Mined tasks read by hand: Node").
"""

from __future__ import annotations

from evalharness.quality.gate import Thresholds, run_gate
from evalharness.quality.pinned import check_pinned, messages
from evalharness.sources import mine as m
from test_mine_statements_and_resume import RecordingValidator, git, miner
from test_mine_statements_and_resume import commit_all as commit


def diff(path: str, added: list[str], removed: list[str] = ()) -> str:
    body = "".join(f"-{line}\n" for line in removed) + "".join(f"+{line}\n" for line in added)
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,1 +1,1 @@\n{body}"


WARN = diff("bin/cli.js", ["    console.warn(`Unknown level ${name}; using 'low' instead, for now.`)"])
SNAPSHOT = diff("tap-snapshots/test/cli.js.test.cjs",
                ['  "err": "Unknown level -x; using \'low\' instead, for now.\\n",'])
STATEMENT = "fix: make the `--level` option of the CLI warn when it falls back to the low level"


def test_a_message_the_tests_pin_and_the_statement_lacks_fails_and_names_it():
    check = check_pinned(STATEMENT, WARN, SNAPSHOT)
    assert (check.name, check.passed) == ("pinned_message", False)
    assert "using 'low' instead, for now" in check.reason


def test_the_same_message_given_by_the_statement_passes():
    stated = STATEMENT + "\n\nIt prints: Unknown level <name>; using 'low'   instead, for now."
    assert check_pinned(stated, WARN, SNAPSHOT).passed


def test_tests_that_do_not_check_the_message_pass():
    assert check_pinned(STATEMENT, WARN, diff("test/cli.js", ["  t.match(err, /Unknown level/)"])).passed


def test_a_message_already_at_base_is_not_the_gold_patchs():
    moved = diff("bin/cli.js", ["    warn(`Unknown level ${name}; using 'low' instead, for now.`)"],
                 removed=["    console.warn(`Unknown level ${name}; using 'low' instead, for now.`)"])
    assert messages(moved) == [] and check_pinned(STATEMENT, moved, SNAPSHOT).passed


def test_placeholders_split_a_message_and_short_runs_are_not_messages():
    gold = diff("lib/core.py", ['    raise ValueError(f"bad size {n}: must be a power of two")',
                                "    log('not found')"])
    assert messages(gold) == ["must be a power of two"]
    assert messages(gold, min_words=7) == []
    tests = diff("tests/test_core.py", ['    with pytest.raises(ValueError, match="must be a power of two"):'])
    assert not check_pinned("Reject sizes that are not powers of two in core", gold, tests).passed
    assert check_pinned("x", gold, tests, Thresholds(pinned_min_words=7)).passed


def test_identifiers_and_doctest_outputs_are_no_messages():
    gold = diff("lib/words.py", ['__all__ = ["random_combination_with_replacement"]', "    >>> join(['a', 'b', 'c'])",
                                 "    'a, b and then c'", "    raise ValueError('too few words to join here')"])
    assert messages(gold) == ["too few words to join here"]


def test_run_gate_checks_it_only_with_the_statement_and_both_patches():
    assert "pinned_message" not in [c.name for c in run_gate(STATEMENT, WARN).checks]
    gate = run_gate(STATEMENT, None, pinned=(WARN, SNAPSHOT))
    assert [c.name for c in gate.failed] == ["pinned_message"]
    assert "pinned_message" not in [c.name for c in run_gate(None, WARN, pinned=(WARN, SNAPSHOT)).checks]


LIB = "def level(name):\n    return name\n"
WARNS = ("import warnings\n\n\ndef level(name):\n    if name not in ('low', 'high'):\n"
         "        warnings.warn(f'Unknown level {name}; using low instead, for now')\n        return 'low'\n"
         "    return name\n")
TEST = "from lv import level\n\n\ndef test_low():\n    assert level('low') == 'low'\n"
PINNED = TEST + ("\n\ndef test_unknown(recwarn):\n    assert level('x') == 'low'\n"
                 "    assert str(recwarn.pop().message) == 'Unknown level x; using low instead, for now'\n")


def test_mining_rejects_a_pinned_message_before_docker_and_keeps_the_stated_one(tmp_path):
    repo = tmp_path / "lv"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "root", {"lv/__init__.py": LIB, "tests/test_lv.py": TEST})
    commit(repo, "Make level() fall back to 'low' with a warning when the level name is unknown",
           {"lv/__init__.py": WARNS, "tests/test_lv.py": PINNED})
    commit(repo, "Make level() fall back to 'low' when a name is unknown, warning 'Unknown level <name>; "
           "using low instead, for now'", {"lv/__init__.py": WARNS + "\n", "tests/test_lv.py": PINNED + "\n"})
    validator = RecordingValidator()
    mined = miner(tmp_path, repo, validator=validator)
    report = m.mine(mined.pack.root, mined.history, mined.history.commits("main", None, None), mined,
                    log=lambda line: None)
    unstated, stated = [c for c in reversed(report["candidates"]) if c["subject"] != "root"]
    assert unstated["verdict"] == "pinned_message" and "using low instead, for now" in unstated["reason"]
    assert stated["verdict"] != "pinned_message"
    [task] = validator.tasks
    assert task.metadata["commit"] == stated["commit"]
    assert next(c for c in task.metadata["gate"]["checks"] if c["name"] == "pinned_message")["passed"] is True
