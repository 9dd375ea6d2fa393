"""The paths the grader parses out of git's -z output are exactly the paths the patch changes on disk.

Pins issue 7, class 5: a regex over ``diff --git "a/…" "b/…"`` headers missed C-quoted paths,
so a ``conftest.py`` edit was neither reverted nor flagged. Here random trees and edits
(renames, mode changes, symlinks, type changes, binary and empty files, names with spaces,
quotes, backslashes, tabs, newlines, leading dashes, non-UTF-8 bytes, deep folders) are
committed with the host's git, turned into a ``git diff -M --binary --full-index`` patch,
applied to a scratch index in a fresh clone and listed with ``RAW_DIFF_ARGS``; the parsed
listing must equal what a walk of the two trees on disk says changed.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections import Counter

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from evalharness.grading.surface import (
    GIT_SAFE_CONFIG,
    INFO_ATTRIBUTES,
    RAW_DIFF_ARGS,
    Change,
    git_safe_env,
    parse_numstat_z,
    parse_raw_z,
)

OID = "0123456789abcdef0123456789abcdef01234567"
ZERO = "0" * 40
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t"}


class Git:
    """The host's git under ``git_safe_env`` and ``GIT_SAFE_CONFIG``, as the grader runs it."""

    def __init__(self, scratch: str):
        home = os.path.join(scratch, "home")
        os.mkdir(home)
        self.env = git_safe_env(home) | IDENTITY

    def __call__(self, cwd: str | bytes, *args: str | bytes, extra: tuple[str, ...] = ()) -> bytes:
        done = subprocess.run(["git", *GIT_SAFE_CONFIG, *extra, *args], cwd=cwd, env=self.env,
                              capture_output=True, timeout=60)
        if done.returncode:
            raise AssertionError(f"git {args} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")
        return done.stdout


# --- random trees ------------------------------------------------------------------------------

SPECIAL_NAMES = [
    b"plain.py", b"with space", b'quo"te', b"back\\slash", b"tab\there", b"new\nline", b"-leading-dash",
    b"--", b"\xff", b"\xc3(", "\u00fcn\u00efc\u00f8d\u00e9".encode(), "\u65e5\u672c".encode(), b" lead",
    b"trail ", b"*", b"?[x]", b"#hash", b"!bang", b"a:b", b"\x01ctl", b"\x7f", b"cr\r", b"tilde~x",
    b"conftest.py", b".hidden", b"\\", b"'", b"\"\\\t\n",
]


def _clean(raw: bytes) -> bytes:
    """A single path component git accepts on Linux (no '/', NUL, '.', '..', '.git' look-alikes)."""
    name = raw.replace(b"/", b"_").replace(b"\0", b"_").replace(b"~", b"-") or b"x"
    if name in (b".", b"..") or name.lower().startswith(b".git"):
        name = b"x" + name
    return name


components = st.one_of(st.sampled_from(SPECIAL_NAMES), st.binary(min_size=1, max_size=6).map(_clean))


def _no_folder_ending_in_space(parts: list[bytes]) -> tuple[bytes, ...]:
    """git cannot round-trip those for hunk-less changes: see test_patches_git_refuses_fail_closed."""
    return tuple(p + b"_" if p.endswith(b" ") else p for p in parts[:-1]) + tuple(parts[-1:])


paths = st.one_of(st.lists(components, min_size=1, max_size=3),
                  st.lists(components, min_size=5, max_size=7)).map(_no_folder_ending_in_space)
lines = st.sampled_from([b"alpha", b"beta", b"gamma delta", b"  indented", b"\ttab", b"trailing ", b"\xff\xfe",
                         "\u00fcn\u00ef".encode(), b"x\r", b"$Id$"])
