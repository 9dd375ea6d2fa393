"""The surface policy of a Node pack, path by path, without Docker (issue 26): what of a patch reaches the graded
tree when the tests run under jest, vitest, mocha, tap or ava.

Every rule is checked where it decides (``languages/node_surface.py`` through ``grading/policy.decide_surface``):
a path a rule restores must be restored with its flag, and the same path must be applied in a Python pack (the
Python policy is unchanged), so a rule that stops firing, or fires for every pack, fails here.
"""

from __future__ import annotations

import json

import pytest

from evalharness.grading.policy import blobs_needed, decide_surface
from evalharness.grading.surface import Change
from evalharness.languages.node_surface import (ROOT_CONFIGS, grading_language, is_node_command, named_by_config,
                                                package_json_changed, package_json_test_part)

BASE = "c" * 40
Z = "0" * 40
TESTS = {"test/calc.test.js"}


def change(path: str, status="M", old_id="a" * 40, new_id="b" * 40, new_mode="100644"):
    if status == "A":
        return Change(path.encode(), "A", "000000", new_mode, Z, new_id)
    if status == "D":
        return Change(path.encode(), "D", "100644", "000000", old_id, Z)
    return Change(path.encode(), status, "100644", new_mode, old_id, new_id)


def decide(path: str, language="node", blobs=None, **kw):
    decision = decide_surface([change(path, **kw)], test_files=TESTS, blobs=blobs, language=language, base=BASE)
    return decision.actions[0]


@pytest.mark.parametrize("command", [
    "npx jest", "npm test", "npm run test:unit", "node --test", "yarn jest --ci", "pnpm vitest run",
    "JEST_JUNIT_OUTPUT_FILE={junit_xml} node_modules/.bin/jest --ci", "env CI=1 npx mocha", "timeout 600 npx tap",
    "cd packages/core && npx ava", "sh -c 'npx vitest run'", "./node_modules/.bin/mocha test"])
def test_a_node_test_command_is_recognised(command):
    assert is_node_command(command)


@pytest.mark.parametrize("command", [
    "python -m pytest -rA {test_files}", "pytest tests", "tox -e py311", "make test", "./runtests.py",
    "bin/test -C", "sh -c 'python -m pytest'", "echo 'npx jest'", "unbalanced 'quote"])
def test_other_test_commands_are_not_node(command):
    assert not is_node_command(command)


@pytest.mark.parametrize("path,flag", [
    ("node_modules/jest/bin/jest.js", "touched_config"),
    ("node_modules/@jest/expect/node_modules/expect/index.js", "touched_config"),
    ("src/node_modules/lodash/index.js", "touched_config"), ("packages/x/node_modules", "touched_config"), (".yarn/releases/yarn.cjs", "touched_config"),
    ("package-lock.json", "touched_config"), ("yarn.lock", "touched_config"), ("pnpm-lock.yaml", "touched_config"),
    ("npm-shrinkwrap.json", "touched_config"), (".npmrc", "touched_config"), (".yarnrc.yml", "touched_config"),
    (".pnp.cjs", "touched_config"),
    ("jest.config.js", "touched_config"), ("jest.config.ts", "touched_config"), ("jest.config.mjs", "touched_config"),
    ("packages/a/jest.config.json", "touched_config"), ("jest.setup.js", "touched_config"),
    ("jest-setup.ts", "touched_config"), ("vitest.config.mts", "touched_config"), ("vite.config.ts", "touched_config"),
    ("vitest.workspace.ts", "touched_config"), (".mocharc.yml", "touched_config"), (".mocharc.js", "touched_config"),
    ("ava.config.js", "touched_config"), (".taprc", "touched_config"), ("karma.conf.js", "touched_config"),
    (".babelrc", "touched_config"), ("src/.babelrc.js", "touched_config"), ("babel.config.cjs", "touched_config"),
    ("tsconfig.json", "touched_config"), ("tsconfig.test.json", "touched_config"), (".swcrc", "touched_config"),
    ("src/setupTests.ts", "touched_config"), ("test-setup.js", "touched_config"),
    ("test/helpers.js", "touched_tests"), ("test/mocha.opts", "touched_config"),
    ("tests/fixtures/a.json", "touched_tests"),
    ("src/__tests__/calc.js", "touched_tests"), ("__mocks__/lodash.js", "touched_tests"),
    ("src/__mocks__/fs.js", "touched_tests"), ("src/calc.test.ts", "touched_tests"),
    ("src/calc.spec.jsx", "touched_tests"), ("lib/calc-test.mjs", "touched_tests"),
    ("src/calc_test.cjs", "touched_tests"),
    ("src/test-calc.js", "touched_tests"),
    ("src/test.mjs", "touched_tests"), ("src/__snapshots__/calc.test.js.snap", "touched_tests"),
    ("tap-snapshots/test/a.js.test.cjs", "touched_tests"), ("src/x.snap", "touched_tests"),
    ("build/Release/addon.node", "compiled_artefact"), ("src/fast.wasm", "compiled_artefact")])
