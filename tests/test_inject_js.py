"""`packs inject` for JavaScript/TypeScript, without Docker: Stryker's mutants as one-site defect patches whose
reverse restores the file byte for byte, library files only, tap's failure reports quoted without locations,
the manifest installing the pinned instrumenter, the whole suite run through the runner's own report.

Pins: a mutant spliced at Python's string offsets where Stryker's are JavaScript's (UTF-16) ones, a test file or
built code mutated, a stale mutant applied to a file whose text moved, a statement naming the mutated file or a
stack frame's line, a Node suite run given pytest's ``-x``.
"""

from __future__ import annotations

import random

import pytest
import yaml

from evalharness.sources.inject import mutations, pipeline, prescreen, select
from evalharness.sources.inject.js import messages, mutants, steps
from evalharness.sources.inject.statement import Failure, Location, location_leaks, public_calls, write_statement

SOURCE = """'use strict'
// 😀 a character outside the BMP: two UTF-16 units, one Python character
const compare = (a, b) => {
  if (a < b) {
    return -1
  }
  return a === b ? 0 : 1
}

class Range {
  test (version) {
    return compare(version, this.low) >= 0
  }
}
module.exports = { compare, Range }
"""


def utf16_span(text: str, original: str) -> tuple[int, int]:
    """Where ``original`` is in ``text``, in UTF-16 units (as the driver reports Stryker's spans)."""
    start = len(text[:text.index(original)].encode("utf-16-le")) // 2
    return start, start + len(original.encode("utf-16-le")) // 2


def driver_mutant(original: str, replacement: str, mutator: str = "EqualityOperator", text: str = SOURCE,
                  file: str = "lib/compare.js") -> dict:
    start, end = utf16_span(text, original)
    line = text[:text.index(original)].count("\n") + 1
    return {"file": file, "mutator": mutator, "start": start, "end": end, "line": line, "original": original,
            "replacement": replacement}


def test_a_flipped_comparison_is_one_hunk_and_its_reverse_restores_the_file(tmp_path):
    [site] = mutants.sites([driver_mutant("a < b", "a >= b")], {"lib/compare.js": SOURCE})
    mutated = mutants.apply(SOURCE, site)
    assert mutated == SOURCE.replace("if (a < b)", "if (a >= b)")  # UTF-16 offsets, not Python's, were spliced
    defect = mutations.diff(site.path, SOURCE, mutated)
    gold = mutations.diff(site.path, mutated, SOURCE)
    assert defect.count("\n@@") == 1 and "-  if (a < b) {" in defect and "+  if (a >= b) {" in defect
    for patch, start, want in ((defect, SOURCE, mutated), (gold, mutated, SOURCE)):
        (tmp_path / "lib").mkdir(exist_ok=True)
        (tmp_path / "lib" / "compare.js").write_text(start)
        (tmp_path / "p.diff").write_text(patch)
        import subprocess
        subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True, capture_output=True)
        assert (tmp_path / "lib" / "compare.js").read_text() == want
    assert (site.mutation, site.function, site.module, site.line) == ("EqualityOperator", "compare", "lib/compare", 4)
    assert (site.before, site.after) == ("a < b", "a >= b")


def test_a_mutant_whose_text_is_not_at_its_span_is_left_out():
    stale = {**driver_mutant("a < b", "a >= b"), "start": 10, "end": 15}
    same = driver_mutant("a < b", "a < b")
    assert mutants.sites([stale, same], {"lib/compare.js": SOURCE}) == []
    with pytest.raises(ValueError):
        mutants.splice(SOURCE, 0, 10_000, "")


def test_sites_know_their_function_method_or_top_level():
    found = mutants.sites([driver_mutant("a === b", "a !== b"), driver_mutant(">= 0", "< 0"),
                           driver_mutant("'use strict'", "\"\"", "StringLiteral")], {"lib/compare.js": SOURCE})
    assert [s.function for s in found] == ["compare", "test", ""]
    assert [s.ordinal for s in found] == [0, 1, 2]


