"""Each static check on small hand-made tasks, its positive and its negative case; the run-time verdict
(``validation_findings``); the shell reader the checks stand on.

Pins: a missing reward counted as a 0 (it is a verifier failure, never the agent's), a verify-time download
let through because its phase's network was read from the wrong table, and a heredoc's body read as commands.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalharness.errors import UserError
from evalharness.sources.harbor.checks.checks import check_dirs, static_checks, validation_findings
from evalharness.sources.harbor.checks.shell import commands
from evalharness.sources.harbor.model import HarborTask

GOOD_TEST = "#!/bin/bash\nif pytest /tests -rA; then\n  echo 1 > /logs/verifier/reward.txt\nelse\n" \
            "  echo 0 > /logs/verifier/reward.txt\nfi\n"
GOOD_DOCKERFILE = "FROM python:3.12-slim\nRUN pip install pytest==8.4.1\nWORKDIR /app\n"


def make(tmp: Path, toml: str = "", *, dockerfile: str = GOOD_DOCKERFILE, test: str = GOOD_TEST,
         solve: str | None = "#!/bin/bash\necho ok > /app/out.txt\n", instruction: str = "Do it.\n",
         files: dict[str, str] | None = None) -> HarborTask:
    (tmp / "task.toml").write_text(toml)
    (tmp / "instruction.md").write_text(instruction)
    for rel, text in {"environment/Dockerfile": dockerfile, "tests/test.sh": test,
                      **({"solution/solve.sh": solve} if solve is not None else {}), **(files or {})}.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text)
    return HarborTask.load(tmp)


def found(task: HarborTask, check: str) -> list:
    return [f for f in static_checks(task, [check])]


@pytest.mark.parametrize(("line", "loose"), [
    ("RUN pip install a==1.0 b", ["b"]),
    ("RUN pip install --upgrade pip && pip install a==1", []),
    ("RUN python3 -m pip install 'numpy>=1.26'", ["numpy>=1.26"]),
    ("RUN uv pip install --python /opt/venv/bin/python x==2", []),
    ("RUN uvx --with pytest==8.4.1 pytest /tests", []),
    ("RUN uvx ruff check .", ["ruff"]),
    ("RUN uvx ruff@0.5.0 check .", []),
    ("RUN npm install -g left-pad", ["left-pad"]),
    ("RUN npm install -g left-pad@1.3.0 && npm ci", []),
    ("RUN apt-get update && apt-get install -y curl", []),  # apt is not pinned, by decision
    ("RUN pip install ./local-pkg /wheels/x.whl", []),
])
def test_pip_pinning_names_each_loose_install(tmp_path, line, loose):
    task = make(tmp_path, dockerfile=f"FROM python:3.12-slim\n{line}\n")
    hits = found(task, "pip-pinning")
    assert [f.reason.split(" installed")[0] for f in hits] == ([", ".join(loose)] if loose else [])
    if hits:
        assert hits[0].evidence[0].where() == "environment/Dockerfile:2" and hits[0].evidence[0].text == line


def test_pip_pinning_reads_requirements_files(tmp_path):
    task = make(tmp_path, files={"environment/requirements.txt": "# deps\nnumpy==2.0.2\npandas\n"})
    hits = found(task, "pip-pinning")
    assert [(f.evidence[0].where(), f.evidence[0].text) for f in hits] == [("environment/requirements.txt:3", "pandas")]


def test_platform_and_gpu_checks(tmp_path):
    task = make(tmp_path, '[environment]\ngpus = 0\ngpu_types = ["H100"]\n',
                dockerfile="FROM --platform=linux/arm64 python:3.12\n")
    assert found(task, "dockerfile-platform")[0].evidence[0].line == 1
    assert "gpus = 0" in found(task, "gpu-types")[0].reason and not found(task, "gpu-request")
    task = make(tmp_path, '[environment]\ngpus = 2\ngpu_types = ["H100", "A100-80GB"]\n')
    assert not found(task, "gpu-types") and not found(task, "dockerfile-platform")
    assert found(task, "gpu-request")[0].evidence[0].text == "gpus = 2"


NET_TEST = "#!/bin/bash\npip install pytest==8.4.1\ncurl -fsSL http://sidecar:8000/ready\n" + GOOD_TEST


@pytest.mark.parametrize(("toml", "flagged"), [
    ("[environment]\nallow_internet = false\n", True),
    ('[environment]\nallow_internet = false\n[verifier]\nnetwork_mode = "public"\n', False),  # the phase's override
    ('[environment]\nallowed_hosts = ["pypi.org", "files.pythonhosted.org"]\n', False),
    ('[environment]\nallowed_hosts = ["pypi.org"]\n', True),  # the wheels come from files.pythonhosted.org
    ('[verifier]\nenvironment_mode = "separate"\n[verifier.environment]\nallow_internet = false\n', True),
    ("", False),
])
def test_allow_internet_follows_the_verifier_phase_network(tmp_path, toml, flagged):
    files = {"tests/Dockerfile": "FROM python:3.12\nCOPY . /tests/\n"}
    hits = found(make(tmp_path, toml, test=NET_TEST, files=files), "allow-internet")
    assert bool(hits) is flagged
    if hits:  # the sidecar fetch (a bare service name) is never the reason
        assert [e.line for e in hits[0].evidence] == [2] and hits[0].severity == 3


def test_allow_internet_reads_solve_sh_against_the_agent_phase(tmp_path):
    solve = "#!/bin/bash\ngit clone https://github.com/a/b\n"
    hits = found(make(tmp_path, '[agent]\nnetwork_mode = "no-network"\n', solve=solve), "allow-internet")
    assert [(f.severity, f.evidence[0].where()) for f in hits] == [(2, "solution/solve.sh:2")]
    assert not found(make(tmp_path, "", solve=solve), "allow-internet")


def test_trial_network_fetch_only_in_separate_mode(tmp_path):
    test = "#!/bin/bash\ncurl -LsSf https://astral.sh/uv/install.sh | sh\ncurl http://api:80/x\n" + GOOD_TEST
    files = {"tests/Dockerfile": "FROM python:3.12\nCOPY . /tests/\n"}
    separate = '[verifier]\nenvironment_mode = "separate"\n'
    hits = found(make(tmp_path, separate, test=test, files=files), "trial-network-fetch")
    assert [e.line for e in hits[0].evidence] == [2] and "bootstrap" in hits[0].reason
    assert not found(make(tmp_path, "", test=test), "trial-network-fetch")
    assert not found(make(tmp_path, separate, files=files), "trial-network-fetch")


def test_separate_verifier_rules(tmp_path):
    assert found(make(tmp_path), "separate-verifier")[0].severity == 1  # shared mode: noted, not a defect
    toml = 'artifacts = ["/root/results/out.json"]\n[verifier]\nenvironment_mode = "separate"\n'
    bare = {"tests/Dockerfile": "FROM python:3.12\nRUN pip install pytest==8.4.1\n"}
    reasons = [f.reason for f in found(make(tmp_path, toml, files=bare), "separate-verifier")]
    assert len(reasons) == 2 and "/tests" in reasons[0] and "/root/results" in reasons[1]
    good = {"tests/Dockerfile": "FROM python:3.12\nRUN pip install pytest==8.4.1 && mkdir -p /root/results\n"
                                "COPY . /tests/\n"}
    assert not found(make(tmp_path, toml, files=good), "separate-verifier")
    (tmp_path / "tests" / "Dockerfile").unlink()
    assert "no tests/Dockerfile" in found(make(tmp_path, toml), "separate-verifier")[0].reason
    misplaced = '[verifier]\nenvironment_mode = "separate"\nartifacts = ["/root/x"]\n'
    assert "under [verifier]" in found(make(tmp_path, misplaced, files=good), "separate-verifier")[0].reason


def test_a_shared_verifier_with_its_own_environment_is_unreadable(tmp_path):
    make(tmp_path)
    (tmp_path / "task.toml").write_text('[verifier]\nenvironment_mode = "shared"\n[verifier.environment]\ncpus = 1\n')
    with pytest.raises(UserError):
        HarborTask.load(tmp_path)
    [result] = check_dirs([tmp_path])
    assert result.findings == [] and "cannot have a [verifier.environment]" in result.error


@pytest.mark.parametrize(("dockerfile", "test", "missing"), [
    ("FROM ubuntu:24.04\n", GOOD_TEST, ["pytest"]),
    ("FROM python:3.12-slim\n", GOOD_TEST, ["pytest"]),
    ("FROM python:3.12-slim\n", "#!/bin/bash\npip install pytest==8\n" + GOOD_TEST, []),
    ("FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y python3 python3-pytest\n", GOOD_TEST, []),
    ("FROM python:3.12-slim\n", "#!/bin/bash\ncurl -O https://x.org/a\n" + GOOD_TEST, ["curl", "pytest"]),
    ("FROM python:3.12\n", "#!/bin/bash\ncurl -O https://x.org/a\nuvx pytest\n" + GOOD_TEST, ["uvx", "pytest"]),
    ("FROM myorg/custom:1\n", GOOD_TEST, []),  # an unknown base: cannot tell
    ("FROM python:3.12-slim\nRUN python -m venv /venv && /venv/bin/pip install pytest==8.4.1\n", GOOD_TEST, []),
    ("FROM python:3.12-slim\n", GOOD_TEST.replace("pytest /tests", "/venv/bin/pytest /tests"), []),
    ("FROM ubuntu:24.04\n", "#!/bin/bash\ncurl -s https://x.org/i.sh | bash\n" + GOOD_TEST, ["curl"]),
    ("FROM ubuntu:24.04\nCOPY --from=ghcr.io/astral-sh/uv:0.8 /uv /uvx /bin/\n",
     "#!/bin/bash\nuvx --with pytest==8 pytest\n" + GOOD_TEST.replace("pytest /tests", "uvx pytest /tests"), []),
])
def test_test_sh_calls_only_tools_something_provides(tmp_path, dockerfile, test, missing):
    hits = found(make(tmp_path, dockerfile=dockerfile, test=test), "test-sh-sanity")
    assert [f.reason.split("calls ")[1].split(",")[0] for f in hits] == missing
    assert all(f.severity == 3 for f in hits)


def test_the_verifier_image_in_separate_mode_is_the_tests_dockerfile(tmp_path):
    toml = '[verifier]\nenvironment_mode = "separate"\n'
    ok = {"tests/Dockerfile": "FROM python:3.12-slim\nRUN pip install pytest==8.4.1\nCOPY . /tests/\n"}
    assert not found(make(tmp_path, toml, dockerfile="FROM ubuntu:24.04\n", files=ok), "test-sh-sanity")
    bad = {"tests/Dockerfile": "FROM python:3.12-slim\nCOPY . /tests/\n"}
    hits = found(make(tmp_path, toml, dockerfile=GOOD_DOCKERFILE, files=bad), "test-sh-sanity")
    assert "tests/Dockerfile" in hits[0].reason


@pytest.mark.parametrize(("test", "says"), [
    ("#!/bin/bash\npytest /tests\n", "nothing under tests/ writes"),
    ("#!/bin/bash\nif pytest /tests; then echo 1 > reward.txt; else echo 0 > reward.txt; fi\n", "outside /logs/verifier"),
    ("#!/bin/bash\nif pytest /tests; then\n  echo 1 > /logs/verifier/reward.txt\nfi\n", "only when the tests pass"),
    ("#!/bin/bash\nset -euo pipefail\npytest /tests\necho 1 > /logs/verifier/reward.txt\n", "with set -e"),
    (GOOD_TEST, None),
    ("#!/bin/bash\nR=/logs/verifier\npytest /tests && echo 1 > $R/reward.txt || echo 0 > $R/reward.txt\n", None),
])
def test_test_sh_writes_a_reward_on_every_path_where_harbor_reads_it(tmp_path, test, says):
    hits = found(make(tmp_path, test=test), "test-sh-sanity")
    assert [says in f.reason for f in hits] == ([True] if says else [])


def test_a_reward_written_by_a_python_helper_counts(tmp_path):
    test = "#!/bin/bash\npytest /tests/test_x.py && python3 /tests/score.py\n"
    files = {"tests/score.py": 'open("/logs/verifier/reward.txt", "w").write("0.7")\n'}
    assert not found(make(tmp_path, test=test, files=files), "test-sh-sanity")
    files = {"tests/score.py": 'open("/tmp/reward.txt", "w").write("0.7")\n'}
    assert "outside /logs/verifier" in found(make(tmp_path, test=test, files=files), "test-sh-sanity")[0].reason


@pytest.mark.parametrize(("instruction", "timeout", "flagged"), [
    ("Do it.\n\nYou have 3600 seconds to complete this task.\n", "3600.0", False),
    ("Do it.\n\nYou have 2 hours to complete this task.\n", "7200", False),
    ("Do it.\n\nYou have 60 minutes.\n", "7200", True),
    ("Do it within 10 minutes.\n", None, True),
    ("Do it.\n", "120", False),
])
def test_instruction_timeout(tmp_path, instruction, timeout, flagged):
    toml = f"[agent]\ntimeout_sec = {timeout}\n" if timeout else ""
    hits = found(make(tmp_path, toml, instruction=instruction), "instruction-timeout")
    assert bool(hits) is flagged
    if hits:
        assert hits[0].evidence[0].file == "instruction.md" and hits[0].severity == 2


def test_task_fields_accepts_either_template_generation(tmp_path):
    base = ('difficulty_explanation = "d"\nsolution_explanation = "s"\nverification_explanation = "v"\n'
            'tags = ["t"]\nexpert_time_estimate_hours = 1\n')
    authors = '[task]\nname = "o/t"\n[[task.authors]]\nname = "A"\nemail = "a@x"\n'
    assert not found(make(tmp_path, f'{authors}[metadata]\n{base}category = "c"\n'), "task-fields")
    assert not found(make(tmp_path, f'{authors}[metadata]\n{base}domain = "d"\nfield = "f"\nsubfield = "s"\n'),
                     "task-fields")
    [hit] = found(make(tmp_path, f'[metadata]\n{base}category = ""\n'), "task-fields")
    assert "author_name, author_email, category" in hit.reason and hit.evidence[0].text == "[metadata]"


def test_validate_hints(tmp_path):
    always = "#!/bin/bash\npytest /tests || true\necho 1 > /logs/verifier/reward.txt\n"
    assert found(make(tmp_path, test=always), "validate-nop")[0].severity == 3
    errexit = "#!/bin/bash\nset -e\npytest /tests\necho 1 > /logs/verifier/reward.txt\n"
    assert not found(make(tmp_path, test=errexit), "validate-nop")
    trivial = {"tests/test_a.py": 'def test_a():\n    """doc"""\n    assert 1 == 1\n    assert "x"\n'}
    assert found(make(tmp_path, files=trivial), "validate-nop")[0].severity == 2
    real = {"tests/test_a.py": 'from pathlib import Path\ndef test_a():\n    assert Path("/app/out.txt").exists()\n'}
    assert not found(make(tmp_path, files=real), "validate-nop")
    expects = {"tests/test_a.py": 'from pathlib import Path\ndef test_a():\n'
                                  '    assert Path("/app/out.txt").read_text().strip() == "ok"\n'}
    assert not found(make(tmp_path, files=expects), "validate-oracle")
    wrong = "#!/bin/bash\ncat > /app/notes <<EOF\necho ok > /app/out.txt\nEOF\necho nope > out.txt\n"
    [hit] = found(make(tmp_path, solve=wrong, files=expects), "validate-oracle")
    assert "'nope' to /app/out.txt" in hit.reason and hit.evidence[0].line == 5  # WORKDIR /app; heredoc is data
    (tmp_path / "solution" / "solve.sh").unlink()
    assert "no solution/solve.sh" in found(make(tmp_path, solve=None), "validate-oracle")[0].reason


@pytest.mark.parametrize(("oracle", "null", "expect"), [
    ([1.0, 1.0], [0.0, 0.0], []),
    ([1.0, 0.5], [0.0, 0.0], [("validate-oracle", 3)]),
    ([1.0, None], [0.0, 0.0], [("validate-oracle", 2)]),  # a missing reward is undecided, not a failure of the task
    ([1.0, 1.0], [0.0, 1.0], [("validate-nop", 3)]),
    ([1.0, 1.0], [None, None], [("validate-nop", 2)]),  # and never a 0 that would pass the no-op check
    ([], [0.0], [("validate-oracle", 2)]),
    ([0.0, None], [0.25], [("validate-oracle", 3), ("validate-oracle", 2), ("validate-nop", 3)]),
])
def test_validation_findings(oracle, null, expect):
    findings = validation_findings(oracle, null)
    assert [(f.check, f.severity) for f in findings] == expect
    assert all(f.evidence for f in findings)


def test_shell_reader():
    script = ("#!/bin/bash\nset -e  # strict\nFOO=1 sudo apt-get install -y \\\n  curl && echo 'a # b' > /x\n"
              "cat > f.py << 'EOF'\nimport os\nos.system('pytest')\nEOF\n"
              "if [ -f x ]; then pytest -q; fi\npython3 -c \"\nprint(1)\n\" | tee y\n")
    got = [(c.line, c.name, c.conditional, c.redirects) for c in commands(script)]
    assert got == [(2, "set", False, []), (3, "apt-get", True, []), (4, "echo", True, [(">", "/x")]),
                   (5, "cat", False, [(">", "f.py")]), (9, "[", True, []), (9, "pytest", True, []),
                   (10, "python3", False, []), (12, "tee", False, [])]
    assert commands(script)[3].heredoc == "import os\nos.system('pytest')"
    assert commands(script)[6].piped_to == ["tee", "y"]


def test_a_windows_tasks_bat_scripts_are_not_read_as_shell(tmp_path):
    task = make(tmp_path, '[environment]\nos = "windows"\nallow_internet = false\n', test="",
                files={"tests/test.bat": "curl https://x.org/a\r\npytest\r\n"})
    assert task.test_script.name == "test.bat"
    assert not found(task, "test-sh-sanity") and not found(task, "allow-internet")
