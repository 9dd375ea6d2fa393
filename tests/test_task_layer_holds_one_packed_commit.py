"""A task image's own layer holds the task's base commit once, as one git pack, and what git does not
track; a sandbox rebuilds from them the work tree an agent and the grader see.

Pins: the layer held the work tree four times (the files, chowned; their loose objects in .git; the
grader's base.git; seed.tar), 5-101 MB per SWE-bench Lite task (median 56.6 MB). And what the
rebuilt tree must keep: one commit and no later one (the environment's checkout is a later commit
with its history), ignored build output, empty folders, /home/agent, an agent-owned tree whose git
works.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import git
import pytest
from support import TINYPACK, run_cli

from evalharness.packs import load_pack

pytestmark = pytest.mark.docker

FUTURE = "FUTURE_FIX_7f3a"
BIG = 1024 * 1024


def _upstream(root: Path) -> tuple[str, str]:
    """A repository with the task's base commit and a later one (what the environment checks out)."""
    shutil.copytree(TINYPACK / "src", root)
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / ".gitattributes").write_text("*.bat eol=crlf\nident.txt ident\n")  # the checkout converts these
    (root / "win.bat").write_text("echo a\n")
    (root / "ident.txt").write_text("$Id$\n")
    (root / "CHANGES").write_text("base\n")
    rng = random.Random(7)  # text that compresses about 2:1, like source code
    (root / "calc" / "table.txt").write_text("".join(rng.choice("0123456789abcdef") for _ in range(BIG)))
    repo = git.Repo.init(root)
    repo.index.add([".gitignore", ".gitattributes", "win.bat", "ident.txt", "CHANGES", "calc/__init__.py",
                    "calc/table.txt", "tests/test_calc.py"])
    base = repo.index.commit("base").hexsha
    (root / "CHANGES").write_text(f"{FUTURE} landed\n")
    (root / "calc" / "future.py").write_text(f"# {FUTURE}\n")
    repo.index.add(["CHANGES", "calc/future.py"])
    later = repo.index.commit("later").hexsha
    return base, later


@pytest.fixture
def layered_pack(tmp_path):
    base, later = _upstream(tmp_path / "upstream")
    pack = tmp_path / "pack"
    shutil.copytree(TINYPACK, pack, ignore=shutil.ignore_patterns("src"))
    manifest = pack / "pack.yaml"
    text = manifest.read_text().replace("  source: {kind: path, path: src}",
                                        "  source: {kind: git, url: ../upstream, ref: HEAD}")
    setup = ("  setup: ['mkdir -p build/lib data/empty && echo built > build/lib/out.txt && echo note > run.log "
             "&& echo keep > /home/agent/.agentrc && echo gen > generated.txt && touch -d @1000000000 generated.txt && chmod 0775 data "
             # a repository nested in the tree (a vendored dependency cloned by the set-up)
             "&& git init -q vendor/dep && echo \"x = 1\" > vendor/dep/dep.py && git -C vendor/dep add dep.py "
             "&& git -C vendor/dep -c user.name=a -c user.email=a@b commit -qm dep']")
    manifest.write_text(text.replace("  setup: []", setup))
    task = json.loads((TINYPACK / "tasks.jsonl").read_text().splitlines()[0])
    (pack / "tasks.jsonl").write_text(json.dumps({**task, "base_commit": base}) + "\n")
    return pack, base, later


