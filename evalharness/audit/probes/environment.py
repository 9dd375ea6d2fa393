"""The ``environment`` probe: listed tests that need the network, the clock or the host.

Static, over the listed tests' code (the test patch applied to the base files; ``_testcode``), the
module's fixtures and helpers, and one level into the library: a function the test imports from the
repository is read after the gold patch. Plus, when a validation report exists, the tails of its runs'
output (a DNS failure or refused connection there is the network, seen happen).
"""

from __future__ import annotations

import ast
import re

from evalharness.audit.context import AuditContext
from evalharness.audit.findings import Finding, inputs_hash
from evalharness.audit.probes import _testcode as tc
from evalharness.audit.probes import register
from evalharness.types import TaskSpec
from evalharness.validation import NETWORK_SIGNS

_VERBS = ("get", "post", "put", "patch", "delete", "head", "options", "request", "stream")
NETWORK = ("socket.create_connection", "socket.socket", "socket.getaddrinfo", "socket.gethostbyname",
           "urllib.request.urlopen", "urllib.request.urlretrieve", *(f"requests.{v}" for v in _VERBS),
           *(f"requests.{c}.{v}" for c in ("Session", "session") for v in _VERBS), *(f"httpx.{v}" for v in _VERBS),
           *(f"httpx.{c}.{v}" for c in ("Client", "AsyncClient") for v in _VERBS), "urllib3.request",
           *(f"urllib3.PoolManager.{v}" for v in ("request", "urlopen")), "aiohttp.request", "http.client.HTTPConnection", "http.client.HTTPSConnection",
           "smtplib.SMTP", "ftplib.FTP", "telnetlib.Telnet", "asyncio.open_connection")
"""Calls that open connections (a client's data classes, such as requests.Response, and making a session do not)."""
WALL_CLOCK = ("time.time", "time.time_ns", "time.localtime", "time.gmtime", "time.strftime", "datetime.datetime.now",
              "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today")
DURATION = ("time.monotonic", "time.perf_counter", "time.monotonic_ns", "time.perf_counter_ns")
HOST = ("os.getenv", "os.environ", "os.path.expanduser", "pathlib.Path.home", "getpass.getuser", "os.getlogin",
        "os.getuid", "pwd.", "socket.gethostname", "platform.node", "os.uname")
"""The user's environment and the machine's identity (a branch on sys.platform is portability, not a defect)."""
USER_HOST = ("os.path.expanduser", "pathlib.Path.home", "getpass.getuser", "os.getlogin", "pwd.",
             "socket.gethostname", "platform.node")
"""What a library function reads that is the user's or the machine's own (its settings' variables are not)."""
USER_VARIABLE = re.compile(r"^(HOME|USER|USERNAME|LOGNAME|SHELL|TMPDIR|TEMP|TMP|TZ|LANG|LC_\w+|XDG_\w+|APPDATA|"
                           r"LOCALAPPDATA|USERPROFILE)$")
FILE_ACCESS = ("open", "io.open", "os.path.exists", "os.path.isfile", "os.path.isdir", "os.listdir", "os.stat",
               "os.scandir", "shutil.")
PATH_ACCESS = ("read_text", "read_bytes", "open", "exists", "is_file", "is_dir", "iterdir", "stat", "glob")
"""Methods of a ``pathlib.Path`` that touch the file system (building a Path from a string does not)."""
HOST_PATH = re.compile(r"^(/home/|/Users/|/root/|/etc/|/var/|/usr/|/opt/|/mnt/|[A-Za-z]:\\)")
URL = re.compile(r"^(?:https?|ftp|wss?|smtp)://(?:[^@/]*@)?(\[[^\]]+\]|[^/:?#\s]+)", re.I)
HOSTNAME = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3}){3}|(?:[a-z0-9-]+\.)+[a-z]{2,})$", re.I)
LOOPBACK = re.compile(r"^(localhost|127\.\d+\.\d+\.\d+|\[?::1\]?|0\.0\.0\.0|[\w.-]+\.localhost)$", re.I)
MOCKED = {
    "network": re.compile(r"(patch|setattr|mock)[^\n]*(socket|requests|urlopen|urllib|http|connect)|requests_mock|"
                          r"httpx_mock|respx|responses\.|httpretty|vcr|cassette", re.I),
    "clock": re.compile(r"freeze_?time|freezegun|time_machine|(patch|setattr)[^\n]*(\btime\b|datetime|\bnow\b|today)",
                        re.I),
    "host": re.compile(r"setenv|delenv|patch\.dict\([^)]*environ|environ\[[^\]]+\]\s*=|environ\.(update|setdefault)|"
                       r"putenv|(patch|setattr)[^\n]*(home|expanduser|getuser|platform|gethostname|environ|getuid)", re.I),
}
SEVERITY = {"network": 2, "timing": 2, "clock": 1, "host": 1, "output": 2}