text = st.tuples(st.lists(lines, max_size=6), st.booleans()).map(lambda t: b"\n".join(t[0]) + b"\n" * t[1])
binary = st.binary(max_size=40).map(lambda b: b + b"\0" + b[::-1])
contents = st.one_of(st.just(b""), text, binary)
targets = st.one_of(st.sampled_from([b"plain.py", b"../up", b"/etc/passwd", b"d/e f", b"\xff", b"."]),
                    st.binary(min_size=1, max_size=10).map(lambda b: b.replace(b"\0", b"_")))
# An entry is (kind, bytes, executable): a regular file and its content, or a symlink and its target.
entries = st.one_of(st.tuples(st.just("file"), contents, st.booleans()),
                    st.tuples(st.just("link"), targets, st.just(False)))
edits = st.sampled_from(["keep", "modify", "delete", "rename", "chmod", "to_link", "to_file",
                         "to_folder", "parent_to_file"])


def _consistent(items, blocked: dict | None = None) -> dict[tuple[bytes, ...], tuple]:
    """Drop entries whose path is taken, that would need a folder where a file is, or a folder
    where ``blocked`` (the base) has a symlink (git refuses that: test_patches_git_refuses_fail_closed)."""
    tree: dict[tuple[bytes, ...], tuple] = {}
    blocked = blocked or {}
    for path, entry in sorted(items, key=lambda item: len(item[0])):
        folders = [path[:i] for i in range(1, len(path))]
        if path not in tree and not any(f in tree or blocked.get(f, ("",))[0] == "link" for f in folders):
            tree[path] = entry
    return tree


@st.composite
def scenarios(draw):
    base = _consistent(draw(st.lists(st.tuples(paths, entries), min_size=1, max_size=8)))
    moved: list[tuple[tuple[bytes, ...], tuple]] = []
    final: dict[tuple[bytes, ...], tuple] = {}
    for path, (kind, data, executable) in base.items():
        edit = draw(edits)
        if edit == "keep":
            final[path] = (kind, data, executable)
        elif edit == "modify":
            final[path] = (kind, draw(contents if kind == "file" else targets), executable)
        elif edit == "rename":  # content kept, so git's rename detection pairs the two sides
            moved.append((draw(paths), (kind, data, executable)))
        elif edit == "chmod":
            final[path] = (kind, data, not executable and kind == "file")
        elif edit == "to_link":
            final[path] = ("link", draw(targets), False)
        elif edit == "to_file":
            final[path] = ("file", draw(contents), draw(st.booleans()))
        elif edit == "to_folder" and kind == "file":  # the file goes, a folder of that name comes
            moved.append(((*path, draw(components)), draw(entries)))
        elif edit == "parent_to_file" and len(path) > 1:  # the folder and all in it go, a file comes
            moved.append((path[:-1], draw(entries)))
    added = draw(st.lists(st.tuples(paths, entries), max_size=4))
    return base, _consistent([*final.items(), *moved, *added], blocked=base)


def _materialise(root: bytes, tree: dict) -> None:
    for parts, (kind, data, executable) in tree.items():
        full = os.path.join(root, *parts)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if kind == "link":
            os.symlink(data, full)
        else:
            with open(full, "wb") as f:
                f.write(data)
            os.chmod(full, 0o755 if executable else 0o644)


def _clear_work_tree(root: bytes) -> None:
    for name in os.listdir(root):
        full = os.path.join(root, name)
        if name == b".git":
            continue
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.unlink(full)


def _walk(root: bytes) -> dict[bytes, tuple[str, bytes]]:
    """Ground truth from the file system: path -> (git mode, content or symlink target)."""
    found: dict[bytes, tuple[str, bytes]] = {}
    for folder, dirnames, filenames in os.walk(root):
        if folder == root and b".git" in dirnames:
            dirnames.remove(b".git")
        for name in dirnames + filenames:
            full = os.path.join(folder, name)
            info = os.lstat(full)
            rel = os.path.relpath(full, root)
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("120000", os.readlink(full))
            elif stat.S_ISREG(info.st_mode):
                with open(full, "rb") as f:
                    found[rel] = ("100755" if info.st_mode & stat.S_IXUSR else "100644", f.read())
    return found


