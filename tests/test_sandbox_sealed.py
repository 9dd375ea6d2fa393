"""The trial sandbox is sealed: one commit of history, no remotes, no network, limits, labels, cleanup.

Pins: SWE-bench-style sandboxes that kept the upstream history let agents read the fix from a
future commit; containers left running after a crash piled up on shared machines.
"""

from __future__ import annotations

import pytest

from evalharness.errors import BudgetExhausted
from evalharness.sandbox.engine import LABEL_RUN, LABEL_TRIAL

pytestmark = pytest.mark.docker


def test_git_log_all_shows_only_the_base_commit(tinypack, sandbox_factory):
    sandbox = sandbox_factory(tinypack, tinypack.tasks[0])
    log = sandbox.exec("git log --all --format=%H").output.split()
    assert log == [sandbox.base_commit()]
    assert sandbox.exec("git remote -v").output == ""
    assert sandbox.exec("git rev-list --all --count").output.strip() == "1"
    # the injected defect is part of the base: the work tree is clean
    assert sandbox.exec("git status --porcelain").output == ""


def test_agent_commands_run_as_non_root(tinypack, sandbox_factory):
    sandbox = sandbox_factory(tinypack, tinypack.tasks[0])
    assert sandbox.exec("id -u").output.strip() == "1000"
    assert sandbox.exec("touch /etc/evil").exit_code != 0


def test_no_network_at_all(tinypack, sandbox_factory, docker_client):
    sandbox = sandbox_factory(tinypack, tinypack.tasks[0])
    interfaces = sandbox.exec("ls /sys/class/net").output.split()
    assert interfaces == ["lo"]
    probe = ("import socket,sys\n"
             "for host, port in [('pypi.org', 443), ('1.1.1.1', 53), ('172.17.0.1', 2375)]:\n"
             "    try:\n"
             "        socket.create_connection((host, port), timeout=3); print('REACHED', host)\n"
             "    except OSError as e:\n"
             "        print('blocked', host, type(e).__name__)\n")
    sandbox.write_file("/tmp/probe.py", probe)
    out = sandbox.exec("python3 /tmp/probe.py").output
    assert "REACHED" not in out and out.count("blocked") == 3
    attrs = docker_client.api.inspect_container(sandbox.id)
    assert attrs["HostConfig"]["NetworkMode"] == "none"


def test_limits_and_labels_are_applied(tinypack, sandbox_factory, docker_client):
    sandbox = sandbox_factory(tinypack, tinypack.tasks[0])
    attrs = docker_client.api.inspect_container(sandbox.id)
    host = attrs["HostConfig"]
    gib, mib = 1024**3, 1024**2
    # the processes keep their 2 GiB; tmpfs pages (work tree and home 2 GiB each, /tmp and /var/tmp 1 GiB
    # each, the grader's 256 MiB scratch) are charged to the container too, so the limit carries them
    assert host["Memory"] == 2 * gib + 2 * 2 * gib + 2 * gib + 256 * mib + 64 * mib
    assert host["MemorySwap"] == host["Memory"] and host["NanoCpus"] == 1_000_000_000 and host["PidsLimit"] == 512
    assert host["ReadonlyRootfs"] is True and "no-new-privileges" in host["SecurityOpt"]
    assert host["Tmpfs"]["/testbed"].startswith(f"size={2 * gib},") and host["Tmpfs"]["/tmp"].startswith(f"size={gib},")
    df = sandbox.exec("df -B1 --output=size /testbed /tmp | tail -2").output.split()
    assert [int(v) for v in df] == [2 * gib, gib]
    assert sandbox.exec("touch /usr/x 2>&1; touch /opt/evalharness/x 2>&1").exit_code != 0
    labels = attrs["Config"]["Labels"]
    assert labels[LABEL_TRIAL] == "tiny-clamp" and labels[LABEL_RUN].startswith("test-")


def test_every_exec_has_a_wall_clock_timeout(tinypack, sandbox_factory):
    sandbox = sandbox_factory(tinypack, tinypack.tasks[0])
    result = sandbox.exec("sleep 30; echo never", timeout=1)
    assert result.timed_out and "never" not in result.output and result.duration_s < 10
    # background children die with the command
    sandbox.exec("(sleep 300 &) ; sleep 30", timeout=1)
    commands = sandbox.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '").output
    assert "sleep infinity" in commands  # the listing works: the container's own main process is there
    assert "sleep 300" not in commands


def test_wall_budget_stops_new_commands(tinypack, sandbox_factory):
    sandbox = sandbox_factory(tinypack, tinypack.tasks[0])
    sandbox.set_wall_budget(1.5)
    assert sandbox.exec("sleep 5", timeout=60).timed_out  # cut at the deadline, not at 60 s
    with pytest.raises(BudgetExhausted):
        sandbox.exec("echo late")


def test_diff_includes_new_files_and_read_write_round_trip(tinypack, sandbox_factory):
    sandbox = sandbox_factory(tinypack, tinypack.tasks[0])
    sandbox.write_file("/testbed/calc/extra.py", "X = 1\n")
    assert sandbox.read_file("/testbed/calc/extra.py") == b"X = 1\n"
    assert "+++ b/calc/extra.py" in sandbox.diff()


def test_close_removes_the_container(tinypack, sandbox_factory, docker_client):
    sandbox = sandbox_factory(tinypack, tinypack.tasks[0])
    cid = sandbox.id
    sandbox.close()
    assert not docker_client.containers.list(all=True, filters={"id": cid})
