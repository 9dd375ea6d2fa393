"""Harbor decisions without Docker: the base chosen for an image, the FROM rewrite, the reward's outcome and the
tamper verdict. Each condition flipped changes the answer."""

from __future__ import annotations

import math

import pytest

from evalharness.sources.harbor.basemap import (DEFAULT_MAP, choose_base, copy_from_images, from_images, load_map,
                                                map_image, rewrite_from)
from evalharness.sources.harbor.run.links import into_verifier, link_commands
from evalharness.sources.harbor.run.reward import (MALFORMED, MISSING, NOT_FINITE, OUT_OF_RANGE, TIMED_OUT,
                                                   attribute, parse_reward, reward_from_dict)
from evalharness.sources.harbor.run.tamper import classify, tampered
from evalharness.sources.harbor.run.trial import removals
from evalharness.errors import UserError
from evalharness.types import Outcome


def test_the_map_applies_only_when_the_image_is_neither_here_nor_pullable():
    assert choose_base("python:3.13-slim-bookworm", present=True, pulled=False, mapping=DEFAULT_MAP).image \
        == "python:3.13-slim-bookworm"
    assert choose_base("python:3.13-slim-bookworm", present=False, pulled=True, mapping=DEFAULT_MAP).mapped is False
    offline = choose_base("python:3.13-slim-bookworm", present=False, pulled=False, mapping=DEFAULT_MAP)
    assert (offline.image, offline.mapped) == ("evalharness-base:trixie", True)
    ubuntu = choose_base("ubuntu:24.04", present=False, pulled=False, mapping=DEFAULT_MAP)
    assert ubuntu.image is None and "ubuntu:24.04" in ubuntu.reason


def test_map_patterns_normalise_registry_spellings_and_the_longest_wins():
    assert map_image("docker.io/library/python:3.13", DEFAULT_MAP) == "evalharness-base:trixie"
    assert map_image("ubuntu:24.04", DEFAULT_MAP) is None
    mapping = {**DEFAULT_MAP, "python:3.13-slim*": "mine:1"}
    assert map_image("python:3.13-slim-bookworm", mapping) == "mine:1"
    assert map_image("python:3.13", mapping) == "evalharness-base:trixie"


def test_a_user_map_extends_the_default_and_a_bad_one_is_named(tmp_path):
    good = tmp_path / "map.yaml"
    good.write_text('"ubuntu:24.04": evalharness-base:bookworm\n')
    assert load_map(good)["ubuntu:24.04"] == "evalharness-base:bookworm"
    assert "python:3.13*" in load_map(good)
    bad = tmp_path / "bad.yaml"
    bad.write_text("- ubuntu\n")
    with pytest.raises(UserError, match="bad.yaml"):
        load_map(bad)


def test_from_rewrite_handles_platform_stages_and_leaves_other_lines():
    dockerfile = ("# c\nFROM --platform=linux/amd64 python:3.13-slim-bookworm AS build\nRUN x\n"
                  "FROM build\nCOPY --from=build /a /b\n")
    assert from_images(dockerfile) == ["python:3.13-slim-bookworm"]
    assert copy_from_images(dockerfile) == []
    out = rewrite_from(dockerfile, {"python:3.13-slim-bookworm": "base:t"}, ["RUN prelude"])
    assert out.splitlines() == ["# c", "FROM base:t AS build", "RUN prelude", "RUN x", "FROM build",
                                "COPY --from=build /a /b"]
    assert rewrite_from(dockerfile, {}, ["RUN prelude"]) == dockerfile
    assert copy_from_images("FROM python:3.12\nCOPY --from=ghcr.io/astral-sh/uv:0.8.15 /uv /bin/\n") \
        == ["ghcr.io/astral-sh/uv:0.8.15"]


@pytest.mark.parametrize("txt, outcome, reward", [
    (b"1\n", Outcome.RESOLVED, 1.0), (b"0", Outcome.UNRESOLVED, 0.0), (b"0.25", Outcome.UNRESOLVED, 0.25),
    (b"1.0", Outcome.RESOLVED, 1.0)])