def _blob_id(entry: tuple[str, bytes] | None) -> str:
    """What git names a blob (SHA-1 repositories), computed here rather than asked of git."""
    if entry is None:
        return ZERO
    return hashlib.sha1(b"blob %d\0" % len(entry[1]) + entry[1]).hexdigest()


def _expected_changes(before: dict, after: dict) -> set[Change]:
    changes = set()
    for path in before.keys() | after.keys():
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if old is None:
            status, old_mode, new_mode = "A", "000000", new[0]
        elif new is None:
            status, old_mode, new_mode = "D", old[0], "000000"
        else:
            type_changed = (old[0] == "120000") != (new[0] == "120000")
            status, old_mode, new_mode = "T" if type_changed else "M", old[0], new[0]
        changes.add(Change(path, status, old_mode, new_mode, _blob_id(old), _blob_id(new)))
    return changes


def _run_scenario(git: Git, scratch: bytes, base: dict, final: dict):
    src, dst = os.path.join(scratch, b"src"), os.path.join(scratch, b"dst")
    os.mkdir(src)
    git(src, "init", "-q", "-b", "main")
    _materialise(src, base)
    before = _walk(src)
    git(src, "add", "-A")
    git(src, "commit", "-q", "--allow-empty", "-m", "base")
    _clear_work_tree(src)
    _materialise(src, final)
    after = _walk(src)
    git(src, "add", "-A")
    patch = git(src, "diff", "--cached", "-M", "--binary", "--full-index", "HEAD", "--")
    diff_numstat = git(src, "diff", "--cached", "-M", "--numstat", "-z", "HEAD", "--")

    git(scratch, "clone", "-q", "--no-checkout", src, dst)
    with open(os.path.join(dst, b".git", b"info", b"attributes"), "wb") as f:
        f.write(INFO_ATTRIBUTES)
    git(dst, "read-tree", "HEAD")  # the scratch index: the base, no work tree
    apply_numstat = b""
    if patch:
        with open(os.path.join(scratch, b"patch.diff"), "wb") as f:
            f.write(patch)
        git(dst, "apply", "--cached", os.path.join(scratch, b"patch.diff"))
        apply_numstat = git(dst, "apply", "--numstat", "-z", os.path.join(scratch, b"patch.diff"))
    raw = git(dst, *RAW_DIFF_ARGS, "HEAD", "--")
    return before, after, raw, diff_numstat, apply_numstat


def _note_coverage(expected: set[Change], after: dict, diff_numstat: bytes) -> None:
    """Name what an example exercised (``pytest --hypothesis-show-statistics`` shows how often)."""
    deleted = {c.path for c in expected if c.status == "D"}
    added = {c.path for c in expected if c.status == "A"}
    for c in expected:
        event(f"status {c.status}")
        if {c.old_mode, c.new_mode} == {"100644", "100755"}:
            event("mode change")
        if c.display != c.path.decode("utf-8", "replace"):
            event("non-UTF-8 path")
        if len(c.parts) >= 5:
            event("deep path")
        if b"\0" in after.get(c.path, ("", b""))[1]:
            event("binary")
        if c.status == "A" and any(b"/".join(c.parts[:i]) in deleted for i in range(1, len(c.parts))):
            event("file replaced by a folder")
        if c.status == "D" and any(b"/".join(c.parts[:i]) in added for i in range(1, len(c.parts))):
            event("folder replaced by a file")
    if b"\t\0" in diff_numstat:
        event("rename in the patch")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios())