@pytest.mark.parametrize("path,library", [
    ("classes/range.js", True), ("index.js", True), ("src/index.ts", True), ("bin/semver.js", True),
    ("test/classes/range.js", False), ("src/a.test.ts", False), ("src/__tests__/a.ts", False),
    ("node_modules/tap/index.js", False), ("dist/index.js", False), ("lib/a.min.js", False),
    ("src/types.d.ts", False), ("jest.config.js", False), ("vite.config.ts", False), (".eslintrc.js", False),
    ("tap-snapshots/test/bin.js.test.cjs", False), ("README.md", False), ("benchmarks/bench-diff.js", False),
    ("package.json", False),
])
def test_only_library_files_are_mutated(path, library):
    assert (mutants.library_reason(path) is None) is library


def test_library_files_skip_what_is_not_utf8():
    files = {"a.js": b"x", "b.js": b"\xff\xfe", "test/a.js": b"t"}
    assert list(mutants.library_files(files)) == [("a.js", "x")]


TAP = """TAP version 13
# Subtest: test/functions/diff.js
    # Subtest: diff versions test
        ok 1 - diff(1.2.3, 0.2.3) === major
        not ok 2 - diff(1.0.0-1, 1.0.0) === major
          ---
          compare: ===
          at:
            line: 52
            column: 7
            file: test/functions/diff.js
          stack: |
            test/functions/diff.js:52:7
          source: |2
                t.equal(found, wanted, `${cmd} === ${wanted}`)
          diff: |
            --- expected
            +++ actual
            @@ -1,1 +1,1 @@
            -major
            +minor
          ...
        not ok 3 - diff(1.0.0-1, 1.1.1) === major
        1..3
        # failed 2 of 3 tests
    not ok 1 - diff versions test # time=12ms
    # Subtest: throws on bad version
        ok 1 - throws
        1..1
    ok 2 - throws on bad version # time=1ms
    # Subtest: minimum version
        not ok 1 - minVersion(^2.16.2 ^2.16, false) = 2.16.2
          ---
          found: null
          wanted: 2.16.2
          ...
        1..1
    not ok 3 - minimum version # time=1ms
    1..3
not ok 1 - test/functions/diff.js # time=300ms
1..1
"""


def test_a_tap_failure_is_quoted_by_its_title_and_values_never_its_location():
    quoted = messages.failure_messages("tap", TAP)
    assert list(quoted) == ["test/functions/diff.js::diff versions test",  # the first failure of each test
                            "test/functions/diff.js::minimum version"]
    assert quoted["test/functions/diff.js::minimum version"].splitlines()[1] == "found: null"  # not Python's None
    message = quoted["test/functions/diff.js::diff versions test"]
    assert message.splitlines()[0] == "diff(1.0.0-1, 1.0.0) === major"
    assert "-major" in message and "+minor" in message and "compare: ===" in message
    assert "52" not in message and "test/functions" not in message and "t.equal" not in message
    run = prescreen.read_report("tap", TAP, "", 1)
    assert run.statuses == {"test/functions/diff.js::diff versions test": "failed",
                            "test/functions/diff.js::throws on bad version": "passed",
                            "test/functions/diff.js::minimum version": "failed"}
    assert prescreen.read_report("tap", None, "", 1).statuses == {}  # no report: no results, never passes


def test_jest_failure_messages_lose_their_stack_frames():
    report = ('{"testResults": [{"name": "/testbed/tests/a.test.ts", "status": "failed", "message": "", '
              '"assertionResults": [{"ancestorTitles": ["match"], "title": "works", "status": "failed", '
              '"failureMessages": ["Error: expect(received).toBe(expected)\\n\\nExpected: 1\\nReceived: 2\\n'
              '    at Object.<anonymous> (/testbed/tests/a.test.ts:3:5)"]}]}]}')
    assert messages.failure_messages("jest_json", report) == {
        "tests/a.test.ts::match > works": "Error: expect(received).toBe(expected)\n\nExpected: 1\nReceived: 2"}
    assert messages.failure_messages("jest_json", "not json") == {}


