"""``validate-oracle`` and ``validate-nop``: the oracle must reach reward 1 and the no-op 0 (pure).

Both are run-time verdicts: only running solve.sh, and running nothing, through the verifier decides them
(``validation_findings``, which the runner calls with the rewards it read). What a static reading can see is a
hint: a test.sh that always writes 1, tests that assert only constants, no solve.sh, or a solve.sh that writes
a literal the tests compare with a different literal. It cannot see a solution that fails at run time
(a wrong algorithm, a missing dependency, the network), nor tests that pass for a reason other than constants.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from evalharness.sources.harbor.checks import dockerfile
from evalharness.sources.harbor.checks.findings import Evidence, StaticFinding, evidence, read_text
from evalharness.sources.harbor.checks.shell import commands, errexit
from evalharness.sources.harbor.model import HarborTask

_REWARD = re.compile(r"reward\.(?:txt|json)\b")
_CONSTANT_NODES = (ast.Expression, ast.Constant, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.cmpop, ast.boolop,
                   ast.unaryop, ast.Load, ast.Tuple, ast.List)


def validate_nop(task: HarborTask) -> list[StaticFinding]:
    found = []
    script = task.test_script
    if script is not None and script.suffix == ".sh":
        cmds = commands(read_text(script))
        writes = [c for c in cmds if any(_REWARD.search(t) for _, t in c.redirects)]
        stops = errexit(cmds) is not None or any(c.name == "exit" for c in cmds)
        values = {(c.args[1:] or [""])[-1] for c in writes}
        others = any(_REWARD.search(read_text(p)) for p in task.tests_dir.rglob("*") if p.is_file() and p != script)
        if writes and all(c.name in ("echo", "printf") for c in writes) and values <= {"1", "1.0"} and not others \
                and not stops and any(not c.conditional for c in writes):
            found.append(StaticFinding("validate-nop", 3, "test.sh writes reward 1 whatever happens: the no-op run "
                                       "passes", tuple(evidence(task, script, c.line) for c in writes)))
    tests = _test_functions(task)
    if tests and all(vacuous for _, _, vacuous in tests):
        found.append(StaticFinding("validate-nop", 2, "every test asserts only constants, so the tests pass whatever "
                                   "the agent does (static hint: fixtures or other checks could still fail; the "
                                   "no-op run decides)", tuple(evidence(task, p, n) for p, n, _ in tests)))
    return found


def _test_functions(task: HarborTask) -> list[tuple[Path, int, bool]]:
    found = []
    for path in sorted(task.tests_dir.rglob("*.py")):
        if not (path.name.startswith("test_") or path.name.endswith("_test.py")):
            continue
        try:
            tree = ast.parse(read_text(path))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                found.append((path, node.lineno, all(_trivial(s) for s in node.body)))
    return found


def _trivial(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
        return True
    if not isinstance(stmt, ast.Assert):
        return False
    expr = ast.Expression(stmt.test)
    if not all(isinstance(n, _CONSTANT_NODES) for n in ast.walk(expr)):
        return False
    try:
        return bool(eval(compile(expr, "<assert>", "eval"), {"__builtins__": {}}))  # constants and comparisons only
    except Exception:
        return False


def validate_oracle(task: HarborTask) -> list[StaticFinding]:
    solve = task.solve_script
    if solve is None:
        if task.config.steps:
            return []
        return [StaticFinding("validate-oracle", 1, "no solution/solve.sh: the oracle cannot run, so nothing shows "
                              "the task can be solved", (Evidence("solution", None, "(missing)"),))]
    if solve.suffix != ".sh":
        return []
    expected = _expected_contents(task)
    found = []
    for path, (text, line) in _written_literals(task, solve).items():
        if path in expected and expected[path][0] != text.strip():
            want, test_file, test_line = expected[path]
            found.append(StaticFinding("validate-oracle", 1, f"solve.sh writes {text.strip()!r} to {path} but the "
                                       f"tests expect {want!r} there (static hint; the oracle run decides)",
                                       (evidence(task, solve, line), evidence(task, test_file, test_line))))
    return found


def _written_literals(task: HarborTask, solve: Path) -> dict[str, tuple[str, int]]:
    """What solve.sh writes with ``echo``/``printf`` into files (absolute paths; relative ones resolved against
    the image's WORKDIR), the last write winning."""
    workdir = next((i.value.strip() for i in reversed(dockerfile.instructions(read_text(task.dockerfile)))
                    if i.keyword == "WORKDIR"), "/")
    written = {}
    for cmd in commands(read_text(solve)):
        targets = [t for op, t in cmd.redirects if op == ">"]
        if cmd.name in ("echo", "printf") and targets and "$" not in " ".join(cmd.args):
            words = [w for w in cmd.args[1:] if not re.fullmatch(r"-[neE]+", w)]
            path = targets[-1] if targets[-1].startswith("/") else f"{workdir.rstrip('/')}/{targets[-1]}"
            written[path] = (" ".join(words), cmd.line)
    return written


def _expected_contents(task: HarborTask) -> dict[str, tuple[str, Path, int]]:
    """File path -> the literal a test compares its (stripped) content with: ``x = Path(P).read_text()...``
    then ``assert x == L``, or the read inline."""
    expected = {}
    for path in sorted(task.tests_dir.rglob("*.py")):
        try:
            tree = ast.parse(read_text(path))
        except SyntaxError:
            continue
        for func in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
            reads = {}
            for node in ast.walk(func):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    source = _read_path(node.value)
                    if source:
                        reads[node.targets[0].id] = source
                if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1 \
                        and isinstance(node.test.ops[0], ast.Eq):
                    left, right = node.test.left, node.test.comparators[0]
                    source = reads.get(left.id) if isinstance(left, ast.Name) else _read_path(left)
                    if source and isinstance(right, ast.Constant) and isinstance(right.value, str):
                        expected[source] = (right.value.strip(), path, node.lineno)
    return expected


def _read_path(node: ast.AST) -> str | None:
    """The literal path of ``Path("p").read_text()`` or ``open("p").read()``, through ``.strip()`` and the like."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        inner = node.func.value
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in ("Path", "open") \
                and inner.args and isinstance(inner.args[0], ast.Constant) and isinstance(inner.args[0].value, str):
            return inner.args[0].value
        node = inner
    return None


def validation_findings(oracle_rewards: list[float | None], null_rewards: list[float | None]) -> list[StaticFinding]:
    """The run-time verdict: the oracle reaches reward 1 on every run and the no-op 0 on every run. A missing
    reward (None: the verifier wrote none or an unreadable one) is not a 0: it leaves the run undecided."""
    found = []
    for check, rewards, want, who in (("validate-oracle", oracle_rewards, 1.0, "oracle"),
                                      ("validate-nop", null_rewards, 0.0, "no-op")):
        if not rewards:
            found.append(StaticFinding(check, 2, f"no {who} run: the task is not validated",
                                       (Evidence(who, None, "(no runs)"),)))
            continue
        wrong = [(i, r) for i, r in enumerate(rewards, 1) if r is not None and r != want]
        missing = [i for i, r in enumerate(rewards, 1) if r is None]
        if wrong:
            what = "the reference solution fails its own verifier" if want else "the tests pass without any work"
            found.append(StaticFinding(check, 3, f"{len(wrong)} of {len(rewards)} {who} run(s) scored other than "
                                       f"{want:g}: {what}", tuple(Evidence(who, None, f"run {i}: reward {r:g}")
                                                                   for i, r in wrong)))
        if missing:
            found.append(StaticFinding(check, 2, f"{len(missing)} of {len(rewards)} {who} run(s) gave no reward (a "
                                       "verifier or engine failure, not a 0): not decided, run again",
                                       tuple(Evidence(who, None, f"run {i}: no reward") for i in missing)))
    return found
