"""Every `evalharness <noun>` the README shows is a command the CLI has, and the CLI has no command the README
never names.

Pins: `grade` lost when commands moved between modules (caught only by the one test that invokes it).
"""

from __future__ import annotations

import re
from pathlib import Path

from evalharness.cli import cli

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_commands_are_the_cli_commands():
    shown = set(re.findall(r"evalharness (?:\[[^\]]*\] )?([a-z][a-z-]+)", README.read_text()))
    have = set(cli.commands)
    assert sorted(have - shown) == [], "commands the README never shows"
    assert sorted(shown & {"run", "report", "compare", "plan", "grade", "runs", "show", "review", "drift",
                           "audit", "packs", "sandbox", "models", "grade-predictions"} - have) == []