def test_reward_txt(txt, outcome, reward):
    found = parse_reward(txt, None)
    assert (found.outcome, found.reward, found.defect) == (outcome, reward, None)


@pytest.mark.parametrize("txt, js, defect", [
    (None, None, MISSING), (b"", None, MALFORMED), (b"yes", None, MALFORMED), (b"nan", None, NOT_FINITE),
    (b"inf", None, NOT_FINITE), (b"2", None, OUT_OF_RANGE), (b"-0.5", None, OUT_OF_RANGE),
    (None, b"{not json", MALFORMED), (None, b"[1]", MALFORMED), (None, b"{}", MALFORMED),
    (None, b'{"a": true}', MALFORMED), (None, b'{"a": 3}', OUT_OF_RANGE)])
def test_a_bad_reward_is_the_verifiers_outcome_never_a_zero(txt, js, defect):
    found = parse_reward(txt, js)
    assert found.outcome is Outcome.VERIFIER_ERROR and found.defect == defect and found.reward is None
    assert not Outcome.VERIFIER_ERROR.counts_in_rate


def test_reward_json_is_resolved_only_when_every_reward_is_one_and_txt_wins():
    both = parse_reward(None, b'{"correctness": 1, "performance": 1}')
    assert both.outcome is Outcome.RESOLVED and both.rewards == {"correctness": 1.0, "performance": 1.0}
    half = parse_reward(None, b'{"correctness": 1, "performance": 0}')
    assert half.outcome is Outcome.UNRESOLVED and math.isclose(half.reward, 0.5) and "performance" in half.reason
    assert parse_reward(b"0", b'{"a": 1}').outcome is Outcome.UNRESOLVED
    assert parse_reward(b"1", None, timed_out=True).defect == TIMED_OUT


def _diff(*paths, kind=0):
    return [{"Path": p, "Kind": kind} for p in paths]


def test_toolchain_changes_in_a_shared_verifier_are_tampering():
    changes = classify(_diff("/usr", "/usr/bin", "/usr/bin/python3", "/app/hello.txt", "/tmp/x", "/etc/motd"), "/app")
    assert changes.toolchain == ("changed /usr/bin/python3",)
    assert changes.outside == ("changed /etc/motd",)
    assert tampered(changes, shared_verifier=True)
    assert not tampered(changes, shared_verifier=False)  # a separate verifier never runs the agent's files
    clean = classify(_diff("/app", "/app/hello.txt", "/tmp/y", "/root/.cache/pip/x", "/usr/sbin/docker-init",
                           "/etc/hosts"), "/app")
    assert clean.toolchain == () and clean.outside == () and not tampered(clean, shared_verifier=True)


@pytest.mark.parametrize("path", ["/root/.bashrc", "/etc/profile.d/x.sh", "/usr/local/lib/python3.13/site-packages/_pytest/x.py",
                                  "/etc/ld.so.preload",
                                  "/bin/bash", "/usr/local/bin/uvx", "/conftest.py", "/pytest.ini",
                                  "/usr/include/stdio.h", "/usr/share/perl5/Test/More.pm", "/usr/libexec/x"])
def test_each_route_to_the_verifier_is_toolchain(path):
    assert classify(_diff(path, kind=1), "/app").toolchain == (f"added {path}",)



@pytest.mark.parametrize("path", ["/etc/gitconfig", "/root/.gitconfig", "/root/.config/git/config",
                                  "/usr/share/git-core/templates/hooks/post-checkout",
                                  "/etc/pip.conf", "/etc/xdg/pip/pip.conf", "/root/.config/pip/pip.conf",
                                  "/root/.pip/pip.conf", "/usr/pip.conf", "/usr/local/pip.conf", "/opt/venv/pip.conf",
                                  "/etc/uv/uv.toml", "/etc/xdg/uv/uv.toml", "/root/.config/uv/uv.toml", "/uv.toml"])
