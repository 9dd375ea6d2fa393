"""What decides a Node (JavaScript/TypeScript) test run besides the code under test: the grader's surface knowledge.

Pure tables and functions, read by the grader's surface policy (``grading/policy.py``, ``language="node"``):

- ``is_node_command``: whether a pack's test command runs a Node program (npm, npx, node, jest, vitest, mocha,
  tap, ava, ...), which makes the pack's surface a Node one;
- ``decide``: what the grader does with one path a patch touches: restore it to the base commit (or take it out
  of the graded tree when the base has none), with a reason and a flag, or ``None`` when Node knowledge has
  nothing to say (the path is then decided like any other);
- ``package_json_test_part``: the part of a ``package.json`` that changes what tests run, everything but the
  keys a fix may change (``FIX_KEYS``, an allow-list: an unknown key counts as test-affecting);
- ``named_by_config``: the files a runner configuration names as files it loads (setup files, environments,
  reporters, transformers, resolvers), read from the configuration as the base commit has it.

The choice for ``package.json``: the grader restores whole files (an index entry from the base commit), never a
merged blob it wrote itself, so a ``package.json`` whose test-affecting part changed is restored whole, the
agent's dependency edits with it; one whose changes are all in ``FIX_KEYS`` is kept (and flagged). Dependencies
are installed when the image is built, never at grading, so a kept dependency edit changes no installed module.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from pathlib import PurePosixPath

from evalharness.types import Flag

_CONFIG, _TESTS, _COMPILED = Flag.TOUCHED_CONFIG.value, Flag.TOUCHED_TESTS.value, Flag.COMPILED_ARTEFACT.value

NODE_PROGRAMS = frozenset({"node", "nodejs", "npm", "npx", "yarn", "pnpm", "corepack", "jest", "vitest", "mocha",
                           "tap", "ava", "c8", "nyc", "ts-node", "tsx", "jasmine", "karma", "playwright"})
"""Programs whose test command makes a pack a Node pack (by the program's file name)."""
_WRAPPERS = frozenset({"env", "nice", "timeout", "xvfb-run", "exec", "command", "time"})
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "{", "}", "\n"})

LOCKFILES = frozenset({"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
                       "bun.lock"})
PACKAGE_MANAGER_FILES = frozenset({".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", ".pnp.cjs", ".pnp.js",
                                   ".pnp.loader.mjs", "pnpm-workspace.yaml", ".node-options"})
"""Files the package manager reads when it runs a script (``.npmrc``'s ``node-options`` reach every process)."""
MANAGER_DIRS = frozenset({"node_modules", ".yarn", ".pnpm-store", "bower_components"})
"""Folders of installed code or the package manager's own: nothing of a fix belongs there."""
RUNNER_CONFIG_PREFIXES = ("jest.", "jest-", "vitest.", "vitest-", "vite.", "mocha.", ".mocharc", "ava.", ".taprc",
                          "tap.", "karma.", "jasmine.", "babel.", ".babelrc", "tsconfig", "jsconfig", ".swcrc",
                          "c8.", ".c8rc", ".nycrc", "nyc.", "playwright.", "cypress.", "setuptests.", "setup-tests.",
                          "setup_tests.", "test-setup.", "testsetup.", "setupjest.", "setup-jest.", "test-utils.",
                          "testutils.")
"""File names (lower-cased prefixes) of test-runner configuration, setup files, and the compilers' configuration
(babel, tsconfig, swc) that decides how test files are turned into the code the runner runs."""
TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "__mocks__", "__snapshots__",
                       "tap-snapshots", "__fixtures__", "__test__"})
"""Folders of tests, mocks (jest uses a root ``__mocks__`` for a dependency without being asked) and snapshots."""
_TEST_FILE = re.compile(r"[._-](?:test|spec)+s?\.[cm]?[jt]sx?$|^(?:test|spec)+s?(?:[._-][^/]*)?\.[cm]?[jt]sx?$", re.I)
"""Test files by name: jest's, vitest's and mocha's ``*.test.*`` / ``*.spec.*`` (jest's default ``testMatch``
repeats the word: ``*.spectest.*``), node:test's ``*-test.*``, ``*_test.*``, ``test-*.*`` and ``test.*``."""
SNAPSHOT_SUFFIXES = (".snap", ".snap.js", ".snap.cjs")
COMPILED = (".node", ".wasm")
"""Native addons and WebAssembly: code that cannot be reviewed in the patch."""