def test_the_layer_holds_one_pack_and_the_sandbox_rebuilds_the_tree(layered_pack, docker_client, sandbox_factory):
    pack_dir, base, later = layered_pack
    pack = load_pack(pack_dir)
    sandbox = sandbox_factory(pack, pack.tasks[0])

    def agent(cmd: str) -> str:
        done = sandbox.exec(cmd)
        assert done.exit_code == 0, (cmd, done.output)
        return done.output

    def root(cmd: str) -> str:
        done = sandbox.exec(cmd, user="root")
        assert done.exit_code == 0, (cmd, done.output)
        return done.output

    # the image: the prepare step's layer is smaller than the tree it holds (the old one held it 4 times)
    image = docker_client.images.get(sandbox.image)
    layer = next(h["Size"] for h in image.history() if "evalharness-prepare-task" in h["CreatedBy"])
    assert layer < 0.75 * BIG, f"task layer {layer} bytes for a tree of {BIG} bytes"
    files = root("cd /opt/evalharness/base.git/objects && find . -type f | sort").split()
    assert [f.rsplit(".", 1)[1] for f in files] == ["idx", "pack"], files  # one pack, no loose objects
    assert root("ls /opt/evalharness").split() == ["base.git", "seed-home.tar", "seed-rest.tar", "seed-stat"]
    outside = docker_client.containers.run(image.id, ["ls", "-A", "/testbed"], network_mode="none", remove=True,
                                           entrypoint=[])
    assert outside == b"", "the image's own work tree folder must be empty (the environment's checkout is later)"

    # the tree: the one base commit, clean, nothing of the later commit
    assert agent("git log --format=%s").strip() == f"task base (upstream {base})"
    assert agent("git remote").strip() == ""
    assert agent("cat CHANGES") == "base\n" and agent("test ! -e calc/future.py; echo $?").strip() == "0"
    assert root(f"git -C /opt/evalharness/base.git cat-file -e {later}^{{commit}} 2>&1; echo $?").strip()[-1] != "0"
    assert root(f"grep -rl {FUTURE} /testbed /home /opt/evalharness /etc/evalharness; echo end").strip() == "end"
    # what git does not track comes back: ignored build output, empty folders, a nested repository, home
    assert sorted(agent("git status --porcelain --ignored").splitlines()) == ["!! build/", "!! run.log"]
    assert agent("cat build/lib/out.txt") == "built\n" and agent("ls -A data/empty; echo end").strip() == "end"
    assert agent("cat /home/agent/.agentrc") == "keep\n"
    assert agent("cat vendor/dep/dep.py") == "x = 1\n" and agent("git -C vendor/dep log --format=%s") == "dep\n"
    # as the environment left them: times (a build tool compares them), modes, bytes the checkout converted
    assert agent("stat -c %Y generated.txt").strip() == "1000000000" and agent("stat -c %a data").strip() == "775"
    assert agent("od -c win.bat | head -1").split()[1:] == ["e", "c", "h", "o", "a", "\\r", "\\n"]
    assert agent("cat ident.txt").startswith("$Id: ")
    # the agent owns its tree and its git works; its objects are borrowed until it writes some
    assert agent("find . ! -user agent | head -3; echo end").strip() == "end"
    assert "count: 0" in agent("git count-objects -v") and "packs: 0" in agent("git count-objects -v")
    agent("echo change >> CHANGES && git -c user.name=a -c user.email=a@b commit -qam mine && git fsck --no-progress")
    assert agent("git log --format=%s").splitlines() == ["mine", f"task base (upstream {base})"]


def test_a_run_on_the_packed_layout_grades_as_before(layered_pack, tmp_path, base_image):
    pack_dir, _, _ = layered_pack
    done = run_cli("run", "-p", str(pack_dir), "-H", "oracle", "-H", "null", "--format", "json", cwd=tmp_path)
    assert '"resolved": 1' in done.stdout and '"no_patch": 1' in done.stdout, done.stdout
    assert "infra_error" not in done.stdout


def test_an_audit_reads_the_base_commit_out_of_the_image(layered_pack, docker_client, image_builder):
    from evalharness.audit.basecode import base_code_provider

    pack_dir, _, _ = layered_pack
    pack = load_pack(pack_dir)
    task = pack.tasks[0]  # it injects a defect: only the image holds its base
    base = base_code_provider(pack, client=docker_client, builder=image_builder, run_id="test-layer-audit")(task)
    assert base is not None and base.read("CHANGES") == "base\n"
    assert "        return value\n    return value" in base.read("calc/__init__.py")  # the injected defect
    assert not base.contains(FUTURE) and base.contains("def clamp")


def test_a_first_command_exiting_75_is_the_agents_exit_code(docker_client, sandbox_factory):
    """75 is what a command returns when the container could not rebuild its tree; an agent's own first
    command may return it too, and that must stay its exit code, never an infrastructure failure."""
    pack = load_pack(TINYPACK)
    sandbox = sandbox_factory(pack, pack.tasks[0])
    assert sandbox.exec("echo agent ran; exit 75").exit_code == 75
    assert sandbox.exec("cat calc/__init__.py").exit_code == 0
