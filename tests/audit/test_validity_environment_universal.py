"""The validity, environment and universal probes decide without Docker: each rule where it decides.

Validity reads a validation report (written here as ``validation.Validator`` writes them), environment
reads the listed tests' code (test patch over a base folder, library after the gold patch), universal
reads a trials table. Each case pins one condition of a rule, so flipping it fails a test.
"""

from __future__ import annotations

import pandas as pd
import pytest

from evalharness.audit.context import AuditContext, DirBaseCode
from evalharness.audit.probes import PROBES
from evalharness.audit.probes._testcode import apply_file_patch, patched
from evalharness.audit.probes.environment import EnvironmentProbe
from evalharness.audit.probes.universal import UniversalProbe
from evalharness.audit.probes.validity import VALIDATE_FIRST, ValidityProbe
from evalharness.types import TaskSpec

F2P = "tests/test_new.py::test_fixed"


def task(test_body: str = "def test_fixed():\n    assert True\n", *, patch: str = "", p2p=(), **extra) -> TaskSpec:
    lines = test_body.splitlines()
    test_patch = ("diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n--- /dev/null\n"
                  f"+++ b/tests/test_new.py\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{l}\n" for l in lines))
    fields = {"FAIL_TO_PASS": [F2P], "PASS_TO_PASS": list(p2p), **extra}
    return TaskSpec(instance_id="t1", problem_statement="something is wrong", patch=patch, test_patch=test_patch,
                    **fields)


def ctx(report=None, trials=None, base=None) -> AuditContext:
    return AuditContext(pack=None, validation=lambda t: report, trials=trials, base_code=lambda t: base)


def test_the_three_probes_are_registered_with_their_families():
    assert {n: (PROBES[n].family, PROBES[n].needs) for n in ("validity", "environment", "universal")} == {
        "validity": ("validity", "task"), "environment": ("environment", "task"),
        "universal": ("universal_failure", "runs")}
    assert all(len(PROBES[n].rule) > 200 for n in ("validity", "environment", "universal"))


# --- validity ---------------------------------------------------------------------------------------------

def report(verdict: str, base="failed", rates=(1.0,), **extra) -> dict:
    gold = ["passed" if r == 1.0 else "failed" for r in rates]
    return {"verdict": verdict, "reason": f"because {verdict}", "task_hash": "h", "seconds": 3.0,
            "tests": {F2P: {"list": "FAIL_TO_PASS", "base": base, "gold_pass_rate": rates[0], "gold": gold}},
            "runs": {"empty": {"outcome": "unresolved"}, "gold": [{"outcome": "resolved"}]}, **extra}


@pytest.mark.parametrize("verdict, status, flagged, severity", [
    ("ok", "ok", False, 0), ("gold_fails", "ok", True, 3), ("gold_does_not_apply", "ok", True, 3),
    ("env_build_failed", "ok", True, 3), ("flaky", "ok", True, 2), ("infra_error", "error", False, 0),
    ("no_recipe", "skipped", False, 0), ("a_new_verdict", "error", False, 0)])
def test_validity_turns_each_verdict_into_its_finding(verdict, status, flagged, severity):
    found = ValidityProbe().run(task(), ctx(report(verdict)))
    assert (found.status, found.flagged, found.severity) == (status, flagged, severity)
    assert found.family == "validity" and verdict in found.reason + found.evidence.get("verdict", "")


def test_validity_without_a_report_says_validate_first():
    found = ValidityProbe().run(task(), ctx(None))
    assert found.status == "skipped" and not found.flagged and found.reason == VALIDATE_FIRST
    assert "packs validate PACK --run" in found.reason


def test_empty_passes_is_3_when_every_fail_to_pass_passes_at_base_else_2():
    both = task(FAIL_TO_PASS=[F2P, "tests/test_new.py::test_other"])
    all_pass = report("empty_passes", base="passed")
    all_pass["tests"]["tests/test_new.py::test_other"] = {"list": "FAIL_TO_PASS", "base": "passed",
                                                          "gold_pass_rate": 1.0}
    assert ValidityProbe().run(both, ctx(all_pass)).severity == 3
    all_pass["tests"]["tests/test_new.py::test_other"]["base"] = "failed"
    some = ValidityProbe().run(both, ctx(all_pass))
    assert some.flagged and some.severity == 2
    assert F2P in some.evidence["tests"] and "tests/test_new.py::test_other" not in some.evidence["tests"]