FIX_KEYS = frozenset({
    "name", "version", "description", "keywords", "homepage", "bugs", "license", "licenses", "author",
    "contributors", "maintainers", "funding", "repository", "main", "module", "browser", "exports", "types",
    "typings", "typesVersions", "files", "bin", "man", "directories", "sideEffects", "engines", "os", "cpu",
    "private", "publishConfig", "dependencies", "devDependencies", "peerDependencies", "peerDependenciesMeta",
    "optionalDependencies", "bundleDependencies", "bundledDependencies", "overrides", "resolutions"})
"""``package.json`` keys a fix may change: metadata, where the package's code is, and dependency ranges (not
installed at grading). Everything else (``scripts``, ``type``, ``imports``, ``jest``, ``mocha``, ``ava``, ``tap``,
``c8``, ``nyc``, ``babel``, ``jest-junit``, ``packageManager``, ``workspaces``, keys no one knows yet) is the test
run's."""

ROOT_CONFIGS: tuple[str, ...] = ("package.json",) + tuple(
    f"{stem}.{ext}" for stem in ("jest.config", "vitest.config", "vite.config", "ava.config", "babel.config",
                                 "karma.conf", "playwright.config")
    for ext in ("js", "cjs", "mjs", "ts", "cts", "mts", "json")) + tuple(
    f".mocharc{ext}" for ext in ("", ".js", ".cjs", ".mjs", ".json", ".jsonc", ".yml", ".yaml")) + (
    ".taprc", ".babelrc", ".babelrc.js", ".babelrc.cjs", ".babelrc.json", ".c8rc", ".c8rc.json", ".nycrc",
    ".nycrc.json", "tsconfig.json", "test/mocha.opts")
"""Configuration files at the root whose base version may name setup files (``named_by_config``)."""

_LOADED_KEYS = re.compile(
    r"\b(setupFiles|setupFilesAfterEnv|globalSetup|globalTeardown|testEnvironment|environment|reporters?|"
    r"transform|resolver|snapshotResolver|testSequencer|testRunner|runner|watchPlugins|require|file|"
    r"nodeArguments|node-option|import|loader|preset|setupFile|prettierPath|dependencyExtractor|"
    r"haste|moduleLoader|snapshotSerializers|extends|plugins|presets)\b")
_STRING = re.compile(r"""(["'`])((?:\\.|(?!\1)[^\\\n])*)\1""")
_CODE_SUFFIXES = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".jsx", ".tsx", ".json")


def is_node_command(test_command: str) -> bool:
    """Whether any command of ``test_command`` (a shell line) runs a Node program: its program's file name, after
    variable assignments and wrappers (``env -u CI``, ``timeout -s KILL 60``), is one of ``NODE_PROGRAMS``;
    ``sh -c '...'`` (also ``-ec``, ``-lc``) is looked into. A line the shell's rules cannot split is not one."""
    return any(posixpath.basename(p) in NODE_PROGRAMS for p in programs(test_command))


def is_python_command(test_command: str) -> bool:
    """Whether any command of ``test_command`` runs Python's test machinery (``python``, ``pytest``, ``tox``, a
    ``.py`` script such as Django's ``tests/runtests.py``)."""
    return any(re.match(r"^(python[\d.]*|pytest|py\.test|tox|nox|coverage)$", posixpath.basename(p))
               or p.endswith(".py") for p in programs(test_command))


def grading_language(test_command: str, base_has_package_json: bool) -> str:
    """Which surface rules grade a pack: "node" when its command runs a Node program, or when the base tree has a
    root ``package.json`` and the command runs no Python (``make test``, ``bash ci.sh``: a command the detector does
    not recognise never switches the Node rules off); "python" otherwise (Django's package.json changes nothing)."""
    if is_node_command(test_command):
        return "node"
    return "node" if base_has_package_json and not is_python_command(test_command) else "python"


def programs(test_command: str) -> list[str]:
    """The program of each command of a shell line (looking into ``sh -c``); [] where the shell cannot split it."""
    try:
        lexer = shlex.shlex(test_command, posix=True, punctuation_chars=";&|(){}")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return []
    found: list[str] = []
    command: list[str] = []
    for token in [*tokens, ";"]:
        if token in _SEPARATORS or set(token) <= set(";&|(){}"):
            found += _program(command)
            command = []
        else:
            command.append(token)
    return found


