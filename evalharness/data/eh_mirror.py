"""evalharness's mirror-test writer, run by the grader as root inside the grading sandbox.

Usage (by the grader only): python3 -s -I eh_mirror.py WORKDIR < spec.json
The spec (evalharness.grading.mirror.MirrorPlan.spec) lists copies: a test file of the graded tree
(already restored, the task's own), the copy's path beside it, and the test definitions to rename
in the copy, each by its class scope. Only the ``def``/``async def`` name of each definition is
renamed (found with ast in its scope, then as a token with tokenize, so a decorator, a call or a
string that spells the name is left alone); every other byte of the file stays. All copies are
made in memory first; a copy path that exists, a file that is not a regular file inside the work
tree, or a definition not found exactly once in its scope refuses the lot (exit 1, a message on
standard error) and writes nothing.

Kept to the Python 3.6 syntax subset and the standard library: task images run many Python versions.
"""
import ast
import io
import json
import os
import stat
import sys
import tokenize

_OWNER = 1000


class Refused(Exception):
    pass


def _main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: eh_mirror.py WORKDIR < spec.json\n")
        return 2
    workdir = os.path.realpath(sys.argv[1])
    try:
        spec = json.loads(sys.stdin.read())
        planned = [_planned(workdir, copy) for copy in spec["copies"]]
    except Refused as e:
        sys.stderr.write("eh_mirror: " + str(e) + "\n")
        return 1
    except (ValueError, KeyError, TypeError) as e:
        sys.stderr.write("eh_mirror: unreadable spec: " + repr(e) + "\n")
        return 1
    written = []
    try:
        for path, data in planned:
            _write_new(path, data)
            written.append(path)
    except (OSError, Refused) as e:
        for path in written:
            os.unlink(path)
        sys.stderr.write("eh_mirror: " + str(e) + "\n")
        return 1
    return 0


def _planned(workdir, entry):
    """(absolute copy path, the copy's bytes) for one entry of the spec."""
    source, copy = _inside(workdir, entry["source"]), _inside(workdir, entry["copy"])
    if os.path.dirname(source) != os.path.dirname(copy):
        raise Refused("the copy %s is not in the folder of %s" % (entry["copy"], entry["source"]))
    if os.path.lexists(copy):
        raise Refused("the copy %s already exists" % entry["copy"])
    try:
        info = os.lstat(source)
    except OSError as e:
        raise Refused("cannot read %s: %s" % (entry["source"], e))
    if not stat.S_ISREG(info.st_mode):
        raise Refused("%s is not a regular file" % entry["source"])
    with open(source, "rb") as f:
        data = f.read()
    renames = [(tuple(r["classes"]), r["name"], r["new"]) for r in entry["renames"]]
    for _, name, new in renames:
        if not (_is_name(name) and _is_name(new)):
            raise Refused("not a plain name: %r -> %r" % (name, new))
    try:
        return copy, renamed(data, renames)
    except Refused as e:
        raise Refused("%s: %s" % (entry["source"], e))


def _inside(workdir, relative):
    """The absolute path of ``relative``, whose folder must resolve (symlinks followed) inside ``workdir``."""
    if not relative or os.path.isabs(relative) or ".." in relative.split("/") or "\0" in relative:
        raise Refused("not a relative path in the work tree: %r" % (relative,))
    path = os.path.join(workdir, relative)
    folder = os.path.realpath(os.path.dirname(path))
    if folder != workdir and not folder.startswith(workdir.rstrip("/") + "/"):
        raise Refused("the folder of %s is outside the work tree" % relative)
    return os.path.join(folder, os.path.basename(path))


def _is_name(word):
    return isinstance(word, str) and word.isidentifier()


