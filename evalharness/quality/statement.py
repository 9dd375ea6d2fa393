"""Statement checks (pure): does a statement describe behaviour an agent can build from? (``docs/mining.md``)

A mined statement is a commit message or a pull request's text; many are not reports of behaviour.
Five checks, each a ``Check`` with a reason naming the text that decided it:

- ``changelog``: a release or version note (``Version 11.0.1``, ``Changes for version 10.3.0``,
  ``Bump version to 2.1``), an edit of the changelog (``Update CHANGELOG``), or release notes: a list of at
  least ``LIST_MIN`` items most of which (``LIST_SHARE``) cite a pull request, an author or a version
  arrow (``- Fix x (#12)``, ``* by @a in https://...``, ``pyupgrade: v3.4.0 → v3.8.0``).
- ``ci_note``: a title about the project's tooling (CI, workflows, tox, linters, formatters, coverage,
  packaging, dependency and action updates, supported Python versions, typos and docstrings) that names
  no code of the library, with no body of its own that describes anything else (fewer than
  ``body_min_words`` words outside tooling lines); or a list statement whose lines are mostly such
  notes. The project's own name is not a tool (a pylint issue may say "pylint").
- ``bare_title``: fewer than ``title_min_words`` words, or fewer than ``named_min_words`` words and no
  name of code (`` `x` ``, ``x()``, ``a_b``, ``a.b``, ``CamelCase``, or a name the tests use). Links,
  issue numbers and commit hashes are not words: ``Fixes https://.../issues/86`` is bare.
- ``unseen_commit``: a revert (``Revert "..."``, ``This reverts commit <sha>``, ``revert #N``), or a commit
  hash in a statement that has fewer than ``body_min_words`` words besides it: the agent sees the base
  tree only, never the history, so a statement resting on a commit cannot be acted on.
- ``squashed_branch``: the statement is more than ``squash_max_messages`` commit messages of a merged branch
  (mining's ``merged commits`` source): a branch's messages list its steps and fix-ups ("fix failing tests"),
  often several features at once, and leave the interface the tests pin unstated.
"""

from __future__ import annotations

import builtins
import keyword
import re

from evalharness.quality.gate import DEFAULT, Check, Thresholds

LIST_MIN = 3
"""Fewest list items that make a release-notes list."""
LIST_SHARE = 0.6
"""Share of a list's items citing a PR, an author or a version arrow that makes it release notes."""

_URL = re.compile(r"https?://\S+|\bwww\.\S+")
_SHA = re.compile(r"(?<![\w/.#-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w/-])")
_REF = re.compile(r"(?:\b(?:issue|pr|pull request|gh)[ -]?)?#\d+\b|\b(?:issue|pr|pull request|gh)[ -]?\d+\b", re.I)
_WORD = re.compile(r"[A-Za-z][\w'’]*")
_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.S)
_CODE_NAME = re.compile(r"`[^`\n]+`|\b\w+\(|\b[A-Za-z]\w*_\w+\b|\b[A-Za-z_]\w*\.[A-Za-z_]\w*\b"
                        r"|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z0-9]+[A-Z]\w*|\b__\w+__\b")
_COMMON = set(dir(builtins)) | set(keyword.kwlist) | {"pytest", "self", "cls", "test", "tests"}
"""Names every test uses: a statement writing them ("list", "type") names no code of the library."""
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+(.*)$")

_RELEASE = re.compile(
    r"^(?:v|version\s*)?\d+(?:\.\d+)+\S*\s*$"                       # 1.2.3, v1.2, Version 11.0.1
    r"|^(?:version|release)\s+v?\d"                                 # Version 8 cleanup, Release 2.6
    r"|^(?:changes|updates?|notes)\s+for\s+(?:version|release|v?\d)"  # Changes for version 10.3.0
    r"|^(?:bump|bumped|set|update)\s+(?:the\s+)?version\b"          # Bump version to 2.1
    r"|^prepar\w*\s+(?:for\s+)?(?:the\s+)?(?:release|v?\d+\.\d)"    # Prepare release 3.0
    r"|^release\s+notes\b", re.I)
