"""Static checks of the verifier: ``separate-verifier`` (its sandbox) and ``test-sh-sanity`` (its script's
tools and reward) (pure)."""

from __future__ import annotations

import re

from evalharness.sources.harbor.checks import dockerfile
from evalharness.sources.harbor.checks.findings import Evidence, StaticFinding, evidence, read_text, toml_line
from evalharness.sources.harbor.checks.tools import image_for_tests, missing_tools
from evalharness.sources.harbor.model import HarborTask

REWARD = re.compile(r"reward\.(?:txt|json)\b")
_REWARD_PATH = re.compile(r"""["']([^"'\s]*reward\.(?:txt|json))["']""")
_TESTS_DEST = re.compile(r"(^|\s)/tests(/|\s|$)")


def separate_verifier(task: HarborTask) -> list[StaticFinding]:
    """The verifier runs in its own sandbox (``[verifier] environment_mode = "separate"``) built from
    tests/Dockerfile, which puts test.sh at /tests and makes the parent directory of every declared artifact.
    (A ``"shared"`` mode with a ``[verifier.environment]`` table is refused when the task is read.)"""
    cfg = task.config
    if not cfg.verifier.separate:
        return [StaticFinding("separate-verifier", 1,
            "shared mode: when Harbor runs this task, its verifier runs in the container the agent controlled, so "
            "the agent can write the reward or replace a tool the verifier calls; evalharness runs it in a fresh "
            "container over a snapshot (the agent's processes gone, toolchain changes refused), but a program of the "
            "agent's that test.sh runs still runs as root beside the reward (docs/threat-model.md, Harbor tasks); "
            'set [verifier] environment_mode = "separate" with a tests/Dockerfile',
            (toml_line(task, "environment_mode", "verifier"),))]
    found = []
    extra = cfg.verifier.model_extra or {}
    if "artifacts" in extra:
        found.append(StaticFinding("separate-verifier", 3, "artifacts is under [verifier], where Harbor ignores it: "
                                   "nothing reaches the verifier; move it to the top of task.toml",
                                   (toml_line(task, "artifacts", "verifier"),)))
    path = task.tests_dir / "Dockerfile"
    own_image = cfg.verifier.environment is not None and cfg.verifier.environment.docker_image
    if not path.is_file():
        if not own_image:
            found.append(StaticFinding("separate-verifier", 2, "separate mode but no tests/Dockerfile: the "
                                       "verifier's image is not defined by the task", (toml_line(task, "environment_mode", "verifier"),)))
        return found
    ins = dockerfile.instructions(read_text(path))
    copies = [i for i in ins if i.keyword in ("COPY", "ADD") and _TESTS_DEST.search(i.value.split()[-1] if i.value.split() else "")]
    if not copies:
        found.append(StaticFinding("separate-verifier", 3, "tests/Dockerfile never copies the tests to /tests: in "
                                   "separate mode Harbor does not upload them, so /tests/test.sh is missing",
                                   (evidence(task, path, None, "(no COPY or ADD into /tests)"),)))
    for parent in _artifact_parents(task):
        if not _made(parent, ins):
            found.append(StaticFinding("separate-verifier", 3, f"artifact parent {parent} is never created in "
                                       "tests/Dockerfile: the artifact cannot be copied into the verifier",
                                       (toml_line(task, "artifacts"), evidence(task, path, None, f"(no mkdir {parent})"))))
    return found


def _artifact_parents(task: HarborTask) -> list[str]:
    parents = {p.rstrip("/").rsplit("/", 1)[0] for p in task.config.artifacts if "/" in p.rstrip("/")}
    return sorted(p for p in parents if p and p != "/logs/artifacts")


def _made(parent: str, ins: list[dockerfile.Instruction]) -> bool:
    def covers(path: str) -> bool:
        path = path.rstrip("/")
        return path == parent or path.startswith(parent + "/")

    for cmd in dockerfile.run_commands(ins):
        if cmd.name == "mkdir" and any(covers(a) for a in cmd.args[1:]):
            return True
    return any((i.keyword == "WORKDIR" and covers(i.value.strip()))
               or (i.keyword in ("COPY", "ADD") and i.value.split() and covers(i.value.split()[-1])) for i in ins)


