"""The language modules ``packs new`` chooses from, by name or by what a repository's tracked files hold."""

from __future__ import annotations

from evalharness.errors import UserError
from evalharness.languages.base import Language
from evalharness.languages.node import NODE
from evalharness.languages.python import PYTHON

LANGUAGES: dict[str, Language] = {"python": PYTHON, "node": NODE}
DEFAULT = "python"
"""A repository no language claims is scaffolded as Python (what ``packs new`` always did)."""


def get(name: str) -> Language:
    try:
        return LANGUAGES[name]
    except KeyError:
        raise UserError(f"unknown language {name!r}", f"known: {', '.join(LANGUAGES)}") from None


def choose(files: list[str], wanted: str = "auto") -> Language:
    """``wanted`` by name, else the one language whose markers the files hold; where several do, the one with
    more test files; a tie is the user's to break."""
    if wanted != "auto":
        return get(wanted)
    claiming = [lang for lang in LANGUAGES.values() if lang.claims(files)]
    if not claiming:
        return LANGUAGES[DEFAULT]
    if len(claiming) == 1:
        return claiming[0]
    counts = {lang.name: sum(map(lang.is_test_file, files)) for lang in claiming}
    ranked = sorted(claiming, key=lambda lang: counts[lang.name], reverse=True)
    if counts[ranked[0].name] == counts[ranked[1].name]:
        raise UserError("the repository looks like " + " and ".join(f"{n} ({c} test files)" for n, c in counts.items()),
                        "choose with --language " + "|".join(counts))
    return ranked[0]
