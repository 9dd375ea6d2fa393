"""Per-test agreement of our text-log parsers with the SWE-bench harness's own, on real logs.

    .venv/bin/python benchmarks/parser_agreement.py --swebench-python /tmp/swbvenv/bin/python

The logs are the 8 real SWE-bench harness logs of ../shared/research-data/swebench-logs/ (7 from
UTBoost's log4test zip, one from SWE-bench PR #314; see SOURCES.md there). SWE-bench's parsers run
in a separate interpreter that has the ``swebench`` package installed (``--swebench-python``), as a
subprocess that prints JSON: evalharness never imports swebench, nor depends on it.

For every test id either parser reports, both statuses are mapped to passed/failed/error/skipped
(an expected failure counts as passed, as SWE-bench's grading counts XFAIL) and compared. Every
disagreeing id is put in one category by looking at the log lines that produced it; an id no rule
explains is counted as "other" and printed. The table replaces the text between the markers in
docs/parsers.md (``--no-write`` only prints it).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalharness.grading.parsers import TestRun, parse, parser_for_repo  # noqa: E402

DATA = REPO.parent / "shared" / "research-data" / "swebench-logs"
ZIP_NAME = "utboost_log4test_20231010_rag_swellama7b.zip"
DJANGO_16950 = "django_16950_log_output.txt"
DOC = REPO / "docs" / "parsers.md"
START, END = "<!-- parser-agreement:start -->", "<!-- parser-agreement:end -->"

# Run by the swebench interpreter: reads [[name, repo, path], ...] on stdin, prints
# {"version": ..., "results": {name: {test_id: status}}}. Parsers of swebench >= 3 take
# (log, test_spec) and the Python ones ignore the spec; older ones take (log) only.
SWEBENCH_SIDE = r"""
import json, sys
from importlib.metadata import version
from swebench.harness.log_parsers import MAP_REPO_TO_PARSER
results = {}
for name, repo, path in json.load(sys.stdin):
    with open(path, errors="replace") as f:
        log = f.read()
    parser = MAP_REPO_TO_PARSER[repo]
    try:
        parsed = parser(log, None)
    except TypeError:
        parsed = parser(log)
    results[name] = {test: str(getattr(status, "value", status)) for test, status in parsed.items()}