def test_a_node_suite_runs_whole_with_its_own_report_and_never_gets_pytest_flags():
    command = "node_modules/.bin/tap --no-coverage -R tap {test_files} > {junit_xml}"
    whole = prescreen.suite_command(command, first_failure=True, log_parser="tap")
    assert whole == f"node_modules/.bin/tap --no-coverage -R tap  > {prescreen.JUNIT}"
    some = prescreen.suite_command(command, tests=["test/b.js::x", "test/a.js::y", "test/a.js::z"], log_parser="tap")
    assert some == f"node_modules/.bin/tap --no-coverage -R tap test/a.js test/b.js > {prescreen.JUNIT}"
    assert prescreen.suite_command("python -m pytest", first_failure=True).endswith(" -x")


def test_the_statement_names_no_javascript_file_and_may_name_what_the_test_file_calls():
    where = Location("functions/diff.js", "diff", ("functions/diff.js", "index.js"))
    assert location_leaks("see functions/diff.js", where) and location_leaks("in index.js", where)
    assert location_leaks("diff() is wrong", where) and not location_leaks("diff() is wrong", where, {"diff"})
    files = {"test/functions/diff.js": b"const diff = require('../../functions/diff')\nt.equal(diff(a, b), w)"}
    assert "diff" in public_calls("test/functions/diff.js::diff versions test", files)
    failure = Failure("test/functions/diff.js::diff versions test", messages.tap_messages(TAP)[
        "test/functions/diff.js::diff versions test"])
    gold = "--- functions/diff.js\n+++ functions/diff.js\n@@ -1 +1 @@\n-      return 'minor'\n+      return 'major'\n"
    text = write_statement([failure], library="semver", where=where, gold_patch=gold, files=files)
    assert text is not None and text.startswith("`diff versions test` fails: diff(1.0.0-1, 1.0.0) === major")
    assert "functions/diff.js" not in text and ":52" not in text


def test_sites_are_spread_over_modules_before_a_module_repeats():
    sources = {"a.js": "x < y\n", "b.js": "p < q\n"}
    found = mutants.sites([driver_mutant("x < y", "x >= y", text=sources["a.js"], file="a.js"),
                           driver_mutant("x < y", "true", "ConditionalExpression", sources["a.js"], "a.js"),
                           driver_mutant("p < q", "p >= q", text=sources["b.js"], file="b.js")], sources)
    order = select.spread(found, [lambda s: s.module, lambda s: s.function, lambda s: s.mutation], random.Random(0))
    assert {order[0].path, order[1].path} == {"a.js", "b.js"}


def test_the_manifest_installs_the_pinned_instrumenter_once_outside_the_work_tree():
    manifest = {"environment": {"setup": ["npm ci"]}, "test_command": "node_modules/.bin/jest {test_files}"}
    twice = steps.with_instrumenter(steps.with_instrumenter(manifest))
    assert twice["environment"]["setup"][0] == "npm ci" and len(twice["environment"]["setup"]) == 2
    step = twice["environment"]["setup"][1]
    assert f"@stryker-mutator/instrumenter@{mutants.STRYKER_VERSION}" in step and "--prefix /opt/" in step
    assert mutants.STRYKER_VERSION.count(".") == 2 and mutants.STRYKER_VERSION[0].isdigit()  # exact, no range
    assert steps.language_of_pack(manifest) == "node"
    assert steps.language_of_pack({"test_command": "python -m pytest {test_files}"}) == "python"
    assert yaml.safe_load(yaml.safe_dump(twice)) == twice