def test_git_pip_and_uv_configuration_is_toolchain(path):
    """git's configuration names programs git runs (core.fsmonitor, hooks); pip's and uv's where packages come from."""
    assert classify(_diff(path, kind=1), "/app").toolchain == (f"added {path}",)
    assert tampered(classify(_diff(path, kind=0), "/app"), shared_verifier=True)


@pytest.mark.parametrize("path", ["/root/.config/git", "/root/.config/uv", "/root/.pip", "/etc/uv", "/etc/xdg",
                                  "/etc/xdg/pip", "/usr/share", "/usr/share/git-core"])
def test_a_configuration_folder_replaced_whole_is_toolchain(path):
    """Listed alone (a link into the work directory, say); listed for what changed inside it, it is not itself."""
    assert classify(_diff(path), "/app").toolchain == (f"changed {path}",)
    assert f"changed {path}" not in classify(_diff(path, f"{path}/x"), "/app").toolchain


def test_other_programs_configuration_is_only_outside():
    changes = classify(_diff("/root/.config/htop/htoprc", "/root/.gitignore_notes", "/etc/xdg/autostart/x.desktop",
                             "/usr/share/doc/git/README", kind=1), "/app")
    assert changes.toolchain == () and len(changes.outside) == 4

def test_declared_artifacts_are_not_changes_outside():
    changes = classify(_diff("/root/results/r.json", "/root/results"), "/root", ("/root/results/r.json",))
    assert (changes.toolchain, changes.outside, changes.bytecode) == ((), (), ())
    assert changes.written == ("/root/results/r.json", "/root/results")  # still checked for links


def test_bytecode_is_set_apart_to_be_removed_not_judged():
    changes = classify(_diff("/opt/venv/lib/python3.11/site-packages/x/__pycache__",
                             "/opt/venv/lib/python3.11/site-packages/x/__pycache__/a.cpython-311.pyc",
                             "/usr/lib/python3/dist-packages/y.pyc", kind=1), "/app")
    assert changes.toolchain == () and changes.outside == ()
    assert changes.bytecode == ("/opt/venv/lib/python3.11/site-packages/x/__pycache__/a.cpython-311.pyc",
                                "/usr/lib/python3/dist-packages/y.pyc")
    assert not tampered(changes, shared_verifier=True)
    assert classify(_diff("/usr/lib/python3/dist-packages/y.pyc", kind=2), "/app").bytecode == ()


def test_what_fresh_volumes_shadow_is_listed_not_judged():
    changes = classify(_diff("/tests/test_state.py", "/logs/verifier/reward.txt", kind=1), "/app")
    assert changes.toolchain == () and changes.outside == ("added /tests/test_state.py",
                                                           "added /logs/verifier/reward.txt")
    assert not tampered(changes, shared_verifier=True)


@pytest.mark.parametrize("defect_reward", [parse_reward(None, None), parse_reward(b"nan", None),
                                           parse_reward(b"2", None), parse_reward(None, None, timed_out=True)])
def test_whose_bad_reward_it_is_the_verifier_on_the_tasks_own_state_decides(defect_reward):
    works, fails = parse_reward(b"0", None), parse_reward(None, None)
    agents = attribute(defect_reward, works)  # the verifier gives a reward without the agent: the agent broke it
    timed = defect_reward.defect == TIMED_OUT
    assert agents.outcome is (Outcome.TESTS_TIMED_OUT if timed else Outcome.UNRESOLVED)
    assert agents.outcome.counts_in_rate and agents.defect == defect_reward.defect and agents.reward is None
    assert "the agent's final state broke it" in agents.reason
    verifiers = attribute(defect_reward, fails)  # it fails without the agent too: the task's verifier
    assert verifiers.outcome is Outcome.VERIFIER_ERROR and not verifiers.outcome.counts_in_rate
    assert "on the task's own state too" in verifiers.reason
    assert attribute(defect_reward, None) == defect_reward  # not asked: as it was