_OPTION_VALUES = {"env": {"-u", "--unset", "-C", "--chdir", "-S"},
                  "timeout": {"-s", "--signal", "-k", "--kill-after"}, "nice": {"-n", "--adjustment"}}
"""Wrapper options that take the next word as their value (that word is never the program)."""


def _program(words: list[str]) -> list[str]:
    i, wrapper = 0, ""
    while i < len(words):
        word = words[i]
        name = posixpath.basename(word)
        if word in _OPTION_VALUES.get(wrapper, ()):
            i += 2
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word) or word.startswith("-") or re.match(r"^\d+[smhd]?$", word):
            i += 1
            continue
        if name in _WRAPPERS:
            wrapper, i = name, i + 1
            continue
        if name in ("sh", "bash", "dash", "zsh"):
            at = next((j for j in range(i + 1, len(words)) if re.match(r"^-[a-z]*c[a-z]*$", words[j])), None)
            if at is not None:
                return programs(words[at + 1]) if at + 1 < len(words) else []
        return [word]
    return []


def decide(parts: list[str], status: str, *, test_affecting_change: bool | None = None,
           named: frozenset[str] = frozenset()) -> tuple[str, str, str] | None:
    """``(action, why, flag)`` for one path (its ``/``-separated ``parts``, git's ``status`` A/M/D/T), or None.

    ``test_affecting_change`` is ``package_json_changed``'s answer for a ``package.json`` (None: not one);
    ``named`` are the paths the base's runner configuration names (``named_by_config``)."""
    name, lower = parts[-1], parts[-1].lower()
    path = "/".join(parts)
    if any(p in MANAGER_DIRS for p in parts):  # the last part too: a symlink named node_modules
        return "restored", "installed packages or the package manager's own folder: modules are installed when " \
            "the image is built, never by a fix", _CONFIG
    if status != "D" and lower.endswith(COMPILED):
        return "restored", "a native addon or WebAssembly module: code that cannot be reviewed in the patch", \
            _COMPILED
    if name in LOCKFILES:
        return "restored", "a lockfile: dependencies are installed when the image is built, from the base's", \
            _CONFIG
    if name in PACKAGE_MANAGER_FILES:
        return "restored", "package-manager configuration, read when a script runs (node-options, hooks)", \
            _CONFIG
    if _is_named(path, named):
        return "restored", "a file the test runner's configuration loads (setup, environment, reporter, " \
            "transform)", _CONFIG
    if lower.startswith(RUNNER_CONFIG_PREFIXES):
        return "restored", "test-runner, setup or compiler configuration: it decides what the tests run", \
            _CONFIG
    if name == "package.json" and test_affecting_change is not None:
        if test_affecting_change:
            return "restored", "package.json changes keys the test run reads (scripts, type, imports, the " \
                "runners' sections, or keys outside the fix keys): restored whole, dependency edits included", \
                _CONFIG
        return "applied", "kept: only metadata, entry points or dependency ranges changed (not installed at " \
            "grading)", _CONFIG
    if lower.endswith(SNAPSHOT_SUFFIXES):
        return "restored", "a test snapshot: graded against the task's", _TESTS
    if any(p in TEST_DIRS for p in parts[:-1]) or is_test_file_name(name):
        return "restored", "a test file, test helper, mock or snapshot: graded as the task has it", _TESTS
    return None


def is_test_file_name(name: str) -> bool:
    """A JavaScript/TypeScript test file by its name alone (``_TEST_FILE``)."""
    return bool(_TEST_FILE.search(name))


def _is_named(path: str, named: frozenset[str]) -> bool:
    if not named:
        return False
    stem = path.rsplit(".", 1)[0] if "." in PurePosixPath(path).name else path
    return path in named or stem in named or any(path == f"{n}/index{s}" for n in named for s in _CODE_SUFFIXES)


