"""evalharness's guarded pytest launcher, run by the grader inside the grading sandbox.

Usage (by the grader only): python -s eh_pytest.py < settings 3> results
The settings line (JSON: nonce, workdir, pytest arguments, the argv shown, the lines the patch
wrote, the task's own files) comes on standard input, opened by root from a folder the test
process cannot read. Results go to file descriptor 3, a pipe root reads as the run goes.

The code under test runs in this process and can reach any Python object here, so nothing here
that Python can reach holds the nonce. Before pytest or any project code is imported, ``_arm``
installs an audit hook (PEP 578): it cannot be removed, and no Python object refers to it. The
hook alone holds the nonce and the channel, and is the only writer of records:

- the recorder below (pytest hooks, no state of its own) hands each record to the hook with
  ``sys.audit``; the hook writes it only when the caller is the recorder's own code and no frame
  of code the patch wrote is on the way to it;
- a test function of the kind pytest calls directly runs inside ``_ran``, which tells the hook
  that the test's own code ran and whether it returned or raised;
- every sensitive event (gc walks, trace and profile functions, other threads' frames, ctypes
  memory access, replacing a function's code, code objects claiming another file's name, the
  channel's descriptor, ``/proc`` memory and descriptors, bytecode read from the work tree) is
  attributed by walking the stack: to the patch when the line running is one the patch wrote
  (the walk stops at the task's own test files). A hard event from the patch is written and the
  process stops at once (exit 86); a softer one (frame access, fork, ...) is written as a note;
- code is known by what it is, not by the file it names (``genuine``): a code object naming a
  ``.py`` file must be one that file compiles to (the task's test files and their conftests also
  as pytest rewrites them, made before any project code runs), else it is the patch's, in the
  stack walk, the test-ran signal and the hooks record.

The grader (evalharness.grading.verdict) decides from the records, outside this process.
Kept to the Python 3.6 syntax subset: task images run many Python versions.
"""
import _thread
import os
import sys
import time

STOPPED = 86
"""Exit status of a run the guard stopped."""

_HARD = {"gc.get_objects": "walked every object with gc", "gc.get_referrers": "walked objects with gc",
         "gc.get_referents": "walked objects with gc", "sys._current_frames": "read other threads' frames",
         "sys.settrace": "installed a trace function", "sys.setprofile": "installed a profile function",
         "sys.monitoring.register_callback": "registered a monitoring callback",
         "ctypes.string_at": "read raw memory with ctypes", "ctypes.wstring_at": "read raw memory with ctypes",
         "ctypes.cdata": "mapped raw memory with ctypes", "ctypes.call_function": "called a C function with ctypes",
         "ctypes.addressof": "took a raw address with ctypes"}
"""Events that give the code under test the interpreter's internals: stopped when the patch raises them."""
_SOFT = {"sys._getframe": "read the call stack's frames", "os.fork": "forked the test process",
         "os.forkpty": "forked the test process", "marshal.loads": "loaded bytecode",
         "ctypes.dlopen": "loaded a C library with ctypes", "sys.addaudithook": "added an audit hook"}
"""Events worth a reviewer's look when the patch raises them, not proof of a forgery."""
_WATCH = frozenset(list(_HARD) + list(_SOFT) + ["evalharness.rec", "evalharness.ran", "code.__new__", "compile", "exec",
                                                 "object.__setattr__", "object.__getattr__", "open", "fcntl.fcntl",
                                                 "os.truncate"])