def test_what_decides_a_node_test_run_is_restored(path, flag):
    for status in ("A", "M", "D"):
        if flag == "compiled_artefact" and status == "D":
            continue
        got = decide(path, status=status)
        assert (got.action, got.flag) == ("restored", flag), (status, got)
        assert got.why
    # a Python pack knows none of these names (a new file: a changed one already in the task's test folder,
    # test/, is the tests' in a Python pack too)
    assert decide(path, language="python", status="A").action == "applied" or path.endswith((".so", ".pth"))


@pytest.mark.parametrize("path", ["src/calc.js", "lib/index.ts", "src/components/Button.tsx", "README.md",
                                  "src/testing-library-helpers.md", "docs/setup.md", "src/contest.js",
                                  "src/latest.js", "index.d.ts", ".gitignore", "src/attest.ts"])
def test_the_code_under_test_is_applied(path):
    got = decide(path, status="M")
    assert got.action == "applied" and got.flag == "", got


def pkg(**keys) -> bytes:
    return json.dumps({"name": "x", "version": "1.0.0", **keys}, indent=2).encode()


def decide_pkg(old: bytes | None, new: bytes | None, language="node", path="package.json"):
    status = "A" if old is None else "D" if new is None else "M"
    blobs = {k: v for k, v in (("a" * 40, old), ("b" * 40, new)) if v is not None}
    return decide(path, language=language, blobs=blobs, status=status)


@pytest.mark.parametrize("new", [
    pkg(dependencies={"left-pad": "^1.3.0"}), pkg(devDependencies={"jest": "29.7.0"}), pkg(main="lib/index.js"),
    pkg(exports={".": "./lib/index.js"}), pkg(description="fixed"), pkg(files=["lib"], engines={"node": ">=18"})])
def test_a_package_json_changing_only_fix_keys_is_kept_and_flagged(new):
    got = decide_pkg(pkg(), new)
    assert (got.action, got.flag) == ("applied", "touched_config"), got


@pytest.mark.parametrize("new", [
    pkg(jest={"testPathIgnorePatterns": ["/test/"]}), pkg(jest={"setupFilesAfterEnv": ["./lib/x.js"]}),
    pkg(mocha={"require": "./x.js"}), pkg(ava={"require": ["./x.js"]}), pkg(tap={"node-arg": ["-r", "./x"]}),
    pkg(scripts={"test": "exit 0"}), pkg(type="module"), pkg(imports={"#calc": "./fake.js"}),
    pkg(babel={"plugins": ["./strip-asserts.js"]}), pkg(**{"jest-junit": {"classNameTemplate": "x"}}),
    pkg(c8={"all": True}), pkg(workspaces=["packages/*"]), pkg(packageManager="yarn@4.0.0"),
    pkg(somethingNew={"a": 1}),
    b'{"name": "x", "version": "1.0.0", "jest": {}, "jest": {"testMatch": ["nothing"]}}',
    b'\xef\xbb\xbf{"name": "x", "version": "1.0.0"}', b'["not", "an", "object"]', b'{"name": "x",',
    b'{"name": "x", "version": "\xff"}'])
def test_a_package_json_changing_what_tests_run_is_restored_whole(new):
    got = decide_pkg(pkg(), new)
    assert (got.action, got.flag) == ("restored", "touched_config"), got


def test_package_json_edits_are_decided_by_key_on_every_side():
    assert decide_pkg(pkg(jest={"verbose": True}), pkg(jest={"verbose": True}, version="1.0.1")).action == "applied"
    assert decide_pkg(None, pkg(type="module"), path="test/package.json").action == "restored"
    assert decide_pkg(None, pkg(type="module"), path="src/sub/package.json").action == "restored"
    # a package.json added or deleted moves the boundary where Node looks up "type" and "imports"
    assert decide_pkg(None, pkg(), path="src/sub/package.json").action == "restored"
    assert decide_pkg(pkg(), None).action == "restored"
    unread = decide("package.json", blobs={}, status="M")  # a side the grader could not read counts as a change
    assert unread.action == "restored"
    assert decide_pkg(pkg(), pkg(scripts={"test": "exit 0"}), language="python").action == "applied"


def test_package_json_test_part_is_everything_but_the_fix_keys():
    assert json.loads(package_json_test_part(pkg(dependencies={"a": "1"}, jest={"x": 1}, scripts={}))) == {
        "jest": {"x": 1}, "scripts": {}}
    assert package_json_test_part(None) is None
    assert package_json_changed(pkg(), pkg(keywords=["a"])) is False
    assert package_json_changed(pkg(), pkg(ava={})) is True
    assert package_json_changed(b"{", b"{") is True


def test_blobs_needed_reads_package_json_sides_and_the_base_runner_configuration():
    changes = [change("package.json"), change("src/package.json", status="A", new_id="d" * 40), change("src/a.js")]
    ids = blobs_needed(changes, language="node", base=BASE)
    assert {"a" * 40, "b" * 40, "d" * 40} <= ids and Z not in ids
    assert {f"{BASE}:{name}" for name in ROOT_CONFIGS} <= ids
    assert f"{BASE}:package.json" in ids and f"{BASE}:jest.config.js" in ids and f"{BASE}:.mocharc.yml" in ids
    assert blobs_needed(changes) == set()  # a Python pack reads none of them


