"""The patch surface policy: what of a change reaches the graded tree, decided path by path.

Pure: it takes git's own listing of the change (``surface.Change``, from ``git diff --raw -z``
over a scratch index the patch was applied to) and says, for every path, what the grader does:

- ``applied``: part of the fix, graded as the agent wrote it;
- ``restored``: a file that decides the verdict rather than the fix (a test file of the task,
  ``conftest.py``, nested pytest configuration, plugin metadata, ``*.pth``, ``sitecustomize``,
  a test package's ``__init__.py``, a new module shadowing the runner or the standard library):
  put back as it is at the base commit, or removed when the base has none;
- ``dropped``: a submodule entry, which no fix needs;
- ``rejected``: a path into ``.git`` or a symlink out of the work tree; the whole patch is then the
  outcome ``patch_rejected``.

Root-level ``pyproject.toml``, ``setup.cfg`` and ``tox.ini`` are kept (fixes change metadata
there) and flagged, unless the patch changes their pytest section: then they are restored too.

A Node pack (``language="node"``, from its test command: ``languages.node_surface.is_node_command``) adds the
Node rules before the Python ones (``languages/node_surface.py``): ``node_modules`` and the package manager's
files, lockfiles, runner, setup and compiler configuration by name, the files the base's runner configuration
loads, test folders, test files, mocks and snapshots are restored; a ``package.json`` is restored whole when
its test-affecting part changes and kept (flagged) otherwise. The rules are the same mechanism: a path put back
to the base commit before the tests run (docs/languages-grading.md).
"""

from __future__ import annotations

import json
import posixpath
import sys
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from evalharness.grading.surface import Change
from evalharness.languages import node_surface
from evalharness.types import Flag

ALWAYS_RESTORED = {"conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "sitecustomize.py",
                   "usercustomize.py"}
ROOT_CONFIG = {"pyproject.toml", "setup.cfg", "tox.ini"}
"""Files that may carry pytest configuration: restored below the root, kept (and neutralised) at the root."""
PLUGIN_METADATA = (".dist-info", ".egg-info", ".egg-link")
RUNNER_MODULES = {"pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "exceptiongroup", "tomli",
                  "colorama", "attr", "attrs", "xdist", "pytest_timeout", "_evalharness"}
SHADOWED = RUNNER_MODULES | set(getattr(sys, "stdlib_module_names", ())) - {"__future__"}
"""Top-level module names a new file must not take in a folder that is first on sys.path."""
TEST_DIR_NAMES = {"test", "tests", "testing"}
COMPILED = (".pyc", ".pyo", ".so", ".pyd", ".dylib", ".dll", ".o", ".a", ".whl", ".egg")
"""Bytecode and binary modules: what runs from them cannot be reviewed in the patch."""
_OTHER_LINE_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""Where ``str.splitlines`` (pytest's ``iniconfig``) breaks a line and a file read line by line does not."""
SYMLINK, GITLINK = "120000", "160000"


@dataclass(frozen=True)
class Action:
    path: str
    change: str
    action: str
    why: str = ""
    raw: bytes = b""
    flag: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "change": self.change, "action": self.action, "why": self.why, "flag": self.flag}


@dataclass
class SurfaceDecision:
    actions: list[Action] = field(default_factory=list)
    rejected: str = ""
    """Non-empty: why the whole patch is refused."""
    flags: set[str] = field(default_factory=set)

    @property
    def reset(self) -> list[Action]:
        """Paths put back to the base commit before the tests run."""
        return [a for a in self.actions if a.action in ("restored", "dropped")]

    @property
    def applied(self) -> list[Action]:
        return [a for a in self.actions if a.action == "applied"]


def blobs_needed(changes: list[Change], *, language: str = "python", base: str = "") -> set[str]:
    """Object names ``decide_surface`` must see: new symlinks' targets, both sides of root configuration; for a
    Node pack also both sides of every ``package.json`` and the base's root runner configuration
    (``<base>:<path>``, which ``git cat-file --batch`` reads; a file the base lacks is simply missing)."""
    ids = set()
    for c in changes:
        if c.new_mode == SYMLINK:
            ids.add(c.new_id)
        if len(c.parts) == 1 and c.display in ROOT_CONFIG:
            ids |= {c.old_id, c.new_id}
        if language == "node" and c.parts[-1] == b"package.json":
            ids |= {c.old_id, c.new_id}
    if language == "node" and base:
        ids |= {f"{base}:{name}" for name in node_surface.ROOT_CONFIGS}
    return {i for i in ids if i and set(i) != {"0"}}