def renamed(data, renames):
    """``data`` (a module's bytes) with each (classes, name, new) definition's name replaced by ``new``."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        raise Refused("not %s text: %s" % (encoding, e))
    lines = io.StringIO(text, newline="").readlines()
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise Refused("does not parse: %s" % e)
    defs = _def_names(lines)
    read = _read_at_import(tree)
    edits = {}
    for classes, name, new in renames:
        scope = tree.body
        for cls in classes:
            found = [n for n in _in_scope(scope) if isinstance(n, ast.ClassDef) and n.name == cls]
            if len(found) != 1:
                raise Refused("class %s defined %d times in its scope" % (".".join(classes), len(found)))
            scope = found[0].body
        found = [n for n in _in_scope(scope) if _is_function(n) and n.name == name]
        where = ".".join(classes + (name,))
        if len(found) != 1:
            raise Refused("%s defined %d times in its scope" % (where, len(found)))
        # the node's line is its first decorator's before Python 3.8: the name is the first `def NAME` from there
        at = next((p for p in defs.get(name, ()) if p[0] >= found[0].lineno), None)
        if at is None or at in edits:
            raise Refused("cannot find the def of %s" % where)
        if name in read:
            raise Refused("%s is read at import time (line %d): the copy, with the def renamed, would not import"
                          % (name, read[name]))
        edits[at] = (name, new)
    for (row, col), (name, new) in sorted(edits.items(), reverse=True):
        line = lines[row - 1]
        if line[col:col + len(name)] != name:
            raise Refused("line %d does not hold %s where tokenize saw it" % (row, name))
        lines[row - 1] = line[:col] + new + line[col + len(name):]
    return "".join(lines).encode(encoding)  # a BOM read as utf-8-sig is written back


def _def_names(lines):
    """name -> [(row, col)] of every name that follows a ``def`` keyword, in order."""
    out = {}
    previous = None
    readline = iter(lines).__next__
    try:
        for token in tokenize.generate_tokens(readline):
            if token[0] == tokenize.NAME and previous is not None and previous[0] == tokenize.NAME \
                    and previous[1] == "def":
                out.setdefault(token[1], []).append(token[2])
            if token[0] not in (tokenize.COMMENT, tokenize.NL):
                previous = token
    except (tokenize.TokenError, IndentationError, StopIteration) as e:
        raise Refused("does not tokenize: %s" % e)
    return out


def _read_at_import(tree):
    """name -> first line where a name or attribute of that name is read by code that runs when the module is
    imported (the module's and the classes' bodies, decorators, default values; not the functions' bodies)."""
    out = {}
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            word = node.id
        elif isinstance(node, ast.Attribute):
            word = node.attr
        else:
            word = None
        if word is not None and (word not in out or node.lineno < out[word]):
            out[word] = node.lineno
        if _is_function(node) or isinstance(node, ast.Lambda):
            pending.extend(node.decorator_list if not isinstance(node, ast.Lambda) else [])
            pending.extend(d for d in node.args.defaults + node.args.kw_defaults if d is not None)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return out


def _is_function(node):
    return isinstance(node, (ast.FunctionDef, getattr(ast, "AsyncFunctionDef", ast.FunctionDef)))


def _in_scope(body):
    """The statements that bind names in this scope: ``body`` and the blocks of its if/try/with/for/while,
    not the bodies of the functions and classes it defines."""
    for node in body:
        yield node
        if _is_function(node) or isinstance(node, ast.ClassDef):
            continue
        for attr in ("body", "orelse", "finalbody", "handlers"):
            for child in getattr(node, attr, None) or ():
                if isinstance(child, ast.ExceptHandler):
                    for inner in _in_scope(child.body):
                        yield inner
                elif isinstance(child, ast.stmt):
                    for inner in _in_scope([child]):
                        yield inner


def _write_new(path, data):
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        raise Refused("cannot create %s: %s" % (path, e))
    try:
        os.fchmod(fd, 0o644)
        if os.geteuid() == 0:
            os.fchown(fd, _OWNER, _OWNER)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


if __name__ == "__main__":
    sys.exit(_main())