def _arm(nonce, fd, settings):
    """Install the audit hook. It keeps the nonce and the channel in its closure; nothing returns."""
    write, fstat, getframe, exit_, lstat = os.write, os.fstat, sys._getframe, os._exit, os.lstat
    exact_type, function_type, method_type = type, type(_arm), type(_Probe().method)
    translate = str.translate
    # everything the hook uses is held here: a module global or a builtin it looked up at event time could be
    # replaced by the code under test, and would then run inside the hook
    str_, int_, bool_, tuple_, list_, length = str, int, bool, tuple, list, len
    hard, soft, watch, stopped_code, me, internals = dict(_HARD), dict(_SOFT), frozenset(_WATCH), STOPPED, \
        __file__, _process_internals
    name_of = type.__dict__["__name__"].__get__  # a class's own name, past any metaclass the code under test wrote
    oserror, sorted_, bytes_, set_ = OSError, sorted, bytes, set
    import _thread as threads
    import gc as gc_
    gc_enabled, gc_disable, gc_enable = gc_.isenabled, gc_.disable, gc_.enable
    os_open, os_read, os_close, rdonly, listdir = os.open, os.read, os.close, os.O_RDONLY, os.listdir
    compile_, code_type, error, dict_ = compile, type(_arm.__code__), Exception, dict
    dict_items, proxy_type, proxy_items = dict.items, type(type.__dict__), type(type.__dict__).items
    import gc
    referents = gc.get_referents  # C: what an object refers to, without running any of its Python
    stdlib = os.path.dirname(os.__file__) + "/"
    workdir = settings["workdir"].rstrip("/") + "/"
    written = {}
    for rel, lines in settings.get("written", {}).items():
        written[workdir + rel] = None if lines is None else frozenset(lines)
    protected = frozenset(workdir + p for p in settings.get("protected", []))
    # the folders the test run can write (the sandbox's tmpfs mounts; the rest of the file system is read-only):
    # code from a file there that changed after this moment was written during the run, by the code under test
    roots = tuple(sorted_(set(r.rstrip("/") + "/" for r in (workdir, os.environ.get("HOME") or workdir, "/tmp",
                                                              "/var/tmp", "/dev/shm"))))
    armed = time.time() - 0.02  # a file's change time comes from the kernel's coarse clock
    fresh = {}
    get_ident, main_thread = _thread.get_ident, _thread.get_ident()
    rewriter = []  # pytest's assertion rewriter's code object, once it has compiled a test file
    known, rewritten = {}, {}  # a file's code objects by name (``codes_of``); files pytest's rewriter compiled
    judged, id_ = {}, id  # genuine()'s answers by code object (kept alive here)
    exact = set()  # files whose code was made before any project code ran, as text and as pytest rewrites it
    imports, bound, missing = {}, {}, object()  # a test file's top-level `from M import N`; their objects, collected
    shapes = {}  # a test file's functions: decorated or not, parameters with defaults or not (``_def_shapes``)
    gettrace, getprofile = sys.gettrace, sys.getprofile
    class_mro, class_dict = type.__dict__["__mro__"].__get__, type.__dict__["__dict__"].__get__
    has_co_lines, range_ = hasattr(code_type, "co_lines"), range
    type_module, object_, type_ = type.__dict__["__module__"].__get__, object, type
    module_dict = type(os).__dict__["__dict__"].__get__
    monitoring = getattr(sys, "monitoring", None)  # 3.12+
    get_tool, register_callback = (monitoring.get_tool, monitoring.register_callback) if monitoring else (None, None)
    home = {}  # (a test file, its module's name): the module's dict, as collection found it
    homes = {}  # a test file: every module dict collection found for it (a file imported twice has two)
    modules, module_type = sys.modules, type(sys)  # the interpreter's own module dict (import uses it, not the name)
    runner_dir = settings.get("runner_dir") or "\0"
    recorder = frozenset(f.__code__ for f in _RECORDER)
    ran_codes = frozenset([_ran.__code__])
    stat = fstat(fd)
    channel = (stat.st_dev, stat.st_ino)
    table = dict((i, "\\u%04x" % i) for i in range(32))
    table[34], table[92] = '\\"', "\\\\"
    busy, seq, noted = [False], [0], {}  # busy: while the launcher itself compiles the test files, before project code
    inside = {}  # thread id: True while the hook runs on that thread (another thread's events are judged as ever)
    checking = {}  # thread id: True while the hook asks whose frame raised an event inside it (its reads raise more)
    # the events by which Python that got to run inside the hook would reach it: its first frame (no frame is
    # handed to a gc callback, a warnings filter or a key's __eq__), or objects and memory
    tripwire = frozenset(["sys._getframe", "sys._getframemodulename", "sys._current_frames", "sys._current_exceptions",
                          "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile",
                          "sys.monitoring.register_callback"])
    frame_names = frozenset(["tb_frame", "gi_frame", "cr_frame", "ag_frame"])

    def enc(value, depth=0):
        kind = exact_type(value)
        if kind is str_:
            return '"' + translate(value, table) + '"'
        if value is None or kind is bool_:
            return "null" if value is None else ("true" if value else "false")
        if kind is int_:
            return "%d" % value
        if (kind is tuple_ or kind is list_) and depth < 3:
            return "[" + ",".join([enc(v, depth + 1) for v in value]) + "]"
        return '"<not plain data>"'

    def put(pairs):
        """One record down the pipe at once: a record waiting in a list would be a Python object the code under test
        could reach and edit."""
        caller = getframe(1).f_code.co_filename
        if inside.get(get_ident()) is not True or exact_type(caller) is not str_ or caller != me:
            exit_(stopped_code)  # only the hook writes, from its own code, while it runs on this thread
        parts = ['"n":"' + nonce + '"', '"s":%d' % seq[0]]
        for pair in pairs:
            if exact_type(pair) is tuple_ and length(pair) == 2:
                parts.append(enc(pair[0]) + ":" + enc(pair[1]))
        seq[0] += 1
        data = ("{" + ",".join(parts) + "}\n").encode("utf-8", "backslashreplace")
        stat = fstat(fd)
        if (stat.st_dev, stat.st_ino) != channel:  # the descriptor was swapped: nothing more can be said
            exit_(stopped_code)
        while data:
            data = data[write(fd, data):]

    def norm(name):
        """``name`` without ``.``, ``..`` or empty parts (``calc/./rt.py`` is ``calc/rt.py``), by string only."""
        if exact_type(name) is not str_:
            return "?" if subclass_of(exact_type(name), str_) else name  # a str subclass's own methods never run here
        if "/." not in name and "//" not in name:
            return name
        parts = []
        for part in name.split("/"):
            if part == ".." and parts:
                parts.pop()
            elif part and part != "." and part != "..":
                parts.append(part)
        return "/" + "/".join(parts)

    def plain(mapping):
        """A dict of the hook's own with ``mapping``'s entries (a plain dict, or a class's mappingproxy), read by C
        alone; None when it is neither or holds a key that is not an exact string. A lookup in the code under test's
        own dict could run Python inside the hook: a ``str`` subclass key made to collide with ``__name__`` has its
        ``__eq__`` called (a seventh reading's H1 took the hook's writer from there)."""
        kind = exact_type(mapping)
        if kind is dict_:
            items = dict_items(mapping)
        elif kind is proxy_type:  # a class's: its dict is a plain dict, whose items() is C
            items = proxy_items(mapping)
        else:
            return None
        out = {}
        for key, value in items:
            if exact_type(key) is not str_:
                return None
            out[key] = value
        return out

    def new_file(name):
        """Whether code from ``name`` comes from a file written during the run: in a folder the run can write,
        changed since the guard was armed, or gone; or a name no file of the read-only rest has (made up, or a
        process's descriptor or memory). Such code is the patch's as much as the lines it wrote."""
        if exact_type(name) is not str_:
            return False
        if fresh.get(name):
            return True
        if name[:1] != "/":
            return False  # <string>, <frozen ...>, a compiled extension's relative source name
        inside = False
        for root in roots:
            if name[:length(root)] == root:
                inside = True
                break
        if name[:6] == "/proc/" or name[:5] == "/dev/":
            made = True
        else:
            try:
                made = lstat(name).st_ctime >= armed and inside
            except oserror:
                made = True
        if made:
            fresh[name] = True
        return made

    def file_text(path):
        """The bytes of the regular file ``path``, or None (read with the functions held here)."""
        try:
            fd = os_open(path, rdonly)
        except oserror:
            return None
        chunks = []
        try:
            for _ in range_(256):  # a source file of up to 256 MiB
                chunk = os_read(fd, 1048576)
                if not chunk:
                    break
                chunks.append(chunk)
        except oserror:
            return None
        finally:
            os_close(fd)
        return b"".join(chunks)

    def same_text(source, path):
        """Whether compiling ``source`` under the name of the existing file ``path`` compiles that file's text
        (bytes as read, or text with any line endings); an AST or a missing file cannot be told apart: True."""
        kind = exact_type(source)
        if kind is not bytes_ and kind is not str_:
            return True
        data = file_text(path)
        if data is None:
            return True
        if kind is bytes_:
            return source == data
        text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
        if text[:1] == "\ufeff":
            text = text[1:]
        return source.replace("\r\n", "\n").replace("\r", "\n") == text

    def codes_in(tops, found):
        """``found`` (co_name -> code objects) with every code object of ``tops`` and those nested in them."""
        stack = list_(tops)
        while stack:
            code = stack.pop()
            found.setdefault(code.co_name, []).append(code)
            for const in code.co_consts:
                if exact_type(const) is code_type:
                    stack.append(const)
        return found

    def codes_of(name):
        """Every code object compiling the file ``name``'s text makes, by ``co_name``; none when it cannot be read
        or compiled (for the task's test files: also their assertion-rewritten code, compiled before any project
        code ran, ``_known_tests``)."""
        found = known.get(name)
        if found is not None:
            return found
        source = file_text(name)
        tops = []
        if source is not None:
            try:
                tops.append(compile_(source, name, "exec", 0, True))
            except error:  # noqa: BLE001 - not Python this interpreter compiles: nothing of it is known
                pass
        known[name] = found = codes_in(tops, {})
        return found

    def cached_rewrite(name):
        """Whether the image holds pytest's own rewritten bytecode of ``name`` (outside the folders the run can
        write): its code then differs from its text's, and the tree it came from was never seen."""
        for root in roots:
            if name[:length(root)] == root:
                return False
        folder, _, file = name.rpartition("/")
        try:
            entries = listdir(folder + "/__pycache__")
        except oserror:
            return False
        stem = file[:-3] + "."
        for entry in entries:
            if entry[:length(stem)] == stem and "-pytest-" in entry:
                return True
        return False

    def reaches_test(frame):
        """Whether the stack from ``frame`` down holds the task's own test code (a test file or a task conftest)."""
        while frame is not None:
            name = norm(frame.f_code.co_filename)
            if name in protected or (name[-12:] == "/conftest.py" and name[:length(workdir)] == workdir
                                     and name not in written and not new_file(name)):
                return True
            frame = frame.f_back
        return False

    def on_exec(frame, code):
        """Code with no file (text compiled at run time: ``<string>``) run with a line of the patch's on the stack, or
        with no test code on it (a chain of C callables the patch planted, called by pytest's collector:
        ``partial(exec, text)``), is the code under test's, with the code nested in it: its frames are then the
        patch's in the stack walk, so what it does is charged. Honest code with no file (dataclasses, namedtuple)
        is run by imports the test code starts, or a plugin's, and raises no hard event."""
        if exact_type(code) is not code_type:
            return
        name = norm(code.co_filename)
        if exact_type(name) is str_ and name[:1] == "/" and name[-3:] == ".py":
            return  # a module's own code (importlib runs every module it loads): judged by its file
        if not where(frame) and reaches_test(frame):
            return  # run by the task's test code (or by code it calls)
        for made in codes_in([code], {}).values():
            for one in made:
                judged[id_(one)] = (one, False)

    def genuine(code):
        """Whether ``code``, when it names a ``.py`` file, is code that file makes (equal code objects: same
        bytecode, constants, names and first line; the name is not compared). A code object renamed with
        ``code.replace(co_filename=...)`` to an existing file's name is not, whoever made it. Names that are no
        ``.py`` path are other rules' (``new_file``, the verdict's)."""
        if exact_type(code) is not code_type:
            return True
        seen = judged.get(id_(code))
        if seen is not None and seen[0] is code:  # held here, so its id is no other object's
            return seen[1]
        answer = judge(code)
        judged[id_(code)] = (code, answer)
        return answer

    def judge(code):
        name = norm(code.co_filename)
        if exact_type(name) is not str_ or name[:1] != "/" or name[-3:] != ".py":
            return True  # code with no file: the code under test's only when ``on_exec`` saw no one run it
        if name in protected and name not in exact:
            return True  # a test file whose code could not be made before the run (pytest is the code under test)
        for candidate in codes_of(name).get(code.co_name, ()):
            if candidate == code:
                return True
        # a plugin pytest rewrote during the run: its rewritten code was not made here (the rewriter is Python the
        # code under test can reach by then); the task's test files and their conftests are known exactly
        return name not in exact and (name in rewritten or cached_rewrite(name))

    def function_code(func):
        kind = exact_type(func)
        if kind is method_type:
            func = func.__func__
            kind = exact_type(func)
        return func.__code__ if kind is function_type else None

    def where(frame):
        """The first frame, from ``frame`` outwards, running a line the patch wrote (or code from a file written
        during the run), as 'file:line'; '' when the walk reaches the task's own test code or the bottom."""
        last = None
        while frame is not None:
            name = norm(frame.f_code.co_filename)
            if name in protected or (name[-12:] == "/conftest.py" and name[:length(workdir)] == workdir
                                     and not new_file(name)):
                if genuine(frame.f_code):
                    return ""
                return "%s:%d (code that file does not hold)" % (name, frame.f_lineno)
            if name in written:
                lines = written[name]
                if lines is None or frame.f_lineno in lines:
                    return "%s:%d" % (name, frame.f_lineno)
            elif new_file(name):
                return "%s:%d (written during the run)" % (name, frame.f_lineno)
            elif not genuine(frame.f_code):
                return "%s:%d (%s)" % (name, frame.f_lineno, "code that file does not hold" if name[:1] == "/"
                                       else "text the code under test had run")
            last, frame = frame, frame.f_back
        if last is not None and get_ident() != main_thread:
            # pytest runs the tests in the main thread; another thread's stack shows who feeds it nothing (a pool's
            # worker calling a C callable the patch submitted): an event there with no test code on the way is the
            # code under test's
            return "%s:%d (a thread no test code runs in)" % (norm(last.f_code.co_filename), last.f_lineno)
        return ""

    def chain_by_patch(frame):
        """Like ``where``, over the whole stack (the task's test code does not end the walk): '' when no
        line the patch wrote is on it. Runner files inside the work tree (pytest's own repository) are
        the code under test: reported as a note, not here."""
        while frame is not None:
            name = norm(frame.f_code.co_filename)
            hit = False
            if name in written:
                lines = written[name]
                hit = lines is None or frame.f_lineno in lines
            elif new_file(name) or not genuine(frame.f_code):
                hit = True
            if hit:
                at = "%s:%d" % (name, frame.f_lineno)
                if name[:length(runner_dir)] != runner_dir:
                    return at
                note("runner", "the test runner's own code, changed by the patch, reported a test", at)
            frame = frame.f_back
        return ""

    def stop(why, at, event):
        put((("t", "guard"), ("action", "stopped"), ("event", event), ("why", why), ("at", at)))
        exit_(stopped_code)

    def note(key, why, at, event=""):
        if noted.get(key, 0) >= 3:
            return
        noted[key] = noted.get(key, 0) + 1
        put((("t", "guard"), ("action", "noted"), ("event", event or key), ("why", why), ("at", at)))

    def direct(frame):
        """'file:line' when ``frame`` itself runs a line the patch wrote (or code from a file written during the
        run), else ''."""
        name = norm(frame.f_code.co_filename)
        if name in written:
            lines = written[name]
            if lines is None or frame.f_lineno in lines:
                return "%s:%d" % (name, frame.f_lineno)
        elif new_file(name):
            return "%s:%d (written during the run)" % (name, frame.f_lineno)
        elif not genuine(frame.f_code):
            return "%s:%d (code that file does not hold)" % (name, frame.f_lineno)
        return ""

    def code_name(func):
        kind = exact_type(func)
        if kind is method_type:
            func = func.__func__
            kind = exact_type(func)
        return func.__code__.co_name if kind is function_type else ""

    def code_file(func):
        kind = exact_type(func)
        if kind is method_type:
            func = func.__func__
            kind = exact_type(func)
        if kind is function_type:
            return norm(func.__code__.co_filename)
        return "<not a Python function>"

    def authentic(codes, what, event):
        """Stop the run unless the event's caller (three frames up: this, its handler, the hook) is one of
        ``codes`` and no line the patch wrote is on the stack above it."""
        caller = getframe(3)
        code = caller.f_code
        for own in codes:  # by identity: hashing a code object hashes its constants, which could be anyone's
            if own is code:
                break
        else:
            stop("a %s not sent by the grader's own code" % what, where(caller) or "?", event)
        at = chain_by_patch(caller.f_back)
        if at:
            stop("the grader's %s was driven by code the patch wrote" % what, at, event)

    def on_record(args):
        authentic(recorder, "record", "evalharness.rec")
        if exact_type(args[0]) is tuple_:
            put(args[0] + made_during_run(args[0]) + (forged_hooks(args[1]) if length(args) > 1 else ())
                + (rebound(args[2]) if length(args) > 2 else ()))

    def forged_hooks(impls):
        """For a "hooks" record: the hook implementations (``(label, function)``) whose code its file does not
        hold."""
        found = []
        if exact_type(impls) is list_:
            for entry in impls:
                if exact_type(entry) is tuple_ and length(entry) == 2 and exact_type(entry[0]) is str_ \
                        and not genuine(function_code(entry[1])):
                    found.append(entry[0])
        return (("forged", found),) if found else ()

    def made_during_run(pairs):
        """For the verdict: which hook implementations' files (a "hooks" record) or which item's ``runtest`` file
        (a "made" record) were written during the run."""
        found = []
        for pair in pairs:
            if exact_type(pair) is not tuple_ or length(pair) != 2:
                continue
            if pair[0] == "files" and exact_type(pair[1]) is list_:
                for entry in pair[1]:
                    if exact_type(entry) is str_ and new_file(norm(entry.partition(" ")[2])):
                        found.append(entry)
            elif pair[0] == "runtest_file" and exact_type(pair[1]) is str_ and new_file(norm(pair[1])):
                found.append(pair[1])
        return (("new_files", found),) if found else ()

    def plain_function(func):
        kind = exact_type(func)
        if kind is method_type:
            func = func.__func__
            kind = exact_type(func)
        return func if kind is function_type else None

    def rebound(functions):
        """At collection's end, for each test function of a task's test file: the names its file imports at its top
        level (``from M import N``) that are not ``M``'s own ``N`` now (nothing has run a test yet); what they are is
        kept, and ``moved`` compares it again as each test starts. Read from dicts only: no object's Python runs."""
        found = []
        if exact_type(functions) is not list_:
            return ()
        loaded = plain(modules)
        if loaded is None:
            return (("rebound", ["sys.modules holds a key that is not a plain string"]),)
        for func in functions:
            func = plain_function(func)
            if func is None:
                continue
            file = norm(func.__code__.co_filename)
            wanted = imports.get(file)
            names = func.__globals__
            mine_names = plain(names)
            if file in shapes and mine_names is not None:
                # the dict of the module its globals name (a copy of it made by the code under test is not that); a
                # file imported twice (as ``test_base`` and ``tests.test_base``) has one per name. Names and files are
                # compared as exact strings (a str subclass's __eq__ or __hash__ would run here)
                called, claimed = mine_names.get("__name__"), mine_names.get("__file__")
                if exact_type(called) is str_ and (file, called) not in home:
                    module = loaded.get(called)
                    real = module_dict(module) if subclass_of(exact_type(module), module_type) else None  # slot read
                    own = plain(real)
                    mine = own.get("__file__") if own is not None else None
                    home[(file, called)] = real if exact_type(mine) is str_ and exact_type(claimed) is str_ and \
                        mine == claimed else names
                    homes.setdefault(file, []).append(home[(file, called)])
            if not wanted or id_(names) in bound:
                continue
            if mine_names is None:  # its lookups could answer other than the dict read here, or run Python
                found.append("%s: %s runs with globals that are not a plain dict of plain names" % (
                    norm(func.__code__.co_filename), func.__code__.co_name))
                continue
            kept = {}
            for alias, module, attribute in wanted:
                value = mine_names.get(alias, missing)
                kept[alias] = value
                owner = loaded.get(module)
                if exact_type(owner) is not module_type:
                    continue
                own = plain(owner.__dict__)
                if own is None:
                    found.append("%s: %s's names are not plain strings" % (norm(func.__code__.co_filename), module))
                elif attribute in own and own.get(attribute) is not value:
                    found.append("%s: %s is not %s.%s" % (norm(func.__code__.co_filename), alias, module, attribute))
            bound[id_(names)] = (names, kept)
        return (("rebound", sorted_(set_(found))),) if found else ()

    def plain_once(names, copied):
        """``plain(names)``, copied once per test start: ``copied`` is [the dict, its copy] of the last call."""
        if copied and copied[0] is names:
            return copied[1]
        copied[:] = [names, plain(names)]
        return copied[1]

    def moved(node, func, copied):
        """The test's module's imported names that changed since collection ended, as the test starts."""
        func = plain_function(func)
        if func is None:
            return
        names = func.__globals__
        entry = bound.get(id_(names))
        if entry is None or entry[0] is not names:
            return
        mine_names = plain_once(names, copied)
        changed = [alias for alias, value in sorted_(entry[1].items())
                   if mine_names is None or mine_names.get(alias, missing) is not value]
        if changed:
            put((("t", "rebound"), ("id", node if exact_type(node) is str_ else "?"), ("names", changed)))

    def not_as_written(outer, inner, copied):
        """What makes the test function about to run other than its file defines it ('' when nothing): a wrapper
        the file does not apply, defaults its parameters do not have, globals that are not its module's dict as
        collection found it. Read from the functions' own slots (no Python of theirs runs); the file's shape was
        read before any project code."""
        code = function_code(inner)
        if code is None:
            return ""
        file = norm(code.co_filename)
        shape = shapes.get(file, {}).get((code.co_name, code.co_firstlineno))
        func = plain_function(inner)
        if shape is None or func is None:
            return ""
        wrapped, defaults = shape
        wrapper = function_code(outer)
        if not wrapped and wrapper is not code and not task_owned(wrapper):
            return "%s runs through a wrapper its file does not apply" % code.co_name
        if not defaults and (func.__defaults__ or func.__kwdefaults__):  # () is none (hypothesis gives it)
            return "%s was given defaults its file does not write" % code.co_name
        names = func.__globals__
        mine_names = plain_once(names, copied)
        if exact_type(names) is not dict_ or mine_names is None:
            return "%s runs with globals that are not a plain dict of plain names" % code.co_name
        called = mine_names.get("__name__")
        if exact_type(called) is not str_ or home.get((file, called), names) is not names:
            return "%s runs with globals other than its module's" % code.co_name
        # and one of its file's modules (a copy of the dict under another ``__name__`` has no entry above)
        for own in homes.get(file, ()):
            if own is names:
                return ""
        return "%s runs with globals other than its module's" % code.co_name if file in homes else ""

    def task_owned(code):
        """Code of the task's test files or of a conftest the run did not write, as that file makes it (a conftest's
        hook that wraps the tests is the task's own)."""
        if code is None:
            return False
        name = norm(code.co_filename)
        return (name in protected or (name[-12:] == "/conftest.py" and name[:length(workdir)] == workdir
                                      and name not in written and not new_file(name))) and genuine(code)

    def patch_code(code):
        """'file:line' when ``code`` is the patch's (a line it wrote, a file written during the run, or code that is
        not its file's), else ''."""
        name = norm(code.co_filename)
        lines = written.get(name, ())
        if lines is None or (lines and any_line_in(code, lines)) or new_file(name) or not genuine(code):
            return "%s:%d" % (name, code.co_firstlineno)
        return ""

    def subclass_of(kind, base):
        """``base`` is in ``kind``'s MRO, by identity (``in`` would run a metaclass's ``__eq__``)."""
        for cls in class_mro(kind):
            if cls is base:
                return True
        return False

    def callable_owner(target):
        """Whose a callable that the interpreter calls back (a trace or profile function, a monitoring callback) is,
        as 'file:line' or a description when it is the code under test's, '' when it is not. Python code is judged
        by its lines (a function, a method, a class's own ``__call__``, found in the class dicts: no Python of
        theirs runs, and code with no file is not trusted); a C callable (coverage's ``CTracer``, cProfile's
        profiler, ``functools.partial``, a bound builtin) is judged by every function reachable from it, and its
        classes must not come from files the run can write."""
        code, call = function_code(target), None
        kind = exact_type(target)
        if code is None:
            for cls in class_mro(kind):
                own = plain(class_dict(cls))
                if own is None:
                    return "a %s object (a class whose names are not plain strings)" % name_of(cls)
                call = own.get("__call__")
                if call is not None:
                    code = function_code(call)
                    break
        if code is not None:
            name = norm(code.co_filename)
            if exact_type(name) is not str_ or name[:1] != "/" or name[-3:] != ".py":
                # code with no file (exec'd text, ``<string>``): not judged by lines anywhere, so not trusted here
                return "%s (code with no file)" % (name if exact_type(name) is str_ else "?")
            return patch_code(code)
        for cls in class_mro(kind):
            if cls is object_:
                continue
            called = type_module(cls)
            if exact_type(called) is not str_:
                return "a callable whose class names no module"
            loaded = plain(modules)
            module = loaded.get(called) if loaded is not None else None
            names = plain(module_dict(module)) if subclass_of(exact_type(module), module_type) else None
            file = names.get("__file__") if names is not None else None
            if exact_type(file) is str_ and (file[:length(workdir)] == workdir or new_file(norm(file))):
                return "a %s object (a class of the code under test's)" % name_of(cls)
        # a C callable calls what it holds: every function reachable from it (through partials, bound methods'
        # objects, containers; not through plain dicts, modules or classes) is judged like a tracer's own code
        queue, seen, budget = [target] + ([call] if call is not None else []), {id_(target): 1}, [400]
        while queue and budget[0] > 0:
            for held in referents(queue.pop()):
                budget[0] -= 1
                if id_(held) in seen:
                    continue
                seen[id_(held)] = 1
                code = function_code(held)
                if code is not None:
                    name = norm(code.co_filename)
                    if exact_type(name) is not str_ or name[:1] != "/" or name[-3:] != ".py":
                        return "%s (code with no file, held by a %s)" % (name if exact_type(name) is str_ else "?",
                                                                        name_of(kind))
                    if patch_code(code):
                        return patch_code(code) + " (held by a %s)" % name_of(kind)
                    continue
                held_kind = exact_type(held)
                if held_kind is dict_ or held_kind is module_type or held_kind is code_type or \
                        held_kind is str_ or held_kind is bytes_ or held_kind is int_ or subclass_of(held_kind, type_):
                    continue
                queue.append(held)
        return ""

    def foreign_tracer():
        """A trace or profile function set on this thread, or a callback registered with ``sys.monitoring``, that is
        the code under test's (``callable_owner``), as 'file:line' ('' when none): one set while no line of the
        patch's was on the stack (C callables the patch planted, called by pytest's collector) could rewrite a
        running test's locals."""
        for tracer in (gettrace(), getprofile()):
            if tracer is not None:
                owner = callable_owner(tracer)
                if owner:
                    return owner
        if monitoring is not None:
            for tool in range_(6):
                if get_tool(tool) is None:
                    continue
                for bit in range_(24):
                    try:
                        callback = register_callback(tool, 1 << bit, None)
                    except error:  # not an event of this Python's
                        continue
                    if callback is not None:
                        register_callback(tool, 1 << bit, callback)
                        owner = callable_owner(callback)
                        if owner:
                            return owner + " (monitoring)"
        return ""

    def any_line_in(code, lines):
        """Whether any line of ``code`` (its own, not its nested functions') is one of ``lines``."""
        if has_co_lines:  # 3.10+
            for entry in code.co_lines():
                if entry[2] in lines:
                    return True
            return False
        line, table = code.co_firstlineno, code.co_lnotab  # 3.8, 3.9: (bytecode step, line step) pairs
        if line in lines:
            return True
        for at in range_(1, length(table), 2):
            step = table[at]
            line += step - 256 if step >= 128 else step
            if line in lines:
                return True
        return False

    def on_ran(args):
        """(test id, "begin" | "returned" | "raised", the function that ran[, what it raised]): a "begin" as the test
        starts, then one signal per call, at its end."""
        authentic(ran_codes, "test-ran signal", "evalharness.ran")
        node, state = args[0], args[1]
        traced = foreign_tracer()
        if traced:
            stop("a trace or profile function of the code under test's was set as a test ran",
                 traced + (" (%s)" % node if exact_type(node) is str_ else ""), "evalharness.ran")
        if state == "begin":
            copied = []  # the test module's dict, read once for both checks
            unlike = not_as_written(args[2], args[3], copied)
            if unlike:
                stop("the test function pytest ran is not as its file defines it: " + unlike,
                     node if exact_type(node) is str_ else "?", "evalharness.ran")
            moved(node, args[2], copied)
            return
        raised = name_of(exact_type(args[4])) if state == "raised" and length(args) > 4 else ""
        file = code_file(args[2])
        put((("t", "ran"), ("id", node if exact_type(node) is str_ else "?"), ("state", state),
             ("file", file), ("name", code_name(args[2])), ("inner_file", code_file(args[3])),
             ("inner_name", code_name(args[3])), ("raised", raised), ("file_new", new_file(file)),
             ("forged", not genuine(function_code(args[2])) or not genuine(function_code(args[3])))))

    def on_other(event, args):
        frame = getframe(2)
        if (event == "code.__new__" or event == "compile") and (
                subclass_of(exact_type(args[1]), str_) and exact_type(args[1]) is not str_
                or event == "code.__new__" and exact_type(args[2]) is not str_):
            # a file or function name whose own __eq__ or __hash__ is Python would run it wherever the hook compares
            # names (a path or bytes given to compile is decoded to a plain string)
            stop("code was named by an object that is not a plain string", where(frame) or "?", event)
        if event in hard:
            at = where(frame)
            if at:
                stop("the code under test " + hard[event], at, event)
        elif event in soft:
            at = direct(frame)
            if at:
                note(event, "the code under test " + soft[event], at, event)
        elif event == "open":
            path = args[0]
            if exact_type(path) is not str_:
                return
            if internals(path):
                at = where(frame)
                if at:
                    stop("the code under test opened " + path, at, event)
            elif path[:length(workdir)] == workdir and path[-4:] in (".pyc", ".pyo"):
                try:
                    lstat(path)  # importers and pytest look for caches that are not there: only one that is counts
                except oserror:
                    return
                if "/__pycache__/" in path:
                    stop("bytecode was read from a cache in the work tree, where the grader had left none",
                         where(frame) or path, event)
                at = where(frame)
                if at:
                    stop("the code under test loaded bytecode from " + path, at, event)
        elif event == "object.__setattr__":
            name = args[1]
            if exact_type(name) is not str_:
                return
            if name == "__code__":
                at = where(frame)
                if at:
                    stop("the code under test replaced a function's code", at, event)
            elif name in ("__defaults__", "__kwdefaults__"):
                target = code_file(args[0])
                if target == me:
                    stop("the grader's own function was changed", where(frame) or "?", event)
                at = direct(frame)
                if at:
                    note(event, "the code under test replaced a function's defaults", at, event)
        elif event == "object.__getattr__":
            at = direct(frame)
            if at:
                note("frames", "the code under test read a frame (%s)" % (args[1] if exact_type(args[1]) is str_
                                                                           else "?"), at, event)
        elif event == "compile" and exact_type(args[0]) is not bytes_ and exact_type(args[0]) is not str_:
            # a syntax tree (the event names no file for one): pytest's assertion rewriter compiles the test modules
            # this way, and so do libraries (werkzeug's URL routing builds its functions as trees). The code it makes
            # is judged where it runs (``genuine``: under a test file's name it is not the test's code, elsewhere it is
            # the patch's); a tree the patch has compiled is stopped here
            caller = frame.f_code
            if not rewriter and caller.co_name == "_rewrite_test" and not new_file(norm(caller.co_filename)) and \
                    norm(caller.co_filename)[-29:] == "/_pytest/assertion/rewrite.py":
                rewriter.append(caller)
            if not rewriter or caller is not rewriter[0]:
                at = direct(frame)  # the caller itself (a library that builds trees, called from a fixed line, runs)
                if at:
                    stop("the code under test compiled a syntax tree", at, event)
                return
            # the event names no file: the rewriter's own local does (``strfn``, ``fn_`` or ``fn`` by pytest version)
            names = frame.f_locals
            for local in ("strfn", "fn_", "fn"):
                value = names.get(local)
                if exact_type(value) is not str_ and local == "fn":  # pytest < 5: a py.path.local's own dict
                    for ref in referents(value):
                        if exact_type(ref) is dict_ and exact_type(ref.get("strpath")) is str_:
                            value = ref.get("strpath")
                if exact_type(value) is str_:
                    rewritten[norm(value)] = True
                    break
        elif event == "code.__new__" or event == "compile":
            claimed = norm(args[1])
            if exact_type(claimed) is not str_:
                return
            # whoever calls (importlib for a loader of the patch's, a chain of C callables): the code of a file's
            # name is that file's text, and no code object is made anew under a test file's name
            if event == "compile" and claimed[:1] == "/" and claimed[-3:] == ".py" and claimed[:6] != "/proc/" \
                    and claimed[:5] != "/dev/" and not same_text(args[0], claimed):
                stop("code was compiled under the name of " + claimed + " from another text than that file's",
                     where(frame) or "?", event)
            if event == "code.__new__" and claimed in protected:
                stop("a code object was made under a test file's name", where(frame) or "?", event)
            # the direct caller only: importlib compiles every module it loads, whoever imports it
            at = direct(frame)
            if not at:
                return
            if claimed in protected:
                stop("the code under test compiled code under a test file's name", at, event)
            if claimed in written:
                return
            if claimed[:1] == "<":  # frames of such code are not attributed later: the making of it is noted now
                note(event, "the code under test compiled code with no file (%s)" % claimed, at, event)
                return
            if claimed[-3:] == ".py" and (claimed[:length(workdir)] == workdir or claimed[:length(stdlib)] == stdlib
                                          or "/site-packages/" in claimed or "/dist-packages/" in claimed):
                stop("the code under test made code that claims to come from " + claimed, at, event)
            note(event, "the code under test compiled code under the name " + claimed, at, event)
        elif event == "exec":
            on_exec(frame, args[0])
        elif event == "fcntl.fcntl" or event == "os.truncate":
            if exact_type(args[0]) is int_ and args[0] == fd:
                stop("the code under test reached the results channel (%s)" % event, where(frame) or "?", event)

    def hook(event, args):
        # no collection runs inside the hook (before anything it allocates): it would call gc callbacks and
        # finalizers of anyone's with the hook's frames on the stack
        collecting = gc_enabled()
        if collecting:
            gc_disable()
        try:
            tid = get_ident()
            if checking.get(tid) is True:  # the hook asking whose frame raised an event: its own reads raise more
                return
            if exact_type(event) is str_ and (event in tripwire or event[:7] == "ctypes." or
                                              event == "object.__getattr__" and length(args) > 1 and
                                              exact_type(args[1]) is str_ and args[1] in frame_names):
                # Python that got to run inside the hook (a gc callback, a warnings filter, a codec search, a key's
                # __eq__; on 3.12+ a collection the interpreter had pending runs as the hook starts) reaching for a
                # frame or objects could take the hook's writer and nonce from its frames
                nested = inside.get(tid) is True
                checking[tid] = True
                try:
                    foreign = (nested or in_hook()) and not own_caller()
                finally:
                    checking[tid] = False
                if foreign:
                    inside[tid] = True
                    stop("Python that is not the grader's ran inside its audit hook and reached for frames or objects "
                         "(%s)" % event, "?", event)
                if nested:
                    return
            if inside.get(tid) is True:  # the hook's own calls
                if event == "open" and exact_type(args[0]) is str_ and internals(args[0]):
                    stop("the process's memory or descriptors were opened inside the grader's audit hook", "?", event)
                return
            if exact_type(event) is not str_:  # a str subclass's own hash or eq would run inside the hook
                inside[tid] = True
                stop("an audit event named by an object that is not a plain string", "?", "?")
                return
            if busy[0] or event not in watch:
                if event[:7] == "ctypes." and not busy[0] and event not in watch:
                    inside[tid] = True
                    try:
                        at = where(getframe(1))
                        if at:
                            note("ctypes", "the code under test used ctypes (%s)" % event, at, event)
                    finally:
                        inside[tid] = False
                return
            inside[tid] = True
            try:
                if event == "evalharness.rec":
                    on_record(args)
                elif event == "evalharness.ran":
                    on_ran(args)
                else:
                    on_other(event, args)
            finally:
                inside[tid] = False
        finally:
            if collecting:
                gc_enable()

    def own_caller():
        """The Python frame that raised the event inside the hook is the launcher's own code."""
        name = getframe(2).f_code.co_filename
        return exact_type(name) is str_ and name == me

    def in_hook():
        """A frame of the hook is on this thread's stack above the event's (the hook did not mark itself yet)."""
        frame = getframe(2)
        for _ in range_(400):
            if frame is None:
                return False
            if frame.f_code is hook_code:
                return True
            frame = frame.f_back
        return False

    hook_code = hook.__code__

    sys.addaudithook(hook)
    if not settings.get("runner_dir"):
        busy[0] = True  # pytest's parser and rewriter compile here: not the code under test's doing
        shaped, watchable = {}, []
        try:
            for name, tops, names, defs, functions in _known_tests(sorted_(protected | _conftests(protected, workdir)),
                                                                   file_text):
                known[name] = codes_in(tops, {})
                exact.add(name)
                if name in protected and names:
                    imports[name] = names
                if name in protected:
                    shaped[name] = defs
                    watchable.append([name, functions])
            shapes.update(_inherited_wraps(shaped))
            # for the start record: the test functions each test file defines, as its text has them. The verdict wants
            # the test-ran signal of every passed test its file defines so, whatever class pytest's item has then
            settings["defs"] = watchable
        finally:
            busy[0] = False