def decide_surface(changes: list[Change], *, test_files: set[str], blobs: dict[str, bytes] | None = None,
                   language: str = "python", base: str = "") -> SurfaceDecision:
    """Decide every path of ``changes``. ``test_files`` are the task's test files plus every file its
    test_patch touches; ``blobs`` holds the contents of the objects ``blobs_needed`` names (called with the same
    ``language`` and ``base``)."""
    blobs = blobs or {}
    test_dirs = {str(PurePosixPath(f).parent) for f in test_files}
    trees = test_trees(test_files)
    named = _named_by_base_config(blobs, base) if language == "node" else None
    out = SurfaceDecision()
    for change in changes:
        try:
            action, why, flag = _decide_one(change, test_files, test_dirs, blobs, named, trees)
        except Exception as e:  # noqa: BLE001 - fail closed: a path the grader cannot decide is never the machine's
            action, why, flag = ("restored", f"the grader could not read this file ({type(e).__name__}): "
                                 "graded as the base commit has it", Flag.TOUCHED_CONFIG.value)
        out.actions.append(Action(change.display, change.status, action, why, change.path, flag))
        if flag:
            out.flags.add(flag)
        if action == "rejected" and not out.rejected:
            out.rejected = f"{change.display}: {why}"
    if out.rejected:
        out.flags.add(Flag.PATCH_REJECTED.value)
    return out


def _named_by_base_config(blobs: dict[str, bytes], base: str) -> frozenset[str]:
    """The files the base commit's root runner configuration names as files it loads."""
    named: set[str] = set()
    for name in node_surface.ROOT_CONFIGS:
        content = blobs.get(f"{base}:{name}")
        if content is not None:
            named |= node_surface.named_by_config(name, content)
    return frozenset(named)


def _decide_node(change: Change, parts: list[str], blobs: dict[str, bytes], named: frozenset[str]
                 ) -> tuple[str, str, str] | None:
    affecting = None
    if parts[-1] == "package.json":
        sides = [None if set(i) == {"0"} else blobs.get(i, b"\0unread") for i in (change.old_id, change.new_id)]
        affecting = node_surface.package_json_changed(*sides)
    return node_surface.decide(parts, change.status, test_affecting_change=affecting, named=named)


def test_trees(test_files, names=TEST_DIR_NAMES) -> set[str]:
    """The folders holding the task's test files that are test folders by name (one of ``names``, by default a
    ``test``, ``tests`` or ``testing`` folder, on the way; never the root): what else lies under them is the tests'
    own (helpers, fixtures, data they compare with)."""
    trees = set()
    for f in test_files:
        folder = PurePosixPath(f).parent
        if str(folder) != "." and any(part in names for part in folder.parts):
            trees.add(str(folder))
    return trees


def in_trees(path: str, trees: set[str]) -> bool:
    """Whether ``path`` lies under one of ``trees`` (``test_trees``)."""
    return any(path.startswith(t + "/") for t in trees)


def _decide_one(change: Change, test_files: set[str], test_dirs: set[str], blobs: dict[str, bytes],
                named: frozenset[str] | None = None, trees: set[str] = frozenset()) -> tuple[str, str, str]:
    parts = [p.decode("utf-8", "surrogateescape") for p in change.parts]
    if any(p.lower() in (".git", "git~1") or p.lower().startswith(".git/") for p in parts):
        return "rejected", "a path inside .git: no fix writes the repository's own data", ""
    path = "/".join(parts)
    name, folder = parts[-1], "/".join(parts[:-1]) or "."
    if change.status != "D" and (name.lower().endswith(COMPILED) or "__pycache__" in parts[:-1]
                                 or ".so." in name.lower()):
        return "restored", "bytecode or a compiled module: code that cannot be reviewed in the patch", \
            Flag.COMPILED_ARTEFACT.value
    if path in test_files:
        return "restored", "a test file of the task: graded as the task has it", Flag.TOUCHED_TESTS.value
    if named is not None and GITLINK not in (change.new_mode,):
        node = _decide_node(change, parts, blobs, named)
        if node is not None:
            return node
    if change.status != "A" and named is None and in_trees(path, trees) \
            and not (name.lower().endswith(COMPILED) or "__pycache__" in parts[:-1]):
        return "restored", "a file of the task's test folders (a helper, fixture or data file its tests read): " \
            "graded as the task has it", Flag.TOUCHED_TESTS.value
    if name == "__init__.py" and (folder in test_dirs or any(p in TEST_DIR_NAMES for p in parts[:-1])):
        return "restored", "a test package's __init__.py runs before every test", Flag.TOUCHED_TESTS.value
    if name in ALWAYS_RESTORED:
        return "restored", "test-runner configuration or start-up hook", Flag.TOUCHED_CONFIG.value
    if name in ROOT_CONFIG:
        if folder != "." or _pytest_config_changed(name, change, blobs):
            return "restored", "pytest reads this file as configuration", Flag.TOUCHED_CONFIG.value
        return "applied", "kept: pytest's section of it is unchanged", Flag.TOUCHED_CONFIG.value
    if name in (".gitattributes", ".gitmodules"):
        return "applied", "git metadata: graded with a git that ignores it, and flagged", Flag.TOUCHED_CONFIG.value
    if any(p.endswith(PLUGIN_METADATA) for p in parts) or name.endswith(".pth"):
        return "restored", "package metadata or .pth file: plugin entry points and start-up code", \
            Flag.TOUCHED_CONFIG.value
    if change.status == "A" and _shadows(parts, test_dirs):
        return "restored", "a new module named like the test runner or the standard library", \
            Flag.TOUCHED_CONFIG.value
    if change.status == "A" and _new_module_beside_tests(parts, test_dirs):
        return "restored", "a new module in a folder of the task's tests, which pytest puts first on sys.path: " \
            "it would be imported before the code under test", Flag.TOUCHED_TESTS.value
    if GITLINK in (change.new_mode,):
        return "dropped", "a submodule entry: nested repositories are not graded", ""
    if change.new_mode == SYMLINK and _escapes(change.path, blobs.get(change.new_id, b"/")):
        return "rejected", "a symlink that points outside the work tree: no fix needs one", ""
    return "applied", "", ""


