"""Run by root in the grading sandbox before the test run (``python3 -s -I eh_protect.py WORK < LIST``): the files
LIST names (paths relative to the work tree WORK, NUL-separated) become root's and read-only (0644, execute bits
kept: a runner script such as SymPy's ``bin/test`` still runs), and so does each ``conftest.py`` on their way up;
every folder from them up to WORK becomes root's and sticky (1777).

The tests run as uid 1000: they can still create files anywhere in the tree, but can neither rewrite, remove nor
rename a file or folder of root's in a sticky folder. So code under test cannot change a test module, a helper or
a file the tests compare with before the runner reads it, nor move their folder aside. A path that is not a
regular file reached without a symlink is left as it is (the grader built the tree from git: there is no such
test file). Nothing of uid 1000 runs while this does. Exit 0, or 1 with the reason on stderr.
"""

import os
import stat
import sys


def protect(work: bytes, names: list[bytes]) -> int:
    done = set()
    count = 0
    for name in names:
        path = os.path.join(work, name)
        if not name or name.startswith(b"/") or os.path.realpath(path) != path:
            continue
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            continue
        _own(path, 0o644 | (mode & 0o111))
        count += 1
        folder = os.path.dirname(path)
        while len(folder) >= len(work) and folder not in done:
            if os.path.realpath(folder) != folder or not stat.S_ISDIR(os.lstat(folder).st_mode):
                raise OSError(f"{folder!r} changed while it was protected")
            _own(folder, 0o1777)
            conftest = os.path.join(folder, b"conftest.py")
            mode = os.lstat(conftest).st_mode if os.path.lexists(conftest) else 0
            if stat.S_ISREG(mode):
                _own(conftest, 0o644 | (mode & 0o111))
            done.add(folder)
            if folder == work:
                break
            folder = os.path.dirname(folder)
    return count


def _own(path: bytes, mode: int) -> None:
    os.chown(path, 0, 0, follow_symlinks=False)
    os.chmod(path, mode)


def main() -> int:
    work = os.path.realpath(os.fsencode(sys.argv[1]))
    try:
        count = protect(work, sys.stdin.buffer.read().split(b"\0"))
    except OSError as e:
        print(f"eh_protect: {e}", file=sys.stderr)
        return 1
    print(count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