def _py_path(name):
    try:
        import py
        return py.path.local(name)
    except (ImportError, AttributeError):
        return name


def _conftests(files, workdir):
    """Every ``conftest.py`` path from each of ``files``' folders up to ``workdir`` (whether or not it exists)."""
    found, root = set(), workdir.rstrip("/")
    for name in files:
        folder = name.rpartition("/")[0]
        while folder == root or folder[:len(root) + 1] == root + "/":
            found.add(folder + "/conftest.py")
            if folder == root:
                break
            folder = folder.rpartition("/")[0]
    return found


def _known_tests(names, read):
    """(name, [its text's code, its assertion-rewritten code], its imports, its functions' shapes, the names of its
    functions the launcher can watch) for each of the task's test files (and conftests, mirrors, canaries), made by
    pytest's own rewriter before any project code runs (pytest is then as installed: later, the code under test
    could change what its rewriter makes). A test whose code is neither is not the test's file's. The last item
    is ``_watchable_defs``."""
    try:
        import ast
        from _pytest.assertion import rewrite
    except ImportError:
        return []
    out = []
    for name in names:
        data = read(name) if name[-3:] == ".py" else None
        if data is None:
            continue
        try:
            tops = [compile(data, name, "exec", 0, True)]
            tree = ast.parse(data, filename=name)
            imported = _imported_names(tree, ast)
            shapes = _def_shapes(tree, ast)
            plain = _watchable_defs(tree, ast)
            try:
                rewrite.rewrite_asserts(tree, data, name, None)
            except TypeError:  # pytest < 5: (module, module_path, config), the path a py.path.local
                rewrite.rewrite_asserts(tree, _py_path(name), None)
            tops.append(compile(tree, name, "exec", dont_inherit=True))
        except Exception:  # noqa: BLE001 - a file this Python or this pytest cannot compile: not known, not judged
            continue
        out.append((name, tops, imported, shapes, plain))
    return out