def _pytest_config_changed(name: str, change: Change, blobs: dict[str, bytes]) -> bool:
    """Whether pytest's section of a root pyproject.toml / setup.cfg / tox.ini differs between the
    base and the patch (a side that cannot be read or parsed counts as a change)."""
    try:
        old = pytest_section(name, blobs[change.old_id]) if change.status != "A" else None
        new = pytest_section(name, blobs[change.new_id]) if change.status != "D" else None
    except (KeyError, ValueError):
        return True
    return old != new


def pytest_section(name: str, content: bytes) -> str | None:
    """pytest's configuration in a pyproject.toml, setup.cfg or tox.ini, in a canonical form
    (None where the file has none). ValueError when the file cannot be parsed, or when Python's
    ``configparser`` and pytest's own parser (``iniconfig``) read it differently: a file whose
    lines the two split differently (a form feed, a lone carriage return, U+2028 ...) is
    configuration the grader cannot vouch for."""
    text = content.decode("utf-8", "strict") if content else ""
    if name != "pyproject.toml":
        if any(c in text for c in _OTHER_LINE_BREAKS) or "\r" in text.replace("\r\n", ""):
            raise ValueError("a line break that pytest's parser and Python's split differently")
        seen = _iniconfig_section(name, text)
        mine = _configparser_section(name, text)
        if seen != mine:
            raise ValueError("pytest's parser and Python's read a different pytest section")
        return mine
    if name == "pyproject.toml":
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(str(e)) from e
        section = data.get("tool", {}).get("pytest")
        return None if section is None else json.dumps(section, sort_keys=True, default=str)
    return None  # pragma: no cover - every kind is handled above


def _configparser_section(name: str, text: str) -> str | None:
    import configparser

    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error as e:
        raise ValueError(str(e)) from e
    wanted = "tool:pytest" if name == "setup.cfg" else "pytest"
    if not parser.has_section(wanted):
        return None
    return json.dumps(sorted((k, " ".join(v.split())) for k, v in parser.items(wanted)))


def _iniconfig_section(name: str, text: str) -> str | None:
    """The pytest section as pytest itself reads it (``iniconfig``), in ``_configparser_section``'s form."""
    import iniconfig

    try:
        config = iniconfig.IniConfig(name, data=text)
    except iniconfig.ParseError as e:
        raise ValueError(str(e)) from e
    wanted = "tool:pytest" if name == "setup.cfg" else "pytest"
    if wanted not in config:
        return None
    return json.dumps(sorted((k.lower(), " ".join(v.split())) for k, v in config[wanted].items()))


def _shadows(parts: list[str], test_dirs: set[str]) -> bool:
    """A new top-level module in a folder that is first on sys.path when tests run: the root
    (``python -m pytest`` semantics) or a test folder (pytest's rootdir insertion)."""
    folder, name = "/".join(parts[:-1]) or ".", parts[-1]
    if folder == "." or folder in test_dirs:
        return name.endswith((".py", ".pyc", ".so")) and name.split(".")[0] in SHADOWED
    parent = "/".join(parts[:-2]) or "."
    return (parent == "." or parent in test_dirs) and parts[-2] in SHADOWED


def _new_module_beside_tests(parts: list[str], test_dirs: set[str]) -> bool:
    """A new importable module (``name.py`` or ``name/__init__.py``) in a folder holding the task's test files,
    other than a test module itself: any such name shadows what the tests import, the package under test
    included."""
    name = parts[-1]
    if name.endswith(".py") and "/".join(parts[:-1] or ["."]) in test_dirs:
        return not name.startswith("test") and name != "__init__.py"
    return name == "__init__.py" and len(parts) >= 2 and ("/".join(parts[:-2]) or ".") in test_dirs \
        and not parts[-2].startswith("test")


def _escapes(path: bytes, target: bytes) -> bool:
    """Whether a symlink at ``path`` with ``target`` resolves outside the work tree (lexically)."""
    if target.startswith(b"/"):
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    return joined == b".." or joined.startswith(b"../")