json.dump({"version": version("swebench"), "results": results}, sys.stdout)
"""

CATEGORIES = {
    "docstring": "docstring test: id line (SWE-bench keeps only the docstring line)",
    "header": "`FAIL:`/`ERROR:` header: SWE-bench keys the bare method name",
    "header_only": "result only in a `FAIL:`/`ERROR:` header (setUpClass, failed subtests)",
    "glued": "two results glued on one line",
    "alias": "docstring line shared by several tests",
    "xfail": "`expected failure` (SWE-bench does not read it)",
    "nested": "line of a nested pytest session (captured output)",
    "location": "`SKIPPED [N] file:line` location read as an id",
    "not_a_node": "captured unittest summary (`FAILED (unexpected successes=1)`) read as an id",
    "blank": "id with a blank (SWE-bench cuts it at the blank)",
    "sympy_header": "SymPy failure-report header: SWE-bench keys `path.py:name`",
    "file_mark": "SymPy result before the `[OK]`/`[FAIL]` file mark",
    "sympy_skip": "SymPy skipped result (SWE-bench does not read it)",
    "other": "not explained",
}

_PLAIN = {"xfail": "passed", "xpass": "passed"}
_DJ_ID = re.compile(r"^\w+ \([A-Za-z_][\w.]*\)$")
_DJ_MENTION = re.compile(r"\w+ \([A-Za-z_][\w.]*\)")
_WORDS = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")


def plain(status: str) -> str:
    status = status.lower()
    return _PLAIN.get(status, status)


def collect_logs(data: Path, scratch: Path) -> list[tuple[str, str, Path]]:
    """(instance, repo, log path) for the 8 logs; the zip is unpacked into ``scratch``."""
    missing = [p for p in (data / ZIP_NAME, data / DJANGO_16950) if not p.exists()]
    if missing:
        raise SystemExit(f"real logs not found: {', '.join(map(str, missing))} (see SOURCES.md beside them)")
    with zipfile.ZipFile(data / ZIP_NAME) as archive:
        members = [m for m in archive.namelist() if not m.startswith("__MACOSX")]
        archive.extractall(scratch, members)
    logs = []
    for path in sorted(scratch.glob("*/*/test_output.txt")):
        instance = path.parent.name
        logs.append((instance, instance.rsplit("-", 1)[0].replace("__", "/"), path))
    logs.append(("django__django-16950", "django/django", data / DJANGO_16950))
    return logs


def swebench_results(python: str, logs: list[tuple[str, str, Path]]) -> tuple[str, dict[str, dict[str, str]]]:
    jobs = json.dumps([[name, repo, str(path)] for name, repo, path in logs])
    done = subprocess.run([python, "-c", SWEBENCH_SIDE], input=jobs, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{python} could not run SWE-bench's parsers (is swebench installed there?):\n"
                         f"{done.stderr[-3000:]}")
    out = json.loads(done.stdout)
    return out["version"], out["results"]


# --- which log lines made an id disagree -----------------------------------------------------

class Lines:
    """The log's lines, with an index of where each Django-style id and header name occurs."""

    def __init__(self, log: str, runner: str) -> None:
        strip = str.rstrip if runner == "pytest" else str.strip
        self.lines = [strip(line) for line in log.splitlines()]
        self.mentions: dict[str, list[int]] = {}
        self.headers: set[str] = set()
        self.nested: set[int] = set()
        if runner == "django":
            for i, line in enumerate(self.lines):
                for match in _DJ_MENTION.finditer(line):
                    self.mentions.setdefault(match.group(0), []).append(i)
                if header := re.match(r"^(?:FAIL|ERROR): (\w+) ", line):
                    self.headers.add(header.group(1))
        if runner == "pytest":
            depth = 0
            for i, line in enumerate(self.lines):
                if re.match(r"^=+ test session starts =+$", line):
                    depth += 1
                elif re.match(r"^=+ .* in [\d.]+ ?s\w*(?: \([\d:.]+\))? =+$", line):
                    depth = max(depth - 1, 0)
                if depth >= 2:
                    self.nested.add(i)

    def glued(self, test: str) -> bool:
        """A line holds ``test`` and something else before its status (another test, output)."""
        for i in self.mentions.get(test, []):
            line = self.lines[i]
            if line.startswith(("FAIL: ", "ERROR: ")):
                continue
            if not line.startswith(test) or _DJ_MENTION.match(line[len(test):].removeprefix(" ... ")):
                return True
        return False


def category(test: str, ours: dict[str, str], theirs: dict[str, str], runner: str, log: Lines) -> str:
    mine, swb = ours.get(test), theirs.get(test)
    lines = log.lines
    if runner == "django":
        if mine and swb:
            described = [line for line in lines if line.startswith(test + " ... ")]
            return "alias" if len(described) > 1 and not _DJ_ID.match(test) else "other"
        if swb and "..." in test:
            return "glued"
        if swb and re.fullmatch(r"\w+", test) and test in log.headers:
            return "header"
        if mine and _DJ_ID.match(test):
            if log.glued(test):
                return "glued"
            at = [lines[i] for i in log.mentions.get(test, [])]
            if test in at:
                return "docstring"
            if any(line.startswith(f"{test} ... ") and line.endswith(("expected failure", "unexpected success"))
                   for line in at):
                return "xfail"
            if at and all(line.startswith(("FAIL: ", "ERROR: ")) for line in at):
                return "header_only"
    elif runner == "pytest":
        if swb and not mine:
            if re.fullmatch(r"\[\d+\]", test):
                return "location"
            if "::" not in test and ".py" not in test:
                return "not_a_node"
            if any(k.startswith(test + " ") for k in ours):
                return "blank"
            made = [i for i, line in enumerate(lines) if line.startswith(_WORDS) and test in line.split()[1:2]]
            if made and all(i in log.nested for i in made):
                return "nested"
        if mine and not swb and " " in test and test.split()[0] in theirs:
            return "blank"
    elif runner == "sympy":
        if swb and not mine and re.fullmatch(r"\S+\.py:(test_\w+)", test) and test.split(":")[-1] in ours:
            return "sympy_header"
        if mine and not swb:
            if any(re.match(rf"^{re.escape(test)} .*\s\[(OK|FAIL)\]$", line) for line in lines):
                return "file_mark"
            if mine == "skipped":
                return "sympy_skip"
    return "other"


