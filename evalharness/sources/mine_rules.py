"""Pure decisions of ``packs mine`` (no git, no Docker): which commits are candidates, how a change splits
into a hidden test patch and a gold patch, where a statement comes from, and the report's verdicts.

A changed path is one of four kinds (``classify_path``):

- ``test``: a file of the test suite (a ``tests``/``test``/``testing`` folder, ``test_*.py``, ``*_test.py``,
  ``conftest.py``), data files in test folders included. They become the hidden ``test_patch``.
- ``source``: a library file (a ``.py``/``.pyi``/extension file, or a data file inside the package, outside
  every other kind). They become the gold ``patch``; a candidate needs at least one ``.py`` among them.
- ``doc``: documentation and changelogs (``docs/``, ``*.rst``, ``*.md``, ``*.txt`` at the top level, ``CHANGES``,
  ...). Left out of both patches: no test reads them and a reporter's text never needs them.
- ``meta``: packaging, CI and tool configuration (``pyproject.toml``, ``setup.*``, ``tox.ini``, ``requirements*``,
  ``.github/``, ...). Left out: the environment is built once for the pack, so a change to it could not take
  effect at grading time (and the grader restores pytest configuration to base anyway).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from evalharness.languages.node import NODE
from evalharness.quality.coverage import VERDICTS as COVERAGE_VERDICTS
from evalharness.quality.gate import VERDICTS as GATE_VERDICTS

TEST_DIRS = {"tests", "test", "testing"}
DOC_DIRS = {"docs", "doc", "documentation"}
META_DIRS = {".github", ".gitlab", ".circleci", ".ci", "ci", "scripts", "tools", "benchmarks", "bench", "examples",
             ".devcontainer", ".vscode", "changelog.d", "newsfragments"}
META_FILES = {"pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "noxfile.py", "manifest.in", "makefile",
              "pytest.ini", ".coveragerc", ".pre-commit-config.yaml", ".readthedocs.yaml", ".readthedocs.yml",
              "mkdocs.yml", ".gitignore", ".gitattributes", "license", "licence", "license.txt", "authors",
              "codecov.yml", ".flake8", "mypy.ini", "ruff.toml", ".editorconfig", "requirements.txt", "environment.yml",
              "renovate.json", ".yamlfmt.yaml", "readme", "releasing.md", "contributing.md"}
DOC_SUFFIXES = (".rst", ".md", ".txt", ".adoc")
DOC_STEMS = ("changes", "changelog", "history", "news", "readme", "authors", "contributors")
CODE_SUFFIXES = (".py", ".pyi", ".pyx", ".pxd", ".c", ".h")
KINDS = ("test", "source", "doc", "meta")
NODE_CODE = (".js", ".cjs", ".mjs", ".jsx", ".ts", ".cts", ".mts", ".tsx")
"""Library code of a Node project (a ``.d.ts`` declaration alone is not: no test runs it)."""
NODE_TEST_DIRS = {"test", "tests", "__tests__", "spec", "tap-snapshots", "__snapshots__"}
NODE_META_FILES = {"package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
                   "bun.lockb", "bun.lock", ".npmrc", ".nvmrc", ".node-version", ".taprc", ".mocharc.json",
                   ".mocharc.yml", ".mocharc.yaml", ".babelrc", ".swcrc", "jsr.json", "deno.json"}
_NODE_META = re.compile(r"^(tsconfig.*\.json|(jest|vitest|vite|babel|rollup|webpack|eslint|prettier|commitlint|"
                        r"release-please|\.mocharc|\.eslintrc|\.prettierrc)[.\w-]*)$")
LIBRARY_CODE = {"python": (".py",), "node": NODE_CODE}
"""The suffixes of which a candidate's gold patch needs one, by language (``languages.registry``)."""

