"""`packs new` detection (pure): each layout, runner and install choice is detected, and its absence too.

Pins: a user turning a private repository into tasks hand-wrote pack.yaml and got a src/ layout whose
tests could not import the package, and a pytest-mock fixture missing under the guarded launcher
(plugin autoloading is off). Detection reads tracked files only; every choice carries its reason,
which pack.yaml shows as a comment.
"""

from __future__ import annotations

import subprocess

import pytest
import yaml

from evalharness.errors import UserError
from evalharness.packs import PackSpec
from evalharness.sources.scaffold import CLEAN_STEP, PYTEST_PIN, detect, new_pack, pack_name, render_manifest


def found(files: dict[str, str]):
    return detect(sorted(files), files.get)


PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "calc"
version = "1.0"
requires-python = "{python}"
dependencies = ["attrs"]

[project.optional-dependencies]
{extras}
"""


def pyproject(python=">=3.9", extras='test = ["pytest>=7"]', tool=""):
    return PYPROJECT.format(python=python, extras=extras) + tool


# --- layout ------------------------------------------------------------------------------------

def test_src_layout_is_detected_and_a_flat_one_is_not_taken_for_it():
    src = found({"pyproject.toml": pyproject(), "src/calc/__init__.py": "", "tests/test_a.py": ""})
    assert src.layout.value == "src" and "calc" in src.layout.reason
    flat = found({"pyproject.toml": pyproject(), "calc/__init__.py": "", "tests/test_a.py": ""})
    assert flat.layout.value == "flat" and "calc" in flat.layout.reason


def test_single_module_layout_and_none():
    assert found({"setup.py": "", "calc.py": "", "test_calc.py": ""}).layout.value == "module"
    assert found({"README.md": "", "docs/__init__.py": "", "setup.py": ""}).layout.value == "none"


def test_folders_that_are_not_the_package_are_not_taken_for_it():
    layout = found({"tests/__init__.py": "", "docs/__init__.py": "", "calc/__init__.py": ""}).layout
    assert layout.reason == "flat layout: package calc at the top level"


# --- where the tests are -----------------------------------------------------------------------

@pytest.mark.parametrize("files, where", [
    ({"calc/__init__.py": "", "tests/test_a.py": "", "tests/unit/test_b.py": ""}, "tests-folder"),
    ({"calc/__init__.py": "", "test/a_test.py": ""}, "tests-folder"),
    ({"calc/__init__.py": "", "calc/tests/test_a.py": ""}, "in-package"),
    ({"src/calc/__init__.py": "", "src/calc/tests/test_a.py": ""}, "in-package"),
    ({"calc.py": "", "test_calc.py": ""}, "top-level"),
    ({"calc.py": "", "calc_helpers.py": ""}, "none"),
    ({"calc/__init__.py": "", "bench/test_speed.py": "", "benchmarks/test_big.py": ""}, "none"),
    ({"calc/__init__.py": "", "calc/benchmarks/test_speed.py": "", "test_calc.py": ""}, "top-level"),
])
def test_test_layout(files, where):
    assert found(files).tests.value == where


def test_benchmark_files_are_not_counted_as_tests():
    """Issue 27: `packs new` counted pytest-benchmark files under bench/ as tests."""
    tests = found({"calc/__init__.py": "", "tests/test_a.py": "", "bench/test_speed.py": "",
                   "benchmarks/sub/speed_test.py": ""}).tests
    assert (tests.value, tests.reason) == ("tests-folder", "1 test file, under tests/ (2 file(s) under a benchmark "
                                                           "folder not counted)")


# --- Python ------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, python, base", [
    (">=3.9", "3.11", "bookworm"),
    (">=3.12", "3.13", "trixie"),
    (">=3.8,<3.10", "3.9", "bullseye"),
    ("~=3.11.0", "3.11", "bookworm"),
])
def test_requires_python_picks_the_preferred_base_it_accepts(spec, python, base):
    detected = found({"pyproject.toml": pyproject(python=spec), "calc/__init__.py": ""})
    assert (detected.python.value, detected.base) == (python, base)
    assert spec in detected.python.reason


def test_requires_python_from_setup_cfg_and_setup_py():
    cfg = found({"setup.cfg": "[metadata]\nname = calc\n[options]\npython_requires = >=3.13\n"})
    assert (cfg.python.value, cfg.python.reason.split(" in ")[1].split(" ")[0]) == ("3.13", "setup.cfg")
    py = found({"setup.py": "setup(name='calc', python_requires='<3.10')"})
    assert py.python.value == "3.9" and "setup.py" in py.python.reason


def test_no_requires_python_gives_the_default_and_says_so():
    detected = found({"setup.py": "setup(name='calc')"})
    assert (detected.python.value, detected.base) == ("3.11", "bookworm")
    assert "no requires-python" in detected.python.reason


def test_a_python_no_base_ships_is_named():
    detected = found({"pyproject.toml": pyproject(python=">=3.14")})
    assert "accepts no built-in base" in detected.python.reason


def test_python_version_file_wins_when_a_base_ships_it():
    assert found({"pyproject.toml": pyproject(), ".python-version": "3.9.18\n"}).base == "bullseye"
    assert found({"pyproject.toml": pyproject(), ".python-version": "3.10\n"}).base == "bookworm"


# --- install -----------------------------------------------------------------------------------

def test_an_installable_project_is_installed_with_its_test_extra_then_the_work_tree_cleaned():
    steps = found({"pyproject.toml": pyproject(), "src/calc/__init__.py": ""}).install.value
    assert steps == ["python -m pip install -e '.[test]'", CLEAN_STEP]
    steps = found({"pyproject.toml": pyproject(extras='docs = ["sphinx"]'), "calc/__init__.py": ""}).install.value
    assert steps == ["python -m pip install -e '.'", CLEAN_STEP]


def test_setup_py_and_setup_cfg_make_a_project_installable_and_their_absence_does_not():
    assert found({"setup.py": "", "calc/__init__.py": ""}).install.value[0] == "python -m pip install -e '.'"
    cfg = "[metadata]\nname = calc\n[options.extras_require]\ntesting = pytest\n"
    assert found({"setup.cfg": cfg}).install.value[0] == "python -m pip install -e '.[testing]'"
    assert found({"setup.cfg": "[flake8]\nmax-line-length = 100\n", "calc.py": ""}).install.value == []


def test_test_requirements_files_come_before_dev_ones_and_requirements_txt_is_the_fallback():
    files = {"setup.py": "", "requirements/testing.txt": "pytest\n", "requirements/development.txt": "sphinx\n",
             "requirements.txt": "attrs\n"}
    assert found(files).install.value[0] == "python -m pip install -r requirements/testing.txt"
    assert found({"requirements-dev.txt": "", "requirements.txt": ""}).install.value[0] == \
        "python -m pip install -r requirements-dev.txt"
    assert found({"requirements.txt": "", "calc.py": ""}).install.value == \
        ["python -m pip install -r requirements.txt", CLEAN_STEP]
    assert found({"docs/requirements-test.txt": "", "calc.py": ""}).install.value == []


def test_a_src_layout_that_is_not_installed_is_put_on_pythonpath_and_an_installed_one_is_not():
    bare = found({"src/calc/__init__.py": "", "tests/test_a.py": ""})
    assert bare.pythonpath.value == "src" and "-o pythonpath=src" in bare.test_command
    installed = found({"pyproject.toml": pyproject(), "src/calc/__init__.py": ""})
    assert installed.pythonpath.value == "" and "pythonpath" not in installed.test_command


# --- pytest --------------------------------------------------------------------------------------

@pytest.mark.parametrize("files, reason", [
    ({"pyproject.toml": pyproject(tool="\n[tool.pytest.ini_options]\ntestpaths = ['tests']\n")}, "pyproject.toml"),
    ({"pytest.ini": "[pytest]\n"}, "pytest.ini"),
    ({"setup.cfg": "[tool:pytest]\naddopts = -q\n"}, "setup.cfg"),
    ({"tox.ini": "[pytest]\naddopts = -q\n"}, "tox.ini"),
    ({"tests/conftest.py": ""}, "conftest.py"),
    ({"tox.ini": "[tox]\nenvlist = py311\n"}, "no runner configuration"),
])
def test_where_the_pytest_configuration_is_found(files, reason):
    assert reason in found(files).runner.reason


def test_pytest_is_pinned_unless_the_project_excludes_the_pin():
    assert found({"pyproject.toml": pyproject(extras='test = ["pytest>=7"]')}).pip.value == [PYTEST_PIN]
    assert found({"calc.py": ""}).pip.value == [PYTEST_PIN]
    assert found({"pyproject.toml": pyproject(extras='test = ["pytest>=9"]')}).pip.value == []


def test_known_plugins_of_the_test_requirements_are_loaded_with_p_and_others_are_not():
    extras = 'test = ["pytest", "pytest-asyncio>=0.23", "pytest_mock", "requests"]'
    detected = found({"pyproject.toml": pyproject(extras=extras)})
    assert detected.plugins.value == ["pytest_asyncio.plugin", "pytest_mock"]
    assert "-p pytest_asyncio.plugin -p pytest_mock {test_files}" in detected.test_command
    assert found({"pyproject.toml": pyproject()}).plugins.value == []


def test_notes_for_what_the_pack_does_not_handle_by_itself():
    assert any("Django" in n for n in found({"manage.py": "", "app/__init__.py": ""}).notes)
    assert any("compilers" in n for n in found({"setup.py": "", "calc/_speed.pyx": ""}).notes)
    assert found({"setup.py": "", "calc/__init__.py": ""}).notes == []


# --- pack.yaml ---------------------------------------------------------------------------------

def test_the_manifest_is_a_valid_pack_spec_with_a_comment_for_each_choice():
    detected = found({"pyproject.toml": pyproject(extras='test = ["pytest", "pytest-mock"]'),
                      "src/calc/__init__.py": "", "tests/test_a.py": ""})
    text = render_manifest("calc", detected, url="../calc", ref="0" * 40, where="../calc at 000000000000")
    spec = PackSpec.model_validate(yaml.safe_load(text))
    assert spec.environment.source.url == "../calc" and spec.environment.setup == detected.install.value
    assert spec.test_command == detected.test_command and spec.environment.pip == [PYTEST_PIN]
    for reason in (detected.python.reason, detected.install.reason, detected.pip.reason, detected.layout.reason,
                   detected.plugins.reason):
        assert f"{reason}" in text


def test_pack_names_are_made_valid():
    assert pack_name("my project (v2)") == "my-project-v2" and pack_name("???") == "backlog"


# --- reading the repository --------------------------------------------------------------------

def git(cwd, *args):
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_only_committed_files_are_read(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src" / "calc").mkdir(parents=True)
    (repo / "src" / "calc" / "__init__.py").write_text("")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    (repo / "pyproject.toml").write_text(pyproject())            # not committed: not seen
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("")
    _, detected = new_pack(str(repo), tmp_path / "pack")
    assert detected.install.value == [] and detected.tests.value == "none"
    assert yaml.safe_load((tmp_path / "pack" / "pack.yaml").read_text())["environment"]["source"] == \
        {"kind": "git", "url": "../repo", "ref": git(repo, "rev-parse", "HEAD")}
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two")
    _, detected = new_pack(f"file://{repo}", tmp_path / "pack2")      # a URL: cloned, then read the same way
    assert detected.install.value[0] == "python -m pip install -e '.[test]'" and detected.tests.value == "tests-folder"
    assert "file://" in (tmp_path / "pack2" / "pack.yaml").read_text()


def test_a_folder_that_is_not_a_repository_or_a_full_out_folder_is_a_user_error(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(UserError, match="not a git repository"):
        new_pack(str(tmp_path / "plain"), tmp_path / "pack")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(UserError, match="is not empty"):
        new_pack(str(tmp_path / "plain"), tmp_path / "full")


def test_the_clean_step_removes_build_metadata_and_keeps_what_the_tests_need(tmp_path):
    """hatch-vcs writes src/pkg/_version.py at install (humanize imports it): a plain `git clean -xdf` broke
    every test; the .egg-info's SOURCES.txt lists the files of the environment's commit and must go."""
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "build").mkdir()
    (repo / "src" / "pkg" / "__init__.py").write_text("")
    (repo / "build" / "tracked.txt").write_text("a tracked folder named build\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    made = ["src/pkg.egg-info/SOURCES.txt", "pkg2.egg-info/PKG-INFO", "build/lib/pkg/__init__.py",
            "src/pkg/_version.py", "src/pkg/_speedups.so"]
    for path in made:
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("generated\n")
    subprocess.run(CLEAN_STEP, shell=True, cwd=repo, check=True)
    left = sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert left == ["build/tracked.txt", "src/pkg/__init__.py", "src/pkg/_speedups.so", "src/pkg/_version.py"]