def _def_shapes(tree, ast):
    """({(name, first line): [wrapped, has defaults]}, {class: (wrapped, base names, its functions' keys)}) for every
    function a file defines, its first line as its code object has it (the first decorator's). A function is wrapped
    by its file when a decorator other than a pytest mark (``pytest.mark.X``, or ``mark.X`` with ``mark`` imported from
    pytest: a mark returns the function itself) sits on it or on its class, or when the file assigns its name
    (``test_x = patch(...)(test_x)``): only such a test may run through a wrapper. A decorated class wraps the tests
    it inherits too (``_inherited_wraps``). One whose parameters have no defaults is given none (pytest passes its
    fixtures by name)."""
    marks = {"pytest"} | {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                          and node.module == "pytest" for a in node.names if a.name == "mark"}

    def wraps(decorators):
        for node in decorators:
            while isinstance(node, ast.Call):
                node = node.func
            parts = []
            while isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            if isinstance(node, ast.Name):
                parts.append(node.id)
            parts.reverse()
            mark = (len(parts) >= 3 and parts[0] == "pytest" and parts[1] == "mark") or \
                (len(parts) >= 2 and parts[0] in marks and parts[0] != "pytest")
            if not mark:
                return True
        return False

    assigned = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                assigned.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    shapes, classes = {}, {}

    def base_name(node):
        while isinstance(node, ast.Call):
            node = node.func
        return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""

    def visit(body, outer, keys):
        for node in body:
            if isinstance(node, ast.ClassDef):
                own = wraps(node.decorator_list)
                mine = []
                visit(node.body, outer or own, mine)
                classes.setdefault(node.name, []).append((outer or own, [base_name(b) for b in node.bases], mine))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                defaults = bool(node.args.defaults) or any(d is not None for d in node.args.kw_defaults)
                key = (node.name, first)
                shapes[key] = [outer or wraps(node.decorator_list) or node.name in assigned, defaults]
                keys.append(key)
                visit(node.body, outer, [])
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, field, None)
                    if isinstance(inner, list):
                        visit([n for n in inner if isinstance(n, ast.AST)], outer, keys)
    visit(tree.body, False, [])
    return shapes, classes


