"""What a patch touches, as git itself reports it: byte-exact parsers and a git the repository cannot configure.

The grader never reads paths out of diff text (issue 7, class 5: a C-quoted
``diff --git "a/…" "b/…"`` header slipped past a regex, so a ``conftest.py`` edit was neither
reverted nor flagged). Instead it applies the patch to a scratch index and asks git for the
change in its NUL-separated machine format::

    git <GIT_SAFE_CONFIG> apply --cached <patch>
    git <GIT_SAFE_CONFIG> <RAW_DIFF_ARGS> <base> --      ->  parse_raw_z()
    git <GIT_SAFE_CONFIG> apply --numstat -z <patch>     ->  parse_numstat_z()

both run with ``env=git_safe_env(empty_folder)`` and ``$GIT_DIR/info/attributes`` holding
``INFO_ATTRIBUTES``. The parsers are pure and strict: output that is not exactly what git
writes raises ``ValueError``; nothing is skipped.

Why each argument of ``RAW_DIFF_ARGS`` is there:

- ``--raw -z``: one record per path, paths verbatim (no C quoting, any byte but NUL).
- ``--no-renames``: a rename is a deletion plus an addition, so both sides are listed as
  paths of their own (``diff.renames`` defaults to true; a rename would otherwise hide its
  source, e.g. ``tests/test_x.py`` moved away).
- ``--no-ext-diff --no-textconv``: no program named by configuration runs.
- ``--no-abbrev``: full object ids in the raw records (``--full-index`` alone only affects
  the ``index`` line of patch output, not ``--raw``; both are passed).
- ``--no-color --no-relative --ignore-submodules=none``: no colour codes, paths relative
  to the work-tree root whatever ``diff.relative`` says, gitlink changes always listed.

Why each ``GIT_SAFE_CONFIG`` entry is there (command-line ``-c`` beats every config file):

- ``core.hooksPath=/dev/null``: no hook runs (commit, checkout, apply-adjacent hooks).
- ``core.fsmonitor=false``: no file-system monitor program runs.
- ``core.attributesFile=/dev/null``, ``core.excludesFile=/dev/null``: no per-user
  attribute or ignore files.
- ``core.autocrlf=false``, ``core.eol=lf``, ``core.safecrlf=false``: bytes in, bytes out.
- ``core.symlinks=true``, ``core.ignoreCase=false``, ``core.precomposeUnicode=false``:
  paths are exact bytes and symlinks are symlinks, as on the Linux grading host.
- ``core.protectHFS=true``, ``core.protectNTFS=true``: git refuses paths that some file
  system would fold into ``.git`` (``.GIT``, ``git~1``, ``.g\u200cit``).
- ``core.sparseCheckout=false``: a sparse cone would change which paths apply and checkout touch.
- ``core.pager=cat``, ``core.askPass=``, ``credential.helper=``: no pager, prompt or
  credential program runs.
- ``diff.noprefix=false``, ``diff.mnemonicPrefix=false``, ``diff.relative=false``,
  ``diff.ignoreSubmodules=none``: patches the grader writes keep ``a/`` ``b/`` and whole paths.
- ``apply.whitespace=nowarn``, ``apply.ignoreWhitespace=no``: ``fix`` would rewrite the
  agent's bytes, ``error`` would refuse them, ``change`` would loosen context matching.
- ``gc.auto=0``, ``maintenance.auto=false``: no background process outlives the command.
- ``commit.gpgSign=false``, ``tag.gpgSign=false``: no signing program runs.
- ``protocol.ext.allow=never``, ``submodule.recurse=false``: no ``ext::`` transport command,
  no recursion into gitlinks whose URLs the repository names.

``diff.external`` cannot be unset with ``-c`` (an empty value would be run as a command);
it is kept out because no system or global file is read, ``GIT_EXTERNAL_DIFF`` is not
passed, and every diff the grader runs says ``--no-ext-diff``. The grader's own
``$GIT_DIR/config`` is written by the grader, never copied from the agent.

Why each ``git_safe_env`` variable is there (the environment is built from nothing, so
``GIT_DIR``, ``GIT_CONFIG_PARAMETERS``, ``GIT_CONFIG_COUNT``, ``GIT_EXTERNAL_DIFF``,
``GIT_ASKPASS`` and the rest are never inherited; only ``PATH`` is):

- ``GIT_CONFIG_NOSYSTEM=1``: no ``/etc/gitconfig``.
- ``HOME``, ``XDG_CONFIG_HOME`` = an empty folder: no ``~/.gitconfig`` nor
  ``~/.config/git/{config,attributes,ignore}``. This is what works on git 2.30 (Debian
  bullseye), which lacks ``GIT_CONFIG_GLOBAL``; ``GIT_CONFIG_GLOBAL=/dev/null`` and
  ``GIT_CONFIG_SYSTEM=/dev/null`` are set as well for newer gits.
- ``GIT_NO_REPLACE_OBJECTS=1``: ``refs/replace/*`` cannot swap one object for another.
- ``GIT_ATTR_NOSYSTEM=1``: no ``/etc/gitattributes``.
- ``GIT_TERMINAL_PROMPT=0``, ``GIT_PAGER=cat``: never wait for a person.
- ``GIT_OPTIONAL_LOCKS=0``: read-only commands do not rewrite the index.
- ``GIT_PROTOCOL_FROM_USER`` is deliberately not set to 0: since git 2.38.1 the ``file``
  transport defaults to "user", so that would refuse the grader's own local clones.
- ``LC_ALL=C``, ``LANG=C``: messages the grader may record are stable.

``INFO_ATTRIBUTES`` goes to ``$GIT_DIR/info/attributes``, which takes precedence over every
``.gitattributes`` in the tree (attributes resolve per attribute, highest-precedence file
first, macros included). ``-attr`` sets an attribute to false and ``!attr`` makes it
unspecified: ``-text -crlf -eol`` mean "no end-of-line conversion", ``-filter -ident
-working-tree-encoding`` mean no clean/smudge program, no ``$Id$`` expansion and no
re-encoding; ``!diff`` (not ``-diff``, which would force "binary") leaves binary detection
to git's default content check and names no diff driver or textconv; ``!merge`` and
``!whitespace`` drop custom merge drivers and whitespace rules; ``-export-ignore
-export-subst`` make ``git archive`` export every tracked file verbatim.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = [
    "GIT_SAFE_CONFIG",
    "INFO_ATTRIBUTES",
    "RAW_DIFF_ARGS",
    "Change",
    "git_safe_env",
    "sandbox_git_env",
    "parse_numstat_z",
    "parse_raw_z",
]

RAW_DIFF_ARGS: tuple[str, ...] = (
    "diff", "--cached", "--raw", "-z", "--no-renames", "--no-ext-diff", "--no-textconv",
    "--full-index", "--no-abbrev", "--no-color", "--no-relative", "--ignore-submodules=none",
)

_SAFE_SETTINGS = (
    "core.hooksPath=/dev/null", "core.fsmonitor=false",
    "core.attributesFile=/dev/null", "core.excludesFile=/dev/null",
    "core.autocrlf=false", "core.eol=lf", "core.safecrlf=false",
    "core.symlinks=true", "core.ignoreCase=false", "core.precomposeUnicode=false",
    "core.protectHFS=true", "core.protectNTFS=true", "core.sparseCheckout=false",
    "core.pager=cat", "core.askPass=", "credential.helper=",
    "diff.noprefix=false", "diff.mnemonicPrefix=false", "diff.relative=false",
    "diff.ignoreSubmodules=none",
    "apply.whitespace=nowarn", "apply.ignoreWhitespace=no",
    "gc.auto=0", "maintenance.auto=false", "commit.gpgSign=false", "tag.gpgSign=false",
    "protocol.ext.allow=never", "submodule.recurse=false",
)
GIT_SAFE_CONFIG: tuple[str, ...] = tuple(arg for kv in _SAFE_SETTINGS for arg in ("-c", kv))
"""Global options for every grader git call, ready to splice: ``["git", *GIT_SAFE_CONFIG, ...]``."""

INFO_ATTRIBUTES: bytes = (
    b"* -text -crlf -eol -filter -ident -working-tree-encoding !diff !merge !whitespace"
    b" -export-ignore -export-subst\n"
)

_ZERO_MODE = "000000"
_KIND_OF_MODE = {"100644": "file", "100755": "file", "120000": "symlink", "160000": "gitlink"}
_HEX = frozenset("0123456789abcdef")
_CONTROL_ESCAPES = {i: f"\\x{i:02x}" for i in (*range(0x20), 0x7F)} | {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


@dataclass(frozen=True)
class Change:
    """One path the change touches, as ``git diff --raw -z --no-renames`` lists it."""

    path: bytes
    """Exactly as git reports it with ``-z`` (no quoting), relative to the work-tree root."""
    status: str
    """``A`` added, ``M`` modified (content or mode), ``D`` deleted, ``T`` type change."""
    old_mode: str
    """``100644``, ``100755``, ``120000`` (symlink), ``160000`` (gitlink), ``000000`` when added."""
    new_mode: str
    """As ``old_mode``; ``000000`` when deleted."""
    old_id: str = ""
    """Full object id of the base side (all zeros when added)."""
    new_id: str = ""
    """Full object id of the changed side (all zeros when deleted)."""

    @property
    def display(self) -> str:
        """The path for people: UTF-8, undecodable bytes and control characters as backslash escapes."""
        return self.path.decode("utf-8", "backslashreplace").translate(_CONTROL_ESCAPES)

    @property
    def parts(self) -> tuple[bytes, ...]:
        return tuple(self.path.split(b"/"))


def git_safe_env(home: str) -> dict[str, str]:
    """An environment, built from nothing but ``PATH``, in which git reads no config or attribute file
    outside the repository.

    ``home`` must be an existing, empty folder owned by the grader; it serves as ``HOME``
    and ``XDG_CONFIG_HOME`` so that git 2.30 finds no global configuration.
    """
    if not os.path.isabs(home) or not os.path.isdir(home) or os.listdir(home):
        raise ValueError(f"git_safe_env needs an absolute path to an existing empty folder (got {home!r})")
    return sandbox_git_env(home, os.environ.get("PATH", os.defpath))


def sandbox_git_env(home: str, path: str = "/usr/local/bin:/usr/bin:/bin") -> dict[str, str]:
    """``git_safe_env`` for a git run inside a sandbox, where ``home`` cannot be checked from here
    (the grader creates it empty, in its root-only scratch space, right before the call)."""
    return {
        "PATH": path,
        "HOME": home,
        "XDG_CONFIG_HOME": home,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_SYSTEM": os.devnull,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "GIT_OPTIONAL_LOCKS": "0",
        "LC_ALL": "C",
        "LANG": "C",
    }


def parse_raw_z(output: bytes) -> list[Change]:
    """Parse ``git diff --raw -z --no-renames`` output (run with ``RAW_DIFF_ARGS``) into one ``Change`` per path.

    Each record is ``:<old mode> <new mode> <old id> <new id> <status>`` NUL ``<path>`` NUL.
    Raises ``ValueError`` on anything else, including rename or copy records, unmerged
    entries, abbreviated object ids, and a path listed twice.
    """
    changes: list[Change] = []
    seen: set[bytes] = set()
    pos = 0
    while pos < len(output):
        start = pos
        header, pos = _take_field(output, pos, "record header")
        path, pos = _take_field(output, pos, "path")
        try:
            status, old_mode, new_mode, old_id, new_id = _parse_raw_header(header)
            change = Change(path, status, old_mode, new_mode, old_id, new_id)
            _check_path(path)
        except ValueError as e:
            raise ValueError(f"malformed git raw diff record at byte {start}: {e}") from e
        if path in seen:
            raise ValueError(f"malformed git raw diff: path {change.display!r} listed twice")
        seen.add(path)
        changes.append(change)
    return changes


def parse_numstat_z(output: bytes) -> list[tuple[bytes, bytes | None]]:
    """Parse ``git apply --numstat -z`` (or ``git diff --numstat -z``) output into ``(path, renamed_from)`` pairs.

    A record is ``<added> TAB <deleted> TAB <path>`` NUL, with ``-`` for both counts on a
    binary file, or ``<added> TAB <deleted> TAB`` NUL ``<old path>`` NUL ``<new path>`` NUL
    for a rename. ``git apply`` never writes the rename form: it names only the new path of
    a rename (the source is then absent) and lists a type change twice (deletion, then
    addition), so a policy must not rely on this listing alone to see every touched path.
    """
    records: list[tuple[bytes, bytes | None]] = []
    pos = 0
    while pos < len(output):
        start = pos
        header, pos = _take_field(output, pos, "numstat record")
        try:
            added, deleted, path = _split_counts(header)
            if path:
                records.append((_check_path(path), None))
                continue
            old, pos = _take_field(output, pos, "rename source")
            new, pos = _take_field(output, pos, "rename destination")
            records.append((_check_path(new), _check_path(old)))
        except ValueError as e:
            raise ValueError(f"malformed git numstat record at byte {start}: {e}") from e
    return records


def _take_field(output: bytes, pos: int, what: str) -> tuple[bytes, int]:
    end = output.find(b"\0", pos)
    if end < 0:
        raise ValueError(f"{what} at byte {pos} is not NUL-terminated (truncated output, or not run with -z?): "
                         f"{output[pos:pos + 80]!r}")
    return output[pos:end], end + 1


def _parse_raw_header(header: bytes) -> tuple[str, str, str, str, str]:
    if not header.startswith(b":") or header.startswith(b"::"):
        raise ValueError(f"expected ':<modes> <ids> <status>', got {header[:80]!r}")
    fields = header[1:].split(b" ")
    if len(fields) != 5:
        raise ValueError(f"expected 5 space-separated fields after ':', got {header[:80]!r}")
    try:
        old_mode, new_mode, old_id, new_id, status = (f.decode("ascii") for f in fields)
    except UnicodeDecodeError as e:
        raise ValueError(f"non-ASCII record header {header[:80]!r}") from e
    _check_object_id(old_id)
    _check_object_id(new_id)
    _check_status(status, old_mode, new_mode, old_id, new_id)
    return status, old_mode, new_mode, old_id, new_id


def _check_object_id(oid: str) -> None:
    if len(oid) not in (40, 64) or not set(oid) <= _HEX:
        raise ValueError(f"object id {oid!r} is not a full lowercase hex id (run with --no-abbrev)")


def _check_status(status: str, old_mode: str, new_mode: str, old_id: str, new_id: str) -> None:
    if status[:1] in ("R", "C"):
        raise ValueError(f"rename/copy record {status!r}: the listing must be made with --no-renames")
    if status not in ("A", "M", "D", "T"):
        raise ValueError(f"status {status!r} is not one of A, M, D, T (unmerged or unknown entry)")
    old_kind = _mode_kind(old_mode, allow_zero=status == "A")
    new_kind = _mode_kind(new_mode, allow_zero=status == "D")
    if (status == "A") != (old_kind is None) or (status == "D") != (new_kind is None):
        raise ValueError(f"status {status} does not match modes {old_mode} -> {new_mode}")
    if (status == "A" and set(old_id) != {"0"}) or (status == "D" and set(new_id) != {"0"}):
        raise ValueError(f"status {status} with a non-null object id on the missing side")
    if status in ("M", "T") and (old_kind != new_kind) != (status == "T"):
        raise ValueError(f"status {status} does not match modes {old_mode} -> {new_mode}")


def _mode_kind(mode: str, *, allow_zero: bool) -> str | None:
    if allow_zero and mode == _ZERO_MODE:
        return None
    if mode not in _KIND_OF_MODE:
        raise ValueError(f"mode {mode!r} is not a git blob, symlink or gitlink mode")
    return _KIND_OF_MODE[mode]


def _split_counts(header: bytes) -> tuple[bytes, bytes, bytes]:
    fields = header.split(b"\t", 2)
    if len(fields) != 3:
        raise ValueError(f"expected '<added>\\t<deleted>\\t<path>', got {header[:80]!r}")
    added, deleted, path = fields
    binary = added == deleted == b"-"
    if not binary and not (added.isdigit() and deleted.isdigit()):
        raise ValueError(f"line counts must be decimal numbers, or '-' twice for binary: {header[:80]!r}")
    return added, deleted, path


def _check_path(path: bytes) -> bytes:
    if not path:
        raise ValueError("empty path")
    if path.startswith(b"/") or any(p in (b"", b".", b"..") for p in path.split(b"/")):
        raise ValueError(f"path {path[:200]!r} is not a normalised path relative to the work-tree root")
    return path