def compare(name: str, repo: str, log: str, theirs_raw: dict[str, str]) -> dict:
    runner = parser_for_repo(repo)
    ours = {t: plain(s.value) for t, s in parse(runner, TestRun(log=log, exit_code=1)).items()}
    theirs = {t: plain(s) for t, s in theirs_raw.items()}
    lines = Lines(log, runner)
    tests = set(ours) | set(theirs)
    agree = {t for t in tests if ours.get(t) == theirs.get(t)}
    kinds: Counter[str] = Counter()
    unexplained = []
    for test in sorted(tests - agree):
        kind = category(test, ours, theirs, runner, lines)
        kinds[kind] += 1
        if kind == "other":
            unexplained.append((test, ours.get(test), theirs.get(test)))
    return {"name": name, "runner": runner, "ours": len(ours), "theirs": len(theirs),
            "agree": len(agree), "disagree": len(tests - agree), "kinds": dict(kinds),
            "unexplained": unexplained}


def table(rows: list[dict], version: str) -> str:
    out = [f"Measured by `benchmarks/parser_agreement.py` against swebench {version} "
           "(`swebench.harness.log_parsers.MAP_REPO_TO_PARSER`). Counts are test ids; an id is "
           "*agreeing* when both parsers report it with the same status (expected failure = passed).",
           "",
           "| log | parser | ids by us | ids by SWE-bench | agreeing | disagreeing | disagreeing ids by category |",
           "|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        kinds = "; ".join(f"{CATEGORIES[k]}: {n}" for k, n in sorted(r["kinds"].items(), key=lambda kv: -kv[1]))
        out.append(f"| {r['name']} | {r['runner']} | {r['ours']} | {r['theirs']} | {r['agree']} | "
                   f"{r['disagree']} | {kinds or 'none (exact agreement)'} |")
    exact = sum(r["disagree"] == 0 for r in rows)
    other = sum(r["kinds"].get("other", 0) for r in rows)
    out += ["", f"Exact agreement on {exact} of {len(rows)} logs; {other} disagreeing ids left unexplained."]
    return "\n".join(out)


def write_table(doc: Path, text: str) -> None:
    old = doc.read_text() if doc.exists() else f"# Log parsers\n\n{START}\n{END}\n"
    if START not in old or END not in old:
        raise SystemExit(f"{doc} has no {START} ... {END} markers")
    head, rest = old.split(START, 1)
    tail = rest.split(END, 1)[1]
    doc.write_text(f"{head}{START}\n{text}\n{END}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--swebench-python", required=True,
                        help="a python with swebench installed, e.g. /tmp/swbvenv/bin/python")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of the real logs")
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="parser-agreement-") as scratch:
        logs = collect_logs(args.data, Path(scratch))
        version, theirs = swebench_results(args.swebench_python, logs)
        rows = [compare(name, repo, path.read_text(errors="replace"), theirs[name]) for name, repo, path in logs]
    text = table(rows, version)
    print(text)
    for r in rows:
        for test, mine, swb in r["unexplained"]:
            print(f"unexplained in {r['name']}: {test!r} ours={mine} swebench={swb}", file=sys.stderr)
    if not args.no_write:
        write_table(args.doc, text)
        print(f"\nwritten to {args.doc}")


if __name__ == "__main__":
    main()