def _inherited_wraps(files):
    """``files``: {file: (shapes, classes)} of the task's test files. A class a non-mark decorator wraps (``mock.patch``
    on a class wraps every test it sees, inherited ones too) makes the functions of its bases, by name, in any of the
    files, wrapped as well. Returns {file: shapes}."""
    wrapped, todo = set(), []
    for shapes, classes in files.values():
        for name, entries in classes.items():
            for is_wrapped, bases, _ in entries:
                if is_wrapped:
                    todo.extend(bases)
    while todo:
        name = todo.pop()
        if not name or name in wrapped:
            continue
        wrapped.add(name)
        for shapes, classes in files.values():
            for is_wrapped, bases, keys in classes.get(name, ()):
                for key in keys:
                    shapes[key][0] = True
                todo.extend(bases)
    return {file: dict((k, tuple(v)) for k, v in shapes.items()) for file, (shapes, classes) in files.items()}


def _watchable_defs(tree, ast):
    """The test-id parts (``name``, ``Class.name``, ``Outer.Inner.name``, dotted) of every test function a file
    defines that the launcher can watch: a ``def`` that is not ``async`` and does not ``yield``. A class has the
    functions of its bases defined in the same file too (by name, its own winning). Sorted."""
    classes, top, simple = {}, {}, {}

    def yields(node):
        todo = list(ast.iter_child_nodes(node))
        while todo:
            inner = todo.pop()
            if isinstance(inner, (ast.Yield, ast.YieldFrom)):
                return True
            if not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                todo.extend(ast.iter_child_nodes(inner))
        return False

    def base_name(node):
        return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""

    def visit(body, prefix, into):
        for node in body:
            if isinstance(node, ast.ClassDef):
                name = prefix + node.name
                methods = {}
                visit(node.body, name + ".", methods)
                classes.setdefault(name, []).append(([base_name(b) for b in node.bases], methods))
                simple.setdefault(node.name, []).append(name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                into[node.name] = isinstance(node, ast.FunctionDef) and not yields(node)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, field, None)
                    if isinstance(inner, list):
                        visit([n for n in inner if isinstance(n, ast.AST)], prefix, into)

    visit(tree.body, "", top)

    def resolved(name, seen):
        out = {}
        if name in seen or len(seen) > 20:
            return out
        for bases, methods in classes.get(name, ()):
            for base in reversed(bases):
                for qualified in simple.get(base, ()):
                    out.update(resolved(qualified, seen + [name]))
            out.update(methods)
        return out

    found = set(name for name, ok in top.items() if ok)
    for name in classes:
        found.update(name + "." + method for method, ok in resolved(name, []).items() if ok)
    return sorted(found)