def _dotted(node: ast.AST, names: dict[str, str]) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Call):
        return _dotted(node.func, names) + ("." + ".".join(reversed(parts)) if parts else "")
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([names.get(node.id, node.id), *reversed(parts)])


def _matches(name: str, table: tuple[str, ...]) -> bool:
    return any(name == t or (t.endswith(".") and name.startswith(t)) or name.startswith(t + ".") for t in table)


def _hosts(nodes: list[ast.AST]) -> list[str]:
    """Hosts named by string literals: URLs anywhere, bare host names or IPs as call arguments or tuple items."""
    found = []
    for node in (n for root in nodes for n in ast.walk(root)):
        if isinstance(node, (ast.Call, ast.Tuple)):
            items = [*node.args, *(k.value for k in node.keywords)] if isinstance(node, ast.Call) else node.elts
            found += [a.value for a in items if isinstance(a, ast.Constant) and isinstance(a.value, str)
                      and HOSTNAME.match(a.value)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and URL.match(node.value):
            found.append(URL.match(node.value).group(1))
    return [h for h in found if not LOOPBACK.match(h)]


class EnvironmentProbe:
    name = "environment"
    family = "environment"
    version = 2
    needs = "task"
    rule = (
        "Reads each listed test (the test patch applied to the files at base), the test module's fixtures and "
        "helpers, and one level into the library (a repository function the test calls, read after the gold "
        "patch). network (severity 2): a network call (sockets, urllib, http.client, requests, httpx, ...) in "
        "the test or in a library function it calls, together with a non-loopback host (a URL or host literal) "
        "in the test or that library module, and no mocking of the network (mock.patch/monkeypatch of the "
        "client, requests_mock, responses, respx, vcr); or the validation runs' output shows a DNS or connection "
        "failure. clock: the test itself reads the wall clock (time.time, datetime.now/utcnow/today, "
        "date.today) or measures durations (monotonic, perf_counter) with no freezing (freezegun, time_machine, "
        "a patched clock): severity 1, 2 when it also sleeps (a timing assertion). host (severity 1): the test "
        "reads environment variables, the home directory, user or host name or platform (a library function it "
        "calls: the home directory, user or host name, or a user variable such as HOME, USER, TZ, LANG, XDG_*) and "
        "the test does not set them (monkeypatch.setenv, os.environ[...] = ..., patch.dict(os.environ), a "
        "patched home), or the test opens an absolute host path (/home, /etc, /usr, C:\\). A URL string alone "
        "(a parser's input) is not the network; a library clock read is not the test's. Skipped when no listed "
        "test can be read.")

    def run(self, task: TaskSpec, ctx: AuditContext) -> Finding:
        base = tc.cached(ctx.base_code(task))
        scopes, missing = tc.listed_scopes(task, base)
        memo: dict = {}
        hits = [hit for scope in scopes for hit in self._scan(scope, task, base, memo)]
        hits += _output_hits(ctx.validation(task))
        key = inputs_hash(self.name, self.version, task.test_patch, task.patch, task.FAIL_TO_PASS, task.PASS_TO_PASS,
                          [h["what"] for h in hits])
        evidence = {"hits": hits[:30], "tests_read": len(scopes), "tests_not_found": missing[:20]}
        if not scopes and not hits:
            return Finding(task.instance_id, self.name, self.family, False, 0,
                           "no listed test could be read (no base code for the test files, none in the test patch)",
                           evidence, "skipped", inputs_hash=key)
        if not hits:
            return Finding(task.instance_id, self.name, self.family, False, 0,
                           f"no network, clock or host use in the {len(scopes)} listed test(s) read", evidence,
                           inputs_hash=key)
        severity = max(SEVERITY[h["kind"]] for h in hits)
        kinds = sorted({h["kind"] for h in hits})
        first = next(h for h in hits if SEVERITY[h["kind"]] == severity)
        return Finding(task.instance_id, self.name, self.family, True, severity,
                       f"tests need the {'/'.join(kinds)}: {first['test']}: {first['what']}", evidence,
                       inputs_hash=key)

    def _scan(self, scope: tc.Scope, task: TaskSpec, base, memo: dict) -> list[dict]:
        """One listed test's hits; ``memo`` keeps what every test of a file (or task) shares."""
        if ("file", scope.path) not in memo:
            memo[("file", scope.path)] = (tc.imported_names(scope.tree), "\n".join(ast.unparse(n) for n in scope.helpers),
                                          _hosts(scope.helpers))
        names, helper_text, helper_hosts = memo[("file", scope.path)]
        own = [scope.node]
        text = ast.unparse(scope.node) + "\n" + helper_text
        calls = [(_dotted(n.func, names), n) for root in own for n in ast.walk(root) if isinstance(n, ast.Call)]
        reads = calls + [(_dotted(n, names), n) for root in own for n in ast.walk(root)
                         if isinstance(n, ast.Attribute) and not isinstance(getattr(n, "ctx", None), ast.Del)]
        hits: list[dict] = []

        def hit(kind: str, node: ast.AST, what: str) -> None:
            family = {"timing": "clock"}.get(kind, kind)
            if not MOCKED[family].search(text):
                hits.append({"kind": kind, "test": scope.test, "line": getattr(node, "lineno", 0), "what": what})

        for name, _ in calls:
            if ("lib", name) not in memo:
                memo[("lib", name)] = self._library(name, task, base)
        library = [(name, node, memo[("lib", name)]) for name, node in calls]
        hosts = _hosts(own) + helper_hosts + [h for _, _, lib in library if lib for h in lib[1]]
        for name, node in calls:
            if _matches(name, NETWORK) and hosts:
                hit("network", node, f"{name}() with non-loopback host {hosts[0]!r}")
        for name, node, lib in library:
            if lib and lib[0]["network"] and hosts:
                hit("network", node, f"{name}() opens connections ({lib[0]['network']}), host {hosts[0]!r}")
            if lib and lib[0]["host"]:
                hit("host", node, f"{name}() reads {lib[0]['host']}")
        clock = [(n, node) for n, node in calls if _matches(n, WALL_CLOCK + DURATION)]
        sleeps = any(n == "time.sleep" for n, _ in calls)
        for name, node in clock[:1]:
            hit("timing" if sleeps else "clock", node, f"{name}()" + (" and time.sleep (a timing assertion)"
                                                                        if sleeps else " without a frozen clock"))
        for name, node in reads:
            if _matches(name, HOST) and not _in_decorator(scope.node, node):
                hit("host", node, f"reads {name}")
                break
        for name, node in calls:
            opened = node.func.value if name.rpartition(".")[2] in PATH_ACCESS and name.startswith("pathlib.Path.") \
                and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call) else node
            paths = [a.value for a in opened.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if (opened is not node or _matches(name, FILE_ACCESS)) and any(HOST_PATH.match(p) for p in paths):
                hit("host", node, f"{name}({paths[0]!r}): an absolute host path")
        return hits

    def _library(self, dotted: str, task: TaskSpec, base) -> tuple[dict, list[str]] | None:
        """What a repository function uses: network and host APIs, and the hosts its module names."""
        module, _, func = dotted.rpartition(".")
        if not module or module.split(".")[0] in ("os", "sys", "time", "datetime", "socket", "pathlib", "re"):
            return None
        for path in tc.module_paths(module):
            text = tc.patched(path, task.patch, base)
            if text is None:
                continue
            try:
                tree = ast.parse(text)
            except SyntaxError:
                return None
            names = tc.imported_names(tree)
            node = next((n for n in tree.body if getattr(n, "name", None) == func), None)
            if node is None:
                return None
            used = [_dotted(n.func if isinstance(n, ast.Call) else n, names) for n in ast.walk(node)
                    if isinstance(n, (ast.Call, ast.Attribute))]
            variables = [f"os.environ[{c.value!r}]" for c in ast.walk(node) if isinstance(c, ast.Constant)
                         and isinstance(c.value, str) and USER_VARIABLE.match(c.value)]
            host = _first(used, USER_HOST) or (variables[0] if variables and _first(used, HOST) else "")
            return {"network": _first(used, NETWORK), "host": host}, _hosts([tree])
        return None


def _first(used: list[str], table: tuple[str, ...]) -> str:
    """The first name in ``used`` that ``table`` lists, preferring the shortest (``socket.create_connection``
    over the ``socket.create_connection.close`` of a chained call)."""
    hits = [u for u in used if _matches(u, table)]
    return min(hits, key=len) if hits else ""


def _in_decorator(test: ast.AST, node: ast.AST) -> bool:
    return any(node is n for d in getattr(test, "decorator_list", []) for n in ast.walk(d))


def _output_hits(report: dict | None) -> list[dict]:
    runs = (report or {}).get("runs") or {}
    tails = [("gold", r.get("output_tail", "")) for r in runs.get("gold", [])]
    tails.append(("empty", (runs.get("empty") or {}).get("output_tail", "")))
    for side, tail in tails:
        sign = next((s for s in NETWORK_SIGNS if s in (tail or "")), None)
        if sign:
            return [{"kind": "output", "test": f"({side} run output)", "line": 0,
                     "what": f"the network: the {side} run's output shows {sign!r}"}]
    return []


PROBE = register(EnvironmentProbe())