_CHANGELOG_FILE = re.compile(r"\bchange ?logs?\b|\brelease notes\b|(?-i:\b(?:CHANGES|HISTORY|NEWS)\b)", re.I)
_NOTE_ITEM = re.compile(r"\(#\d+\)|(?<!\w)#\d+\b|\bby @[\w-]+|\bin https?://|→|->\s*v?\d"
                        r"|\bv?\d+(?:\.\d+)+\s*(?:to)\s+v?\d")

_TOOLS = ("ci", "github actions?", "github-actions", "gha", "workflows?", "travis", "appveyor", "circleci",
          "azure pipelines", r"pre-commit(?:\.ci)?", "prek", r"tox(?:\.ini)?", "nox", "flake8", "ruff", "pylint",
          "mypy", "pyright", "stubtest", "black", "isort", "pyupgrade", "codespell", "lint", "linters?", "linting",
          "codecov", "coverage", "codspeed", "renovate", "dependabot", "readthedocs", r"setup\.py", r"setup\.cfg",
          r"pyproject(?:\.toml)?", "flit", "hatch", "hatchling", "twine", "sdist", "wheels?", "badges?",
          "benchmarks?", "typos?", "spelling", "whitespace", "docstrings?", "formatting", "reformat(?:ted)?",
          "type hints?", "type stubs?", "changelog", "release-drafter")
_DEPENDENCY = re.compile(r"^(?:bump|update|upgrade|pin|unpin)\b.*\b(?:dependenc\w*|actions?|requirements?|"
                         r"from\s+v?\d[\w.]*\s+to|to\s+v?\d)|\bautoupdate\b", re.I)
_PYTHON = re.compile(r"^(?:drop|add|remove|deprecate|set|bump|require|test)\w*\b[^.]*\b(?:python|py|pypy)\s*\d"
                     r"|\bminimum (?:python )?version\b|\bpython\s*\d[\d.]*\+?\s+support\b", re.I)


def check_statement(text: str, *, project: str = "", names: set[str] = frozenset(), squashed: int = 0,
                    thresholds: Thresholds = DEFAULT) -> list[Check]:
    """The five statement checks, in order: changelog, ci_note, bare_title, unseen_commit, squashed_branch
    (``squashed``: how many messages of a merged branch make the statement; 0 when it is not one)."""
    title, body = _title_body(text)
    return [_changelog(title, body), _ci_note(title, body, project, names, thresholds),
            _bare_title(text, names, thresholds), _unseen_commit(text, title, thresholds),
            _squashed_branch(squashed, thresholds)]


def _title_body(text: str) -> tuple[str, str]:
    lines = text.replace("\r\n", "\n").strip().split("\n", 1)
    return lines[0].strip(), (lines[1].strip() if len(lines) > 1 else "")


def words(text: str) -> list[str]:
    """The words of a statement: links, issue and PR numbers and commit hashes are not words."""
    return _WORD.findall(_REF.sub(" ", _SHA.sub(" ", _URL.sub(" ", text))))


def names_code(text: str, names: set[str] = frozenset()) -> str | None:
    """The first name of code the text writes (`x`, x(), a_b, a.b, CamelCase, a name in ``names``), else None."""
    found = _CODE_NAME.search(_URL.sub(" ", text))
    if found:
        return found.group(0)
    return next((w for w in _WORD.findall(text) if w in names and len(w) > 2 and w not in _COMMON), None)


def _changelog(title: str, body: str) -> Check:
    if _RELEASE.search(title):
        return Check("changelog", False, f"the title is a release or version note: {title[:80]!r}")
    if _CHANGELOG_FILE.search(title):
        return Check("changelog", False, f"the title is about the changelog: {title[:80]!r}")
    items = [m.group(1) for m in map(_BULLET.match, body.splitlines()) if m]
    cited = [i for i in items if _NOTE_ITEM.search(i)]
    if len(items) >= LIST_MIN and len(cited) >= LIST_SHARE * len(items):
        return Check("changelog", False, f"release notes: {len(cited)} of {len(items)} list items cite a pull "
                     f"request, an author or a version change (e.g. {cited[0][:60]!r})")
    return Check("changelog", True, "no release note, changelog edit or release-notes list")