def test_every_stryker_mutator_has_its_nearest_class_named():
    stryker = {"ArithmeticOperator", "ArrayDeclaration", "ArrowFunction", "AssignmentOperator", "BlockStatement",
               "BooleanLiteral", "ConditionalExpression", "EqualityOperator", "LogicalOperator", "MethodExpression",
               "ObjectLiteral", "OptionalChaining", "Regex", "StringLiteral", "UnaryOperator", "UpdateOperator"}
    assert set(mutants.CLASSES) == stryker


def test_the_runners_own_time_limits_are_raised_once_for_tap_and_jest():
    tap = "node_modules/.bin/tap --no-coverage -R tap {test_files} > {junit_xml}"
    assert steps.steady_command(tap) == "node_modules/.bin/tap --timeout=300 --no-coverage -R tap {test_files} > {junit_xml}"
    assert steps.steady_command(steps.steady_command(tap)) == steps.steady_command(tap)
    jest = "node_modules/.bin/jest --ci --json --outputFile={junit_xml} --runTestsByPath {test_files}"
    assert "--testTimeout=120000 --ci" in steps.steady_command(jest)
    assert steps.steady_command("python -m pytest {test_files}") == "python -m pytest {test_files}"


@pytest.mark.parametrize("files,named", [
    ({"package.json": b'{"name": "ts-pattern", "version": "5.0.0"}'}, "ts-pattern"),
    ({"package.json": b'{"name": "@scope/pkg"}'}, "@scope/pkg"),
    ({"pyproject.toml": b'[project]\nname = "cachetools"\n'}, "cachetools"),
    ({"package.json": b'{"private": true}'}, None),
    ({"package.json": b'[1, 2]'}, None),
    ({"package.json": b'{not json'}, None),
    ({"pyproject.toml": b'[tool.black]\nline-length = 99\n'}, None),
    ({"setup.py": b"setup(name='x')"}, None),
])
def test_the_library_is_named_by_its_own_manifest_not_by_its_clone_folder(files, named):
    assert pipeline.project_name(files) == named
    manifest = {"environment": {"source": {"kind": "git", "url": "/tmp/x/repo", "ref": "HEAD"}}}
    assert pipeline._library(manifest, pipeline.project_name(files)) == (named or "repo")
    sdist = {"environment": {"source": {"kind": "pypi_sdist", "name": "cachetools", "version": "5.3.0"}}}
    assert pipeline._library(sdist, "other") == "cachetools 5.3.0"
    assert [pipeline.id_prefix(n) for n in ("@scope/pkg", "cachetools 5.3.0", "My_Lib")] == ["scope-pkg", "cachetools",
                                                                                            "my-lib"]


def test_the_yield_section_keeps_the_rows_of_a_repository_not_measured_again():
    """benchmarks/inject_yield_js.py run on one repository rewrites its section: the other's row and verdict line
    stay (ts-pattern measured in a later session than node-semver)."""
    from benchmarks.inject_yield_js import kept_rows

    old = ("| repository | sites |\n|---|---|\n| semver | 2415 |\n| ts-pattern | 714 |\n\n"
           "- semver: verdicts ok 10\n- ts-pattern: verdicts ok 3\n\n- a note\n")
    rows, lines = kept_rows(old, {"ts-pattern"})
    assert rows == ["| semver | 2415 |"] and lines == ["- semver: verdicts ok 10"]
    assert kept_rows(old, {"semver", "ts-pattern"}) == ([], [])


def test_the_yield_section_names_kept_tasks_by_module_most_first():
    """The verdict line of a repository ends with its kept tasks per module, most first (ties by name); a report
    without the count adds nothing."""
    from benchmarks.inject_yield_js import _kept_by_module

    report = {"kept_by_module": {"src/match": 2, "src/errors": 1, "src/internals/helpers": 4, "src/patterns": 2}}
    assert _kept_by_module(report) == "; kept by module src/internals/helpers 4, src/match 2, src/patterns 2, " \
                                      "src/errors 1"
    assert _kept_by_module({}) == "" and _kept_by_module({"kept_by_module": {}}) == ""