def test_parsed_listing_equals_the_file_system_truth(scenario):
    base, final = scenario
    with tempfile.TemporaryDirectory() as scratch:
        git = Git(scratch)
        before, after, raw, diff_numstat, apply_numstat = _run_scenario(git, os.fsencode(scratch), base, final)
    expected = _expected_changes(before, after)

    _note_coverage(expected, after, diff_numstat)
    listed = parse_raw_z(raw)
    assert set(listed) == expected
    assert len(listed) == len(expected)

    # git diff -M --numstat -z: renames as (new, old); every changed path appears exactly once.
    pairs = parse_numstat_z(diff_numstat)
    named = [p for p, _ in pairs] + [old for _, old in pairs if old is not None]
    assert Counter(named) == Counter(c.path for c in expected)
    status = {c.path: c.status for c in expected}
    renamed_from = {old for _, old in pairs if old is not None}
    assert all(status[old] == "D" and status[new] == "A" for new, old in pairs if old is not None)

    # git apply --numstat -z: new names only (a rename source is not listed), a type change twice.
    want = Counter()
    for c in expected:
        want[c.path] += 0 if c.path in renamed_from else 2 if c.status == "T" else 1
    assert Counter(p for p, _ in parse_numstat_z(apply_numstat)) == +want
    assert all(old is None for _, old in parse_numstat_z(apply_numstat))


@pytest.mark.parametrize("base, final, refusal", [
    # git 2.39 names an empty new file (or a mode-only change) only in the unquoted
    # ``diff --git a/trail /f b/trail /f`` line, then cannot split that line again.
    ({}, {(b"trail ", b"f"): ("file", b"", False)}, "lacks filename information"),
    # A symlink replaced by a folder of the same name: git apply will not write beyond a symlink.
    ({(b"l",): ("link", b"x", False)}, {(b"l", b"f"): ("file", b"1\n", False)}, "beyond a symbolic link"),
], ids=["hunkless-change-under-folder-ending-in-space", "symlink-replaced-by-folder"])
def test_patches_git_refuses_fail_closed(tmp_path, base, final, refusal):
    """Changes the generator leaves out because git refuses its own patch for them: the grader must
    see a refusal and an untouched index, never a different change; should a later git accept
    the patch, the listing must be exact."""
    git = Git(str(tmp_path))
    scratch = os.fsencode(tmp_path)
    try:
        before, after, raw, _, _ = _run_scenario(git, scratch, base, final)
    except AssertionError as e:
        assert refusal in str(e)
        assert git(os.path.join(scratch, b"dst"), *RAW_DIFF_ARGS, "HEAD", "--") == b""
    else:
        assert set(parse_raw_z(raw)) == _expected_changes(before, after)


def test_listing_ignores_repository_diff_settings(tmp_path):
    """diff.renames and diff.relative in the repository's config change nothing, even from a subfolder."""
    git = Git(str(tmp_path))
    repo = tmp_path / "r"
    (repo / "sub").mkdir(parents=True)
    (repo / "sub" / "old.py").write_bytes(b"same content\n" * 5)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "config", "diff.renames", "copies")
    git(repo, "config", "diff.relative", "true")
    git(repo, "mv", "sub/old.py", "moved.py")
    listed = parse_raw_z(git(repo / "sub", *RAW_DIFF_ARGS, "HEAD", "--"))
    assert [(c.path, c.status) for c in listed] == [(b"moved.py", "A"), (b"sub/old.py", "D")]


# --- the git the repository cannot configure ------------------------------------------------------

HOSTILE_ATTRIBUTES = (b"[attr]sneaky text filter=evil\n"
                      b"* text eol=crlf filter=evil ident diff=evil merge=evil whitespace=trailing-space\n"
                      b"* working-tree-encoding=ISO-8859-1 export-ignore export-subst crlf\n"
                      b"*.py sneaky binary\n")
NEUTRAL = {"text": "unset", "crlf": "unset", "eol": "unset", "filter": "unset", "ident": "unset",
           "working-tree-encoding": "unset", "diff": "unspecified", "merge": "unspecified",
           "whitespace": "unspecified", "export-ignore": "unset", "export-subst": "unset"}


