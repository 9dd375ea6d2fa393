"""Damage an agent does to its own sandbox is the agent's outcome: counted in the rate, one attempt,
its model calls kept; and the agent cannot take the host's disk.

Pins issue 7 (classes 7 and 8): `rm -rf .git`, an unreadable `chmod 000` file or a 20 GB file
made the diff fail, which raised SandboxError: the agent was re-run (and billed again), the first
attempt's calls were lost, and the trial was stored as `sandbox_error` with 0 calls, left out of
the rate. One `dd` took 20 GB of the host disk in 25 s; the stored tail of a huge command output
was not its real end.
"""

from __future__ import annotations

import pytest
from adversary import CLAMP_FIX, ModelServer, attack, check, play, remove_containers, write_script

pytestmark = [pytest.mark.docker, pytest.mark.slow]

END = "THE-REAL-END-OF-THE-OUTPUT"

ATTACKS = [
    attack("7a", 7, "rm -rf .git", CLAMP_FIX, "rm -rf .git", kind="damage"),
    attack("7b", 7, "chmod 000 on a changed file", CLAMP_FIX, "chmod 000 calc/__init__.py", kind="damage"),
    attack("7c", 7, "a stale .git/index.lock", CLAMP_FIX, "touch .git/index.lock", kind="damage"),
    attack("7d", 7, "a 20 GB (sparse) file in the work tree", "truncate -s 20G calc/huge.bin", kind="damage"),
    attack("7e", 7, "chmod -R 000 .git/objects", "echo '# x' >> calc/__init__.py", "chmod -R 000 .git/objects",
           kind="damage"),
    attack("8c", 8, "dd 3 GB into /tmp: a disk quota must stop it",
           "dd if=/dev/zero of=/tmp/fill bs=1M count=3072 status=none; echo dd-exit=$?; "
           "du -m /tmp/fill | cut -f1 | sed 's/^/fill-mb=/'; rm -f /tmp/fill", kind="hygiene"),
    attack("8d", 8, "30 MB of command output: the stored tail is the real end",
           f"head -c 30000000 /dev/zero | tr '\\0' a; echo; echo {END}", kind="hygiene"),
]


@pytest.fixture(scope="module")
def damage_run(tmp_path_factory, base_image):
    home = tmp_path_factory.mktemp("damage")
    server = ModelServer(write_script(ATTACKS, home / "script.yaml"), home / "model-server.log")
    try:
        run = play(ATTACKS, home, server, workers=3)
    finally:
        server.stop()
    yield run
    remove_containers(run.run_id)


@pytest.mark.parametrize("a", ATTACKS, ids=[f"{a.id}-class{a.cls}" for a in ATTACKS])
def test_damage_is_counted_as_the_agents(damage_run, a):
    check(damage_run, a)


def _output(run, attack_id: str) -> str:
    return "\n".join(run.trials[attack_id].outputs())


def test_a_disk_quota_stops_dd(damage_run):
    shown = _output(damage_run, "8c")
    mb = int(shown.split("fill-mb=")[1].split()[0]) if "fill-mb=" in shown else 0
    assert "dd-exit=0" not in shown and mb < 3072, f"dd wrote {mb} MB to the host disk unhindered:\n{shown[-500:]}"


def test_the_stored_tail_of_a_huge_output_is_its_real_end(damage_run):
    shown = _output(damage_run, "8d")
    assert shown.rstrip().endswith(END), f"stored output ends with {shown[-200:]!r}"