def test_flaky_evidence_carries_the_pass_rates_and_the_failed_runs_tail():
    flaky = report("flaky", rates=(0.5,), cause="timed out")
    flaky["runs"]["gold"] = [{"outcome": "resolved"}, {"outcome": "unresolved", "output_tail": "AssertionError: 0.47"}]
    found = ValidityProbe().run(task(), ctx(flaky))
    assert found.evidence["tests"][F2P]["gold_pass_rate"] == 0.5
    assert found.evidence["gold_output_tail"] == "AssertionError: 0.47" and found.evidence["cause"] == "timed out"
    assert found.evidence["gold_outcomes"] == ["resolved", "unresolved"]


# --- environment ------------------------------------------------------------------------------------------

def env(body: str, base=None, report=None, **kw):
    return EnvironmentProbe().run(task(body, **kw), ctx(report, base=base))


NET = "import socket\n\ndef test_fixed():\n    s = socket.create_connection(('pypi.org', 443), timeout=1)\n    s.close()\n"


def test_a_socket_to_a_remote_host_is_the_network_and_one_to_loopback_is_not():
    found = env(NET)
    assert found.flagged and found.severity == 2 and found.evidence["hits"][0]["kind"] == "network"
    assert "pypi.org" in found.reason and found.evidence["hits"][0]["line"] == 4
    assert not env(NET.replace("pypi.org", "127.0.0.1")).flagged
    assert not env(NET.replace("pypi.org", "localhost")).flagged


def test_a_url_a_parser_reads_is_not_the_network_and_a_mocked_client_is_not_either():
    parse = "from urllib.parse import urlsplit\n\ndef test_fixed():\n    assert urlsplit('https://pypi.org/x').path == '/x'\n"
    assert not env(parse).flagged
    fetch = "import requests\n\ndef test_fixed():\n    assert requests.get('https://pypi.org/simple').ok\n"
    assert env(fetch).flagged
    mocked = ("import requests\nfrom unittest import mock\n\n@mock.patch('requests.get')\ndef test_fixed(get):\n"
              "    get.return_value.ok = True\n    assert requests.get('https://pypi.org/simple').ok\n")
    assert not env(mocked).flagged


def test_a_clients_data_class_is_not_a_connection_and_bare_test_names_are_found():
    response = "import requests\n\ndef test_fixed():\n    r = requests.Response()\n    r.url = 'https://pypi.org/'\n" \
               "    assert r.url\n"
    assert not env(response).flagged
    session = "import requests\n\ndef test_fixed():\n    assert requests.session()\n    requests.get  # pypi.org\n"
    assert not env(session + "URL = 'https://pypi.org/'\n").flagged
    used = "import requests\n\ndef test_fixed():\n    assert requests.Session().get('https://pypi.org/').ok\n"
    assert env(used).flagged
    bare = TaskSpec(instance_id="t1", problem_statement="x", test_patch=task(NET).test_patch, FAIL_TO_PASS=["test_fixed"])
    found = EnvironmentProbe().run(bare, ctx())
    assert found.flagged and found.evidence["tests_read"] == 1


def test_only_listed_tests_count():
    other = "import socket\n\ndef test_fixed():\n    assert 1\n\ndef test_unlisted():\n" \
            "    socket.create_connection(('pypi.org', 443))\n"
    found = env(other)
    assert not found.flagged and found.evidence["tests_read"] == 1


LIB = "import socket\n\n\ndef reachable(url, timeout=1.0):\n    host = url.split('/')[2]\n" \
      "    try:\n        socket.create_connection((host, 80), timeout).close()\n    except OSError:\n" \
      "        return False\n    return True\n"