def _hostile_repo(git: Git, root) -> object:
    repo = root / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_bytes(HOSTILE_ATTRIBUTES)
    (repo / "a.py").write_bytes(b"one\ntwo $Id$\n")
    (repo / "blob.bin").write_bytes(b"x\0y\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def _check_attr(git: Git, repo, path: str) -> dict[str, str]:
    out = git(repo, "check-attr", "-z", *NEUTRAL, "--", path).split(b"\0")[:-1]
    return {out[i + 1].decode(): out[i + 2].decode() for i in range(0, len(out), 3)}


def test_info_attributes_override_every_in_tree_attribute(tmp_path):
    git = Git(str(tmp_path))
    repo = _hostile_repo(git, tmp_path)
    assert _check_attr(git, repo, "a.py")["filter"] == "evil"  # the tree really is hostile
    (repo / ".git" / "info" / "attributes").write_bytes(INFO_ATTRIBUTES)
    assert _check_attr(git, repo, "a.py") == NEUTRAL
    assert _check_attr(git, repo, "deep/x.txt") == NEUTRAL


def test_info_attributes_stop_filters_and_conversions_on_checkout(tmp_path):
    git = Git(str(tmp_path))
    repo = _hostile_repo(git, tmp_path)
    evil = ("-c", "filter.evil.smudge=touch SMUDGED; cat", "-c", "filter.evil.clean=cat")
    (repo / "a.py").unlink()
    git(repo, "checkout", "--", "a.py", extra=evil)
    assert (repo / "SMUDGED").exists() and (repo / "a.py").read_bytes() != b"one\ntwo $Id$\n"

    (repo / "SMUDGED").unlink()
    (repo / "a.py").unlink()
    (repo / ".git" / "info" / "attributes").write_bytes(INFO_ATTRIBUTES)
    git(repo, "checkout", "--", "a.py", extra=evil)
    assert not (repo / "SMUDGED").exists()
    assert (repo / "a.py").read_bytes() == b"one\ntwo $Id$\n"


def test_info_attributes_keep_default_binary_detection_and_no_textconv(tmp_path):
    git = Git(str(tmp_path))
    repo = _hostile_repo(git, tmp_path)
    (repo / ".git" / "info" / "attributes").write_bytes(INFO_ATTRIBUTES)
    (repo / "a.py").write_bytes(b"one\nthree\n")
    (repo / "blob.bin").write_bytes(b"x\0z\n")
    out = git(repo, "diff", extra=("-c", "diff.evil.textconv=echo CONVERTED; cat", "-c", "diff.evil.binary=false"))
    assert b"+three" in out and b"CONVERTED" not in out
    assert b"Binary files a/blob.bin and b/blob.bin differ" in out


def test_safe_env_reads_no_config_but_the_command_line(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'diff.external'='evil'")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "evil")
    monkeypatch.setenv("GIT_DIR", "/nonexistent")
    git = Git(str(tmp_path))
    assert not {"GIT_CONFIG_PARAMETERS", "GIT_EXTERNAL_DIFF", "GIT_DIR"} & git.env.keys()
    scopes = {line.split(b"\t")[0] for line in git(tmp_path, "config", "--list", "--show-scope").splitlines()}
    assert scopes == {b"command"}


def test_safe_env_refuses_a_home_that_is_not_an_empty_folder(tmp_path):
    (tmp_path / ".gitconfig").write_text("[diff]\n\texternal = evil\n")
    with pytest.raises(ValueError, match="empty folder"):
        git_safe_env(str(tmp_path))
    with pytest.raises(ValueError, match="empty folder"):
        git_safe_env("relative/home")


# --- the parsers on their own -----------------------------------------------------------------------

def _raw(old_mode="100644", new_mode="100644", old=OID, new=OID, status="M", path=b"p") -> bytes:
    return f":{old_mode} {new_mode} {old} {new} {status}".encode() + b"\0" + path + b"\0"


def test_raw_records_keep_paths_byte_exact():
    out = _raw(path=b"tab\there") + _raw("000000", "120000", ZERO, OID, "A", b"\xff\n:odd") \
        + _raw("100755", "000000", OID, ZERO, "D", b"-x") + _raw("120000", "100644", status="T", path=b"a/b/c")
    assert parse_raw_z(out) == [Change(b"tab\there", "M", "100644", "100644", OID, OID),
                                Change(b"\xff\n:odd", "A", "000000", "120000", ZERO, OID),
                                Change(b"-x", "D", "100755", "000000", OID, ZERO),
                                Change(b"a/b/c", "T", "120000", "100644", OID, OID)]
    assert parse_raw_z(b"") == [] and parse_numstat_z(b"") == []
    assert Change(b"\xff\n:odd", "A", "000000", "120000").display == "\\xff\\n:odd"
    assert Change(b"a/b/c", "T", "120000", "100644").parts == (b"a", b"b", b"c")


@pytest.mark.parametrize("output, reason", [
    (_raw()[:-1], "not NUL-terminated"),
    (_raw().split(b"\0")[0] + b"\0", "not NUL-terminated"),
    (_raw(status="R100") + b"new\0", "--no-renames"),
    (_raw(status="C75") + b"new\0", "--no-renames"),
    (_raw("000000", "000000", ZERO, ZERO, "U"), "unmerged"),
    (_raw(status="X"), "unmerged"),
    (_raw(old="0123abc"), "--no-abbrev"),
    (_raw(new=OID.upper()), "--no-abbrev"),
    (b":" + _raw(), "expected ':"),
    (b"M\0p\0", "expected ':"),
    (_raw().replace(b" M", b""), "5 space-separated"),
    (_raw().replace(b" M", b"  M"), "5 space-separated"),
    (_raw(old_mode="100664"), "mode '100664'"),
    (_raw(old_mode="040000", new_mode="040000"), "mode '040000'"),
    (_raw("100644", "100644", ZERO, OID, "A"), "does not match modes"),
    (_raw("100644", "000000", OID, OID, "D"), "non-null object id"),
    (_raw("000000", "100644", OID, OID, "A"), "non-null object id"),
    (_raw("100644", "000000", OID, ZERO, "M"), "mode '000000'"),
    (_raw("100644", "100755", status="T"), "does not match modes"),
    (_raw("100644", "120000", status="M"), "does not match modes"),
    (_raw(path=b""), "empty path"),
    (_raw(path=b"/etc/passwd"), "not a normalised path"),
    (_raw(path=b"a/../b"), "not a normalised path"),
    (_raw(path=b"a//b"), "not a normalised path"),
    (_raw(path=b"a/"), "not a normalised path"),
    (_raw() + _raw(), "listed twice"),
    (_raw().replace(b"M", "\u00e9".encode(), 1), "non-ASCII"),
])
def test_malformed_raw_output_is_an_error(output, reason):
    with pytest.raises(ValueError, match=re.escape(reason)):
        parse_raw_z(output)


def test_numstat_records():
    out = b"1\t2\ta\tb\0-\t-\tbin\0" + b"0\t0\t\0old name\0new\nname\0" + b"10\t0\t\xff\0"
    assert parse_numstat_z(out) == [(b"a\tb", None), (b"bin", None), (b"new\nname", b"old name"), (b"\xff", None)]


@pytest.mark.parametrize("output, reason", [
    (b"1\t2\tpath", "not NUL-terminated"),
    (b"1\t2\t\0old\0", "not NUL-terminated"),
    (b"1\t2\t\0old", "not NUL-terminated"),
    (b"x\t2\tpath\0", "decimal numbers"),
    (b"-\t3\tpath\0", "decimal numbers"),
    (b"+1\t2\tpath\0", "decimal numbers"),
    (b"1 2 path\0", "expected '<added>"),
    (b"1\t2\0", "expected '<added>"),
    (b"1\t2\t\0\0new\0", "empty path"),
    (b"1\t2\t/abs\0", "not a normalised path"),
    (b"1\t2\ta/./b\0", "not a normalised path"),
])
def test_malformed_numstat_output_is_an_error(output, reason):
    with pytest.raises(ValueError, match=re.escape(reason)):
        parse_numstat_z(output)