def package_json_test_part(content: bytes | None) -> str | None:
    """The test-affecting part of a ``package.json`` (every key but ``FIX_KEYS``) as canonical JSON; None for no
    file. ValueError for a file that is not UTF-8, not one JSON object, or names a key twice (JSON parsers
    disagree on which one wins): configuration the grader cannot vouch for."""
    if content is None:
        return None
    try:
        data = json.loads(content.decode("utf-8", "strict"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"package.json cannot be read as JSON: {e}") from e
    if not isinstance(data, dict):
        raise ValueError("package.json is not a JSON object")
    return json.dumps({k: v for k, v in data.items() if k not in FIX_KEYS}, sort_keys=True)


def package_json_changed(old: bytes | None, new: bytes | None) -> bool:
    """Whether the test-affecting part differs between two sides (None: the side has no file, so adding or
    deleting a ``package.json`` is a change: it moves the boundary where Node looks up ``type`` and ``imports``);
    a side that cannot be read counts as a change."""
    try:
        return package_json_test_part(old) != package_json_test_part(new)
    except ValueError:
        return True


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise json.JSONDecodeError(f"a key named twice: {sorted(k for k in keys if keys.count(k) > 1)[0]!r}", "", 0)
    return dict(pairs)


def named_by_config(config_path: str, content: bytes) -> frozenset[str]:
    """Paths (relative to the root, as written: an extension may be missing) that a runner configuration at
    ``config_path`` names as files it loads: the values of its loading keys (``setupFilesAfterEnv``,
    ``globalSetup``, ``testEnvironment``, ``reporters``, ``transform``, ``require`` ...) that are relative paths
    (``./x``, ``../x``, ``<rootDir>/x``, or a path with a JavaScript/TypeScript suffix). JSON files (``package.json``:
    its test-affecting keys only) are walked as data; other files are read as text: a string, array or object
    after a loading key, and on a YAML or ``mocha.opts`` line with one, bare ``./`` paths. Over-reading restores
    a file a fix might need; under-reading leaves a setup file to the other rules (test folders, setup names)."""
    text = content.decode("utf-8", "replace")
    name = PurePosixPath(config_path).name
    literals: list[str] = []
    try:
        if name == "package.json":
            literals = _json_loaded_strings(json.loads(package_json_test_part(content) or "{}"))
        elif name.endswith(".json") or name in (".babelrc", ".c8rc", ".nycrc", ".taprc"):
            literals = _json_loaded_strings(json.loads(text))
    except (ValueError, json.JSONDecodeError):
        literals = []
    if not literals:
        literals = _text_loaded_strings(text)
    folder = "" if name == "mocha.opts" else posixpath.dirname(config_path)  # mocha.opts: relative to the root
    return frozenset(t for t in (_relative_target(v, folder) for v in literals) if t)


def _json_loaded_strings(data: object) -> list[str]:
    found: list[str] = []

    def walk(value: object, key: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k if _LOADED_KEYS.fullmatch(k) else key)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and key:
            found.append(value)
    walk(data)
    return found


_KEY_VALUE = re.compile(_LOADED_KEYS.pattern + r"""['"`]?\s*[:=]\s*""")
_BARE = re.compile(r"""(?<![\w'"`./])(\.\.?/[^\s'"`,\]]+)""")


def _text_loaded_strings(text: str) -> list[str]:
    """String literals of the value after each loading key (a string, or a bracketed array or object, brackets
    counted outside strings); bare ``./`` paths on a line that names a loading key (YAML, ``mocha.opts``)."""
    found: list[str] = []
    for match in _KEY_VALUE.finditer(text):
        found += [m.group(2) for m in _STRING.finditer(_value_span(text, match.end()))]
    listing = False
    for line in text.splitlines():
        if _LOADED_KEYS.search(line) or (listing and line.lstrip().startswith("-")):
            found += _BARE.findall(line)
            listing = listing or line.rstrip().endswith(":")
        else:
            listing = False
    return found


def _value_span(text: str, start: int) -> str:
    if start >= len(text) or text[start] not in "[{'\"`":
        return ""
    if text[start] != "[" and text[start] != "{":
        match = _STRING.match(text, start)
        return match.group(0) if match else ""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c in "'\"`":
            match = _STRING.match(text, i)
            i = match.end() if match else i + 1
            continue
        depth += (c in "[{") - (c in "]}")
        i += 1
        if depth == 0:
            break
    return text[start:i]


def _relative_target(literal: str, folder: str) -> str:
    value = literal.strip()
    for prefix in ("<rootDir>/", "<rootdir>/"):
        if value.startswith(prefix):
            return posixpath.normpath(value[len(prefix):])
    if value.startswith(("./", "../")) or (value.endswith(_CODE_SUFFIXES) and "/" in value
                                           and not value.startswith(("/", "@", "http"))):
        joined = posixpath.normpath(posixpath.join(folder, value))
        return "" if joined.startswith("..") else joined
    return ""