def test_a_valid_reward_is_never_reattributed():
    one = parse_reward(b"1", None)
    assert attribute(one, parse_reward(None, None)) == one
    assert reward_from_dict({"outcome": "unresolved", "reason": "r", "reward": 0.0, "rewards": {}, "defect": None}) \
        == parse_reward(b"0", None).__class__(Outcome.UNRESOLVED, "r", 0.0, {}, None)


@pytest.mark.parametrize("path", ["/usr/local/sbin", "/usr/local", "/usr/lib", "/opt/venv/bin", "/root/.local",
                                  "/etc", "/etc/python3.11/sitecustomize.py", "/etc/alternatives/awk"])
def test_a_toolchain_folder_changed_itself_is_toolchain(path):
    """Replaced whole (a link into the work directory, say), a folder is listed alone: its new contents never."""
    assert classify(_diff(path), "/app").toolchain == (f"changed {path}",)


def test_a_folder_listed_because_of_what_changed_inside_it_is_not():
    assert classify(_diff("/usr", "/usr/local", "/usr/local/share/doc/x", "/etc", "/etc/motd"), "/app").toolchain == ()


def test_bytecode_removal_is_recursive_and_split_under_one_argument():
    assert removals(()) == []
    assert removals(("/tmp/a b.pyc", "/tmp/c.pyc")) == ["rm -rf -- '/tmp/a b.pyc' /tmp/c.pyc"]
    many = removals(tuple(f"/tmp/__pycache__/{'x' * 100}{i}.pyc" for i in range(3000)))
    assert len(many) > 1 and all(len(c) <= 64 * 1024 for c in many)
    assert sum(c.count("/tmp/__pycache__/") for c in many) == 3000


def test_links_into_the_verifiers_folders_are_found():
    assert into_verifier("/app/a\0/tests/expected.txt\0/app/b\0/usr/bin/python3.11\0/app/c\0/testsuite/x\0"
                         "/app/d\0/logs/verifier\0") == ["/app/a -> /tests/expected.txt", "/app/d -> /logs/verifier"]
    assert into_verifier("") == [] and into_verifier("/app/e\0\0") == []
    assert into_verifier("/app/r\0/\0/app/l\0/logs\0/app/v\0/logs/verifierx\0") == ["/app/r -> /",
                                                                                     "/app/l -> /logs"]
    commands = link_commands([f"/app/{'y' * 200}{i}" for i in range(1000)])
    assert len(commands) > 1 and all(len(c) <= 64 * 1024 for c in commands)


@pytest.mark.parametrize("txt, js, defect", [
    (b"0_1", None, MALFORMED), ("\uff11".encode(), None, MALFORMED), (b"1 1", None, MALFORMED),
    (None, b'{"a": 1' + b"0" * 400 + b"}", OUT_OF_RANGE), (None, b'{"a": "0_1"}', MALFORMED)])
def test_a_reward_is_a_plain_number(txt, js, defect):
    """``float`` alone reads ``0_1`` as 1 and a fullwidth one as 1; a 400-digit JSON integer made it raise."""
    assert parse_reward(txt, js).defect == defect
    assert parse_reward(b" 1e0\n", None).outcome is Outcome.RESOLVED and parse_reward(b".5", None).reward == 0.5


@pytest.mark.parametrize("workdir", ["/", "/usr/local", "/root"])
def test_the_toolchain_counts_wherever_the_work_directory_is(workdir):
    """A task without WORKDIR works in /: every path was under it, so nothing was toolchain."""
    changes = classify(_diff("/usr/local/bin/python3", "/root/.local/lib/x.pth", kind=1), workdir)
    assert changes.toolchain == ("added /usr/local/bin/python3", "added /root/.local/lib/x.pth")
    assert classify(_diff(workdir, "/srv/x" if workdir == "/" else f"{workdir}/notes.txt"), workdir).toolchain == ()
    assert classify(_diff("/app/x.txt", kind=1), "/").outside == ()  # the work directory's own files
