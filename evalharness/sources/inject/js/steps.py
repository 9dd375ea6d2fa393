"""The Node steps of ``packs inject``: the manifest (with Stryker's instrumenter installed at image build), the
language of a repository or a pack, and the sites, listed by Stryker inside the base task's sandbox."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Callable

import yaml

from evalharness.errors import UserError
from evalharness.languages import node_surface
from evalharness.sources.inject.js import mutants

MAX_OUTPUT = 256 * 1024 * 1024


def language_of_pack(manifest: dict) -> str:
    return "node" if node_surface.is_node_command(str(manifest.get("test_command", ""))) else "python"


def language_of_repo(repo: str, ref: str, wanted: str = "auto") -> str:
    """``wanted``, or the language the repository's files at ``ref`` show (``languages.registry.choose``)."""
    from evalharness.languages.registry import choose
    from evalharness.sources.scaffold import Repository

    repository = Repository(repo)
    try:
        return choose(repository.files(repository.commit(ref)), wanted).name
    finally:
        repository.close()


def with_instrumenter(manifest: dict) -> dict:
    """``manifest`` whose environment also installs the pinned instrumenter (once; outside the work tree)."""
    env = manifest["environment"]
    step = mutants.install_step()
    env["setup"] = [s for s in env.get("setup") or [] if mutants.STRYKER_DIR not in s] + [step]
    return manifest


RUNNER_TIMEOUTS = {"node_modules/.bin/tap ": "--timeout=300 ", "node_modules/.bin/jest ": "--testTimeout=120000 "}
"""The runners' own per-file (tap, 30 s by default and in many projects' configuration) and per-test (jest, 5 s)
time limits, raised: a limit met on an idle machine fails a slow test on a loaded one, and a gold run that
fails that way makes the task look flaky. The sandbox's limit (``timeouts.tests_s``) and the pre-screen's
still end a mutant that hangs."""


def steady_command(test_command: str) -> str:
    """``test_command`` with the runner's own time limit raised (``RUNNER_TIMEOUTS``), once."""
    for runner, option in RUNNER_TIMEOUTS.items():
        flag = option.split("=")[0]
        if test_command.startswith(runner) and flag not in test_command:
            return runner + option + test_command[len(runner):]
    return test_command


def manifest_from_repo(repo: str, out: Path, name: str, ref: str = "HEAD") -> dict:
    """A Node manifest for a local folder or git URL at ``ref``, as ``packs new`` detects it, plus the
    instrumenter."""
    from evalharness.languages.node import NODE
    from evalharness.sources.scaffold import Repository, source_url

    repository = Repository(repo)
    try:
        commit = repository.commit(ref)
        files = repository.files(commit)
        found = NODE.detect(files, lambda path: repository.read(commit, path) if path in files else None)
        text = NODE.render_manifest(name, found, url=source_url(repository, out.resolve()), ref=commit,
                                    where=f"{repo} at {commit[:12]}")
    finally:
        repository.close()
    manifest = yaml.safe_load(text)
    src = manifest["environment"]["source"]
    if "://" not in src["url"] and not os.path.isabs(src["url"]):
        src["url"] = os.path.relpath((out.resolve() / src["url"]).resolve(), out.resolve())
    manifest["description"] = f"Defects injected into {repo} by Stryker's mutators (evalharness packs inject)."
    manifest["test_command"] = steady_command(manifest["test_command"])
    return with_instrumenter(manifest)


def list_mutants(box, sources: dict[str, str]) -> dict:
    """Stryker's mutants of ``sources`` (path -> text), listed in the sandbox (no network): the driver's JSON."""
    box.write_file(mutants.DRIVER, resources.files("evalharness.data").joinpath("eh_stryker.mjs").read_bytes())
    code, out, timed_out = box.exec_bytes(["node", mutants.DRIVER, mutants.INSTRUMENTER],
                                          stdin=json.dumps({"files": sources}).encode(), timeout=900,
                                          max_bytes=MAX_OUTPUT)
    if code != 0 or timed_out:
        raise UserError(f"Stryker's instrumenter did not list the mutants (exit {code}"
                        + (", timed out" if timed_out else "") + f"): {out[-300:].decode(errors='replace')}",
                        f"is @stryker-mutator/instrumenter@{mutants.STRYKER_VERSION} installed at "
                        f"{mutants.STRYKER_DIR}? the pack's environment.setup must hold: {mutants.install_step()}")
    return json.loads(out)


def sites(box, files: dict[str, bytes], log: Callable[[str], None]) -> list[mutants.JsSite]:
    """Every Stryker mutant of the library files of ``files`` (the base tree) as a site."""
    sources = dict(mutants.library_files(files))
    if not sources:
        raise UserError("no JavaScript or TypeScript library file found in the work tree",
                        "test files, configuration, node_modules and built code are never mutated")
    listed = list_mutants(box, sources)
    for path, error in sorted(listed.get("errors", {}).items()):
        log(f"note: {path} skipped: Stryker could not parse it: {error[:160]}")
    return mutants.sites(listed["mutants"], sources)