VERDICTS = {
    "ok": "validated: the gold patch resolves on every rerun and the empty patch fails every FAIL_TO_PASS",
    "no_tests_touched": "the change touches no test file",
    "no_library_code": "the change touches no library code file (.py; .js, .ts and kin in a Node project)",
    "no_runnable_tests": "the test changes are fixtures, helpers or snapshots only: no test file of them runs "
                         "(a Node project's test files are named as languages/node.py says)",
    "no_parent": "a root commit has no base",
    "no_statement": "no statement could be made from the commit message or the export",
    "leak": "the statement gives away the fix (and no rewrite removed it)",
    **GATE_VERDICTS,
    "env_build_failed": "the environment or task image could not be built",
    "test_patch_does_not_apply": "the test patch does not apply to the base",
    "gold_does_not_apply": "the gold patch does not apply to the base",
    "no_tests_ran": "no run reported any test of the test patch's files",
    "incomplete_run": "a run timed out, crashed or stopped part-way even after a retry: no per-test evidence",
    "gold_fails": "the gold patch does not make the tests pass",
    "nothing_fails_at_base": "every test that passes with the gold patch also passes at base",
    "empty_passes": "a FAIL_TO_PASS test passes with no fix",
    "flaky": "tests change status between reruns (rates in the entry)",
    **COVERAGE_VERDICTS,
    "infra_error": "the engine failed: not the candidate's fault; a rerun of the command retries it",
}
"""Every verdict a candidate commit can get, with its meaning (docs/mining.md)."""
NOT_CANDIDATES = ("no_tests_touched", "no_library_code", "no_runnable_tests", "no_parent")
RETRIED = ("infra_error", "incomplete_run", "coverage_unmeasured")
"""Verdicts that are not final: a rerun of ``packs mine`` examines those candidates again."""
GATED = tuple(GATE_VERDICTS)
"""The quality gate's verdicts (``evalharness/quality/``): a rerun checks those candidates again, as the
thresholds (``--max-gold-bytes``) may have changed; the gate is pure, so that costs no Docker run."""


def classify_path(path: str, language: str = "python") -> str:
    """The kind of one changed path (see the module doc; a Node project's by ``classify_node_path``)."""
    if language == "node":
        return classify_node_path(path)
    p = PurePosixPath(path)
    parts = [part.lower() for part in p.parts]
    name = parts[-1]
    folders = parts[:-1]
    if any(f in TEST_DIRS for f in folders) or name == "conftest.py" or re.match(r"^test_.*\.py$", name) \
            or re.match(r"^.*_test\.py$", name):
        return "test"
    if folders and folders[0] in DOC_DIRS:
        return "doc"
    if (folders and folders[0] in META_DIRS) or name in META_FILES or name.startswith("requirements") \
            or (folders and folders[0].startswith("requirements")):
        return "meta"
    stem = name.split(".", 1)[0]
    if stem in DOC_STEMS or (not folders and name.endswith(DOC_SUFFIXES)):
        return "doc"
    if not folders and name.startswith("."):
        return "meta"
    return "source"


def classify_node_path(path: str) -> str:
    """A Node project's path: tests are test folders (fixtures and snapshots with them) and ``*.test.*`` /
    ``*.spec.*`` files; packaging, lockfiles and tool configuration are meta; the rest as for Python."""
    parts = [part.lower() for part in PurePosixPath(path).parts]
    name, folders = parts[-1], parts[:-1]
    if "node_modules" in folders:
        return "meta"
    if any(f in NODE_TEST_DIRS for f in folders) or re.search(r"\.(test|spec)\.[cm]?[jt]sx?$", name):
        return "test"
    if not folders and (name in NODE_META_FILES or _NODE_META.match(name)):
        return "meta"
    return classify_path(path)


@dataclass
class Split:
    """A change's paths by kind, and whether it is a candidate (``verdict`` None) or why not."""

    test: list[str] = field(default_factory=list)
    source: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    verdict: str | None = None