def test_a_library_function_that_connects_is_followed_one_level_after_the_gold_patch(tmp_path):
    (tmp_path / "shelf").mkdir()
    (tmp_path / "shelf" / "net.py").write_text(LIB.replace("import socket\n", "import socket as _s\n")
                                               .replace("socket.create", "_s.create"))
    body = "from shelf.net import reachable\n\ndef test_fixed():\n    assert reachable('http://10.255.255.1:81/') is False\n"
    found = env(body, base=DirBaseCode(tmp_path))
    assert found.flagged and found.severity == 2 and "socket.create_connection" in found.reason
    (tmp_path / "shelf" / "net.py").write_text("def reachable(url):\n    return False\n")
    assert not env(body, base=DirBaseCode(tmp_path)).flagged
    adds = ("diff --git a/shelf/net.py b/shelf/net.py\n--- a/shelf/net.py\n+++ b/shelf/net.py\n"
            "@@ -1,2 +1,3 @@\n def reachable(url):\n-    return False\n+    import urllib.request\n"
            "+    return urllib.request.urlopen(url).status == 200\n")
    assert env(body, base=DirBaseCode(tmp_path), patch=adds).flagged     # the function as the gold patch leaves it


def test_the_clock_is_severity_1_a_timing_assertion_2_a_frozen_clock_none():
    wall = "import time\nfrom shelf import age\n\ndef test_fixed():\n    assert age(time.time() - 180) == '3 minutes ago'\n"
    assert (env(wall).flagged, env(wall).severity) == (True, 1)
    timing = ("import time\n\ndef test_fixed():\n    t0 = time.perf_counter()\n    time.sleep(0.01)\n"
              "    assert time.perf_counter() - t0 < 0.05\n")
    assert env(timing).severity == 2
    frozen = "from freezegun import freeze_time\nimport time\n\n@freeze_time('2024-01-01')\n" + wall.split("\n\n", 1)[1]
    assert not env(frozen).flagged
    today = "from datetime import date\n\ndef test_fixed():\n    assert date.today().year >= 2024\n"
    assert env(today).flagged and "datetime.date.today" in env(today).reason


def test_the_host_environment_unless_the_test_sets_it(tmp_path):
    home = "import os\n\ndef test_fixed():\n    assert os.path.expanduser('~') == '/root'\n"
    assert env(home).flagged and env(home).evidence["hits"][0]["kind"] == "host"
    setenv = "import os\n\ndef test_fixed(monkeypatch):\n    monkeypatch.setenv('HOME', '/x')\n" \
             "    assert os.path.expanduser('~') == '/x'\n"
    assert not env(setenv).flagged
    etc = "def test_fixed():\n    assert 'root' in open('/etc/passwd').read()\n"
    assert env(etc).flagged and "/etc/passwd" in env(etc).reason
    data = "from posixpath import basename\n\ndef test_fixed():\n    assert basename('/home/u/a.txt') == 'a.txt'\n"
    assert not env(data).flagged                                            # a path as data, not opened
    built = "from pathlib import Path\n\ndef test_fixed():\n    assert Path('/home/u/a.txt').name == 'a.txt'\n"
    assert not env(built).flagged
    read = "from pathlib import Path\n\ndef test_fixed():\n    assert Path('/etc/hostname').read_text()\n"
    assert env(read).flagged and "/etc/hostname" in env(read).reason
    skipif = "import sys, pytest\n\n@pytest.mark.skipif(sys.platform == 'win32', reason='posix')\n" \
             "def test_fixed():\n    assert 1\n"
    assert not env(skipif).flagged


def test_a_library_reading_the_users_home_is_the_host_and_one_reading_its_own_setting_is_not(tmp_path):
    (tmp_path / "shelf").mkdir()
    lib = tmp_path / "shelf" / "config.py"
    body = "from shelf.config import cache_dir\n\ndef test_fixed():\n    assert cache_dir('a').endswith('a')\n"
    lib.write_text("import os\n\ndef cache_dir(app):\n    return os.path.join(os.environ.get('XDG_CACHE_HOME', ''), app)\n")
    assert env(body, base=DirBaseCode(tmp_path)).flagged
    lib.write_text("import os\n\ndef cache_dir(app):\n    return os.path.join(os.environ.get('SHELF_DIR', ''), app)\n")
    assert not env(body, base=DirBaseCode(tmp_path)).flagged             # the library's own setting
    lib.write_text("import os\n\ndef cache_dir(app):\n    return os.path.join(os.path.expanduser('~'), app)\n")
    assert env(body, base=DirBaseCode(tmp_path)).flagged
    sets = "import os\n\ndef test_fixed():\n    os.environ['SHELF_DIR'] = '/x'\n    assert os.environ['SHELF_DIR']\n"
    assert not env(sets).flagged                                            # the test sets what it reads