JEST_CONFIG = b"""module.exports = {
  testEnvironment: '<rootDir>/config/env.js',
  setupFilesAfterEnv: [
    '<rootDir>/config/setup',
    './support/matchers.ts',
  ],
  roots: ['<rootDir>/src'],
  transform: { '^.+\\\\.js$': './tools/transform.js' },
  moduleNameMapper: { '^@/(.*)$': '<rootDir>/src/$1' },
};
"""


def test_files_the_base_configuration_loads_are_restored():
    blobs = {f"{BASE}:jest.config.js": JEST_CONFIG,
             f"{BASE}:package.json": pkg(mocha={"require": ["./mocha/hooks.js"]}, main="./src/index.js")}
    for path in ("config/env.js", "config/setup.js", "config/setup.ts", "support/matchers.ts", "tools/transform.js",
                 "mocha/hooks.js"):
        got = decide(path, blobs=blobs, status="A")
        assert (got.action, got.flag) == ("restored", "touched_config"), (path, got)
        assert decide(path, blobs={}, status="A").action == "applied", path
    for path in ("src/index.js", "src/calc.js", "src/a/b.js", "config/other.js"):
        assert decide(path, blobs=blobs, status="M").action == "applied", path


@pytest.mark.parametrize("name,content,expected", [
    ("jest.config.js", JEST_CONFIG, {"config/env.js", "config/setup", "support/matchers.ts", "tools/transform.js"}),
    ("jest.config.ts", b"export default {globalSetup: './gs.ts', globalTeardown: \"./gt.ts\"}", {"gs.ts", "gt.ts"}),
    ("vitest.config.ts", b"export default defineConfig({ test: { setupFiles: ['./vitest.setup.ts'],\n"
                         b"environment: 'jsdom' } })", {"vitest.setup.ts"}),
    ("package.json", pkg(jest={"setupFiles": ["<rootDir>/a.js"], "roots": ["<rootDir>/src"]}, main="./b.js"), {"a.js"}),
    ("package.json", pkg(ava={"require": ["./ava/setup.js"]}, mocha={"file": "test/setup/x.js"}),
     {"ava/setup.js", "test/setup/x.js"}),
    (".mocharc.yml", b"require:\n  - ./hooks/a.js\n  - ./hooks/b.js\nspec: ./src/calc.spec.js\nreporter: dot\n",
     {"hooks/a.js", "hooks/b.js"}),
    (".mocharc.json", b'{"require": "./r.js", "spec": ["./s.js"]}', {"r.js"}),
    ("test/mocha.opts", b"--require ./support/env\n--recursive\n", {"support/env"}),
    (".babelrc", b'{"plugins": ["./babel/strip.js", "@babel/plugin-x"]}', {"babel/strip.js"}),
    ("jest.config.js", b"module.exports = {setupFiles: ['../outside.js', '/abs/x.js', 'jest-plugin']}", set())])
def test_named_by_config_reads_only_the_loading_keys(name, content, expected):
    assert named_by_config(name, content) == expected


@pytest.mark.parametrize("content", [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000],
                         ids=["deep-array", "deep-object"])
def test_a_package_json_the_grader_cannot_parse_is_restored_never_the_machines(content):
    """A package.json nested past the parser's recursion limit once escaped as RecursionError: the trial became
    infra_error, out of the rate, and a resume re-ran the agent. Any path the grader cannot decide is restored."""
    got = decide_pkg(pkg(), content, path="docs/example/package.json")
    assert (got.action, got.flag) == ("restored", "touched_config"), got


def test_a_python_packs_pyproject_the_grader_cannot_parse_is_restored():
    """The same for a Python pack: tomllib's RecursionError on a 5,000-deep array is the agent's file, restored."""
    got = decide_pkg(b"[project]\nname = 'x'\n", b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", language="python",
                     path="pyproject.toml")
    assert (got.action, got.flag) == ("restored", "touched_config"), got


@pytest.mark.parametrize("command, has_package_json, expected", [
    ("npx jest --ci", False, "node"), ("bash -lc 'npx jest'", False, "node"), ("sh -ec 'npm test'", False, "node"),
    ("timeout -s KILL 600 npx jest", False, "node"), ("env -u CI jest", False, "node"),
    ("make test", True, "node"), ("bash run_tests.sh", True, "node"), ("make test", False, "python"),
    ("python -m pytest -x tests", True, "python"), ("./tests/runtests.py --parallel 1 queries", True, "python"),
    ("tox -e py311", True, "python"), ("pytest", False, "python")])
def test_the_grading_language_never_switches_node_rules_off_for_an_unrecognised_command(command, has_package_json,
                                                                                       expected):
    """A command the detector cannot read (make, a shell script) in a tree with a root package.json gets the Node
    rules as well; a command that runs Python keeps Python's rules alone, package.json or not (Django has one)."""
    assert grading_language(command, has_package_json) == expected