def split_change(paths: list[str], language: str = "python") -> Split:
    """Sort a change's paths; a candidate changes at least one test file and one library code file (``.py``;
    a Node project's ``.js``/``.ts`` and kin, not a ``.d.ts`` alone)."""
    split = Split()
    for path in sorted(set(paths)):
        kind = classify_path(path, language)
        (split.test if kind == "test" else split.source if kind == "source" else split.dropped).append(path)
    if not split.test:
        split.verdict = "no_tests_touched"
    elif not any(p.endswith(LIBRARY_CODE[language]) and not p.endswith(".d.ts") for p in split.source):
        split.verdict = "no_library_code"
    elif language == "node" and not any(map(NODE.is_test_file, split.test)):
        split.verdict = "no_runnable_tests"  # the task runs its test patch's files: fixtures alone hold no test
    return split


TRAILER = re.compile(r"^(co-authored-by|signed-off-by|reviewed-by|acked-by|tested-by|reported-by|suggested-by|"
                     r"helped-by|cc|change-id)\s*:", re.I)
MERGE_LINE = re.compile(r"^Merge (pull request #(\d+) from \S+|branch '[^']*'( of \S+)?( into \S+)?|"
                        r"remote-tracking branch '[^']*'|[0-9a-f]{7,40}( into \S+)?)\s*$")
PR_SUFFIX = re.compile(r"\s*\(#(\d+)\)\s*$")
CLOSES = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+#(\d+)", re.I)


def pr_number(message: str) -> int | None:
    """The pull request a commit message names: GitHub's merge line, or a squash merge's ``(#N)`` suffix."""
    lines = message.strip().splitlines()
    first = lines[0] if lines else ""
    merged = MERGE_LINE.match(first)
    if merged and merged.group(2):
        return int(merged.group(2))
    suffix = PR_SUFFIX.search(first)
    return int(suffix.group(1)) if suffix else None


def clean_message(message: str) -> str:
    """A commit or merge message as a statement: GitHub's merge line, ``(#N)`` suffixes, trailers, HTML
    comments and bot noise removed; blank runs collapsed. Empty when nothing is left."""
    text = re.sub(r"<!--.*?-->", "", message.replace("\r\n", "\n"), flags=re.S)
    lines = []
    for i, line in enumerate(text.strip().splitlines()):
        if i == 0 and MERGE_LINE.match(line.strip()):
            continue
        if TRAILER.match(line.strip()) or line.strip().startswith("[pre-commit.ci]"):
            continue
        lines.append(PR_SUFFIX.sub("", line) if i == 0 else line.rstrip())
    cleaned = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return cleaned


@dataclass
class Statement:
    text: str
    source: str
    """Where it came from: ``issue #N``, ``pr #N`` (the export), ``merge message``, ``commit message``,
    ``merged commits`` (a merge whose own message says nothing)."""
    messages: int = 0
    """How many commit messages of a merged branch make the text (``merged commits`` only; else 0)."""


def statement_for(message: str, *, is_merge: bool, merged_messages: list[str] | None = None,
                  export: dict[int, dict] | None = None) -> Statement:
    """The statement of a candidate (pure): the export's issue that the pull request closes, else the
    export's pull request, else the commit's own message, else (a merge) the messages of the merged commits."""
    number = pr_number(message)
    if export and number is not None and number in export:
        pr = export[number]
        pr_text = _export_text(pr)
        for closed in CLOSES.findall(pr.get("body") or ""):
            issue = export.get(int(closed))
            if issue is not None and int(closed) != number and _export_text(issue):
                return Statement(_export_text(issue), f"issue #{closed}")
        if pr_text:
            return Statement(pr_text, f"pr #{number}")
    own = clean_message(message)
    if own:
        return Statement(own, "merge message" if is_merge else "commit message")
    messages = [m for m in (clean_message(x) for x in merged_messages or []) if m]
    return Statement("\n\n".join(messages), "merged commits", len(messages)) if messages else Statement("", "none")


def _export_text(record: dict) -> str:
    title = (record.get("title") or "").strip()
    body = clean_message(record.get("body") or "")
    return f"{title}\n\n{body}".strip() if body else title


def read_export(records: list) -> dict[int, dict]:
    """GitHub issue/PR JSON records (as ``gh`` or the REST API give them) by number; others are ignored."""
    return {int(r["number"]): r for r in records if isinstance(r, dict) and isinstance(r.get("number"), int)}


