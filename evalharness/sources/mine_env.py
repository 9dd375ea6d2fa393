"""A mined task's environment at its own base commit (pure): which steps re-make it there.

A mined pack's environment image is installed once, at the tip of ``--ref``; each task image checks out
its base commit over it. The sources then are the base's, but what the install wrote is the tip's: the
distribution's metadata (``importlib.metadata.version()``, hence most ``__version__``), a version file a
build hook generated (``_version.py`` of setuptools-scm or hatch-vcs), entry points, the editable finder's
package map. A test that reads those fails or passes at base only because of the tip, and discovery would
take it for a FAIL_TO_PASS test.

``task_setup`` reads the environment's setup steps and returns the steps each task image runs at its base
commit (``environment.task_setup``, run by ``data/prepare_task.sh`` before the commit is packed, with the
git history and tags still there, as a version hook needs): the files the tip's install generated removed,
the project installed again from the base's own files without its dependencies (they stay the tip's:
a base that needs another dependency fails at base and with the fix alike, and is no task), then the build
metadata removed as after the environment's install. Nothing to do when the environment installs nothing
from the repository (the tests import the work tree as it is at base).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from evalharness.sources.scaffold import CLEAN_STEP

CLEAN_GENERATED = "git clean -xdfq"
"""Every untracked file of the tip's install (a generated ``_version.py``, an ``.egg-info``) removed before the base's."""
_PIP_INSTALL = re.compile(r"^(?:\S*python\S*\s+-m\s+)?pip3?\s+install\s+(.*)$")
_VALUE_OPTIONS = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
                  "--find-links", "--target", "-t", "--prefix", "--root", "--config-settings", "-C"}


@dataclass(frozen=True)
class TaskSetup:
    """The steps a task image runs at its base commit, and why (a ``pack.yaml`` comment)."""

    steps: list[str]
    reason: str


def project_installs(step: str) -> list[tuple[str, bool]]:
    """The installs of the repository itself in one setup step: (target as written, editable), in order.

    ``pip install -e '.[tests]'`` -> ``[(".[tests]", True)]``; ``pip install -r req.txt`` -> ``[]``. A target is the
    project when it is ``.`` or ``./``, with or without extras (the work tree is the step's folder)."""
    found = []
    for part in re.split(r"&&|;|\|\|", step):
        match = _PIP_INSTALL.match(part.strip())
        if not match:
            continue
        try:
            tokens = shlex.split(match.group(1))
        except ValueError:
            continue
        editable, skip = False, False
        for token in tokens:
            if skip:
                skip = False
                continue
            if token in ("-e", "--editable"):
                editable = True
                continue
            if token in _VALUE_OPTIONS:
                skip = True
                continue
            if token.startswith("-"):
                continue
            target = token.split("[", 1)[0]
            if target in (".", "./"):
                found.append((token, editable))
            editable = False
    return found


def task_setup(setup: list[str]) -> TaskSetup:
    """The steps that make a task image's environment its base commit's, from the environment's ``setup``."""
    installs = [install for step in setup for install in project_installs(step)]
    if not installs:
        return TaskSetup([], "the environment installs nothing from the repository: each task imports its base's "
                             "work tree as it is")
    editable = any(e for _, e in installs)
    install = "python -m pip install --no-deps " + ("-e ." if editable else ".")
    return TaskSetup([CLEAN_GENERATED, install, CLEAN_STEP],
                     "the environment's install of the project is the tip's (its version, its generated files): each "
                     "task image installs the project again from its base commit's files (dependencies stay the "
                     "tip's), so a test reading the installed version sees the base's")
