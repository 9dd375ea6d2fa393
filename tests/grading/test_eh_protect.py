"""``data/eh_protect.py``, the script root runs in a grading sandbox before the tests (Python and Node packs): what
it makes read-only to uid 1000, and what it leaves alone. Run here as the sandbox runs it (``python3 -s -I``),
on a tree owned by uid 1000; needs root (as in the sandbox) to change owners."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from importlib import resources

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="changing files' owners needs root, as in the sandbox")

SCRIPT = resources.files("evalharness") / "data" / "eh_protect.py"


def _tree(root):
    for path in ["tests/unit/test_a.py", "tests/unit/data.json", "tests/conftest.py", "tests/unit/conftest.py",
                 "tests/other/test_b.py", "calc/__init__.py", "conftest.py", "outside.txt"]:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x\n")
    (root / "tests" / "link.py").symlink_to(root / "calc" / "__init__.py")
    (root / "tests" / "linked").symlink_to(root / "calc")
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), 1000, 1000, follow_symlinks=False)
    os.chown(root, 1000, 1000)


def _protect(work, names):
    return subprocess.run([sys.executable, "-s", "-I", str(SCRIPT), str(work)], input=b"\0".join(names) + b"\0",
                          capture_output=True, check=False)


def _owner_mode(path):
    st = os.lstat(path)
    return st.st_uid, stat.S_IMODE(st.st_mode)


def test_listed_files_their_conftests_and_folders_become_roots(tmp_path):
    work = tmp_path / "testbed"
    work.mkdir()
    _tree(work)
    (work / "bin").mkdir()
    (work / "bin" / "test").write_text("#!/bin/sh\n")
    (work / "bin" / "test").chmod(0o775)
    done = _protect(work, [b"tests/unit/test_a.py", b"tests/unit/data.json", b"bin/test"])
    assert done.returncode == 0 and done.stdout.strip() == b"3", done
    assert _owner_mode(work / "bin" / "test") == (0, 0o755)  # a runner script still runs (SymPy's bin/test)
    for path in ["tests/unit/test_a.py", "tests/unit/data.json", "tests/unit/conftest.py", "tests/conftest.py",
                 "conftest.py"]:
        assert _owner_mode(work / path) == (0, 0o644), path
    for folder in [work / "tests" / "unit", work / "tests", work]:
        assert _owner_mode(folder) == (0, 0o1777), folder
    # what was not listed, nor a conftest on the way, stays the run's
    for path in ["tests/other/test_b.py", "calc/__init__.py", "outside.txt", "tests/other", "calc"]:
        assert os.lstat(work / path).st_uid == 1000, path


def test_links_escapes_and_missing_names_are_left_alone(tmp_path):
    work = tmp_path / "testbed"
    work.mkdir()
    _tree(work)
    done = _protect(work, [b"tests/link.py", b"tests/linked/__init__.py", b"../outside.txt", b"/etc/passwd",
                           b"tests/../outside.txt", b"tests/missing.py", b""])
    assert done.returncode == 0 and done.stdout.strip() == b"0", done
    assert os.lstat(work / "calc" / "__init__.py").st_uid == 1000  # a symlink's target is never changed
    assert os.lstat(work / "outside.txt").st_uid == 1000
    assert os.lstat(work / "tests").st_uid == 1000 and os.lstat(work).st_uid == 1000  # nothing was protected