def instance_id(repo_name: str, commit: str) -> str:
    """``<repository name>-<12 hex digits of the commit>``: stable and unique within a repository."""
    name = re.sub(r"[^A-Za-z0-9_.\-]+", "-", repo_name.removesuffix(".git")).strip("-.") or "repo"
    return f"{name}-{commit[:12]}"


def discovery_verdict(lists_verdict: str, reason: str, flaky: dict, base_outcomes: list[str],
                      gold_outcomes: list[str]) -> tuple[str, str]:
    """The report verdict of a candidate whose discovery found no task (pure): what the runs say, first."""
    if "task_error" in base_outcomes:
        return "test_patch_does_not_apply", "the test patch does not apply to the base"
    if "patch_apply_failed" in gold_outcomes or "task_error" in gold_outcomes:
        return "gold_does_not_apply", "the gold patch does not apply to the base"
    if flaky and lists_verdict != "ok":
        shown = ", ".join(f"{n} (base {r['base']:.0%}, gold {r['gold']:.0%})" for n, r in sorted(flaky.items())[:5])
        return "flaky", f"{len(flaky)} test(s) change status between reruns and nothing else fails at base: {shown}"
    mapped = {"gold_fails_everything": "gold_fails", "nothing_fails_at_base": "nothing_fails_at_base",
              "no_tests_ran": "no_tests_ran", "incomplete_run": "incomplete_run"}
    return mapped.get(lists_verdict, lists_verdict), reason


VALIDATION_VERDICTS = {"ok": "ok", "env_build_failed": "env_build_failed", "no_recipe": "env_build_failed",
                       "gold_does_not_apply": "gold_does_not_apply", "flaky": "flaky", "gold_fails": "gold_fails",
                       "empty_passes": "empty_passes", "incomplete": "incomplete_run", "infra_error": "infra_error"}
"""``packs validate``'s verdicts as the mining report's."""


def counts(entries: list[dict]) -> dict:
    """The report's totals: commits, candidates (changing tests and library code), validated, yield."""
    by = Counter(e["verdict"] for e in entries)
    candidates = sum(e["verdict"] not in NOT_CANDIDATES for e in entries)
    examined = [e["seconds"] for e in entries if e.get("examined")]
    return {"commits": len(entries), "candidates": candidates, "validated": by.get("ok", 0),
            "yield": by.get("ok", 0) / candidates if candidates else None,
            "by_verdict": {v: by[v] for v in VERDICTS if by.get(v)},
            "examined": len(examined),
            "seconds_per_examined_candidate": round(sum(examined) / len(examined), 1) if examined else None}


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ALL = re.compile(r"^__all__\s*(?::[^=]*)?[+]?=\s*[\[(]([^\])]*)[\])]", re.M | re.S)
_INIT_IMPORT = re.compile(r"^from\s+\S+\s+import\s+\(?([^)\n]*(?:\n[^)\n]*)*?)\)?\s*$", re.M)


def public_names(test_patch: str, base_sources: dict[str, str]) -> set[str]:
    """Names a reporter may write (pure): every name the test patch's added and context lines use (the API the
    tests call), the public names the changed modules and package ``__init__`` files export at base (``__all__``,
    ``from x import a, b``), and dunder protocol names (``__eq__``: what ``==`` calls)."""
    names: set[str] = set()
    for line in test_patch.splitlines():
        if line[:1] in ("+", " ") and not line.startswith("+++"):
            names |= set(_WORD.findall(line))
    for path, text in base_sources.items():
        for match in _ALL.finditer(text):
            names |= set(re.findall(r"['\"]([A-Za-z_]\w*)['\"]", match.group(1)))
        if path.endswith("__init__.py"):
            for match in _INIT_IMPORT.finditer(text):
                names |= {n for n in _WORD.findall(match.group(1)) if n != "as"}
    dunders = {n for n in _WORD.findall(test_patch + "\n".join(base_sources.values()))
               if n.startswith("__") and n.endswith("__")}
    return {n for n in names | dunders if not n.startswith("_") or n in dunders}