def _imported_names(tree, ast):
    """(name, module, attribute) for each ``from module import attribute [as name]`` at the top level of a module
    (absolute, not ``*``) whose name nothing else at the top level binds."""
    found, counts = [], {}
    for node in tree.body:
        bound = []
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if alias.name != "*":
                    found.append((alias.asname or alias.name, node.module, alias.name))
                    bound.append(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            bound = [(a.asname or a.name).split(".")[0] for a in node.names]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = [node.name]
        else:
            bound = [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        for name in bound:
            counts[name] = counts.get(name, 0) + 1
    return [entry for entry in found if counts.get(entry[0]) == 1]


def _process_internals(path, _len=len):
    """A process's memory, descriptors or mapped files: /proc/<pid|self|thread-self>[/task/<tid>]/{mem,fd/,
    map_files/}, /dev/fd/ (not /proc/meminfo and the like)."""
    if path[:8] == "/dev/fd/":
        return True
    parts = path.split("/")
    if _len(parts) < 4 or parts[1] != "proc" or not (parts[2].isdigit() or parts[2] in ("self", "thread-self")):
        return False
    rest = parts[3:]
    if _len(rest) >= 3 and rest[0] == "task" and rest[1].isdigit():
        rest = rest[2:]
    return rest[0] in ("mem", "fd", "map_files", "fdinfo") if rest else False


class _Probe(object):
    def method(self):
        return None


def _ran(_eh_orig=None, _eh_id=None, _eh_audit=None, _eh_base=None, _eh_inner=None, **kwargs):
    """Stands in for a test function while its call phase runs (a fresh function per test, its
    arguments bound as defaults: replacing them is an audited event). Tells the hook the test's own
    code ran, and whether it returned or raised (one signal, at the end)."""
    _eh_audit("evalharness.ran", _eh_id, "begin", _eh_orig, _eh_inner)
    try:
        value = _eh_orig(**kwargs)
    except _eh_base as e:
        _eh_audit("evalharness.ran", _eh_id, "raised", _eh_orig, _eh_inner, e)
        raise
    _eh_audit("evalharness.ran", _eh_id, "returned", _eh_orig, _eh_inner)
    return value


def _undumpable():
    """``prctl(PR_SET_DUMPABLE, 0)``: a process of the same user (a child the code under test starts, which the audit
    hook does not watch) can then neither read nor write this one's memory through /proc/<pid>/mem or ptrace. Before
    any project code runs; False where ctypes or prctl is missing."""
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0
    except Exception:  # noqa: BLE001 - no ctypes, no prctl: the start record says so
        return False


def _main():
    undumpable = _undumpable()
    line = sys.stdin.readline()
    import json
    settings = json.loads(line)
    del line
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    try:
        import fcntl
        fcntl.fcntl(3, fcntl.F_SETFD, fcntl.fcntl(3, fcntl.F_GETFD) | fcntl.FD_CLOEXEC)
    except (ImportError, OSError):
        pass
    workdir = settings["workdir"]
    settings["runner_dir"] = _runner_dir(workdir)
    if hasattr(sys, "addaudithook"):
        _arm(settings.pop("nonce"), 3, settings)
    else:  # Python < 3.8: no audit hooks; the start record says guarded: false
        _legacy_channel(settings.pop("nonce"), 3)
    settings.pop("written", None)

    import pytest
    import _pytest.python

    _record((("t", "start"), ("pytest", pytest.__version__), ("python", sys.version.split()[0]),
             ("guarded", hasattr(sys, "addaudithook")), ("undumpable", undumpable),
             ("runner_dir", settings["runner_dir"]),
             ("mirrors", bool(settings.get("mirrors"))), ("defs", settings.pop("defs", None))))
    try:
        import _pytest.unittest
        unit = _pytest.unittest.TestCaseFunction
    except (ImportError, AttributeError):
        unit = None
    plugin = _Recorder(_pytest.python.Function, unit, settings.get("mirrors") or {})
    sys.path.insert(0, workdir)  # what `python -m pytest` run in the work tree does
    os.chdir(workdir)
    # argv as `python -m pytest ARGS` has it, with the grader's decoy --junitxml that pytest is not given
    shown = settings.get("argv", settings["args"])
    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py")] + list(shown)
    code = int(pytest.main(list(settings["args"]), plugins=[plugin]))
    _record((("t", "exit"), ("code", code)))
    # a normal interpreter exit, as `python -m pytest` has: exit handlers the code under test left run
    # now, and one that changes the exit status is caught (the record above holds pytest's own)
    sys.exit(code)


def _runner_dir(workdir):
    """The folder pytest itself is imported from, when it lies in the work tree (pytest's own repository:
    the runner is then the code under test), else ''. Found without importing it."""
    try:
        import importlib.util
        spec = importlib.util.find_spec("_pytest")
    except (ImportError, ValueError, AttributeError):
        return ""
    origin = getattr(spec, "origin", None) or ""
    folder = os.path.dirname(os.path.dirname(origin))
    return folder + "/" if folder and (folder + "/").startswith(workdir.rstrip("/") + "/") else ""


def _legacy_channel(nonce, fd):
    """Pythons without audit hooks: records go straight to the descriptor (tamper-evident only)."""
    seq = [0]

    def legacy(event, args):
        import json
        if event == "evalharness.rec":
            record = dict(args[0])
        elif event == "evalharness.ran" and args[1] != "begin":
            target = getattr(args[2], "__func__", args[2])
            code = getattr(target, "__code__", None)
            record = {"t": "ran", "id": args[0], "state": args[1],
                      "file": getattr(code, "co_filename", "<not a Python function>"),
                      "name": getattr(code, "co_name", ""),
                      "raised": type(args[4]).__name__ if args[1] == "raised" and len(args) > 4 else ""}
            inner = getattr(getattr(args[3], "__func__", args[3]), "__code__", None)
            record.update(inner_file=getattr(inner, "co_filename", ""), inner_name=getattr(inner, "co_name", ""))
        else:
            return
        record["n"], record["s"] = nonce, seq[0]
        seq[0] += 1
        os.write(fd, (json.dumps(record, default=str) + "\n").encode())
    sys.audit = lambda event, *args: legacy(event, args)  # noqa: E731 - Python < 3.8 has no sys.audit


def _record(pairs, _audit=sys.audit if hasattr(sys, "audit") else None):
    """Hand one record to the hook (the hook checks it was this code that called)."""
    (_audit or sys.audit)("evalharness.rec", pairs)


def _makereport(item, call, _audit=sys.audit if hasattr(sys, "audit") else None, _plain=None):
    """Hookwrapper (first): what the test raised, read before any other hook runs, beside the report."""
    excinfo = call.excinfo
    if excinfo is None and call.when == "call":
        # a unittest.TestCase test: pytest's unittest plugin keeps what the test raised on the
        # item and hands it to the call in its own makereport hook, which runs after this one
        pending = getattr(item, "_excinfo", None)
        if isinstance(pending, list) and pending:
            excinfo = pending[0]
    raised = excinfo.typename if excinfo is not None else None
    message = ""
    if excinfo is not None:
        try:
            message = str(excinfo.value)[:2000]
        except Exception:  # noqa: BLE001 - an exception whose str() fails is still an exception
            message = "<unprintable>"
    outcome = yield
    report = outcome.get_result()
    markers = sorted(set(m.name for m in item.iter_markers() if m.name in ("skip", "skipif", "xfail")))
    kind = type(item)
    runtest = getattr(kind, "runtest", None)
    runtest_code = getattr(getattr(runtest, "__func__", runtest), "__code__", None)
    (_audit or sys.audit)("evalharness.rec", (
        ("t", "made"), ("id", str(report.nodeid)), ("when", str(report.when)), ("outcome", str(report.outcome)),
        ("raised", None if raised is None else str(raised)), ("raised_msg", message), ("markers", markers),
        ("wasxfail", None if getattr(report, "wasxfail", None) is None else str(report.wasxfail)),
        ("item", "" if kind is _plain else "%s.%s" % (kind.__module__, kind.__name__)), ("plain", kind is _plain),
        ("wrapped", getattr(item, "_eh_wrapped", False) is True),
        ("runtest_file", runtest_code.co_filename if runtest_code is not None else "<not a Python function>")))


def _logreport(report, _audit=sys.audit if hasattr(sys, "audit") else None):
    longrepr = ""
    skip_from = None
    if report.longrepr is not None:
        if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            skip_from = str(report.longrepr[0])
            longrepr = str(report.longrepr[2])
        else:
            try:
                longrepr = str(report.longrepr)
            except Exception:  # noqa: BLE001
                longrepr = "<unprintable>"
    (_audit or sys.audit)("evalharness.rec", (
        ("t", "report"), ("id", str(report.nodeid)), ("when", str(report.when)), ("outcome", str(report.outcome)),
        ("wasxfail", None if getattr(report, "wasxfail", None) is None else str(report.wasxfail)),
        ("longrepr", longrepr[-2000:]), ("skip_from", skip_from)))


def _runtest_call(item, _audit=sys.audit if hasattr(sys, "audit") else None, _function=type(_ran),
                  _method=type(_Probe().method), _base=BaseException, _set=setattr, _unit=None, _plain=None):
    """Hookwrapper (first): the test function of a plain pytest Function, or the method of a ``unittest.TestCase``
    test, runs inside a fresh ``_ran``. pytest >= 5.4 calls a TestCase's method through ``item.obj``; older ones
    call the one the case instance has: both are set."""
    original, kind, case = None, type(item), None
    if kind is _plain or (kind is _unit and _unit is not None):
        obj = item.obj
        target = obj.__func__ if type(obj) is _method else obj
        if type(target) is _function and not (target.__code__.co_flags & 0x2a0):  # not a coroutine or generator
            original = obj
            inner = target  # a decorated test (functools.wraps): the function it wraps, for the verdict
            for _ in range(10):
                wrapped = getattr(inner, "__wrapped__", None)
                if type(wrapped) is not _function:
                    break
                inner = wrapped
            wrapper = _function(_ran.__code__, {"__builtins__": {}}, "_ran",
                                (obj, str(item.nodeid), _audit or sys.audit, _base, inner))
            if kind is _unit:
                # unittest reads what a method's decorators set on it (expectedFailure, skip) from the method
                for name in ("__unittest_expecting_failure__", "__unittest_skip__", "__unittest_skip_why__"):
                    if name in target.__dict__:
                        _set(wrapper, name, target.__dict__[name])
                case = item.__dict__.get("_testcase") or item.__dict__.get("_instance")
                if case is not None:
                    _set(case, item.name, wrapper)
            item.obj = wrapper
            item._eh_wrapped = True
    yield
    if original is not None:
        item.obj = original
        if case is not None:
            try:
                delattr(case, item.name)
            except AttributeError:  # pytest >= 5.4 removed its own (the same name) already
                pass


def _collectreport(report, _audit=sys.audit if hasattr(sys, "audit") else None):
    if report.failed:
        (_audit or sys.audit)("evalharness.rec", (("t", "collect_error"), ("id", str(report.nodeid)),
                                                  ("longrepr", str(report.longrepr)[-2000:])))


def _exception_interact(node, call, report, _audit=sys.audit if hasattr(sys, "audit") else None):
    # what a collection error raised (its type, not its text): pytest.exit from the code under test
    if type(report).__name__ == "CollectReport" and call.excinfo is not None:
        kind = call.excinfo.type
        (_audit or sys.audit)("evalharness.rec", (("t", "collect_exc"), ("id", str(report.nodeid)),
                                                  ("type", kind.__module__ + "." + kind.__name__)))


def _collection_finish(session, _audit=sys.audit if hasattr(sys, "audit") else None, _unit=None, _plain=None):
    tests = []
    for item in session.items:
        try:
            if type(item) is _plain:
                tests.append(item.obj)
            elif _unit is not None and type(item) is _unit:  # the class's function: no TestCase is made yet
                tests.append(getattr(item.parent.obj, item.name, None))
        except Exception:  # noqa: BLE001 - an item whose function cannot be had is judged by its test-ran signal
            pass
    (_audit or sys.audit)("evalharness.rec", (("t", "collected"), ("count", len(session.items))), None, tests)
    files, impls = _hook_files(session.config)
    (_audit or sys.audit)("evalharness.rec", (("t", "hooks"), ("at", "collected"), ("files", files)), impls)


def _sessionfinish(session, exitstatus, _audit=sys.audit if hasattr(sys, "audit") else None):
    files, impls = _hook_files(session.config)
    (_audit or sys.audit)("evalharness.rec", (("t", "hooks"), ("at", "end"), ("files", files)), impls)
    (_audit or sys.audit)("evalharness.rec", (("t", "end"), ("exitstatus", int(exitstatus)),
                                              ("testsfailed", int(session.testsfailed)),
                                              ("collected", int(session.testscollected))))


def _hook_files(config):
    """The file of every hook implementation registered now, for every hook pytest has (not a list of
    hooks): the verdict looks for code the patch wrote, or code with no file. With them, each
    implementation's function, labelled as in the list: the audit hook checks its code is its file's."""
    found, impls = set(), []
    hooks = config.pluginmanager.hook
    for name in sorted(vars(hooks)):
        caller = getattr(hooks, name, None)
        get = getattr(caller, "get_hookimpls", None)
        if get is None:
            continue
        for impl in get():
            function = getattr(impl, "function", None)
            function = getattr(function, "__func__", function)
            code = getattr(function, "__code__", None)
            label = name + " " + (code.co_filename if code is not None else "<no code>")
            found.add(label)
            impls.append((label, function))
    return sorted(found), impls


_RECORDER = (_record, _makereport, _logreport, _collectreport, _exception_interact, _collection_finish,
             _sessionfinish, _runtest_call)
"""The functions allowed to hand records to the hook (by code object, checked in the hook)."""


class _Recorder(object):
    """The pytest plugin: each hook is one of the module's recorder functions, marked for pluggy."""

    def __init__(self, function_class, unit_class, mirrors):
        import pytest
        mark = pytest.hookimpl
        # pytest's own Function class, bound by identity (a name can be changed, the object cannot)
        self.pytest_runtest_makereport = mark(hookwrapper=True, tryfirst=True)(_bound(_makereport, function_class))
        self.pytest_runtest_call = mark(hookwrapper=True, tryfirst=True)(_bound(_runtest_call, unit_class,
                                                                                function_class))
        self.pytest_runtest_logreport = mark(trylast=True)(_logreport)
        self.pytest_collectreport = mark(trylast=True)(_collectreport)
        self.pytest_exception_interact = mark(trylast=True)(_exception_interact)
        self.pytest_collection_finish = mark(trylast=True)(_bound(_collection_finish, unit_class, function_class))
        self.pytest_sessionfinish = mark(trylast=True)(_sessionfinish)
        if mirrors:
            self.pytest_collection_modifyitems = mark(trylast=True)(_mirror_selection(mirrors))


def _bound(function, *classes):
    """``function`` (same code object: the hook still knows it) with its last defaults (``_plain``, and before it
    ``_unit`` where it has one) set to ``classes``."""
    return type(function)(function.__code__, function.__globals__, function.__name__,
                          function.__defaults__[:-len(classes)] + classes)


def _mirror_selection(mirrors):
    """A mirror copy is given to pytest as a file (a node id into a module that fails to import would end the
    session); of each copy only its mirrored tests run."""
    def pytest_collection_modifyitems(config, items):
        kept, dropped = [], []
        for item in items:
            path, _, rest = item.nodeid.partition("::")
            wanted = mirrors.get(path)
            (dropped if wanted is not None and rest.split("[", 1)[0] not in wanted else kept).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
    return pytest_collection_modifyitems


if __name__ == "__main__":
    _main()