def test_sh_sanity(task: HarborTask) -> list[StaticFinding]:
    """test.sh exists, calls only tools something provides, and writes a reward where Harbor reads it on every
    path (a missing reward is a verifier failure, not a 0)."""
    script = task.test_script
    if script is None:
        if task.config.steps:
            return []  # multi-step tasks keep their verifiers under steps/
        return [StaticFinding("test-sh-sanity", 3, "no tests/test.sh: the task has no verifier",
                              (Evidence("tests", None, "(missing)"),))]
    if script.suffix != ".sh":
        return []  # a Windows task's test.bat is not read (docs/audit.md)
    found = []
    image, stage_file = image_for_tests(task)
    for tool, cmd in missing_tools(task, script, image):
        base = f"the image ({image.base})" if image.base else "the image"
        found.append(StaticFinding("test-sh-sanity", 3,
            f"test.sh calls {tool}, which neither test.sh nor {stage_file or 'the image'} installs and {base} does "
            "not provide: the verifier fails whatever the agent did", (evidence(task, script, cmd.line),)))
    found += _reward_place(task)
    found += _reward_paths(task, script)
    return found


def _reward_place(task: HarborTask) -> list[StaticFinding]:
    files = [p for p in sorted(task.tests_dir.rglob("*")) if p.is_file() and p.suffix in (".sh", ".py", "")]
    mentions = [(p, n, raw) for p in files for n, raw in enumerate(read_text(p).splitlines(), 1) if REWARD.search(raw)]
    if not mentions:
        return [StaticFinding("test-sh-sanity", 3, "nothing under tests/ writes /logs/verifier/reward.txt or "
                              "reward.json: every trial ends without a reward", (evidence(task, task.test_script, None, "(no reward written)"),))]
    paths = [(p, n, m) for p, n, raw in mentions for m in _REWARD_PATH.findall(raw) + _redirect_targets(raw)]
    good = [m for _, _, m in paths if m.startswith("/logs/verifier/") or "$" in m]
    bad = [(p, n, m) for p, n, m in paths if not (m.startswith("/logs/verifier/") or "$" in m)]
    if bad and not good:
        return [StaticFinding("test-sh-sanity", 3, f"the reward is written to {bad[0][2]}, outside /logs/verifier "
                              "where Harbor reads it: every trial ends without a reward",
                              tuple(evidence(task, p, n) for p, n, _ in bad))]
    return []


def _redirect_targets(raw: str) -> list[str]:
    return re.findall(r">>?\s*([^\s;&|'\"]*reward\.(?:txt|json))", raw)


def _reward_paths(task: HarborTask, script) -> list[StaticFinding]:
    """test.sh's own reward writes: only a literal 1 under a condition (the failing path writes nothing), or a
    ``set -e`` script whose test run ends it before any reward on failure."""
    from evalharness.sources.harbor.checks.shell import commands, errexit as shell_errexit

    cmds = commands(read_text(script))
    writes = [c for c in cmds if any(REWARD.search(t) for _, t in c.redirects)]
    if not writes:
        return []
    found = []
    values = {(c.args[1:] or [""])[-1] for c in writes if c.name in ("echo", "printf")}
    others = [c for c in writes if c.name not in ("echo", "printf")]
    if values and values <= {"1", "1.0"} and not others and all(c.conditional for c in writes) \
            and not _other_writers(task, script):
        found.append(StaticFinding("test-sh-sanity", 2, "test.sh writes a reward only when the tests pass: on failure "
                                   "no reward is written (a verifier failure, not a 0); write 0 on the other path",
                                   tuple(evidence(task, script, c.line) for c in writes)))
    errexit = shell_errexit(cmds)
    first_write = min(c.line for c in writes)
    runner = next((c for c in cmds if c.line < first_write and not c.conditional
                   and c.name in ("pytest", "uvx", "python", "python3", "npm", "npx", "go", "cargo", "node")), None)
    if errexit and runner:
        found.append(StaticFinding("test-sh-sanity", 2, "with set -e, a failing test run ends test.sh before any "
                                   "reward is written (a verifier failure, not a 0); guard it (`if ...; then`, `|| true`)",
                                   (evidence(task, script, errexit.line), evidence(task, script, runner.line))))
    return found


def _other_writers(task: HarborTask, script) -> bool:
    """Whether a file under tests/ other than test.sh writes the reward (its values are not read here)."""
    return any(REWARD.search(read_text(p)) for p in task.tests_dir.rglob("*") if p.is_file() and p != script)
