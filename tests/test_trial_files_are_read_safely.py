"""Trial folders and files as the report and the review page read them (``rundir.trial_folder``,
``read_trial_text``): only regular files inside the runs folder, never through a symbolic link; direction controls
shown as marks (``textshow.visible_controls``).

Pins: a symbolic link in a trial folder that put the runs folder's review secret or /etc/passwd on a page; a
stored trial folder of `../outside`; a file name that displayed as `evilyp.png` (U+202E).
"""

from __future__ import annotations

import os

import pytest

from evalharness.rundir import UnsafeTrialPath, read_trial_text, trial_folder
from evalharness.textshow import visible_controls


@pytest.mark.parametrize("detail", ["../outside", "/etc", "", "r/../../x"])
def test_a_trial_folder_outside_the_runs_folder_is_refused(tmp_path, detail):
    with pytest.raises(UnsafeTrialPath):
        trial_folder(tmp_path, detail)


def test_a_trial_folder_reached_through_a_symbolic_link_is_refused(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "r1").symlink_to(tmp_path / "outside")
    with pytest.raises(UnsafeTrialPath, match="symbolic link"):
        trial_folder(tmp_path / "runs", "r1")
    (tmp_path / "runs" / "r2").mkdir()
    assert trial_folder(tmp_path / "runs", "r2/") == tmp_path / "runs" / "r2"


def test_only_regular_files_are_read_and_a_head_or_tail_is_cut_from_the_file(tmp_path):
    (tmp_path / "secret").write_text("s3cret")
    (tmp_path / "link").symlink_to(tmp_path / "secret")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "sub").mkdir()
    for name in ("link", "pipe", "sub"):
        with pytest.raises(UnsafeTrialPath):
            read_trial_text(tmp_path, name)
    with pytest.raises(FileNotFoundError):
        read_trial_text(tmp_path, "absent")
    (tmp_path / "f").write_bytes(b"0123456789\xff")
    assert read_trial_text(tmp_path, "f") == ("0123456789\ufffd", 11)
    assert read_trial_text(tmp_path, "f", head=4) == ("0123", 11)
    assert read_trial_text(tmp_path, "f", tail=3) == ("89\ufffd", 11)


def test_direction_controls_become_visible_marks():
    assert visible_controls("src/evil\u202egnp.py") == "src/evil<U+202E>gnp.py"
    assert visible_controls("a\u2066b\u2069c\u200fd") == "a<U+2066>b<U+2069>c<U+200F>d"
    assert visible_controls("plain é ü 中") == "plain é ü 中"