def test_network_failures_in_the_validation_output_are_the_network():
    seen = {"runs": {"empty": {"outcome": "unresolved", "output_tail": "x"},
                     "gold": [{"outcome": "unresolved", "output_tail": "socket.gaierror: [Errno -3] Temporary "
                                                                       "failure in name resolution"}]}}
    found = env("def test_fixed():\n    assert 1\n", report=seen)
    assert found.flagged and found.severity == 2 and "gold run" in found.reason
    assert not env("def test_fixed():\n    assert 1\n", report={"runs": {"gold": [{"outcome": "resolved"}]}}).flagged


def test_unreadable_tests_are_skipped_not_passed():
    t = TaskSpec(instance_id="t1", problem_statement="x", FAIL_TO_PASS=["tests/test_old.py::test_a"])
    found = EnvironmentProbe().run(t, ctx())
    assert found.status == "skipped" and found.evidence["tests_not_found"] == ["tests/test_old.py::test_a"]


def test_hunks_apply_to_the_base_or_not_at_all():
    old = "a\nb\nc\n"
    diff = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n"
    assert apply_file_patch(old, diff) == "a\nb\nC\n"
    assert apply_file_patch("a\nx\nc\n", diff) is None
    assert patched("f", diff, None) == "C"                                  # no base: the added lines only


# --- universal --------------------------------------------------------------------------------------------

def trials(rows) -> pd.DataFrame:
    return pd.DataFrame([{"task_id": t, "harness": h, "model": m, "resolved": r, "infra": i, "outcome": o}
                         for t, h, m, r, i, o in rows])


def runs(config_results: dict[str, list[int]], task_id="t1") -> pd.DataFrame:
    return trials([(task_id, c.split("/")[0], c.split("/")[1], bool(r), False, "resolved" if r else "unresolved")
                   for c, rs in config_results.items() for r in rs])


def test_unsolved_over_enough_trials_and_configs_is_a_severity_1_candidate():
    found = UniversalProbe().run(task(), ctx(trials=runs({"a/m1": [0, 0, 0], "b/m2": [0, 0]})))
    assert found.flagged and found.severity == 1 and "candidate" in found.reason
    assert found.evidence["per_config"] == {"a/m1": {"trials": 3, "resolved": 0}, "b/m2": {"trials": 2, "resolved": 0}}


def test_one_success_anywhere_clears_it():
    found = UniversalProbe().run(task(), ctx(trials=runs({"a/m1": [0, 0, 0], "b/m2": [0, 1]})))
    assert not found.flagged and found.status == "ok" and "b/m2 1/2" in found.reason


@pytest.mark.parametrize("results", [{"a/m1": [0, 0, 0, 0]}, {"a/m1": [0, 0], "b/m2": [0, 0]}])
def test_too_few_trials_or_configurations_are_skipped(results):
    found = UniversalProbe().run(task(), ctx(trials=runs(results)))
    assert found.status == "skipped" and not found.flagged


def test_infrastructure_failures_and_task_errors_do_not_count_and_no_runs_skips():
    rows = [("t1", "a", "m1", False, False, "unresolved")] * 3 + [("t1", "b", "m2", False, False, "unresolved")] * 1
    rows += [("t1", "b", "m2", False, True, "sandbox_error")] * 3 + [("t1", "b", "m2", False, False, "task_error")]
    rows += [("t2", "b", "m2", False, False, "unresolved")] * 9
    found = UniversalProbe().run(task(), ctx(trials=trials(rows)))
    assert found.status == "skipped" and found.evidence["trials"] == 4
    assert UniversalProbe(min_trials=4).run(task(), ctx(trials=trials(rows))).flagged
    assert UniversalProbe().run(task(), ctx(trials=None)).status == "skipped"
