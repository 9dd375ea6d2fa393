"""The package metadata installs without setuptools' deprecation warning: `project.license` is an SPDX expression
(a string), never the TOML table setuptools deprecates (its warning gives 2027-02-18 as the end), and the build
system requires a setuptools that reads the string form (77 or later, PEP 639).

Pins (issue 27): `pip install` printed the deprecation warning for the table form."""

from __future__ import annotations

import tomllib

from packaging.licenses import canonicalize_license_expression
from packaging.requirements import Requirement
from support import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_the_licence_is_an_spdx_expression_string():
    licence = PYPROJECT["project"]["license"]
    assert isinstance(licence, str), "a table ({text = ...} or {file = ...}) is deprecated by setuptools"
    assert canonicalize_license_expression(licence) == licence


def test_the_build_system_requires_a_setuptools_that_reads_it():
    [setuptools] = [Requirement(r) for r in PYPROJECT["build-system"]["requires"]
                    if Requirement(r).name == "setuptools"]
    assert "77" in setuptools.specifier and "76.9" not in setuptools.specifier
    assert not setuptools.specifier.contains("1000")  # an upper bound, as every pin here has