def _tool_pattern(project: str) -> re.Pattern:
    own = project.rsplit("/", 1)[-1].split("__")[-1].lower()
    tools = [t for t in _TOOLS if not re.fullmatch(t, own)] if own else list(_TOOLS)
    return re.compile(r"\b(?:" + "|".join(tools) + r")\b", re.I)


def _is_tooling(line: str, tools: re.Pattern, names: set[str] = frozenset()) -> str | None:
    """What makes one line a tooling note (a tool, a dependency update, a Python version) when it names no
    code of the library besides the tool, else None."""
    for pattern in (tools, _DEPENDENCY, _PYTHON):
        found = pattern.search(line)
        if found and names_code(tools.sub(" ", _URL.sub(" ", line)), names) is None:
            return found.group(0)
    return None


def _ci_note(title: str, body: str, project: str, names: set[str], thresholds: Thresholds) -> Check:
    tools = _tool_pattern(project)
    lines = [line for line in (_CODE_BLOCK.sub("", f"{title}\n{body}")).splitlines() if line.strip()]
    noted = [line for line in lines if _is_tooling(line, tools, names)]
    if len(lines) >= LIST_MIN and len(noted) > len(lines) / 2:
        return Check("ci_note", False, f"{len(noted)} of {len(lines)} lines are tooling notes naming no code "
                     f"(e.g. {noted[0].strip()[:60]!r})")
    what = _is_tooling(title, tools, names)
    if what is None:
        return Check("ci_note", True, "the title is no tooling note (no tool named, or it names code)")
    rest = sum(len(words(line)) for line in body.splitlines()
               if line.strip() and not _is_tooling(line, tools, names))
    if rest >= thresholds.body_min_words:
        return Check("ci_note", True, f"the title mentions {what!r} but the body has {rest} words of description")
    return Check("ci_note", False, f"the title is a tooling note ({what!r}: {title[:80]!r}) and names no code of "
                 f"the library; {rest} word(s) of body besides tooling lines (fewer than {thresholds.body_min_words})")


def _bare_title(text: str, names: set[str], thresholds: Thresholds) -> Check:
    n = len(words(text))
    if n < thresholds.title_min_words:
        return Check("bare_title", False, f"{n} word(s) (fewer than {thresholds.title_min_words}; links, issue "
                     "numbers and hashes not counted): nothing says what the change should do")
    code = names_code(text, names)
    if n < thresholds.named_min_words and code is None:
        return Check("bare_title", False, f"{n} words (fewer than {thresholds.named_min_words}) and no name of "
                     "code: nothing says which part of the library it is about")
    return Check("bare_title", True, f"{n} words" + (f", names {code!r}" if code else ""))


def _unseen_commit(text: str, title: str, thresholds: Thresholds) -> Check:
    revert = re.search(r"^revert\b.*|\bthis reverts commit\b.*|\brevert(?:s|ed|ing)?\s+(?:commit\s+|pr\s+|pull "
                       r"request\s+)?(?:#\d+|[0-9a-f]{7,40})\b", text, re.I | re.M)
    if revert:
        return Check("unseen_commit", False, f"a revert of a commit the agent cannot see: {revert.group(0)[:80]!r}")
    sha = _SHA.search(text)
    n = len(words(text))
    if sha and n < thresholds.body_min_words:
        return Check("unseen_commit", False, f"names commit {sha.group(0)} with {n} words besides (fewer than "
                     f"{thresholds.body_min_words}): the agent sees no history")
    return Check("unseen_commit", True, f"mentions commit {sha.group(0)} within {n} words of description" if sha
                 else "no revert and no commit hash")


def _squashed_branch(messages: int, thresholds: Thresholds) -> Check:
    if messages > thresholds.squash_max_messages:
        return Check("squashed_branch", False, f"made of {messages} commit messages of a merged branch (more than "
                     f"{thresholds.squash_max_messages}): its steps and fix-ups, not one behaviour described")
    if messages:
        return Check("squashed_branch", True, f"{messages} commit message(s) of a merged branch "
                     f"(at most {thresholds.squash_max_messages})")
    return Check("squashed_branch", True, "not made of a merged branch's commit messages")
